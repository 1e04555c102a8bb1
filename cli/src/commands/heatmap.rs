//! `topoprobe heatmap`: the latency matrix as a picture (SVG or PNG), contexts ordered by
//! topology, or as JSON (the ordered matrix, its levels and their colours).

use anyhow::{Context, Result};
use topoprobe_view::heatmap;
use topoprobe_view::picture::svg_to_png;

use crate::args::{HeatmapArgs, HeatmapFormat};
use crate::output::write_to;

/// Runs the command.
pub(crate) fn run(args: &HeatmapArgs) -> Result<()> {
    let out = args.output.output.as_deref();
    let format = args.format()?;
    args.input.check_output(out)?;
    let topo = args.input.load()?;
    let bytes = match format {
        HeatmapFormat::Json => topoprobe_view::results::json(&heatmap::data(&topo))
            .context("rendering the heatmap as JSON")?
            .into_bytes(),
        HeatmapFormat::Svg => heatmap::render(&topo).into_bytes(),
        HeatmapFormat::Png => {
            svg_to_png(&heatmap::render(&topo)).context("rendering the heatmap to PNG")?
        }
    };
    write_to(out, &bytes)
}
