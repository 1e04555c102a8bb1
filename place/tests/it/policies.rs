//! Every policy on four machines, against orders derived by hand from the paper's
//! definitions (and, for the Ivy libmctop file, the orders libmctop produces):
//! Ivy (2 sockets × 10 cores × 2 SMT, with memory and power sections), a 4-socket SMT
//! machine with uneven links, bandwidths and power, a hybrid desktop (8 P-cores with SMT,
//! two clusters of 4 E-cores) and a non-SMT 8-die Opteron.

use std::path::Path;

use topoprobe_infer::sim::platforms;
use topoprobe_infer::{infer, load_topology, InferOptions};
use topoprobe_model::{
    Access, ContextId, LatencyMatrix, LatencyUnit, Member, MemoryBandwidth, MemorySection,
    PowerEntry, PowerScope, PowerSection, PowerState, SocketId, Threads, Topology, TopologyBuilder,
};
use topoprobe_place::{describe, export, plan, CoreKind, PlaceError, Placement, Policy, Request};

fn ivy() -> Topology {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/examples/xeon-e5-2680v2-2s.mct");
    load_topology(&p, &InferOptions::default()).expect("Ivy .mct loads")
}

fn sim(spec: &topoprobe_infer::sim::MachineSpec) -> Topology {
    let topo = infer(&spec.true_matrix(), &spec.infer_options()).expect("inference");
    spec.truth()
        .check(&topo)
        .expect("the simulated machine is inferred correctly");
    topo
}

/// Order of `req` as OS CPU numbers.
fn order(topo: &Topology, req: &Request) -> Vec<u32> {
    export::cpus(
        topo,
        &plan(topo, req).unwrap_or_else(|e| panic!("{req:?}: {e}")),
    )
}

fn req(policy: Policy, n: usize) -> Request {
    Request::new(policy).threads(n)
}

fn r(a: u32, b: u32) -> Vec<u32> {
    (a..=b).collect()
}

fn cat(parts: &[Vec<u32>]) -> Vec<u32> {
    parts.concat()
}

#[test]
fn ivy_matches_libmctop() {
    let t = ivy();
    assert_eq!(
        order(&t, &req(Policy::ConHwc, 12)),
        vec![0, 20, 1, 21, 2, 22, 3, 23, 4, 24, 5, 25]
    );
    assert_eq!(
        order(&t, &req(Policy::ConCoreHwc, 12)),
        cat(&[r(0, 9), vec![20, 21]])
    );
    assert_eq!(order(&t, &req(Policy::ConCore, 12)), r(0, 11));
    assert_eq!(
        order(&t, &req(Policy::BalanceCore, 12)),
        cat(&[r(0, 5), r(10, 15)])
    );
    assert_eq!(
        order(&t, &req(Policy::RrHwc, 12)),
        vec![0, 10, 20, 30, 1, 11, 21, 31, 2, 12, 22, 32]
    );
    assert_eq!(
        order(&t, &req(Policy::RrCore, 12)),
        vec![0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15]
    );
}

#[test]
fn ivy_other_policies() {
    let t = ivy();
    assert_eq!(order(&t, &req(Policy::Sequential, 12)), r(0, 11));
    // NONE: not pinned; the threads may use every context.
    let none = plan(&t, &req(Policy::None, 12)).expect("none");
    assert!(!none.pinned);
    assert_eq!(export::cpus(&t, &none), r(0, 39));
    // 12 threads fit in one socket: the balanced policies use one socket unless told.
    assert_eq!(
        order(&t, &req(Policy::BalanceHwc, 12)),
        order(&t, &req(Policy::ConHwc, 12))
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceHwc, 12).sockets(2)),
        vec![0, 20, 1, 21, 2, 22, 10, 30, 11, 31, 12, 32]
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceCoreHwc, 12)),
        cat(&[r(0, 9), vec![20, 21]])
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceCoreHwc, 12).sockets(2)),
        cat(&[r(0, 5), r(10, 15)])
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceCore, 13)),
        cat(&[r(0, 6), r(10, 15)])
    );
    // POWER (total power increments of the file: a second context 2.97 W, a second core
    // 10.6 W, a first core on socket 0 19.6 W and on socket 1 21.0 W): contexts of a core
    // first, socket 0 filled before socket 1.
    assert_eq!(
        order(&t, &req(Policy::Power, 12)),
        order(&t, &req(Policy::ConHwc, 12))
    );
    let all = order(&t, &Request::new(Policy::Power));
    assert_eq!(
        all[..20]
            .iter()
            .filter(|&&c| c < 10 || (20..30).contains(&c))
            .count(),
        20
    );
    // RR_SCALE: 46.0/13.6 and 46.3/13.5 GB/s: 4 threads saturate each socket.
    assert_eq!(
        order(&t, &Request::new(Policy::RrScale)),
        vec![0, 10, 1, 11, 2, 12, 3, 13]
    );
    assert_eq!(
        order(&t, &req(Policy::RrScale, 12)),
        order(&t, &req(Policy::RrCore, 12))
    );
    // CON_CORE beyond the cores: second contexts, socket 0 first.
    assert_eq!(
        order(&t, &req(Policy::ConCore, 22)),
        cat(&[r(0, 19), vec![20, 21]])
    );
}

