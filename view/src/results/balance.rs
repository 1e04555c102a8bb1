//! The balancer's result as text: its decisions (one line each, as the live display shows
//! them), why it made none when it made none, the metrics, the processes and the notes.

use std::fmt::Write as _;

use topoprobe_model::format::plural;
use topoprobe_model::format_cpu_list;
use topoprobe_model::results::balance::{Kind, Record, Report};

use super::Rendered;

/// One decision as a line: `[   1.00 s] move process 12 (sh) thread 12: CPUs 0 -> 1: why`
/// (`name`: the process's command name).
#[must_use]
pub fn decision_line(r: &Record, name: &str) -> String {
    let what = match r.kind {
        Kind::Move => "move",
        Kind::Advice => "advise",
        Kind::Rollback => "rollback",
    };
    format!(
        "[{:7.2} s] {what} process {} ({name}) thread {}: CPUs {} -> {}: {}",
        r.time_s,
        r.pid,
        r.tid,
        format_cpu_list(&r.from),
        format_cpu_list(&r.to),
        r.reason
    )
}

impl Rendered for Report {
    fn text(&self) -> String {
        let mut s = String::new();
        let procs: Vec<String> = self
            .processes
            .iter()
            .map(|p| format!("{} ({})", p.pid, p.name))
            .collect();
        let _ = writeln!(
            s,
            "balance: {} watched over {}; stopped: {}",
            match self.processes.len() {
                1 => "1 process".to_string(),
                n => format!("{n} processes"),
            },
            plural(self.intervals, "interval"),
            self.stopped_by
        );
        if !procs.is_empty() {
            let _ = writeln!(s, "  processes: {}", procs.join(", "));
        }
        let count = |k: Kind| self.moves.iter().filter(|m| m.kind == k).count();
        if self.advise {
            let _ = writeln!(
                s,
                "  {} (nothing moved: --advise)",
                plural(count(Kind::Advice), "advised move")
            );
        } else {
            let _ = writeln!(
                s,
                "  {}, {}",
                plural(count(Kind::Move), "move"),
                plural(self.rolled_back, "rollback")
            );
        }
        for m in &self.moves {
            let name = self
                .processes
                .iter()
                .find(|p| p.pid == m.pid)
                .map_or("?", |p| p.name.as_str());
            let _ = writeln!(s, "  {}", decision_line(m, name));
        }
        if let Some(why) = &self.no_moves_because {
            let _ = writeln!(s, "  no decision: {why}");
        }
        if !self.cpu_s_per_s.is_empty() {
            let n = self.cpu_s_per_s.len() as f64;
            let mean = self.cpu_s_per_s.iter().sum::<f64>() / n + 0.0;
            let max = self.cpu_s_per_s.iter().copied().fold(0.0_f64, f64::max);
            let _ = writeln!(
                s,
                "  CPU time of the watched threads: {mean:.2} s/s on average, {max:.2} s/s at most"
            );
        }
        let _ = writeln!(
            s,
            "  the balancer's own CPU time: {:.3} s/s",
            self.self_cpu_s_per_s + 0.0
        );
        let metrics: Vec<String> = self
            .metrics
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if !metrics.is_empty() {
            let _ = writeln!(s, "  metrics: {}", metrics.join("; "));
        }
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use topoprobe_model::results::balance::ProcessReport;

    fn report() -> Report {
        Report {
            intervals: 1,
            moves: Vec::new(),
            rolled_back: 0,
            advise: false,
            cpu_s_per_s: vec![-0.0],
            metrics: BTreeMap::from([("cpu-time".to_string(), "ok".to_string())]),
            processes: vec![ProcessReport {
                pid: 7,
                name: "sh".into(),
            }],
            self_cpu_s_per_s: 0.001,
            stopped_by: "duration".into(),
            no_moves_because: Some("no rule found anything to improve".into()),
            notes: vec!["process 8 exited".into()],
        }
    }

    #[test]
    fn an_idle_run_says_why_nothing_moved() {
        let t = report().text();
        for want in [
            "balance: 1 process watched over 1 interval; stopped: duration",
            "processes: 7 (sh)",
            "0 moves, 0 rollbacks",
            "no decision: no rule found anything to improve",
            "0.00 s/s on average",
            "note: process 8 exited",
        ] {
            assert!(t.contains(want), "{want:?} missing from\n{t}");
        }
        assert!(!t.contains("-0"), "{t}");
        // The JSON has no -0 either.
        let j = crate::results::json(&report()).expect("json");
        assert!(!j.contains("-0"), "{j}");
    }

    #[test]
    fn decisions_read_as_lines() {
        let mut r = report();
        r.processes.push(ProcessReport {
            pid: 9,
            name: "w".into(),
        });
        r.moves.push(Record {
            time_s: 1.0,
            interval: 2,
            pid: 9,
            tid: 10,
            from: vec![0],
            to: vec![1, 2, 3],
            reason: "contention".into(),
            rule: "contention".into(),
            kind: Kind::Move,
            swap_with: None,
        });
        r.no_moves_because = None;
        let t = r.text();
        assert!(t.contains("2 processes watched"), "{t}");
        assert!(t.contains("1 move, 0 rollbacks"), "{t}");
        assert!(
            t.contains("move process 9 (w) thread 10: CPUs 0 -> 1-3: contention"),
            "{t}"
        );
    }
}
