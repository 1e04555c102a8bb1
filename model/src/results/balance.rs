//! The result of `topoprobe balance`: every decision (moves, advice, rollbacks) with its
//! reason, the monitored processes, the metrics that worked, and why nothing moved when
//! nothing did.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What kind of decision a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A move applied.
    Move,
    /// A move advised (`--advise`), not applied.
    Advice,
    /// A move undone because the moved threads ran less afterwards.
    Rollback,
}

/// One decision about one thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Seconds since the monitor started.
    pub time_s: f64,
    /// The interval of the decision, from 1 (the first with rates).
    pub interval: usize,
    /// The process.
    pub pid: i32,
    /// The thread.
    pub tid: i32,
    /// Its CPUs before.
    pub from: Vec<u32>,
    /// Its CPUs after.
    pub to: Vec<u32>,
    /// Why (with the metric values).
    pub reason: String,
    /// The rule (`contention`, `numa`, `interrupts`).
    pub rule: String,
    /// `move`, `advice` or `rollback`.
    pub kind: Kind,
    /// The other thread of a swap.
    pub swap_with: Option<i32>,
}

/// A monitored process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessReport {
    /// Its id.
    pub pid: i32,
    /// Its command name.
    pub name: String,
}

/// What the balancer did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Intervals measured (after the first look, which only reads counters).
    pub intervals: usize,
    /// Every decision: moves (or, with `advise`, advice) and rollbacks.
    pub moves: Vec<Record>,
    /// Changes rolled back.
    pub rolled_back: usize,
    /// Whether only advice was given.
    pub advise: bool,
    /// CPU time per second of all monitored threads together, per interval (never `-0`).
    pub cpu_s_per_s: Vec<f64>,
    /// Each metric: `ok`, or `unavailable: <reason>`.
    pub metrics: BTreeMap<String, String>,
    /// The processes seen.
    pub processes: Vec<ProcessReport>,
    /// The balancer's own CPU time per second of its run.
    pub self_cpu_s_per_s: f64,
    /// Why it stopped (`duration`, `signal 2`, `every process exited`).
    pub stopped_by: String,
    /// Why no decision was made, when none was (`null` otherwise).
    #[serde(default)]
    pub no_moves_because: Option<String>,
    /// The notes of the run (a process exited, changed its own affinity, a move failed,
    /// the cap reached), each once, in order.
    #[serde(default)]
    pub notes: Vec<String>,
}
