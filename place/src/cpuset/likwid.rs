//! likwid-pin's affinity domains and how it numbers the hardware threads inside them.
//!
//! A domain's threads are listed core after core, each core's threads together, in the
//! machine's order (`N`: the whole machine; `S<i>`: socket `i`; `D<i>`: die `i`; `C<i>`:
//! last-level cache `i`; `M<i>`: NUMA node `i`, by node number). Indexes into a domain
//! (`S1:0-3`) count its threads with the physical cores first: every core's first thread,
//! then every core's second thread, and so on (likwid's `cpulist_sort`). `E:` expressions
//! walk the domain in its own order.

use super::ast::{Domain, DomainKind, IndexItem};
use super::error::{CpuSetError, ErrorKind};
use super::inventory::Inventory;
use super::objects::ObjectType;

/// The object type of a kind of domain, and how many threads a machine's domain of that
/// kind is made of.
fn domains(inv: &Inventory, kind: DomainKind, term: &str) -> Result<Vec<Vec<usize>>, CpuSetError> {
    let ty = match kind {
        DomainKind::Node => return Ok(vec![(0..inv.len()).collect()]),
        DomainKind::Socket => ObjectType::Package,
        DomainKind::Die => ObjectType::Die,
        DomainKind::Memory => ObjectType::NumaNode,
        DomainKind::Cache => last_level(inv, term)?,
    };
    let objects = inv.objects(ty).map_err(|e| CpuSetError {
        term: term.to_string(),
        ..e
    })?;
    let mut order: Vec<usize> = (0..objects.len()).collect();
    if kind == DomainKind::Memory {
        order.sort_by_key(|&i| (objects[i].os_index, i));
    }
    Ok(order.into_iter().map(|i| objects[i].pus.clone()).collect())
}

/// The type of the last-level cache: the deepest-numbered cache level the inventory
/// knows.
fn last_level(inv: &Inventory, term: &str) -> Result<ObjectType, CpuSetError> {
    let levels = [
        ObjectType::L3Cache,
        ObjectType::L2Cache,
        ObjectType::L1Cache,
    ];
    if let Some(&ty) = levels.iter().find(|&&t| inv.count(t).is_ok_and(|n| n > 0)) {
        return Ok(ty);
    }
    let why = inv
        .count(ObjectType::L3Cache)
        .err()
        .map_or_else(|| "the topology has no cache".to_string(), |e| e.reason);
    Err(CpuSetError::new(
        ErrorKind::Unknown,
        term,
        format!("the last-level cache domains need the caches' sharing: {why}"),
    ))
}

/// The threads of a domain, in the domain's order.
///
/// # Errors
///
/// A domain the machine does not have, or whose kind the source does not know.
pub(crate) fn domain(inv: &Inventory, d: Domain, term: &str) -> Result<Vec<usize>, CpuSetError> {
    let mut all = domains(inv, d.kind, term)?;
    let n = all.len();
    let i = d.index as usize;
    if i >= n {
        let letter = d.kind.letter();
        let range = match n {
            0 => String::new(),
            1 => format!(" ({letter}0)"),
            _ => format!(" ({letter}0-{letter}{})", n - 1),
        };
        return Err(CpuSetError::absent(
            term,
            format!(
                "the topology has {n} {} domain{}{range}",
                kind_name(d.kind),
                if n == 1 { "" } else { "s" }
            ),
        ));
    }
    Ok(all.swap_remove(i))
}

/// What a kind of domain is called in messages.
const fn kind_name(kind: DomainKind) -> &'static str {
    match kind {
        DomainKind::Node => "node",
        DomainKind::Socket => "socket",
        DomainKind::Die => "die",
        DomainKind::Cache => "last-level cache",
        DomainKind::Memory => "memory",
    }
}

/// A domain's threads with the physical cores first (likwid's logical numbering).
pub(crate) fn physical_first(inv: &Inventory, threads: &[usize]) -> Vec<usize> {
    let mut v = threads.to_vec();
    v.sort_by_key(|&p| inv.smt_rank(p));
    v
}

