//! Export as hwloc v2 XML, the format hwloc-based runtimes (MPI, OpenMP runtimes,
//! schedulers) load with `HWLOC_XMLFILE` or `lstopo --input FILE.xml`.
//!
//! The tree is Machine → Package (one per socket) → Group (one per group, innermost
//! last) → Core → PU, with the cache objects (`L3Cache`, `L2Cache`, `L1Cache`,
//! `L1iCache`…: size, line size, level, type) inserted where their CPUs nest (module
//! `tree`), and the NUMA nodes as memory children of the package whose local node they
//! are (of the machine when a node is local to several sockets or to none; one node for
//! the whole machine when the description knows none). PU numbers are the OS CPU numbers
//! of the contexts.
//!
//! The measured core-to-core latency matrix is a `<distances2>` structure between the PUs
//! (kind `HWLOC_DISTANCES_KIND_FROM_USER | HWLOC_DISTANCES_KIND_MEANS_LATENCY`, named
//! `topoprobe-latency-ps` in picoseconds for ns descriptions, `topoprobe-latency-cycles`
//! for cycles; hwloc distances are integers), shown by `lstopo --distances`. Raw
//! measurements are used where present, the normalized latency of the pair elsewhere.
//!
//! Memory figures become memory attributes (`<memattr>`, shown by `lstopo --memattrs`)
//! with the socket's CPUs as initiator: `Latency` and `ReadLatency` in ns (hwloc's unit;
//! `topoprobe-latency-cycles` when the description is in cycles), `ReadBandwidth`,
//! `WriteBandwidth` and `Bandwidth` (= read) in MiB/s, the highest bandwidth measured from
//! the socket.
//!
//! [`annotate`] writes the same figures as a script that applies them with
//! `hwloc-annotate` to a machine's own XML; [`read`] reads an XML file that `lstopo`
//! wrote as the operating system's view.

pub mod annotate;
mod figures;
pub mod read;
mod tree;

use std::fmt::Write as _;
use std::io;

use super::common::escape_xml;
use super::sink::{self, TextSink};
use crate::ids::{NodeId, SocketId};
use crate::os_view::CacheType;
use crate::topology::Topology;
use crate::units::LatencyUnit;
use tree::{Item, Kind};

/// `HWLOC_DISTANCES_KIND_FROM_USER` (2) | `HWLOC_DISTANCES_KIND_MEANS_LATENCY` (4).
pub const DISTANCES_KIND: u64 = 2 | 4;

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

struct Writer<'a, 'w> {
    topo: &'a Topology,
    tree: tree::Tree,
    out: TextSink<'w>,
    next_gp: u64,
    /// gp_index of every NUMA node.
    node_gp: Vec<u64>,
    /// Nodes attached to each socket's package.
    socket_nodes: Vec<Vec<NodeId>>,
    /// Nodes attached to the machine.
    machine_nodes: Vec<NodeId>,
}

/// hwloc's object type of a cache.
fn cache_type_name(level: u32, kind: Option<CacheType>) -> String {
    match kind {
        Some(CacheType::Instruction) => format!("L{level}iCache"),
        _ => format!("L{level}Cache"),
    }
}

/// hwloc's `cache_type`: 0 unified, 1 data, 2 instruction.
const fn cache_type_code(kind: Option<CacheType>) -> u8 {
    match kind {
        Some(CacheType::Data) => 1,
        Some(CacheType::Instruction) => 2,
        _ => 0,
    }
}

impl Writer<'_, '_> {
    fn gp(&mut self) -> u64 {
        self.next_gp += 1;
        self.next_gp
    }

