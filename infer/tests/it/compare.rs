//! Comparison of inferred topologies (from the simulator) with hand-built OS views.

use topoprobe_infer::compare::{compare_with_os, record_os_differences};
use topoprobe_infer::infer;
use topoprobe_infer::sim::{platforms, MachineSpec};
use topoprobe_model::{
    CacheType, NodeId, OsCache, OsCpu, OsDifference, OsNode, OsView, StructureLevel, Topology,
};

fn inferred(spec: &MachineSpec) -> Topology {
    let topo = infer(&spec.matrix(), &spec.infer_options()).unwrap();
    spec.truth().check(&topo).unwrap();
    topo
}

/// The OS view of the machine `topo` describes, as a correct OS would give it: packages are
/// the sockets, cores the cores, no caches, no NUMA information.
fn os_like(topo: &Topology) -> OsView {
    let ids = |ctxs: &[topoprobe_model::ContextId]| -> Vec<u32> {
        let mut v: Vec<u32> = ctxs.iter().map(|c| topo.contexts()[c.0].os_id).collect();
        v.sort_unstable();
        v
    };
    let mut cpus: Vec<OsCpu> = topo
        .contexts()
        .iter()
        .map(|c| OsCpu {
            id: c.os_id,
            // Package ids need not be small or dense.
            package: 36 + 8406 * i64::try_from(c.socket.0).unwrap(),
            die: None,
            core: i64::try_from(c.core.0).unwrap(),
            cluster: None,
            thread_siblings: ids(topo.core_contexts(c.core)),
            core_siblings: ids(topo.socket_contexts(c.socket)),
            node: None,
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        })
        .collect();
    cpus.sort_by_key(|c| c.id);
    OsView {
        cpus,
        ..OsView::default()
    }
}

/// Adds a unified cache of `level` shared by each of `groups`.
fn with_caches(mut os: OsView, level: u8, groups: &[Vec<u32>]) -> OsView {
    for g in groups {
        os.caches.push(OsCache {
            level,
            kind: CacheType::Unified,
            size_bytes: Some(1 << 20),
            line_size: Some(64),
            ways: None,
            cpus: g.clone(),
        });
    }
    os
}

/// The OS CPU numbers of every multi-core group of `topo`.
fn group_sets(topo: &Topology) -> Vec<Vec<u32>> {
    topo.groups()
        .iter()
        .filter(|g| g.cores.len() > 1)
        .map(|g| {
            let mut v: Vec<u32> = g
                .contexts
                .iter()
                .map(|c| topo.contexts()[c.0].os_id)
                .collect();
            v.sort_unstable();
            v
        })
        .collect()
}

fn levels(diffs: &[OsDifference]) -> Vec<StructureLevel> {
    diffs.iter().map(|d| d.level).collect()
}

#[test]
fn equal_views_have_no_differences() {
    for spec in [platforms::haswell(), platforms::ivy(), platforms::opteron()] {
        let topo = inferred(&spec);
        let diffs = compare_with_os(&topo, &os_like(&topo));
        assert!(diffs.is_empty(), "{}: {diffs:#?}", spec.name);
    }
}

#[test]
fn groups_matching_os_caches_agree() {
    let spec = platforms::ccx_server(2);
    let topo = inferred(&spec);
    let ccx = group_sets(&topo);
    assert_eq!(ccx.len(), 4);
    let os = with_caches(os_like(&topo), 3, &ccx);
    assert!(compare_with_os(&topo, &os).is_empty());
    // An OS without any grouping information has nothing to hold the groups against.
    assert!(compare_with_os(&topo, &os_like(&topo)).is_empty());
}

