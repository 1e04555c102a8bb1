//! The TLB's reach, from the same walk on huge pages and on 4 KiB pages.
//!
//! A random walk over an array larger than the TLB's reach misses the TLB on nearly every
//! access, and that cost adds to the cache's: on 4 KiB pages a level's curve would rise at
//! `entries × 4 KiB` although the cache is not full. On huge pages the same TLB covers 512
//! times as much, so the huge-page curve shows the caches alone. The size from which the
//! 4 KiB-page curve stays above the huge-page curve is the reach with 4 KiB pages; the
//! difference past it is what each access pays for the TLB miss (a second-level TLB hit
//! or a page walk).
//!
//! In a virtual machine the TLB holds translations of the guest's and the host's page
//! tables together, at the smaller of the two page sizes: when the host backs the guest
//! with 4 KiB pages, huge pages in the guest shorten the page walk but do not extend the
//! reach, and the two curves part only where the walks become expensive.

use super::curve::Sample;

/// Ratio of the 4 KiB-page to the huge-page access time that marks a TLB miss.
pub const PART: f64 = 1.2;

/// Where the 4 KiB-page walk parts from the huge-page walk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TlbReach {
    /// Page size of the walk that misses, bytes (4 KiB).
    pub page_bytes: u64,
    /// Largest size walked at the huge-page cost: the reach, bytes.
    pub reach_bytes: u64,
    /// First size of the part where the 4 KiB-page walk stays slower, bytes.
    pub missed_bytes: u64,
    /// Median extra time per access past the reach, ns.
    pub extra_ns: f64,
}

impl TlbReach {
    /// TLB entries the reach makes with its page size.
    #[must_use]
    pub fn entries(&self) -> u64 {
        self.reach_bytes / self.page_bytes.max(1)
    }
}

/// Median of three neighbours (the ends kept): one slow walk is not a TLB miss.
fn smooth(v: &[f64]) -> Vec<f64> {
    (0..v.len())
        .map(|k| {
            if k == 0 || k + 1 == v.len() {
                v[k]
            } else {
                let mut w = [v[k - 1], v[k], v[k + 1]];
                w.sort_by(f64::total_cmp);
                w[1]
            }
        })
        .collect()
}

/// The reach of the TLB with 4 KiB pages: the first size from which at least four in five
/// of the remaining sizes (and at least three) walk [`PART`] times slower on 4 KiB pages
/// than on huge pages. `huge` and `small` are the two curves over the same sizes; nothing
/// when the small-page curve is missing, the sizes differ, or the curves never part.
#[must_use]
pub fn reach(huge: &[Sample], small: Option<&[Sample]>) -> Vec<TlbReach> {
    let Some(small) = small else {
        return Vec::new();
    };
    if small.len() != huge.len()
        || small.len() < 4
        || small.iter().zip(huge).any(|(s, h)| s.bytes != h.bytes)
    {
        return Vec::new();
    }
    let h = smooth(&huge.iter().map(|s| s.ns).collect::<Vec<_>>());
    let s = smooth(&small.iter().map(|s| s.ns).collect::<Vec<_>>());
    let slower: Vec<bool> = h
        .iter()
        .zip(&s)
        .map(|(h, s)| *h > 0.0 && s / h >= PART)
        .collect();
    let n = slower.len();
    let mut from = None;
    for k in 1..n {
        let rest = &slower[k..];
        let count = rest.iter().filter(|&&x| x).count();
        if slower[k] && rest.len() >= 3 && count * 5 >= rest.len() * 4 {
            from = Some(k);
            break;
        }
    }
    let Some(k) = from else {
        return Vec::new();
    };
    let mut extra: Vec<f64> = (k..n).map(|i| s[i] - h[i]).collect();
    extra.sort_by(f64::total_cmp);
    vec![TlbReach {
        page_bytes: 4096,
        reach_bytes: huge[k - 1].bytes,
        missed_bytes: huge[k].bytes,
        extra_ns: extra[extra.len() / 2],
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(f: impl Fn(u64) -> f64) -> Vec<Sample> {
        (0..40)
            .map(|i| {
                let bytes = (64u64 << 10) << (i / 4);
                Sample {
                    bytes,
                    ns: f(bytes),
                }
            })
            .collect()
    }

    #[test]
    fn the_small_page_curve_parts_at_the_reach() {
        let huge = curve(|b| if b <= 16 << 20 { 15.0 } else { 150.0 });
        // 2048 entries of 4 KiB: 8 MiB, then a page walk of 25 ns (and 60 ns in memory).
        let small = curve(|b| match b {
            b if b <= 8 << 20 => 15.0,
            b if b <= 16 << 20 => 40.0,
            _ => 210.0,
        });
        let r = reach(&huge, Some(&small));
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].reach_bytes, 8 << 20);
        assert_eq!(r[0].entries(), 2048);
        assert!(r[0].extra_ns >= 25.0 && r[0].extra_ns <= 60.0, "{r:?}");
    }

    #[test]
    fn equal_curves_or_a_missing_curve_show_no_reach() {
        let huge = curve(|b| if b <= 16 << 20 { 15.0 } else { 150.0 });
        assert!(reach(&huge, Some(&huge)).is_empty());
        assert!(reach(&huge, None).is_empty());
        // One slow walk on small pages is not a reach.
        let mut small = huge.clone();
        small[20].ns *= 3.0;
        assert!(reach(&huge, Some(&small)).is_empty());
        // Curves over different sizes are not compared.
        assert!(reach(&huge, Some(&small[1..])).is_empty());
    }
}
