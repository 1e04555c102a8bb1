//! Queries over a hand-built topology: two sockets, one with two CCX-like groups of two
//! SMT cores, the other with two single-context cores; one memory node per socket.

use topoprobe_model::{
    Component, ContextId, CoreId, Evidence, GroupId, LatencyLevel, LatencyMatrix, LatencySummary,
    LatencyUnit, Level, Member, MemoryLatency, MemorySection, NodeId, Role, SocketId, Topology,
    TopologyBuilder,
};

/// Contexts: socket 0 = cores (0,1) (2,3) in group 0 and (4,5) (6,7) in group 1;
/// socket 1 = cores (8) and (9).
fn machine() -> Topology {
    let mut b = TopologyBuilder::new((0..10).collect(), LatencyUnit::Ns);
    let core =
        |b: &mut TopologyBuilder, c: &[usize]| b.core(c.iter().map(|&x| ContextId(x)).collect());
    let c: Vec<CoreId> = [&[0, 1][..], &[2, 3], &[4, 5], &[6, 7], &[8], &[9]]
        .iter()
        .map(|cs| core(&mut b, cs))
        .collect();
    let g0 = b.group(
        vec![Member::Core(c[0]), Member::Core(c[1])],
        Evidence::LatencyGap,
    );
    let g1 = b.group(
        vec![Member::Core(c[2]), Member::Core(c[3])],
        Evidence::LatencyGap,
    );
    let s0 = b.socket(vec![Member::Group(g0), Member::Group(g1)]);
    let s1 = b.socket(vec![Member::Core(c[4]), Member::Core(c[5])]);
    b.node(Some(0), None, vec![s0]);
    b.node(Some(1), None, vec![s1]);
    let lat = LatencyMatrix::from_fn(10, |a, b| {
        let (sa, sb) = (usize::from(a >= 8), usize::from(b >= 8));
        Some(if sa != sb {
            300.0
        } else if sa == 1 {
            100.0
        } else if a / 2 == b / 2 {
            10.0
        } else if a / 4 == b / 4 {
            30.0
        } else {
            100.0
        })
    });
    let level = |role, v| LatencyLevel {
        id: 0,
        role,
        latency: LatencySummary {
            min: v,
            median: v,
            max: v,
            count: 1,
        },
    };
    b.levels(vec![
        level(Role::CrossSocket, 300.0),
        level(Role::Smt, 10.0),
        level(Role::Group, 30.0),
        level(Role::Socket, 100.0),
    ]);
    b.latencies(lat.clone(), lat);
    b.build().expect("a consistent topology")
}

#[test]
fn counts_per_level() {
    let t = machine();
    assert_eq!(t.num_contexts(), 10);
    assert_eq!(t.num_cores(), 6);
    assert_eq!(t.num_groups(), 2);
    assert_eq!(t.num_sockets(), 2);
    assert_eq!(t.num_nodes(), 2);
    assert_eq!(t.num_levels(), 4);
    assert_eq!(t.count(Level::Context), 10);
    assert_eq!(t.count(Level::Core), 6);
    assert_eq!(t.count(Level::Group(1)), 2);
    assert_eq!(t.count(Level::Group(2)), 0);
    assert_eq!(t.count(Level::Socket), 2);
    assert_eq!(t.contexts_per_core(), 2);
    assert!(t.has_smt());
    assert_eq!(t.group_depth(), 1);
}

#[test]
fn known_nodes_include_those_of_the_memory_section() {
    let mut t = machine();
    assert_eq!(t.num_known_nodes(), 2);
    t.set_memory(Some(MemorySection {
        latency: vec![MemoryLatency {
            context: ContextId(0),
            node: NodeId(3),
            latency: 90.0,
            cycles: None,
        }],
        bandwidth: Vec::new(),
        ..MemorySection::default()
    }));
    assert_eq!(t.num_nodes(), 2);
    assert_eq!(t.num_known_nodes(), 4);
}

#[test]
fn levels_are_sorted_and_numbered() {
    let t = machine();
    let ids: Vec<(usize, Role)> = t.levels().iter().map(|l| (l.id, l.role)).collect();
    assert_eq!(
        ids,
        vec![
            (1, Role::Smt),
            (2, Role::Group),
            (3, Role::Socket),
            (4, Role::CrossSocket)
        ]
    );
    assert_eq!(t.levels_with_role(Role::Group).len(), 1);
    assert_eq!(t.level_of(ContextId(0), ContextId(0)), Some(0));
    assert_eq!(t.level_of(ContextId(0), ContextId(1)), Some(1));
    assert_eq!(t.level_of(ContextId(0), ContextId(9)), Some(4));
}

