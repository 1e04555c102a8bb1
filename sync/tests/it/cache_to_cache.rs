//! The plan of `topoprobe mem --c2c` on captured and simulated machines: every distance the
//! machine has and no other, the home-node variants for the right (reader, owner) pairs,
//! the budget's priorities, and the same trios and nodes as `bench line-ops` (the plan is
//! `topoprobe_measure::cache_to_cache`'s, tested here beside the experiment it must agree
//! with).

use std::path::Path;

use topoprobe_infer::sim::{platforms, MachineSpec};
use topoprobe_infer::{infer, load_topology, InferOptions};
use topoprobe_measure::cache_to_cache::{plan, C2cPlan, Planned, DEFAULT_ROUNDS};
use topoprobe_model::results::bench::Scope;
use topoprobe_model::results::cache_to_cache::Home;
use topoprobe_model::{Budget, NodeId, Topology};
use topoprobe_sync::bench::line_ops::{self, node_of, trios};

const ROOMY: Budget = Budget::new(1.0e6, 1 << 30);

fn ivy() -> Topology {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/examples/xeon-e5-2680v2-2s.mct");
    load_topology(&p, &InferOptions::default()).expect("Ivy .mct loads")
}

/// A simulated machine with one node per socket and `memory_only` nodes without CPUs.
fn sim(spec: &MachineSpec, memory_only: usize) -> Topology {
    let mut t = infer(&spec.true_matrix(), &spec.infer_options()).expect("inference");
    let sockets = t.sockets().len();
    let local: Vec<Option<NodeId>> = (0..sockets).map(|s| Some(NodeId(s))).collect();
    t.set_nodes(sockets + memory_only, &local).expect("nodes");
    t
}

fn socket_of_cpu(t: &Topology, cpu: u32) -> usize {
    t.socket_of(t.context_by_os_id(cpu).unwrap()).unwrap().0
}

/// The cross-socket measurements as (reader socket, owner socket, home, home node).
fn cross(t: &Topology, p: &C2cPlan) -> Vec<(usize, usize, Home, Option<u32>)> {
    p.planned
        .iter()
        .filter(|x| x.scope == Scope::OtherSocket)
        .map(|x| {
            (
                socket_of_cpu(t, x.trio.b),
                socket_of_cpu(t, x.trio.a),
                x.home,
                x.home_node,
            )
        })
        .collect()
}

#[test]
fn two_sockets_home_each_cross_socket_pair_on_the_readers_node_and_on_the_owners() {
    let t = ivy();
    assert_eq!(t.sockets().len(), 2);
    let p = plan(&t, DEFAULT_ROUNDS, ROOMY).unwrap();
    assert_eq!(
        cross(&t, &p),
        vec![
            (0, 1, Home::Reader, Some(0)),
            (0, 1, Home::Owner, Some(1)),
            (1, 0, Home::Reader, Some(1)),
            (1, 0, Home::Owner, Some(0)),
        ]
    );
    // Inside a socket reader and owner share the node: one variant, bound to it.
    for x in p.planned.iter().filter(|x| x.scope != Scope::OtherSocket) {
        let s = socket_of_cpu(&t, x.trio.b);
        assert_eq!((x.home, x.home_node), (Home::Both, Some(s as u32)), "{x:?}");
    }
    // SMT siblings are planned (Ivy has SMT) on both sockets, and memory from both.
    let scopes = |s: usize| -> Vec<Scope> {
        p.planned
            .iter()
            .filter(|x| x.scope != Scope::OtherSocket && socket_of_cpu(&t, x.trio.b) == s)
            .map(|x| x.scope)
            .collect()
    };
    assert!(scopes(0).contains(&Scope::Core) && scopes(0).contains(&Scope::Memory));
    assert_eq!(scopes(0), scopes(1));
    assert_eq!(p.cost.steps.len(), p.planned.len());
    assert!(p.cost.fits() && p.cost.left_out.is_empty());
}

#[test]
fn four_sockets_plan_every_ordered_pair_and_never_home_lines_on_memory_only_nodes() {
    let t = sim(&platforms::chiplet_server(4, 2), 2);
    assert_eq!(t.nodes().len(), 6);
    let p = plan(&t, DEFAULT_ROUNDS, ROOMY).unwrap();
    let c = cross(&t, &p);
    assert_eq!(c.len(), 4 * 3 * 2, "12 ordered pairs, two homes each");
    for &(r, o, home, node) in &c {
        assert_ne!(r, o);
        let want = if home == Home::Reader { r } else { o };
        assert_eq!(node, Some(want as u32));
        assert!(node.unwrap() < 4, "a memory-only node is nobody's home");
    }
    // Socket 0's pairs come first, both ways.
    assert_eq!(
        c.iter().take(4).map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        vec![(0, 1), (0, 1), (1, 0), (1, 0)]
    );
}

