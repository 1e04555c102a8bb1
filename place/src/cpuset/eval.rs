//! Resolving parsed terms against an [`Inventory`]: what each names, combined left to
//! right into an ordered set.
//!
//! The set keeps the order CPUs were added in (a CPU added again after `~` takes its new
//! place). Each term costs time in proportion to its text and to the CPUs it names, and
//! an intersection to the CPUs in the set: repeated ranges are never merged pairwise.

use super::ast::{Atom, IndexItem, Op, OsItem, Selection, Step, Term};
use super::error::{CpuSetError, ErrorKind};
use super::inventory::Inventory;
use super::likwid;
use super::objects::ObjectType;
use super::Resolved;

/// An ordered set of PUs: entries in the order added; an entry is live while the PU's
/// stamp points at it.
struct OrderedSet {
    /// For each PU, 1 + the position of its live entry in `order`, or 0.
    stamp: Vec<usize>,
    /// PUs in the order added (dead entries included until compacted).
    order: Vec<usize>,
}

impl OrderedSet {
    fn new(n: usize) -> Self {
        Self {
            stamp: vec![0; n],
            order: Vec::new(),
        }
    }

    fn contains(&self, p: usize) -> bool {
        self.stamp[p] != 0
    }

    fn add(&mut self, p: usize) {
        if self.stamp[p] == 0 {
            self.order.push(p);
            self.stamp[p] = self.order.len();
        }
    }

    fn remove(&mut self, p: usize) {
        self.stamp[p] = 0;
    }

    /// Drops the dead entries.
    fn compact(&mut self) {
        let old = std::mem::take(&mut self.order);
        for (i, p) in old.into_iter().enumerate() {
            if self.stamp[p] == i + 1 {
                self.order.push(p);
                self.stamp[p] = self.order.len();
            }
        }
    }

    /// The live PUs, in order.
    fn into_order(mut self) -> Vec<usize> {
        self.compact();
        self.order
    }
}

/// Resolves `terms` against `inv`.
///
/// # Errors
///
/// The first term that names what the inventory lacks.
pub(crate) fn resolve(terms: &[Term], inv: &Inventory) -> Result<Resolved, CpuSetError> {
    let mut set = OrderedSet::new(inv.len());
    let mut seen = vec![false; inv.len()];
    for term in terms {
        let mut named = pus_of(term, inv)?;
        // A term's own repeats count once (`^core:0,0` toggles core 0 once).
        named.retain(|&p| !std::mem::replace(&mut seen[p], true));
        for &p in &named {
            seen[p] = false;
        }
        match term.op {
            Op::Union => named.iter().for_each(|&p| set.add(p)),
            Op::Clear => named.iter().for_each(|&p| set.remove(p)),
            Op::Xor => {
                for &p in &named {
                    if set.contains(p) {
                        set.remove(p);
                    } else {
                        set.add(p);
                    }
                }
            }
            Op::Intersect => {
                set.compact();
                for &p in &named {
                    seen[p] = true;
                }
                let live = set.order.clone();
                for p in live {
                    if !seen[p] {
                        set.remove(p);
                    }
                }
                for &p in &named {
                    seen[p] = false;
                }
            }
        }
    }
    let order: Vec<u32> = set.into_order().into_iter().map(|p| inv.os_of(p)).collect();
    let mut cpus = order.clone();
    cpus.sort_unstable();
    Ok(Resolved { cpus, order })
}

/// The PUs a term names, in its order (repeats possible).
fn pus_of(term: &Term, inv: &Inventory) -> Result<Vec<usize>, CpuSetError> {
    let t = term.text.as_str();
    let with_term = |e: CpuSetError| {
        if e.term.is_empty() {
            CpuSetError {
                term: t.to_string(),
                ..e
            }
        } else {
            e
        }
    };
    match &term.atom {
        Atom::Os(items) => os_items(items, inv, t),
        Atom::Mask(bits) => numbers(bits.iter().copied(), inv, t),
        Atom::All => inv
            .objects(ObjectType::Machine)
            .map_err(with_term)
            .map(|m| m[0].pus.clone()),
        Atom::Location(steps) => location(steps, inv, t).map_err(with_term),
        Atom::Domain(d, None) => likwid::domain(inv, *d, t),
        Atom::Domain(d, Some(items)) => likwid::indexed(inv, *d, items, t),
        Atom::Expression {
            domain,
            count,
            chunk,
            stride,
            offset,
        } => likwid::expression(inv, *domain, *count, (*chunk, *stride, *offset), t),
        Atom::Scatter { kind, count } => likwid::scatter(inv, *kind, *count, t),
    }
}

