//! Square tables of pairwise latencies, with missing entries.

use serde::{Deserialize, Serialize};

/// A square table of latencies between hardware contexts, row-major.
///
/// Entry `(a, b)` is the latency measured from context `a` to context `b`; `None` marks
/// a missing measurement (the diagonal is always `None`). A matrix read from a directed
/// measurement need not be symmetric; [`LatencyMatrix::symmetrized`] makes it so.
///
/// Read from JSON, the limits of `docs/LIMITS.md` are checked row by row, before the
/// table grows past them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(into = "Vec<Vec<Option<f64>>>")]
pub struct LatencyMatrix {
    n: usize,
    values: Vec<Option<f64>>,
}

/// Why a list of rows is not a valid latency matrix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MatrixShapeError {
    /// A row has a different number of entries than there are rows.
    #[error("row {row} has {found} entries, expected {expected} (the matrix must be square)")]
    NotSquare {
        /// Zero-based row index.
        row: usize,
        /// Entries found in that row.
        found: usize,
        /// Number of rows (and so of expected entries).
        expected: usize,
    },
    /// An entry is NaN, infinite or negative.
    #[error("entry ({row}, {col}) is {value}: latencies must be finite and not negative")]
    BadValue {
        /// Zero-based row index.
        row: usize,
        /// Zero-based column index.
        col: usize,
        /// The offending value.
        value: f64,
    },
}

impl LatencyMatrix {
    /// An `n`×`n` matrix with every entry missing.
    #[must_use]
    pub fn empty(n: usize) -> Self {
        Self {
            n,
            values: vec![None; n * n],
        }
    }

    /// Builds a matrix from a function of `(row, column)`, called in row order; the
    /// diagonal is left empty.
    #[must_use]
    pub fn from_fn(n: usize, mut f: impl FnMut(usize, usize) -> Option<f64>) -> Self {
        let mut values = Vec::with_capacity(n * n);
        for a in 0..n {
            for b in 0..n {
                values.push(if a == b { None } else { f(a, b) });
            }
        }
        Self { n, values }
    }

    /// Builds a matrix from rows.
    ///
    /// # Errors
    ///
    /// Returns [`MatrixShapeError`] when the rows do not form a square, or when a value is
    /// NaN, infinite or negative. Diagonal entries are ignored (set to `None`).
    pub fn from_rows(rows: Vec<Vec<Option<f64>>>) -> Result<Self, MatrixShapeError> {
        let n = rows.len();
        let mut values = Vec::with_capacity(n * n);
        for (row, r) in rows.into_iter().enumerate() {
            if r.len() != n {
                return Err(MatrixShapeError::NotSquare {
                    row,
                    found: r.len(),
                    expected: n,
                });
            }
            for (col, v) in r.into_iter().enumerate() {
                if row == col {
                    values.push(None);
                    continue;
                }
                if let Some(x) = v {
                    if !x.is_finite() || x < 0.0 {
                        return Err(MatrixShapeError::BadValue { row, col, value: x });
                    }
                }
                values.push(v);
            }
        }
        Ok(Self { n, values })
    }

    /// Builds an `n`×`n` matrix from its entries in row order (the diagonal is cleared).
    ///
    /// # Errors
    ///
    /// [`MatrixShapeError::NotSquare`] when there are not `n`² entries;
    /// [`MatrixShapeError::BadValue`] for a NaN, infinite or negative value.
    pub fn from_flat(n: usize, mut values: Vec<Option<f64>>) -> Result<Self, MatrixShapeError> {
        if values.len() != n.saturating_mul(n) {
            return Err(MatrixShapeError::NotSquare {
                row: values.len().checked_div(n).unwrap_or(0),
                found: values.len().checked_rem(n).unwrap_or(values.len()),
                expected: n,
            });
        }
        for (i, v) in values.iter_mut().enumerate() {
            let (row, col) = (i / n, i % n);
            if row == col {
                *v = None;
            } else if let Some(x) = *v {
                if !x.is_finite() || x < 0.0 {
                    return Err(MatrixShapeError::BadValue { row, col, value: x });
                }
            }
        }
        Ok(Self { n, values })
    }

