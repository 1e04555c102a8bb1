//! The contention experiments behind `topoprobe bench` (paper §7.1 and the NUMA and
//! cache-line contention talk), as library calls that return data
//! ([`topoprobe_model::results::bench`]):
//!
//! - [`locks`]: libmctop's lock experiment: threads placed by a policy take K locks with
//!   a critical section of a given length; acquisitions per second and fairness for every
//!   lock kind and backoff, with `std`, `parking_lot` and `spin` mutexes in the same run.
//! - [`false_sharing`]: threads incrementing counters at strides of 8 to 256 bytes.
//! - [`line_ops`]: ccbench-style latency of load, store, CAS, fetch-and-increment and swap
//!   on lines in each coherence state, owned by a context at each distance, with the
//!   lines on a chosen home node. The kernels are `topoprobe_measure::cache_to_cache`'s,
//!   which also plans them for the (reader, owner, home node) triples of a whole topology
//!   within a budget (`topoprobe mem --c2c`).
//!
//! Each experiment's `Config::check` says before any work whether a request can run (a
//! [`WorkError::Parameter`](topoprobe_place::WorkError::Parameter) names the first value out of
//! range). Results are medians over runs that interleave the alternatives, so that a drift
//! of the machine touches all of them alike. The sort and reduction experiments are in
//! `topoprobe-parallel`.

pub mod false_sharing;
pub mod line_ops;
pub mod locks;
mod workers;

/// Index of the first cell of `cells` that starts a 4 KiB page (0 when none does: fewer
/// than 512 cells).
pub(crate) fn page_start(cells: &[std::sync::atomic::AtomicU64]) -> usize {
    (0..cells.len().min(512))
        .find(|&i| (std::ptr::from_ref(&cells[i]) as usize).is_multiple_of(4096))
        .unwrap_or(0)
}

/// Runs from 1 to this many are accepted by every experiment.
pub const MAX_RUNS: usize = 1000;

/// Checks a count of runs.
pub(crate) fn check_runs(runs: usize) -> Result<(), crate::SyncError> {
    if runs == 0 || runs > MAX_RUNS {
        return Err(crate::SyncError::parameter(
            "runs",
            runs,
            format!("1 to {MAX_RUNS}"),
        ));
    }
    Ok(())
}
