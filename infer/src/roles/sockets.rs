//! The socket decision.
//!
//! Sockets are copies of one chip: they come in 1, 2, 4 or 8 near-equal parts (other
//! counts only beside a link of at least [`SOCKET_SURE_NS`]), each of at
//! least [`SOCKET_MIN_CORES`] cores, whose insides look alike (or one is as slow inside as
//! the link between them: the home-node effect of AMD servers), joined by a chip-to-chip
//! link of at least [`SOCKET_MIN_NS`] at most [`SOCKET_MAX_RATIO`] times their inside, or
//! of at least [`SOCKET_SURE_NS`]. The candidate parts are the top-level parts of the
//! component tree; when those are no plausible socket count (16 dies, single cores, a group
//! that swallowed three of four sockets), the tree's parts are clustered by the median
//! latency of each pair of parts — robust to a few percent of bad pairs — into 2, 4 or 8
//! clusters that the latency clearly separates. A `--sockets N` hint cuts the tree, or else
//! that clustering, into N parts: a correct hint can always be honoured.

use topoprobe_model::{median_in_place, Origin};

use super::{fmt_lat, given, given_past, hints, Context, Decision, Kind};
use crate::linkage::{cluster, Linkage};
use crate::table::Table;
use crate::tree::ComponentTree;
use crate::triangle::Triangle;

/// Smallest cross-socket latency (ns) for sockets that are less than [`SOCKET_MAX_RATIO`]
/// times slower than their insides.
pub(crate) const SOCKET_MIN_NS: f64 = 100.0;
/// Cross-socket latency (ns) that makes sockets whatever the ratio.
pub(crate) const SOCKET_SURE_NS: f64 = 250.0;
/// Largest ratio of cross-socket to in-socket latency for sockets below [`SOCKET_SURE_NS`].
pub(crate) const SOCKET_MAX_RATIO: f64 = 3.5;
/// Fewest cores a component needs to be taken for a socket without a hint.
pub(crate) const SOCKET_MIN_CORES: usize = 4;
/// Relative margin inside which a decision is reported as unresolved.
const MARGIN: f64 = 0.1;
/// Largest ratio of the largest socket to the smallest (cores: a partially measured socket
/// keeps its cores, some with fewer contexts).
const EQUAL_SIZES: f64 = 1.25;
/// Largest ratio of two sockets' inside latencies (sockets are copies of one chip).
const SIMILAR_INSIDES: f64 = 1.25;
/// A part whose inside is this close to the link is a home-node part (its inside pairs
/// go through the home node of the measured line, as slow as the link).
const HOME_NODE: f64 = 0.85;
/// Clusters found by the block medians need every cluster's inside this many times below
/// the latency between them.
const CLEAR: f64 = 1.3;
/// A link below [`SOCKET_MIN_NS`] but above this fraction of it, at most
/// [`LOW_LINK_RATIO`] times the inside, may be a real socket boundary (a fast
/// two-socket link) or the dies of one package: unresolved.
const LOW_LINK: f64 = 0.7;
/// See [`LOW_LINK`].
const LOW_LINK_RATIO: f64 = 3.0;

/// The sockets chosen, as sets of contexts, with the decision.
#[derive(Debug, Clone)]
pub(crate) struct SocketChoice {
    /// The contexts of each socket, sorted, ordered by their first context.
    pub(crate) sets: Vec<Vec<usize>>,
    pub(crate) decision: Decision,
}

impl SocketChoice {
    /// The tree nodes that are the sockets, when every socket is a node (the root for a
    /// single socket).
    pub(crate) fn nodes(&self, tree: &ComponentTree) -> Option<Vec<usize>> {
        self.sets
            .iter()
            .map(|set| tree.nodes.iter().position(|n| &n.members == set))
            .collect()
    }

    fn one(n: usize, decision: Decision) -> Self {
        Self {
            sets: vec![(0..n).collect()],
            decision,
        }
    }
}

