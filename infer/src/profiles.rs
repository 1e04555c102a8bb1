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
    /// Profile discrepancy (log) of the nearest outsider: how far the group's profile
    /// stands from its neighbours'.
    pub(crate) outside: f64,
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
        let mut clock = std::time::Instant::now();
        let q = quotient(t, &classes);
        crate::timing::stage("  quotient", &mut clock);
        let w: Vec<f64> = classes.iter().map(|c| c.len() as f64).collect();
        let cmp = compare(&q, k, &w);
        crate::timing::stage("  compare", &mut clock);
        if round == 0 {
            nearest = (0..k)
                .map(|a| {
                    cmp.partners(a)
                        .filter(|&b| b != a)
                        .map(|b| cmp.plain[a * k + b])
                        .fold(CAP, f64::min)
                })
                .collect();
            first_round.clone_from(&cmp.plain);
        }
        let accepted = accept(&cmp, floor);
        #[cfg(feature = "trace")]
        if std::env::var_os("TOPOPROBE_TRACE_ROUND")
            .is_some_and(|r| r.to_str() == Some(&round.to_string()))
        {
            for a in 0..k {
                let row: Vec<String> = (0..k).map(|b| format!("{:.2}", cmp.e[a * k + b])).collect();
                eprintln!(
                    "  [{}] {:?}.. e: {}",
                    classes[a].len(),
                    &classes[a][..classes[a].len().min(3)],
                    row.join(" ")
                );
            }
        }
        crate::timing::stage("  accept", &mut clock);
        #[cfg(feature = "trace")]
        if std::env::var_os("TOPOPROBE_TRACE").is_some() {
            let sizes: Vec<(usize, f64)> = accepted
                .iter()
                .map(|a| {
                    (
                        a.0.iter().map(|&i| classes[i].len()).sum::<usize>(),
                        (a.1 * 10.0).round() / 10.0,
                    )
                })
                .collect();
            eprintln!("  profile round {round}: {k} components, accepted (contexts, separation) {sizes:?}");
        }
        if accepted.is_empty() {
            break;
        }
        let mut merged = vec![false; k];
        let mut next: Vec<Vec<usize>> = Vec::new();
        for (leaves, separation, within, plain_separation, outside) in accepted {
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
                outside,
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

/// Log of the mean latency between components (NaN where unknown), in one pass over the
/// table.
fn quotient<'t>(t: &'t Table, classes: &[Vec<usize>]) -> std::borrow::Cow<'t, [f64]> {
    let k = classes.len();
    if classes.iter().all(|c| c.len() == 1) {
        // Classes are sorted: with single contexts they are the contexts in order.
        return std::borrow::Cow::Borrowed(&t.log);
    }
    let mut of = vec![usize::MAX; t.n];
    for (i, c) in classes.iter().enumerate() {
        for &x in c {
            of[x] = i;
        }
    }
    let mut sum = vec![0.0_f64; k * k];
    let mut count = vec![0_u32; k * k];
    for a in 0..t.n {
        let ca = of[a];
        let row = &t.lat[a * t.n..(a + 1) * t.n];
        for (b, &v) in row.iter().enumerate().skip(a + 1) {
            let cb = of[b];
            if ca == cb || v.is_nan() {
                continue;
            }
            sum[ca * k + cb] += v;
            count[ca * k + cb] += 1;
        }
    }
    let mut q = vec![f64::NAN; k * k];
    for i in 0..k {
        for j in i + 1..k {
            let c = count[i * k + j] + count[j * k + i];
            if c > 0 {
                let mean = ((sum[i * k + j] + sum[j * k + i]) / f64::from(c)).ln();
                q[i * k + j] = mean;
                q[j * k + i] = mean;
            }
        }
    }
    std::borrow::Cow::Owned(q)
}

/// Tables of at most this many components compare every pair of profiles on every column;
/// larger ones compare each component with its [`CANDIDATES`] nearest components by
/// latency, on a sample of the columns.
const ALL_PAIRS_UP_TO: usize = 384;
/// Components each component of a large table is compared with: its nearest by latency,
/// where its SMT siblings and cluster mates are (the profile groups of a large machine).
const CANDIDATES: usize = 24;

