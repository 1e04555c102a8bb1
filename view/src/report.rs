//! The HTML report: one self-contained page (no scripts, external fonts, style sheets or
//! images, so it works offline and can be mailed) with the summary, the text tree, the
//! latency heatmap (inline SVG), the Graphviz graphs (inline SVG when the caller could
//! render them, else their DOT text), memory, cache, contention and power tables, example
//! placements, provenance and warnings.
//!
//! [`render`] is pure and does not run Graphviz: the caller renders the graphs (with
//! [`crate::graphviz`] when it can) and passes each as [`Graphic::Svg`] or [`Graphic::Dot`]
//! in [`ReportInputs`].

use std::fmt::Write as _;

use topoprobe_model::format::{compact_cpu_lists, cpu_ranges, escape_xml as e, plural};
use topoprobe_model::{Access, NodeId, PowerScope, SocketId, Threads, Topology};

use crate::common::{lat, machine_name};
use crate::text::kib;

/// A graph of the report, rendered or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Graphic {
    /// An SVG document (an XML prolog and doctype before `<svg` are dropped).
    Svg(String),
    /// DOT text, shown as is, with the reason it was not rendered.
    Dot {
        /// The DOT text.
        dot: String,
        /// Why it is not a picture (for example "Graphviz is not installed").
        reason: String,
    },
}

/// One titled graph of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportGraph {
    /// Caption.
    pub title: String,
    /// The graph.
    pub graphic: Graphic,
}

/// An example thread placement: a policy and the contexts it uses, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacementExample {
    /// Policy name (for example `CON_CORE_HWC`).
    pub policy: String,
    /// Number of threads placed.
    pub threads: usize,
    /// OS CPU numbers, in placement order.
    pub cpus: Vec<u32>,
    /// One line on what the placement achieves (max latency, bandwidth …).
    pub note: String,
}

impl PlacementExample {
    /// The example of a placement: its policy, threads, CPUs, and a note with its maximum
    /// latency, minimum bandwidth, sockets and cores.
    #[must_use]
    pub fn of(p: &topoprobe_model::results::placement::PlacementResult) -> Self {
        let s = &p.summary;
        let mut note = Vec::new();
        if let Some(l) = s.max_latency {
            note.push(format!("max latency {l:.0} {}", s.latency_unit));
        }
        if let Some(b) = s.min_bandwidth_gbps {
            note.push(format!("min bandwidth {b:.1} GB/s"));
        }
        note.push(format!(
            "{}, {}",
            plural(s.sockets.len(), "socket"),
            plural(s.cores, "core")
        ));
        Self {
            policy: p.policy.clone(),
            threads: p.threads,
            cpus: p.contexts.clone(),
            note: note.join(", "),
        }
    }
}

/// The Graphviz graphs of the page (intra-socket and cross-socket), rendered to SVG when
/// Graphviz is installed, else kept as DOT text with the reason.
#[must_use]
pub fn render_graphs(topo: &Topology) -> Vec<ReportGraph> {
    let graphviz = crate::graphviz::check();
    let mut graphs = Vec::new();
    for (name, text) in crate::dot::graphs(topo) {
        let title = if name == "cross-socket" {
            "Cross-socket: latency and bandwidth between sockets".to_string()
        } else {
            format!(
                "Intra-socket: {}, with memory latency and bandwidth to every node",
                name.replace("socket", "socket ")
            )
        };
        let graphic = match &graphviz {
            Ok(true) => match crate::graphviz::render(&text, crate::picture::Picture::Svg) {
                Ok(svg) => Graphic::Svg(String::from_utf8_lossy(&svg).into_owned()),
                Err(e) => Graphic::Dot {
                    dot: text,
                    reason: format!("Graphviz failed: {e}"),
                },
            },
            Ok(false) => Graphic::Dot {
                dot: text,
                reason: crate::graphviz::NO_GRAPHVIZ.to_string(),
            },
            Err(e) => Graphic::Dot {
                dot: text,
                reason: format!("Graphviz failed: {e}"),
            },
        };
        graphs.push(ReportGraph { title, graphic });
    }
    graphs
}

