//! Profile groups: contexts (or groups of them) that are indistinguishable from outside.
//!
//! Two components are *twins* when every other component sees them at the same latency.
//! This finds what latency thresholds cannot: groups whose internal latency is not lower
//! than their external one (Intel E-core clusters, weakly visible clusters, the far socket
//! of a machine with the home-node effect). It works in rounds: each round clusters the
//! current components by profile discrepancy (complete linkage), accepts the smallest
//! clusters that are far better separated from the rest than they are spread inside, and
//! merges them into single components for the next round.

use crate::linkage::{cluster, Linkage};
use crate::table::Table;

/// A cluster is accepted when its nearest outsider is this many times farther (in profile
/// discrepancy) than its two most different members.
pub(crate) const SEPARATION: f64 = 4.0;
/// Profile discrepancies are capped at this log ratio (a factor of 3).
const CAP: f64 = 1.0986;
/// A second large column difference vetoes twins when it exceeds this log ratio (25%) and
/// three times the typical difference.
const VETO: f64 = 0.2231;
/// A close partner seen this many times farther by the other component vetoes twins.
const PARTNER_RATIO: f64 = 1.5;
/// Fraction of columns that may differ (noise) without breaking twins.
const QUANTILE: f64 = 0.9;
/// Most rounds (each round adds one level).
const MAX_ROUNDS: usize = 64;

/// A profile group found by the profile rounds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProfileGroup {
    /// Sorted member contexts.
    pub(crate) members: Vec<usize>,
    /// Number of components merged (its children at the time it was found).
    pub(crate) children: usize,
    /// Separation ratio (nearest outsider / largest internal discrepancy).
    pub(crate) separation: f64,
    /// Largest profile discrepancy between two of its parts (log ratio).
    pub(crate) within: f64,
    /// Separation without the partner veto: how far the nearest outsider's profile is when
    /// a missing close partner does not count (sets of contexts that merely lack an SMT
    /// sibling are not set apart by it).
    pub(crate) plain_separation: f64,
    /// The parts it merged (each sorted).
    pub(crate) parts: Vec<Vec<usize>>,
    /// Round in which it was found.
    pub(crate) round: usize,
}

/// What the profile rounds find.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Profiles {
    /// The profile groups, round by round.
    pub(crate) sets: Vec<ProfileGroup>,
    /// For every context, the profile discrepancy to its nearest other context (first
    /// round, without the partner veto): an upper bound of the measurement noise.
    pub(crate) nearest: Vec<f64>,
    /// The first round's profile discrepancy between every pair of contexts, without the
    /// partner veto (row-major).
    pub(crate) first_round: Vec<f64>,
}

/// Runs the profile rounds over the table. `floor` is the smallest profile discrepancy that
/// measurement can resolve (a coarse timer makes distinct profiles look identical).
pub(crate) fn profile_groups(t: &Table, floor: f64) -> Profiles {
    let mut classes: Vec<Vec<usize>> = (0..t.n).map(|i| vec![i]).collect();
    let mut found = Vec::new();
    let mut nearest = Vec::new();
    let mut first_round = Vec::new();
    for round in 0..MAX_ROUNDS {
        let k = classes.len();
        if k < 3 {
            break;
        }
        let q = quotient(t, &classes);
        let w: Vec<f64> = classes.iter().map(|c| c.len() as f64).collect();
        let (e, plain) = discrepancies(&q, k, &w);
        if round == 0 {
            nearest = (0..k)
                .map(|a| {
                    (0..k)
                        .filter(|&b| b != a)
                        .map(|b| plain[a * k + b])
                        .fold(f64::INFINITY, f64::min)
                })
                .collect();
            first_round.clone_from(&plain);
        }
        let accepted = accept(&e, &plain, k, floor);
        if accepted.is_empty() {
            break;
        }
        let mut merged = vec![false; k];
        let mut next: Vec<Vec<usize>> = Vec::new();
        for (leaves, separation, within, plain_separation) in accepted {
            let mut members: Vec<usize> = leaves
                .iter()
                .flat_map(|&i| classes[i].iter().copied())
                .collect();
            members.sort_unstable();
            for &i in &leaves {
                merged[i] = true;
            }
            found.push(ProfileGroup {
                members: members.clone(),
                children: leaves.len(),
                separation,
                within,
                plain_separation,
                parts: leaves.iter().map(|&i| classes[i].clone()).collect(),
                round,
            });
            next.push(members);
        }
        next.extend((0..k).filter(|&i| !merged[i]).map(|i| classes[i].clone()));
        next.sort();
        classes = next;
    }
    Profiles {
        sets: found,
        nearest,
        first_round,
    }
}

