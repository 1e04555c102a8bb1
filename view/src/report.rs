//! The HTML report: one self-contained page (no scripts, external fonts, style sheets or
//! images, so it works offline and can be mailed) with the summary, the text tree, the
//! latency heatmap (inline SVG), the Graphviz graphs (inline SVG when the caller could
//! render them, else their DOT text), memory, cache, contention and power tables, example
//! placements, provenance and warnings.
//!
//! [`render`] is pure and does not run Graphviz: the caller renders the graphs (with
//! [`crate::graphviz`] when it can) and passes each as [`Graphic::Svg`] or [`Graphic::Dot`]
//! in [`ReportInputs`].
//!
//! The page is a `maud` template: every value written into it (a machine name, a CPU
//! model, a source path, a note of the description) is escaped, in text and in attributes.
//! Markup goes in unescaped only where topoprobe made it: the style sheet, the SVG
//! pictures ([`Graphic::Svg`] and the heatmap) and the memory tables of
//! [`crate::memory_load`] and [`crate::results::cache_to_cache`], which escape their own
//! values. The template writes a line break after each block, so that the page's source
//! reads and compares line by line.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use topoprobe_model::format::{compact_cpu_lists, cpu_ranges, plural};
use topoprobe_model::{Access, MemorySection, NodeId, PowerScope, Threads, Topology};

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
    page(topo, inputs).into_string()
}

/// The sections of the page, as the navigation bar names them: (id, name).
const NAV: [(&str, &str); 9] = [
    ("summary", "Summary"),
    ("tree", "Tree"),
    ("heatmap", "Heatmap"),
    ("graphs", "Graphs"),
    ("memory", "Memory"),
    ("caches", "Caches"),
    ("power", "Power"),
    ("placements", "Placements"),
    ("provenance", "Provenance"),
];

fn page(topo: &Topology, inputs: &ReportInputs) -> Markup {
    let title = format!("topoprobe report: {}", machine_name(topo));
    html! {
        (DOCTYPE) "\n"
        html lang="en" {
            head {
                meta charset="utf-8"; "\n"
                meta name="viewport" content="width=device-width, initial-scale=1"; "\n"
                title { (title) } "\n"
                // The style sheet is this file's constant: nothing of the description.
                style { (PreEscaped(STYLE)) }
            }
            body {
                "\n"
                (header(topo, inputs, &title)) "\n"
                nav { @for (id, name) in NAV { a href={ "#" (id) } { (name) } } } "\n"
                main {
                    "\n"
                    (summary(topo))
                    section id="tree" {
                        h2 { "Topology tree" }
                        pre { (crate::text::render(topo)) }
                    }
                    "\n"
                    section id="heatmap" {
                        h2 { "Latency heatmap" }
                        // The heatmap's SVG is made by `crate::heatmap`, which escapes
                        // every label and title it writes.
                        div class="figure" { (PreEscaped(svg_body(&crate::heatmap::render(topo)))) }
                    }
                    "\n"
                    (graphs(inputs))
                    (memory(topo))
                    (caches(topo))
                    (contention(topo))
                    (power(topo))
                    (placements(topo, inputs))
                    (provenance(topo))
                }
            }
        }
        "\n"
    }
}

/// The page's header: its title, the description's source and the tool that wrote it.
fn header(topo: &Topology, inputs: &ReportInputs, title: &str) -> Markup {
    let p = topo.provenance();
    html! {
        header {
            h1 { (title) }
            p {
                (p.source) " · " (p.tool) " " (p.version)
                @if let Some(g) = &inputs.generated { " · report made " (g) }
            }
        }
    }
}

/// The `<svg …>…</svg>` part of an SVG document.
fn svg_body(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

/// The HTML that one of this crate's table writers appends to a string.
fn written(write: impl FnOnce(&mut String) -> std::fmt::Result) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail: the result is always Ok.
    let _ = write(&mut s);
    s
}

