//! A topology-aware parallel sort (paper §7.2, mctop_sort): one worker per context of a
//! placement that spreads over sockets, laid out along the measured reduction tree
//! ([`ReductionTree`]: inside cores, groups, sockets, then across sockets by link quality).
//!
//! - [`Sorter::sort`]: `T: Ord + Send + Copy`, each worker's chunk sorted with
//!   `sort_unstable`, then merges along the tree, every worker of a subtree taking part in
//!   its merges (merge-path splits, so that the last merge is as parallel as the first);
//! - [`Sorter::sort_radix`]: integer keys ([`RadixKey`]), one parallel partition by the most
//!   significant byte, then each worker sorts a contiguous run of buckets, in the tree's
//!   order, in its caches (no merge: see the `partition` module);
//! - [`Sorter::sort_any`]: any `T: Ord + Send`: chunks with `sort_unstable`, merges with the
//!   standard library's stable sort, which merges two sorted runs in linear time.
//!
//! Below a size threshold measured on the machine ([`Sorter::calibrate`]) the sort is
//! sequential. Where cores have several contexts, the calibration also decides whether SMT
//! siblings sit out the memory-bound passes (merges, the radix partition) or take part.

use std::time::Instant;

use topoprobe_model::{ContextId, Topology};
use topoprobe_place::{Placement, Policy, Request};

use crate::error::ParallelError;
use crate::trees::ReductionTree;

mod partition;
mod radix;

pub use radix::radix_sort;

/// Integer keys the radix path sorts.
pub trait RadixKey: Copy + Ord + Send + Sync + Default {
    /// Bytes of the key.
    const BYTES: usize;
    /// Byte `i` of the key (0: least significant), in the order of `Ord`.
    fn byte(self, i: usize) -> usize;
}

macro_rules! radix_unsigned {
    ($($t:ty),*) => {$(
        impl RadixKey for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline]
            fn byte(self, i: usize) -> usize {
                ((self >> (8 * i)) & 0xff) as usize
            }
        }
    )*};
}
radix_unsigned!(u8, u16, u32, u64, usize);

macro_rules! radix_signed {
    ($($t:ty => $u:ty),*) => {$(
        impl RadixKey for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline]
            fn byte(self, i: usize) -> usize {
                // Flipping the sign bit orders signed values as unsigned ones.
                let u = (self as $u) ^ (1 << (8 * Self::BYTES - 1));
                ((u >> (8 * i)) & 0xff) as usize
            }
        }
    )*};
}
radix_signed!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

/// Where the sort's workers run and how it merges.
#[derive(Debug, Clone)]
pub struct Sorter {
    /// Each worker's OS CPU (`None`: not pinned).
    cpus: Vec<Option<u32>>,
    /// Whether each worker is a second (or later) context of its core.
    secondary: Vec<bool>,
    tree: ReductionTree,
    /// Worker at each chunk position.
    layout: Vec<usize>,
    /// Below this many elements, sort sequentially (comparison path).
    threshold: usize,
    /// The same for the radix path.
    radix_threshold: usize,
    /// Whether SMT siblings take part in memory-bound passes.
    smt_merge: bool,
    /// What calibration found, for reports.
    notes: Vec<String>,
}

/// Thresholds before calibration: a parallel sort is never tried below these.
const DEFAULT_THRESHOLD: usize = 1 << 16;
/// The calibration's smallest array: 2^10 elements.
const CALIBRATION_FROM: u32 = 10;
/// The calibration's largest array (16 Mi elements).
const CALIBRATION_MAX: usize = 1 << 24;

/// A count of elements for people: `16 Mi`, `64 Ki`, `1000`.
fn elements_text(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} Mi", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} Ki", n >> 10)
    } else {
        n.to_string()
    }
}

impl Sorter {
    /// A sorter with `threads` workers (default: every context) placed round-robin over
    /// sockets, cores first (RR_CORE), merging along the topology's reduction tree.
    /// Call [`Sorter::calibrate`] to measure the sequential threshold and the SMT choice.
    ///
    /// # Errors
    ///
    /// When the placement cannot be made (more threads than contexts).
    pub fn new(topo: &Topology, threads: Option<usize>) -> Result<Self, ParallelError> {
        let threads = threads.unwrap_or(topo.num_contexts()).max(1);
        let placement = Placement::new(topo, &Request::new(Policy::RrCore).threads(threads))?;
        Ok(Self::from_placement(topo, &placement))
    }

