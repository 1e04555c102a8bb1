//! `topoprobe heatmap`: the latency matrix as a picture, contexts ordered by topology.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use topoprobe_infer::{infer, load_topology};
use topoprobe_model::format::csv;
use topoprobe_model::{Source, Topology};
use topoprobe_view::heatmap;
use topoprobe_view::picture::{svg_to_png, Picture};

use crate::args::Hints;
use crate::commands::infer::stamp;
use crate::commands::show::usage_error;
use crate::output::write_to;

/// Where a view's topology comes from.
#[derive(Debug, Clone, Args)]
pub(crate) struct Input {
    /// A JSON description, a libmctop .mct file or a latency matrix (default: this
    /// machine's description, as `topoprobe infer` saved it).
    #[arg(long, value_name = "FILE", conflicts_with = "from_matrix")]
    pub(crate) topology: Option<PathBuf>,
    /// A latency-matrix CSV: its topology is inferred to order the contexts.
    #[arg(long, value_name = "FILE")]
    pub(crate) from_matrix: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) hints: Hints,
}

impl Input {
    /// Loads (or infers) the topology.
    ///
    /// # Errors
    ///
    /// Fails when the file cannot be read or parsed, inference fails, or (without a file)
    /// this machine has no readable description.
    pub(crate) fn load(&self) -> Result<Topology> {
        let started = Instant::now();
        let mut topo = match (&self.topology, &self.from_matrix) {
            (Some(p), _) => load_topology(p, &self.hints.options())?,
            (None, Some(p)) => from_matrix(p, &self.hints)?,
            (None, None) => crate::machine::topology(None)?,
        };
        if topo.provenance().created.is_none() {
            stamp(&mut topo, started);
        }
        Ok(topo)
    }
}

fn from_matrix(path: &Path, hints: &Hints) -> Result<Topology> {
    let m = csv::read_matrix(path)?;
    let mut opts = hints.options();
    opts.source = Source::Matrix {
        path: path.display().to_string(),
    };
    infer(&m, &opts).with_context(|| format!("inferring the topology of {}", path.display()))
}

/// `topoprobe heatmap`.
#[derive(Debug, Clone, Args)]
pub(crate) struct HeatmapArgs {
    #[command(flatten)]
    pub(crate) input: Input,
    /// Write to FILE: .svg, or .png (rendered with resvg); default: SVG on standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

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
