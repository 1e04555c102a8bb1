//! Errors of the parallel algorithms and their experiments.

/// Why a sort, a pool or an experiment could not be set up or run.
#[derive(Debug, thiserror::Error)]
pub enum ParallelError {
    /// A parameter of an experiment is out of range: a bad request, not a failure.
    #[error("{what} {value} is out of range (allowed: {expected})")]
    Parameter {
        /// The parameter, as the command line names it (`size`, `runs`…).
        what: &'static str,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// Thread placement failed.
    #[error(transparent)]
    Place(#[from] topoprobe_place::PlaceError),
    /// A worker thread could not be started or panicked.
    #[error("worker thread: {0}")]
    Thread(String),
    /// An experiment's result was checked and is wrong.
    #[error("verification failed: {0}")]
    Verification(String),
}

impl ParallelError {
    /// A [`ParallelError::Parameter`].
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
            Self::Thread(_) | Self::Verification(_) => false,
        }
    }
}
