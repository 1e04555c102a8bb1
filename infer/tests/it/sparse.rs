//! Sparse collection: the simulated platforms are inferred correctly from `collect_sparse`'s
//! table, measured through a noisy, drifting probe with outliers, within 8·N probe calls.

use topoprobe_infer::sim::{platforms, MachineSpec, Noise, SimProbe};
use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::{Collected, InferError};
use topoprobe_model::{PairLatency, PairSample, ProbeError};

/// Outlier probability per probe call (a whole call 3× slower or faster).
const OUTLIERS: f64 = 0.002;

/// `spec` measured through a probe with noise `sigma` per sample, outliers and a warm-up
/// drift from 1.3× to 1× over the first 100 calls.
fn probe(spec: &MachineSpec, sigma: f64, seed: u64) -> (MachineSpec, SimProbe) {
    let spec = spec
        .clone()
        .with_noise(Noise::lognormal(sigma, seed).with_outliers(OUTLIERS, 3.0));
    let probe = SimProbe::new(&spec)
        .expect("valid spec")
        .with_drift(1.3, 100)
        .expect("valid drift");
    (spec, probe)
}

/// Collects `spec` sparsely and checks the inferred topology and the number of calls.
fn check(
    base: &MachineSpec,
    sigma: f64,
    seed: u64,
    opts: &SparseOptions,
) -> Result<Collected, String> {
    let (spec, mut p) = probe(base, sigma, seed);
    let n = spec.contexts();
    let mut calls = 0;
    let c = collect_sparse(&mut p, opts, &mut |done, total| {
        calls = done;
        assert!(done <= total, "progress {done} of {total}");
    })
    .map_err(|e| format!("{} seed {seed}: {e}", spec.name))?;
    assert_eq!(calls, c.measurements, "{}: progress", spec.name);
    assert_eq!(
        p.measurements(),
        c.measurements,
        "{}: probe calls",
        spec.name
    );
    for a in 0..n {
        for b in 0..n {
            if a != b && c.latency.get(a, b).is_none() {
                return Err(format!(
                    "{} seed {seed}: ({a}, {b}) has no value",
                    spec.name
                ));
            }
        }
    }
    let topo = c
        .infer(&spec.infer_options())
        .map_err(|e| format!("{} seed {seed}: {e}", spec.name))?;
    spec.truth()
        .check(&topo)
        .map_err(|e| format!("{} seed {seed}: {e}", spec.name))?;
    Ok(c)
}

