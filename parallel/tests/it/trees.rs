//! Steal orders and reduction trees are valid on the paper's five platforms, hybrids,
//! chiplet servers and 3- and 6-socket machines, for any number of workers and any root.

use proptest::prelude::*;
use topoprobe_infer::infer;
use topoprobe_infer::sim::{platforms, CrossSocket, MachineSpec, Unit};
use topoprobe_model::{ContextId, Topology};
use topoprobe_parallel::trees::{steal_order, ReductionTree};

fn sim(spec: &MachineSpec) -> Topology {
    infer(&spec.true_matrix(), &spec.infer_options()).expect("inference")
}

fn sockets(n: usize) -> MachineSpec {
    // n sockets on a ring: neighbours one hop, others two.
    let links: Vec<(usize, usize)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
    MachineSpec::symmetric(
        format!("{n}-socket ring"),
        n,
        Unit::group(50.0, Unit::cores(4, 2, 10.0)),
        CrossSocket::from_links(n, &links, &[250.0, 350.0]).expect("links"),
    )
}

fn ring(n: usize) -> Topology {
    let spec = sockets(n);
    let topo = sim(&spec);
    spec.truth()
        .check(&topo)
        .expect("the ring is inferred correctly");
    topo
}

fn machines() -> Vec<Topology> {
    vec![
        sim(&platforms::ivy()),
        sim(&platforms::westmere()),
        sim(&platforms::haswell()),
        sim(&platforms::opteron()),
        sim(&platforms::sparc_t4()),
        sim(&platforms::hybrid_desktop()),
        sim(&platforms::ccx_server(4)),
        ring(3),
        ring(6),
    ]
}

fn check(topo: &Topology, workers: &[ContextId], root: usize) {
    let t = ReductionTree::new(topo, workers, root);
    t.validate()
        .unwrap_or_else(|e| panic!("{} workers, root {root}: {e}", workers.len()));
    // The layout is a permutation in which every merge joins neighbouring ranges.
    let layout = t.layout();
    let mut sorted = layout.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..workers.len()).collect::<Vec<_>>());
    let pos: Vec<usize> = (0..workers.len())
        .map(|w| layout.iter().position(|&x| x == w).unwrap())
        .collect();
    let mut range: Vec<(usize, usize)> = pos.iter().map(|&p| (p, p + 1)).collect();
    for round in &t.rounds {
        for m in round {
            let (a, b) = (range[m.into], range[m.from]);
            assert!(
                a.1 == b.0 || b.1 == a.0,
                "merge {m:?} joins {a:?} and {b:?}"
            );
            range[m.into] = (a.0.min(b.0), a.1.max(b.1));
        }
    }
    if !workers.is_empty() {
        assert_eq!(range[t.root], (0, workers.len()));
    }
    // Steal orders: every other worker once, closest latency level first.
    let orders = steal_order(topo, workers);
    for (i, o) in orders.iter().enumerate() {
        let mut s = o.clone();
        s.sort_unstable();
        assert_eq!(
            s,
            (0..workers.len()).filter(|&j| j != i).collect::<Vec<_>>()
        );
        let levels: Vec<usize> = o
            .iter()
            .map(|&j| {
                if workers[i] == workers[j] {
                    0
                } else {
                    topo.level_of(workers[i], workers[j]).unwrap()
                }
            })
            .collect();
        assert!(levels.windows(2).all(|w| w[0] <= w[1]), "{levels:?}");
    }
}

#[test]
fn every_machine_every_context_as_a_worker() {
    for topo in machines() {
        let all: Vec<ContextId> = topo.contexts().iter().map(|c| c.id).collect();
        check(&topo, &all, 0);
        check(&topo, &all, all.len() - 1);
        // Across sockets, the root's socket is reached by every other socket's leader.
        let t = ReductionTree::new(&topo, &all, 0);
        let rounds = (topo.num_sockets() as f64).log2().ceil() as usize;
        assert!(t.rounds.len() >= rounds);
    }
}

