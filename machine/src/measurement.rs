//! Measuring this machine into a description: latencies, SMT probe, inference with the
//! OS's hints, the OS's memory nodes, the comparison with the OS view, the plugins'
//! sections, provenance — one call.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use topoprobe_infer::{InferError, InferOptions};
use topoprobe_measure::os;
use topoprobe_measure::pair::PairProbe;
use topoprobe_measure::plan::Shape;
use topoprobe_measure::smt::{self, SmtProbe, SmtRun, SmtTest};
use topoprobe_model::{
    format_cpu_list, Budget, CostPlan, LatencyUnit, NodeId, Origin, OsView, PairLatency, SocketId,
    Source, Topology, Warning, WarningKind,
};
use topoprobe_sys::CpuSet;

use crate::deadlines::{Clock, WallClock};
use crate::hints;
use crate::pairs::{self, MeasuredTable, Repetitions, Sampling};
use crate::plan::{self as planning, MeasurePlan};
use crate::plugins::{self, Plugin};
use crate::stability::{self, Monitor};
use crate::{description, stamp, MachineError, Progress};

mod watch;

use watch::{Checks, SmtRecord};

/// SMT candidate pairs tested at most.
const SMT_PAIRS: usize = 3;

/// What [`measure_this_machine`] measures and how.
#[derive(Debug, Clone)]
pub struct MeasureOptions {
    /// CPUs to measure (each must be available to this process); `None`: every CPU this
    /// process may run on.
    pub cpus: Option<CpuSet>,
    /// How much to repeat each pair.
    pub repetitions: Repetitions,
    /// Which pairs to measure.
    pub sampling: Sampling,
    /// The plugins whose sections are added ([`plugins::parse`]).
    pub plugins: Vec<Plugin>,
    /// Hints for the inference (sockets, SMT, GHz); the source, units, CPU numbers and
    /// machine identity are set by the measurement.
    pub hints: InferOptions,
    /// Where the description is saved (`None`: [`description::default_path`]).
    pub path: Option<PathBuf>,
    /// Whether to watch for vCPUs the host moves ([`crate::stability`]): re-measure
    /// reference pairs between the phases, repeat the SMT probe at the end and compare
    /// with the saved description. `None`: in virtual machines only (the `hypervisor` CPU
    /// flag).
    pub watch_stability: Option<bool>,
    /// Time and memory the whole measurement may take (`None`:
    /// [`planning::default_budget`] of the plugins: 10 s, or 60 s with the slow plugins,
    /// and 256 MiB).
    pub budget: Option<Budget>,
    /// When the budget's clock started: a command passes its process's start
    /// ([`topoprobe_sys::started::instant`]), so that loading the program, reading the OS
    /// view and planning are spent from the budget, as the user's wall clock counts them
    /// (`None`: when [`measure_this_machine`] is called).
    pub started: Option<Instant>,
    /// How the budget was chosen, for the plan (`memory budget …: 3 × the last-level
    /// cache …`, see [`crate::probes::budget_here`]); `None`: not said.
    pub budget_basis: Option<String>,
}

impl Default for MeasureOptions {
    /// Every CPU, sparse sampling, the default plugins, no hints, the default place.
    fn default() -> Self {
        Self {
            cpus: None,
            repetitions: Repetitions::default(),
            sampling: Sampling::default(),
            plugins: plugins::parse(plugins::DEFAULT).unwrap_or_default(),
            hints: InferOptions::default(),
            path: None,
            watch_stability: None,
            budget: None,
            started: None,
            budget_basis: None,
        }
    }
}

impl MeasureOptions {
    /// The budget: the one given, else the default of the plugins.
    #[must_use]
    pub fn budget(&self) -> Budget {
        self.budget
            .unwrap_or_else(|| planning::default_budget(&self.plugins))
    }
}

