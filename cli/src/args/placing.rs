//! Arguments of the commands that place threads: `place` and `run`; and where the report
//! of a command that runs a program goes (`run`, `autopin`, `balance`: [`SideReport`],
//! standard error unless `-o` says otherwise, since the program's output is on standard
//! output).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::LazyLock;

use anyhow::Context;
use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};
use topoprobe_place::launch::Memory;
use topoprobe_place::{CoreKind, Policy};
use topoprobe_view::results::placement::Form;
use topoprobe_view::results::Rendered;

use super::parsers::{kind, pin_list, policy, skip_mask, PinList};
use crate::output::{write_to, Formats, Kind, OutputArgs};

/// Parses a `--skip` mask (hexadecimal, `0x1`) into its bits.
pub(crate) fn skip_bits(s: &str) -> Result<u128, String> {
    let mask = skip_mask(s)?;
    let hex = mask.trim_start_matches("0x");
    u128::from_str_radix(hex, 16).map_err(|e| format!("--skip {s:?}: {e}"))
}

/// What to place and on which topology (shared by `place` and `run`).
#[derive(Debug, Clone, Args)]
pub(crate) struct PlacementArgs {
    /// Placement policy: none, sequential, con_hwc, con_core_hwc, con_core, balance_hwc,
    /// balance_core_hwc, balance_core, rr_hwc, rr_core, power, rr_scale, scatter (case and -
    /// or _ do not matter).
    #[arg(long, value_name = "POLICY", value_parser = policy, required_unless_present = "pin", conflicts_with = "pin")]
    pub(crate) policy: Option<Policy>,
    /// Thread i on the i-th CPU of this list, in its order (`3,1,2`; ranges `4-7`; a CPU
    /// may repeat), like `likwid-pin -c`, or of a CPU set named by the topology in the
    /// order it names them (`S0:0-3@S1:0-3`, `package:1.core:all`); instead of --policy.
    #[arg(long, value_name = "LIST", value_parser = pin_list, conflicts_with_all = ["cpus", "kind", "sockets"])]
    pub(crate) pin: Option<PinList>,
    /// Number of threads (default: every usable context; rr_scale: as many as saturate
    /// the sockets' memory bandwidth).
    #[arg(short = 'n', long = "threads", value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Use this many sockets (default: as many as the threads need; round-robin policies:
    /// all). Not to be confused with `infer --sockets N`, a hint that the machine has N.
    #[arg(long = "use-sockets", value_name = "N")]
    pub(crate) sockets: Option<usize>,
    /// Only cores of this kind on a hybrid processor: p (performance) or e (efficiency).
    #[arg(long, value_name = "p|e", value_parser = kind)]
    pub(crate) kind: Option<CoreKind>,
    /// Only these CPUs: a list (`0-7,16-23`), a mask (`0x3c0f`), hwloc-calc's locations
    /// (`package:1.core:0-3`, `node:0`), likwid's domains (`S1:0-3`) or several with set
    /// arithmetic (`all ~core:0`); see `topoprobe cpus`.
    #[arg(long, value_name = "CPUS")]
    pub(crate) cpus: Option<String>,
    /// A JSON description, a libmctop .mct file or a latency matrix (default: this
    /// machine's description, made by `topoprobe infer`).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
}
/// Output forms of a placement: the forms other tools take ([`Form`], whose documentation
/// is their help), and JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlaceFormat {
    /// A form another tool takes.
    Form(Form),
    /// The placement, every thread's place, the summary and the OpenMP environment, as
    /// JSON.
    Json,
}

impl ValueEnum for PlaceFormat {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<Vec<PlaceFormat>> = LazyLock::new(|| {
            let forms = Form::value_variants()
                .iter()
                .copied()
                .map(PlaceFormat::Form);
            forms.chain([PlaceFormat::Json]).collect()
        });
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            Self::Form(form) => form.to_possible_value(),
            Self::Json => Some(PossibleValue::new("json").help(
                "The placement, every thread's place, the summary and the OpenMP environment, \
                 as JSON",
            )),
        }
    }
}

