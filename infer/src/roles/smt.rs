//! The SMT decision: which innermost sets of contexts are cores.
//!
//! SMT siblings share a first-level cache: they communicate far faster than separate cores
//! (at most [`SMT_MAX_NS`]). The decision is made once per *latency level* — the candidate
//! sets of one size whose inside latency falls in one latency class — so that every core of
//! a kind has the same number of threads: a cluster level near the bound cannot become
//! 4-thread cores in part. Two contexts that every other context sees alike (profile twins)
//! and whose latency is garbled are one core when their level's other pairs are. A level
//! near the bound is reported as unresolved: pairs sharing a core or a cache at 16–34 ns,
//! wider sets (3–8 contexts: SMT of more than two threads is far faster) at 10–20 ns.

use topoprobe_model::{median_in_place, Origin};

use super::{external, fmt_lat, given, given_past, hints, Context, Decision, Kind};
use crate::table::quantile;
use crate::tree::{ComponentTree, OsSet};

/// Largest median latency (ns) between SMT siblings.
pub(crate) const SMT_MAX_NS: f64 = 20.0;
/// Sets of more than two contexts are cores only below this fraction of the bound.
const WIDE_FACTOR: f64 = 0.65;
/// Pairs decided SMT above this fraction of the bound are unresolved.
const NEAR_BELOW: f64 = 0.8;
/// Pairs with a latency gap decided separate cores up to this multiple of the bound are
/// unresolved.
const NEAR_ABOVE: f64 = 1.7;
/// Wider sets decided separate cores above this fraction of the bound are unresolved.
const WIDE_NEAR: f64 = 0.5;
/// A level this much smaller than an SMT level of the same size, all of profile twins, is
/// garbled siblings of that kind.
const GARBLED_SHARE: usize = 4;
/// Pairs of twins without a latency gap are SMT cores only when they hold this share of
/// their parents' contexts (every core of a kind has its siblings; two look-alike cores of
/// a cluster are not a core).
const TWIN_COVERAGE: f64 = 0.75;

/// A set of contexts that may be a core.
#[derive(Debug, Clone)]
struct Candidate {
    node: usize,
    size: usize,
    /// Median latency inside (pairs read as 0 left out; one timer step when every pair is 0).
    inside: f64,
    /// Every measured pair inside was read as 0: its latency is only known to be at most
    /// one timer step.
    censored: bool,
    /// Faster inside than to the rest of its parent.
    gap: bool,
    /// Every other context sees its contexts alike.
    twins: bool,
}

/// The candidates of one latency level.
#[derive(Debug, Clone)]
struct Level {
    size: usize,
    members: Vec<usize>,
    latency: f64,
    gap: bool,
    /// Share of the contexts of the candidates' parents that the candidates hold.
    coverage: f64,
}

/// The verdict of the latencies for one level.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Verdict {
    smt: bool,
    unsure: bool,
}

fn verdict(level: &Level, bound: f64, root_only: bool) -> Verdict {
    let m = level.latency;
    if m.is_nan() {
        return Verdict {
            smt: false,
            unsure: false,
        };
    }
    if level.size == 2 {
        let limit = if root_only { bound / 2.0 } else { bound };
        let smt = m <= limit && (level.gap || level.coverage >= TWIN_COVERAGE);
        let unsure =
            (smt && m > NEAR_BELOW * limit) || (!smt && level.gap && m <= NEAR_ABOVE * bound);
        Verdict { smt, unsure }
    } else {
        let limit = WIDE_FACTOR * bound * if root_only { 0.5 } else { 1.0 };
        let smt = m <= limit;
        Verdict {
            smt,
            unsure: m > WIDE_NEAR * bound && m <= bound,
        }
    }
}

/// Whether the latencies leave a level's SMT verdict to a hint: it is not clearly made of
/// separate cores (pairs up to the top of the zone where they are reported as unresolved,
/// wider sets up to the bound).
fn open_to_hint(level: &Level, bound: f64) -> bool {
    let limit = if level.size == 2 {
        NEAR_ABOVE * bound
    } else {
        bound
    };
    level.latency.is_nan() || level.latency <= limit
}

