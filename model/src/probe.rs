//! The seam between measurement and inference: anything that can give the latency between
//! two hardware contexts ([`PairLatency`]) — a matrix file, the simulator, the live probe.
//! Collection strategies (in `topoprobe-infer`) build a latency table from it.

use crate::matrix::LatencyMatrix;

/// Statistics of one measured pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairSample {
    /// Median one-way latency.
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Relative spread of the samples (for example stdev / median).
    pub spread: f64,
}

impl PairSample {
    /// A sample with a single exact value (no spread).
    #[must_use]
    pub fn exact(value: f64) -> Self {
        Self {
            median: value,
            min: value,
            spread: 0.0,
        }
    }
}

/// Why a probe could not measure a pair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProbeError(pub String);

/// Anything that can give the latency between two hardware contexts.
pub trait PairLatency {
    /// Number of hardware contexts (valid indices are `0..contexts()`).
    fn contexts(&self) -> usize;

    /// Latency from context `a` to context `b` (`a != b`); `Ok(None)` when the pair cannot
    /// be measured (it will be treated as missing).
    ///
    /// # Errors
    ///
    /// Returns [`ProbeError`] when the measurement failed in a way that should stop the run.
    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError>;
}

/// A latency matrix seen as a probe.
#[derive(Debug, Clone, Copy)]
pub struct MatrixProbe<'a> {
    matrix: &'a LatencyMatrix,
}

impl<'a> MatrixProbe<'a> {
    /// A probe answering from `matrix` (a missing `(a, b)` falls back to `(b, a)`).
    #[must_use]
    pub fn new(matrix: &'a LatencyMatrix) -> Self {
        Self { matrix }
    }
}

impl PairLatency for MatrixProbe<'_> {
    fn contexts(&self) -> usize {
        self.matrix.len()
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        Ok(self
            .matrix
            .get(a, b)
            .or_else(|| self.matrix.get(b, a))
            .map(PairSample::exact))
    }
}
