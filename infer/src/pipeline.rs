//! The inference pipeline over a prepared table, and the outlier-repair pass.

use topoprobe_model::{LatencyUnit, TopologyBuilder};

use crate::assemble;
use crate::levels;
use crate::options::InferOptions;
use crate::profiles;
use crate::quantize::Quantization;
use crate::roles::{self, Roles};
use crate::significance;
use crate::table::{Sorted, Table};
use crate::threshold;
use crate::tree::{self, ComponentTree, Dropped};

/// The smallest profile discrepancy (log ratio) taken as real: 0.1%.
const MIN_RESOLVED: f64 = 0.001;

/// Everything one pass of the pipeline finds.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    pub(crate) quant: Option<Quantization>,
    pub(crate) resolution: Resolution,
    /// Pairs of contexts that form a latency component on their own (mutually fastest) and
    /// have nearly the same latency profile.
    pub(crate) fast_pairs: Vec<(usize, usize)>,
    pub(crate) dropped: Vec<Dropped>,
    pub(crate) tree: ComponentTree,
    pub(crate) roles: Roles,
    /// The smallest shared component of every pair, once computed.
    pub(crate) shared: Option<assemble::Shared>,
}

/// Most rounds of leaving out weak groups.
const PRUNE_ROUNDS: usize = 4;

/// Runs steps 2-4 of the pipeline on a table.
pub(crate) fn analyse(t: &Table, opts: &InferOptions) -> Analysis {
    let mut clock = std::time::Instant::now();
    let quant = t.quant;
    let min_gap = levels::MIN_GAP.max(quant.map_or(0.0, |q| 1.0 + 2.0 * q.relative));
    let classes = match &t.sorted {
        Sorted::Exact(v) => levels::classes(v, t.n, min_gap),
        Sorted::Single(v) => levels::classes(v, t.n, min_gap),
    };
    let thresholds = levels::thresholds(&classes);
    crate::timing::stage("classes", &mut clock);
    let components = threshold::components(t, &thresholds);
    crate::timing::stage("components", &mut clock);
    // A coarse timer makes different profiles look identical: profile discrepancies below
    // one timer step (relative to the fast end of the latencies) are not resolved.
    // Nothing is resolved below 0.1% either (printed values carry rounding).
    let floor = quant
        .map_or(0.0, |q| (1.0 + q.step / t.value_quantile(0.1)).ln())
        .max(MIN_RESOLVED)
        .max(opts.resolution.map_or(0.0, |r| r.max(0.0).ln_1p()));
    let profiles = profiles::profile_groups(t, floor);
    crate::timing::stage("profiles", &mut clock);
    let resolution = Resolution::of(&profiles.nearest, floor, t.directional_noise);
    let (mut family, mut dropped) =
        tree::family(t, &components, &profiles, opts.os_evidence.as_ref());
    let mut tree = tree::build(t.n, &family);
    crate::timing::stage("tree", &mut clock);
    let cx = roles::Context {
        t,
        opts,
        thresholds: &thresholds,
        profile_distance: profiles.first_round.as_ref(),
    };
    let (mut roles, mut choice) = roles::assign(&cx, &tree, None);
    if !roles.pairs.is_empty() {
        // Garbled siblings paired into cores of their kind.
        family.extend(roles.pairs.iter().map(|m| tree::Candidate {
            members: m.clone(),
            latency: None,
            profile: None,
            os: None,
            socket: false,
            paired: true,
        }));
        let (kept, crossing) = tree::laminar(t.n, family);
        family = kept;
        dropped.extend(crossing);
        tree = tree::build(t.n, &family);
        (roles, choice) = roles::assign(&cx, &tree, None);
    }
    if choice.nodes(&tree).is_none() {
        // Sockets clustered from the tree's parts: they become nodes, and the sets crossing
        // them are left out.
        for s in choice.sets.iter().filter(|s| s.len() < t.n) {
            // A socket that is already a candidate (a latency class, say) becomes one.
            match family.iter_mut().find(|c| &c.members == s) {
                Some(c) => c.socket = true,
                None => family.push(tree::Candidate {
                    members: s.clone(),
                    latency: None,
                    profile: None,
                    os: None,
                    socket: true,
                    paired: false,
                }),
            }
        }
        let (kept, crossing) = tree::laminar(t.n, family);
        family = kept;
        dropped.extend(crossing);
        tree = tree::build(t.n, &family);
        roles = roles::assign(&cx, &tree, Some(&choice)).0;
    }
    let noise = significance::Noise {
        pair: resolution.noise,
        tick: quant.map(|q| q.step),
    };
    for _ in 0..PRUNE_ROUNDS {
        let weak = significance::weak_groups(t, &tree, &roles, &noise, cx.profile_distance);
        if weak.is_empty() {
            break;
        }
        family.retain(|c| !weak.iter().any(|w| w.members == c.members));
        dropped.extend(weak);
        tree = tree::build(t.n, &family);
        roles = roles::assign(&cx, &tree, Some(&choice)).0;
    }
    crate::timing::stage("roles", &mut clock);
    trace_tree("tree", &tree, Some(&roles.kind));
    #[cfg(feature = "trace")]
    if std::env::var_os("TOPOPROBE_TRACE").is_some() {
        for d in &dropped {
            eprintln!(
                "  dropped [{}] {:?}..: {:?}",
                d.members.len(),
                &d.members[..d.members.len().min(6)],
                d.reason
            );
        }
    }
    let fast_pairs = components
        .iter()
        .filter(|c| {
            c.members.len() == 2
                && profiles::confirmed_by_profiles(&profiles, c.members[0], c.members[1])
        })
        .map(|c| (c.members[0], c.members[1]))
        .collect();
    Analysis {
        quant,
        resolution,
        fast_pairs,
        dropped,
        tree,
        roles,
        shared: None,
    }
}