/// Log of the mean latency between components (NaN where unknown).
fn quotient(t: &Table, classes: &[Vec<usize>]) -> Vec<f64> {
    let k = classes.len();
    if classes.iter().all(|c| c.len() == 1) {
        return t.log.clone();
    }
    let mut q = vec![f64::NAN; k * k];
    for i in 0..k {
        for j in i + 1..k {
            let v = t.between(&classes[i], &classes[j]);
            if !v.is_empty() {
                let mean = v.iter().sum::<f64>() / v.len() as f64;
                q[i * k + j] = mean.ln();
                q[j * k + i] = mean.ln();
            }
        }
    }
    q
}

/// Profile discrepancy of every pair of components (symmetric, capped at [`CAP`]), with
/// and without the partner veto. Column `c` weighs `w[c]` (the number of contexts it
/// stands for). Rows are shared out among the available cores.
pub(crate) fn discrepancies(q: &[f64], k: usize, w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let near = nearest_two(q, k);
    let unit = w.iter().all(|&x| x == 1.0);
    let sample = (unit && k > SAMPLE_ABOVE).then(|| Sample::new(q, k));
    let sample = sample.as_ref();
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, 8)
        .min(k.max(1));
    // Row a computes the pairs (a, b > a); rows are dealt round-robin to even out the
    // triangle.
    let rows: Vec<Vec<RowDiscrepancies>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let near = &near;
                scope.spawn(move || {
                    let mut buf: Vec<(f64, f64)> = Vec::with_capacity(k);
                    let mut flat: Vec<f64> = Vec::with_capacity(k);
                    (t..k)
                        .step_by(threads)
                        .map(|a| {
                            let row = (a + 1..k)
                                .map(|b| match sample {
                                    Some(s) => sampled_discrepancy(q, k, s, near, a, b, &mut flat),
                                    None => pair_discrepancy(
                                        q, k, w, unit, near, a, b, &mut buf, &mut flat,
                                    ),
                                })
                                .collect();
                            (a, row)
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut e = vec![0.0_f64; k * k];
    let mut plain = vec![0.0_f64; k * k];
    for (a, row) in rows.into_iter().flatten() {
        for (i, (v, p)) in row.into_iter().enumerate() {
            let b = a + 1 + i;
            e[a * k + b] = v;
            e[b * k + a] = v;
            plain[a * k + b] = p;
            plain[b * k + a] = p;
        }
    }
    (e, plain)
}

/// Row `a`'s discrepancies to every `b > a`, with and without the partner veto.
type RowDiscrepancies = (usize, Vec<(f64, f64)>);

/// The discrepancy of one pair, with and without the partner veto.
#[allow(clippy::too_many_arguments)]
fn pair_discrepancy(
    q: &[f64],
    k: usize,
    w: &[f64],
    unit: bool,
    near: &[[usize; 2]],
    a: usize,
    b: usize,
    buf: &mut Vec<(f64, f64)>,
    flat: &mut Vec<f64>,
) -> (f64, f64) {
    let total: f64 = if unit { k as f64 } else { w.iter().sum() };
    let columns = total - w[a] - w[b];
    let exit_weight = 0.1 * columns + 2.0;
    let mut big = 0.0;
    let ra = &q[a * k..(a + 1) * k];
    let rb = &q[b * k..(b + 1) * k];
    buf.clear();
    flat.clear();
    for c in 0..k {
        if c == a || c == b {
            continue;
        }
        let x = (ra[c] - rb[c]).abs();
        if x.is_nan() {
            continue;
        }
        if x >= CAP {
            big += w[c];
            if big >= exit_weight {
                return (CAP, CAP);
            }
        }
        if unit {
            flat.push(x);
        } else {
            buf.push((x, w[c]));
        }
    }
    let base = if unit {
        unweighted_distance(flat)
    } else {
        profile_distance(buf)
    }
    .min(CAP);
    (base.max(partner_veto(q, k, near, a, b)).min(CAP), base)
}

/// Tables with more contexts than this compare profiles on a sample of the columns.
const SAMPLE_ABOVE: usize = 384;
/// About this many columns are sampled.
const SAMPLE_COLUMNS: usize = 256;
/// Every context's this many nearest contexts (by latency) are always compared: the
/// columns where siblings and cluster mates differ.
const NEAR_COLUMNS: usize = 8;

/// The columns a large table's profiles are compared on: every `step`-th column, plus each
/// row's nearest contexts.
struct Sample {
    step: usize,
    near: Vec<Vec<usize>>,
}

impl Sample {
    fn new(q: &[f64], k: usize) -> Self {
        let step = k.div_ceil(SAMPLE_COLUMNS).max(1);
        let near = (0..k)
            .map(|a| {
                let mut order: Vec<usize> = (0..k)
                    .filter(|&c| c != a && !q[a * k + c].is_nan())
                    .collect();
                let keep = NEAR_COLUMNS.min(order.len());
                if keep > 0 && keep < order.len() {
                    order.select_nth_unstable_by(keep - 1, |&x, &y| {
                        q[a * k + x].total_cmp(&q[a * k + y])
                    });
                }
                order.truncate(keep);
                order
            })
            .collect();
        Self { step, near }
    }
}

/// [`pair_discrepancy`] for unit weights on the sampled columns and both rows' nearest
/// contexts: the same statistic, estimated from a quarter of the columns or fewer, exact
/// where siblings and cluster mates differ.
fn sampled_discrepancy(
    q: &[f64],
    k: usize,
    sample: &Sample,
    near: &[[usize; 2]],
    a: usize,
    b: usize,
    flat: &mut Vec<f64>,
) -> (f64, f64) {
    let ra = &q[a * k..(a + 1) * k];
    let rb = &q[b * k..(b + 1) * k];
    flat.clear();
    let step = sample.step;
    let columns = k.div_ceil(step) + 2 * NEAR_COLUMNS;
    let exit_count = (0.1 * columns as f64).ceil() as usize + 2;
    let mut big = 0;
    let mut take = |c: usize, flat: &mut Vec<f64>| -> bool {
        if c == a || c == b {
            return true;
        }
        let x = (ra[c] - rb[c]).abs();
        if x.is_nan() {
            return true;
        }
        if x >= CAP {
            big += 1;
            if big >= exit_count {
                return false;
            }
        }
        flat.push(x);
        true
    };
    for c in (0..k).step_by(step) {
        if !take(c, flat) {
            return (CAP, CAP);
        }
    }
    for (i, &c) in sample.near[a].iter().chain(&sample.near[b]).enumerate() {
        let repeated = i >= sample.near[a].len() && sample.near[a].contains(&c);
        if c % step != 0 && !repeated && !take(c, flat) {
            return (CAP, CAP);
        }
    }
    let base = unweighted_distance(flat).min(CAP);
    (base.max(partner_veto(q, k, near, a, b)).min(CAP), base)
}

/// For each row, its two nearest other components by latency (log), `usize::MAX` when absent.
fn nearest_two(q: &[f64], k: usize) -> Vec<[usize; 2]> {
    (0..k)
        .map(|a| {
            let mut best = [usize::MAX; 2];
            let mut val = [f64::INFINITY; 2];
            for c in 0..k {
                let x = q[a * k + c];
                if c == a || x.is_nan() {
                    continue;
                }
                if x < val[0] {
                    best = [c, best[0]];
                    val = [x, val[0]];
                } else if x < val[1] {
                    best[1] = c;
                    val[1] = x;
                }
            }
            best
        })
        .collect()
}

/// A structural difference that a single column reveals: when `a` has a close partner `c`
/// (its nearest component other than `b`) that `b` sees [`PARTNER_RATIO`] times farther,
/// `a` and `b` are not twins (for example a context whose SMT sibling the other lacks).
/// Returns that column's difference, or 0.
fn partner_veto(q: &[f64], k: usize, near: &[[usize; 2]], a: usize, b: usize) -> f64 {
    let mut veto: f64 = 0.0;
    for (x, y) in [(a, b), (b, a)] {
        let c = if near[x][0] == y {
            near[x][1]
        } else {
            near[x][0]
        };
        if c == usize::MAX {
            continue;
        }
        let dx = q[x * k + c];
        let dy = q[y * k + c];
        if !dx.is_nan() && !dy.is_nan() && dy - dx >= PARTNER_RATIO.ln() {
            veto = veto.max(dy - dx);
        }
    }
    veto
}

/// Robust distance between two profiles given their per-column differences and column
/// weights: the weighted 90th percentile (noise in a few columns is tolerated), unless at
/// least two contexts' worth of columns differ by far more than that (a structural
/// difference, such as an unmerged sibling), then that difference. With fewer than six
/// contexts' worth of columns: the largest difference.
fn profile_distance(d: &mut [(f64, f64)]) -> f64 {
    if d.is_empty() {
        return f64::INFINITY;
    }
    if d.len() >= 6 && d.iter().all(|x| x.1 == 1.0) {
        let flat: Vec<f64> = d.iter().map(|x| x.0).collect();
        return unweighted_distance(&flat);
    }
    if d.len() > 64 {
        return histogram_distance(d);
    }
    d.sort_by(|x, y| x.0.total_cmp(&y.0));
    let total: f64 = d.iter().map(|x| x.1).sum();
    if total < 6.0 {
        return d[d.len() - 1].0;
    }
    // Weighted quantile: smallest difference whose cumulative weight reaches QUANTILE.
    let mut acc = 0.0;
    let mut q90 = d[d.len() - 1].0;
    for &(x, wt) in d.iter() {
        acc += wt;
        if acc >= QUANTILE * total - 1e-9 {
            q90 = x;
            break;
        }
    }
    // The difference shared by at least two contexts' worth of columns.
    let mut acc = 0.0;
    let mut second = 0.0;
    for &(x, wt) in d.iter().rev() {
        acc += wt;
        if acc >= 2.0 {
            second = x;
            break;
        }
    }
    veto_or_quantile(second, q90)
}

/// [`profile_distance`] for many weighted columns, in linear time (a log-scale histogram,
/// to within about 4%).
fn histogram_distance(d: &[(f64, f64)]) -> f64 {
    let mut h = Histogram::new();
    for &(x, w) in d {
        h.add(x, w);
    }
    if h.total < 6.0 {
        return h.largest;
    }
    veto_or_quantile(h.reached_by(2.0), h.quantile(QUANTILE))
}

/// The distance of two profiles from the typical difference (`q90`) and the difference
/// shared by two contexts' worth of columns (`second`): `second` when it is a structural
/// difference (far above the typical one), else `q90`.
fn veto_or_quantile(second: f64, q90: f64) -> f64 {
    if second >= VETO.max(3.0 * q90) {
        second
    } else {
        q90
    }
}

/// A log-scale histogram of weighted differences.
struct Histogram {
    bins: [f64; BINS],
    total: f64,
    largest: f64,
}

impl Histogram {
    fn new() -> Self {
        Self {
            bins: [0.0; BINS],
            total: 0.0,
            largest: 0.0,
        }
    }

    fn add(&mut self, x: f64, w: f64) {
        self.bins[bin_of(x)] += w;
        self.total += w;
        self.largest = self.largest.max(x);
    }

    /// The smallest difference whose cumulative weight reaches `q` of the total.
    fn quantile(&self, q: f64) -> f64 {
        let mut acc = 0.0;
        for (bin, &w) in self.bins.iter().enumerate() {
            acc += w;
            if acc >= q * self.total - 1e-9 {
                return bin_value(bin).min(self.largest);
            }
        }
        self.largest
    }

    /// The largest difference that at least `weight` of the columns reach.
    fn reached_by(&self, weight: f64) -> f64 {
        let mut acc = 0.0;
        for (bin, &w) in self.bins.iter().enumerate().rev() {
            acc += w;
            if acc >= weight {
                return bin_value(bin).min(self.largest);
            }
        }
        0.0
    }
}

/// Bins of the log-scale histogram used by [`unweighted_distance`]: 16 per power of two
/// (each about 4.4% wide) from 2^-14 up to [`CAP`].
const BIN_OCTAVES: i32 = 14;
const BINS_PER_OCTAVE: usize = 16;
const BINS: usize = (BIN_OCTAVES as usize + 1) * BINS_PER_OCTAVE + 1;

/// The histogram bin of a difference (bin 0 holds everything below 2^-14).
fn bin_of(x: f64) -> usize {
    if x <= 0.0 {
        return 0;
    }
    let (e, m) = {
        let bits = x.to_bits();
        // For a positive normal f64: exponent and the top mantissa bits.
        (
            ((bits >> 52) & 0x7ff) as i32 - 1023,
            ((bits >> 48) & 0xf) as usize,
        )
    };
    if e < -BIN_OCTAVES {
        return 0;
    }
    (((e + BIN_OCTAVES) as usize) * BINS_PER_OCTAVE + m + 1).min(BINS - 1)
}

/// The middle of a bin, as a difference.
fn bin_value(bin: usize) -> f64 {
    if bin == 0 {
        return 0.0;
    }
    let e = ((bin - 1) / BINS_PER_OCTAVE) as i32 - BIN_OCTAVES;
    let m = ((bin - 1) % BINS_PER_OCTAVE) as f64;
    2f64.powi(e) * (1.0 + (m + 0.5) / BINS_PER_OCTAVE as f64)
}

/// [`profile_distance`] with unit weights, in linear time: the 90th percentile comes from
/// a log-scale histogram (to within about 4%, far below what the separation test needs),
/// the second largest difference is exact.
fn unweighted_distance(d: &[f64]) -> f64 {
    let m = d.len();
    match m {
        0 => return f64::INFINITY,
        1..=5 => return d.iter().copied().fold(0.0, f64::max),
        _ => {}
    }
    let mut h = Histogram::new();
    let (mut first, mut second) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for &x in d {
        h.add(x, 1.0);
        if x > first {
            second = first;
            first = x;
        } else if x > second {
            second = x;
        }
    }
    veto_or_quantile(second, h.quantile(QUANTILE))
}

/// The smallest dendrogram clusters (neither a single component nor all of them) whose
/// separation reaches [`SEPARATION`], without overlaps:
/// `(leaves, separation, within, plain separation)`.
fn accept(e: &[f64], plain: &[f64], k: usize, floor: f64) -> Vec<(Vec<usize>, f64, f64, f64)> {
    let den = cluster(e, k, Linkage::Complete);
    // Neighbours of each leaf by increasing discrepancy.
    let order: Vec<Vec<usize>> = (0..k)
        .map(|a| {
            let mut o: Vec<usize> = (0..k).filter(|&b| b != a).collect();
            o.sort_by(|&x, &y| e[a * k + x].total_cmp(&e[a * k + y]));
            o
        })
        .collect();
    let mut candidates: Vec<(usize, f64, f64, Vec<usize>)> = Vec::new();
    let mut inside = vec![false; k];
    for node in &den.nodes {
        let size = node.leaves.len();
        if node.children.is_none() || size >= k {
            continue;
        }
        let within = node.height;
        if within >= CAP / SEPARATION {
            continue;
        }
        for &x in &node.leaves {
            inside[x] = true;
        }
        let mut outside = f64::INFINITY;
        for &a in &node.leaves {
            if let Some(&b) = order[a].iter().find(|&&b| !inside[b]) {
                outside = outside.min(e[a * k + b]);
            }
        }
        for &x in &node.leaves {
            inside[x] = false;
        }
        let separation = outside / within.max(floor).max(1e-12);
        if separation >= SEPARATION {
            candidates.push((size, separation, within, node.leaves.clone()));
        }
    }
    candidates.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut taken = vec![false; k];
    let mut out = Vec::new();
    for (_, separation, within, leaves) in candidates {
        if leaves.iter().any(|&x| taken[x]) {
            continue;
        }
        for &x in &leaves {
            taken[x] = true;
        }
        let mut plain_within: f64 = 0.0;
        let mut plain_outside = f64::INFINITY;
        let mut mine = vec![false; k];
        for &x in &leaves {
            mine[x] = true;
        }
        for &a in &leaves {
            for b in 0..k {
                if b == a {
                    continue;
                }
                let v = plain[a * k + b];
                if mine[b] {
                    plain_within = plain_within.max(v);
                } else {
                    plain_outside = plain_outside.min(v);
                }
            }
        }
        let plain_separation = plain_outside / plain_within.max(floor).max(1e-12);
        out.push((leaves, separation, within, plain_separation));
    }
    out
}

/// Whether `a` and `b` may be a real pair (not an outlier measurement): their profile distance is at most twice the
/// larger of their distances to their nearest other context. A fast pair whose two
/// members each have a much closer twin elsewhere (each belongs to another core) is an
/// outlier measurement, not a component; a noisy context without a closer twin is not.
/// `plain` is the first round's profile distance between contexts (without the partner
/// veto), see [`Profiles::first_round`].
pub(crate) fn profiles_confirm_pair(plain: &[f64], k: usize, a: usize, b: usize) -> bool {
    let nearest = |x: usize, other: usize| {
        (0..k)
            .filter(|&c| c != x && c != other)
            .map(|c| plain[x * k + c])
            .fold(f64::INFINITY, f64::min)
    };
    plain[a * k + b] <= 2.0 * nearest(a, b).max(nearest(b, a))
}
