//! `topoprobe contention`: memory-access overhead groups and bandwidth scalability.

use anyhow::Result;
use topoprobe_machine::probes::{self, contention};
use topoprobe_model::results::contention::ContentionResult;

use crate::args::ContentionArgs;
use crate::progress::MeasureProgress;

/// Runs the command.
pub(crate) fn run(args: &ContentionArgs) -> Result<()> {
    args.report.check_for::<ContentionResult>(&[])?;
    let mut req = contention::ContentionRequest {
        size: args.size,
        topology: args.topology.clone(),
        ..contention::ContentionRequest::default()
    };
    let (budget, basis) = args.planning.fit_size(
        args.planning.budget_here(probes::DEFAULT_BUDGET),
        "--size",
        args.size,
        |b| {
            contention::plan(&contention::ContentionRequest {
                budget: b,
                ..req.clone()
            })
            .map(|p| probes::memory_needed(&p))
        },
    )?;
    req.budget = budget;
    req.budget_basis = Some(basis);
    if args.planning.plan {
        let plan = contention::plan(&req)?;
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let mut progress = MeasureProgress::new();
    let result = contention::measure(&req, &mut |p| progress.show(p))?;
    drop(progress);
    args.report.emit(&result)
}
