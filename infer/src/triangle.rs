//! Symmetric tables of pairs stored once: the upper triangle, row by row, in half the
//! memory of a square matrix.

/// The index of the pair `(a, b)`, `a != b`, in the upper triangle of an `n`-item table
/// stored row by row.
#[inline]
pub(crate) fn index(n: usize, a: usize, b: usize) -> usize {
    let (a, b) = if a < b { (a, b) } else { (b, a) };
    a * (2 * n - a - 1) / 2 + (b - a - 1)
}

/// The number of pairs of `n` items.
#[inline]
pub(crate) fn pairs(n: usize) -> usize {
    n * n.saturating_sub(1) / 2
}

/// A symmetric value of every pair of `k` items (NaN where unknown), each pair stored once.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Triangle {
    k: usize,
    values: Vec<f64>,
}

impl Triangle {
    /// The table of `f(a, b)` for every pair `a < b`, computed in row order.
    pub(crate) fn from_fn(k: usize, mut f: impl FnMut(usize, usize) -> f64) -> Self {
        let mut values = Vec::with_capacity(pairs(k));
        for a in 0..k {
            for b in a + 1..k {
                values.push(f(a, b));
            }
        }
        Self { k, values }
    }

    /// The number of items.
    pub(crate) fn items(&self) -> usize {
        self.k
    }

    /// The value of the pair `(a, b)` in either order; NaN on the diagonal.
    #[cfg(test)]
    pub(crate) fn get(&self, a: usize, b: usize) -> f64 {
        if a == b {
            f64::NAN
        } else {
            self.values[index(self.k, a, b)]
        }
    }

    /// The values, pair `(a, b)` at [`index`]`(k, a, b)`.
    pub(crate) fn into_values(self) -> Vec<f64> {
        self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_has_its_own_place_in_row_order() {
        let n = 7;
        let mut seen = Vec::new();
        for a in 0..n {
            for b in a + 1..n {
                assert_eq!(index(n, a, b), index(n, b, a));
                seen.push(index(n, a, b));
            }
        }
        assert_eq!(seen, (0..pairs(n)).collect::<Vec<_>>());
        let t = Triangle::from_fn(n, |a, b| (a * 10 + b) as f64);
        assert_eq!(t.get(5, 2), 25.0);
        assert!(t.get(3, 3).is_nan());
        assert_eq!(t.items(), n);
    }
}
