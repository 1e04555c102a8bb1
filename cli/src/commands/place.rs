//! `topoprobe place`: print where a policy puts threads, in the form another tool takes.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use topoprobe_model::{parse_cpu_list, Topology};
use topoprobe_place::{export, plan, CoreKind, PlaceError, Placement, Plan, Policy, Request};

use crate::output::write_stdout;

/// A request that can never succeed (exit code 2).
#[derive(Debug)]
pub(crate) struct Usage(pub(crate) String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// The exit code for an error: 2 for an invalid request, 1 otherwise.
pub(crate) fn exit_code(e: &anyhow::Error) -> u8 {
    let usage = e.chain().any(|c| {
        c.downcast_ref::<Usage>().is_some()
            || c.downcast_ref::<PlaceError>()
                .is_some_and(PlaceError::is_usage)
    });
    if usage {
        2
    } else {
        1
    }
}

/// Parses a policy name for clap (an unknown one is a usage error listing the policies).
fn policy(s: &str) -> Result<Policy, String> {
    s.parse::<Policy>().map_err(|e| e.to_string())
}

/// Parses a core kind for clap.
fn kind(s: &str) -> Result<CoreKind, String> {
    s.parse::<CoreKind>().map_err(|e| e.to_string())
}

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
    /// policies: all).
    #[arg(long, value_name = "S")]
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

impl PlacementArgs {
    /// Loads the topology and plans the request.
    pub(crate) fn plan(&self) -> Result<(Topology, Plan)> {
        let topo = crate::machine::topology(self.topology.as_deref())?;
        let cpus = match &self.cpus {
            Some(list) => {
                Some(parse_cpu_list(list).map_err(|e| Usage(format!("--cpus {list:?}: {e}")))?)
            }
            None => None,
        };
        let req = Request {
            policy: self.policy,
            threads: self.threads,
            sockets: self.sockets,
            kind: self.kind,
            cpus,
        };
        let p = plan(&topo, &req)?;
        Ok((topo, p))
    }
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

/// Runs the command.
pub(crate) fn run(args: &PlaceArgs) -> Result<()> {
    let (topo, p) = args.placement.plan()?;
    let restore: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
    let placement = Placement::with_restore(&topo, p, restore);
    let p = placement.plan();
    let text = match args.format {
        PlaceFormat::List => export::list(&topo, p),
        PlaceFormat::Mask => export::mask(&topo, p),
        PlaceFormat::Taskset => export::taskset(&topo, p),
        PlaceFormat::Numactl => export::numactl(&topo, p),
        PlaceFormat::Omp => export::omp(&topo, p),
        PlaceFormat::Likwid => export::likwid(&topo, p),
        PlaceFormat::Json => serde_json::to_string_pretty(&placement.to_json())?,
    };
    if !args.quiet {
        eprint!("{}", placement.summary().to_text());
    }
    write_stdout(format!("{text}\n").as_bytes())
}
