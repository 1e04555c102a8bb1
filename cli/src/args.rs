//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use topoprobe_infer::InferOptions;
use topoprobe_model::LatencyUnit;

/// Measure a multi-core machine's topology instead of trusting the OS.
///
/// topoprobe infers hardware contexts, cores, groups (CCX, clusters, dies), sockets and
/// their latencies from core-to-core latency measurements, and stores them in a
/// description file that placement, pinning and tuning use.
#[derive(Debug, Parser)]
#[command(name = "topoprobe", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Measure this machine (or read a latency matrix or libmctop file), infer its topology
    /// and print or save it.
    Infer(InferArgs),
    /// Show a topology from a description, a libmctop file or a latency matrix.
    Show(ShowArgs),
    /// Measure and print the core-to-core latency matrix of this machine.
    Matrix(MatrixArgs),
    /// Measure the latency between two hardware contexts and print its statistics.
    Latency(LatencyArgs),
    /// Measure cache sizes and latencies (and with --shared, which contexts share them).
    Cache(crate::commands::cache::CacheArgs),
    /// Measure memory latency and read/write/copy bandwidth from every socket to every node.
    Mem(crate::commands::mem::MemArgs),
    /// Measure memory-access overhead groups (pairs copying together) and how bandwidth
    /// scales with threads.
    Contention(crate::commands::contention::ContentionArgs),
    /// Draw the latency matrix as a heatmap (SVG or PNG), contexts ordered by topology.
    Heatmap(crate::commands::heatmap::HeatmapArgs),
    /// Write a self-contained HTML report of a topology.
    Report(crate::commands::report::ReportArgs),
    /// Print where a placement policy puts threads (a CPU list, a mask, taskset, numactl,
    /// OpenMP or likwid-pin arguments, or JSON), with its summary on standard error.
    Place(crate::commands::place::PlaceArgs),
    /// Run a command with every thread it creates pinned by a placement policy, the main
    /// thread first; exits with the command's status.
    Run(crate::commands::run::RunArgs),
    /// Measure the power of every socket (RAPL) when idle, with one context, a second core,
    /// a second context, all cores and all contexts busy.
    Power(crate::commands::power::PowerArgs),
}

/// Unit of latencies on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Units {
    /// Nanoseconds.
    Ns,
    /// Cycles.
    Cycles,
}

impl From<Units> for LatencyUnit {
    fn from(u: Units) -> Self {
        match u {
            Units::Ns => Self::Ns,
            Units::Cycles => Self::Cycles,
        }
    }
}

/// A yes/no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum YesNo {
    /// Yes.
    Yes,
    /// No.
    No,
}

/// Output formats of a topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
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
    /// hwloc v2 XML, with the latency matrix as distances (lstopo --input FILE.xml).
    HwlocXml,
}

/// Hints for inference: every one is optional, and the output says which values were given.
#[derive(Debug, Clone, Args)]
pub(crate) struct Hints {
    /// Unit of the latencies in a matrix file.
    #[arg(long, value_enum, default_value = "ns")]
    pub(crate) units: Units,
    /// Number of sockets, when known (otherwise inferred).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) sockets: Option<u32>,
    /// Whether the machine has SMT, when known (otherwise inferred).
    #[arg(long, value_enum, value_name = "yes|no")]
    pub(crate) smt: Option<YesNo>,
    /// Clock frequency in GHz, to turn the physical bounds of the SMT and socket decisions
    /// into cycles (default 2.5), and ns into the cycles of a .mct file.
    #[arg(long, value_name = "GHZ", value_parser = positive)]
    pub(crate) ghz: Option<f64>,
}

impl Hints {
    /// The inference options these hints describe.
    pub(crate) fn options(&self) -> InferOptions {
        InferOptions {
            units: self.units.into(),
            sockets: self.sockets.map(|s| s as usize),
            smt: self.smt.map(|s| s == YesNo::Yes),
            ghz: self.ghz,
            ..InferOptions::default()
        }
    }
}

