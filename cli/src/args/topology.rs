//! Where and how `infer` and `show` write a topology: its formats ([`Format`]) and their
//! output options ([`Output`]).

use clap::ValueEnum;

use crate::output::{Formats, Kind, OutputArgs};

/// Output formats of a topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// The latency matrix as CSV (what `topoprobe matrix` writes).
    Csv,
    /// The text view: a tree with the latency of every level.
    Text,
    /// The JSON description (topoprobe/1).
    Json,
    /// The partition TSV (cpu, core, socket, node, groups).
    Tsv,
    /// libmctop's .mct format.
    Mct,
    /// Graphviz graphs: intra-socket and cross-socket (render with --svg or --png).
    Dot,
    /// hwloc v2 XML, with caches, the latency matrix as distances and the memory
    /// latency and bandwidth as memory attributes (lstopo --input FILE.xml).
    HwlocXml,
    /// A shell script that adds the latency matrix and memory figures to lstopo's own
    /// XML of the measured machine with hwloc-annotate (sh FILE.sh IN.xml OUT.xml).
    HwlocAnnotate,
}

/// Where and how to write a topology (`infer`, `show`).
pub(crate) type Output = OutputArgs<Format>;

impl Formats for Format {
    const DEFAULT: Self = Self::Text;
    const JSON: Self = Self::Json;
    const FORMAT_HELP: &'static str = "Output format (default: from the extension of -o FILE — \
                                       .json, .csv, .tsv, .mct, .dot, .xml, .txt — else text)";
    fn of_kind(kind: Kind) -> Option<Self> {
        Some(match kind {
            Kind::Text => Self::Text,
            Kind::Json => Self::Json,
            Kind::Csv => Self::Csv,
            Kind::Tsv => Self::Tsv,
            Kind::Mct => Self::Mct,
            Kind::Dot => Self::Dot,
            Kind::Xml => Self::HwlocXml,
            // The graphs of `--format dot`, rendered by Graphviz.
            Kind::Svg | Kind::Png => Self::Dot,
            Kind::Html => return None,
        })
    }
}
