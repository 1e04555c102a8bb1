//! `topoprobe contention`: memory-access overhead groups and bandwidth scalability.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use topoprobe_measure::contention::{self, ContentionOptions};
use topoprobe_model::{ContentionSection, ContextId};

use crate::args::ContentionArgs;

/// Runs the command.
pub(crate) fn run(args: &ContentionArgs) -> Result<()> {
    args.report.check(&[])?;
    let topo = crate::inputs::topology(args.topology.as_deref())?;
    let budget = args
        .planning
        .budget(crate::commands::matrix::MEASURING_BUDGET);
    let os = topoprobe_measure::os::current().ok();
    let shape = topoprobe_measure::plan::Shape::from_topology(&topo, os.as_ref());
    let (mut opts, mut plan) = topoprobe_machine::plugins::contention_setup(&topo, &shape, budget);
    if let Some(size) = args.size {
        // The size asked for, planned again (the working set decides each step's cost).
        opts = ContentionOptions {
            total_bytes: Some(size),
            max_total_bytes: size,
            ..opts
        };
        plan = topoprobe_machine::plugins::contention_plan_with(&topo, &opts, budget);
    }
    if args.planning.plan {
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let mut bar = crate::progress::PlanBar::new("contention", &plan);
    let section = contention::measure_contention(&topo, &opts, |s| {
        bar.step(&format!("contention: {s}"));
    })
    .context("measuring memory-access contention")?;
    bar.finish();
    let out = if args.report.is_json()? {
        format!("{}\n", serde_json::to_string_pretty(&section)?)
    } else {
        text(&section)
    };
    args.report.write(out.as_bytes())
}

fn ids(g: &[ContextId]) -> String {
    let v: Vec<String> = g.iter().map(|c| c.0.to_string()).collect();
    format!("{{{}}}", v.join(","))
}

fn text(s: &ContentionSection) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "copy bandwidth of one context alone: {:.1} GB/s",
        s.alone_gbps
    );
    let _ = writeln!(
        out,
        "pairs copying at the same time (GB/s per thread, slowdown):"
    );
    for p in &s.pairs {
        let _ = writeln!(
            out,
            "  {} + {}: {:.1} GB/s, {:.2}×",
            p.a.0, p.b.0, p.gbps, p.overhead
        );
    }
    if s.levels.is_empty() {
        let _ = writeln!(
            out,
            "no overhead groups: concurrent copies lose less than 10%"
        );
    }
    if let Some(c) = &s.socket_curve {
        let points: Vec<String> = c
            .points
            .iter()
            .map(|p| format!("{}: {:.1}", p.threads, p.gbps))
            .collect();
        let _ = writeln!(
            out,
            "socket {} curve, threads spread over its cores (GB/s in all): {}",
            c.socket.0,
            points.join(", ")
        );
        let _ = writeln!(out, "  {}", c.summary(s.alone_gbps));
    }
    for (i, l) in s.levels.iter().enumerate() {
        let groups: Vec<String> = l.groups.iter().map(|g| ids(g)).collect();
        let how = match l.from_threads {
            Some(k) => format!(
                "{:.2}× slower per thread at the curve's largest count, from {k} threads on",
                l.overhead
            ),
            None => format!("{:.2}× slower together", l.overhead),
        };
        let _ = writeln!(
            out,
            "overhead level {i}: {how}; groups {}",
            groups.join(" ")
        );
        let points: Vec<String> = s
            .scalability
            .iter()
            .filter(|p| p.level == i)
            .map(|p| format!("{}: {:.1}", p.threads, p.gbps))
            .collect();
        if !points.is_empty() {
            let _ = writeln!(
                out,
                "  bandwidth by threads in one group (GB/s): {}",
                points.join(", ")
            );
        }
    }
    out
}
