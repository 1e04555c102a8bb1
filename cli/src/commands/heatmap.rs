//! `topoprobe heatmap`: the latency matrix as a picture (SVG or PNG), contexts ordered by
//! topology, or as JSON (the ordered matrix, its levels and their colours).

use anyhow::{Context, Result};
use topoprobe_view::heatmap;
use topoprobe_view::picture::svg_to_png;

use crate::args::{HeatmapArgs, HeatmapFormat};
use crate::output::{choose, write_to, Formats, Kind};

impl Formats for HeatmapFormat {
    const DEFAULT: Self = Self::Svg;
    const JSON: Self = Self::Json;
    fn of_kind(kind: Kind) -> Option<Self> {
        match kind {
            Kind::Svg => Some(Self::Svg),
            Kind::Png => Some(Self::Png),
            Kind::Json => Some(Self::Json),
            _ => None,
        }
    }
}

/// Runs the command.
pub(crate) fn run(args: &HeatmapArgs) -> Result<()> {
    let out = args.output.as_deref();
    let format = choose(args.flag(), args.json, out)?;
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
