//! `topoprobe run`: run a command with its threads pinned by a policy
//! (`topoprobe_place::launch`), and write the report of the run when asked.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use topoprobe_place::launch::{self, Event, Launch, Memory, Observer};
use topoprobe_view::results::Rendered;

use crate::args::{Mem, RunArgs};
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
    let how = Launch {
        command: args.command.clone(),
        memory: match args.mem {
            Mem::Local => Memory::Local,
            Mem::Interleave => Memory::Interleave,
            Mem::None => Memory::Default,
        },
        skip: args.skip.unwrap_or(0),
        end_with_caller: !args.keep_child,
        preload: None,
    };
    let result = launch::run(
        &topo,
        &req,
        &how,
        &mut Notes {
            verbose: args.verbose,
        },
    )?;
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

/// Runs the command and exits as it did.
pub(crate) fn main(args: &RunArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => ExitCode::from(report(&e)),
    }
}
