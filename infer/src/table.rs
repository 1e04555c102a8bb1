//! The symmetric working table that inference runs on.

use topoprobe_model::LatencyMatrix;

use crate::error::InferError;
use crate::quantize::{self, Quantization};

/// A symmetric latency table with missing entries as NaN, and its logarithm.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub(crate) n: usize,
    /// Latency, row-major, NaN where missing and on the diagonal.
    pub(crate) lat: Vec<f64>,
    /// Natural log of `lat`.
    pub(crate) log: Vec<f64>,
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
    pub(crate) sorted: Vec<f64>,
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
        let mut lat = vec![f64::NAN; n * n];
        let mut zeros = Vec::new();
        let mut asymmetry: f64 = 0.0;
        // |ln(x/y)| of the pairs whose two directions differ, and how many agree exactly.
        let mut directions: Vec<f64> = Vec::new();
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
                        lat[a * n + b] = v;
                        lat[b * n + a] = v;
                    }
                }
            }
        }
        zeros.sort_unstable();
        crate::timing::stage("   symmetrize", &mut clock);
        if let Some(a) = measured.iter().position(|&m| !m).filter(|_| every_context) {
            return Err(InferError::Unmeasured(a));
        }
        let mut sorted: Vec<f64> = upper(&lat, n).filter(|&v| v > 0.0).collect();
        sort_positive(&mut sorted);
        if sorted.is_empty() {
            // Every latency is zero: nothing to resolve.
            return Err(InferError::BadValue {
                a: 0,
                b: 1,
                value: 0.0,
            });
        }
        crate::timing::stage("   sort", &mut clock);
        let quant = quantize::detect(&sorted);
        crate::timing::stage("   detect", &mut clock);
        // One timer step: the detected step, else the finest spacing of the values, and at
        // most half the smallest latency measured (a 0 is faster than any of them).
        let zero_value = quant
            .map(|q| q.step)
            .or_else(|| quantize::finest_spacing(&sorted))
            .unwrap_or(f64::INFINITY)
            .min(sorted[0] / 2.0);
        for &(a, b) in &zeros {
            lat[a * n + b] = zero_value;
            lat[b * n + a] = zero_value;
        }
        if !zeros.is_empty() {
            sorted = upper(&lat, n).collect();
            sort_positive(&mut sorted);
        }
        let log = mirrored_log(&lat, n);
        crate::timing::stage("   log", &mut clock);
        // |ln x - ln y| of two independent copies with noise sigma has median
        // 0.6745 * sqrt(2) * sigma.
        // Pairs whose directions agree exactly (a symmetric file) say nothing of the noise;
        // a directed measurement has (nearly) none.
        let directional_noise = (directions.len() >= MIN_DIRECTED_PAIRS
            && directions.len() > agreeing)
            .then(|| median(&mut directions) / (0.6745 * std::f64::consts::SQRT_2));
        Ok(Self {
            n,
            lat,
            log,
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
        self.sorted[((self.sorted.len() - 1) as f64 * q).floor() as usize]
    }

    /// A copy with the given pairs removed (treated as missing in both directions).
    pub(crate) fn without(&self, pairs: &[(usize, usize)]) -> Self {
        let mut t = self.clone();
        for &(a, b) in pairs {
            for (x, y) in [(a, b), (b, a)] {
                t.lat[x * t.n + y] = f64::NAN;
                t.log[x * t.n + y] = f64::NAN;
            }
            t.missing_pairs += 1;
        }
        t.sorted = upper(&t.lat, t.n).collect();
        sort_positive(&mut t.sorted);
        t
    }

    #[inline]
    pub(crate) fn get(&self, a: usize, b: usize) -> f64 {
        self.lat[a * self.n + b]
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

/// The natural log of a symmetric row-major table, one logarithm per pair.
fn mirrored_log(lat: &[f64], n: usize) -> Vec<f64> {
    let mut log = vec![f64::NAN; n * n];
    for a in 0..n {
        for b in a + 1..n {
            log[a * n + b] = lat[a * n + b].ln();
        }
    }
    for a in 0..n {
        for b in 0..a {
            log[a * n + b] = log[b * n + a];
        }
    }
    log
}

/// The present values of the upper triangle of a row-major table.
fn upper(lat: &[f64], n: usize) -> impl Iterator<Item = f64> + '_ {
    (0..n).flat_map(move |a| {
        lat[a * n + a + 1..(a + 1) * n]
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
    })
}

/// Sorts non-negative finite values ascending, to single precision (a radix sort on the
/// bits of their `f32` roundings, which order such values as numbers do; values within
/// one part in 10⁷ of each other may stay in any order): linear in the number of values,
/// for the N²/2 latencies of a large table.
pub(crate) fn sort_positive(v: &mut [f64]) {
    if v.len() < 4096 {
        v.sort_by(f64::total_cmp);
        return;
    }
    let mut keys: Vec<u32> = v.iter().map(|&x| (x as f32).to_bits()).collect();
    let mut buf = vec![0_u32; keys.len()];
    for shift in [0, 16] {
        let mut count = vec![0_usize; 1 << 16];
        for &k in &keys {
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
        for &k in &keys {
            let d = ((k >> shift) & 0xffff) as usize;
            buf[count[d]] = k;
            count[d] += 1;
        }
        std::mem::swap(&mut keys, &mut buf);
    }
    for (x, k) in v.iter_mut().zip(keys) {
        *x = f64::from(f32::from_bits(k));
    }
}

/// Median of a slice (NaN when empty); reorders the slice. Linear time.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    let m = v.len();
    if m == 0 {
        return f64::NAN;
    }
    let (lower, upper, _) = v.select_nth_unstable_by(m / 2, f64::total_cmp);
    let upper = *upper;
    if m % 2 == 1 {
        upper
    } else {
        let below = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (below + upper) / 2.0
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
