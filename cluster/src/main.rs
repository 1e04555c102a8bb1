//! `topoprobe-cluster`: the communication layers of a cluster, measured over MPI. Start it
//! with the cluster's launcher (`mpirun -np 8 topoprobe-cluster`, `srun topoprobe-cluster`);
//! rank 0 prints the report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Parser;
use mpi::topology::{Communicator, SimpleCommunicator};
use topoprobe_cluster::node::{self, LayoutSource};
use topoprobe_cluster::transport::{serve, Coordinator, Settings};
use topoprobe_cluster::{analyse, ClusterReport, CollectOptions, Progress};
use topoprobe_model::format::write_atomic;

/// Measures point-to-point latency and bandwidth between the ranks of an MPI job, finds
/// the communication layers (same core, same socket, other socket, other node, …), explains
/// them from every node's description, and advises communicator splits.
///
/// Every node's first rank uses that node's description (`topoprobe infer`), else the OS's
/// view, to tell what each layer is. Rank 0 prints the report.
#[derive(Debug, Parser)]
#[command(
    name = "topoprobe-cluster",
    version,
    after_help = "Examples:\n  mpirun -np 4 topoprobe-cluster\n  mpirun --oversubscribe -np 4 topoprobe-cluster --json\n  srun -N 2 --ntasks-per-node 8 topoprobe-cluster --heatmap layers.svg\n\nAs root, Open MPI's mpirun needs --allow-run-as-root (or OMPI_ALLOW_RUN_AS_ROOT=1 and\nOMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)."
)]
struct Args {
    /// Output format (default: from the extension of -o FILE — .json, .svg, .txt — else
    /// text); svg is the latency heatmap.
    #[arg(long, value_enum)]
    format: Option<ReportFormat>,
    /// Shorthand for `--format json`.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Write the report to FILE (atomically; its directory must exist) instead of standard
    /// output; `-` is standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Write the latency heatmap (SVG) to FILE.
    #[arg(long, value_name = "FILE")]
    heatmap: Option<PathBuf>,
    /// Every node's description file (the same path on every node).
    #[arg(long, value_name = "FILE", conflicts_with = "measure")]
    description: Option<PathBuf>,
    /// Measure every node's core-to-core latencies now to describe it (the ranks must be
    /// allowed on every CPU of their node).
    #[arg(long)]
    measure: bool,
    /// Measure every pair when there are at most N ranks; beyond, sample.
    #[arg(long, value_name = "N", default_value_t = topoprobe_cluster::collect::ALL_PAIRS_UP_TO)]
    all_pairs_up_to: usize,
    /// Most latency measurements when sampling (default: 8 per rank).
    #[arg(long, value_name = "N")]
    budget: Option<usize>,
    /// Seed of the random choices (verification and bandwidth pairs).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Size of a latency (ping-pong) message, bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 8)]
    latency_bytes: usize,
    /// Target duration of one latency sample (a batch of round trips), µs.
    #[arg(long, value_name = "US", default_value_t = 1000.0)]
    sample_us: f64,
    /// Latency samples per pair.
    #[arg(long, value_name = "N", default_value_t = 7)]
    samples: usize,
    /// Size of one bandwidth message, bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    bandwidth_bytes: usize,
    /// Bandwidth messages in flight at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    window: usize,
    /// Timed bandwidth windows per pair.
    #[arg(long, value_name = "N", default_value_t = 4)]
    repetitions: usize,
    /// Progress on standard error.
    #[arg(short, long)]
    verbose: bool,
}

/// Formats of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ReportFormat {
    /// Text for people.
    Text,
    /// JSON, figures rounded to 4 significant digits.
    Json,
    /// The latency heatmap (SVG).
    Svg,
}

/// The report's format: `--json`, `--format`, else the extension of `-o FILE` (`.json`,
/// `.svg`, `.txt`), else text, as in `topoprobe`.
///
/// # Errors
///
/// When the extension names another format than `--format`, or one the report does not
/// have.
fn report_format(args: &Args) -> Result<ReportFormat, String> {
    let given = if args.json {
        Some(ReportFormat::Json)
    } else {
        args.format
    };
    let file = args.output.as_deref().filter(|p| p.as_os_str() != "-");
    let ext = file
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let by_ext = match ext.as_deref() {
        Some("json") => Some(ReportFormat::Json),
        Some("svg") => Some(ReportFormat::Svg),
        Some("txt" | "text") => Some(ReportFormat::Text),
        Some(e @ ("csv" | "tsv" | "xml" | "html" | "htm" | "png" | "dot" | "mct")) => {
            return Err(format!(
                "-o: .{e} names a format the report does not have (text, json or svg)"
            ))
        }
        _ => None,
    };
    match (given, by_ext) {
        (Some(g), Some(e)) if g != e => Err(format!(
            "--format {g:?} conflicts with the extension of -o (it means {e:?})"
        )
        .to_lowercase()),
        (Some(g), _) => Ok(g),
        (None, Some(e)) => Ok(e),
        (None, None) => Ok(ReportFormat::Text),
    }
}

