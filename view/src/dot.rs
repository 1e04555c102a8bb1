//! Graphviz (DOT) graphs of a topology, as libmctop draws them (the MCTOP paper's
//! Figures 1–3):
//!
//! - the **intra-socket** graph ([`intra_socket`]): one socket as a tree of groups, cores
//!   and hardware contexts, every edge labelled with the latency between the members it
//!   leads to, and the memory latency and bandwidth from the socket to every memory node,
//!   the local node filled grey;
//! - the **cross-socket** graph ([`cross_socket`]): the sockets, with the latency (and
//!   level) and the memory bandwidth between every two of them; direct links are solid,
//!   links over several hops (higher cross-socket levels) dashed.
//!
//! [`render`] writes both (the cross-socket graph only for several sockets) as one DOT text
//! holding one graph after the other, which `dot -Tsvg -O` turns into one file per graph.
//! Sockets with many contexts draw the cores of a group as one table instead of one node
//! per context, so that the graph stays legible.

use std::fmt::Write as _;

use topoprobe_model::format::{cpu_ranges, escape_xml, plural};
use topoprobe_model::{Access, CoreId, Member, ModelError, SocketId, Threads, Topology};

use crate::common::{core_members, machine_name, members_word, num, smt_range, socket_memory};

/// Sockets with at most this many contexts are drawn down to one node per context.
const FULL_TREE_CONTEXTS: usize = 32;

/// Cores per row of a table of cores.
const TABLE_COLUMNS: usize = 8;

/// Font used by every graph (present wherever Graphviz is).
const FONT: &str = "Helvetica";

/// Renders the intra-socket graph of socket 0 and, for several sockets, the cross-socket
/// graph, one after the other.
#[must_use]
pub fn render(topo: &Topology) -> String {
    graphs(topo)
        .into_iter()
        .map(|(_, g)| g)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The graphs [`render`] writes, each with a short name (`socket0`, `cross-socket`).
#[must_use]
pub fn graphs(topo: &Topology) -> Vec<(String, String)> {
    graphs_for(topo, SocketId(0)).unwrap_or_default()
}

/// The intra-socket graph of `socket` (named `socket<N>`) and, for several sockets, the
/// cross-socket graph (named `cross-socket`).
///
/// # Errors
///
/// Returns [`ModelError::NoSuchComponent`] when the socket does not exist.
pub fn graphs_for(topo: &Topology, socket: SocketId) -> Result<Vec<(String, String)>, ModelError> {
    let mut out = vec![(format!("socket{}", socket.0), intra_socket(topo, socket)?)];
    if topo.num_sockets() > 1 {
        out.push(("cross-socket".to_string(), cross_socket(topo)));
    }
    Ok(out)
}

/// Escapes text for a quoted DOT string.
fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Escapes text inside an HTML-like DOT label.
fn h(s: &str) -> String {
    escape_xml(s)
}

fn header(out: &mut String, kind: &str, name: &str, title: &str) {
    let _ = writeln!(out, "{kind} {} {{", q(name));
    let _ = writeln!(
        out,
        "  graph [label={}, labelloc=t, fontname={FONT:?}, fontsize=14, nodesep=0.2, ranksep=0.45];",
        q(title)
    );
    let _ = writeln!(
        out,
        "  node [fontname={FONT:?}, fontsize=11, shape=box, style=rounded, margin=\"0.08,0.04\"];"
    );
    let _ = writeln!(
        out,
        "  edge [fontname={FONT:?}, fontsize=10, arrowhead=none];"
    );
}

/// The intra-socket graph of one socket (see the [module documentation](self)).
///
/// # Errors
///
/// Returns [`ModelError::NoSuchComponent`] when the socket does not exist.
pub fn intra_socket(topo: &Topology, socket: SocketId) -> Result<String, ModelError> {
    let s = topo
        .sockets()
        .get(socket.0)
        .ok_or_else(|| ModelError::NoSuchComponent(format!("socket {}", socket.0)))?;
    let units = topo.units();
    let mut out = String::new();
    let memory = socket_memory(topo, socket);
    let measured = memory
        .iter()
        .any(|m| m.latency.is_some() || m.bandwidth().is_some());
    let title = format!(
        "{}: socket {} ({}, {}), latencies in {units}{}",
        machine_name(topo),
        s.id.0,
        plural(s.cores.len(), "core"),
        plural(s.contexts.len(), "context"),
        if measured {
            ""
        } else {
            "; memory latency and bandwidth not measured"
        }
    );
    header(&mut out, "digraph", &format!("socket{}", s.id.0), &title);
    let root = format!("s{}", s.id.0);
    let _ = writeln!(
        out,
        "  {root} [label={}, style=\"rounded,bold\", fontsize=13];",
        q(&format!("Socket {}", s.id.0))
    );
    // Memory nodes, above the socket.
    if !memory.is_empty() {
        let _ = writeln!(out, "  {{ rank=min;");
        for m in &memory {
            let style = if m.local {
                "style=\"rounded,filled,bold\", fillcolor=gray80"
            } else {
                "style=rounded"
            };
            let label = if m.local {
                format!("Node {} (local)", m.node.0)
            } else {
                format!("Node {}", m.node.0)
            };
            let _ = writeln!(out, "    n{} [label={}, {style}];", m.node.0, q(&label));
        }
        let _ = writeln!(out, "  }}");
        for m in &memory {
            let mut parts = Vec::new();
            if let Some(l) = m.latency {
                parts.push(format!("{} {units}", num(l)));
            }
            if let Some(b) = m.bandwidth() {
                parts.push(format!("{b:.1} GB/s"));
            }
            let label = if parts.is_empty() {
                "not measured".to_string()
            } else {
                parts.join("\n")
            };
            let style = if m.local {
                "penwidth=2"
            } else {
                "style=dashed"
            };
            let _ = writeln!(
                out,
                "  n{} -> {root} [label={}, {style}, dir=none];",
                m.node.0,
                q(&label)
            );
        }
    }
    let full = s.contexts.len() <= FULL_TREE_CONTEXTS;
    if !full {
        // Tables of cores side by side would be very wide: grow downwards instead.
        let _ = writeln!(out, "  graph [rankdir=LR, ranksep=0.8];");
    }
    let mut g = Graph {
        topo,
        out,
        full,
        tables: 0,
    };
    g.members(
        &root,
        &format!("Socket {}", s.id.0),
        &s.members,
        s.latency.map(|l| l.median),
    );
    let mut out = g.out;
    out.push_str("}\n");
    Ok(out)
}

struct Graph<'a> {
    topo: &'a Topology,
    out: String,
    full: bool,
    tables: usize,
}

