//! The seam between the analysis and the transport: anything that can measure the
//! latency and the bandwidth between two ranks ([`RankProbe`]): MPI in the
//! `topoprobe-cluster` program, a simulated cluster in tests.

use topoprobe_model::{PairLatency, PairSample, ProbeError};

/// Measures point-to-point communication between two ranks.
pub trait RankProbe {
    /// Number of ranks (valid ranks are `0..ranks()`).
    fn ranks(&self) -> usize;

    /// One-way latency from `a` to `b` in microseconds (half a ping-pong round trip of a
    /// small message, many round trips per sample); `Ok(None)` when the pair cannot be
    /// measured.
    ///
    /// # Errors
    ///
    /// [`ProbeError`] when the measurement failed in a way that should stop the run.
    fn latency(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError>;

    /// Bandwidth from `a` to `b` in GB/s (10⁹ bytes per second) of large messages sent
    /// with several in flight; `Ok(None)` when the pair cannot be measured.
    ///
    /// # Errors
    ///
    /// [`ProbeError`] when the measurement failed in a way that should stop the run.
    fn bandwidth(&mut self, a: usize, b: usize) -> Result<Option<f64>, ProbeError>;
}

/// The latencies of a probe's ranks seen as the core-level [`PairLatency`], so that the
/// inference's collection strategies measure ranks as they measure hardware contexts.
pub(crate) struct RankLatency<'a> {
    pub(crate) probe: &'a mut dyn RankProbe,
}

impl PairLatency for RankLatency<'_> {
    fn contexts(&self) -> usize {
        self.probe.ranks()
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        self.probe.latency(a, b)
    }
}
