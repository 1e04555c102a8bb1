//! Every `--cpus` of the command line: a CPU-set expression
//! ([`topoprobe_place::cpuset`]: CPU lists, masks, hwloc locations, likwid domains, set
//! arithmetic) resolved against the topology the command works on, or, for the commands
//! that measure this machine, against the operating system's view of it (read only when
//! the expression names more than CPU numbers).

use anyhow::{Context, Result};
use topoprobe_model::format::elided;
use topoprobe_model::Topology;
use topoprobe_place::cpuset::{CpuSetError, CpuSetExpr, Inventory, Resolved};
use topoprobe_sys::CpuSet;

use crate::error::Usage;

/// The usage error of `text`, given to `flag` (empty: the command's own arguments): the
/// flag, the expression when the error names only a part of it, and what is wrong.
pub(crate) fn usage(flag: &str, text: &str, e: &CpuSetError) -> Usage {
    let whole = e.term.is_empty() || e.term == text.trim();
    let text = elided(text);
    Usage(match (flag.is_empty(), whole) {
        (true, true) => e.to_string(),
        (true, false) => format!("{text:?}: {e}"),
        (false, true) => format!("{flag} {e}"),
        (false, false) => format!("{flag} {text:?}: {e}"),
    })
}

/// Parses `text`, given to `flag`.
///
/// # Errors
///
/// A usage error naming the term at fault.
pub(crate) fn parse(flag: &str, text: &str) -> Result<CpuSetExpr, Usage> {
    CpuSetExpr::parse(text).map_err(|e| usage(flag, text, &e))
}

/// The CPUs `resolved` holds, or a usage error when it holds none.
fn some(flag: &str, text: &str, resolved: Resolved) -> Result<Vec<u32>, Usage> {
    if resolved.cpus.is_empty() {
        return Err(Usage(format!("{flag} {:?} names no CPU", elided(text))));
    }
    Ok(resolved.cpus)
}

/// The CPUs (ascending) `text` names on `topo`: `--cpus` of `place` and `run`.
///
/// # Errors
///
/// A usage error when the expression is malformed, names what the topology lacks, or
/// names no CPU.
pub(crate) fn on_topology(flag: &str, text: &str, topo: &Topology) -> Result<Vec<u32>, Usage> {
    let expr = parse(flag, text)?;
    let resolved = expr
        .resolve(&Inventory::from_topology(topo))
        .map_err(|e| usage(flag, text, &e))?;
    some(flag, text, resolved)
}

/// The CPUs `text` names on `topo` in the order it names them (likwid's order for likwid
/// domains, hwloc's logical order for locations, as typed for lists): `--pin`.
///
/// # Errors
///
/// As [`on_topology`].
pub(crate) fn ordered_on_topology(
    flag: &str,
    text: &str,
    topo: &Topology,
) -> Result<Vec<u32>, Usage> {
    let expr = parse(flag, text)?;
    let resolved = expr
        .resolve(&Inventory::from_topology(topo))
        .map_err(|e| usage(flag, text, &e))?;
    if resolved.order.is_empty() {
        return Err(Usage(format!("{flag} {:?} names no CPU", elided(text))));
    }
    Ok(resolved.order)
}

/// The objects of this machine as the operating system reports them, for `flag`.
///
/// # Errors
///
/// When the operating system's view cannot be read.
fn this_machine(flag: &str) -> Result<Inventory> {
    let view = topoprobe_measure::os::current().with_context(|| {
        format!("reading the operating system's view of this machine for {flag}")
    })?;
    Ok(Inventory::from_os_view(&view))
}

/// `text` resolved on this machine: CPU numbers and masks as they are, anything else on
/// the operating system's view of it (hwloc's and likwid's names mean what those tools
/// mean, the OS's objects, whatever a measured description says).
///
/// # Errors
///
/// A usage error when the expression is malformed or names what the machine lacks; an
/// error when the operating system's view cannot be read.
fn resolved_on_this_machine(flag: &str, text: &str) -> Result<Resolved> {
    let expr = parse(flag, text)?;
    let resolved = if expr.needs_topology() {
        expr.resolve(&this_machine(flag)?)
    } else {
        expr.resolve_numbers()
    };
    Ok(resolved.map_err(|e| usage(flag, text, &e))?)
}

/// The CPUs `text` names on this machine in the order it names them (as
/// [`ordered_on_topology`]).
///
/// # Errors
///
/// As [`on_this_machine`].
pub(crate) fn ordered_on_this_machine(flag: &str, text: &str) -> Result<Vec<u32>> {
    let resolved = resolved_on_this_machine(flag, text)?;
    if resolved.order.is_empty() {
        return Err(Usage(format!("{flag} {:?} names no CPU", elided(text))).into());
    }
    Ok(resolved.order)
}

/// The CPUs (ascending) `text` names on this machine ([`resolved_on_this_machine`]).
///
/// # Errors
///
/// A usage error when the expression is malformed, names what the machine lacks, or
/// names no CPU; an error when the operating system's view cannot be read.
pub(crate) fn on_this_machine(flag: &str, text: &str) -> Result<Vec<u32>> {
    let resolved = resolved_on_this_machine(flag, text)?;
    Ok(some(flag, text, resolved)?)
}

/// `--cpus` of a command that measures this machine, as the set the measurement takes,
/// after checking that this process may run on every CPU it names.
///
/// # Errors
///
/// As [`on_this_machine`]; a usage error naming the CPUs this process may not use.
pub(crate) fn measured(cpus: Option<&str>) -> Result<Option<CpuSet>> {
    let Some(text) = cpus else {
        return Ok(None);
    };
    let cpus = on_this_machine("--cpus", text)?;
    topoprobe_machine::pairs::check_available(&cpus)
        .map_err(|e| e.typed(&format!("--cpus {}", elided(text))))?;
    Ok(Some(cpus.into_iter().collect()))
}