impl Graph<'_> {
    /// Draws the direct members of a component under `parent` (whose label is
    /// `parent_label`); `between` is the latency between them. It labels the edges to them,
    /// or, when [`FAN_LABELS`] edges or more leave the parent, the parent itself (one line,
    /// instead of a crowd of identical labels around it).
    fn members(
        &mut self,
        parent: &str,
        parent_label: &str,
        members: &[Member],
        between: Option<f64>,
    ) {
        let topo = self.topo;
        let cores: Vec<CoreId> = core_members(members);
        let groups = members.len() - cores.len();
        let edges = groups
            + if self.full {
                cores.len()
            } else {
                usize::from(!cores.is_empty())
            };
        let label = match between {
            Some(v) if edges >= FAN_LABELS => {
                let word = members_word(members);
                self.relabel(
                    parent,
                    &format!("{parent_label}\n{} between {word}", num(v)),
                );
                String::new()
            }
            Some(v) => num(v),
            None => String::new(),
        };
        for m in members {
            if let Member::Group(gid) = *m {
                let group = &topo.groups()[gid.0];
                let id = format!("g{}", gid.0);
                let name = format!("Group {}\n{}", gid.0, plural(group.cores.len(), "core"));
                let _ = writeln!(self.out, "  {id} [label={}];", q(&name));
                let _ = writeln!(self.out, "  {parent} -> {id} [label={}];", q(&label));
                self.members(&id, &name, &group.members, group.latency.map(|l| l.median));
            }
        }
        if cores.is_empty() {
            return;
        }
        if self.full {
            for c in cores {
                let id = format!("c{}", c.0);
                let ctxs = topo.core_contexts(c);
                let _ = writeln!(self.out, "  {id} [label={}];", q(&format!("Core {}", c.0)));
                let _ = writeln!(self.out, "  {parent} -> {id} [label={}];", q(&label));
                let core_name = format!("Core {}", c.0);
                let smt = match ctxs {
                    [a, b, ..] => match topo.context_latency(*a, *b) {
                        Some(v) if ctxs.len() >= FAN_LABELS => {
                            self.relabel(&id, &format!("{core_name}\n{} between contexts", num(v)));
                            String::new()
                        }
                        Some(v) => num(v),
                        None => String::new(),
                    },
                    _ => String::new(),
                };
                for x in ctxs {
                    let os = topo.contexts()[x.0].os_id;
                    let _ = writeln!(
                        self.out,
                        "  h{} [label={}, shape=ellipse, style=filled, fillcolor=\"#e8f0fe\", fontsize=10];",
                        x.0,
                        q(&os.to_string())
                    );
                    let _ = writeln!(self.out, "  {id} -> h{} [label={}];", x.0, q(&smt));
                }
            }
            return;
        }
        // A table of cores: one cell per core with its contexts.
        self.tables += 1;
        let id = format!("t{}_{}", parent, self.tables);
        let smt = smt_label(topo, &cores);
        let mut html = String::from(
            "<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\" cellpadding=\"3\">",
        );
        let columns = TABLE_COLUMNS.min(cores.len());
        let _ = write!(
            html,
            "<tr><td colspan=\"{columns}\" border=\"0\"><b>{}</b>{}</td></tr>",
            h(&plural(cores.len(), "core")),
            h(&smt)
        );
        for row in cores.chunks(columns) {
            html.push_str("<tr>");
            for &c in row {
                let ids: Vec<u32> = topo
                    .core_contexts(c)
                    .iter()
                    .map(|x| topo.contexts()[x.0].os_id)
                    .collect();
                let _ = write!(
                    html,
                    "<td bgcolor=\"#e8f0fe\">{}<br/><font point-size=\"9\">{}</font></td>",
                    h(&format!("C{}", c.0)),
                    h(&cpu_ranges(&ids))
                );
            }
            for _ in row.len()..columns {
                html.push_str("<td border=\"0\"></td>");
            }
            html.push_str("</tr>");
        }
        html.push_str("</table>>");
        let _ = writeln!(self.out, "  {id} [shape=plain, label={html}, fontsize=10];");
        let word = members_word(&cores.iter().map(|&c| Member::Core(c)).collect::<Vec<_>>());
        let edge = between.map_or_else(String::new, |v| format!("{} ({word})", num(v)));
        let _ = writeln!(self.out, "  {parent} -> {id} [label={}];", q(&edge));
    }
}

