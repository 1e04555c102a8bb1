//! CPU lists (`0-3,8,10-11`) and CPU masks (`00000000,0000000f`) as Linux writes them.

/// The largest CPU number a list or mask may name (2^20 - 1); larger numbers are rejected so
/// that a malformed range cannot ask for gigabytes of CPU numbers.
pub const MAX_CPU: u32 = (1 << 20) - 1;

/// A CPU list or mask that could not be parsed, with the token at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad CPU list item {:?}: {reason}", crate::format::elided(.token))]
pub struct CpuListError {
    /// The offending token (a list item such as `5-x`, or a mask word).
    pub token: String,
    /// What is wrong with it.
    pub reason: String,
}

impl CpuListError {
    fn new(token: &str, reason: impl Into<String>) -> Self {
        Self {
            token: token.to_string(),
            reason: reason.into(),
        }
    }
}

/// Characters around sysfs values that carry no meaning: whitespace and NUL bytes.
fn is_padding(c: char) -> bool {
    c.is_whitespace() || c == '\0'
}

fn parse_cpu(token: &str, item: &str) -> Result<u32, CpuListError> {
    let v: u64 = token
        .trim()
        .parse()
        .map_err(|_| CpuListError::new(item, format!("{:?} is not a CPU number", token.trim())))?;
    u32::try_from(v)
        .ok()
        .filter(|&v| v <= MAX_CPU)
        .ok_or_else(|| CpuListError::new(item, format!("CPU {v} is above {MAX_CPU}")))
}

/// The items of a list, gathered before any CPU is set: ranges `(lo, hi)` and strided
/// ranges `(lo, hi, used, group)`. Sorted, merged and deduplicated at the end, a list's
/// cost is its length plus the CPUs it names once, however its items repeat or overlap
/// (`0-1048575` ten thousand times in 100 KB: 16 384 words set once, not ten thousand
/// times).
#[derive(Default)]
struct Items {
    ranges: Vec<(u32, u32)>,
    strided: Vec<(u32, u32, u32, u32)>,
}

impl Items {
    /// The CPUs of every item.
    fn into_bits(mut self) -> CpuBits {
        let mut out = CpuBits::default();
        self.ranges.sort_unstable();
        let mut merged: Option<(u32, u32)> = None;
        for (lo, hi) in self.ranges {
            merged = match merged {
                Some((a, b)) if lo <= b.saturating_add(1) => Some((a, b.max(hi))),
                Some((a, b)) => {
                    out.insert_range(a, b);
                    Some((lo, hi))
                }
                None => Some((lo, hi)),
            };
        }
        if let Some((a, b)) = merged {
            out.insert_range(a, b);
        }
        self.strided.sort_unstable();
        self.strided.dedup();
        for (lo, hi, used, group) in self.strided {
            out.insert_strided(lo, hi, used, group);
        }
        out
    }
}

/// Parses one item: `N`, `A-B` or `A-B:USED/GROUP` (every GROUP CPUs, the first USED).
fn parse_item(item: &str, out: &mut Items) -> Result<(), CpuListError> {
    let (range, stride) = match item.split_once(':') {
        Some((r, s)) => (r, Some(s)),
        None => (item, None),
    };
    let (lo, hi) = match range.split_once('-') {
        Some((a, b)) => (parse_cpu(a, item)?, parse_cpu(b, item)?),
        None => {
            if stride.is_some() {
                return Err(CpuListError::new(item, "a stride needs a range A-B"));
            }
            let v = parse_cpu(range, item)?;
            (v, v)
        }
    };
    if lo > hi {
        return Err(CpuListError::new(
            item,
            format!("range starts at {lo} after its end {hi}"),
        ));
    }
    let (used, group) = match stride {
        None => (1, 1),
        Some(s) => {
            let (u, g) = s
                .split_once('/')
                .ok_or_else(|| CpuListError::new(item, "a stride is written USED/GROUP"))?;
            let u = parse_cpu(u, item)?;
            let g = parse_cpu(g, item)?;
            if u == 0 || g == 0 || u > g {
                return Err(CpuListError::new(
                    item,
                    "a stride USED/GROUP needs 0 < USED <= GROUP",
                ));
            }
            (u, g)
        }
    };
    if used == group {
        out.ranges.push((lo, hi));
    } else {
        out.strided.push((lo, hi, used, group));
    }
    Ok(())
}

