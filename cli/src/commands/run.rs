//! `topoprobe run`: run a command with its threads pinned by a policy
//! (`topoprobe_place::launch`). topoprobe becomes the command (exec), as `taskset` does;
//! when a report of the run is asked for (`-o`, `--json`, `--format`), it stays as the
//! command's parent instead, to report its exit status and time.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use topoprobe_place::launch::{self, Event, Launch, Observer};
use topoprobe_place::PlaceError;
use topoprobe_view::results::Rendered;

use crate::args::RunArgs;
use crate::error::report;

/// The notes of the launch on standard error, and with `-v` the placement's summary.
struct Notes {
    verbose: bool,
}

impl Observer for Notes {
    fn event(&mut self, e: &Event<'_>) {
        match e {
            Event::Warning(w) => eprintln!("topoprobe: warning: {w}"),
            Event::Note(n) => eprintln!("topoprobe: note: {n}"),
            Event::Starting(p) if self.verbose => eprint!("{}", p.text()),
            Event::Starting(_) => {}
        }
    }
}

fn run_inner(args: &RunArgs) -> Result<i32> {
    let inputs: Vec<&Path> = args.placement.topology.as_deref().into_iter().collect();
    args.report.check(&inputs)?;
    let (topo, req) = args.placement.request()?;
    crate::inputs::check_here(
        &topo,
        args.placement.topology.as_deref(),
        crate::inputs::Use::Run,
    )?;
    let how = Launch {
        command: args.command.clone(),
        memory: args.mem,
        skip: args.skip.unwrap_or(0),
        end_with_caller: !args.keep_child,
        preload: None,
    };
    let mut notes = Notes {
        verbose: args.verbose,
    };
    if !args.report.asked() {
        // Buffered output would be lost by the exec.
        let _ = std::io::Write::flush(&mut std::io::stdout());
        let Err(e) = launch::exec(&topo, &req, &how, &mut notes);
        return Err(e.into());
    }
    let result = launch::run(&topo, &req, &how, &mut notes)?;
    if args.report.asked() {
        if let Err(e) = args.report.emit(&result) {
            // The program ran: its status stands, unless it succeeded.
            report(&e.context("writing the report of the run"));
            return Ok(if result.exit_status == 0 {
                1
            } else {
                result.exit_status
            });
        }
    }
    Ok(result.exit_status)
}

/// The status of a command that could not be started, as shells and `env` give it: 127
/// when it was not found, 126 when it could not be executed.
fn not_started(e: &anyhow::Error) -> Option<u8> {
    match e.downcast_ref::<PlaceError>()? {
        PlaceError::Launch { source, .. } => Some(match source.kind() {
            std::io::ErrorKind::NotFound => 127,
            _ => 126,
        }),
        _ => None,
    }
}

/// Runs the command and exits as it did (or becomes it).
pub(crate) fn main(args: &RunArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            let code = report(&e);
            ExitCode::from(not_started(&e).unwrap_or(code))
        }
    }
}
