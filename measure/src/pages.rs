//! Whether the huge pages a probe asked for were granted: the share of its buffer the
//! kernel backs with transparent huge pages (`AnonHugePages` of `/proc/self/smaps`, read by
//! [`Buffer::huge_page_bytes`]), judged and said in one place for every probe that walks
//! or chases on huge pages (the cache walk, the memory latency).

use topoprobe_sys::buffer::Buffer;

/// A buffer with at least this share on huge pages counts as granted them.
pub const GRANTED_SHARE: f64 = 0.5;
/// Below this share of a granted buffer, TLB misses may remain in a walk over it.
pub const FULL_SHARE: f64 = 0.9;

/// How a buffer's pages came out.
#[derive(Debug, Clone, PartialEq)]
pub enum HugePages {
    /// Huge pages were asked for; `fraction` of the buffer had them.
    Granted {
        /// Share of the buffer on huge pages, 0 to 1.
        fraction: f64,
    },
    /// Huge pages were not used, and why.
    Unavailable(String),
}

/// The share of `buf` the kernel backs with huge pages now, 0 to 1 (`None` where
/// `/proc/self/smaps` cannot be read).
#[must_use]
pub fn share_of(buf: &Buffer) -> Option<f64> {
    let bytes = buf.huge_page_bytes().ok()?;
    Some(if buf.len_bytes() == 0 {
        0.0
    } else {
        bytes as f64 / buf.len_bytes() as f64
    })
}

impl HugePages {
    /// The verdict on a buffer named `what` ("array", "latency buffer") whose share on
    /// huge pages is `share` (`None`: unknown, read as none): granted from
    /// [`GRANTED_SHARE`] on.
    #[must_use]
    pub fn of_share(share: Option<f64>, what: &str) -> Self {
        let fraction = share.unwrap_or(0.0);
        if fraction >= GRANTED_SHARE {
            Self::Granted { fraction }
        } else {
            Self::Unavailable(format!(
                "the kernel backed only {:.0}% of the {what} with huge pages",
                fraction * 100.0
            ))
        }
    }

    /// Whether huge pages were granted.
    #[must_use]
    pub fn granted(&self) -> bool {
        matches!(self, Self::Granted { .. })
    }

    /// The note for the user on a buffer named `what` ("array", "latency buffer") of a
    /// probe whose figures `without` says what huge pages missing do to: `None` when the
    /// buffer was all, or nearly all, on huge pages.
    #[must_use]
    pub fn note(&self, what: &str, without: &str) -> Option<String> {
        match self {
            Self::Granted { fraction } if *fraction < FULL_SHARE => Some(format!(
                "only {:.0}% of the {what} was on huge pages: {without}",
                fraction * 100.0
            )),
            Self::Granted { .. } => None,
            Self::Unavailable(reason) => {
                Some(format!("huge pages were not used ({reason}): {without}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_granted_from_half_and_said_below_nine_tenths() {
        assert_eq!(
            HugePages::of_share(Some(1.0), "array"),
            HugePages::Granted { fraction: 1.0 }
        );
        assert_eq!(
            HugePages::of_share(Some(1.0), "array").note("array", "x"),
            None
        );
        let partly = HugePages::of_share(Some(0.6), "array");
        assert!(partly.granted());
        assert_eq!(
            partly.note("array", "TLB misses may remain"),
            Some("only 60% of the array was on huge pages: TLB misses may remain".into())
        );
        let refused = HugePages::of_share(Some(0.0), "latency buffer");
        assert!(!refused.granted());
        assert_eq!(
            refused
                .note("latency buffer", "4 KiB page walks count")
                .as_deref(),
            Some(
                "huge pages were not used (the kernel backed only 0% of the latency buffer \
                 with huge pages): 4 KiB page walks count"
            )
        );
        assert!(!HugePages::of_share(None, "array").granted());
    }
}