/// CPU numbers as bits: memory grows with the largest CPU (at most 128 KiB), not with the
/// length of the list, however often an item repeats.
#[derive(Default)]
struct CpuBits(Vec<u64>);

impl CpuBits {
    /// Inserts one CPU: the tests' reference for the word-at-a-time insertions.
    #[cfg(test)]
    fn insert(&mut self, cpu: u32) {
        let word = (cpu / 64) as usize;
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (cpu % 64);
    }

    /// Inserts `lo..=hi` a word at a time: a range costs its length / 64, so a list that
    /// repeats `0-1048575` a thousand times takes milliseconds, not seconds.
    fn insert_range(&mut self, lo: u32, hi: u32) {
        let (first, last) = ((lo / 64) as usize, (hi / 64) as usize);
        if last >= self.0.len() {
            self.0.resize(last + 1, 0);
        }
        for w in first..=last {
            let from = if w == first { lo % 64 } else { 0 };
            let to = if w == last { hi % 64 } else { 63 };
            let bits = (u64::MAX >> (63 - to)) & (u64::MAX << from);
            self.0[w] |= bits;
        }
    }

    /// Inserts the first `used` CPUs of every `group` from `lo` to `hi`, a word at a time
    /// as [`CpuBits::insert_range`] (`0-1048575:1/2` a thousand times once took seconds):
    /// a group of more than 64 CPUs is a range; below, the words repeat every `group`
    /// words (64 × `group` CPUs are whole groups), so one period is built and copied.
    fn insert_strided(&mut self, lo: u32, hi: u32, used: u32, group: u32) {
        if group > 64 {
            let mut start = lo;
            loop {
                self.insert_range(start, start.saturating_add(used - 1).min(hi));
                match start.checked_add(group) {
                    Some(next) if next <= hi => start = next,
                    _ => return,
                }
            }
        }
        let (first, last) = ((lo / 64) as usize, (hi / 64) as usize);
        if last >= self.0.len() {
            self.0.resize(last + 1, 0);
        }
        let offset = lo % group;
        let period: Vec<u64> = (0..group as usize)
            .map(|k| {
                let base = ((first + k) * 64) as u64;
                (0..64_u64)
                    .filter(|b| {
                        ((base + b) % u64::from(group) + u64::from(group - offset))
                            % u64::from(group)
                            < u64::from(used)
                    })
                    .fold(0, |bits, b| bits | 1 << b)
            })
            .collect();
        for w in first..=last {
            let from = if w == first { lo % 64 } else { 0 };
            let to = if w == last { hi % 64 } else { 63 };
            let bits = (u64::MAX >> (63 - to)) & (u64::MAX << from);
            self.0[w] |= bits & period[(w - first) % period.len()];
        }
    }

    fn into_vec(self) -> Vec<u32> {
        let mut out = Vec::new();
        for (w, &bits) in self.0.iter().enumerate() {
            for b in 0..64 {
                if bits & (1 << b) != 0 {
                    out.push(w as u32 * 64 + b);
                }
            }
        }
        out
    }
}

/// Parses a Linux CPU list such as `0-3,8,10-11` (also `0-15:2/4`: in each group of 4 CPUs
/// the first 2) into ascending, distinct CPU numbers.
///
/// Surrounding whitespace and NUL bytes (as sysfs files have) are ignored, and so is an empty
/// list (no CPUs).
///
/// ```
/// use topoprobe_model::{format_cpu_list, parse_cpu_list};
///
/// assert_eq!(parse_cpu_list("0-2,8,10-11\n").unwrap(), vec![0, 1, 2, 8, 10, 11]);
/// assert_eq!(format_cpu_list(&[0, 1, 2, 8, 10, 11]), "0-2,8,10-11");
/// assert!(parse_cpu_list("0-3,x").unwrap_err().to_string().contains("\"x\""));
/// ```
///
/// # Errors
///
/// Returns [`CpuListError`] naming the first item that is not a number, a range whose start
/// is after its end, a malformed stride, or a CPU number above [`MAX_CPU`].
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, CpuListError> {
    let s = s.trim_matches(is_padding);
    let mut out = Items::default();
    if s.is_empty() {
        return Ok(Vec::new());
    }
    for item in s.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(CpuListError::new(item, "empty item"));
        }
        parse_item(item, &mut out)?;
    }
    Ok(out.into_bits().into_vec())
}

