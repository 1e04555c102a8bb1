//! Arguments of the commands that show a topology: `show`, `heatmap`, `report`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{Hints, Output};
use crate::error::Usage;
use crate::output::{Formats, OutputArgs};
use topoprobe_view::color::ColorWhen;

/// `topoprobe show`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ShowArgs {
    #[command(flatten)]
    pub(crate) input: Input,
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    pub(crate) view: ViewArgs,
}

/// Options of the views of `show`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ViewArgs {
    /// Text view: one line per core and context, provenance, every memory and power figure.
    #[arg(short, long)]
    pub(crate) verbose: bool,
    /// Text view: colour (auto: on a terminal, unless NO_COLOR is set).
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub(crate) color: ColorWhen,
    /// With --format dot: render the graphs to SVG with Graphviz.
    #[arg(long, conflicts_with = "png")]
    pub(crate) svg: bool,
    /// With --format dot: render the graphs to PNG with Graphviz.
    #[arg(long)]
    pub(crate) png: bool,
    /// With --format dot: the socket of the intra-socket graph.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) socket: usize,
}

/// Where the topology of `show`, `heatmap` and `report` comes from.
#[derive(Debug, Clone, Args)]
pub(crate) struct Input {
    /// A JSON description, a libmctop .mct file or a latency matrix (default: this
    /// machine's description, as `topoprobe infer` saved it).
    #[arg(long, value_name = "FILE", conflicts_with = "from_matrix")]
    pub(crate) topology: Option<PathBuf>,
    /// A latency-matrix CSV, whose topology is inferred (--units, --sockets, --smt and --ghz
    /// guide the inference).
    #[arg(long, value_name = "FILE")]
    pub(crate) from_matrix: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) hints: Hints,
}
/// `topoprobe heatmap`.
#[derive(Debug, Clone, Args)]
pub(crate) struct HeatmapArgs {
    #[command(flatten)]
    pub(crate) input: Input,
    #[command(flatten)]
    pub(crate) output: OutputArgs<HeatmapFormat>,
    /// Shorthand for `--format svg`.
    #[arg(long, conflicts_with_all = ["format", "json", "png"])]
    pub(crate) svg: bool,
    /// Shorthand for `--format png` (rendered with resvg).
    #[arg(long, conflicts_with_all = ["format", "json"])]
    pub(crate) png: bool,
}

/// What `topoprobe heatmap` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HeatmapFormat {
    /// An SVG picture.
    Svg,
    /// A PNG picture (the SVG rendered with resvg).
    Png,
    /// The matrix in drawing order, its latency levels and their colours, as JSON.
    Json,
}

impl Formats for HeatmapFormat {
    const DEFAULT: Self = Self::Svg;
    const JSON: Self = Self::Json;
    const FORMAT_HELP: &'static str =
        "Output format (default: from the extension of -o FILE — .svg, .png, .json — else svg)";
    const JSON_HELP: &'static str =
        "Shorthand for `--format json`: the ordered matrix, its levels and their colours";
}

impl HeatmapArgs {
    /// The chosen format: as every command's ([`OutputArgs::format`]), `--svg` and `--png`
    /// standing for `--format svg` and `--format png`.
    ///
    /// # Errors
    ///
    /// A usage error when the extension of the file names another format.
    pub(crate) fn format(&self) -> Result<HeatmapFormat, Usage> {
        let flag = match (self.svg, self.png) {
            (true, _) => Some(HeatmapFormat::Svg),
            (_, true) => Some(HeatmapFormat::Png),
            _ => self.output.format,
        };
        OutputArgs {
            format: flag,
            ..self.output.clone()
        }
        .format()
    }
}

/// `topoprobe report`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ReportArgs {
    #[command(flatten)]
    pub(crate) input: Input,
    #[command(flatten)]
    pub(crate) output: OutputArgs<ReportFormat>,
}

/// What `topoprobe report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    /// One self-contained HTML page.
    Html,
    /// The JSON description the page shows (topoprobe/1).
    Json,
}

impl Formats for ReportFormat {
    const DEFAULT: Self = Self::Html;
    const JSON: Self = Self::Json;
    const FORMAT_HELP: &'static str =
        "Output format (default: from the extension of -o FILE — .html, .json — else html)";
    const JSON_HELP: &'static str = "Shorthand for `--format json`: the description the page shows";
}
