//! The steps `topoprobe mem --full` adds to the plan of [`super::plan`], in the order they
//! run and within what the budget has left after the default steps:
//!
//! 1. a loaded-latency sweep ([`super::loaded`]) of every socket to its local node, then of
//!    every socket to its nearest remote node, where there is one;
//! 2. every read/write mix ([`super::mixes`]), with and without non-temporal stores, of
//!    every socket's contexts to its local node;
//! 3. the read bandwidth of every socket to its local node with 1, 2, 4, … and all its
//!    contexts (the thread count that saturates the node);
//! 4. the node × node matrices ([`super::matrix`]): the idle latency of every pair in the
//!    matrix's order (one per distance class first), then the read bandwidth of every pair.
//!
//! A step that does not fit what is left of the budget is left out and said; a later,
//! cheaper one may still fit. No step allocates more than the memory budget: the loaders
//! of a sweep share what the chase's buffer leaves of it.

use topoprobe_model::{format::plural, Budget, CostStep, MatrixInitiator};

use super::chase::{LATENCY_MAX_STEPS, LATENCY_ROUNDS, SLOT_BYTES, STEADY_CHASE_STEPS};
use super::loaded::{
    DELAYS, LAP_ROUNDS, POINT_LAPS, REFINED_POINTS, REPEATED_POINTS, SWEEP_POINTS,
};
use super::matrix;
use super::steps::{bandwidth_seconds_at, latency_seconds, MemPlan, MemStep, MemWork};
use super::MemOptions;
use crate::plan::{Rates, Shape, PROCESS_BYTES};

/// The budget of `topoprobe mem --full`: 120 s and 1 GiB.
pub const FULL_BUDGET: Budget = Budget::new(120.0, 1 << 30);

/// Latency under load is taken to be this many times the idle latency, on average over a
/// sweep, when its time is planned. Most of a sweep's delays load memory lightly; only the
/// points at and past the knee read two to three times the idle latency. (On a 2-vCPU AMD
/// EPYC Zen 5 guest, 3.0 planned a 16-point sweep at 5.2 s that took 1.7–1.9 s quiet.)
const LOADED_SLOWDOWN: f64 = 1.5;

/// Mix kernels of a mixes step: all reads, then four written mixes with and without
/// non-temporal stores.
pub(super) const MIX_KERNELS: usize = 9;

/// Seconds of one loaded-latency sweep.
fn sweep_seconds(r: &Rates, plan: &MemPlan, loaders: usize, loader_total: u64) -> f64 {
    // The chase shares its CPUs with its loaders where fewer threads run at once than the
    // sweep has (a time-shared machine, [`super::pace`]): its laps stretch by as much.
    let threads = loaders + 1;
    let shared = threads as f64 / plan.speed.effective_threads(threads) as f64;
    let slots = plan.latency_bytes / SLOT_BYTES as u64;
    let loads = if plan.evicts {
        slots.min((LAP_ROUNDS * LATENCY_MAX_STEPS) as u64 + slots / 16)
    } else {
        (LAP_ROUNDS * STEADY_CHASE_STEPS / 4) as u64 + slots.min(STEADY_CHASE_STEPS as u64)
    };
    let flush = if plan.evicts {
        r.flush_seconds(plan.latency_bytes, 1)
    } else {
        0.0
    };
    let points = SWEEP_POINTS as f64;
    let lap = (flush + loads as f64 * r.memory_ns * 1e-9 * LOADED_SLOWDOWN) * shared;
    let point = 0.02 + POINT_LAPS as f64 * lap;
    (loaders + 1) as f64 * r.thread_start_s
        + r.touch_seconds(plan.latency_bytes, 1)
        + slots as f64 * 40e-9
        + r.touch_seconds(loader_total, loaders)
        + points * point
}

/// The thread counts of a saturation step on `n` contexts: 1, 2, 4, … and `n`.
#[must_use]
pub fn saturation_counts(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |&c| c.checked_mul(2))
        .take_while(|&c| c < n)
        .collect();
    v.push(n.max(1));
    v.dedup();
    v
}

