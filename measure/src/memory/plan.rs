//! The memory probe's plan: which socket -> node pairs it measures, with which buffers and
//! method, in how many steps of what cost, within a [`Budget`].
//!
//! - **Pairs.** Every socket and every node with memory make a pair; the pairs are taken in
//!   this order until the budget is spent: one representative of every distance class of
//!   the OS's node distances (the class of a pair is the distance from the socket's local
//!   node to the node), then every socket's local node, then the others. What is left out
//!   is said ("measured 4 of 16 socket -> node pairs: one per distance class (10, 12, 21,
//!   32) and every socket's local node").
//! - **Latency** ([`super::chase`]): a 64 MiB buffer evicted from every cache and chased
//!   within one lap, wherever lines can be evicted; otherwise a steady-state chase over
//!   6 × the last-level cache within the memory budget, flagged when the budget cannot
//!   exceed twice the cache.
//! - **Bandwidth** ([`super::bandwidth`]): read, write and copy on one set of buffers,
//!   evicted before every pass. Reads need no more than a few dozen MiB once evicted; the
//!   writes of regular stores stay in the caches past the timed pass, so the working set is
//!   6 × the last-level cache (at least 64 MiB) within the memory budget, and where that
//!   is less than 4 × the cache, write and copy use non-temporal stores (said).

use topoprobe_model::{Budget, CostPlan, CostStep};

use super::pace::Speed;
use super::{working_set, MemOptions, MIN_WORKING_SET};
use crate::plan::{mib, Rates, Shape, PROCESS_BYTES};
use crate::steady::SteadyRule;

use super::chase::SLOT_BYTES;

/// Latency buffer when lines can be evicted, bytes: past every second-level TLB's reach on
/// 4 KiB pages (so the scattered figure includes page walks), within it on huge pages.
pub const LATENCY_BYTES: u64 = 64 << 20;
/// Timed rounds of a latency measurement.
pub const LATENCY_ROUNDS: usize = 4;
/// Loads per timed latency round at most.
pub const LATENCY_MAX_STEPS: usize = 1 << 17;
/// Loads of a steady-state chase (no eviction), per round.
pub const STEADY_CHASE_STEPS: usize = 1 << 18;
/// Rounds a bandwidth kernel is expected to take (three at least, one more when the host
/// disturbs one).
const EXPECTED_ROUNDS: usize = 4;
/// A kernel's rounds may run this many times their planned time before they stop (at
/// least three rounds always run).
const KERNEL_SLACK: f64 = 1.5;
/// Working set below which regular stores are not measured: this many last-level caches.
pub const WRITE_FACTOR: u64 = 4;

/// One measurement of the memory probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemWork {
    /// Latency from one context to one node.
    Latency {
        /// OS CPU number.
        cpu: u32,
        /// Socket of the context (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the buffer is bound to the node (false: one memory, first touch).
        bind: bool,
    },
    /// Read, write and copy bandwidth of some contexts of a socket to one node.
    Bandwidth {
        /// Socket (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The contexts streaming together.
        cpus: Vec<u32>,
    },
    /// A loaded-latency sweep ([`super::loaded`]) of a socket to a node (`--full`).
    Loaded {
        /// Socket (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the node is the socket's local node.
        local: bool,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The context that chases.
        chase_cpu: u32,
        /// The contexts that load.
        loaders: Vec<u32>,
        /// Each loader's buffer, bytes.
        loader_bytes: u64,
    },
    /// Every read/write mix ([`super::mixes`]), with and without non-temporal stores, of
    /// some contexts of a socket to a node (`--full`).
    Mixes {
        /// Socket (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The contexts streaming together.
        cpus: Vec<u32>,
    },
    /// Read bandwidth of a socket to a node with growing thread counts (`--full`).
    Saturation {
        /// Socket (index in the shape).
        socket: usize,
        /// OS node number.
        node: u32,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The socket's contexts in the order threads are added.
        cpus: Vec<u32>,
        /// The thread counts, ascending.
        counts: Vec<usize>,
    },
    /// Idle latency of one cell of the node × node matrix (`--full`).
    MatrixLatency {
        /// Initiator (index in [`MemPlan::initiators`]).
        initiator: usize,
        /// The context that chases.
        cpu: u32,
        /// Target node (OS number).
        node: u32,
        /// Whether the buffer is bound to the node.
        bind: bool,
    },
    /// Read bandwidth of one cell of the node × node matrix (`--full`).
    MatrixRead {
        /// Initiator (index in [`MemPlan::initiators`]).
        initiator: usize,
        /// Target node (OS number).
        node: u32,
        /// Whether the buffers are bound to the node.
        bind: bool,
        /// The initiator's contexts.
        cpus: Vec<u32>,
    },
}

