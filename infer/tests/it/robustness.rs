//! Inference on perturbed real matrices: noise, a single outlier pair, a coarse timer,
//! renumbering, units, triangle-only input and partially measured machines.

use crate::common;

use common::{canon, excluded, matrix, predicted, truth, wrong_levels, TruthRow};
use rand::seq::SliceRandom;
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::{LatencyMatrix, LatencyUnit, WarningKind};

/// Machines whose structure is clearly visible (not the weak-cluster or tiny ones).
const CLEAR: [&str; 7] = [
    "nv-2x-xeon-gold-6242",
    "nv-epyc-7773x",
    "nv-ryzen9-5950x",
    "nv-2x-epyc-7742",
    "nv-xeon-phi-7210-concyclics",
    "nv-2x-power7",
    "nv-graviton2",
];

fn perturb(
    m: &LatencyMatrix,
    mut f: impl FnMut(usize, usize, f64) -> Option<f64>,
) -> LatencyMatrix {
    let n = m.len();
    let mut out = LatencyMatrix::empty(n);
    for a in 0..n {
        for b in a + 1..n {
            if let Some(v) = m.get(a, b) {
                let x = f(a, b, v);
                out.set(a, b, x);
                out.set(b, a, x);
            }
        }
    }
    out
}

fn check(
    id: &str,
    m: &LatencyMatrix,
    rows: &[TruthRow],
    opts: &InferOptions,
) -> Result<(), String> {
    let topo = infer(m, opts).map_err(|e| e.to_string())?;
    let wrong = wrong_levels(&topo, rows, excluded(id));
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{id}: wrong {wrong:?} ({} cores, {} groups, {} sockets; unresolved {:?})",
            topo.num_cores(),
            topo.num_groups(),
            topo.num_sockets(),
            topo.validation().unresolved
        ))
    }
}