/// A partition of the machine into parts that may be sockets, with its latencies.
#[derive(Debug, Clone)]
struct Split {
    sets: Vec<Vec<usize>>,
    /// Median latency between different parts.
    cross: f64,
    /// The fastest link: the lowest median latency between two parts.
    fastest: f64,
    /// Median latency inside each part.
    inside: Vec<f64>,
    /// Typical latency inside each part: the geometric mean of the middle 80% of its
    /// pairs, which (unlike the median) does not jump between two levels that hold about
    /// half of the pairs each, as the CCX and CCD-to-CCD pairs of a two-CCD socket do.
    typical: Vec<f64>,
    /// Cores of each part.
    cores: Vec<usize>,
}

impl Split {
    fn new(t: &Table, tree: &ComponentTree, kind: &[Kind], mut sets: Vec<Vec<usize>>) -> Self {
        for s in &mut sets {
            s.sort_unstable();
        }
        sets.sort();
        let mut part = vec![usize::MAX; t.n];
        for (i, s) in sets.iter().enumerate() {
            for &x in s {
                part[x] = i;
            }
        }
        let k = sets.len();
        // Every pair with both ends in parts: `f(a's part, b's part, latency)`.
        let each = |f: &mut dyn FnMut(usize, usize, f64)| {
            for a in 0..t.n {
                for b in a + 1..t.n {
                    let v = t.get(a, b);
                    let (pa, pb) = (part[a], part[b]);
                    if v.is_nan() || pa == usize::MAX || pb == usize::MAX {
                        continue;
                    }
                    f(pa, pb, v);
                }
            }
        };
        // The pairs inside each part, each list allocated at its size (not grown).
        let mut sizes = vec![0_usize; k];
        each(&mut |pa, pb, _| {
            if pa == pb {
                sizes[pa] += 1;
            }
        });
        let mut inside: Vec<Vec<f64>> = sizes.into_iter().map(Vec::with_capacity).collect();
        each(&mut |pa, pb, v| {
            if pa == pb {
                inside[pa].push(v);
            }
        });
        // The medians of the pairs of each link (group `pa·k + pb`, `pa < pb`) and of all
        // the pairs across parts (group `k·k`), streamed: the pairs across are never held
        // as a list. With two parts, the one link is all of them.
        let all = if k == 2 { None } else { Some(k * k) };
        let (mut link, mut count) = topoprobe_model::streamed_medians(
            k * k + usize::from(all.is_some()),
            &|f: &mut dyn FnMut(usize, f64)| {
                each(&mut |pa, pb, v| {
                    if pa != pb {
                        f(pa.min(pb) * k + pa.max(pb), v);
                        if let Some(g) = all {
                            f(g, v);
                        }
                    }
                });
            },
        );
        let cross = match all {
            Some(g) => {
                count.truncate(g);
                link.remove(g)
            }
            None => link[1],
        };
        let cores = sets.iter().map(|s| core_count(tree, kind, s)).collect();
        let fastest = link
            .iter()
            .zip(&count)
            .filter(|&(_, &c)| c > 0)
            .map(|(&m, _)| m)
            .fold(f64::INFINITY, f64::min);
        let typical = inside
            .iter_mut()
            .map(|v| trimmed_geometric_mean(v))
            .collect();
        Self {
            cross,
            fastest,
            typical,
            inside: inside
                .iter_mut()
                .map(|v| median_in_place(v).unwrap_or(f64::NAN))
                .collect(),
            sets,
            cores,
        }
    }
}

/// The geometric mean of the middle 80% of `values` (sorted in place); NaN when empty.
fn trimmed_geometric_mean(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let cut = values.len() / 10;
    let middle = &values[cut..values.len() - cut];
    if middle.is_empty() {
        return f64::NAN;
    }
    (middle.iter().map(|v| v.ln()).sum::<f64>() / middle.len() as f64).exp()
}

/// Number of cores among a set of contexts, given the core nodes.
fn core_count(tree: &ComponentTree, kind: &[Kind], members: &[usize]) -> usize {
    let mut in_core = 0;
    let mut cores = 0;
    for (id, k) in kind.iter().enumerate() {
        if *k == Kind::Core {
            let m = &tree.nodes[id].members;
            if m.iter().all(|x| members.binary_search(x).is_ok()) {
                cores += 1;
                in_core += m.len();
            }
        }
    }
    cores + members.len() - in_core
}

