//! Which rank pairs are measured, and the complete latency and bandwidth tables made from
//! them.
//!
//! **Latency.** Up to [`CollectOptions::all_pairs_up_to`] ranks, every pair is measured.
//! Then a pair slower by more than [`SLOWER_THAN_ITS_RELATION`] than the fastest pair of its
//! relation in the descriptions (same socket, inter-node, …) is measured again, up to
//! [`REMEASURE_ROUNDS`] times, and its lowest latency kept: another program on a rank's CPU
//! or a burst on a link only ever adds latency, and would otherwise split a layer in two or
//! merge two layers across an outlier of milliseconds. A difference that is real (a far
//! switch) stays; it costs at most [`REMEASURE_ROUNDS`] more measurements of each pair. A
//! pair still [`OUTLIER_RATIO`] times slower than its relation's fastest is an [`Outlier`]:
//! reported, and left out of the layers.
//! Beyond, the ranks are measured like the hardware contexts of one machine, by the
//! inference's sparse strategy ([`topoprobe_infer::sparse`]): pivot rows, one
//! representative per module (a host, a socket of a host, …) and per level, random
//! verification pairs, the rest filled in from the representative of its class pair. The
//! descriptions give it its hint: the ranks of one host, and of one socket of a host
//! (when they are bound to one), are tried first as members of one module. The hint is
//! verified, never trusted. At most [`CollectOptions::budget`] measurements are made (8·N
//! by default); the strategy needs about 6.5–7.5·N on a simulated cluster of 8 hosts × 2
//! sockets × 16 ranks.
//!
//! **Bandwidth.** With every pair's latency measured, every pair's bandwidth is measured
//! too. Otherwise, as Servet does, the layers choose the representatives: one pair per
//! (host pair, layer) when there are at most N of those, else a few pairs per layer; every
//! other pair gets its representative's value (or its layer's median).

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::InferError;
use topoprobe_model::{median, LatencyMatrix, ProbeError};

use crate::error::ClusterError;
use crate::layout::Relation;
use crate::probe::{RankLatency, RankProbe};
use crate::ranks::Ranks;

/// Most ranks analysed: four N×N tables of 2048 ranks take about 256 MiB.
pub const MAX_RANKS: usize = 2048;

/// Default of [`CollectOptions::all_pairs_up_to`].
pub const ALL_PAIRS_UP_TO: usize = 16;

/// Measurements of the sampled strategy per rank, by default.
pub const BUDGET_PER_RANK: usize = 8;

/// How much slower than the fastest pair of its relation a pair of an all-pairs table may
/// be before it is measured again: the smallest gap between two latency classes of the
/// clustering (12%).
pub const SLOWER_THAN_ITS_RELATION: f64 = 1.12;

/// Most times a pair of an all-pairs table is measured again.
pub const REMEASURE_ROUNDS: usize = 2;

/// How much slower than the fastest pair of its relation a pair may stay, after it was
/// measured again, before it is reported as an outlier and left out of the layers. Real
/// differences within one relation (a far switch, a core's SMT sibling among the CPUs of
/// an unbound rank) stay well below it; a rank waiting for a busy CPU does not.
pub const OUTLIER_RATIO: f64 = 16.0;

/// A pair that stayed far slower than the other pairs of its relation: its ranks waited
/// for their CPUs (ranks oversubscribed, other programs), so its latency says nothing
/// about the hardware.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// The two ranks.
    pub pair: [usize; 2],
    /// Its lowest latency, µs.
    pub latency_us: f64,
    /// Latency of the fastest pair of the same relation, µs.
    pub fastest_us: f64,
    /// The relation's label (`same socket`, `inter-node`, …).
    pub relation: String,
    /// Times it was measured.
    pub measurements: usize,
}

/// Pairs measured per layer when the bandwidth cannot have one pair per (host pair, layer).
const BANDWIDTH_PER_LAYER: usize = 4;

/// What [`collect_latency`] and [`collect_bandwidth`] measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectOptions {
    /// Measure every pair when there are at most this many ranks.
    pub all_pairs_up_to: usize,
    /// Most latency measurements of the sampled strategy (repetitions included); `None`:
    /// [`BUDGET_PER_RANK`]·N.
    pub budget: Option<usize>,
    /// Seed of the random choices (verification pairs, bandwidth representatives).
    pub seed: u64,
}

impl Default for CollectOptions {
    fn default() -> Self {
        Self {
            all_pairs_up_to: ALL_PAIRS_UP_TO,
            budget: None,
            seed: 0,
        }
    }
}

/// How the latency table was collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Every pair measured.
    AllPairs,
    /// Representatives and verification pairs measured, the rest filled in.
    Sampled,
}

impl Strategy {
    /// `all pairs` or `sampled`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AllPairs => "all pairs",
            Self::Sampled => "sampled",
        }
    }
}

