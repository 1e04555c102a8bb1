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
use crate::triangle::Triangle;

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
    /// partner veto; `None` when the table was too small for profiles.
    pub(crate) first_round: Option<Discrepancy>,
}

/// Runs the profile rounds over the table. `floor` is the smallest profile discrepancy that
/// measurement can resolve (a coarse timer makes distinct profiles look identical).
pub(crate) fn profile_groups(t: &Table, floor: f64) -> Profiles {
    let mut classes: Vec<Vec<usize>> = (0..t.n).map(|i| vec![i]).collect();
    let mut found = Vec::new();
    let mut nearest = Vec::new();
    let mut first_round = None;
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
        drop(q);
        crate::timing::stage("  compare", &mut clock);
        if round == 0 {
            nearest = (0..k)
                .map(|a| {
                    cmp.partners(a)
                        .filter(|&b| b != a)
                        .map(|b| cmp.plain.get(a, b))
                        .fold(CAP, f64::min)
                })
                .collect();
            first_round = Some(cmp.plain.clone());
        }
        let accepted = accept(&cmp, floor);
        #[cfg(feature = "trace")]
        if std::env::var_os("TOPOPROBE_TRACE_ROUND")
            .is_some_and(|r| r.to_str() == Some(&round.to_string()))
        {
            for a in 0..k {
                let row: Vec<String> = (0..k).map(|b| format!("{:.2}", cmp.e.get(a, b))).collect();
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

/// The log of the mean latency between the components of a round (NaN where unknown, and
/// on the diagonal).
pub(crate) enum Quotient<'t> {
    /// Single contexts of a large table: the table's own latencies, their logarithm taken
    /// as they are read (no second N² table).
    Table(&'t Table),
    /// A `k`×`k` table, row-major.
    Dense(Vec<f64>),
}

impl Quotient<'_> {
    /// The log latency between components `a` and `c`.
    #[inline]
    fn at(&self, k: usize, a: usize, c: usize) -> f64 {
        match self {
            Self::Table(t) => t.get(a, c).ln(),
            Self::Dense(q) => q[a * k + c],
        }
    }

    /// Row `a` (`k` values), borrowed from a dense table or made in `buf`.
    fn row<'s>(&'s self, k: usize, a: usize, buf: &'s mut Vec<f64>) -> &'s [f64] {
        match self {
            Self::Table(t) => {
                buf.clear();
                buf.extend((0..k).map(|c| t.get(a, c).ln()));
                buf
            }
            Self::Dense(q) => &q[a * k..(a + 1) * k],
        }
    }
}

/// Log of the mean latency between components (NaN where unknown), in one pass over the
/// table.
fn quotient<'t>(t: &'t Table, classes: &[Vec<usize>]) -> Quotient<'t> {
    let k = classes.len();
    if classes.iter().all(|c| c.len() == 1) {
        // Classes are sorted: with single contexts they are the contexts in order.
        if k > ALL_PAIRS_UP_TO {
            return Quotient::Table(t);
        }
        let mut q = vec![f64::NAN; k * k];
        for a in 0..k {
            for b in a + 1..k {
                let v = t.get(a, b).ln();
                q[a * k + b] = v;
                q[b * k + a] = v;
            }
        }
        return Quotient::Dense(q);
    }
    let mut of = vec![usize::MAX; t.n];
    for (i, c) in classes.iter().enumerate() {
        for &x in c {
            of[x] = i;
        }
    }
    // The sums become the logarithms in place: each cell pair is read before it is written.
    let mut sum = vec![0.0_f64; k * k];
    let mut count = vec![0_u32; k * k];
    for a in 0..t.n {
        let ca = of[a];
        for (b, &v) in (a + 1..t.n).zip(t.upper_row(a)) {
            let cb = of[b];
            if ca == cb || v.is_nan() {
                continue;
            }
            sum[ca * k + cb] += crate::table::decimal(v);
            count[ca * k + cb] += 1;
        }
    }
    for i in 0..k {
        sum[i * k + i] = f64::NAN;
        for j in i + 1..k {
            let c = count[i * k + j] + count[j * k + i];
            let mean = if c > 0 {
                ((sum[i * k + j] + sum[j * k + i]) / f64::from(c)).ln()
            } else {
                f64::NAN
            };
            sum[i * k + j] = mean;
            sum[j * k + i] = mean;
        }
    }
    Quotient::Dense(sum)
}

/// Tables of at most this many components compare every pair of profiles on every column;
/// larger ones compare each component with its [`CANDIDATES`] nearest components by
/// latency, on a sample of the columns.
const ALL_PAIRS_UP_TO: usize = 384;
/// Components each component of a large table is compared with: its nearest by latency,
/// where its SMT siblings and cluster mates are (the profile groups of a large machine).
const CANDIDATES: usize = 24;