/// The profile discrepancies of a round.
pub(crate) struct Comparisons {
    pub(crate) k: usize,
    /// Discrepancy with the partner veto (row-major; [`CAP`] for pairs not compared).
    pub(crate) e: Vec<f64>,
    /// Discrepancy without the partner veto.
    pub(crate) plain: Vec<f64>,
    /// For a large table, the components each one was compared with (sorted); `None` when
    /// every pair was compared.
    pub(crate) compared: Option<Vec<Vec<usize>>>,
}

impl Comparisons {
    /// The components compared with `a` (every other one for a small table).
    pub(crate) fn partners(&self, a: usize) -> Box<dyn Iterator<Item = usize> + '_> {
        match &self.compared {
            Some(c) => Box::new(c[a].iter().copied()),
            None => Box::new((0..self.k).filter(move |&b| b != a)),
        }
    }
}

/// Profile discrepancy of the pairs of components (symmetric, capped at [`CAP`]), with
/// and without the partner veto. Column `c` weighs `w[c]` (the number of contexts it
/// stands for). Small tables compare every pair on every column; large ones each
/// component with its nearest by latency, on sampled columns. Pairs are shared out among
/// the available cores.
pub(crate) fn compare(q: &[f64], k: usize, w: &[f64]) -> Comparisons {
    let near = nearest_two(q, k);
    let unit = w.iter().all(|&x| x == 1.0);
    let large = k > ALL_PAIRS_UP_TO;
    let nearest = if large {
        nearest_by_latency(q, k)
    } else {
        Vec::new()
    };
    let sample = large.then(|| Sample::new(q, k, &nearest));
    let compared: Option<Vec<Vec<usize>>> = large.then(|| candidates(k, nearest));
    let pairs: Vec<(usize, usize)> = match &compared {
        Some(c) => (0..k)
            .flat_map(|a| c[a].iter().filter(move |&&b| b > a).map(move |&b| (a, b)))
            .collect(),
        None => (0..k)
            .flat_map(|a| (a + 1..k).map(move |b| (a, b)))
            .collect(),
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, 8)
        .min(pairs.len().div_ceil(256).max(1));
    let chunk = pairs.len().div_ceil(threads).max(1);
    let (sample, near, pairs_ref) = (sample.as_ref(), &near, &pairs);
    let values: Vec<Vec<(f64, f64)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = pairs_ref
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut buf: Vec<(f64, f64)> = Vec::with_capacity(k);
                    let mut flat: Vec<f64> = Vec::with_capacity(k);
                    part.iter()
                        .map(|&(a, b)| match sample {
                            Some(s) => sampled_discrepancy(
                                q, k, w, unit, s, near, a, b, &mut buf, &mut flat,
                            ),
                            None => {
                                pair_discrepancy(q, k, w, unit, near, a, b, &mut buf, &mut flat)
                            }
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
    let mut e = vec![CAP; k * k];
    let mut plain = vec![CAP; k * k];
    for i in 0..k {
        e[i * k + i] = 0.0;
        plain[i * k + i] = 0.0;
    }
    for (&(a, b), (v, p)) in pairs.iter().zip(values.into_iter().flatten()) {
        e[a * k + b] = v;
        e[b * k + a] = v;
        plain[a * k + b] = p;
        plain[b * k + a] = p;
    }
    Comparisons {
        k,
        e,
        plain,
        compared,
    }
}

/// For each component, its [`CANDIDATES`] nearest components by latency, nearest first.
fn nearest_by_latency(q: &[f64], k: usize) -> Vec<Vec<usize>> {
    (0..k)
        .map(|a| {
            let row = &q[a * k..(a + 1) * k];
            let mut order: Vec<usize> = (0..k).filter(|&c| c != a && !row[c].is_nan()).collect();
            let keep = CANDIDATES.min(order.len());
            if keep > 0 && keep < order.len() {
                order.select_nth_unstable_by(keep - 1, |&x, &y| row[x].total_cmp(&row[y]));
            }
            order.truncate(keep);
            order.sort_by(|&x, &y| row[x].total_cmp(&row[y]));
            order
        })
        .collect()
}

/// The components each component is compared with: its nearest by latency, made
/// symmetric (`b` is compared with `a` when `a` is with `b`), sorted.
fn candidates(k: usize, nearest: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    let mut out = nearest;
    for a in 0..k {
        for i in 0..out[a].len() {
            let b = out[a][i];
            if !out[b].contains(&a) {
                out[b].push(a);
            }
        }
    }
    for list in &mut out {
        list.sort_unstable();
        list.dedup();
    }
    out
}

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

/// About this many columns are sampled.
const SAMPLE_COLUMNS: usize = 256;
/// Every context's this many nearest contexts (by latency) are always compared: the
/// columns where siblings and cluster mates differ.
const NEAR_COLUMNS: usize = 8;

/// The columns a large table's profiles are compared on: every `step`-th column, plus each
/// row's nearest contexts.
struct Sample {
    step: usize,
    /// Every row's values at the sampled columns `0, step, 2·step, ...` (row-major, one
    /// row per component), read contiguously.
    columns: Vec<f64>,
    /// Number of sampled columns.
    width: usize,
    near: Vec<Vec<usize>>,
}

impl Sample {
    /// The sample of `q`; `nearest[a]` lists `a`'s nearest components by latency, nearest
    /// first.
    fn new(q: &[f64], k: usize, nearest: &[Vec<usize>]) -> Self {
        let step = k.div_ceil(SAMPLE_COLUMNS).max(1);
        let width = k.div_ceil(step);
        let mut columns = Vec::with_capacity(k * width);
        for a in 0..k {
            columns.extend(q[a * k..(a + 1) * k].iter().step_by(step));
        }
        let near = nearest
            .iter()
            .map(|n| n.iter().copied().take(NEAR_COLUMNS).collect())
            .collect();
        Self {
            step,
            columns,
            width,
            near,
        }
    }
}

/// [`pair_discrepancy`] on the sampled columns and both rows' nearest contexts: the same
/// statistic, estimated from a quarter of the columns or fewer, exact where siblings and
/// cluster mates differ.
#[allow(clippy::too_many_arguments)]
fn sampled_discrepancy(
    q: &[f64],
    k: usize,
    w: &[f64],
    unit: bool,
    sample: &Sample,
    near: &[[usize; 2]],
    a: usize,
    b: usize,
    buf: &mut Vec<(f64, f64)>,
    flat: &mut Vec<f64>,
) -> (f64, f64) {
    let ra = &q[a * k..(a + 1) * k];
    let rb = &q[b * k..(b + 1) * k];
    flat.clear();
    buf.clear();
    let step = sample.step;
    let mut columns = 0.0;
    for c in (0..k).step_by(step) {
        columns += w[c];
    }
    let sa = &sample.columns[a * sample.width..(a + 1) * sample.width];
    let sb = &sample.columns[b * sample.width..(b + 1) * sample.width];
    let exit_weight = 0.1 * columns + 2.0 * w[a].min(w[b]);
    let mut big = 0.0;
    let mut take = |c: usize, x: f64, flat: &mut Vec<f64>, buf: &mut Vec<(f64, f64)>| -> bool {
        if c == a || c == b {
            return true;
        }
        if x.is_nan() {
            return true;
        }
        if x >= CAP {
            big += w[c];
            if big >= exit_weight {
                return false;
            }
        }
        if unit {
            flat.push(x);
        } else {
            buf.push((x, w[c]));
        }
        true
    };
    for (j, (x, y)) in sa.iter().zip(sb).enumerate() {
        if !take(j * step, (x - y).abs(), flat, buf) {
            return (CAP, CAP);
        }
    }
    for (i, &c) in sample.near[a].iter().chain(&sample.near[b]).enumerate() {
        let repeated = i >= sample.near[a].len() && sample.near[a].contains(&c);
        if c % step != 0 && !repeated && !take(c, (ra[c] - rb[c]).abs(), flat, buf) {
            return (CAP, CAP);
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

/// A profile group accepted in a round: `(leaves, separation, within, plain separation,
/// nearest outsider's discrepancy)`.
type Accepted = (Vec<usize>, f64, f64, f64, f64);

/// The smallest dendrogram clusters (neither a single component nor all of them) whose
/// separation reaches [`SEPARATION`], without overlaps.
fn accept(cmp: &Comparisons, floor: f64) -> Vec<Accepted> {
    let (e, plain, k) = (&cmp.e, &cmp.plain, cmp.k);
    // Neighbours of each leaf by increasing discrepancy (the compared ones of a large
    // table: every other one is at the cap).
    let order: Vec<Vec<usize>> = (0..k)
        .map(|a| {
            let mut o: Vec<usize> = cmp.partners(a).collect();
            o.sort_by(|&x, &y| e[a * k + x].total_cmp(&e[a * k + y]));
            o
        })
        .collect();
    // Complete linkage merges two clusters below a height only when every pair between
    // them is below it: the merges that can be accepted (below CAP / SEPARATION) happen
    // inside the connected parts of the graph of pairs closer than that, clustered one by
    // one.
    let limit = CAP / SEPARATION;
    let mut part = crate::linkage::UnionFind::new(k);
    for a in 0..k {
        for &b in &order[a] {
            if e[a * k + b] >= limit {
                break;
            }
            part.union(a, b);
        }
    }
    let mut candidates: Vec<(usize, f64, f64, f64, Vec<usize>)> = Vec::new();
    let mut inside = vec![false; k];
    for members in part.sets() {
        let m = members.len();
        if m < 2 {
            continue;
        }
        let mut sub = vec![0.0; m * m];
        for (i, &a) in members.iter().enumerate() {
            for (j, &b) in members.iter().enumerate() {
                sub[i * m + j] = if i == j { f64::NAN } else { e[a * k + b] };
            }
        }
        let den = cluster(&sub, m, Linkage::Complete);
        for (id, node) in den.nodes.iter().enumerate() {
            let size = node.size;
            if node.children.is_none() || size >= k {
                continue;
            }
            let within = node.height;
            if within >= limit {
                continue;
            }
            let leaves: Vec<usize> = den.leaves(id).into_iter().map(|i| members[i]).collect();
            for &x in &leaves {
                inside[x] = true;
            }
            let mut outside = CAP;
            for &a in &leaves {
                if let Some(&b) = order[a].iter().find(|&&b| !inside[b]) {
                    outside = outside.min(e[a * k + b]);
                }
            }
            for &x in &leaves {
                inside[x] = false;
            }
            let separation = outside / within.max(floor).max(1e-12);
            if separation >= SEPARATION {
                candidates.push((size, separation, within, outside, leaves));
            }
        }
    }
    candidates.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut taken = vec![false; k];
    let mut out = Vec::new();
    let mut mine = vec![false; k];
    for (_, separation, within, outside, leaves) in candidates {
        if leaves.iter().any(|&x| taken[x]) {
            continue;
        }
        for &x in &leaves {
            taken[x] = true;
            mine[x] = true;
        }
        let mut plain_within: f64 = 0.0;
        let mut plain_outside = CAP;
        for &a in &leaves {
            for b in cmp.partners(a) {
                let v = plain[a * k + b];
                if mine[b] {
                    plain_within = plain_within.max(v);
                } else {
                    plain_outside = plain_outside.min(v);
                }
            }
        }
        for &x in &leaves {
            mine[x] = false;
        }
        let plain_separation = plain_outside / plain_within.max(floor).max(1e-12);
        out.push((leaves, separation, within, plain_separation, outside));
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

/// [`profiles_confirm_pair`] on the first round of the profiles (every pair is confirmed when the
/// table was too small for profiles).
pub(crate) fn confirmed_by_profiles(profiles: &Profiles, n: usize, a: usize, b: usize) -> bool {
    profiles.first_round.len() != n * n || profiles_confirm_pair(&profiles.first_round, n, a, b)
}
