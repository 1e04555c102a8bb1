//! Sizes as people write them on a command line: `4096`, `64K`, `512M`, `2G`, `1GiB`, and
//! as topoprobe writes them ([`size_text`], from `topoprobe-files`, where a file's size
//! limit is said too).

pub use topoprobe_files::size_text;

/// The largest size [`parse_size`] accepts: 1 EiB (a working set larger than any machine).
pub const MAX_SIZE: u64 = 1 << 60;

/// A size that could not be parsed: the text, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} {reason}", shown(.text))]
pub struct SizeError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// The text of a [`SizeError`] as its message quotes it: its first 24 characters, then `…`
/// when there are more.
fn shown(text: &str) -> String {
    let head: String = text.chars().take(24).collect();
    let more = if text.chars().count() > 24 { "…" } else { "" };
    format!("{head:?}{more}")
}

/// Parses a size in bytes: a positive number (fractions allowed: `1.5G`) with an optional
/// binary unit `K`, `M`, `G` or `T` (either case), which may be followed by `B` or `iB`.
///
/// ```
/// use topoprobe_model::parse_size;
///
/// assert_eq!(parse_size("64K"), Ok(65536));
/// assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
/// assert!(parse_size("0").is_err());
/// ```
///
/// # Errors
///
/// Returns [`SizeError`] when the text is not a number with a unit, or the size is below
/// one byte or above [`MAX_SIZE`].
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let error = |reason| SizeError {
        text: s.to_string(),
        reason,
    };
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, shift) = match t.as_bytes().last() {
        Some(b'K' | b'k') => (&t[..t.len() - 1], 10),
        Some(b'M' | b'm') => (&t[..t.len() - 1], 20),
        Some(b'G' | b'g') => (&t[..t.len() - 1], 30),
        Some(b'T' | b't') => (&t[..t.len() - 1], 40),
        Some(b'P' | b'p') => (&t[..t.len() - 1], 50),
        Some(b'E' | b'e') => (&t[..t.len() - 1], 60),
        _ => (t, 0),
    };
    let num = num.trim();
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(error("is not a size (examples: 4096, 64K, 512M, 2G)"));
    }
    let v: f64 = num
        .parse()
        .map_err(|_| error("is not a size (examples: 4096, 64K, 512M, 2G)"))?;
    let bytes = v * (1_u64 << shift) as f64;
    if !(1.0..=MAX_SIZE as f64).contains(&bytes) {
        return Err(error("is not a size between 1 byte and 1 EiB"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 2g "), Ok(2 << 30));
        assert_eq!(parse_size("1TB"), Ok(1 << 40));
        // docs/LIMITS.md: sizes reach 1 EiB.
        assert_eq!(parse_size("1E"), Ok(1 << 60));
        assert_eq!(parse_size("1EiB"), Ok(1 << 60));
        assert_eq!(parse_size("2P"), Ok(2 << 50));
        assert!(parse_size("2E").is_err());
        assert!(parse_size("1.5E").is_err());
        for bad in [
            "", "K", "0", "-1K", "1e3", "nan", "inf", "lots", "1.2.3M", "9999999T", "ÄK",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size(&"9".repeat(400))
            .unwrap_err()
            .to_string()
            .ends_with("\"… is not a size between 1 byte and 1 EiB"));
    }
}