impl PlaceFormat {
    /// The form of a placement it names (`None`: JSON).
    pub(crate) const fn form(self) -> Option<Form> {
        match self {
            Self::Form(form) => Some(form),
            Self::Json => None,
        }
    }
}

impl Formats for PlaceFormat {
    const DEFAULT: Self = Self::Form(Form::List);
    const JSON: Self = Self::Json;
    const FORMAT_HELP: &'static str =
        "Output form (default: from the extension of -o FILE, .json or .txt, else list)";
    fn of_kind(kind: Kind) -> Option<Self> {
        match kind {
            Kind::Json => Some(Self::Json),
            Kind::Text => Some(Self::DEFAULT),
            _ => None,
        }
    }
}

/// `topoprobe place`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PlaceArgs {
    #[command(flatten)]
    pub(crate) placement: PlacementArgs,
    #[command(flatten)]
    pub(crate) output: OutputArgs<PlaceFormat>,
    /// Do not print the summary on standard error.
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// Formats of the report of a command that runs a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    /// Text for people.
    Text,
    /// JSON, figures rounded to 4 significant digits.
    Json,
}

impl Formats for ReportFormat {
    const DEFAULT: Self = Self::Text;
    const JSON: Self = Self::Json;
    const FORMAT_HELP: &'static str =
        "Format of the report (default: from the extension of -o FILE, .json or .txt, else text)";
    const OUTPUT_HELP: &'static str = "Write the report to FILE (atomically; its directory \
        must exist) instead of standard error; `-` is standard output (after the output of \
        the program run, if any)";
}

/// Where the report of a command that runs a program goes: standard error unless `-o`
/// says otherwise, since the program's own output is on standard output.
pub(crate) type SideReport = OutputArgs<ReportFormat>;

impl SideReport {
    /// Whether any option asked for the report.
    pub(crate) const fn asked(&self) -> bool {
        self.format.is_some() || self.json || self.output.is_some()
    }

    /// Writes `result` where the report goes: the `-o` file (`-`: standard output), else
    /// standard error.
    ///
    /// # Errors
    ///
    /// When the result cannot be rendered or written.
    pub(crate) fn emit<R: Rendered>(&self, result: &R) -> anyhow::Result<()> {
        let text = match self.format()? {
            ReportFormat::Text => result.text(),
            ReportFormat::Json => {
                topoprobe_view::results::json(result).context("rendering the report as JSON")?
            }
        };
        match &self.output {
            Some(path) => write_to(Some(path), text.as_bytes()),
            None => {
                eprint!("{text}");
                Ok(())
            }
        }
    }
}

/// `topoprobe run`.
#[derive(Debug, Clone, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) placement: PlacementArgs,
    /// Memory policy.
    #[arg(long, value_enum, default_value = "local")]
    pub(crate) mem: Memory,
    /// Hexadecimal mask of created threads not to pin (bit i: the i-th thread the program
    /// creates, from 0), like likwid-pin -s: they may run on any CPU of the placement.
    #[arg(long, value_name = "MASK", value_parser = skip_bits)]
    pub(crate) skip: Option<u128>,
    /// Print the placement's summary on standard error before the command starts.
    #[arg(short, long)]
    pub(crate) verbose: bool,
    // The report of the run (the placement, the environment set, the memory policy, the
    // exit status): written when the command has ended, and only when --format, --json or
    // -o asks for it.
    #[command(flatten)]
    pub(crate) report: SideReport,
    /// With a report (-o, --json, --format), let the command run on when topoprobe itself
    /// is killed (by default the kernel ends it with SIGKILL then: PR_SET_PDEATHSIG).
    /// Without a report topoprobe becomes the command (exec), so nothing is left to end.
    #[arg(long)]
    pub(crate) keep_child: bool,
    /// The command and its arguments: after `--`, or from the first word that is not an
    /// option of `run` (an unknown option is an error, never taken for the command).
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub(crate) command: Vec<OsString>,
}
