//! Arguments of the commands that tune running programs: `autopin` and `balance`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use topoprobe_place::Policy;
use topoprobe_tune::autopin::candidates::parse_schedule;
use topoprobe_tune::autopin::MetricChoice;

use super::parsers::{policy, seconds};
use super::placing::{skip_bits, ReportFormat, SideReport};

/// Parses a `--schedule` value (CPU of thread i at position i, colon-separated).
fn schedule(s: &str) -> Result<Vec<u32>, String> {
    parse_schedule(s).map_err(|e| e.to_string())
}

/// Parses a wait in seconds: 0 to an hour.
fn wait(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => seconds(s),
    }
}

/// `topoprobe autopin`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  \
    topoprobe autopin --schedule 0:0 --schedule 0:1 -- ./two-threads\n  \
    topoprobe autopin --policies con_hwc,rr_core --measure 5 -o result.json -- ./app\n  \
    topoprobe autopin --pid 4242 --metric cpu-time --retune-every 60\n\n\
    The program starts after -- or at the first word that is not an option; it runs in\n\
    a process group of its own (with the terminal while it runs in the foreground), and\n\
    each signal that reaches autopin is passed on to it once.\n\
    The live table and the result go to standard error (the program's output keeps\n\
    standard output); -o FILE writes the result to FILE, -o - to standard output.\n\
    Exit status: the program's (128 + the signal that killed it), or 1 when it exited 0\n\
    but nothing could be tuned; attached: 0, or 1 after an error.")]
pub(crate) struct AutopinArgs {
    /// Tune this running process (of your user) instead of starting a command.
    #[arg(long, value_name = "PID", conflicts_with = "command")]
    pub(crate) pid: Option<i32>,
    /// A candidate pinning, autopin's format: the CPU of thread i at position i,
    /// colon-separated (0:1:2:3). Repeatable.
    #[arg(long = "schedule", value_name = "CPUS", value_parser = schedule, conflicts_with = "policies")]
    pub(crate) schedules: Vec<Vec<u32>>,
    /// Candidates from these placement policies (comma-separated: con_hwc,rr_core).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = policy)]
    pub(crate) policies: Vec<Policy>,
    /// Most candidates generated from the topology.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub(crate) max_candidates: u32,
    /// Threads to plan generated candidates for (default: the program's threads at the
    /// end of the initial wait).
    #[arg(short = 'n', long = "threads", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) threads: Option<u32>,
    /// What candidates are scored by.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) metric: MetricChoice,
    /// Seconds before the first candidate (the program starts up).
    #[arg(long, value_name = "S", default_value = "1", value_parser = wait)]
    pub(crate) initial_wait: f64,
    /// Seconds of warm-up after each re-pinning.
    #[arg(long, value_name = "S", default_value = "0.5", value_parser = wait)]
    pub(crate) warmup: f64,
    /// Seconds of measurement per candidate.
    #[arg(long, value_name = "S", default_value = "2", value_parser = seconds)]
    pub(crate) measure: f64,
    /// Measure every candidate fully (no early stop of clearly worse ones).
    #[arg(long)]
    pub(crate) no_early_stop: bool,
    /// Restart the search this many seconds after the last one ended.
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub(crate) retune_every: Option<f64>,
    /// Hexadecimal mask of created threads not to pin (bit i: the i-th thread the program
    /// creates), as for `run`.
    #[arg(long, value_name = "MASK", value_parser = skip_bits)]
    pub(crate) skip: Option<u128>,
    /// Leave the program running if autopin is killed (by default the kernel ends it
    /// with autopin, even on SIGKILL).
    #[arg(long, conflicts_with = "pid")]
    pub(crate) keep_child: bool,
    #[command(flatten)]
    pub(crate) report: SideReport,
    /// A JSON description, a libmctop .mct file or a latency matrix (default: this
    /// machine's description; --schedule works without one).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
    /// The command and its arguments (after `--`, or from the first word that is not an
    /// option).
    #[arg(
        trailing_var_arg = true,
        value_name = "CMD",
        required_unless_present = "pid"
    )]
    pub(crate) command: Vec<OsString>,
}

impl SideReport {
    /// Whether the result goes to standard error as text, after the live lines (no `-o`,
    /// no JSON asked for).
    pub(crate) fn follows_live_lines(&self) -> bool {
        self.output.is_none() && !self.json && self.format != Some(ReportFormat::Json)
    }
}

/// Parses a `--name` pattern.
fn pattern(s: &str) -> Result<regex::Regex, String> {
    if s.len() > 1000 {
        return Err("--name: a pattern of at most 1000 characters".into());
    }
    regex::Regex::new(s).map_err(|e| format!("--name {s:?}: {e}"))
}

/// `topoprobe balance`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:\n  \
    topoprobe balance --pid 4242 --pid 4243 --duration 60\n  \
    topoprobe balance --name '^worker' --interval 1 --advise\n  \
    topoprobe balance --cgroup /sys/fs/cgroup/jobs/a --keep-affinity --json -o moves.json\n\n\
    A line per decision, then the result, go to standard error; -o FILE writes the\n\
    result to FILE, -o - to standard output.")]
pub(crate) struct BalanceArgs {
    /// A process to balance (of your user). Repeatable.
    #[arg(long = "pid", value_name = "PID")]
    pub(crate) pids: Vec<i32>,
    /// Processes whose command name or command line matches this regular expression
    /// (rescanned every interval).
    #[arg(long, value_name = "REGEX", value_parser = pattern)]
    pub(crate) name: Option<regex::Regex>,
    /// The processes of this cgroup directory (its cgroup.procs, read every interval).
    #[arg(long, value_name = "PATH")]
    pub(crate) cgroup: Option<PathBuf>,
    /// As root, balance other users' processes too (by default only your own are: a
    /// --pid of another user is refused, and --name or --cgroup skip theirs with a note).
    /// PID 1 is never balanced.
    #[arg(long)]
    pub(crate) any_user: bool,
    /// Seconds between two looks.
    #[arg(long, value_name = "S", default_value = "0.5", value_parser = seconds)]
    pub(crate) interval: f64,
    /// Stop after this many seconds (default: until Ctrl-C or every given process exited).
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(f64))]
    pub(crate) duration: Option<f64>,
    /// Print the moves and their reasons; apply none.
    #[arg(long)]
    pub(crate) advise: bool,
    /// Keep every thread inside the CPU mask it had when first seen (by default the
    /// balancer owns the masks; the cgroup cpuset always bounds them).
    #[arg(long)]
    pub(crate) keep_affinity: bool,
    /// Consecutive intervals a move must be called for before it is made.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) hold: u32,
    /// Most thread moves per minute.
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub(crate) max_moves: u32,
    #[command(flatten)]
    pub(crate) report: SideReport,
    /// A JSON description, a libmctop .mct file or a latency matrix (default: this
    /// machine's description; without one every CPU counts as its own core).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
}
