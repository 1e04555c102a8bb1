//! Collecting a latency table from fewer than N² measured pairs.
//!
//! Measuring one pair live costs milliseconds: all N(N-1)/2 pairs of a 192-context server
//! take hours. Latencies are highly structured, so [`collect_sparse`] measures enough pairs
//! to find the structure, measures representatives of it, verifies it with random pairs,
//! and fills in every other pair from the representative of its *class pair*. The table it
//! returns is complete and goes to [`crate::infer`] like a fully measured one.
//!
//! # Algorithm
//!
//! The structure is a tree of *modules*: sets of contexts that every outsider sees at the
//! same latency (a core, a cluster, a socket — or a single context where nothing else is).
//! It is discovered top-down:
//!
//! 1. **Pivot row.** A node's pivot (context 0 at the root) is measured against every
//!    member. The values are clustered into *bands* where consecutive values differ by more
//!    than 8% or five times the noise of a value (estimated from the probe's spreads). At
//!    the root, a band of one context is measured again first: one slow measurement must not
//!    make a level.
//! 2. **Modules.** Two contexts of a band share a module when their latency is below 0.6
//!    times the smaller of their latencies from the pivot (cores of a cluster, clusters of a
//!    socket and sockets are at most about half as far from each other as from outsiders;
//!    neighbours on a ring or mesh are at 70–90%). Each context is compared with the
//!    representative of a module, *predicted modules first* — those of its hinted mates
//!    ([`SparseOptions::hint`]) and of its neighbours in the numbering at the strides seen
//!    so far (`x ± 1`, the stride between a context and its module mates, the offset of the
//!    root's innermost band, such as an SMT sibling at `+N/2`) — then the others; a context
//!    in none opens a new module. With a regular numbering most contexts cost one
//!    comparison instead of one per module. Since every comparison is with a module's
//!    representative, that representative's row inside its module is measured already when
//!    the module is split in turn. SMT siblings always share the innermost module, so their
//!    pair is always measured. In a *flat* band (six or more modules, each a single
//!    context: the cores of a socket without SMT, the ranks of one node) a context is
//!    compared with three modules only, its neighbours' at the strides first, instead of
//!    with every one (k²/2 pairs); steps 4 and 6 still check the band.
//! 3. **Second looks** against outliers (a whole measurement 3× too slow or fast): a
//!    context much farther from a representative than the pivot's latencies allow has its
//!    band measured again; a lone context where modules have several, a module one larger
//!    than usual, and a member alone at its latency inside a module of three or more have
//!    their placement measured again; two modules whose representatives turn out close are
//!    merged.
//! 4. **Band pairs.** Nested bands predict that two modules are at the larger of the
//!    pivot's latencies to them. Two module pairs per pair of bands are sampled (all when
//!    they are at most half as many as the two bands' contexts); where one disagrees beyond
//!    the noise (after a second measurement if it is 1.5× off), every module pair of the two
//!    bands is measured: multi-hop links between sockets, a ring or mesh gradient, E-core
//!    clusters slower inside than out. There, a loosely bound module (slower inside than
//!    half the band) that another module's representative sees at latencies apart like two
//!    bands (confirmed) is split by that witness's row, clustered like a pivot's row (two
//!    sockets one link apart and two links from the pivot look like one module from the
//!    pivot). A witness's readings of one latency differing by a few noise widths do not
//!    split a module: that once split a home-node EPYC's socket, SMT siblings included.
//! 5. **Recursion** into every module of two or more contexts, its representative as pivot.
//! 6. **Verification.** [`SparseOptions::verify`] random unmeasured pairs are measured and
//!    compared with the table; a confirmed disagreement measures three more pairs of that
//!    class pair and adds two verification pairs.
//!
//! **Fill.** Two contexts meet at the node whose children hold them apart. Between two
//! bands that follow the nested prediction, a pair takes the median of the measured pairs
//! between the farther child and the closer bands (mostly the pivot's row); otherwise the
//! median of the measured pairs of its class pair (its own value when it is measured alone).
//! Contexts the structure holds equivalent so get exactly the same values (were a pivot's
//! measured row kept beside its equivalents' filled-in rows, its noise would look like a
//! profile difference). A measured pair that disagrees with its class beyond the noise keeps
//! its own value, unless it is noisy.
//!
//! **Noisy pairs.** A reading the probe flags as noisy (its spread stayed above the limit)
//! is measured again at once; a pair with an accepted reading counts by its accepted
//! readings only, and a pair whose readings are all noisy is flagged
//! ([`Collected::flagged`]), counts in its class only where nothing else was measured, and
//! never keeps a value apart from its class. A noisy reading is never the drift reference.
//!
//! **Drift.** The first pair measured with an accepted reading is a reference, measured
//! again every 8 measurements until consecutive readings agree (then ever more rarely, and
//! once before a row is split while it drifts); every value is rescaled to the latest state
//! of the interpolated reference, so a warm-up drift (DVFS) does not make levels.
//!
//! **Cost.** About one comparison per context per level of the structure, plus the pivot
//! rows, the band pairs and the verification: 4.8–6.5·N on the simulated paper platforms
//! and both EPYCs, 7.5·N on the 24-context hybrid (see `examples/sparse_pairs.rs` and
//! docs/INFERENCE.md). Identifying which of G equidistant groups a context belongs to costs
//! up to G comparisons when neither the numbering nor a hint predicts it: a shuffled
//! numbering or a wrong hint costs more pairs, not a wrong structure.
//!
//! ```
//! use topoprobe_infer::sim::{platforms, Noise, SimProbe};
//! use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
//! use topoprobe_infer::infer;
//!
//! let spec = platforms::ivy().with_noise(Noise::lognormal(0.02, 1));
//! let mut probe = SimProbe::new(&spec).unwrap();
//! let c = collect_sparse(&mut probe, &SparseOptions::default(), &mut |_, _| {}).unwrap();
//! assert!(c.measurements <= 8 * 40);
//! let topo = infer(&c.latency, &spec.infer_options()).unwrap();
//! assert!(spec.truth().check(&topo).is_ok());
//! ```