#[test]
fn hybrid_clusters_as_shared_l2_agree() {
    let spec = platforms::hybrid_desktop();
    let topo = inferred(&spec);
    // The OS knows the E-core clusters (shared L2) and that the E-cores are another kind.
    let mut os = with_caches(os_like(&topo), 2, &[(16..20).collect(), (20..24).collect()]);
    for c in &mut os.cpus {
        c.kind = Some(if c.id < 16 { "core" } else { "atom" }.into());
    }
    let diffs = compare_with_os(&topo, &os);
    assert!(diffs.is_empty(), "{diffs:#?}");
    // Without the kinds, the "all E-cores" group is structure the OS does not describe.
    for c in &mut os.cpus {
        c.kind = None;
    }
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(levels(&diffs), vec![StructureLevel::Group], "{diffs:#?}");
    assert!(diffs[0].message.contains("{16-23}"), "{}", diffs[0].message);
}

#[test]
fn wrong_smt_siblings_are_a_core_difference() {
    let spec = platforms::ivy();
    let topo = inferred(&spec);
    let mut os = os_like(&topo);
    // The OS pairs 2k with 2k+1 (adjacent numbering), latency finds k and k+20 (far).
    for c in &mut os.cpus {
        let first = c.id & !1;
        c.thread_siblings = vec![first, first + 1];
        c.core = i64::from(first);
    }
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(
        levels(&diffs),
        vec![StructureLevel::Core, StructureLevel::Core],
        "{diffs:#?}"
    );
    assert!(
        diffs[0].message.contains("{0,20} into {0} + {20}"),
        "{}",
        diffs[0].message
    );
    assert!(
        diffs[1].message.contains("{0-1} into {0} + {1}"),
        "{}",
        diffs[1].message
    );
    assert!(
        diffs[0].rerun.contains("topoprobe latency 0 20 --smt"),
        "{}",
        diffs[0].rerun
    );
    assert!(diffs.iter().all(|d| d.rerun.contains("--reps")));
}

#[test]
fn one_package_against_two_sockets_is_a_socket_difference() {
    let spec = platforms::xeon_2s();
    let topo = inferred(&spec);
    assert_eq!(topo.num_sockets(), 2);
    let mut os = os_like(&topo);
    let all: Vec<u32> = os.online();
    for c in &mut os.cpus {
        c.package = 0;
        c.core_siblings.clone_from(&all);
    }
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(levels(&diffs), vec![StructureLevel::Socket], "{diffs:#?}");
    let d = &diffs[0];
    assert!(
        d.message.contains("2 socket(s), the OS 1 package(s)"),
        "{}",
        d.message
    );
    assert!(
        d.message
            .contains("{0-63} into {0-15,32-47} + {16-31,48-63}"),
        "{}",
        d.message
    );
    assert!(d.rerun.contains("--sockets 1"), "{}", d.rerun);
    assert!(d.rerun.contains("topoprobe latency 0 16"), "{}", d.rerun);
}

#[test]
fn os_groups_without_latency_trace() {
    let spec = platforms::haswell();
    let topo = inferred(&spec);
    // The OS claims an L2 shared by pairs of cores (k and k+1 with their siblings k+48 and
    // k+49, in the same socket) on flat sockets.
    let pairs: Vec<Vec<u32>> = (0..24)
        .step_by(2)
        .map(|k| vec![k, k + 1, k + 48, k + 49])
        .collect();
    let os = with_caches(os_like(&topo), 2, &pairs);
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(levels(&diffs), vec![StructureLevel::Group], "{diffs:#?}");
    assert!(
        diffs[0].message.contains("no trace"),
        "{}",
        diffs[0].message
    );
    assert!(
        diffs[0].message.contains("L2 cache"),
        "{}",
        diffs[0].message
    );
    // An L3 shared by a whole package is no group.
    let packages: Vec<Vec<u32>> = os.packages().into_values().collect();
    let os = with_caches(os_like(&topo), 3, &packages);
    assert!(compare_with_os(&topo, &os).is_empty());
}

#[test]
fn latency_groups_unknown_to_the_os() {
    let spec = platforms::ccx_server(2);
    let topo = inferred(&spec);
    // The OS knows an L3 per package only.
    let os = os_like(&topo);
    let packages: Vec<Vec<u32>> = os.packages().into_values().collect();
    let os = with_caches(os, 3, &packages);
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(levels(&diffs), vec![StructureLevel::Group], "{diffs:#?}");
    assert!(
        diffs[0].message.contains("4 group(s)"),
        "{}",
        diffs[0].message
    );
}

