//! Arguments of the commands that measure this machine: `infer`, `matrix`, `latency`,
//! `cache`, `mem`, `contention`, `power`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use topoprobe_measure::memory::kernels::Isa;
use topoprobe_measure::{cache, memory};
use topoprobe_model::results::latency::PingPongWait;

use super::parsers::{parse_size, plugin_list, positive, seconds};
use super::{Hints, Output};
use crate::error::Usage;
use crate::output::{Formats, OutputArgs};

/// How to measure this machine.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct Measure {
    /// CPUs to measure: a list (`0-7,16-23`), a mask, or names on the operating system's
    /// view (`package:0`, `S0:0-3`; see `topoprobe cpus`); default: every CPU this process
    /// may run on.
    #[arg(long, value_name = "CPUS")]
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

/// The cost plan of a measurement: its budget, and a dry run that prints the plan.
#[derive(Debug, Clone, Copy, Default, Args)]
pub(crate) struct Planning {
    /// Wall-clock seconds the measurement may take, eviction, first touch and thread start
    /// included (default: 10 for `infer`, 60 with --plugins shared-caches or contention, 15
    /// for the other measuring commands). A smaller budget measures less and says what it
    /// left out; a larger one measures more of a big machine.
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub(crate) budget: Option<f64>,
    /// Memory the measuring buffers may take at once, e.g. 1G (default: 256M for `infer`,
    /// 512M for the other measuring commands, 1G for `mem --full`, each grown to 3 × the
    /// last-level cache where 5% of the memory available now allows it; the plan says how
    /// it was chosen). It bounds an explicit --size too.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) max_memory: Option<u64>,
    /// Print the plan (every step with the memory, passes and seconds it will take, and
    /// what the budget leaves out) without measuring; with --json, as JSON.
    #[arg(long)]
    pub(crate) plan: bool,
}

impl Planning {
    /// The budget: the given seconds and memory, each else `default`'s.
    pub(crate) fn budget(&self, default: topoprobe_model::Budget) -> topoprobe_model::Budget {
        topoprobe_model::Budget::new(
            self.budget.unwrap_or(default.seconds),
            self.max_memory.unwrap_or(default.bytes),
        )
    }

    /// The budget on this machine: the given seconds and memory, each else `default`'s,
    /// the default memory grown with the last-level cache
    /// ([`topoprobe_machine::probes::budget_here`]); with how the memory budget was chosen.
    pub(crate) fn budget_here(
        &self,
        default: topoprobe_model::Budget,
    ) -> (topoprobe_model::Budget, String) {
        let seconds = self.budget.unwrap_or(default.seconds);
        match self.max_memory {
            Some(bytes) => (
                topoprobe_model::Budget::new(seconds, bytes),
                format!(
                    "memory budget {}: --max-memory",
                    topoprobe_model::size_text(bytes)
                ),
            ),
            None => {
                let (b, basis) = topoprobe_machine::probes::budget_here(default);
                (b.with_seconds(seconds), basis)
            }
        }
    }

    /// The budget of a run with an explicit size (`--size`): without --max-memory, the
    /// default memory budget grows to what the size needs (`needed`: the memory a plan
    /// for it takes at once), and the basis says so; with --max-memory the budget stands,
    /// and a size over it is refused by the plan with the budget that would fit.
    ///
    /// # Errors
    ///
    /// Those of `needed` (planning the size).
    pub(crate) fn fit_size<E>(
        &self,
        (budget, basis): (topoprobe_model::Budget, String),
        option: &str,
        size: Option<u64>,
        needed: impl FnOnce(topoprobe_model::Budget) -> Result<u64, E>,
    ) -> Result<(topoprobe_model::Budget, String), E> {
        let Some(size) = size.filter(|_| self.max_memory.is_none()) else {
            return Ok((budget, basis));
        };
        // Planned without a memory bound: what the size takes.
        let need = needed(topoprobe_model::Budget::new(budget.seconds, u64::MAX / 4))?;
        if need <= budget.bytes {
            return Ok((budget, basis));
        }
        let text = topoprobe_model::size_text;
        Ok((
            topoprobe_model::Budget::new(budget.seconds, need),
            format!(
                "memory budget {}: what {option} {} needs at once (the default would be {})",
                text(need),
                text(size),
                text(budget.bytes)
            ),
        ))
    }