/// A measured description and how it was made.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// The description (validated: every warning and unresolved level recorded in it).
    pub topology: Topology,
    /// Where it is to be saved (its directory exists).
    pub path: PathBuf,
    /// The CPUs measured.
    pub cpus: Vec<u32>,
    /// Distinct pairs measured.
    pub pairs_measured: usize,
    /// Wall time of the latency measurement.
    pub elapsed: Duration,
}

impl Measurement {
    /// Number of unordered pairs of the measured CPUs.
    #[must_use]
    pub fn pairs_total(&self) -> usize {
        self.cpus.len() * self.cpus.len().saturating_sub(1) / 2
    }

    /// Writes the description to [`Measurement::path`] atomically.
    ///
    /// # Errors
    ///
    /// [`MachineError::Save`] when the file cannot be written.
    pub fn save(&self) -> Result<(), MachineError> {
        description::save(&self.topology, &self.path).map_err(|source| MachineError::Save {
            path: self.path.clone(),
            source,
        })
    }
}

/// Sets the memory nodes as the OS reports them: every OS node (CPU-less ones included),
/// and as each socket's local node the one holding most of its CPUs. Measuring which node
/// is local (memory latency) is the memory probe's job; this records the OS's claim.
fn apply_os_nodes(
    topo: &mut Topology,
    os: &OsView,
    free: &dyn Fn(u32) -> Option<u64>,
) -> Result<(), MachineError> {
    let Some(nodes) = &os.nodes else {
        return Ok(());
    };
    if nodes.is_empty() {
        return Ok(());
    }
    let index_of = |cpu: u32| nodes.iter().position(|n| n.cpus.contains(&cpu));
    let local: Vec<Option<NodeId>> = (0..topo.num_sockets())
        .map(|s| {
            let mut count = vec![0_usize; nodes.len()];
            for c in topo.socket_contexts(SocketId(s)) {
                if let Some(i) = index_of(topo.contexts()[c.0].os_id) {
                    count[i] += 1;
                }
            }
            let (best, n) = count
                .iter()
                .enumerate()
                .max_by_key(|&(i, n)| (*n, std::cmp::Reverse(i)))?;
            (*n > 0).then_some(NodeId(best))
        })
        .collect();
    topo.set_nodes(nodes.len(), &local)?;
    for (i, n) in nodes.iter().enumerate() {
        topo.set_node_identity(NodeId(i), Some(n.id), n.memory_bytes)?;
        topo.set_node_free(NodeId(i), free(n.id))?;
    }
    topo.provenance_mut()
        .parameters
        .insert("nodes".to_string(), "from the OS".to_string());
    Ok(())
}

/// Runs the SMT probe on the table's candidate pairs (OS CPU numbers in the results)
/// within `seconds` on `clock` ([`smt::probe_within`]): pairs the time cannot hold are left
/// out, runs are shortened, and the notes say so.
fn smt_probe(
    table: &MeasuredTable,
    cpus: &[u32],
    seconds: f64,
    clock: &dyn Clock,
    smt: &mut SmtFn<'_>,
) -> Result<SmtProbe, MachineError> {
    let pairs: Vec<(u32, u32)> = smt::candidates(&table.collected.latency, SMT_PAIRS)
        .into_iter()
        .map(|(a, b)| (cpus[a], cpus[b]))
        .collect();
    smt::probe_within(&pairs, seconds, &|| clock.now(), smt)
        .map_err(|(a, b, message)| MachineError::Smt { a, b, message })
}

/// Records how the description was measured.
fn record(
    topo: &mut Topology,
    opts: &MeasureOptions,
    cpus: &[u32],
    table: &MeasuredTable,
    smt_tests: &[SmtTest],
) {
    let n = cpus.len();
    let p = topo.provenance_mut();
    let mut set = |k: &str, v: String| {
        p.parameters.insert(k.to_string(), v);
    };
    set("cpus", format_cpu_list(cpus));
    set("pairs_measured", table.collected.pairs.to_string());
    set("pairs_total", (n * (n - 1) / 2).to_string());
    set(
        "measure_seconds",
        format!("{:.3}", table.elapsed.as_secs_f64()),
    );
    set(
        "strategy",
        if opts.sampling.full { "full" } else { "sparse" }.to_string(),
    );
    if let Some(r) = opts.repetitions.reps {
        set("reps", r.to_string());
    }
    if let Some(s) = opts.repetitions.max_stdev_percent {
        set("max_stdev_percent", s.to_string());
    }
    if let Some(s) = opts.sampling.seed {
        set("seed", s.to_string());
    }
    let smt_text: Vec<String> = smt_tests
        .iter()
        .map(|t| format!("{}-{}: {:.2}x", t.a, t.b, t.slowdown))
        .collect();
    set("smt_probe", smt_text.join(", "));
}