/// A complete table of rank-to-rank latencies (µs), symmetric.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyTable {
    /// Every pair: measured, or filled in by the sampled strategy.
    pub latency: LatencyMatrix,
    /// The measured pairs only.
    pub measured: LatencyMatrix,
    /// Distinct pairs measured.
    pub pairs: usize,
    /// Latency measurements made (repetitions included).
    pub measurements: usize,
    /// How the pairs were chosen.
    pub strategy: Strategy,
    /// Pairs of an all-pairs table that stayed more than [`OUTLIER_RATIO`] times slower
    /// than the fastest pair of their relation.
    pub outliers: Vec<Outlier>,
}

impl LatencyTable {
    /// The latencies the layers are found from: every pair but the outliers.
    #[must_use]
    pub fn for_layers(&self) -> LatencyMatrix {
        let mut m = self.latency.clone();
        for o in &self.outliers {
            let [a, b] = o.pair;
            m.set(a, b, None);
            m.set(b, a, None);
        }
        m
    }
}

/// A complete table of rank-to-rank bandwidths (GB/s), symmetric.
#[derive(Debug, Clone, PartialEq)]
pub struct BandwidthTable {
    /// Every pair: measured, or its representative's (its layer's) value.
    pub bandwidth: LatencyMatrix,
    /// Pairs measured.
    pub pairs: usize,
}

/// Checks the number of ranks before anything is allocated for them.
fn check_ranks(n: usize) -> Result<(), ClusterError> {
    if n < 2 {
        return Err(ClusterError::TooFewRanks(n));
    }
    if n > MAX_RANKS {
        return Err(ClusterError::Option(format!(
            "{n} ranks: at most {MAX_RANKS} can be analysed"
        )));
    }
    Ok(())
}

/// The pairs (`a < b`) of `latency` slower by more than `ratio` than the fastest pair of
/// the same relation, with their latency and that fastest latency.
fn slower_than_their_relation(
    latency: &LatencyMatrix,
    ranks: &Ranks,
    ratio: f64,
) -> Vec<(usize, usize, f64, f64)> {
    let n = latency.len();
    let pairs: Vec<(usize, usize, Relation, f64)> = (0..n)
        .flat_map(|a| {
            (a + 1..n).filter_map(move |b| {
                latency
                    .get(a, b)
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .map(|v| (a, b, ranks.relation(a, b), v))
            })
        })
        .collect();
    let mut fastest = [f64::INFINITY; Relation::ALL.len()];
    for &(_, _, r, v) in &pairs {
        fastest[r as usize] = fastest[r as usize].min(v);
    }
    pairs
        .into_iter()
        .filter(|&(_, _, r, v)| v > fastest[r as usize] * ratio)
        .map(|(a, b, r, v)| (a, b, v, fastest[r as usize]))
        .collect()
}

