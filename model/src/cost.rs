//! The cost of measuring a machine: what each probe planned to spend before it ran (bytes,
//! passes, seconds), under which budget, what the budget left out, and what each step really
//! spent. The planning itself is the measuring crate's job; this module is the record that a
//! dry run prints and a description keeps in its provenance.
//!
//! ```
//! use topoprobe_model::{Budget, CostPlan, CostStep};
//!
//! let mut plan = CostPlan::new(Budget::new(10.0, 256 << 20));
//! plan.steps.push(CostStep::new("cache", "caches of CPU 0", 64 << 20, 120, 1.5));
//! plan.steps.push(CostStep::new("mem", "latency CPU 0 -> node 0", 64 << 20, 4, 0.2));
//! assert_eq!(plan.seconds(), 1.7);
//! assert_eq!(plan.peak_bytes(), 64 << 20);
//! assert!(plan.fits());
//! ```

use serde::{Deserialize, Serialize};

/// What a measurement may spend: wall-clock seconds (eviction, preparation, page faults and
/// thread start included) and bytes allocated at once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Bytes allocated at any one time by the probes (the buffers they measure with).
    pub bytes: u64,
}

impl Budget {
    /// A budget of `seconds` and `bytes`.
    #[must_use]
    pub const fn new(seconds: f64, bytes: u64) -> Self {
        Self { seconds, bytes }
    }

    /// This budget with `seconds` instead.
    #[must_use]
    pub const fn with_seconds(self, seconds: f64) -> Self {
        Self { seconds, ..self }
    }
}

/// One planned step of a probe and, once it ran, what it spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostStep {
    /// The probe or plugin (`latency`, `smt`, `inference`, `cache`, `shared-caches`, `mem`,
    /// `contention`, `power`).
    pub probe: String,
    /// What the step measures, as the progress display names it (`latency CPU 0 -> node 1`).
    pub what: String,
    /// Bytes the step allocates at most (its buffers), planned.
    pub bytes: u64,
    /// Units of work planned: pairs, array sizes, rounds, load states (the step says which).
    pub passes: u64,
    /// Seconds planned, wall clock.
    pub seconds: f64,
    /// Seconds the step really took, once it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent_seconds: Option<f64>,
    /// Peak resident memory of the process while the step ran, bytes, once it ran (where the
    /// OS reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent_peak_bytes: Option<u64>,
    /// Why the step did not run, or ran shorter than planned (the budget ran out, the
    /// hardware is missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl CostStep {
    /// A planned step that has not run yet.
    #[must_use]
    pub fn new(
        probe: impl Into<String>,
        what: impl Into<String>,
        bytes: u64,
        passes: u64,
        seconds: f64,
    ) -> Self {
        Self {
            probe: probe.into(),
            what: what.into(),
            bytes,
            passes,
            seconds: to_ms(seconds),
            spent_seconds: None,
            spent_peak_bytes: None,
            note: None,
        }
    }

    /// Records what the step spent: `seconds` of wall time, and the process's peak resident
    /// memory by its end.
    pub fn record(&mut self, seconds: f64, peak_bytes: Option<u64>) {
        self.spent_seconds = Some(to_ms(seconds));
        self.spent_peak_bytes = peak_bytes;
    }
}

/// Seconds as messages say them: whole seconds from 10 s, one decimal below (`15 s`,
/// `0.5 s`).
#[must_use]
pub fn seconds_text(seconds: f64) -> String {
    if seconds >= 10.0 {
        format!("{seconds:.0} s")
    } else {
        format!("{seconds:.1} s")
    }
}

/// Seconds rounded to the millisecond (what a plan or a wall clock resolves).
fn to_ms(seconds: f64) -> f64 {
    if seconds.is_finite() {
        (seconds * 1000.0).round() / 1000.0
    } else {
        seconds
    }
}

