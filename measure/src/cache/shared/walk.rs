//! Concurrent walks: one pinned thread per CPU walks its own array in a random cycle, and
//! every thread keeps walking until all have timed their rounds, so that each timed round
//! runs while the others walk.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use topoprobe_sys::affinity::pin_current_thread;
use topoprobe_sys::buffer::{Buffer, PagePlacement};

use crate::cache::traverse;
use crate::cache::CacheError;

/// Fewest accesses of a timed round.
const MIN_STEPS: usize = 1 << 20;

/// Timed accesses of one round over an array of `positions` positions.
fn steps(positions: usize) -> usize {
    positions.max(MIN_STEPS)
}

/// Accesses of one thread's walk over an array of `bytes` with `rounds` timed rounds,
/// warm-up lap included (the partners of a pair keep walking while the slower one
/// finishes, which this does not count).
pub(super) fn accesses(bytes: u64, rounds: usize) -> u64 {
    let positions = usize::try_from(bytes / traverse::STRIDE_BYTES as u64)
        .unwrap_or(usize::MAX)
        .max(1);
    let steps = steps(positions);
    (positions.max(steps / 4) as u64).saturating_add((rounds.max(1) * steps) as u64)
}

/// Walks an array of `bytes` on each CPU at the same time (transparent huge pages where
/// the kernel gives them, as the cache curve); returns the mean over the CPUs of each
/// walk's fastest round, ns per access.
pub(super) fn walk_together(cpus: &[u32], bytes: u64, rounds: usize) -> Result<f64, CacheError> {
    let barrier = Barrier::new(cpus.len());
    let done = AtomicUsize::new(0);
    let times: Vec<Result<f64, CacheError>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                let (barrier, done) = (&barrier, &done);
                s.spawn(move || -> Result<f64, CacheError> {
                    let pinned = pin_current_thread(cpu);
                    // Every thread reaches the barrier, even one that failed.
                    let ready = pinned.map_err(CacheError::from).and_then(|()| {
                        let mut b = Buffer::new(
                            bytes as usize,
                            PagePlacement {
                                node: None,
                                huge_pages: Some(true),
                            },
                        )?;
                        b.touch();
                        let n = traverse::prepare(b.words_mut(), bytes as usize);
                        Ok((b, n))
                    });
                    barrier.wait();
                    let (b, n) = match ready {
                        Ok(r) => r,
                        Err(e) => {
                            done.fetch_add(1, Ordering::AcqRel);
                            return Err(e);
                        }
                    };
                    let steps = steps(n);
                    traverse::walk(b.words(), n.max(steps / 4));
                    let mut best = f64::INFINITY;
                    for _ in 0..rounds.max(1) {
                        let start = Instant::now();
                        traverse::walk(black_box(b.words()), steps);
                        best = best.min(start.elapsed().as_nanos() as f64 / steps as f64);
                    }
                    done.fetch_add(1, Ordering::AcqRel);
                    // Keep the level busy until every other walk has timed its rounds.
                    while done.load(Ordering::Acquire) < cpus.len() {
                        traverse::walk(b.words(), (steps / 16).max(1));
                    }
                    Ok(best)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let times = times
        .into_iter()
        .collect::<Result<Vec<f64>, CacheError>>()?;
    Ok(times.iter().sum::<f64>() / times.len().max(1) as f64)
}
