//! `topoprobe autopin`: try candidate pinnings on a running program and keep the best,
//! with a live table on standard error and the result as JSON at the end.

use std::io::{IsTerminal, Write};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result};
use topoprobe_tune::autopin::{
    self, CandidateSource, Event, Observer, Options, Phases, Program, State,
};
use topoprobe_tune::TuneError;

use crate::args::AutopinArgs;
use crate::error::{exit_code, Usage};

/// The live table on standard error.
struct Table {
    tty: bool,
    unit: String,
    /// Scores of the current round's finished candidates.
    scores: Vec<Option<f64>>,
}

fn cpus(c: &[u32]) -> String {
    c.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl Table {
    fn row(&self, name: &str, cpu_list: &str, state: State, summary: Option<(f64, f64)>) -> String {
        let score = match summary {
            Some((m, h)) if h.is_finite() => format!("{m:>10.4} ± {h:<9.4}"),
            Some((m, _)) => format!("{m:>10.4} ± {:<9}", "-"),
            None => format!("{:>10}   {:<9}", "-", ""),
        };
        format!("  {name:<18} {cpu_list:<16} {score} {}", state.name())
    }
}

impl Observer for Table {
    fn event(&mut self, e: &Event<'_>) {
        let mut err = std::io::stderr().lock();
        match e {
            Event::Started { pid, launched } => {
                let how = if *launched { "started" } else { "attached to" };
                let _ = writeln!(err, "autopin: {how} process {pid}");
            }
            Event::Metric { name, unit, note } => {
                self.unit = (*unit).to_string();
                let _ = writeln!(err, "autopin: metric {name} ({unit}): {note}");
            }
            Event::Round {
                round,
                reason,
                candidates,
            } => {
                self.scores = vec![None; candidates.len()];
                let _ = writeln!(
                    err,
                    "autopin: round {round} ({reason}): {} candidates",
                    candidates.len()
                );
                let _ = writeln!(
                    err,
                    "  {:<18} {:<16} {:>10} ± {:<9} state",
                    "candidate",
                    "CPUs",
                    format!("score ({})", self.unit.split('/').next().unwrap_or("")),
                    "spread"
                );
            }
            Event::Candidate {
                index,
                candidate,
                state,
                summary,
            } => {
                let finished = matches!(
                    state,
                    State::Measured | State::StoppedEarly | State::Incomplete
                );
                let row = self.row(
                    &candidate.name,
                    &cpus(&candidate.cpus),
                    *state,
                    summary.map(|s| (s.mean, s.half_width)),
                );
                if finished {
                    if let Some(s) = self.scores.get_mut(*index) {
                        *s = summary.map(|s| s.mean);
                    }
                }
                if self.tty {
                    let _ = write!(err, "\r\x1b[K{row}");
                    if finished {
                        let _ = writeln!(err);
                    }
                } else if finished {
                    let _ = writeln!(err, "{row}");
                }
            }
            Event::Best {
                candidate,
                summary,
                saved_s,
            } => {
                let worst = self
                    .scores
                    .iter()
                    .flatten()
                    .copied()
                    .fold(f64::INFINITY, f64::min);
                let ratio = match summary {
                    Some(s) if worst.is_finite() && worst > 0.0 => {
                        format!(", {:.2}× the worst", s.mean / worst)
                    }
                    _ => String::new(),
                };
                let score =
                    summary.map_or_else(String::new, |s| format!(": {:.4} {}", s.mean, self.unit));
                let _ = writeln!(
                    err,
                    "autopin: best {} (CPUs {}){score}{ratio}; early stops saved {saved_s:.1} s",
                    candidate.name,
                    cpus(&candidate.cpus)
                );
            }
            Event::Stopped { reason, pinned } => {
                if self.tty {
                    let _ = writeln!(err);
                }
                let keeps = pinned.map_or_else(
                    || "its own CPU masks".to_string(),
                    |c| format!("{} (CPUs {})", c.name, cpus(&c.cpus)),
                );
                let _ = writeln!(
                    err,
                    "autopin: stopped ({reason}); the program keeps {keeps}"
                );
            }
            Event::Warning(w) => {
                let _ = writeln!(err, "autopin: warning: {w}");
            }
        }
    }
}

/// Turns a tuner error into a usage error when it is the request's fault.
fn tune_error(e: TuneError) -> anyhow::Error {
    if e.is_usage() {
        Usage(e.to_string()).into()
    } else {
        e.into()
    }
}

fn run_inner(args: &AutopinArgs) -> Result<i32> {
    let source = if !args.schedules.is_empty() {
        CandidateSource::Schedules(args.schedules.clone())
    } else if !args.policies.is_empty() {
        CandidateSource::Policies(args.policies.clone())
    } else {
        CandidateSource::Topology {
            max: args.max_candidates as usize,
        }
    };
    let topo = match (args.topology.as_deref(), &source) {
        (Some(p), _) => Some(crate::inputs::topology(Some(p))?),
        (None, CandidateSource::Schedules(_)) => crate::inputs::topology(None).ok(),
        (None, _) => Some(
            crate::inputs::topology(None)
                .context("autopin generates candidates from the topology (or give --schedule)")?,
        ),
    };
    let skip = match &args.skip {
        Some(m) => u128::from_str_radix(m.trim_start_matches("0x"), 16)
            .map_err(|_| Usage(format!("--skip {m:?} is not a hexadecimal mask")))?,
        None => 0,
    };
    let opts = Options {
        candidates: source,
        threads: args.threads.map(|n| n as usize),
        metric: args.metric.into(),
        phases: Phases::new(args.initial_wait, args.warmup, args.measure),
        skip,
        retune_every: args.retune_every,
        early_stop: !args.no_early_stop,
        ..Options::default()
    };
    let program = match (args.pid, args.command.split_first()) {
        (Some(pid), _) => Program::Attach(pid),
        (None, Some((prog, rest))) => {
            let mut cmd = Command::new(prog);
            cmd.args(rest);
            Program::Launch(cmd)
        }
        (None, None) => return Err(Usage("give a command (after --) or --pid".into()).into()),
    };
    let attached = args.pid.is_some();
    let mut table = Table {
        tty: std::io::stderr().is_terminal(),
        unit: String::new(),
        scores: Vec::new(),
    };
    let report = autopin::run(topo.as_ref(), program, &opts, &mut table).map_err(tune_error)?;
    if args.json {
        let text = serde_json::to_string_pretty(&report)?;
        println!("{text}");
    }
    if let Some(e) = &report.error {
        eprintln!("topoprobe: error: autopin: {e}");
    }
    Ok(match report.exit_status {
        Some(code) => code,
        None if attached && report.error.is_some() => 1,
        None => 0,
    })
}

/// Runs autopin and exits as the program did (attached: 0, or 1 after an error).
pub(crate) fn main(args: &AutopinArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("topoprobe: error: {e:#}");
            ExitCode::from(exit_code(&e))
        }
    }
}