/// "16 pairs of contexts" or "4 sets of 4 contexts".
fn sets_of(level: &Level) -> String {
    let k = level.members.len();
    match (level.size, k) {
        (2, 1) => "1 pair of contexts".to_string(),
        (2, _) => format!("{k} pairs of contexts"),
        (s, 1) => format!("1 set of {s} contexts"),
        (s, _) => format!("{k} sets of {s} contexts"),
    }
}

/// The typical latency from a level's sets to their nearest other context: the median
/// over the sets of the 5th percentile of their latencies to the rest of their parent.
fn nearest_outside(
    cx: &Context<'_>,
    tree: &ComponentTree,
    cands: &[Candidate],
    level: &Level,
) -> f64 {
    let mut near: Vec<f64> = level
        .members
        .iter()
        .map(|&i| quantile(&mut external(cx.t, tree, cands[i].node), 0.05))
        .filter(|v| v.is_finite())
        .collect();
    median_in_place(&mut near).unwrap_or(f64::NAN)
}

fn candidates(cx: &Context<'_>, tree: &ComponentTree) -> (Vec<Candidate>, Vec<usize>) {
    let t = cx.t;
    let bound = cx.opts.ns_to_units(SMT_MAX_NS);
    let mut out = Vec::new();
    // Innermost nodes whose contexts have no latency between them (missing or outliers):
    // cores if the measured nodes of the same size are.
    let mut unmeasured = Vec::new();
    for (id, node) in tree.nodes.iter().enumerate() {
        let size = node.members.len();
        if !node.children.is_empty() || !(2..=8).contains(&size) || node.socket {
            continue;
        }
        let mut inside: Vec<f64> = Vec::new();
        let mut any = false;
        for (i, &a) in node.members.iter().enumerate() {
            for &b in &node.members[i + 1..] {
                let v = t.get(a, b);
                if !v.is_nan() {
                    any = true;
                    if !t.is_zero(a, b) {
                        inside.push(v);
                    }
                }
            }
        }
        let os = node.os == Some(OsSet::Core);
        if !any {
            unmeasured.push(id);
            continue;
        }
        // Pairs read as 0 are at most one timer step apart: when every pair is, that step
        // is the latency's upper bound.
        let censored = inside.is_empty();
        let m = if censored {
            t.zero_value
        } else {
            median_in_place(&mut inside.clone()).unwrap_or(f64::NAN)
        };
        if censored {
            inside.push(t.zero_value);
        }
        let mut outside = external(t, tree, id);
        let gap = !inside.is_empty()
            && (outside.is_empty() || quantile(&mut inside, 0.95) < quantile(&mut outside, 0.05));
        // Profile twins without a latency gap: an SMT pair whose siblings are not each
        // other's fastest partners (a Zen 5 CCD), or two cores on one mesh stop; only the
        // first is a candidate, below the zone where pairs are reported.
        let twins = node.profile.is_some();
        let pair_of_twins = twins && size == 2 && (m.is_nan() || m <= NEAR_ABOVE * bound);
        if gap || pair_of_twins || os {
            out.push(Candidate {
                node: id,
                size,
                inside: m,
                gap,
                twins,
                censored,
            });
        }
    }
    (out, unmeasured)
}

