//! Square tables of pairwise latencies, with missing entries, held compactly: one `f32`
//! per entry (4 bytes, where `Option<f64>` took 16), NaN for a missing one.
//!
//! **Resolution.** An entry keeps [`TABLE_DIGITS`] (5) significant decimal digits, a
//! relative 10⁻⁵: a hundred times finer than the 0.1% spread of repeated measurements
//! (integers up to 2²⁴ are kept exactly). A value written with up to 5 significant
//! digits (`21.3`, `123.45`) reads back exactly as written, a longer one is rounded
//! (`123.456` is `123.46`). The table holds what a description file writes (one row per
//! line, each entry with the same digits), so that what a reader derives from the tables
//! is what the writer derived. An entry is written in at most [`MAX_ENTRY_CHARS`]
//! characters, so that what topoprobe writes at the 4096-context limit is read back
//! ([`crate::limits`]).

use serde::{Deserialize, Serialize, Serializer};

/// Significant decimal digits a table entry keeps, and a description file writes (an
/// `f32` holds 7.2, so the decimal is recovered exactly).
pub const TABLE_DIGITS: i32 = 5;

/// Powers of ten, for rounding to significant digits without `powi`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The most characters a table entry is written with, by a description (JSON) or a
/// matrix CSV: an entry of [`TABLE_DIGITS`] significant digits in decimal where that takes
/// at most this many (`123.45`, `16777216.0`), else in exponent form (`1.2346e-38`,
/// `9.8765e11`), which never takes more. The readers' limits on files are sized from it
/// ([`crate::limits`]).
pub const MAX_ENTRY_CHARS: usize = 10;

/// Appends table entry `x` (already rounded to [`TABLE_DIGITS`] digits) to `out` in at
/// most [`MAX_ENTRY_CHARS`] characters: its decimal form (with `.0` after a whole number
/// when `point`, as JSON floats are written) where that is short enough, else its exponent
/// form.
pub(crate) fn push_entry(out: &mut String, x: f64, point: bool) {
    use std::fmt::Write as _;
    let start = out.len();
    // Writing into a String cannot fail.
    if point && x.fract() == 0.0 && x.abs() < 1e15 {
        let _ = write!(out, "{x:.1}");
    } else {
        let _ = write!(out, "{x}");
    }
    if out.len() - start > MAX_ENTRY_CHARS {
        out.truncate(start);
        let _ = write!(out, "{x:e}");
    }
}

/// ⌊log₁₀ |x|⌋ of a finite non-zero `x`: from the powers of ten an `f64` holds exactly
/// where |x| is between 1 and 10²³ (a handful of comparisons, where a logarithm costs
/// tens of nanoseconds: the inference reads millions of latencies through
/// [`round_significant`]), else from the logarithm.
#[inline]
fn decimal_exponent(x: f64) -> i32 {
    let a = x.abs();
    if (1.0..1e23).contains(&a) {
        // The powers at most `a` are 10⁰ ..= 10ᵉ.
        POW10.partition_point(|&p| p <= a) as i32 - 1
    } else {
        a.log10().floor() as i32
    }
}