#[test]
fn six_sockets_pair_neighbours_first() {
    let topo = ring(6);
    let leaders: Vec<ContextId> = topo.sockets().iter().map(|s| s.contexts[0]).collect();
    let t = ReductionTree::new(&topo, &leaders, 0);
    t.validate().unwrap();
    assert_eq!(t.rounds.len(), 3, "{t:?}");
    for m in &t.rounds[0] {
        let (a, b) = (
            topo.socket_of(leaders[m.into]).unwrap(),
            topo.socket_of(leaders[m.from]).unwrap(),
        );
        let hops = (a.0 as i64 - b.0 as i64)
            .rem_euclid(6)
            .min((b.0 as i64 - a.0 as i64).rem_euclid(6));
        assert_eq!(hops, 1, "first round pairs ring neighbours: {m:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_subset_of_workers_and_any_root(machine in 0usize..9, picks in proptest::collection::vec(any::<prop::sample::Index>(), 1..40), root in any::<prop::sample::Index>()) {
        let topo = &machines()[machine];
        let all: Vec<ContextId> = topo.contexts().iter().map(|c| c.id).collect();
        // Workers may repeat a context (more threads than contexts).
        let workers: Vec<ContextId> = picks.iter().map(|i| all[i.index(all.len())]).collect();
        check(topo, &workers, root.index(workers.len()));
    }
}

#[test]
fn the_pool_runs_every_task_once_and_steals_closest_first() {
    use std::sync::atomic::{AtomicU32, Ordering};
    use topoprobe_parallel::pool::{rayon_pool, StealPool};
    use topoprobe_place::{Policy, Request};
    let topo = sim(&platforms::ivy());
    let pool = StealPool::new(&topo, &Request::new(Policy::RrCore).threads(4)).unwrap();
    assert_eq!(pool.workers(), 4);
    let seen: Vec<AtomicU32> = (0..5000).map(|_| AtomicU32::new(0)).collect();
    // Worker 0's tasks are slow, so that the others steal.
    let stats = pool.run(5000, |t| {
        seen[t].fetch_add(1, Ordering::Relaxed);
        if t < 1250 {
            std::hint::black_box((0..2000).sum::<u64>());
        }
    });
    assert!(seen.iter().all(|s| s.load(Ordering::Relaxed) == 1));
    assert_eq!(stats.executed.iter().sum::<usize>(), 5000);
    // RR_CORE alternates sockets: worker 0's closest victims share its socket.
    let order = &pool.orders()[0];
    assert_eq!(order.len(), 3);
    let rp = rayon_pool(&topo, &Request::new(Policy::RrCore).threads(3)).unwrap();
    assert_eq!(rp.current_num_threads(), 3);
    assert_eq!(
        rp.install(|| {
            use rayon::prelude::*;
            (0..1000u64).into_par_iter().sum::<u64>()
        }),
        499_500
    );
}

#[test]
fn each_region_gets_its_policys_places() {
    use topoprobe_place::{Policy, Request};
    let topo = sim(&platforms::ivy());
    let r = topoprobe_parallel::omp::regions(
        &topo,
        &[
            ("compact".into(), Request::new(Policy::ConHwc).threads(4)),
            ("spread".into(), Request::new(Policy::RrCore).threads(4)),
        ],
    )
    .unwrap();
    let places = |i: usize| {
        r[i].env
            .iter()
            .find(|(k, _)| k == "OMP_PLACES")
            .unwrap()
            .1
            .clone()
    };
    assert_ne!(places(0), places(1));
    // CON_HWC fills one core's contexts first; RR_CORE alternates sockets.
    let cpus = |s: String| -> Vec<u32> {
        s.split(',')
            .map(|p| p.trim_matches(|c| c == '{' || c == '}').parse().unwrap())
            .collect()
    };
    let c = cpus(places(1));
    let sockets: Vec<usize> = c
        .iter()
        .map(|&cpu| {
            topo.socket_of(topo.context_by_os_id(cpu).unwrap())
                .unwrap()
                .0
        })
        .collect();
    assert_ne!(sockets[0], sockets[1]);
    assert_eq!(
        topoprobe_parallel::omp::places(&topo, &Request::new(Policy::RrCore).threads(4)).unwrap(),
        places(1)
    );
    assert!(r.iter().all(|x| x
        .env
        .iter()
        .any(|(k, v)| k == "OMP_PROC_BIND" && v == "close")));
}
