//! `topoprobe infer`: infer a topology and print or save it.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use topoprobe_infer::{infer, infer_mct};
use topoprobe_model::format::{csv, mct};
use topoprobe_model::{Source, Topology};

use crate::args::InferArgs;
use crate::output::emit;

/// Records when and in how long a topology was made.
pub(crate) fn stamp(topo: &mut Topology, started: Instant) {
    let p = topo.provenance_mut();
    p.created = OffsetDateTime::now_utc().format(&Rfc3339).ok();
    p.duration_s = Some(started.elapsed().as_secs_f64());
}

fn from_matrix(path: &Path, args: &InferArgs) -> Result<Topology> {
    let m = csv::read_matrix(path)?;
    let mut opts = args.hints.options();
    opts.source = Source::Matrix {
        path: path.display().to_string(),
    };
    crate::progress::while_inferring(m.len(), || infer(&m, &opts))
        .with_context(|| format!("inferring the topology of {}", path.display()))
}

fn from_mct(path: &Path, args: &InferArgs) -> Result<Topology> {
    let file = mct::read_mct(path)?;
    infer_mct(&file, path, &args.hints.options())
        .with_context(|| format!("inferring the topology of {}", path.display()))
}

/// Runs the command.
pub(crate) fn run(args: &InferArgs) -> Result<()> {
    let started = Instant::now();
    if (args.from_matrix.is_some() || args.from_mct.is_some())
        && (args.measure.any() || args.plugins.is_some())
    {
        bail!("--cpus, --reps, --max-stdev, --full, --seed and --plugins apply to measuring this machine, not to --from-matrix or --from-mct");
    }
    let mut topo = match (&args.from_matrix, &args.from_mct) {
        (Some(p), _) => from_matrix(p, args)?,
        (None, Some(p)) => from_mct(p, args)?,
        (None, None) => return crate::commands::measure_machine::run(args, started),
    };
    stamp(&mut topo, started);
    emit(&topo, &args.output, args.hints.ghz)
}
