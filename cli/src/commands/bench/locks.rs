//! `topoprobe bench locks`.

use std::time::Duration;

use anyhow::Result;
use topoprobe_sync::bench::locks::{self, Config, LocksReport};
use topoprobe_sync::{BackoffKind, LockKind};

use super::{bar, sync_error};
use crate::args::bench::LocksArgs;

/// The experiment's configuration; `contexts` threads unless `--threads` says.
fn config(args: &LocksArgs, contexts: usize) -> Config {
    Config {
        threads: args.threads.unwrap_or(contexts),
        locks: args.locks,
        duration: Duration::from_secs_f64(args.duration),
        cs_ns: args.cs_ns,
        pause_ns: args.pause_ns,
        policy: args.policy,
        runs: args.runs,
        kinds: if args.kinds.is_empty() {
            LockKind::ALL.to_vec()
        } else {
            args.kinds.clone()
        },
        backoffs: if args.backoffs.is_empty() {
            vec![BackoffKind::None, BackoffKind::Fixed, BackoffKind::Educated]
        } else {
            args.backoffs.clone()
        },
        baselines: !args.no_baselines,
    }
}

/// Runs the experiment.
pub(crate) fn run(args: &LocksArgs) -> Result<()> {
    args.common.check::<LocksReport>()?;
    config(args, 1).check().map_err(sync_error)?;
    let topo = args.common.load()?;
    let config = config(args, topo.num_contexts());
    let progress = bar("locks", config.measurements());
    let report = locks::run(&topo, &config, &mut |done, _| {
        progress.set_position(done as u64);
    })
    .map_err(sync_error)?;
    progress.finish_and_clear();
    args.common.report.emit(&report)
}