/// Groups candidates into levels: one size, one latency class (the thresholds between
/// classes); a candidate without a measured latency joins the largest level of its size.
fn levels(cands: &[Candidate], thresholds: &[f64], tree: &ComponentTree) -> Vec<Level> {
    let class = |v: f64| thresholds.iter().filter(|&&th| th < v).count();
    let mut keyed: Vec<((usize, usize), usize)> = Vec::new();
    let mut pending = Vec::new();
    for (i, c) in cands.iter().enumerate() {
        if c.inside.is_nan() || c.censored {
            pending.push(i);
        } else {
            keyed.push(((c.size, class(c.inside)), i));
        }
    }
    keyed.sort();
    let mut out: Vec<(usize, usize, Vec<usize>)> = Vec::new();
    for ((size, cls), i) in keyed {
        match out.last_mut() {
            Some((s, c, m)) if *s == size && *c == cls => m.push(i),
            _ => out.push((size, cls, vec![i])),
        }
    }
    for i in pending {
        let size = cands[i].size;
        match out
            .iter_mut()
            .filter(|l| l.0 == size)
            .max_by_key(|l| l.2.len())
        {
            Some(l) => l.2.push(i),
            None => out.push((size, usize::MAX, vec![i])),
        }
    }
    out.into_iter()
        .map(|(size, _, members)| {
            // Sets read as 0 vote only when nothing else does.
            let mut lat: Vec<f64> = members
                .iter()
                .filter(|&&i| !cands[i].censored)
                .map(|&i| cands[i].inside)
                .filter(|v| !v.is_nan())
                .collect();
            if lat.is_empty() {
                lat = members.iter().map(|&i| cands[i].inside).collect();
            }
            let gaps = members.iter().filter(|&&i| cands[i].gap).count();
            let mut parents: Vec<usize> = members
                .iter()
                .filter_map(|&i| tree.nodes[cands[i].node].parent)
                .collect();
            parents.sort_unstable();
            parents.dedup();
            let held: usize = members.iter().map(|&i| cands[i].size).sum();
            let total: usize = parents.iter().map(|&p| tree.nodes[p].members.len()).sum();
            Level {
                size,
                latency: median_in_place(&mut lat).unwrap_or(f64::NAN),
                gap: 2 * gaps >= members.len(),
                coverage: if total == 0 {
                    1.0
                } else {
                    held as f64 / total as f64
                },
                members,
            }
        })
        .collect()
}

/// Decides the cores (setting their kind) and returns the SMT decision, notes on single
/// cores, and pairs of contexts to make cores (garbled siblings that are no tree node).
pub(super) fn decide(
    cx: &Context<'_>,
    tree: &ComponentTree,
    kind: &mut [Kind],
) -> (Decision, Vec<String>, Vec<Vec<usize>>) {
    let opts = cx.opts;
    let mut notes = Vec::new();
    let (scene, unmeasured) = Scene::new(cx, tree, &mut notes);
    let decision = match opts.smt {
        Some(false) if opts.smt_origin == Origin::Measured => scene.probe_saw_no_slowdown(kind),
        Some(false) => scene.hint_off(kind),
        Some(true) => scene.hint_on(kind),
        None => scene.by_latency(kind),
    };
    let decision = apply_os(cx, tree, kind, decision, &mut notes);
    let core_sizes = core_sizes(tree, kind);
    for id in unmeasured {
        if core_sizes.contains(&tree.nodes[id].members.len()) {
            kind[id] = Kind::Core;
        }
    }
    let mut pairs = Vec::new();
    if opts.smt != Some(false) && core_sizes.contains(&2) {
        pairs = garbled_pair_cores(cx, tree, kind, &mut notes);
    }
    (decision, notes, pairs)
}

/// The sizes of the cores decided so far (one entry per core).
fn core_sizes(tree: &ComponentTree, kind: &[Kind]) -> Vec<usize> {
    (0..kind.len())
        .filter(|&i| kind[i] == Kind::Core)
        .map(|i| tree.nodes[i].members.len())
        .collect()
}

/// Beside 2-context cores: paired leaves become cores, and so do garbled pairs of single
/// contexts (returned, each noted).
fn garbled_pair_cores(
    cx: &Context<'_>,
    tree: &ComponentTree,
    kind: &mut [Kind],
    notes: &mut Vec<String>,
) -> Vec<Vec<usize>> {
    for (id, node) in tree.nodes.iter().enumerate() {
        if node.paired && node.children.is_empty() {
            kind[id] = Kind::Core;
        }
    }
    let pairs = garbled_pairs(cx, tree, kind);
    for p in &pairs {
        notes.push(format!(
            "contexts {p:?}, left beside the SMT cores of their kind, are seen alike by every other context: taken as one core"
        ));
    }
    pairs
}

