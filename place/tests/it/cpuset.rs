//! CPU-set expressions resolved on the shared topologies: the paper's 2-socket Ivy
//! (libmctop's file: SMT siblings `i` and `i + 20`), the 256-context dual EPYC 7742
//! inferred from its latency matrix, and a hybrid desktop (8 P-cores with SMT, 8 E-cores
//! in a group). Expected sets follow hwloc's logical numbering and likwid-pin's domains,
//! derived from each machine's structure.

use std::path::Path;

use topoprobe_infer::sim::platforms;
use topoprobe_infer::{infer, load_topology, InferOptions};
use topoprobe_model::Topology;
use topoprobe_place::cpuset::{render, CpuSetExpr, ErrorKind, Inventory, ObjectType, Resolved};
use topoprobe_place::{export, plan, Policy, Request};

fn load(rel: &str) -> Topology {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    load_topology(&p, &InferOptions::default()).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn ivy() -> Topology {
    load("../data/examples/xeon-e5-2680v2-2s.mct")
}

fn resolve(inv: &Inventory, text: &str) -> Resolved {
    CpuSetExpr::parse(text)
        .and_then(|e| e.resolve(inv))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn r(a: u32, b: u32) -> Vec<u32> {
    (a..=b).collect()
}

#[test]
fn ivy_locations_and_domains() {
    let topo = ivy();
    let inv = Inventory::from_topology(&topo);
    let set = |t: &str| resolve(&inv, t).cpus;
    let order = |t: &str| resolve(&inv, t).order;
    // hwloc: a core is a context and its sibling 20 higher; PUs in tree order.
    assert_eq!(set("package:1.core:0-3"), [r(10, 13), r(30, 33)].concat());
    assert_eq!(set("socket:1"), [r(10, 19), r(30, 39)].concat());
    assert_eq!(order("pu:0-3"), vec![0, 20, 1, 21]);
    assert_eq!(set("core:all.pu:0"), r(0, 19));
    assert_eq!(set("node:1"), [r(10, 19), r(30, 39)].concat());
    // likwid: physical cores first inside a domain.
    assert_eq!(order("S1:0-3"), r(10, 13));
    assert_eq!(order("S0:0-19"), [r(0, 9), r(20, 29)].concat());
    assert_eq!(order("N:0-7"), r(0, 7));
    assert_eq!(order("M1:0-1"), vec![10, 11]);
    assert_eq!(order("E:N:8:1:2"), r(0, 7));
    assert_eq!(
        order("S1"),
        (10..20).flat_map(|c| [c, c + 20]).collect::<Vec<_>>()
    );
    // The same CPUs, several ways: place's mask, likwid's concatenation, hwloc's nesting.
    let rr = export::cpus(
        &topo,
        &plan(&topo, &Request::new(Policy::RrCore).threads(8)).unwrap(),
    );
    assert_eq!(render::mask(&rr), "0x3c0f");
    assert_eq!(order("S:scatter:8"), rr);
    let mut sorted = rr.clone();
    sorted.sort_unstable();
    for same in [
        "0x3c0f",
        "0x00003c0f",
        "S0:0-3@S1:0-3",
        "package:all.core:0-3 ~pu:odd",
        "0-3,10-13",
    ] {
        assert_eq!(set(same), sorted, "{same}");
    }
    assert_eq!(
        set("all ~socket:0 xnode:1 ^core:10"),
        [r(11, 19), r(31, 39)].concat()
    );
}

#[test]
fn ivy_says_what_it_lacks() {
    let inv = Inventory::from_topology(&ivy());
    let refuse = |t: &str| {
        CpuSetExpr::parse(t)
            .and_then(|e| e.resolve(&inv))
            .unwrap_err()
    };
    let e = refuse("package:3");
    assert_eq!(
        e.to_string(),
        "package:3: the topology has 2 packages (0-1)"
    );
    let e = refuse("package:1.core:10");
    assert_eq!(
        e.to_string(),
        "package:1.core:10: package:1 holds 10 cores (0-9)"
    );
    let e = refuse("S1:0-20");
    assert!(
        e.to_string().contains("S1 has 20 hardware threads (0-19)"),
        "{e}"
    );
    let e = refuse("0-40");
    assert!(
        e.to_string()
            .contains("CPU 40 is not a hardware context of the topology (its CPUs: 0-39)"),
        "{e}"
    );
    // The .mct file has cache sizes, not which contexts share them.
    for t in ["l3cache:0", "C0:", "package:0.l2:1"] {
        let e = refuse(t);
        assert_eq!(e.kind, ErrorKind::Unknown, "{t}: {e}");
        assert!(e.to_string().contains("shared-caches"), "{t}: {e}");
        assert!(e.to_string().starts_with(t), "{t}: {e}");
    }
    let e = refuse("die:0");
    assert!(e.to_string().contains("no dies"), "{e}");
    assert_eq!(inv.count(ObjectType::Core).unwrap(), 20);
    assert_eq!(inv.count(ObjectType::Group).unwrap(), 0);
    assert_eq!(
        inv.intersecting(ObjectType::Package, &resolve(&inv, "pu:19-20").cpus)
            .unwrap(),
        vec![0, 1]
    );
}

#[test]
fn epyc_256_contexts() {
    let topo = load("../cli/tests/data/nv-2x-epyc-7742.csv");
    assert_eq!(topo.num_contexts(), 256);
    let inv = Inventory::from_topology(&topo);
    let set = |t: &str| resolve(&inv, t).cpus;
    let order = |t: &str| resolve(&inv, t).order;
    assert_eq!(inv.count(ObjectType::Package).unwrap(), 2);
    assert_eq!(inv.count(ObjectType::Core).unwrap(), 128);
    // Linux numbers the first threads 0-127 (socket 0: 0-63), their siblings 128 higher.
    assert_eq!(set("package:1.core:0-3"), [r(64, 67), r(192, 195)].concat());
    assert_eq!(order("S1:0-63"), r(64, 127));
    assert_eq!(order("S1:64-65"), vec![192, 193]);
    assert_eq!(set("core:all.pu:1"), r(128, 255));
    assert_eq!(order("pu:254-255"), vec![127, 255]);
    assert_eq!(order("S:scatter:4"), vec![0, 64, 1, 65]);
    assert_eq!(
        set("all xS0: ~core:0-59"),
        [r(60, 63), r(188, 191)].concat()
    );
    // Groups (the CCXs or CCDs the latencies show) are numbered inside their package.
    let groups = inv.count(ObjectType::Group).unwrap();
    assert!(groups >= 16, "{groups} groups");
    // The first group of package 1 is the one holding its first CPU.
    let holding = |cpu: u32| {
        let g = topo
            .groups()
            .iter()
            .find(|g| {
                g.depth == 1
                    && g.contexts
                        .iter()
                        .any(|c| topo.contexts()[c.index()].os_id == cpu)
            })
            .expect("a group holds the CPU");
        let mut os: Vec<u32> = g
            .contexts
            .iter()
            .map(|c| topo.contexts()[c.index()].os_id)
            .collect();
        os.sort_unstable();
        os
    };
    assert_eq!(set("package:0.group:0"), holding(0));
    assert_eq!(set("package:1.group:0"), holding(64));
    let in_package_0 = inv
        .intersecting(ObjectType::Group, &set("package:0"))
        .unwrap()
        .len();
    assert_eq!(
        set("package:1.group:0"),
        set(&format!("group:{in_package_0}"))
    );
    // A long expression of repeated terms resolves at once.
    let long = vec!["all ~pu:0-255 core:0"; 2000].join(" ");
    assert_eq!(set(&long), vec![0, 128]);
}

#[test]
fn hybrid_desktop() {
    let spec = platforms::hybrid_desktop();
    let topo = infer(&spec.true_matrix(), &spec.infer_options()).expect("inference");
    let inv = Inventory::from_topology(&topo);
    let set = |t: &str| resolve(&inv, t).cpus;
    let order = |t: &str| resolve(&inv, t).order;
    let evens: Vec<u32> = (0..8).map(|k| 2 * k).collect();
    let odds: Vec<u32> = (0..8).map(|k| 2 * k + 1).collect();
    // P-cores (siblings adjacent) come before the E-core group in the tree.
    assert_eq!(inv.logical_cpus(), r(0, 23).as_slice());
    assert_eq!(set("core:7"), vec![14, 15]);
    assert_eq!(set("core:8-9"), vec![16, 17]);
    assert_eq!(set("group:0"), r(16, 23));
    assert_eq!(set("group:0.core:4-"), r(20, 23));
    assert_eq!(order("S0:0-15"), [evens.clone(), r(16, 23)].concat());
    assert_eq!(order("S0:16-23"), odds);
    assert_eq!(set("core:all.pu:1"), odds);
    assert_eq!(set("all ~group:0 xpu:even"), evens);
    assert_eq!(
        inv.intersecting(ObjectType::Core, &r(15, 17)).unwrap(),
        vec![7, 8, 9]
    );
}
