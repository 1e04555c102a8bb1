//! A small work-stealing pool that steals in the topology's order ([`steal_order`]), and an
//! adapter that starts a rayon thread pool with topology-placed threads.
//!
//! ```no_run
//! # fn main() -> Result<(), topoprobe_parallel::ParallelError> {
//! # let topo: topoprobe_model::Topology = unimplemented!();
//! use topoprobe_place::{Policy, Request};
//! use topoprobe_parallel::pool::{rayon_pool, StealPool};
//!
//! // rayon, its threads pinned by a policy:
//! let pool = rayon_pool(&topo, &Request::new(Policy::ConCoreHwc).threads(4))?;
//! let sum: u64 = pool.install(|| {
//!     use rayon::prelude::*;
//!     (0..1_000_000u64).into_par_iter().sum()
//! });
//! // topoprobe's pool: 1000 tasks, idle workers steal from the closest first.
//! let steal = StealPool::new(&topo, &Request::new(Policy::ConCoreHwc).threads(4))?;
//! let stats = steal.run(1000, |task| { std::hint::black_box(task); });
//! # Ok(()) }
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_deque::{Steal, Stealer, Worker};
use topoprobe_model::{ContextId, Topology};
use topoprobe_place::{Placement, Request};

use crate::error::ParallelError;
use crate::trees::steal_order;

/// A rayon thread pool whose threads pin themselves to the contexts `request` places them
/// on (thread `i` on the placement's `i`-th context).
///
/// # Errors
///
/// When the placement cannot be made or rayon cannot start its threads.
pub fn rayon_pool(topo: &Topology, request: &Request) -> Result<rayon::ThreadPool, ParallelError> {
    let placement = Placement::new(topo, request)?;
    let cpus: Vec<u32> = placement.threads().iter().map(|t| t.context).collect();
    let n = if cpus.is_empty() {
        placement.plan().threads.max(1)
    } else {
        cpus.len()
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("topoprobe-rayon-{i}"))
        .start_handler(move |i| {
            if let Some(&c) = cpus.get(i) {
                // A refused pin leaves the thread where the OS put it.
                let _ = topoprobe_sys::affinity::pin_current_thread(c);
            }
        })
        .build()
        .map_err(|e| ParallelError::Thread(e.to_string()))
}

/// A work-stealing pool over placed workers.
#[derive(Debug, Clone)]
pub struct StealPool {
    cpus: Vec<Option<u32>>,
    orders: Vec<Vec<usize>>,
}

/// What a run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PoolStats {
    /// Tasks each worker ran.
    pub executed: Vec<usize>,
    /// Tasks each worker stole.
    pub stolen: Vec<usize>,
    /// For each worker, how many tasks it stole from each position of its steal order
    /// (position 0: its closest victim).
    pub stolen_by_rank: Vec<Vec<usize>>,
}

impl StealPool {
    /// A pool whose workers run where `request` places them, stealing in the topology's order.
    ///
    /// # Errors
    ///
    /// When the placement cannot be made.
    pub fn new(topo: &Topology, request: &Request) -> Result<Self, ParallelError> {
        let placement = Placement::new(topo, request)?;
        let infos = placement.threads();
        let contexts: Vec<ContextId> = infos
            .iter()
            .filter_map(|i| topo.context_by_os_id(i.context))
            .collect();
        if contexts.is_empty() || contexts.len() != infos.len() {
            let n = placement.plan().threads.max(1);
            return Ok(Self {
                cpus: vec![None; n],
                orders: (0..n)
                    .map(|i| (0..n).filter(|&j| j != i).collect())
                    .collect(),
            });
        }
        Ok(Self {
            cpus: infos.iter().map(|i| Some(i.context)).collect(),
            orders: steal_order(topo, &contexts),
        })
    }

    /// Number of workers.
    #[must_use]
    pub fn workers(&self) -> usize {
        self.cpus.len()
    }

    /// Each worker's steal order.
    #[must_use]
    pub fn orders(&self) -> &[Vec<usize>] {
        &self.orders
    }

    /// Runs `f(task)` for every task in `0..tasks`: worker `w` starts with the `w`-th block
    /// of tasks and, when its deque is empty, steals from the others in its steal order.
    /// Returns when every task has run.
    pub fn run(&self, tasks: usize, f: impl Fn(usize) + Sync) -> PoolStats {
        let p = self.workers();
        let deques: Vec<Worker<usize>> = (0..p).map(|_| Worker::new_lifo()).collect();
        for (w, d) in deques.iter().enumerate() {
            for t in (w * tasks / p..(w + 1) * tasks / p).rev() {
                d.push(t);
            }
        }
        let stealers: Vec<Stealer<usize>> = deques.iter().map(Worker::stealer).collect();
        let left = AtomicUsize::new(tasks);
        let (f, stealers, left) = (&f, &stealers, &left);
        let results: Vec<(usize, usize, Vec<usize>)> = std::thread::scope(|s| {
            let hs: Vec<_> = deques
                .into_iter()
                .enumerate()
                .map(|(w, local)| {
                    let cpu = self.cpus[w];
                    let order = &self.orders[w];
                    s.spawn(move || {
                        if let Some(c) = cpu {
                            let _ = topoprobe_sys::affinity::pin_current_thread(c);
                        }
                        let (mut ran, mut stole) = (0, 0);
                        let mut by_rank = vec![0usize; order.len()];
                        while left.load(Ordering::Acquire) > 0 {
                            let task = local.pop().or_else(|| {
                                order.iter().enumerate().find_map(|(rank, &v)| loop {
                                    match stealers[v].steal_batch_and_pop(&local) {
                                        Steal::Success(t) => {
                                            stole += 1;
                                            by_rank[rank] += 1;
                                            break Some(t);
                                        }
                                        Steal::Empty => break None,
                                        Steal::Retry => {}
                                    }
                                })
                            });
                            match task {
                                Some(t) => {
                                    f(t);
                                    ran += 1;
                                    left.fetch_sub(1, Ordering::AcqRel);
                                }
                                None => std::thread::yield_now(),
                            }
                        }
                        (ran, stole, by_rank)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let mut stats = PoolStats::default();
        for (ran, stole, by_rank) in results {
            stats.executed.push(ran);
            stats.stolen.push(stole);
            stats.stolen_by_rank.push(by_rank);
        }
        stats
    }
}
