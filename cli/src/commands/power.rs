//! `topoprobe power`: RAPL power of every socket under libmctop's load states.
//!
//! Where the machine has no usable energy counters, the command prints
//! `power: unavailable: <reason>` (or `{"unavailable": "<reason>"}` with `--json`) and exits
//! 0: a missing feature is not a failure. Availability is checked before the topology is
//! loaded, so that it is reported even where no description exists yet.
//!
//! The topology comes from `--topology FILE`, or else from this machine's description
//! (`topoprobe infer` writes it); without one the command says to run `topoprobe infer`
//! rather than guessing the sockets from the OS.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Result;
use topoprobe_measure::power::{self, PowerError, PowerOptions, PowerReport};
use topoprobe_model::{PowerScope, PowerState, Topology};

use crate::args::{PowerArgs, ReportOutput};

/// Runs the command.
pub(crate) fn run(args: &PowerArgs) -> Result<()> {
    args.report.check(&[])?;
    let mut opts = PowerOptions {
        duration: Duration::from_secs_f64(args.duration),
        ..PowerOptions::default()
    };
    if let Some(root) = &args.powercap_root {
        opts.powercap_root.clone_from(root);
    }
    let budget = args
        .planning
        .budget(crate::commands::matrix::MEASURING_BUDGET);
    if let Err(e) = power::check_available(&opts) {
        if args.planning.plan {
            let mut plan = topoprobe_model::CostPlan::new(budget);
            let mut step = topoprobe_model::CostStep::new("power", "power", 0, 0, 0.0);
            step.note = Some(e.to_string());
            plan.steps.push(step);
            return crate::planned::print(
                &plan,
                args.report.is_json()?,
                args.report.output.as_deref(),
            );
        }
        return outcome(e, &args.report);
    }
    let topo = topology(args)?;
    let shape = topoprobe_measure::plan::Shape::from_topology(
        &topo,
        topoprobe_measure::os::current().ok().as_ref(),
    );
    let plan = power::plan_power(&shape, &opts, budget);
    if args.planning.plan {
        return crate::planned::print(
            &plan.cost(),
            args.report.is_json()?,
            args.report.output.as_deref(),
        );
    }
    for n in &plan.notes {
        eprintln!("topoprobe: power: {n}");
    }
    let opts = plan.options;
    match power::measure_power_report(&topo, &opts) {
        Ok(report) => {
            if args.report.is_json()? {
                let text = serde_json::to_string_pretty(&report.section)?;
                args.report.write(format!("{text}\n").as_bytes())
            } else {
                args.report.write(render(&report).as_bytes())
            }
        }
        Err(e) => outcome(e, &args.report),
    }
}

/// The topology to measure.
fn topology(args: &PowerArgs) -> Result<Topology> {
    crate::inputs::topology(args.topology.as_deref())
}

/// Prints an unavailable measurement (success), or returns the error.
fn outcome(e: PowerError, report: &ReportOutput) -> Result<()> {
    let Some(reason) = e.unavailable_reason() else {
        return Err(anyhow::Error::new(e).context("measuring power"));
    };
    if report.is_json()? {
        let v = serde_json::json!({ "unavailable": reason });
        report.write(format!("{}\n", serde_json::to_string_pretty(&v)?).as_bytes())
    } else {
        report.write(format!("power: unavailable: {reason}\n").as_bytes())
    }
}

/// The text view: a table like libmctop's, with notes on what it means.
fn render(r: &PowerReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "power: {}, {:.2} s per state, watts",
        r.source, r.seconds_per_state
    );
    let _ = writeln!(
        out,
        "{:<9} {:<8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "scope", "state", "cores", "rest", "package", "dram", "total"
    );
    let w = |v: f64, measured: bool| {
        if measured {
            format!("{v:>8.2}")
        } else {
            format!("{:>8}", "-")
        }
    };
    for e in &r.section.entries {
        let scope = match e.scope {
            PowerScope::Socket(s) => format!("socket {}", s.0),
            PowerScope::Total => "total".to_string(),
        };
        let _ = writeln!(
            out,
            "{scope:<9} {:<8} {} {} {} {} {}",
            e.state.mct_name(),
            w(e.cores_w, r.cores_measured),
            w(e.rest_w, r.cores_measured),
            w(e.package_w, true),
            w(e.dram_w, r.dram_measured),
            w(e.total_w, true),
        );
    }
    let increments: Vec<&str> = [
        PowerState::FirstCore,
        PowerState::SecondCore,
        PowerState::SecondContext,
    ]
    .into_iter()
    .filter(|s| r.section.entries.iter().any(|e| e.state == *s))
    .map(PowerState::mct_name)
    .collect();
    let _ = writeln!(
        out,
        "{} {} increments (over idle for 1stcore, over 1stcore for the others); idle, \
         allcor and allhwc are absolute; total is the sum over the sockets",
        increments.join(", "),
        if increments.len() == 1 {
            "is an"
        } else {
            "are"
        }
    );
    if !r.cores_measured {
        let _ = writeln!(
            out,
            "the cores' power (RAPL PP0) is not reported by this machine: cores and rest are \
             not known separately (0 in the description)"
        );
    }
    if !r.dram_measured {
        let _ = writeln!(
            out,
            "DRAM power is not reported by this machine: total is the package alone (dram \
             is 0 in the description)"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{PowerEntry, PowerSection, SocketId};

    fn entry(scope: PowerScope, state: PowerState, package_w: f64) -> PowerEntry {
        PowerEntry {
            scope,
            state,
            cores_w: 0.0,
            rest_w: package_w,
            package_w,
            dram_w: 0.0,
            total_w: package_w,
        }
    }

    #[test]
    fn the_table_shows_unmeasured_domains_as_dashes_and_says_what_is_an_increment() {
        let s0 = PowerScope::Socket(SocketId(0));
        let r = PowerReport {
            section: PowerSection {
                entries: vec![
                    entry(s0, PowerState::Idle, 14.42),
                    entry(s0, PowerState::FirstCore, 13.29),
                    entry(PowerScope::Total, PowerState::Idle, 14.42),
                ],
            },
            source: "powercap /x (intel-rapl:0)".to_string(),
            cores_measured: false,
            dram_measured: false,
            seconds_per_state: 0.5,
        };
        let text = render(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "power: powercap /x (intel-rapl:0), 0.50 s per state, watts"
        );
        assert_eq!(
            lines[2],
            "socket 0  idle            -        -    14.42        -    14.42"
        );
        assert!(lines[3].starts_with("socket 0  1stcore "), "{text}");
        assert!(lines[4].starts_with("total     idle "), "{text}");
        assert!(text.contains("1stcore is an increment"), "{text}");
        assert!(text.contains("DRAM power is not reported"), "{text}");
        assert!(
            text.contains("cores and rest are not known separately"),
            "{text}"
        );
    }
}
