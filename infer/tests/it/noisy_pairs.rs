//! Noisy pairs do not sink a collection: a probe that injects noise (a pair flagged noisy,
//! a busy context, a pair given up) through `collect_full`, `collect_sparse` and the
//! inference. The pairs are flagged, the structure is found, and only a collection in which
//! nothing could be measured fails.

use topoprobe_infer::sim::{platforms, Injected, MachineSpec, Noise, SimProbe};
use topoprobe_infer::sparse::{collect_sparse, SparseOptions};
use topoprobe_infer::{collect_full, infer, Collected, InferError, InferOptions, PairFlag};
use topoprobe_model::{LatencyMatrix, MatrixProbe, StructureLevel, Topology, WarningKind};

/// A simulated machine with a little noise.
fn sim(spec: &MachineSpec, seed: u64) -> (MachineSpec, SimProbe) {
    let spec = spec.clone().with_noise(Noise::lognormal(0.01, seed));
    let probe = SimProbe::new(&spec).expect("valid spec");
    (spec, probe)
}

fn warning(topo: &Topology, kind: WarningKind) -> Option<&str> {
    topo.validation()
        .warnings
        .iter()
        .find(|w| w.kind == kind)
        .map(|w| w.message.as_str())
}

fn noisy_rows(c: &Collected) -> Vec<(usize, usize)> {
    c.noisy().map(|p| (p.a, p.b)).collect()
}

#[test]
fn a_noisy_pair_is_flagged_in_a_full_collection_and_decides_nothing() {
    let (spec, inner) = sim(&platforms::cmt_modules(), 1);
    let mut p = Injected::new(inner, |a, b| (a, b) == (1, 6));
    p.scale = 1.1;
    let c = collect_full(&mut p, &mut |_, _| {}).expect("collected");
    assert_eq!(noisy_rows(&c), [(1, 6)]);
    match &c.flagged[0].flag {
        PairFlag::Noisy {
            spread,
            limit,
            batches,
        } => assert_eq!((*spread, *limit, *batches), (0.4, 0.14, 5)),
        f => panic!("{f:?}"),
    }
    // The value is kept, with its spread.
    assert!(c.latency.get(1, 6).is_some() && c.measured.get(6, 1).is_some());
    assert_eq!(c.spread.get(1, 6), Some(0.4));
    let topo = c.infer(&spec.infer_options()).expect("inferred");
    spec.truth()
        .check(&topo)
        .expect("the structure of the other pairs");
    let w = warning(&topo, WarningKind::NoisyPairs).expect("warned");
    assert!(
        w.starts_with("1 pair kept although the spread")
            && w.contains("(1, 6) spread 40.0% above the 14.0% limit after 5 batches")
            && w.contains("they decide no level"),
        "{w}"
    );
    assert!(topo.validation().unresolved.is_empty());
}

#[test]
fn cpu_numbers_name_the_noisy_pairs() {
    let (spec, inner) = sim(&platforms::cmt_modules(), 2);
    let mut p = Injected::new(inner, |a, b| (a, b) == (0, 3));
    let c = collect_full(&mut p, &mut |_, _| {}).expect("collected");
    let opts = InferOptions {
        os_ids: Some((0..8).map(|r| 100 + r).collect()),
        ..spec.infer_options()
    };
    let topo = c.infer(&opts).expect("inferred");
    let w = warning(&topo, WarningKind::NoisyPairs).expect("warned");
    assert!(
        w.starts_with("1 pair of CPUs kept") && w.contains("(100, 103)"),
        "{w}"
    );
    assert_eq!(topo.provenance().parameters["pairs_noisy"], "1");
}

/// Eight contexts all 50 ns apart; two pairs read at 10 ns, both noisy.
fn flat_with_two_fast_noisy_pairs() -> Collected {
    let fast = |a: usize, b: usize| matches!((a, b), (0, 1) | (2, 3));
    let m = LatencyMatrix::from_fn(8, |a, b| {
        (a != b).then_some(if fast(a.min(b), a.max(b)) { 10.0 } else { 50.0 })
    });
    let mut p = Injected::new(MatrixProbe::new(&m), fast);
    collect_full(&mut p, &mut |_, _| {}).expect("collected")
}

