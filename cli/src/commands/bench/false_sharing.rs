//! `topoprobe bench false-sharing`.

use std::time::Duration;

use anyhow::Result;
use topoprobe_sync::bench::false_sharing::{self, Config, FalseSharingReport};

use super::{bar, sync_error};
use crate::args::bench::FalseSharingArgs;

/// Runs the experiment.
pub(crate) fn run(args: &FalseSharingArgs) -> Result<()> {
    args.common.check::<FalseSharingReport>()?;
    let config = Config {
        threads: args.threads,
        strides: args.strides.clone(),
        duration: Duration::from_secs_f64(args.duration),
        policy: args.policy,
        runs: args.runs,
    };
    config.check().map_err(sync_error)?;
    let topo = args.common.load()?;
    let progress = bar("false sharing", config.runs * config.strides.len());
    let report = false_sharing::run(&topo, &config, &mut |done, _| {
        progress.set_position(done as u64);
    })
    .map_err(sync_error)?;
    progress.finish_and_clear();
    args.common.report.emit(&report)
}