/// Parses a finite, positive number.
fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

/// Where and how to write a topology.
#[derive(Debug, Clone, Args)]
pub(crate) struct Output {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
    /// Shorthand for `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub(crate) json: bool,
    /// Write to FILE (atomically) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

impl Output {
    /// The chosen format.
    pub(crate) fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
}

/// How to measure this machine.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct Measure {
    /// CPUs to measure, in Linux list syntax (`0-7,16-23`); default: every CPU this process
    /// may run on.
    #[arg(long, value_name = "LIST")]
    pub(crate) cpus: Option<String>,
    #[command(flatten)]
    pub(crate) repetitions: Repetitions,
    /// Measure every pair, instead of the pairs needed to infer the structure.
    #[arg(long)]
    pub(crate) full: bool,
    /// Seed of the random choices (verification pairs), for a reproducible run.
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
}

/// How much to repeat the measurement of a pair.
#[derive(Debug, Clone, Copy, Default, Args)]
pub(crate) struct Repetitions {
    /// Samples per batch of a pair (default 25).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(3..=100_000))]
    pub(crate) reps: Option<u32>,
    /// Largest relative spread of a pair's samples, in percent (default 7; raised on each
    /// retry, up to twice as much).
    #[arg(long, value_name = "PERCENT", value_parser = positive)]
    pub(crate) max_stdev: Option<f64>,
}

impl Measure {
    /// Whether any measurement option was given.
    pub(crate) fn any(&self) -> bool {
        self.cpus.is_some()
            || self.repetitions.reps.is_some()
            || self.repetitions.max_stdev.is_some()
            || self.full
            || self.seed.is_some()
    }
}

/// `topoprobe infer`.
#[derive(Debug, Clone, Args)]
pub(crate) struct InferArgs {
    /// Infer from a latency-matrix CSV (N lines of N values; a lower or upper triangle is
    /// mirrored; core-to-core-latency's --csv output works as is).
    #[arg(long, value_name = "FILE", conflicts_with = "from_mct")]
    pub(crate) from_matrix: Option<PathBuf>,
    /// Infer from a libmctop .mct file (its #Nodes and SMT flag are used as hints).
    #[arg(long, value_name = "FILE")]
    pub(crate) from_mct: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) measure: Measure,
    /// Measurements added to the description, comma-separated: cache, shared-caches, mem,
    /// mem-latency, contention, power; `all` or `none` (default: cache,mem,power, a few
    /// seconds).
    #[arg(long, value_name = "LIST", value_parser = crate::plugins::check)]
    pub(crate) plugins: Option<String>,
    #[command(flatten)]
    pub(crate) hints: Hints,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `topoprobe matrix`.
#[derive(Debug, Clone, Args)]
pub(crate) struct MatrixArgs {
    /// Print CSV (N lines of N values in ns, diagonal empty: core-to-core-latency's
    /// layout, full square) instead of a table.
    #[arg(long)]
    pub(crate) csv: bool,
    #[command(flatten)]
    pub(crate) measure: Measure,
    /// Write to FILE (atomically) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

/// `topoprobe latency`.
#[derive(Debug, Clone, Args)]
pub(crate) struct LatencyArgs {
    /// First hardware context (OS CPU number); it owns the cache line.
    pub(crate) a: u32,
    /// Second hardware context (OS CPU number).
    pub(crate) b: u32,
    #[command(flatten)]
    pub(crate) repetitions: Repetitions,
    /// Also run the SMT probe on the pair (slowdown of two compute-bound threads).
    #[arg(long)]
    pub(crate) smt: bool,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `topoprobe show`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ShowArgs {
    /// A JSON description, a libmctop .mct file or a latency matrix.
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: PathBuf,
    #[command(flatten)]
    pub(crate) hints: Hints,
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    pub(crate) view: crate::commands::show::ViewArgs,
}
