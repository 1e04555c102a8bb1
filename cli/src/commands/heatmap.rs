//! `topoprobe heatmap`: the latency matrix as a picture, contexts ordered by topology.

use anyhow::{Context, Result};
use topoprobe_view::heatmap;
use topoprobe_view::picture::{svg_to_png, Picture};

use crate::args::HeatmapArgs;
use crate::error::usage_error;
use crate::output::write_to;

/// Runs the command.
pub(crate) fn run(args: &HeatmapArgs) -> Result<()> {
    let picture = match &args.output {
        Some(p) => Picture::of_path(p).unwrap_or_else(|| {
            usage_error(&format!(
                "{}: the heatmap is written as .svg or .png",
                p.display()
            ))
        }),
        None => Picture::Svg,
    };
    let topo = args.input.load()?;
    let svg = heatmap::render(&topo);
    let bytes = match picture {
        Picture::Svg => svg.into_bytes(),
        Picture::Png => svg_to_png(&svg).context("rendering the heatmap to PNG")?,
    };
    write_to(args.output.as_deref(), &bytes)
}
