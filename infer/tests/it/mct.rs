//! libmctop `.mct` files: the structure libmctop reports is recovered, and
//! `.mct → JSON → .mct` round-trips.

use crate::common;

use std::path::Path;

use common::{canon, data};
use topoprobe_infer::{infer, infer_mct, InferOptions};
use topoprobe_model::format::{json, mct};
use topoprobe_model::{LatencyUnit, Origin, Role};

fn ivy() -> (mct::MctFile, std::path::PathBuf) {
    let p = data("mct/lpdxeon2680.mct");
    (mct::read_mct(&p).expect("ivy .mct"), p)
}

#[test]
fn ivy_has_two_sockets_of_ten_smt_cores_and_the_papers_levels() {
    let (file, path) = ivy();
    let topo = infer_mct(&file, &path, &InferOptions::default()).expect("inference");
    assert_eq!(topo.num_contexts(), 40);
    assert_eq!(topo.num_sockets(), 2);
    assert_eq!(topo.num_cores(), 20);
    assert_eq!(topo.contexts_per_core(), 2);
    assert_eq!(topo.num_groups(), 0);
    // Contexts c and c+20 share a core; socket 0 holds 0-9 and 20-29.
    let core: Vec<usize> = topo.contexts().iter().map(|c| c.core.0).collect();
    for c in 0..20 {
        assert_eq!(core[c], core[c + 20]);
    }
    let socket: Vec<usize> = topo.contexts().iter().map(|c| c.socket.0).collect();
    let expect: Vec<usize> = (0..40).map(|c| usize::from(c % 20 >= 10)).collect();
    assert_eq!(canon(&socket), canon(&expect));
    // Levels 28 / 112 / 308 cycles.
    let levels: Vec<(Role, f64)> = topo
        .levels()
        .iter()
        .map(|l| (l.role, l.latency.median))
        .collect();
    assert_eq!(
        levels,
        vec![
            (Role::Smt, 28.0),
            (Role::Socket, 112.0),
            (Role::CrossSocket, 308.0)
        ]
    );
    assert_eq!(topo.units(), LatencyUnit::Cycles);
    assert_eq!(topo.facts().sockets.origin, Origin::File);
    assert_eq!(topo.facts().smt.origin, Origin::File);
    // Local nodes from the memory latencies; sections kept.
    assert_eq!(topo.num_nodes(), 2);
    assert_eq!(topo.sockets()[0].local_node.map(|n| n.0), Some(0));
    assert_eq!(topo.sockets()[1].local_node.map(|n| n.0), Some(1));
    assert!(topo.memory().is_some() && topo.caches().is_some() && topo.power().is_some());
    assert_eq!(topo.interconnects().len(), 1);
    assert_eq!(topo.interconnects()[0].latency.median, 308.0);
}

#[test]
fn ivy_is_inferred_without_the_files_hints_too() {
    let (file, _) = ivy();
    let opts = InferOptions {
        units: LatencyUnit::Cycles,
        ..InferOptions::default()
    };
    let topo = infer(&file.latency, &opts).expect("inference");
    assert_eq!((topo.num_sockets(), topo.num_cores()), (2, 20));
    assert_eq!(topo.facts().sockets.origin, Origin::Inferred);
    assert_eq!(topo.facts().smt.origin, Origin::Inferred);
    assert!(
        topo.validation().unresolved.is_empty(),
        "{:?}",
        topo.validation().unresolved
    );
}

#[test]
fn desktop_has_four_smt_cores() {
    let p = data("mct/lpdpc4.mct");
    let file = mct::read_mct(&p).expect("lpdpc4");
    let topo = infer_mct(&file, &p, &InferOptions::default()).expect("inference");
    assert_eq!(
        (topo.num_sockets(), topo.num_cores(), topo.num_contexts()),
        (1, 4, 8)
    );
    let core: Vec<usize> = topo.contexts().iter().map(|c| c.core.0).collect();
    for c in 0..4 {
        assert_eq!(core[c], core[c + 4]);
    }
    let levels: Vec<f64> = topo.levels().iter().map(|l| l.latency.median).collect();
    assert_eq!(levels, vec![28.0, 88.0]);
}

#[test]
fn mct_to_json_to_mct_round_trips() {
    for name in ["lpdxeon2680.mct", "lpdpc4.mct"] {
        let p = data(&format!("mct/{name}"));
        let original = mct::read_mct(&p).expect("read");
        let topo = infer_mct(&original, &p, &InferOptions::default()).expect("infer");
        let text = json::to_json_string(&topo);
        let back = json::from_json_str(&text, Path::new("x.json")).expect("json");
        assert_eq!(back, topo, "{name}: JSON round trip");
        let mut out = Vec::new();
        mct::write_mct(&back, None, &mut out).expect("write");
        let again = mct::parse_mct(&String::from_utf8(out).expect("utf8"), Path::new("y.mct"))
            .expect("re-read");
        assert_eq!(again.latency, original.latency, "{name}: latency table");
        assert_eq!(again.memory, original.memory, "{name}: memory");
        assert_eq!(again.caches, original.caches, "{name}: caches");
        assert_eq!(again.power, original.power, "{name}: power");
        assert_eq!(
            (again.contexts, again.nodes, again.smt),
            (original.contexts, original.nodes, original.smt)
        );
        // And the structure inferred from the written file is the same.
        let re = infer_mct(&again, Path::new("y.mct"), &InferOptions::default()).expect("re-infer");
        let cores = |t: &topoprobe_model::Topology| {
            canon(&t.contexts().iter().map(|c| c.core.0).collect::<Vec<_>>())
        };
        assert_eq!(cores(&re), cores(&topo));
    }
}
