//! Arguments of `topoprobe cpus`: resolve CPU-set expressions, as `hwloc-calc` does.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use topoprobe_place::cpuset::ObjectType;

use crate::output::{Formats, Kind, OutputArgs};

/// Parses an object type (`core`, `package`, `l3cache`...).
fn object_type(s: &str) -> Result<ObjectType, String> {
    s.parse::<ObjectType>().map_err(|e| e.to_string())
}

/// Output forms of `cpus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CpusFormat {
    /// A Linux CPU list, ascending: `0-3,8` (taskset -c, numactl, --cpus).
    List,
    /// One hexadecimal mask: `0x3c0f` (as `place --format mask`).
    Mask,
    /// hwloc's CPU-set string, 32-bit words: `0x00003c0f` (as hwloc-calc prints).
    Hwloc,
    /// The CPUs in the expression's order, comma-separated (likwid-pin -c, GOMP_CPU_AFFINITY).
    Likwid,
    /// The CPUs, their order, the forms above and what was counted, as JSON.
    Json,
}

impl Formats for CpusFormat {
    const DEFAULT: Self = Self::List;
    const JSON: Self = Self::Json;
    const FORMAT_HELP: &'static str =
        "Output form (default: from the extension of -o FILE, .json or .txt, else list)";
    fn of_kind(kind: Kind) -> Option<Self> {
        match kind {
            Kind::Text => Some(Self::List),
            Kind::Json => Some(Self::Json),
            _ => None,
        }
    }
}

/// `topoprobe cpus`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CpusArgs {
    /// The CPU set: CPU lists (`0-3,8`), masks (`0x3c0f`), hwloc-calc's locations
    /// (`package:1.core:0-3`, `node:0`, `l3cache:2`, `pu:5`, `all`), likwid's domains
    /// (`S1:0-3`, `N:0-7`, `C0:`, `M1:`, `E:S0:4:1:2`, `S0:0-1@S1:0-1`); several are
    /// combined left to right: a space adds, `~` removes, `x` intersects, `^` toggles.
    #[arg(required = true, value_name = "EXPR")]
    pub(crate) expr: Vec<String>,
    /// Print how many objects of TYPE (core, package, pu, node, l3cache...) hold a CPU
    /// of the set, as `hwloc-calc --number-of`.
    #[arg(short = 'N', long, value_name = "TYPE", value_parser = object_type)]
    pub(crate) number_of: Option<ObjectType>,
    /// Print the logical indexes of the objects of TYPE that hold a CPU of the set, as
    /// `hwloc-calc --intersect`.
    #[arg(short = 'I', long, value_name = "TYPE", value_parser = object_type, conflicts_with = "number_of")]
    pub(crate) intersect: Option<ObjectType>,
    /// A JSON description, a libmctop .mct file, a latency matrix, or a directory holding
    /// a machine's sysfs (`/` is this machine's; hwloc-gather-topology captures others).
    /// Default: this machine's description when `topoprobe infer` has saved one, else the
    /// operating system's view of this machine.
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) output: OutputArgs<CpusFormat>,
}
