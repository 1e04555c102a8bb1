//! `topoprobe mem`: memory latency and bandwidth from every socket to every node.

use anyhow::Result;
use topoprobe_machine::probes::memory;
use topoprobe_measure::memory::kernels::Isa;
use topoprobe_model::results::memory::MemoryResult;

use crate::args::{IsaArg, MemArgs};
use crate::progress::MeasureProgress;

/// Runs the command.
pub(crate) fn run(args: &MemArgs) -> Result<()> {
    args.report.check_for::<MemoryResult>(&[])?;
    let req = memory::MemRequest {
        size: args.size,
        threads: args.threads.map(|t| t as usize),
        all_contexts: args.all,
        non_temporal: args.nt.then_some(true),
        latency_only: args.latency_only,
        isa: args.isa.map(|i| match i {
            IsaArg::Avx512 => Isa::Avx512,
            IsaArg::Avx2 => Isa::Avx2,
            IsaArg::Portable => Isa::Portable,
        }),
        topology: args.topology.clone(),
        budget: args.planning.budget(if args.full {
            topoprobe_measure::memory::full_plan::FULL_BUDGET
        } else {
            topoprobe_measure::memory::DEFAULT_BUDGET
        }),
        full: args.full,
    };
    if args.planning.plan {
        let plan = memory::plan(&req)?;
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let mut progress = MeasureProgress::new();
    let result = memory::measure(&req, &mut |p| progress.show(p))?;
    drop(progress);
    args.report.emit(&result)
}
