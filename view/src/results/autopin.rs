//! autopin's result as text: the metric, the candidates of the last round with their
//! scores, the best and how it compares with the slowest, and how tuning and the program
//! ended. The rows of the candidate table are also what the live table shows.

use std::fmt::Write as _;

use topoprobe_model::format::plural;
use topoprobe_model::format_cpu_list;
use topoprobe_model::results::autopin::Report;

use super::Rendered;

/// The header of the candidate table, the score in `unit` (`CPU s/s`: the part before
/// the `/` is shown).
#[must_use]
pub fn table_header(unit: &str) -> String {
    let unit = unit.split('/').next().unwrap_or("").trim();
    let score = if unit.is_empty() {
        "score".to_string()
    } else {
        format!("score ({unit})")
    };
    format!(
        "  {:<18} {:<16} {:>10} ± {:<9} state",
        "candidate", "CPUs", score, "spread"
    )
}

/// One row of the candidate table: its name, its CPUs (as ranges), its score and spread
/// (`None`: no sample yet; an infinite spread: one sample) and its state.
#[must_use]
pub fn table_row(name: &str, cpus: &[u32], score: Option<(f64, f64)>, state: &str) -> String {
    let score = match score {
        Some((m, h)) if h.is_finite() => format!("{m:>10.4} ± {h:<9.4}"),
        Some((m, _)) => format!("{m:>10.4} ± {:<9}", "-"),
        None => format!("{:>10}   {:<9}", "-", ""),
    };
    format!("  {name:<18} {:<16} {score} {state}", format_cpu_list(cpus))
}

/// How much faster `a` is than `b`, both rates (higher is better): `1.37x as fast as`.
#[must_use]
pub fn speed_ratio(a: f64, b: f64) -> Option<String> {
    (a.is_finite() && b.is_finite() && b > 0.0).then(|| format!("{:.2}x as fast as", a / b))
}

impl Rendered for Report {
    fn text(&self) -> String {
        let mut s = String::new();
        if self.metric == "none" {
            let _ = writeln!(s, "autopin: tuning never started");
        } else {
            let _ = writeln!(
                s,
                "autopin: metric {} ({}): {}",
                self.metric, self.metric_unit, self.metric_note
            );
        }
        if !self.idle_threads.is_empty() {
            let list: Vec<String> = self.idle_threads.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                s,
                "autopin: planned for the threads that ran; idle during the initial wait: {} (they may run on any CPU of a candidate)",
                list.join(", ")
            );
        }
        if !self.candidates.is_empty() {
            let _ = writeln!(
                s,
                "autopin: {} of the last round:",
                plural(self.candidates.len(), "candidate")
            );
            let _ = writeln!(s, "{}", table_header(&self.metric_unit));
            for c in &self.candidates {
                let score = c.score.map(|m| (m, c.spread.unwrap_or(f64::INFINITY)));
                let _ = writeln!(s, "{}", table_row(&c.name, &c.cpus, score, &c.state));
            }
        }
        for d in &self.dropped {
            let _ = writeln!(s, "autopin: left out {}: {}", d.name, d.reason);
        }
        if let Some(b) = &self.best {
            let mut line = format!(
                "autopin: best {} (CPUs {})",
                b.name,
                format_cpu_list(&b.cpus)
            );
            if let Some(score) = b.score {
                let _ = write!(line, ": {score:.4} {}", self.metric_unit);
                let slowest = self
                    .candidates
                    .iter()
                    .filter(|c| c.name != b.name)
                    .filter_map(|c| c.score.map(|v| (c, v)))
                    .min_by(|x, y| x.1.total_cmp(&y.1));
                if let Some((c, v)) = slowest {
                    if let Some(r) = speed_ratio(score, v) {
                        let _ = write!(line, ", {r} {} (the slowest)", c.name);
                    }
                }
            }
            let _ = writeln!(s, "{line}");
        }
        if !self.rounds.is_empty() {
            let _ = writeln!(
                s,
                "autopin: {}; early stops saved {:.1} s",
                plural(self.rounds.len(), "round"),
                self.time_saved_s
            );
        }
        let keeps = self.best.as_ref().map_or_else(
            || "its own CPU masks".to_string(),
            |b| format!("{} (CPUs {})", b.name, format_cpu_list(&b.cpus)),
        );
        let _ = writeln!(
            s,
            "autopin: stopped ({}); the program keeps {keeps}",
            self.stopped_by
        );
        if let Some(e) = &self.error {
            let _ = writeln!(s, "autopin: error: {e}");
        }
        match self.exit_status {
            Some(code) if code > 128 => {
                let _ = writeln!(
                    s,
                    "autopin: process {} exited with status {code} (signal {})",
                    self.pid,
                    code - 128
                );
            }
            Some(code) => {
                let _ = writeln!(s, "autopin: process {} exited with status {code}", self.pid);
            }
            None => {
                let _ = writeln!(s, "autopin: process {} runs on", self.pid);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::results::autopin::{BestReport, CandidateReport, RoundReport};

    fn candidate(name: &str, cpus: &[u32], score: f64) -> CandidateReport {
        CandidateReport {
            name: name.into(),
            cpus: cpus.to_vec(),
            score: Some(score),
            spread: Some(0.01),
            state: "measured".into(),
            samples: 4,
            why: String::new(),
        }
    }

    #[test]
    fn the_report_says_the_best_and_by_how_much() {
        let r = Report {
            metric: "cpu-time".into(),
            metric_unit: "CPU s/s".into(),
            metric_note: "asked for".into(),
            candidates: vec![
                candidate("0:0", &[0, 0], 1.0),
                candidate("0:1", &[0, 1], 1.37),
            ],
            best: Some(BestReport {
                name: "0:1".into(),
                cpus: vec![0, 1],
                score: Some(1.37),
            }),
            exit_status: Some(0),
            pid: 42,
            launched: true,
            rounds: vec![RoundReport {
                reason: "start".into(),
                best: Some("0:1".into()),
                duration_s: 5.0,
                saved_s: 0.0,
            }],
            time_saved_s: 0.0,
            dropped: Vec::new(),
            stopped_by: "the program ended".into(),
            error: None,
            idle_threads: Vec::new(),
        };
        let t = r.text();
        for want in [
            "metric cpu-time (CPU s/s)",
            "2 candidates of the last round",
            "score (CPU s)",
            "best 0:1 (CPUs 0-1): 1.3700 CPU s/s, 1.37x as fast as 0:0 (the slowest)",
            "1 round;",
            "the program keeps 0:1 (CPUs 0-1)",
            "process 42 exited with status 0",
        ] {
            assert!(t.contains(want), "{want:?} missing from\n{t}");
        }
        assert!(!t.contains("1 rounds") && !t.contains("slower"), "{t}");
    }

    #[test]
    fn rows_show_cpu_ranges_and_missing_scores() {
        assert!(table_row("CON_HWC", &[0, 1, 2, 3], None, "pending").contains(" 0-3 "));
        assert!(table_row("x", &[1], Some((2.0, f64::INFINITY)), "measured").contains("± -"));
        assert_eq!(speed_ratio(0.73, 1.0).as_deref(), Some("0.73x as fast as"));
        assert_eq!(speed_ratio(1.0, 0.0), None);
    }
}