/// What the latencies say of a split.
#[derive(Debug, Clone)]
struct Judgement {
    /// A socket count (2, 4 or 8) of near-equal parts of enough cores whose insides look
    /// alike (and, for clusters of the block medians, that the latency clearly separates).
    plausible: bool,
    /// Why not, when not.
    implausible: Option<String>,
    /// The link passes the bounds.
    sockets: bool,
    /// The verdict is near a bound.
    unsure: Option<String>,
    ratio: f64,
    inner: f64,
    /// Rejected because some parts pair up over a die-like link while the others are
    /// joined by a link no die reaches: the pairs would be the sockets.
    paired_dies: bool,
}

/// Whether a link of `link` between parts whose inside is `inner` passes socket bounds: at
/// least `min_ns` and at most `max_ratio` times the inside, or at least `sure_ns`; `unit`
/// is one ns in the table's unit.
fn socket_link(
    link: f64,
    inner: f64,
    unit: f64,
    min_ns: f64,
    sure_ns: f64,
    max_ratio: f64,
) -> bool {
    (link >= min_ns * unit && link / inner <= max_ratio) || link >= sure_ns * unit
}

/// The values of the parts that do not show the home-node effect.
fn not_home(values: &[f64], home: &[bool]) -> Vec<f64> {
    values
        .iter()
        .zip(home)
        .filter(|(_, &h)| !h)
        .map(|(&v, _)| v)
        .collect()
}

