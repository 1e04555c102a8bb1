//! Inferring a collected table that has flagged pairs (see docs/INFERENCE.md, "Noisy
//! pairs").
//!
//! A noisy pair's value (the median of its best batch) is kept in the table: outlier
//! rejection and the median make it the best estimate there is. Whether the structure
//! depends on it is then checked: the table is inferred again with the noisy pairs left
//! out (missing), except those of a context that would be left without any latency.
//!
//! - The same structure (cores, groups, sockets): the other pairs determine it, and the
//!   noisy pairs decide no level. The result stands, with a warning listing them.
//! - A level that differs rests on the noisy pairs: two readings of the machine, one with
//!   them and one without, and nothing to choose between them. Its confidence is lowered
//!   to at most [`DECIDED_BY_NOISE`] and it is reported as unresolved, with both readings.
//! - A context measured through noisy pairs only (its place rests on them), or a table that
//!   cannot be inferred without them: every level's confidence is lowered.
//!
//! Pairs the probe gave up on are missing from the table (the inference handles missing
//! pairs) and listed in a warning of their own.

use std::collections::BTreeSet;

use topoprobe_model::{
    LatencyMatrix, LevelConfidence, StructureLevel, Topology, Unresolved, Warning, WarningKind,
};

use crate::flagged::{pair_name, FlaggedPair, PairFlag};
use crate::{Collected, InferError, InferOptions};

/// Highest confidence of a level that rests on noisy pairs: the table read with them and
/// without them gives two structures, and nothing tells which is right.
pub(crate) const DECIDED_BY_NOISE: f64 = 0.5;
/// Flagged pairs named in a warning at most (then "and N more").
const SHOWN: usize = 8;
/// The levels compared.
const LEVELS: [StructureLevel; 3] = [
    StructureLevel::Core,
    StructureLevel::Group,
    StructureLevel::Socket,
];

/// What leaving the noisy pairs out showed.
#[derive(Debug, Default)]
struct Check {
    /// Contexts measured through noisy pairs only: their noisy pairs stayed in.
    orphans: Vec<usize>,
    /// Noisy pairs left out of the second inference.
    left_out: usize,
    /// The levels that differ without them, and how.
    differs: Vec<(StructureLevel, String)>,
    /// Why the table without them could not be inferred.
    failed: Option<String>,
}

/// Infers `c.latency` with `opts`, then treats its flagged pairs as uncertain (see the
/// [module documentation](self)).
pub(crate) fn infer_flagged(c: &Collected, opts: &InferOptions) -> Result<Topology, InferError> {
    let mut topo = crate::infer(&c.latency, opts)?;
    if c.flagged.is_empty() {
        return Ok(topo);
    }
    let noisy: Vec<&FlaggedPair> = c
        .noisy()
        .filter(|p| c.latency.get(p.a, p.b).is_some())
        .collect();
    let check = (!noisy.is_empty()).then(|| check(&c.latency, &noisy, &topo, opts));
    let ids = opts.os_ids.as_deref();
    if let Some(check) = &check {
        record_noisy(&mut topo, &noisy, check, ids);
    }
    let given_up: Vec<&FlaggedPair> = c.given_up().collect();
    if !given_up.is_empty() {
        record_given_up(&mut topo, &given_up, ids);
    }
    Ok(topo)
}

/// Whether row `x` of `m` has any latency.
pub(crate) fn has_latency(m: &LatencyMatrix, x: usize) -> bool {
    (0..m.len()).any(|y| y != x && (m.get(x, y).is_some() || m.get(y, x).is_some()))
}