#[test]
fn a_level_that_rests_on_noisy_pairs_is_unresolved_with_low_confidence() {
    let c = flat_with_two_fast_noisy_pairs();
    assert_eq!(noisy_rows(&c), [(0, 1), (2, 3)]);
    let plain = infer(&c.latency, &InferOptions::default()).expect("inferred");
    let topo = c.infer(&InferOptions::default()).expect("inferred");
    // The same structure as the table read plainly: the noisy pairs are kept …
    assert_eq!(topo.num_cores(), plain.num_cores());
    assert_eq!(topo.num_cores(), 6, "two SMT cores of the fast pairs");
    // … but the core level rests on them: without them, eight single cores.
    let v = topo.validation();
    let core = v
        .confidence_of(StructureLevel::Core)
        .expect("core confidence");
    assert!(core <= 0.5, "{core}");
    let u = v
        .unresolved
        .iter()
        .find(|u| u.level == StructureLevel::Core && u.reason.starts_with("decided by noisy"))
        .expect("unresolved core level");
    assert!(u.reason.contains("8 cores instead of 6"), "{}", u.reason);
    let w = warning(&topo, WarningKind::NoisyPairs).expect("warned");
    assert!(w.contains("Without them the core level differs"), "{w}");
}

#[test]
fn a_busy_context_is_flagged_in_a_sparse_collection_and_the_structure_found() {
    for seed in 1..=3 {
        let (spec, inner) = sim(&platforms::ivy(), seed);
        // Every pair of context 5 noisy and 15% slow: a busy loop on its CPU.
        let mut p = Injected::new(inner, |a, b| a == 5 || b == 5);
        p.scale = 1.15;
        let c =
            collect_sparse(&mut p, &SparseOptions::default(), &mut |_, _| {}).expect("collected");
        let flagged = noisy_rows(&c);
        assert!(!flagged.is_empty());
        assert!(
            flagged.iter().all(|&(a, b)| a == 5 || b == 5),
            "{flagged:?}"
        );
        // Every noisy pair was read again before it was believed.
        for k in &flagged {
            assert!(
                p.readings(k.0, k.1) >= 2,
                "{k:?} read {} times",
                p.readings(k.0, k.1)
            );
        }
        let topo = c.infer(&spec.infer_options()).expect("inferred");
        spec.truth()
            .check(&topo)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(warning(&topo, WarningKind::NoisyPairs).is_some());
    }
}

#[test]
fn a_noisy_reading_confirmed_by_a_quiet_one_is_not_flagged() {
    let (spec, inner) = sim(&platforms::ivy(), 4);
    // The first reading of every pair of context 7 is noisy and 3× off.
    let mut p = Injected::new(inner, |a, b| a == 7 || b == 7);
    p.scale = 3.0;
    p.first_only = true;
    let c = collect_sparse(&mut p, &SparseOptions::default(), &mut |_, _| {}).expect("collected");
    assert!(c.flagged.is_empty(), "{:?}", c.flagged);
    let topo = c.infer(&spec.infer_options()).expect("inferred");
    spec.truth().check(&topo).expect("structure");
    assert!(warning(&topo, WarningKind::NoisyPairs).is_none());
}

#[test]
fn pairs_given_up_are_missing_and_flagged_and_nothing_measured_fails() {
    let (spec, inner) = sim(&platforms::cmt_modules(), 5);
    let mut p = Injected::new(inner, |_, _| false);
    p.given_up = Box::new(|a, b| (a, b) == (2, 7));
    let c = collect_full(&mut p, &mut |_, _| {}).expect("collected");
    assert_eq!(c.given_up().count(), 1);
    assert_eq!(c.latency.get(2, 7), None);
    let topo = c.infer(&spec.infer_options()).expect("inferred");
    let w = warning(&topo, WarningKind::PairsGivenUp).expect("warned");
    assert!(
        w.contains("1 pair could not be measured")
            && w.contains("(2, 7) the partner thread stalled"),
        "{w}"
    );

    for sparse in [false, true] {
        let (_, inner) = sim(&platforms::ivy(), 6);
        let mut p = Injected::new(inner, |_, _| false);
        p.given_up = Box::new(|_, _| true);
        let e = if sparse {
            collect_sparse(&mut p, &SparseOptions::default(), &mut |_, _| {}).unwrap_err()
        } else {
            collect_full(&mut p, &mut |_, _| {}).unwrap_err()
        };
        assert!(matches!(e, InferError::NothingMeasured { .. }), "{e}");
        let m = e.to_string();
        assert!(
            m.contains("could be measured") && m.contains("the partner thread stalled"),
            "{m}"
        );
    }
}
