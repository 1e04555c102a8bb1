//! `topoprobe mem --c2c`: the cache-to-cache transfers planned from the topology and run
//! with the kernels `bench line-ops` runs too ([`topoprobe_measure::cache_to_cache`]),
//! after the memory measurement.

use anyhow::Result;
use topoprobe_measure::cache_to_cache::{self, C2cError, C2cPlan};
use topoprobe_model::results::cache_to_cache::CacheToCacheResult;
use topoprobe_model::{Budget, CostPlan};
use topoprobe_place::WorkError;
use topoprobe_sync::SyncError;

use crate::args::MemArgs;
use crate::commands::bench::sync_error;

/// The plan of the transfers `args` ask for (`None` without `--c2c`).
///
/// # Errors
///
/// Rounds out of range (a usage error), or a topology that cannot be loaded.
pub(crate) fn plan(args: &MemArgs) -> Result<Option<C2cPlan>> {
    if !args.c2c.c2c {
        return Ok(None);
    }
    // Without a description, the OS's view (the memory result's notes say so).
    let topo = topoprobe_machine::load::topology_or_os(args.topology.as_deref())?.topology;
    let budget = Budget::new(
        args.c2c
            .c2c_budget
            .unwrap_or(cache_to_cache::DEFAULT_BUDGET.seconds),
        cache_to_cache::DEFAULT_BUDGET.bytes,
    );
    let rounds = args
        .c2c
        .c2c_rounds
        .unwrap_or(cache_to_cache::DEFAULT_ROUNDS);
    Ok(Some(
        cache_to_cache::plan(&topo, rounds, budget).map_err(c2c_error)?,
    ))
}

/// An error of the transfers, said as `bench line-ops` says it, but naming this command's
/// flags: rounds out of range are a usage error naming `--c2c-rounds`.
fn c2c_error(e: C2cError) -> anyhow::Error {
    match SyncError::from(e) {
        SyncError::Work(WorkError::Parameter {
            what: "rounds",
            value,
            expected,
        }) => sync_error(SyncError::Work(WorkError::Parameter {
            what: "c2c-rounds",
            value,
            expected,
        })),
        other => sync_error(other),
    }
}

/// The memory plan followed by the transfers' under the two budgets together.
#[must_use]
pub(crate) fn combined(memory: CostPlan, c2c: &C2cPlan) -> CostPlan {
    let budget = Budget::new(
        memory.budget.seconds + c2c.cost.budget.seconds,
        memory.budget.bytes.max(c2c.cost.budget.bytes),
    );
    let mut all = CostPlan::of(budget, memory.steps, memory.left_out);
    all.extend(c2c.cost.clone());
    all
}

/// Runs the transfers, naming each step to `step`; warns when the figures are a guest's.
///
/// # Errors
///
/// A thread that cannot be pinned, a buffer that cannot be bound to its node.
pub(crate) fn run(plan: C2cPlan, step: &mut dyn FnMut(&str)) -> Result<CacheToCacheResult> {
    topoprobe_machine::probes::cache_to_cache::run(plan, step).map_err(c2c_error)
}