fn judge(cx: &Context<'_>, split: &Split, clustered: bool) -> Judgement {
    let opts = cx.opts;
    let unit = opts.ns_to_units(1.0);
    let k = split.sets.len();
    let largest = split.cores.iter().copied().max().unwrap_or(0);
    let smallest = split.cores.iter().copied().min().unwrap_or(0);
    let cross = split.cross;
    // Parts as slow inside as the link: the home-node effect.
    let home: Vec<bool> = split
        .inside
        .iter()
        .map(|&i| i >= HOME_NODE * cross)
        .collect();
    let normal = not_home(&split.inside, &home);
    let inner = if normal.is_empty() {
        split.inside.iter().copied().fold(0.0_f64, f64::max)
    } else {
        normal.iter().copied().fold(0.0_f64, f64::max)
    };
    let typical = not_home(&split.typical, &home);
    let (lowest_typical, highest_typical) = typical
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let ratio = cross / inner;
    let mut why = None;
    let mut paired_dies = false;
    // Machines of 3 or 6 sockets exist (glueless rings, boards of blades), but a die-to-die
    // link never reaches the sure bound: other counts need a link at least that slow.
    let usual_count = matches!(k, 2 | 4 | 8);
    if !usual_count && (clustered || cross < SOCKET_SURE_NS * unit) {
        why = Some(format!(
            "{k} parts is not a socket count (1, 2, 4 or 8; others only beside a link of at \
             least {})",
            fmt_lat(SOCKET_SURE_NS * unit, opts)
        ));
    } else if largest as f64 > EQUAL_SIZES * smallest as f64 {
        why = Some(format!(
            "parts of {:?} cores are not near-equal",
            split.cores
        ));
    } else if split.cores.iter().any(|&c| c < SOCKET_MIN_CORES)
        && !(largest == 1 && cross >= SOCKET_SURE_NS * unit)
    {
        // Single cores are sockets only beside a link no core-to-core path inside one chip
        // reaches (a dual-socket PowerPC 970 has one core per socket, joined at 576 ns);
        // larger small parts are not (the modules of an AMD FX talk at 220-340 ns).
        why = Some(format!("parts of fewer than {SOCKET_MIN_CORES} cores"));
    } else if typical.len() >= 2 && highest_typical > SIMILAR_INSIDES * lowest_typical {
        why = Some(format!(
            "their insides differ (typically {} against {}) where sockets are copies of one chip",
            fmt_lat(lowest_typical, opts),
            fmt_lat(highest_typical, opts)
        ));
    } else if clustered
        && (ratio < CLEAR || (home.iter().any(|&h| h) && cross < SOCKET_SURE_NS * unit))
    {
        // Clusters of the parts need a clear separation; one as slow inside as the link (a
        // home node) only beside a link no die-to-die connection reaches.
        why = Some("the latency does not clearly separate them".to_string());
    } else if split.fastest < CLEAR * inner {
        // Two parts joined at about their own inside latency are not apart at all.
        why = Some(format!(
            "some parts are joined at {}, hardly slower than their inside ({})",
            fmt_lat(split.fastest, opts),
            fmt_lat(inner, opts)
        ));
    } else if split.fastest * CLEAR <= cross
        && !socket_link(
            split.fastest,
            inner,
            unit,
            SOCKET_MIN_NS,
            SOCKET_SURE_NS,
            SOCKET_MAX_RATIO,
        )
    {
        // Parts that pair up over a much faster link than the rest, a link that looks like
        // dies of one package: dies, whose pairs are the sockets.
        paired_dies = cross >= SOCKET_SURE_NS * unit;
        // Parts of single contexts have no inside to compare the link with.
        let against = if inner > 0.0 && inner.is_finite() {
            format!(" ({:.1}x their inside)", split.fastest / inner)
        } else {
            String::new()
        };
        why = Some(format!(
            "some parts are joined at {}{against}, as the dies of one socket are, the others at {}",
            fmt_lat(split.fastest, opts),
            fmt_lat(cross, opts)
        ));
    }
    let plausible = why.is_none();
    let rule = |min_ns: f64, sure_ns: f64, max_ratio: f64| -> bool {
        socket_link(cross, inner, unit, min_ns, sure_ns, max_ratio)
    };
    let sockets = plausible && rule(SOCKET_MIN_NS, SOCKET_SURE_NS, SOCKET_MAX_RATIO);
    let (lo, hi) = (1.0 - MARGIN, 1.0 + MARGIN);
    let robust = [
        rule(SOCKET_MIN_NS * lo, SOCKET_SURE_NS, SOCKET_MAX_RATIO),
        rule(SOCKET_MIN_NS * hi, SOCKET_SURE_NS, SOCKET_MAX_RATIO),
        rule(SOCKET_MIN_NS, SOCKET_SURE_NS * lo, SOCKET_MAX_RATIO),
        rule(SOCKET_MIN_NS, SOCKET_SURE_NS * hi, SOCKET_MAX_RATIO),
        rule(SOCKET_MIN_NS, SOCKET_SURE_NS, SOCKET_MAX_RATIO * lo),
        rule(SOCKET_MIN_NS, SOCKET_SURE_NS, SOCKET_MAX_RATIO * hi),
    ]
    .iter()
    .all(|&r| r == sockets);
    let low_link = !sockets
        && cross >= LOW_LINK * SOCKET_MIN_NS * unit
        && cross < SOCKET_MIN_NS * unit
        && ratio <= LOW_LINK_RATIO;
    let unsure = if !plausible {
        None
    } else if sockets && smallest < SOCKET_MIN_CORES {
        Some(format!(
            "sockets of one core each, taken for sockets because the link \
             between them is at least {} (as on a dual-socket PowerPC 970); if they are the cores \
             of one chip, pass --sockets 1",
            fmt_lat(SOCKET_SURE_NS * unit, opts)
        ))
    } else if !robust {
        Some(format!(
            "too close to the bounds to tell sockets from dies of one socket by latency alone \
             (sockets: at least {} and at most {SOCKET_MAX_RATIO}x, or at least {}); pass --sockets N",
            fmt_lat(SOCKET_MIN_NS * unit, opts),
            fmt_lat(SOCKET_SURE_NS * unit, opts)
        ))
    } else if low_link {
        Some(format!(
            "a link below {} can be the dies of one package or a fast link between two sockets; \
             latency alone cannot tell: pass --sockets N",
            fmt_lat(SOCKET_MIN_NS * unit, opts)
        ))
    } else {
        None
    };
    Judgement {
        plausible,
        implausible: why,
        sockets,
        unsure,
        ratio,
        inner,
        paired_dies,
    }
}

