//! Export as hwloc v2 XML, the format hwloc-based runtimes (MPI, OpenMP runtimes,
//! schedulers) load with `HWLOC_XMLFILE` or `lstopo --input FILE.xml`.
//!
//! The tree is Machine → Package (one per socket) → Group (one per group, innermost
//! last) → Core → PU, with the NUMA nodes as memory children of the package whose local
//! node they are (of the machine when a node is local to several sockets or to none; one
//! node for the whole machine when the description knows none). PU numbers are the OS CPU
//! numbers of the contexts.
//!
//! The measured core-to-core latency matrix is a `<distances2>` structure between the PUs
//! (kind `HWLOC_DISTANCES_KIND_FROM_USER | HWLOC_DISTANCES_KIND_MEANS_LATENCY`, named
//! `topoprobe-latency-ps` in picoseconds for ns descriptions, `topoprobe-latency-cycles`
//! for cycles; hwloc distances are integers). Raw measurements are used where present,
//! the normalized latency of the pair elsewhere.
//!
//! Memory figures become memory attributes (`<memattr>`) with the socket's CPUs as
//! initiator: `Latency` in ns (hwloc's unit; `topoprobe-latency-cycles` when the
//! description is in cycles), `ReadBandwidth`, `WriteBandwidth` and `Bandwidth` (= read)
//! in MiB/s, from the bandwidth measured with every context of the socket.

use std::fmt::Write as _;

use super::common::escape_xml;
use crate::components::Member;
use crate::ids::{ContextId, NodeId, SocketId};
use crate::sections::{Access, Threads};
use crate::topology::Topology;
use crate::units::LatencyUnit;

/// `HWLOC_DISTANCES_KIND_FROM_USER` (2) | `HWLOC_DISTANCES_KIND_MEANS_LATENCY` (4).
pub const DISTANCES_KIND: u64 = 2 | 4;

/// hwloc's memory-attribute flags: `LOWER_FIRST` (2) | `NEED_INITIATOR` (4).
const LOWER_FIRST_WITH_INITIATOR: u64 = 2 | 4;

/// hwloc's memory-attribute flags: `HIGHER_FIRST` (1) | `NEED_INITIATOR` (4).
const HIGHER_FIRST_WITH_INITIATOR: u64 = 1 | 4;

/// The name of the distances structure for a unit.
#[must_use]
pub const fn distances_name(units: LatencyUnit) -> &'static str {
    match units {
        LatencyUnit::Ns => "topoprobe-latency-ps",
        LatencyUnit::Cycles => "topoprobe-latency-cycles",
    }
}

