//! Wall-clock time of `topoprobe_infer::infer` on simulated machines of 64 to 1024 hardware
//! contexts, without criterion: the median of 5 runs per machine (the matrix is generated
//! once, outside the timed runs). The machines are the ones of `benches/inference.rs`.
//!
//! `cargo run --release -p topoprobe-infer --example infer_timing [runs] [max_contexts]`
//!
//! Prints one line per machine: name, contexts, median, min and max in milliseconds, and
//! whether the inferred topology matches the simulator's ground truth.

use std::time::{Duration, Instant};

use topoprobe_infer::infer;
use topoprobe_infer::sim::{CrossSocket, MachineSpec, Noise, Numbering, Unit};
use topoprobe_model::LatencyUnit;

/// Two sockets of `ccx` CCXs of 8 SMT2 cores: 8 ns SMT, 25 ns in a CCX, 120 ns between the
/// CCXs of a socket, 230 ns between sockets (`32 × ccx` contexts).
fn ccx_machine(ccx: usize) -> MachineSpec {
    let group = Unit::group(25.0, Unit::cores(8, 2, 8.0));
    MachineSpec::symmetric(
        format!("ccx-2s-{ccx}x8x2"),
        2,
        Unit::group(120.0, vec![group; ccx]),
        CrossSocket::Uniform(230.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_units(LatencyUnit::Ns, Some(2.5))
    .with_noise(Noise::lognormal(0.01, 42))
}

/// Two flat sockets of `cores` SMT2 cores on a mesh: 7.4 ns SMT, 48 ns in a socket (mesh
/// gradient 0.2), 140 ns between sockets (`4 × cores` contexts).
fn mesh_machine(cores: usize) -> MachineSpec {
    MachineSpec::symmetric(
        format!("mesh-2s-{cores}x2"),
        2,
        Unit::group(48.0, Unit::cores(cores, 2, 7.4)),
        CrossSocket::Uniform(140.0),
    )
    .with_numbering(Numbering::SiblingsFar)
    .with_mesh(0.2)
    .with_units(LatencyUnit::Ns, Some(2.1))
    .with_noise(Noise::lognormal(0.01, 42))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5).max(1);
    let max: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1024);
    let mut specs = Vec::new();
    for contexts in [64, 256, 512, 1024] {
        if contexts <= max {
            specs.push(ccx_machine(contexts / 32));
            specs.push(mesh_machine(contexts / 4));
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