/// "2 components of 64 contexts joined at 140 ns (2.9x their inside, 48 ns)".
fn facts(cx: &Context<'_>, split: &Split, j: &Judgement, what: &str) -> String {
    let sizes: Vec<usize> = split.sets.iter().map(Vec::len).collect();
    let equal = sizes.iter().all(|&s| s == sizes[0]);
    // Parts of single contexts have no inside to compare the link with.
    let inside = if j.ratio.is_finite() {
        format!(
            "{:.1}x their inside, {}",
            j.ratio,
            fmt_lat(j.inner, cx.opts)
        )
    } else {
        "no pair inside any of them".to_string()
    };
    format!(
        "{} {what} of {} {} joined at {} ({inside})",
        split.sets.len(),
        if equal {
            sizes[0].to_string()
        } else {
            format!("{sizes:?}")
        },
        if equal && sizes[0] == 1 {
            "context"
        } else {
            "contexts"
        },
        fmt_lat(split.cross, cx.opts),
    )
}

/// The parts of a node: its children and its leaf contexts.
fn parts(tree: &ComponentTree, node: usize) -> Vec<Vec<usize>> {
    let n = &tree.nodes[node];
    let mut p: Vec<Vec<usize>> = n
        .children
        .iter()
        .map(|&c| tree.nodes[c].members.clone())
        .collect();
    p.extend(n.leaves.iter().map(|&x| vec![x]));
    p
}

/// The tree's parts below the root, each expanded into its own parts while it is larger
/// than `max` contexts and not a core: the units the block medians cluster.
fn units(tree: &ComponentTree, kind: &[Kind], max: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut stack: Vec<usize> = vec![0];
    while let Some(id) = stack.pop() {
        let node = &tree.nodes[id];
        for &c in &node.children {
            if tree.nodes[c].members.len() > max && kind[c] != Kind::Core {
                stack.push(c);
            } else {
                out.push(tree.nodes[c].members.clone());
            }
        }
        out.extend(node.leaves.iter().map(|&x| vec![x]));
    }
    out.sort();
    out
}

/// Median latency between every pair of units (NaN where no pair is measured): each
/// block's latencies gathered in turn, so that only one block's are held at a time.
fn block_medians(t: &Table, units: &[Vec<usize>]) -> Triangle {
    let mut block: Vec<f64> = Vec::new();
    Triangle::from_fn(units.len(), |a, b| {
        block.clear();
        for &x in &units[a] {
            block.extend(
                units[b]
                    .iter()
                    .map(|&y| t.get(x, y))
                    .filter(|v| !v.is_nan()),
            );
        }
        median_in_place(&mut block).unwrap_or(f64::NAN)
    })
}

/// Clusters the units by their block medians (average linkage) and returns the partition
/// into each of `counts` clusters that exists.
fn clustered(t: &Table, units: &[Vec<usize>], counts: &[usize]) -> Vec<Vec<Vec<usize>>> {
    let u = units.len();
    if u < 2 {
        return Vec::new();
    }
    let den = cluster(block_medians(t, units), Linkage::Average);
    counts
        .iter()
        .filter(|&&k| k <= u)
        .map(|&k| {
            den.clusters(k)
                .into_iter()
                .map(|c| {
                    let mut m: Vec<usize> =
                        c.iter().flat_map(|&i| units[i].iter().copied()).collect();
                    m.sort_unstable();
                    m
                })
                .collect()
        })
        .collect()
}

/// Decides the sockets.
pub(super) fn decide(cx: &Context<'_>, tree: &ComponentTree, kind: &[Kind]) -> SocketChoice {
    let inferred = infer(cx, tree, kind);
    match cx.opts.sockets {
        None => inferred,
        Some(want) => hinted(cx, tree, kind, want, inferred),
    }
}