fn summary(topo: &Topology) -> Markup {
    let v = topo.validation();
    let confidence: Vec<String> = v
        .confidence
        .iter()
        .map(|c| format!("{} {:.2}", c.level.as_str(), c.confidence))
        .collect();
    html! {
        section id="summary" {
            h2 { "Summary" }
            div class="cards" {
                "\n"
                @for (value, label) in cards(topo) {
                    div class="card" { b { (value) } span { (label) } } "\n"
                }
            }
            "\n"
            (levels(topo))
            @if !confidence.is_empty() {
                p class="muted" { "confidence: " (confidence.join(" · ")) } "\n"
            }
            (warnings(topo))
        }
        "\n"
    }
}

/// The summary's cards: (value, label).
fn cards(topo: &Topology) -> Vec<(String, String)> {
    let facts = topo.facts();
    vec![
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
    ]
}

/// The table of latency levels.
fn levels(topo: &Topology) -> Markup {
    html! {
        table {
            tr {
                th { "level" } th class="l" { "role" } th { "median" } th { "min" }
                th { "max" } th { "pairs" }
            }
            "\n"
            @for l in topo.levels() {
                tr {
                    td { (l.id) }
                    td class="l" { (l.role.as_str()) }
                    td { (lat(topo, l.latency.median)) }
                    td { (lat(topo, l.latency.min)) }
                    td { (lat(topo, l.latency.max)) }
                    td { (l.latency.count) }
                }
                "\n"
            }
        }
        "\n"
    }
}

/// The description's warnings, unresolved levels and differences from the OS.
fn warnings(topo: &Topology) -> Markup {
    let v = topo.validation();
    if v.warnings.is_empty() && v.unresolved.is_empty() && v.os_differences.is_empty() {
        return html! { p class="muted" { "no warnings" } "\n" };
    }
    html! {
        ul class="warn" {
            "\n"
            @for w in &v.warnings {
                li data-kind=(w.kind.as_str()) { (cpu_text(&w.message)) } "\n"
            }
            @for u in &v.unresolved {
                li { b { "unresolved " (u.level.as_str()) } ": " (cpu_text(&u.reason)) } "\n"
            }
            @for d in &v.os_differences {
                li {
                    b { "differs from the OS (" (d.level.as_str()) ")" }
                    ": " (cpu_text(&d.message)) " (re-run: " (d.rerun) ")"
                }
                "\n"
            }
        }
        "\n"
    }
}

fn graphs(inputs: &ReportInputs) -> Markup {
    html! {
        section id="graphs" {
            h2 { "Graphs" } "\n"
            @if inputs.graphs.is_empty() {
                p class="muted" { "no graphs" } "\n"
            }
            @for g in &inputs.graphs {
                h3 { (g.title) } "\n"
                @match &g.graphic {
                    // An SVG graph is a picture, markup by definition: the caller's, which
                    // `render_graphs` makes with Graphviz from the DOT text of
                    // `crate::dot` (whose labels Graphviz writes escaped).
                    Graphic::Svg(svg) => div class="figure" { (PreEscaped(svg_body(svg))) },
                    Graphic::Dot { dot, reason } => {
                        p class="muted" {
                            (reason) " — the DOT text follows (render it with "
                            code { "dot -Tsvg" } ")."
                        }
                        pre class="dot" { (dot) }
                    }
                }
                "\n"
            }
        }
        "\n"
    }
}

fn memory(topo: &Topology) -> Markup {
    html! {
        section id="memory" {
            h2 { "Memory" } "\n"
            @if let Some(mem) = topo.memory() {
                @if !mem.latency.is_empty() || !mem.bandwidth.is_empty() {
                    (memory_table(topo, mem))
                }
                // These tables and curves are written by this crate's modules, which
                // escape every value they write.
                (PreEscaped(written(|s| crate::memory_load::html(
                    s,
                    &crate::memory_load::MemoryLoad::from(&mem.detail),
                ))))
                @if let Some(c2c) = &mem.detail.cache_to_cache {
                    (PreEscaped(written(|s| crate::results::cache_to_cache::html(s, c2c))))
                }
            } @else {
                p class="muted" {
                    "unavailable: no memory measurements in this description ("
                    code { "topoprobe mem" } " measures them)."
                }
            }
        }
        "\n"
    }
}

