//! `/proc/interrupts` and `/proc/softirqs`: interrupts handled by every CPU since boot.

use std::path::Path;

use super::{read_file, ProcError};

/// One line of an interrupt table: a source and its count on every CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptLine {
    /// The source (`0`, `24`, `NMI`, `LOC`, `NET_RX`, …).
    pub name: String,
    /// Count per CPU, in the order of [`InterruptTable::cpus`].
    pub counts: Vec<u64>,
    /// The rest of the line (controller, device names), possibly empty.
    pub description: String,
}

/// An interrupt table: the CPUs of its header and its lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterruptTable {
    /// The CPU numbers of the header's columns (`CPU0 CPU1 …`; offline CPUs are absent).
    pub cpus: Vec<u32>,
    /// The lines.
    pub lines: Vec<InterruptLine>,
}

impl InterruptTable {
    /// Total count per CPU, as `(cpu, count)`.
    #[must_use]
    pub fn per_cpu(&self) -> Vec<(u32, u64)> {
        self.per_cpu_where(|_| true)
    }

    /// Total count per CPU of the lines `keep` selects.
    #[must_use]
    pub fn per_cpu_where(&self, keep: impl Fn(&InterruptLine) -> bool) -> Vec<(u32, u64)> {
        let mut totals = vec![0_u64; self.cpus.len()];
        for line in self.lines.iter().filter(|l| keep(l)) {
            for (t, c) in totals.iter_mut().zip(&line.counts) {
                *t = t.saturating_add(*c);
            }
        }
        self.cpus.iter().copied().zip(totals).collect()
    }
}

/// Parses the table format shared by `/proc/interrupts` and `/proc/softirqs`.
fn parse_table(text: &str, path: &Path) -> Result<InterruptTable, ProcError> {
    let bad = |what: String| ProcError::Parse {
        path: path.to_path_buf(),
        what,
    };
    let mut lines = text.lines();
    let header = lines.next().ok_or_else(|| bad("a header of CPUs".into()))?;
    let cpus = header
        .split_whitespace()
        .map(|c| c.strip_prefix("CPU").and_then(|n| n.parse::<u32>().ok()))
        .collect::<Option<Vec<u32>>>()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| bad(format!("a header of CPUs, found {header:?}")))?;
    let mut out = Vec::new();
    for (n, line) in lines.enumerate() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let mut counts = Vec::with_capacity(cpus.len());
        let mut description = Vec::new();
        for f in fields.by_ref() {
            if counts.len() < cpus.len() {
                if let Ok(v) = f.parse::<u64>() {
                    counts.push(v);
                    continue;
                }
            }
            description.push(f);
            break;
        }
        description.extend(fields);
        // Lines such as `ERR:` and `MIS:` have one total, not one count per CPU.
        if counts.len() != cpus.len() {
            if counts.len() > 1 {
                return Err(bad(format!(
                    "line {}: {} counts for {} CPUs",
                    n + 2,
                    counts.len(),
                    cpus.len()
                )));
            }
            continue;
        }
        out.push(InterruptLine {
            name: name.trim().to_string(),
            counts,
            description: description.join(" "),
        });
    }
    Ok(InterruptTable { cpus, lines: out })
}

/// Reads `/proc/interrupts` (hardware interrupts and the kernel's per-CPU ones).
///
/// # Errors
///
/// [`ProcError::Io`] when it cannot be read; [`ProcError::Parse`] when it is malformed.
pub fn interrupts() -> Result<InterruptTable, ProcError> {
    read_table(Path::new("/proc/interrupts"))
}

/// Reads `/proc/softirqs` (software interrupts: network receive, timers, …).
///
/// # Errors
///
/// [`ProcError::Io`] when it cannot be read; [`ProcError::Parse`] when it is malformed.
pub fn softirqs() -> Result<InterruptTable, ProcError> {
    read_table(Path::new("/proc/softirqs"))
}

/// Reads and parses one table.
fn read_table(path: &Path) -> Result<InterruptTable, ProcError> {
    let text = read_file(path, 0, None)?;
    parse_table(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_parse_with_descriptions_and_totals() {
        let text = "           CPU0       CPU1       \n  \
                    0:         40          0   IO-APIC   2-edge      timer\n \
                    24:       1000         10   PCI-MSI 65536-edge      eth0-rx-0\n\
                    NMI:          1          2   Non-maskable interrupts\n\
                    ERR:          0\n";
        let t = parse_table(text, Path::new("x")).expect("parses");
        assert_eq!(t.cpus, vec![0, 1]);
        assert_eq!(t.lines.len(), 3);
        assert_eq!(t.lines[1].name, "24");
        assert!(t.lines[1].description.ends_with("eth0-rx-0"));
        assert_eq!(t.per_cpu(), vec![(0, 1041), (1, 12)]);
        let net = t.per_cpu_where(|l| l.description.contains("eth0"));
        assert_eq!(net, vec![(0, 1000), (1, 10)]);
        let soft = "                    CPU0       CPU1\n          HI:          1          0\n      NET_RX:        500         20\n";
        let s = parse_table(soft, Path::new("y")).expect("parses");
        assert_eq!(s.per_cpu(), vec![(0, 501), (1, 20)]);
        assert!(parse_table("", Path::new("z")).is_err());
        assert!(parse_table("CPU0 CPU1 CPU2\n 1: 1 2\n", Path::new("z")).is_err());
    }

    #[test]
    fn this_machine_has_tables() {
        if let Ok(t) = interrupts() {
            assert!(!t.cpus.is_empty());
        }
        if let Ok(t) = softirqs() {
            assert!(!t.per_cpu().is_empty());
        }
    }
}