/// The sockets of the latencies alone.
fn infer(cx: &Context<'_>, tree: &ComponentTree, kind: &[Kind]) -> SocketChoice {
    let (t, n) = (cx.t, cx.t.n);
    let single = |basis: String, unresolved: Option<String>, confidence: f64| {
        SocketChoice::one(
            n,
            Decision {
                origin: Origin::Inferred,
                confidence,
                basis,
                unresolved,
                contradiction: None,
            },
        )
    };
    let root_parts = parts(tree, 0);
    if root_parts.len() < 2 || kind[0] == Kind::Core {
        return single("all contexts form one component".to_string(), None, 0.9);
    }
    // The tree's own top-level parts, when they are socket-sized sets.
    let socket_sized = tree.nodes[0].leaves.is_empty()
        && tree.nodes[0]
            .children
            .iter()
            .all(|&c| kind[c] != Kind::Core);
    let mut considered: Option<(Split, Judgement)> = None;
    if socket_sized {
        let split = Split::new(t, tree, kind, root_parts.clone());
        let j = judge(cx, &split, false);
        if j.plausible {
            return choose(cx, split, &j, "components", 0.8);
        }
        considered = Some((split, j));
    }
    // Otherwise the parts clustered by block medians into 2, 4 or 8 clear clusters: parts
    // no larger than such a socket, the tree's own where they are.
    let mut best: Option<(Split, Judgement)> = None;
    for k in [2, 4, 8] {
        let us = units(tree, kind, (n / k).max(1));
        let Some(sets) = clustered(t, &us, &[k]).into_iter().next() else {
            continue;
        };
        if sets.len() != k {
            continue;
        }
        let split = Split::new(t, tree, kind, sets);
        let j = judge(cx, &split, true);
        if j.plausible && best.as_ref().is_none_or(|(_, b)| j.ratio > b.ratio) {
            best = Some((split, j));
        }
    }
    if let Some((split, j)) = best {
        return choose(
            cx,
            split,
            &j,
            "clusters of the parts' median latencies",
            0.75,
        );
    }
    match considered {
        Some((split, j)) => {
            let what = facts(cx, &split, &j, "components");
            // Parts joined by a link no die reaches, left in one socket because some of them
            // pair up like dies: the other parts may be such pairs too, whose die link reads
            // as slowly as the socket link (a home node), which the latency cannot show.
            let unresolved = j.paired_dies.then(|| {
                format!(
                    "{what}, but some of them pair up like the dies of one socket: the sockets are \
                     probably such pairs, some of whose die links read as slowly as the socket link \
                     (a home node); pass --sockets N"
                )
            });
            single(
                format!(
                    "{what}: not sockets ({}): groups of one socket",
                    j.implausible.unwrap_or_default()
                ),
                unresolved,
                0.7,
            )
        }
        None => single(
            format!(
                "the top level joins {} parts, some of them single cores, and no clustering of them is a plausible socket count: one socket",
                root_parts.len()
            ),
            None,
            0.8,
        ),
    }
}

/// Sockets or one socket, from a plausible split.
fn choose(
    cx: &Context<'_>,
    split: Split,
    j: &Judgement,
    what: &str,
    confidence: f64,
) -> SocketChoice {
    let facts = facts(cx, &split, j, what);
    let unresolved = j.unsure.as_ref().map(|u| format!("{facts}: {u}"));
    let confidence = if unresolved.is_some() {
        0.4
    } else {
        confidence
    };
    if j.sockets {
        SocketChoice {
            sets: split.sets,
            decision: Decision {
                origin: Origin::Inferred,
                confidence,
                basis: format!("{facts}: sockets"),
                unresolved,
                contradiction: None,
            },
        }
    } else {
        SocketChoice::one(
            cx.t.n,
            Decision {
                origin: Origin::Inferred,
                confidence,
                basis: format!("{facts}: groups of one socket"),
                unresolved,
                contradiction: None,
            },
        )
    }
}

