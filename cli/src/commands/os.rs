//! `topoprobe os`: what the operating system says about a machine — this one, a sysfs
//! root, or a `hwloc-gather-topology` capture — read by the same reader as `infer`,
//! `cache`, `mem` and the comparison with the OS.

use std::path::Path;

use anyhow::{Context, Result};
use topoprobe_model::results::os::OsReport;

use crate::args::OsArgs;

/// Runs the command.
pub(crate) fn run(args: &OsArgs) -> Result<()> {
    let inputs: Vec<&Path> = args.root.as_deref().into_iter().collect();
    args.output.check_for::<OsReport>(&inputs)?;
    let root = args.root.as_deref().unwrap_or_else(|| Path::new("/"));
    // Every error of the reader names the file or archive at fault.
    let options = topoprobe_measure::os::ReadOptions {
        keep_gpu_nodes: args.keep_gpu_nodes,
    };
    let view = topoprobe_measure::os::read_os_view_at_with(root, &options)
        .context("reading the operating system's view")?;
    args.output
        .emit(&OsReport::new(&view, &root.display().to_string()))
}
