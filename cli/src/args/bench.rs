//! Arguments of `topoprobe bench`: the papers' experiments, one subcommand each.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use topoprobe_place::Policy;
use topoprobe_sync::{BackoffKind, LockKind};

use super::parsers::{policy, seconds};
use super::ReportOutput;

/// `topoprobe bench`.
#[derive(Debug, Clone, Args)]
pub(crate) struct BenchArgs {
    /// The experiment.
    #[command(subcommand)]
    pub(crate) experiment: Experiment,
}

/// The experiments.
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum Experiment {
    /// Lock throughput (libmctop's experiment): every lock kind with no, fixed and educated
    /// backoff, beside std, parking_lot and spin mutexes.
    ///
    /// Example: `topoprobe bench locks --threads 2 --runs 5 --json`
    Locks(LocksArgs),
    /// False sharing: threads incrementing counters 8 to 256 bytes apart; prints the
    /// padding to use.
    ///
    /// Example: `topoprobe bench false-sharing --threads 2 -o false-sharing.csv`
    FalseSharing(FalseSharingArgs),
    /// ccbench-style latency of load, store, CAS, fetch-and-increment and swap on a cache
    /// line in each state (modified, exclusive, shared, invalid) and at each distance (same
    /// core, group, socket, other socket); prints which lock suits this machine.
    ///
    /// Example: `topoprobe bench line-ops --json`
    LineOps(LineOpsArgs),
    /// Sort the same random u32 and u64 arrays with topoprobe's sort, rayon's
    /// par_sort_unstable and std's sort_unstable; every result is checked.
    ///
    /// Example: `topoprobe bench sort --size 1G --threads 2 --json`
    Sort(SortArgs),
    /// Sum every worker's vector into one along the topology's reduction tree and flat.
    ///
    /// Example: `topoprobe bench reduce --size 64M --format csv`
    Reduce(ReduceArgs),
}

/// Where the experiment runs and where its report goes (`-o FILE`, `--format`, `--json`).
#[derive(Debug, Clone, Args)]
pub(crate) struct BenchCommon {
    /// A JSON description, a libmctop .mct file or a latency matrix (default: this
    /// machine's description, made by `topoprobe infer`).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) report: ReportOutput,
}

/// `topoprobe bench locks`.
#[derive(Debug, Clone, Args)]
pub(crate) struct LocksArgs {
    #[command(flatten)]
    pub(crate) common: BenchCommon,
    /// Threads (default: every hardware context of the topology).
    #[arg(short = 'n', long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Locks; each acquisition takes one at random.
    #[arg(long, value_name = "K", default_value = "1")]
    pub(crate) locks: usize,
    /// Seconds per measurement.
    #[arg(long, value_name = "S", default_value = "1", value_parser = seconds)]
    pub(crate) duration: f64,
    /// Length of the critical section, ns.
    #[arg(long, value_name = "NS", default_value = "1000")]
    pub(crate) cs_ns: f64,
    /// Pause after each release, ns.
    #[arg(long, value_name = "NS", default_value = "100")]
    pub(crate) pause_ns: f64,
    /// Placement policy of the threads.
    #[arg(long, value_name = "POLICY", default_value = "con_core_hwc", value_parser = policy)]
    pub(crate) policy: Policy,
    /// Runs of every lock (the median is reported; runs interleave the locks).
    #[arg(long, value_name = "R", default_value = "1")]
    pub(crate) runs: usize,
    /// Only these lock kinds (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "KINDS")]
    pub(crate) kinds: Vec<LockKind>,
    /// Only these backoffs (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "BACKOFFS")]
    pub(crate) backoffs: Vec<BackoffKind>,
    /// Leave out the std, parking_lot and spin mutexes.
    #[arg(long)]
    pub(crate) no_baselines: bool,
}