/// A measurement and its cost.
#[derive(Debug, Clone, PartialEq)]
pub struct MemStep {
    /// What it measures.
    pub work: MemWork,
    /// What it is planned to cost, and, once run, what it spent.
    pub cost: CostStep,
    /// Whether it runs even past the budget (the first latency and the first bandwidth).
    pub required: bool,
}

/// How the memory probe measures on this machine, and what it will cost.
#[derive(Debug, Clone, PartialEq)]
pub struct MemPlan {
    /// The steps, in the order they run.
    pub steps: Vec<MemStep>,
    /// Latency buffer, bytes.
    pub latency_bytes: u64,
    /// Whether the latency buffer is evicted from the caches before its chase (else the
    /// chase runs in its steady state).
    pub evicts: bool,
    /// Rounds and loads of each latency chase.
    pub latency_rounds: usize,
    /// Bandwidth working set of all threads together, bytes.
    pub bandwidth_bytes: u64,
    /// Whether write and copy use non-temporal stores.
    pub non_temporal: bool,
    /// When each bandwidth kernel stops adding rounds.
    pub rule_rounds: usize,
    /// Socket -> node pairs measured and in all.
    pub pairs: (usize, usize),
    /// How the sizes were chosen and what the budget left out, for the user.
    pub notes: Vec<String>,
    /// What makes the figures doubtful: a latency buffer the caches can hold (lines that
    /// cannot be evicted, a buffer under twice the last-level cache).
    pub warnings: Vec<String>,
    /// The budget.
    pub budget: Budget,
    /// The rows of the node × node matrices (`--full`; empty otherwise).
    pub initiators: Vec<topoprobe_model::MatrixInitiator>,
    /// The columns of the node × node matrices: OS numbers of the nodes with memory.
    pub targets: Vec<u32>,
    /// Matrix pairs measured (latency) and in all.
    pub matrix_pairs: (usize, usize),
    /// The machine's speed the plan was made for ([`Speed::assumed`] until calibrated).
    pub speed: Speed,
}

impl MemPlan {
    /// The plan as a record: steps, budget, left-out notes.
    #[must_use]
    pub fn cost(&self) -> CostPlan {
        CostPlan::of(
            self.budget,
            self.steps.iter().map(|s| s.cost.clone()).collect(),
            self.notes.clone(),
        )
    }

    /// The rounds rule of the bandwidth kernels of `step` (its planned time bounds them).
    #[must_use]
    pub fn rule(&self, step: &MemStep, kernels: usize) -> SteadyRule {
        SteadyRule {
            max_rounds: self.rule_rounds,
            max_seconds: step.cost.seconds * KERNEL_SLACK / kernels.max(1) as f64,
            ..SteadyRule::default()
        }
    }
}

/// Bytes rounded down to whole MiB (at least one).
fn whole_mib(bytes: u64) -> u64 {
    (bytes >> 20).max(1) << 20
}

/// Seconds of one latency measurement over `bytes` (both page sizes when `pages` is 2).
pub(super) fn latency_seconds(r: &Rates, bytes: u64, evicts: bool, pages: usize) -> f64 {
    let slots = bytes / SLOT_BYTES as u64;
    let loads = if evicts {
        slots
    } else {
        (LATENCY_ROUNDS * STEADY_CHASE_STEPS) as u64 + slots
    };
    // Linking writes every slot in a random order (misses that overlap); a few ns each.
    let link = slots as f64 * 40e-9;
    let one = r.thread_start_s
        + r.touch_seconds(bytes, 1)
        + link
        + if evicts {
            r.flush_seconds(bytes, 1)
        } else {
            0.0
        }
        + loads as f64 * r.memory_ns * 1e-9;
    one * pages as f64
}

