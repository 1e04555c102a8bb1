//! `topoprobe balance`: monitor processes and move their threads
//! (`topoprobe_tune::balance`), a line per decision on standard error and the result at
//! the end (standard error, or the `-o` file).

use std::path::Path;

use anyhow::{bail, Result};
use topoprobe_tune::balance::engine::EngineOptions;
use topoprobe_tune::balance::layout::Layout;
use topoprobe_tune::balance::monitor::Selection;
use topoprobe_tune::balance::{self, Event, Observer, Options};
use topoprobe_tune::TuneError;
use topoprobe_view::results::balance::decision_line;

use crate::args::BalanceArgs;
use crate::error::Usage;

/// The per-decision lines on standard error.
struct Lines;

impl Observer for Lines {
    fn event(&mut self, e: &Event<'_>) {
        match e {
            Event::Decision { record, name } => {
                eprintln!("balance: {}", decision_line(record, name));
            }
            Event::Note(n) => eprintln!("balance: {n}"),
        }
    }
}

/// The layout: the description's, or a flat machine of the online CPUs.
fn layout(args: &BalanceArgs) -> Result<Layout> {
    if let Some(p) = &args.topology {
        let t = crate::inputs::topology(Some(p))?;
        crate::inputs::check_here(&t, Some(p), crate::inputs::Use::Act)?;
        return Ok(Layout::from_topology(&t));
    }
    match crate::inputs::topology_here(None) {
        Ok(t) => Ok(Layout::from_topology(&t)),
        Err(e) => {
            let online = topoprobe_sys::affinity::online_cpus()?;
            eprintln!(
                "balance: note: no topology ({}); every CPU counts as its own core of one socket",
                crate::error::message(&e)
            );
            Ok(Layout::flat(&online.to_vec()))
        }
    }
}

/// Runs `topoprobe balance`.
pub(crate) fn run(args: &BalanceArgs) -> Result<()> {
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0) {
            bail!(Usage(format!(
                "--duration {d}: a positive number of seconds"
            )));
        }
    }
    let inputs: Vec<&Path> = args.topology.as_deref().into_iter().collect();
    args.report.check(&inputs)?;
    let layout = layout(args)?;
    let opts = Options {
        selection: Selection {
            pids: args.pids.clone(),
            name: args.name.clone(),
            cgroup: args.cgroup.clone(),
            any_user: args.any_user,
        },
        interval: args.interval,
        duration: args.duration,
        engine: EngineOptions {
            hold: args.hold as usize,
            max_moves_per_minute: args.max_moves as usize,
            advise: args.advise,
            ..EngineOptions::default()
        },
        keep_affinity: args.keep_affinity,
    };
    let mut result = balance::run(&layout, &opts, &mut Lines).map_err(|e: TuneError| {
        if e.is_usage() {
            anyhow::Error::from(Usage(e.to_string()))
        } else {
            e.into()
        }
    })?;
    // Each note is said once: the live lines said them when the result follows them.
    if args.report.follows_live_lines() {
        result.notes.clear();
    }
    args.report.emit(&result)
}
