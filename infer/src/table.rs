//! The symmetric working table that inference runs on.

use topoprobe_model::LatencyMatrix;

use crate::error::InferError;
use crate::quantize::{self, Quantization};
use crate::triangle;

/// A symmetric latency table with missing entries as NaN.
///
/// One `f32` per unordered pair (the upper triangle, row by row: 2 bytes per entry of the
/// N×N table), read back as the decimal it stands for ([`decimal`]: the input's values of
/// 5 significant digits, and the means of a directed pair's two directions, are read back
/// exactly); the logarithm the profile comparisons need is taken as they read it.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub(crate) n: usize,
    /// Latency of the pairs `a < b`, upper triangle row by row ([`Table::upper_row`]), NaN
    /// where missing.
    lat: Vec<f32>,
    /// Largest relative difference between the two directions of a pair.
    pub(crate) asymmetry: f64,
    /// Relative noise of one measured direction, estimated from the disagreement of the two
    /// directions of the pairs (a directed matrix); `None` when few pairs have both.
    pub(crate) directional_noise: Option<f64>,
    /// Pairs (unordered) with no latency in either direction.
    pub(crate) missing_pairs: usize,
    /// Pairs read as 0: below the resolution of the timer, taken as one timer step
    /// ([`Table::zero_value`]); their latency is known only to be at most that.
    pub(crate) zeros: Vec<(usize, usize)>,
    /// What a 0 was read as (one timer step).
    pub(crate) zero_value: f64,
    /// The timer's step, when the latencies come in coarse steps.
    pub(crate) quant: Option<Quantization>,
    /// The present values of the upper triangle, ascending.
    pub(crate) sorted: Sorted,
}

/// From this many values on, they are sorted to single precision.
const SINGLE_FROM: usize = 4096;

/// The present values of a table, ascending: exact for fewer than [`SINGLE_FROM`] values;
/// from there on to single precision (their `f32` roundings, which order such values as
/// numbers do; values within one part in 10⁷ of each other may stay in any order), held as
/// `f32` (2 bytes per entry of the N×N table) and sorted in linear time.
#[derive(Debug, Clone)]
pub(crate) enum Sorted {
    /// The values themselves.
    Exact(Vec<f64>),
    /// Their single-precision roundings.
    Single(Vec<f32>),
}

impl Sorted {
    /// The values, sorted (non-negative and finite).
    fn of<I: Iterator<Item = f64> + Clone>(values: I) -> Self {
        let count = values.clone().count();
        if count < SINGLE_FROM {
            let mut v: Vec<f64> = values.collect();
            v.sort_by(f64::total_cmp);
            return Self::Exact(v);
        }
        let mut keys: Vec<u32> = Vec::with_capacity(count);
        #[allow(clippy::cast_possible_truncation)]
        keys.extend(values.map(|x| (x as f32).to_bits()));
        radix_sort(&mut keys);
        Self::Single(keys.into_iter().map(f32::from_bits).collect())
    }

    /// The number of values.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Exact(v) => v.len(),
            Self::Single(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th smallest value.
    pub(crate) fn get(&self, i: usize) -> f64 {
        match self {
            Self::Exact(v) => v[i],
            Self::Single(v) => f64::from(v[i]),
        }
    }

    #[cfg(test)]
    /// Bytes it holds.
    fn bytes(&self) -> usize {
        match self {
            Self::Exact(v) => v.capacity() * std::mem::size_of::<f64>(),
            Self::Single(v) => v.capacity() * std::mem::size_of::<f32>(),
        }
    }
}

/// The largest latency a table may hold (as a matrix file and a description may).
const MAX_LATENCY: f64 = topoprobe_model::format::csv::MAX_LATENCY;

/// A latency smaller than this fraction of the table's largest is below the resolution of
/// any timer that measured both: it is read as 0, as an exact 0 is (`1e-300` or a denormal
/// beside latencies of tens of nanoseconds is no measurement of a real latency). Relative,
/// so that a table in any scale keeps its structure.
const RESOLUTION_FRACTION: f64 = 1e-9;

/// `v`, or 0 when it is below `floor`.
fn resolvable(v: f64, floor: f64) -> f64 {
    if v < floor {
        0.0
    } else {
        v
    }
}

/// Fewest pairs with both directions from which the directional noise is estimated.
const MIN_DIRECTED_PAIRS: usize = 6;

impl Table {
    /// Checks and symmetrizes a matrix (mean of both directions when both exist). A zero
    /// latency (or one below [`RESOLUTION_FRACTION`] of the largest) is below the resolution of the timer that
    /// measured it: it is read as one timer step (the step of a coarse timer, or the finest
    /// spacing of the other values).
    ///
    /// # Errors
    ///
    /// [`InferError::TooSmall`] under two contexts, [`InferError::Unmeasured`] for a
    /// context with no latency to any other, [`InferError::BadValue`] for a latency out of
    /// range or a table without any non-zero latency.
    pub(crate) fn new(m: &LatencyMatrix) -> Result<Self, InferError> {
        Self::build(m, true)
    }

