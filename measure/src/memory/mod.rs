//! Memory latency and bandwidth from the sockets to the memory nodes (libmctop's memory
//! plugin), planned within a time and memory budget ([`plan`]).
//!
//! - Latency ([`chase`]): a dependent chase in a random cyclic order through one line of
//!   every 128-byte slot of a node-bound buffer, evicted from every cache first, from one
//!   context of each socket (every context with `all_contexts`), window by window on
//!   transparent huge pages (the memory's own latency, as multichase and MLC report it)
//!   and, beside it, scattered over the whole buffer on 4 KiB pages (plus the TLB misses,
//!   page walks and DRAM page changes a program jumping across a large buffer pays).
//! - Bandwidth ([`bandwidth`]): read, write and copy with the widest vector unit
//!   ([`kernels`]), one thread and one per context of the socket (or a given count), on one
//!   set of buffers evicted before every pass; each kernel repeated in rounds until the last
//!   three agree within 3% ([`crate::steady`]) or its share of the budget is spent.
//!
//! One buffer per running thread, released after each measurement: memory stays within the
//! budget (libmctop kept contexts × nodes × 2 GB). Which socket -> node pairs are measured,
//! with which sizes and how, is the [`plan`]'s choice, said in [`MemReport::notes`].

pub mod bandwidth;
pub mod chase;
pub mod full_plan;
pub mod kernel_kinds;
pub mod kernels;
pub mod loaded;
pub mod matrix;
pub mod mixes;
pub mod pace;
pub mod plan;
pub mod plausible;
pub mod steps;

use std::time::Instant;

use topoprobe_model::{Budget, CostPlan, LoadedCurve, Mix, MixBandwidth, NodeMatrix, Saturation};

use crate::plan::Shape;
use bandwidth::Streams;
use chase::{ChaseRounds, LATENCY_MAX_STEPS, LATENCY_ROUNDS, STEADY_CHASE_STEPS};
use kernel_kinds::{Isa, Kernel};
use steps::{MemPlan, MemWork};
use topoprobe_sys::affinity::AffinityError;
use topoprobe_sys::buffer::{Buffer, BufferError, PagePlacement};
use topoprobe_sys::usage::WaitClock;

pub use crate::steady::SteadyFigure;

/// Why memory could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// A thread could not be pinned.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
    /// A buffer could not be made or bound.
    #[error(transparent)]
    Buffer(#[from] BufferError),
    /// Nothing to run on.
    #[error("no CPU to measure on")]
    NoCpus,
}

/// The budget of `topoprobe mem` and of a memory measurement by default: 15 s and 512 MiB.
pub const DEFAULT_BUDGET: Budget = Budget::new(15.0, 512 << 20);

/// What [`measure_memory`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct MemOptions {
    /// The latency buffer and the bandwidth working set of all threads together, bytes
    /// (`None`: planned, see [`plan`]).
    pub size: Option<u64>,
    /// Threads for the many-thread bandwidth (`None`: every context of the socket).
    pub threads: Option<usize>,
    /// Measure latency from every context, not one per socket.
    pub all_contexts: bool,
    /// Non-temporal stores for write and copy (`None`: only where the working set cannot
    /// exceed the last-level cache within the budget).
    pub non_temporal: Option<bool>,
    /// Also chase the latency buffer scattered over all of it on 4 KiB pages (what a
    /// program that jumps across a large buffer pays in TLB misses, page walks and DRAM
    /// page changes, beside the memory's own latency).
    pub scattered: bool,
    /// Bandwidth rounds of a kernel at most.
    pub max_rounds: usize,
    /// Instruction set of the bandwidth kernels.
    pub isa: Isa,
    /// Cycles per ns of the timer, to report latencies in cycles too.
    pub ghz: Option<f64>,
    /// Skip bandwidth (latency only).
    pub latency_only: bool,
    /// Time and memory the measurement may take.
    pub budget: Budget,
    /// Also the node × node matrices, the read/write mixes, the saturating thread counts
    /// and the loaded-latency curves ([`full_plan`]; give it [`full_plan::FULL_BUDGET`]).
    pub full: bool,
}

