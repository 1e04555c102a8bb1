use std::cell::RefCell;
use std::collections::BTreeSet;

use topoprobe_infer::sim::platforms;
use topoprobe_infer::{infer, InferOptions};
use topoprobe_model::{ContextId, LatencyMatrix};

use super::plan::{
    measurements, most_measurements, thread_counts, time_shared_level_curve, Measurement, Step,
};
use super::*;

/// One socket of 16 single-context cores without groups, from the simulator.
fn flat16() -> Topology {
    let spec = platforms::flat_mesh(16);
    infer(&spec.matrix(), &spec.infer_options()).unwrap()
}

#[test]
fn a_simulated_machine_has_one_overhead_level_per_memory_controller() {
    // 2 groups of 4 cores (one socket, as inferred without hints); each group's memory
    // controller gives 15 GB/s in all, one core alone gets 10 GB/s: two cores of a group
    // share, cores of two groups not.
    let lat = LatencyMatrix::from_fn(8, |a, b| {
        Some(if a == b {
            0.0
        } else if a / 4 == b / 4 {
            40.0
        } else {
            150.0
        })
    });
    let topo = infer(&lat, &InferOptions::default()).unwrap();
    let sim = |ctxs: &[ContextId], _: u64| -> Result<f64, MemError> {
        let per_socket = |s: usize| ctxs.iter().filter(|c| c.0 / 4 == s).count() as f64;
        Ok((0..2).map(|s| (per_socket(s) * 10.0).min(15.0)).sum())
    };
    let opts = ContentionOptions {
        max_threads: 8,
        ..ContentionOptions::default()
    };
    let c = contention_with(&topo, &opts, |_| {}, sim).unwrap();
    assert_eq!(c.alone_gbps, 10.0);
    assert_eq!(c.pairs.len(), 2, "{:?}", c.pairs);
    assert_eq!(c.levels.len(), 1, "{:?}", c.levels);
    let ids: Vec<Vec<usize>> = c.levels[0]
        .groups
        .iter()
        .map(|g| g.iter().map(|x| x.0).collect())
        .collect();
    assert_eq!(ids, [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert!((c.levels[0].overhead - 10.0 / 7.5).abs() < 1e-9);
    assert_eq!(c.levels[0].from_threads, None);
    // The level's curve inside its group.
    let curve: Vec<(usize, f64)> = c.scalability.iter().map(|p| (p.threads, p.gbps)).collect();
    assert_eq!(curve, [(1, 10.0), (2, 15.0), (4, 15.0)]);
    // The socket curve spreads its threads over both groups: two threads use both
    // controllers, four share them.
    let socket = c.socket_curve.unwrap();
    let points: Vec<(usize, f64)> = socket.points.iter().map(|p| (p.threads, p.gbps)).collect();
    assert_eq!(points, [(1, 10.0), (2, 20.0), (4, 30.0), (8, 30.0)]);
    assert_eq!(socket.contention_from, Some(4));
    // The pairs found the level: the curve adds none.
    assert_eq!(c.levels.len(), 1);
}

/// A socket whose memory gives each thread 10 GB/s up to `limit` GB/s in all.
fn saturating(limit: f64) -> impl Fn(&[ContextId], u64) -> Result<f64, MemError> {
    move |ctxs, _| Ok((ctxs.len() as f64 * 10.0).min(limit))
}

#[test]
fn a_flat_socket_that_saturates_at_four_threads_contends_from_four() {
    let topo = flat16();
    let opts = ContentionOptions::default();
    let made = RefCell::new(Vec::new());
    let sim = saturating(35.0);
    let c = contention_with(
        &topo,
        &opts,
        |_| {},
        |ctxs, bytes| {
            made.borrow_mut().push((ctxs.to_vec(), bytes));
            sim(ctxs, bytes)
        },
    )
    .unwrap();
    // One pair, no overhead: pairs alone find nothing.
    assert_eq!(c.pairs.len(), 1);
    assert!(c.pairs[0].overhead < 1.0 / groups::OVERHEAD);
    let curve = c.socket_curve.as_ref().unwrap();
    let counts: Vec<usize> = curve.points.iter().map(|p| p.threads).collect();
    assert_eq!(counts, [1, 2, 4, 8, 16]);
    assert_eq!(curve.contention_from, Some(4));
    assert_eq!(curve.contexts.len(), 16);
    assert!(curve
        .summary(c.alone_gbps)
        .starts_with("contention from 4 threads"));
    // The socket's contexts contend: a level whose group is the socket, from 4 threads.
    assert_eq!(c.levels.len(), 1, "{:?}", c.levels);
    assert_eq!(c.levels[0].from_threads, Some(4));
    assert_eq!(
        c.levels[0].groups,
        [(0..16).map(ContextId).collect::<Vec<_>>()]
    );
    assert!((c.levels[0].overhead - 10.0 / (35.0 / 16.0)).abs() < 1e-9);
    assert_eq!(c.scalability.len(), 5);
    assert!(c.scalability.iter().all(|p| p.level == 0));
    // Exactly the planned measurements, in order (two threads: the pair's).
    let plan = measurements(&topo, &opts);
    let steps: Vec<Step> = plan.iter().map(|m| m.step).collect();
    assert_eq!(steps[0], Step::Alone);
    assert!(matches!(steps[1], Step::Pair { .. }));
    assert_eq!(
        steps[2..],
        [
            Step::Curve { threads: 4 },
            Step::Curve { threads: 8 },
            Step::Curve { threads: 16 },
        ]
    );
    let made = made.into_inner();
    assert_eq!(made.len(), plan.len());
    for (m, (ctxs, bytes)) in plan.iter().zip(&made) {
        assert_eq!(&m.contexts, ctxs);
        assert_eq!(m.bytes, *bytes);
        // 512 MiB per thread, capped at 2 GiB in all.
        assert!(*bytes <= DEFAULT_MAX_TOTAL_BYTES);
    }
    assert_eq!(made.last().unwrap().1, DEFAULT_MAX_TOTAL_BYTES);
    assert!(most_measurements(&topo, &opts) >= plan.len());
}

#[test]
fn a_socket_that_never_saturates_says_so() {
    let topo = flat16();
    let opts = ContentionOptions {
        total_bytes: Some(256 << 20),
        ..ContentionOptions::default()
    };
    let c = contention_with(&topo, &opts, |_| {}, saturating(1000.0)).unwrap();
    assert!(c.levels.is_empty());
    assert!(c.scalability.is_empty());
    let curve = c.socket_curve.unwrap();
    assert_eq!(curve.contention_from, None);
    assert_eq!(curve.max_threads(), 16);
    assert!(
        curve
            .summary(c.alone_gbps)
            .starts_with("no contention up to 16 threads"),
        "{}",
        curve.summary(c.alone_gbps)
    );
    // Capped: the curve stops at max_threads, and says so.
    let opts = ContentionOptions {
        max_threads: 6,
        ..opts
    };
    let c = contention_with(&topo, &opts, |_| {}, saturating(1000.0)).unwrap();
    let curve = c.socket_curve.unwrap();
    let counts: Vec<usize> = curve.points.iter().map(|p| p.threads).collect();
    assert_eq!(counts, [1, 2, 4, 6]);
    assert_eq!(
        curve.summary(c.alone_gbps),
        "no contention up to 6 threads (of 16 contexts): each gets at least 90% of the bandwidth alone"
    );
}

#[test]
fn thread_counts_are_geometric_up_to_the_cap() {
    assert_eq!(thread_counts(16, 64), [1, 2, 4, 8, 16]);
    assert_eq!(thread_counts(12, 64), [1, 2, 4, 8, 12]);
    assert_eq!(thread_counts(16, 6), [1, 2, 4, 6]);
    assert_eq!(thread_counts(2, 64), [1, 2]);
    assert_eq!(thread_counts(1, 64), [1]);
    assert!(thread_counts(0, 64).is_empty());
    assert_eq!(thread_counts(4, 0), [1]);
}

#[test]
fn the_curve_spreads_threads_over_groups_and_cores_first() {
    // 2 groups × 2 cores × 2 SMT contexts in one socket (sibling of i is i + 4).
    let lat = LatencyMatrix::from_fn(8, |a, b| {
        let (ca, cb) = (a % 4, b % 4);
        Some(if a == b {
            0.0
        } else if ca == cb {
            8.0
        } else if ca / 2 == cb / 2 {
            30.0
        } else {
            60.0
        })
    });
    let topo = infer(&lat, &InferOptions::default()).unwrap();
    assert_eq!((topo.num_sockets(), topo.num_cores()), (1, 4));
    let order = plan::curve_order(&topo, topoprobe_model::SocketId(0));
    let os: Vec<u32> = order.iter().map(|c| topo.contexts()[c.0].os_id).collect();
    // One context per core, alternating groups, then the siblings.
    assert_eq!(os.len(), 8);
    let group = |cpu: u32| (cpu % 4) / 2;
    assert_ne!(group(os[0]), group(os[1]));
    let cores: BTreeSet<u32> = os[..4].iter().map(|c| c % 4).collect();
    assert_eq!(cores.len(), 4);
}

#[test]
fn on_a_time_shared_machine_the_plan_foresees_every_measurement_the_run_makes() {
    // Two sockets of two CCXs of 8 SMT2 cores (socket 0 holds cores 0-15, socket 1 cores
    // 16-31, each second context 32 above its first) whose threads all run on one CPU: however many copy at once, they copy 10 GB/s
    // together, so every pair contends alike and the level spans the machine, wider than
    // the socket curve's socket.
    let spec = platforms::ccx_server(2);
    let topo = infer(&spec.true_matrix(), &spec.infer_options()).unwrap();
    assert_eq!(topo.sockets().len(), 2);
    let opts = ContentionOptions {
        max_threads: 64,
        ..ContentionOptions::default()
    };
    let made = RefCell::new(BTreeSet::new());
    let one_cpu = |ctxs: &[ContextId], bytes: u64| -> Result<f64, MemError> {
        let mut key = ctxs.to_vec();
        key.sort_unstable();
        made.borrow_mut().insert((key, bytes));
        Ok(10.0)
    };
    let c = contention_with(&topo, &opts, |_| {}, one_cpu).unwrap();
    assert_eq!(c.levels.len(), 1, "{:?}", c.levels);
    assert_eq!(
        c.levels[0].groups,
        [topo.contexts().iter().map(|h| h.id).collect::<Vec<_>>()]
    );
    // The level's curve over the machine in its contexts' order: 2 threads are the pair
    // measured in CCX 0, 4 and 8 fill CCX 0 where the socket curve alternates the CCXs,
    // 16 are socket 0's cores as the socket curve had them, 32 and 64 span both sockets.
    let extra = time_shared_level_curve(&topo, &opts);
    let extra_threads: Vec<usize> = extra.iter().map(|m| m.contexts.len()).collect();
    assert_eq!(extra_threads, [4, 8, 32, 64]);
    let planned: BTreeSet<(Vec<ContextId>, u64)> = measurements(&topo, &opts)
        .iter()
        .chain(&extra)
        .map(Measurement::key)
        .collect();
    assert_eq!(*made.borrow(), planned);
    // On the simulated machine whose one socket is the level's group, nothing is added.
    assert!(time_shared_level_curve(&flat16(), &opts).is_empty());
}