    /// [`Table::new`] of a table in which some contexts may have no latency at all (their
    /// rows stay NaN): for attaching what was measured to a structure found elsewhere.
    ///
    /// # Errors
    ///
    /// As [`Table::new`], but never [`InferError::Unmeasured`].
    pub(crate) fn with_unmeasured(m: &LatencyMatrix) -> Result<Self, InferError> {
        Self::build(m, false)
    }

    /// The table of `m`; `every_context`: a context without latency is an error.
    fn build(m: &LatencyMatrix, every_context: bool) -> Result<Self, InferError> {
        let n = m.len();
        if n < 2 {
            return Err(InferError::TooSmall(n));
        }
        let mut largest: f64 = 0.0;
        for a in 0..n {
            for (b, v) in m.row(a).enumerate() {
                if let Some(v) = v {
                    if !v.is_finite() || !(0.0..=MAX_LATENCY).contains(&v) {
                        return Err(InferError::BadValue { a, b, value: v });
                    }
                    largest = largest.max(v);
                }
            }
        }
        let floor = largest * RESOLUTION_FRACTION;
        let read = |v: Option<f64>| v.map(|v| resolvable(v, floor));
        let mut clock = std::time::Instant::now();
        crate::timing::stage("   check", &mut clock);
        let mut lat = vec![f32::NAN; triangle::pairs(n)];
        let mut zeros = Vec::new();
        let mut asymmetry: f64 = 0.0;
        // |ln(x/y)| of the pairs whose two directions differ, and how many agree exactly.
        // Room for every pair is reserved, not touched: a symmetric table uses none of it,
        // and a directed one never copies it to grow.
        let mut directions: Vec<f64> = Vec::with_capacity(n * (n - 1) / 2);
        let mut agreeing = 0_usize;
        let mut missing_pairs = 0;
        let mut measured = vec![false; n];
        // In tiles, so that reading the transposed direction stays in the cache.
        const TILE: usize = 64;
        for ta in (0..n).step_by(TILE) {
            for tb in (ta..n).step_by(TILE) {
                for a in ta..(ta + TILE).min(n) {
                    for b in tb.max(a + 1)..(tb + TILE).min(n) {
                        let v = match (read(m.get(a, b)), read(m.get(b, a))) {
                            (Some(x), Some(y)) => {
                                let mean = (x + y) / 2.0;
                                if mean > 0.0 {
                                    asymmetry = asymmetry.max((x - y).abs() / mean);
                                }
                                if x == y {
                                    agreeing += 1;
                                } else if x > 0.0 && y > 0.0 {
                                    directions.push((x / y).ln().abs());
                                }
                                // A zero in one direction is below resolution: keep the other.
                                if x == 0.0 || y == 0.0 {
                                    x.max(y)
                                } else {
                                    mean
                                }
                            }
                            (Some(x), None) | (None, Some(x)) => x,
                            (None, None) => {
                                missing_pairs += 1;
                                continue;
                            }
                        };
                        if v == 0.0 {
                            zeros.push((a, b));
                        }
                        measured[a] = true;
                        measured[b] = true;
                        lat[triangle::index(n, a, b)] = single(v);
                    }
                }
            }
        }
        zeros.sort_unstable();
        crate::timing::stage("   symmetrize", &mut clock);
        if let Some(a) = measured.iter().position(|&m| !m).filter(|_| every_context) {
            return Err(InferError::Unmeasured(a));
        }
        // |ln x - ln y| of two independent copies with noise sigma has median
        // 0.6745 * sqrt(2) * sigma.
        // Pairs whose directions agree exactly (a symmetric file) say nothing of the noise;
        // a directed measurement has (nearly) none. Taken before the sort, so that the two
        // tables of N²/2 values are never held at once.
        let directional_noise =
            (directions.len() >= MIN_DIRECTED_PAIRS && directions.len() > agreeing).then(|| {
                topoprobe_model::median_in_place(&mut directions).unwrap_or(f64::NAN)
                    / (0.6745 * std::f64::consts::SQRT_2)
            });
        drop(directions);
        let mut sorted = Sorted::of(upper(&lat).filter(|&v| v > 0.0));
        if sorted.is_empty() {
            // Every latency is zero: nothing to resolve.
            return Err(InferError::BadValue {
                a: 0,
                b: 1,
                value: 0.0,
            });
        }
        crate::timing::stage("   sort", &mut clock);
        let quant = match &sorted {
            Sorted::Exact(v) => quantize::detect(v),
            Sorted::Single(v) => quantize::detect(v),
        };
        crate::timing::stage("   detect", &mut clock);
        // One timer step: the detected step, else the finest spacing of the values, and at
        // most half the smallest latency measured (a 0 is faster than any of them).
        let zero_value = quant
            .map(|q| q.step)
            .or_else(|| match &sorted {
                Sorted::Exact(v) => quantize::finest_spacing(v),
                Sorted::Single(v) => quantize::finest_spacing(v),
            })
            .unwrap_or(f64::INFINITY)
            .min(sorted.get(0) / 2.0);
        for &(a, b) in &zeros {
            lat[triangle::index(n, a, b)] = single(zero_value);
        }
        if !zeros.is_empty() {
            drop(sorted);
            sorted = Sorted::of(upper(&lat));
        }
        crate::timing::stage("   zeros", &mut clock);
        Ok(Self {
            n,
            lat,
            asymmetry,
            directional_noise,
            missing_pairs,
            zeros,
            zero_value,
            quant,
            sorted,
        })
    }

