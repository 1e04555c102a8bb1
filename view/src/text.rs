//! The text view: a tree of sockets, memory nodes, groups, cores and contexts like
//! `lstopo-no-graphics`, but with the latency of every level, followed by memory, cache and
//! power tables, confidence, warnings and what was given rather than inferred.
//!
//! [`render_with`] is a pure function of the topology and [`TextOptions`]: whether to
//! colour the output (ANSI escapes) is the caller's decision.

use std::fmt::Write as _;

use topoprobe_model::format::{compact_cpu_lists, cpu_ranges, plural};
use topoprobe_model::{
    size_text, Access, CoreId, Member, NodeId, Origin, PowerScope, PowerState, SharingOutcome,
    SharingTest, SocketId, Threads, Topology,
};

use crate::common::{core_members, lat, members_word, smt_range, socket_memory};

/// How to render the text view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextOptions {
    /// Colour with ANSI escape sequences (for a terminal).
    pub color: bool,
    /// One line per core and context, provenance parameters, every memory and power figure.
    pub verbose: bool,
}

/// Renders the text view of a topology without colour, not verbose.
#[must_use]
pub fn render(topo: &Topology) -> String {
    render_with(topo, TextOptions::default())
}

/// Renders the text view of a topology with the given options.
#[must_use]
pub fn render_with(topo: &Topology, opts: TextOptions) -> String {
    let mut v = View {
        topo,
        opts,
        out: String::new(),
    };
    // Writing to a String cannot fail.
    let _ = v.write();
    v.out
}

/// ANSI styles.
#[derive(Clone, Copy)]
enum Style {
    Heading,
    Component,
    Latency,
    Local,
    Dim,
    Warning,
    Error,
}

impl Style {
    const fn code(self) -> &'static str {
        match self {
            Self::Heading => "\x1b[1;4m",
            Self::Component => "\x1b[1m",
            Self::Latency => "\x1b[36m",
            Self::Local => "\x1b[32m",
            Self::Dim => "\x1b[2m",
            Self::Warning => "\x1b[33m",
            Self::Error => "\x1b[1;31m",
        }
    }
}

/// One line of the tree: its text and its children.
struct Item {
    text: String,
    children: Vec<Item>,
    /// Lines printed below the item without branches (packed cores).
    block: Vec<String>,
}

impl Item {
    fn leaf(text: String) -> Self {
        Self {
            text,
            children: Vec::new(),
            block: Vec::new(),
        }
    }
}

struct View<'a> {
    topo: &'a Topology,
    opts: TextOptions,
    out: String,
}

