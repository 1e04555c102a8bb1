//! The memory probe's plan: which socket -> node pairs it measures, with which buffers and
//! method, in how many steps of what cost, within a [`Budget`](topoprobe_model::Budget).
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

use topoprobe_model::{size_text, CostStep};

use super::chase::{LATENCY_ROUNDS, SLOT_BYTES};
use super::steps::{bandwidth_seconds_at, latency_seconds, MemStep, EXPECTED_ROUNDS};
use super::{working_set, MemOptions, MIN_WORKING_SET};
use crate::plan::Speed;
use crate::plan::{Shape, PROCESS_BYTES};

pub use super::steps::{MemPlan, MemWork};

/// Latency buffer when lines can be evicted, bytes: past every second-level TLB's reach on
/// 4 KiB pages (so the scattered figure includes page walks), within it on huge pages.
pub const LATENCY_BYTES: u64 = 64 << 20;
/// Working set below which regular stores are not measured: this many last-level caches.
pub const WRITE_FACTOR: u64 = 4;
/// The least a planned latency buffer (evicted) or bandwidth working set shrinks to on a
/// machine too slow for the planned ones (an evicted chase still reaches memory, reads
/// need no size once evicted, and writes then use non-temporal stores).
pub const SHRUNK_BYTES: u64 = 16 << 20;

