//! `topoprobe bench sort`.

use std::fmt::Write as _;

use anyhow::Result;
use topoprobe_sync::bench::sort::{self, Config};

use super::{bar, print_json};
use crate::args::bench::SortArgs;
use crate::output::write_stdout;

/// Runs the experiment.
pub(crate) fn run(args: &SortArgs) -> Result<()> {
    let topo = args.common.load()?;
    let config = Config {
        bytes: args.size,
        threads: args.threads.unwrap_or(topo.num_contexts()),
        runs: args.runs,
        seed: args.seed,
    };
    let progress = bar("sort", 2 * config.runs * sort::ALGORITHMS.len());
    let report = sort::run(&topo, &config, &mut |done, _| {
        progress.set_position(done as u64);
    })?;
    progress.finish_and_clear();
    if args.common.json {
        return print_json(&serde_json::to_value(&report)?);
    }
    let mut out = format!(
        "{} bytes of random keys, {} threads, median of {} runs; every result verified\n",
        config.bytes, config.threads, config.runs
    );
    for n in &report.calibration {
        let _ = writeln!(out, "  calibration: {n}");
    }
    let _ = writeln!(
        out,
        "\n{:<5} {:<26} {:>10} {:>10} {:>10}",
        "keys", "algorithm", "seconds", "vs rayon", "vs std"
    );
    for r in &report.results {
        let of = |alg: &str| {
            report
                .results
                .iter()
                .find(|x| x.keys == r.keys && x.algorithm == alg)
                .map_or(f64::NAN, |x| x.seconds)
        };
        let _ = writeln!(
            out,
            "{:<5} {:<26} {:>10.3} {:>9.2}x {:>9.2}x",
            r.keys,
            r.algorithm,
            r.seconds,
            of("rayon_par_sort_unstable") / r.seconds,
            of("std_sort_unstable") / r.seconds
        );
    }
    out.push_str("(ratios: how many times faster than rayon / std)\n");
    write_stdout(out.as_bytes())
}