/// What the caller adds to the topology.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportInputs {
    /// The graphs ([`crate::dot::graphs`], rendered or not).
    pub graphs: Vec<ReportGraph>,
    /// Example placements; when empty, the report lists each socket's contexts by core,
    /// the order a compact placement fills them in.
    pub placements: Vec<PlacementExample>,
    /// Time the report was made (RFC 3339), when known.
    pub generated: Option<String>,
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Helvetica,Arial,sans-serif;margin:0;color:#1d1d1f;background:#f6f7f9}
header{background:#243b53;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px 0;font-size:22px}
header p{margin:0;color:#d9e2ec;font-size:13px}
nav{padding:8px 28px;background:#e4e9f0;font-size:13px}
nav a{margin-right:14px;color:#243b53}
main{padding:8px 28px 40px 28px;max-width:1500px}
section{background:#fff;border:1px solid #d9e2ec;border-radius:6px;padding:12px 18px;margin:16px 0}
h2{font-size:17px;margin:4px 0 10px 0;color:#243b53}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #d9e2ec;border-radius:6px;padding:8px 14px;min-width:110px;background:#f9fbfd}
.card b{display:block;font-size:20px}
.card span{font-size:12px;color:#52606d}
table{border-collapse:collapse;font-size:13px;margin:6px 0;max-width:100%}
th,td{border:1px solid #d9e2ec;padding:3px 8px;text-align:right}
th{background:#f0f4f8}
td.l,th.l{text-align:left;overflow-wrap:break-word}
td.name{white-space:nowrap}
td.local{background:#e3f2e1;font-weight:bold}
pre{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px;background:#f9fbfd;border:1px solid #e4e9f0;padding:10px;white-space:pre-wrap;overflow-wrap:break-word}
pre.dot{white-space:pre;overflow:auto;max-height:640px}
.figure{overflow:auto;border:1px solid #e4e9f0;padding:6px;background:#fff}
.figure svg{max-width:100%;height:auto}
.warn{color:#8d2b0b}
.muted{color:#52606d;font-size:12px}
ul{margin:4px 0;padding-left:22px}
";

/// Renders the report page (see the [module documentation](self)).
#[must_use]
pub fn render(topo: &Topology, inputs: &ReportInputs) -> String {
    let mut s = String::new();
    let _ = write_page(topo, inputs, &mut s);
    s
}

fn write_page(topo: &Topology, inputs: &ReportInputs, s: &mut String) -> std::fmt::Result {
    let title = format!("topoprobe report: {}", machine_name(topo));
    writeln!(s, "<!DOCTYPE html>")?;
    writeln!(s, "<html lang=\"en\"><head><meta charset=\"utf-8\">")?;
    writeln!(
        s,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(s, "<title>{}</title>", e(&title))?;
    writeln!(s, "<style>{STYLE}</style></head><body>")?;
    let p = topo.provenance();
    writeln!(
        s,
        "<header><h1>{}</h1><p>{} · {} {}{}</p></header>",
        e(&title),
        e(&p.source.to_string()),
        e(&p.tool),
        e(&p.version),
        inputs
            .generated
            .as_ref()
            .map_or(String::new(), |g| format!(" · report made {}", e(g)))
    )?;
    writeln!(
        s,
        "<nav><a href=\"#summary\">Summary</a><a href=\"#tree\">Tree</a><a href=\"#heatmap\">Heatmap</a><a href=\"#graphs\">Graphs</a><a href=\"#memory\">Memory</a><a href=\"#caches\">Caches</a><a href=\"#power\">Power</a><a href=\"#placements\">Placements</a><a href=\"#provenance\">Provenance</a></nav>"
    )?;
    writeln!(s, "<main>")?;
    summary(topo, s)?;
    writeln!(
        s,
        "<section id=\"tree\"><h2>Topology tree</h2><pre>{}</pre></section>",
        e(&crate::text::render(topo))
    )?;
    writeln!(
        s,
        "<section id=\"heatmap\"><h2>Latency heatmap</h2><div class=\"figure\">{}</div></section>",
        svg_body(&crate::heatmap::render(topo))
    )?;
    graphs(inputs, s)?;
    memory(topo, s)?;
    caches(topo, s)?;
    contention(topo, s)?;
    power(topo, s)?;
    placements(topo, inputs, s)?;
    provenance(topo, s)?;
    writeln!(s, "</main></body></html>")
}

/// The `<svg …>…</svg>` part of an SVG document.
fn svg_body(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

fn summary(topo: &Topology, s: &mut String) -> std::fmt::Result {
    writeln!(
        s,
        "<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">"
    )?;
    let facts = topo.facts();
    let cards: Vec<(String, String)> = vec![
        (topo.num_contexts().to_string(), "hardware contexts".into()),
        (topo.num_cores().to_string(), "cores".into()),
        (topo.num_groups().to_string(), "groups".into()),
        (
            topo.num_sockets().to_string(),
            format!("sockets ({})", facts.sockets.origin),
        ),
        (
            if topo.num_nodes() == 0 {
                "?".into()
            } else {
                topo.num_nodes().to_string()
            },
            "memory nodes".into(),
        ),
        (
            if facts.smt.value {
                format!("{}-way", topo.contexts_per_core())
            } else {
                "no".into()
            },
            format!("SMT ({})", facts.smt.origin),
        ),
        (topo.units().to_string(), "latency unit".into()),
    ];
    for (v, label) in cards {
        writeln!(
            s,
            "<div class=\"card\"><b>{}</b><span>{}</span></div>",
            e(&v),
            e(&label)
        )?;
    }
    writeln!(s, "</div>")?;
    writeln!(
        s,
        "<table><tr><th>level</th><th class=\"l\">role</th><th>median</th><th>min</th><th>max</th><th>pairs</th></tr>"
    )?;
    for l in topo.levels() {
        writeln!(
            s,
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            l.id,
            l.role.as_str(),
            e(&lat(topo, l.latency.median)),
            e(&lat(topo, l.latency.min)),
            e(&lat(topo, l.latency.max)),
            l.latency.count
        )?;
    }
    writeln!(s, "</table>")?;
    let v = topo.validation();
    if !v.confidence.is_empty() {
        let parts: Vec<String> = v
            .confidence
            .iter()
            .map(|c| format!("{} {:.2}", c.level.as_str(), c.confidence))
            .collect();
        writeln!(
            s,
            "<p class=\"muted\">confidence: {}</p>",
            e(&parts.join(" · "))
        )?;
    }
    if !v.warnings.is_empty() || !v.unresolved.is_empty() || !v.os_differences.is_empty() {
        writeln!(s, "<ul class=\"warn\">")?;
        for w in &v.warnings {
            writeln!(
                s,
                "<li data-kind=\"{}\">{}</li>",
                e(w.kind.as_str()),
                cpu_text(&w.message)
            )?;
        }
        for u in &v.unresolved {
            writeln!(
                s,
                "<li><b>unresolved {}</b>: {}</li>",
                u.level.as_str(),
                cpu_text(&u.reason)
            )?;
        }
        for d in &v.os_differences {
            writeln!(
                s,
                "<li><b>differs from the OS ({})</b>: {} (re-run: {})</li>",
                d.level.as_str(),
                cpu_text(&d.message),
                e(&d.rerun)
            )?;
        }
        writeln!(s, "</ul>")?;
    } else {
        writeln!(s, "<p class=\"muted\">no warnings</p>")?;
    }
    writeln!(s, "</section>")
}

fn graphs(inputs: &ReportInputs, s: &mut String) -> std::fmt::Result {
    writeln!(s, "<section id=\"graphs\"><h2>Graphs</h2>")?;
    if inputs.graphs.is_empty() {
        writeln!(s, "<p class=\"muted\">no graphs</p>")?;
    }
    for g in &inputs.graphs {
        writeln!(s, "<h3>{}</h3>", e(&g.title))?;
        match &g.graphic {
            Graphic::Svg(svg) => {
                writeln!(s, "<div class=\"figure\">{}</div>", svg_body(svg))?;
            }
            Graphic::Dot { dot, reason } => {
                writeln!(
                    s,
                    "<p class=\"muted\">{} — the DOT text follows (render it with <code>dot -Tsvg</code>).</p><pre class=\"dot\">{}</pre>",
                    e(reason),
                    e(dot)
                )?;
            }
        }
    }
    writeln!(s, "</section>")
}

fn memory(topo: &Topology, s: &mut String) -> std::fmt::Result {
    writeln!(s, "<section id=\"memory\"><h2>Memory</h2>")?;
    let Some(mem) = topo.memory() else {
        writeln!(
            s,
            "<p class=\"muted\">unavailable: no memory measurements in this description (<code>topoprobe mem</code> measures them).</p></section>"
        )?;
        return Ok(());
    };
    if !mem.latency.is_empty() || !mem.bandwidth.is_empty() {
        memory_table(topo, mem, s)?;
    }
    crate::memory_load::html(s, &crate::memory_load::MemoryLoad::from(&mem.detail))?;
    if let Some(c2c) = &mem.detail.cache_to_cache {
        crate::results::cache_to_cache::html(s, c2c)?;
    }
    writeln!(s, "</section>")
}

/// The socket × node table of latency and bandwidth.
fn memory_table(
    topo: &Topology,
    mem: &topoprobe_model::MemorySection,
    s: &mut String,
) -> std::fmt::Result {
    let nodes = topo.num_known_nodes();
    writeln!(
        s,
        "<p class=\"muted\">from each socket to each node; the local node is highlighted. Bandwidth in GB/s with every context of the socket (one thread in parentheses).</p>"
    )?;
    write!(
        s,
        "<table><tr><th class=\"l\">socket</th><th class=\"l\"></th>"
    )?;
    for n in 0..nodes {
        write!(s, "<th>node {}</th>", topo.node_os_number(NodeId(n)))?;
    }
    writeln!(s, "</tr>")?;
    for sock in topo.sockets() {
        let rows: [(&str, Access); 2] = [("read", Access::Read), ("write", Access::Write)];
        let mut lines: Vec<(String, Vec<Option<String>>)> = Vec::new();
        lines.push((
            "latency".to_string(),
            (0..nodes)
                .map(|n| {
                    mem.latency_from(topo.socket_contexts(sock.id), NodeId(n))
                        .map(|v| lat(topo, v))
                })
                .collect(),
        ));
        for (label, access) in rows {
            lines.push((
                format!("{label} GB/s"),
                (0..nodes)
                    .map(|n| {
                        let all =
                            mem.bandwidth_of(sock.id, NodeId(n), access, Threads::AllContexts);
                        let one = mem.bandwidth_of(sock.id, NodeId(n), access, Threads::Single);
                        match (all, one) {
                            (Some(a), Some(o)) => Some(format!("{a:.1} ({o:.1})")),
                            (Some(a), None) => Some(format!("{a:.1}")),
                            (None, Some(o)) => Some(format!("({o:.1})")),
                            (None, None) => None,
                        }
                    })
                    .collect(),
            ));
        }
        let lines: Vec<_> = lines
            .into_iter()
            .filter(|(_, c)| c.iter().any(Option::is_some))
            .collect();
        for (k, (label, cells)) in lines.iter().enumerate() {
            write!(s, "<tr>")?;
            if k == 0 {
                write!(
                    s,
                    "<th class=\"l\" rowspan=\"{}\">socket {}</th>",
                    lines.len(),
                    sock.id.0
                )?;
            }
            write!(s, "<td class=\"l\">{}</td>", e(label))?;
            for (n, c) in cells.iter().enumerate() {
                let local = sock.local_node == Some(NodeId(n));
                write!(
                    s,
                    "<td{}>{}</td>",
                    if local { " class=\"local\"" } else { "" },
                    e(c.as_deref().unwrap_or("–"))
                )?;
            }
            writeln!(s, "</tr>")?;
        }
    }
    writeln!(s, "</table>")
}

fn caches(topo: &Topology, s: &mut String) -> std::fmt::Result {
    writeln!(s, "<section id=\"caches\"><h2>Caches</h2>")?;
    let Some(c) = topo.caches().filter(|c| !c.levels.is_empty()) else {
        writeln!(
            s,
            "<p class=\"muted\">unavailable: no cache measurements in this description (<code>topoprobe cache</code> measures them).</p></section>"
        )?;
        return Ok(());
    };
    // Columns that no level fills (a .mct file has neither) are left out.
    let lines = c.levels.iter().any(|l| l.line_bytes.is_some());
    let shared = c.levels.iter().any(|l| !l.shared_by.is_empty());
    writeln!(
        s,
        "<table><tr><th class=\"l\">cache</th><th class=\"l\">kind</th><th>measured size</th><th>OS size</th><th>latency</th>{}{}</tr>",
        if lines { "<th>line</th>" } else { "" },
        if shared { "<th class=\"l\">shared by</th>" } else { "" }
    )?;
    let size = |v: Option<u64>| v.map_or_else(|| "–".to_string(), kib);
    for l in &c.levels {
        let mut extra = String::new();
        if lines {
            let b = l
                .line_bytes
                .map_or_else(|| "–".to_string(), |b| format!("{b} B"));
            let _ = write!(extra, "<td>{b}</td>");
        }
        if shared {
            let by = match l.shared_by.first() {
                Some(first) => format!(
                    "{} of {}",
                    plural(l.shared_by.len(), "instance"),
                    plural(first.len(), "context")
                ),
                None => "–".to_string(),
            };
            let _ = write!(extra, "<td class=\"l\">{}</td>", e(&by));
        }
        writeln!(
            s,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>{extra}</tr>",
            e(&l.name()),
            l.kind.map_or_else(|| "–".to_string(), |k| format!("{k:?}").to_lowercase()),
            size(l.measured_size_kib),
            size(l.os_size_kib),
            l.latency
                .filter(|v| *v > 0.0)
                .map_or_else(|| "–".to_string(), |v| lat(topo, v)),
        )?;
    }
    writeln!(s, "</table></section>")
}

fn contention(topo: &Topology, s: &mut String) -> std::fmt::Result {
    let Some(c) = topo.contention().filter(|c| !c.levels.is_empty()) else {
        return Ok(());
    };
    writeln!(
        s,
        "<section id=\"contention\"><h2>Memory contention</h2><p class=\"muted\">one context alone reads {:.1} GB/s; slowdown when two contexts of one group read together</p>",
        c.alone_gbps
    )?;
    writeln!(
        s,
        "<table><tr><th>overhead</th><th>groups</th><th class=\"l\">sizes</th></tr>"
    )?;
    for l in &c.levels {
        let sizes: Vec<String> = l.groups.iter().map(|g| g.len().to_string()).collect();
        writeln!(
            s,
            "<tr><td>{:.2}×</td><td>{}</td><td class=\"l\">{}</td></tr>",
            l.overhead,
            l.groups.len(),
            e(&sizes.join(", "))
        )?;
    }
    writeln!(s, "</table></section>")
}

fn power(topo: &Topology, s: &mut String) -> std::fmt::Result {
    writeln!(s, "<section id=\"power\"><h2>Power</h2>")?;
    let Some(p) = topo.power().filter(|p| !p.entries.is_empty()) else {
        writeln!(
            s,
            "<p class=\"muted\">unavailable: no power measurements in this description.</p></section>"
        )?;
        return Ok(());
    };
    writeln!(
        s,
        "<p class=\"muted\">watts (RAPL); states after idle are increments: 1stcore = one context of one core busy, 2ndcore = a second core, 2ndhwc = the second context of a busy core, allcor = every core, allhwc = every context.</p>"
    )?;
    writeln!(
        s,
        "<table><tr><th class=\"l\">scope</th><th class=\"l\">state</th><th>cores</th><th>rest</th><th>package</th><th>DRAM</th><th>total</th></tr>"
    )?;
    for en in &p.entries {
        let scope = match en.scope {
            PowerScope::Socket(x) => format!("socket {}", x.0),
            PowerScope::Total => "total".to_string(),
        };
        writeln!(
            s,
            "<tr><td class=\"l\">{scope}</td><td class=\"l\">{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td></tr>",
            en.state.mct_name(),
            en.cores_w,
            en.rest_w,
            en.package_w,
            en.dram_w,
            en.total_w
        )?;
    }
    writeln!(s, "</table></section>")
}

fn placements(topo: &Topology, inputs: &ReportInputs, s: &mut String) -> std::fmt::Result {
    writeln!(s, "<section id=\"placements\"><h2>Placements</h2>")?;
    if inputs.placements.is_empty() {
        writeln!(
            s,
            "<p class=\"muted\">Contexts of each socket, core by core (siblings of a core together): the order in which a compact placement fills a socket. Use them with <code>taskset -c</code> or <code>OMP_PLACES</code>.</p>"
        )?;
        writeln!(
            s,
            "<table><tr><th class=\"l\">socket</th><th>contexts</th><th class=\"l\">one context per core</th><th class=\"l\">all contexts</th></tr>"
        )?;
        for sock in topo.sockets() {
            let first: Vec<u32> = sock
                .cores
                .iter()
                .filter_map(|&c| topo.core_contexts(c).first())
                .map(|x| topo.contexts()[x.0].os_id)
                .collect();
            let all: Vec<u32> = sock
                .cores
                .iter()
                .flat_map(|&c| topo.core_contexts(c).iter())
                .map(|x| topo.contexts()[x.0].os_id)
                .collect();
            writeln!(
                s,
                "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                SocketId(sock.id.0).0,
                sock.contexts.len(),
                cpu_cell(&first),
                cpu_cell(&all)
            )?;
        }
        writeln!(s, "</table>")?;
    } else {
        writeln!(
            s,
            "<table id=\"placements-table\"><tr><th class=\"l\">policy</th><th>threads</th><th class=\"l\">CPUs (and the order threads take them)</th><th class=\"l\">note</th></tr>"
        )?;
        for p in &inputs.placements {
            writeln!(
                s,
                "<tr><td class=\"l name\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                e(&p.policy),
                p.threads,
                cpu_cell(&p.cpus),
                cpu_text(&p.note)
            )?;
        }
        writeln!(s, "</table>")?;
    }
    writeln!(s, "</section>")
}

/// Text for the page, its CPU lists written as ranges (see [`compact_cpu_lists`]) and
/// breakable after their commas only, never inside a number.
fn cpu_text(text: &str) -> String {
    breakable(&e(&compact_cpu_lists(text)))
}

/// HTML with a line-break opportunity after every comma that a digit follows (a CPU
/// list breaks between its items, not inside a number).
fn breakable(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut chars = html.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == ',' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push_str("<wbr>");
        }
    }
    out
}

/// Characters of a placement's order shown in its cell.
const ORDER_SHOWN: usize = 48;

/// CPUs for a table cell: the set as ranges, then, when threads take them in another
/// order, the beginning of that order (the whole order in the tooltip).
fn cpu_cell(cpus: &[u32]) -> String {
    let mut set = cpus.to_vec();
    set.sort_unstable();
    set.dedup();
    let set_text = cpu_ranges(&set);
    let order = cpu_ranges(cpus);
    let mut cell = cpu_text(&set_text);
    if order != set_text {
        let mut shown = String::new();
        for part in order.split(',') {
            if shown.len() + part.len() > ORDER_SHOWN {
                shown.push_str(",…");
                break;
            }
            if !shown.is_empty() {
                shown.push(',');
            }
            shown.push_str(part);
        }
        let _ = write!(
            cell,
            "<br><span class=\"muted\" title=\"{}\">in order: {}</span>",
            e(&order),
            breakable(&e(&shown))
        );
    }
    cell
}

fn provenance(topo: &Topology, s: &mut String) -> std::fmt::Result {
    let p = topo.provenance();
    writeln!(s, "<section id=\"provenance\"><h2>Provenance</h2><table>")?;
    let mut rows: Vec<(String, String)> = vec![
        ("tool".into(), format!("{} {}", p.tool, p.version)),
        ("source".into(), p.source.to_string()),
    ];
    if let Some(c) = &p.created {
        rows.push(("created".into(), c.clone()));
    }
    if let Some(d) = p.duration_s {
        rows.push(("duration".into(), format!("{d:.2} s")));
    }
    let m = topo.machine();
    for (k, v) in [
        ("host", &m.hostname),
        ("CPU model", &m.cpu_model),
        ("online CPUs", &m.online_cpus),
        ("kernel", &m.kernel),
    ] {
        if let Some(v) = v {
            rows.push((k.into(), v.clone()));
        }
    }
    for (k, v) in &p.parameters {
        rows.push((k.clone(), v.clone()));
    }
    if let Some(sym) = &topo.latency_tables().symmetrization {
        rows.push(("symmetrization".into(), sym.clone()));
    }
    for (k, v) in rows {
        writeln!(
            s,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            e(&k),
            cpu_text(&v)
        )?;
    }
    writeln!(s, "</table>")?;
    let v = topo.validation();
    if !v.confidence.is_empty() {
        writeln!(
            s,
            "<table><tr><th class=\"l\">level</th><th>confidence</th><th class=\"l\">basis</th></tr>"
        )?;
        for c in &v.confidence {
            writeln!(
                s,
                "<tr><td class=\"l\">{}</td><td>{:.2}</td><td class=\"l\">{}</td></tr>",
                c.level.as_str(),
                c.confidence,
                cpu_text(&c.basis)
            )?;
        }
        writeln!(s, "</table>")?;
    }
    writeln!(
        s,
        "<p class=\"muted\">{} between {}; latencies on this page are normalized (the median of each component pair) except in the heatmap, which shows the raw measurements.</p>",
        plural(topo.levels().len(), "latency level"),
        plural(topo.num_contexts(), "context")
    )?;
    writeln!(s, "</section>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_the_svg_prolog() {
        assert_eq!(
            svg_body("<?xml version=\"1.0\"?>\n<svg a>b</svg>"),
            "<svg a>b</svg>"
        );
        assert_eq!(svg_body("plain"), "plain");
    }
}