/// Records what the live pair probe saw: its timer, retried pairs, frequency ramps.
fn record_probe(topo: &mut Topology, probe: &PairProbe) {
    let p = topo.provenance_mut();
    p.parameters
        .insert("timer".to_string(), probe.timer().describe());
    p.parameters
        .insert("pairs_retried".to_string(), probe.retried().to_string());
    if let Some(worst) = probe.ramps().iter().copied().reduce(f64::max) {
        topo.validation_mut().warnings.push(Warning::new(
            WarningKind::FrequencyRamp,
            format!(
                "{} pairs started up to {:.0}% slower during warm-up (DVFS ramp); they were measured after it",
                probe.ramps().len(),
                (worst - 1.0) * 100.0
            ),
        ));
    }
}

/// The place of the description, its directory created (checked before measuring rather
/// than after).
fn prepare_path(path: Option<&PathBuf>) -> Result<PathBuf, MachineError> {
    let path = match path {
        Some(p) => p.clone(),
        None => description::default_path()?,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| MachineError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    Ok(path)
}

/// The SMT probe on two OS CPUs within the seconds given.
pub(crate) type SmtFn<'a> = dyn FnMut(u32, u32, f64) -> Result<SmtRun, String> + 'a;
/// The plugins' run: fills the sections of a topology within the seconds after the start
/// of the budget given, reporting each step; returns each plugin's plan with what its steps
/// spent.
pub(crate) type PluginsFn<'a> = dyn FnMut(&mut Topology, f64, &mut dyn FnMut(Progress<'_>)) -> Result<Vec<CostPlan>, MachineError>
    + 'a;

/// What a measurement knows of the machine besides its probes.
pub(crate) struct Context {
    /// The OS view, or why it could not be read.
    pub(crate) os: Result<OsView, String>,
    /// Whether to watch for moving vCPUs.
    pub(crate) watch: bool,
    /// The description the last run saved for this machine, when there is one.
    pub(crate) saved: Option<Topology>,
    /// Free memory of an OS node now.
    pub(crate) free: Box<dyn Fn(u32) -> Option<u64>>,
}

/// The description of the measured table: the inference, held against the OS's structure
/// where there is one. Where the latencies say nothing (an emulated or oversubscribed
/// guest, a flat table) the OS's structure stands, flagged, and a difference needs a
/// latency gap; where some CPUs have no latency at all (the budget ran out on a loaded
/// machine before they were measured), the OS's structure stands with the latencies that
/// were measured.
///
/// # Errors
///
/// [`MachineError::Infer`] when the table cannot be inferred and there is no OS structure
/// of its CPUs to fall back on.
fn infer_or_os(
    table: &topoprobe_infer::Collected,
    opts: &InferOptions,
    os_view: Option<&OsView>,
) -> Result<Topology, MachineError> {
    match (table.infer(opts), os_view) {
        (Ok(topo), Some(v)) => Ok(topoprobe_infer::anchor::anchor_to_os(topo, v)),
        (Ok(topo), None) => Ok(topo),
        (Err(e @ InferError::Unmeasured(_)), Some(v)) => {
            topoprobe_infer::anchor::os_structure_of_partial(table, v, opts)
                .ok_or(MachineError::Infer(e))
        }
        (Err(e), _) => Err(MachineError::Infer(e)),
    }
}

