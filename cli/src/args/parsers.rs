//! Value parsers: each turns one command-line value into a typed value, or a message that
//! clap reports as a usage error (exit status 2).

use topoprobe_machine::plugins;
use topoprobe_place::{CoreKind, Policy};

/// Parses a finite, positive number.
pub(crate) fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

/// The clock frequencies `--ghz` accepts, in GHz.
pub(crate) const GHZ_RANGE: std::ops::RangeInclusive<f64> = 0.05..=20.0;

/// Parses a clock frequency in GHz, within [`GHZ_RANGE`].
pub(crate) fn ghz(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if GHZ_RANGE.contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a clock frequency between {} and {} GHz",
            GHZ_RANGE.start(),
            GHZ_RANGE.end()
        )),
    }
}

/// Parses a size such as `4096`, `64K`, `512M`, `2G` (binary units; a trailing `B` or
/// `iB` is accepted): see [`topoprobe_model::parse_size`].
///
/// # Errors
///
/// A message naming the value when it is not a positive size.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    topoprobe_model::parse_size(s).map_err(|e| e.to_string())
}

/// Parses a duration in seconds: positive, at most an hour.
pub(crate) fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 3600.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0 and 3600"
        )),
    }
}

/// Parses a policy name for clap (an unknown one is a usage error listing the policies).
pub(crate) fn policy(s: &str) -> Result<Policy, String> {
    s.parse::<Policy>().map_err(|e| e.to_string())
}

/// Parses a core kind for clap.
pub(crate) fn kind(s: &str) -> Result<CoreKind, String> {
    s.parse::<CoreKind>().map_err(|e| e.to_string())
}

/// Checks a `--plugins` value (an unknown name is a usage error listing the known ones).
pub(crate) fn plugin_list(list: &str) -> Result<String, String> {
    plugins::parse(list)
        .map(|_| list.to_string())
        .map_err(|e| e.to_string())
}

/// Parses `--skip`: a hexadecimal mask of at most 128 bits, returned as `0x…`.
pub(crate) fn skip_mask(s: &str) -> Result<String, String> {
    let t = s.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if hex.is_empty() || hex.len() > 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "--skip {s:?} is not a hexadecimal mask such as 0x1 (at most 128 threads)"
        ));
    }
    Ok(format!("0x{hex}"))
}

/// Longest `--pin` list accepted, in characters (checked before anything is allocated).
const MAX_PIN_TEXT: usize = 64 * 1024;
/// Most CPUs a `--pin` list may name (threads of one program).
const MAX_PIN_CPUS: usize = 65_536;

/// A `--pin` list: CPU numbers in the order given (repeats allowed), or a CPU-set
/// expression naming CPUs by the topology (`S0:0-3@S1:0-3`), resolved in its order once
/// the topology is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PinList {
    /// CPU numbers, as typed.
    Cpus(Vec<u32>),
    /// An expression of the topology.
    Expr(String),
}

/// Parses a `--pin` list: CPU numbers and ascending ranges, comma-separated, **in the
/// order given** (`3,1,2`, `4-7,0-3`), repeats allowed (threads then share a CPU), as
/// `likwid-pin -c` takes them.
pub(crate) fn pin_list(s: &str) -> Result<PinList, String> {
    let numbers_only = s
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b',' || b == b'-' || b == b' ');
    if !numbers_only && s.len() <= MAX_PIN_TEXT {
        return Ok(PinList::Expr(s.to_string()));
    }
    if s.len() > MAX_PIN_TEXT {
        return Err(format!(
            "--pin: a list of at most {MAX_PIN_TEXT} characters, got {}",
            s.len()
        ));
    }
    let number = |t: &str| -> Result<u32, String> {
        let v: u32 = t
            .trim()
            .parse()
            .map_err(|_| format!("--pin {s:?}: {t:?} is not a CPU number"))?;
        if v > topoprobe_model::MAX_CPU {
            return Err(format!(
                "--pin {s:?}: CPU {v} is above {}",
                topoprobe_model::MAX_CPU
            ));
        }
        Ok(v)
    };
    let mut out = Vec::new();
    for item in s.split(',') {
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let v = number(item)?;
                (v, v)
            }
        };
        if b < a {
            return Err(format!(
                "--pin {s:?}: the range {item:?} goes down (write its CPUs one by one for that order)"
            ));
        }
        if out.len() + (b - a) as usize + 1 > MAX_PIN_CPUS {
            return Err(format!("--pin {s:?}: more than {MAX_PIN_CPUS} CPUs"));
        }
        out.extend(a..=b);
    }
    Ok(PinList::Cpus(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_masks_and_durations_parse() {
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert_eq!(skip_mask("0X1f"), Ok("0x1f".to_string()));
        assert!(skip_mask("xyz").unwrap_err().contains("--skip"));
        assert!(seconds("0").is_err());
        assert_eq!(seconds("0.5"), Ok(0.5));
        assert!(positive("nan").is_err());
        assert_eq!(ghz("2.5"), Ok(2.5));
        for bad in ["1e308", "0.01", "0", "-3", "nan", "x"] {
            assert!(ghz(bad).is_err(), "{bad}");
        }
        assert!(plugin_list("cache,bogus").unwrap_err().contains("bogus"));
    }

    #[test]
    fn pin_lists_keep_their_order() {
        assert_eq!(pin_list("3,1,2"), Ok(PinList::Cpus(vec![3, 1, 2])));
        assert_eq!(pin_list("S0:0-1"), Ok(PinList::Expr("S0:0-1".into())));
        assert_eq!(
            pin_list("4-5,0-1,0"),
            Ok(PinList::Cpus(vec![4, 5, 0, 1, 0]))
        );
        assert!(pin_list("3-1").unwrap_err().contains("goes down"));
        assert!(pin_list("1,,2").unwrap_err().contains("\"\""));
        assert!(pin_list("1048576").unwrap_err().contains("above"));
        assert!(pin_list("0-1048575,0-1048575")
            .unwrap_err()
            .contains("more than"));
        assert!(pin_list(&"1,".repeat(40_000))
            .unwrap_err()
            .contains("characters"));
    }

    #[test]
    fn durations_are_checked() {
        assert_eq!(seconds("0.25"), Ok(0.25));
        for bad in ["0", "-1", "inf", "nan", "x", "3601"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }
}