impl Graph<'_> {
    /// Gives node `id`, already declared, a new label (a later attribute wins in DOT).
    fn relabel(&mut self, id: &str, label: &str) {
        let _ = writeln!(self.out, "  {id} [label={}];", q(label));
    }
}

/// From this many edges with the same latency leaving one node, the latency is written once,
/// in that node, instead of on every edge (where the labels crowd and overlap).
const FAN_LABELS: usize = 3;

/// ` · contexts of a core: N` for cores with several contexts.
fn smt_label(topo: &Topology, cores: &[CoreId]) -> String {
    let Some((lo, hi)) = smt_range(topo, cores) else {
        return String::new();
    };
    if (hi - lo).abs() < 1e-9 {
        format!(" · contexts of a core: {}", num(lo))
    } else {
        format!(" · contexts of a core: {}–{}", num(lo), num(hi))
    }
}

/// The cross-socket graph (see the [module documentation](self)).
#[must_use]
pub fn cross_socket(topo: &Topology) -> String {
    let units = topo.units();
    let mut out = String::new();
    let title = format!(
        "{}: {} — latency in {units} (level), memory bandwidth to the other socket's node; solid: direct, dashed: several hops",
        machine_name(topo),
        plural(topo.num_sockets(), "socket")
    );
    header(&mut out, "graph", "cross-socket", &title);
    if topo.num_sockets() > 2 {
        let _ = writeln!(out, "  graph [layout=circo, mindist=1.6];");
    } else {
        let _ = writeln!(out, "  graph [rankdir=LR, ranksep=2.2];");
    }
    for s in topo.sockets() {
        let mut label = format!("Socket {}\n{}", s.id.0, plural(s.contexts.len(), "context"));
        if let Some(local) = socket_memory(topo, s.id).into_iter().find(|m| m.local) {
            let _ = write!(label, "\nlocal node {}", local.node.0);
            if let Some(l) = local.latency {
                let _ = write!(label, ": {} {units}", num(l));
            }
            if let Some(b) = local.bandwidth() {
                let _ = write!(label, ", {b:.1} GB/s");
            }
        }
        let _ = writeln!(
            out,
            "  s{} [label={}, style=\"rounded,bold\"];",
            s.id.0,
            q(&label)
        );
    }
    for i in topo.interconnects() {
        let mut label = format!("{} (lvl {})", num(i.latency.median), i.level);
        let bw = |from: SocketId, to: SocketId| -> Option<f64> {
            let node = topo.sockets().get(to.0)?.local_node?;
            let mem = topo.memory()?;
            mem.bandwidth_of(from, node, Access::Read, Threads::AllContexts)
                .or_else(|| mem.bandwidth_of(from, node, Access::Read, Threads::Single))
        };
        match (bw(i.a, i.b), bw(i.b, i.a)) {
            (Some(x), Some(y)) if (x - y).abs() < 0.05 => {
                let _ = write!(label, "\n{x:.1} GB/s");
            }
            (Some(x), Some(y)) => {
                let _ = write!(
                    label,
                    "\n{}→{} {x:.1} GB/s\n{}→{} {y:.1} GB/s",
                    i.a.0, i.b.0, i.b.0, i.a.0
                );
            }
            (Some(x), None) | (None, Some(x)) => {
                let _ = write!(label, "\n{x:.1} GB/s");
            }
            (None, None) => {}
        }
        let style = if i.hops <= 1 {
            "penwidth=2".to_string()
        } else {
            "style=dashed, color=gray45, fontcolor=gray30".to_string()
        };
        let _ = writeln!(
            out,
            "  s{} -- s{} [label={}, {style}];",
            i.a.0,
            i.b.0,
            q(&label)
        );
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, TopologyBuilder};

    /// One socket of `cores` cores with `smt` contexts each: 5 ns between the contexts of a
    /// core, 40 between cores.
    fn socket_of(cores: usize, smt: usize) -> Topology {
        let n = cores * smt;
        let mut b = TopologyBuilder::new((0..u32::try_from(n).unwrap()).collect(), LatencyUnit::Ns);
        let ids: Vec<_> = (0..cores)
            .map(|c| b.core((0..smt).map(|x| ContextId(c * smt + x)).collect()))
            .collect();
        let s = b.socket(ids.into_iter().map(Member::Core).collect());
        b.node(None, None, vec![s]);
        let m = LatencyMatrix::from_fn(n, |a, b| Some(if a / smt == b / smt { 5.0 } else { 40.0 }));
        b.latencies(m.clone(), m);
        b.build().unwrap()
    }

    /// The labels of the edges leaving `from`.
    fn edge_labels<'a>(dot: &'a str, from: &str) -> Vec<&'a str> {
        let prefix = format!("  {from} -> ");
        dot.lines()
            .filter(|l| l.starts_with(&prefix))
            .filter_map(|l| l.split("label=\"").nth(1)?.split('"').next())
            .collect()
    }

    #[test]
    fn a_fan_of_equal_latencies_is_labelled_once_in_its_parent() {
        // Eight cores of four contexts: the socket and every core have a fan of edges.
        let dot = intra_socket(&socket_of(8, 4), SocketId(0)).unwrap();
        assert!(
            edge_labels(&dot, "s0").iter().all(|l| l.is_empty()),
            "{dot}"
        );
        assert!(
            dot.contains("s0 [label=\"Socket 0\\n40 between cores\"]"),
            "{dot}"
        );
        assert!(
            edge_labels(&dot, "c0").iter().all(|l| l.is_empty()),
            "{dot}"
        );
        assert!(
            dot.contains("c0 [label=\"Core 0\\n5 between contexts\"]"),
            "{dot}"
        );
        // Two cores of two contexts: two edges each, labelled where they are.
        let dot = intra_socket(&socket_of(2, 2), SocketId(0)).unwrap();
        assert_eq!(edge_labels(&dot, "s0"), ["40", "40"], "{dot}");
        assert_eq!(edge_labels(&dot, "c0"), ["5", "5"], "{dot}");
        assert!(!dot.contains("between"), "{dot}");
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(q("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(h("<b>&"), "&lt;b&gt;&amp;");
    }
}
