//! `topoprobe report`: one self-contained HTML page about a topology (from a file, or this
//! machine's description), or the JSON description the page shows.

use anyhow::Result;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use topoprobe_model::format::json;
use topoprobe_view::graphviz::{self, NO_GRAPHVIZ};
use topoprobe_view::report::{self, PlacementExample, ReportInputs};

use crate::args::{ReportArgs, ReportFormat};
use crate::output::write_to;

/// Runs the command.
pub(crate) fn run(args: &ReportArgs) -> Result<()> {
    let out = args.output.output.as_deref();
    let format = args.output.format()?;
    args.input.check_output(out)?;
    let topo = args.input.load()?;
    if format == ReportFormat::Json {
        return write_to(out, json::to_json_string(&topo).as_bytes());
    }
    match graphviz::check() {
        Ok(true) => {}
        Ok(false) => {
            eprintln!("topoprobe: {NO_GRAPHVIZ}; the report shows the graphs as DOT text");
        }
        Err(e) => {
            eprintln!("topoprobe: Graphviz failed: {e}; the report shows the graphs as DOT text");
        }
    }
    let inputs = ReportInputs {
        graphs: report::render_graphs(&topo),
        placements: topoprobe_place::examples(&topo)
            .iter()
            .map(PlacementExample::of)
            .collect(),
        generated: OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok()),
    };
    write_to(out, report::render(&topo, &inputs).as_bytes())
}
