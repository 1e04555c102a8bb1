//! Wall-clock time of `topoprobe_infer::infer` on simulated machines of 64 to 2048 hardware
//! contexts, without criterion: the median of 5 runs per machine (the matrix is generated
//! once, outside the timed runs). The machines are the ones of `benches/inference.rs`.
//!
//! `cargo run --release -p topoprobe-infer --example infer_timing [runs] [max_contexts]`
//!
//! Prints one line per machine: name, contexts, median, min and max in milliseconds, and
//! whether the inferred topology matches the simulator's ground truth.

use std::time::{Duration, Instant};

use topoprobe_infer::infer;
use topoprobe_infer::sim::platforms::{ccx_server, mesh_server};
use topoprobe_infer::sim::Noise;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5).max(1);
    let max: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let mut specs = Vec::new();
    for contexts in [64, 256, 512, 1024, 2048] {
        if contexts <= max {
            let noise = Noise::lognormal(0.01, 42);
            specs.push(ccx_server(contexts / 32).with_noise(noise));
            specs.push(mesh_server(contexts / 4).with_noise(noise));
        }
    }
    println!("machine\tcontexts\tmedian_ms\tmin_ms\tmax_ms\tcorrect");
    for spec in specs {
        let matrix = spec.matrix();
        let opts = spec.infer_options();
        let truth = spec.truth();
        let mut times = Vec::with_capacity(runs);
        let mut verdict = String::new();
        for _ in 0..runs {
            let start = Instant::now();
            let result = infer(&matrix, &opts);
            times.push(start.elapsed());
            verdict = match result {
                Ok(topo) => match truth.check(&topo) {
                    Ok(()) => "yes".to_string(),
                    Err(why) => format!("no: {why}"),
                },
                Err(e) => format!("error: {e}"),
            };
        }
        times.sort();
        println!(
            "{}\t{}\t{:.1}\t{:.1}\t{:.1}\t{}",
            spec.name,
            matrix.len(),
            ms(times[times.len() / 2]),
            ms(times[0]),
            ms(times[times.len() - 1]),
            verdict
        );
    }
}