/// Asserts correctness within 8·N calls for `base` over seeds 1 to 3.
fn within_budget(base: &MachineSpec, sigma: f64) {
    let n = base.contexts();
    let mut errors = Vec::new();
    for seed in 1..=3 {
        let opts = SparseOptions {
            seed,
            ..SparseOptions::default()
        };
        match check(base, sigma, seed, &opts) {
            Ok(c) if c.measurements <= 8 * n => {}
            Ok(c) => errors.push(format!(
                "{} seed {seed}: {} calls for {n} contexts (over 8·N)",
                base.name, c.measurements
            )),
            Err(e) => errors.push(e),
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn paper_platforms_within_8n() {
    for base in [
        platforms::ivy(),
        platforms::westmere(),
        platforms::haswell(),
        platforms::opteron(),
        platforms::sparc_t4(),
    ] {
        within_budget(&base, 0.02);
    }
}

#[test]
fn chiplet_server_within_8n() {
    within_budget(&platforms::epyc_2x64(), 0.02);
}

#[test]
fn home_node_chiplet_server_within_8n() {
    // Socket 0 is the home node: its cross-CCX pairs are as slow as cross-socket ones, so
    // from context 0 the other socket is one module whose inside (132 ns) is about half
    // its distance (267 ns): loosely bound, and tested against witnesses. A witness's
    // readings of that socket differ by a few noise widths only; with seed 1 they once
    // split it at random, which separated SMT siblings (67 and 195) silently.
    within_budget(&platforms::epyc_2x64_home_node(), 0.02);
}

#[test]
fn noise_level_differences_of_filled_values_do_not_split_sockets() {
    // Seed 6: the class values between the sockets came out 1.7% apart; exactly equal
    // fills within each made that look like two latency profiles (1 socket instead of 4)
    // until the table's resolution was passed on to the inference.
    for (base, sigma) in [
        (platforms::haswell(), 0.01),
        (platforms::haswell(), 0.02),
        (platforms::sparc_t4(), 0.02),
    ] {
        let c = check(&base, sigma, 6, &SparseOptions::default()).expect("correct");
        assert!(c.resolution.is_some_and(|r| r > 0.0), "{}", base.name);
    }
}

#[test]
fn single_outlier_readings_do_not_split_cores_or_sockets() {
    // Each of these once ended with a split socket or core: a slow reading between two
    // contexts of one socket taken for the link to another socket (ivy seed 10), a fast
    // one that put a context into its neighbour's module (home-node EPYC seed 3 with the
    // previous call order), a lone slowest context below the root (sparc-t4 seed 9).
    for (base, sigma, seed) in [
        (platforms::ivy(), 0.02, 10),
        (platforms::ivy(), 0.03, 10),
        (platforms::sparc_t4(), 0.02, 9),
        (platforms::epyc_2x64_home_node(), 0.02, 10),
    ] {
        let n = base.contexts();
        let c =
            check(&base, sigma, seed, &SparseOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            c.measurements <= 8 * n,
            "{} seed {seed}: {} calls",
            base.name,
            c.measurements
        );
    }
}

#[test]
fn hybrid_desktop_within_8n() {
    // E-core clusters differ from their surroundings by about 13%: they only show at the
    // noise real measurements of them have.
    within_budget(&platforms::hybrid_desktop(), 0.004);
}

#[test]
fn a_wrong_hint_costs_pairs_not_correctness() {
    for base in [
        platforms::ivy(),
        platforms::haswell(),
        platforms::epyc_2x64(),
    ] {
        let n = base.contexts();
        // Linux numbers siblings i and i + N/2; the hint pairs neighbours instead.
        let wrong: Vec<Vec<usize>> = (0..n / 2).map(|i| vec![2 * i, 2 * i + 1]).collect();
        let right: Vec<Vec<usize>> = (0..n / 2).map(|i| vec![i, i + n / 2]).collect();
        let none = check(&base, 0.02, 5, &SparseOptions::default()).unwrap();
        for hint in [wrong, right] {
            let opts = SparseOptions {
                hint: Some(hint),
                ..SparseOptions::default()
            };
            let c = check(&base, 0.02, 5, &opts).unwrap();
            assert!(
                c.measurements <= 2 * none.measurements,
                "{}: {} calls with a hint, {} without",
                base.name,
                c.measurements,
                none.measurements
            );
        }
    }
}

#[test]
fn a_shuffled_numbering_still_works_without_a_hint() {
    let base = platforms::haswell().with_numbering(topoprobe_infer::sim::Numbering::Random(3));
    check(&base, 0.02, 2, &SparseOptions::default()).unwrap();
}

#[test]
fn measured_pairs_are_reported() {
    let (spec, mut p) = probe(&platforms::ivy(), 0.02, 9);
    let c = collect_sparse(&mut p, &SparseOptions::default(), &mut |_, _| {}).unwrap();
    let n = spec.contexts();
    let mut measured = 0;
    for a in 0..n {
        for b in a + 1..n {
            if let Some(v) = c.measured.get(a, b) {
                measured += 1;
                assert!((v / spec.true_latency(a, b) - 1.0).abs() < 0.2 || v > 0.0);
            }
        }
    }
    assert_eq!(measured, c.pairs);
    assert!(c.pairs <= c.measurements && c.pairs < n * (n - 1) / 2);
    // SMT siblings (i, i + 20) are always measured.
    for i in 0..n / 2 {
        assert!(c.measured.get(i, i + n / 2).is_some(), "siblings {i}");
    }
}

#[test]
fn the_budget_is_a_hard_limit() {
    let (_, mut p) = probe(&platforms::haswell(), 0.02, 1);
    let opts = SparseOptions {
        budget: Some(150),
        ..SparseOptions::default()
    };
    let c = collect_sparse(&mut p, &opts, &mut |_, _| {}).unwrap();
    assert!(c.measurements <= 150, "{}", c.measurements);
    assert_eq!(p.measurements(), c.measurements);
}

/// A probe over a simulated machine that cannot measure some pairs, or fails.
struct Faulty {
    inner: SimProbe,
    fail_at: Option<usize>,
    calls: usize,
}

impl PairLatency for Faulty {
    fn contexts(&self) -> usize {
        self.inner.contexts()
    }

    fn measure(&mut self, a: usize, b: usize) -> Result<Option<PairSample>, ProbeError> {
        self.calls += 1;
        if self.fail_at == Some(self.calls) {
            return Err(ProbeError("the machine went away".into()));
        }
        if (a + b).is_multiple_of(7) || a == 3 || b == 3 {
            return Ok(None);
        }
        self.inner.measure(a, b)
    }
}

#[test]
fn missing_pairs_and_failures_do_not_panic() {
    let (_, inner) = probe(&platforms::ivy(), 0.02, 4);
    let mut p = Faulty {
        inner,
        fail_at: None,
        calls: 0,
    };
    let c = collect_sparse(&mut p, &SparseOptions::default(), &mut |_, _| {}).unwrap();
    assert!(c.latency.get(3, 5).is_none() || c.measured.get(3, 5).is_none());
    assert!(c.measured.get(3, 5).is_none());

    let (_, inner) = probe(&platforms::ivy(), 0.02, 4);
    let mut p = Faulty {
        inner,
        fail_at: Some(30),
        calls: 0,
    };
    let e = collect_sparse(&mut p, &SparseOptions::default(), &mut |_, _| {}).unwrap_err();
    assert!(matches!(e, InferError::Probe { .. }), "{e}");
}

#[test]
fn tiny_machines() {
    let spec = platforms::cmt_modules();
    let (_, mut p) = probe(&spec, 0.02, 1);
    let c = collect_sparse(&mut p, &SparseOptions::default(), &mut |_, _| {}).unwrap();
    assert_eq!(c.pairs, 28, "8 contexts are measured completely");

    struct One;
    impl PairLatency for One {
        fn contexts(&self) -> usize {
            1
        }
        fn measure(&mut self, _: usize, _: usize) -> Result<Option<PairSample>, ProbeError> {
            Ok(None)
        }
    }
    assert!(matches!(
        collect_sparse(&mut One, &SparseOptions::default(), &mut |_, _| {}),
        Err(InferError::TooSmall(1))
    ));
}
