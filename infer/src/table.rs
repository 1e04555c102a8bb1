//! The symmetric working table that inference runs on.

use topoprobe_model::LatencyMatrix;

use crate::error::InferError;

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
    /// Pairs (unordered) with no latency in either direction.
    pub(crate) missing_pairs: usize,
}

impl Table {
    /// Checks and symmetrizes a matrix (mean of both directions when both exist).
    pub(crate) fn new(m: &LatencyMatrix) -> Result<Self, InferError> {
        let n = m.len();
        if n < 2 {
            return Err(InferError::TooSmall(n));
        }
        for a in 0..n {
            for b in 0..n {
                if let Some(v) = m.get(a, b) {
                    if !v.is_finite() || v <= 0.0 {
                        return Err(InferError::BadValue { a, b, value: v });
                    }
                }
            }
        }
        let sym = m.symmetrized();
        let mut lat = vec![f64::NAN; n * n];
        let mut missing_pairs = 0;
        for a in 0..n {
            let mut any = false;
            for b in 0..n {
                if let Some(v) = sym.get(a, b) {
                    lat[a * n + b] = v;
                    any = true;
                } else if a < b {
                    missing_pairs += 1;
                }
            }
            if !any {
                return Err(InferError::Unmeasured(a));
            }
        }
        let log = lat.iter().map(|v| v.ln()).collect();
        Ok(Self {
            n,
            lat,
            log,
            asymmetry: m.max_asymmetry(),
            missing_pairs,
        })
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
        t
    }

    #[inline]
    pub(crate) fn get(&self, a: usize, b: usize) -> f64 {
        self.lat[a * self.n + b]
    }

    /// All present values of the upper triangle.
    pub(crate) fn upper_values(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.n * (self.n - 1) / 2);
        for a in 0..self.n {
            for b in a + 1..self.n {
                let x = self.get(a, b);
                if !x.is_nan() {
                    v.push(x);
                }
            }
        }
        v
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

/// Median of a slice (NaN when empty); sorts the slice.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    topoprobe_model::median_sorted(v)
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
