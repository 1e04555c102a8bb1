//! `topoprobe infer` without a file: measure this machine, infer its topology, compare it
//! with the operating system's view, save the description and print it.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use topoprobe_infer::InferOptions;
use topoprobe_measure::smt::{self, SmtTest};
use topoprobe_measure::{description, os};
use topoprobe_model::format::{json, write_atomic};
use topoprobe_model::{
    format_cpu_list, NodeId, Origin, OsView, SocketId, Source, Topology, Warning,
};

use crate::args::InferArgs;
use crate::commands::infer::stamp;
use crate::live::{collect, probe, select_cpus, Measured};
use crate::output::emit;

/// SMT candidate pairs tested at most.
const SMT_PAIRS: usize = 3;

/// Number of NUMA nodes holding the measured CPUs, when the OS knows.
fn node_count(os: &OsView, cpus: &[u32]) -> Option<usize> {
    let nodes = os.node_cpus();
    if nodes.is_empty() {
        return None;
    }
    let count = nodes
        .values()
        .filter(|node_cpus| node_cpus.iter().any(|c| cpus.contains(c)))
        .count();
    (count > 0).then_some(count)
}

/// Sets the memory nodes as the OS reports them: every OS node (CPU-less ones included),
/// and as each socket's local node the one holding most of its CPUs. Measuring which node
/// is local (memory latency) is the memory probe's job; this records the OS's claim.
fn apply_os_nodes(topo: &mut Topology, os: &OsView) -> Result<()> {
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
    }
    topo.provenance_mut()
        .parameters
        .insert("nodes".to_string(), "from the OS".to_string());
    Ok(())
}

/// Runs the SMT probe on the table's candidate pairs (OS CPU numbers in the results).
fn smt_probe(measured: &Measured, cpus: &[u32]) -> Result<Vec<SmtTest>> {
    smt::candidates(&measured.collected.latency, SMT_PAIRS)
        .into_iter()
        .map(|(a, b)| {
            smt::test_pair(cpus[a], cpus[b])
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("SMT probe on CPUs {} and {}", cpus[a], cpus[b]))
        })
        .collect()
}

/// Records how the description was measured.
fn record(
    topo: &mut Topology,
    args: &InferArgs,
    cpus: &[u32],
    measured: &Measured,
    probe: &topoprobe_measure::pair::PairProbe,
    smt_tests: &[SmtTest],
) {
    let n = cpus.len();
    let p = topo.provenance_mut();
    let mut set = |k: &str, v: String| {
        p.parameters.insert(k.to_string(), v);
    };
    set("cpus", format_cpu_list(cpus));
    set("pairs_measured", measured.collected.pairs.to_string());
    set("pairs_total", (n * (n - 1) / 2).to_string());
    set(
        "measure_seconds",
        format!("{:.3}", measured.elapsed.as_secs_f64()),
    );
    set(
        "strategy",
        if args.measure.full { "full" } else { "sparse" }.to_string(),
    );
    set("timer", probe.timer().describe());
    set("pairs_retried", probe.retried().to_string());
    if let Some(r) = args.measure.repetitions.reps {
        set("reps", r.to_string());
    }
    if let Some(s) = args.measure.repetitions.max_stdev {
        set("max_stdev_percent", s.to_string());
    }
    if let Some(s) = args.measure.seed {
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

/// Measures this machine and writes its description.
pub(crate) fn run(args: &InferArgs, started: Instant) -> Result<()> {
    let plugins =
        crate::plugins::parse(args.plugins.as_deref().unwrap_or(crate::plugins::DEFAULT))?;
    let cpus = select_cpus(args.measure.cpus.as_deref())?;
    if cpus.len() < 2 {
        bail!(
            "measuring a topology needs at least two CPUs; this process may use only {} (see --cpus and taskset)",
            format_cpu_list(&cpus)
        );
    }
    // Where the description goes, checked before measuring rather than after.
    let path = description::default_path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "creating the directory {} for the description",
                dir.display()
            )
        })?;
    }
    let os_view = os::current();
    let mut probe = probe(cpus.clone(), &args.measure);
    let hint = os_view
        .as_ref()
        .ok()
        .map(|os| crate::live::sibling_hint(os, &cpus));
    let measured = collect(&mut probe, &args.measure, hint)?;
    let smt_tests = smt_probe(&measured, &cpus)?;

    let mut opts: InferOptions = args.hints.options();
    opts.source = Source::Measured;
    // The probe reports nanoseconds (`--units` describes matrix files).
    opts.units = topoprobe_model::LatencyUnit::Ns;
    opts.os_ids = Some(cpus.clone());
    // The OS view read above identifies the machine; read it again only if it failed.
    opts.machine = match &os_view {
        Ok(v) => v.machine(),
        Err(_) => description::this_machine(),
    };
    if opts.smt.is_none() && !smt_tests.is_empty() {
        opts.smt = Some(smt_tests.iter().any(SmtTest::shares_core));
        opts.smt_origin = Origin::Measured;
    }
    if opts.sockets.is_none() {
        if let Some(k) = os_view.as_ref().ok().and_then(|v| node_count(v, &cpus)) {
            opts.sockets = Some(k);
            opts.sockets_origin = Origin::Os;
        }
    }
    let mut topo = measured
        .collected
        .infer(&opts)
        .context("inferring the topology")?;
    topo.set_spread(measured.collected.spread.clone())?;
    record(&mut topo, args, &cpus, &measured, &probe, &smt_tests);
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
    crate::plugins::run(&mut topo, os_view.as_ref().ok(), &plugins)?;
    stamp(&mut topo, started);

    let saved = write_atomic(&path, json::to_json_string(&topo).as_bytes());
    if saved.is_ok() {
        eprintln!(
            "topoprobe: measured {} of {} pairs of {} CPUs in {:.1} s; description written to {}",
            measured.collected.pairs,
            cpus.len() * (cpus.len() - 1) / 2,
            cpus.len(),
            measured.elapsed.as_secs_f64(),
            path.display()
        );
    }
    // The result is shown even when it could not be saved, then the failure is reported.
    emit(&topo, &args.output, args.hints.ghz)?;
    saved.with_context(|| format!("saving the description to {}", path.display()))?;
    Ok(())
}