    fn node_os(&self, n: NodeId) -> u32 {
        node_os(self.topo, n)
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

    fn sets(cpus: &[u32], nodes: &[u32]) -> String {
        let c = bitmap(cpus);
        let n = bitmap(nodes);
        format!("cpuset=\"{c}\" complete_cpuset=\"{c}\" nodeset=\"{n}\" complete_nodeset=\"{n}\"")
    }

    fn info(&mut self, indent: &str, name: &str, value: &str) {
        let _ = writeln!(
            self.out,
            "{indent}<info name=\"{name}\" value=\"{}\"/>",
            escape_xml(value)
        );
    }

    fn numa(&mut self, n: NodeId, cpus: &[u32], indent: &str) {
        let os = self.node_os(n);
        let gp = self.node_gp[n.0];
        let sets = Self::sets(cpus, &[os]);
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

    /// Writes an object below a package (or a package itself) and its children.
    fn item(&mut self, it: &Item, nodeset: &[u32], depth: usize) {
        let topo = self.topo;
        let indent = "  ".repeat(depth);
        let cpus: Vec<u32> = it.cpus.iter().copied().collect();
        let gp = self.gp();
        let sets = Self::sets(&cpus, nodeset);
        let inner = format!("{indent}  ");
        match it.kind {
            Kind::Machine => {}
            Kind::Package(s) => {
                let _ = writeln!(
                    self.out,
                    "{indent}<object type=\"Package\" os_index=\"{}\" {sets} gp_index=\"{gp}\">",
                    s.0
                );
                if let Some(model) = &topo.machine().cpu_model {
                    self.info(&inner, "CPUModel", model);
                }
                for node in self.socket_nodes[s.0].clone() {
                    self.numa(node, &cpus, &inner);
                }
            }
            Kind::Group(g) => {
                let group = &topo.groups()[g.0];
                let _ = writeln!(
                    self.out,
                    "{indent}<object type=\"Group\" {sets} gp_index=\"{gp}\" kind=\"1000\" subkind=\"{}\" dont_merge=\"1\">",
                    group.depth
                );
                self.info(
                    &inner,
                    "TopoprobeGroup",
                    &format!("{} ({})", g.0, group.evidence),
                );
            }
            Kind::Cache(i) => {
                let c = self.tree.caches[i].clone();
                let size = c
                    .size_bytes
                    .map_or(String::new(), |b| format!(" cache_size=\"{b}\""));
                let line = c
                    .line_bytes
                    .map_or(String::new(), |b| format!(" cache_linesize=\"{b}\""));
                let ways = c
                    .ways
                    .map_or(String::new(), |w| format!(" cache_associativity=\"{w}\""));
                let _ = writeln!(
                    self.out,
                    "{indent}<object type=\"{}\" {sets} gp_index=\"{gp}\"{size} depth=\"{}\"{line}{ways} cache_type=\"{}\">",
                    cache_type_name(c.level, c.kind),
                    c.level,
                    cache_type_code(c.kind)
                );
                if c.size_bytes.is_some() {
                    self.info(&inner, "TopoprobeSize", c.size_from);
                }
                self.info(&inner, "TopoprobeSharing", c.sharing);
                if let Some(l) = c.latency {
                    self.info(
                        &inner,
                        "TopoprobeLatency",
                        &format!("{l:.2} {}", topo.units()),
                    );
                }
            }
            Kind::Core(c) => {
                let _ = writeln!(
                    self.out,
                    "{indent}<object type=\"Core\" os_index=\"{}\" {sets} gp_index=\"{gp}\">",
                    c.0
                );
            }
            Kind::Pu(os) => {
                let _ = writeln!(
                    self.out,
                    "{indent}<object type=\"PU\" os_index=\"{os}\" {sets} gp_index=\"{gp}\"/>"
                );
                return;
            }
        }
        for child in &it.children {
            self.item(child, nodeset, depth + 1);
        }
        let _ = writeln!(self.out, "{indent}</object>");
    }

    fn distances(&mut self) {
        let Some(d) = figures::distances(self.topo) else {
            return;
        };
        let _ = writeln!(
            self.out,
            "  <distances2 type=\"PU\" nbobjs=\"{}\" kind=\"{}\" name=\"{}\" indexing=\"os\">",
            d.os_ids.len(),
            d.kind,
            d.name
        );
        // Like hwloc: chunks of values, each followed by a space; `length` is the number
        // of characters of the content.
        let mut text = String::new();
        for chunk in d.os_ids.chunks(16) {
            text.clear();
            for v in chunk {
                let _ = write!(text, "{v} ");
            }
            let _ = writeln!(
                self.out,
                "    <indexes length=\"{}\">{text}</indexes>",
                text.len()
            );
        }
        // One row of the matrix an element: 4096 elements at the context limit, where
        // chunks of 16 made a million, more than a reader accepts (`MAX_XML_ELEMENTS`).
        for from in 0..d.os_ids.len() {
            text.clear();
            for v in d.row(from) {
                let _ = write!(text, "{v} ");
            }
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
        for attr in figures::memattrs(topo, self.node_gp.len()) {
            let _ = writeln!(
                self.out,
                "  <memattr name=\"{}\" flags=\"{}\">",
                attr.name, attr.flags
            );
            for v in attr.values {
                let cpus = bitmap(&v.cpus);
                let _ = writeln!(
                    self.out,
                    "    <memattr_value target_obj_type=\"NUMANode\" target_obj_gp_index=\"{}\" value=\"{}\" initiator_cpuset=\"{cpus}\"/>",
                    self.node_gp[v.node.0], v.value
                );
            }
            let _ = writeln!(self.out, "  </memattr>");
        }
    }
}

/// The OS number of a node (its index when the description gives none).
fn node_os(topo: &Topology, n: NodeId) -> u32 {
    topo.nodes()
        .get(n.0)
        .and_then(|x| x.os_id)
        .unwrap_or(n.0 as u32)
}

/// The number of nodes the export writes: the description's, at least one.
fn exported_nodes(topo: &Topology) -> usize {
    topo.num_known_nodes().max(1)
}

/// Renders a topology as hwloc v2 XML (see the [module documentation](self)).
#[must_use]
pub fn render(topo: &Topology) -> String {
    sink::to_string(|out| write(topo, out))
}

/// Writes a topology as hwloc v2 XML (see the [module documentation](self)) into `out` as
/// it is made: the text of [`render`], never held whole (the distances of 4096 contexts
/// are about 120 MB of it).
///
/// # Errors
///
/// The first error of `out`.
pub fn write(topo: &Topology, out: &mut dyn io::Write) -> io::Result<()> {
    let mut w = Writer {
        topo,
        tree: tree::build(topo),
        out: TextSink::new(out),
        next_gp: 0,
        node_gp: Vec::new(),
        socket_nodes: vec![Vec::new(); topo.num_sockets()],
        machine_nodes: Vec::new(),
    };
    // Where each node hangs.
    let nodes = exported_nodes(topo);
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
    let _ = w.out.write_str(concat!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n",
        "<topology version=\"2.0\">\n"
    ));
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
    if w.tree.left_out > 0 {
        infos.push(("TopoprobeCachesLeftOut", w.tree.left_out.to_string()));
    }
    if let Some(h) = &m.hostname {
        infos.push(("HostName", h.clone()));
    }
    if let Some(k) = &m.kernel {
        infos.push(("OSRelease", k.clone()));
    }
    for (k, v) in infos {
        w.info("    ", k, &v);
    }
    for node in w.machine_nodes.clone() {
        w.numa(node, &all_cpus, "    ");
    }
    let packages = std::mem::take(&mut w.tree.root.children);
    for p in &packages {
        let nodeset = match p.kind {
            Kind::Package(s) => w.socket_nodeset(s),
            _ => all_nodes.clone(),
        };
        w.item(p, &nodeset, 2);
    }
    let _ = w.out.write_str("  </object>\n");
    w.distances();
    w.memattrs();
    let _ = w.out.write_str("</topology>\n");
    w.out.finish()
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