/// The threads at `items` of a domain's logical numbering.
///
/// # Errors
///
/// An index past the domain's last thread.
pub(crate) fn indexed(
    inv: &Inventory,
    d: Domain,
    items: &[IndexItem],
    term: &str,
) -> Result<Vec<usize>, CpuSetError> {
    let sorted = physical_first(inv, &domain(inv, d, term)?);
    let n = sorted.len();
    let check = |i: u32| -> Result<usize, CpuSetError> {
        let i = i as usize;
        if i < n {
            Ok(i)
        } else {
            Err(CpuSetError::absent(
                term,
                format!(
                    "index {i}: {} has {n} hardware thread{}{}",
                    tag(d),
                    if n == 1 { "" } else { "s" },
                    if n == 0 {
                        String::new()
                    } else {
                        format!(" (0-{})", n - 1)
                    }
                ),
            ))
        }
    };
    let mut out = Vec::new();
    for &item in items {
        match item {
            IndexItem::One(i) => out.push(sorted[check(i)?]),
            IndexItem::Range(a, b) => {
                let (a, b) = (check(a)?, check(b)?);
                if a <= b {
                    out.extend_from_slice(&sorted[a..=b]);
                } else {
                    out.extend(sorted[b..=a].iter().rev());
                }
            }
            IndexItem::From(a) => out.extend_from_slice(&sorted[check(a)?..]),
            IndexItem::Count(a, k) => {
                let a = check(a)?;
                out.extend((0..k as usize).map(|j| sorted[(a + j) % n]));
            }
        }
    }
    Ok(out)
}

/// The domain's tag (`S1`, `N`).
fn tag(d: Domain) -> String {
    match d.kind {
        DomainKind::Node => "N".to_string(),
        k => format!("{}{}", k.letter(), d.index),
    }
}

/// likwid's `E:<domain>:count:chunk:stride:offset`: from `offset`, `chunk` threads in a
/// row, then on `stride` threads from the chunk's start, wrapping to the domain's start.
///
/// # Errors
///
/// A domain the machine lacks, or an offset past its last thread.
pub(crate) fn expression(
    inv: &Inventory,
    d: Domain,
    count: Option<u32>,
    (chunk, stride, offset): (u32, u32, u32),
    term: &str,
) -> Result<Vec<usize>, CpuSetError> {
    let list = domain(inv, d, term)?;
    let n = list.len();
    let offset = offset as usize;
    if offset >= n {
        return Err(CpuSetError::absent(
            term,
            format!("offset {offset}: {} has {n} hardware threads", tag(d)),
        ));
    }
    // likwid takes as many threads as the machine has when no count is given.
    let count = count.map_or(inv.len(), |c| c as usize);
    let mut out = Vec::new();
    let mut start = 0;
    'walk: for _ in 0..count {
        for j in 0..chunk as usize {
            let at = offset + start + j;
            if at >= n {
                break;
            }
            out.push(list[at]);
            if out.len() == count {
                break 'walk;
            }
        }
        start += stride as usize;
        if offset + start >= n {
            start = 0;
        }
    }
    Ok(out)
}

/// likwid's `S:scatter[:count]`: the first thread of every domain of the kind, then the
/// second of each, and so on, each domain with its physical cores first.
///
/// # Errors
///
/// A kind of domain the source does not know.
pub(crate) fn scatter(
    inv: &Inventory,
    kind: DomainKind,
    count: Option<u32>,
    term: &str,
) -> Result<Vec<usize>, CpuSetError> {
    let lists: Vec<Vec<usize>> = domains(inv, kind, term)?
        .iter()
        .filter(|d| !d.is_empty())
        .map(|d| physical_first(inv, d))
        .collect();
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    let limit = count.map_or(usize::MAX, |c| c as usize);
    let mut out = Vec::new();
    for at in 0..longest {
        for l in &lists {
            if let Some(&p) = l.get(at) {
                if out.len() == limit {
                    return Ok(out);
                }
                out.push(p);
            }
        }
    }
    Ok(out)
}
