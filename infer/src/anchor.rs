//! Where the latencies say nothing, the operating system's structure stands.
//!
//! A live measurement is inferred from its latencies alone, then held against what the
//! OS says of the same CPUs ([`anchor_to_os`]). The latencies may refine or contradict
//! the OS only where they clearly support it:
//!
//! - **A table of the scheduler says nothing.** When even the fastest pairs are slower
//!   than any cache-line transfer of real hardware ([`HARDWARE_MAX_NS`]), the probe timed
//!   the scheduler (an emulated or oversubscribed guest, a saturated host), and the OS's
//!   cores, groups and sockets stand, with the measured latencies attached to them.
//! - **A difference needs a gap.** Where the inferred cores or sockets differ from the
//!   OS's, the inferred sets are kept only when the pairs they separate are clearly slower
//!   than the pairs they join (the 10th percentile of the first at least 1.12 × the 90th
//!   percentile of the second: the gap between two latency classes).
//! - **An absence needs a physical reason.** Where the inference finds no SMT or one
//!   socket and the OS lists siblings or several packages, the absence is kept only when
//!   the OS's boundary shows no gap *and* the OS's pairs are where the hardware cannot
//!   be: siblings slower than an SMT transfer (20 ns), packages closer than a chip-to-chip
//!   link (100 ns). A wide, noisy table could hide a boundary; it does not remove one.
//!
//! The gap is quoted in a `differs_from_os` warning where the measured structure stands.
//! Otherwise the OS's structure stands and a `structure_from_os` warning says which
//! level the latencies could not support and why. Hints given on the command line
//! (`--sockets`, `--smt`) are the user's word: a description made with them is left as
//! it is.

use std::collections::BTreeMap;

use topoprobe_model::format::plural;
use topoprobe_model::{
    format_cpu_list, LatencyMatrix, LatencyUnit, Origin, OsView, Parent, Provenance, Topology,
    Warning, WarningKind,
};

use crate::assemble::{Shared, SharedComponent};
use crate::levels::MIN_GAP;
use crate::roles::smt::SMT_MAX_NS;
use crate::roles::sockets::SOCKET_MIN_NS;
use crate::table::{quantile, Table};
use crate::{Collected, FlaggedPair, InferOptions};

/// No cache-line transfer between two hardware contexts of a real machine takes this
/// long (ns): the slowest links of 8-socket machines stay well under it. When the fastest
/// pairs of a table are slower, the probe measured the scheduler, not the hardware.
pub const HARDWARE_MAX_NS: f64 = 1000.0;

/// The share of pairs whose latency must lie above [`HARDWARE_MAX_NS`] for the table to
/// be read as timing the scheduler: all but the fastest 5 %.
const FASTEST_SHARE: f64 = 0.05;

/// The kinds of warning the inference gives about the structure it found (not about the
/// measurement): left out when the OS's structure replaces it.
const STRUCTURE_KINDS: [WarningKind; 11] = [
    WarningKind::ProfilePairs,
    WarningKind::WeakGroups,
    WarningKind::FarCores,
    WarningKind::OddCores,
    WarningKind::Core,
    WarningKind::HintContradicted,
    WarningKind::GroupsFromOs,
    WarningKind::InvertedGroup,
    WarningKind::ProfileGroups,
    WarningKind::HomeNode,
    WarningKind::Flat,
];

/// Quantiles compared across a boundary: the fast end of the separated pairs against the
/// slow end of the joined ones.
const LOW_QUANTILE: f64 = 0.1;
const HIGH_QUANTILE: f64 = 0.9;

