//! The measured figures hwloc can hold, computed once for the XML writer and the
//! `hwloc-annotate` script: the core-to-core latency matrix as a distances structure
//! between PUs, and the memory latency and bandwidth as memory attributes from each
//! socket's CPUs (the initiator) to each node (the target), and from each initiator of
//! `mem --full`'s node × node matrix (a node's CPUs) where the socket table has no figure
//! for that set of CPUs.

use std::collections::BTreeMap;

use crate::ids::{ContextId, NodeId, SocketId};
use crate::sections::Access;
use crate::topology::Topology;
use crate::units::LatencyUnit;

use super::{distances_name, DISTANCES_KIND};

/// hwloc's memory-attribute flags: `LOWER_FIRST` (2) | `NEED_INITIATOR` (4).
pub(super) const LOWER_FIRST_WITH_INITIATOR: u64 = 2 | 4;

/// hwloc's memory-attribute flags: `HIGHER_FIRST` (1) | `NEED_INITIATOR` (4).
pub(super) const HIGHER_FIRST_WITH_INITIATOR: u64 = 1 | 4;

/// The latency matrix between PUs, in hwloc's integer values, made a row at a time as it
/// is written (4096 contexts make 16.8 million values).
pub(super) struct Distances<'a> {
    /// The structure's name.
    pub name: &'static str,
    /// `HWLOC_DISTANCES_KIND_*` flags.
    pub kind: u64,
    /// OS numbers of the PUs, in matrix order.
    pub os_ids: Vec<u32>,
    /// The description the values come from.
    topo: &'a Topology,
    /// hwloc's integer units per unit of the description.
    scale: f64,
}

impl Distances<'_> {
    /// The values of row `from` (0 on the diagonal and where the pair has no latency).
    pub fn row(&self, from: usize) -> impl Iterator<Item = u64> + '_ {
        let tables = self.topo.latency_tables();
        (0..self.os_ids.len()).map(move |to| {
            let v = if from == to {
                0.0
            } else {
                tables
                    .raw
                    .get(from, to)
                    .or_else(|| tables.raw.get(to, from))
                    .or_else(|| self.topo.context_latency(ContextId(from), ContextId(to)))
                    .unwrap_or(0.0)
            };
            (v * self.scale).round() as u64
        })
    }

    /// Whether some value is not 0.
    fn any_latency(&self) -> bool {
        (0..self.os_ids.len()).any(|from| self.row(from).any(|v| v != 0))
    }
}

/// One memory attribute and its values.
pub(super) struct MemAttr {
    /// hwloc's name (`Latency`, `Bandwidth`…) or topoprobe's for a figure hwloc has no
    /// attribute for.
    pub name: &'static str,
    /// `HWLOC_MEMATTR_FLAG_*` flags.
    pub flags: u64,
    /// Whether hwloc does not know the attribute (it must be registered first).
    pub custom: bool,
    /// The values, one per initiator socket and target node.
    pub values: Vec<AttrValue>,
}

/// A memory-attribute value from a set of CPUs to a node.
pub(super) struct AttrValue {
    /// The initiator: OS numbers of its CPUs (a socket's, or a node's).
    pub cpus: Vec<u32>,
    /// The target node.
    pub node: NodeId,
    /// The value in the attribute's unit.
    pub value: u64,
}

/// The latency matrix as hwloc distances (none below two contexts): raw measurements
/// where present, the normalized latency of the pair elsewhere, in picoseconds for a
/// description in ns (hwloc distances are integers) and in cycles otherwise.
pub(super) fn distances(topo: &Topology) -> Option<Distances<'_>> {
    if topo.num_contexts() < 2 {
        return None;
    }
    let d = Distances {
        name: distances_name(topo.units()),
        kind: DISTANCES_KIND,
        os_ids: topo.contexts().iter().map(|c| c.os_id).collect(),
        topo,
        scale: match topo.units() {
            LatencyUnit::Ns => 1000.0,
            LatencyUnit::Cycles => 1.0,
        },
    };
    // A structure-only description (the OS's view) has no latency to give.
    d.any_latency().then_some(d)
}

