//! The inference's clustering of latencies, for callers that group other latencies the
//! same way (the communication layers of a cluster: `topoprobe-cluster`).
//!
//! It is the clustering that makes the latency classes of a machine (MCTOP-ALG step 2):
//! values are compared by ratio, so microseconds, nanoseconds and cycles behave the same;
//! a class boundary needs a gap of at least 12% between consecutive sorted values; and a
//! class needs at least `max(2, members / 8)` values, so that one outlier cannot invent a
//! level. This module is a thin public face of it: the same function, the same results.
//!
//! ```
//! use topoprobe_infer::layers::classify;
//!
//! // 4 ranks on one node (0.4 µs) and 4 on another, 3 µs between the nodes.
//! let mut values = vec![0.41, 0.40, 0.42, 0.39, 0.40, 0.41]; // inside node 0
//! values.extend([0.40, 0.43, 0.38, 0.41, 0.40, 0.42]); // inside node 1
//! values.extend(std::iter::repeat_n(3.1, 16)); // between them
//! let classes = classify(&values, 8);
//! assert_eq!(classes.len(), 2);
//! assert_eq!((classes.classes()[0].count, classes.classes()[1].count), (12, 16));
//! assert_eq!(classes.class_of(0.45), Some(0));
//! assert_eq!(classes.class_of(2.0), Some(1));
//! ```

use crate::levels;

/// A class of similar values found by [`classify`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyClass {
    /// Smallest value of the class.
    pub lo: f64,
    /// Largest value of the class.
    pub hi: f64,
    /// Median value of the class.
    pub median: f64,
    /// Number of values in the class.
    pub count: usize,
}

/// The classes of a set of values, fastest first, and the boundaries between them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Classes {
    classes: Vec<LatencyClass>,
    thresholds: Vec<f64>,
}

impl Classes {
    /// The classes, in increasing order of value.
    #[must_use]
    pub fn classes(&self) -> &[LatencyClass] {
        &self.classes
    }

    /// The boundary between class `i` and class `i + 1` (the geometric mean of the gap's
    /// ends), for every `i` but the last.
    #[must_use]
    pub fn thresholds(&self) -> &[f64] {
        &self.thresholds
    }

    /// Number of classes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.classes.len()
    }

    /// Whether there is no class (no positive value was given).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// The class a value falls in by the thresholds (values outside every class's range
    /// go to the class on their side of the nearest threshold); `None` for a value that
    /// is not finite and positive, or when there is no class.
    #[must_use]
    pub fn class_of(&self, value: f64) -> Option<usize> {
        if self.classes.is_empty() || !(value.is_finite() && value > 0.0) {
            return None;
        }
        Some(self.thresholds.iter().take_while(|&&t| value > t).count())
    }
}

/// Clusters `values` (latencies in any unit, any order) into classes, as the inference
/// clusters the pair latencies of a machine of `members` hardware contexts: `members`
/// sets the smallest class (`max(2, members / 8)` values). Values that are not finite
/// and positive are ignored.
#[must_use]
pub fn classify(values: &[f64], members: usize) -> Classes {
    let mut finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    finite.sort_by(f64::total_cmp);
    let inner = levels::classes(&finite, members, levels::MIN_GAP);
    Classes {
        thresholds: levels::thresholds(&inner),
        classes: inner
            .into_iter()
            .map(|c| LatencyClass {
                lo: c.lo,
                hi: c.hi,
                median: c.median,
                count: c.count,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignores_values_that_are_not_latencies() {
        let mut v = vec![1.0; 10];
        v.extend([f64::NAN, f64::INFINITY, -3.0, 0.0]);
        v.extend(vec![5.0; 10]);
        let c = classify(&v, 8);
        assert_eq!(c.len(), 2);
        assert_eq!(c.classes()[0].count + c.classes()[1].count, 20);
        assert_eq!(c.class_of(f64::NAN), None);
        assert_eq!(c.class_of(1.5), Some(0));
        assert_eq!(c.class_of(100.0), Some(1));
        assert!(classify(&[], 4).is_empty());
    }
}