/// Adds the `--full` steps to `plan` (whose steps are planned to take `spent` seconds),
/// keeping them within what is left of the budget, and says what is left out.
pub fn add_full_steps(shape: &Shape, opts: &MemOptions, plan: &mut MemPlan, spent: f64) {
    let full = FullSteps::new(shape, opts, plan);
    let mut extra = full.loaded();
    extra.extend(full.mixes());
    extra.extend(full.saturation());
    // The matrices (one pair per distance class moved to the front below).
    let inits = matrix::initiators(shape);
    let (pairs, representatives) = matrix::ordered_pairs(shape, &inits, &full.targets);
    let (mut latencies, mut reads) = full.matrices(&inits, &pairs);
    let targets = full.targets;
    // One pair per distance class (latency, then read bandwidth) comes before the other
    // steps: a few cheap steps that give every class of the matrix a figure, which the
    // loaded-latency sweeps of a many-socket machine would otherwise leave no time for.
    let lead = representatives.min(latencies.len()).min(reads.len());
    let rest = latencies.split_off(lead);
    let rest_reads = reads.split_off(lead);
    extra.splice(0..0, latencies.into_iter().chain(reads));
    extra.extend(rest.into_iter().chain(rest_reads));
    let planned = extra.len();
    let dropped = keep_within_budget(&mut extra, opts.budget, spent);
    let measured = extra
        .iter()
        .filter(|s| matches!(s.work, MemWork::MatrixLatency { .. }))
        .count();
    let measured_reads = extra
        .iter()
        .filter(|s| matches!(s.work, MemWork::MatrixRead { .. }))
        .count();
    if measured < pairs.len() || measured_reads < pairs.len() {
        plan.notes.push(format!(
            "node × node matrices: latency of {} and read bandwidth of {} of {} pairs ({} × {}) \
             within the {} budget: one per distance class first, then each initiator's own \
             node, then the others",
            measured,
            measured_reads,
            pairs.len(),
            plural(inits.len(), "initiator"),
            plural(targets.len(), "target node"),
            crate::plan::secs(opts.budget.seconds)
        ));
    }
    if !dropped.is_empty() {
        plan.notes.push(format!(
            "left out for the {} budget: {}",
            crate::plan::secs(opts.budget.seconds),
            dropped.join("; ")
        ));
    }
    if planned > 0 {
        plan.warnings.push(
            "prefetchers stay on (turning them off needs root): the chases defeat them by \
             their random order, the streams are helped by them as programs are"
                .into(),
        );
    }
    plan.steps.append(&mut extra);
    plan.initiators = inits;
    plan.targets = targets;
    plan.matrix_pairs = (measured, pairs.len());
}

/// Keeps the steps of `extra` in order while they fit what `budget` has left after the
/// `spent` seconds of the default steps (and its memory); a later, cheaper step may still
/// fit. Returns the names of the steps left out, those of the matrices aside (their own
/// note counts them).
fn keep_within_budget(extra: &mut Vec<MemStep>, budget: Budget, spent: f64) -> Vec<String> {
    let mut left = budget.seconds - spent;
    let mut dropped: Vec<String> = Vec::new();
    extra.retain(|st| {
        let keep = st.cost.seconds <= left && st.cost.bytes + PROCESS_BYTES <= budget.bytes;
        if keep {
            left -= st.cost.seconds;
        } else if !matches!(
            st.work,
            MemWork::MatrixLatency { .. } | MemWork::MatrixRead { .. }
        ) {
            dropped.push(st.cost.what.clone());
        }
        keep
    });
    dropped
}

/// A step of `work`, named `what`, planned to hold `bytes` over `passes` passes in
/// `seconds`.
fn step(work: MemWork, what: String, bytes: u64, passes: u64, seconds: f64) -> MemStep {
    MemStep {
        work,
        cost: CostStep::new("mem", what, bytes, passes, seconds),
        required: false,
    }
}