mod discover;
mod fill;
mod meter;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use self::discover::{log_gap, Discovery, ModuleTree, Tolerance, OUTLIER_LN};
use self::fill::Fill;
use self::meter::Meter;
use topoprobe_model::PairLatency;

use crate::{Collected, InferError};

/// Machines with `N(N-1)/2 <= FULL_FACTOR * N` pairs are measured completely: their
/// structure is not worth discovering.
const FULL_FACTOR: usize = 4;
/// Pairs measured again in a class pair whose verification failed.
const REPAIR_PAIRS: usize = 3;
/// Verification pairs added after a failed verification.
const REPAIR_VERIFY: usize = 2;

/// Options of [`collect_sparse`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparseOptions {
    /// Seed of the random choices (sampled band pairs, verification pairs).
    pub seed: u64,
    /// Number of random verification pairs; `None`: `max(16, N/2)`.
    pub verify: Option<usize>,
    /// A hypothesised partition of the contexts (for example the SMT sibling sets, or the
    /// packages, the operating system reports): contexts of one set are tried first as
    /// members of one module. It is verified, never trusted: a wrong hint costs more pairs,
    /// not a wrong structure. Numbers out of range are ignored, and a context listed twice
    /// counts in its first set.
    pub hint: Option<Vec<Vec<usize>>>,
    /// Most probe calls to make (all measurements, repeated ones included); `None`: no
    /// limit. When it is reached, the structure found so far fills the remaining pairs
    /// (pairs it cannot predict stay missing).
    pub budget: Option<usize>,
}

impl SparseOptions {
    /// The number of verification pairs for `n` contexts.
    #[must_use]
    pub fn verify_pairs(&self, n: usize) -> usize {
        self.verify.unwrap_or_else(|| (n / 2).max(16))
    }
}

