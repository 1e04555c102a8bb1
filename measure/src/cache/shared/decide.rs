//! The decision, pure: the walk times of one level's test in, the level's sharing, its
//! record and what to warn about out. Tests drive it with simulated walks.
//!
//! Servet calls a level shared when two walks of two thirds of its size each run at least
//! twice as slowly together as alone. That ratio assumes LRU replacement and a miss about
//! three times a hit: thrash-resistant replacement (most last levels today) keeps part of
//! a cyclic walk that does not fit, so two walks sharing a level can lose much less than
//! 2×, and a fixed ratio calls such a level private. Here each test is calibrated on the
//! context itself: one walk alone over the array (what two walks of a private level cost)
//! and one walk alone over an array twice its size (what two walks of a shared level cost,
//! whatever the replacement: they hold both arrays in one instance). A pair's time is
//! placed between the two ([`fraction`]): near 0 (and about as fast as alone) private,
//! near 1 shared, in between unclear. When the doubled walk is not clearly slower than the single one, the size
//! tells nothing (both fit, or neither does) and the next size of the plan is tried.

use topoprobe_model::{ContextId, Origin, PairVerdict, SharingOutcome, SharingPair, SharingTest};

use super::plan::{plan, LevelSpec, SharingOptions};
use super::scopes::{instances, Scope};
use crate::cache::check::size_text;

/// The doubled walk must be at least this much slower than the single one for the size to
/// tell a shared level from a private one (a third of the way from a hit to a miss of the
/// last level at the least; noise of a few percent stays well below it).
pub const MIN_CONTRAST: f64 = 1.3;
/// A pair whose time is at most this far from alone towards the doubled walk is private
/// (if it also stays within [`PRIVATE_RATIO`]).
pub const PRIVATE_BELOW: f64 = 0.25;
/// A private level leaves each walk as fast as alone: a pair more than this much slower
/// is not private, however far the doubled walk is (where a miss costs ten hits, a
/// quarter of the way is 3×); nor is one this much faster (the walk alone that it is
/// measured against was disturbed).
pub const PRIVATE_RATIO: f64 = 1.25;
/// A pair whose time is at least this far from alone towards the doubled walk is shared
/// (Servet's 2× under LRU with a miss three times a hit is one half).
pub const SHARED_FROM: f64 = 0.5;

/// Where `together` falls from `alone` (0) to `double` (1).
#[must_use]
pub fn fraction(alone: f64, double: f64, together: f64) -> f64 {
    let span = double - alone;
    if span > 0.0 {
        (together - alone) / span
    } else {
        0.0
    }
}

/// What a pair's fraction (and its time over the time alone, `ratio`) says.
#[must_use]
pub fn verdict(fraction: f64, ratio: f64) -> PairVerdict {
    if fraction >= SHARED_FROM {
        PairVerdict::Shared
    } else if fraction <= PRIVATE_BELOW && (1.0 / PRIVATE_RATIO..=PRIVATE_RATIO).contains(&ratio) {
        PairVerdict::Private
    } else {
        PairVerdict::Unclear
    }
}

/// The level's sharing as the test leaves it.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelSharing {
    /// The level's instances (its `shared_by`): measured, or the OS's when the walks did
    /// not decide; empty when neither is known.
    pub shared_by: Vec<Vec<ContextId>>,
    /// The record of the test (the level's `sharing`).
    pub test: SharingTest,
    /// What a person should know when the walks did not decide or did not run.
    pub warning: Option<String>,
}

/// Where a scope's pairs stop the walk outwards (`None`: the scope shares, go on).
enum ScopeReach {
    /// Its pairs do not share.
    Private,
    /// Its pair inside the OS's instance shares, the one outside does not.
    OsInstance,
    /// Its pairs did not answer.
    Unclear,
}

/// What the pairs of one scope (one partner, or one inside and one outside the OS's
/// instance) say.
fn scope_reach(pairs: &[SharingPair]) -> Option<ScopeReach> {
    let v: Vec<PairVerdict> = pairs.iter().map(|p| p.verdict).collect();
    match v[..] {
        [PairVerdict::Shared] | [PairVerdict::Shared, PairVerdict::Shared] => None,
        [PairVerdict::Private] | [PairVerdict::Private, PairVerdict::Private] => {
            Some(ScopeReach::Private)
        }
        [PairVerdict::Shared, PairVerdict::Private] => Some(ScopeReach::OsInstance),
        _ => Some(ScopeReach::Unclear),
    }
}

/// How far the scopes shared.
enum Reach {
    /// Every scope answered; the widest that shares (`None`: private).
    Scope(Option<Scope>),
    /// The OS's instance was confirmed: shared inside it, private outside.
    OsInstance,
    /// A scope did not answer; the widest that shared before it.
    Unclear(Option<Scope>),
}

