//! `topoprobe bench sort`.

use anyhow::Result;
use topoprobe_parallel::bench::sort::{self, Config, SortReport};

use super::{bar, parallel_error};
use crate::args::bench::SortArgs;

/// The experiment's configuration; `contexts` threads unless `--threads` says.
fn config(args: &SortArgs, contexts: usize) -> Config {
    Config {
        bytes: args.size,
        threads: args.threads.unwrap_or(contexts),
        runs: args.runs,
        seed: args.seed,
    }
}

/// Runs the experiment.
pub(crate) fn run(args: &SortArgs) -> Result<()> {
    args.common.check::<SortReport>()?;
    config(args, 1).check().map_err(parallel_error)?;
    let topo = args.common.load()?;
    let config = config(args, topo.num_contexts());
    super::within_memory(
        args.max_memory,
        config.peak_bytes(),
        &format!(
            "--size {}: the keys, their copy being sorted and the sort's scratch array",
            topoprobe_model::size_text(config.bytes)
        ),
    )?;
    let progress = bar("sort", config.measurements());
    let report = sort::run(&topo, &config, &mut |done, _| {
        progress.set_position(done as u64);
    })
    .map_err(parallel_error)?;
    progress.finish_and_clear();
    args.common.report.emit(&report)
}
