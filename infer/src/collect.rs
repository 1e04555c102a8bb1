//! Collecting a latency table from a source of pair latencies
//! ([`PairLatency`]: a matrix file, the simulator, the live probe); the inference only ever
//! sees the table that a collection strategy builds.
//!
//! A noisy pair does not stop a collection: it is kept and flagged, and a pair the probe
//! gave up on is missing and flagged ([`Collected::flagged`]). A collection fails only
//! when the probe fails in a way that stops the run, or when no pair at all could be
//! measured.

use topoprobe_model::{LatencyMatrix, PairLatency, PairReading};

use crate::error::InferError;
use crate::flagged::{FlaggedPair, PairFlag};

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
    /// Number of calls to [`PairLatency::measure_pair`], repeated measurements included.
    pub measurements: usize,
    /// Smallest relative difference the table resolves, when the strategy knows it better
    /// than the table shows (a sparse table's filled-in values are exactly equal where
    /// their measurements were not): pass it on as [`crate::InferOptions::resolution`].
    /// `None` for a table of independent measurements (the inference estimates its noise).
    pub resolution: Option<f64>,
    /// The pairs flagged as uncertain, by row (`a < b`, in order): measured pairs whose
    /// samples stayed noisy ([`PairFlag::Noisy`], in `measured`), and pairs the probe gave
    /// up on ([`PairFlag::GaveUp`], missing from `measured`).
    pub flagged: Vec<FlaggedPair>,
}

impl Collected {
    /// Infers the topology of this table with `opts`, passing on its
    /// [`resolution`](Self::resolution) unless `opts` sets one. Flagged pairs are
    /// reported in the validation's warnings, and noisy pairs are treated as uncertain: the
    /// table is inferred again without them, and a level that then differs has its
    /// confidence lowered and is reported as unresolved (see docs/INFERENCE.md, "Noisy
    /// pairs").
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
        crate::uncertain::infer_flagged(self, &opts)
    }

    /// The noisy pairs (in the table, uncertain).
    pub fn noisy(&self) -> impl Iterator<Item = &FlaggedPair> {
        self.flagged.iter().filter(|p| p.flag.is_noisy())
    }

    /// The pairs the probe gave up on (missing).
    pub fn given_up(&self) -> impl Iterator<Item = &FlaggedPair> {
        self.flagged.iter().filter(|p| !p.flag.is_noisy())
    }
}

/// The error of a collection in which no pair could be measured (`total` pairs tried).
pub(crate) fn nothing_measured(total: usize, flagged: &[FlaggedPair]) -> InferError {
    let reason = match flagged.iter().find_map(|p| match &p.flag {
        PairFlag::GaveUp(why) => Some((p, why)),
        PairFlag::Noisy { .. } => None,
    }) {
        Some((p, why)) => format!(
            "the probe gave up on {} of them; the first, ({}, {}): {why}",
            flagged.len(),
            p.a,
            p.b
        ),
        None => "the source has no value for any of them".to_string(),
    };
    InferError::NothingMeasured {
        pairs: total,
        reason,
    }
}

/// Measures every unordered pair once (`a < b`), calling `progress(done, total)` after each.
/// A noisy pair is kept and flagged; a pair the probe gives up on is missing and flagged.
///
/// # Errors
///
/// Returns [`InferError::Probe`] when the probe fails, [`InferError::TooSmall`] when it
/// has fewer than two contexts, or [`InferError::NothingMeasured`] when no pair could be
/// measured.
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
    let mut flagged = Vec::new();
    let mut any = false;
    let mut done = 0;
    for a in 0..n {
        for b in a + 1..n {
            let reading =
                source
                    .measure_pair(a, b)
                    .map_err(|e| InferError::Probe { a, b, message: e.0 })?;
            match reading {
                PairReading::Sample(s) => {
                    any = true;
                    latency.set(a, b, Some(s.median));
                    latency.set(b, a, Some(s.median));
                    spread.set(a, b, Some(s.spread));
                    spread.set(b, a, Some(s.spread));
                    if let Some(noisy) = s.noisy {
                        flagged.push(FlaggedPair {
                            a,
                            b,
                            flag: PairFlag::noisy(s.spread, noisy),
                        });
                    }
                }
                PairReading::Unavailable => {}
                PairReading::GaveUp(why) => flagged.push(FlaggedPair {
                    a,
                    b,
                    flag: PairFlag::GaveUp(why),
                }),
            }
            done += 1;
            progress(done, total);
        }
    }
    if !any {
        return Err(nothing_measured(total, &flagged));
    }
    Ok(Collected {
        resolution: None,
        measured: latency.clone(),
        latency,
        spread,
        pairs: total,
        measurements: total,
        flagged,
    })
}