impl View<'_> {
    fn paint(&self, style: Style, s: &str) -> String {
        if self.opts.color {
            format!("{}{s}\x1b[0m", style.code())
        } else {
            s.to_string()
        }
    }

    fn lat(&self, v: f64) -> String {
        self.paint(Style::Latency, &lat(self.topo, v))
    }

    fn heading(&mut self, title: &str) -> std::fmt::Result {
        let t = self.paint(Style::Heading, title);
        writeln!(self.out)?;
        writeln!(self.out, "{t}")
    }

    fn write(&mut self) -> std::fmt::Result {
        self.summary()?;
        self.levels()?;
        self.tree()?;
        self.interconnects()?;
        self.memory()?;
        self.caches()?;
        self.contention()?;
        self.power()?;
        self.validation()?;
        if self.opts.verbose {
            self.provenance()?;
        }
        Ok(())
    }

    fn summary(&mut self) -> std::fmt::Result {
        let topo = self.topo;
        let facts = topo.facts();
        let head = format!(
            "topoprobe: {}, {}, {}, {}",
            plural(topo.num_contexts(), "hardware context"),
            plural(topo.num_cores(), "core"),
            plural(topo.num_groups(), "group"),
            plural(topo.num_sockets(), "socket"),
        );
        let head = self.paint(Style::Component, &head);
        writeln!(self.out, "{head} ({})", topo.provenance().source)?;
        let smt = if facts.smt.value {
            format!("yes, up to {} contexts per core", topo.contexts_per_core())
        } else {
            "no".to_string()
        };
        let nodes = if topo.num_nodes() == 0 {
            "unknown".to_string()
        } else {
            topo.num_nodes().to_string()
        };
        let sockets_origin = self.paint(Style::Dim, &format!("({})", facts.sockets.origin));
        let smt_origin = self.paint(Style::Dim, &format!("({})", facts.smt.origin));
        writeln!(
            self.out,
            "  sockets: {} {sockets_origin}   SMT: {smt} {smt_origin}   nodes: {nodes}   units: {}",
            facts.sockets.value,
            topo.units()
        )
    }

    fn levels(&mut self) -> std::fmt::Result {
        self.heading("latency levels")?;
        if self.topo.levels().is_empty() {
            writeln!(self.out, "  unavailable: no latency measurements")?;
        }
        for l in self.topo.levels() {
            let median = self.paint(
                Style::Latency,
                &format!("{:>12}", lat(self.topo, l.latency.median)),
            );
            writeln!(
                self.out,
                "  level {:<2} {median}  {:<12}  min {}  max {}  ({})",
                l.id,
                l.role.as_str(),
                lat(self.topo, l.latency.min),
                lat(self.topo, l.latency.max),
                plural(l.latency.count, "pair")
            )?;
        }
        Ok(())
    }

    fn tree(&mut self) -> std::fmt::Result {
        let topo = self.topo;
        self.heading("topology (latency between the members of each component)")?;
        let mut machine = format!("Machine: {}", plural(topo.num_sockets(), "socket"));
        let cross: Vec<f64> = topo
            .interconnects()
            .iter()
            .map(|i| i.latency.median)
            .collect();
        if let (Some(lo), Some(hi)) = (
            cross.iter().copied().reduce(f64::min),
            cross.iter().copied().reduce(f64::max),
        ) {
            let range = if (hi - lo).abs() < 1e-9 {
                self.lat(lo)
            } else {
                format!("{} to {}", self.lat(lo), self.lat(hi))
            };
            let _ = write!(machine, " · {range} between sockets");
        }
        writeln!(self.out, "{}", self.paint(Style::Component, &machine))?;
        let items: Vec<Item> = topo
            .sockets()
            .iter()
            .map(|s| self.socket_item(s.id))
            .collect();
        let mut out = String::new();
        write_items(&items, "", &mut out)?;
        self.out.push_str(&out);
        Ok(())
    }

    fn socket_item(&self, id: SocketId) -> Item {
        let topo = self.topo;
        let s = &topo.sockets()[id.0];
        let mut text = format!(
            "{} · {}, {}",
            self.paint(Style::Component, &format!("Socket {}", s.id.0)),
            plural(s.cores.len(), "core"),
            plural(s.contexts.len(), "context")
        );
        if let Some(l) = s.latency {
            let _ = write!(
                text,
                " · {} between {}",
                self.lat(l.median),
                members_word(&s.members)
            );
        }
        let mut children = Vec::new();
        for m in socket_memory(topo, id) {
            if m.latency.is_none() && m.bandwidth().is_none() && !m.local {
                continue;
            }
            let mut line = format!("Node {}", m.node.0);
            if m.local {
                line = self.paint(Style::Local, &format!("{line} (local)"));
            }
            let mut parts = Vec::new();
            if let Some(l) = m.latency {
                parts.push(format!("memory {}", self.lat(l)));
            }
            match (m.read_all, m.read_one) {
                (Some(a), Some(o)) => {
                    parts.push(format!("read {a:.1} GB/s ({o:.1} GB/s one thread)"));
                }
                (Some(a), None) => parts.push(format!("read {a:.1} GB/s")),
                (None, Some(o)) => parts.push(format!("read {o:.1} GB/s one thread")),
                (None, None) => {}
            }
            if let Some(node) = topo.nodes().get(m.node.0) {
                if let Some(os) = node.os_id {
                    parts.push(format!("OS node {os}"));
                }
                match (node.capacity_bytes, node.free_bytes) {
                    (Some(t), Some(f)) => {
                        parts.push(format!("{} total, {} free", size_text(t), size_text(f)));
                    }
                    (Some(t), None) => parts.push(format!("{} total", size_text(t))),
                    (None, Some(f)) => parts.push(format!("{} free", size_text(f))),
                    (None, None) => {}
                }
            }
            if !parts.is_empty() {
                line = format!("{line}: {}", parts.join(", "));
            }
            children.push(Item::leaf(line));
        }
        let mut item = Item {
            text,
            children,
            block: Vec::new(),
        };
        self.add_members(&s.members, &mut item);
        item
    }

    /// Adds the members of a socket or group to `item`: groups as children, cores as one
    /// packed block (or one child per core when verbose).
    fn add_members(&self, members: &[Member], item: &mut Item) {
        let topo = self.topo;
        let cores: Vec<CoreId> = core_members(members);
        for m in members {
            if let Member::Group(g) = *m {
                let group = &topo.groups()[g.0];
                let mut text = format!(
                    "{} · {}",
                    self.paint(Style::Component, &format!("Group {}", g.0)),
                    plural(group.cores.len(), "core")
                );
                if let Some(l) = group.latency {
                    let _ = write!(
                        text,
                        " · {} between {}",
                        self.lat(l.median),
                        members_word(&group.members)
                    );
                }
                let _ = write!(
                    text,
                    " {}",
                    self.paint(Style::Dim, &format!("[{}]", group.evidence))
                );
                let mut child = Item::leaf(text);
                self.add_members(&group.members, &mut child);
                item.children.push(child);
            }
        }
        if cores.is_empty() {
            return;
        }
        if self.opts.verbose {
            for &c in &cores {
                let ctxs = topo.core_contexts(c);
                let pus: Vec<String> = ctxs
                    .iter()
                    .map(|x| format!("PU {}", topo.contexts()[x.0].os_id))
                    .collect();
                let mut text = format!(
                    "{} · {}",
                    self.paint(Style::Component, &format!("Core {}", c.0)),
                    pus.join(", ")
                );
                if ctxs.len() > 1 {
                    if let Some(l) = topo.context_latency(ctxs[0], ctxs[1]) {
                        let _ = write!(text, " · {} between contexts", self.lat(l));
                    }
                }
                item.children.push(Item::leaf(text));
            }
            return;
        }
        let smt = smt_range(topo, &cores);
        let mut header = format!("{}: core (its contexts)", plural(cores.len(), "core"));
        if let Some((lo, hi)) = smt {
            if (hi - lo).abs() < 1e-9 {
                let _ = write!(header, " · {} between the contexts of a core", self.lat(lo));
            } else {
                let _ = write!(
                    header,
                    " · {} to {} between the contexts of a core",
                    self.lat(lo),
                    self.lat(hi)
                );
            }
        }
        let mut block = Vec::new();
        let mut line = String::new();
        for &c in &cores {
            let ids: Vec<u32> = topo
                .core_contexts(c)
                .iter()
                .map(|x| topo.contexts()[x.0].os_id)
                .collect();
            let label = format!("{} ({})", c.0, cpu_ranges(&ids));
            if !line.is_empty() && line.len() + label.len() + 2 > 80 {
                block.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push_str("  ");
            }
            line.push_str(&label);
        }
        if !line.is_empty() {
            block.push(line);
        }
        item.children.push(Item {
            text: header,
            children: Vec::new(),
            block,
        });
    }

    fn interconnects(&mut self) -> std::fmt::Result {
        if self.topo.interconnects().is_empty() {
            return Ok(());
        }
        self.heading("interconnects")?;
        for i in self.topo.interconnects() {
            let l = self.lat(i.latency.median);
            writeln!(
                self.out,
                "  socket {} <-> socket {}: {l} (level {}, {} hop{})",
                i.a.0,
                i.b.0,
                i.level,
                i.hops,
                if i.hops == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }

    fn memory(&mut self) -> std::fmt::Result {
        let topo = self.topo;
        let Some(mem) = topo.memory() else {
            return Ok(());
        };
        if !mem.latency.is_empty() || !mem.bandwidth.is_empty() {
            self.memory_table(mem)?;
        }
        // `mem --full`'s figures (the `mem-full` plugin): matrices, mixes, curves.
        let load = crate::memory_load::MemoryLoad::from(&mem.detail);
        if !load.is_empty() {
            write!(self.out, "{}", crate::memory_load::text(&load))?;
        }
        if let Some(c2c) = &mem.detail.cache_to_cache {
            write!(self.out, "{}", crate::results::cache_to_cache::table(c2c))?;
        }
        Ok(())
    }

    /// The socket × node table of latency and bandwidth.
    fn memory_table(&mut self, mem: &topoprobe_model::MemorySection) -> std::fmt::Result {
        let topo = self.topo;
        self.heading("memory (from each socket to each node; * local)")?;
        let nodes = topo.num_known_nodes();
        let mut header = format!("  {:<10}", "");
        for n in 0..nodes {
            let os = topo.node_os_number(NodeId(n));
            let _ = write!(header, "{:>16}", format!("node {os}"));
        }
        writeln!(self.out, "{header}")?;
        let rows: [(&str, Option<(Access, Threads)>); 5] = [
            ("latency", None),
            ("read", Some((Access::Read, Threads::AllContexts))),
            ("read 1", Some((Access::Read, Threads::Single))),
            ("write", Some((Access::Write, Threads::AllContexts))),
            ("write 1", Some((Access::Write, Threads::Single))),
        ];
        for s in topo.sockets() {
            let mut first = true;
            for (name, kind) in rows {
                let cells: Vec<Option<String>> = (0..nodes)
                    .map(|n| {
                        let node = NodeId(n);
                        match kind {
                            None => mem
                                .latency_from(topo.socket_contexts(s.id), node)
                                .map(|v| lat(topo, v)),
                            Some((a, t)) => mem
                                .bandwidth_of(s.id, node, a, t)
                                .map(|v| format!("{v:.1} GB/s")),
                        }
                    })
                    .collect();
                if cells.iter().all(Option::is_none) {
                    continue;
                }
                let who = if first {
                    format!("socket {}", s.id.0)
                } else {
                    String::new()
                };
                first = false;
                let mut line = format!("  {who:<10}");
                for (n, c) in cells.iter().enumerate() {
                    let star = if s.local_node.map(|x| x.0) == Some(n) {
                        "*"
                    } else {
                        " "
                    };
                    let cell = format!("{}{star}", c.as_deref().unwrap_or("-"));
                    let _ = write!(line, "{cell:>16}");
                }
                let _ = write!(line, "  {}", self.paint(Style::Dim, name));
                writeln!(self.out, "{line}")?;
            }
        }
        writeln!(
            self.out,
            "  {}",
            self.paint(
                Style::Dim,
                "read/write: every context of the socket; read 1/write 1: one thread"
            )
        )?;
        if self.opts.verbose {
            for l in &mem.latency {
                writeln!(
                    self.out,
                    "  latency from context {} to node {}: {}{}",
                    topo.contexts()
                        .get(l.context.0)
                        .map_or(l.context.0 as u32, |c| c.os_id),
                    topo.node_os_number(l.node),
                    lat(topo, l.latency),
                    l.cycles
                        .map_or(String::new(), |c| format!(" ({c:.0} cycles)"))
                )?;
            }
        }
        Ok(())
    }

    fn caches(&mut self) -> std::fmt::Result {
        let topo = self.topo;
        let Some(c) = topo.caches() else {
            return Ok(());
        };
        if c.levels.is_empty() {
            return Ok(());
        }
        self.heading("caches")?;
        let size = |v: Option<u64>| v.map_or_else(|| "?".to_string(), kib);
        for l in &c.levels {
            let mut line = format!(
                "  {:<4} {:>10} (OS {:>9})  latency {:>11}",
                l.name(),
                size(l.measured_size_kib),
                size(l.os_size_kib),
                l.latency
                    .filter(|v| *v > 0.0)
                    .map_or_else(|| "?".to_string(), |v| lat(topo, v)),
            );
            if let Some(b) = l.line_bytes {
                let _ = write!(line, "  {b} B lines");
            }
            if let Some(first) = l.shared_by.first() {
                let _ = write!(
                    line,
                    "  {} of {} contexts",
                    plural(l.shared_by.len(), "instance"),
                    first.len()
                );
                if self.opts.verbose {
                    let sets: Vec<String> = l
                        .shared_by
                        .iter()
                        .map(|set| {
                            let ids: Vec<u32> = set
                                .iter()
                                .map(|x| topo.contexts().get(x.0).map_or(x.0 as u32, |c| c.os_id))
                                .collect();
                            format!("{{{}}}", cpu_ranges(&ids))
                        })
                        .collect();
                    let _ = write!(line, ": {}", sets.join(" "));
                }
            }
            if let Some(t) = &l.sharing {
                let _ = write!(line, " ({})", sharing_note(t));
            }
            writeln!(self.out, "{}", line.trim_end())?;
        }
        Ok(())
    }

    fn contention(&mut self) -> std::fmt::Result {
        let Some(c) = self.topo.contention() else {
            return Ok(());
        };
        if c.levels.is_empty() && c.pairs.is_empty() && c.socket_curve.is_none() {
            return Ok(());
        }
        self.heading("memory contention (slowdown of contexts copying memory together)")?;
        writeln!(self.out, "  one context alone: {:.1} GB/s", c.alone_gbps)?;
        for l in &c.levels {
            let sizes: Vec<usize> = l.groups.iter().map(Vec::len).collect();
            let same = sizes.windows(2).all(|w| w[0] == w[1]);
            let shape = match sizes.first() {
                Some(n) if same => format!("{} of {n} contexts", plural(sizes.len(), "group")),
                _ => format!("{} of sizes {sizes:?}", plural(sizes.len(), "group")),
            };
            let from = l
                .from_threads
                .map_or(String::new(), |k| format!(" from {k} threads"));
            writeln!(self.out, "  overhead {:.2}x{from}: {shape}", l.overhead)?;
        }
        if let Some(curve) = &c.socket_curve {
            let points: Vec<String> = curve
                .points
                .iter()
                .map(|p| format!("{} {:.1}", p.threads, p.gbps))
                .collect();
            writeln!(
                self.out,
                "  socket {} (threads GB/s): {}; {}",
                curve.socket.0,
                points.join(", "),
                curve.summary(c.alone_gbps)
            )?;
        }
        if self.opts.verbose {
            for p in &c.scalability {
                writeln!(
                    self.out,
                    "  level {} group {}: {} threads {:.1} GB/s",
                    p.level, p.group, p.threads, p.gbps
                )?;
            }
        }
        Ok(())
    }

    fn power(&mut self) -> std::fmt::Result {
        let Some(p) = self.topo.power() else {
            return Ok(());
        };
        if p.entries.is_empty() {
            return Ok(());
        }
        self.heading("power (W: cores, rest, package, dram, total)")?;
        for e in &p.entries {
            let scope = match e.scope {
                PowerScope::Socket(s) => format!("socket {}", s.0),
                PowerScope::Total => "total".to_string(),
            };
            let brief = matches!(e.scope, PowerScope::Total)
                || matches!(e.state, PowerState::Idle | PowerState::AllContexts);
            if !self.opts.verbose && !brief {
                continue;
            }
            writeln!(
                self.out,
                "  {scope:<9} {:<8} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2}",
                e.state.mct_name(),
                e.cores_w,
                e.rest_w,
                e.package_w,
                e.dram_w,
                e.total_w
            )?;
        }
        Ok(())
    }

    fn validation(&mut self) -> std::fmt::Result {
        let v = self.topo.validation();
        if !v.confidence.is_empty() {
            self.heading("confidence")?;
            for c in &v.confidence {
                let value = format!("{:.2}", c.confidence);
                let value = if c.confidence < 0.5 {
                    self.paint(Style::Warning, &value)
                } else {
                    value
                };
                writeln!(
                    self.out,
                    "  {:<7} {value}  {}",
                    c.level.as_str(),
                    compact_cpu_lists(&c.basis)
                )?;
            }
        }
        if !v.warnings.is_empty() {
            self.heading("warnings")?;
            for w in &v.warnings {
                let message = self.paint(Style::Warning, &compact_cpu_lists(&w.message));
                writeln!(self.out, "  - {message}")?;
            }
        }
        if !v.unresolved.is_empty() {
            self.heading("unresolved")?;
            for u in &v.unresolved {
                let level = self.paint(Style::Error, u.level.as_str());
                writeln!(self.out, "  - {level}: {}", compact_cpu_lists(&u.reason))?;
            }
        }
        if !v.os_differences.is_empty() {
            self.heading("differences from the operating system")?;
            for d in &v.os_differences {
                let level = self.paint(Style::Warning, d.level.as_str());
                writeln!(
                    self.out,
                    "  - {level}: {} (re-run: {})",
                    compact_cpu_lists(&d.message),
                    d.rerun
                )?;
            }
        }
        Ok(())
    }

    fn provenance(&mut self) -> std::fmt::Result {
        let topo = self.topo;
        let p = topo.provenance();
        self.heading("provenance")?;
        writeln!(self.out, "  tool: {} {}", p.tool, p.version)?;
        writeln!(self.out, "  source: {}", p.source)?;
        if let Some(c) = &p.created {
            writeln!(self.out, "  created: {c}")?;
        }
        if let Some(d) = p.duration_s {
            writeln!(self.out, "  duration: {d:.2} s")?;
        }
        if let Some(c) = &p.cost {
            writeln!(self.out, "  cost: {}", crate::cost::summary(c))?;
        }
        for (k, v) in &p.parameters {
            writeln!(self.out, "  {k}: {}", compact_cpu_lists(v))?;
        }
        let m = topo.machine();
        for (k, v) in [
            ("host", &m.hostname),
            ("cpu model", &m.cpu_model),
            ("online cpus", &m.online_cpus),
            ("kernel", &m.kernel),
        ] {
            if let Some(v) = v {
                writeln!(self.out, "  {k}: {v}")?;
            }
        }
        if let Some(s) = &topo.latency_tables().symmetrization {
            writeln!(self.out, "  symmetrization: {s}")?;
        }
        Ok(())
    }
}

/// A size in KiB, as KiB or MiB.
/// How a level's sharing was found: `measured`, `the OS's: walks inconclusive`,
/// `the OS's: unavailable`.
fn sharing_note(t: &SharingTest) -> String {
    let from = match t.source {
        Some(Origin::Os) => "the OS's",
        Some(_) => "measured",
        None => "unknown",
    };
    match t.outcome {
        SharingOutcome::Decided => from.to_string(),
        SharingOutcome::Inconclusive => format!("{from}: walks inconclusive"),
        SharingOutcome::Unavailable => format!("{from}: walks unavailable"),
    }
}

/// A size given in KiB (as cache sizes are stored), said as [`size_text`] says bytes.
pub(crate) fn kib(k: u64) -> String {
    size_text(k.saturating_mul(1024))
}

/// Writes tree items with `├─`/`└─` branches under `prefix`.
fn write_items(items: &[Item], prefix: &str, out: &mut String) -> std::fmt::Result {
    for (i, item) in items.iter().enumerate() {
        let last = i + 1 == items.len();
        let (branch, cont) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        writeln!(out, "{prefix}{branch}{}", item.text)?;
        let inner = format!("{prefix}{cont}");
        for line in &item.block {
            writeln!(out, "{inner}  {line}")?;
        }
        write_items(&item.children, &inner, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{
        ContextId, Evidence, LatencyMatrix, LatencyUnit, TopologyBuilder, Validation, Warning,
        WarningKind,
    };

    fn two_sockets() -> Topology {
        let mut b = TopologyBuilder::new(vec![0, 1, 2, 3, 4, 5], LatencyUnit::Ns);
        let c0 = b.core(vec![ContextId(0), ContextId(1)]);
        let c1 = b.core(vec![ContextId(2)]);
        let c2 = b.core(vec![ContextId(3)]);
        let c3 = b.core(vec![ContextId(4), ContextId(5)]);
        let g = b.group(
            vec![Member::Core(c0), Member::Core(c1)],
            Evidence::LatencyGap,
        );
        let s0 = b.socket(vec![Member::Group(g), Member::Core(c2)]);
        let s1 = b.socket(vec![Member::Core(c3)]);
        b.node(None, None, vec![s0]);
        b.node(None, None, vec![s1]);
        let socket = |x: usize| usize::from(x >= 4);
        let m = LatencyMatrix::from_fn(6, |a, b| {
            Some(if socket(a) != socket(b) {
                300.0
            } else if (a / 2 == b / 2) && a < 2 || a >= 4 {
                8.0
            } else if a < 3 && b < 3 {
                20.0
            } else {
                60.0
            })
        });
        b.latencies(m.clone(), m);
        let mut v = Validation::default();
        v.warnings
            .push(Warning::new(WarningKind::Quantized, "coarse timer"));
        b.validation(v);
        b.build().unwrap()
    }

    #[test]
    fn tree_shows_levels_and_branches() {
        let text = render(&two_sockets());
        assert!(text.contains("├─ Socket 0 · 3 cores, 4 contexts"), "{text}");
        assert!(
            text.contains("│  ├─ Group 0 · 2 cores · 20 ns between cores"),
            "{text}"
        );
        assert!(text.contains("└─ Socket 1"), "{text}");
        assert!(text.contains("Node 0 (local)"), "{text}");
        assert!(text.contains("  - coarse timer\n"), "{text}");
        assert!(!text.contains("quantized"), "{text}");
        assert!(!text.contains('\x1b'));
    }

    #[test]
    fn node_memory_is_total_and_free_labelled() {
        let mut topo = two_sockets();
        topo.set_node_identity(NodeId(0), Some(0), Some(16 << 30))
            .unwrap();
        topo.set_node_free(NodeId(0), Some(5 << 29)).unwrap();
        topo.set_node_identity(NodeId(1), Some(1), Some(8 << 30))
            .unwrap();
        let text = render(&topo);
        assert!(
            text.contains("Node 0 (local): OS node 0, 16 GiB total, 2.5 GiB free"),
            "{text}"
        );
        assert!(
            text.contains("Node 1 (local): OS node 1, 8 GiB total"),
            "{text}"
        );
    }

    #[test]
    fn colour_and_verbose() {
        let topo = two_sockets();
        let text = render_with(
            &topo,
            TextOptions {
                color: true,
                verbose: true,
            },
        );
        assert!(text.contains("\x1b[33mcoarse timer\x1b[0m"), "{text}");
        assert!(text.contains("Core 0\x1b[0m · PU 0, PU 1"), "{text}");
        assert!(text.contains("provenance"), "{text}");
        let plain = render_with(
            &topo,
            TextOptions {
                color: false,
                verbose: true,
            },
        );
        assert!(
            plain.contains("Core 0 · PU 0, PU 1 · 8 ns between contexts"),
            "{plain}"
        );
    }

    #[test]
    fn cache_sharing_contention_curve_and_os_differences_are_shown() {
        use topoprobe_model::{
            CacheLevel, CacheSection, CacheType, ContentionSection, CurvePoint, OsDifference,
            SocketCurve, StructureLevel,
        };
        let mut topo = two_sockets();
        let mut l3 = CacheLevel::new(3, Some(CacheType::Unified));
        l3.os_size_kib = Some(32 * 1024);
        l3.measured_size_kib = Some(32 * 1024);
        l3.shared_by = vec![(0..6).map(ContextId).collect()];
        l3.sharing = Some(SharingTest {
            outcome: SharingOutcome::Inconclusive,
            source: Some(Origin::Os),
            array_kib: Some(21 * 1024),
            alone_ns: Some(20.0),
            double_ns: Some(60.0),
            pairs: Vec::new(),
            reason: Some("unclear".into()),
        });
        topo.set_caches(Some(CacheSection {
            levels: vec![l3],
            tlb: Vec::new(),
        }));
        topo.set_contention(Some(ContentionSection {
            alone_gbps: 10.0,
            socket_curve: Some(SocketCurve {
                socket: SocketId(0),
                contexts: (0..4).map(ContextId).collect(),
                points: vec![
                    CurvePoint {
                        threads: 1,
                        gbps: 10.0,
                    },
                    CurvePoint {
                        threads: 2,
                        gbps: 20.0,
                    },
                    CurvePoint {
                        threads: 4,
                        gbps: 39.0,
                    },
                ],
                contention_from: None,
            }),
            ..ContentionSection::default()
        }));
        topo.set_os_differences(vec![OsDifference {
            level: StructureLevel::Cache,
            message: "the OS lists one L3 for CPUs the walks find in separate instances".into(),
            rerun: "re-run `topoprobe cache --shared`".into(),
        }]);
        let text = render(&topo);
        assert!(
            text.contains("1 instance of 6 contexts (the OS's: walks inconclusive)"),
            "{text}"
        );
        assert!(
            text.contains(
                "socket 0 (threads GB/s): 1 10.0, 2 20.0, 4 39.0; no contention up to 4 threads"
            ),
            "{text}"
        );
        assert!(text.contains("- cache: the OS lists one L3"), "{text}");
    }

    #[test]
    fn sizes() {
        assert_eq!(kib(32), "32 KiB");
        assert_eq!(kib(25600), "25 MiB");
        assert_eq!(kib(22528), "22 MiB");
        assert_eq!(kib(5000), "4.88 MiB");
    }
}