/// The socket × node table of latency and bandwidth.
fn memory_table(topo: &Topology, mem: &MemorySection) -> Markup {
    let nodes = topo.num_known_nodes();
    html! {
        p class="muted" {
            "from each socket to each node; the local node is highlighted. Bandwidth in GB/s \
             with every context of the socket (one thread in parentheses)."
        }
        "\n"
        table {
            tr {
                th class="l" { "socket" } th class="l" {}
                @for n in 0..nodes { th { "node " (topo.node_os_number(NodeId(n))) } }
            }
            "\n"
            @for sock in topo.sockets() {
                @let lines = memory_lines(topo, mem, sock.id.0);
                @for (k, (label, cells)) in lines.iter().enumerate() {
                    tr {
                        @if k == 0 {
                            th class="l" rowspan=(lines.len()) { "socket " (sock.id.0) }
                        }
                        td class="l" { (label) }
                        @for (n, c) in cells.iter().enumerate() {
                            td class=[(sock.local_node == Some(NodeId(n))).then_some("local")] {
                                (c.as_deref().unwrap_or("–"))
                            }
                        }
                    }
                    "\n"
                }
            }
        }
        "\n"
    }
}

/// The rows of one socket in the memory table: latency, read and write bandwidth to each
/// node, those with no value at all left out.
fn memory_lines(
    topo: &Topology,
    mem: &MemorySection,
    socket: usize,
) -> Vec<(String, Vec<Option<String>>)> {
    let nodes = topo.num_known_nodes();
    let sock = topoprobe_model::SocketId(socket);
    let mut lines: Vec<(String, Vec<Option<String>>)> = vec![(
        "latency".to_string(),
        (0..nodes)
            .map(|n| {
                mem.latency_from(topo.socket_contexts(sock), NodeId(n))
                    .map(|v| lat(topo, v))
            })
            .collect(),
    )];
    for (label, access) in [("read", Access::Read), ("write", Access::Write)] {
        lines.push((
            format!("{label} GB/s"),
            (0..nodes)
                .map(|n| {
                    let all = mem.bandwidth_of(sock, NodeId(n), access, Threads::AllContexts);
                    let one = mem.bandwidth_of(sock, NodeId(n), access, Threads::Single);
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
    lines
        .into_iter()
        .filter(|(_, c)| c.iter().any(Option::is_some))
        .collect()
}

fn caches(topo: &Topology) -> Markup {
    html! {
        section id="caches" {
            h2 { "Caches" } "\n"
            @if let Some(c) = topo.caches().filter(|c| !c.levels.is_empty()) {
                (cache_table(topo, c))
            } @else {
                p class="muted" {
                    "unavailable: no cache measurements in this description ("
                    code { "topoprobe cache" } " measures them)."
                }
            }
        }
        "\n"
    }
}

/// The table of cache levels.
fn cache_table(topo: &Topology, c: &topoprobe_model::CacheSection) -> Markup {
    // Columns that no level fills (a .mct file has neither) are left out.
    let lines = c.levels.iter().any(|l| l.line_bytes.is_some());
    let shared = c.levels.iter().any(|l| !l.shared_by.is_empty());
    html! {
        table {
            tr {
                th class="l" { "cache" } th class="l" { "kind" } th { "measured size" }
                th { "OS size" } th { "latency" }
                @if lines { th { "line" } }
                @if shared { th class="l" { "shared by" } }
            }
            "\n"
            @for l in &c.levels {
                @let kind = l.kind.map(|k| format!("{k:?}").to_lowercase());
                @let latency = l.latency.filter(|v| *v > 0.0).map(|v| lat(topo, v));
                tr {
                    td class="l" { (l.name()) }
                    td class="l" { (or_dash(kind)) }
                    td { (or_dash(l.measured_size_kib.map(kib))) }
                    td { (or_dash(l.os_size_kib.map(kib))) }
                    td { (or_dash(latency)) }
                    @if lines { td { (or_dash(l.line_bytes.map(|b| format!("{b} B")))) } }
                    @if shared { td class="l" { (shared_by(&l.shared_by)) } }
                }
                "\n"
            }
        }
    }
}

/// A table cell's text: the value, or a dash when there is none.
fn or_dash(value: Option<String>) -> String {
    value.unwrap_or_else(|| "–".to_string())
}

/// How many instances of a cache level there are and how many contexts share each.
fn shared_by<T>(instances: &[Vec<T>]) -> String {
    match instances.first() {
        Some(first) => format!(
            "{} of {}",
            plural(instances.len(), "instance"),
            plural(first.len(), "context")
        ),
        None => "–".to_string(),
    }
}

fn contention(topo: &Topology) -> Markup {
    let Some(c) = topo.contention().filter(|c| !c.levels.is_empty()) else {
        return html! {};
    };
    html! {
        section id="contention" {
            h2 { "Memory contention" }
            p class="muted" {
                "one context alone reads " (format_args!("{:.1}", c.alone_gbps))
                " GB/s; slowdown when two contexts of one group read together"
            }
            "\n"
            table {
                tr { th { "overhead" } th { "groups" } th class="l" { "sizes" } }
                "\n"
                @for l in &c.levels {
                    @let sizes: Vec<String> =
                        l.groups.iter().map(|g| g.len().to_string()).collect();
                    tr {
                        td { (format_args!("{:.2}×", l.overhead)) }
                        td { (l.groups.len()) }
                        td class="l" { (sizes.join(", ")) }
                    }
                    "\n"
                }
            }
        }
        "\n"
    }
}

fn power(topo: &Topology) -> Markup {
    html! {
        section id="power" {
            h2 { "Power" } "\n"
            @if let Some(p) = topo.power().filter(|p| !p.entries.is_empty()) {
                (power_table(p))
            } @else {
                p class="muted" { "unavailable: no power measurements in this description." }
            }
        }
        "\n"
    }
}

/// The table of power entries, with a note on the states.
fn power_table(p: &topoprobe_model::PowerSection) -> Markup {
    html! {
        p class="muted" {
            "watts (RAPL); states after idle are increments: 1stcore = one context of one core \
             busy, 2ndcore = a second core, 2ndhwc = the second context of a busy core, allcor = \
             every core, allhwc = every context."
        }
        "\n"
        table {
            tr {
                th class="l" { "scope" } th class="l" { "state" } th { "cores" } th { "rest" }
                th { "package" } th { "DRAM" } th { "total" }
            }
            "\n"
            @for en in &p.entries {
                tr {
                    td class="l" {
                        @match en.scope {
                            PowerScope::Socket(x) => { "socket " (x.0) }
                            PowerScope::Total => "total",
                        }
                    }
                    td class="l" { (en.state.mct_name()) }
                    @for w in [en.cores_w, en.rest_w, en.package_w, en.dram_w, en.total_w] {
                        td { (format_args!("{w:.2}")) }
                    }
                }
                "\n"
            }
        }
    }
}

fn placements(topo: &Topology, inputs: &ReportInputs) -> Markup {
    html! {
        section id="placements" {
            h2 { "Placements" } "\n"
            @if inputs.placements.is_empty() {
                (socket_orders(topo))
            } @else {
                table id="placements-table" {
                    tr {
                        th class="l" { "policy" } th { "threads" }
                        th class="l" { "CPUs (and the order threads take them)" }
                        th class="l" { "note" }
                    }
                    "\n"
                    @for p in &inputs.placements {
                        tr {
                            td class="l name" { (p.policy) }
                            td { (p.threads) }
                            td class="l" { (cpu_cell(&p.cpus)) }
                            td class="l" { (cpu_text(&p.note)) }
                        }
                        "\n"
                    }
                }
                "\n"
            }
        }
        "\n"
    }
}

/// Without example placements: each socket's contexts, core by core.
fn socket_orders(topo: &Topology) -> Markup {
    let os_id = |x: &topoprobe_model::ContextId| topo.contexts()[x.0].os_id;
    html! {
        p class="muted" {
            "Contexts of each socket, core by core (siblings of a core together): the order in \
             which a compact placement fills a socket. Use them with "
            code { "taskset -c" } " or " code { "OMP_PLACES" } "."
        }
        "\n"
        table {
            tr {
                th class="l" { "socket" } th { "contexts" }
                th class="l" { "one context per core" } th class="l" { "all contexts" }
            }
            "\n"
            @for sock in topo.sockets() {
                @let first: Vec<u32> = sock
                    .cores
                    .iter()
                    .filter_map(|&c| topo.core_contexts(c).first())
                    .map(os_id)
                    .collect();
                @let all: Vec<u32> = sock
                    .cores
                    .iter()
                    .flat_map(|&c| topo.core_contexts(c).iter())
                    .map(os_id)
                    .collect();
                tr {
                    td class="l" { (sock.id.0) }
                    td { (sock.contexts.len()) }
                    td class="l" { (cpu_cell(&first)) }
                    td class="l" { (cpu_cell(&all)) }
                }
                "\n"
            }
        }
        "\n"
    }
}

/// Text for the page, its CPU lists written as ranges (see [`compact_cpu_lists`]) and
/// breakable after their commas only, never inside a number.
fn cpu_text(text: &str) -> Markup {
    breakable(&compact_cpu_lists(text))
}

/// Text with a line-break opportunity (`<wbr>`) after every comma that a digit follows (a
/// CPU list breaks between its items, not inside a number).
fn breakable(text: &str) -> Markup {
    html! {
        @for (k, part) in split_at_list_commas(text).into_iter().enumerate() {
            @if k > 0 { wbr; }
            (part)
        }
    }
}

/// `text` cut after every comma that a digit follows.
fn split_at_list_commas(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..bytes.len() {
        if bytes[i - 1] == b',' && bytes[i].is_ascii_digit() {
            parts.push(&text[start..i]);
            start = i;
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Characters of a placement's order shown in its cell.
const ORDER_SHOWN: usize = 48;

/// CPUs for a table cell: the set as ranges, then, when threads take them in another
/// order, the beginning of that order (the whole order in the tooltip).
fn cpu_cell(cpus: &[u32]) -> Markup {
    let mut set = cpus.to_vec();
    set.sort_unstable();
    set.dedup();
    let set_text = cpu_ranges(&set);
    let order = cpu_ranges(cpus);
    html! {
        (cpu_text(&set_text))
        @if order != set_text {
            br;
            span class="muted" title=(order) { "in order: " (breakable(&order_start(&order))) }
        }
    }
}

/// The beginning of a CPU order written as ranges: whole items up to [`ORDER_SHOWN`]
/// characters, then `,…` when some are left out.
fn order_start(order: &str) -> String {
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
    shown
}

fn provenance(topo: &Topology) -> Markup {
    let v = topo.validation();
    html! {
        section id="provenance" {
            h2 { "Provenance" }
            table {
                "\n"
                @for (k, value) in provenance_rows(topo) {
                    tr { th class="l" { (k) } td class="l" { (cpu_text(&value)) } } "\n"
                }
            }
            "\n"
            @if !v.confidence.is_empty() {
                table {
                    tr { th class="l" { "level" } th { "confidence" } th class="l" { "basis" } }
                    "\n"
                    @for c in &v.confidence {
                        tr {
                            td class="l" { (c.level.as_str()) }
                            td { (format_args!("{:.2}", c.confidence)) }
                            td class="l" { (cpu_text(&c.basis)) }
                        }
                        "\n"
                    }
                }
                "\n"
            }
            p class="muted" {
                (plural(topo.levels().len(), "latency level")) " between "
                (plural(topo.num_contexts(), "context"))
                "; latencies on this page are normalized (the median of each component pair) \
                 except in the heatmap, which shows the raw measurements."
            }
            "\n"
        }
        "\n"
    }
}

/// The provenance table's rows: tool, source, time, duration, machine, parameters and
/// symmetrization.
fn provenance_rows(topo: &Topology) -> Vec<(String, String)> {
    let p = topo.provenance();
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
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{
        ContextId, LatencyMatrix, LatencyUnit, LevelConfidence, Machine, Member, OsDifference,
        Source, StructureLevel, TopologyBuilder, Unresolved, Validation, Warning, WarningKind,
    };

    /// Text that would be markup if the page did not escape it.
    const HOSTILE: &str = "<script>alert(1)</script> \"quoted\" & 'single'";
    /// [`HOSTILE`] as escaped text.
    const ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &amp; 'single'";

    /// A two-core machine whose every user-supplied string is [`HOSTILE`].
    fn hostile_topology() -> Topology {
        let mut b = TopologyBuilder::new(vec![0, 1], LatencyUnit::Ns);
        let c0 = b.core(vec![ContextId(0)]);
        let c1 = b.core(vec![ContextId(1)]);
        b.socket(vec![Member::Core(c0), Member::Core(c1)]);
        let lat = LatencyMatrix::from_fn(2, |_, _| Some(30.0));
        b.latencies(lat.clone(), lat);
        let level = StructureLevel::Socket;
        b.validation(Validation {
            warnings: vec![Warning::new(WarningKind::from_name(HOSTILE), HOSTILE)],
            confidence: vec![LevelConfidence {
                level,
                confidence: 0.5,
                basis: HOSTILE.into(),
            }],
            unresolved: vec![Unresolved {
                level,
                reason: HOSTILE.into(),
            }],
            os_differences: vec![OsDifference {
                level,
                message: HOSTILE.into(),
                rerun: HOSTILE.into(),
            }],
        });
        b.machine(Machine {
            hostname: Some(HOSTILE.into()),
            cpu_model: Some(HOSTILE.into()),
            online_cpus: Some(HOSTILE.into()),
            kernel: Some(HOSTILE.into()),
        });
        let mut topo = b.build().unwrap();
        let p = topo.provenance_mut();
        p.source = Source::Description {
            path: HOSTILE.into(),
        };
        p.tool = HOSTILE.into();
        p.created = Some(HOSTILE.into());
        p.parameters.insert(HOSTILE.into(), HOSTILE.into());
        topo
    }

    #[test]
    fn what_a_description_says_is_escaped_text() {
        let inputs = ReportInputs {
            graphs: vec![ReportGraph {
                title: HOSTILE.into(),
                graphic: Graphic::Dot {
                    dot: HOSTILE.into(),
                    reason: HOSTILE.into(),
                },
            }],
            placements: vec![PlacementExample {
                policy: HOSTILE.into(),
                threads: 2,
                cpus: vec![1, 0],
                note: HOSTILE.into(),
            }],
            generated: Some(HOSTILE.into()),
        };
        let page = render(&hostile_topology(), &inputs);
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("\"quoted\""), "{page}");
        assert!(
            page.contains(&format!("<title>topoprobe report: {ESCAPED}</title>")),
            "{page}"
        );
        // In an attribute: the kind of a warning this version does not know.
        assert!(
            page.contains(&format!("<li data-kind=\"{ESCAPED}\">{ESCAPED}</li>")),
            "{page}"
        );
        for row in [
            format!(
                "<tr><th class=\"l\">source</th><td class=\"l\">description {ESCAPED}</td></tr>"
            ),
            format!("<tr><th class=\"l\">CPU model</th><td class=\"l\">{ESCAPED}</td></tr>"),
            format!("<tr><th class=\"l\">{ESCAPED}</th><td class=\"l\">{ESCAPED}</td></tr>"),
            format!("<td class=\"l name\">{ESCAPED}</td>"),
            format!("<h3>{ESCAPED}</h3>"),
            format!("<pre class=\"dot\">{ESCAPED}</pre>"),
        ] {
            assert!(page.contains(&row), "{row} in {page}");
        }
        // Title, header (name, tool, source, time), tree, warnings, graph, placement,
        // provenance: every one of them escaped.
        assert!(page.matches(ESCAPED).count() >= 20, "{page}");
    }

    #[test]
    fn strips_the_svg_prolog() {
        assert_eq!(
            svg_body("<?xml version=\"1.0\"?>\n<svg a>b</svg>"),
            "<svg a>b</svg>"
        );
        assert_eq!(svg_body("plain"), "plain");
    }

    #[test]
    fn cpu_lists_break_after_their_commas_only() {
        assert_eq!(
            split_at_list_commas("0,1-3, a,b,7"),
            ["0,", "1-3, a,b,", "7"]
        );
        assert_eq!(breakable("0,1 <b>").into_string(), "0,<wbr>1 &lt;b&gt;");
    }
}