#[test]
fn ivy_summary_is_figure_7() {
    let t = ivy();
    let p = Placement::with_restore(
        &t,
        plan(&t, &req(Policy::ConHwc, 30)).expect("plan"),
        vec![0],
    );
    let s = p.summary();
    assert_eq!(s.cores, 15);
    assert_eq!(
        s.sockets
            .iter()
            .map(|u| (u.socket, u.contexts, u.cores))
            .collect::<Vec<_>>(),
        vec![(0, 20, 10), (1, 10, 5)]
    );
    assert_eq!(s.max_latency, Some(308.0));
    assert!((s.min_bandwidth_gbps.expect("bandwidth") - 24.28).abs() < 0.01);
    let power = s.power.as_ref().expect("power");
    assert_eq!(power.sockets_total_w.len(), 2);
    let props: f64 = s
        .sockets
        .iter()
        .filter_map(|u| u.bandwidth_proportion)
        .sum();
    assert!((props - 1.0).abs() < 1e-9);
    // Per-thread information.
    let th = p.threads();
    assert_eq!(
        (
            th[1].context,
            th[1].core,
            th[1].socket,
            th[1].index_in_socket,
            th[1].index_in_core
        ),
        (20, 0, 0, 1, 1)
    );
    assert!(th[0].leads_node && !th[1].leads_node);
    let first_s1 = th.iter().find(|i| i.socket == 1).expect("socket 1 used");
    assert!(first_s1.leads_node && first_s1.index_in_socket == 0 && first_s1.node == Some(1));
}

