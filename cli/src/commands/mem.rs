//! `topoprobe mem`: memory latency and bandwidth from every socket to every node.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use topoprobe_machine::plugins::WorkingSet;
use topoprobe_measure::memory::kernels::Isa;
use topoprobe_measure::memory::{self, MemOptions, MemReport};
use topoprobe_measure::timer::{Timer, TimerKind};

use crate::args::{IsaArg, MemArgs};

/// The measurement options the arguments ask for (`auto`: the working set sized from the
/// last-level cache, and `large`: the large array the bandwidth streams over, both used
/// when `--size` is not given).
fn options(args: &MemArgs, auto: u64, large: u64) -> MemOptions {
    let timer = Timer::calibrate();
    MemOptions {
        bytes: args.size.unwrap_or(auto),
        bandwidth_bytes: Some(args.size.unwrap_or(large)),
        threads: args.threads.map(|t| t as usize),
        all_contexts: args.all,
        non_temporal: args.nt,
        latency_only: args.latency_only,
        isa: match args.isa {
            Some(IsaArg::Avx512) => Isa::Avx512,
            Some(IsaArg::Avx2) => Isa::Avx2,
            Some(IsaArg::Portable) => Isa::Portable,
            None => Isa::detect(),
        },
        ghz: (timer.kind() != TimerKind::Monotonic).then(|| timer.ghz()),
        ..MemOptions::default()
    }
}

/// Runs the command.
pub(crate) fn run(args: &MemArgs) -> Result<()> {
    args.report.check()?;
    let topo = crate::inputs::topology(args.topology.as_deref())?;
    let os = topoprobe_measure::os::current().ok();
    let auto = topoprobe_machine::plugins::working_set(&topo, os.as_ref());
    let large = memory::large_array_working_set(auto.bytes, least_free_memory());
    let opts = options(args, auto.bytes, large);
    let notes = size_notes(args.size.is_some(), &auto, large);
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
    let bar = crate::progress::spinner("memory");
    let report = memory::measure_memory(&topo, &opts, |step| bar.set_message(step.to_string()))
        .context("measuring memory")?;
    bar.finish_and_clear();
    let out = if args.report.is_json()? {
        json(&report, &opts, &notes)?
    } else {
        text(&report, &opts, &notes)
    };
    args.report.write(out.as_bytes())
}

/// Where each working set's size comes from, as the output says it.
struct SizeNotes {
    latency: String,
    bandwidth: String,
}

/// Where each working set's size comes from (`given`: with `--size`; otherwise the
/// cache-sized `auto` for latency and the `large` array for bandwidth).
fn size_notes(given: bool, auto: &WorkingSet, large: u64) -> SizeNotes {
    if given {
        let given = "given with --size".to_string();
        return SizeNotes {
            latency: given.clone(),
            bandwidth: given,
        };
    }
    let bandwidth = if large == auto.bytes {
        format!("{} MiB, the latency's working set", large >> 20)
    } else if large == memory::LARGE_ARRAY_WORKING_SET {
        format!("{} MiB (a large array)", large >> 20)
    } else {
        format!(
            "{} MiB (a large array, cut to a quarter of free memory)",
            large >> 20
        )
    };
    SizeNotes {
        latency: auto.describe(),
        bandwidth,
    }
}

/// Free memory of the node with the least of it, among the online nodes that have memory.
fn least_free_memory() -> Option<u64> {
    topoprobe_sys::memory::online_nodes()
        .iter()
        .filter_map(topoprobe_measure::os::node_free_bytes)
        .filter(|&f| f > 0)
        .min()
}

fn cycles(ns: f64, opts: &MemOptions) -> Option<f64> {
    opts.ghz.map(|g| ns * g)
}

fn text(r: &MemReport, opts: &MemOptions, notes: &SizeNotes) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "latency working set: {}", notes.latency);
    if !opts.latency_only {
        let _ = writeln!(out, "bandwidth working set: {}", notes.bandwidth);
    }
    let _ = writeln!(
        out,
        "memory latency (random chase over {} MiB; huge pages / 4 KiB pages)",
        opts.bytes >> 20
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
            "memory bandwidth (GB/s, {} kernels{}, {} MiB working set)",
            opts.isa.name(),
            if opts.non_temporal {
                ", non-temporal stores"
            } else {
                ""
            },
            opts.bandwidth_working_set() >> 20
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
    out
}

fn json(r: &MemReport, opts: &MemOptions, notes: &SizeNotes) -> Result<String> {
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
        "working_set_bytes": opts.bytes,
        "working_set": notes.latency,
        "bandwidth_working_set_bytes": (!opts.latency_only).then(|| opts.bandwidth_working_set()),
        "bandwidth_working_set": (!opts.latency_only).then_some(&notes.bandwidth),
        "ghz": opts.ghz,
        "notes": r.notes,
    });
    Ok(format!("{}\n", serde_json::to_string_pretty(&v)?))
}
