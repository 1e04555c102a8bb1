//! The reduction experiment (paper §5, "topology-aware reduction trees"): every worker holds
//! a vector of u64; the vectors are summed element-wise into worker 0's, either along the
//! topology's [`ReductionTree`] (merges of a round in parallel, both workers of a merge
//! adding half of the vector each) or flat (worker 0 adds every other vector in turn). The
//! two results are checked equal.

use std::time::Instant;

pub use topoprobe_model::results::bench::{ReduceReport, ReduceResult};
use topoprobe_model::{median, ContextId, Topology};
use topoprobe_place::{Placement, Policy, Request};

use super::{check_bytes, check_runs};
use crate::error::ParallelError;
use crate::trees::ReductionTree;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Bytes of each worker's vector.
    pub bytes: u64,
    /// Workers.
    pub threads: usize,
    /// Placement policy of the workers.
    pub policy: Policy,
    /// Runs (the median is reported).
    pub runs: usize,
}

/// Smallest accepted vector, bytes (one u64).
pub const MIN_BYTES: u64 = 8;
/// Largest accepted vector, bytes.
pub const MAX_BYTES: u64 = 1 << 34;
/// Largest accepted number of workers.
pub const MAX_THREADS: usize = 4096;

impl Config {
    /// Bytes the experiment holds at once, planned before anything is allocated: every
    /// worker's vector, and the tree's sum kept while the flat reduction's vectors are
    /// made.
    #[must_use]
    pub fn peak_bytes(&self) -> u64 {
        self.bytes
            .saturating_mul(self.threads.saturating_add(1) as u64)
    }

    /// Checks the limits (before any work: nothing is measured).
    ///
    /// # Errors
    ///
    /// [`ParallelError::Parameter`] naming the first value out of range.
    pub fn check(&self) -> Result<(), ParallelError> {
        check_bytes(self.bytes, MIN_BYTES, MAX_BYTES)?;
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(ParallelError::parameter(
                "threads",
                self.threads,
                format!("1 to {MAX_THREADS}"),
            ));
        }
        check_runs(self.runs)
    }
}

/// Runs the experiment.
///
/// # Errors
///
/// A parameter out of range, a placement that cannot hold the workers, or results that
/// differ.
pub fn run(topo: &Topology, config: &Config) -> Result<ReduceReport, ParallelError> {
    config.check()?;
    let placement = Placement::new(topo, &Request::new(config.policy).threads(config.threads))?;
    let cpus: Vec<Option<u32>> = placement
        .threads()
        .iter()
        .map(|t| Some(t.context))
        .collect();
    let cpus = if cpus.len() == config.threads {
        cpus
    } else {
        vec![None; config.threads]
    };
    let contexts: Vec<ContextId> = cpus
        .iter()
        .map(|c| {
            c.and_then(|c| topo.context_by_os_id(c))
                .unwrap_or(ContextId(0))
        })
        .collect();
    let tree = ReductionTree::new(topo, &contexts, 0);
    let words = (config.bytes / 8) as usize;
    let fill = |w: usize| -> Vec<u64> {
        (0..words)
            .map(|i| (i as u64) ^ (w as u64 * 0x9E37_79B9))
            .collect()
    };
    let pin = |w: usize| {
        if let Some(c) = cpus[w] {
            let _ = topoprobe_sys::affinity::pin_current_thread(c);
        }
    };
    // Each worker first-touches its own vector on its context.
    let first_touch = || -> Vec<Vec<u64>> {
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..config.threads)
                .map(|w| {
                    s.spawn(move || {
                        pin(w);
                        fill(w)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    let mut tree_t = Vec::new();
    let mut flat_t = Vec::new();
    for _ in 0..config.runs {
        let mut vecs = first_touch();
        let t = Instant::now();
        for round in &tree.rounds {
            let mut slots: Vec<Option<Vec<u64>>> = vecs.into_iter().map(Some).collect();
            std::thread::scope(|s| {
                let mut pairs = Vec::new();
                for m in round {
                    let from = slots[m.from].take().unwrap_or_default();
                    let into = slots[m.into].take().unwrap_or_default();
                    pairs.push((m.into, m.from, into, from));
                }
                let hs: Vec<_> = pairs
                    .into_iter()
                    .map(|(i, f, mut into, from)| {
                        s.spawn(move || {
                            let half = into.len() / 2;
                            let (lo, hi) = into.split_at_mut(half);
                            let (flo, fhi) = from.split_at(half);
                            std::thread::scope(|s2| {
                                s2.spawn(|| {
                                    pin(f);
                                    hi.iter_mut()
                                        .zip(fhi)
                                        .for_each(|(a, b)| *a = a.wrapping_add(*b));
                                });
                                pin(i);
                                lo.iter_mut()
                                    .zip(flo)
                                    .for_each(|(a, b)| *a = a.wrapping_add(*b));
                            });
                            (i, into)
                        })
                    })
                    .collect();
                for h in hs {
                    if let Ok((i, v)) = h.join() {
                        slots[i] = Some(v);
                    }
                }
            });
            vecs = slots.into_iter().map(Option::unwrap_or_default).collect();
        }
        tree_t.push(t.elapsed().as_secs_f64());
        let tree_sum = std::mem::take(&mut vecs[tree.root]);
        // Flat: worker 0 adds every other vector.
        let mut vecs = first_touch();
        let t = Instant::now();
        let flat_sum = std::thread::scope(|s| {
            s.spawn(|| {
                pin(0);
                if let Some((acc, rest)) = vecs.split_first_mut() {
                    for v in rest {
                        acc.iter_mut()
                            .zip(v.iter())
                            .for_each(|(a, b)| *a = a.wrapping_add(*b));
                    }
                    std::mem::take(acc)
                } else {
                    Vec::new()
                }
            })
            .join()
            .unwrap_or_default()
        });
        flat_t.push(t.elapsed().as_secs_f64());
        if tree_sum != flat_sum {
            return Err(ParallelError::Verification(
                "the tree and the flat reduction give different sums".into(),
            ));
        }
    }
    let results = vec![
        ReduceResult {
            reduction: "tree".into(),
            threads: config.threads,
            bytes: config.bytes,
            rounds: tree.rounds.len(),
            seconds: median(&tree_t).unwrap_or(f64::NAN),
            runs: tree_t,
        },
        ReduceResult {
            reduction: "flat".into(),
            threads: config.threads,
            bytes: config.bytes,
            rounds: config.threads.saturating_sub(1),
            seconds: median(&flat_t).unwrap_or(f64::NAN),
            runs: flat_t,
        },
    ];
    Ok(ReduceReport {
        verified: true,
        bytes: config.bytes,
        threads: config.threads,
        policy: config.policy.to_string(),
        runs: config.runs,
        results,
    })
}