/// The PUs of an operating-system list. A range is walked only up to the machine's
/// largest CPU number; what lies above it is missing as a whole, so that a list repeating
/// `0-1048575` a thousand times costs the machine's size a thousand times, not a billion
/// steps and gigabytes of missing numbers.
fn os_items(items: &[OsItem], inv: &Inventory, term: &str) -> Result<Vec<usize>, CpuSetError> {
    let top = inv.max_os();
    let mut out = Vec::new();
    let mut missing = Missing::default();
    for &item in items {
        let (lo, hi, used, group) = match item {
            OsItem::One(c) => (c, c, 1, 1),
            OsItem::Range {
                lo,
                hi,
                used,
                group,
            } => (lo, hi, used, group),
        };
        if lo <= top {
            for c in (lo..=hi.min(top)).filter(|c| (c - lo) % group < used) {
                match inv.pu_of(c) {
                    Some(p) => out.push(p),
                    None => missing.add(c, c),
                }
            }
        }
        if hi > top {
            // Every number above the machine's largest is missing (the first one of the
            // stride at or above `top + 1` starts the range).
            let from = lo.max(top.saturating_add(1));
            missing.add(from, hi);
        }
    }
    missing.into_error(out, inv, term)
}

/// The PUs of OS numbers; every one must be a CPU of the machine.
fn numbers(
    cpus: impl Iterator<Item = u32>,
    inv: &Inventory,
    term: &str,
) -> Result<Vec<usize>, CpuSetError> {
    let mut out = Vec::new();
    let mut missing = Missing::default();
    for c in cpus {
        match inv.pu_of(c) {
            Some(p) => out.push(p),
            None => missing.add(c, c),
        }
    }
    missing.into_error(out, inv, term)
}

/// CPU numbers an expression names that the machine lacks: the first few ranges, and
/// whether there were any (bounded, however many are named).
#[derive(Default)]
struct Missing {
    ranges: Vec<(u32, u32)>,
    more: bool,
}

impl Missing {
    /// Ranges kept for the message.
    const SHOWN: usize = 16;

    fn add(&mut self, lo: u32, hi: u32) {
        if let Some(last) = self.ranges.last_mut() {
            if lo <= last.1.saturating_add(1) && lo >= last.0 {
                last.1 = last.1.max(hi);
                return;
            }
            if self.ranges.iter().any(|&(a, b)| a <= lo && hi <= b) {
                return;
            }
        }
        if self.ranges.len() < Self::SHOWN {
            self.ranges.push((lo, hi));
        } else {
            self.more = true;
        }
    }

    /// `Ok(out)` when nothing is missing, else the error naming what is.
    fn into_error(
        self,
        out: Vec<usize>,
        inv: &Inventory,
        term: &str,
    ) -> Result<Vec<usize>, CpuSetError> {
        if self.ranges.is_empty() {
            return Ok(out);
        }
        let one = self.ranges.len() == 1 && self.ranges[0].0 == self.ranges[0].1;
        let mut shown: Vec<String> = self
            .ranges
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        if self.more {
            shown.push("...".into());
        }
        let missing = shown.join(",");
        let (noun, what) = if one {
            ("CPU", "is not a hardware context")
        } else {
            ("CPUs", "are not hardware contexts")
        };
        Err(CpuSetError::absent(
            term,
            format!(
                "{noun} {missing} {what} of the topology (its CPUs: {})",
                inv.cpus_text()
            ),
        ))
    }
}

/// An object chosen by a step: its type and logical index.
#[derive(Clone, Copy)]
struct Chosen {
    ty: ObjectType,
    index: usize,
}

