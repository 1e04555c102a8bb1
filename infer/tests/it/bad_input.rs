//! Inference never panics: degenerate and malformed tables give a clean error or a
//! consistent topology.

use proptest::prelude::*;
use topoprobe_infer::{infer, InferError, InferOptions};
use topoprobe_model::{LatencyMatrix, LatencyUnit, WarningKind};

#[test]
fn too_small_tables_are_errors() {
    for n in [0, 1] {
        let m = LatencyMatrix::empty(n);
        assert!(
            matches!(infer(&m, &InferOptions::default()), Err(InferError::TooSmall(k)) if k == n)
        );
    }
}

#[test]
fn a_context_without_any_latency_is_an_error() {
    let m = LatencyMatrix::from_fn(4, |a, b| (a != 2 && b != 2).then_some(10.0));
    let e = infer(&m, &InferOptions::default()).unwrap_err();
    assert!(matches!(e, InferError::Unmeasured(2)), "{e}");
    assert!(e.to_string().contains("context 2"));
}

#[test]
fn negative_and_nan_latencies_are_errors() {
    for bad in [-3.0, f64::NAN, f64::INFINITY, 1e13, 1e308] {
        let mut m = LatencyMatrix::from_fn(3, |_, _| Some(10.0));
        m.set(0, 1, Some(bad));
        let e = infer(&m, &InferOptions::default()).unwrap_err();
        assert!(
            matches!(e, InferError::BadValue { a: 0, b: 1, .. }),
            "{bad}: {e}"
        );
    }
}

#[test]
fn a_zero_latency_is_below_resolution_with_a_warning() {
    // Two dies of two cores; the timer (steps of 5/3 ns) read one pair inside a die as 0;
    // 1e-300 and a denormal are no better than 0, and are treated the same.
    for zero in [0.0, 1e-300, f64::MIN_POSITIVE / 4.0] {
        let m = LatencyMatrix::from_fn(4, |a, b| {
            Some(match (a / 2 == b / 2, a.min(b)) {
                (true, 0) => zero,
                (true, _) => 26.6667,
                (false, _) if (a + b) % 2 == 0 => 51.6667,
                _ => 53.3333,
            })
        });
        let topo = infer(&m, &InferOptions::default()).expect("a zero is not an error");
        let w = topo
            .validation()
            .warnings
            .iter()
            .find(|w| w.kind == WarningKind::BelowResolution)
            .unwrap_or_else(|| panic!("{zero}: a warning names the zero"));
        assert!(w.message.contains("(0, 1)"), "{}", w.message);
        assert_eq!(topo.num_contexts(), 4);
        assert!(
            topo.latency_tables().normalized.get(0, 1).unwrap_or(0.0) > 1e-3,
            "{zero}: read as one timer step"
        );
    }
    let all_zero = LatencyMatrix::from_fn(3, |_, _| Some(0.0));
    assert!(matches!(
        infer(&all_zero, &InferOptions::default()),
        Err(InferError::BadValue { .. })
    ));
}

#[test]
fn hints_out_of_range_are_errors() {
    let m = LatencyMatrix::from_fn(4, |_, _| Some(10.0));
    for sockets in [0, 5] {
        let opts = InferOptions {
            sockets: Some(sockets),
            ..InferOptions::default()
        };
        assert!(matches!(
            infer(&m, &opts),
            Err(InferError::InvalidOption(_))
        ));
    }
    let opts = InferOptions {
        ghz: Some(-1.0),
        ..InferOptions::default()
    };
    assert!(matches!(
        infer(&m, &opts),
        Err(InferError::InvalidOption(_))
    ));
    let opts = InferOptions {
        os_ids: Some(vec![0, 1]),
        ..InferOptions::default()
    };
    assert!(matches!(
        infer(&m, &opts),
        Err(InferError::InvalidOption(_))
    ));
}

#[test]
fn degenerate_tables_give_consistent_topologies() {
    // Two contexts; a constant table; huge and tiny values; a single measured pair per row.
    let cases: Vec<LatencyMatrix> = vec![
        LatencyMatrix::from_fn(2, |_, _| Some(55.0)),
        LatencyMatrix::from_fn(16, |_, _| Some(40.0)),
        LatencyMatrix::from_fn(8, |a, b| Some(if a / 2 == b / 2 { 1e11 } else { 1e12 })),
        // Tables hold f32 entries: tiny down to about 1e-38.
        LatencyMatrix::from_fn(8, |a, b| Some(if a / 2 == b / 2 { 1e-30 } else { 1e-29 })),
        LatencyMatrix::from_fn(6, |a, b| {
            ((a + 1) % 6 == b || (b + 1) % 6 == a).then_some(30.0)
        }),
    ];
    for m in cases {
        let topo = infer(&m, &InferOptions::default()).expect("a topology");
        assert_eq!(topo.num_contexts(), m.len());
        let covered: usize = topo.cores().iter().map(|c| c.contexts.len()).sum();
        assert_eq!(covered, m.len());
    }
}

#[test]
fn two_contexts_far_apart_are_two_cores_of_one_socket() {
    let m = LatencyMatrix::from_fn(2, |_, _| Some(60.0));
    let topo = infer(&m, &InferOptions::default()).expect("a topology");
    assert_eq!((topo.num_sockets(), topo.num_cores()), (1, 2));
    assert!(!topo.has_smt());
}

fn matrix_strategy() -> impl Strategy<Value = LatencyMatrix> {
    (2usize..40).prop_flat_map(|n| {
        proptest::collection::vec(
            prop_oneof![
                3 => (1e-3..1e4_f64).prop_map(Some),
                1 => (1e-200..1e12_f64).prop_map(Some),
                1 => Just(None),
            ],
            n * n,
        )
        .prop_map(move |v| LatencyMatrix::from_fn(n, |a, b| v[a * n + b]))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_tables_never_panic(m in matrix_strategy(), cycles in any::<bool>(), sockets in proptest::option::of(1usize..4)) {
        let opts = InferOptions {
            units: if cycles { LatencyUnit::Cycles } else { LatencyUnit::Ns },
            sockets: sockets.filter(|&s| s <= m.len()),
            ..InferOptions::default()
        };
        match infer(&m, &opts) {
            Ok(topo) => {
                prop_assert_eq!(topo.num_contexts(), m.len());
                // Consistent enough to survive its own file format.
                let json = topoprobe_model::format::json::to_json_string(&topo);
                prop_assert!(topoprobe_model::format::json::from_json_str(&json, std::path::Path::new("x")).is_ok());
            }
            Err(e) => prop_assert!(matches!(e, InferError::Unmeasured(_))),
        }
    }
}
