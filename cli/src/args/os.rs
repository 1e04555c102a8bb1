//! Arguments of `topoprobe os`: the operating system's view of a machine.

use std::path::PathBuf;

use clap::Args;

use super::ReportOutput;

/// `topoprobe os`.
#[derive(Debug, Clone, Args)]
pub(crate) struct OsArgs {
    /// The machine to read: a directory holding its `sys/` and `proc/` (`/` is this
    /// machine), or a `hwloc-gather-topology` capture (`.tar.bz2`, `.tar.gz`, `.tar`),
    /// unpacked into a temporary directory within the limits of docs/LIMITS.md. Default:
    /// this machine.
    #[arg(long, value_name = "DIR|FILE")]
    pub(crate) root: Option<PathBuf>,
    /// Keep the NUMA nodes that hold an NVIDIA GPU's memory (left out by default, as hwloc
    /// does), near the GPU's local CPUs.
    #[arg(long)]
    pub(crate) keep_gpu_nodes: bool,
    #[command(flatten)]
    pub(crate) output: ReportOutput,
}