/// A set of bit positions in hwloc's bitmap syntax: 32-bit words in hexadecimal, most
/// significant first, separated by commas (`0x000000ff,0xffffffff`).
#[must_use]
pub fn bitmap(bits: &[u32]) -> String {
    let words = bits.iter().map(|&b| b / 32 + 1).max().unwrap_or(1) as usize;
    let mut w = vec![0u32; words];
    for &b in bits {
        w[(b / 32) as usize] |= 1 << (b % 32);
    }
    w.iter()
        .rev()
        .map(|x| format!("0x{x:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A memory-attribute value: initiator socket, target node, value.
type AttrValue = (SocketId, NodeId, u64);

struct Writer<'a> {
    topo: &'a Topology,
    out: String,
    next_gp: u64,
    /// gp_index of every NUMA node.
    node_gp: Vec<u64>,
    /// Nodes attached to each socket's package.
    socket_nodes: Vec<Vec<NodeId>>,
    /// Nodes attached to the machine.
    machine_nodes: Vec<NodeId>,
}

impl Writer<'_> {
    fn gp(&mut self) -> u64 {
        self.next_gp += 1;
        self.next_gp
    }

    fn cpus(&self, contexts: &[ContextId]) -> Vec<u32> {
        contexts
            .iter()
            .filter_map(|c| self.topo.contexts().get(c.0).map(|x| x.os_id))
            .collect()
    }

    fn node_os(&self, n: NodeId) -> u32 {
        self.topo
            .nodes()
            .get(n.0)
            .and_then(|x| x.os_id)
            .unwrap_or(n.0 as u32)
    }

    /// The nodeset of a socket: its local nodes, else every node.
    fn socket_nodeset(&self, s: SocketId) -> Vec<u32> {
        let local = &self.socket_nodes[s.0];
        if local.is_empty() {
            self.machine_nodes
                .iter()
                .map(|&n| self.node_os(n))
                .collect()
        } else {
            local.iter().map(|&n| self.node_os(n)).collect()
        }
    }

    fn sets(&self, cpus: &[u32], nodes: &[u32]) -> String {
        let c = bitmap(cpus);
        let n = bitmap(nodes);
        format!("cpuset=\"{c}\" complete_cpuset=\"{c}\" nodeset=\"{n}\" complete_nodeset=\"{n}\"")
    }

    fn numa(&mut self, n: NodeId, cpus: &[u32], indent: &str) {
        let os = self.node_os(n);
        let gp = self.node_gp[n.0];
        let sets = self.sets(cpus, &[os]);
        let memory = self
            .topo
            .nodes()
            .get(n.0)
            .and_then(|x| x.capacity_bytes)
            .map_or(String::new(), |b| format!(" local_memory=\"{b}\""));
        let _ = writeln!(
            self.out,
            "{indent}<object type=\"NUMANode\" os_index=\"{os}\" {sets} gp_index=\"{gp}\"{memory}/>"
        );
    }

    fn members(&mut self, members: &[Member], nodeset: &[u32], depth: usize) {
        let topo = self.topo;
        let indent = "  ".repeat(depth);
        for m in members {
            match *m {
                Member::Group(g) => {
                    let group = &topo.groups()[g.0];
                    let gp = self.gp();
                    let sets = self.sets(&self.cpus(&group.contexts), nodeset);
                    let _ = writeln!(
                        self.out,
                        "{indent}<object type=\"Group\" {sets} gp_index=\"{gp}\" kind=\"1000\" subkind=\"{}\" dont_merge=\"1\">",
                        group.depth
                    );
                    let _ = writeln!(
                        self.out,
                        "{indent}  <info name=\"TopoprobeGroup\" value=\"{} ({})\"/>",
                        g.0,
                        escape_xml(&group.evidence.to_string())
                    );
                    self.members(&group.members, nodeset, depth + 1);
                    let _ = writeln!(self.out, "{indent}</object>");
                }
                Member::Core(c) => {
                    let ctxs = topo.core_contexts(c).to_vec();
                    let gp = self.gp();
                    let sets = self.sets(&self.cpus(&ctxs), nodeset);
                    let _ = writeln!(
                        self.out,
                        "{indent}<object type=\"Core\" os_index=\"{}\" {sets} gp_index=\"{gp}\">",
                        c.0
                    );
                    for x in ctxs {
                        let os = topo.contexts()[x.0].os_id;
                        let gp = self.gp();
                        let sets = self.sets(&[os], nodeset);
                        let _ = writeln!(
                            self.out,
                            "{indent}  <object type=\"PU\" os_index=\"{os}\" {sets} gp_index=\"{gp}\"/>"
                        );
                    }
                    let _ = writeln!(self.out, "{indent}</object>");
                }
            }
        }
    }

    fn distances(&mut self) {
        let topo = self.topo;
        let n = topo.num_contexts();
        if n < 2 {
            return;
        }
        let tables = topo.latency_tables();
        let scale = match topo.units() {
            LatencyUnit::Ns => 1000.0,
            LatencyUnit::Cycles => 1.0,
        };
        let mut values = Vec::with_capacity(n * n);
        for a in 0..n {
            for b in 0..n {
                let v = if a == b {
                    0.0
                } else {
                    tables
                        .raw
                        .get(a, b)
                        .or_else(|| tables.raw.get(b, a))
                        .or_else(|| topo.context_latency(ContextId(a), ContextId(b)))
                        .unwrap_or(0.0)
                };
                values.push((v * scale).round() as u64);
            }
        }
        let indexes: Vec<String> = topo
            .contexts()
            .iter()
            .map(|c| c.os_id.to_string())
            .collect();
        let _ = writeln!(
            self.out,
            "  <distances2 type=\"PU\" nbobjs=\"{n}\" kind=\"{DISTANCES_KIND}\" name=\"{}\" indexing=\"os\">",
            distances_name(topo.units())
        );
        // Like hwloc: chunks of values, each followed by a space; `length` is the number
        // of characters of the content.
        for chunk in indexes.chunks(16) {
            let text: String = chunk.iter().map(|v| format!("{v} ")).collect();
            let _ = writeln!(
                self.out,
                "    <indexes length=\"{}\">{text}</indexes>",
                text.len()
            );
        }
        for chunk in values.chunks(16) {
            let text: String = chunk.iter().map(|v| format!("{v} ")).collect();
            let _ = writeln!(
                self.out,
                "    <u64values length=\"{}\">{text}</u64values>",
                text.len()
            );
        }
        let _ = writeln!(self.out, "  </distances2>");
    }

    fn memattrs(&mut self) {
        let topo = self.topo;
        let Some(mem) = topo.memory() else {
            return;
        };
        let nodes = topo.num_known_nodes();
        let latency_name = match topo.units() {
            LatencyUnit::Ns => "Latency",
            LatencyUnit::Cycles => "topoprobe-latency-cycles",
        };
        // (name, flags, values: (socket, node, value))
        let mut attrs: Vec<(&str, u64, Vec<AttrValue>)> = Vec::new();
        let mut lat = Vec::new();
        for s in topo.sockets() {
            for n in (0..nodes).map(NodeId) {
                if let Some(v) = mem.latency_from(topo.socket_contexts(s.id), n) {
                    lat.push((s.id, n, v.round() as u64));
                }
            }
        }
        attrs.push((latency_name, LOWER_FIRST_WITH_INITIATOR, lat));
        let bw = |access: Access| -> Vec<AttrValue> {
            mem.bandwidth
                .iter()
                .filter(|b| b.access == access && b.threads == Threads::AllContexts)
                .map(|b| {
                    (
                        b.socket,
                        b.node,
                        (b.gbps * 1e9 / 1_048_576.0).round() as u64,
                    )
                })
                .collect()
        };
        attrs.push(("Bandwidth", HIGHER_FIRST_WITH_INITIATOR, bw(Access::Read)));
        attrs.push((
            "ReadBandwidth",
            HIGHER_FIRST_WITH_INITIATOR,
            bw(Access::Read),
        ));
        attrs.push((
            "WriteBandwidth",
            HIGHER_FIRST_WITH_INITIATOR,
            bw(Access::Write),
        ));
        for (name, flags, values) in attrs {
            let values: Vec<_> = values
                .into_iter()
                .filter(|(s, n, _)| s.0 < topo.num_sockets() && n.0 < self.node_gp.len())
                .collect();
            if values.is_empty() {
                continue;
            }
            let _ = writeln!(self.out, "  <memattr name=\"{name}\" flags=\"{flags}\">");
            for (s, n, v) in values {
                let cpus = bitmap(&self.cpus(topo.socket_contexts(s)));
                let _ = writeln!(
                    self.out,
                    "    <memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"{}\" value=\"{v}\" initiator_cpuset=\"{cpus}\"/>",
                    self.node_gp[n.0]
                );
            }
            let _ = writeln!(self.out, "  </memattr>");
        }
    }
}

/// Renders a topology as hwloc v2 XML (see the [module documentation](self)).
#[must_use]
pub fn render(topo: &Topology) -> String {
    let mut w = Writer {
        topo,
        out: String::new(),
        next_gp: 0,
        node_gp: Vec::new(),
        socket_nodes: vec![Vec::new(); topo.num_sockets()],
        machine_nodes: Vec::new(),
    };
    // Where each node hangs.
    let nodes = topo.num_known_nodes().max(1);
    for n in (0..nodes).map(NodeId) {
        let local: Vec<SocketId> = topo
            .nodes()
            .get(n.0)
            .map(|x| x.local_sockets.clone())
            .unwrap_or_default();
        match local.as_slice() {
            [s] if s.0 < topo.num_sockets() => w.socket_nodes[s.0].push(n),
            _ => w.machine_nodes.push(n),
        }
    }
    let machine_gp = w.gp();
    w.node_gp = (0..nodes).map(|_| 0).collect();
    for i in 0..nodes {
        w.node_gp[i] = w.gp();
    }
    let all_cpus: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
    let all_nodes: Vec<u32> = (0..nodes).map(|n| w.node_os(NodeId(n))).collect();
    w.out
        .push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    w.out
        .push_str("<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n");
    w.out.push_str("<topology version=\"2.0\">\n");
    let c = bitmap(&all_cpus);
    let n = bitmap(&all_nodes);
    let _ = writeln!(
        w.out,
        "  <object type=\"Machine\" os_index=\"0\" cpuset=\"{c}\" complete_cpuset=\"{c}\" allowed_cpuset=\"{c}\" nodeset=\"{n}\" complete_nodeset=\"{n}\" allowed_nodeset=\"{n}\" gp_index=\"{machine_gp}\">"
    );
    let m = topo.machine();
    let p = topo.provenance();
    let mut infos = vec![
        ("Backend", "topoprobe".to_string()),
        ("TopoprobeVersion", p.version.clone()),
        ("TopoprobeSource", p.source.to_string()),
        ("TopoprobeUnits", topo.units().to_string()),
    ];
    if let Some(h) = &m.hostname {
        infos.push(("HostName", h.clone()));
    }
    if let Some(k) = &m.kernel {
        infos.push(("OSRelease", k.clone()));
    }
    for (k, v) in infos {
        let _ = writeln!(
            w.out,
            "    <info name=\"{k}\" value=\"{}\"/>",
            escape_xml(&v)
        );
    }
    for node in w.machine_nodes.clone() {
        w.numa(node, &all_cpus, "    ");
    }
    for s in topo.sockets() {
        let gp = w.gp();
        let cpus = w.cpus(&s.contexts);
        let nodeset = w.socket_nodeset(s.id);
        let sets = w.sets(&cpus, &nodeset);
        let _ = writeln!(
            w.out,
            "    <object type=\"Package\" os_index=\"{}\" {sets} gp_index=\"{gp}\">",
            s.id.0
        );
        if let Some(model) = &m.cpu_model {
            let _ = writeln!(
                w.out,
                "      <info name=\"CPUModel\" value=\"{}\"/>",
                escape_xml(model)
            );
        }
        for node in w.socket_nodes[s.id.0].clone() {
            w.numa(node, &cpus, "      ");
        }
        w.members(&s.members, &nodeset, 3);
        let _ = writeln!(w.out, "    </object>");
    }
    w.out.push_str("  </object>\n");
    w.distances();
    w.memattrs();
    w.out.push_str("</topology>\n");
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmaps_as_hwloc_writes_them() {
        assert_eq!(bitmap(&[]), "0x00000000");
        assert_eq!(bitmap(&[0, 1]), "0x00000003");
        assert_eq!(bitmap(&[0, 39]), "0x00000080,0x00000001");
        assert_eq!(bitmap(&[32]), "0x00000001,0x00000000");
    }
}