impl Default for MemOptions {
    fn default() -> Self {
        Self {
            size: None,
            threads: None,
            all_contexts: false,
            non_temporal: None,
            scattered: true,
            max_rounds: 20,
            isa: Isa::detect(),
            ghz: None,
            latency_only: false,
            budget: DEFAULT_BUDGET,
            full: false,
        }
    }
}

/// Share of the budget kept free of the steps: starting the process, reading the
/// topology, writing the result.
pub const HEADROOM: f64 = 0.05;

/// A measurement's threads may wait this share of its time for their CPUs (other
/// programs running on them) before it is flagged: a chase or a stream timed by the wall
/// clock counts their time as its own.
pub const WAIT_SHARE: f64 = 0.05;

/// Memory latency from one context to one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyResult {
    /// OS CPU number.
    pub cpu: u32,
    /// Socket of the context.
    pub socket: usize,
    /// Node of the buffer.
    pub node: u32,
    /// ns per load of the page-local chase on huge pages (`None` when the kernel refused
    /// them: then `small_ns` is the figure).
    pub huge_ns: Option<f64>,
    /// ns per load of the page-local chase on 4 KiB pages (only when huge pages were
    /// refused).
    pub small_ns: Option<f64>,
    /// ns per load of the chase scattered over the whole buffer on 4 KiB pages: the
    /// memory's latency plus TLB misses, page walks and DRAM page changes (`None` when not
    /// asked for).
    pub scattered_ns: Option<f64>,
    /// The largest share of its chases' time the chase waited for its CPU (other programs
    /// held it), 0 to 1; `None` where the kernel does not say.
    pub waited: Option<f64>,
    /// Share of the huge-page chase's buffer the kernel backed with huge pages, 0 to 1
    /// ([`crate::pages::share_of`]; `None` when huge pages were not asked for or
    /// `/proc/self/smaps` cannot be read).
    pub huge_share: Option<f64>,
}

impl LatencyResult {
    /// The memory latency: the page-local chase on huge pages when there were, else on
    /// 4 KiB pages.
    #[must_use]
    pub fn ns(&self) -> f64 {
        self.huge_ns.or(self.small_ns).unwrap_or(f64::NAN)
    }
}

/// Bandwidth from one socket to one node with a thread count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandwidthResult {
    /// Socket.
    pub socket: usize,
    /// Node.
    pub node: u32,
    /// Threads.
    pub threads: usize,
    /// Read GB/s.
    pub read: f64,
    /// Write GB/s.
    pub write: f64,
    /// Copy GB/s (bytes read + bytes written).
    pub copy: f64,
    /// Largest spread of the last rounds of the three, (max − min) / median.
    pub spread: f64,
    /// Most rounds one of the three took.
    pub rounds: usize,
}

/// Everything [`measure_memory`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct MemReport {
    /// Latencies, per context and node.
    pub latency: Vec<LatencyResult>,
    /// Bandwidths, per socket, node and thread count.
    pub bandwidth: Vec<BandwidthResult>,
    /// Each socket's local node by measurement (lowest latency).
    pub local_nodes: Vec<(usize, u32)>,
    /// Remarks: how the sizes were chosen, what the budget left out, disagreements with
    /// the OS, refused huge pages.
    pub notes: Vec<String>,
    /// What makes the figures doubtful ([`steps::MemPlan::warnings`]).
    pub warnings: Vec<String>,
    /// Latency buffer, bytes.
    pub latency_bytes: u64,
    /// Whether the latency buffer was evicted from the caches before its chase.
    pub evicted: bool,
    /// Bandwidth working set of all threads together, bytes.
    pub bandwidth_bytes: u64,
    /// Whether write and copy used non-temporal stores.
    pub non_temporal: bool,
    /// Socket -> node pairs measured and in all.
    pub pairs: (usize, usize),
    /// The plan, with what each step spent.
    pub cost: CostPlan,
    /// Idle latency and read bandwidth node × node (`--full`).
    pub node_matrix: Option<NodeMatrix>,
    /// Bandwidth of the read/write mixes (`--full`).
    pub mixes: Vec<MixBandwidth>,
    /// The thread counts that saturate the nodes (`--full`).
    pub saturation: Vec<Saturation>,
    /// Loaded-latency curves (`--full`).
    pub loaded_latency: Vec<LoadedCurve>,
}