/// Holds the inferred description `topo` (rows: its contexts) against the OS view `os`,
/// and returns it unchanged where its latencies support it, or the OS's structure of the
/// same CPUs with the measured latencies, flagged, where they do not (see the module
/// documentation). Nothing changes when a measured CPU is unknown to the OS, when the
/// description's sockets or SMT were given as hints, or when its latency table cannot be
/// read.
#[must_use]
pub fn anchor_to_os(topo: Topology, os: &OsView) -> Topology {
    let facts = topo.facts();
    if facts.sockets.origin == Origin::Given || facts.smt.origin == Origin::Given {
        return topo;
    }
    let ids: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
    if ids.iter().any(|c| os.cpu(*c).is_none()) {
        return topo;
    }
    let view = os.restricted(&ids, None);
    let Ok(table) = Table::new(&topo.latency_tables().raw) else {
        return topo;
    };
    let os_core = label_rows(&ids, &view.cores());
    let os_socket = label_rows(&ids, &view.packages().into_values().collect::<Vec<_>>());
    let inferred_core: Vec<usize> = topo.contexts().iter().map(|c| c.core.0).collect();
    let inferred_socket: Vec<usize> = topo.contexts().iter().map(|c| c.socket.0).collect();

    let silence = scheduler_table(&table, topo.units());
    let mut refused = Vec::new();
    let mut kept = Vec::new();
    if let Some(why) = &silence {
        if !same_partition(&inferred_core, &os_core)
            || !same_partition(&inferred_socket, &os_socket)
        {
            refused.push(why.clone());
        }
    } else {
        for (level, inferred, os_side) in [
            (Level::Cores, &inferred_core, &os_core),
            (Level::Sockets, &inferred_socket, &os_socket),
        ] {
            match judge(&table, &ids, level, inferred, os_side) {
                Verdict::Agree => {}
                Verdict::Backed(quote) => kept.push(quote),
                Verdict::Unsupported(quote) => refused.push(quote),
            }
        }
    }
    if refused.is_empty() {
        let mut topo = topo;
        for quote in kept {
            topo.validation_mut()
                .warnings
                .push(Warning::new(WarningKind::DiffersFromOs, quote));
        }
        return topo;
    }
    match os_structure(&topo, &view, &ids) {
        Some(mut anchored) => {
            let message = format!(
                "the latencies do not support a structure other than the OS's, which is \
                 kept (cores, groups and sockets as the OS lists them, with the measured \
                 latencies): {}",
                refused.join("; ")
            );
            anchored
                .validation_mut()
                .warnings
                .push(Warning::new(WarningKind::StructureFromOs, message));
            anchored
        }
        None => topo,
    }
}

/// The structural levels held against the OS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Cores,
    Sockets,
}

impl Level {
    /// The unit of the level (plural), as the messages name it.
    fn units(self) -> &'static str {
        match self {
            Self::Cores => "cores",
            Self::Sockets => "sockets",
        }
    }

    /// One unit of the level.
    fn unit(self) -> &'static str {
        match self {
            Self::Cores => "core",
            Self::Sockets => "socket",
        }
    }

    /// What the OS calls one unit.
    fn os_unit(self) -> &'static str {
        match self {
            Self::Cores => "core",
            Self::Sockets => "package",
        }
    }

    /// What the OS calls its units, as the messages name them.
    fn os_units(self) -> &'static str {
        match self {
            Self::Cores => "cores (SMT siblings)",
            Self::Sockets => "packages",
        }
    }
}

/// What the latencies say of one level where the two views may differ.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    /// Both views make the same sets.
    Agree,
    /// The inferred sets differ from the OS's and a latency gap backs them: the quote.
    Backed(String),
    /// The inferred sets differ from the OS's and no gap backs them: the quote.
    Unsupported(String),
}

/// The latencies of the pairs a labelling joins (same label) and separates.
fn joined_and_separated(t: &Table, label: &[usize]) -> (Vec<f64>, Vec<f64>) {
    let (mut joined, mut separated) = (Vec::new(), Vec::new());
    for a in 0..t.n {
        for b in a + 1..t.n {
            let v = t.get(a, b);
            if v.is_nan() {
                continue;
            }
            if label[a] == label[b] {
                joined.push(v);
            } else {
                separated.push(v);
            }
        }
    }
    (joined, separated)
}