    /// A sorter whose workers are a placement's threads.
    #[must_use]
    pub fn from_placement(topo: &Topology, placement: &Placement) -> Self {
        let infos = placement.threads();
        let contexts: Vec<ContextId> = infos
            .iter()
            .filter_map(|i| topo.context_by_os_id(i.context))
            .collect();
        let (cpus, secondary, contexts) = if contexts.len() == infos.len() && !infos.is_empty() {
            (
                infos.iter().map(|i| Some(i.context)).collect(),
                infos.iter().map(|i| i.index_in_core > 0).collect(),
                contexts,
            )
        } else {
            let n = placement.plan().threads.max(1);
            (vec![None; n], vec![false; n], vec![ContextId(0); n])
        };
        let tree = ReductionTree::new(topo, &contexts, 0);
        let layout = tree.layout();
        Self {
            cpus,
            secondary,
            tree,
            layout,
            threshold: DEFAULT_THRESHOLD,
            radix_threshold: DEFAULT_THRESHOLD,
            smt_merge: true,
            notes: Vec::new(),
        }
    }

    /// Number of workers.
    #[must_use]
    pub fn threads(&self) -> usize {
        self.cpus.len()
    }

    /// The merge tree.
    #[must_use]
    pub fn tree(&self) -> &ReductionTree {
        &self.tree
    }

    /// Sizes below which the comparison and radix paths sort sequentially.
    #[must_use]
    pub fn thresholds(&self) -> (usize, usize) {
        (self.threshold, self.radix_threshold)
    }

    /// Sets both sequential thresholds (elements).
    #[must_use]
    pub fn with_thresholds(mut self, comparison: usize, radix: usize) -> Self {
        self.threshold = comparison;
        self.radix_threshold = radix;
        self
    }

    /// Whether SMT siblings take part in the memory-bound passes (merges, the radix partition).
    #[must_use]
    pub fn smt_merge(&self) -> bool {
        self.smt_merge
    }

    /// What the calibration measured, one line per decision.
    #[must_use]
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Measures on this machine (one to a few seconds): the size from which the parallel sort
    /// beats the sequential one, for each path, and, where workers share cores, whether
    /// merging without the SMT siblings is faster.
    pub fn calibrate(&mut self) {
        self.calibrate_up_to(CALIBRATION_MAX);
    }