/// How fine a structure the measurements can resolve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Resolution {
    /// Relative measurement noise per pair, estimated from each context's nearest latency
    /// profile (an upper bound: exact when contexts have twins).
    pub(crate) noise: Option<f64>,
    /// Profile contrast (relative) that a group needs to be found: the separation ratio
    /// times the discrepancy that noise or the timer step alone produces.
    pub(crate) limit: f64,
    /// Smallest profile discrepancy (log) the timer resolves.
    pub(crate) floor: f64,
}

impl Resolution {
    /// `directional`: the noise of one direction of a pair, from a directed matrix.
    fn of(nearest: &[f64], floor: f64, directional: Option<f64>) -> Self {
        // Most contexts have a twin (an SMT sibling, a cluster mate, a mesh-stop partner)
        // whose profile differs only by noise; the 90th percentile of |difference| of two
        // noisy copies is about 2.33 sigma. Without twins this overestimates the noise.
        // A directed matrix tells it directly: the mean of two directions has the noise of
        // one divided by the square root of two.
        let mut near: Vec<f64> = nearest.iter().copied().filter(|x| x.is_finite()).collect();
        let from_twins = (!near.is_empty())
            .then(|| topoprobe_model::median_in_place(&mut near).unwrap_or(f64::NAN) / 2.33);
        let noise = match (directional, from_twins) {
            (Some(d), _) => Some(d / std::f64::consts::SQRT_2),
            (None, s) => s,
        };
        let discrepancy = noise.map_or(0.0, |s| 2.33 * s).max(floor);
        Self {
            noise,
            limit: (profiles::SEPARATION * discrepancy).exp() - 1.0,
            floor,
        }
    }
}

/// Most passes of outlier removal.
const OUTLIER_PASSES: usize = 4;

/// Runs the pipeline, removing outlier pairs and running it again until none is left (at
/// most [`OUTLIER_PASSES`] times). Each pass removes only the worst outliers (within 10% of
/// the largest deviation), because an outlier can make its neighbours' well-measured pairs look
/// out of place until it is gone. Returns the table used last, its analysis and every
/// outlier removed.
pub(crate) fn analyse_robustly(
    measured: Table,
    opts: &InferOptions,
) -> (Table, Analysis, Vec<Outlier>) {
    let mut t = measured;
    let mut a = analyse(&t, opts);
    let mut removed: Vec<Outlier> = Vec::new();
    for _ in 0..OUTLIER_PASSES {
        let mut clock = std::time::Instant::now();
        let shared = shared_components(&t, &a);
        let found = outliers(&t, &a, &shared);
        a.shared = Some(shared);
        crate::timing::stage("outliers", &mut clock);
        let worst = found.iter().map(Outlier::deviation).fold(0.0, f64::max);
        let now: Vec<Outlier> = found
            .into_iter()
            .filter(|o| o.deviation() >= 0.9 * worst)
            .collect();
        if now.is_empty() {
            break;
        }
        let pairs: Vec<(usize, usize)> = now.iter().map(|o| (o.a, o.b)).collect();
        t = t.without(&pairs);
        a = analyse(&t, opts);
        removed.extend(now);
    }
    (t, a, removed)
}

