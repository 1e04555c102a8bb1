//! Why the pair probe could not measure a pair, and which of those failures a run can go
//! on without.

use super::STALL;

/// A pair the probe could not measure: the two OS CPUs and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pair ({a}, {b}): {failure}")]
pub struct PairError {
    /// First CPU (OS number).
    pub a: u32,
    /// Second CPU (OS number).
    pub b: u32,
    /// What went wrong.
    pub failure: PairFailure,
}

impl PairError {
    /// Whether the failure belongs to the moment rather than to the machine or the probe
    /// ([`PairFailure::is_passing`]).
    #[must_use]
    pub fn is_passing(&self) -> bool {
        self.failure.is_passing()
    }
}

/// What went wrong with a pair.
///
/// A noisy pair is not a failure: the probe keeps its best batch and flags it
/// ([`super::PairMeasurement::noisy`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairFailure {
    /// The two CPUs are one.
    #[error("a CPU cannot be measured against itself")]
    SameCpu,
    /// A thread could not be pinned to its CPU (offline, or outside this process's
    /// affinity): a fact of the machine, which stops a run.
    #[error("{0}")]
    Pin(String),
    /// The partner thread did not answer for 2 s on every try (its CPU was taken by
    /// a higher-priority task).
    #[error(
        "the partner thread did not answer for {} s, {tries} times in a row (is its CPU busy with a higher-priority task?)",
        STALL.as_secs()
    )]
    Stalled {
        /// Tries made.
        tries: usize,
    },
    /// No batch had a usable sample (the timer read no time in any of them).
    #[error(
        "no usable sample in {}",
        if *batches == 1 { "1 batch".to_string() } else { format!("{batches} batches") }
    )]
    NoSample {
        /// Batches measured.
        batches: usize,
    },
    /// The probe itself went wrong (the shared line changed unexpectedly, a thread ended
    /// early or panicked): a bug, not noise, which stops a run.
    #[error("{0}")]
    Broken(String),
}

impl PairFailure {
    /// Whether the failure belongs to the moment rather than to the machine or the probe:
    /// a stalled partner or no usable sample. A run goes on without such a pair, which is
    /// then missing and flagged; a CPU that cannot be pinned or a broken probe stops it.
    #[must_use]
    pub fn is_passing(&self) -> bool {
        matches!(self, Self::Stalled { .. } | Self::NoSample { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_and_empty_batches_are_passing_and_the_rest_is_not() {
        let e = |failure| PairError {
            a: 1,
            b: 14,
            failure,
        };
        assert!(e(PairFailure::Stalled { tries: 2 }).is_passing());
        assert!(e(PairFailure::NoSample { batches: 5 }).is_passing());
        assert!(!e(PairFailure::Pin("CPU 14 is offline".into())).is_passing());
        assert!(!e(PairFailure::Broken("the shared line changed".into())).is_passing());
        assert!(!e(PairFailure::SameCpu).is_passing());
        let m = e(PairFailure::Stalled { tries: 2 }).to_string();
        assert!(
            m.starts_with("pair (1, 14): the partner thread did not answer for 2 s, 2 times"),
            "{m}"
        );
    }
}