/// Parses a Linux CPU mask (`cpumap`, `thread_siblings`, `shared_cpu_map`): comma-separated
/// hexadecimal 32-bit words, the most significant first (`00000000,0000000f` is CPUs 0-3).
/// Words may have fewer than 8 digits (`fffff`); whitespace and NUL bytes around the mask
/// are ignored.
///
/// ```
/// use topoprobe_model::parse_cpu_mask;
///
/// assert_eq!(parse_cpu_mask("00000100,00000001\n").unwrap(), vec![0, 40]);
/// ```
///
/// # Errors
///
/// Returns [`CpuListError`] naming the first word that is empty, longer than 8 digits or not
/// hexadecimal, or when the mask names a CPU above [`MAX_CPU`].
pub fn parse_cpu_mask(s: &str) -> Result<Vec<u32>, CpuListError> {
    let s = s.trim_matches(is_padding);
    let mut out = Vec::new();
    if s.is_empty() {
        return Ok(out);
    }
    for (i, word) in s.rsplit(',').enumerate() {
        let w = word.trim();
        if w.is_empty() || w.len() > 8 {
            return Err(CpuListError::new(
                word,
                "a mask word has 1 to 8 hexadecimal digits",
            ));
        }
        let bits = u32::from_str_radix(w, 16)
            .map_err(|_| CpuListError::new(word, "not a hexadecimal number"))?;
        if bits == 0 {
            continue;
        }
        let base = u32::try_from(i)
            .ok()
            .and_then(|i| i.checked_mul(32))
            .filter(|&b| b <= MAX_CPU)
            .ok_or_else(|| {
                CpuListError::new(word, format!("mask is longer than {MAX_CPU} CPUs"))
            })?;
        for bit in 0..32 {
            if bits & (1 << bit) != 0 {
                out.push(base + bit);
            }
        }
    }
    if let Some(&big) = out.iter().find(|&&c| c > MAX_CPU) {
        return Err(CpuListError::new(
            s,
            format!("CPU {big} is above {MAX_CPU}"),
        ));
    }
    out.sort_unstable();
    Ok(out)
}