/// A measured pair that lies far outside its latency level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Outlier {
    pub(crate) a: usize,
    pub(crate) b: usize,
    pub(crate) value: f64,
    /// The nearest value of the rest of its level.
    pub(crate) level_edge: f64,
}

impl Outlier {
    /// How many times beyond its level the value lies (at least 1).
    pub(crate) fn deviation(&self) -> f64 {
        (self.value / self.level_edge).max(self.level_edge / self.value)
    }
}

/// A value is an outlier when it is this many times beyond the rest of its level.
const OUTLIER_RATIO: f64 = 1.3;
/// At most this fraction of a level (and of all pairs) is taken for outliers; more than
/// that is structure, not measurement error.
const OUTLIER_SHARE: f64 = 0.08;

/// The smallest shared component of every pair under an analysis's structure.
pub(crate) fn shared_components(t: &Table, a: &Analysis) -> assemble::Shared {
    let mut scratch = TopologyBuilder::new((0..t.n as u32).collect(), LatencyUnit::Ns);
    let chain = assemble::structure(&a.tree, &a.roles, &mut scratch);
    assemble::Shared::new(t, &chain)
}

/// Pairs that lie far below or above the rest of their latency level, given the structure
/// of a first pass. Empty when none, or when there are too many to be outliers.
pub(crate) fn outliers(t: &Table, a: &Analysis, shared: &assemble::Shared) -> Vec<Outlier> {
    // Pairs inside a core that both latency and profile confirm, and pairs that are
    // mutually fastest (an SMT core whose pair is slower than the others), are
    // measurements to keep, not outliers.
    let mut confirmed = vec![usize::MAX; t.n];
    for (i, node) in a.tree.nodes.iter().enumerate() {
        if a.roles.kind[i] == roles::Kind::Core && node.latency.is_some() && node.profile.is_some()
        {
            for &x in &node.members {
                confirmed[x] = i;
            }
        }
    }
    let mut fast_partner = vec![usize::MAX; t.n];
    for &(x, y) in &a.fast_pairs {
        fast_partner[x] = y;
        fast_partner[y] = x;
    }
    let levels = shared.levels.len();
    // Every pair that may be an outlier, with its level.
    let each = |f: &mut dyn FnMut(usize, Entry)| {
        for x in 0..t.n {
            for y in x + 1..t.n {
                let v = t.get(x, y);
                if v.is_nan()
                    || (confirmed[x] != usize::MAX && confirmed[x] == confirmed[y])
                    || fast_partner[x] == y
                {
                    continue;
                }
                let l = shared.level[shared.of(x, y)];
                if l < levels {
                    f(l, Entry(v, x as u32, y as u32));
                }
            }
        }
    };
    // Only the `budget + 1` lowest and highest values of a level matter: they are kept as
    // they come (a level of N²/2 pairs is never held whole).
    let mut count = vec![0_usize; levels];
    each(&mut |l, _| count[l] += 1);
    let low_of = |m: usize| {
        let budget = ((OUTLIER_SHARE * m as f64).floor() as usize)
            .max(1)
            .min(m.saturating_sub(1));
        budget + 1
    };
    let mut ends: Vec<Ends> = count
        .iter()
        .map(|&m| Ends::new(low_of(m), m < 4 || 2 * low_of(m) >= m))
        .collect();
    each(&mut |l, e| ends[l].add(e));
    let mut out = Vec::new();
    for (ends, &m) in ends.iter_mut().zip(&count) {
        if m < 4 {
            continue;
        }
        let budget = low_of(m) - 1;
        let vals = ends.sorted(m);
        let at = |i: usize| vals(i).0;
        // The largest block at either end (at most `budget` values) that is separated from
        // the rest of the level by OUTLIER_RATIO.
        let lo = (1..=budget)
            .filter(|&k| at(k - 1) * OUTLIER_RATIO < at(k))
            .max()
            .unwrap_or(0);
        let hi = (1..=budget)
            .filter(|&k| at(m - k) > at(m - k - 1) * OUTLIER_RATIO)
            .max()
            .unwrap_or(0);
        for i in 0..lo {
            let Entry(v, x, y) = vals(i);
            out.push(Outlier {
                a: x as usize,
                b: y as usize,
                value: v,
                level_edge: at(lo),
            });
        }
        for i in m - hi..m {
            let Entry(v, x, y) = vals(i);
            out.push(Outlier {
                a: x as usize,
                b: y as usize,
                value: v,
                level_edge: at(m - 1 - hi),
            });
        }
    }
    let pairs = t.n * (t.n - 1) / 2;
    if out.len() as f64 > (OUTLIER_SHARE * pairs as f64).max(1.0) {
        return Vec::new();
    }
    out
}

