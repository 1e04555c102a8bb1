//! Validation of an inferred topology: confidence per level, warnings and unresolved levels.

use topoprobe_model::{
    LevelConfidence, Member, StructureLevel, Topology, Unresolved, Validation, Warning,
};

use crate::options::InferOptions;
use crate::pipeline::{Analysis, Outlier};
use crate::table::{median, Table};
use crate::tree::{DropReason, Dropped};

fn lat(v: f64, opts: &InferOptions) -> String {
    format!("{v:.1} {}", opts.units)
}

fn list(sets: &[&Dropped], max: usize) -> String {
    let mut s: Vec<String> = sets
        .iter()
        .take(max)
        .map(|d| {
            format!(
                "{{{}}}",
                d.members
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect();
    if sets.len() > max {
        s.push(format!("and {} more", sets.len() - max));
    }
    s.join(", ")
}

/// Profile resolution (relative) above which a warning is given.
const RESOLUTION_WARN: f64 = 0.03;
/// Profile resolution (relative) above which the group level is unresolved.
const RESOLUTION_UNRESOLVED: f64 = 0.08;

/// The first socket or group with at least four cores as direct members whose internal
/// latencies spread (95th over 5th percentile) by more than `1 + limit`.
fn unexplained_spread(t: &Table, topo: &Topology, limit: f64) -> Option<String> {
    let spread = |members: &[Member]| -> Option<f64> {
        let cores: Vec<usize> = members
            .iter()
            .filter_map(|m| match m {
                Member::Core(c) => Some(c.0),
                Member::Group(_) => None,
            })
            .collect();
        if cores.len() < 4 {
            return None;
        }
        let firsts: Vec<usize> = cores
            .iter()
            .map(|&c| topo.cores()[c].contexts[0].0)
            .collect();
        let mut v = t.within(&firsts);
        if v.len() < 4 {
            return None;
        }
        let hi = crate::table::quantile(&mut v, 0.95);
        let lo = crate::table::quantile(&mut v, 0.05);
        Some(hi / lo)
    };
    for s in topo.sockets() {
        if spread(&s.members).is_some_and(|r| r > 1.0 + limit) {
            return Some(format!("socket {}", s.id.0));
        }
    }
    for g in topo.groups() {
        if spread(&g.members).is_some_and(|r| r > 1.0 + limit) {
            return Some(format!("group {}", g.id.0));
        }
    }
    None
}

/// Records a role decision's confidence and, when unsure, its unresolved entry.
fn record(v: &mut Validation, level: StructureLevel, d: &crate::roles::Decision) {
    v.confidence.push(LevelConfidence {
        level,
        confidence: d.confidence,
        basis: d.basis.clone(),
    });
    if let Some(r) = &d.unresolved {
        v.unresolved.push(Unresolved {
            level,
            reason: r.clone(),
        });
    }
}

/// Builds the validation record.
pub(crate) fn validation(
    t: &Table,
    analysis: &Analysis,
    outliers: &[Outlier],
    topo: &Topology,
    opts: &InferOptions,
) -> Validation {
    let roles = &analysis.roles;
    let dropped = &analysis.dropped;
    let quant = analysis.quant;
    let mut v = Validation::default();
    let mut warnings: Vec<Warning> = Vec::new();
    let mut warn = |kind: &str, msg: String| warnings.push(Warning::new(kind, msg));
    if t.asymmetry > 0.05 {
        warn(
            "asymmetric",
            format!(
                "the two directions of a pair differ by up to {:.0}%; each pair was symmetrized by the mean of both directions",
                100.0 * t.asymmetry
            ),
        );
    }
    if !outliers.is_empty() {
        let shown: Vec<String> = outliers
            .iter()
            .take(4)
            .map(|o| {
                format!(
                    "({}, {}) at {} where the rest of its level ends at {}",
                    o.a,
                    o.b,
                    lat(o.value, opts),
                    lat(o.level_edge, opts)
                )
            })
            .collect();
        warn(
            "outlier",
            format!(
                "{} left out of the inference: {}{}",
                if outliers.len() == 1 {
                    "1 pair lies far outside its latency level and was".to_string()
                } else {
                    format!(
                        "{} pairs lie far outside their latency level and were",
                        outliers.len()
                    )
                },
                shown.join("; "),
                if outliers.len() > 4 { "; ..." } else { "" }
            ),
        );
    }
    if t.missing_pairs > outliers.len() {
        warn(
            "missing",
            format!(
                "{} of {} pairs have no latency; their normalized latency is their component's",
                t.missing_pairs - outliers.len(),
                t.n * (t.n - 1) / 2
            ),
        );
    }
    if let Some(q) = quant {
        warn(
            "quantized",
            format!(
                "latencies come in steps of {} ({:.1}% of the median): the timer is coarse, so levels closer than that cannot be told apart",
                lat(q.step, opts),
                100.0 * q.relative
            ),
        );
    }
    for (reason, kind, what) in [
        (
            DropReason::ProfilePair,
            "profile_pairs",
            "sets of only two parts have identical latency profiles without a latency gap ({}), \
             as two cores on one mesh stop do: not reported as groups",
        ),
        (
            DropReason::OutlierPair,
            "outlier",
            "pairs are faster than the rest but their latency profiles differ ({}): treated as \
             outlier measurements",
        ),
    ] {
        let sets: Vec<&Dropped> = dropped.iter().filter(|d| d.reason == reason).collect();
        if !sets.is_empty() {
            warn(
                kind,
                format!("{} {}", sets.len(), what.replace("{}", &list(&sets, 4))),
            );
        }
    }
    let res = analysis.resolution;
    let noise_note = res.noise.map_or(String::new(), |s| {
        format!("measurement noise is about {:.1}% per pair", 100.0 * s)
    });
    let limit = if res.limit >= 1.0 {
        "any group structure short of a latency gap is hidden by it".to_string()
    } else {
        format!(
            "groups whose latency profile differs from their neighbours' by less than about {:.0}% cannot be resolved",
            100.0 * res.limit
        )
    };
    let resolution = format!(
        "{}{}{limit}",
        noise_note,
        if noise_note.is_empty() { "" } else { "; " },
    );
    if (RESOLUTION_WARN..RESOLUTION_UNRESOLVED).contains(&res.limit) {
        warn("resolution", resolution.clone());
    }
    let crossing: Vec<&Dropped> = dropped
        .iter()
        .filter(|d| d.reason == DropReason::Crossing)
        .collect();
    // Per-socket and per-group observations.
    let mut profile_only = Vec::new();
    for g in topo.groups() {
        if g.evidence == topoprobe_model::Evidence::Profile {
            profile_only.push(g.id.0);
        }
        let parent_contexts = topo.contexts_of(match g.parent {
            topoprobe_model::Parent::Group(p) => p.into(),
            topoprobe_model::Parent::Socket(s) => s.into(),
        });
        let rest: Vec<usize> = parent_contexts
            .iter()
            .map(|c| c.0)
            .filter(|c| {
                g.contexts
                    .binary_search(&topoprobe_model::ContextId(*c))
                    .is_err()
            })
            .collect();
        let mine: Vec<usize> = g.contexts.iter().map(|c| c.0).collect();
        let inside = median(&mut t.within(&mine));
        let outside = median(&mut t.between(&mine, &rest));
        if inside > outside * 1.05 {
            warn(
                "inverted_group",
                format!(
                    "group {}: its cores communicate more slowly with each other ({}) than with the rest of their parent ({}), as Intel E-core clusters do; found from identical latency profiles",
                    g.id.0,
                    lat(inside, opts),
                    lat(outside, opts)
                ),
            );
        }
    }
    if !profile_only.is_empty() {
        warn(
            "profile_groups",
            format!(
                "groups {} were found from identical latency profiles only: their internal latency does not set them apart",
                profile_only.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    for s in topo.sockets() {
        let mine: Vec<usize> = s.contexts.iter().map(|c| c.0).collect();
        if topo.num_sockets() > 1 {
            let rest: Vec<usize> = (0..t.n)
                .filter(|x| mine.binary_search(x).is_err())
                .collect();
            let inside = s.latency.map_or(f64::NAN, |l| l.median);
            let outside = median(&mut t.between(&mine, &rest));
            if inside >= 0.9 * outside {
                warn(
                    "home_node",
                    format!(
                        "socket {}: latency between its parts ({}) is as high as to other sockets ({}), as with the home-node effect of AMD servers; the socket was found from identical latency profiles",
                        s.id.0,
                        lat(inside, opts),
                        lat(outside, opts)
                    ),
                );
            }
        }
        let has_groups = s.members.iter().any(|m| matches!(m, Member::Group(_)));
        if !has_groups {
            if let Some(l) = s.latency {
                if l.count >= 3 && l.max > 1.5 * l.min {
                    warn(
                        "flat",
                        format!(
                            "socket {} has no group structure: latencies between its cores spread from {} to {} without a gap (a mesh or a ring)",
                            s.id.0,
                            lat(l.min, opts),
                            lat(l.max, opts)
                        ),
                    );
                }
            }
        }
    }
    // Confidence and unresolved levels.
    record(&mut v, StructureLevel::Core, &roles.smt);
    let (gconf, gbasis) = if !crossing.is_empty() {
        (
            0.4,
            format!(
                "{} candidate groups conflict with others and were left out: {}",
                crossing.len(),
                list(&crossing, 3)
            ),
        )
    } else if topo.num_groups() == 0 {
        (
            0.85,
            "no group structure between core and socket".to_string(),
        )
    } else if !profile_only.is_empty() {
        (
            0.6,
            format!(
                "{}, {} of them from latency profiles only",
                topoprobe_model::format::plural(topo.num_groups(), "group"),
                profile_only.len()
            ),
        )
    } else {
        (
            0.9,
            format!(
                "{}, each separated by a latency gap",
                topoprobe_model::format::plural(topo.num_groups(), "group")
            ),
        )
    };
    v.confidence.push(LevelConfidence {
        level: StructureLevel::Group,
        confidence: gconf,
        basis: gbasis.clone(),
    });
    // Structure could hide where a component's cores spread more than the resolution
    // explains (a flat socket of a hybrid CPU, a die whose clusters are weak).
    let unexplained = if res.limit >= RESOLUTION_UNRESOLVED {
        // The spread (95th over 5th percentile) that noise alone gives, with 5% to spare.
        let sigma = res.noise.unwrap_or(0.0).max(res.floor / 2.33);
        unexplained_spread(t, topo, (2.0 * 1.645 * sigma).exp() * 1.05 - 1.0)
    } else {
        None
    };
    if res.limit >= RESOLUTION_UNRESOLVED && unexplained.is_none() {
        warn("resolution", resolution.clone());
    }
    if let Some(where_) = unexplained {
        v.unresolved.push(Unresolved {
            level: StructureLevel::Group,
            reason: format!(
                "{resolution}, and the latencies inside {where_} spread more than that: weak clusters \
                 (such as E-core clusters or clusters inside a die) may be missing; re-measure with more repetitions"
            ),
        });
    } else if !crossing.is_empty() {
        v.unresolved.push(Unresolved {
            level: StructureLevel::Group,
            reason: format!(
                "{gbasis}: the latencies support two incompatible groupings; the one kept has a latency gap"
            ),
        });
    }
    record(&mut v, StructureLevel::Socket, &roles.socket);
    v.warnings = warnings;
    v
}
