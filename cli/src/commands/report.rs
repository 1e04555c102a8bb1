//! `topoprobe report`: one self-contained HTML page about a topology (from a file, or this
//! machine's description), or the JSON description the page shows.

use anyhow::Result;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use topoprobe_model::format::{json, plural};
use topoprobe_view::dot;
use topoprobe_view::graphviz::{self, NO_GRAPHVIZ};
use topoprobe_view::picture::Picture;
use topoprobe_view::report::{self, Graphic, PlacementExample, ReportGraph, ReportInputs};

use crate::args::{ReportArgs, ReportFormat};
use crate::output::{choose, write_to, Formats, Kind};

impl Formats for ReportFormat {
    const DEFAULT: Self = Self::Html;
    const JSON: Self = Self::Json;
    fn of_kind(kind: Kind) -> Option<Self> {
        match kind {
            Kind::Html => Some(Self::Html),
            Kind::Json => Some(Self::Json),
            _ => None,
        }
    }
}

/// Runs the command.
pub(crate) fn run(args: &ReportArgs) -> Result<()> {
    let out = args.output.as_deref();
    let format = choose(args.format, args.json, out)?;
    args.input.check_output(out)?;
    let topo = args.input.load()?;
    if format == ReportFormat::Json {
        return write_to(out, json::to_json_string(&topo).as_bytes());
    }
    let inputs = ReportInputs {
        graphs: graphs(&topo),
        placements: example_placements(&topo),
        generated: OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok()),
    };
    write_to(out, report::render(&topo, &inputs).as_bytes())
}

/// The Graphviz graphs of the page, rendered to SVG when Graphviz is installed.
fn graphs(topo: &topoprobe_model::Topology) -> Vec<ReportGraph> {
    let graphviz = graphviz::available();
    if !graphviz {
        eprintln!("topoprobe: {NO_GRAPHVIZ}; the report shows the graphs as DOT text");
    }
    let mut graphs = Vec::new();
    for (name, text) in dot::graphs(topo) {
        let title = if name == "cross-socket" {
            "Cross-socket: latency and bandwidth between sockets".to_string()
        } else {
            format!(
                "Intra-socket: {}, with memory latency and bandwidth to every node",
                name.replace("socket", "socket ")
            )
        };
        let graphic = if graphviz {
            match graphviz::render(&text, Picture::Svg) {
                Ok(svg) => Graphic::Svg(String::from_utf8_lossy(&svg).into_owned()),
                Err(e) => Graphic::Dot {
                    dot: text,
                    reason: format!(
                        "Graphviz failed: {}",
                        crate::error::message(&anyhow::Error::new(e))
                    ),
                },
            }
        } else {
            Graphic::Dot {
                dot: text,
                reason: NO_GRAPHVIZ.to_string(),
            }
        };
        graphs.push(ReportGraph { title, graphic });
    }
    graphs
}

/// A few of the placement policies, each for half and for all of the machine's contexts
/// (those a policy cannot serve — POWER without power figures, RR_SCALE without bandwidth —
/// are left out).
fn example_placements(topo: &topoprobe_model::Topology) -> Vec<PlacementExample> {
    use topoprobe_place::{export, plan, Policy, Request, Summary};
    let n = topo.num_contexts();
    let mut out = Vec::new();
    for policy in [
        Policy::ConHwc,
        Policy::ConCoreHwc,
        Policy::BalanceCore,
        Policy::RrCore,
        Policy::RrScale,
        Policy::Power,
    ] {
        for threads in [(n / 2).max(1), n] {
            let req = Request {
                threads: Some(threads),
                ..Request::new(policy)
            };
            let Ok(p) = plan(topo, &req) else { continue };
            let summary = Summary::new(topo, &p);
            let mut note = Vec::new();
            if let Some(l) = summary.max_latency {
                note.push(format!("max latency {l:.0} {}", summary.latency_unit));
            }
            if let Some(b) = summary.min_bandwidth_gbps {
                note.push(format!("min bandwidth {b:.1} GB/s"));
            }
            note.push(format!(
                "{}, {}",
                plural(summary.sockets.len(), "socket"),
                plural(summary.cores, "core")
            ));
            out.push(PlacementExample {
                policy: policy.name().to_string(),
                threads,
                cpus: export::cpus(topo, &p),
                note: note.join(", "),
            });
        }
    }
    out
}