    /// Whether the budget was given.
    pub(crate) fn given(&self) -> bool {
        self.budget.is_some() || self.max_memory.is_some()
    }
}

/// How much to repeat the measurement of a pair.
#[derive(Debug, Clone, Copy, Default, Args)]
pub(crate) struct Repetitions {
    /// Samples per batch of a pair (default 25).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(3..=100_000))]
    pub(crate) reps: Option<u32>,
    /// Largest relative spread of a pair's samples, in percent (default 7; raised on each
    /// retry, up to twice as much; a pair still above it is kept and flagged as noisy).
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
    /// mem-latency, mem-full (mem --full: node × node matrices, read/write mixes, loaded-latency
    /// curves; 120 s more), contention, power; `all` (every section, with mem) or `none`
    /// (default: cache,mem,power, a few seconds).
    #[arg(long, value_name = "LIST", value_parser = plugin_list)]
    pub(crate) plugins: Option<String>,
    #[command(flatten)]
    pub(crate) hints: Hints,
    #[command(flatten)]
    pub(crate) planning: Planning,
    #[command(flatten)]
    pub(crate) output: Output,
}

/// `topoprobe matrix`.
#[derive(Debug, Clone, Args)]
pub(crate) struct MatrixArgs {
    #[command(flatten)]
    pub(crate) output: OutputArgs<MatrixFormat>,
    /// Same as `--format csv` (kept for scripts).
    #[arg(long, hide = true, conflicts_with_all = ["format", "json"])]
    pub(crate) csv: bool,
    #[command(flatten)]
    pub(crate) measure: Measure,
    #[command(flatten)]
    pub(crate) planning: Planning,
}

/// Output forms of `matrix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MatrixFormat {
    /// An aligned table.
    #[value(alias = "table")]
    Text,
    /// JSON: the CPUs, the matrix in ns, the flagged pairs.
    Json,
    /// CSV, the input of `--from-matrix`.
    Csv,
}

impl Formats for MatrixFormat {
    const DEFAULT: Self = Self::Text;
    const JSON: Self = Self::Json;
    const FORMAT_HELP: &'static str = "Output format: a table, JSON, or CSV (N lines of N \
        values in ns, diagonal empty: core-to-core-latency's layout, full square); default: \
        from the extension of -o (.csv, .json, .txt), else the table";
    const JSON_HELP: &'static str = "Shorthand for `--format json` (with --plan: the plan as JSON)";
    const OUTPUT_HELP: &'static str = "Write to FILE (atomically) instead of standard output; \
        `-` is standard output. Noisy pairs (spread above the limit after every retry) are \
        kept and flagged: `*` in the table, `flagged` in the JSON; with CSV, a `# noisy pairs` \
        block on standard error and the notes file FILE.notes (one tab-separated line per \
        flagged pair; an older FILE.notes is removed when none is)";
}

impl MatrixArgs {
    /// Where the matrix goes and in which format, as every result's (`--csv` is
    /// `--format csv`).
    pub(crate) fn report(&self) -> ReportOutput {
        let format = match (self.output.format, self.csv) {
            (Some(MatrixFormat::Text), _) => Some(ResultFormat::Text),
            (Some(MatrixFormat::Json), _) => Some(ResultFormat::Json),
            (Some(MatrixFormat::Csv), _) | (None, true) => Some(ResultFormat::Csv),
            (None, false) => None,
        };
        ReportOutput {
            format,
            json: self.output.json,
            output: self.output.output.clone(),
        }
    }
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
    /// How each side waits for its turn: `cas` retries the compare-and-swap (one line
    /// transfer per hop, as core-to-core-latency), `load` spins on loads then swaps (a
    /// transfer and an invalidation per hop: the probe's first form, for comparison).
    #[arg(long, value_enum, default_value = "cas")]
    pub(crate) wait: PingPongWait,
    #[command(flatten)]
    pub(crate) planning: Planning,
    #[command(flatten)]
    pub(crate) report: ReportOutput,
}

