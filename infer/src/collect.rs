//! Collecting a latency table from a source of pair latencies
//! ([`PairLatency`]: a matrix file, the simulator, the live probe); the inference only ever
//! sees the table that a collection strategy builds.

use topoprobe_model::{LatencyMatrix, PairLatency};

use crate::error::InferError;

/// A latency table collected from a probe, with per-pair spread.
///
/// A collection strategy may measure only some pairs and fill in the others from the
/// structure it found ([`crate::sparse::collect_sparse`]); `measured` tells the two apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    /// Latency of every pair (symmetric): its median when measured, otherwise the value the
    /// collection strategy filled in (missing when it had none).
    pub latency: LatencyMatrix,
    /// Relative spread of every pair (symmetric), of its own samples or of the pairs its
    /// filled-in value comes from.
    pub spread: LatencyMatrix,
    /// Only the measured pairs (symmetric): missing wherever `latency` was filled in.
    pub measured: LatencyMatrix,
    /// Number of distinct unordered pairs measured (at least once).
    pub pairs: usize,
    /// Number of calls to [`PairLatency::measure`], repeated measurements included.
    pub measurements: usize,
    /// Smallest relative difference the table resolves, when the strategy knows it better
    /// than the table shows (a sparse table's filled-in values are exactly equal where
    /// their measurements were not): pass it on as [`crate::InferOptions::resolution`].
    /// `None` for a table of independent measurements (the inference estimates its noise).
    pub resolution: Option<f64>,
}

impl Collected {
    /// Infers the topology of this table with `opts`, passing on its
    /// [`resolution`](Self::resolution) unless `opts` sets one.
    ///
    /// # Errors
    ///
    /// See [`crate::infer`].
    pub fn infer(
        &self,
        opts: &crate::InferOptions,
    ) -> Result<topoprobe_model::Topology, InferError> {
        let mut opts = opts.clone();
        opts.resolution = opts.resolution.or(self.resolution);
        crate::infer(&self.latency, &opts)
    }
}

/// Measures every unordered pair once (`a < b`), calling `progress(done, total)` after each.
///
/// # Errors
///
/// Returns [`InferError::Probe`] when the probe fails, or [`InferError::TooSmall`] when it
/// has fewer than two contexts.
pub fn collect_full(
    source: &mut dyn PairLatency,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Collected, InferError> {
    let n = source.contexts();
    if n < 2 {
        return Err(InferError::TooSmall(n));
    }
    let total = n * (n - 1) / 2;
    let mut latency = LatencyMatrix::empty(n);
    let mut spread = LatencyMatrix::empty(n);
    let mut done = 0;
    for a in 0..n {
        for b in a + 1..n {
            let s = source
                .measure(a, b)
                .map_err(|e| InferError::Probe { a, b, message: e.0 })?;
            if let Some(s) = s {
                latency.set(a, b, Some(s.median));
                latency.set(b, a, Some(s.median));
                spread.set(a, b, Some(s.spread));
                spread.set(b, a, Some(s.spread));
            }
            done += 1;
            progress(done, total);
        }
    }
    Ok(Collected {
        resolution: None,
        measured: latency.clone(),
        latency,
        spread,
        pairs: total,
        measurements: total,
    })
}
