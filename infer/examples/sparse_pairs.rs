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
//!
//! `... sparse_pairs sweep [first-seed] [last-seed]`: every platform at noise 0.01, 0.02 and
//! 0.03 over seeds 1 to 12 (by default); prints the failures, the cases over 8·N calls, and
//! the counts.
//!
//! `... sparse_pairs <sigma> <seed> <platform>`: that case alone, with the pairs of the
//! filled table farthest from the truth (measured or filled).

use topoprobe_infer::sim::{platforms, MachineSpec, Noise, SimProbe};
use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::Collected;

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

/// `base` with the noise of the runs: `sigma` per sample (a fifth of it on the hybrid).
fn noisy(base: &MachineSpec, sigma: f64, seed: u64) -> MachineSpec {
    let s = if base.name == "hybrid-desktop" {
        sigma / 5.0
    } else {
        sigma
    };
    base.clone()
        .with_noise(Noise::lognormal(s, seed).with_outliers(0.002, 3.0))
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

/// Collects and infers one case: (pairs, calls, verdict) and the collection.
fn run(spec: &MachineSpec, seed: u64) -> (usize, usize, Result<(), String>, Option<Collected>) {
    match collect(spec, seed) {
        Ok(c) => {
            let verdict = c
                .infer(&spec.infer_options())
                .map_err(|e| e.to_string())
                .and_then(|topo| spec.truth().check(&topo));
            (c.pairs, c.measurements, verdict, Some(c))
        }
        Err(e) => (0, 0, Err(e), None),
    }
}

/// Every platform at three noise levels over seeds `first..=last`.
fn sweep(first: u64, last: u64) {
    let (mut cases, mut failed, mut over) = (0, 0, 0);
    for sigma in [0.01, 0.02, 0.03] {
        for seed in first..=last {
            for base in specs() {
                let spec = noisy(&base, sigma, seed);
                let n = spec.contexts();
                let (_, calls, verdict, _) = run(&spec, seed);
                cases += 1;
                if let Err(e) = verdict {
                    failed += 1;
                    println!("FAIL {sigma} seed {seed} {}: {e}", spec.name);
                } else if calls > 8 * n {
                    over += 1;
                    println!(
                        "OVER {sigma} seed {seed} {}: {:.2}·N",
                        spec.name,
                        calls as f64 / n as f64
                    );
                }
            }
        }
    }
    println!("{failed} of {cases} failed, {over} correct over 8·N");
}

/// One case, with the table's worst pairs against the truth.
fn detail(sigma: f64, seed: u64, name: &str) {
    let Some(base) = specs().into_iter().find(|s| s.name == name) else {
        println!("no platform {name}");
        return;
    };
    let spec = noisy(&base, sigma, seed);
    let n = spec.contexts();
    let (pairs, calls, verdict, c) = run(&spec, seed);
    println!("{name}: {pairs} pairs, {calls} calls, {verdict:?}");
    let Some(c) = c else { return };
    if std::env::var_os("SPARSE_TOPO").is_some() {
        if let Ok(topo) = c.infer(&spec.infer_options()) {
            println!("levels: {:#?}", topo.levels());
            println!("validation: {:#?}", topo.validation());
        }
    }
    let mut worst = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            if let Some(v) = c.latency.get(a, b) {
                let t = spec.true_latency(a, b);
                worst.push(((v / t).ln().abs(), a, b, v, t, c.measured.get(a, b)));
            }
        }
    }
    worst.sort_by(|x, y| y.0.total_cmp(&x.0));
    if let Ok(pairs) = std::env::var("SPARSE_PAIRS") {
        for p in pairs.split(';') {
            let v: Vec<usize> = p.split(',').filter_map(|x| x.trim().parse().ok()).collect();
            if let [a, b] = v[..] {
                println!(
                    "pair ({a}, {b}): table {:?}, measured {:?}, truth {:.1}",
                    c.latency.get(a, b),
                    c.measured.get(a, b),
                    spec.true_latency(a, b)
                );
            }
        }
    }
    for (_, a, b, v, t, m) in worst.iter().take(20) {
        println!("({a}, {b}): table {v:.1}, truth {t:.1}, measured {m:?}");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("sweep") {
        let first = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
        let last = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(12);
        sweep(first, last);
        return;
    }
    let sigma: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(0.02);
    let seed: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    if let Some(name) = args.get(2) {
        detail(sigma, seed, name);
        return;
    }
    println!(
        "{:<22} {:>4} {:>6} {:>6} {:>7} {:>8}  result",
        "platform", "N", "pairs", "calls", "calls/N", "N(N-1)/2"
    );
    let mut failed = 0;
    let all = specs();
    for base in &all {
        let spec = noisy(base, sigma, seed);
        let n = spec.contexts();
        let (pairs, calls, verdict, _) = run(&spec, seed);
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
