//! Errors of the inference crate.

/// Why inference could not produce a topology.
#[derive(Debug, thiserror::Error)]
pub enum InferError {
    /// Fewer than two hardware contexts: there is no latency to infer from.
    #[error("need at least 2 hardware contexts, got {0}")]
    TooSmall(usize),
    /// A context has no latency to any other context.
    #[error("context {0} (row {0}) has no latency to any other context")]
    Unmeasured(usize),
    /// A latency is negative or not finite, or every latency is zero.
    #[error("latency of pair ({a}, {b}) is {value:e}: latencies must be finite, between 0 and 1e12, and not all zero")]
    BadValue {
        /// First context (row).
        a: usize,
        /// Second context (column).
        b: usize,
        /// The offending value.
        value: f64,
    },
    /// An option is out of range (for example `--sockets 0`).
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// The probe behind [`PairLatency`](topoprobe_model::PairLatency) failed.
    #[error("measuring pair ({a}, {b}) failed: {message}")]
    Probe {
        /// First context.
        a: usize,
        /// Second context.
        b: usize,
        /// What went wrong.
        message: String,
    },
    /// No pair could be measured: every one was missing or given up.
    #[error("none of the {pairs} pairs could be measured: {reason}")]
    NothingMeasured {
        /// Pairs tried.
        pairs: usize,
        /// Why (the first pair the probe gave up on, when it gave up on any).
        reason: String,
    },
    /// The structure found is inconsistent with the model (a bug or a degenerate input).
    #[error(transparent)]
    Model(#[from] topoprobe_model::ModelError),
}
