//! Infers every simulated platform (noise sigma 0.02, seed 1) and compares the result with
//! the ground truth.
//!
//! `cargo run -p topoprobe-infer --example sim_check [sigma] [seed]`

use topoprobe_infer::sim::{platforms, Noise};
use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::ContextId;

/// Context ids in Linux list syntax.
fn ids(set: &[ContextId]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < set.len() {
        let mut j = i;
        while j + 1 < set.len() && set[j + 1].0 == set[j].0 + 1 {
            j += 1;
        }
        parts.push(if i == j {
            set[i].0.to_string()
        } else {
            format!("{}-{}", set[i].0, set[j].0)
        });
        i = j + 1;
    }
    parts.join(",")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sigma: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0.02);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut failed = 0;
    for spec in platforms::all() {
        let spec = spec.with_noise(Noise::lognormal(sigma, seed));
        let opts = InferOptions {
            units: spec.units,
            ghz: spec.ghz,
            ..Default::default()
        };
        let started = std::time::Instant::now();
        let verdict = match infer(&spec.matrix(), &opts) {
            Ok(topo) => match spec.truth().check(&topo) {
                Ok(()) => format!(
                    "pass  ({} cores, {} groups, {} sockets)",
                    topo.num_cores(),
                    topo.num_groups(),
                    topo.num_sockets()
                ),
                Err(e) => {
                    failed += 1;
                    let groups: Vec<String> = topo
                        .groups()
                        .iter()
                        .map(|g| format!("{}:{}", g.depth, ids(&g.contexts)))
                        .collect();
                    format!(
                        "FAIL  {e}\n    inferred groups (depth:contexts): {}",
                        groups.join(" ")
                    )
                }
            },
            Err(e) => {
                failed += 1;
                format!("ERROR {e}")
            }
        };
        println!(
            "{:<22} {:>4} ctx {:>7.1?}  {verdict}",
            spec.name,
            spec.contexts(),
            started.elapsed()
        );
    }
    println!("{failed} of {} failed", platforms::all().len());
}