/// The candidates and latency levels of a tree with the latencies' verdict on each level:
/// what every way of deciding SMT (latencies alone, the SMT probe, a hint) starts from.
struct Scene<'a> {
    cx: &'a Context<'a>,
    tree: &'a ComponentTree,
    /// The SMT bound in the table's unit.
    bound: f64,
    cands: Vec<Candidate>,
    lvls: Vec<Level>,
    /// The latencies' verdict per level.
    verdicts: Vec<Verdict>,
    /// Per level: SMT by the latencies, made uniform per core kind.
    smt_level: Vec<bool>,
    /// The lowest inside latency of any candidate (infinite when none is measured).
    lowest: f64,
}

impl<'a> Scene<'a> {
    /// The candidates, levels and verdicts of `tree`, with the candidate nodes that have no
    /// latency inside (cores if the measured nodes of their size are); notes the garbled
    /// levels taken as SMT.
    fn new(
        cx: &'a Context<'a>,
        tree: &'a ComponentTree,
        notes: &mut Vec<String>,
    ) -> (Self, Vec<usize>) {
        let bound = cx.opts.ns_to_units(SMT_MAX_NS);
        let (cands, unmeasured) = candidates(cx, tree);
        let lvls = levels(&cands, cx.thresholds, tree);
        let lowest = cands
            .iter()
            .map(|c| c.inside)
            .filter(|v| !v.is_nan())
            .fold(f64::INFINITY, f64::min);
        let root_only = |l: &Level| {
            l.members
                .iter()
                .all(|&i| tree.nodes[cands[i].node].parent.is_none())
        };
        let verdicts: Vec<Verdict> = lvls
            .iter()
            .map(|l| verdict(l, bound, root_only(l)))
            .collect();
        let smt_level = uniform_per_kind(cx, tree, &cands, &lvls, &verdicts, notes);
        let scene = Scene {
            cx,
            tree,
            bound,
            cands,
            lvls,
            verdicts,
            smt_level,
            lowest,
        };
        (scene, unmeasured)
    }

    /// Makes the candidates of the levels `take` chooses cores; returns how many.
    fn set_cores(&self, kind: &mut [Kind], take: &dyn Fn(usize) -> bool) -> usize {
        let mut n = 0;
        for (i, l) in self.lvls.iter().enumerate() {
            if take(i) {
                for &c in &l.members {
                    kind[self.cands[c].node] = Kind::Core;
                    n += 1;
                }
            }
        }
        n
    }

    /// The latencies' own decision, setting the cores they show.
    fn by_latency(&self, kind: &mut [Kind]) -> Decision {
        let (cx, opts, bound) = (self.cx, self.cx.opts, self.bound);
        let chosen = self.set_cores(kind, &|i| self.smt_level[i]);
        let unsure: Option<&Level> = self
            .lvls
            .iter()
            .zip(&self.verdicts)
            .find(|(_, v)| v.unsure)
            .map(|(l, _)| l);
        let mut d = latency_decision(cx, chosen, self.cands.is_empty(), self.lowest, unsure);
        // No core stands out, yet the fastest pairs — as many as SMT siblings would
        // be — are below the bound: noise may hide siblings that differ from their
        // neighbours only by their identical profiles.
        let t = cx.t;
        let fast = t.value_quantile(1.0 / (t.n.max(2) - 1) as f64);
        if chosen == 0 && d.unresolved.is_none() && fast <= bound && t.zeros.is_empty() {
            d.confidence = d.confidence.min(0.5);
            d.unresolved = Some(format!(
                "the fastest pairs communicate at {}, below the SMT bound of {}, but no set of contexts \
                 stands out from its neighbours: SMT siblings may be hidden by the noise; pass --smt yes|no",
                fmt_lat(fast, opts),
                fmt_lat(bound, opts)
            ));
        }
        d
    }