/// What the `--full` steps of a plan are planned with.
struct FullSteps<'a> {
    /// The machine.
    shape: &'a Shape,
    /// What the probe is asked.
    opts: &'a MemOptions,
    /// The plan of the default steps (its sizes and speed).
    plan: &'a MemPlan,
    /// The rates of the plan's speed.
    r: Rates,
    /// Whether the buffers are bound to their node (more than one node).
    numa: bool,
    /// The matrices' target nodes ([`matrix::targets`]).
    targets: Vec<u32>,
}

impl<'a> FullSteps<'a> {
    /// The `--full` steps of `plan` on `shape` as `opts` asks.
    fn new(shape: &'a Shape, opts: &'a MemOptions, plan: &'a MemPlan) -> Self {
        Self {
            shape,
            opts,
            plan,
            r: plan.speed.rates(),
            numa: shape.nodes.len() > 1,
            targets: matrix::targets(shape),
        }
    }

    /// The local node of socket `s`: the OS's, where it is a target, else the first
    /// target.
    fn local_of(&self, s: usize) -> u32 {
        self.shape.sockets[s]
            .local_node
            .filter(|id| self.targets.contains(id))
            .or_else(|| self.targets.first().copied())
            .unwrap_or(0)
    }

    /// Index of the node of OS number `id`.
    fn node_index(&self, id: u32) -> Option<usize> {
        self.shape.nodes.iter().position(|x| x.id == id)
    }

    /// 1. The loaded-latency sweeps: every socket to its local node, then every socket to
    ///    its nearest remote node, where there is one. The loaders share what the chase's
    ///    buffer leaves of the memory budget.
    fn loaded(&self) -> Vec<MemStep> {
        let (shape, plan) = (self.shape, self.plan);
        let buffers = self.opts.budget.bytes.saturating_sub(PROCESS_BYTES);
        let loader_total = buffers
            .saturating_sub(plan.latency_bytes)
            .min(plan.bandwidth_bytes)
            .max(1 << 20);
        let mut sweeps: Vec<(usize, u32, bool)> = (0..shape.sockets.len())
            .map(|s| (s, self.local_of(s), true))
            .collect();
        for s in 0..shape.sockets.len() {
            let local = self.local_of(s);
            let remote = self
                .targets
                .iter()
                .copied()
                .filter(|&t| t != local)
                .filter_map(|t| Some((shape.distance(s, self.node_index(t)?), t)))
                .filter(|&(d, _)| d > shape.distance(s, self.node_index(local).unwrap_or(0)))
                .min();
            if let Some((_, t)) = remote {
                sweeps.push((s, t, false));
            }
        }
        let mut out = Vec::new();
        for (s, node, local) in sweeps {
            let cpus = &shape.sockets[s].cpus;
            let Some(&chase_cpu) = cpus.first() else {
                continue;
            };
            let loaders: Vec<u32> = cpus.iter().skip(1).copied().collect();
            let loader_bytes =
                (loader_total / loaders.len().max(1) as u64).max(64 << 10) >> 12 << 12;
            let bytes = plan.latency_bytes + loader_bytes * loaders.len() as u64;
            let seconds = sweep_seconds(&self.r, plan, loaders.len(), loader_total);
            out.push(step(
                MemWork::Loaded {
                    socket: s,
                    node,
                    local,
                    bind: self.numa,
                    chase_cpu,
                    loaders: loaders.clone(),
                    loader_bytes,
                },
                format!(
                    "loaded latency CPU {chase_cpu} -> node {node}, {}, {} delays, up to {REFINED_POINTS} between and {REPEATED_POINTS} again",
                    plural(loaders.len(), "loader"),
                    DELAYS.len()
                ),
                bytes,
                (SWEEP_POINTS * POINT_LAPS) as u64,
                seconds,
            ));
        }
        out
    }