/// 4 sockets × 3 cores × 2 SMT, Linux numbering (socket s, core k: contexts 3s+k and
/// 12+3s+k). Latencies: SMT 10, in-socket 50, sockets 0-1 and 2-3 100, others 200.
/// One-thread local bandwidth: 10, 10, 12, 11 GB/s (socket 2 starts); all-context local
/// bandwidth 25, 10, 40, 22; from socket 2 to the nodes of 0 and 1: 20 and 25 GB/s (so
/// after socket 3, socket 1 comes before socket 0). Power increments (first core, second
/// core, second context): socket 0 20/10/1, socket 1 15/12/3, sockets 2 and 3 30/20/5.
fn four_sockets() -> Topology {
    let socket_of = |c: usize| (c % 12) / 3;
    let core_of = |c: usize| c % 12;
    let mut b = TopologyBuilder::new((0..24).collect(), LatencyUnit::Ns);
    let mut sockets = vec![Vec::new(); 4];
    for k in 0..12 {
        let core = b.core(vec![ContextId(k), ContextId(k + 12)]);
        sockets[k / 3].push(Member::Core(core));
    }
    let ids: Vec<SocketId> = sockets.into_iter().map(|m| b.socket(m)).collect();
    for &s in &ids {
        b.node(Some(s.index() as u32), None, vec![s]);
    }
    let lat = LatencyMatrix::from_fn(24, |x, y| {
        Some(if core_of(x) == core_of(y) {
            10.0
        } else if socket_of(x) == socket_of(y) {
            50.0
        } else if socket_of(x) / 2 == socket_of(y) / 2 {
            100.0
        } else {
            200.0
        })
    });
    b.latencies(lat.clone(), lat);
    let bw = |s: usize, n: usize, threads: Threads, gbps: f64| MemoryBandwidth {
        socket: SocketId(s),
        node: topoprobe_model::NodeId(n),
        access: Access::Read,
        threads,
        gbps,
    };
    let mut bandwidth = Vec::new();
    for (s, (one, all)) in [(10.0, 25.0), (10.0, 10.0), (12.0, 40.0), (11.0, 22.0)]
        .into_iter()
        .enumerate()
    {
        bandwidth.push(bw(s, s, Threads::Single, one));
        bandwidth.push(bw(s, s, Threads::AllContexts, all));
    }
    bandwidth.push(bw(2, 0, Threads::AllContexts, 20.0));
    bandwidth.push(bw(2, 1, Threads::AllContexts, 25.0));
    // The richer section of `mem --full` (mixes, loaded latency) beside the bandwidths
    // the policies read changes nothing they decide.
    b.memory(Some(MemorySection {
        latency: Vec::new(),
        bandwidth,
        detail: topoprobe_model::MemoryDetail {
            mixes: vec![topoprobe_model::MixBandwidth {
                socket: 0,
                node: 0,
                mix: topoprobe_model::Mix::AllReads,
                non_temporal: false,
                threads: 4,
                gbps: 999.0,
            }],
            loaded_latency: vec![topoprobe_model::LoadedCurve {
                socket: 0,
                node: 0,
                local: true,
                chase_cpu: 0,
                loaders: vec![1],
                points: vec![topoprobe_model::LoadedPoint {
                    delay: None,
                    gbps: 0.0,
                    latency_ns: 90.0,
                }],
                idle_again_ns: None,
                knee: None,
                warnings: Vec::new(),
                unavailable: None,
            }],
            ..topoprobe_model::MemoryDetail::default()
        },
    }));
    let mut entries = Vec::new();
    for (s, costs) in [
        [20.0, 10.0, 1.0],
        [15.0, 12.0, 3.0],
        [30.0, 20.0, 5.0],
        [30.0, 20.0, 5.0],
    ]
    .into_iter()
    .enumerate()
    {
        for (state, w) in [
            (PowerState::Idle, 5.0),
            (PowerState::FirstCore, costs[0]),
            (PowerState::SecondCore, costs[1]),
            (PowerState::SecondContext, costs[2]),
        ] {
            entries.push(PowerEntry {
                scope: PowerScope::Socket(SocketId(s)),
                state,
                cores_w: w,
                rest_w: 0.0,
                package_w: w,
                dram_w: 0.0,
                total_w: w,
            });
        }
    }
    b.power(Some(PowerSection { entries }));
    b.build().expect("4-socket topology")
}

#[test]
fn four_socket_smt_machine() {
    let t = four_sockets();
    assert_eq!(order(&t, &req(Policy::Sequential, 8)), r(0, 7));
    assert_eq!(
        order(&t, &req(Policy::ConHwc, 8)),
        vec![6, 18, 7, 19, 8, 20, 9, 21]
    );
    assert_eq!(
        order(&t, &req(Policy::ConCoreHwc, 8)),
        vec![6, 7, 8, 18, 19, 20, 9, 10]
    );
    assert_eq!(
        order(&t, &req(Policy::ConCore, 8)),
        vec![6, 7, 8, 9, 10, 11, 3, 4]
    );
    assert_eq!(
        order(&t, &req(Policy::ConCore, 10)),
        vec![6, 7, 8, 9, 10, 11, 3, 4, 5, 0]
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceHwc, 8)),
        vec![6, 18, 7, 19, 9, 21, 10, 22]
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceCoreHwc, 8)),
        vec![6, 7, 8, 18, 9, 10, 11, 21]
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceCore, 10)),
        vec![6, 7, 8, 9, 10, 11, 3, 4, 0, 1]
    );
    assert_eq!(
        order(&t, &req(Policy::RrHwc, 8)),
        vec![6, 9, 3, 0, 18, 21, 15, 12]
    );
    assert_eq!(
        order(&t, &req(Policy::RrCore, 8)),
        vec![6, 9, 3, 0, 7, 10, 4, 1]
    );
    assert_eq!(
        order(&t, &req(Policy::RrCore, 8).sockets(2)),
        vec![6, 9, 7, 10, 8, 11, 18, 21]
    );
    assert_eq!(
        order(&t, &req(Policy::Power, 8)),
        vec![3, 15, 4, 16, 5, 17, 0, 12]
    );
    // Saturating threads: ceil(40/12) = 4 capped at 3 cores, ceil(22/11) = 2, 1, ceil(25/10) = 3.
    assert_eq!(
        order(&t, &Request::new(Policy::RrScale)),
        vec![6, 9, 3, 0, 7, 10, 1, 8, 2]
    );
    let none = plan(&t, &req(Policy::None, 30)).expect("NONE does not limit threads");
    assert_eq!(none.threads, 30);
}