    /// The SMT probe saw no slowdown. Contexts far faster than the SMT bound are siblings
    /// all the same (a probe loop that does not contend, a noisy host): the latencies win
    /// and the disagreement is reported.
    fn probe_saw_no_slowdown(&self, kind: &mut [Kind]) -> Decision {
        let (opts, bound, lowest) = (self.cx.opts, self.bound, self.lowest);
        let fast = |i: usize| self.smt_level[i] && self.lvls[i].latency <= bound / 2.0;
        if !self.lvls.iter().enumerate().any(|(i, _)| fast(i)) {
            return given_off(opts.smt_origin);
        }
        let chosen = self.set_cores(kind, &fast);
        Decision {
            origin: Origin::Inferred,
            confidence: 0.5,
            basis: format!(
                "{chosen} sets of contexts communicate at {} (SMT level, below {})",
                fmt_lat(lowest, opts),
                fmt_lat(bound, opts)
            ),
            unresolved: Some(format!(
                "the SMT probe measured no slowdown between the fastest contexts, but they communicate at {} \
                 (SMT siblings are below about {}): kept as SMT; check with `topoprobe latency A B --smt`",
                fmt_lat(lowest, opts),
                fmt_lat(bound, opts)
            )),
            contradiction: None,
        }
    }

    /// A hint of SMT off. A level the latencies clearly call SMT (far below the bound, with
    /// a gap to the rest) contradicts the hint: two separate cores do not communicate that
    /// fast. The hint is followed all the same, and the contradiction said.
    fn hint_off(&self, kind: &[Kind]) -> Decision {
        let (cx, opts, bound) = (self.cx, self.cx.opts, self.bound);
        let d = given_off(opts.smt_origin);
        let clear = self
            .lvls
            .iter()
            .zip(&self.verdicts)
            .filter(|(l, v)| v.smt && !v.unsure && l.gap)
            .map(|(l, _)| l)
            .min_by(|a, b| a.latency.total_cmp(&b.latency));
        let Some(l) = clear else {
            return d;
        };
        let mut scratch = kind.to_vec();
        self.by_latency(&mut scratch);
        let cores = scratch.iter().filter(|&&k| k == Kind::Core).count();
        let near = nearest_outside(cx, self.tree, &self.cands, l);
        let what = format!(
            "{} communicate at {}, below the SMT bound of {} and {:.1}x faster than \
             with their nearest other context ({}), as only the threads of one core do",
            sets_of(l),
            fmt_lat(l.latency, opts),
            fmt_lat(bound, opts),
            near / l.latency,
            fmt_lat(near, opts)
        );
        hints::contradicted(
            d,
            &hints::name(opts.smt_origin, "--smt no", "SMT off"),
            &what,
            &format!(
                "SMT, {} with several contexts",
                topoprobe_model::format::plural(cores, "core")
            ),
            opts.smt_origin,
        )
    }