/// `topoprobe cache`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CacheArgs {
    /// The CPU to measure on: one OS CPU number, or an expression naming one (`pu:0`,
    /// `S0:0`; see `topoprobe cpus`); default: the first this process may use.
    #[arg(long, value_name = "CPU")]
    pub(crate) cpus: Option<String>,
    /// The same as --cpus (an older name).
    #[arg(long, value_name = "CPU", hide = true, conflicts_with = "cpus")]
    pub(crate) cpu: Option<String>,
    /// Largest array walked, e.g. 512M or 2G, at least 256K (default: 4 × the largest
    /// cache the OS reports, between 64 MiB and 1 GiB).
    #[arg(long, value_name = "SIZE", value_parser = walk_size)]
    pub(crate) max_size: Option<u64>,
    /// Walk on transparent huge pages only (default: huge pages where the kernel gives
    /// them, then 4 KiB pages, whose difference is the TLB's reach).
    #[arg(long, conflicts_with = "small_pages")]
    pub(crate) huge_pages: bool,
    /// Walk on 4 KiB pages only (TLB reach and cache capacity are then not told apart).
    #[arg(long)]
    pub(crate) small_pages: bool,
    /// Also find which contexts share each level (concurrent walks on contexts chosen
    /// from the topology; needs this machine's description or --topology).
    #[arg(long)]
    pub(crate) shared: bool,
    /// Topology used by --shared (default: this machine's description).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
    /// Print the measured curve (size, ns per access) as well.
    #[arg(long)]
    pub(crate) curve: bool,
    #[command(flatten)]
    pub(crate) planning: Planning,
    #[command(flatten)]
    pub(crate) report: ReportOutput,
}

impl CacheArgs {
    /// The CPU asked for, with the option as it was typed (`--cpus 3`).
    ///
    /// # Errors
    ///
    /// A usage error for a malformed expression, or one of more than one CPU (the walk
    /// runs on one); an error when naming the CPU needs the operating system's view and it
    /// cannot be read.
    pub(crate) fn cpu(&self) -> anyhow::Result<Option<(String, u32)>> {
        let (flag, list) = match (&self.cpus, &self.cpu) {
            (Some(l), _) => ("--cpus", l),
            (None, Some(l)) => ("--cpu", l),
            (None, None) => return Ok(None),
        };
        let typed = format!("{flag} {list}");
        let cpus = crate::cpusets::on_this_machine(flag, list)?;
        match cpus[..] {
            [cpu] => Ok(Some((typed, cpu))),
            _ => Err(Usage(format!(
                "{typed}: the caches are measured on one CPU; name one (--cpus {})",
                cpus[0]
            ))
            .into()),
        }
    }
}

/// Parses `--max-size`: a size the walk can keep to ([`cache::MIN_MAX_BYTES`] at least).
fn walk_size(s: &str) -> Result<u64, String> {
    let bytes = parse_size(s)?;
    if bytes < cache::MIN_MAX_BYTES {
        return Err(format!(
            "{s:?} is too small: the walk needs arrays up to 256 KiB at least to find the L1 \
             (give 256K or more)"
        ));
    }
    Ok(bytes)
}

/// Parses `mem --size`: a working set that reaches memory ([`memory::MIN_SIZE`] at
/// least).
fn memory_size(s: &str) -> Result<u64, String> {
    let bytes = parse_size(s)?;
    if bytes < memory::MIN_SIZE {
        return Err(format!(
            "{s:?} is too small to measure memory: a chase through so few lines times the \
             timer and the prefetchers (give 1M or more)"
        ));
    }
    Ok(bytes)
}