/// Infers the table again without the noisy pairs (but those of contexts that would be left
/// without any latency) and compares the structures.
fn check(
    latency: &LatencyMatrix,
    noisy: &[&FlaggedPair],
    topo: &Topology,
    opts: &InferOptions,
) -> Check {
    let mut without = latency.clone();
    for p in noisy {
        without.set(p.a, p.b, None);
        without.set(p.b, p.a, None);
    }
    let orphans: Vec<usize> = (0..latency.len())
        .filter(|&x| has_latency(latency, x) && !has_latency(&without, x))
        .collect();
    let mut left_out = 0;
    for p in noisy {
        if orphans.contains(&p.a) || orphans.contains(&p.b) {
            without.set(p.a, p.b, latency.get(p.a, p.b));
            without.set(p.b, p.a, latency.get(p.b, p.a));
        } else {
            left_out += 1;
        }
    }
    let mut check = Check {
        orphans,
        left_out,
        ..Check::default()
    };
    if left_out > 0 {
        match crate::infer(&without, opts) {
            Ok(t) => check.differs = differences(topo, &t),
            Err(e) => check.failed = Some(e.to_string()),
        }
    }
    check
}

/// The sets of contexts of a level (each sorted).
fn partition(topo: &Topology, level: StructureLevel) -> BTreeSet<Vec<usize>> {
    let sorted = |c: &[topoprobe_model::ContextId]| {
        let mut v: Vec<usize> = c.iter().map(|x| x.0).collect();
        v.sort_unstable();
        v
    };
    match level {
        StructureLevel::Core => topo.cores().iter().map(|c| sorted(&c.contexts)).collect(),
        StructureLevel::Group => topo.groups().iter().map(|g| sorted(&g.contexts)).collect(),
        StructureLevel::Socket => topo.sockets().iter().map(|s| sorted(&s.contexts)).collect(),
        StructureLevel::Node | StructureLevel::Cache => BTreeSet::new(),
    }
}

/// The levels of `with` (inferred with the noisy pairs) that `without` has otherwise, and
/// how.
fn differences(with: &Topology, without: &Topology) -> Vec<(StructureLevel, String)> {
    LEVELS
        .iter()
        .filter_map(|&level| {
            let (a, b) = (partition(with, level), partition(without, level));
            if a == b {
                return None;
            }
            let name = |k: usize| {
                let unit = match level {
                    StructureLevel::Core => "core",
                    StructureLevel::Group => "group",
                    _ => "socket",
                };
                format!("{k} {unit}{}", if k == 1 { "" } else { "s" })
            };
            let how = if a.len() == b.len() {
                format!("{} made of other contexts", name(b.len()))
            } else {
                format!("{} instead of {}", name(b.len()), a.len())
            };
            Some((level, how))
        })
        .collect()
}

/// "(1, 14) spread 10.2% above the 14.0% limit after 5 batches; (…) …; and 3 more".
fn list(pairs: &[&FlaggedPair], ids: Option<&[u32]>) -> String {
    let mut s: Vec<String> = pairs
        .iter()
        .take(SHOWN)
        .map(|p| {
            let what = match &p.flag {
                PairFlag::GaveUp(why) => why.clone(),
                f @ PairFlag::Noisy { .. } => f.to_string(),
            };
            format!("{} {what}", pair_name(p.a, p.b, ids))
        })
        .collect();
    if pairs.len() > SHOWN {
        s.push(format!("and {} more", pairs.len() - SHOWN));
    }
    s.join("; ")
}

/// "CPU 1 was", "CPUs 1, 3 were", or rows when the CPU numbers are unknown.
fn contexts_were(rows: &[usize], ids: Option<&[u32]>) -> String {
    let names: Vec<String> = rows
        .iter()
        .map(|&r| match ids.and_then(|i| i.get(r)) {
            Some(c) => c.to_string(),
            None => r.to_string(),
        })
        .collect();
    let kind = if ids.is_some() { "CPU" } else { "context" };
    match names.as_slice() {
        [one] => format!("{kind} {one} was"),
        _ => format!("{kind}s {} were", names.join(", ")),
    }
}

/// Lowers the confidence of `level` to at most [`DECIDED_BY_NOISE`], saying why.
fn lower(topo: &mut Topology, level: StructureLevel, why: &str) {
    let v = topo.validation_mut();
    match v.confidence.iter_mut().find(|c| c.level == level) {
        Some(c) => {
            c.confidence = c.confidence.min(DECIDED_BY_NOISE);
            c.basis = format!("{}; {why}", c.basis);
        }
        None => v.confidence.push(LevelConfidence {
            level,
            confidence: DECIDED_BY_NOISE,
            basis: why.to_string(),
        }),
    }
}

