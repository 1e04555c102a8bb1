//! Arguments of the commands that place threads: `place` and `run`.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use topoprobe_place::{CoreKind, Policy};

use super::parsers::{kind, policy, skip_mask};

/// What to place and on which topology (shared by `place` and `run`).
#[derive(Debug, Clone, Args)]
pub(crate) struct PlacementArgs {
    /// Placement policy: none, sequential, con_hwc, con_core_hwc, con_core, balance_hwc,
    /// balance_core_hwc, balance_core, rr_hwc, rr_core, power, rr_scale (case and - or _
    /// do not matter).
    #[arg(long, value_name = "POLICY", value_parser = policy)]
    pub(crate) policy: Policy,
    /// Number of threads (default: every usable context; rr_scale: as many as saturate
    /// the sockets' memory bandwidth).
    #[arg(short = 'n', long = "threads", value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Number of sockets to use (default: as many as the threads need; round-robin
    /// policies: all). `--sockets` is accepted too.
    #[arg(long = "use-sockets", alias = "sockets", value_name = "S")]
    pub(crate) sockets: Option<usize>,
    /// Only cores of this kind on a hybrid processor: p (performance) or e (efficiency).
    #[arg(long, value_name = "p|e", value_parser = kind)]
    pub(crate) kind: Option<CoreKind>,
    /// Only these CPUs (Linux list syntax, `0-7,16-23`).
    #[arg(long, value_name = "LIST")]
    pub(crate) cpus: Option<String>,
    /// A JSON description, a libmctop .mct file or a latency matrix (default: this
    /// machine's description, made by `topoprobe infer`).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
}
/// Output forms of a placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PlaceFormat {
    /// CPU numbers in placement order, comma-separated.
    List,
    /// Hexadecimal CPU mask.
    Mask,
    /// A `taskset -c LIST` prefix.
    Taskset,
    /// A `numactl --physcpubind=LIST [--membind=NODES]` prefix.
    Numactl,
    /// OMP_NUM_THREADS, OMP_PLACES and OMP_PROC_BIND, one NAME=value per line.
    Omp,
    /// A `likwid-pin -c LIST` prefix.
    Likwid,
    /// A `hwloc-bind --physical pu:N ...` prefix.
    Hwloc,
    /// An Open MPI rankfile: rank i on the i-th CPU (physical numbers).
    Rankfile,
    /// Slurm's `--cpu-bind=map_cpu:LIST` (rank i on the i-th CPU).
    Slurm,
    /// Slurm's `--cpu-bind=mask_cpu:MASKS` (one mask per rank).
    SlurmMask,
    /// Intel MPI's `I_MPI_PIN_PROCESSOR_LIST=LIST`.
    IntelMpi,
    /// The placement, every thread's place and the summary, as JSON.
    Json,
}
/// `topoprobe place`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PlaceArgs {
    #[command(flatten)]
    pub(crate) placement: PlacementArgs,
    /// Output form.
    #[arg(long, value_enum, default_value = "list")]
    pub(crate) format: PlaceFormat,
    /// Do not print the summary on standard error.
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// Memory policy of the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Mem {
    /// Memory on the node of the CPU that first touches it (`numactl --localalloc`).
    Local,
    /// Interleaved over the nodes of the placement's CPUs (`numactl --interleave`).
    Interleave,
    /// The kernel's default; nothing is set.
    None,
}
/// `topoprobe run`.
#[derive(Debug, Clone, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) placement: PlacementArgs,
    /// Memory policy.
    #[arg(long, value_enum, default_value = "local")]
    pub(crate) mem: Mem,
    /// Hexadecimal mask of created threads not to pin (bit i: the i-th thread the program
    /// creates, from 0), like likwid-pin -s: they may run on any CPU of the placement.
    #[arg(long, value_name = "MASK", value_parser = skip_mask)]
    pub(crate) skip: Option<String>,
    /// Print the placement's summary on standard error first.
    #[arg(short, long)]
    pub(crate) verbose: bool,
    /// Let the command run on when topoprobe itself is killed (by default the kernel ends
    /// it with SIGKILL then: PR_SET_PDEATHSIG).
    #[arg(long)]
    pub(crate) keep_child: bool,
    /// The command and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub(crate) command: Vec<OsString>,
}
