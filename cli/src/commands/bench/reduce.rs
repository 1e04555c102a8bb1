//! `topoprobe bench reduce`.

use std::fmt::Write as _;

use anyhow::Result;
use topoprobe_sync::bench::reduce::{self, Config};

use super::print_json;
use crate::args::bench::ReduceArgs;
use crate::output::write_stdout;
use crate::progress::spinner;

/// Runs the experiment.
pub(crate) fn run(args: &ReduceArgs) -> Result<()> {
    let topo = args.common.load()?;
    let config = Config {
        bytes: args.size,
        threads: args.threads.unwrap_or(topo.num_contexts()),
        policy: args.policy,
        runs: args.runs,
    };
    let s = spinner("reduce");
    let results = reduce::run(&topo, &config)?;
    s.finish_and_clear();
    if args.common.json {
        return print_json(&serde_json::json!({ "verified": true, "results": results }));
    }
    let mut out = format!(
        "{} workers ({}), {} bytes each, median of {} runs; both sums checked equal\n\n",
        config.threads, config.policy, config.bytes, config.runs
    );
    let flat = results
        .iter()
        .find(|r| r.reduction == "flat")
        .map_or(f64::NAN, |r| r.seconds);
    for r in &results {
        let _ = writeln!(
            out,
            "{:<5} {:>3} rounds {:>10.4} s {:>8.2}x flat",
            r.reduction,
            r.rounds,
            r.seconds,
            flat / r.seconds
        );
    }
    write_stdout(out.as_bytes())
}