impl Args {
    fn settings(&self) -> Settings {
        Settings {
            latency_bytes: self.latency_bytes,
            sample_us: self.sample_us,
            samples: self.samples,
            bandwidth_bytes: self.bandwidth_bytes,
            window: self.window,
            repetitions: self.repetitions,
        }
    }

    fn layout(&self) -> LayoutSource {
        match (&self.description, self.measure) {
            (Some(p), _) => LayoutSource::File(p.clone()),
            (None, true) => LayoutSource::Measure,
            (None, false) => LayoutSource::Saved,
        }
    }
}

/// Rank 0's work: gather, measure, analyse, print.
fn coordinate(world: &SimpleCommunicator, args: &Args) -> Result<()> {
    let coordinator = Coordinator::new(world, args.settings(), args.layout());
    let result = measure(coordinator, args);
    let report = result?;
    let text = match report_format(args).map_err(anyhow::Error::msg)? {
        ReportFormat::Text => topoprobe_view::results::Rendered::text(&report),
        ReportFormat::Json => report.to_json(),
        ReportFormat::Svg => report.heatmap(),
    };
    match args.output.as_deref().filter(|p| p.as_os_str() != "-") {
        Some(path) => write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => print!("{text}"),
    }
    if let Some(path) = &args.heatmap {
        write_atomic(path, report.heatmap().as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Measures with the coordinator, and always releases the other ranks.
fn measure(mut coordinator: Coordinator<'_>, args: &Args) -> Result<ClusterReport> {
    let result = (|| -> Result<ClusterReport> {
        // The files' directories before measuring (minutes on a large job), not after.
        for path in args
            .output
            .iter()
            .filter(|p| p.as_os_str() != "-")
            .chain(&args.heatmap)
        {
            topoprobe_model::format::check_place(path)?;
        }
        let ranks = coordinator.gather()?;
        if args.description.is_some() {
            if let Some(h) = (0..ranks.hosts().len()).find(|&h| node::failed(ranks.layout(h))) {
                bail!("host {}: {}", ranks.hosts()[h].name, ranks.layout(h).source);
            }
        }
        let opts = CollectOptions {
            all_pairs_up_to: args.all_pairs_up_to,
            budget: args.budget,
            seed: args.seed,
        };
        let mut last = 0;
        let verbose = args.verbose;
        let mut progress = |p: Progress| {
            if !verbose {
                return;
            }
            let (what, done, total) = match p {
                Progress::Latency { done, total } => ("latency", done, total),
                Progress::Bandwidth { done, total } => ("bandwidth", done, total),
            };
            let pct = done * 10 / total.max(1);
            if pct != last || done == total {
                last = pct;
                eprintln!("topoprobe-cluster: {what} {done}/{total}");
            }
        };
        let mut report = analyse(&mut coordinator, &ranks, &opts, &mut progress)?;
        report.measurement.settings = args.settings().describe();
        Ok(report)
    })();
    coordinator.stop();
    result
}

fn main() -> ExitCode {
    let Some(universe) = mpi::initialize() else {
        eprintln!("topoprobe-cluster: MPI could not be initialised (or was already)");
        return ExitCode::from(1);
    };
    let world = universe.world();
    let root = world.rank() == 0;
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            if root {
                let _ = e.print();
            }
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            drop(universe);
            return ExitCode::from(code);
        }
    };
    let checked = args
        .settings()
        .check()
        .map_err(|e| e.to_string())
        .and(report_format(&args).map(|_| ()));
    if let Err(e) = checked {
        if root {
            eprintln!("topoprobe-cluster: {e}");
        }
        drop(universe);
        return ExitCode::from(2);
    }
    if world.size() < 2 {
        eprintln!(
            "topoprobe-cluster: {} rank: start it with an MPI launcher and at least two ranks (mpirun -np 2 topoprobe-cluster)",
            world.size()
        );
        drop(universe);
        return ExitCode::from(2);
    }
    if root {
        if let Err(e) = coordinate(&world, &args) {
            eprintln!("topoprobe-cluster: {e:#}");
            drop(universe);
            return ExitCode::from(1);
        }
    } else if let Err(e) = serve(&world, &args.settings(), &args.layout()) {
        eprintln!("topoprobe-cluster: rank {}: {e}", world.rank());
        world.abort(1);
    }
    ExitCode::SUCCESS
}
