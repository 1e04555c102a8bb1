//! What autopin scores a pinning by: a cumulative measure of the program's progress,
//! sampled over time; its rate per second is the score. Each metric is a module:
//! [`heartbeat`] (the program counts its own work), [`instructions`] (instructions
//! retired, from hardware counters) and [`cpu_time`] (CPU time from schedstat).

pub mod cpu_time;
pub mod heartbeat;
pub mod instructions;

use serde::Serialize;

use crate::error::TuneError;

/// A measure of a program's progress.
pub trait Metric {
    /// Its name as in the report (`heartbeat`, `instructions`, `cpu-time`).
    fn name(&self) -> &str;

    /// Its unit per second, as shown next to scores (`beats/s`).
    fn unit(&self) -> &str;

    /// The cumulative amount of progress so far over the threads `tids` of the program
    /// (and those it followed before, that have exited): never decreases.
    ///
    /// # Errors
    ///
    /// When the metric cannot be read any more.
    fn total(&mut self, tids: &[i32]) -> Result<f64, TuneError>;

    /// The phase the program declared, for metrics that know it (heartbeats).
    fn phase(&self) -> Option<u64> {
        None
    }
}

/// Which metric to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum MetricChoice {
    /// Heartbeats if the program sends them, else instructions retired if the machine
    /// has counters, else CPU time.
    ///
    /// The best available: heartbeats when the program sends them during the initial
    /// wait.
    #[default]
    Auto,
    /// Application heartbeats (the program calls tp_heartbeat).
    Heartbeat,
    /// Instructions retired (hardware counters through perf events).
    Instructions,
    /// CPU time per wall second, from schedstat (no counters needed).
    CpuTime,
}

impl MetricChoice {
    /// The name as on the command line.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Heartbeat => "heartbeat",
            Self::Instructions => "instructions",
            Self::CpuTime => "cpu-time",
        }
    }
}