/// Finds the sharing of one level: `walk(contexts, bytes)` walks an array of `bytes` on
/// each of `contexts` at once and returns the mean time of one access, ns.
///
/// # Errors
///
/// What `walk` returns.
pub fn sharing_with<E>(
    topo: &topoprobe_model::Topology,
    spec: &LevelSpec,
    opts: &SharingOptions,
    mut walk: impl FnMut(&[ContextId], u64) -> Result<f64, E>,
) -> Result<LevelSharing, E> {
    let plan = match plan(topo, spec, opts) {
        Ok(p) => p,
        Err(reason) => return Ok(unavailable(spec, reason)),
    };
    let first = plan.first;
    let mut tried = Vec::new();
    let mut chosen = None;
    for &array in &plan.arrays {
        let mut alone = walk(&[first], array)?;
        let mut double = walk(&[first], array * 2)?;
        if double < alone {
            // A larger array never walks faster on a quiet machine: something else ran on
            // the context (a neighbour, the host). Measure this size once more.
            alone = walk(&[first], array)?;
            double = walk(&[first], array * 2)?;
        }
        tried.push((array, alone, double));
        if double >= alone * MIN_CONTRAST {
            chosen = Some((array, alone, double));
            break;
        }
    }
    let Some((array, alone, double)) = chosen else {
        return Ok(uncalibrated(spec, &tried));
    };
    // First round: the scopes from the inside out, up to the first that does not share.
    let mut rounds: Vec<(&Scope, Vec<SharingPair>)> = Vec::new();
    for test in &plan.scopes {
        let mut tested = Vec::new();
        for &partner in &test.partners {
            let together = walk(&[first, partner], array)?;
            let f = fraction(alone, double, together);
            let ratio = together / alone;
            tested.push(SharingPair {
                a: first,
                b: partner,
                ratio,
                fraction: f,
                fraction_again: None,
                verdict: verdict(f, ratio),
            });
        }
        let go_on = scope_reach(&tested).is_none();
        rounds.push((&test.scope, tested));
        if !go_on {
            break;
        }
    }
    // Second round: every pair once more; a verdict that changes is unclear (a host
    // that moved a vCPU between dies, a busy machine).
    for (_, tested) in &mut rounds {
        for p in tested.iter_mut() {
            let together = walk(&[p.a, p.b], array)?;
            let f = fraction(alone, double, together);
            p.fraction_again = Some(f);
            if verdict(f, together / alone) != p.verdict {
                p.verdict = PairVerdict::Unclear;
            }
        }
    }
    let mut widest: Option<Scope> = None;
    let mut reach = None;
    for (scope, tested) in &rounds {
        match scope_reach(tested) {
            None => widest = Some((*scope).clone()),
            Some(ScopeReach::Private) => {
                reach = Some(Reach::Scope(widest.take()));
                break;
            }
            Some(ScopeReach::OsInstance) => {
                reach = Some(Reach::OsInstance);
                break;
            }
            Some(ScopeReach::Unclear) => {
                reach = Some(Reach::Unclear(widest.take()));
                break;
            }
        }
    }
    let reach = reach.unwrap_or(Reach::Scope(widest));
    let pairs: Vec<SharingPair> = rounds.into_iter().flat_map(|(_, t)| t).collect();
    let test = SharingTest {
        outcome: SharingOutcome::Decided,
        source: Some(Origin::Measured),
        array_kib: Some(array / 1024),
        alone_ns: Some(alone),
        double_ns: Some(double),
        pairs,
        reason: None,
    };
    Ok(match reach {
        Reach::Scope(scope) => LevelSharing {
            shared_by: instances(topo, scope.as_ref()),
            test,
            warning: None,
        },
        Reach::OsInstance => LevelSharing {
            shared_by: os_partition(topo, spec),
            test,
            warning: None,
        },
        Reach::Unclear(scope) => unclear(topo, spec, test, scope.as_ref()),
    })
}

/// The OS's instances, with every context the OS lists in none of them alone.
fn os_partition(topo: &topoprobe_model::Topology, spec: &LevelSpec) -> Vec<Vec<ContextId>> {
    let mut out = spec.os_instances.clone();
    for h in topo.contexts() {
        if !out.iter().any(|i| i.contains(&h.id)) {
            out.push(vec![h.id]);
        }
    }
    out.sort();
    out
}

/// Whether the OS's instances agree with every pair that decided.
fn os_agrees(spec: &LevelSpec, pairs: &[SharingPair]) -> bool {
    !spec.os_instances.is_empty()
        && pairs.iter().all(|p| {
            let os_shared = spec.os_instance_of(p.a).is_some_and(|i| i.contains(&p.b));
            match p.verdict {
                PairVerdict::Shared => os_shared,
                PairVerdict::Private => !os_shared,
                PairVerdict::Unclear => true,
            }
        })
}

/// The OS's sharing kept, or nothing, with the reason.
fn unavailable(spec: &LevelSpec, reason: String) -> LevelSharing {
    let os = !spec.os_instances.is_empty();
    LevelSharing {
        shared_by: spec.os_instances.clone(),
        warning: Some(format!(
            "{}: which contexts share it was not measured: unavailable: {reason}; {}",
            spec.name,
            if os {
                "the OS's sharing is kept"
            } else {
                "the OS lists no sharing either"
            }
        )),
        test: SharingTest {
            outcome: SharingOutcome::Unavailable,
            source: os.then_some(Origin::Os),
            array_kib: None,
            alone_ns: None,
            double_ns: None,
            pairs: Vec::new(),
            reason: Some(reason),
        },
    }
}