    /// A hint of SMT on. Only levels fast enough to share a core (within three times the
    /// SMT bound) are made cores: a hint cannot make a socket of slow contexts one core.
    /// The latencies contradict a given hint when they are sure there is no SMT and leave
    /// no level open to it (the SMT probe's verdict has its own rule).
    fn hint_on(&self, kind: &mut [Kind]) -> Decision {
        let (opts, bound, lowest) = (self.cx.opts, self.bound, self.lowest);
        let lvls = &self.lvls;
        let fast = |i: usize| lvls[i].latency.is_nan() || lvls[i].latency <= 3.0 * bound;
        let chosen = self.set_cores(kind, &fast);
        let mut scratch = kind.to_vec();
        scratch.fill(Kind::None);
        let latencies = self.by_latency(&mut scratch);
        let sure_none = opts.smt_origin != Origin::Measured
            && !(0..lvls.len()).any(|i| open_to_hint(&lvls[i], bound))
            && latencies.unresolved.is_none();
        let hint = hints::name(opts.smt_origin, "--smt yes", "SMT on");
        if chosen == 0 && sure_none {
            // Nothing can be made a core: the hint cannot be followed.
            let mut d = latencies;
            d.confidence = d.confidence.min(0.3);
            d.contradiction = Some(format!(
                "{hint} contradicts the latencies: {}; no set of contexts can be made a core, \
                 so the hint is not applied: no SMT",
                self.too_slow_for_smt()
            ));
            return d;
        }
        let d = Decision {
            // A hint that could not be applied leaves the verdict to the latencies.
            origin: if chosen == 0 {
                Origin::Inferred
            } else {
                opts.smt_origin
            },
            confidence: if chosen == 0 { 0.3 } else { 1.0 },
            basis: format!(
                "SMT on, {}; {} with several contexts",
                given(opts.smt_origin),
                topoprobe_model::format::plural(chosen, "core")
            ),
            unresolved: (chosen == 0).then(|| {
                let fastest = if lowest.is_finite() {
                    format!("the fastest communicate at {}", fmt_lat(lowest, opts))
                } else {
                    "none communicates distinctly faster than with the rest".to_string()
                };
                format!(
                    "SMT on was {}, but no set of contexts communicates fast enough to share a core \
                     ({fastest}; SMT siblings are below about {})",
                    given_past(opts.smt_origin),
                    fmt_lat(bound, opts)
                )
            }),
            contradiction: None,
        };
        if sure_none {
            hints::contradicted(
                d,
                &hint,
                &self.too_slow_for_smt(),
                "no SMT",
                opts.smt_origin,
            )
        } else {
            d
        }
    }

    /// What the latencies show against a hint of SMT on: the fastest sets communicate above
    /// the SMT bound ("far" only beyond what a hint may still make a core, 3x the bound), or
    /// no set stands out and the fastest pairs are above it.
    fn too_slow_for_smt(&self) -> String {
        let (t, opts, bound, lowest) = (self.cx.t, self.cx.opts, self.bound, self.lowest);
        if lowest.is_finite() {
            let how = if lowest > 3.0 * bound {
                "far above"
            } else {
                "above"
            };
            format!(
                "the fastest sets of contexts communicate at {}, {how} the SMT bound of {} \
                 (SMT siblings share a first-level cache and communicate faster)",
                fmt_lat(lowest, opts),
                fmt_lat(bound, opts)
            )
        } else {
            format!(
                "no set of contexts communicates distinctly faster than with the rest, and \
                 the fastest pairs communicate at {}, above the SMT bound of {}",
                fmt_lat(t.value_quantile(1.0 / (t.n.max(2) - 1) as f64), opts),
                fmt_lat(bound, opts)
            )
        }
    }
}

/// The latencies' verdict, made uniform per core kind: a small level of profile twins of
/// the size of an SMT level is garbled siblings of that kind (each noted). Returns, per
/// level, whether it is SMT.
fn uniform_per_kind(
    cx: &Context<'_>,
    tree: &ComponentTree,
    cands: &[Candidate],
    lvls: &[Level],
    verdicts: &[Verdict],
    notes: &mut Vec<String>,
) -> Vec<bool> {
    let mut smt_level: Vec<bool> = verdicts.iter().map(|v| v.smt).collect();
    for (i, l) in lvls.iter().enumerate() {
        if smt_level[i] {
            continue;
        }
        let like = lvls.iter().enumerate().find(|&(j, o)| {
            j != i
                && verdicts[j].smt
                && o.size == l.size
                && o.members.len() >= GARBLED_SHARE * l.members.len()
        });
        if like.is_some() && l.members.iter().all(|&c| cands[c].twins) {
            smt_level[i] = true;
            for &c in &l.members {
                let node = &tree.nodes[cands[c].node];
                notes.push(format!(
                    "contexts {:?} communicate at {}, unlike SMT siblings, but every other context sees them alike: taken as one core, like the other cores of their kind",
                    node.members,
                    fmt_lat(cands[c].inside, cx.opts)
                ));
            }
        }
    }
    smt_level
}