/// The PUs of an hwloc location: each step's objects inside each object the previous
/// step chose, by logical index among them. Inside several objects (`core:all.pu:1` on a
/// hybrid machine), one lacking an index is passed over, as hwloc passes over it; the
/// term is refused when none has it.
fn location(steps: &[Step], inv: &Inventory, term: &str) -> Result<Vec<usize>, CpuSetError> {
    let mut chosen: Vec<Option<Chosen>> = vec![None];
    for step in steps {
        let objects = inv.objects(step.ty)?;
        let several = chosen.len() > 1;
        let mut refused = None;
        let mut next = Vec::new();
        for parent in &chosen {
            let candidates: Vec<usize> = match parent {
                None => (0..objects.len()).collect(),
                Some(p) => inside(inv, *p, step.ty)?,
            };
            let scope = parent.map_or_else(
                || "the topology".to_string(),
                |p| format!("{}:{}", p.ty.name(), p.index),
            );
            let picked = match select(&step.selection, candidates.len(), step.ty, &scope, term) {
                Ok(picked) => picked,
                Err(e) if several => {
                    refused.get_or_insert(e);
                    clipped(&step.selection, candidates.len())
                }
                Err(e) => return Err(e),
            };
            next.extend(picked.into_iter().map(|i| {
                Some(Chosen {
                    ty: step.ty,
                    index: candidates[i],
                })
            }));
        }
        if let (true, Some(e)) = (next.is_empty(), refused) {
            return Err(e);
        }
        chosen = next;
    }
    let mut out = Vec::new();
    for c in chosen.into_iter().flatten() {
        out.extend_from_slice(&inv.objects(c.ty)?[c.index].pus);
    }
    Ok(out)
}

/// The logical indexes of the objects of type `ty` inside `parent` (their PUs all in
/// it), ascending.
fn inside(inv: &Inventory, parent: Chosen, ty: ObjectType) -> Result<Vec<usize>, CpuSetError> {
    let within = &inv.objects(parent.ty)?[parent.index].pus;
    let objects = inv.objects(ty)?;
    let mut found: Vec<usize> = within.iter().filter_map(|&p| inv.owner(ty, p)).collect();
    found.sort_unstable();
    found.dedup();
    found.retain(|&o| {
        objects[o]
            .pus
            .iter()
            .all(|p| within.binary_search(p).is_ok())
    });
    Ok(found)
}

/// The positions a selection takes among `n` candidates.
fn select(
    selection: &Selection,
    n: usize,
    ty: ObjectType,
    scope: &str,
    term: &str,
) -> Result<Vec<usize>, CpuSetError> {
    let out_of_range = || {
        let range = match n {
            0 => String::new(),
            1 => " (0)".to_string(),
            _ => format!(" (0-{})", n - 1),
        };
        let verb = if scope == "the topology" {
            "has"
        } else {
            "holds"
        };
        CpuSetError::absent(term, format!("{scope} {verb} {}{range}", ty.count_text(n)))
    };
    let check = |i: u32| {
        let i = i as usize;
        if i < n {
            Ok(i)
        } else {
            Err(out_of_range())
        }
    };
    Ok(match selection {
        Selection::All => (0..n).collect(),
        Selection::Odd => (1..n).step_by(2).collect(),
        Selection::Even => (0..n).step_by(2).collect(),
        Selection::Items(items) => {
            let mut out = Vec::new();
            for &item in items {
                match item {
                    IndexItem::One(i) => out.push(check(i)?),
                    IndexItem::Range(a, b) => {
                        let (a, b) = (check(a)?, check(b)?);
                        out.extend(a..=b);
                    }
                    IndexItem::From(a) => out.extend(check(a)?..n),
                    IndexItem::Count(a, k) => {
                        // The count wraps around past the last object (as hwloc's);
                        // after n objects they repeat.
                        let a = check(a)?;
                        out.extend((0..(k as usize).min(n)).map(|j| (a + j) % n));
                    }
                }
            }
            out
        }
    })
}

/// The positions of a selection that exist among `n` candidates (ranges cut at the last).
fn clipped(selection: &Selection, n: usize) -> Vec<usize> {
    let Selection::Items(items) = selection else {
        // all, odd and even always fit.
        return Vec::new();
    };
    let mut out = Vec::new();
    for &item in items {
        match item {
            IndexItem::One(i) if (i as usize) < n => out.push(i as usize),
            IndexItem::Range(a, b) if (a as usize) < n => {
                out.extend(a as usize..=(b as usize).min(n - 1));
            }
            IndexItem::From(a) if (a as usize) < n => out.extend(a as usize..n),
            IndexItem::Count(a, k) if (a as usize) < n => {
                out.extend((0..(k as usize).min(n)).map(|j| (a as usize + j) % n));
            }
            _ => {}
        }
    }
    out
}

/// Checks that no term needs a topology.
///
/// # Errors
///
/// [`ErrorKind::NeedsTopology`] naming the first term that does.
pub(crate) fn plain(terms: &[Term]) -> Result<(), CpuSetError> {
    match terms.iter().find(|t| t.atom.needs_topology()) {
        Some(t) => Err(CpuSetError::new(
            ErrorKind::NeedsTopology,
            &t.text,
            "names objects of a topology, and none is given here: use CPU numbers (`0-3`) or a mask",
        )),
        None => Ok(()),
    }
}