/// No size tried told a level that holds the array from one that does not.
fn uncalibrated(spec: &LevelSpec, tried: &[(u64, f64, f64)]) -> LevelSharing {
    let sizes: Vec<String> = tried
        .iter()
        .map(|(a, alone, double)| {
            format!(
                "{} {alone:.1} ns, {} {double:.1} ns",
                size_text(*a),
                size_text(a * 2)
            )
        })
        .collect();
    let reason = format!(
        "a walk over twice the array was not {MIN_CONTRAST}× slower than over the array at \
         any size tried ({}): each size fits this context's share of the level in both \
         walks or in neither, so two walks could not tell a shared level from a private one",
        sizes.join("; ")
    );
    let os = !spec.os_instances.is_empty();
    let (a, alone, double) = tried.first().copied().unwrap_or_default();
    LevelSharing {
        shared_by: spec.os_instances.clone(),
        warning: Some(format!(
            "{}: the shared-cache test is inconclusive: {reason}; {}",
            spec.name,
            if os {
                "the OS's sharing is kept"
            } else {
                "its sharing is unknown"
            }
        )),
        test: SharingTest {
            outcome: SharingOutcome::Inconclusive,
            source: os.then_some(Origin::Os),
            array_kib: (a > 0).then_some(a / 1024),
            alone_ns: (a > 0).then_some(alone),
            double_ns: (a > 0).then_some(double),
            pairs: Vec::new(),
            reason: Some(reason),
        },
    }
}

/// A scope that did not answer: the OS's sharing when it agrees with every pair that did,
/// what was decided otherwise.
fn unclear(
    topo: &topoprobe_model::Topology,
    spec: &LevelSpec,
    mut test: SharingTest,
    decided: Option<&Scope>,
) -> LevelSharing {
    let what = test
        .pairs
        .iter()
        .find(|p| p.verdict == PairVerdict::Unclear)
        .map(|p| match p.fraction_again {
            Some(again) if (again - p.fraction).abs() > PRIVATE_BELOW => format!(
                "CPUs {} and {} walked together twice and answered differently: {:.0}%, then \
                 {:.0}% of the way to what a shared level costs",
                os_id(topo, p.a),
                os_id(topo, p.b),
                p.fraction * 100.0,
                again * 100.0
            ),
            _ => format!(
                "CPUs {} and {} walked together at {:.2}× the time alone, {:.0}% of the way \
                 to what a shared level costs (private up to {:.0}% and within {PRIVATE_RATIO}× \
                 of alone, shared from {:.0}%)",
                os_id(topo, p.a),
                os_id(topo, p.b),
                p.ratio,
                p.fraction * 100.0,
                PRIVATE_BELOW * 100.0,
                SHARED_FROM * 100.0
            ),
        })
        .unwrap_or_else(|| {
            "the two partners of a scope disagree in a way the OS's instances do not explain".into()
        });
    let reason = format!(
        "{what}: noise, a host that moved a vCPU during the walks, or replacement that \
         neither keeps nor drops a second walk"
    );
    test.outcome = SharingOutcome::Inconclusive;
    test.reason = Some(reason.clone());
    let (shared_by, kept) = if os_agrees(spec, &test.pairs) {
        test.source = Some(Origin::Os);
        (
            os_partition(topo, spec),
            "the OS's sharing is kept (it agrees with every pair that answered)",
        )
    } else {
        test.source = Some(Origin::Measured);
        (
            instances(topo, decided),
            "the sharing recorded is what the pairs that answered show, which may be too \
             narrow",
        )
    };
    LevelSharing {
        shared_by,
        warning: Some(format!(
            "{}: the shared-cache test is inconclusive: {reason}; {kept}",
            spec.name
        )),
        test,
    }
}

/// A decided level whose pairs contradict another level's: inconclusive, with the OS's
/// sharing when the OS lists the level (what was measured otherwise), and a warning
/// giving `reason`.
#[must_use]
pub fn overruled(
    topo: &topoprobe_model::Topology,
    spec: &LevelSpec,
    mut found: LevelSharing,
    reason: &str,
) -> LevelSharing {
    found.test.outcome = SharingOutcome::Inconclusive;
    found.test.reason = Some(reason.to_string());
    let kept = if spec.os_instances.is_empty() {
        "the measured sharing is kept"
    } else {
        found.test.source = Some(Origin::Os);
        found.shared_by = os_partition(topo, spec);
        "the OS's sharing is kept"
    };
    found.warning = Some(format!(
        "{}: the shared-cache test is inconclusive: {reason}; {kept}",
        spec.name
    ));
    found
}

/// The OS number of a context (its id when unknown).
fn os_id(topo: &topoprobe_model::Topology, c: ContextId) -> u32 {
    topo.contexts().get(c.0).map_or(c.0 as u32, |h| h.os_id)
}