    /// 2. Every socket's read/write mixes to its local node, with its contexts (or the
    ///    thread count asked).
    fn mixes(&self) -> Vec<MemStep> {
        let plan = self.plan;
        (0..self.shape.sockets.len())
            .map(|s| {
                let socket = &self.shape.sockets[s];
                let node = self.local_of(s);
                let many = self
                    .opts
                    .threads
                    .unwrap_or(socket.cpus.len())
                    .clamp(1, socket.cpus.len().max(1));
                step(
                    MemWork::Mixes {
                        socket: s,
                        node,
                        bind: self.numa,
                        cpus: socket.cpus.iter().take(many).copied().collect(),
                    },
                    format!(
                        "read/write mixes socket {s} -> node {node}, {}",
                        plural(many, "thread")
                    ),
                    plan.bandwidth_bytes,
                    (MIX_KERNELS * 4) as u64,
                    bandwidth_seconds_at(
                        &self.r,
                        plan.bandwidth_bytes,
                        many,
                        MIX_KERNELS,
                        &plan.speed,
                    ),
                )
            })
            .collect()
    }

    /// 3. Every socket's read bandwidth to its local node with 1, 2, 4, … and all its
    ///    contexts ([`saturation_counts`]).
    fn saturation(&self) -> Vec<MemStep> {
        let plan = self.plan;
        (0..self.shape.sockets.len())
            .map(|s| {
                let socket = &self.shape.sockets[s];
                let node = self.local_of(s);
                let counts = saturation_counts(socket.cpus.len());
                let seconds = counts
                    .iter()
                    .map(|&t| {
                        bandwidth_seconds_at(&self.r, plan.bandwidth_bytes, t, 1, &plan.speed)
                    })
                    .sum();
                step(
                    MemWork::Saturation {
                        socket: s,
                        node,
                        bind: self.numa,
                        cpus: socket.cpus.clone(),
                        counts: counts.clone(),
                    },
                    format!(
                        "saturation socket {s} -> node {node}, {} thread counts",
                        counts.len()
                    ),
                    plan.bandwidth_bytes,
                    (counts.len() * 4) as u64,
                    seconds,
                )
            })
            .collect()
    }

    /// 4. The node × node matrices: the idle latency and the read bandwidth of every
    ///    initiator -> target pair of `pairs` (indices into `inits` and the targets), in
    ///    their order.
    fn matrices(
        &self,
        inits: &[MatrixInitiator],
        pairs: &[(usize, usize)],
    ) -> (Vec<MemStep>, Vec<MemStep>) {
        let plan = self.plan;
        let lat_seconds = latency_seconds(&self.r, plan.latency_bytes, plan.evicts, 1);
        let mut latencies = Vec::new();
        let mut reads = Vec::new();
        for &(i, t) in pairs {
            let init = &inits[i];
            let node = self.targets[t];
            let Some(&cpu) = init.cpus.first() else {
                continue;
            };
            latencies.push(step(
                MemWork::MatrixLatency {
                    initiator: i,
                    cpu,
                    node,
                    bind: self.numa,
                },
                format!("matrix latency {} -> node {node}", init.name),
                plan.latency_bytes + (plan.latency_bytes / SLOT_BYTES as u64) * 4,
                LATENCY_ROUNDS as u64,
                lat_seconds,
            ));
            reads.push(step(
                MemWork::MatrixRead {
                    initiator: i,
                    node,
                    bind: self.numa,
                    cpus: init.cpus.clone(),
                },
                format!(
                    "matrix read {} -> node {node}, {}",
                    init.name,
                    plural(init.cpus.len(), "thread")
                ),
                plan.bandwidth_bytes,
                4,
                bandwidth_seconds_at(
                    &self.r,
                    plan.bandwidth_bytes,
                    init.cpus.len(),
                    1,
                    &plan.speed,
                ),
            ));
        }
        (latencies, reads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_kernels_are_every_mix_then_the_written_ones_with_non_temporal_stores() {
        use topoprobe_model::Mix;
        let written = Mix::ALL.iter().filter(|m| m.streams().1 > 0).count();
        assert_eq!(MIX_KERNELS, Mix::ALL.len() + written);
    }

    #[test]
    fn saturation_counts_double_up_to_every_context() {
        assert_eq!(saturation_counts(1), [1]);
        assert_eq!(saturation_counts(2), [1, 2]);
        assert_eq!(saturation_counts(6), [1, 2, 4, 6]);
        assert_eq!(saturation_counts(8), [1, 2, 4, 8]);
    }
}