/// Pairs of single contexts left beside 2-context cores in their parent (at most a quarter
/// of the parent's SMT contexts) that are each other's nearest by profile, about as alike
/// as the siblings of those cores, and not slower between them than a pair of cores
/// sharing a cache: garbled siblings, to be made cores of their kind.
fn garbled_pairs(cx: &Context<'_>, tree: &ComponentTree, kind: &[Kind]) -> Vec<Vec<usize>> {
    let Some(d) = cx.profile_distance else {
        return Vec::new();
    };
    let (t, n) = (cx.t, cx.t.n);
    let bound = cx.opts.ns_to_units(SMT_MAX_NS);
    let mut out = Vec::new();
    for node in &tree.nodes {
        let cores: Vec<&Vec<usize>> = node
            .children
            .iter()
            .filter(|&&c| kind[c] == Kind::Core && tree.nodes[c].members.len() == 2)
            .map(|&c| &tree.nodes[c].members)
            .collect();
        let left = &node.leaves;
        if cores.len() < 2 || left.len() < 2 || 4 * left.len() > 2 * cores.len().max(4) {
            continue;
        }
        // How unlike the siblings of the cores are at most.
        let alike = cores
            .iter()
            .map(|c| d.get(c[0], c[1]))
            .fold(0.0_f64, f64::max);
        let mut free: Vec<usize> = left.clone();
        while free.len() >= 2 {
            let mut best: Option<(f64, usize, usize)> = None;
            for (i, &a) in free.iter().enumerate() {
                for &b in &free[i + 1..] {
                    let v = d.get(a, b);
                    if best.is_none_or(|x| v < x.0) {
                        best = Some((v, a, b));
                    }
                }
            }
            let Some((v, a, b)) = best else { break };
            // Each other's nearest among every context, not only the leftovers.
            let nearest = |x: usize, y: usize| {
                (0..n)
                    .filter(|&c| c != x && c != y)
                    .all(|c| d.get(x, c) >= v)
            };
            let lat = t.get(a, b);
            if v > 2.0 * alike.max(1e-3)
                || !nearest(a, b)
                || !nearest(b, a)
                || lat > NEAR_ABOVE * bound
            {
                break;
            }
            out.push(vec![a.min(b), a.max(b)]);
            free.retain(|&x| x != a && x != b);
        }
    }
    out
}

fn given_off(origin: Origin) -> Decision {
    Decision {
        origin,
        confidence: 1.0,
        basis: format!("SMT off, {}", given(origin)),
        unresolved: None,
        contradiction: None,
    }
}

/// The SMT decision of the latencies alone.
fn latency_decision(
    cx: &Context<'_>,
    chosen: usize,
    none: bool,
    lowest: f64,
    unsure: Option<&Level>,
) -> Decision {
    let opts = cx.opts;
    let bound = opts.ns_to_units(SMT_MAX_NS);
    let unresolved = unsure.map(|l| {
        if l.size == 2 {
            format!(
                "pairs of contexts that communicate at {} could be SMT siblings or two cores sharing a cache \
                 (SMT siblings are below about {}); latency alone cannot tell: pass --smt yes|no",
                fmt_lat(l.latency, opts),
                fmt_lat(bound, opts)
            )
        } else {
            format!(
                "sets of {} contexts that communicate at {} could be {}-thread cores or clusters of cores \
                 (SMT of more than two threads is below about {}); latency alone cannot tell: pass --smt yes|no",
                l.size,
                fmt_lat(l.latency, opts),
                l.size,
                fmt_lat(WIDE_FACTOR * bound, opts)
            )
        }
    });
    let (confidence, basis) = if chosen > 0 {
        (
            if unresolved.is_some() { 0.5 } else { 0.95 },
            format!(
                "{chosen} sets of contexts communicate at {} (SMT level, below {}) and much slower with the rest",
                fmt_lat(lowest, opts),
                fmt_lat(bound, opts)
            ),
        )
    } else if none {
        (
            0.9,
            "no set of contexts communicates distinctly faster than with the rest".to_string(),
        )
    } else if lowest > bound {
        (
            if unresolved.is_some() { 0.5 } else { 0.85 },
            format!(
                "the fastest sets of contexts communicate at {}, above the SMT bound of {}: separate cores",
                fmt_lat(lowest, opts),
                fmt_lat(bound, opts)
            ),
        )
    } else {
        // Fast enough for SMT, but not as the threads of a core are: a set of more than
        // two threads above the wider bound, or no faster inside than with the rest.
        (
            if unresolved.is_some() { 0.5 } else { 0.85 },
            format!(
                "the fastest sets of contexts communicate at {}, within the SMT bound of {}, but \
                 not as the threads of a core do (sets of more than two threads are below about \
                 {}, and a core's threads communicate much faster with each other than with the \
                 rest): separate cores",
                fmt_lat(lowest, opts),
                fmt_lat(bound, opts),
                fmt_lat(WIDE_FACTOR * bound, opts)
            ),
        )
    };
    Decision {
        origin: Origin::Inferred,
        confidence,
        basis,
        unresolved,
        contradiction: None,
    }
}

