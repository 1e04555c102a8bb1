//! `topoprobe latency A B`: measure one pair and print its statistics. A pair whose spread
//! stays above the limit is printed with its best batch and flagged (`noisy` in the text and
//! the JSON), not an error.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use topoprobe_machine::pairs::{select_cpus, Repetitions};
use topoprobe_measure::pair::{PairProbe, ProbeConfig, Wait};
use topoprobe_measure::smt;
use topoprobe_measure::timer::Timer;

use crate::args::{LatencyArgs, WaitArg};
use crate::error::Usage;

/// Runs the command.
pub(crate) fn run(args: &LatencyArgs) -> Result<()> {
    args.report.check(&[])?;
    if args.a == args.b {
        return Err(Usage(format!(
            "CPU {} cannot be measured against itself: name two different CPUs",
            args.a
        ))
        .into());
    }
    select_cpus(Some(&format!("{},{}", args.a, args.b)))?;
    let config = ProbeConfig {
        policy: Repetitions::from(args.repetitions).policy(),
        wait: match args.wait {
            WaitArg::Cas => Wait::Cas,
            WaitArg::Load => Wait::Load,
        },
        ..ProbeConfig::default()
    };
    if args.planning.plan {
        let budget = args
            .planning
            .budget(crate::commands::matrix::MEASURING_BUDGET);
        let mut plan = topoprobe_model::CostPlan::new(budget);
        plan.steps.push(topoprobe_model::CostStep::new(
            "latency",
            format!("latency CPU {} <-> CPU {}", args.a, args.b),
            0,
            1,
            topoprobe_machine::plan::pair_seconds(&config),
        ));
        if args.smt {
            plan.steps.push(topoprobe_model::CostStep::new(
                "smt",
                "SMT probe",
                0,
                1,
                smt::expected_seconds(),
            ));
        }
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let timer = Timer::calibrate();
    let mut probe = PairProbe::new(timer.clone(), vec![args.a, args.b], config);
    let m = probe.measure_cpus(args.a, args.b).with_context(|| {
        format!(
            "measuring the latency between CPUs {} and {}",
            args.a, args.b
        )
    })?;
    let smt_test = if args.smt {
        Some(smt::test_pair(args.a, args.b).map_err(anyhow::Error::msg)?)
    } else {
        None
    };
    if args.report.is_json()? {
        let mut v = serde_json::json!({
            "a": m.a,
            "b": m.b,
            "median_ns": m.summary.median,
            "min_ns": m.summary.min,
            "spread": m.summary.spread,
            "samples": m.summary.kept,
            "rejected": m.summary.rejected,
            "round_trips_per_sample": m.round_trips,
            "batches": m.batches,
            "warmup_batches": m.warmup_batches,
            "frequency_ramp": m.ramp,
            "noisy": m.noisy.is_some(),
            "wait": format!("{:?}", args.wait).to_lowercase(),
            "timer": timer.describe(),
            "ghz": timer.ghz(),
        });
        if let Some(n) = m.noisy {
            v["spread_limit"] = serde_json::json!(n.limit);
            v["noise_note"] = serde_json::json!(m.noise_note());
        }
        if let Some(t) = smt_test {
            v["smt_slowdown"] = serde_json::json!(t.slowdown);
            v["shares_core"] = serde_json::json!(t.shares_core());
        }
        return args
            .report
            .write(format!("{}\n", serde_json::to_string_pretty(&v)?).as_bytes());
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "CPU {} <-> CPU {}: {:.1} ns one way (CAS ping-pong)",
        m.a, m.b, m.summary.median
    );
    let _ = writeln!(
        out,
        "  min {:.1} ns, spread {:.1}%, {} samples of {} round trips ({} rejected as outliers), {} batch{}",
        m.summary.min,
        m.summary.spread * 100.0,
        m.summary.kept,
        m.round_trips,
        m.summary.rejected,
        m.batches,
        if m.batches == 1 { "" } else { "es" }
    );
    if let Some(note) = m.noise_note() {
        let _ = writeln!(
            out,
            "  noisy: {note}; the best batch is kept (is another program running on these CPUs?)"
        );
    }
    let _ = match m.ramp {
        Some(r) => writeln!(
            out,
            "  warm-up: {} batches; the first was {:.0}% slower (frequency ramp)",
            m.warmup_batches,
            (r - 1.0) * 100.0
        ),
        None => writeln!(
            out,
            "  warm-up: {} batches, no frequency ramp",
            m.warmup_batches
        ),
    };
    if let Some(t) = smt_test {
        let _ = writeln!(
            out,
            "  SMT probe: a compute loop runs {:.2}x slower beside its partner: {}",
            t.slowdown,
            if t.shares_core() {
                "the two contexts share a core"
            } else {
                "separate cores"
            }
        );
    }
    let _ = writeln!(out, "  timer: {}", timer.describe());
    args.report.write(out.as_bytes())
}
