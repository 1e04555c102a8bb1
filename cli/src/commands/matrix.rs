//! `topoprobe matrix`: measure and print the latency matrix of this machine.
//!
//! A noisy pair does not fail the command: it is kept and flagged. The table marks it with
//! `*` and lists the flagged pairs below; the CSV stays N lines of N numbers, and the flags
//! go to a `# noisy pairs` block on standard error and, with `-o FILE`, to the companion
//! file `FILE.notes` ([`pair_notes`]).

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use topoprobe_infer::Collected;
use topoprobe_model::format::csv;
use topoprobe_model::LatencyMatrix;

use topoprobe_machine::pairs::{collect, pair_probe_with, select_cpus, sibling_hint};
use topoprobe_machine::plan::plan_pairs;
use topoprobe_model::{Budget, CostPlan};

use crate::args::MatrixArgs;
use crate::output::write_to;
use crate::pair_notes;
use crate::progress::pair_bar;

/// Whether the pair of rows `a` and `b` is flagged as noisy.
fn is_noisy(c: &Collected, a: usize, b: usize) -> bool {
    c.noisy().any(|p| (p.a, p.b) == (a.min(b), a.max(b)))
}

/// The matrix as a table with CPU numbers as row and column headers (ns, whole numbers);
/// a noisy pair's value is marked with `*`.
fn table(c: &Collected, cpus: &[u32]) -> String {
    let m: &LatencyMatrix = &c.latency;
    let width = 6;
    let mut s = format!("{:>width$}", "");
    for c in cpus {
        let _ = write!(s, "{c:>width$}");
    }
    s.push('\n');
    for (a, ca) in cpus.iter().enumerate() {
        let _ = write!(s, "{ca:>width$}");
        for b in 0..cpus.len() {
            match m.get(a, b) {
                Some(v) if a != b && is_noisy(c, a, b) => {
                    let _ = write!(s, "{:>w$.0}*", v, w = width - 1);
                }
                Some(v) if a != b => {
                    let _ = write!(s, "{:>width$.0}", v);
                }
                _ => {
                    let _ = write!(s, "{:>width$}", "");
                }
            }
        }
        s.push('\n');
    }
    s
}

/// The budget of a measuring command by default: 15 s and 512 MiB.
pub(crate) const MEASURING_BUDGET: Budget = Budget::new(15.0, 512 << 20);

/// Runs the command.
pub(crate) fn run(args: &MatrixArgs) -> Result<()> {
    let cpus = select_cpus(args.measure.cpus.as_deref())?;
    if cpus.len() < 2 {
        let only = match cpus.first() {
            Some(c) => format!("only CPU {c}"),
            None => "no CPU".to_string(),
        };
        bail!("a latency matrix needs at least two CPUs; this process may use {only}");
    }
    let budget = args.planning.budget(MEASURING_BUDGET);
    let plan = plan_pairs(
        cpus.len(),
        args.measure.sampling(),
        args.measure.repetitions.into(),
        budget.seconds,
    )
    .map_err(crate::commands::infer::over_budget)?;
    let mut cost = CostPlan::new(budget);
    cost.steps.push(plan.step());
    cost.left_out.clone_from(&plan.notes);
    if args.planning.plan {
        return crate::planned::print(&cost, args.json, args.output.as_deref());
    }
    for n in &plan.notes {
        eprintln!("topoprobe: {n}");
    }
    let mut p = pair_probe_with(cpus.clone(), plan.config);
    let hint = topoprobe_measure::os::current()
        .ok()
        .map(|os| sibling_hint(&os, &cpus));
    let bar = pair_bar("measuring");
    let measured = collect(
        &mut p,
        args.measure.sampling(),
        hint,
        plan.max_measurements,
        &mut |done, total| {
            bar.set_length(total.max(done) as u64);
            bar.set_position(done as u64);
        },
    )?;
    bar.finish_and_clear();
    let collected = &measured.collected;
    let notes = pair_notes::block(
        collected,
        &cpus,
        args.output
            .as_ref()
            .map(|_| "see the notes file")
            .filter(|_| args.wants_csv()),
    );
    let bytes = if args.wants_csv() {
        let mut v = Vec::new();
        csv::write_matrix(&collected.latency, &mut v).context("writing the CSV")?;
        eprint!("{notes}");
        v
    } else {
        let mut s = table(collected, &cpus);
        let total = cpus.len() * (cpus.len() - 1) / 2;
        let _ = writeln!(
            s,
            "one-way latency in ns, CAS ping-pong; {} of {} pairs measured in {:.1} s{}; timer: {}",
            measured.collected.pairs,
            total,
            measured.elapsed.as_secs_f64(),
            if measured.collected.pairs < total {
                " (the others filled in from their class; --full measures all)"
            } else {
                ""
            },
            p.timer().describe()
        );
        if !notes.is_empty() {
            s.push_str(&notes);
            if collected.noisy().next().is_some() {
                let _ = writeln!(
                    s,
                    "# * a noisy pair: its value is the best estimate there is"
                );
            }
            if args.output.is_some() {
                eprint!("{notes}");
            }
        }
        s.into_bytes()
    };
    write_to(args.output.as_deref(), &bytes)?;
    match args.output.as_deref() {
        Some(path) if args.wants_csv() => pair_notes::write_companion(collected, &cpus, path),
        _ => Ok(()),
    }
}
