//! `topoprobe mem`: memory latency and bandwidth from every socket to every node.

use anyhow::Result;
use topoprobe_machine::probes::memory;
use topoprobe_machine::Progress;
use topoprobe_measure::memory::kernels::Isa;
use topoprobe_measure::memory::MemOptions;
use topoprobe_model::results::memory::MemoryResult;

use crate::args::MemArgs;
use crate::progress::MeasureProgress;

/// Runs the command.
pub(crate) fn run(args: &MemArgs) -> Result<()> {
    args.report.check_for::<MemoryResult>(&[])?;
    let (budget, basis) = args.planning.budget_here(if args.full {
        topoprobe_measure::memory::full_plan::FULL_BUDGET
    } else {
        topoprobe_measure::memory::DEFAULT_BUDGET
    });
    let mut req = memory::MemRequest {
        options: MemOptions {
            size: args.size,
            threads: args.threads.map(|t| t as usize),
            all_contexts: args.all,
            non_temporal: args.nt.then_some(true),
            latency_only: args.latency_only,
            isa: args.isa.unwrap_or_else(Isa::detect),
            budget,
            full: args.full,
            ..MemOptions::default()
        },
        topology: args.topology.clone(),
        budget_basis: None,
    };
    // An explicit --size is planned within the budget: the default grows to what it needs.
    let (budget, basis) = args
        .planning
        .fit_size((budget, basis), "--size", args.size, |b| {
            let mut req = req.clone();
            req.options.budget = b;
            memory::plan(&req).map(|p| topoprobe_machine::probes::memory_needed(&p))
        })?;
    req.options.budget = budget;
    req.budget_basis = Some(basis);
    let c2c = super::mem_c2c::plan(args)?;
    if args.planning.plan {
        let mut plan = memory::plan(&req)?;
        if let Some(c2c) = &c2c {
            plan = super::mem_c2c::combined(plan, c2c);
        }
        return crate::planned::print(&plan, args.report.is_json()?, args.report.output.as_deref());
    }
    let mut progress = MeasureProgress::new();
    let mut result = memory::measure(&req, &mut |p| progress.show(p))?;
    if let Some(c2c) = c2c {
        progress.show(Progress::Plan(&c2c.cost));
        let transfers = super::mem_c2c::run(c2c, &mut |s| progress.show(Progress::Step(s)))?;
        progress.show(Progress::StepsDone);
        result.detail.cache_to_cache = Some(transfers);
    }
    drop(progress);
    args.report.emit(&result)
}
