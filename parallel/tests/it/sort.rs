//! Properties of the topology-aware sort: equal to the standard library's sort for random,
//! sorted, reversed, few-distinct, all-equal and skewed inputs of every size class, on every path
//! (comparison, radix, any `Ord`), sequential and parallel, on one- and two-socket machines.

use proptest::prelude::*;
use topoprobe_infer::infer;
use topoprobe_infer::sim::{platforms, MachineSpec};
use topoprobe_model::Topology;
use topoprobe_parallel::sort::Sorter;

fn sim(spec: &MachineSpec) -> Topology {
    infer(&spec.true_matrix(), &spec.infer_options()).expect("inference")
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Random,
    Sorted,
    Reversed,
    FewDistinct,
    AllEqual,
    /// Nine keys in ten below 2¹⁶: one bucket of the first radix partition holds most keys.
    Skewed,
}

fn input(shape: Shape, n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut v: Vec<u64> = (0..n).map(|_| next()).collect();
    match shape {
        Shape::Random => {}
        Shape::Sorted => v.sort_unstable(),
        Shape::Reversed => {
            v.sort_unstable();
            v.reverse();
        }
        Shape::FewDistinct => v.iter_mut().for_each(|k| *k %= 5),
        Shape::AllEqual => v.iter_mut().for_each(|k| *k = 42),
        Shape::Skewed => v
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| i % 10 != 0)
            .for_each(|(_, k)| *k &= 0xffff),
    }
    v
}

fn shapes() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Random),
        Just(Shape::Sorted),
        Just(Shape::Reversed),
        Just(Shape::FewDistinct),
        Just(Shape::AllEqual),
        Just(Shape::Skewed),
    ]
}

/// Size classes: empty and tiny, under one radix pass's cutoff, small, and large enough
/// for every worker to have a chunk of thousands.
fn sizes() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..4, 4usize..64, 64usize..2000, 2000usize..60_000]
}

fn sorters() -> Vec<Sorter> {
    let two_sockets = sim(&platforms::ivy());
    let flat = sim(&platforms::flat_mesh(4));
    vec![
        // Forced parallel (threshold 0) on 6 workers over 2 sockets and 3 on one socket.
        Sorter::new(&two_sockets, Some(6))
            .unwrap()
            .with_thresholds(0, 0),
        Sorter::new(&flat, Some(3)).unwrap().with_thresholds(0, 0),
        // The default thresholds (sequential for small inputs).
        Sorter::new(&flat, Some(2)).unwrap(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_path_equals_std(shape in shapes(), n in sizes(), seed in any::<u64>()) {
        let v = input(shape, n, seed);
        let mut want = v.clone();
        want.sort();
        for s in sorters() {
            let mut a = v.clone();
            s.sort(&mut a);
            prop_assert_eq!(&a, &want, "sort, {} workers", s.threads());
            let mut b = v.clone();
            s.sort_radix(&mut b);
            prop_assert_eq!(&b, &want, "radix, {} workers", s.threads());
            let mut c: Vec<String> = v.iter().map(|x| format!("{x:020}")).collect();
            let mut want_c = c.clone();
            want_c.sort();
            s.sort_any(&mut c);
            prop_assert_eq!(&c, &want_c, "any, {} workers", s.threads());
            let mut d: Vec<u32> = v.iter().map(|&x| x as u32).collect();
            let mut want_d = d.clone();
            want_d.sort_unstable();
            s.sort_radix(&mut d);
            prop_assert_eq!(&d, &want_d, "radix u32, {} workers", s.threads());
        }
    }

    #[test]
    fn signed_keys_sort_in_order(v in proptest::collection::vec(any::<i64>(), 0..5000)) {
        let s = Sorter::new(&sim(&platforms::flat_mesh(4)), Some(3)).unwrap().with_thresholds(0, 0);
        let mut a = v.clone();
        let mut want = v;
        want.sort_unstable();
        s.sort_radix(&mut a);
        prop_assert_eq!(a, want);
    }
}

#[test]
fn calibration_decides_thresholds_and_smt() {
    // This machine's topology is unknown to the test: a one-socket description of two
    // CPUs measures the same way on any machine with two CPUs.
    let flat = sim(&platforms::flat_mesh(2));
    let mut s = Sorter::new(&flat, Some(2)).unwrap();
    s.calibrate();
    let (c, r) = s.thresholds();
    assert!(c >= 2 && r >= 2, "{c} {r}");
    assert!(!s.notes().is_empty());
    assert!(
        s.notes().iter().any(|n| n.contains("SMT")),
        "{:?}",
        s.notes()
    );
}
