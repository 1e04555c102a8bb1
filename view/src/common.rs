//! Helpers shared by the views (text, DOT, heatmap, report): number formatting, names, the
//! topology order of contexts and the memory figures of a socket. The helpers the views
//! share with the file formats ([`plural`](topoprobe_model::format::plural),
//! [`escape_xml`](topoprobe_model::format::escape_xml)) are in `topoprobe-model`.

use topoprobe_model::{
    Access, ContextId, CoreId, GroupId, Member, NodeId, SocketId, Source, Threads, Topology,
};

/// A latency with its unit: whole numbers from 100 up or when integral, else one decimal.
pub(crate) fn lat(topo: &Topology, v: f64) -> String {
    format!("{} {}", num(v), topo.units())
}

/// A latency without its unit (see [`lat`]).
pub(crate) fn num(v: f64) -> String {
    topoprobe_model::format::short_latency(v)
}

/// A short name of the described machine for titles: its host name, else its CPU model,
/// else the file name of its source.
pub(crate) fn machine_name(topo: &Topology) -> String {
    let m = topo.machine();
    if let Some(h) = m.hostname.clone().or_else(|| m.cpu_model.clone()) {
        return h;
    }
    match &topo.provenance().source {
        Source::Matrix { path } | Source::Mct { path } | Source::Description { path } => {
            std::path::Path::new(path)
                .file_stem()
                .map_or_else(|| path.clone(), |s| s.to_string_lossy().into_owned())
        }
        other => other.to_string(),
    }
}

/// What the direct members of a socket or group are, for "latency between its …".
pub(crate) fn members_word(members: &[Member]) -> &'static str {
    let cores = members.iter().all(|m| matches!(m, Member::Core(_)));
    let groups = members.iter().all(|m| matches!(m, Member::Group(_)));
    match (cores, groups) {
        (true, _) => "cores",
        (_, true) => "groups",
        _ => "members",
    }
}

/// Every context in topology order: socket by socket, then group by group (depth first,
/// in member order), then core by core, each core's contexts ascending.
pub(crate) fn context_order(topo: &Topology) -> Vec<ContextId> {
    let mut out = Vec::with_capacity(topo.num_contexts());
    for s in topo.sockets() {
        push_members(topo, &s.members, &mut out);
    }
    // A context outside every socket cannot exist in a valid topology; keep any anyway.
    if out.len() < topo.num_contexts() {
        let seen: std::collections::HashSet<ContextId> = out.iter().copied().collect();
        out.extend(
            topo.contexts()
                .iter()
                .map(|c| c.id)
                .filter(|c| !seen.contains(c)),
        );
    }
    out
}

fn push_members(topo: &Topology, members: &[Member], out: &mut Vec<ContextId>) {
    for m in members {
        match *m {
            Member::Core(c) => out.extend_from_slice(topo.core_contexts(c)),
            Member::Group(g) => {
                if let Some(group) = topo.groups().get(g.0) {
                    push_members(topo, &group.members, out);
                }
            }
        }
    }
}

/// The outermost group (depth 1) containing a context, if any.
pub(crate) fn outer_group(topo: &Topology, ctx: ContextId) -> Option<GroupId> {
    topo.groups_of(ctx).last().copied()
}

/// Memory figures from one socket to one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NodeMemory {
    /// The node.
    pub(crate) node: NodeId,
    /// Whether it is the socket's local node.
    pub(crate) local: bool,
    /// Latency, in the topology's unit.
    pub(crate) latency: Option<f64>,
    /// Read bandwidth with every context of the socket, GB/s.
    pub(crate) read_all: Option<f64>,
    /// Read bandwidth of one thread, GB/s.
    pub(crate) read_one: Option<f64>,
}

impl NodeMemory {
    /// The best read bandwidth known (all contexts, else one thread).
    pub(crate) fn bandwidth(&self) -> Option<f64> {
        self.read_all.or(self.read_one)
    }
}

/// Memory figures from `socket` to every known node.
pub(crate) fn socket_memory(topo: &Topology, socket: SocketId) -> Vec<NodeMemory> {
    let local = topo.sockets().get(socket.0).and_then(|s| s.local_node);
    let contexts = topo.socket_contexts(socket);
    (0..topo.num_known_nodes())
        .map(NodeId)
        .map(|node| {
            let mem = topo.memory();
            NodeMemory {
                node,
                local: local == Some(node),
                latency: mem.and_then(|m| m.latency_from(contexts, node)),
                read_all: mem
                    .and_then(|m| m.bandwidth_of(socket, node, Access::Read, Threads::AllContexts)),
                read_one: mem
                    .and_then(|m| m.bandwidth_of(socket, node, Access::Read, Threads::Single)),
            }
        })
        .collect()
}

/// The cores among a socket's or group's members (its groups left out), in order.
pub(crate) fn core_members(members: &[Member]) -> Vec<CoreId> {
    members
        .iter()
        .filter_map(|m| match *m {
            Member::Core(c) => Some(c),
            Member::Group(_) => None,
        })
        .collect()
}

/// Smallest and largest latency between the first two contexts of the given cores.
pub(crate) fn smt_range(topo: &Topology, cores: &[CoreId]) -> Option<(f64, f64)> {
    let smt: Vec<f64> = cores
        .iter()
        .filter_map(|&c| {
            let cs = topo.core_contexts(c);
            (cs.len() > 1)
                .then(|| topo.context_latency(cs[0], cs[1]))
                .flatten()
        })
        .collect();
    Some((
        smt.iter().copied().reduce(f64::min)?,
        smt.iter().copied().reduce(f64::max)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{Evidence, LatencyMatrix, LatencyUnit, TopologyBuilder};

    #[test]
    fn order_follows_sockets_groups_and_cores() {
        // Socket 0: group {core(0,3)}, core(1); socket 1: core(2).
        let mut b = TopologyBuilder::new(vec![0, 1, 2, 3], LatencyUnit::Ns);
        let c0 = b.core(vec![ContextId(3), ContextId(0)]);
        let c1 = b.core(vec![ContextId(1)]);
        let c2 = b.core(vec![ContextId(2)]);
        let g = b.group(vec![Member::Core(c0)], Evidence::Given);
        b.socket(vec![Member::Core(c1), Member::Group(g)]);
        b.socket(vec![Member::Core(c2)]);
        let m = LatencyMatrix::from_fn(4, |_, _| Some(10.0));
        b.latencies(m.clone(), m);
        let topo = b.build().unwrap();
        assert_eq!(
            context_order(&topo),
            vec![ContextId(1), ContextId(0), ContextId(3), ContextId(2)]
        );
        assert_eq!(outer_group(&topo, ContextId(3)), Some(g));
        assert_eq!(outer_group(&topo, ContextId(1)), None);
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(123.4), "123");
        assert_eq!(num(28.0), "28");
    }
}