/// Profile discrepancies between the `k` components of a round: of every pair (a small
/// table, `k`×`k` row-major), or of each component's compared partners only (a large one;
/// every other pair is at [`CAP`]), so that a large table holds no dense `k`×`k` matrix.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Discrepancy {
    k: usize,
    /// Where each row's partners and values start (`k + 1` offsets); empty when dense.
    start: Vec<usize>,
    /// The partners of each row, ascending (empty when dense).
    partners: Vec<u32>,
    /// The values: dense `k`×`k`, or one per partner.
    values: Vec<f64>,
}

impl Discrepancy {
    /// Every pair at [`CAP`] but the diagonal (0), dense.
    fn dense(k: usize) -> Self {
        let mut values = vec![CAP; k * k];
        for i in 0..k {
            values[i * k + i] = 0.0;
        }
        Self {
            k,
            start: Vec::new(),
            partners: Vec::new(),
            values,
        }
    }

    /// Room for the pairs of `compared` (sorted lists), each at [`CAP`].
    fn sparse(compared: &[Vec<usize>]) -> Self {
        let mut start = Vec::with_capacity(compared.len() + 1);
        start.push(0);
        let mut partners = Vec::new();
        for list in compared {
            partners.extend(list.iter().map(|&b| u32::try_from(b).unwrap_or(u32::MAX)));
            start.push(partners.len());
        }
        Self {
            k: compared.len(),
            values: vec![CAP; partners.len()],
            start,
            partners,
        }
    }

    /// Where the value of `(a, b)` is stored, if it is.
    #[inline]
    fn slot(&self, a: usize, b: usize) -> Option<usize> {
        if self.start.is_empty() {
            return Some(a * self.k + b);
        }
        let (lo, hi) = (self.start[a], self.start[a + 1]);
        let b = u32::try_from(b).ok()?;
        self.partners[lo..hi].binary_search(&b).ok().map(|i| lo + i)
    }

    /// Sets the value of `(a, b)` and `(b, a)` (a pair of the table's pattern).
    fn set(&mut self, a: usize, b: usize, v: f64) {
        for (x, y) in [(a, b), (b, a)] {
            if let Some(i) = self.slot(x, y) {
                self.values[i] = v;
            }
        }
    }

    /// The discrepancy of `a` and `b`: 0 on the diagonal, [`CAP`] for a pair not compared.
    #[inline]
    pub(crate) fn get(&self, a: usize, b: usize) -> f64 {
        if a == b && !self.start.is_empty() {
            return 0.0;
        }
        self.slot(a, b).map_or(CAP, |i| self.values[i])
    }

    /// The smallest discrepancy of `x` to any component but itself and `other`
    /// (infinite when there is none).
    pub(crate) fn nearest_except(&self, x: usize, other: usize) -> f64 {
        if self.start.is_empty() {
            return (0..self.k)
                .filter(|&c| c != x && c != other)
                .map(|c| self.values[x * self.k + c])
                .fold(f64::INFINITY, f64::min);
        }
        let (lo, hi) = (self.start[x], self.start[x + 1]);
        let mut seen = 0;
        let mut best = f64::INFINITY;
        for (&c, &v) in self.partners[lo..hi].iter().zip(&self.values[lo..hi]) {
            let c = c as usize;
            if c != x && c != other {
                seen += 1;
                best = best.min(v);
            }
        }
        // The columns not compared are at the cap.
        let columns = (0..self.k).filter(|&c| c != x && c != other).count();
        if seen < columns {
            best = best.min(CAP);
        }
        best
    }

    #[cfg(test)]
    /// Bytes its tables hold.
    pub(crate) fn bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<f64>()
            + self.partners.capacity() * std::mem::size_of::<u32>()
            + self.start.capacity() * std::mem::size_of::<usize>()
    }
}

