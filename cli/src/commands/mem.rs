//! `topoprobe mem`: memory latency and bandwidth from every socket to every node.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use topoprobe_measure::memory::kernels::Isa;
use topoprobe_measure::memory::{self, MemOptions, MemReport};
use topoprobe_measure::plan::{mib, Shape};
use topoprobe_measure::timer::Timer;

use crate::args::{IsaArg, MemArgs};

/// The measurement options the arguments ask for.
fn options(args: &MemArgs) -> MemOptions {
    let timer = Timer::calibrate();
    MemOptions {
        size: args.size,
        threads: args.threads.map(|t| t as usize),
        all_contexts: args.all,
        non_temporal: args.nt.then_some(true),
        latency_only: args.latency_only,
        isa: match args.isa {
            Some(IsaArg::Avx512) => Isa::Avx512,
            Some(IsaArg::Avx2) => Isa::Avx2,
            Some(IsaArg::Portable) => Isa::Portable,
            None => Isa::detect(),
        },
        ghz: timer.cycle_ghz(),
        budget: args.planning.budget(memory::DEFAULT_BUDGET),
        ..MemOptions::default()
    }
}

/// Runs the command.
pub(crate) fn run(args: &MemArgs) -> Result<()> {
    args.report.check(&[])?;
    let topo = crate::inputs::topology(args.topology.as_deref())?;
    let os = topoprobe_measure::os::current().ok();
    let shape = Shape::from_topology(&topo, os.as_ref());
    if let Some(t) = args.threads {
        let max = topo
            .sockets()
            .iter()
            .map(|s| s.contexts.len())
            .max()
            .unwrap_or(0);
        if t as usize > max {
            return Err(crate::error::Usage(format!(
                "--threads {t}: a socket of this machine has at most {max} contexts"
            ))
            .into());
        }
    }
    let opts = options(args);
    let mut plan = memory::plan::plan_memory(&shape, &opts);
    if args.planning.plan {
        return crate::planned::print(
            &plan.cost(),
            args.report.is_json()?,
            args.report.output.as_deref(),
        );
    }
    let mut bar = crate::progress::PlanBar::new("memory", &plan.cost());
    let report = memory::run_plan(&shape, &mut plan, &opts, |step| bar.step(step))
        .context("measuring memory")?;
    bar.finish();
    let out = if args.report.is_json()? {
        json(&report, &opts)?
    } else {
        text(&report, &opts)
    };
    args.report.write(out.as_bytes())
}

/// How the latency buffer was chased, for people.
fn latency_method(r: &MemReport) -> String {
    if r.evicted {
        format!(
            "random chase over {}, evicted from every cache first, one lap",
            mib(r.latency_bytes)
        )
    } else {
        format!(
            "random chase over {} in its steady state",
            mib(r.latency_bytes)
        )
    }
}

fn cycles(ns: f64, opts: &MemOptions) -> Option<f64> {
    opts.ghz.map(|g| ns * g)
}

fn text(r: &MemReport, opts: &MemOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "memory latency ({}; huge pages / 4 KiB pages)",
        latency_method(r)
    );
    for l in &r.latency {
        let cyc = cycles(l.ns(), opts).map_or(String::new(), |c| format!(" = {c:.0} cycles"));
        let huge = l.huge_ns.map_or("-".into(), |h| format!("{h:.1} ns"));
        let small = match (l.small_ns, l.huge_ns) {
            (Some(s), Some(h)) => format!(" / {s:.1} ns (+{:.1} ns of page walks)", s - h),
            (Some(s), None) => format!(" / {s:.1} ns"),
            (None, _) => String::new(),
        };
        let _ = writeln!(
            out,
            "  socket {} (CPU {}) -> node {}: {huge}{cyc}{small}",
            l.socket, l.cpu, l.node
        );
    }
    if !r.bandwidth.is_empty() {
        let _ = writeln!(
            out,
            "memory bandwidth (GB/s, {} kernels{}, {} working set, evicted before every pass)",
            opts.isa.name(),
            if r.non_temporal {
                ", non-temporal stores for write and copy"
            } else {
                ""
            },
            mib(r.bandwidth_bytes)
        );
        let _ = writeln!(
            out,
            "  socket  node  threads     read    write     copy  spread  rounds"
        );
        for b in &r.bandwidth {
            let _ = writeln!(
                out,
                "  {:>6}  {:>4}  {:>7}  {:>7.1}  {:>7.1}  {:>7.1}  {:>5.1}%  {:>6}",
                b.socket,
                b.node,
                b.threads,
                b.read,
                b.write,
                b.copy,
                b.spread * 100.0,
                b.rounds
            );
        }
    }
    for (s, n) in &r.local_nodes {
        let _ = writeln!(out, "socket {s}: local node {n} (lowest latency)");
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(
        out,
        "measured {} of {} socket -> node pairs; {}",
        r.pairs.0,
        r.pairs.1,
        topoprobe_view::cost::summary(&r.cost)
    );
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
            "spread": b.spread, "rounds": b.rounds,
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
        "working_set_bytes": r.latency_bytes,
        "working_set": latency_method(r),
        "bandwidth_working_set_bytes": (!opts.latency_only).then_some(r.bandwidth_bytes),
        "non_temporal": r.non_temporal,
        "pairs_measured": r.pairs.0,
        "pairs_total": r.pairs.1,
        "ghz": opts.ghz,
        "notes": r.notes,
        "cost": r.cost,
    });
    Ok(format!("{}\n", serde_json::to_string_pretty(&v)?))
}