#[test]
fn hybrid_desktop() {
    let t = sim(&platforms::hybrid_desktop());
    let evens: Vec<u32> = (0..8).map(|k| 2 * k).collect();
    assert_eq!(order(&t, &req(Policy::ConHwc, 12)), r(0, 11));
    assert_eq!(
        order(&t, &req(Policy::ConCoreHwc, 12)),
        cat(&[evens.clone(), r(16, 19)])
    );
    assert_eq!(
        order(&t, &req(Policy::ConCore, 12)),
        cat(&[evens.clone(), r(16, 19)])
    );
    assert_eq!(
        order(&t, &req(Policy::RrCore, 12)),
        cat(&[evens.clone(), r(16, 19)])
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceCore, 24)),
        cat(&[
            evens.clone(),
            r(16, 23),
            (0..8).map(|k| 2 * k + 1).collect()
        ])
    );
    // Kinds: E-cores fill one cluster before the next; P-cores only.
    assert_eq!(
        order(&t, &req(Policy::ConHwc, 5).kind(CoreKind::Efficiency)),
        r(16, 20)
    );
    assert_eq!(
        order(&t, &req(Policy::ConCoreHwc, 10).kind(CoreKind::Performance)),
        cat(&[evens, vec![1, 3]])
    );
    assert_eq!(
        order(&t, &Request::new(Policy::RrHwc).kind(CoreKind::Efficiency)),
        r(16, 23)
    );
    let e = plan(&t, &req(Policy::ConHwc, 9).kind(CoreKind::Efficiency)).unwrap_err();
    assert!(
        matches!(e, PlaceError::TooManyThreads { available: 8, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("E-cores only"), "{e}");
}

#[test]
fn non_smt_opteron() {
    let t = sim(&platforms::opteron());
    // Start on die 0 (no bandwidth measured: lowest id); its direct neighbours 1, 2, 4, 6
    // (280 cycles) come before the dies two hops away, 3, 5, 7 (380 cycles).
    for p in [
        Policy::ConHwc,
        Policy::ConCoreHwc,
        Policy::ConCore,
        Policy::Sequential,
    ] {
        assert_eq!(order(&t, &req(p, 8)), r(0, 7), "{p}");
    }
    assert_eq!(
        order(&t, &req(Policy::RrCore, 8)),
        vec![0, 6, 12, 24, 36, 18, 30, 42]
    );
    assert_eq!(
        order(&t, &req(Policy::RrHwc, 9)),
        vec![0, 6, 12, 24, 36, 18, 30, 42, 1]
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceCore, 8)),
        cat(&[r(0, 3), r(6, 9)])
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceHwc, 8)),
        cat(&[r(0, 3), r(6, 9)])
    );
    assert_eq!(
        order(&t, &req(Policy::BalanceCoreHwc, 8).sockets(4)),
        vec![0, 1, 6, 7, 12, 13, 24, 25]
    );
    // No SMT: the three CON policies agree at any count.
    assert_eq!(
        order(&t, &Request::new(Policy::ConHwc)),
        order(&t, &Request::new(Policy::ConCore))
    );
    assert!(matches!(
        plan(&t, &req(Policy::ConHwc, 2).kind(CoreKind::Performance)),
        Err(PlaceError::NoKinds)
    ));
}

#[test]
fn invalid_requests_are_usage_errors() {
    let t = sim(&platforms::opteron());
    let cases: Vec<(Request, &str)> = vec![
        (req(Policy::ConHwc, 49), "49 threads asked for, but only 48"),
        (req(Policy::ConHwc, 0), "at least one thread"),
        (Request::new(Policy::Power), "POWER needs a power section"),
        (
            Request::new(Policy::RrScale),
            "RR_SCALE needs the local read bandwidth of socket 0",
        ),
        (
            Request {
                cpus: Some(vec![0, 48]),
                ..req(Policy::ConHwc, 1)
            },
            "CPU 48 is not a hardware context of this topology (its CPUs are 0-47)",
        ),
        (
            req(Policy::RrCore, 2).sockets(9),
            "9 sockets asked for, but only 8",
        ),
        (
            Request {
                cpus: Some(vec![0, 1]),
                ..req(Policy::ConHwc, 3)
            },
            "only 2 hardware contexts are available (CPUs 0-1)",
        ),
    ];
    for (rq, want) in cases {
        let e = plan(&t, &rq).unwrap_err();
        assert!(e.is_usage(), "{e}");
        assert!(e.to_string().contains(want), "{rq:?}: {e}");
    }
}

