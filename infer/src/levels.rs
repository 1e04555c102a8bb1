//! Latency classes: one-dimensional clustering of all pair latencies (MCTOP-ALG step 2).
//!
//! The clustering is scale-free: values are compared by ratio, so it works the same in ns
//! and in cycles, and it never relies on an absolute offset. A class boundary needs a gap of
//! at least [`MIN_GAP`] between consecutive sorted values (widened when the timer is coarse),
//! and a class needs at least `max(2, n/8)` pairs so that a single outlier pair cannot
//! invent a level.

/// Smallest ratio between the largest value of a class and the smallest of the next (12%).
pub(crate) const MIN_GAP: f64 = 1.12;

/// A class of similar latencies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatencyClass {
    /// Smallest value.
    pub(crate) lo: f64,
    /// Largest value.
    pub(crate) hi: f64,
    /// Median value.
    pub(crate) median: f64,
    /// Number of pairs.
    pub(crate) count: usize,
}

/// Clusters `sorted` (pair latencies, ascending) for a machine of `n` contexts.
/// `min_gap` is the ratio a boundary needs (at least [`MIN_GAP`]).
pub(crate) fn classes<T: Copy + Into<f64>>(
    sorted: &[T],
    n: usize,
    min_gap: f64,
) -> Vec<LatencyClass> {
    let start = sorted.partition_point(|&v| v.into() <= 0.0);
    let x = &sorted[start..];
    if x.is_empty() {
        return Vec::new();
    }
    let x = |i: usize| -> f64 { x[i].into() };
    let len = sorted.len() - start;
    let log_gap = min_gap.max(MIN_GAP).ln();
    let min_count = (n / 8).max(2);
    // Segments [start, end] (inclusive) split at large gaps.
    let mut segs: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for i in 0..len - 1 {
        if (x(i + 1) / x(i)).ln() >= log_gap {
            segs.push((start, i));
            start = i + 1;
        }
    }
    segs.push((start, len - 1));
    // Merge too-small segments into the neighbour across the smaller gap.
    loop {
        if segs.len() < 2 {
            break;
        }
        let Some(k) = segs.iter().position(|&(a, b)| b - a + 1 < min_count) else {
            break;
        };
        let (a, b) = segs[k];
        let gap_left = if k > 0 {
            (x(a) / x(segs[k - 1].1)).ln()
        } else {
            f64::INFINITY
        };
        let gap_right = if k + 1 < segs.len() {
            (x(segs[k + 1].0) / x(b)).ln()
        } else {
            f64::INFINITY
        };
        if gap_left <= gap_right {
            segs[k - 1].1 = b;
        } else {
            segs[k + 1].0 = a;
        }
        segs.remove(k);
    }
    segs.into_iter()
        .map(|(a, b)| {
            let count = b - a + 1;
            // As `topoprobe_model::median_sorted` of the segment.
            let median = if count % 2 == 1 {
                x(a + count / 2)
            } else {
                (x(a + count / 2 - 1) + x(a + count / 2)) / 2.0
            };
            LatencyClass {
                lo: x(a),
                hi: x(b),
                median,
                count,
            }
        })
        .collect()
}

/// The thresholds between consecutive classes (geometric mean of the gap's ends).
pub(crate) fn thresholds(classes: &[LatencyClass]) -> Vec<f64> {
    classes
        .windows(2)
        .map(|w| (w[0].hi * w[1].lo).sqrt())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_large_gaps_only() {
        let mut v = vec![28.0; 20];
        v.extend(std::iter::repeat_n(112.0, 180));
        v.extend([100.0, 118.0, 121.0]);
        v.extend(std::iter::repeat_n(308.0, 200));
        v.sort_by(f64::total_cmp);
        let c = classes(&v, 40, MIN_GAP);
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].lo, c[0].hi), (28.0, 28.0));
        assert_eq!((c[1].lo, c[1].hi), (100.0, 121.0));
        assert_eq!(c[2].median, 308.0);
    }

    #[test]
    fn one_outlier_pair_does_not_make_a_level() {
        let mut v = vec![50.0; 100];
        v.push(500.0);
        v.push(5.0);
        v.sort_by(f64::total_cmp);
        let c = classes(&v, 16, MIN_GAP);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].lo, c[0].hi), (5.0, 500.0));
    }

    #[test]
    fn is_scale_free() {
        let v: Vec<f64> = [8.0, 8.2, 25.0, 26.0, 27.0, 130.0, 135.0]
            .iter()
            .flat_map(|&x| std::iter::repeat_n(x, 10))
            .collect();
        let ns = classes(&v, 16, MIN_GAP);
        let cycles: Vec<f64> = v.iter().map(|x| x * 2.7).collect();
        let cy = classes(&cycles, 16, MIN_GAP);
        assert_eq!(ns.len(), 3);
        assert_eq!(ns.len(), cy.len());
        for (a, b) in ns.iter().zip(&cy) {
            assert_eq!(a.count, b.count);
        }
    }
}
