//! Errors of the synchronization crate.

/// Why a lock, a backoff or an experiment could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The topology's latencies are in cycles and no clock frequency is recorded.
    #[error(
        "the topology's latencies are in cycles and its description records no clock frequency \
         (provenance parameter \"ghz\"): educated backoff needs nanoseconds; re-run `topoprobe infer` \
         or infer with --ghz"
    )]
    NoFrequency,
    /// A recorded clock frequency is not a positive number.
    #[error("the topology's recorded clock frequency {0:?} (provenance parameter \"ghz\") is not a positive number")]
    BadFrequency(String),
    /// The topology has no latency between distinct contexts.
    #[error("the topology has no latency between two different hardware contexts")]
    NoLatencies,
    /// A parameter of an experiment is out of range: a bad request, not a failure.
    #[error("{what} {value} is out of range (allowed: {expected})")]
    Parameter {
        /// The parameter, as the command line names it (`threads`, `strides`…).
        what: &'static str,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// Thread placement failed.
    #[error(transparent)]
    Place(#[from] topoprobe_place::PlaceError),
    /// Pinning a thread failed.
    #[error(transparent)]
    Affinity(#[from] topoprobe_sys::affinity::AffinityError),
    /// A buffer could not be mapped.
    #[error(transparent)]
    Buffer(#[from] topoprobe_sys::buffer::BufferError),
    /// A worker thread could not be started or panicked.
    #[error("worker thread: {0}")]
    Thread(String),
    /// An experiment's result was checked and is wrong.
    #[error("verification failed: {0}")]
    Verification(String),
}

impl SyncError {
    /// A [`SyncError::Parameter`] (the constructors that use it are not built under loom).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn parameter(
        what: &'static str,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        Self::Parameter {
            what,
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// Whether the error means the request itself is wrong (a parameter out of range, a
    /// placement that cannot be planned), so that retrying cannot help.
    #[must_use]
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Parameter { .. } => true,
            Self::Place(e) => e.is_usage(),
            _ => false,
        }
    }
}