    /// [`Sorter::calibrate`] for arrays of at most `elements` elements: sizes above are not
    /// tried (the calibration of a small sort takes milliseconds); a path whose parallel
    /// sort never wins up to there is sequential.
    pub fn calibrate_up_to(&mut self, elements: usize) {
        let largest = elements.clamp(1 << CALIBRATION_FROM, CALIBRATION_MAX);
        self.notes.clear();
        let mut rng = 0x1234_5678_9abc_def1u64;
        let mut gen = |n: usize| -> Vec<u32> {
            (0..n)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng as u32
                })
                .collect()
        };
        let time = |f: &mut dyn FnMut()| {
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                let t = Instant::now();
                f();
                best = best.min(t.elapsed().as_secs_f64());
            }
            best
        };
        if self.threads() > 1 && self.secondary.iter().any(|&s| s) {
            let v = gen(largest.min(1 << 22));
            let mut w = v.clone();
            let mut with = self.clone().with_thresholds(0, 0);
            with.smt_merge = true;
            let mut without = with.clone();
            without.smt_merge = false;
            let a = time(&mut || {
                w.copy_from_slice(&v);
                with.sort_radix(&mut w);
            });
            let b = time(&mut || {
                w.copy_from_slice(&v);
                without.sort_radix(&mut w);
            });
            self.smt_merge = a <= b;
            self.notes.push(format!(
                "{} keys: memory-bound passes with SMT siblings {:.1} ms, without {:.1} ms: siblings {}",
                elements_text(largest.min(1 << 22)),
                a * 1e3,
                b * 1e3,
                if self.smt_merge {
                    "take part"
                } else {
                    "sit out memory-bound passes"
                }
            ));
        } else {
            self.notes
                .push("no SMT siblings among the workers: every worker merges".into());
        }
        if self.threads() == 1 {
            self.threshold = usize::MAX;
            self.radix_threshold = usize::MAX;
            self.notes.push("one worker: always sequential".into());
            return;
        }
        let par = self.clone().with_thresholds(0, 0);
        for radix in [false, true] {
            let mut found = None;
            let mut wins = 0;
            for k in CALIBRATION_FROM..usize::BITS {
                let n = 1usize << k;
                if n > largest {
                    break;
                }
                let v = gen(n);
                let mut w = v.clone();
                let seq = time(&mut || {
                    w.copy_from_slice(&v);
                    if radix {
                        radix_sort(&mut w, &mut vec![0u32; n]);
                    } else {
                        w.sort_unstable();
                    }
                });
                let parallel = time(&mut || {
                    w.copy_from_slice(&v);
                    if radix {
                        par.sort_radix(&mut w);
                    } else {
                        par.sort(&mut w);
                    }
                });
                if parallel < seq {
                    wins += 1;
                    if wins == 2 {
                        found = Some(n / 2);
                        break;
                    }
                } else {
                    wins = 0;
                }
            }
            let t = found.unwrap_or(usize::MAX);
            let path = if radix { "radix" } else { "comparison" };
            self.notes.push(match found {
                Some(n) => format!("{path} sort: parallel from {n} elements"),
                None => format!(
                    "{path} sort: parallel never faster up to {} elements: sequential",
                    elements_text(largest)
                ),
            });
            if radix {
                self.radix_threshold = t;
            } else {
                self.threshold = t;
            }
        }
    }

    /// Sorts `data` (comparison sort of each chunk, then parallel merges along the tree).
    pub fn sort<T: Ord + Send + Sync + Copy>(&self, data: &mut [T]) {
        if data.len() < self.threshold.max(2) || self.threads() == 1 {
            data.sort_unstable();
            return;
        }
        let mut scratch = data.to_vec();
        self.engine(data, &mut scratch, &|c: &mut [T], _: &mut [T]| {
            c.sort_unstable()
        });
    }

    /// Sorts integer keys: a parallel partition by the most significant byte on which the
    /// keys differ, then each worker sorts its run of buckets by radix in its caches (see
    /// the `partition` module); no merge.
    pub fn sort_radix<K: RadixKey>(&self, data: &mut [K]) {
        let mut scratch = vec![K::default(); data.len()];
        self.partition_sort(data, &mut scratch, K::BYTES);
    }

    /// Sorts any `T: Ord + Send`: chunks in parallel, then the tree's merges, each a stable
    /// sort of two adjacent sorted runs (linear), the merges of a round in parallel.
    pub fn sort_any<T: Ord + Send>(&self, data: &mut [T]) {
        let n = data.len();
        if n < self.threshold.max(2) || self.threads() == 1 {
            data.sort_unstable();
            return;
        }
        let p = self.threads();
        let bounds = |k: usize| k * n / p;
        // Chunk sorts.
        let jobs: Vec<(usize, usize, usize)> = (0..p)
            .map(|k| (self.layout[k], bounds(k), bounds(k + 1)))
            .collect();
        self.run_on(data, &jobs, |_, s| s.sort_unstable());
        // Merges: the union of the two ranges, sorted (two runs).
        let mut range: Vec<(usize, usize)> = (0..p)
            .map(|w| {
                let k = self.layout.iter().position(|&x| x == w).unwrap_or(0);
                (bounds(k), bounds(k + 1))
            })
            .collect();
        for round in &self.tree.rounds {
            let jobs: Vec<(usize, usize, usize)> = round
                .iter()
                .map(|m| {
                    let (a, b) = (range[m.into], range[m.from]);
                    let u = (a.0.min(b.0), a.1.max(b.1));
                    range[m.into] = u;
                    (m.into, u.0, u.1)
                })
                .collect();
            self.run_on(data, &jobs, |_, s| s.sort());
        }
    }

    /// Runs `f` on disjoint ranges `(worker, start, end)` of `data`, each on its worker's CPU.
    fn run_on<T: Send>(
        &self,
        data: &mut [T],
        jobs: &[(usize, usize, usize)],
        f: impl Fn(usize, &mut [T]) + Sync,
    ) {
        let parts = split(data, jobs)
            .into_iter()
            .map(|(w, part)| (w, (w, part)));
        self.on_workers(parts.collect(), |(w, part)| f(w, part));
    }

    /// Runs `f` on each part on its worker's CPU, one thread per part; the results in the
    /// order of the parts.
    fn on_workers<P: Send, R: Send>(
        &self,
        parts: Vec<(usize, P)>,
        f: impl Fn(P) -> R + Sync,
    ) -> Vec<R> {
        let f = &f;
        std::thread::scope(|sc| {
            let handles: Vec<_> = parts
                .into_iter()
                .map(|(w, part)| {
                    let cpu = self.cpus[w];
                    sc.spawn(move || {
                        if let Some(c) = cpu {
                            // A worker that cannot be pinned still sorts correctly.
                            let _ = topoprobe_sys::affinity::pin_current_thread(c);
                        }
                        f(part)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| match h.join() {
                    Ok(r) => r,
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect()
        })
    }

    /// The parallel sort of `Copy` values: chunks sorted by `chunk`, then the tree's rounds,
    /// each merge split among the workers of both subtrees by merge path; the data moves
    /// between `data` and `scratch` at each round.
    fn engine<T: Ord + Send + Sync + Copy>(
        &self,
        data: &mut [T],
        scratch: &mut [T],
        chunk: &(dyn Fn(&mut [T], &mut [T]) + Sync),
    ) {
        let n = data.len();
        let p = self.threads();
        let bounds = |k: usize| k * n / p;
        let pos: Vec<usize> = (0..p)
            .map(|w| self.layout.iter().position(|&x| x == w).unwrap_or(0))
            .collect();
        // Chunk sorts, each with its part of the scratch buffer.
        {
            let jobs: Vec<(usize, usize, usize)> = (0..p)
                .map(|k| (self.layout[k], bounds(k), bounds(k + 1)))
                .collect();
            let parts = split(data, &jobs)
                .into_iter()
                .zip(split(scratch, &jobs))
                .map(|((w, d), (_, s))| (w, (d, s)))
                .collect();
            self.on_workers(parts, |(d, s)| chunk(d, s));
        }
        // Each live worker's range; which workers sit inside a range.
        let mut range: Vec<(usize, usize)> = (0..p)
            .map(|w| (bounds(pos[w]), bounds(pos[w] + 1)))
            .collect();
        let members = |r: (usize, usize)| -> Vec<usize> {
            let mut v: Vec<usize> = (0..p)
                .filter(|&w| {
                    bounds(pos[w]) >= r.0
                        && bounds(pos[w] + 1) <= r.1
                        && bounds(pos[w]) < bounds(pos[w] + 1)
                })
                .collect();
            if !self.smt_merge && v.iter().any(|&w| !self.secondary[w]) {
                v.retain(|&w| !self.secondary[w]);
            }
            if v.is_empty() {
                v.push(
                    (0..p)
                        .find(|&w| bounds(pos[w]) >= r.0 && bounds(pos[w]) <= r.1)
                        .unwrap_or(0),
                );
            }
            v
        };
        let mut live = vec![true; p];
        let mut in_scratch = false;
        for round in &self.tree.rounds {
            // Tasks: (output range, first input, second input or none).
            let mut tasks: Vec<Task> = Vec::new();
            let mut merged = vec![false; p];
            for m in round {
                let (a, b) = (range[m.into], range[m.from]);
                let (first, second) = if a.0 <= b.0 { (a, b) } else { (b, a) };
                let u = (first.0, second.1);
                tasks.push((u, first, Some(second)));
                range[m.into] = u;
                merged[m.into] = true;
                merged[m.from] = true;
            }
            for m in round {
                live[m.from] = false;
            }
            for w in 0..p {
                if live[w] && !merged[w] && range[w].0 < range[w].1 {
                    tasks.push((range[w], range[w], None));
                }
            }
            // One job per participating worker: a share of a task's output.
            let mut jobs: Vec<(usize, usize, usize, usize)> = Vec::new(); // worker, start, end, task
            for (t, task) in tasks.iter().enumerate() {
                let (u0, u1) = task.0;
                let ws = members(task.0);
                let q = ws.len();
                for (i, &w) in ws.iter().enumerate() {
                    let s = u0 + (u1 - u0) * i / q;
                    let e = u0 + (u1 - u0) * (i + 1) / q;
                    if s < e {
                        jobs.push((w, s, e, t));
                    }
                }
            }
            let (src, dst): (&[T], &mut [T]) = if in_scratch {
                (&*scratch, &mut *data)
            } else {
                (&*data, &mut *scratch)
            };
            let plain: Vec<(usize, usize, usize)> = jobs.iter().map(|j| (j.0, j.1, j.2)).collect();
            let mut task_of: Vec<(usize, usize, usize, usize)> = jobs.clone();
            task_of.sort_by_key(|j| j.1);
            let parts = split(dst, &plain)
                .into_iter()
                .zip(task_of)
                .map(|((w, out), job)| (w, (out, job)))
                .collect();
            let tasks = &tasks;
            self.on_workers(parts, |(out, job)| {
                let (u, first, second) = tasks[job.3];
                let k0 = job.1 - u.0;
                match second {
                    None => out.copy_from_slice(&src[job.1..job.2]),
                    Some(second) => {
                        let a = &src[first.0..first.1];
                        let b = &src[second.0..second.1];
                        let i0 = co_rank(k0, a, b);
                        let i1 = co_rank(k0 + out.len(), a, b);
                        merge_into(&a[i0..i1], &b[k0 - i0..k0 + out.len() - i1], out);
                    }
                }
            });
            in_scratch = !in_scratch;
        }
        if in_scratch {
            let jobs: Vec<(usize, usize, usize)> = (0..p)
                .map(|k| (self.layout[k], bounds(k), bounds(k + 1)))
                .collect();
            let src = &*scratch;
            self.run_on(data, &jobs, |w, out| {
                let s = bounds(pos[w]);
                out.copy_from_slice(&src[s..s + out.len()]);
            });
        }
    }
}

/// A range of positions in the array.
type Range = (usize, usize);
/// A task of a merge round: its output range, and the one or two input ranges.
type Task = (Range, Range, Option<Range>);

/// Disjoint mutable parts of `data` for jobs `(worker, start, end)` (sorted by start,
/// non-overlapping), with their workers.
fn split<'a, T>(data: &'a mut [T], jobs: &[(usize, usize, usize)]) -> Vec<(usize, &'a mut [T])> {
    let mut jobs: Vec<(usize, usize, usize)> = jobs.to_vec();
    jobs.sort_by_key(|j| j.1);
    let mut rest = data;
    let mut at = 0;
    let mut parts = Vec::with_capacity(jobs.len());
    for (w, s, e) in jobs {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(s - at);
        let (mine, tail) = tail.split_at_mut(e - s);
        parts.push((w, mine));
        rest = tail;
        at = e;
    }
    parts
}

/// How many elements of `a` are among the first `k` of the merge of `a` and `b` (ties go to
/// `a`, which comes first in the array).
fn co_rank<T: Ord>(k: usize, a: &[T], b: &[T]) -> usize {
    let mut lo = k.saturating_sub(b.len());
    let mut hi = k.min(a.len());
    while lo < hi {
        let i = lo + (hi - lo) / 2;
        let j = k - i;
        // Too few from a if a[i] must come before b[j - 1].
        if j > 0 && i < a.len() && a[i] <= b[j - 1] {
            lo = i + 1;
        } else {
            hi = i;
        }
    }
    lo
}

/// Merges two sorted slices into `out` (`a`'s elements first among equals).
fn merge_into<T: Ord + Copy>(a: &[T], b: &[T], out: &mut [T]) {
    let (mut i, mut j) = (0, 0);
    for o in out.iter_mut() {
        let take_a = j >= b.len() || (i < a.len() && a[i] <= b[j]);
        if take_a {
            *o = a[i];
            i += 1;
        } else {
            *o = b[j];
            j += 1;
        }
    }
}
