//! What autopin tells: events for a live table while it runs, and the report at the end
//! (its JSON form is the `--json` output).

use serde::Serialize;

use super::candidates::{Candidate, Dropped};
use super::search::{Outcome, State};
use crate::stats::Summary;

/// Something that happened, for a live display.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// The program was started (`launched`) or attached to.
    Started {
        /// Its process id.
        pid: i32,
        /// Whether autopin started it.
        launched: bool,
    },
    /// The metric was chosen.
    Metric {
        /// Its name.
        name: &'a str,
        /// Its unit per second.
        unit: &'a str,
        /// Why it was chosen (and why better ones are unavailable).
        note: &'a str,
    },
    /// A round of the search starts.
    Round {
        /// Its number, from 1.
        round: usize,
        /// Why it starts.
        reason: &'a str,
        /// Its candidates.
        candidates: &'a [Candidate],
    },
    /// A candidate's state or score changed.
    Candidate {
        /// Its index in the round.
        index: usize,
        /// The candidate.
        candidate: &'a Candidate,
        /// Its state.
        state: State,
        /// Its score so far.
        summary: Option<Summary>,
    },
    /// A round ended; the program is pinned by its best candidate.
    Best {
        /// The candidate.
        candidate: &'a Candidate,
        /// Its score.
        summary: Option<Summary>,
        /// Time saved by early stops in this round, in seconds.
        saved_s: f64,
    },
    /// Autopin stops tuning; the program keeps `pinned` (`None`: its own masks).
    Stopped {
        /// Why.
        reason: &'a str,
        /// The pinning it keeps.
        pinned: Option<&'a Candidate>,
    },
    /// A warning (tuning goes on or stops cleanly).
    Warning(&'a str),
}

/// Receives [`Event`]s while autopin runs.
pub trait Observer {
    /// Called for every event.
    fn event(&mut self, event: &Event<'_>);
}

impl Observer for () {
    fn event(&mut self, _event: &Event<'_>) {}
}

/// One candidate in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateReport {
    /// Its name.
    pub name: String,
    /// Its CPUs in thread order.
    pub cpus: Vec<u32>,
    /// Mean rate over its samples (metric units per second); `null` without samples.
    pub score: Option<f64>,
    /// Half the width of the 95% confidence interval of the score.
    pub spread: Option<f64>,
    /// `measured`, `stopped-early`, `incomplete` or `pending`.
    pub state: String,
    /// Number of samples.
    pub samples: usize,
    /// Why it is a candidate.
    pub why: String,
}

impl CandidateReport {
    pub(crate) fn new(c: &Candidate, o: &Outcome) -> Self {
        let s = o.summary();
        Self {
            name: c.name.clone(),
            cpus: c.cpus.clone(),
            score: s.map(|s| s.mean),
            spread: s.map(|s| {
                if s.half_width.is_finite() {
                    s.half_width
                } else {
                    0.0
                }
            }),
            state: o.state.name().to_string(),
            samples: o.samples.len(),
            why: c.why.clone(),
        }
    }
}

/// The pinning the program was left with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestReport {
    /// The candidate's name.
    pub name: String,
    /// Its CPUs in thread order.
    pub cpus: Vec<u32>,
    /// Its score.
    pub score: Option<f64>,
}

/// One round of the search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundReport {
    /// Why it started (`start`, `retune`, `phase 2`, `threads 2 → 4`).
    pub reason: String,
    /// Its best candidate, when it finished.
    pub best: Option<String>,
    /// Seconds it took (warm-ups and measurements).
    pub duration_s: f64,
    /// Measurement time saved by early stops, in seconds.
    pub saved_s: f64,
}

/// What autopin did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The metric used (`heartbeat`, `instructions`, `cpu-time`; `none` when tuning
    /// never started).
    pub metric: String,
    /// Why that metric, and why better ones were unavailable.
    pub metric_note: String,
    /// The candidates of the last round, with their scores.
    pub candidates: Vec<CandidateReport>,
    /// The pinning the program was left with (`null`: its own masks).
    pub best: Option<BestReport>,
    /// The program's exit code (128 + signal when killed); `null` when attached.
    pub exit_status: Option<i32>,
    /// The program's process id.
    pub pid: i32,
    /// Every round of the search.
    pub rounds: Vec<RoundReport>,
    /// Measurement time saved by early stops over all rounds, in seconds.
    pub time_saved_s: f64,
    /// Placements left out of the generated candidates, and why.
    pub dropped: Vec<Dropped>,
    /// Why tuning stopped (`the program ended`, `signal 2`, `error`).
    pub stopped_by: String,
    /// The error that stopped tuning, if any (the program kept running).
    pub error: Option<String>,
}
