//! Collects the latency table of simulated platforms with `collect_sparse` and infers their
//! topology from it: per platform, the contexts N, the pairs measured (distinct pairs and
//! probe calls), calls per context, all pairs N(N-1)/2, and whether the inferred topology
//! matches the truth.
//!
//! The probe takes 7 samples per pair with log-normal noise `sigma` per sample (a fifth of
//! it on the hybrid, whose E-core clusters only show at low noise), outliers (a whole call
//! 3× slower or faster) with probability 0.002, and a warm-up drift from 1.3× to 1× over the
//! first 100 calls.
//!
//! `cargo run --release -p topoprobe-infer --example sparse_pairs [sigma] [seed]`

use topoprobe_infer::sim::{platforms, MachineSpec, Noise, SimProbe};
use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::{infer, Collected};

/// The platforms measured: the paper's five, then modern and irregular ones.
fn specs() -> Vec<MachineSpec> {
    vec![
        platforms::ivy(),
        platforms::westmere(),
        platforms::haswell(),
        platforms::opteron(),
        platforms::sparc_t4(),
        platforms::epyc_2x64(),
        platforms::epyc_2x64_home_node(),
        platforms::hybrid_desktop(),
        platforms::xeon_2s(),
        platforms::knl_tiles(),
        platforms::ccx_server(12),
    ]
}

/// Collects `spec` sparsely through a noisy, drifting probe.
fn collect(spec: &MachineSpec, seed: u64) -> Result<Collected, String> {
    let mut probe = SimProbe::new(spec)
        .and_then(|p| p.with_drift(1.3, 100))
        .map_err(|e| e.to_string())?;
    let opts = SparseOptions {
        seed,
        ..SparseOptions::default()
    };
    collect_sparse(&mut probe, &opts, &mut |_, _| {}).map_err(|e| e.to_string())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sigma: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0.02);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    println!(
        "{:<22} {:>4} {:>6} {:>6} {:>7} {:>8}  result",
        "platform", "N", "pairs", "calls", "calls/N", "N(N-1)/2"
    );
    let mut failed = 0;
    let all = specs();
    for base in &all {
        let s = if base.name == "hybrid-desktop" {
            sigma / 5.0
        } else {
            sigma
        };
        let spec = base
            .clone()
            .with_noise(Noise::lognormal(s, seed).with_outliers(0.002, 3.0));
        let n = spec.contexts();
        let (pairs, calls, verdict) = match collect(&spec, seed) {
            Ok(c) => {
                let verdict = infer(&c.latency, &spec.infer_options())
                    .map_err(|e| e.to_string())
                    .and_then(|topo| spec.truth().check(&topo));
                (c.pairs, c.measurements, verdict)
            }
            Err(e) => (0, 0, Err(e)),
        };
        let verdict = verdict.map_or_else(
            |e| {
                failed += 1;
                format!("FAIL {e}")
            },
            |()| "correct".to_string(),
        );
        println!(
            "{:<22} {n:>4} {pairs:>6} {calls:>6} {:>7.2} {:>8}  {verdict}",
            spec.name,
            calls as f64 / n as f64,
            n * (n - 1) / 2,
        );
    }
    println!("{failed} of {} failed", all.len());
}
