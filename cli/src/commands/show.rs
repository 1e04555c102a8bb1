//! `topoprobe show`: show a topology from a file.

use std::time::Instant;

use anyhow::Result;
use topoprobe_infer::load_topology;

use crate::args::ShowArgs;
use crate::commands::infer::stamp;
use crate::output::emit;

/// Runs the command.
pub(crate) fn run(args: &ShowArgs) -> Result<()> {
    let started = Instant::now();
    let mut topo = load_topology(&args.topology, &args.hints.options())?;
    if topo.provenance().created.is_none() {
        stamp(&mut topo, started);
    }
    emit(&topo, &args.output, args.hints.ghz)
}