/// A pair of a level: its latency and its contexts.
#[derive(Debug, Clone, Copy)]
struct Entry(f64, u32, u32);

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// By latency, then by the pair.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .total_cmp(&other.0)
            .then(self.1.cmp(&other.1))
            .then(self.2.cmp(&other.2))
    }
}

/// The `keep` lowest and `keep` highest pairs of a level, or all of them when `all`.
struct Ends {
    keep: usize,
    all: Option<Vec<Entry>>,
    /// The lowest so far.
    bottom: Lowest,
    /// The highest so far (the lowest of the reversed order).
    top: Lowest,
}

/// The `keep` lowest entries of a stream (by [`Entry`]'s order, or its reverse), in a
/// buffer of a little more than that: entries beyond the `keep`-th so far are let through
/// only below it, and the buffer is cut back to `keep` when full (linear time, and the
/// memory of the entries kept, in a row).
struct Lowest {
    keep: usize,
    reverse: bool,
    buf: Vec<Entry>,
    /// The `keep`-th lowest so far, once the buffer was first cut.
    bound: Option<Entry>,
}

impl Lowest {
    fn new(keep: usize, reverse: bool) -> Self {
        Self {
            keep,
            reverse,
            buf: Vec::new(),
            bound: None,
        }
    }

    fn order(&self, a: &Entry, b: &Entry) -> std::cmp::Ordering {
        if self.reverse {
            b.cmp(a)
        } else {
            a.cmp(b)
        }
    }

    fn add(&mut self, e: Entry) {
        if self.keep == 0 {
            return;
        }
        if let Some(b) = &self.bound {
            if self.order(&e, b).is_ge() {
                return;
            }
        }
        self.buf.push(e);
        if self.buf.len() >= self.keep + (self.keep / 4).max(1024) {
            self.cut();
        }
    }

    /// Keeps the `keep` lowest.
    fn cut(&mut self) {
        if self.buf.len() > self.keep {
            let reverse = self.reverse;
            self.buf.select_nth_unstable_by(self.keep - 1, |a, b| {
                if reverse {
                    b.cmp(a)
                } else {
                    a.cmp(b)
                }
            });
            self.buf.truncate(self.keep);
            self.bound = Some(self.buf[self.keep - 1]);
        }
    }

    /// The lowest, ascending (by the true order, whichever end they were kept for).
    fn sorted(mut self) -> Vec<Entry> {
        self.cut();
        let mut v = self.buf;
        v.sort();
        v
    }
}

impl Ends {
    fn new(keep: usize, all: bool) -> Self {
        Self {
            keep,
            all: all.then(Vec::new),
            bottom: Lowest::new(if all { 0 } else { keep }, false),
            top: Lowest::new(if all { 0 } else { keep }, true),
        }
    }

    fn add(&mut self, e: Entry) {
        if let Some(all) = &mut self.all {
            all.push(e);
            return;
        }
        self.bottom.add(e);
        self.top.add(e);
    }

    /// The level's pairs in ascending order as far as they were kept, by rank among its
    /// `m` pairs: the `keep` lowest and the `keep` highest (or all).
    fn sorted(&mut self, m: usize) -> impl Fn(usize) -> Entry {
        let keep = self.keep;
        let (low, high) = match self.all.take() {
            Some(mut all) => {
                all.sort();
                (all, Vec::new())
            }
            None => (
                std::mem::replace(&mut self.bottom, Lowest::new(0, false)).sorted(),
                std::mem::replace(&mut self.top, Lowest::new(0, true)).sorted(),
            ),
        };
        move |i| {
            if high.is_empty() || i < keep {
                low[i]
            } else {
                high[i + keep - m]
            }
        }
    }
}

