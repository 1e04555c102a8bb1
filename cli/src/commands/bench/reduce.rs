//! `topoprobe bench reduce`.

use anyhow::Result;
use topoprobe_parallel::bench::reduce::{self, Config, ReduceReport};

use super::parallel_error;
use crate::args::bench::ReduceArgs;
use crate::progress::spinner;

/// The experiment's configuration; `contexts` workers unless `--threads` says.
fn config(args: &ReduceArgs, contexts: usize) -> Config {
    Config {
        bytes: args.size,
        threads: args.threads.unwrap_or(contexts),
        policy: args.policy,
        runs: args.runs,
    }
}

/// Runs the experiment.
pub(crate) fn run(args: &ReduceArgs) -> Result<()> {
    args.common.check::<ReduceReport>()?;
    config(args, 1).check().map_err(parallel_error)?;
    let topo = args.common.load()?;
    let config = config(args, topo.num_contexts());
    super::within_memory(
        args.max_memory,
        config.peak_bytes(),
        &format!(
            "--size {} for {} workers: every worker's vector and the tree's sum",
            topoprobe_model::size_text(config.bytes),
            config.threads
        ),
    )?;
    let s = spinner("reduce");
    let report = reduce::run(&topo, &config).map_err(parallel_error)?;
    s.finish_and_clear();
    args.common.report.emit(&report)
}