/// `topoprobe bench false-sharing`.
#[derive(Debug, Clone, Args)]
pub(crate) struct FalseSharingArgs {
    #[command(flatten)]
    pub(crate) common: BenchCommon,
    /// Threads.
    #[arg(short = 'n', long, value_name = "N", default_value = "2")]
    pub(crate) threads: usize,
    /// Strides in bytes (comma-separated multiples of 8, from 8 to 65536).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "BYTES",
        default_value = "8,16,32,64,128,256"
    )]
    pub(crate) strides: Vec<usize>,
    /// Seconds per measurement.
    #[arg(long, value_name = "S", default_value = "0.2", value_parser = seconds)]
    pub(crate) duration: f64,
    /// Placement policy (the default puts threads on different cores).
    #[arg(long, value_name = "POLICY", default_value = "con_core", value_parser = policy)]
    pub(crate) policy: Policy,
    /// Runs of every stride (the median is reported).
    #[arg(long, value_name = "R", default_value = "5")]
    pub(crate) runs: usize,
}

/// `topoprobe bench line-ops`.
#[derive(Debug, Clone, Args)]
pub(crate) struct LineOpsArgs {
    #[command(flatten)]
    pub(crate) common: BenchCommon,
    /// Rounds per operation, state and distance (the median is reported; 1 to 100000).
    #[arg(long, value_name = "R", default_value = "200")]
    pub(crate) rounds: usize,
    /// The measuring CPU, one of the topology's (default: the topology's first).
    #[arg(long, value_name = "CPU")]
    pub(crate) cpu: Option<u32>,
    /// The lines' home node: `owner` (the writer's node), `reader` (the measuring CPU's),
    /// or a node number (default: not bound, the kernel's first-touch policy).
    #[arg(long, value_name = "HOME", value_parser = parse_home)]
    pub(crate) home: Option<topoprobe_sync::bench::line_ops::Home>,
}

/// Parses `--home`: `owner`, `reader` or a node number.
fn parse_home(s: &str) -> Result<topoprobe_sync::bench::line_ops::Home, String> {
    use topoprobe_sync::bench::line_ops::Home;
    match s {
        "owner" | "writer" => Ok(Home::Owner),
        "reader" => Ok(Home::Reader),
        _ => s
            .parse::<u32>()
            .map(Home::Node)
            .map_err(|_| format!("{s:?} is not a home: give owner, reader or a node number")),
    }
}

/// `topoprobe bench sort`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SortArgs {
    #[command(flatten)]
    pub(crate) common: BenchCommon,
    /// Bytes of each array (u32 and u64 keys), from 8 bytes to 64G: 4096, 64M, 1G...
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = super::parsers::parse_size)]
    pub(crate) size: u64,
    /// Threads of the parallel sorts (default: every hardware context).
    #[arg(short = 'n', long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Runs of every sort (the median is reported; runs interleave the algorithms).
    #[arg(long, value_name = "R", default_value = "5")]
    pub(crate) runs: usize,
    /// Seed of the random keys.
    #[arg(long, value_name = "SEED", default_value = "42")]
    pub(crate) seed: u64,
    /// Memory the experiment may hold at once, e.g. 4G (default: half of the memory
    /// available now); a --size that needs more (three arrays of it) is refused with the
    /// budget that would fit.
    #[arg(long, value_name = "SIZE", value_parser = super::parsers::parse_size)]
    pub(crate) max_memory: Option<u64>,
}

/// `topoprobe bench reduce`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ReduceArgs {
    #[command(flatten)]
    pub(crate) common: BenchCommon,
    /// Bytes of each worker's vector, from 8 bytes to 16G.
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = super::parsers::parse_size)]
    pub(crate) size: u64,
    /// Workers (default: every hardware context).
    #[arg(short = 'n', long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Placement policy of the workers.
    #[arg(long, value_name = "POLICY", default_value = "rr_core", value_parser = policy)]
    pub(crate) policy: Policy,
    /// Runs (the median is reported).
    #[arg(long, value_name = "R", default_value = "5")]
    pub(crate) runs: usize,
    /// Memory the experiment may hold at once, e.g. 4G (default: half of the memory
    /// available now); a --size that needs more (a vector per worker and one more) is
    /// refused with the budget that would fit.
    #[arg(long, value_name = "SIZE", value_parser = super::parsers::parse_size)]
    pub(crate) max_memory: Option<u64>,
}