    /// Whether the pair was read as 0 (below the timer's resolution).
    pub(crate) fn is_zero(&self, a: usize, b: usize) -> bool {
        !self.zeros.is_empty() && self.zeros.binary_search(&(a.min(b), a.max(b))).is_ok()
    }

    /// The `q`-quantile (0..=1, nearest rank below) of the present values; NaN when none.
    pub(crate) fn value_quantile(&self, q: f64) -> f64 {
        if self.sorted.is_empty() {
            return f64::NAN;
        }
        self.sorted
            .get(((self.sorted.len() - 1) as f64 * q).floor() as usize)
    }

    /// The table with the given pairs removed (treated as missing in both directions),
    /// changed in place.
    pub(crate) fn without(mut self, pairs: &[(usize, usize)]) -> Self {
        for &(a, b) in pairs {
            if a != b {
                self.lat[triangle::index(self.n, a, b)] = f32::NAN;
            }
            self.missing_pairs += 1;
        }
        self.sorted = Sorted::Exact(Vec::new());
        self.sorted = Sorted::of(upper(&self.lat));
        self
    }

    /// The latency of a pair (NaN when missing, and on the diagonal).
    #[inline]
    pub(crate) fn get(&self, a: usize, b: usize) -> f64 {
        if a == b {
            f64::NAN
        } else {
            decimal(self.lat[triangle::index(self.n, a, b)])
        }
    }

    /// The latencies from `a` to `a + 1 .. n`, in order, as held ([`decimal`] gives the
    /// value each stands for).
    #[inline]
    pub(crate) fn upper_row(&self, a: usize) -> &[f32] {
        let start = triangle::index(self.n, a, a + 1).min(self.lat.len());
        &self.lat[start..start + (self.n - a - 1)]
    }

    /// Frees the sorted values once the analysis that reads them is over (a quantile is
    /// then NaN).
    pub(crate) fn release_sorted(&mut self) {
        self.sorted = Sorted::Exact(Vec::new());
    }