/// The measurement itself, on whatever probes it is given (the live ones, or scripted ones
/// in tests): the table, the SMT probe, the inference with the OS's hints, the OS's nodes
/// and differences, the plugins, and, when watching, the reference pairs between phases,
/// the SMT probe again at the end and the comparison with the saved description. Its
/// deadlines are read on `clock`: seconds since the start of the budget.
#[allow(clippy::too_many_arguments)]
pub(crate) fn measure_with(
    opts: &MeasureOptions,
    cpus: &[u32],
    ctx: &Context,
    plan: &MeasurePlan,
    clock: &dyn Clock,
    probe: &mut dyn PairLatency,
    smt: &mut SmtFn<'_>,
    plugins: &mut PluginsFn<'_>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(Topology, MeasuredTable), MachineError> {
    let start = clock.now();
    progress(Progress::Plan(&plan.cost));
    let os_view = ctx.os.as_ref().ok();
    let hint = os_view.map(|os| pairs::sibling_hint(os, cpus));
    let (table, plan) = collect_pairs(plan, start, opts.sampling, hint, clock, probe, progress)?;
    let plan = &plan;
    let pairs_peak = topoprobe_sys::usage::peak_resident_bytes();
    let monitor = ctx
        .watch
        .then(|| Monitor::for_table(&table.collected, cpus));
    let mut checks = Checks::new(monitor, plan);
    checks.check(probe, "after pairs");
    progress(Progress::Step("SMT probe"));
    let smt_started = Instant::now();
    let smt_time = plan
        .smt_share
        .min((plan.plugins_end - clock.now()).max(0.0));
    let smt_first = smt_probe(&table, cpus, smt_time, clock, smt)?;
    let mut smt_run = SmtRecord {
        notes: smt_first.notes.clone(),
        tests: smt_first.tests,
        spent: smt_started.elapsed().as_secs_f64(),
    };
    checks.check(probe, "smt");

    let os_hints = os_view.map(|v| hints::os_hints(v, cpus));
    let infer_opts = infer_options(opts, cpus, os_view, &smt_run.tests, os_hints);
    if let Some(step) = plan.cost.steps.iter().find(|s| s.probe == "inference") {
        progress(Progress::Step(&step.what));
    }
    let inference_started = Instant::now();
    let mut topo = infer_or_os(&table.collected, &infer_opts, os_view)?;
    let inference_spent = inference_started.elapsed().as_secs_f64();
    // The end's reserve at this machine's pace: saving the description is table work as
    // the inference is.
    let inference_planned = planned_seconds(plan, "inference");
    let (plugins_end, end) = plan.ends(inference_spent / inference_planned);
    let inference_peak = topoprobe_sys::usage::peak_resident_bytes();
    topo.set_spread(table.collected.spread.clone())?;
    record(&mut topo, opts, cpus, &table, &smt_run.tests);
    record_os(&mut topo, ctx, os_hints)?;
    let plugin_costs = {
        let mut between = |p: Progress<'_>| {
            if let Progress::Plugin(name) = p {
                checks.check(probe, name);
            }
            progress(p);
        };
        plugins(&mut topo, plugins_end, &mut between)?
    };
    if checks.watching() {
        checks.check(probe, "end");
        if let Some(w) = checks.left_out_warning() {
            topo.validation_mut().warnings.push(w);
        }
        let mut findings = checks.findings(&topo);
        let left = end - clock.now();
        if !smt_run.tests.is_empty() && left > 0.0 {
            let seconds = plan.smt_share.min(left);
            findings.extend(smt_run.again(&table, cpus, seconds, clock, smt, os_view)?);
        } else if !smt_run.tests.is_empty() {
            smt_run.notes.push(format!(
                "smt: not run again at the end (whether the host moved the vCPUs between \
                 cores is not known): the budget's {:.1} s were spent",
                end
            ));
        }
        if let Some(saved) = &ctx.saved {
            findings.extend(stability::compare_saved(saved, &topo));
        }
        checks.record_references(&mut topo);
        stability::apply(&mut topo, &findings);
    }
    let cost = spent_cost(
        plan,
        &[
            ("latency", table.elapsed.as_secs_f64(), pairs_peak),
            ("smt", smt_run.spent, pairs_peak),
            ("inference", inference_spent, inference_peak),
            ("stability", checks.spent, None),
        ],
        plugin_costs,
    );
    record_cost(&mut topo, cost, smt_run.notes);
    stamp(&mut topo, Instant::now());
    let p = topo.provenance_mut();
    // The time of the run as the budget counts it (from the process's start for a command).
    p.duration_s = Some(clock.now());
    p.parameters
        .insert("start_seconds".into(), format!("{start:.3}"));
    Ok((topo, table))
}