/// The profile discrepancies of a round.
pub(crate) struct Comparisons {
    pub(crate) k: usize,
    /// Discrepancy with the partner veto ([`CAP`] for pairs not compared).
    pub(crate) e: Discrepancy,
    /// Discrepancy without the partner veto.
    pub(crate) plain: Discrepancy,
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
pub(crate) fn compare(q: &Quotient<'_>, k: usize, w: &[f64]) -> Comparisons {
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
                    let mut rows = (Vec::new(), Vec::new());
                    part.iter()
                        .map(|&(a, b)| match sample {
                            Some(s) => sampled_discrepancy(
                                &Columns { q, k, w, unit },
                                s,
                                near,
                                a,
                                b,
                                &mut buf,
                                &mut flat,
                            ),
                            None => {
                                let ra = q.row(k, a, &mut rows.0);
                                let rb = q.row(k, b, &mut rows.1);
                                let c = Columns { q, k, w, unit };
                                pair_discrepancy(&c, near, (a, ra), (b, rb), &mut buf, &mut flat)
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
    let mut e = match &compared {
        Some(c) => Discrepancy::sparse(c),
        None => Discrepancy::dense(k),
    };
    let mut plain = e.clone();
    for (&(a, b), (v, p)) in pairs.iter().zip(values.into_iter().flatten()) {
        e.set(a, b, v);
        plain.set(a, b, p);
    }
    Comparisons {
        k,
        e,
        plain,
        compared,
    }
}

/// For each component, its [`CANDIDATES`] nearest components by latency, nearest first.
fn nearest_by_latency(q: &Quotient<'_>, k: usize) -> Vec<Vec<usize>> {
    let mut buf = Vec::new();
    (0..k)
        .map(|a| {
            let row = q.row(k, a, &mut buf);
            let mut order: Vec<usize> = (0..k).filter(|&c| c != a && !row[c].is_nan()).collect();
            let keep = CANDIDATES.min(order.len());
            if keep > 0 && keep < order.len() {
                order.select_nth_unstable_by(keep - 1, |&x, &y| row[x].total_cmp(&row[y]));
            }
            // A list of its own size: the room for every component is not kept.
            let mut nearest = order[..keep].to_vec();
            nearest.sort_by(|&x, &y| row[x].total_cmp(&row[y]));
            nearest
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

/// The columns of a round's comparisons: the quotient, its size, the weight of each
/// column and whether every weight is 1.
struct Columns<'a, 'q> {
    q: &'a Quotient<'q>,
    k: usize,
    w: &'a [f64],
    unit: bool,
}

/// The discrepancy of one pair (`a` and `b` with their rows), with and without the
/// partner veto.
fn pair_discrepancy(
    cols: &Columns<'_, '_>,
    near: &[[usize; 2]],
    (a, ra): (usize, &[f64]),
    (b, rb): (usize, &[f64]),
    buf: &mut Vec<(f64, f64)>,
    flat: &mut Vec<f64>,
) -> (f64, f64) {
    let (q, k, w, unit) = (cols.q, cols.k, cols.w, cols.unit);
    let total: f64 = if unit { k as f64 } else { w.iter().sum() };
    let columns = total - w[a] - w[b];
    let exit_weight = 0.1 * columns + 2.0;
    let mut big = 0.0;
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
    fn new(q: &Quotient<'_>, k: usize, nearest: &[Vec<usize>]) -> Self {
        let step = k.div_ceil(SAMPLE_COLUMNS).max(1);
        let width = k.div_ceil(step);
        let mut columns = Vec::with_capacity(k * width);
        for a in 0..k {
            columns.extend((0..k).step_by(step).map(|c| q.at(k, a, c)));
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
fn sampled_discrepancy(
    cols: &Columns<'_, '_>,
    sample: &Sample,
    near: &[[usize; 2]],
    a: usize,
    b: usize,
    buf: &mut Vec<(f64, f64)>,
    flat: &mut Vec<f64>,
) -> (f64, f64) {
    let (q, k, w, unit) = (cols.q, cols.k, cols.w, cols.unit);
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
        if c % step != 0 && !repeated && !take(c, (q.at(k, a, c) - q.at(k, b, c)).abs(), flat, buf)
        {
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
fn nearest_two(q: &Quotient<'_>, k: usize) -> Vec<[usize; 2]> {
    let mut buf = Vec::new();
    (0..k)
        .map(|a| {
            let mut best = [usize::MAX; 2];
            let mut val = [f64::INFINITY; 2];
            let row = q.row(k, a, &mut buf);
            for (c, &x) in row.iter().enumerate() {
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
fn partner_veto(q: &Quotient<'_>, k: usize, near: &[[usize; 2]], a: usize, b: usize) -> f64 {
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
        let dx = q.at(k, x, c);
        let dy = q.at(k, y, c);
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
    let e = |a: usize, b: usize| e.get(a, b);
    // Neighbours of each leaf by increasing discrepancy (the compared ones of a large
    // table: every other one is at the cap).
    let order: Vec<Vec<usize>> = (0..k)
        .map(|a| {
            let mut o: Vec<usize> = cmp.partners(a).collect();
            o.sort_by(|&x, &y| e(a, x).total_cmp(&e(a, y)));
            o
        })
        .collect();
    // Complete linkage merges two clusters below a height only when every pair between
    // them is below it: the merges that can be accepted (below CAP / SEPARATION) happen
    // inside the connected parts of the graph of pairs closer than that, clustered one by
    // one.
    let limit = CAP / SEPARATION;
    let mut part = crate::linkage::UnionFind::new(k);
    for (a, row) in order.iter().enumerate() {
        for &b in row {
            if e(a, b) >= limit {
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
        let sub = Triangle::from_fn(m, |i, j| e(members[i], members[j]));
        let den = cluster(sub, Linkage::Complete);
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
                    outside = outside.min(e(a, b));
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
                let v = plain.get(a, b);
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
pub(crate) fn profiles_confirm_pair(plain: &Discrepancy, a: usize, b: usize) -> bool {
    plain.get(a, b) <= 2.0 * plain.nearest_except(a, b).max(plain.nearest_except(b, a))
}

/// [`profiles_confirm_pair`] on the first round of the profiles (every pair is confirmed when the
/// table was too small for profiles).
pub(crate) fn confirmed_by_profiles(profiles: &Profiles, a: usize, b: usize) -> bool {
    profiles
        .first_round
        .as_ref()
        .is_none_or(|d| profiles_confirm_pair(d, a, b))
}
