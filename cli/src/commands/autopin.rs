//! `topoprobe autopin`: try candidate pinnings on a running program and keep the best
//! (`topoprobe_tune::autopin`), with a live table on standard error and the result at the
//! end (standard error, or the `-o` file).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use topoprobe_model::format::plural;
use topoprobe_model::format_cpu_list;
use topoprobe_tune::autopin::{
    self, CandidateSource, Event, Observer, Options, Phases, Program, State,
};
use topoprobe_tune::TuneError;
use topoprobe_view::results::autopin::{speed_ratio, table_header, table_row};

use crate::args::AutopinArgs;
use crate::error::{report, Usage};

/// The live table on standard error (rows of `topoprobe_view::results::autopin`).
struct Table {
    tty: bool,
    unit: String,
    /// Names and scores of the current round's finished candidates.
    scores: Vec<Option<(String, f64)>>,
    /// The error that stopped tuning, as the live lines showed it.
    stopped_by_error: Option<String>,
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
                    "autopin: round {round} ({reason}): {}",
                    plural(candidates.len(), "candidate")
                );
                let _ = writeln!(err, "{}", table_header(&self.unit));
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
                let row = table_row(
                    &candidate.name,
                    &candidate.cpus,
                    summary.map(|s| (s.mean, s.half_width)),
                    state.name(),
                );
                if finished {
                    if let Some(s) = self.scores.get_mut(*index) {
                        *s = summary.map(|s| (candidate.name.clone(), s.mean));
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
                let slowest = self
                    .scores
                    .iter()
                    .flatten()
                    .filter(|(name, _)| *name != candidate.name)
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                let mut line = format!(
                    "autopin: best {} (CPUs {})",
                    candidate.name,
                    format_cpu_list(&candidate.cpus)
                );
                if let Some(s) = summary {
                    line.push_str(&format!(": {:.4} {}", s.mean, self.unit));
                    if let Some((name, v)) = slowest {
                        if let Some(r) = speed_ratio(s.mean, *v) {
                            line.push_str(&format!(", {r} {name} (the slowest)"));
                        }
                    }
                }
                let _ = writeln!(err, "{line}; early stops saved {saved_s:.1} s");
            }
            Event::Stopped { .. } => {
                // The result at the end says why and what the program keeps.
                if self.tty {
                    let _ = writeln!(err);
                }
            }
            Event::Warning(w) => {
                let _ = writeln!(err, "autopin: warning: {w}");
                if let Some(e) = w.strip_prefix(autopin::STOPPED_BY_ERROR) {
                    self.stopped_by_error = Some(e.to_string());
                }
            }
            Event::Note(n) => {
                let _ = writeln!(err, "autopin: {n}");
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
    let inputs: Vec<&Path> = args.topology.as_deref().into_iter().collect();
    args.report.check(&inputs)?;
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
        (Some(p), _) => {
            let t = crate::inputs::topology(Some(p))?;
            crate::inputs::check_here(&t, Some(p), crate::inputs::Use::Act)?;
            Some(t)
        }
        (None, CandidateSource::Schedules(_)) => crate::inputs::topology_here(None).ok(),
        (None, _) => Some(
            crate::inputs::topology_here(None)
                .context("autopin generates candidates from the topology (or give --schedule)")?,
        ),
    };
    let opts = Options {
        candidates: source,
        threads: args.threads.map(|n| n as usize),
        metric: args.metric,
        phases: Phases::new(args.initial_wait, args.warmup, args.measure),
        skip: args.skip.unwrap_or(0),
        retune_every: args.retune_every,
        early_stop: !args.no_early_stop,
        keep_child: args.keep_child,
        ..Options::default()
    };
    let program = match args.pid {
        Some(pid) => Program::Attach(pid),
        None => Program::command(&args.command)
            .ok_or_else(|| Usage("give a command (after --) or --pid".into()))?,
    };
    let mut table = Table {
        tty: std::io::stderr().is_terminal(),
        unit: String::new(),
        scores: Vec::new(),
        stopped_by_error: None,
    };
    let mut result = autopin::run(topo.as_ref(), program, &opts, &mut table).map_err(tune_error)?;
    // Nothing tuned (an error before any pinning was kept) is a failure, unless the
    // program's own status already says one.
    let untuned = result.error.is_some() && result.best.is_none();
    let code = match result.exit_status {
        Some(0) if untuned => 1,
        Some(code) => code,
        None if !result.launched && result.error.is_some() => 1,
        None => 0,
    };
    // The error that stopped tuning is said once: the live lines said it already when
    // the result follows them as text.
    if args.report.follows_live_lines() && table.stopped_by_error == result.error {
        result.error = None;
    }
    if let Err(e) = args.report.emit(&result) {
        // The program ran: its status stands, unless it succeeded.
        eprintln!("topoprobe: error: writing the result of autopin: {e:#}");
        return Ok(if code == 0 { 1 } else { code });
    }
    Ok(code)
}

/// Runs autopin and exits as the program did (1 when it exited 0 but nothing could be
/// tuned; attached: 0, or 1 after an error).
pub(crate) fn main(args: &AutopinArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => ExitCode::from(report(&e)),
    }
}