/// Measures enough pairs of `source` to find its structure and returns a complete table:
/// every pair measured, or filled in from the representative measurement of its class
/// pair (see the [module documentation](self)). `progress(done, estimated_total)` is called
/// after every measurement.
///
/// The result's `pairs` is the number of distinct pairs measured, `measurements` the number
/// of probe calls (repeated measurements and drift references included), `measured` the
/// measured pairs alone, and `flagged` the noisy pairs and those the probe gave up on. A
/// noisy reading is measured again at once and never makes structure on its own: a pair
/// with an accepted reading counts by its accepted readings, and a pair whose readings are
/// all noisy takes its class pair's value rather than standing apart from it.
///
/// # Errors
///
/// Returns [`InferError::Probe`] when the probe fails, [`InferError::TooSmall`] when it
/// has fewer than two contexts, or [`InferError::NothingMeasured`] when no pair could be
/// measured.
pub fn collect_sparse(
    source: &mut dyn PairLatency,
    opts: &SparseOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Collected, InferError> {
    let n = source.contexts();
    if n < 2 {
        return Err(InferError::TooSmall(n));
    }
    let verify = opts.verify_pairs(n);
    let budget = opts.budget.unwrap_or(usize::MAX);
    let estimate = (5 * n + verify).min(n * (n - 1) / 2);
    let mut meter = Meter::new(source, progress, budget, estimate);
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let tree = if n * (n - 1) / 2 <= FULL_FACTOR * n {
        measure_everything(&mut meter)?
    } else {
        let discovery = Discovery::new(&mut meter, opts.hint.as_deref(), rng.clone());
        let tree = discovery.run()?;
        verify_structure(&mut meter, &tree, verify, &mut rng)?;
        tree
    };
    let noise = meter.noise();
    let tolerance = Tolerance::for_noise(noise).agree;
    let (latency, spread, measured) = fill::tables(&tree, &meter, tolerance);
    let flagged = meter.flagged();
    if meter.measured().is_empty() {
        return Err(crate::collect::nothing_measured(meter.pairs(), &flagged));
    }
    Ok(Collected {
        // Filled-in values are exactly equal where measurements were not: differences
        // within a pair's error are not structure.
        resolution: (noise > 0.0).then_some(noise),
        latency,
        spread,
        measured,
        pairs: meter.pairs(),
        measurements: meter.calls(),
        flagged,
    })
}

/// Measures every pair (small machines); the structure is empty.
fn measure_everything(meter: &mut Meter<'_>) -> Result<ModuleTree, InferError> {
    let n = meter.contexts();
    for a in 0..n {
        for b in a + 1..n {
            meter.value(a, b)?;
        }
    }
    Ok(ModuleTree::default())
}

/// Measures `count` random unmeasured pairs and compares each with the structure's
/// prediction; a confirmed disagreement measures more pairs of its class pair and adds
/// verification pairs.
fn verify_structure(
    meter: &mut Meter<'_>,
    tree: &ModuleTree,
    count: usize,
    rng: &mut ChaCha8Rng,
) -> Result<(), InferError> {
    let n = meter.contexts();
    let tolerance = Tolerance::for_noise(meter.noise()).agree;
    let mut fill = Fill::from_meter(tree, meter, tolerance);
    meter.expect_more(count);
    let mut left = count;
    let mut tries = 0;
    while left > 0 && tries < 20 * count + 100 {
        tries += 1;
        let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
        if a == b || meter.is_measured(a, b) {
            continue;
        }
        let Some(predicted) = fill.predict(a, b) else {
            continue;
        };
        left -= 1;
        let tol = Tolerance::for_noise(meter.noise());
        if disagrees(meter, a, b, predicted.value, tol)? {
            repair(meter, &mut fill, a, b, rng)?;
            left += REPAIR_VERIFY;
        }
        if let Some(p) = meter.pair(a, b) {
            fill.add(a, b, p);
        }
    }
    Ok(())
}

/// Measures the pair and tells whether it disagrees with `predicted` beyond the noise
/// (measured again first).
fn disagrees(
    meter: &mut Meter<'_>,
    a: usize,
    b: usize,
    predicted: f64,
    tol: Tolerance,
) -> Result<bool, InferError> {
    let Some(v) = meter.value(a, b)? else {
        return Ok(false);
    };
    if log_gap(v, predicted) <= tol.agree {
        return Ok(false);
    }
    let confirmed = meter.confirm(a, b, tol.agree.min(OUTLIER_LN))?;
    Ok(confirmed.is_some_and(|v| log_gap(v, predicted) > tol.agree))
}

/// Measures [`REPAIR_PAIRS`] more random pairs of the class pair of `a` and `b`.
fn repair(
    meter: &mut Meter<'_>,
    fill: &mut Fill<'_>,
    a: usize,
    b: usize,
    rng: &mut ChaCha8Rng,
) -> Result<(), InferError> {
    let Some((_, ca, cb)) = fill.class_pair(a, b) else {
        return Ok(());
    };
    let (xs, ys) = (fill.members(ca).to_vec(), fill.members(cb).to_vec());
    if xs.is_empty() || ys.is_empty() {
        return Ok(());
    }
    let mut done = 0;
    for _ in 0..REPAIR_PAIRS * 4 {
        if done == REPAIR_PAIRS {
            break;
        }
        let (x, y) = (
            xs[rng.random_range(0..xs.len())],
            ys[rng.random_range(0..ys.len())],
        );
        if meter.is_measured(x, y) {
            continue;
        }
        done += 1;
        meter.value(x, y)?;
        if let Some(p) = meter.pair(x, y) {
            fill.add(x, y, p);
        }
    }
    Ok(())
}
