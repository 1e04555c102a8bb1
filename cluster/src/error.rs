//! Errors of the cluster analysis.

use topoprobe_model::ProbeError;

/// Why the communication layers of a cluster could not be found.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The ranks' reports do not describe a valid run.
    #[error("invalid rank list: {0}")]
    Ranks(String),
    /// Fewer than two ranks: there is no pair to measure.
    #[error("{0} rank(s): at least two are needed to measure communication")]
    TooFewRanks(usize),
    /// A measurement failed.
    #[error("measurement failed: {0}")]
    Probe(#[from] ProbeError),
    /// An option is out of range.
    #[error("invalid option: {0}")]
    Option(String),
    /// The sampled strategy failed (the core-level collection it reuses).
    #[error("sampled measurement failed: {0}")]
    Sampling(String),
}
