//! `topoprobe bench line-ops`.

use anyhow::Result;
use topoprobe_sync::bench::line_ops::{self, Config, LineOpsReport};

use super::sync_error;
use crate::args::bench::LineOpsArgs;
use crate::progress::spinner;

/// Runs the experiment.
pub(crate) fn run(args: &LineOpsArgs) -> Result<()> {
    args.common.check::<LineOpsReport>()?;
    let config = Config {
        rounds: args.rounds,
        cpu: args.cpu,
        home: args.home.unwrap_or_default(),
    };
    config.check().map_err(sync_error)?;
    let topo = args.common.load()?;
    config.context(&topo).map_err(sync_error)?;
    let s = spinner("line operations");
    let report = line_ops::run(&topo, &config).map_err(sync_error)?;
    s.finish_and_clear();
    args.common.report.emit(&report)
}