/// Bytes rounded down to whole MiB (at least one).
fn whole_mib(bytes: u64) -> u64 {
    (bytes >> 20).max(1) << 20
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
/// at the rates the plan assumes ([`Rates::ASSUMED`](crate::plan::Rates::ASSUMED)).
#[must_use]
pub fn plan_memory(shape: &Shape, opts: &MemOptions) -> MemPlan {
    plan_memory_at(shape, opts, &shape.speed)
}

/// [`plan_memory`] on a machine of `speed` (measured by [`super::pace::calibrate`]).
#[must_use]
pub fn plan_memory_at(shape: &Shape, opts: &MemOptions, speed: &Speed) -> MemPlan {
    let budget = opts.budget;
    let llc = shape.largest_llc();
    let mut notes = Vec::new();
    let evicts = shape.can_flush;
    let (latency_bytes, bandwidth_bytes) = planned_sizes(shape, opts);
    let warnings: Vec<String> = cached_chase_warning(evicts, llc, latency_bytes)
        .into_iter()
        .collect();
    let base_seconds = default_steps_seconds(opts);
    let (latency_bytes, bandwidth_bytes) = shrunk_to_speed(
        opts,
        speed,
        evicts,
        base_seconds,
        (latency_bytes, bandwidth_bytes),
        &mut notes,
    );
    let non_temporal = opts
        .non_temporal
        .unwrap_or_else(|| short_working_set(opts, llc, bandwidth_bytes, &mut notes));
    let (pairs, representatives) = ordered_pairs(shape);
    let node_id = |n: usize| shape.nodes.get(n).map_or(0, |x| x.id);
    let pair_steps = PairSteps {
        shape,
        opts,
        speed,
        latency_bytes,
        bandwidth_bytes,
        evicts,
    };
    let per_pair: Vec<(Vec<MemStep>, Vec<MemStep>)> = pairs
        .iter()
        .map(|&(s, n)| pair_steps.of(s, node_id(n)))
        .collect();
    let mut steps = in_run_order(per_pair, representatives);
    let total_steps = steps.len();
    let spent = keep_within(&mut steps, base_seconds);
    let measured = measured_pairs(&steps);
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

/// The latency buffer and the bandwidth working set, bytes: as `opts` gives them, else
/// planned within the memory budget and a quarter of the free memory — the latency buffer
/// [`LATENCY_BYTES`] where lines can be evicted and the cache-sized working set where
/// they cannot, the working set cache-sized ([`working_set`]).
fn planned_sizes(shape: &Shape, opts: &MemOptions) -> (u64, u64) {
    let buffers = opts
        .budget
        .bytes
        .saturating_sub(PROCESS_BYTES)
        .max(MIN_WORKING_SET / 4);
    let free_cap = shape.free_bytes.map(|f| whole_mib(f / 4));
    let cap = |b: u64| whole_mib(b.min(buffers).min(free_cap.unwrap_or(u64::MAX)));
    let llc = shape.largest_llc();
    let latency_bytes = match opts.size {
        Some(s) => s,
        None if shape.can_flush => cap(LATENCY_BYTES),
        None => cap(working_set(llc)),
    };
    let bandwidth_bytes = match opts.size {
        Some(s) => s,
        None => cap(working_set(llc)),
    };
    (latency_bytes, bandwidth_bytes)
}

/// The warning that part of the chase's loads hit the cache: lines cannot be evicted
/// (`evicts` false) and the latency buffer is less than twice the last-level cache.
fn cached_chase_warning(evicts: bool, llc: Option<u64>, latency_bytes: u64) -> Option<String> {
    if evicts {
        return None;
    }
    let l = llc.filter(|&l| latency_bytes < 2 * l)?;
    Some(format!(
        "latency: lines cannot be evicted on this machine and the chase's {} is less \
         than twice the {} last-level cache: part of its loads hit the cache",
        size_text(latency_bytes),
        size_text(l)
    ))
}

/// Seconds the default steps may take: the whole budget, or with `--full` at most what a
/// default run has (and a quarter of the budget): the rest is for the full steps.
fn default_steps_seconds(opts: &MemOptions) -> f64 {
    let budget = opts.budget;
    if opts.full {
        budget
            .seconds
            .min(super::DEFAULT_BUDGET.seconds)
            .min(budget.seconds / 4.0)
    } else {
        budget.seconds
    }
}

/// The planned `(latency, bandwidth)` buffers at this machine's measured `speed` (a fresh
/// guest's first touch of tens of MB/s): the first latency and bandwidth steps, which
/// always run, must fit half of `base_seconds`, so the planned buffers shrink, evicted
/// ones down to a floor that still reaches memory, and a note in `notes` says so. Sizes
/// `opts` gives, and plans at the assumed speed, are kept.
fn shrunk_to_speed(
    opts: &MemOptions,
    speed: &Speed,
    evicts: bool,
    base_seconds: f64,
    (mut latency_bytes, mut bandwidth_bytes): (u64, u64),
    notes: &mut Vec<String>,
) -> (u64, u64) {
    if opts.size.is_some() || *speed == Speed::assumed() {
        return (latency_bytes, bandwidth_bytes);
    }
    let r = speed.rates();
    let pages = 1 + usize::from(opts.scattered);
    let first = |lat: u64, bw: u64| {
        latency_seconds(&r, lat, evicts, pages)
            + if opts.latency_only {
                0.0
            } else {
                bandwidth_seconds_at(&r, bw, 1, 3, speed)
            }
    };
    let (lat0, bw0) = (latency_bytes, bandwidth_bytes);
    let lat_floor = if evicts { SHRUNK_BYTES } else { latency_bytes };
    while first(latency_bytes, bandwidth_bytes) > base_seconds / 2.0
        && (latency_bytes > lat_floor || bandwidth_bytes > SHRUNK_BYTES)
    {
        if latency_bytes > lat_floor {
            latency_bytes = whole_mib((latency_bytes / 2).max(lat_floor));
        }
        if bandwidth_bytes > SHRUNK_BYTES {
            bandwidth_bytes = whole_mib((bandwidth_bytes / 2).max(SHRUNK_BYTES));
        }
    }
    if (latency_bytes, bandwidth_bytes) != (lat0, bw0) {
        notes.push(format!(
            "buffers planned at this machine's speed (first touch {:.0} MB/s, {:.1} GB/s a \
             thread): latency {} instead of {}, bandwidth {} instead of {}, so that the \
             first measurements fit the {} budget",
            (1u64 << 30) as f64 / r.touch_s_per_gib / 1e6,
            r.thread_gbps,
            size_text(latency_bytes),
            size_text(lat0),
            size_text(bandwidth_bytes),
            size_text(bw0),
            crate::plan::secs(opts.budget.seconds)
        ));
    }
    (latency_bytes, bandwidth_bytes)
}

/// Whether write and copy use non-temporal stores when `opts` does not say: where the
/// bandwidth working set is less than [`WRITE_FACTOR`] × the last-level cache `llc`
/// (regular stores would leave their writes in the cache), said in `notes` when bandwidth
/// is measured.
fn short_working_set(
    opts: &MemOptions,
    llc: Option<u64>,
    bandwidth_bytes: u64,
    notes: &mut Vec<String>,
) -> bool {
    let short = llc.is_some_and(|l| bandwidth_bytes < WRITE_FACTOR * l);
    if short && !opts.latency_only {
        notes.push(format!(
            "write and copy use non-temporal stores: the {} bandwidth working set cannot \
             exceed {WRITE_FACTOR} × the {} last-level cache within the {} memory budget, \
             and regular stores would leave their writes in the cache",
            size_text(bandwidth_bytes),
            size_text(llc.unwrap_or(0)),
            size_text(opts.budget.bytes)
        ));
    }
    short
}

/// What the steps of every socket -> node pair are planned with.
struct PairSteps<'a> {
    /// The machine.
    shape: &'a Shape,
    /// What the probe is asked.
    opts: &'a MemOptions,
    /// The machine's speed the steps are costed at.
    speed: &'a Speed,
    /// Latency buffer, bytes.
    latency_bytes: u64,
    /// Bandwidth working set of all threads together, bytes.
    bandwidth_bytes: u64,
    /// Whether the latency buffer is evicted before its chase.
    evicts: bool,
}

impl PairSteps<'_> {
    /// The steps of socket `s` to `node` (OS number): its latencies, from one context
    /// (every one with `all_contexts`), and its bandwidths, with one thread and with the
    /// socket's many (none with `latency_only`).
    fn of(&self, s: usize, node: u32) -> (Vec<MemStep>, Vec<MemStep>) {
        let (opts, shape) = (self.opts, self.shape);
        let r = self.speed.rates();
        let numa = shape.nodes.len() > 1;
        // The page-local chase, and the scattered one beside it.
        let pages = 1 + usize::from(opts.scattered);
        let lat_seconds = latency_seconds(&r, self.latency_bytes, self.evicts, pages);
        let (mut latencies, mut bandwidths) = (Vec::new(), Vec::new());
        let socket = &shape.sockets[s];
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
                    self.latency_bytes + (self.latency_bytes / SLOT_BYTES as u64) * 4,
                    (LATENCY_ROUNDS * pages) as u64,
                    lat_seconds,
                ),
                required: false,
            });
        }
        if opts.latency_only {
            return (latencies, bandwidths);
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
                    self.bandwidth_bytes,
                    (3 * EXPECTED_ROUNDS) as u64,
                    bandwidth_seconds_at(&r, self.bandwidth_bytes, t, 3, self.speed),
                ),
                required: false,
            });
        }
        (latencies, bandwidths)
    }
}

