//! `topoprobe bench locks`.

use std::time::Duration;

use anyhow::Result;
use topoprobe_sync::bench::locks::{self, Config, LocksReport};
use topoprobe_sync::{BackoffKind, LockKind};

use super::{bar, sync_error};
use crate::args::bench::{BackoffArg, LockArg, LocksArgs};

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
            args.kinds.iter().map(|&k| kind(k)).collect()
        },
        backoffs: if args.backoffs.is_empty() {
            vec![BackoffKind::None, BackoffKind::Fixed, BackoffKind::Educated]
        } else {
            args.backoffs.iter().map(|&b| backoff(b)).collect()
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

fn kind(k: LockArg) -> LockKind {
    match k {
        LockArg::Tas => LockKind::Tas,
        LockArg::Ttas => LockKind::Ttas,
        LockArg::Ticket => LockKind::Ticket,
        LockArg::Mcs => LockKind::Mcs,
        LockArg::Clh => LockKind::Clh,
        LockArg::Cohort => LockKind::Cohort,
    }
}

fn backoff(b: BackoffArg) -> BackoffKind {
    match b {
        BackoffArg::None => BackoffKind::None,
        BackoffArg::Fixed => BackoffKind::Fixed,
        BackoffArg::Educated => BackoffKind::Educated,
    }
}
