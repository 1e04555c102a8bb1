//! A measurement's cost plan for people: every step with the bytes, passes and seconds it
//! plans (and, once run, what it spent), the totals against the budget, and what the
//! budget leaves out.

use std::fmt::Write as _;

use topoprobe_model::format::plural;
use topoprobe_model::{seconds_text as secs, size_text, CostPlan};

/// Bytes as [`size_text`] says them; `-` for none.
fn size(bytes: u64) -> String {
    if bytes == 0 {
        "-".into()
    } else {
        size_text(bytes)
    }
}

/// The plan as a table: one line per step (probe, what, memory, passes, planned seconds,
/// and spent seconds and peak memory when it ran), the totals, and the notes.
#[must_use]
pub fn render(plan: &CostPlan) -> String {
    let mut out = String::new();
    let ran = plan.steps.iter().any(|s| s.spent_seconds.is_some());
    // The step column is as wide as its longest description, so that the figures line up.
    let w = plan
        .steps
        .iter()
        .map(|s| s.what.chars().count())
        .fold(46, usize::max);
    let _ = write!(
        out,
        "{:<14} {:<w$} {:>9} {:>7} {:>8}",
        "probe", "step", "memory", "passes", "planned"
    );
    if ran {
        let _ = write!(out, " {:>8} {:>9}", "spent", "peak RSS");
    }
    out.push('\n');
    for s in &plan.steps {
        let _ = write!(
            out,
            "{:<14} {:<w$} {:>9} {:>7} {:>7.2}s",
            s.probe,
            s.what,
            size(s.bytes),
            s.passes,
            s.seconds
        );
        if ran {
            match s.spent_seconds {
                Some(t) => {
                    let _ = write!(out, " {t:>7.2}s");
                }
                None => {
                    let _ = write!(out, " {:>8}", "-");
                }
            }
            let _ = write!(out, " {:>9}", s.spent_peak_bytes.map_or("-".into(), size));
        }
        out.push('\n');
        if let Some(n) = &s.note {
            let _ = writeln!(out, "{:<14}   note: {n}", "");
        }
    }
    let _ = write!(out, "total: {}", totals(plan));
    out.push('\n');
    if let Some(b) = &plan.basis {
        let _ = writeln!(out, "budget: {b}");
    }
    if let Some(s) = &plan.speed {
        let _ = writeln!(out, "speed: {s}");
    }
    for n in &plan.left_out {
        let _ = writeln!(out, "left out: {n}");
    }
    out
}

/// The totals of a plan: planned seconds against the budget, the largest step against the
/// memory budget, and what was spent once it ran.
fn totals(plan: &CostPlan) -> String {
    let mut s = format!(
        "{:.1} s planned of the {} budget, largest step {} of the {} memory budget",
        plan.seconds(),
        secs(plan.budget.seconds),
        size(plan.peak_bytes()),
        size(plan.budget.bytes)
    );
    if let Some(t) = plan.spent_seconds() {
        let _ = write!(s, "; spent {t:.1} s");
    }
    if let Some(p) = plan.spent_peak_bytes() {
        let _ = write!(s, ", peak RSS {}", size(p));
    }
    s
}

/// One line for a description's provenance: planned and spent seconds and memory.
#[must_use]
pub fn summary(plan: &CostPlan) -> String {
    let mut s = format!("{}, {}", plural(plan.steps.len(), "step"), totals(plan));
    if !plan.left_out.is_empty() {
        let _ = write!(
            s,
            "; {} on what the budget left out",
            plural(plan.left_out.len(), "note")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{Budget, CostStep};

    #[test]
    fn the_table_has_every_step_the_totals_and_the_notes() {
        let mut p = CostPlan::new(Budget::new(10.0, 256 << 20));
        p.steps.push(CostStep::new(
            "mem",
            "latency CPU 0 -> node 0",
            64 << 20,
            4,
            0.25,
        ));
        let mut s = CostStep::new("power", "power", 0, 0, 0.0);
        s.note = Some("unavailable: no RAPL".into());
        p.steps.push(s);
        p.left_out.push("measured 1 of 2 pairs".into());
        let t = render(&p);
        assert!(t.contains("latency CPU 0 -> node 0"), "{t}");
        assert!(t.contains("64 MiB") && t.contains("0.25s"), "{t}");
        assert!(t.contains("note: unavailable: no RAPL"), "{t}");
        assert!(t.contains("0.2 s planned of the 10 s budget"), "{t}");
        assert!(t.contains("left out: measured 1 of 2 pairs"), "{t}");
        assert!(!t.contains("spent"), "{t}");
        p.steps[0].spent_seconds = Some(0.3);
        p.steps[0].spent_peak_bytes = Some(70 << 20);
        let t = render(&p);
        assert!(t.contains("spent 0.3 s, peak RSS 70 MiB"), "{t}");
        assert!(summary(&p).contains("spent 0.3 s"));
        assert!(summary(&p).starts_with("2 steps, "), "{}", summary(&p));
        assert!(
            summary(&p).ends_with("; 1 note on what the budget left out"),
            "{}",
            summary(&p)
        );
    }

    #[test]
    fn a_long_step_widens_the_column_and_the_figures_stay_in_line() {
        let mut p = CostPlan::new(Budget::new(120.0, 1 << 30));
        p.steps.push(CostStep::new(
            "mem",
            "latency CPU 0 -> node 0",
            66 << 20,
            8,
            0.24,
        ));
        p.steps.push(CostStep::new(
            "mem",
            "loaded latency CPU 0 -> node 0, 1 loader, 9 delays, up to 6 between and 3 again",
            256 << 20,
            40,
            5.23,
        ));
        let t = render(&p);
        let ends: Vec<usize> = t
            .lines()
            .take(3)
            .map(|l| l.trim_end().chars().count())
            .collect();
        assert!(ends.iter().all(|&e| e == ends[0]), "{ends:?}\n{t}");
    }
}
