//! `topoprobe bench locks`.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Result;
use topoprobe_sync::bench::locks::{self, Config};
use topoprobe_sync::clock::Clock;
use topoprobe_sync::{BackoffKind, LockKind};

use super::{bar, print_json, with_advice};
use crate::args::bench::{BackoffArg, LockArg, LocksArgs};
use crate::error::Usage;
use crate::output::write_stdout;

/// Runs the experiment.
pub(crate) fn run(args: &LocksArgs) -> Result<()> {
    let topo = args.common.load()?;
    let config = Config {
        threads: args.threads.unwrap_or(topo.num_contexts()),
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
    };
    config.check().map_err(|e| Usage(e.to_string()))?;
    let progress = bar("locks", config.measurements());
    let results = locks::run(&topo, &config, &mut |done, _| {
        progress.set_position(done as u64);
    })?;
    progress.finish_and_clear();
    if args.common.json {
        return print_json(&serde_json::json!({
            "threads": config.threads,
            "locks": config.locks,
            "duration_s": args.duration,
            "cs_ns": config.cs_ns,
            "pause_ns": config.pause_ns,
            "policy": config.policy.to_string(),
            "runs": config.runs,
            "clock": Clock::get().describe(),
            "results": results,
        }));
    }
    let std_rate = results
        .iter()
        .find(|r| r.lock == "std")
        .map(|r| r.acquisitions_per_s);
    let mut out = format!(
        "{} threads ({}), {} lock{}, critical section {} ns, pause {} ns, median of {} run{} of {} s\n\n",
        config.threads,
        config.policy,
        config.locks,
        if config.locks == 1 { "" } else { "s" },
        config.cs_ns,
        config.pause_ns,
        config.runs,
        if config.runs == 1 { "" } else { "s" },
        args.duration
    );
    let _ = writeln!(
        out,
        "{:<12} {:<9} {:>14} {:>9} {:>10} {:>9}",
        "lock", "backoff", "M acq/s", "fairness", "vs none", "vs std"
    );
    for r in &results {
        let none = results
            .iter()
            .find(|x| x.lock == r.lock && x.backoff == "none")
            .map(|x| x.acquisitions_per_s);
        let ratio = |base: Option<f64>| {
            base.filter(|&b| b > 0.0).map_or_else(
                || "-".to_string(),
                |b| format!("{:.2}x", r.acquisitions_per_s / b),
            )
        };
        let _ = writeln!(
            out,
            "{:<12} {:<9} {:>14.3} {:>9.2} {:>10} {:>9}",
            r.lock,
            r.backoff,
            r.acquisitions_per_s / 1e6,
            r.fairness,
            ratio(none),
            ratio(std_rate)
        );
    }
    write_stdout(with_advice(out, &locks::advice(&results)).as_bytes())
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