/// The memory attributes with at least one value, for the nodes below `nodes`:
/// `Latency` and `ReadLatency` (a dependent load's latency, in ns; the custom
/// `topoprobe-latency-cycles` for a description in cycles) from the socket's fastest
/// measuring context, and `Bandwidth` (= read), `ReadBandwidth` and `WriteBandwidth` in
/// MiB/s: the highest figure measured from the socket, whatever its thread count. The node
/// × node matrix adds idle latency and read bandwidth from its initiators whose CPUs no
/// socket figure has for that node (the nodes of a socket split into several, SNC or
/// NPS): latency only for a description in ns, since the matrix is in ns.
pub(super) fn memattrs(topo: &Topology, nodes: usize) -> Vec<MemAttr> {
    let Some(mem) = topo.memory() else {
        return Vec::new();
    };
    let socket_cpus = |s: SocketId| -> Vec<u32> {
        topo.socket_contexts(s)
            .iter()
            .filter_map(|c| topo.contexts().get(c.0).map(|x| x.os_id))
            .collect()
    };
    let mut lat = Vec::new();
    for s in topo.sockets() {
        for n in (0..nodes).map(NodeId) {
            if let Some(v) = mem.latency_from(topo.socket_contexts(s.id), n) {
                lat.push((socket_cpus(s.id), n, v.round() as u64));
            }
        }
    }
    let bw = |access: Access| -> Vec<(Vec<u32>, NodeId, u64)> {
        let mut best: BTreeMap<(SocketId, NodeId), f64> = BTreeMap::new();
        for b in mem.bandwidth.iter().filter(|b| b.access == access) {
            let e = best.entry((b.socket, b.node)).or_insert(b.gbps);
            *e = e.max(b.gbps);
        }
        best.into_iter()
            .filter(|((s, _), _)| s.0 < topo.num_sockets())
            .map(|((s, n), gbps)| (socket_cpus(s), n, mib_per_s(gbps)))
            .collect()
    };
    let mut read = bw(Access::Read);
    if let Some(m) = &mem.detail.node_matrix {
        let node_of = |os: u32| {
            (0..nodes)
                .map(NodeId)
                .find(|&n| super::node_os(topo, n) == os)
        };
        for (i, init) in m.initiators.iter().enumerate() {
            let mut cpus = init.cpus.clone();
            cpus.sort_unstable();
            for (t, &target) in m.targets.iter().enumerate() {
                let Some(n) = node_of(target) else {
                    continue;
                };
                let cell = |rows: &[Vec<Option<f64>>]| {
                    rows.get(i)
                        .and_then(|r| r.get(t))
                        .copied()
                        .flatten()
                        .filter(|v| v.is_finite() && *v > 0.0)
                };
                let known = |v: &[(Vec<u32>, NodeId, u64)]| {
                    v.iter().any(|(c, node, _)| *node == n && sorted(c) == cpus)
                };
                if let Some(ns) = cell(&m.latency_ns) {
                    if topo.units() == LatencyUnit::Ns && !known(&lat) {
                        lat.push((cpus.clone(), n, ns.round() as u64));
                    }
                }
                if let Some(gbps) = cell(&m.read_gbps) {
                    if !known(&read) {
                        read.push((cpus.clone(), n, mib_per_s(gbps)));
                    }
                }
            }
        }
    }
    let mut attrs = Vec::new();
    let mut push = |name, flags, custom, values: Vec<(Vec<u32>, NodeId, u64)>| {
        let values: Vec<AttrValue> = values
            .into_iter()
            .filter(|(cpus, n, _)| !cpus.is_empty() && n.0 < nodes)
            .map(|(cpus, node, value)| AttrValue { cpus, node, value })
            .collect();
        if !values.is_empty() {
            attrs.push(MemAttr {
                name,
                flags,
                custom,
                values,
            });
        }
    };
    match topo.units() {
        LatencyUnit::Ns => {
            push("Latency", LOWER_FIRST_WITH_INITIATOR, false, lat.clone());
            push("ReadLatency", LOWER_FIRST_WITH_INITIATOR, false, lat);
        }
        LatencyUnit::Cycles => push(
            "topoprobe-latency-cycles",
            LOWER_FIRST_WITH_INITIATOR,
            true,
            lat,
        ),
    }
    push(
        "Bandwidth",
        HIGHER_FIRST_WITH_INITIATOR,
        false,
        read.clone(),
    );
    push("ReadBandwidth", HIGHER_FIRST_WITH_INITIATOR, false, read);
    push(
        "WriteBandwidth",
        HIGHER_FIRST_WITH_INITIATOR,
        false,
        bw(Access::Write),
    );
    attrs
}

/// GB/s in hwloc's bandwidth unit, MiB/s.
fn mib_per_s(gbps: f64) -> u64 {
    (gbps * 1e9 / 1_048_576.0).round() as u64
}

/// A CPU list in ascending order.
fn sorted(cpus: &[u32]) -> Vec<u32> {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v
}