/// The warning on the noisy pairs, and the confidence and unresolved levels they decide.
fn record_noisy(topo: &mut Topology, noisy: &[&FlaggedPair], check: &Check, ids: Option<&[u32]>) {
    let names: Vec<String> = noisy
        .iter()
        .take(SHOWN)
        .map(|p| pair_name(p.a, p.b, ids))
        .collect();
    let names = if noisy.len() > SHOWN {
        format!("{} and {} more", names.join(", "), noisy.len() - SHOWN)
    } else {
        names.join(", ")
    };
    let mut verdict: Vec<String> = Vec::new();
    if !check.orphans.is_empty() {
        let who = contexts_were(&check.orphans, ids);
        verdict.push(format!(
            "{who} measured through noisy pairs only: where {} rests on them \
             (every level's confidence is at most {DECIDED_BY_NOISE})",
            if check.orphans.len() == 1 {
                "it belongs"
            } else {
                "they belong"
            }
        ));
        let why = format!("{who} measured through noisy pairs only");
        for level in LEVELS {
            if topo.validation().confidence_of(level).is_some() {
                lower(topo, level, &why);
            }
        }
    }
    if let Some(e) = &check.failed {
        verdict.push(format!(
            "without them the table cannot be inferred ({e}): the structure rests on them \
             (every level's confidence is at most {DECIDED_BY_NOISE})"
        ));
        for level in LEVELS {
            if topo.validation().confidence_of(level).is_some() {
                lower(topo, level, &format!("rests on noisy pairs {names}"));
            }
        }
    }
    for (level, how) in &check.differs {
        verdict.push(format!(
            "without them the {level} level differs ({how}): it rests on them (confidence at \
             most {DECIDED_BY_NOISE}, unresolved)"
        ));
        lower(topo, *level, &format!("rests on noisy pairs {names}"));
        topo.validation_mut().unresolved.push(Unresolved {
            level: *level,
            reason: format!(
                "decided by noisy pairs {names}: inferred without them, {how}; measure again \
                 when these CPUs are quiet (`topoprobe latency A B` shows one pair)"
            ),
        });
    }
    if verdict.is_empty() && check.left_out > 0 {
        verdict.push(
            "inferred again without them, the structure is the same: they decide no level"
                .to_string(),
        );
    }
    let of = if ids.is_some() { " of CPUs" } else { "" };
    let message = format!(
        "{} pair{}{of} kept although the spread of their samples stayed above the limit \
         (is another program running on these CPUs?): {}. {}",
        noisy.len(),
        if noisy.len() == 1 { "" } else { "s" },
        list(noisy, ids),
        capitalized(&verdict.join("; "))
    );
    let v = topo.validation_mut();
    v.warnings
        .push(Warning::new(WarningKind::NoisyPairs, message.trim_end()));
    topo.provenance_mut()
        .parameters
        .insert("pairs_noisy".into(), noisy.len().to_string());
}

/// The warning on the pairs the probe gave up on.
pub(crate) fn record_given_up(topo: &mut Topology, pairs: &[&FlaggedPair], ids: Option<&[u32]>) {
    let of = if ids.is_some() { " of CPUs" } else { "" };
    let message = format!(
        "{} pair{}{of} could not be measured and {} missing from the table: {}",
        pairs.len(),
        if pairs.len() == 1 { "" } else { "s" },
        if pairs.len() == 1 { "is" } else { "are" },
        list(pairs, ids)
    );
    topo.validation_mut()
        .warnings
        .push(Warning::new(WarningKind::PairsGivenUp, message));
    topo.provenance_mut()
        .parameters
        .insert("pairs_given_up".into(), pairs.len().to_string());
}

/// `s` with its first letter in upper case.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
