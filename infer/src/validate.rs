//! Validation of an inferred topology: confidence per level, warnings and unresolved levels.

use topoprobe_model::{
    median_in_place, ContextId, LevelConfidence, Member, StructureLevel, Topology, Unresolved,
    Validation, Warning, WarningKind,
};

use crate::options::InferOptions;
use crate::pipeline::{Analysis, Outlier, Resolution};
use crate::quantize::Quantization;
use crate::roles::Roles;
use crate::table::Table;
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

/// Fewest single-thread cores beside the SMT cores of a socket, in no finer group, from
/// which a cluster the latency does not show may be missing: one E-core cluster of four
/// cores sharing an L2 (Intel hybrids), such as the single cluster of a 6P + 4E part.
const HIDDEN_CLUSTER_CORES: usize = 4;

/// The single-thread cores of a socket that also has SMT cores and that lie in no group
/// of single-thread cores: `(socket, cores)` of the first socket with at least
/// [`HIDDEN_CLUSTER_CORES`] of them.
fn ungrouped_single_cores(topo: &Topology) -> Option<(usize, usize)> {
    for s in topo.sockets() {
        let cores = &s.cores;
        let smt = cores.iter().any(|c| topo.cores()[c.0].contexts.len() > 1);
        if !smt {
            continue;
        }
        let single: Vec<usize> = cores
            .iter()
            .filter(|c| topo.cores()[c.0].contexts.len() == 1)
            .map(|c| c.0)
            .collect();
        // Groups holding only single-thread cores and at most four of them: clusters found.
        let clustered: usize = topo
            .groups()
            .iter()
            .filter(|g| {
                g.socket == s.id
                    && g.cores.len() <= 4
                    && g.cores
                        .iter()
                        .all(|c| topo.cores()[c.0].contexts.len() == 1)
            })
            .map(|g| g.cores.len())
            .sum();
        let loose = single.len().saturating_sub(clustered);
        if loose >= HIDDEN_CLUSTER_CORES {
            return Some((s.id.0, loose));
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

/// Profile pairs left out (no latency gap) whose two parts are groups of several cores
/// each, where elsewhere in the machine two groups of the same sizes do form a group: the
/// same unit (a die of two core complexes, say) is found on one side and not on the
/// other, whose halves are as far apart inside as from the rest.
fn twin_groups_left_apart<'d>(topo: &Topology, dropped: &'d [Dropped]) -> Vec<&'d Dropped> {
    let groups = topo.groups();
    // Child sizes (sorted) of every kept group made of exactly two groups.
    let kept_pairs: Vec<[usize; 2]> = groups
        .iter()
        .filter_map(|g| match g.members.as_slice() {
            [Member::Group(a), Member::Group(b)] => {
                let (x, y) = (groups[a.0].contexts.len(), groups[b.0].contexts.len());
                Some([x.min(y), x.max(y)])
            }
            _ => None,
        })
        .collect();
    dropped
        .iter()
        .filter(|d| d.reason == DropReason::ProfilePair)
        .filter(|d| {
            let inside: Vec<&[ContextId]> = groups
                .iter()
                .filter(|g| g.cores.len() >= 2)
                .map(|g| g.contexts.as_slice())
                .filter(|g| g.iter().all(|c| d.members.binary_search(&c.0).is_ok()))
                .collect();
            let outermost: Vec<usize> = inside
                .iter()
                .filter(|g| {
                    !inside
                        .iter()
                        .any(|h| h.len() > g.len() && g.iter().all(|c| h.contains(c)))
                })
                .map(|g| g.len())
                .collect();
            match outermost.as_slice() {
                &[x, y] if x + y == d.members.len() => kept_pairs.contains(&[x.min(y), x.max(y)]),
                _ => false,
            }
        })
        .collect()
}

/// The warnings of a validation, in the order they are found.
#[derive(Debug, Default)]
struct Warnings(Vec<Warning>);

impl Warnings {
    /// Adds a warning of `kind`.
    fn add(&mut self, kind: WarningKind, msg: String) {
        self.0.push(Warning::new(kind, msg));
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
    let mut v = Validation::default();
    let mut warnings = Warnings::default();
    measurement_warnings(&mut warnings, t, outliers, analysis.quant, opts);
    dropped_set_warnings(&mut warnings, dropped);
    role_warnings(&mut warnings, roles);
    let from_os = os_groups(topo);
    os_group_warning(&mut warnings, &from_os);
    resolution_warning(&mut warnings, analysis.resolution);
    // Sets of weak evidence (two look-alike cores) crossing a group are noise, not a
    // competing grouping.
    let crossing: Vec<&Dropped> = dropped
        .iter()
        .filter(|d| d.reason == DropReason::Crossing && d.strong)
        .collect();
    // Per-socket and per-group observations.
    let profile_only = group_warnings(&mut warnings, t, topo, opts);
    socket_warnings(&mut warnings, t, topo, opts);
    // Confidence and unresolved levels.
    record(&mut v, StructureLevel::Core, &roles.smt);
    let (gconf, gbasis) = group_confidence(topo, &crossing, &from_os, &profile_only);
    v.confidence.push(LevelConfidence {
        level: StructureLevel::Group,
        confidence: gconf,
        basis: gbasis.clone(),
    });
    if let Some(reason) = group_unresolved(topo, dropped, opts, &crossing, &gbasis) {
        v.unresolved.push(Unresolved {
            level: StructureLevel::Group,
            reason,
        });
    }
    record(&mut v, StructureLevel::Socket, &roles.socket);
    v.warnings = warnings.0;
    v
}

/// Warnings on the measurements themselves: asymmetric pairs, pairs below the timer's
/// resolution, outliers left out, missing pairs and a coarse timer.
fn measurement_warnings(
    warnings: &mut Warnings,
    t: &Table,
    outliers: &[Outlier],
    quant: Option<Quantization>,
    opts: &InferOptions,
) {
    if t.asymmetry > 0.05 {
        warnings.add(
            WarningKind::Asymmetric,
            format!(
                "the two directions of a pair differ by up to {:.0}%; each pair was symmetrized by the mean of both directions",
                100.0 * t.asymmetry
            ),
        );
    }
    if !t.zeros.is_empty() {
        let shown: Vec<String> = t
            .zeros
            .iter()
            .take(4)
            .map(|(a, b)| format!("({a}, {b})"))
            .collect();
        warnings.add(
            WarningKind::BelowResolution,
            format!(
                "{} pairs read as 0 ({}{}): below the resolution of the timer that measured them; \
                 each was taken as one timer step, {}, and its latency does not count where an \
                 absolute latency decides (the SMT bound)",
                t.zeros.len(),
                shown.join(", "),
                if t.zeros.len() > 4 { ", ..." } else { "" },
                lat(t.zero_value, opts)
            ),
        );
    }
    if !outliers.is_empty() {
        warnings.add(WarningKind::Outlier, outlier_message(outliers, opts));
    }
    if t.missing_pairs > outliers.len() {
        warnings.add(
            WarningKind::Missing,
            format!(
                "{} of {} pairs have no latency; their normalized latency is their component's",
                t.missing_pairs - outliers.len(),
                t.n * (t.n - 1) / 2
            ),
        );
    }
    if let Some(q) = quant {
        warnings.add(
            WarningKind::Quantized,
            format!(
                "latencies come in steps of {} ({:.1}% of the median): the timer is coarse, so levels closer than that cannot be told apart",
                lat(q.step, opts),
                100.0 * q.relative
            ),
        );
    }
}

/// The `outlier` warning on the pairs left out of the inference (the first four shown).
fn outlier_message(outliers: &[Outlier], opts: &InferOptions) -> String {
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
    )
}

/// One warning per reason candidate groups were left out of the tree (profile pairs,
/// outlier pairs, weak contrast, far cores, odd cores), naming the first sets.
fn dropped_set_warnings(warnings: &mut Warnings, dropped: &[Dropped]) {
    for (reason, kind, what) in [
        (
            DropReason::ProfilePair,
            WarningKind::ProfilePairs,
            "sets of only two parts have identical latency profiles without a latency gap ({}), \
             as two cores on one mesh stop do: not reported as groups",
        ),
        (
            DropReason::OutlierPair,
            WarningKind::Outlier,
            "pairs are faster than the rest but their latency profiles differ ({}): treated as \
             outlier measurements",
        ),
        (
            DropReason::WeakContrast,
            WarningKind::WeakGroups,
            "candidate groups differ from the rest of their parent by less than the noise and \
             the timer resolve ({}): not reported as groups",
        ),
        (
            DropReason::FarCores,
            WarningKind::FarCores,
            "candidate groups are only the rest of their parent beside one or two far cores \
             ({}): those cores are far from the others, not a group boundary",
        ),
        (
            DropReason::OddCores,
            WarningKind::OddCores,
            "candidate groups are only the rest of their parent beside a few cores that each \
             see some other part of the machine in their own way ({}), as slow blocks between \
             chiplets make them: not reported as groups",
        ),
    ] {
        let sets: Vec<&Dropped> = dropped.iter().filter(|d| d.reason == reason).collect();
        if !sets.is_empty() {
            warnings.add(
                kind,
                format!("{} {}", sets.len(), what.replace("{}", &list(&sets, 4))),
            );
        }
    }
}

/// The role decisions' notes on single cores, and the hints the latencies clearly
/// contradict (followed, or not applicable): said whatever the format.
fn role_warnings(warnings: &mut Warnings, roles: &Roles) {
    for note in &roles.core_notes {
        warnings.add(WarningKind::Core, note.clone());
    }
    for d in [&roles.smt, &roles.socket] {
        if let Some(c) = &d.contradiction {
            warnings.add(WarningKind::HintContradicted, c.clone());
        }
    }
}

/// The ids of the groups taken from the operating system's cache-sharing sets.
fn os_groups(topo: &Topology) -> Vec<usize> {
    topo.groups()
        .iter()
        .filter(|g| g.evidence == topoprobe_model::Evidence::Given)
        .map(|g| g.id.0)
        .collect()
}

/// The `groups_from_os` warning, when some groups are the operating system's.
fn os_group_warning(warnings: &mut Warnings, from_os: &[usize]) {
    if !from_os.is_empty() {
        warnings.add(
            WarningKind::GroupsFromOs,
            format!(
                "groups {} are the operating system's cache-sharing sets: their latency barely sets them apart",
                from_os.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ),
        );
    }
}

/// The `resolution` warning, when the noise or the timer hides groups whose profiles
/// differ by [`RESOLUTION_WARN`] or more.
fn resolution_warning(warnings: &mut Warnings, res: Resolution) {
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
    if res.limit >= RESOLUTION_WARN {
        warnings.add(WarningKind::Resolution, resolution);
    }
}

/// Warnings per group: an `inverted_group` for each group slower inside than to the rest
/// of its parent, then `profile_groups` for those found from latency profiles only. Returns
/// the ids of the latter.
fn group_warnings(
    warnings: &mut Warnings,
    t: &Table,
    topo: &Topology,
    opts: &InferOptions,
) -> Vec<usize> {
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
        let inside = median_in_place(&mut t.within(&mine)).unwrap_or(f64::NAN);
        let outside = median_in_place(&mut t.between(&mine, &rest)).unwrap_or(f64::NAN);
        if inside > outside * 1.05 {
            warnings.add(
                WarningKind::InvertedGroup,
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
        warnings.add(
            WarningKind::ProfileGroups,
            format!(
                "groups {} were found from identical latency profiles only: their internal latency does not set them apart",
                profile_only.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    profile_only
}

/// Warnings per socket: `home_node` when its parts are as far apart as other sockets, and
/// `flat` when it has no group structure though its latencies spread widely.
fn socket_warnings(warnings: &mut Warnings, t: &Table, topo: &Topology, opts: &InferOptions) {
    for s in topo.sockets() {
        let mine: Vec<usize> = s.contexts.iter().map(|c| c.0).collect();
        if topo.num_sockets() > 1 {
            let rest: Vec<usize> = (0..t.n)
                .filter(|x| mine.binary_search(x).is_err())
                .collect();
            let inside = s.latency.map_or(f64::NAN, |l| l.median);
            let outside = median_in_place(&mut t.between(&mine, &rest)).unwrap_or(f64::NAN);
            if inside >= 0.9 * outside {
                warnings.add(
                    WarningKind::HomeNode,
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
                    warnings.add(
                        WarningKind::Flat,
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
}

/// The confidence in the group level and its basis: lowest when candidate groups
/// conflicted, then by how the groups were found (OS lists, latency profiles only, latency
/// gaps).
fn group_confidence(
    topo: &Topology,
    crossing: &[&Dropped],
    from_os: &[usize],
    profile_only: &[usize],
) -> (f64, String) {
    if !crossing.is_empty() {
        (
            0.4,
            format!(
                "{} candidate groups conflict with others and were left out: {}",
                crossing.len(),
                list(crossing, 3)
            ),
        )
    } else if topo.num_groups() == 0 {
        (
            0.85,
            "no group structure between core and socket".to_string(),
        )
    } else if !from_os.is_empty() {
        (
            0.7,
            format!(
                "{} groups, {} of them from the OS's cache-sharing lists (origin: {})",
                topo.num_groups(),
                from_os.len(),
                topoprobe_model::Origin::Os
            ),
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
    }
}

/// Why the group level is unresolved, if it is; the first that applies of: clusters the
/// latency does not show (single-thread cores beside SMT cores, the E-cores of a hybrid,
/// many and in no finer group, unless the OS listed its caches), OS cache-sharing sets
/// crossing the groups, two incompatible groupings (`gbasis` says which), and twin groups
/// left apart.
fn group_unresolved(
    topo: &Topology,
    dropped: &[Dropped],
    opts: &InferOptions,
    crossing: &[&Dropped],
    gbasis: &str,
) -> Option<String> {
    let os_caches = opts
        .os_evidence
        .as_ref()
        .is_some_and(|e| !e.shared_caches.is_empty());
    let os_conflicts: Vec<&Dropped> = dropped
        .iter()
        .filter(|d| d.reason == DropReason::OsConflict)
        .collect();
    if let (Some((socket, loose)), false) = (ungrouped_single_cores(topo), os_caches) {
        Some(format!(
            "socket {socket} has {loose} single-thread cores beside its SMT cores in no cluster: the E-cores \
             of a hybrid share an L2 in clusters (of four on Intel) that the latency may barely show; \
             the operating system's cache-sharing lists (a live run) resolve them"
        ))
    } else if !os_conflicts.is_empty() {
        Some(format!(
            "{} sets of contexts the OS lists as sharing a cache cross groups the latencies show, and were left out: {}",
            os_conflicts.len(),
            list(&os_conflicts, 3)
        ))
    } else if !crossing.is_empty() {
        Some(format!(
            "{gbasis}: the latencies support two incompatible groupings; the one kept has a latency gap"
        ))
    } else if let pairs @ [_, ..] = twin_groups_left_apart(topo, dropped).as_slice() {
        Some(format!(
            "every other context sees the two groups of {} alike, but they are no closer to each other \
             than to the rest: one die whose halves are as far apart as the other die, or two separate \
             groups; the latencies cannot tell, so they are left as separate groups",
            list(pairs, 3)
        ))
    } else {
        None
    }
}