    #[cfg(test)]
    /// Bytes of the N² working tables this table holds (its triangle and its sorted
    /// values), for the memory budget of docs/LIMITS.md.
    pub(crate) fn table_bytes(&self) -> usize {
        self.lat.capacity() * std::mem::size_of::<f32>() + self.sorted.bytes()
    }

    /// How many of the measured pairs with one end in `x` and the other in `y` (or, with
    /// `y` `None`, inside `x`) have a latency above `th`, and how many are measured.
    /// Decided from the value held where it is clearly to one side of `th`, so that only
    /// the few near it are read as decimals.
    pub(crate) fn count_above(&self, x: &[usize], y: Option<&[usize]>, th: f64) -> (usize, usize) {
        // Far beyond an `f32`'s rounding (6·10⁻⁸) and the decimal's (5·10⁻⁷).
        let margin = th.abs() * 1e-5;
        let (mut above, mut measured) = (0, 0);
        let mut count = |a: usize, b: usize| {
            if a == b {
                return;
            }
            let held = self.lat[triangle::index(self.n, a, b)];
            if held.is_nan() {
                return;
            }
            measured += 1;
            let v = f64::from(held);
            let is_above = if (v - th).abs() > margin {
                v > th
            } else {
                decimal(held) > th
            };
            above += usize::from(is_above);
        };
        match y {
            Some(y) => x.iter().for_each(|&a| y.iter().for_each(|&b| count(a, b))),
            None => {
                for (i, &a) in x.iter().enumerate() {
                    x[i + 1..].iter().for_each(|&b| count(a, b));
                }
            }
        }
        (above, measured)
    }

    /// Latencies of the pairs with one end in each set.
    pub(crate) fn between(&self, x: &[usize], y: &[usize]) -> Vec<f64> {
        let mut v = Vec::with_capacity(x.len() * y.len());
        for &a in x {
            for &b in y {
                let l = self.get(a, b);
                if a != b && !l.is_nan() {
                    v.push(l);
                }
            }
        }
        v
    }

    /// Latencies of the pairs inside a set.
    pub(crate) fn within(&self, x: &[usize]) -> Vec<f64> {
        let mut v = Vec::new();
        for (i, &a) in x.iter().enumerate() {
            for &b in &x[i + 1..] {
                let l = self.get(a, b);
                if !l.is_nan() {
                    v.push(l);
                }
            }
        }
        v
    }
}

/// A latency as the table holds it: to single precision.
#[inline]
#[allow(clippy::cast_possible_truncation)]
fn single(v: f64) -> f32 {
    v as f32
}

/// Significant digits of the latencies the table stands for: the input's own
/// ([`topoprobe_model::TABLE_DIGITS`]) and one more, which the mean of a directed pair's
/// two directions needs.
pub(crate) const DECIMAL_DIGITS: i32 = topoprobe_model::TABLE_DIGITS + 1;

/// A latency of the table as the decimal it stands for: the `f32` held, rounded to
/// [`DECIMAL_DIGITS`] by [`topoprobe_model::round_significant`] (what `21.3f32` stands for
/// is `21.3`, not `21.299999237060547`), so that what the inference prints and summarizes
/// is the input's values, not their binary neighbours.
///
/// The inference reads billions of latencies. Beyond the powers of ten an `f64` holds
/// exactly (below 10⁻¹⁷, from 10²⁸ on), where the general rounding formats and parses
/// text, this scales twice in a row instead: there the result may be one unit in the last
/// place away from the general rounding's.
#[inline]
pub(crate) fn decimal(v: f32) -> f64 {
    let x = f64::from(v);
    if x.is_finite() && x > 0.0 && !(1e-17..1e28).contains(&x) {
        return decimal_far(x);
    }
    topoprobe_model::round_significant(x, DECIMAL_DIGITS)
}

/// [`decimal`] of a positive `x` below 10⁻¹⁷ or from 10²⁸ on: scaled by 10²² and by the
/// rest of the power of ten in turn.
#[allow(clippy::cast_possible_truncation)]
fn decimal_far(x: f64) -> f64 {
    let e = x.log10().floor() as i32;
    let k = DECIMAL_DIGITS - 1 - e;
    let rest = 10f64.powi(k.abs() - 22);
    let round = topoprobe_model::round_half_away;
    if k > 0 {
        round(x * 1e22 * rest) / 1e22 / rest
    } else {
        round(x / 1e22 / rest) * 1e22 * rest
    }
}

/// [`decimal`] of a latency read as the table holds it and widened to `f64` (a minimum, a
/// maximum, a middle value of the held values: the order of the held values is that of
/// their decimals, so these are the decimals' own).
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn decimal_of_held(v: f64) -> f64 {
    decimal(v as f32)
}

/// The median of held latencies from their two middle values
/// ([`topoprobe_model::streamed_middles`]): the mean of their decimals, as the median of
/// the decimals themselves.
pub(crate) fn decimal_median((low, high): (f64, f64)) -> f64 {
    let (low, high) = (decimal_of_held(low), decimal_of_held(high));
    if low == high {
        low
    } else {
        (low + high) / 2.0
    }
}

/// The present values of a triangle, in its order (row by row).
fn upper(lat: &[f32]) -> impl Iterator<Item = f64> + Clone + '_ {
    lat.iter().copied().filter(|v| !v.is_nan()).map(decimal)
}

