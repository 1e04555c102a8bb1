//! `topoprobe power`: RAPL power of every socket under libmctop's load states.
//!
//! Where the machine has no usable energy counters, the command prints
//! `power: unavailable: <reason>` (`"unavailable": "<reason>"` in the JSON) and exits 1:
//! it measured nothing it exists for. Availability is checked before this machine's
//! description is loaded, so that it is reported even where none exists yet (a
//! `--topology FILE` is read first, and refused when bad).
//!
//! The topology comes from `--topology FILE`, or else from this machine's description
//! (`topoprobe infer` writes it); without one the command measures the sockets of the
//! OS's view and says so in a note, as `mem`, `cache --shared` and `contention` do.

use std::time::Duration;

use anyhow::{bail, Result};
use topoprobe_machine::probes::{self, power};
use topoprobe_model::results::power::PowerResult;

use crate::args::PowerArgs;
use crate::progress::MeasureProgress;

/// Runs the command.
pub(crate) fn run(args: &PowerArgs) -> Result<()> {
    args.report.check_for::<PowerResult>(&[])?;
    let req = power::PowerRequest {
        duration: Duration::from_secs_f64(args.duration),
        powercap_root: args.powercap_root.clone(),
        topology: args.topology.clone(),
        budget: args.planning.budget(probes::DEFAULT_BUDGET),
    };
    if args.planning.plan {
        let plan = power::plan(&req)?;
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let mut progress = MeasureProgress::new();
    let result = power::measure(&req, &mut |p| progress.show(p))?;
    drop(progress);
    args.report.emit(&result)?;
    if let Some(reason) = &result.unavailable {
        bail!("nothing measured: power is unavailable: {reason}");
    }
    Ok(())
}
