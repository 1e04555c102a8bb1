//! `topoprobe cache`: cache sizes and latencies by measurement, beside the OS's.

use anyhow::Result;
use topoprobe_machine::probes::cache;
use topoprobe_measure::cache::Pages;
use topoprobe_model::results::cache::CacheResult;

use crate::args::CacheArgs;
use crate::progress::MeasureProgress;

/// Runs the command.
pub(crate) fn run(args: &CacheArgs) -> Result<()> {
    args.report.check_for::<CacheResult>(&[])?;
    let cpu = args.cpu()?;
    let (budget, basis) = args
        .planning
        .budget_here(topoprobe_measure::cache::DEFAULT_BUDGET);
    let req = cache::CacheRequest {
        cpu: cpu.as_ref().map(|(_, c)| *c),
        max_bytes: args.max_size,
        pages: match (args.huge_pages, args.small_pages) {
            (true, _) => Pages::Huge,
            (false, true) => Pages::Small,
            (false, false) => Pages::Both,
        },
        shared: args.shared,
        topology: args.topology.clone(),
        curve: args.curve,
        budget,
        budget_basis: Some(basis),
    };
    // The CPU as it was typed, said before a CPU this process may not use.
    let typed = |e: topoprobe_machine::MachineError| match &cpu {
        Some((typed, _)) => e.typed(typed),
        None => e,
    };
    if args.planning.plan {
        let plan = cache::plan(&req).map_err(typed)?;
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let mut progress = MeasureProgress::new();
    let result = cache::measure(&req, &mut |p| progress.show(p)).map_err(typed)?;
    drop(progress);
    args.report.emit(&result)
}
