//! `topoprobe latency A B`: the one-way latency of one pair of hardware contexts.

use serde::{Deserialize, Serialize};

/// How each side of the ping-pong waits for its turn.
///
/// With the `clap` feature it is a command-line value (`topoprobe latency --wait`): the
/// first paragraph of each variant's documentation is its help there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum PingPongWait {
    /// Retry the compare-and-swap.
    ///
    /// One line transfer per hop.
    #[default]
    Cas,
    /// Spin on loads, then swap.
    ///
    /// A transfer and an invalidation per hop.
    Load,
}

/// The latency of one pair of hardware contexts. A pair whose spread stayed above the
/// limit after every retry is kept with its best batch and flagged (`noisy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairLatencyResult {
    /// First context (OS CPU number); it owned the cache line.
    pub a: u32,
    /// Second context (OS CPU number).
    pub b: u32,
    /// One-way latency, median of the kept samples, ns.
    pub median_ns: f64,
    /// Fastest kept sample, ns.
    pub min_ns: f64,
    /// Relative standard deviation of the kept samples (stdev / mean; 0.02 is 2 %).
    pub spread: f64,
    /// Samples kept.
    pub samples: usize,
    /// Samples rejected as outliers.
    pub rejected: usize,
    /// Round trips timed in each sample.
    pub round_trips_per_sample: u32,
    /// Batches measured (1 when the first was steady enough).
    pub batches: usize,
    /// Warm-up batches run before measuring.
    pub warmup_batches: usize,
    /// How much slower the first warm-up batch was than the steady state (1.2: 20 %
    /// slower), when the warm-up showed a frequency ramp.
    pub frequency_ramp: Option<f64>,
    /// Whether no batch got under the spread limit (the best batch is reported).
    pub noisy: bool,
    /// The spread limit the pair missed (a fraction), when noisy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_limit: Option<f64>,
    /// The noise flag in words, when noisy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_note: Option<String>,
    /// How each side waited for its turn.
    pub wait: PingPongWait,
    /// The timer the samples were taken with, for people.
    pub timer: String,
    /// The timer's rate, ticks per ns.
    pub ghz: f64,
    /// The SMT probe's slowdown, with `--smt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt_slowdown: Option<f64>,
    /// Whether the SMT probe says the two contexts share a core, with `--smt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shares_core: Option<bool>,
}
