//! Running a memory plan ([`run_plan`]): the machine's speed learnt first (a slower one is
//! planned again), then each step in order while it fits the time left of the budget, its
//! figures into the [`MemReport`], then each socket's local node by measurement and the
//! plausibility checks.

use std::time::Instant;

use topoprobe_model::{CostPlan, Mix, MixBandwidth, NodeMatrix, Saturation};

use super::bandwidth::{self, Streams};
use super::kernel_kinds::{Isa, Kernel};
use super::steps::{MemPlan, MemStep, MemWork};
use super::{
    full_plan, latency, loaded, mixes, most_waited, pace, plan, plausible, thp_available,
    BandwidthResult, MemError, MemOptions, MemReport, HEADROOM, WAIT_SHARE,
};
use crate::plan::Shape;
use crate::steady::SteadyRule;

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
    calibrate(shape, plan, opts);
    let mut pace = pace::Pace::new();
    let mut run = Run::new(plan, opts);
    if !thp_available() {
        run.report
            .notes
            .push("transparent huge pages are off: latencies include 4 KiB page walks".into());
    }
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
        let rule = |kernels: usize| step_rule(plan, step, left, kernels);
        progress(&step.cost.what);
        let t = Instant::now();
        // The largest share of the step's time one of its threads waited for its CPU.
        let waited = run.step(&step.work, &rule)?;
        if let Some(share) = waited.filter(|&w| w > WAIT_SHARE) {
            run.report.warnings.push(format!(
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
    let mut report = run.report;
    if skipped > 0 {
        report.notes.push(format!(
            "{} left out: the machine was slower than planned and the {} budget ran out",
            topoprobe_model::format::plural(skipped, "measurement"),
            crate::plan::secs(plan.budget.seconds)
        ));
    }
    local_nodes(shape, &mut report);
    report.node_matrix = run.matrix;
    report.cost = plan.cost();
    // Every figure against the others of this run: one that cannot be right is flagged.
    plausible::check(&mut report);
    Ok(report)
}

/// Learns the machine's speed before committing to large work: a machine slower than the
/// rates of `plan` has it planned again at its own, within the time the calibration left.
fn calibrate(shape: &Shape, plan: &mut MemPlan, opts: &MemOptions) {
    if plan.speed != crate::plan::Speed::assumed() || plan.steps.is_empty() {
        return;
    }
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
        *plan = again;
    } else {
        plan.speed = speed;
    }
}

/// The rounds rule of `step`'s bandwidth `kernels`: its plan's, its time limit cut to
/// the `left` seconds of the budget shared by the kernels (then at least one round each).
fn step_rule(plan: &MemPlan, step: &MemStep, left: f64, kernels: usize) -> SteadyRule {
    let mut r = plan.rule(step, kernels);
    let most = left / kernels.max(1) as f64;
    if most < r.max_seconds {
        r.max_seconds = most;
        r.min_rounds = 1;
    }
    r
}

/// Each socket's local node by measurement (the lowest latency) into `report`, with a
/// note where the OS says another, once every node was measured from the socket.
fn local_nodes(shape: &Shape, report: &mut MemReport) {
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
}

/// A plan's run: what its steps measure with, and the report and node matrix they fill.
struct Run {
    /// Instruction set of the bandwidth kernels.
    isa: Isa,
    /// Whether the latencies also chase the scattered buffer.
    scattered: bool,
    /// Latency buffer, bytes.
    latency_bytes: u64,
    /// Whether the latency buffer is evicted before its chase.
    evicts: bool,
    /// Bandwidth working set of all threads together, bytes.
    bandwidth_bytes: u64,
    /// Whether write and copy use non-temporal stores.
    non_temporal: bool,
    /// The figures so far.
    report: MemReport,
    /// The node × node matrices so far (`None` when the plan has no initiator).
    matrix: Option<NodeMatrix>,
}

impl Run {
    /// The run of `plan` as `opts` asks: an empty report with the plan's sizes, notes and
    /// warnings, and empty matrices of its initiators and targets.
    fn new(plan: &MemPlan, opts: &MemOptions) -> Self {
        let report = MemReport {
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
        let matrix = (!plan.initiators.is_empty()).then(|| NodeMatrix {
            initiators: plan.initiators.clone(),
            targets: plan.targets.clone(),
            latency_ns: vec![vec![None; plan.targets.len()]; plan.initiators.len()],
            read_gbps: vec![vec![None; plan.targets.len()]; plan.initiators.len()],
            pairs_measured: 0,
            pairs_total: plan.matrix_pairs.1,
        });
        Self {
            isa: opts.isa,
            scattered: opts.scattered,
            latency_bytes: plan.latency_bytes,
            evicts: plan.evicts,
            bandwidth_bytes: plan.bandwidth_bytes,
            non_temporal: plan.non_temporal,
            report,
            matrix,
        }
    }

    /// What every bandwidth step streams over: the plan's working set on `node`.
    fn streams(
        &self,
        kernels: Vec<Kernel>,
        non_temporal: bool,
        node: Option<u32>,
        rule: SteadyRule,
    ) -> Streams {
        Streams {
            kernels,
            isa: self.isa,
            non_temporal,
            bytes: self.bandwidth_bytes,
            node,
            rule,
        }
    }

    /// The read stream of the saturation and matrix steps over the plan's working set on
    /// `node`.
    fn read(&self, node: Option<u32>, rule: SteadyRule) -> bandwidth::Stream {
        bandwidth::Stream {
            kernel: Kernel::Read,
            isa: self.isa,
            non_temporal: false,
            bytes: self.bandwidth_bytes,
            node,
            rule,
        }
    }

    /// Measures `work`, its bandwidth kernels under `rule` (of their count), into the
    /// report; returns the largest share of its time one of its threads waited for its
    /// CPU.
    ///
    /// # Errors
    ///
    /// [`MemError`] when the measurement fails.
    fn step(
        &mut self,
        work: &MemWork,
        rule: &dyn Fn(usize) -> SteadyRule,
    ) -> Result<Option<f64>, MemError> {
        match work {
            MemWork::Latency {
                cpu,
                socket,
                node,
                bind,
            } => self.latency(*cpu, *socket, bind.then_some(*node), *node),
            MemWork::Bandwidth {
                socket,
                node,
                bind,
                cpus,
            } => self.bandwidth(*socket, *node, *bind, cpus, rule),
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
                    chase_bytes: self.latency_bytes,
                    loader_bytes: *loader_bytes,
                    evict: self.evicts,
                    isa: self.isa,
                    delays: loaded::DELAYS.to_vec(),
                })?;
                curve.socket = *socket;
                curve.node = *node;
                curve.local = *local;
                self.report.loaded_latency.push(curve);
                Ok(None)
            }
            MemWork::Mixes {
                socket,
                node,
                bind,
                cpus,
            } => self.mixes(*socket, *node, *bind, cpus, rule),
            MemWork::Saturation {
                socket,
                node,
                bind,
                cpus,
                counts,
            } => self.saturation(*socket, *node, *bind, cpus, counts, rule),
            MemWork::MatrixLatency {
                initiator,
                cpu,
                node,
                bind,
            } => self.matrix_latency(*initiator, *cpu, *node, *bind),
            MemWork::MatrixRead {
                initiator,
                node,
                bind,
                cpus,
            } => {
                let f = bandwidth::measure(cpus, &self.read(bind.then_some(*node), rule(1)))?;
                if let Some(m) = self.matrix.as_mut() {
                    if let Some(t) = m.targets.iter().position(|x| x == node) {
                        m.read_gbps[*initiator][t] = Some(f.value);
                    }
                }
                Ok(f.waited)
            }
        }
    }

    /// The latency of `cpu` to `node` (bound to `bound`), of socket `socket`.
    fn latency(
        &mut self,
        cpu: u32,
        socket: usize,
        bound: Option<u32>,
        node: u32,
    ) -> Result<Option<f64>, MemError> {
        let mut l = latency(cpu, bound, self.latency_bytes, self.evicts, self.scattered)?;
        l.socket = socket;
        l.node = node;
        let waited = l.waited;
        self.report.latency.push(l);
        Ok(waited)
    }

    /// Read, write and copy of `cpus` of `socket` to `node` (bound when `bind`).
    fn bandwidth(
        &mut self,
        socket: usize,
        node: u32,
        bind: bool,
        cpus: &[u32],
        rule: &dyn Fn(usize) -> SteadyRule,
    ) -> Result<Option<f64>, MemError> {
        let kernels = [Kernel::Read, Kernel::Write, Kernel::Copy];
        let figures = bandwidth::measure_kernels(
            cpus,
            &self.streams(
                kernels.to_vec(),
                self.non_temporal,
                bind.then_some(node),
                rule(kernels.len()),
            ),
        )?;
        let waited = most_waited(figures.iter().map(|f| f.waited));
        let f = |k: usize| figures.get(k).copied();
        let (read, write, copy) = (f(0), f(1), f(2));
        let all = [read, write, copy];
        self.report.bandwidth.push(BandwidthResult {
            socket,
            node,
            threads: cpus.len(),
            read: read.map_or(f64::NAN, |x| x.value),
            write: write.map_or(f64::NAN, |x| x.value),
            copy: copy.map_or(f64::NAN, |x| x.value),
            spread: all.iter().flatten().map(|x| x.spread).fold(0.0, f64::max),
            rounds: all.iter().flatten().map(|x| x.rounds).max().unwrap_or(0),
        });
        Ok(waited)
    }

    /// Every read/write mix of `cpus` of `socket` to `node` (bound when `bind`), with
    /// regular stores, then the written ones with non-temporal stores.
    fn mixes(
        &mut self,
        socket: usize,
        node: u32,
        bind: bool,
        cpus: &[u32],
        rule: &dyn Fn(usize) -> SteadyRule,
    ) -> Result<Option<f64>, MemError> {
        let mut waited = None;
        for non_temporal in [false, true] {
            let mixes: Vec<Mix> = Mix::ALL
                .into_iter()
                .filter(|m| !non_temporal || m.streams().1 > 0)
                .collect();
            let figures = bandwidth::measure_kernels(
                cpus,
                &self.streams(
                    mixes.iter().map(|&m| mixes::kernel(m)).collect(),
                    non_temporal,
                    bind.then_some(node),
                    rule(full_plan::MIX_KERNELS),
                ),
            )?;
            waited = most_waited(figures.iter().map(|f| f.waited).chain([waited]));
            for (mix, f) in mixes.into_iter().zip(figures) {
                self.report.mixes.push(MixBandwidth {
                    socket,
                    node,
                    mix,
                    non_temporal,
                    threads: cpus.len(),
                    gbps: f.value,
                });
            }
        }
        Ok(waited)
    }

    /// The read bandwidth of the first `counts` of `cpus` of `socket` to `node` (bound
    /// when `bind`), count by count.
    fn saturation(
        &mut self,
        socket: usize,
        node: u32,
        bind: bool,
        cpus: &[u32],
        counts: &[usize],
        rule: &dyn Fn(usize) -> SteadyRule,
    ) -> Result<Option<f64>, MemError> {
        let mut waited = None;
        let mut points = Vec::new();
        for &t in counts {
            let f = bandwidth::measure(
                &cpus[..t.min(cpus.len())],
                &self.read(bind.then_some(node), rule(counts.len())),
            )?;
            waited = most_waited([waited, f.waited]);
            points.push((t, f.value));
        }
        self.report
            .saturation
            .push(Saturation::of(socket, node, points));
        Ok(waited)
    }

    /// The idle latency of `cpu` of `initiator` to `node` (bound when `bind`), into the
    /// matrix.
    fn matrix_latency(
        &mut self,
        initiator: usize,
        cpu: u32,
        node: u32,
        bind: bool,
    ) -> Result<Option<f64>, MemError> {
        let l = latency(
            cpu,
            bind.then_some(node),
            self.latency_bytes,
            self.evicts,
            false,
        )?;
        if let Some(m) = self.matrix.as_mut() {
            if let Some(t) = m.targets.iter().position(|&x| x == node) {
                m.latency_ns[initiator][t] = Some(l.ns());
                m.pairs_measured += 1;
            }
        }
        Ok(l.waited)
    }
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