/// The latency pairs, within the pairs' share of the time left at `start` (seconds on
/// `clock`), their progress reported; returns the table and the plan as its first
/// measurements calibrated it, with the pairs left out for time.
fn collect_pairs(
    plan: &MeasurePlan,
    start: f64,
    sampling: Sampling,
    hint: Option<Vec<Vec<usize>>>,
    clock: &dyn Clock,
    probe: &mut dyn PairLatency,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(MeasuredTable, MeasurePlan), MachineError> {
    // The pairs' share of the time actually left (the start was spent on the clock).
    let mut pairs_plan = plan.pairs.clone();
    pairs_plan.room = plan.pairs_room_at(start);
    let (table, pairs_plan) = pairs::collect_within(
        probe,
        sampling,
        hint,
        &pairs_plan,
        clock,
        &mut |done, total| {
            progress(Progress::Pairs { done, total });
        },
    )?;
    // The plan as its first measurements calibrated it, with the pairs left out for time.
    let mut plan = plan.clone();
    plan.set_pairs(pairs_plan);
    progress(Progress::PairsDone);
    Ok((table, plan))
}

/// The inference's options: the hints of `opts` with what the measurement knows — the
/// source, units, CPU numbers and machine, SMT as the probe's `smt_tests` found it and the
/// OS's package count as the socket hint, where `opts` gives neither.
fn infer_options(
    opts: &MeasureOptions,
    cpus: &[u32],
    os_view: Option<&OsView>,
    smt_tests: &[SmtTest],
    os_hints: Option<hints::OsHints>,
) -> InferOptions {
    let mut infer_opts = opts.hints.clone();
    infer_opts.source = Source::Measured;
    // The probe reports nanoseconds (units describe matrix files).
    infer_opts.units = LatencyUnit::Ns;
    infer_opts.os_ids = Some(cpus.to_vec());
    // The OS view read above identifies the machine; read it again only if it failed.
    infer_opts.machine = match os_view {
        Some(v) => v.machine(),
        None => description::this_machine(),
    };
    if infer_opts.smt.is_none() && !smt_tests.is_empty() {
        infer_opts.smt = Some(smt_tests.iter().any(SmtTest::shares_core));
        infer_opts.smt_origin = Origin::Measured;
    }
    if infer_opts.sockets.is_none() {
        if let Some(k) = os_hints.and_then(|h| h.sockets) {
            infer_opts.sockets = Some(k);
            infer_opts.sockets_origin = Origin::Os;
        }
    }
    infer_opts
}

/// Records what the OS says in `topo`: its package and NUMA node counts, its memory nodes
/// and its differences from the measured structure, or a warning when its view could not
/// be read.
fn record_os(
    topo: &mut Topology,
    ctx: &Context,
    os_hints: Option<hints::OsHints>,
) -> Result<(), MachineError> {
    if let Some(h) = os_hints {
        let p = &mut topo.provenance_mut().parameters;
        if let Some(s) = h.sockets {
            p.insert("os_packages".into(), s.to_string());
        }
        if let Some(n) = h.numa_nodes {
            p.insert("os_numa_nodes".into(), n.to_string());
        }
    }
    match &ctx.os {
        Ok(v) => {
            apply_os_nodes(topo, v, &*ctx.free)?;
            topoprobe_infer::compare::record_os_differences(topo, v);
        }
        Err(e) => topo.validation_mut().warnings.push(Warning::new(
            WarningKind::OsView,
            format!("unavailable: the OS view could not be read ({e}); no comparison was made"),
        )),
    }
    Ok(())
}

/// Records `cost` in `topo`'s provenance, its left-out notes with `notes` (the SMT
/// probe's) as budget warnings, each warning once.
fn record_cost(topo: &mut Topology, mut cost: CostPlan, notes: Vec<String>) {
    cost.left_out.extend(notes);
    for note in &cost.left_out {
        topo.validation_mut()
            .warnings
            .push(Warning::new(WarningKind::Budget, note.clone()));
    }
    topo.provenance_mut().cost = Some(cost);
    // Two steps may say the same (the memory notes of two plugins): once is enough.
    let mut seen = std::collections::HashSet::new();
    topo.validation_mut()
        .warnings
        .retain(|w| seen.insert((w.kind.clone(), w.message.clone())));
}

/// The seconds the plan gives its step of `probe` (0 when it has none).
fn planned_seconds(plan: &MeasurePlan, probe: &str) -> f64 {
    plan.cost
        .steps
        .iter()
        .find(|s| s.probe == probe)
        .map_or(0.0, |s| s.seconds)
}

/// The measurement's cost record: the plan's own steps (latency pairs, SMT probe,
/// inference, stability checks) with what they spent, then the plugins' plans as they ran.
fn spent_cost(
    plan: &MeasurePlan,
    spent: &[(&str, f64, Option<u64>)],
    plugins: Vec<CostPlan>,
) -> CostPlan {
    let mut cost = CostPlan::new(plan.budget);
    cost.basis.clone_from(&plan.cost.basis);
    for step in &plan.cost.steps {
        if let Some((_, s, peak)) = spent.iter().find(|(p, _, _)| *p == step.probe) {
            let mut step = step.clone();
            step.record(*s, *peak);
            cost.steps.push(step);
        }
    }
    cost.left_out.extend(plan.pairs.notes.iter().cloned());
    for p in plugins {
        cost.extend(p);
    }
    cost
}

/// Measures this machine: selects the CPUs, measures core-to-core latencies (the pairs
/// the structure needs, or all), runs the SMT probe, infers the topology with the OS's
/// package count as the socket hint ([`hints::os_hints`]), records the OS's memory nodes
/// and the differences from the OS view, adds the plugins' sections and stamps the
/// provenance. In a virtual machine (or when [`MeasureOptions::watch_stability`] asks) it
/// also re-measures reference pairs between the phases, repeats the SMT probe at the end
/// and compares with the saved description, and reports an unstable topology when the
/// host moved the vCPUs ([`crate::stability`]). Progress goes to `progress`. The
/// description is not saved: call [`Measurement::save`] (or use [`measure_and_save`]).
///
/// # Errors
///
/// [`MachineError`] when the CPUs cannot be used (fewer than two, outside this process's
/// affinity), the description has no place, a pair or plugin cannot be measured, or
/// inference fails.
pub fn measure_this_machine(
    opts: &MeasureOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Measurement, MachineError> {
    let clock = WallClock::since(opts.started.unwrap_or_else(Instant::now));
    let cpus = pairs::select_cpus(opts.cpus.as_ref())?;
    if cpus.len() < 2 {
        return Err(MachineError::Cpus(format!(
            "measuring a topology needs at least two CPUs; this process may use only {} (see --cpus and taskset)",
            format_cpu_list(&cpus)
        )));
    }
    let path = prepare_path(opts.path.as_ref())?;
    let os_view = os::current().map_err(|e| e.to_string());
    let guest = os::is_virtual_machine(Path::new("/")).unwrap_or(false);
    let watch = opts.watch_stability.unwrap_or(guest);
    let ctx = Context {
        os: os_view.clone(),
        watch,
        saved: if watch {
            description::load_checked(&path).ok()
        } else {
            None
        },
        free: Box::new(os::node_free_bytes),
    };
    let os_ref = os_view.as_ref().ok();
    let plan = plan_this_machine(opts, &cpus, os_ref, watch)?;
    let mut probe = pairs::pair_probe_with(cpus.clone(), plan.pairs.config);
    let mut smt = |a: u32, b: u32, seconds: f64| smt::test_pair_within(a, b, seconds);
    let mut run_plugins = |topo: &mut Topology, end: f64, p: &mut dyn FnMut(Progress<'_>)| {
        plugins::run_within(topo, os_ref, &plan.plugins, &clock, end, p)
    };
    let (mut topology, table) = measure_with(
        opts,
        &cpus,
        &ctx,
        &plan,
        &clock,
        &mut probe,
        &mut smt,
        &mut run_plugins,
        progress,
    )?;
    record_probe(&mut topology, &probe);
    if guest {
        topology
            .provenance_mut()
            .parameters
            .insert("virtual_machine".into(), "yes (hypervisor CPU flag)".into());
    }
    Ok(Measurement {
        topology,
        path,
        pairs_measured: table.collected.pairs,
        cpus,
        elapsed: table.elapsed,
    })
}

/// The shape of this machine for planning: the OS's view restricted to `cpus` (one socket
/// of them all when the OS view is unavailable), with its free memory now and its speed
/// ([`Shape::at_this_machines_speed`]).
#[must_use]
pub fn shape_of_this_machine(cpus: &[u32], os: Option<&OsView>) -> Shape {
    let mut shape = match os {
        Some(os) => Shape::from_os(os, cpus),
        None => Shape::this_machine_facts(),
    };
    if shape.sockets.is_empty() {
        shape.sockets.push(topoprobe_measure::plan::SocketShape {
            cpus: cpus.to_vec(),
            cores: cpus.len(),
            llc_bytes: None,
            local_node: None,
        });
    }
    shape.at_this_machines_speed()
}

/// Plans measuring `cpus` of this machine as `opts` asks ([`planning::plan_measurement`]).
///
/// # Errors
///
/// [`MachineError::OverBudget`] when `--full` pairs cannot fit the budget.
pub fn plan_this_machine(
    opts: &MeasureOptions,
    cpus: &[u32],
    os: Option<&OsView>,
    watch: bool,
) -> Result<MeasurePlan, MachineError> {
    let shape = shape_of_this_machine(cpus, os);
    let mut plan = planning::plan_measurement(
        &shape,
        os,
        &plugins::in_order(&opts.plugins),
        opts.sampling,
        opts.repetitions,
        opts.budget(),
        watch,
    )?;
    plan.cost.basis.clone_from(&opts.budget_basis);
    plan.cost.speed = shape.speed.note();
    Ok(plan)
}

/// The plan of [`measure_this_machine`] with `opts`, without measuring anything (a dry
/// run): the CPUs it would measure, the OS view, whether it would watch for moving vCPUs.
///
/// # Errors
///
/// As [`measure_this_machine`] before it measures: unusable CPUs, `--full` pairs over
/// the budget.
pub fn plan_only(opts: &MeasureOptions) -> Result<MeasurePlan, MachineError> {
    let cpus = pairs::select_cpus(opts.cpus.as_ref())?;
    let os_view = os::current().ok();
    let guest = os::is_virtual_machine(Path::new("/")).unwrap_or(false);
    let watch = opts.watch_stability.unwrap_or(guest);
    plan_this_machine(opts, &cpus, os_view.as_ref(), watch)
}

/// [`measure_this_machine`], then saves the description where `opts.path` says (the
/// default place when `None`): the one call a library or the C API needs.
///
/// # Errors
///
/// As [`measure_this_machine`], and [`MachineError::Save`] when the file cannot be
/// written.
pub fn measure_and_save(
    opts: &MeasureOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Measurement, MachineError> {
    let m = measure_this_machine(opts, progress)?;
    m.save()?;
    Ok(m)
}
