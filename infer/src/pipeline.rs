//! The inference pipeline over a prepared table, and the outlier-repair pass.

use topoprobe_model::{LatencyUnit, TopologyBuilder};

use crate::assemble::{self, SharedComponent};
use crate::levels;
use crate::options::InferOptions;
use crate::profiles;
use crate::quantize::{self, Quantization};
use crate::roles::{self, Roles};
use crate::table::Table;
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
}

/// Runs steps 2-4 of the pipeline on a table.
pub(crate) fn analyse(t: &Table, opts: &InferOptions) -> Analysis {
    let values = t.upper_values();
    let quant = quantize::detect(&values);
    let min_gap = levels::MIN_GAP.max(quant.map_or(0.0, |q| 1.0 + 2.0 * q.relative));
    let classes = levels::classes(&values, t.n, min_gap);
    let thresholds = levels::thresholds(&classes);
    let components = threshold::components(t, &thresholds);
    // A coarse timer makes different profiles look identical: profile discrepancies below
    // one timer step (relative to the fast end of the latencies) are not resolved.
    // Nothing is resolved below 0.1% either (printed values carry rounding).
    let floor = quant
        .map_or(0.0, |q| {
            let mut v = values.clone();
            let low = crate::table::quantile(&mut v, 0.1);
            (1.0 + q.step / low).ln()
        })
        .max(MIN_RESOLVED)
        .max(opts.resolution.map_or(0.0, |r| r.max(0.0).ln_1p()));
    let profiles = profiles::profile_groups(t, floor);
    let (family, dropped) = tree::family(t, &components, &profiles);
    let tree = tree::build(t.n, &family);
    let roles = roles::assign(t, &tree, opts);
    let resolution = Resolution::of(&profiles.nearest, floor);
    let fast_pairs = components
        .iter()
        .filter(|c| {
            c.members.len() == 2
                && confirmed_by_profiles(&profiles, t.n, c.members[0], c.members[1])
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
    }
}

/// [`profiles::profiles_confirm_pair`] on the first round of the profiles (every pair is confirmed when the
/// table was too small for profiles).
pub(crate) fn confirmed_by_profiles(
    profiles: &profiles::Profiles,
    n: usize,
    a: usize,
    b: usize,
) -> bool {
    profiles.first_round.len() != n * n
        || profiles::profiles_confirm_pair(&profiles.first_round, n, a, b)
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
    fn of(nearest: &[f64], floor: f64) -> Self {
        // Most contexts have a twin (an SMT sibling, a cluster mate, a mesh-stop partner)
        // whose profile differs only by noise; the 90th percentile of |difference| of two
        // noisy copies is about 2.33 sigma. Without twins this overestimates the noise.
        let mut near: Vec<f64> = nearest.iter().copied().filter(|x| x.is_finite()).collect();
        let noise = (!near.is_empty()).then(|| crate::table::median(&mut near) / 2.33);
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
        let found = outliers(&t, &a);
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
const OUTLIER_SHARE: f64 = 0.02;

/// Pairs that lie far below or above the rest of their latency level, given the structure
/// of a first pass. Empty when none, or when there are too many to be outliers.
pub(crate) fn outliers(t: &Table, a: &Analysis) -> Vec<Outlier> {
    let mut scratch = TopologyBuilder::new((0..t.n as u32).collect(), LatencyUnit::Ns);
    let chain = assemble::structure(&a.tree, &a.roles, &mut scratch);
    let level_of = assemble::level_map(t, &chain);
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
    let mut by_level: Vec<Vec<(f64, usize, usize)>> = Vec::new();
    for x in 0..t.n {
        for y in x + 1..t.n {
            let v = t.get(x, y);
            if v.is_nan()
                || (confirmed[x] != usize::MAX && confirmed[x] == confirmed[y])
                || a.fast_pairs.contains(&(x, y))
            {
                continue;
            }
            let m: SharedComponent = assemble::shared_component(&chain, x, y);
            if let Some(&l) = level_of.get(&m) {
                if by_level.len() <= l {
                    by_level.resize(l + 1, Vec::new());
                }
                by_level[l].push((v, x, y));
            }
        }
    }
    let mut out = Vec::new();
    for mut vals in by_level {
        let m = vals.len();
        if m < 4 {
            continue;
        }
        vals.sort_by(|p, q| p.0.total_cmp(&q.0));
        let budget = ((OUTLIER_SHARE * m as f64).floor() as usize).max(1);
        // The largest block at either end (at most `budget` values) that is separated from
        // the rest of the level by OUTLIER_RATIO.
        let lo = (1..=budget.min(m - 1))
            .filter(|&k| vals[k - 1].0 * OUTLIER_RATIO < vals[k].0)
            .max()
            .unwrap_or(0);
        let hi = (1..=budget.min(m - 1))
            .filter(|&k| vals[m - k].0 > vals[m - k - 1].0 * OUTLIER_RATIO)
            .max()
            .unwrap_or(0);
        for &(v, x, y) in vals.iter().take(lo) {
            out.push(Outlier {
                a: x,
                b: y,
                value: v,
                level_edge: vals[lo].0,
            });
        }
        for &(v, x, y) in vals.iter().skip(m - hi) {
            out.push(Outlier {
                a: x,
                b: y,
                value: v,
                level_edge: vals[m - 1 - hi].0,
            });
        }
    }
    let pairs = t.n * (t.n - 1) / 2;
    if out.len() as f64 > (OUTLIER_SHARE * pairs as f64).max(1.0) {
        return Vec::new();
    }
    out
}
