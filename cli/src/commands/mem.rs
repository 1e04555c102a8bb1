//! `topoprobe mem`: memory latency and bandwidth from every socket to every node.

/// Parses a size such as `4096`, `64K`, `512M`, `2G` (binary units; a trailing `B` or
/// `iB` is accepted).
///
/// # Errors
///
/// A message naming the value when it is not a positive size.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, shift) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 30),
        Some('T' | 't') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (examples: 4096, 64K, 512M, 2G)"))?;
    let bytes = v * (1u64 << shift) as f64;
    if !(1.0..1e18).contains(&bytes) {
        return Err(format!("{s:?} is not a positive size"));
    }
    Ok(bytes as u64)
}

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use topoprobe_measure::memory::kernels::Isa;
use topoprobe_measure::memory::{self, MemOptions, MemReport};
use topoprobe_measure::timer::{Timer, TimerKind};

use crate::output::write_stdout;

/// Vector units the bandwidth kernels may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum IsaArg {
    /// AVX-512.
    Avx512,
    /// AVX2.
    Avx2,
    /// Plain loops (SSE2 / NEON by the compiler).
    Portable,
}

/// `topoprobe mem`.
#[derive(Debug, Clone, Args)]
pub(crate) struct MemArgs {
    /// Threads for the many-thread bandwidth (default: every context of the socket).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) threads: Option<u32>,
    /// Working set: the latency buffer, and all bandwidth buffers together (e.g. 512M,
    /// 2G). Peak memory stays close to it.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub(crate) size: u64,
    /// Measure latency from every context, not one per socket.
    #[arg(long)]
    pub(crate) all: bool,
    /// Non-temporal (streaming) stores for write and copy.
    #[arg(long)]
    pub(crate) nt: bool,
    /// Only the latency.
    #[arg(long)]
    pub(crate) latency_only: bool,
    /// Vector unit of the bandwidth kernels (default: the widest the CPU has).
    #[arg(long, value_enum)]
    pub(crate) isa: Option<IsaArg>,
    /// Topology giving the sockets (default: this machine's description).
    #[arg(long, value_name = "FILE")]
    pub(crate) topology: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

impl MemArgs {
    /// The measurement options these arguments ask for.
    pub(crate) fn options(&self) -> MemOptions {
        let timer = Timer::calibrate();
        MemOptions {
            bytes: self.size,
            threads: self.threads.map(|t| t as usize),
            all_contexts: self.all,
            non_temporal: self.nt,
            latency_only: self.latency_only,
            isa: match self.isa {
                Some(IsaArg::Avx512) => Isa::Avx512,
                Some(IsaArg::Avx2) => Isa::Avx2,
                Some(IsaArg::Portable) => Isa::Portable,
                None => Isa::detect(),
            },
            ghz: (timer.kind() != TimerKind::Monotonic).then(|| timer.ghz()),
            ..MemOptions::default()
        }
    }
}

/// Runs the command.
pub(crate) fn run(args: &MemArgs) -> Result<()> {
    let topo = crate::machine::topology(args.topology.as_deref())?;
    let opts = args.options();
    if let Some(t) = args.threads {
        let max = topo
            .sockets()
            .iter()
            .map(|s| s.contexts.len())
            .max()
            .unwrap_or(0);
        if t as usize > max {
            anyhow::bail!("--threads {t}: a socket of this machine has at most {max} contexts");
        }
    }
    let bar = crate::progress::spinner("memory");
    let report = memory::measure_memory(&topo, &opts, |step| bar.set_message(step.to_string()))
        .context("measuring memory")?;
    bar.finish_and_clear();
    let out = if args.json {
        json(&report, &opts)?
    } else {
        text(&report, &opts)
    };
    write_stdout(out.as_bytes())
}

fn cycles(ns: f64, opts: &MemOptions) -> Option<f64> {
    opts.ghz.map(|g| ns * g)
}

fn text(r: &MemReport, opts: &MemOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "memory latency (random chase over {} MiB; huge pages / 4 KiB pages)",
        opts.bytes >> 20
    );
    for l in &r.latency {
        let cyc = cycles(l.ns(), opts).map_or(String::new(), |c| format!(" = {c:.0} cycles"));
        let huge = l.huge_ns.map_or("-".into(), |h| format!("{h:.1} ns"));
        let _ = writeln!(
            out,
            "  socket {} (CPU {}) -> node {}: {huge}{cyc} / {:.1} ns (+{:.1} ns of page walks)",
            l.socket,
            l.cpu,
            l.node,
            l.small_ns,
            l.small_ns - l.ns()
        );
    }
    if !r.bandwidth.is_empty() {
        let _ = writeln!(
            out,
            "memory bandwidth (GB/s, {} kernels{}, {} MiB working set)",
            opts.isa.name(),
            if opts.non_temporal {
                ", non-temporal stores"
            } else {
                ""
            },
            opts.bytes >> 20
        );
        let _ = writeln!(out, "  socket  node  threads     read    write     copy");
        for b in &r.bandwidth {
            let _ = writeln!(
                out,
                "  {:>6}  {:>4}  {:>7}  {:>7.1}  {:>7.1}  {:>7.1}",
                b.socket, b.node, b.threads, b.read, b.write, b.copy
            );
        }
    }
    for (s, n) in &r.local_nodes {
        let _ = writeln!(out, "socket {s}: local node {n} (lowest latency)");
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn json(r: &MemReport, opts: &MemOptions) -> Result<String> {
    let mut results = Vec::new();
    for b in &r.bandwidth {
        let lat = r
            .latency
            .iter()
            .filter(|l| l.socket == b.socket && l.node == b.node)
            .map(memory::LatencyResult::ns)
            .min_by(f64::total_cmp);
        results.push(serde_json::json!({
            "socket": b.socket, "node": b.node, "threads": b.threads,
            "latency_ns": lat, "latency_cycles": lat.and_then(|l| cycles(l, opts)),
            "read_gbps": b.read, "write_gbps": b.write, "copy_gbps": b.copy,
        }));
    }
    if r.bandwidth.is_empty() {
        for l in &r.latency {
            results.push(serde_json::json!({
                "socket": l.socket, "node": l.node, "threads": 1,
                "latency_ns": l.ns(), "latency_cycles": cycles(l.ns(), opts),
                "read_gbps": null, "write_gbps": null, "copy_gbps": null,
            }));
        }
    }
    let latency: Vec<serde_json::Value> = r
        .latency
        .iter()
        .map(|l| {
            serde_json::json!({
                "cpu": l.cpu, "socket": l.socket, "node": l.node,
                "huge_pages_ns": l.huge_ns, "small_pages_ns": l.small_ns,
            })
        })
        .collect();
    let v = serde_json::json!({
        "results": results,
        "latency": latency,
        "local_nodes": r.local_nodes.iter().map(|(s, n)| serde_json::json!({"socket": s, "node": n})).collect::<Vec<_>>(),
        "isa": opts.isa.name(),
        "working_set_bytes": opts.bytes,
        "ghz": opts.ghz,
        "notes": r.notes,
    });
    Ok(format!("{}\n", serde_json::to_string_pretty(&v)?))
}
