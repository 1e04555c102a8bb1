//! The default candidates of autopin on the simulated 4-socket SMT machine (Haswell: 4 ×
//! 12 cores × 2 SMT, siblings 48 apart) and the hybrid desktop (8 P-cores with adjacent
//! SMT siblings, two clusters of 4 E-cores), with why each is there; schedules and
//! policies as given on the command line.

use topoprobe_infer::infer;
use topoprobe_infer::sim::platforms;
use topoprobe_model::Topology;
use topoprobe_place::Policy;
use topoprobe_sys::CpuSet;
use topoprobe_tune::autopin::candidates::{
    from_policies, from_schedules, generate, parse_schedule, Generated,
};

fn sim(spec: &topoprobe_infer::sim::MachineSpec) -> Topology {
    let topo = infer(&spec.true_matrix(), &spec.infer_options()).expect("inference");
    spec.truth().check(&topo).expect("inferred correctly");
    topo
}

fn listing(g: &Generated) -> Vec<(String, Vec<u32>)> {
    g.candidates
        .iter()
        .map(|c| (c.name.clone(), c.cpus.clone()))
        .collect()
}

fn show(g: &Generated) {
    for c in &g.candidates {
        eprintln!("{:<18} {:?}  {}", c.name, c.cpus, c.why);
    }
    for d in &g.dropped {
        eprintln!("  dropped {:<18} {}", d.name, d.reason);
    }
}

#[test]
fn haswell_two_threads_share_a_core_a_socket_or_spread() {
    let t = sim(&platforms::haswell());
    let g = generate(&t, 2, None, 8).expect("candidates");
    show(&g);
    assert_eq!(
        listing(&g),
        vec![
            ("CON_HWC".to_string(), vec![0, 48]),
            ("CON_CORE_HWC".to_string(), vec![0, 1]),
            ("RR_CORE".to_string(), vec![0, 12]),
        ]
    );
    // POWER and RR_SCALE need sections the simulated description lacks.
    assert!(g
        .dropped
        .iter()
        .any(|d| d.name == "POWER" && d.reason.starts_with("not plannable")));
    assert!(g
        .dropped
        .iter()
        .any(|d| d.name == "SEQUENTIAL" && d.reason.contains("CON_CORE_HWC")));
}

#[test]
fn haswell_four_threads_cover_every_spread() {
    let t = sim(&platforms::haswell());
    let g = generate(&t, 4, None, 8).expect("candidates");
    show(&g);
    assert_eq!(
        listing(&g),
        vec![
            ("CON_HWC".to_string(), vec![0, 48, 1, 49]),
            ("CON_CORE_HWC".to_string(), vec![0, 1, 2, 3]),
            ("RR_CORE".to_string(), vec![0, 12, 24, 36]),
            ("BALANCE_CORE/2s".to_string(), vec![0, 1, 12, 13]),
            ("BALANCE_CORE/3s".to_string(), vec![0, 1, 12, 24]),
            ("BALANCE_HWC/2s".to_string(), vec![0, 48, 12, 60]),
            ("BALANCE_HWC/3s".to_string(), vec![0, 48, 12, 24]),
        ]
    );
    // The same sets of CPUs in another order, and the same shapes on other sockets, are
    // tried once; a maximum cuts the list in order.
    let two = generate(&t, 4, None, 2).expect("candidates");
    assert_eq!(two.candidates.len(), 2);
    assert!(two
        .dropped
        .iter()
        .any(|d| d.name == "RR_CORE" && d.reason.contains("--max-candidates 2")));
    // Only the allowed CPUs are used.
    let allowed: CpuSet = (12..24).chain(60..72).collect();
    let g = generate(&t, 4, Some(&allowed), 8).expect("candidates");
    show(&g);
    assert!(g
        .candidates
        .iter()
        .all(|c| c.cpus.iter().all(|&x| allowed.contains(x))));
    assert_eq!(
        g.candidates.len(),
        2,
        "one socket: SMT pairs or one per core"
    );
}

#[test]
fn hybrid_desktop_tries_p_core_smt_p_cores_and_an_e_cluster() {
    let t = sim(&platforms::hybrid_desktop());
    let g = generate(&t, 2, None, 8).expect("candidates");
    show(&g);
    assert_eq!(
        listing(&g),
        vec![
            ("CON_HWC".to_string(), vec![0, 1]),
            ("CON_HWC@e".to_string(), vec![16, 17]),
            ("CON_CORE_HWC".to_string(), vec![0, 2]),
            // The E-cores 16-23 are two clusters of 4 that each share an L2: SCATTER on
            // them puts one thread in each cluster.
            ("SCATTER@e".to_string(), vec![16, 20]),
        ]
    );
    assert!(g.candidates[1].why.contains("E-cores only"));
    let g = generate(&t, 12, None, 8).expect("candidates");
    show(&g);
    assert!(g.candidates.len() >= 3);
}