/// A measurement's plan: its budget, its steps in the order they run, and what the budget
/// left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostPlan {
    /// The budget the plan was made for.
    pub budget: Budget,
    /// The steps, in the order they run.
    pub steps: Vec<CostStep>,
    /// What the budget leaves out, chosen and said (`measured 4 of 16 socket -> node pairs:
    /// one per distance class`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// How the budget was chosen, when it was not simply given (`memory budget 1464 MiB:
    /// 3 × the 480 MiB last-level cache …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<String>,
    /// The machine's speed the plan was made at, when it was measured before planning and
    /// found slower than the rates plans assume (`first touch 40 MB/s, …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<String>,
}

impl CostPlan {
    /// An empty plan under `budget`.
    #[must_use]
    pub const fn new(budget: Budget) -> Self {
        Self {
            budget,
            steps: Vec::new(),
            left_out: Vec::new(),
            basis: None,
            speed: None,
        }
    }

    /// A plan under `budget` made of `steps` (in the order they run) and the `left_out`
    /// notes.
    #[must_use]
    pub fn of(budget: Budget, steps: Vec<CostStep>, left_out: Vec<String>) -> Self {
        Self {
            budget,
            steps,
            left_out,
            basis: None,
            speed: None,
        }
    }

    /// Planned seconds of every step together.
    #[must_use]
    pub fn seconds(&self) -> f64 {
        self.steps.iter().map(|s| s.seconds).sum()
    }

    /// Planned bytes of the largest step (steps run one after another and free their
    /// buffers).
    #[must_use]
    pub fn peak_bytes(&self) -> u64 {
        self.steps.iter().map(|s| s.bytes).max().unwrap_or(0)
    }

    /// Whether the plan keeps within its budget.
    #[must_use]
    pub fn fits(&self) -> bool {
        self.seconds() <= self.budget.seconds && self.peak_bytes() <= self.budget.bytes
    }

    /// Seconds the steps that ran really took together (`None` before any ran).
    #[must_use]
    pub fn spent_seconds(&self) -> Option<f64> {
        let spent: Vec<f64> = self.steps.iter().filter_map(|s| s.spent_seconds).collect();
        (!spent.is_empty()).then(|| spent.iter().sum())
    }

    /// The largest peak resident memory seen during a step (`None` when none was
    /// recorded).
    #[must_use]
    pub fn spent_peak_bytes(&self) -> Option<u64> {
        self.steps.iter().filter_map(|s| s.spent_peak_bytes).max()
    }

    /// Appends another plan's steps and left-out notes (its budget is not kept).
    pub fn extend(&mut self, other: Self) {
        self.steps.extend(other.steps);
        self.left_out.extend(other.left_out);
        if self.speed.is_none() {
            self.speed = other.speed;
        }
    }

    /// Planned seconds of the steps before step `index`: where a progress display stands
    /// when that step starts.
    #[must_use]
    pub fn seconds_before(&self, index: usize) -> f64 {
        self.steps.iter().take(index).map(|s| s.seconds).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_follow_the_steps() {
        let mut p = CostPlan::new(Budget::new(1.0, 100));
        assert_eq!(p.seconds(), 0.0);
        assert_eq!(p.peak_bytes(), 0);
        assert!(p.fits());
        assert!(p.spent_seconds().is_none());
        p.steps.push(CostStep::new("a", "x", 60, 1, 0.5));
        p.steps.push(CostStep::new("b", "y", 120, 2, 0.75));
        assert!(!p.fits(), "1.25 s and 120 bytes are over 1 s and 100 bytes");
        assert_eq!(p.seconds_before(1), 0.5);
        p.steps[0].spent_seconds = Some(0.4);
        p.steps[1].spent_peak_bytes = Some(300);
        assert_eq!(p.spent_seconds(), Some(0.4));
        assert_eq!(p.spent_peak_bytes(), Some(300));
        let json = serde_json::to_string(&p).unwrap();
        let back: CostPlan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
    }
}
