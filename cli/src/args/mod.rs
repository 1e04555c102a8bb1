//! Every command-line argument of `topoprobe`: the clap types of all commands and their
//! value parsers ([`parsers`]). Command modules read these types; nothing here measures or
//! loads anything.

use clap::{Args, Parser, Subcommand, ValueEnum};
use topoprobe_infer::InferOptions;
use topoprobe_model::LatencyUnit;

pub(crate) mod bench;
mod cpus;
mod examples;
mod measuring;
mod os;
mod packaging;
pub(crate) mod parsers;
mod placing;
mod topology;
mod tuning;
mod views;

pub(crate) use cpus::{CpusArgs, CpusFormat};
pub(crate) use measuring::{
    CacheArgs, ContentionArgs, InferArgs, LatencyArgs, MatrixArgs, MemArgs, PowerArgs,
    ReportOutput, ResultFormat,
};
pub(crate) use os::OsArgs;
pub(crate) use packaging::{CompletionsArgs, FileArgumentsArgs, ManpagesArgs};
pub(crate) use parsers::PinList;
pub(crate) use placing::{PlaceArgs, PlaceFormat, PlacementArgs, RunArgs};
pub(crate) use topology::{Format, Output};
pub(crate) use tuning::{AutopinArgs, BalanceArgs};
pub(crate) use views::{HeatmapArgs, HeatmapFormat, Input, ReportArgs, ReportFormat, ShowArgs};

/// Measure a multi-core machine's topology instead of trusting the OS.
///
/// topoprobe infers hardware contexts, cores, groups (CCX, clusters, dies), sockets and
/// their latencies from core-to-core latency measurements, and stores them in a
/// description file that placement, pinning and tuning use.
#[derive(Debug, Parser)]
#[command(name = "topoprobe", version = VERSION, propagate_version = true, after_help = examples::TOP)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// What `--version` prints after the name: the version, then the commit, profile,
/// features and target of the build (cli/build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TOPOPROBE_BUILD_INFO"),
    ")"
);

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Measure this machine (or read a latency matrix or libmctop file), infer its topology
    /// and print or save it.
    #[command(after_help = examples::INFER)]
    Infer(InferArgs),
    /// Show a topology from a description, a libmctop file or a latency matrix (default: this
    /// machine's description).
    #[command(after_help = examples::SHOW)]
    Show(ShowArgs),
    /// Measure and print the core-to-core latency matrix of this machine.
    #[command(after_help = examples::MATRIX)]
    Matrix(MatrixArgs),
    /// Measure the latency between two hardware contexts and print its statistics.
    #[command(after_help = examples::LATENCY)]
    Latency(LatencyArgs),
    /// Measure cache sizes and latencies (and with --shared, which contexts share them).
    #[command(after_help = examples::CACHE)]
    Cache(CacheArgs),
    /// Measure memory latency and read/write/copy bandwidth from every socket to every node.
    #[command(after_help = examples::MEM)]
    Mem(MemArgs),
    /// Measure memory-access overhead groups (pairs copying together) and how bandwidth
    /// scales with threads.
    #[command(after_help = examples::CONTENTION)]
    Contention(ContentionArgs),
    /// Draw the latency matrix as a heatmap (SVG or PNG; or its data as JSON), contexts
    /// ordered by topology.
    #[command(after_help = examples::HEATMAP)]
    Heatmap(HeatmapArgs),
    /// Write a self-contained HTML report of a topology.
    #[command(after_help = examples::REPORT)]
    Report(ReportArgs),
    /// Print where a placement policy puts threads (a CPU list, a mask, taskset, numactl,
    /// OpenMP or likwid-pin arguments, or JSON), with its summary on standard error.
    #[command(after_help = examples::PLACE)]
    Place(PlaceArgs),
    /// Print the CPUs a set names — CPU lists, masks, hwloc-calc's locations
    /// (`package:1.core:0-3`), likwid's domains (`S1:0-3`), set arithmetic — or count the
    /// objects they touch (like hwloc-calc).
    #[command(after_help = examples::CPUS)]
    Cpus(CpusArgs),
    /// Print what the operating system says about a machine — packages, dies, clusters,
    /// cores, CPUs, caches and who shares them, NUMA nodes, offline and disallowed CPUs — of
    /// this machine, a sysfs root or a hwloc-gather-topology capture (like lstopo).
    #[command(after_help = examples::OS)]
    Os(OsArgs),
    /// Run a command with every thread it creates pinned by a placement policy, the main
    /// thread first; exits with the command's status.
    #[command(after_help = examples::RUN)]
    Run(RunArgs),
    /// Measure the power of every socket (RAPL) when idle, with one context, a second core,
    /// a second context, all cores and all contexts busy.
    #[command(after_help = examples::POWER)]
    Power(PowerArgs),
    /// Find the best pinning of a program by trying candidate pinnings from the topology
    /// on it while it runs, then keep it (autopin); exits with the program's status.
    Autopin(AutopinArgs),
    /// Monitor running processes and move their threads to less loaded CPUs, cores,
    /// caches or nodes of the topology (or, with --advise, say which moves would help).
    Balance(BalanceArgs),
    /// Run one of the papers' experiments on this machine (locks, false sharing, cache-line
    /// operations), with the strongest alternatives in the same run.
    Bench(bench::BenchArgs),
    /// Print the completion script of a shell (bash, zsh, fish, elvish, powershell).
    #[command(after_help = examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Write the man pages (topoprobe.1 and one per command) into a directory.
    #[command(hide = true)]
    Manpages(ManpagesArgs),
    /// Print every argument of every command that takes a file or folder, as JSON lines
    /// (found from these very definitions: a path value or a file or folder hint).
    #[command(hide = true)]
    FileArguments(FileArgumentsArgs),
}

/// A yes/no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum YesNo {
    /// Yes.
    Yes,
    /// No.
    No,
}

/// Hints for inference: every one is optional, and the output says which values were given.
#[derive(Debug, Clone, Args)]
pub(crate) struct Hints {
    /// Unit of the latencies in a matrix file.
    #[arg(long, value_enum, default_value = "ns")]
    pub(crate) units: LatencyUnit,
    /// Number of sockets, when known (otherwise inferred).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) sockets: Option<u32>,
    /// Whether the machine has SMT, when known (otherwise inferred).
    #[arg(long, value_enum, value_name = "yes|no")]
    pub(crate) smt: Option<YesNo>,
    /// Clock frequency in GHz, to turn the physical bounds of the SMT and socket decisions
    /// into cycles (default 2.5), and ns into the cycles of a .mct file.
    #[arg(long, value_name = "GHZ", value_parser = parsers::ghz)]
    pub(crate) ghz: Option<f64>,
}

impl Hints {
    /// The inference options these hints describe.
    pub(crate) fn options(&self) -> InferOptions {
        InferOptions {
            units: self.units,
            sockets: self.sockets.map(|s| s as usize),
            smt: self.smt.map(|s| s == YesNo::Yes),
            ghz: self.ghz,
            ..InferOptions::default()
        }
    }
}