/// The sockets of a `--sockets N` hint: the tree cut into N components (the slowest node
/// expanded first), else the clustering of the parts by block medians into N clusters.
fn hinted(
    cx: &Context<'_>,
    tree: &ComponentTree,
    kind: &[Kind],
    want: usize,
    inferred: SocketChoice,
) -> SocketChoice {
    let (t, n, opts) = (cx.t, cx.t.n, cx.opts);
    let agree = inferred.sets.len() == want;
    if want == 1 {
        return SocketChoice::one(
            n,
            Decision {
                origin: opts.sockets_origin,
                confidence: 1.0,
                basis: format!("one socket, {}", given(opts.sockets_origin)),
                unresolved: (!agree).then(|| {
                    format!(
                        "one socket was {}, but the latencies show {} socket-like components ({})",
                        given_past(opts.sockets_origin),
                        inferred.sets.len(),
                        inferred.decision.basis
                    )
                }),
                contradiction: None,
            },
        );
    }
    let plausible_count = matches!(want, 2 | 4 | 8);
    let decision =
        |basis: String, equal: bool| {
            let doubtful = !plausible_count || !equal;
            Decision {
                origin: opts.sockets_origin,
                confidence: if doubtful { 0.5 } else { 1.0 },
                basis,
                unresolved: doubtful.then(|| {
                    format!(
                    "{want} sockets were {}, but {} of a machine's sockets are no plausible split \
                     (sockets come in 1, 2, 4 or 8 near-equal parts): kept as given",
                    given_past(opts.sockets_origin),
                    if plausible_count { "parts this unequal" } else { "that many" }
                )
                }),
                contradiction: None,
            }
        };
    let equal = |sets: &[Vec<usize>]| {
        let largest = sets.iter().map(Vec::len).max().unwrap_or(0);
        let smallest = sets.iter().map(Vec::len).min().unwrap_or(0);
        largest as f64 <= EQUAL_SIZES * smallest as f64
    };
    if agree {
        let eq = equal(&inferred.sets);
        return SocketChoice {
            decision: decision(
                format!(
                    "{want} sockets, {}, in agreement with the latencies",
                    given(opts.sockets_origin)
                ),
                eq,
            ),
            sets: inferred.sets,
        };
    }
    // Expand the slowest node until the cut has the wanted number of components.
    let mut frontier: Vec<usize> = vec![0];
    while frontier.len() < want {
        let mut best: Option<(usize, f64)> = None;
        for (i, &node) in frontier.iter().enumerate() {
            let nd = &tree.nodes[node];
            if kind[node] == Kind::Core || nd.children.len() < 2 || !nd.leaves.is_empty() {
                continue;
            }
            let ps: Vec<Vec<usize>> = nd
                .children
                .iter()
                .map(|&c| tree.nodes[c].members.clone())
                .collect();
            let mut v = Vec::new();
            for a in 0..ps.len() {
                for b in a + 1..ps.len() {
                    v.extend(t.between(&ps[a], &ps[b]));
                }
            }
            let lat = median_in_place(&mut v).unwrap_or(f64::NAN);
            if best.is_none_or(|(_, l)| lat > l) {
                best = Some((i, lat));
            }
        }
        let Some((i, _)) = best else { break };
        let node = frontier.remove(i);
        frontier.extend(tree.nodes[node].children.iter().copied());
    }
    let sets: Vec<Vec<usize>> = if frontier.len() == want {
        frontier
            .iter()
            .map(|&s| tree.nodes[s].members.clone())
            .collect()
    } else {
        // The clustering by block medians, of parts small enough to make `want` clusters.
        let mut max = (n / want).max(1);
        let mut us = units(tree, kind, max);
        while us.len() < want && max > 1 {
            max = (max / 2).max(1);
            us = units(tree, kind, max);
        }
        if us.len() < want {
            // Fewer cores than sockets cannot happen with a valid hint; single contexts.
            us = (0..n).map(|x| vec![x]).collect();
        }
        clustered(t, &us, &[want])
            .into_iter()
            .next()
            .unwrap_or_default()
    };
    let mut sets = sets;
    for s in &mut sets {
        s.sort_unstable();
    }
    sets.sort();
    if sets.len() != want {
        let mut d = inferred.decision.clone();
        d.unresolved = Some(format!(
            "{want} sockets were given, but the machine cannot be split into {want} parts; kept the inferred {} ({})",
            inferred.sets.len(),
            d.basis
        ));
        d.confidence = d.confidence.min(0.3);
        return SocketChoice {
            sets: inferred.sets,
            decision: d,
        };
    }
    let split = Split::new(t, tree, kind, sets.clone());
    let j = judge(cx, &split, false);
    let eq = equal(&sets);
    let mut d = decision(
        format!(
            "{want} sockets, {}; {} ({})",
            given(opts.sockets_origin),
            facts(cx, &split, &j, "parts"),
            inferred.decision.basis
        ),
        eq,
    );
    if let Some(cut) = hints::socket_cut(cx, tree, kind, &sets) {
        d = hints::contradicted(
            d,
            &hints::name(
                opts.sockets_origin,
                &format!("--sockets {want}"),
                &topoprobe_model::format::plural(want, "socket"),
            ),
            &hints::describe_cut(cx, want, &cut),
            &topoprobe_model::format::plural(inferred.sets.len(), "socket"),
            opts.sockets_origin,
        );
    }
    SocketChoice { decision: d, sets }
}