/// `topoprobe mem`.
#[derive(Debug, Clone, Args)]
pub(crate) struct MemArgs {
    /// Threads for the many-thread bandwidth (default: every context of the socket).
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) threads: Option<u32>,
    /// Working set: the latency buffer, and all bandwidth buffers together (e.g. 512M,
    /// 1G; at least 1M). Default: a 64 MiB latency buffer evicted from the caches before
    /// its chase, and a bandwidth working set of 6 × the socket's last-level cache (at
    /// least 64 MiB) within the memory budget (--max-memory); the sizes used are printed.
    #[arg(long, value_name = "SIZE", value_parser = memory_size)]
    pub(crate) size: Option<u64>,
    /// Measure latency from every context, not one per socket.
    #[arg(long)]
    pub(crate) all: bool,
    /// Non-temporal (streaming) stores for write and copy (default: only where the working
    /// set cannot exceed 4 × the last-level cache within the memory budget).
    #[arg(long)]
    pub(crate) nt: bool,
    /// Only the latency.
    #[arg(long)]
    pub(crate) latency_only: bool,
    /// Also the node × node latency and bandwidth matrices, the read/write mixes (with and
    /// without non-temporal stores), the thread count that saturates each node and the
    /// loaded-latency curves, within a larger budget (default: 120 s and 1 GiB).
    #[arg(long, conflicts_with = "latency_only")]
    pub(crate) full: bool,
    /// Vector unit of the bandwidth kernels (default: the widest the CPU has).
    #[arg(long, value_enum)]
    pub(crate) isa: Option<Isa>,
    /// Topology giving the sockets (default: this machine's description).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) c2c: CacheToCacheArgs,
    #[command(flatten)]
    pub(crate) planning: Planning,
    #[command(flatten)]
    pub(crate) report: ReportOutput,
}

/// `topoprobe mem --c2c`: cache-to-cache transfers, after the memory measurement.
#[derive(Debug, Clone, Args)]
pub(crate) struct CacheToCacheArgs {
    /// Also measure cache-to-cache transfers: a line loaded, stored or taken atomically
    /// from another core that holds it modified, exclusive or shared, at each distance of
    /// the topology, with the line homed on the reader's node and on the owner's (the
    /// kernels of `bench line-ops`).
    #[arg(long)]
    pub(crate) c2c: bool,
    /// Seconds the cache-to-cache transfers may take, beside --budget (default 5).
    #[arg(long, value_name = "SECONDS", value_parser = seconds, requires = "c2c")]
    pub(crate) c2c_budget: Option<f64>,
    /// Rounds per operation, state and transfer (the median is reported; 1 to 100000,
    /// default 100).
    #[arg(long, value_name = "R", requires = "c2c")]
    pub(crate) c2c_rounds: Option<usize>,
}

/// `topoprobe contention`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ContentionArgs {
    /// Working set of each copy measurement, all threads together (e.g. 256M; default: 6 ×
    /// the last-level cache within the memory budget, smaller when time is short).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) size: Option<u64>,
    /// Topology the representative pairs are chosen from (default: this machine's
    /// description).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) planning: Planning,
    #[command(flatten)]
    pub(crate) report: ReportOutput,
}

/// `topoprobe power`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PowerArgs {
    /// The machine's topology (a JSON description, a libmctop .mct file or a latency
    /// matrix); default: this machine's description, written by `topoprobe infer`.
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
    /// Seconds each load state is measured (idle, one context, second core, second
    /// context, all cores, all contexts, for each socket).
    #[arg(long, value_name = "SECS", default_value = "0.5", value_parser = seconds)]
    pub(crate) duration: f64,
    /// The powercap tree to read RAPL zones from (default /sys/class/powercap).
    #[arg(long, value_name = "DIR")]
    pub(crate) powercap_root: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) planning: Planning,
    #[command(flatten)]
    pub(crate) report: ReportOutput,
}

impl From<Repetitions> for topoprobe_machine::pairs::Repetitions {
    fn from(r: Repetitions) -> Self {
        Self {
            reps: r.reps,
            max_stdev_percent: r.max_stdev,
        }
    }
}

impl Measure {
    /// Which pairs to measure.
    pub(crate) fn sampling(&self) -> topoprobe_machine::pairs::Sampling {
        topoprobe_machine::pairs::Sampling {
            full: self.full,
            seed: self.seed,
        }
    }
}

/// Where a command's result goes, and in which format.
pub(crate) type ReportOutput = OutputArgs<ResultFormat>;

/// Formats of a command's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum ResultFormat {
    /// Text for people.
    #[default]
    Text,
    /// JSON, figures rounded to 4 significant digits.
    Json,
    /// CSV, for results that are tables.
    Csv,
}

impl Formats for ResultFormat {
    const DEFAULT: Self = Self::Text;
    const JSON: Self = Self::Json;
    const FORMAT_HELP: &'static str =
        "Output format (default: from the extension of -o FILE — .json, .csv, .txt — else text)";
}