#[test]
fn membership_queries() {
    let t = machine();
    assert_eq!(t.core_of(ContextId(3)), Some(CoreId(1)));
    assert_eq!(t.socket_of(ContextId(9)), Some(SocketId(1)));
    assert_eq!(t.groups_of(ContextId(5)), vec![GroupId(1)]);
    assert!(t.groups_of(ContextId(8)).is_empty());
    assert_eq!(t.local_node(ContextId(2)), Some(NodeId(0)));
    assert_eq!(t.local_node(ContextId(8)), Some(NodeId(1)));
    assert_eq!(
        t.socket_cores(SocketId(0)),
        &[CoreId(0), CoreId(1), CoreId(2), CoreId(3)]
    );
    assert_eq!(
        t.socket_contexts(SocketId(1)),
        &[ContextId(8), ContextId(9)]
    );
    assert_eq!(t.core_contexts(CoreId(2)), &[ContextId(4), ContextId(5)]);
    assert_eq!(t.contexts_of(Component::Group(GroupId(0))).len(), 4);
    assert_eq!(
        t.members_of(Component::Socket(SocketId(0))),
        vec![Component::Group(GroupId(0)), Component::Group(GroupId(1))]
    );
    assert_eq!(t.context_by_os_id(7), Some(ContextId(7)));
    assert_eq!(t.context_by_os_id(70), None);
    // Out-of-range ids give empty answers, not panics.
    assert!(t.socket_cores(SocketId(9)).is_empty());
    assert!(t.core_of(ContextId(99)).is_none());
}

#[test]
fn latency_between_any_two_components() {
    let t = machine();
    assert_eq!(t.latency(ContextId(0), ContextId(1)).unwrap(), 10.0);
    assert_eq!(t.latency(CoreId(0), CoreId(1)).unwrap(), 30.0);
    assert_eq!(t.latency(GroupId(0), GroupId(1)).unwrap(), 100.0);
    assert_eq!(t.latency(SocketId(0), SocketId(1)).unwrap(), 300.0);
    assert_eq!(t.latency(ContextId(0), SocketId(1)).unwrap(), 300.0);
    assert_eq!(t.latency(ContextId(4), ContextId(4)).unwrap(), 0.0);
    assert!(t.latency(SocketId(5), SocketId(0)).is_err());
    assert_eq!(
        t.max_latency(&[ContextId(0), ContextId(1), ContextId(2)]),
        Some(30.0)
    );
}

#[test]
fn closest_contexts_and_sockets() {
    let t = machine();
    assert_eq!(
        t.closest_contexts(ContextId(0), 3),
        vec![ContextId(1), ContextId(2), ContextId(3)]
    );
    assert_eq!(t.closest_contexts(ContextId(9), 1), vec![ContextId(8)]);
    assert_eq!(t.closest_sockets(SocketId(0), 5), vec![SocketId(1)]);
}

#[test]
fn interconnects_are_derived() {
    let t = machine();
    assert_eq!(t.interconnects().len(), 1);
    let i = &t.interconnects()[0];
    assert_eq!(
        (i.a, i.b, i.level, i.hops),
        (SocketId(0), SocketId(1), 4, 1)
    );
    assert_eq!(i.latency.median, 300.0);
    assert_eq!(t.sockets()[0].latency.map(|l| l.median), Some(100.0));
    assert_eq!(t.groups()[0].latency.map(|l| l.median), Some(30.0));
    assert_eq!(t.groups()[1].depth, 1);
}

#[test]
fn inconsistent_structures_are_rejected() {
    // A context in two cores.
    let mut b = TopologyBuilder::new(vec![0, 1], LatencyUnit::Ns);
    let a = b.core(vec![ContextId(0), ContextId(1)]);
    let c = b.core(vec![ContextId(1)]);
    b.socket(vec![Member::Core(a), Member::Core(c)]);
    let e = b.build().unwrap_err().to_string();
    assert!(e.contains("context 1 is in core 0 and core 1"), "{e}");
    // A core in no socket.
    let mut b = TopologyBuilder::new(vec![0, 1], LatencyUnit::Ns);
    let a = b.core(vec![ContextId(0)]);
    b.core(vec![ContextId(1)]);
    b.socket(vec![Member::Core(a)]);
    let e = b.build().unwrap_err().to_string();
    assert!(e.contains("core 1 is in no socket or group"), "{e}");
    // A dangling member.
    let mut b = TopologyBuilder::new(vec![0], LatencyUnit::Ns);
    let a = b.core(vec![ContextId(0)]);
    b.socket(vec![Member::Core(a), Member::Group(GroupId(7))]);
    assert!(b.build().is_err());
    // No contexts at all.
    assert!(TopologyBuilder::new(Vec::new(), LatencyUnit::Ns)
        .build()
        .is_err());
}
