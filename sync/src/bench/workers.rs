//! Placed worker threads for the experiments: each pins itself to its context of a
//! placement, all start together, and each returns a value.

use std::sync::Barrier;

use topoprobe_model::Topology;
use topoprobe_place::{Placement, Policy, Request};

use crate::error::SyncError;

/// The OS CPUs `threads` threads get under `policy` on `topo`, in thread order.
///
/// # Errors
///
/// When the policy cannot place that many threads.
pub(crate) fn placement(
    topo: &Topology,
    policy: Policy,
    threads: usize,
) -> Result<Placement, SyncError> {
    Ok(Placement::new(
        topo,
        &Request::new(policy).threads(threads),
    )?)
}

/// Runs `work(i)` on `threads` threads, thread `i` pinned by `placement` (not pinned for
/// an unpinned policy), all released together; returns their results in thread order.
///
/// # Errors
///
/// When a thread cannot be pinned or panics.
pub(crate) fn run<T: Send>(
    placement: &Placement,
    threads: usize,
    work: impl Fn(usize) -> T + Sync,
) -> Result<Vec<T>, SyncError> {
    let barrier = Barrier::new(threads);
    let cpus: Vec<Option<u32>> = (0..threads)
        .map(|i| placement.threads().get(i).map(|t| t.context))
        .collect();
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let (barrier, work, cpu) = (&barrier, &work, cpus[i]);
                s.spawn(move || {
                    let pinned = cpu.map(topoprobe_sys::affinity::pin_current_thread);
                    barrier.wait();
                    pinned.transpose()?;
                    Ok::<T, SyncError>(work(i))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| SyncError::thread("a worker panicked"))?
            })
            .collect()
    })
}