/// Development aid (see the `trace` feature): prints a tree with the roles of its nodes.
#[cfg(feature = "trace")]
pub(crate) fn trace_tree(what: &str, tree: &ComponentTree, kind: Option<&[roles::Kind]>) {
    if std::env::var_os("TOPOPROBE_TRACE").is_none() {
        return;
    }
    fn list(m: &[usize]) -> String {
        let mut out = String::new();
        let mut i = 0;
        while i < m.len() {
            let mut j = i;
            while j + 1 < m.len() && m[j + 1] == m[j] + 1 {
                j += 1;
            }
            if !out.is_empty() {
                out.push(',');
            }
            if j == i {
                out.push_str(&m[i].to_string());
            } else {
                out.push_str(&format!("{}-{}", m[i], m[j]));
            }
            i = j + 1;
        }
        out
    }
    eprintln!("{what}:");
    let mut stack = vec![(0_usize, 0_usize)];
    while let Some((id, depth)) = stack.pop() {
        let node = &tree.nodes[id];
        eprintln!(
            "{:indent$}#{id} [{}] {} lat={:?} prof={:?} leaves={}",
            "",
            node.members.len(),
            kind.map_or(String::new(), |k| format!("{:?}", k[id])),
            node.latency,
            node.profile
                .map(|p| (p.children, (p.separation * 10.0).round() / 10.0)),
            list(&node.leaves),
            indent = 2 * depth
        );
        if node.members.len() <= 16 || depth < 1 {
            for &c in node.children.iter().rev() {
                stack.push((c, depth + 1));
            }
        } else {
            let shown: Vec<String> = node
                .children
                .iter()
                .take(6)
                .map(|&c| {
                    format!(
                        "[{}] {}",
                        tree.nodes[c].members.len(),
                        list(&tree.nodes[c].members)
                    )
                })
                .collect();
            eprintln!(
                "{:indent$}  children: {}",
                "",
                shown.join("; "),
                indent = 2 * depth
            );
        }
    }
}

/// Development aid (see the `trace` feature): nothing without it.
#[cfg(not(feature = "trace"))]
#[inline]
pub(crate) fn trace_tree(_what: &str, _tree: &ComponentTree, _kind: Option<&[roles::Kind]>) {}

#[cfg(test)]
mod footprint {
    use topoprobe_model::LatencyMatrix;

    use crate::table::Table;

    /// The inference's own N² working tables (the symmetric table and its sorted values,
    /// the profile comparisons kept for the roles) stay within 12 bytes per pair of the
    /// N×N table, so that with the input table's 4 a 4096-context table is inferred within
    /// 256 MiB (docs/LIMITS.md). A table of 512 contexts compares profiles as the largest
    /// do (each context with its nearest, not every pair).
    #[test]
    fn working_tables_stay_within_their_budget_per_pair() {
        let n = 512;
        let half = n / 2;
        let m = LatencyMatrix::from_fn(n, |a, b| {
            let (ca, cb) = (a % half, b % half);
            let base = if ca == cb {
                8.0
            } else if ca / 8 == cb / 8 {
                25.0
            } else if (ca < half / 2) == (cb < half / 2) {
                120.0
            } else {
                230.0
            };
            // A little deterministic noise, different in each direction.
            Some(base * (1.0 + 0.01 * (((a * 31 + b * 17) % 13) as f64 - 6.0) / 6.0))
        });
        let t = Table::new(&m).unwrap();
        let profiles = crate::profiles::profile_groups(&t, 0.001);
        let first = profiles.first_round.as_ref().map_or(0, |d| d.bytes());
        let pairs = n * n;
        let working = t.table_bytes() + first;
        assert!(
            working <= 12 * pairs,
            "{working} bytes of working tables for {n} contexts: {:.1} per pair",
            working as f64 / pairs as f64
        );
        assert!(working + m.bytes() <= 16 * pairs);
        // The comparisons of a large table are kept for the compared pairs only.
        assert!(first <= pairs, "{first} bytes of profile comparisons");
    }
}