/// The gap a labelling's boundary shows: the fast end of the separated pairs over the
/// slow end of the joined ones, with both ends; `None` when one side has no pair.
fn boundary(t: &Table, label: &[usize]) -> Option<Boundary> {
    let (mut joined, mut separated) = joined_and_separated(t, label);
    if joined.is_empty() || separated.is_empty() {
        return None;
    }
    let inside = quantile(&mut joined, HIGH_QUANTILE);
    let across = quantile(&mut separated, LOW_QUANTILE);
    Some(Boundary { inside, across })
}

/// The two ends of a boundary's latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Boundary {
    /// The 90th percentile of the joined pairs.
    inside: f64,
    /// The 10th percentile of the separated pairs.
    across: f64,
}

impl Boundary {
    fn gap(self) -> f64 {
        self.across / self.inside
    }

    fn is_clear(self) -> bool {
        self.gap() >= MIN_GAP
    }

    fn describe(self) -> String {
        format!(
            "pairs across at {:.1} and up (10th percentile), pairs inside up to {:.1} \
             (90th), a gap of {:.2}x where {MIN_GAP}x is needed",
            self.across,
            self.inside,
            self.gap()
        )
    }
}

/// Judges one level: agreement, or a difference backed or not by a latency gap.
fn judge(t: &Table, ids: &[u32], level: Level, inferred: &[usize], os: &[usize]) -> Verdict {
    if same_partition(inferred, os) {
        return Verdict::Agree;
    }
    let claim = format!(
        "{}: {} inferred{} where the OS lists {}{}",
        level.units(),
        plural(distinct(inferred), level.unit()),
        sets_text(ids, inferred),
        plural(distinct(os), level.os_unit()),
        sets_text(ids, os)
    );
    match boundary(t, inferred) {
        Some(b) if b.is_clear() => Verdict::Backed(format!(
            "{claim}, backed by the latencies ({})",
            b.describe()
        )),
        Some(b) => Verdict::Unsupported(format!("{claim}, but {}", b.describe())),
        // No boundary of its own: the inference claims an absence (one socket, no SMT).
        None => absence(t, level, os, &claim),
    }
}

/// Judges an absence the inference claims where the OS lists a boundary: kept only when
/// that boundary shows no gap and its pairs lie where the hardware's cannot.
fn absence(t: &Table, level: Level, os: &[usize], claim: &str) -> Verdict {
    let Some(b) = boundary(t, os) else {
        return Verdict::Agree;
    };
    if b.is_clear() {
        return Verdict::Unsupported(format!(
            "{claim}, but the OS's {} show a boundary ({})",
            level.os_units(),
            b.describe()
        ));
    }
    let (mut joined, mut separated) = joined_and_separated(t, os);
    let physical = match level {
        // The OS's siblings are slower than any SMT transfer.
        Level::Cores => {
            let fast = quantile(&mut joined, LOW_QUANTILE);
            (fast > SMT_MAX_NS).then(|| {
                format!(
                    "the OS's siblings take {fast:.1} ns and up, more than a transfer \
                     between SMT siblings ({SMT_MAX_NS:.0} ns)"
                )
            })
        }
        // The OS's packages are closer than any chip-to-chip link.
        Level::Sockets => {
            let slow = quantile(&mut separated, HIGH_QUANTILE);
            (slow < SOCKET_MIN_NS).then(|| {
                format!(
                    "pairs across the OS's packages take at most {slow:.1} ns, less than a \
                     chip-to-chip link ({SOCKET_MIN_NS:.0} ns)"
                )
            })
        }
    };
    match physical {
        Some(reason) => Verdict::Backed(format!(
            "{claim}, backed by the latencies: the OS's {} show no boundary ({}), and {reason}",
            level.os_units(),
            b.describe()
        )),
        None => Verdict::Unsupported(format!(
            "{claim}, but the latencies cannot tell: the OS's {} show no gap ({}) and their \
             pairs lie where a boundary could hide",
            level.os_units(),
            b.describe()
        )),
    }
}

