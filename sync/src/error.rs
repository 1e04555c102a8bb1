//! Errors of the synchronization crate.
//!
//! What an experiment shares with every work spread over placed threads (a parameter out
//! of range, a placement, a worker thread, a checked result) is
//! [`topoprobe_place::WorkError`], the type `topoprobe_parallel` uses too; the rest is
//! this crate's own: a topology that cannot give a backoff, and the pinning and buffers of
//! the cache-line experiments (whose kernels' own errors,
//! `topoprobe_measure::cache_to_cache::C2cError`, convert into these).

use topoprobe_place::{PlaceError, WorkError};

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
    /// Pinning a thread failed.
    #[error(transparent)]
    Affinity(#[from] topoprobe_sys::affinity::AffinityError),
    /// A buffer could not be mapped.
    #[error(transparent)]
    Buffer(#[from] topoprobe_sys::buffer::BufferError),
    /// A parameter out of range, a placement that failed, a worker thread that could not
    /// start or panicked, an experiment's result that is wrong.
    #[error(transparent)]
    Work(#[from] WorkError),
}

impl From<PlaceError> for SyncError {
    fn from(e: PlaceError) -> Self {
        Self::Work(WorkError::Place(e))
    }
}

/// The cache-line kernels' errors, as the experiments' (`bench line-ops` and `mem --c2c`
/// say them alike): rounds out of range are a parameter out of range.
impl From<topoprobe_measure::cache_to_cache::C2cError> for SyncError {
    fn from(e: topoprobe_measure::cache_to_cache::C2cError) -> Self {
        use topoprobe_measure::cache_to_cache::{kernels::MAX_ROUNDS, C2cError};
        match e {
            C2cError::Rounds(rounds) => {
                Self::parameter("rounds", rounds, format!("1 to {MAX_ROUNDS}"))
            }
            C2cError::Affinity(e) => Self::Affinity(e),
            C2cError::Buffer(e) => Self::Buffer(e),
            C2cError::Thread(what) => Self::thread(what),
        }
    }
}

impl SyncError {
    /// A [`WorkError::Parameter`] (the constructors that use it are not built under loom).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn parameter(
        what: &'static str,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        Self::Work(WorkError::parameter(what, value, expected))
    }

    /// A [`WorkError::Thread`]: a worker thread could not be started or panicked.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn thread(what: impl Into<String>) -> Self {
        Self::Work(WorkError::Thread(what.into()))
    }

    /// A [`WorkError::Verification`]: an experiment's result was checked and is wrong.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn verification(what: impl Into<String>) -> Self {
        Self::Work(WorkError::Verification(what.into()))
    }

    /// Whether the error means the request itself is wrong (a parameter out of range, a
    /// placement that cannot be planned), so that retrying cannot help.
    #[must_use]
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Work(e) => e.is_usage(),
            _ => false,
        }
    }
}