#[test]
fn a_small_budget_keeps_socket_zero_and_the_first_cross_socket_pair() {
    let t = sim(&platforms::chiplet_server(8, 2), 0);
    let full = plan(&t, DEFAULT_ROUNDS, ROOMY).unwrap();
    let per_step = full.cost.steps[0].seconds;
    // Room for socket 0's own measurements and one cross pair both ways, both homes.
    let inside = full
        .planned
        .iter()
        .take_while(|x| x.scope != Scope::OtherSocket)
        .count();
    let budget = Budget::new(
        full.cost.seconds_before(inside + 4) + per_step / 2.0,
        1 << 30,
    );
    let p = plan(&t, DEFAULT_ROUNDS, budget).unwrap();
    assert!(p.cost.fits());
    assert_eq!(p.planned[..], full.planned[..p.planned.len()]);
    assert_eq!(
        cross(&t, &p).iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        vec![(0, 1), (0, 1), (1, 0), (1, 0)]
    );
    assert_eq!(p.cost.left_out.len(), 1);
    assert!(
        p.cost.left_out[0].contains("left out by the budget"),
        "{:?}",
        p.cost.left_out
    );
}

#[test]
fn one_socket_one_node_plans_no_other_socket_and_says_the_home_variants_collapse() {
    let t = sim(&platforms::flat_mesh(4), 0);
    assert_eq!(t.nodes().len(), 1);
    let p = plan(&t, DEFAULT_ROUNDS, ROOMY).unwrap();
    assert!(p.planned.iter().all(|x| x.scope != Scope::OtherSocket));
    assert!(
        p.planned.iter().all(|x| x.scope != Scope::Core),
        "no SMT, no sibling"
    );
    assert!(p
        .planned
        .iter()
        .all(|x| x.home == Home::Unbound && x.home_node.is_none()));
    assert!(
        p.unavailable
            .iter()
            .any(|u| u == "other_socket: one socket"),
        "{:?}",
        p.unavailable
    );
    assert!(p
        .unavailable
        .iter()
        .any(|u| u.starts_with("core: no SMT sibling")));
    assert!(
        p.notes.iter().any(|n| n.contains("collapse")),
        "{:?}",
        p.notes
    );
}

#[test]
fn rounds_out_of_range_are_refused_before_planning() {
    let e = plan(&ivy(), 0, ROOMY).unwrap_err();
    assert!(e.is_usage(), "{e}");
}

/// The measurements `bench line-ops` makes from `cpu` with `home`: (scope, trio, node).
fn bench_calls(
    t: &Topology,
    cpu: u32,
    home: line_ops::Home,
) -> Vec<(Scope, line_ops::Trio, Option<u32>)> {
    let me = t.context_by_os_id(cpu).unwrap();
    trios(t, me)
        .into_iter()
        .filter_map(|(s, trio)| trio.ok().map(|trio| (s, trio)))
        .chain([(
            Scope::Memory,
            line_ops::Trio {
                b: cpu,
                a: cpu,
                c: None,
            },
        )])
        .map(|(s, trio)| (s, trio, line_ops::home_node(t, home, trio).unwrap()))
        .collect()
}

fn mem_calls(p: &C2cPlan) -> Vec<(Scope, line_ops::Trio, Option<u32>)> {
    p.planned
        .iter()
        .map(|x: &Planned| (x.scope, x.trio, x.home_node))
        .collect()
}

#[test]
fn mem_measures_what_bench_line_ops_measures_with_the_same_trio_and_node() {
    for t in [
        ivy(),
        sim(&platforms::epyc_2x64(), 0),
        sim(&platforms::flat_mesh(4), 0),
    ] {
        let p = plan(&t, DEFAULT_ROUNDS, ROOMY).unwrap();
        let mem = mem_calls(&p);
        let cpu = t.contexts()[0].os_id;
        let homes: &[line_ops::Home] = if t.nodes().len() < 2 {
            &[line_ops::Home::Unbound]
        } else {
            &[line_ops::Home::Reader, line_ops::Home::Owner]
        };
        for &home in homes {
            for call in bench_calls(&t, cpu, home) {
                assert!(
                    mem.contains(&call),
                    "{call:?} of bench line-ops ({home:?}) not in mem's plan"
                );
            }
        }
        if t.nodes().len() > 1 {
            assert_eq!(node_of(&t, cpu), Some(0));
        }
    }
}