#[test]
fn exports() {
    let t = ivy();
    let p = plan(&t, &req(Policy::ConHwc, 4)).expect("plan");
    assert_eq!(export::list(&t, &p), "0,20,1,21");
    let omp: Vec<(String, String)> = export::omp_env(&t, &p);
    assert_eq!(
        omp,
        [
            ("OMP_NUM_THREADS", "4"),
            ("OMP_PLACES", "{0},{20},{1},{21}"),
            ("OMP_PROC_BIND", "close")
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    // The placement as data: what the forms of other tools are rendered from.
    let d = describe(&t, &p);
    assert_eq!(d.contexts, [0, 20, 1, 21]);
    assert_eq!(d.cpu_set(), [0, 1, 20, 21]);
    assert_eq!(d.host.as_deref(), Some("lpdxeon2680"));
    assert_eq!(d.omp.len(), 3);
    assert_eq!(d.omp[1].name, "OMP_PLACES");
    assert_eq!(d.slots.len(), 4);
    assert_eq!(d.summary.policy, "CON_HWC");
    let f = four_sockets();
    let p = plan(&f, &req(Policy::RrCore, 3)).expect("plan");
    assert_eq!(export::nodes(&f, &p), Some(vec![1, 2, 3]));
    assert_eq!(describe(&f, &p).nodes, Some(vec![1, 2, 3]));
    let none = plan(&f, &req(Policy::None, 3)).expect("plan");
    assert_eq!(
        describe(&f, &none).omp.last().map(|v| v.value.as_str()),
        Some("false")
    );
}

/// 2 sockets × 2 groups (CCXs) × 2 cores × 2 contexts, contexts numbered socket by
/// socket, group by group, core by core.
fn two_sockets_of_two_ccxs() -> Topology {
    let mut b = TopologyBuilder::new((0..16).collect(), LatencyUnit::Ns);
    for s in 0..2 {
        let mut groups = Vec::new();
        for g in 0..2 {
            let cores: Vec<Member> = (0..2)
                .map(|c| {
                    let first = s * 8 + g * 4 + c * 2;
                    Member::Core(b.core(vec![ContextId(first), ContextId(first + 1)]))
                })
                .collect();
            groups.push(Member::Group(
                b.group(cores, topoprobe_model::Evidence::Given),
            ));
        }
        b.socket(groups);
    }
    let lat = LatencyMatrix::from_fn(16, |i, j| {
        Some(match (i / 8 == j / 8, i / 4 == j / 4, i / 2 == j / 2) {
            (_, _, true) => 10.0,
            (_, true, _) => 30.0,
            (true, _, _) => 90.0,
            _ => 200.0,
        })
    });
    b.latencies(lat.clone(), lat);
    b.build().expect("a valid topology")
}

#[test]
fn scatter_spreads_over_sockets_then_groups_then_cores() {
    let t = two_sockets_of_two_ccxs();
    // One context a core: sockets alternate, inside each the groups alternate.
    assert_eq!(
        order(&t, &Request::new(Policy::Scatter)),
        vec![0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]
    );
    assert_eq!(order(&t, &req(Policy::Scatter, 3)), vec![0, 8, 4]);
    // Within the CPUs given: one socket, its two groups alternating.
    assert_eq!(
        order(
            &t,
            &Request {
                cpus: Some((0..8).collect()),
                ..req(Policy::Scatter, 4)
            }
        ),
        vec![0, 4, 2, 6]
    );
    // RR_CORE fills a socket's cores in tree order: two threads of a socket share a CCX.
    assert_eq!(order(&t, &req(Policy::RrCore, 4)), vec![0, 8, 2, 10]);
    assert_eq!("scatter".parse::<Policy>().expect("named"), Policy::Scatter);
}