#[test]
fn only_common_cpus_are_compared() {
    let spec = platforms::ivy();
    let topo = inferred(&spec);
    let mut os = os_like(&topo);
    // More online CPUs than the topology covers (it was measured with --cpus).
    for id in 100..104 {
        os.cpus.push(OsCpu {
            id,
            package: 7,
            die: None,
            core: i64::from(id),
            cluster: None,
            thread_siblings: vec![id],
            core_siblings: (100..104).collect(),
            node: None,
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        });
    }
    assert!(compare_with_os(&topo, &os).is_empty());
    // CPUs of the topology that the OS does not have are reported once.
    os.cpus.retain(|c| c.id != 5 && c.id != 6);
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(levels(&diffs), vec![StructureLevel::Core], "{diffs:#?}");
    assert!(
        diffs[0].message.contains("CPUs 5-6"),
        "{}",
        diffs[0].message
    );
    // Nothing in common: only that.
    assert_eq!(compare_with_os(&topo, &OsView::default()).len(), 1);
}

#[test]
fn nodes_are_compared_when_the_topology_has_them() {
    let spec = platforms::ivy();
    let mut topo = inferred(&spec);
    let mut os = os_like(&topo);
    // No nodes in the topology: nothing to compare.
    os.nodes = Some(vec![OsNode {
        id: 0,
        cpus: os.online(),
        distances: vec![10],
        memory_bytes: None,
    }]);
    for c in &mut os.cpus {
        c.node = Some(0);
    }
    assert!(compare_with_os(&topo, &os).is_empty());
    topo.set_nodes(2, &[Some(NodeId(0)), Some(NodeId(1))])
        .unwrap();
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(levels(&diffs), vec![StructureLevel::Node], "{diffs:#?}");
    assert!(diffs[0].rerun.contains("--sockets 1"), "{}", diffs[0].rerun);
    // One OS node per package: they agree.
    let packages = os.packages();
    os.nodes = Some(
        packages
            .values()
            .enumerate()
            .map(|(i, cpus)| OsNode {
                id: u32::try_from(i).unwrap(),
                cpus: cpus.clone(),
                distances: Vec::new(),
                memory_bytes: None,
            })
            .collect(),
    );
    for c in &mut os.cpus {
        c.node = Some(u32::from(c.package != 36));
    }
    assert!(compare_with_os(&topo, &os).is_empty());
}

#[test]
fn differences_are_recorded_and_shown() {
    let spec = platforms::xeon_2s();
    let mut topo = inferred(&spec);
    let mut os = os_like(&topo);
    for c in &mut os.cpus {
        c.package = 0;
    }
    assert_eq!(record_os_differences(&mut topo, &os), 1);
    assert_eq!(topo.validation().os_differences.len(), 1);
    let text = topoprobe_view::text::render(&topo);
    assert!(
        text.contains("differences from the operating system"),
        "{text}"
    );
    assert!(text.contains("--sockets 1"), "{text}");
    let json = serde_json::to_string(&topo).unwrap();
    let back: Topology = serde_json::from_str(&json).unwrap();
    assert_eq!(
        back.validation().os_differences,
        topo.validation().os_differences
    );
    assert_eq!(record_os_differences(&mut topo, &os_like(&back)), 0);
    assert!(topo.validation().os_differences.is_empty());
}

/// `os` with one OS NUMA node per package (node 0 for package 36, node 1 otherwise).
fn node_per_package(mut os: OsView) -> OsView {
    let packages = os.packages();
    os.nodes = Some(
        packages
            .values()
            .enumerate()
            .map(|(i, cpus)| OsNode {
                id: u32::try_from(i).unwrap(),
                cpus: cpus.clone(),
                distances: Vec::new(),
                memory_bytes: None,
            })
            .collect(),
    );
    for c in &mut os.cpus {
        c.node = Some(u32::from(c.package != 36));
    }
    os
}