/// Measures the latency between the ranks of `probe` (see the [module documentation](self));
/// `progress(done, total)` is called after every measurement.
///
/// # Errors
///
/// [`ClusterError::TooFewRanks`] or [`ClusterError::Option`] for fewer than two or more
/// than [`MAX_RANKS`] ranks, or when `ranks` does not describe the probe's ranks;
/// [`ClusterError::Probe`] when a measurement fails; [`ClusterError::Sampling`] when the
/// sampled strategy fails.
pub fn collect_latency(
    probe: &mut dyn RankProbe,
    ranks: &Ranks,
    opts: &CollectOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<LatencyTable, ClusterError> {
    let n = probe.ranks();
    check_ranks(n)?;
    if ranks.len() != n {
        return Err(ClusterError::Option(format!(
            "{} ranks described for a probe of {n}",
            ranks.len()
        )));
    }
    if n <= opts.all_pairs_up_to {
        let total = n * (n - 1) / 2;
        let mut m = LatencyMatrix::empty(n);
        let mut done = 0;
        for a in 0..n {
            for b in a + 1..n {
                let v = probe.latency(a, b)?.map(|s| s.median);
                m.set(a, b, v);
                m.set(b, a, v);
                done += 1;
                progress(done, total);
            }
        }
        let mut total = total;
        let mut times = vec![1; n * n];
        for _ in 0..REMEASURE_ROUNDS {
            let again = slower_than_their_relation(&m, ranks, SLOWER_THAN_ITS_RELATION);
            if again.is_empty() {
                break;
            }
            total += again.len();
            for (a, b, _, _) in again {
                times[a * n + b] += 1;
                if let Some(v) = probe.latency(a, b)?.map(|s| s.median) {
                    let lower = m.get(a, b).map_or(v, |old| old.min(v));
                    m.set(a, b, Some(lower));
                    m.set(b, a, Some(lower));
                }
                done += 1;
                progress(done, total);
            }
        }
        let outliers = slower_than_their_relation(&m, ranks, OUTLIER_RATIO)
            .into_iter()
            .map(|(a, b, latency_us, fastest_us)| Outlier {
                pair: [a, b],
                latency_us,
                fastest_us,
                relation: ranks.relation(a, b).label().into(),
                measurements: times[a * n + b],
            })
            .collect();
        return Ok(LatencyTable {
            latency: m.clone(),
            measured: m,
            pairs: n * (n - 1) / 2,
            measurements: done,
            strategy: Strategy::AllPairs,
            outliers,
        });
    }
    let budget = opts.budget.unwrap_or(BUDGET_PER_RANK * n);
    if budget < n {
        return Err(ClusterError::Option(format!(
            "a budget of {budget} measurements cannot reach {n} ranks"
        )));
    }
    let sparse = SparseOptions {
        seed: opts.seed,
        verify: None,
        hint: Some(ranks.partition()),
        budget: Some(budget),
    };
    let c = collect_sparse(&mut RankLatency { probe }, &sparse, progress).map_err(|e| match e {
        InferError::Probe { a, b, message } => {
            ClusterError::Probe(ProbeError(format!("ranks {a} and {b}: {message}")))
        }
        other => ClusterError::Sampling(other.to_string()),
    })?;
    Ok(LatencyTable {
        latency: c.latency,
        measured: c.measured,
        pairs: c.pairs,
        measurements: c.measurements,
        strategy: Strategy::Sampled,
        outliers: Vec::new(),
    })
}

/// Measures the bandwidth between the ranks of `probe` (see the [module
/// documentation](self)): every pair when `latency` measured every pair, otherwise
/// representatives of the layers (`layer_of(a, b)`: the layer of a pair).
/// `progress(done, total)` is called after every measurement.
///
/// # Errors
///
/// [`ClusterError::Probe`] when a measurement fails; [`ClusterError::Option`] when
/// `latency` or `ranks` do not match the probe.
pub fn collect_bandwidth(
    probe: &mut dyn RankProbe,
    ranks: &Ranks,
    latency: &LatencyTable,
    layer_of: &dyn Fn(usize, usize) -> Option<usize>,
    opts: &CollectOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<BandwidthTable, ClusterError> {
    let n = probe.ranks();
    check_ranks(n)?;
    if latency.latency.len() != n || ranks.len() != n {
        return Err(ClusterError::Option(format!(
            "tables of {} and {} ranks for a probe of {n}",
            latency.latency.len(),
            ranks.len()
        )));
    }
    let mut m = LatencyMatrix::empty(n);
    if latency.strategy == Strategy::AllPairs {
        let total = n * (n - 1) / 2;
        let mut done = 0;
        for a in 0..n {
            for b in a + 1..n {
                let v = probe.bandwidth(a, b)?;
                m.set(a, b, v);
                m.set(b, a, v);
                done += 1;
                progress(done, total);
            }
        }
        return Ok(BandwidthTable {
            bandwidth: m,
            pairs: total,
        });
    }
    // Pairs by (host pair, layer), measured-latency pairs first so that a representative's
    // latency and bandwidth come from the same pair.
    let mut by_key: BTreeMap<(usize, usize, usize), Vec<(usize, usize)>> = BTreeMap::new();
    for a in 0..n {
        for b in a + 1..n {
            if let Some(l) = layer_of(a, b) {
                by_key
                    .entry((ranks.host_of(a), ranks.host_of(b), l))
                    .or_default()
                    .push((a, b));
            }
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0xb4d_71d7);
    let measured_first = |pairs: &mut Vec<(usize, usize)>, rng: &mut ChaCha8Rng| {
        pairs.shuffle(rng);
        pairs.sort_by_key(|&(a, b)| latency.measured.get(a, b).is_none());
    };
    // The groups whose representatives are measured: (host pair, layer) keys, or layers.
    let per_key = by_key.len() <= n;
    let mut groups: BTreeMap<(usize, usize, usize), Vec<(usize, usize)>> = BTreeMap::new();
    for (&(ha, hb, l), pairs) in &by_key {
        let key = if per_key {
            (ha, hb, l)
        } else {
            (usize::MAX, usize::MAX, l)
        };
        groups.entry(key).or_default().extend(pairs);
    }
    let take = if per_key { 1 } else { BANDWIDTH_PER_LAYER };
    let total: usize = groups.values().map(|p| p.len().min(take)).sum();
    let mut done = 0;
    let mut values: BTreeMap<(usize, usize, usize), Vec<f64>> = BTreeMap::new();
    for (key, pairs) in &mut groups {
        measured_first(pairs, &mut rng);
        for &(a, b) in pairs.iter().take(take) {
            if let Some(v) = probe.bandwidth(a, b)? {
                m.set(a, b, Some(v));
                m.set(b, a, Some(v));
                values.entry(*key).or_default().push(v);
            }
            done += 1;
            progress(done, total);
        }
    }
    let mut by_layer: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for (&(_, _, l), v) in &values {
        by_layer.entry(l).or_default().extend(v);
    }
    for a in 0..n {
        for b in a + 1..n {
            if m.get(a, b).is_some() {
                continue;
            }
            let Some(l) = layer_of(a, b) else { continue };
            let key = if per_key {
                (ranks.host_of(a), ranks.host_of(b), l)
            } else {
                (usize::MAX, usize::MAX, l)
            };
            let v = values
                .get(&key)
                .and_then(|v| median(v))
                .or_else(|| by_layer.get(&l).and_then(|v| median(v)));
            m.set(a, b, v);
            m.set(b, a, v);
        }
    }
    Ok(BandwidthTable {
        bandwidth: m,
        pairs: done,
    })
}
