//! `topoprobe latency A B`: measure one pair and print its statistics. A pair whose spread
//! stays above the limit is printed with its best batch and flagged (`noisy` in the text and
//! the JSON), not an error.

use anyhow::Result;
use topoprobe_machine::probes::{self, latency};
use topoprobe_model::results::latency::PairLatencyResult;

use crate::args::LatencyArgs;

/// Runs the command.
pub(crate) fn run(args: &LatencyArgs) -> Result<()> {
    args.report.check_for::<PairLatencyResult>(&[])?;
    let req = latency::PairRequest {
        a: args.a,
        b: args.b,
        repetitions: args.repetitions.into(),
        wait: args.wait,
        smt: args.smt,
        budget: args.planning.budget(probes::DEFAULT_BUDGET),
    };
    // What was typed, said before a request this machine cannot measure.
    let typed =
        |e: topoprobe_machine::MachineError| e.typed(&format!("latency {} {}", args.a, args.b));
    if args.planning.plan {
        let plan = latency::plan(&req).map_err(typed)?;
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let result = latency::measure(&req).map_err(typed)?;
    args.report.emit(&result)
}