/// Why the table says nothing about structure, or `None` when it may: even its fast pairs
/// (all but the fastest 5 %) are slower than any hardware transfer, so the probe timed
/// the scheduler. Only tables in ns are judged.
fn scheduler_table(t: &Table, units: LatencyUnit) -> Option<String> {
    if units != LatencyUnit::Ns || t.sorted.is_empty() {
        return None;
    }
    let fast = t.value_quantile(FASTEST_SHARE);
    (fast > HARDWARE_MAX_NS).then(|| {
        format!(
            "even the fastest pairs take {fast:.0} ns, more than any cache-line transfer of \
             real hardware ({HARDWARE_MAX_NS:.0} ns): the probe timed the scheduler (an \
             emulated, oversubscribed or busy machine), not the caches"
        )
    })
}

/// The sets of a labelling as CPU lists (` (0-7 | 8-15)`), when there are at most
/// [`SETS_SHOWN`] of more than one CPU; empty otherwise.
fn sets_text(ids: &[u32], label: &[usize]) -> String {
    let mut sets: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for (row, &l) in label.iter().enumerate() {
        sets.entry(l).or_default().push(ids[row]);
    }
    if sets.len() > SETS_SHOWN || sets.values().all(|s| s.len() == 1) {
        return String::new();
    }
    let mut lists: Vec<Vec<u32>> = sets.into_values().collect();
    for l in &mut lists {
        l.sort_unstable();
    }
    lists.sort();
    let text: Vec<String> = lists.iter().map(|l| format_cpu_list(l)).collect();
    format!(" ({})", text.join(" | "))
}

/// Sets named in a message at most.
const SETS_SHOWN: usize = 8;

/// The number of distinct labels.
fn distinct(label: &[usize]) -> usize {
    let mut v = label.to_vec();
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// Whether two labellings of the same rows make the same sets.
fn same_partition(a: &[usize], b: &[usize]) -> bool {
    let mut ab: BTreeMap<usize, usize> = BTreeMap::new();
    let mut ba: BTreeMap<usize, usize> = BTreeMap::new();
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(&x, &y)| *ab.entry(x).or_insert(y) == y && *ba.entry(y).or_insert(x) == x)
}

/// The label of each row (`ids[row]` its CPU): the index of the set holding it.
fn label_rows(ids: &[u32], sets: &[Vec<u32>]) -> Vec<usize> {
    let mut of: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, s) in sets.iter().enumerate() {
        for &c in s {
            of.insert(c, i);
        }
    }
    ids.iter()
        .enumerate()
        .map(|(row, c)| of.get(c).copied().unwrap_or(sets.len() + row))
        .collect()
}

/// The OS's structure of the measured CPUs with the measured latencies: its levels, the
/// provenance, spread and warnings of `topo` kept; `None` when the structure cannot be
/// built.
fn os_structure(topo: &Topology, view: &OsView, ids: &[u32]) -> Option<Topology> {
    let tables = topo.latency_tables();
    let mut anchored = with_latencies(view, ids, &tables.raw, tables.spread.as_ref())?;
    *anchored.provenance_mut() = topo.provenance().clone();
    anchored.provenance_mut().parameters.insert(
        "structure".into(),
        format!(
            "from the OS (CPUs {}); the latencies did not support another",
            format_cpu_list(ids)
        ),
    );
    anchored.set_machine(topo.machine().clone());
    // What the inference said of the measurement stays; what it said of its own
    // structure is gone with it.
    anchored.validation_mut().warnings = topo
        .validation()
        .warnings
        .iter()
        .filter(|w| !STRUCTURE_KINDS.contains(&w.kind))
        .cloned()
        .collect();
    Some(anchored)
}