#[test]
fn more_threads_than_cpus_share_them() {
    // 25 threads on the 24 contexts of the hybrid desktop: each placement puts 24 and
    // the 25th shares a CPU, round robin.
    let t = sim(&platforms::hybrid_desktop());
    let g = generate(&t, 25, None, 8).expect("candidates");
    show(&g);
    let first = &g.candidates[0];
    assert_eq!(first.cpus.len(), 25, "{first:?}");
    assert_eq!(first.cpus[24], first.cpus[0], "{first:?}");
    assert!(first.why.contains("some share one"), "{first:?}");
    // Every policy gives the same 24 CPUs: two threads per CPU is the other candidate.
    assert_eq!(g.candidates.len(), 2);
    assert_eq!(g.candidates[1].name, "CON_HWC*2");
    assert_eq!(&g.candidates[1].cpus[..4], &[0, 0, 1, 1]);
}

#[test]
fn one_socket_without_smt_also_tries_sharing_a_cpu() {
    // Two CPUs, no SMT: every policy gives the same CPUs, so threads sharing a CPU are
    // tried too (two workers: one CPU each, or both on one).
    let t = sim(&platforms::flat_mesh(2));
    let g = generate(&t, 2, None, 8).expect("candidates");
    show(&g);
    assert_eq!(
        listing(&g),
        vec![
            ("CON_HWC".to_string(), vec![0, 1]),
            ("CON_HWC*2".to_string(), vec![0, 0]),
        ]
    );
    assert!(g.candidates[1].why.contains("share"));
    // Three threads: round robin over both, and all on one CPU.
    let g = generate(&t, 3, None, 8).expect("candidates");
    show(&g);
    assert_eq!(
        listing(&g),
        vec![
            ("CON_HWC".to_string(), vec![0, 1, 0]),
            ("CON_HWC*4".to_string(), vec![0, 0, 0]),
        ]
    );
    // One thread: nothing to share.
    assert_eq!(generate(&t, 1, None, 8).expect("one").candidates.len(), 1);
    // On a machine with distinct placements nothing is added (Haswell above).
}

#[test]
fn when_nothing_can_be_placed_each_reason_is_said_once() {
    let t = sim(&platforms::flat_mesh(2));
    let allowed: CpuSet = [7].into();
    let e = generate(&t, 2, Some(&allowed), 8).unwrap_err().to_string();
    eprintln!("{e}");
    assert!(e.starts_with("no placement of 2 threads"), "{e}");
    assert!(e.len() < 1000, "{} characters: {e}", e.len());
    // Every policy's name once, the reason they share once.
    assert_eq!(e.matches("CON_HWC").count(), 1, "{e}");
    assert_eq!(e.matches("is not a hardware context").count(), 1, "{e}");
}

#[test]
fn schedules_and_policies() {
    let t = sim(&platforms::haswell());
    assert_eq!(parse_schedule("0:1:2:3").expect("parses"), vec![0, 1, 2, 3]);
    assert_eq!(parse_schedule("5").expect("parses"), vec![5]);
    let e = parse_schedule("0:x").unwrap_err().to_string();
    assert!(e.contains("position 1") && e.contains("0:1:2:3"), "{e}");
    assert!(parse_schedule("").is_err());
    let online = from_schedules(None, None, &[vec![0]]).expect("CPU 0 is online");
    assert_eq!(online[0].name, "0");
    let c = from_schedules(Some(&t), None, &[vec![0, 0], vec![0, 1]]).expect("valid");
    assert_eq!(c[0].name, "0:0");
    assert_eq!(c[1].cpus, vec![0, 1]);
    let e = from_schedules(Some(&t), None, &[vec![0, 200]])
        .unwrap_err()
        .to_string();
    assert!(e.contains("CPU 200") && e.contains("0:200"), "{e}");
    let allowed: CpuSet = [0].into();
    let e = from_schedules(Some(&t), Some(&allowed), &[vec![1]])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not allowed"), "{e}");
    let p = from_policies(
        &t,
        2,
        None,
        &[Policy::ConCore, Policy::RrCore, Policy::Sequential],
    )
    .expect("plans");
    // SEQUENTIAL gives CON_CORE's CPUs: kept once.
    assert_eq!(p.len(), 2);
    assert!(from_policies(&t, 2, None, &[Policy::None]).is_err());
    assert!(from_policies(&t, 2, None, &[Policy::Power])
        .unwrap_err()
        .to_string()
        .contains("POWER"));
}

#[test]
fn scatter_is_tried_where_sockets_have_several_cache_groups() {
    // Two sockets of two CCXs of 8 SMT2 cores, Linux numbering: socket 0 holds cores 0-15
    // (CCX 0-7 and 8-15), socket 1 cores 16-31, each second context 32 above its first.
    let t = sim(&platforms::ccx_server(2));
    let g = generate(&t, 4, None, 16).expect("candidates");
    show(&g);
    let cpus_of = |name: &str| {
        g.candidates
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.cpus.clone())
    };
    // RR_CORE alternates the sockets but fills each one's first CCX; SCATTER alternates
    // the sockets and then their CCXs, one thread in each of the four.
    assert_eq!(cpus_of("RR_CORE"), Some(vec![0, 16, 1, 17]));
    assert_eq!(cpus_of("SCATTER"), Some(vec![0, 16, 8, 24]));
    // On the 4-socket Haswell, whose sockets each are one cache group, SCATTER is RR_CORE
    // and tried once.
    let h = generate(&sim(&platforms::haswell()), 4, None, 16).expect("candidates");
    assert!(h
        .dropped
        .iter()
        .any(|d| d.name == "SCATTER" && d.reason.contains("RR_CORE")));
}