/// Seconds of one bandwidth step: `threads` threads first touch `bytes`, stream once
/// untimed, then run `kernels` kernels of [`EXPECTED_ROUNDS`] evicted passes each.
pub(super) fn bandwidth_seconds(r: &Rates, bytes: u64, threads: usize, kernels: usize) -> f64 {
    bandwidth_seconds_at(r, bytes, threads, kernels, &Speed::assumed())
}

/// [`bandwidth_seconds`] on a machine of `speed`: only so many of the threads run at once
/// ([`Speed::effective_threads`]).
pub(super) fn bandwidth_seconds_at(
    r: &Rates,
    bytes: u64,
    threads: usize,
    kernels: usize,
    speed: &Speed,
) -> f64 {
    let at_once = speed.effective_threads(threads);
    let round = r.flush_seconds(bytes, at_once) + r.stream_seconds(bytes, at_once);
    threads as f64 * r.thread_start_s
        + r.touch_seconds(bytes, at_once)
        + r.stream_seconds(bytes, at_once)
        + (kernels * EXPECTED_ROUNDS) as f64 * round
}

/// The socket -> node pairs in the order they are measured — a representative of each
/// distance class, each socket's local node, the rest — and how many representatives lead.
fn ordered_pairs(shape: &Shape) -> (Vec<(usize, usize)>, usize) {
    let nodes: Vec<usize> = (0..shape.nodes.len().max(1))
        .filter(|&n| shape.nodes.get(n).is_none_or(|x| x.memory_bytes != Some(0)))
        .collect();
    let all: Vec<(usize, usize)> = (0..shape.sockets.len())
        .flat_map(|s| nodes.iter().map(move |&n| (s, n)))
        .collect();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(all.len());
    let mut classes: Vec<u32> = Vec::new();
    for &(s, n) in &all {
        let d = shape.distance(s, n);
        if !classes.contains(&d) {
            classes.push(d);
            out.push((s, n));
        }
    }
    let representatives = out.len();
    for s in 0..shape.sockets.len() {
        let local = shape.sockets[s]
            .local_node
            .and_then(|id| shape.nodes.iter().position(|x| x.id == id))
            .unwrap_or(0);
        if all.contains(&(s, local)) && !out.contains(&(s, local)) {
            out.push((s, local));
        }
    }
    for p in all {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    (out, representatives)
}

/// The socket -> node pairs of `pairs` (node by index) that `measured` (node by OS
/// number) lacks, as `; left out: socket 0 -> nodes 1-4; socket 1 -> nodes 0-4`, so that
/// every node the plan could not reach is named; empty when none.
fn left_out_pairs(
    pairs: &[(usize, usize)],
    measured: &[(usize, u32)],
    node_id: &dyn Fn(usize) -> u32,
) -> String {
    let mut by_socket: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
    for &(s, n) in pairs {
        let id = node_id(n);
        if !measured.contains(&(s, id)) {
            by_socket.entry(s).or_default().push(id);
        }
    }
    if by_socket.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = by_socket
        .into_iter()
        .map(|(s, mut ids)| {
            ids.sort_unstable();
            ids.dedup();
            let word = if ids.len() == 1 { "node" } else { "nodes" };
            format!(
                "socket {s} -> {word} {}",
                topoprobe_model::format_cpu_list(&ids)
            )
        })
        .collect();
    format!("; left out: {}", parts.join("; "))
}

/// Plans the memory probe on a machine of `shape` as `opts` asks, within `opts.budget`,
/// at the rates the plan assumes ([`Rates::ASSUMED`]).
#[must_use]
pub fn plan_memory(shape: &Shape, opts: &MemOptions) -> MemPlan {
    plan_memory_at(shape, opts, &Speed::assumed())
}

/// [`plan_memory`] on a machine of `speed` (measured by [`super::pace::calibrate`]).
#[must_use]
pub fn plan_memory_at(shape: &Shape, opts: &MemOptions, speed: &Speed) -> MemPlan {
    let r = speed.rates();
    let budget = opts.budget;
    let buffers = budget
        .bytes
        .saturating_sub(PROCESS_BYTES)
        .max(MIN_WORKING_SET / 4);
    let free_cap = shape.free_bytes.map(|f| whole_mib(f / 4));
    let cap = |b: u64| whole_mib(b.min(buffers).min(free_cap.unwrap_or(u64::MAX)));
    let llc = shape.largest_llc();
    let mut notes = Vec::new();
    let evicts = shape.can_flush;
    let latency_bytes = match opts.size {
        Some(s) => s,
        None if evicts => cap(LATENCY_BYTES),
        None => cap(working_set(llc)),
    };
    let mut warnings = Vec::new();
    if !evicts {
        if let Some(l) = llc.filter(|&l| latency_bytes < 2 * l) {
            warnings.push(format!(
                "latency: lines cannot be evicted on this machine and the chase's {} is less \
                 than twice the {} last-level cache: part of its loads hit the cache",
                mib(latency_bytes),
                mib(l)
            ));
        }
    }
    let bandwidth_bytes = match opts.size {
        Some(s) => s,
        None => cap(working_set(llc)),
    };
    let non_temporal = opts.non_temporal.unwrap_or_else(|| {
        let short = llc.is_some_and(|l| bandwidth_bytes < WRITE_FACTOR * l);
        if short && !opts.latency_only {
            notes.push(format!(
                "write and copy use non-temporal stores: the {} bandwidth working set cannot \
                 exceed {WRITE_FACTOR} × the {} last-level cache within the {} memory budget, \
                 and regular stores would leave their writes in the cache",
                mib(bandwidth_bytes),
                mib(llc.unwrap_or(0)),
                mib(budget.bytes)
            ));
        }
        short
    });
    // The page-local chase, and the scattered one beside it.
    let pages = 1 + usize::from(opts.scattered);
    let lat_seconds = latency_seconds(&r, latency_bytes, evicts, pages);
    let (pairs, representatives) = ordered_pairs(shape);
    let numa = shape.nodes.len() > 1;
    let node_id = |n: usize| shape.nodes.get(n).map_or(0, |x| x.id);
    // Per pair: its latency steps, then its bandwidth steps.
    let mut per_pair: Vec<(Vec<MemStep>, Vec<MemStep>)> = Vec::new();
    for &(s, n) in &pairs {
        let (mut latencies, mut bandwidths) = (Vec::new(), Vec::new());
        let socket = &shape.sockets[s];
        let node = node_id(n);
        let contexts: Vec<u32> = if opts.all_contexts {
            socket.cpus.clone()
        } else {
            socket.cpus.iter().take(1).copied().collect()
        };
        for cpu in contexts {
            latencies.push(MemStep {
                work: MemWork::Latency {
                    cpu,
                    socket: s,
                    node,
                    bind: numa,
                },
                cost: CostStep::new(
                    "mem",
                    format!("latency CPU {cpu} -> node {node}"),
                    latency_bytes + (latency_bytes / SLOT_BYTES as u64) * 4,
                    (LATENCY_ROUNDS * pages) as u64,
                    lat_seconds,
                ),
                required: false,
            });
        }
        if opts.latency_only {
            per_pair.push((latencies, bandwidths));
            continue;
        }
        let many = opts
            .threads
            .unwrap_or(socket.cpus.len())
            .clamp(1, socket.cpus.len().max(1));
        let mut counts = vec![1];
        if many > 1 {
            counts.push(many);
        }
        for t in counts {
            bandwidths.push(MemStep {
                work: MemWork::Bandwidth {
                    socket: s,
                    node,
                    bind: numa,
                    cpus: socket.cpus.iter().take(t).copied().collect(),
                },
                cost: CostStep::new(
                    "mem",
                    format!(
                        "bandwidth socket {s} -> node {node}, {}",
                        topoprobe_model::format::plural(t, "thread")
                    ),
                    bandwidth_bytes,
                    (3 * EXPECTED_ROUNDS) as u64,
                    bandwidth_seconds_at(&r, bandwidth_bytes, t, 3, speed),
                ),
                required: false,
            });
        }
        per_pair.push((latencies, bandwidths));
    }
    // The class representatives' latencies, then their bandwidths, then the same for the
    // other pairs: with little time, every class gets its latency before any pair gets
    // more. The first latency and the first bandwidth run whatever the budget.
    let mut steps: Vec<MemStep> = Vec::new();
    let mut rest = per_pair.split_off(representatives.min(per_pair.len()));
    for group in [&mut per_pair, &mut rest] {
        for (latencies, _) in group.iter_mut() {
            steps.append(latencies);
        }
        for (_, bandwidths) in group.iter_mut() {
            steps.append(bandwidths);
        }
    }
    if let Some(first) = steps.first_mut() {
        first.required = true;
    }
    if let Some(first) = steps
        .iter_mut()
        .find(|x| matches!(x.work, MemWork::Bandwidth { .. }))
    {
        first.required = true;
    }
    // Keep the steps in order while they fit; a step that does not fit is left out and a
    // later, cheaper one may still fit.
    let mut spent = 0.0;
    let total_steps = steps.len();
    // With `--full`, the default steps take at most what a default run has (and a quarter
    // of the budget): the rest is for the full steps.
    let base_seconds = if opts.full {
        budget
            .seconds
            .min(super::DEFAULT_BUDGET.seconds)
            .min(budget.seconds / 4.0)
    } else {
        budget.seconds
    };
    steps.retain(|st| {
        let keep = st.required || spent + st.cost.seconds <= base_seconds;
        if keep {
            spent += st.cost.seconds;
        }
        keep
    });
    let measured: Vec<(usize, u32)> = {
        let mut v: Vec<(usize, u32)> = steps
            .iter()
            .filter_map(|st| match &st.work {
                MemWork::Latency { socket, node, .. } | MemWork::Bandwidth { socket, node, .. } => {
                    Some((*socket, *node))
                }
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    if steps.len() < total_steps {
        let mut classes: Vec<u32> = pairs.iter().map(|&(s, n)| shape.distance(s, n)).collect();
        classes.sort_unstable();
        classes.dedup();
        let class_list: Vec<String> = classes.iter().map(u32::to_string).collect();
        notes.push(format!(
            "measured {} of {} socket -> node pairs within the {} budget ({} of {} \
             measurements): one per distance class of the OS's node distances ({}) first, \
             then each socket's local node, then the others{}",
            measured.len(),
            pairs.len(),
            crate::plan::secs(budget.seconds),
            steps.len(),
            total_steps,
            class_list.join(", "),
            left_out_pairs(&pairs, &measured, &node_id)
        ));
    }
    let mut plan = MemPlan {
        steps,
        latency_bytes,
        evicts,
        latency_rounds: LATENCY_ROUNDS,
        bandwidth_bytes,
        non_temporal,
        rule_rounds: opts.max_rounds.max(3),
        pairs: (measured.len(), pairs.len()),
        notes,
        warnings,
        budget,
        initiators: Vec::new(),
        targets: Vec::new(),
        matrix_pairs: (0, 0),
        speed: *speed,
    };
    if opts.full {
        super::full_plan::add_full_steps(shape, opts, &mut plan, spent);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pairs_a_budget_leaves_out_are_named_by_node() {
        // Two sockets, nodes by index 0-2 with OS numbers 0, 1 and 4.
        let pairs = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)];
        let ids = [0, 1, 4];
        let id = |n: usize| ids[n];
        assert_eq!(
            left_out_pairs(&pairs, &[(0, 0), (1, 1)], &id),
            "; left out: socket 0 -> nodes 1,4; socket 1 -> nodes 0,4"
        );
        assert_eq!(
            left_out_pairs(&pairs[..2], &[(0, 0)], &id),
            "; left out: socket 0 -> node 1"
        );
        let all: Vec<(usize, u32)> = pairs.iter().map(|&(s, n)| (s, ids[n])).collect();
        assert_eq!(left_out_pairs(&pairs, &all, &id), "");
    }
}
