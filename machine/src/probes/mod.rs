//! The measuring commands as library calls: one pair's latency ([`latency`]), the latency
//! matrix ([`matrix`]), caches ([`cache`]), memory ([`memory`]), cache-to-cache transfers
//! ([`cache_to_cache`]), contention ([`contention`]) and power ([`power`]).
//!
//! Each module takes a request (what the user asked for), checks it before any work
//! (a request the machine can never satisfy is a [`MachineError`] whose
//! [`is_usage`](MachineError::is_usage) is true), plans it within its budget (`plan`, the
//! dry run of `--plan`) and measures it (`measure`), returning a result of
//! [`topoprobe_model::results`] that `topoprobe-view` renders. Progress is reported as the
//! whole measurement's is ([`Progress`]): the plan, then its steps.
//!
//! ```no_run
//! use topoprobe_machine::probes::latency::{self, PairRequest};
//!
//! let r = latency::measure(&PairRequest::new(0, 1))?;
//! println!("{:.1} ns one way", r.median_ns);
//! # Ok::<(), topoprobe_machine::MachineError>(())
//! ```

use topoprobe_model::{Budget, CostPlan};

use crate::{MachineError, Progress};

pub mod cache;
pub mod cache_to_cache;
pub mod contention;
pub mod latency;
pub mod matrix;
pub mod memory;
pub mod power;

/// The budget of a measuring command by default: 15 s and 512 MiB.
pub const DEFAULT_BUDGET: Budget = Budget::new(15.0, 512 << 20);

/// The budget of a run whose default is `default` on this machine: the default memory
/// grows with the last-level cache, within a share of the memory available now
/// ([`topoprobe_measure::plan::scaled_memory`]); the time is kept. Returns the sentence
/// that says how the memory budget was chosen, for the plan ([`CostPlan::basis`]).
#[must_use]
pub fn budget_here(default: Budget) -> (Budget, String) {
    let llc =
        os_view().and_then(|os| topoprobe_measure::plan::Shape::from_os(&os, &[]).largest_llc());
    let (bytes, basis) = topoprobe_measure::plan::scaled_memory(
        default.bytes,
        llc,
        topoprobe_measure::os::available_bytes(),
    );
    (Budget::new(default.seconds, bytes), basis)
}

/// The memory a plan needs at once: its largest step's buffers and the process besides
/// ([`topoprobe_measure::plan::PROCESS_BYTES`]), in whole MiB: the memory budget that would
/// fit it.
#[must_use]
pub fn memory_needed(plan: &CostPlan) -> u64 {
    let mib = topoprobe_measure::plan::MIB;
    plan.peak_bytes()
        .saturating_add(topoprobe_measure::plan::PROCESS_BYTES)
        .div_ceil(mib)
        .saturating_mul(mib)
}

/// Checks that a plan made for a size the user gave (`option` `size`, `--size 1G`) keeps
/// within its memory budget: an explicit size is bounded by the budget as a planned one
/// is, and refused with the budget that would fit.
///
/// # Errors
///
/// [`MachineError::OverBudget`] (a usage error) naming the size, what it needs and the
/// `--max-memory` that would fit.
pub fn size_within_budget(
    plan: &CostPlan,
    option: &str,
    size: Option<u64>,
) -> Result<(), MachineError> {
    let Some(size) = size else {
        return Ok(());
    };
    let need = memory_needed(plan);
    if need <= plan.budget.bytes {
        return Ok(());
    }
    let text = topoprobe_measure::cache::check::size_text;
    Err(MachineError::OverBudget(format!(
        "{option} {} needs {} of memory at once (its largest step's buffers and the process), \
         over the {} memory budget: give --max-memory {}M or more, or a smaller {option}",
        text(size),
        text(need),
        text(plan.budget.bytes),
        need >> 20
    )))
}

/// Reports `plan` and its first step to `progress`.
fn started(plan: &CostPlan, progress: &mut dyn FnMut(Progress<'_>)) {
    progress(Progress::Plan(plan));
    if let Some(first) = plan.steps.first() {
        progress(Progress::Step(&first.what));
    }
}

/// The topology at `path` or this machine's description, else this machine's OS view
/// with the sentence that says so ([`crate::load::topology_or_os`]): a measuring command
/// runs on a machine `topoprobe infer` has not measured yet.
fn topology(
    path: Option<&std::path::Path>,
) -> Result<(topoprobe_model::Topology, Option<String>), MachineError> {
    crate::load::topology_or_os(path).map(|l| (l.topology, l.note))
}

/// This machine's OS view, when it can be read.
fn os_view() -> Option<topoprobe_model::OsView> {
    topoprobe_measure::os::current().ok()
}

/// Checks that `cpu` may be used, or finds the first CPU this process may use.
fn one_cpu(cpu: Option<u32>) -> Result<u32, MachineError> {
    if let Some(c) = cpu {
        crate::pairs::check_available(&[c])?;
        return Ok(c);
    }
    crate::pairs::select_cpus(None)?
        .first()
        .copied()
        .ok_or_else(|| MachineError::Cpus("this process may use no CPU".into()))
}