    /// Number of rows (and columns): the number of hardware contexts.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.n
    }

    /// Whether the matrix has no rows.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The latency from `a` to `b`, `None` when missing, on the diagonal or out of range.
    #[must_use]
    pub fn get(&self, a: usize, b: usize) -> Option<f64> {
        if a >= self.n || b >= self.n {
            return None;
        }
        self.values[a * self.n + b]
    }

    /// Sets the latency from `a` to `b` (ignored on the diagonal or out of range).
    pub fn set(&mut self, a: usize, b: usize, value: Option<f64>) {
        if a < self.n && b < self.n && a != b {
            self.values[a * self.n + b] = value;
        }
    }

    /// One row as a slice (`None` on the diagonal).
    ///
    /// # Panics
    ///
    /// Panics when `a` is not a row of the matrix.
    #[must_use]
    pub fn row(&self, a: usize) -> &[Option<f64>] {
        &self.values[a * self.n..(a + 1) * self.n]
    }

    /// All rows, as nested vectors.
    #[must_use]
    pub fn to_rows(&self) -> Vec<Vec<Option<f64>>> {
        (0..self.n).map(|a| self.row(a).to_vec()).collect()
    }

    /// Number of off-diagonal entries that are present.
    #[must_use]
    pub fn present(&self) -> usize {
        self.values.iter().filter(|v| v.is_some()).count()
    }

    /// Largest relative difference between `(a, b)` and `(b, a)` over pairs where both exist
    /// (0 for a symmetric matrix).
    #[must_use]
    pub fn max_asymmetry(&self) -> f64 {
        let mut worst: f64 = 0.0;
        for a in 0..self.n {
            for b in a + 1..self.n {
                if let (Some(x), Some(y)) = (self.get(a, b), self.get(b, a)) {
                    let mean = (x + y) / 2.0;
                    if mean > 0.0 {
                        worst = worst.max((x - y).abs() / mean);
                    }
                }
            }
        }
        worst
    }

    /// A symmetric copy: the mean of `(a, b)` and `(b, a)` when both exist, else the one
    /// that exists. Lower- or upper-triangle-only matrices are mirrored this way.
    #[must_use]
    pub fn symmetrized(&self) -> Self {
        let n = self.n;
        let mut out = self.clone();
        // In tiles, so that reading the transposed entries stays in the cache of a large
        // matrix.
        const TILE: usize = 64;
        for ta in (0..n).step_by(TILE) {
            for tb in (ta..n).step_by(TILE) {
                for a in ta..(ta + TILE).min(n) {
                    for b in tb.max(a + 1)..(tb + TILE).min(n) {
                        let v = match (self.values[a * n + b], self.values[b * n + a]) {
                            (Some(x), Some(y)) => Some((x + y) / 2.0),
                            (Some(x), None) | (None, Some(x)) => Some(x),
                            (None, None) => None,
                        };
                        out.values[a * n + b] = v;
                        out.values[b * n + a] = v;
                    }
                }
            }
        }
        out
    }

    /// A copy restricted to the given rows/columns, in the given order.
    #[must_use]
    pub fn select(&self, keep: &[usize]) -> Self {
        Self::from_fn(keep.len(), |a, b| self.get(keep[a], keep[b]))
    }
}

impl TryFrom<Vec<Vec<Option<f64>>>> for LatencyMatrix {
    type Error = MatrixShapeError;

    fn try_from(rows: Vec<Vec<Option<f64>>>) -> Result<Self, Self::Error> {
        Self::from_rows(rows)
    }
}

impl From<LatencyMatrix> for Vec<Vec<Option<f64>>> {
    fn from(m: LatencyMatrix) -> Self {
        m.to_rows()
    }
}

/// Minimum, median and maximum of a set of latencies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Smallest value.
    pub min: f64,
    /// Median value.
    pub median: f64,
    /// Largest value.
    pub max: f64,
    /// Number of values summarized.
    pub count: usize,
}

impl LatencySummary {
    /// Summarizes the given values; `None` when there are none (NaN values are ignored).
    /// Linear time (the median is selected, not sorted for).
    #[must_use]
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        let count = v.len();
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lower, upper, _) = v.select_nth_unstable_by(count / 2, f64::total_cmp);
        let upper = *upper;
        let median = if count % 2 == 1 {
            upper
        } else {
            let below = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (below + upper) / 2.0
        };
        Some(Self {
            min,
            median,
            max,
            count,
        })
    }
}

/// Median of a sorted, non-empty slice (mean of the two middle values for even lengths).
///
/// # Panics
///
/// Panics when the slice is empty.
#[must_use]
pub fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_square_and_bad_values() {
        let e = LatencyMatrix::from_rows(vec![vec![None, Some(1.0)], vec![Some(1.0)]]);
        assert!(matches!(e, Err(MatrixShapeError::NotSquare { row: 1, .. })));
        let e = LatencyMatrix::from_rows(vec![vec![None, Some(f64::NAN)], vec![Some(1.0), None]]);
        assert!(matches!(
            e,
            Err(MatrixShapeError::BadValue { row: 0, col: 1, .. })
        ));
        let e = LatencyMatrix::from_rows(vec![vec![None, Some(-1.0)], vec![Some(1.0), None]]);
        assert!(e.is_err());
    }

    #[test]
    fn symmetrizes_directed_and_triangular() {
        let m = LatencyMatrix::from_rows(vec![
            vec![None, Some(10.0), None],
            vec![Some(20.0), None, None],
            vec![Some(5.0), Some(7.0), None],
        ])
        .unwrap();
        let s = m.symmetrized();
        assert_eq!(s.get(0, 1), Some(15.0));
        assert_eq!(s.get(1, 0), Some(15.0));
        assert_eq!(s.get(0, 2), Some(5.0));
        assert_eq!(s.get(1, 2), Some(7.0));
        assert!((m.max_asymmetry() - 10.0 / 15.0).abs() < 1e-12);
    }

    #[test]
    fn summary_of_values() {
        let s = LatencySummary::of([3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.min, s.median, s.max, s.count), (1.0, 2.5, 10.0, 4));
        assert!(LatencySummary::of([]).is_none());
    }
}
