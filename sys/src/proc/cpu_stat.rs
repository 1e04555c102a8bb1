//! `/proc/stat`: time every CPU spent busy and idle since boot.

use std::path::Path;

use super::{read_file, ProcError};

/// Cumulative times of one CPU, in clock ticks ([`super::clock_ticks_per_second`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// The CPU.
    pub cpu: u32,
    /// Ticks running tasks, interrupts and softirqs (user, nice, system, irq, softirq,
    /// steal).
    pub busy: u64,
    /// Ticks idle or waiting for I/O.
    pub idle: u64,
}

/// Parses the `cpuN` lines of `/proc/stat`.
fn parse(text: &str) -> Option<Vec<CpuTimes>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line
            .strip_prefix("cpu")
            .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue; // other lines, and the `cpu` line of totals
        };
        let mut fields = rest.split_whitespace();
        let cpu = fields.next()?.parse::<u32>().ok()?;
        let v: Vec<u64> = fields
            .map(|f| f.parse().ok())
            .collect::<Option<Vec<u64>>>()?;
        if v.len() < 4 {
            return None;
        }
        let get = |i: usize| v.get(i).copied().unwrap_or(0);
        out.push(CpuTimes {
            cpu,
            busy: get(0) + get(1) + get(2) + get(5) + get(6) + get(7),
            idle: get(3) + get(4),
        });
    }
    Some(out)
}

/// The busy and idle times of every online CPU.
///
/// # Errors
///
/// [`ProcError::Io`] when `/proc/stat` cannot be read; [`ProcError::Parse`] when a CPU line
/// is malformed.
pub fn cpu_times() -> Result<Vec<CpuTimes>, ProcError> {
    let path = Path::new("/proc/stat");
    let text = read_file(path, 0, None)?;
    parse(&text).ok_or_else(|| ProcError::Parse {
        path: path.to_path_buf(),
        what: "cpuN lines of at least four numbers".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lines_parse() {
        let text = "cpu  10 0 5 100 1 0 0 0 0 0\ncpu0 4 1 2 50 1 1 1 1 0 0\ncpu1 6 0 3 50 0 0 0 0 0 0\nintr 5\n";
        let v = parse(text).expect("parses");
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[0],
            CpuTimes {
                cpu: 0,
                busy: 4 + 1 + 2 + 1 + 1 + 1,
                idle: 51
            }
        );
        assert!(parse("cpu0 1 x 3 4\n").is_none());
        assert!(!cpu_times().expect("this machine").is_empty());
    }
}
