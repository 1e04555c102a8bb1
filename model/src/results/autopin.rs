//! The result of `topoprobe autopin`: the candidate pinnings tried, their scores, the
//! pinning the program was left with, and how the program ended.

use serde::{Deserialize, Serialize};

/// One candidate pinning and how it scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateReport {
    /// Its name (`CON_HWC`, `BALANCE_CORE/2s`, or the schedule `0:1`).
    pub name: String,
    /// Its CPUs in thread order: thread `i` on `cpus[i]`.
    pub cpus: Vec<u32>,
    /// Mean rate over its samples (metric units per second); `null` without samples.
    pub score: Option<f64>,
    /// Half the width of the 95% confidence interval of the score (0 with one sample).
    pub spread: Option<f64>,
    /// `measured`, `stopped-early`, `incomplete` or `pending`.
    pub state: String,
    /// Number of samples.
    pub samples: usize,
    /// Why it is a candidate.
    pub why: String,
}

/// The pinning the program was left with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestReport {
    /// The candidate's name.
    pub name: String,
    /// Its CPUs in thread order.
    pub cpus: Vec<u32>,
    /// Its score (metric units per second), when measured.
    pub score: Option<f64>,
}

/// One round of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundReport {
    /// Why it started (`start`, `retune`, `phase 2`).
    pub reason: String,
    /// Its best candidate, when it finished.
    pub best: Option<String>,
    /// Seconds it took (warm-ups and measurements).
    pub duration_s: f64,
    /// Measurement time saved by early stops, in seconds.
    pub saved_s: f64,
}

/// A placement left out of the generated candidates, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// The placement's name.
    pub name: String,
    /// Why it was left out (a duplicate of which candidate, not plannable, beyond the
    /// maximum).
    pub reason: String,
}

/// What autopin did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The metric used (`heartbeat`, `instructions`, `cpu-time`; `none` when tuning
    /// never started).
    pub metric: String,
    /// The unit of the scores (`CPU s/s`, `instructions/s`…; empty when tuning never
    /// started).
    #[serde(default)]
    pub metric_unit: String,
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
    /// Whether autopin started the program (`false`: it attached to a running one).
    #[serde(default)]
    pub launched: bool,
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
    /// Threads that were idle during the initial wait (no CPU time to speak of): the
    /// candidates were planned for the others, and these may run on any CPU of a
    /// candidate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_threads: Vec<i32>,
}