/// Applies the operating system's SMT siblings: a listed set that is a node of the tree
/// is a core (the hardware enumerates its threads); where the latencies disagree — a listed
/// set they do not show as one core, or a core they show that the OS does not list — the
/// level is reported as unresolved.
fn apply_os(
    cx: &Context<'_>,
    tree: &ComponentTree,
    kind: &mut [Kind],
    decision: Decision,
    notes: &mut Vec<String>,
) -> Decision {
    let Some(os) = cx.opts.os_evidence.as_ref() else {
        return decision;
    };
    if os.smt_siblings.is_empty() || cx.opts.smt.is_some() {
        return decision;
    }
    let mut agree = 0;
    let mut added = Vec::new();
    let mut missing = Vec::new();
    for set in &os.smt_siblings {
        let mut m = set.clone();
        m.sort_unstable();
        m.dedup();
        match tree.nodes.iter().position(|n| n.members == m) {
            Some(id) if kind[id] == Kind::Core => agree += 1,
            Some(id) if tree.nodes[id].children.is_empty() => {
                kind[id] = Kind::Core;
                added.push(m);
            }
            _ => missing.push(m),
        }
    }
    let extra: Vec<Vec<usize>> = (0..kind.len())
        .filter(|&i| kind[i] == Kind::Core && tree.nodes[i].os != Some(OsSet::Core))
        .map(|i| tree.nodes[i].members.clone())
        .collect();
    for m in &added {
        notes.push(format!(
            "contexts {m:?} are one core as the OS lists them (SMT siblings), though their latency does not set them apart"
        ));
    }
    let mut problems = Vec::new();
    if !added.is_empty() {
        problems.push(format!(
            "{} sets the OS lists as SMT siblings (first {:?}) do not communicate like SMT siblings: taken as cores from the OS",
            added.len(),
            added[0]
        ));
    }
    if !missing.is_empty() {
        problems.push(format!(
            "{} sets the OS lists as SMT siblings (first {:?}) cross the structure the latencies show: not taken",
            missing.len(),
            missing[0]
        ));
    }
    if !extra.is_empty() {
        problems.push(format!(
            "{} sets communicate like SMT siblings (first {:?}) but the OS does not list them as one core",
            extra.len(),
            extra[0]
        ));
    }
    let from_os = agree + added.len() > 0;
    Decision {
        origin: if from_os { Origin::Os } else { decision.origin },
        confidence: if problems.is_empty() { 1.0 } else { 0.4 },
        basis: format!(
            "{} with several contexts, as the OS lists them ({agree} confirmed by the latencies); {}",
            topoprobe_model::format::plural(agree + added.len(), "core"),
            decision.basis
        ),
        // The OS's siblings settle a verdict the latencies left open when they agree.
        unresolved: if !problems.is_empty() {
            Some(problems.join("; "))
        } else if from_os {
            None
        } else {
            decision.unresolved
        },
        contradiction: decision.contradiction,
    }
}