/// The OS's structure of CPUs `ids` (`view` restricted to them) with the latencies `raw`
/// and `spread` (rows: `ids`), reordered to the structure's rows, and levels made from
/// them; `None` when the structure cannot be built or `raw` holds no usable latency.
fn with_latencies(
    view: &OsView,
    ids: &[u32],
    raw: &LatencyMatrix,
    spread: Option<&LatencyMatrix>,
) -> Option<Topology> {
    let mut anchored = view.structure().ok()?;
    // The structure's rows are the CPUs in ascending order; the table's, `ids`.
    let row_of: BTreeMap<u32, usize> = ids.iter().enumerate().map(|(r, &c)| (c, r)).collect();
    let order: Vec<usize> = anchored
        .contexts()
        .iter()
        .map(|c| row_of.get(&c.os_id).copied())
        .collect::<Option<_>>()?;
    if order.len() != ids.len() || raw.len() != ids.len() {
        return None;
    }
    let permute =
        |m: &LatencyMatrix| LatencyMatrix::from_fn(order.len(), |a, b| m.get(order[a], order[b]));
    let raw = permute(raw);
    let table = Table::with_unmeasured(&raw).ok()?;
    let shared = Shared::new(&table, &chains(&anchored));
    let (normalized, levels) = shared.normalized(&table);
    anchored.set_latencies(raw, normalized, levels).ok()?;
    if let Some(spread) = spread {
        anchored.set_spread(permute(spread)).ok()?;
    }
    Some(anchored)
}

/// The description of a table the inference cannot read because some of its contexts have
/// no latency at all (a loaded machine on which the budget ran out before they were
/// measured, or whose pairs the probe gave up on): the OS's structure of CPUs
/// `opts.os_ids` (the table's rows) with the latencies that were measured, a
/// `structure_from_os` warning naming the CPUs without any, and the pairs the probe gave
/// up on. `None` without CPU numbers,
/// when a CPU is unknown to the OS, when the structure cannot be built or when no
/// latency was measured at all.
#[must_use]
pub fn os_structure_of_partial(
    table: &Collected,
    os: &OsView,
    opts: &InferOptions,
) -> Option<Topology> {
    let latency = &table.latency;
    let ids = opts.os_ids.as_deref()?;
    if ids.len() != latency.len() || ids.iter().any(|c| os.cpu(*c).is_none()) {
        return None;
    }
    let view = os.restricted(ids, None);
    let silent: Vec<u32> = (0..latency.len())
        .filter(|&a| !crate::uncertain::has_latency(latency, a))
        .map(|a| ids[a])
        .collect();
    if silent.is_empty() {
        return None;
    }
    let mut topo = with_latencies(&view, ids, latency, Some(&table.spread))?;
    let mut provenance = Provenance::new(opts.source.clone());
    provenance
        .parameters
        .insert("units".into(), opts.units.to_string());
    provenance.parameters.insert(
        "structure".into(),
        format!(
            "from the OS (CPUs {}); CPUs {} have no measured latency",
            format_cpu_list(ids),
            format_cpu_list(&silent)
        ),
    );
    *topo.provenance_mut() = provenance;
    topo.set_machine(opts.machine.clone());
    topo.validation_mut().warnings.push(Warning::new(
        WarningKind::StructureFromOs,
        format!(
            "{} no measured latency to any other CPU, so the latencies cannot place {}: \
             the OS's structure is kept (cores, groups and sockets as the OS lists them, \
             with the latencies that were measured)",
            match silent.len() {
                1 => format!("CPU {} has", format_cpu_list(&silent)),
                _ => format!("CPUs {} have", format_cpu_list(&silent)),
            },
            if silent.len() == 1 { "it" } else { "them" }
        ),
    ));
    let given_up: Vec<&FlaggedPair> = table.given_up().collect();
    if !given_up.is_empty() {
        crate::uncertain::record_given_up(&mut topo, &given_up, Some(ids));
    }
    Some(topo)
}

/// Each context's chain of components from its core up to its socket.
fn chains(topo: &Topology) -> Vec<Vec<SharedComponent>> {
    topo.contexts()
        .iter()
        .map(|ctx| {
            let core = &topo.cores()[ctx.core.0];
            let mut chain = vec![SharedComponent::Core(core.id.0)];
            let mut parent = core.parent;
            while let Parent::Group(g) = parent {
                chain.push(SharedComponent::Group(g.0));
                parent = topo.groups()[g.0].parent;
            }
            chain.push(SharedComponent::Socket(ctx.socket.0));
            chain
        })
        .collect()
}

#[cfg(test)]
mod tests;