/// `y` rounded to the nearest whole number, halves away from zero: [`f64::round`], from
/// integer conversions and without a branch where |y| < 2⁵² (where the truncation and the
/// fraction are exact): the library's `round` is a function call on a CPU without SSE4.1,
/// and which way a measured value rounds is as good as random.
#[inline]
#[must_use]
pub fn round_half_away(y: f64) -> f64 {
    if y.is_nan() || y.abs() >= 4_503_599_627_370_496.0 {
        return y.round();
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let whole = (y as i64) as f64;
    let fraction = y - whole;
    whole + f64::from(u8::from(fraction >= 0.5)) - f64::from(u8::from(fraction <= -0.5))
}

/// `x` rounded to `digits` significant decimal digits (never past what an `f64` resolves;
/// non-finite values, and integers up to 2²⁴, which an `f32` holds exactly, unchanged).
#[inline]
#[must_use]
pub fn round_significant(x: f64, digits: i32) -> f64 {
    if !x.is_finite() || x == 0.0 || (x.abs() <= 16_777_216.0 && (x as i64) as f64 == x) {
        return x;
    }
    let e = decimal_exponent(x);
    let k = digits - 1 - e;
    let scaled = if k >= 0 {
        POW10.get(k as usize).map(|&p| round_half_away(x * p) / p)
    } else {
        POW10
            .get((-k) as usize)
            .map(|&p| round_half_away(x / p) * p)
    };
    // Past the powers an `f64` holds exactly (below about 10⁻¹⁸, above 10²⁶): through the
    // exponent form, which rounds to the digits correctly at any magnitude.
    scaled.unwrap_or_else(|| {
        format!("{x:.prec$e}", prec = (digits - 1).max(0) as usize)
            .parse()
            .unwrap_or(x)
    })
}

/// A stored entry as the value it stands for: the `f32` widened to the decimal of
/// [`TABLE_DIGITS`] significant digits it holds (`21.3f32` is `21.3`, not
/// `21.299999237060547`); `None` for NaN (missing).
#[inline]
fn widen(v: f32) -> Option<f64> {
    if v.is_nan() {
        None
    } else {
        Some(round_significant(f64::from(v), TABLE_DIGITS))
    }
}

/// A value as stored: `None` as NaN; a given NaN (not a latency, never a missing one) as
/// −∞, which checks refuse as they refuse any negative value.
#[inline]
#[allow(clippy::cast_possible_truncation)]
fn narrow(v: Option<f64>) -> f32 {
    v.map_or(f32::NAN, |x| {
        if x.is_nan() {
            f32::NEG_INFINITY
        } else {
            x as f32
        }
    })
}

/// A square table of latencies between hardware contexts, row-major.
///
/// Entry `(a, b)` is the latency measured from context `a` to context `b`; `None` marks
/// a missing measurement (the diagonal is always `None`). A matrix read from a directed
/// measurement need not be symmetric; [`LatencyMatrix::symmetrized`] makes it so. Entries
/// are held as `f32` with [`TABLE_DIGITS`] significant digits (the module says why).
///
/// Read from JSON, the limits of `docs/LIMITS.md` are checked row by row, before the
/// table grows past them.
#[derive(Debug, Clone)]
pub struct LatencyMatrix {
    n: usize,
    values: Vec<f32>,
}

impl PartialEq for LatencyMatrix {
    /// Equal when of the same size with the same entries (at [`TABLE_DIGITS`] significant
    /// digits), missing where the other's are.
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n
            && self
                .values
                .iter()
                .zip(&other.values)
                .all(|(&a, &b)| a.to_bits() == b.to_bits() || widen(a) == widen(b))
    }
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

/// A value of a table as given: finite and not negative.
fn check(row: usize, col: usize, v: Option<f64>) -> Result<(), MatrixShapeError> {
    match v {
        Some(x) if !x.is_finite() || x < 0.0 => {
            Err(MatrixShapeError::BadValue { row, col, value: x })
        }
        _ => Ok(()),
    }
}

impl LatencyMatrix {
    /// An `n`×`n` matrix with every entry missing.
    #[must_use]
    pub fn empty(n: usize) -> Self {
        Self {
            n,
            values: vec![f32::NAN; n * n],
        }
    }

    /// Builds a matrix from a function of `(row, column)`, called in row order; the
    /// diagonal is left empty.
    #[must_use]
    pub fn from_fn(n: usize, mut f: impl FnMut(usize, usize) -> Option<f64>) -> Self {
        let mut values = Vec::with_capacity(n * n);
        for a in 0..n {
            for b in 0..n {
                values.push(if a == b { f32::NAN } else { narrow(f(a, b)) });
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
                    values.push(f32::NAN);
                    continue;
                }
                check(row, col, v)?;
                values.push(narrow(v));
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
    pub fn from_flat(n: usize, values: Vec<Option<f64>>) -> Result<Self, MatrixShapeError> {
        if values.len() != n.saturating_mul(n) {
            return Err(MatrixShapeError::NotSquare {
                row: values.len().checked_div(n).unwrap_or(0),
                found: values.len().checked_rem(n).unwrap_or(values.len()),
                expected: n,
            });
        }
        let mut out = Vec::with_capacity(values.len());
        for (i, v) in values.into_iter().enumerate() {
            let (row, col) = (i / n, i % n);
            if row == col {
                out.push(f32::NAN);
            } else {
                check(row, col, v)?;
                out.push(narrow(v));
            }
        }
        Ok(Self { n, values: out })
    }

    /// Builds an `n`×`n` matrix from its stored entries in row order (`f32`, NaN where
    /// missing; the diagonal is cleared): the compact form a reader fills row by row.
    ///
    /// # Errors
    ///
    /// As [`LatencyMatrix::from_flat`].
    pub fn from_stored(n: usize, mut values: Vec<f32>) -> Result<Self, MatrixShapeError> {
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
                *v = f32::NAN;
            } else if !v.is_nan() && (!v.is_finite() || *v < 0.0) {
                return Err(MatrixShapeError::BadValue {
                    row,
                    col,
                    value: f64::from(*v),
                });
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
        widen(self.values[a * self.n + b])
    }

    /// Whether the latency from `a` to `b` is present (cheaper than [`LatencyMatrix::get`]).
    #[must_use]
    pub fn has(&self, a: usize, b: usize) -> bool {
        a < self.n && b < self.n && !self.values[a * self.n + b].is_nan()
    }

    /// The stored entry from `a` to `b` as an `f64` without rounding it back to its
    /// decimal (NaN when missing): for arithmetic over many entries, where the last bits
    /// do not matter and [`LatencyMatrix::get`]'s rounding would cost time.
    #[must_use]
    pub fn raw(&self, a: usize, b: usize) -> f64 {
        if a >= self.n || b >= self.n {
            return f64::NAN;
        }
        f64::from(self.values[a * self.n + b])
    }

    /// Sets the latency from `a` to `b` (ignored on the diagonal or out of range).
    pub fn set(&mut self, a: usize, b: usize, value: Option<f64>) {
        if a < self.n && b < self.n && a != b {
            self.values[a * self.n + b] = narrow(value);
        }
    }

    /// One row, entry by entry (`None` on the diagonal).
    ///
    /// # Panics
    ///
    /// Panics when `a` is not a row of the matrix.
    pub fn row(&self, a: usize) -> impl ExactSizeIterator<Item = Option<f64>> + '_ {
        self.values[a * self.n..(a + 1) * self.n]
            .iter()
            .map(|&v| widen(v))
    }

    /// All rows, as nested vectors.
    #[must_use]
    pub fn to_rows(&self) -> Vec<Vec<Option<f64>>> {
        (0..self.n).map(|a| self.row(a).collect()).collect()
    }

    /// Number of off-diagonal entries that are present.
    #[must_use]
    pub fn present(&self) -> usize {
        self.values.iter().filter(|v| !v.is_nan()).count()
    }

    /// Bytes the table holds (4 per entry).
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.values.len() * std::mem::size_of::<f32>()
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

    /// The latency between `a` and `b` taken both ways: the mean of `(a, b)` and `(b, a)`
    /// when both exist, else the one that exists (what [`LatencyMatrix::symmetrized`] holds,
    /// without making the copy).
    #[must_use]
    pub fn between(&self, a: usize, b: usize) -> Option<f64> {
        match (self.get(a, b), self.get(b, a)) {
            (Some(x), Some(y)) => Some((x + y) / 2.0),
            (Some(x), None) | (None, Some(x)) => Some(x),
            (None, None) => None,
        }
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
                        let v = narrow(self.between(a, b));
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
        let n = keep.len();
        let mut values = Vec::with_capacity(n * n);
        for (i, &a) in keep.iter().enumerate() {
            for (j, &b) in keep.iter().enumerate() {
                values.push(if i == j || a >= self.n || b >= self.n {
                    f32::NAN
                } else {
                    self.values[a * self.n + b]
                });
            }
        }
        Self { n, values }
    }

    /// Row `a` as one line of JSON (`[null,50.5,…]`), each entry with [`TABLE_DIGITS`]
    /// significant digits.
    fn row_json(&self, a: usize) -> String {
        let mut s = String::with_capacity(self.n * 8 + 2);
        s.push('[');
        for (b, v) in self.values[a * self.n..(a + 1) * self.n].iter().enumerate() {
            if b > 0 {
                s.push(',');
            }
            if v.is_nan() {
                s.push_str("null");
            } else {
                push_entry(&mut s, round_significant(f64::from(*v), TABLE_DIGITS), true);
            }
        }
        s.push(']');
        s
    }
}

impl Serialize for LatencyMatrix {
    /// A sequence of rows. For JSON each row is one line (`[null,50.5,…]`, entries with
    /// [`TABLE_DIGITS`] significant digits), written as it is made: the table is never
    /// copied whole into another form.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.n))?;
        for a in 0..self.n {
            let row = serde_json::value::RawValue::from_string(self.row_json(a))
                .map_err(serde::ser::Error::custom)?;
            seq.serialize_element(&row)?;
        }
        seq.end()
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
        let median = crate::median_in_place(&mut v)?;
        Some(Self {
            min,
            median,
            max,
            count,
        })
    }

    /// [`LatencySummary::of`] the values `each` calls its argument with (finite and not
    /// negative; it is called up to four times, with the same values each time), holding 4
    /// bytes per value rather than 8 (see [`streamed_medians`](crate::streamed_medians)):
    /// for the millions of pairs of a large machine's socket.
    #[must_use]
    pub fn of_streamed(each: impl Fn(&mut dyn FnMut(f64))) -> Option<Self> {
        let (mut min, mut max, mut count) = (f64::INFINITY, f64::NEG_INFINITY, 0_usize);
        each(&mut |v| {
            if !v.is_nan() {
                min = min.min(v);
                max = max.max(v);
                count += 1;
            }
        });
        if count == 0 {
            return None;
        }
        let stream = |f: &mut dyn FnMut(usize, f64)| {
            each(&mut |v| {
                if !v.is_nan() {
                    f(0, v);
                }
            });
        };
        let (median, _) = crate::streamed_medians(1, &stream);
        Some(Self {
            min,
            median: median[0],
            max,
            count,
        })
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
        for (x, e) in [
            (1.0, 0),
            (9.99, 0),
            (10.0, 1),
            (123.45, 2),
            (1e22, 22),
            (0.5, -1),
        ] {
            assert_eq!(decimal_exponent(x), e, "{x}");
            assert_eq!(decimal_exponent(-x), e, "{x}");
        }
        let values = [3.0, 1.0, f64::NAN, 2.0, 10.0, 1.0 + 1e-12];
        let streamed = LatencySummary::of_streamed(|f: &mut dyn FnMut(f64)| {
            values.iter().for_each(|&v| f(v));
        });
        assert_eq!(streamed, LatencySummary::of(values));
        assert!(LatencySummary::of_streamed(|_: &mut dyn FnMut(f64)| {}).is_none());
    }
}
