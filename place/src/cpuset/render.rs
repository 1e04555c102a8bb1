//! CPU sets written the ways tools take them: a Linux list, a hexadecimal mask, hwloc's
//! 32-bit words, a likwid-pin list in order.

use std::fmt::Write;

pub use topoprobe_model::format_cpu_list as list;

/// A hexadecimal mask, one number: `0x3c0f` (as `place --format mask` prints; `0x0` for
/// no CPU).
#[must_use]
pub fn mask(cpus: &[u32]) -> String {
    let words = words(cpus);
    let mut s = String::from("0x");
    let mut started = false;
    for w in words.iter().rev() {
        if started {
            let _ = write!(s, "{w:08x}");
        } else if *w != 0 {
            let _ = write!(s, "{w:x}");
            started = true;
        }
    }
    if !started {
        s.push('0');
    }
    s
}

/// hwloc's CPU-set string, as `hwloc-calc` prints it: 32-bit words, most significant
/// first, separated by commas; a word of zeros is left empty, except the last, which is
/// `0x0` (`0x00000001,,0x0` is CPU 64; `0x0` no CPU).
#[must_use]
pub fn hwloc(cpus: &[u32]) -> String {
    let words = words(cpus);
    let Some(top) = words.iter().rposition(|&w| w != 0) else {
        return "0x0".to_string();
    };
    let mut parts = Vec::with_capacity(top + 1);
    for (i, &w) in words[..=top].iter().enumerate().rev() {
        parts.push(match (w, i) {
            (0, 0) => "0x0".to_string(),
            (0, _) => String::new(),
            (w, _) => format!("0x{w:08x}"),
        });
    }
    parts.join(",")
}

/// CPU numbers in the given order, comma-separated (likwid-pin's `-c` list).
#[must_use]
pub fn ordered(cpus: &[u32]) -> String {
    cpus.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The 32-bit words of a set, least significant first.
fn words(cpus: &[u32]) -> Vec<u32> {
    let top = cpus
        .iter()
        .copied()
        .max()
        .map_or(0, |m| m as usize / 32 + 1);
    let mut words = vec![0_u32; top];
    for &c in cpus {
        words[c as usize / 32] |= 1 << (c % 32);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_as_place_and_hwloc_write_them() {
        let ivy_rr = [0, 10, 1, 11, 2, 12, 3, 13];
        assert_eq!(mask(&ivy_rr), "0x3c0f");
        assert_eq!(mask(&[]), "0x0");
        assert_eq!(mask(&[32]), "0x100000000");
        assert_eq!(hwloc(&ivy_rr), "0x00003c0f");
        assert_eq!(hwloc(&[]), "0x0");
        assert_eq!(hwloc(&[64]), "0x00000001,,0x0");
        assert_eq!(hwloc(&[0, 96]), "0x00000001,,,0x00000001");
        assert_eq!(hwloc(&(0..40).collect::<Vec<_>>()), "0x000000ff,0xffffffff");
        assert_eq!(ordered(&[3, 1, 2]), "3,1,2");
        assert_eq!(list(&[0, 1, 2, 8]), "0-2,8");
    }
}
