//! `topoprobe bench <experiment>`: one module per experiment; each loads the topology,
//! calls the experiment in `topoprobe_sync::bench` and prints its results (a table and the
//! advice, or JSON).

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use topoprobe_model::Topology;

use crate::args::bench::{BenchArgs, BenchCommon, Experiment};
use crate::output::write_stdout;

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
    /// The topology the experiment runs on.
    fn load(&self) -> Result<Topology> {
        crate::inputs::topology(self.topology.as_deref())
    }
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

/// Writes a JSON value and a newline to standard output.
fn print_json(v: &serde_json::Value) -> Result<()> {
    write_stdout(format!("{}\n", serde_json::to_string_pretty(v)?).as_bytes())
}

/// Writes the advice lines after a table.
fn with_advice(mut text: String, advice: &[String]) -> String {
    if !advice.is_empty() {
        text.push_str("\nadvice\n");
        for a in advice {
            text.push_str("  - ");
            text.push_str(a);
            text.push('\n');
        }
    }
    text
}
