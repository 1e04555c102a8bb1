//! `topoprobe infer`: infer a topology (measuring this machine, or from a file) and print
//! or save it.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use topoprobe_infer::infer_mct;
use topoprobe_machine::{measure_this_machine, plan_only, plugins, stamp, MeasureOptions};
use topoprobe_model::format::mct;
use topoprobe_model::{Topology, WarningKind};

use crate::args::{Format, InferArgs};
use crate::error::Usage;
use crate::inputs::infer_matrix_file;
use crate::output::emit;
use crate::progress::MeasureProgress;
use topoprobe_machine::MachineError;

fn from_mct(path: &Path, args: &InferArgs) -> Result<Topology> {
    let file = mct::read_mct(path)?;
    infer_mct(&file, path, &args.hints.options())
        .with_context(|| format!("inferring the topology of {}", path.display()))
}

/// Measures this machine, saves its description and prints it (even when saving failed,
/// which is then reported).
fn measure(args: &InferArgs) -> Result<()> {
    args.output.check(&[])?;
    let mut opts = MeasureOptions {
        cpus: crate::cpusets::measured(args.measure.cpus.as_deref())?,
        repetitions: args.measure.repetitions.into(),
        sampling: args.measure.sampling(),
        plugins: plugins::parse(args.plugins.as_deref().unwrap_or(plugins::DEFAULT))?,
        hints: args.hints.options(),
        path: None,
        // The budget counts from the process's start, as the user's wall clock does.
        started: topoprobe_sys::started::instant(),
        ..MeasureOptions::default()
    };
    let (budget, basis) = args.planning.budget_here(opts.budget());
    opts.budget = Some(budget);
    opts.budget_basis = Some(basis);
    if args.planning.plan {
        let plan = plan_only(&opts).map_err(over_budget)?;
        let json = args.output.format()? == Format::Json;
        return crate::planned::print(&plan.cost, json, args.output.output.as_deref());
    }
    let mut progress = MeasureProgress::new();
    let m = measure_this_machine(&opts, &mut |p| progress.show(p)).map_err(over_budget)?;
    let saved = m.save();
    if saved.is_ok() {
        eprintln!(
            "topoprobe: measured {} of {} pairs of {} CPUs in {:.1} s; description written to {}",
            m.pairs_measured,
            m.pairs_total(),
            m.cpus.len(),
            m.elapsed.as_secs_f64(),
            m.path.display()
        );
    }
    // Whatever the format (a TSV partition has no room for it), an unstable guest is said.
    for w in m
        .topology
        .validation()
        .warnings
        .iter()
        .filter(|w| w.kind == WarningKind::UnstableTopology)
    {
        eprintln!("topoprobe: unstable topology: {}", w.message);
    }
    crate::pair_notes::say_flagged_pairs(&m.topology);
    emit(&m.topology, &args.output, args.hints.ghz)?;
    Ok(saved?)
}

/// A request that cannot fit its budget (every pair of a large machine) is a usage
/// error: the message says which budget would fit.
pub(crate) fn over_budget(e: MachineError) -> anyhow::Error {
    match e {
        MachineError::OverBudget(m) => Usage(m).into(),
        e => e.into(),
    }
}

/// Runs the command.
pub(crate) fn run(args: &InferArgs) -> Result<()> {
    let started = Instant::now();
    if (args.from_matrix.is_some() || args.from_mct.is_some())
        && (args.measure.any()
            || args.plugins.is_some()
            || args.planning.given()
            || args.planning.plan)
    {
        return Err(Usage("--cpus, --reps, --max-stdev, --full, --seed, --plugins, --budget, --max-memory and --plan apply to measuring this machine, not to --from-matrix or --from-mct".into()).into());
    }
    let inputs: Vec<&Path> = args
        .from_matrix
        .iter()
        .chain(&args.from_mct)
        .map(std::path::PathBuf::as_path)
        .collect();
    args.output.check(&inputs)?;
    let mut topo = match (&args.from_matrix, &args.from_mct) {
        (Some(p), _) => infer_matrix_file(p, &args.hints)?,
        (None, Some(p)) => from_mct(p, args)?,
        (None, None) => return measure(args),
    };
    stamp(&mut topo, started);
    emit(&topo, &args.output, args.hints.ghz)
}