/// Sorts the bits of non-negative finite `f32` values (which order as the values do):
/// a radix sort, linear in the number of values, for the N²/2 latencies of a large table.
fn radix_sort(keys: &mut Vec<u32>) {
    let mut buf = vec![0_u32; keys.len()];
    for shift in [0, 16] {
        let mut count = vec![0_usize; 1 << 16];
        for &k in keys.iter() {
            count[((k >> shift) & 0xffff) as usize] += 1;
        }
        if count.contains(&keys.len()) {
            continue;
        }
        let mut start = 0;
        for c in &mut count {
            let here = *c;
            *c = start;
            start += here;
        }
        for &k in keys.iter() {
            let d = ((k >> shift) & 0xffff) as usize;
            buf[count[d]] = k;
            count[d] += 1;
        }
        std::mem::swap(keys, &mut buf);
    }
}

/// The `q`-quantile (0..=1, nearest rank below) of a slice (NaN when empty); reorders it.
pub(crate) fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let k = ((v.len() - 1) as f64 * q).floor() as usize;
    let (_, x, _) = v.select_nth_unstable_by(k, f64::total_cmp);
    *x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast rounding is the general one, on the values a table holds: latencies of 5
    /// significant digits, means of two of them, whole numbers, and values of every size.
    #[test]
    fn a_latency_reads_back_as_the_general_rounding_gives_it() {
        let mut x = 0x2545_f491_u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for _ in 0..200_000 {
            let r = next();
            let exponent = (r % 40) as i32 - 17;
            let mantissa = 1.0 + f64::from(next() % 90_000) / 10_000.0;
            let given = topoprobe_model::round_significant(
                mantissa * 10f64.powi(exponent),
                topoprobe_model::TABLE_DIGITS,
            );
            let other = given * (1.0 + f64::from(next() % 100) / 1000.0);
            let other = topoprobe_model::round_significant(other, topoprobe_model::TABLE_DIGITS);
            for v in [given, (given + other) / 2.0, f64::from(r % 100_000)] {
                #[allow(clippy::cast_possible_truncation)]
                let held = v as f32;
                let general = topoprobe_model::round_significant(f64::from(held), DECIMAL_DIGITS);
                assert_eq!(decimal(held), general, "{v} held as {held}");
            }
            // A value of 5 significant digits reads back as itself.
            #[allow(clippy::cast_possible_truncation)]
            let held = given as f32;
            assert_eq!(decimal(held), given);
        }
        // Beyond the exact powers of ten, within a unit in the last place or so.
        for v in [1.2345e-20, 9.8765e-30, 3.1416e-40, 2.7183e30, 1.4142e37] {
            #[allow(clippy::cast_possible_truncation)]
            let held = v as f32;
            let general = topoprobe_model::round_significant(f64::from(held), DECIMAL_DIGITS);
            let fast = decimal(held);
            assert!(
                (fast - general).abs() <= 4.0 * f64::EPSILON * general,
                "{v}: {fast} {general}"
            );
        }
    }
}
