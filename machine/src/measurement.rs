//! Measuring this machine into a description: latencies, SMT probe, inference with the
//! OS's hints, the OS's memory nodes, the comparison with the OS view, the plugins'
//! sections, provenance — one call.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use topoprobe_infer::InferOptions;
use topoprobe_measure::os;
use topoprobe_measure::pair::PairProbe;
use topoprobe_measure::smt::{self, SmtTest};
use topoprobe_model::{
    format_cpu_list, LatencyUnit, NodeId, Origin, OsView, SocketId, Source, Topology, Warning,
};

use crate::hints;
use crate::pairs::{self, MeasuredTable, Repetitions, Sampling};
use crate::plugins::{self, Plugin};
use crate::{description, stamp, MachineError, Progress};

/// SMT candidate pairs tested at most.
const SMT_PAIRS: usize = 3;

/// What [`measure_this_machine`] measures and how.
#[derive(Debug, Clone)]
pub struct MeasureOptions {
    /// CPUs to measure, in Linux list syntax (`0-7,16-23`); `None`: every CPU this process
    /// may run on.
    pub cpus: Option<String>,
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
        }
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
fn apply_os_nodes(topo: &mut Topology, os: &OsView) -> Result<(), MachineError> {
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
        topo.set_node_free(NodeId(i), os::node_free_bytes(n.id))?;
    }
    topo.provenance_mut()
        .parameters
        .insert("nodes".to_string(), "from the OS".to_string());
    Ok(())
}

/// Runs the SMT probe on the table's candidate pairs (OS CPU numbers in the results).
fn smt_probe(table: &MeasuredTable, cpus: &[u32]) -> Result<Vec<SmtTest>, MachineError> {
    smt::candidates(&table.collected.latency, SMT_PAIRS)
        .into_iter()
        .map(|(a, b)| {
            smt::test_pair(cpus[a], cpus[b]).map_err(|message| MachineError::Smt {
                a: cpus[a],
                b: cpus[b],
                message,
            })
        })
        .collect()
}

/// Records how the description was measured.
fn record(
    topo: &mut Topology,
    opts: &MeasureOptions,
    cpus: &[u32],
    table: &MeasuredTable,
    probe: &PairProbe,
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
    set("timer", probe.timer().describe());
    set("pairs_retried", probe.retried().to_string());
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
    if let Some(worst) = probe.ramps().iter().copied().reduce(f64::max) {
        topo.validation_mut().warnings.push(Warning::new(
            "frequency_ramp",
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

/// Measures this machine: selects the CPUs, measures core-to-core latencies (the pairs
/// the structure needs, or all), runs the SMT probe, infers the topology with the OS's
/// package count as the socket hint ([`hints::os_hints`]), records the OS's memory nodes and the differences from
/// the OS view, adds the plugins' sections and stamps the provenance. Progress goes to
/// `progress`. The description is not saved: call [`Measurement::save`] (or use
/// [`measure_and_save`]).
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
    let started = Instant::now();
    let cpus = pairs::select_cpus(opts.cpus.as_deref())?;
    if cpus.len() < 2 {
        return Err(MachineError::Cpus(format!(
            "measuring a topology needs at least two CPUs; this process may use only {} (see --cpus and taskset)",
            format_cpu_list(&cpus)
        )));
    }
    let path = prepare_path(opts.path.as_ref())?;
    let os_view = os::current();
    let mut probe = pairs::pair_probe(cpus.clone(), opts.repetitions);
    let hint = os_view
        .as_ref()
        .ok()
        .map(|os| pairs::sibling_hint(os, &cpus));
    let table = pairs::collect(&mut probe, opts.sampling, hint, &mut |done, total| {
        progress(Progress::Pairs { done, total });
    })?;
    progress(Progress::PairsDone);
    let smt_tests = smt_probe(&table, &cpus)?;

    let mut infer_opts = opts.hints.clone();
    infer_opts.source = Source::Measured;
    // The probe reports nanoseconds (units describe matrix files).
    infer_opts.units = LatencyUnit::Ns;
    infer_opts.os_ids = Some(cpus.clone());
    // The OS view read above identifies the machine; read it again only if it failed.
    infer_opts.machine = match &os_view {
        Ok(v) => v.machine(),
        Err(_) => description::this_machine(),
    };
    if infer_opts.smt.is_none() && !smt_tests.is_empty() {
        infer_opts.smt = Some(smt_tests.iter().any(SmtTest::shares_core));
        infer_opts.smt_origin = Origin::Measured;
    }
    let os_hints = os_view.as_ref().ok().map(|v| hints::os_hints(v, &cpus));
    if infer_opts.sockets.is_none() {
        if let Some(k) = os_hints.and_then(|h| h.sockets) {
            infer_opts.sockets = Some(k);
            infer_opts.sockets_origin = Origin::Os;
        }
    }
    let mut topo = table
        .collected
        .infer(&infer_opts)
        .map_err(MachineError::Infer)?;
    topo.set_spread(table.collected.spread.clone())?;
    record(&mut topo, opts, &cpus, &table, &probe, &smt_tests);
    if let Some(h) = os_hints {
        let p = &mut topo.provenance_mut().parameters;
        if let Some(s) = h.sockets {
            p.insert("os_packages".into(), s.to_string());
        }
        if let Some(n) = h.numa_nodes {
            p.insert("os_numa_nodes".into(), n.to_string());
        }
    }
    match &os_view {
        Ok(v) => {
            apply_os_nodes(&mut topo, v)?;
            topoprobe_infer::compare::record_os_differences(&mut topo, v);
        }
        Err(e) => topo.validation_mut().warnings.push(Warning::new(
            "os_view",
            format!("unavailable: the OS view could not be read ({e}); no comparison was made"),
        )),
    }
    plugins::run(&mut topo, os_view.as_ref().ok(), &opts.plugins, progress)?;
    stamp(&mut topo, started);
    Ok(Measurement {
        topology: topo,
        path,
        pairs_measured: table.collected.pairs,
        cpus,
        elapsed: table.elapsed,
    })
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
