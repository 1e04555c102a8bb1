//! Parts of single cores joined by a link no core-to-core path inside one chip reaches are
//! sockets, and said to be unsure (a dual-socket PowerPC 970 has one core per socket,
//! joined at 576 ns); the same parts joined quickly are the cores of one chip.

use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::{LatencyMatrix, StructureLevel, Topology};

fn uniform(n: usize, ns: f64) -> LatencyMatrix {
    LatencyMatrix::from_fn(n, |a, b| (a != b).then_some(ns))
}

fn socket_texts(topo: &Topology) -> String {
    let v = topo.validation();
    let mut texts: Vec<String> = v.confidence.iter().map(|c| format!("{c:?}")).collect();
    texts.extend(
        v.unresolved
            .iter()
            .filter(|u| u.level == StructureLevel::Socket)
            .map(|u| format!("{u:?}")),
    );
    texts.join("\n")
}

#[test]
fn two_single_contexts_at_576_ns_are_two_sockets_flagged() {
    let topo = infer(&uniform(2, 576.0), &InferOptions::default()).unwrap();
    assert_eq!(topo.num_sockets(), 2, "{}", socket_texts(&topo));
    let flag = topo
        .validation()
        .unresolved
        .iter()
        .find(|u| u.level == StructureLevel::Socket)
        .expect("small sockets are flagged as unsure");
    assert!(format!("{flag:?}").contains("--sockets 1"), "{flag:?}");
}

#[test]
fn four_single_cores_beyond_the_sure_bound_are_four_sockets() {
    let topo = infer(&uniform(4, 300.0), &InferOptions::default()).unwrap();
    assert_eq!(topo.num_sockets(), 4, "{}", socket_texts(&topo));
}

#[test]
fn single_cores_joined_quickly_are_one_socket() {
    for ns in [30.0, 90.0, 200.0] {
        let topo = infer(&uniform(4, ns), &InferOptions::default()).unwrap();
        assert_eq!(topo.num_sockets(), 1, "{ns} ns: {}", socket_texts(&topo));
    }
}

/// The latency between two contexts of a synthetic machine.
type Shape = fn(usize, usize) -> f64;

#[test]
fn no_ratio_to_a_missing_inside_is_printed() {
    // Parts with no inside latency (single contexts) or an inside below the timer's
    // resolution (0): no "x their inside" ratio can be printed (it once read "infx").
    let shapes: [(usize, Shape); 3] = [
        (4, |a, b| if a / 2 == b / 2 { 120.0 } else { 400.0 }),
        (8, |a, b| match (a / 2 == b / 2, a / 4 == b / 4) {
            (true, _) => 0.0,
            (false, true) => 120.0,
            _ => 400.0,
        }),
        (8, |a, b| match (a / 2 == b / 2, a / 4 == b / 4) {
            (true, _) => 0.0,
            (false, true) => 400.0,
            _ => 420.0,
        }),
    ];
    for (n, f) in shapes {
        let m = LatencyMatrix::from_fn(n, |a, b| (a != b).then(|| f(a, b)));
        let topo = infer(&m, &InferOptions::default()).unwrap();
        let texts = socket_texts(&topo);
        assert!(!texts.contains("inf"), "{texts}");
        assert!(!texts.contains("NaN"), "{texts}");
    }
}

#[test]
fn modules_of_two_cores_joined_slowly_stay_one_socket() {
    // An AMD FX: four modules of two cores, joined at 220-340 ns, are one chip.
    let m = LatencyMatrix::from_fn(8, |a, b| {
        (a != b).then_some(if a / 2 == b / 2 { 44.0 } else { 280.0 })
    });
    let topo = infer(&m, &InferOptions::default()).unwrap();
    assert_eq!(topo.num_sockets(), 1, "{}", socket_texts(&topo));
}
