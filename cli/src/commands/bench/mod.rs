//! `topoprobe bench <experiment>`: one module per experiment; each checks its arguments and
//! output before any work, calls the experiment in `topoprobe_sync::bench` or
//! `topoprobe_parallel::bench` (one call returning a report of
//! `topoprobe_model::results::bench`) and writes the report where `-o`/`--format`/`--json`
//! say (rendered by `topoprobe_view::results::bench`).

use std::path::Path;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use topoprobe_model::Topology;
use topoprobe_parallel::ParallelError;
use topoprobe_place::WorkError;
use topoprobe_sync::SyncError;
use topoprobe_view::results::Rendered;

use crate::args::bench::{BenchArgs, BenchCommon, Experiment};
use crate::error::Usage;

mod false_sharing;
mod line_ops;
mod locks;
mod reduce;
mod sort;

/// Runs the command.
pub(crate) fn run(args: &BenchArgs) -> Result<()> {
    match &args.experiment {
        Experiment::Locks(a) => locks::run(a),
        Experiment::FalseSharing(a) => false_sharing::run(a),
        Experiment::LineOps(a) => line_ops::run(a),
        Experiment::Sort(a) => sort::run(a),
        Experiment::Reduce(a) => reduce::run(a),
    }
}

impl BenchCommon {
    /// Checks, before any work, that a report of type `R` can be written where asked (the
    /// format, the file's extension and directory, not over the topology file).
    fn check<R: Rendered>(&self) -> Result<()> {
        let inputs: Vec<&Path> = self.topology.as_deref().into_iter().collect();
        self.report.check_for::<R>(&inputs)
    }

    /// The topology the experiment runs on.
    fn load(&self) -> Result<Topology> {
        crate::inputs::topology(self.topology.as_deref())
    }
}

/// Checks, before anything is allocated, that an experiment holding `peak` bytes at once
/// (its plan: `what` says of what) keeps within the memory budget: `--max-memory`, else
/// half of the memory available now (`MemAvailable`). Refused (exit 2) with the budget
/// that would fit.
fn within_memory(max_memory: Option<u64>, peak: u64, what: &str) -> Result<()> {
    let text = topoprobe_model::size_text;
    let (budget, whose) = match max_memory {
        Some(b) => (b, "--max-memory".to_string()),
        None => match topoprobe_measure::os::available_bytes() {
            Some(a) => (
                a / 2,
                format!("the default: half of the {} available now", text(a)),
            ),
            None => return Ok(()),
        },
    };
    let mib = topoprobe_measure::plan::MIB;
    let need = peak
        .saturating_add(topoprobe_measure::plan::PROCESS_BYTES)
        .div_ceil(mib)
        .saturating_mul(mib);
    if need <= budget {
        return Ok(());
    }
    Err(Usage(format!(
        "{what} need {} at once with the process, over the memory budget of {} ({whose}): \
         give --max-memory {}M or more, or a smaller --size",
        text(need),
        text(budget),
        need >> 20
    ))
    .into())
}

/// A bar counting measurements on standard error (drawn only on a terminal).
fn bar(what: &str, total: usize) -> ProgressBar {
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix} [{wide_bar}] {pos}/{len} ({elapsed}, about {eta} left)",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(what.to_string());
    bar
}

/// A bad value of `--what`, as a usage error naming the argument and what it allows.
fn bad_argument(what: &str, value: &str, expected: &str) -> anyhow::Error {
    Usage(format!(
        "--{what} {value} is out of range (allowed: {expected})"
    ))
    .into()
}

/// An error of a contention experiment: a bad request is a usage error (exit status 2).
pub(crate) fn sync_error(e: SyncError) -> anyhow::Error {
    match &e {
        SyncError::Work(WorkError::Parameter {
            what,
            value,
            expected,
        }) => bad_argument(what, value, expected),
        _ if e.is_usage() => Usage(e.to_string()).into(),
        _ => e.into(),
    }
}

/// An error of a parallel-algorithm experiment: a bad request is a usage error (exit
/// status 2).
fn parallel_error(e: ParallelError) -> anyhow::Error {
    match &e {
        ParallelError::Parameter {
            what,
            value,
            expected,
        } => bad_argument(what, value, expected),
        _ if e.is_usage() => Usage(e.to_string()).into(),
        _ => e.into(),
    }
}