/// Memory latency of `cpu` to `node` (`None`: first touch) over `bytes`, evicted first
/// when `evict` (see [`chase`]): the page-local chase on huge pages (on 4 KiB pages where
/// the kernel refuses them) and, with `scattered`, the chase scattered over the buffer on
/// 4 KiB pages.
///
/// # Errors
///
/// [`MemError`] when pinning, allocating or binding fails.
pub fn latency(
    cpu: u32,
    node: Option<u32>,
    bytes: u64,
    evict: bool,
    scattered: bool,
) -> Result<LatencyResult, MemError> {
    // ns per load, the share of the time waited for the CPU, the share on huge pages.
    type Run = (f64, Option<f64>, Option<f64>);
    let run = |huge: bool, order: chase::ChaseOrder| -> Result<Run, MemError> {
        std::thread::scope(|s| {
            s.spawn(|| {
                topoprobe_sys::affinity::pin_current_thread(cpu)?;
                let mut buf = Buffer::new(
                    bytes as usize,
                    PagePlacement {
                        node,
                        huge_pages: Some(huge),
                    },
                )?;
                buf.touch();
                let share = if huge {
                    crate::pages::share_of(&buf)
                } else {
                    None
                };
                let slots = chase::link_cycle(&mut buf, order, 0x5eed ^ u64::from(cpu));
                let how = if evict {
                    ChaseRounds::within_one_lap(slots, LATENCY_ROUNDS, LATENCY_MAX_STEPS)
                } else {
                    ChaseRounds {
                        rounds: LATENCY_ROUNDS,
                        steps: STEADY_CHASE_STEPS,
                        warm_up: slots.max(STEADY_CHASE_STEPS / 8),
                        evict: false,
                    }
                };
                let waiting = WaitClock::start();
                let ns = chase::timed_rounds(&buf, how);
                Ok((
                    crate::stats::median(&ns).unwrap_or(f64::NAN),
                    waiting.share(),
                    share,
                ))
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    };
    let huge = if thp_available() {
        Some(run(true, chase::ChaseOrder::PageLocal)?)
    } else {
        None
    };
    let small = if huge.is_none() {
        Some(run(false, chase::ChaseOrder::PageLocal)?)
    } else {
        None
    };
    let scattered = if scattered {
        Some(run(false, chase::ChaseOrder::Scattered)?)
    } else {
        None
    };
    let runs = [huge, small, scattered];
    Ok(LatencyResult {
        cpu,
        socket: 0,
        node: node.unwrap_or(0),
        huge_ns: huge.map(|r| r.0),
        small_ns: small.map(|r| r.0),
        scattered_ns: scattered.map(|r| r.0),
        waited: most_waited(runs.iter().flatten().map(|r| r.1)),
        huge_share: huge.and_then(|r| r.2),
    })
}

/// Smallest working set that measures memory, bytes: a chase through fewer lines times the
/// timer and the prefetchers rather than the memory (1 KiB is 8 lines: 7 ns a "load"), and
/// one of 1 MiB evicted from the caches still takes every load to memory.
pub const MIN_SIZE: u64 = 1 << 20;

/// Times the last-level cache that makes a cache-sized working set.
pub const WORKING_SET_FACTOR: u64 = 6;
/// Smallest cache-sized working set, bytes.
pub const MIN_WORKING_SET: u64 = 64 << 20;
/// Largest cache-sized working set, bytes.
pub const MAX_WORKING_SET: u64 = 1 << 30;
/// Cache-sized working set when the last-level cache is unknown, bytes.
pub const UNKNOWN_WORKING_SET: u64 = 256 << 20;

/// The cache-sized working set for a last-level cache of `llc` bytes:
/// [`WORKING_SET_FACTOR`] times it, between [`MIN_WORKING_SET`] and [`MAX_WORKING_SET`]
/// ([`UNKNOWN_WORKING_SET`] when unknown). A stream over it finds none of its lines left
/// from the pass before; the plans cap it by their memory budget.
#[must_use]
pub fn working_set(llc: Option<u64>) -> u64 {
    llc.map_or(UNKNOWN_WORKING_SET, |b| {
        b.saturating_mul(WORKING_SET_FACTOR)
            .clamp(MIN_WORKING_SET, MAX_WORKING_SET)
    })
}

/// Whether transparent huge pages can be asked for (`always` or `madvise` mode).
#[must_use]
pub fn thp_available() -> bool {
    topoprobe_files::read_string_lossy(
        std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled"),
        topoprobe_files::Rules::file(topoprobe_model::limits::MAX_SYSFS_FILE_BYTES),
    )
    .is_ok_and(|s| s.contains("[always]") || s.contains("[madvise]"))
}

/// Plans the measurement on `shape` ([`plan::plan_memory`]) and runs it.
///
/// # Errors
///
/// As [`run_plan`].
pub fn measure_memory(
    shape: &Shape,
    opts: &MemOptions,
    progress: impl FnMut(&str),
) -> Result<MemReport, MemError> {
    let mut p = plan::plan_memory(shape, opts);
    run_plan(shape, &mut p, opts, progress)
}

/// Runs `plan` on this machine, step by step, recording what each spent; a step that no
/// longer fits the time left of the budget is left out and said (the first latency and
/// bandwidth always run). `progress` is called with each step's name before it runs.
///
/// # Errors
///
/// [`MemError`] from the first measurement that fails.
pub fn run_plan(
    shape: &Shape,
    plan: &mut MemPlan,
    opts: &MemOptions,
    mut progress: impl FnMut(&str),
) -> Result<MemReport, MemError> {
    let started = Instant::now();
    // Learn the machine's speed before committing to large work; a machine slower than
    // the plan's rates is planned again at its own.
    if plan.speed == pace::Speed::assumed() && !plan.steps.is_empty() {
        let cpus = shape
            .sockets
            .first()
            .map(|s| s.cpus.clone())
            .unwrap_or_default();
        let speed = pace::calibrate(&cpus);
        if speed.slower_than_assumed() {
            let budget = plan.budget;
            let left = opts
                .budget
                .with_seconds((budget.seconds - speed.seconds).max(0.0));
            let mut again = plan::plan_memory_at(
                shape,
                &MemOptions {
                    budget: left,
                    ..opts.clone()
                },
                &speed,
            );
            again.budget = budget;
            again.notes.push(speed_note(&speed));
            *plan = again;
        } else {
            plan.speed = speed;
        }
    }
    let mut pace = pace::Pace::new();
    let mut report = MemReport {
        latency: Vec::new(),
        bandwidth: Vec::new(),
        local_nodes: Vec::new(),
        notes: plan.notes.clone(),
        warnings: plan.warnings.clone(),
        latency_bytes: plan.latency_bytes,
        evicted: plan.evicts,
        bandwidth_bytes: plan.bandwidth_bytes,
        non_temporal: plan.non_temporal,
        pairs: plan.pairs,
        cost: CostPlan::new(plan.budget),
        node_matrix: None,
        mixes: Vec::new(),
        saturation: Vec::new(),
        loaded_latency: Vec::new(),
    };
    let mut matrix = (!plan.initiators.is_empty()).then(|| NodeMatrix {
        initiators: plan.initiators.clone(),
        targets: plan.targets.clone(),
        latency_ns: vec![vec![None; plan.targets.len()]; plan.initiators.len()],
        read_gbps: vec![vec![None; plan.targets.len()]; plan.initiators.len()],
        pairs_measured: 0,
        pairs_total: plan.matrix_pairs.1,
    });
    if !thp_available() {
        report
            .notes
            .push("transparent huge pages are off: latencies include 4 KiB page walks".into());
    }
    let kernels = [Kernel::Read, Kernel::Write, Kernel::Copy];
    // What every bandwidth step streams over: the plan's working set on its node.
    let (isa, bytes) = (opts.isa, plan.bandwidth_bytes);
    let streams = |kernels: Vec<Kernel>, non_temporal: bool, node: Option<u32>, rule| Streams {
        kernels,
        isa,
        non_temporal,
        bytes,
        node,
        rule,
    };
    let read = |node: Option<u32>, rule| bandwidth::Stream {
        kernel: Kernel::Read,
        isa,
        non_temporal: false,
        bytes,
        node,
        rule,
    };
    let mut skipped = 0;
    for i in 0..plan.steps.len() {
        let step = &plan.steps[i];
        let elapsed = started.elapsed().as_secs_f64();
        let kind = step_kind(&step.work);
        let usable = plan.budget.seconds * (1.0 - HEADROOM);
        if !step.required && !pace.fits(&kind, step.cost.seconds, elapsed, usable) {
            skipped += 1;
            plan.steps[i].cost.note = Some(format!(
                "left out: {elapsed:.1} s of the {} budget were spent before it, and it would \
                 take about {:.2} s at this machine's pace",
                crate::plan::secs(plan.budget.seconds),
                pace.expect(&kind, step.cost.seconds)
            ));
            continue;
        }
        // The rounds of a step stop within the time left (at least one round each).
        let left = (usable - elapsed).max(0.0);
        let rule = |kernels: usize| {
            let mut r = plan.rule(step, kernels);
            let most = left / kernels.max(1) as f64;
            if most < r.max_seconds {
                r.max_seconds = most;
                r.min_rounds = 1;
            }
            r
        };
        progress(&step.cost.what);
        let t = Instant::now();
        // The largest share of the step's time one of its threads waited for its CPU.
        let mut waited: Option<f64> = None;
        match &step.work {
            MemWork::Latency {
                cpu,
                socket,
                node,
                bind,
            } => {
                let mut l = latency(
                    *cpu,
                    bind.then_some(*node),
                    plan.latency_bytes,
                    plan.evicts,
                    opts.scattered,
                )?;
                l.socket = *socket;
                l.node = *node;
                waited = l.waited;
                report.latency.push(l);
            }
            MemWork::Bandwidth {
                socket,
                node,
                bind,
                cpus,
            } => {
                let figures = bandwidth::measure_kernels(
                    cpus,
                    &streams(
                        kernels.to_vec(),
                        plan.non_temporal,
                        bind.then_some(*node),
                        rule(kernels.len()),
                    ),
                )?;
                waited = most_waited(figures.iter().map(|f| f.waited));
                let f = |k: usize| figures.get(k).copied();
                let (read, write, copy) = (f(0), f(1), f(2));
                let all = [read, write, copy];
                report.bandwidth.push(BandwidthResult {
                    socket: *socket,
                    node: *node,
                    threads: cpus.len(),
                    read: read.map_or(f64::NAN, |x| x.value),
                    write: write.map_or(f64::NAN, |x| x.value),
                    copy: copy.map_or(f64::NAN, |x| x.value),
                    spread: all.iter().flatten().map(|x| x.spread).fold(0.0, f64::max),
                    rounds: all.iter().flatten().map(|x| x.rounds).max().unwrap_or(0),
                });
            }
            MemWork::Loaded {
                socket,
                node,
                local,
                bind,
                chase_cpu,
                loaders,
                loader_bytes,
            } => {
                let mut curve = loaded::sweep(&loaded::Sweep {
                    chase_cpu: *chase_cpu,
                    loaders: loaders.clone(),
                    node: bind.then_some(*node),
                    chase_bytes: plan.latency_bytes,
                    loader_bytes: *loader_bytes,
                    evict: plan.evicts,
                    isa: opts.isa,
                    delays: loaded::DELAYS.to_vec(),
                })?;
                curve.socket = *socket;
                curve.node = *node;
                curve.local = *local;
                report.loaded_latency.push(curve);
            }
            MemWork::Mixes {
                socket,
                node,
                bind,
                cpus,
            } => {
                for non_temporal in [false, true] {
                    let mixes: Vec<Mix> = Mix::ALL
                        .into_iter()
                        .filter(|m| !non_temporal || m.streams().1 > 0)
                        .collect();
                    let figures = bandwidth::measure_kernels(
                        cpus,
                        &streams(
                            mixes.iter().map(|&m| mixes::kernel(m)).collect(),
                            non_temporal,
                            bind.then_some(*node),
                            rule(full_plan::MIX_KERNELS),
                        ),
                    )?;
                    waited = most_waited(figures.iter().map(|f| f.waited).chain([waited]));
                    for (mix, f) in mixes.into_iter().zip(figures) {
                        report.mixes.push(MixBandwidth {
                            socket: *socket,
                            node: *node,
                            mix,
                            non_temporal,
                            threads: cpus.len(),
                            gbps: f.value,
                        });
                    }
                }
            }
            MemWork::Saturation {
                socket,
                node,
                bind,
                cpus,
                counts,
            } => {
                let mut points = Vec::new();
                for &t in counts {
                    let f = bandwidth::measure(
                        &cpus[..t.min(cpus.len())],
                        &read(bind.then_some(*node), rule(counts.len())),
                    )?;
                    waited = most_waited([waited, f.waited]);
                    points.push((t, f.value));
                }
                report
                    .saturation
                    .push(Saturation::of(*socket, *node, points));
            }
            MemWork::MatrixLatency {
                initiator,
                cpu,
                node,
                bind,
            } => {
                let l = latency(
                    *cpu,
                    bind.then_some(*node),
                    plan.latency_bytes,
                    plan.evicts,
                    false,
                )?;
                waited = l.waited;
                if let Some(m) = matrix.as_mut() {
                    if let Some(t) = m.targets.iter().position(|x| x == node) {
                        m.latency_ns[*initiator][t] = Some(l.ns());
                        m.pairs_measured += 1;
                    }
                }
            }
            MemWork::MatrixRead {
                initiator,
                node,
                bind,
                cpus,
            } => {
                let f = bandwidth::measure(cpus, &read(bind.then_some(*node), rule(1)))?;
                waited = f.waited;
                if let Some(m) = matrix.as_mut() {
                    if let Some(t) = m.targets.iter().position(|x| x == node) {
                        m.read_gbps[*initiator][t] = Some(f.value);
                    }
                }
            }
        }
        if let Some(share) = waited.filter(|&w| w > WAIT_SHARE) {
            report.warnings.push(format!(
                "not trustworthy: {}: its threads waited {:.0}% of the time for their CPUs \
                 (other programs ran on them)",
                plan.steps[i].cost.what,
                share * 100.0
            ));
        }
        let spent = t.elapsed().as_secs_f64();
        pace.record(&kind, plan.steps[i].cost.seconds, spent);
        let cost = &mut plan.steps[i].cost;
        cost.record(spent, topoprobe_sys::usage::peak_resident_bytes());
    }
    if skipped > 0 {
        report.notes.push(format!(
            "{} left out: the machine was slower than planned and the {} budget ran out",
            topoprobe_model::format::plural(skipped, "measurement"),
            crate::plan::secs(plan.budget.seconds)
        ));
    }
    for (si, socket) in shape.sockets.iter().enumerate() {
        let best = report
            .latency
            .iter()
            .filter(|l| l.socket == si)
            .min_by(|a, b| a.ns().total_cmp(&b.ns()))
            .map(|l| l.node);
        if let Some(node) = best {
            report.local_nodes.push((si, node));
            let measured_all = report.latency.iter().filter(|l| l.socket == si).count()
                >= shape.nodes.len().max(1);
            if let Some(os_node) = socket.local_node.filter(|_| measured_all) {
                if os_node != node {
                    report.notes.push(format!(
                        "socket {si}: the OS says node {os_node} is local, measurement says node {node}"
                    ));
                }
            }
        }
    }
    report.node_matrix = matrix;
    report.cost = plan.cost();
    // Every figure against the others of this run: one that cannot be right is flagged.
    plausible::check(&mut report);
    Ok(report)
}

/// The kind of a step, as [`pace::Pace`] learns its pace: steps of one kind cost alike.
fn step_kind(work: &MemWork) -> String {
    match work {
        MemWork::Latency { .. } => "latency".into(),
        MemWork::Bandwidth { cpus, .. } => format!("bandwidth {}", cpus.len()),
        MemWork::Loaded { .. } => "loaded".into(),
        MemWork::Mixes { .. } => "mixes".into(),
        MemWork::Saturation { .. } => "saturation".into(),
        MemWork::MatrixLatency { .. } => "matrix latency".into(),
        MemWork::MatrixRead { cpus, .. } => format!("matrix read {}", cpus.len()),
    }
}

/// What the calibration found, for the notes.
fn speed_note(s: &pace::Speed) -> String {
    let at_once = if s.parallel.is_finite() {
        format!(", {:.1} threads at once", s.parallel)
    } else {
        String::new()
    };
    format!(
        "planned at this machine's speed, slower than the plan's rates (measured in {:.2} s): \
         first touch {:.0} MB/s, a thread streams {:.1} GB/s, {:.0} ns a dependent load, \
         {:.1} ms to start a thread{at_once}",
        s.seconds,
        (1u64 << 30) as f64 / s.touch_s_per_gib / 1e6,
        s.thread_gbps,
        s.chase_ns,
        s.thread_start_s * 1e3
    )
}

/// The largest of the shares known.
fn most_waited(shares: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    shares.into_iter().flatten().reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_chase_sharing_its_cpu_with_a_busy_thread_says_it_waited() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let Some(cpu) = topoprobe_sys::affinity::allowed_cpus()
            .ok()
            .and_then(|s| s.iter().next())
        else {
            return;
        };
        let stop = AtomicBool::new(false);
        let quiet = latency(cpu, None, 8 * MIB, false, false).expect("latency");
        let busy = std::thread::scope(|s| {
            let spinner = s.spawn(|| {
                let pinned = topoprobe_sys::affinity::pin_current_thread(cpu).is_ok();
                while pinned && !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
                pinned
            });
            let l = latency(cpu, None, 8 * MIB, false, false);
            // Stopped before anything can fail, so that the scope never waits on it.
            stop.store(true, Ordering::Relaxed);
            spinner.join().unwrap_or(false).then_some(l)
        });
        let busy = busy.transpose().expect("latency");
        let (Some(busy), Some(quiet_share)) = (busy, quiet.waited) else {
            return; // No run delays from this kernel, or the CPU could not be shared.
        };
        assert!((0.0..=1.0).contains(&quiet_share), "{quiet_share}");
        let share = busy.waited.expect("a share");
        // Two runnable threads on one CPU: the chase waits about half of its time.
        assert!(share > WAIT_SHARE, "{share}");
    }

    #[test]
    fn the_cache_sized_working_set_is_six_last_level_caches_within_its_bounds() {
        assert_eq!(working_set(Some(32 * MIB)), 192 * MIB);
        assert_eq!(working_set(Some(2 * MIB)), MIN_WORKING_SET);
        assert_eq!(working_set(Some(768 * MIB)), MAX_WORKING_SET);
        assert_eq!(working_set(None), UNKNOWN_WORKING_SET);
    }
}