#[test]
fn measured_cache_sharing_is_compared_with_the_os() {
    use topoprobe_model::{
        CacheLevel, CacheSection, ContextId, Origin, PairVerdict, SharingOutcome, SharingPair,
        SharingTest,
    };
    // The 16-core flat socket of the Xeon guest; the OS lists one L3 for all 16 CPUs.
    let spec = platforms::flat_mesh(16);
    let mut topo = inferred(&spec);
    let all: Vec<u32> = (0..16).collect();
    let os = with_caches(os_like(&topo), 3, std::slice::from_ref(&all));
    let level = |shared_by: Vec<Vec<ContextId>>, source, verdict| {
        let mut l = CacheLevel::new(3, Some(CacheType::Unified));
        l.shared_by = shared_by;
        l.sharing = Some(SharingTest {
            outcome: SharingOutcome::Decided,
            source: Some(source),
            array_kib: Some(21 * 1024),
            alone_ns: Some(20.0),
            double_ns: Some(60.0),
            pairs: vec![SharingPair {
                a: ContextId(0),
                b: ContextId(1),
                ratio: 1.01,
                fraction: 0.02,
                fraction_again: Some(0.01),
                verdict,
            }],
            reason: None,
        });
        CacheSection {
            levels: vec![l],
            tlb: Vec::new(),
        }
    };
    let private: Vec<Vec<ContextId>> = (0..16).map(|i| vec![ContextId(i)]).collect();
    let shared = vec![(0..16).map(ContextId).collect::<Vec<_>>()];
    // Measured shared by all 16, as the OS: no difference.
    topo.set_caches(Some(level(
        shared.clone(),
        Origin::Measured,
        PairVerdict::Shared,
    )));
    assert!(compare_with_os(&topo, &os).is_empty());
    // Measured private: a cache difference with the pair that shows it.
    topo.set_caches(Some(level(
        private.clone(),
        Origin::Measured,
        PairVerdict::Private,
    )));
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(levels(&diffs), [StructureLevel::Cache], "{diffs:#?}");
    assert!(
        diffs[0].message.contains("the OS lists one L3 for CPUs the walks find in separate instances: {0-15} into {0} + {1} + "),
        "{}",
        diffs[0].message
    );
    assert!(diffs[0].message.contains("CPUs 0 and 1 walking together"));
    assert_eq!(record_os_differences(&mut topo, &os), 1);
    // The OS's sharing kept (the walks did not decide): nothing measured to compare.
    topo.set_caches(Some(level(shared, Origin::Os, PairVerdict::Unclear)));
    assert!(compare_with_os(&topo, &os).is_empty());
    // Without an L3 in the OS view there is nothing to compare either.
    topo.set_caches(Some(level(private, Origin::Measured, PairVerdict::Private)));
    assert!(compare_with_os(&topo, &os_like(&topo)).is_empty());
}

#[test]
fn contention_across_os_nodes_is_a_node_difference() {
    use topoprobe_model::{ContentionPair, ContentionSection, ContextId};
    let spec = platforms::xeon_2s();
    let mut topo = inferred(&spec);
    let os = node_per_package(os_like(&topo));
    let far = topo
        .contexts()
        .iter()
        .find(|c| c.socket != topo.contexts()[0].socket)
        .unwrap()
        .id;
    let section = |gbps: f64| ContentionSection {
        alone_gbps: 10.0,
        pairs: vec![ContentionPair {
            a: ContextId(0),
            b: far,
            gbps,
            overhead: 10.0 / gbps,
        }],
        ..ContentionSection::default()
    };
    topo.set_contention(Some(section(9.8)));
    assert!(compare_with_os(&topo, &os).is_empty());
    topo.set_contention(Some(section(6.0)));
    let diffs = compare_with_os(&topo, &os);
    assert_eq!(levels(&diffs), [StructureLevel::Node], "{diffs:#?}");
    assert!(
        diffs[0].message.contains("60% of the bandwidth alone"),
        "{}",
        diffs[0].message
    );
}
