//! Topology inference for topoprobe: from a table of core-to-core latencies to a
//! [`Topology`] of hardware contexts, cores, groups and sockets (MCTOP-ALG and beyond).
//!
//! The pipeline follows the paper's four steps, made robust for real machines:
//!
//! 1. **latency table**: any source of pair latencies
//!    ([`PairLatency`](topoprobe_model::PairLatency): a matrix file, the
//!    simulator, the live probe), symmetrized;
//! 2. **classes**: all latencies clustered by ratio (no absolute offset, so ns and cycles
//!    behave the same; a coarse timer widens the gap a class boundary needs; one outlier
//!    pair cannot make a level);
//! 3. **components**: sets below each class threshold (latency components), plus *profile
//!    groups* — sets whose members every outsider sees at the same latency — which reveal
//!    what thresholds cannot: E-core clusters whose internal latency is the highest, weakly
//!    visible clusters, and a far socket whose inside is as slow as the cross-socket link
//!    (the home-node effect); the two are merged into one tree, with significance rules
//!    that keep mesh artefacts out;
//! 4. **roles**: cores (SMT by a physical latency bound, or given), sockets (by a hint, or
//!    by the cross-socket bounds), groups in between, any depth and any size.
//!
//! Every result carries a validation record: a confidence per level, warnings, and an
//! *unresolved* entry for every level the inference is not sure of.
//!
//! ```
//! use topoprobe_infer::{infer, InferOptions};
//! use topoprobe_model::LatencyMatrix;
//!
//! // Two sockets of four cores with two SMT contexts each (siblings i and i+8).
//! let m = LatencyMatrix::from_fn(16, |a, b| {
//!     let (ca, cb) = (a % 8, b % 8);
//!     Some(if ca == cb { 8.0 } else if ca / 4 == cb / 4 { 45.0 } else { 140.0 })
//! });
//! let topo = infer(&m, &InferOptions::default()).unwrap();
//! assert_eq!((topo.num_sockets(), topo.num_cores()), (2, 8));
//! assert!(topo.has_smt());
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod anchor;
mod assemble;
mod collect;
pub mod compare;
mod error;
mod flagged;
pub mod layers;
mod levels;
mod linkage;
pub mod load;
mod options;
mod pipeline;
mod profiles;
mod quantize;
mod roles;
mod significance;
#[cfg(feature = "sim")]
pub mod sim;
pub mod sparse;
mod table;

mod threshold;
mod timing;
mod tree;
mod triangle;
mod uncertain;
mod validate;

use topoprobe_model::{LatencyMatrix, Provenance, Topology, TopologyBuilder};

pub use collect::{collect_full, Collected};
pub use error::InferError;
pub use flagged::{FlaggedPair, PairFlag};
pub use load::{infer_mct, load_topology, LoadError};
pub use options::{InferOptions, OsEvidence, SharedCache, DEFAULT_GHZ};

/// Infers the topology of a machine from its latency matrix.
///
/// The matrix may be directed (it is symmetrized by the mean of both directions), may have
/// missing entries, and may be in ns or cycles (`opts.units`). Hints in `opts` are used when
/// given and reported as given; everything else is inferred.
///
/// # Errors
///
/// Returns [`InferError`] when the matrix has fewer than two contexts, a context without
/// any latency, a latency that is negative or not finite, only zero latencies, or when an
/// option is out of range. A zero latency is below the resolution of the timer: it is read
/// as one timer step, with a warning.
pub fn infer(matrix: &LatencyMatrix, opts: &InferOptions) -> Result<Topology, InferError> {
    infer_table(std::borrow::Cow::Borrowed(matrix), opts)
}

/// [`infer`] of a matrix the caller gives up: it becomes the description's raw latency
/// table as it is, without a copy (an N² table of 4096 contexts is 64 MiB).
///
/// # Errors
///
/// As [`infer`].
pub fn infer_owned(matrix: LatencyMatrix, opts: &InferOptions) -> Result<Topology, InferError> {
    infer_table(std::borrow::Cow::Owned(matrix), opts)
}

/// [`infer`] of a borrowed or owned matrix.
fn infer_table(
    matrix: std::borrow::Cow<'_, LatencyMatrix>,
    opts: &InferOptions,
) -> Result<Topology, InferError> {
    let n = matrix.len();
    if let Some(s) = opts.sockets {
        if s == 0 || s > n {
            return Err(InferError::InvalidOption(format!(
                "--sockets {s} is out of range for {n} contexts"
            )));
        }
    }
    if let Some(g) = opts.ghz {
        if !(g.is_finite() && g > 0.0) {
            return Err(InferError::InvalidOption(format!(
                "--ghz {g} must be positive"
            )));
        }
    }
    let os_ids: Vec<u32> = match &opts.os_ids {
        Some(ids) if ids.len() == n => ids.clone(),
        Some(ids) => {
            return Err(InferError::InvalidOption(format!(
                "{} CPU numbers given for {n} contexts",
                ids.len()
            )))
        }
        None => (0..n)
            .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect(),
    };
    let mut clock = std::time::Instant::now();
    timing::stage("start", &mut clock);
    let table = table::Table::new(&matrix)?;
    timing::stage("table", &mut clock);
    let (mut t, mut a, outliers) = pipeline::analyse_robustly(table, opts);
    // The rest reads pairs, never the sorted values.
    t.release_sorted();

    let mut b = TopologyBuilder::new(os_ids, opts.units);
    let chain = assemble::structure(&a.tree, &a.roles, &mut b);
    timing::stage("analysis", &mut clock);
    let shared = match a.shared.take() {
        Some(s) => s,
        None => assemble::Shared::new(&t, &chain),
    };
    let (normalized, levels) = shared.normalized(&t);
    timing::stage("normalize", &mut clock);
    let mut provenance = Provenance::new(opts.source.clone());
    provenance
        .parameters
        .insert("units".into(), opts.units.to_string());
    if let Some(s) = opts.sockets {
        provenance
            .parameters
            .insert("sockets".into(), s.to_string());
    }
    if let Some(s) = opts.smt {
        provenance
            .parameters
            .insert("smt".into(), if s { "yes" } else { "no" }.into());
    }
    if let Some(g) = opts.ghz {
        provenance.parameters.insert("ghz".into(), g.to_string());
    }
    b.levels(levels)
        .latencies(matrix.into_owned(), normalized)
        .machine(opts.machine.clone())
        .provenance(provenance)
        .origins(a.roles.socket.origin, a.roles.smt.origin);
    if t.asymmetry > 0.0 {
        b.symmetrization("mean of both directions");
    }
    let mut topo = b.build()?;
    timing::stage("build", &mut clock);
    *topo.validation_mut() = validate::validation(&t, &a, &outliers, &topo, opts);
    timing::stage("validation", &mut clock);
    Ok(topo)
}