/// The steps of `per_pair` (each pair's latencies and bandwidths) in the order they run:
/// the class representatives' latencies (the first `representatives` pairs), then their
/// bandwidths, then the same for the other pairs: with little time, every class gets its
/// latency before any pair gets more. The first latency and the first bandwidth run
/// whatever the budget.
fn in_run_order(
    mut per_pair: Vec<(Vec<MemStep>, Vec<MemStep>)>,
    representatives: usize,
) -> Vec<MemStep> {
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
    steps
}

/// Keeps the steps in order while they fit `seconds`; a step that does not fit is left
/// out and a later, cheaper one may still fit (a required one always stays). Returns the
/// seconds the kept steps are planned to take.
fn keep_within(steps: &mut Vec<MemStep>, seconds: f64) -> f64 {
    let mut spent = 0.0;
    steps.retain(|st| {
        let keep = st.required || spent + st.cost.seconds <= seconds;
        if keep {
            spent += st.cost.seconds;
        }
        keep
    });
    spent
}

/// The socket -> node pairs (node by OS number) `steps` measure latency or bandwidth of,
/// sorted.
fn measured_pairs(steps: &[MemStep]) -> Vec<(usize, u32)> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{NodeShape, SocketShape, MIB};

    /// One socket of 16 contexts, one node, a 480 MiB L3.
    fn guest() -> Shape {
        Shape {
            sockets: vec![SocketShape {
                cpus: (0..16).collect(),
                cores: 16,
                llc_bytes: Some(480 * MIB),
                local_node: Some(0),
            }],
            nodes: vec![NodeShape {
                id: 0,
                distances: vec![10],
                memory_bytes: Some(32 << 30),
                cpus: (0..16).collect(),
            }],
            cache_levels: vec![48 << 10, 2 * MIB, 480 * MIB],
            free_bytes: Some(24 << 30),
            can_flush: true,
            huge_pages: true,
            power_unavailable: None,
            speed: Default::default(),
        }
    }

    /// On a machine where one thread runs at a time (a time-shared guest), the `--full`
    /// steps are planned for their threads taking turns: the loaded-latency chase shares
    /// its CPU with its loaders, and the mixes' threads stream one after another.
    #[test]
    fn a_time_shared_machine_plans_the_full_steps_for_threads_taking_turns() {
        let opts = MemOptions {
            full: true,
            budget: super::super::full_plan::FULL_BUDGET,
            ..MemOptions::default()
        };
        let speed = |parallel| Speed {
            touch_s_per_gib: 0.5,
            thread_gbps: 10.0,
            chase_ns: 130.0,
            cache_ns: 1.5,
            thread_start_s: 1e-4,
            parallel,
            seconds: 0.1,
        };
        let seconds_of = |p: &MemPlan, what: &str| -> f64 {
            p.steps
                .iter()
                .filter(|s| s.cost.what.starts_with(what))
                .map(|s| s.cost.seconds)
                .sum()
        };
        let ordinary = plan_memory_at(&guest(), &opts, &speed(f64::INFINITY));
        let shared = plan_memory_at(&guest(), &opts, &speed(1.0));
        for what in ["loaded latency", "read/write mixes"] {
            let (a, b) = (seconds_of(&ordinary, what), seconds_of(&shared, what));
            assert!(
                a > 0.0 && b > 1.5 * a,
                "{what}: {a} s ordinary, {b} s time-shared"
            );
        }
    }

    /// A fresh guest whose first touch runs at 40 MB/s: the plan made at its speed
    /// shrinks its buffers so that the steps that always run fit, and says so; at the
    /// assumed speed the buffers are the usual ones.
    #[test]
    fn a_slow_first_touch_shrinks_the_planned_buffers_to_fit_the_time() {
        let opts = MemOptions::default();
        let usual = plan_memory(&guest(), &opts);
        assert_eq!(usual.latency_bytes, LATENCY_BYTES);
        let fresh = Speed {
            touch_s_per_gib: 1.0 / 0.04,
            thread_gbps: 5.0,
            chase_ns: 130.0,
            cache_ns: 1.5,
            thread_start_s: 1e-4,
            parallel: f64::INFINITY,
            seconds: 0.1,
        };
        let slow = plan_memory_at(&guest(), &opts, &fresh);
        assert!(slow.latency_bytes < usual.latency_bytes, "{slow:?}");
        assert!(slow.bandwidth_bytes < usual.bandwidth_bytes, "{slow:?}");
        assert!(slow.latency_bytes >= SHRUNK_BYTES && slow.bandwidth_bytes >= SHRUNK_BYTES);
        assert!(
            slow.non_temporal,
            "writes under 4 × the L3 use non-temporal stores"
        );
        assert!(
            slow.notes
                .iter()
                .any(|n| n
                    .starts_with("buffers planned at this machine's speed (first touch 43 MB/s")),
            "{:?}",
            slow.notes
        );
        let required: f64 = slow
            .steps
            .iter()
            .filter(|s| s.required)
            .map(|s| s.cost.seconds)
            .sum();
        assert!(required <= opts.budget.seconds, "{required}");
        // An explicit size is the user's: it is kept, however slow the machine.
        let sized = plan_memory_at(
            &guest(),
            &MemOptions {
                size: Some(256 * MIB),
                ..opts
            },
            &fresh,
        );
        assert_eq!(sized.latency_bytes, 256 * MIB);
    }

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
