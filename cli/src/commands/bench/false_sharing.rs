//! `topoprobe bench false-sharing`.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Result;
use topoprobe_sync::bench::false_sharing::{self, Config};

use super::{bar, print_json, with_advice};
use crate::args::bench::FalseSharingArgs;
use crate::output::write_stdout;

/// Runs the experiment.
pub(crate) fn run(args: &FalseSharingArgs) -> Result<()> {
    let topo = args.common.load()?;
    let config = Config {
        threads: args.threads,
        strides: args.strides.clone(),
        duration: Duration::from_secs_f64(args.duration),
        policy: args.policy,
        runs: args.runs,
    };
    let progress = bar("false sharing", config.runs * config.strides.len());
    let results = false_sharing::run(&topo, &config, &mut |done, _| {
        progress.set_position(done as u64);
    })?;
    progress.finish_and_clear();
    let advice = false_sharing::advice(&results);
    if args.common.json {
        return print_json(&serde_json::json!({
            "policy": config.policy.to_string(),
            "runs": config.runs,
            "duration_s": args.duration,
            "padding_bytes": false_sharing::advised_padding(&results),
            "results": results,
            "advice": advice,
        }));
    }
    let mut out = format!(
        "{} threads ({}) incrementing their own counter, median of {} runs of {} s\n\n",
        config.threads, config.policy, config.runs, args.duration
    );
    let smallest = results.first().map(|r| r.ops_per_s).unwrap_or(0.0);
    let _ = writeln!(out, "{:>8} {:>16} {:>12}", "stride", "M incr/s", "vs first");
    for r in &results {
        let _ = writeln!(
            out,
            "{:>6} B {:>16.1} {:>11.2}x",
            r.stride_bytes,
            r.ops_per_s / 1e6,
            if smallest > 0.0 {
                r.ops_per_s / smallest
            } else {
                0.0
            }
        );
    }
    write_stdout(with_advice(out, &advice).as_bytes())
}