/// Formats CPU numbers as a Linux CPU list (`0-3,8,10-11`): ascending, duplicates removed,
/// runs of consecutive numbers as ranges; empty for no CPUs.
#[must_use]
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        if j == i {
            parts.push(start.to_string());
        } else {
            parts.push(format!("{start}-{}", v[j]));
        }
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_fill_whole_words_exactly() {
        for (lo, hi) in [
            (0, 0),
            (0, 63),
            (1, 64),
            (63, 64),
            (5, 200),
            (64, 127),
            (70, 1000),
        ] {
            let mut fast = CpuBits::default();
            fast.insert_range(lo, hi);
            let mut slow = CpuBits::default();
            for c in lo..=hi {
                slow.insert(c);
            }
            assert_eq!(fast.into_vec(), slow.into_vec(), "{lo}-{hi}");
        }
        // The whole range a thousand times over (once seconds of work) is one range.
        let list = vec!["0-1048575"; 1000].join(",");
        assert_eq!(parse_cpu_list(&list).unwrap().len(), 1 << 20);
    }

    #[test]
    fn strides_fill_words_as_cpu_by_cpu() {
        for (lo, hi) in [(0, 0), (0, 63), (1, 64), (5, 200), (63, 1000), (70, 4200)] {
            for (used, group) in [(1, 2), (2, 3), (63, 64), (1, 64), (3, 5), (5, 65), (1, 200)] {
                let mut fast = CpuBits::default();
                fast.insert_strided(lo, hi, used, group);
                let mut slow = CpuBits::default();
                for c in (lo..=hi).filter(|c| (c - lo) % group < used) {
                    slow.insert(c);
                }
                assert_eq!(fast.into_vec(), slow.into_vec(), "{lo}-{hi}:{used}/{group}");
            }
        }
        // Every other CPU of the whole range, a thousand times (once seconds of work).
        let list = vec!["0-1048575:1/2"; 1000].join(",");
        assert_eq!(parse_cpu_list(&list).unwrap().len(), 1 << 19);
        // Overlapping, repeated and adjacent items, merged.
        assert_eq!(
            parse_cpu_list("8-9,0-3,2-5,10,0-3,6,20-21:1/2,20-21:1/2,20").unwrap(),
            [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 20]
        );
        let list = vec!["0-1048575"; 10_000].join(",");
        assert_eq!(parse_cpu_list(&list).unwrap().len(), 1 << 20);
        let mut hi = CpuBits::default();
        hi.insert_strided(MAX_CPU - 2, MAX_CPU, 1, 2);
        assert_eq!(hi.into_vec(), [MAX_CPU - 2, MAX_CPU]);
    }

    #[test]
    fn lists_parse() {
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_list("\n\0").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_list("5").unwrap(), vec![5]);
        assert_eq!(
            parse_cpu_list("4-20\n").unwrap(),
            (4..=20).collect::<Vec<_>>()
        );
        assert_eq!(parse_cpu_list("0,2,4,6\n\0").unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(parse_cpu_list("3,1-2,2").unwrap(), vec![1, 2, 3]);
        assert_eq!(
            parse_cpu_list("0-15:2/4").unwrap(),
            vec![0, 1, 4, 5, 8, 9, 12, 13]
        );
        assert_eq!(parse_cpu_list(" 0 - 1 , 3 ").unwrap(), vec![0, 1, 3]);
    }

    #[test]
    fn list_errors_name_the_token() {
        for (bad, token) in [
            ("0-3,x", "x"),
            ("0-3,,5", ""),
            ("5-2", "5-2"),
            ("1-", "1-"),
            ("-1", "-1"),
            ("0-4294967295", "0-4294967295"),
            ("99999999999", "99999999999"),
            ("0-7:3", "0-7:3"),
            ("0-7:0/4", "0-7:0/4"),
            ("0-7:5/4", "0-7:5/4"),
            ("3:1/2", "3:1/2"),
        ] {
            let e = parse_cpu_list(bad).unwrap_err();
            assert_eq!(e.token, token, "{bad}: {e}");
            assert!(e.to_string().contains(&format!("{token:?}")), "{e}");
        }
    }

    #[test]
    fn masks_parse() {
        assert_eq!(
            parse_cpu_mask("00000000,00001111").unwrap(),
            vec![0, 4, 8, 12]
        );
        assert_eq!(parse_cpu_mask("00003").unwrap(), vec![0, 1]);
        assert_eq!(
            parse_cpu_mask("fffff").unwrap(),
            (0..20).collect::<Vec<_>>()
        );
        assert_eq!(
            parse_cpu_mask("ffffffff,00000000,00000000,00000000\n\0").unwrap(),
            (96..128).collect::<Vec<_>>()
        );
        assert_eq!(
            parse_cpu_mask("5555,55555555,55555555").unwrap(),
            (0..80).step_by(2).collect::<Vec<_>>()
        );
        assert_eq!(
            parse_cpu_mask("0000,00000100,00000001").unwrap(),
            vec![0, 40]
        );
        assert_eq!(parse_cpu_mask("\0").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_mask("00000000").unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn mask_errors_name_the_word() {
        assert_eq!(parse_cpu_mask("0000000g,1").unwrap_err().token, "0000000g");
        assert_eq!(parse_cpu_mask("1,,1").unwrap_err().token, "");
        assert_eq!(parse_cpu_mask("123456789").unwrap_err().token, "123456789");
        let huge = vec!["1"; 40_000].join(",");
        assert!(parse_cpu_mask(&huge).is_err());
    }

    #[test]
    fn lists_format() {
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(format_cpu_list(&[3]), "3");
        assert_eq!(format_cpu_list(&[11, 10, 8, 0, 1, 2, 3, 3]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[0, 2, 4]), "0,2,4");
        assert_eq!(
            format_cpu_list(&[u32::MAX - 1, u32::MAX]),
            "4294967294-4294967295"
        );
    }

    #[test]
    fn format_then_parse_round_trips() {
        let cpus = vec![0, 1, 2, 5, 7, 8, 9, 100];
        assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)).unwrap(), cpus);
    }
}