#[test]
fn one_percent_noise_changes_nothing() {
    let mut errors = Vec::new();
    for (seed, id) in CLEAR.iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(seed as u64);
        let noisy = perturb(&matrix(id), |_, _, v| {
            let z: f64 = rng.sample(rand_distr_normal());
            Some(v * (0.01 * z).exp())
        });
        if let Err(e) = check(id, &noisy, &truth(id), &InferOptions::default()) {
            errors.push(e);
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// A standard normal sample from two uniforms (Box-Muller), to avoid another dependency.
fn rand_distr_normal() -> impl rand::distr::Distribution<f64> {
    struct Normal;
    impl rand::distr::Distribution<f64> for Normal {
        fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
            let u1: f64 = rng.random_range(f64::EPSILON..1.0);
            let u2: f64 = rng.random::<f64>();
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
    }
    Normal
}

#[test]
fn one_outlier_pair_does_not_invent_a_level() {
    for id in [
        "nv-2x-xeon-gold-6242",
        "nv-epyc-7773x",
        "nv-2x-power7",
        "nv-i9-12900k",
    ] {
        let m = matrix(id);
        let clean = infer(&m, &InferOptions::default()).expect("clean");
        for (pair, factor) in [((0usize, 5usize), 0.3), ((1, 6), 4.0), ((2, 9), 0.05)] {
            let bad = perturb(&m, |a, b, v| {
                Some(if (a, b) == pair { v * factor } else { v })
            });
            let topo = infer(&bad, &InferOptions::default()).expect("inference");
            assert_eq!(
                topo.num_levels(),
                clean.num_levels(),
                "{id}: pair {pair:?} x{factor} changed the levels: {:?}",
                topo.levels()
            );
            assert_eq!(
                predicted(&topo),
                predicted(&clean),
                "{id}: pair {pair:?} x{factor}"
            );
            assert!(
                topo.validation()
                    .warnings
                    .iter()
                    .any(|w| w.kind == WarningKind::Outlier),
                "{id}: the outlier pair {pair:?} x{factor} is reported"
            );
        }
    }
}

#[test]
fn renumbering_contexts_renumbers_the_result() {
    for (seed, id) in [
        "nv-i9-12900k",
        "nv-2x-epyc-7742",
        "nv-kunpeng-920-6426",
        "hy-apple-m1pro-10c",
    ]
    .iter()
    .enumerate()
    {
        let m = matrix(id);
        let rows = truth(id);
        let mut perm: Vec<usize> = (0..m.len()).collect();
        perm.shuffle(&mut ChaCha8Rng::seed_from_u64(seed as u64 + 10));
        let shuffled = LatencyMatrix::from_fn(m.len(), |a, b| m.get(perm[a], perm[b]));
        let rows: Vec<TruthRow> = perm.iter().map(|&p| rows[p].clone()).collect();
        check(id, &shuffled, &rows, &InferOptions::default()).unwrap();
    }
}

#[test]
fn cycles_and_ns_give_the_same_structure() {
    for id in CLEAR {
        let m = matrix(id);
        let ghz = 2.7;
        let cycles = perturb(&m, |_, _, v| Some(v * ghz));
        let opts = InferOptions {
            units: LatencyUnit::Cycles,
            ghz: Some(ghz),
            ..InferOptions::default()
        };
        let a = infer(&m, &InferOptions::default()).expect("ns");
        let b = infer(&cycles, &opts).expect("cycles");
        assert_eq!(predicted(&a), predicted(&b), "{id}");
    }
}

#[test]
fn a_lower_triangle_gives_the_same_result_as_the_full_matrix() {
    for id in ["nv-ryzen9-5950x", "kc-fx-8300", "nv-2x-xeon-gold-6242"] {
        let m = matrix(id);
        let lower = LatencyMatrix::from_fn(m.len(), |a, b| if b < a { m.get(a, b) } else { None });
        let a = infer(&m, &InferOptions::default()).expect("full");
        let b = infer(&lower, &InferOptions::default()).expect("lower");
        assert_eq!(predicted(&a), predicted(&b), "{id}");
    }
}

#[test]
fn a_coarse_timer_is_detected_and_tolerated() {
    for (id, step) in [
        ("nv-2x-xeon-gold-6242", 1.0),
        ("nv-epyc-7773x", 1.0),
        ("nv-2x-epyc-7742", 2.0),
    ] {
        let m = matrix(id);
        let q = perturb(&m, |_, _, v| Some((v / step).round().max(1.0) * step));
        let topo = infer(&q, &InferOptions::default()).expect("inference");
        assert!(
            wrong_levels(&topo, &truth(id), excluded(id)).is_empty(),
            "{id}"
        );
        assert!(
            topo.validation()
                .warnings
                .iter()
                .any(|w| w.kind == WarningKind::Quantized),
            "{id}: quantization reported"
        );
    }
}

#[test]
fn a_partially_measured_machine_has_unequal_components() {
    // Measure only the first 40 of the 64 contexts of a 2-socket machine (siblings i and
    // i+32; socket 0 = 0-15 and 32-47): socket 0 keeps 8 cores with both contexts and 8
    // single contexts, socket 1 keeps 16 single contexts.
    let id = "nv-2x-xeon-gold-6242";
    let m = matrix(id);
    let keep: Vec<usize> = (0..40).collect();
    let sub = m.select(&keep);
    let rows: Vec<TruthRow> = truth(id).into_iter().take(40).collect();
    check(id, &sub, &rows, &InferOptions::default()).unwrap();
    let topo = infer(&sub, &InferOptions::default()).expect("inference");
    let sizes: Vec<usize> = topo.sockets().iter().map(|s| s.contexts.len()).collect();
    assert_eq!(sizes, vec![24, 16]);
    let per_core: Vec<usize> = topo.cores().iter().map(|c| c.contexts.len()).collect();
    assert_eq!(per_core.iter().filter(|&&c| c == 2).count(), 8);
    assert_eq!(canon(&per_core).len(), 2);
}

#[test]
fn a_directed_matrix_is_symmetrized_and_reported() {
    let id = "hy-apple-m1pro-10c";
    let topo = infer(&matrix(id), &InferOptions::default()).expect("inference");
    assert!(wrong_levels(&topo, &truth(id), excluded(id)).is_empty());
    assert!(topo.latency_tables().symmetrization.is_some());
    // The raw table keeps both directions.
    let raw = &topo.latency_tables().raw;
    assert_ne!(raw.get(0, 1), raw.get(1, 0));
}
