//! Latency components (MCTOP-ALG step 3): the contexts that communicate below a class
//! threshold with each other and above it with everybody else.

use crate::linkage::{cluster, Linkage, UnionFind};
use crate::table::Table;
use crate::triangle::Triangle;

/// Largest fraction of pairs allowed on the wrong side of the threshold (outliers).
const OUTLIER_FRACTION: f64 = 0.02;

/// A set of contexts whose internal latencies are below a class threshold and whose
/// latencies to the rest are above it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatencyComponent {
    /// Sorted member contexts.
    pub(crate) members: Vec<usize>,
    /// Index of the threshold (between class `boundary` and `boundary + 1`).
    pub(crate) boundary: usize,
}

/// Components at every threshold; sets of one context or of all contexts are omitted.
pub(crate) fn components(t: &Table, thresholds: &[f64]) -> Vec<LatencyComponent> {
    let mut out = Vec::new();
    for (boundary, &th) in thresholds.iter().enumerate() {
        let mut uf = UnionFind::new(t.n);
        for a in 0..t.n {
            for b in a + 1..t.n {
                if t.get(a, b) <= th {
                    uf.union(a, b);
                }
            }
        }
        for set in uf.sets() {
            if set.len() < 2 {
                continue;
            }
            let parts = if coherent(t, &set, th) {
                vec![set]
            } else {
                // A few low pairs bridge real components (or the level is not hierarchical):
                // split by average linkage and keep the coherent parts.
                split_by_average(t, &set, th)
            };
            for part in parts {
                if part.len() >= 2
                    && part.len() < t.n
                    && coherent(t, &part, th)
                    && separated(t, &part, th)
                {
                    out.push(LatencyComponent {
                        members: part,
                        boundary,
                    });
                }
            }
        }
    }
    out.sort_by(|a, b| a.members.cmp(&b.members).then(a.boundary.cmp(&b.boundary)));
    out.dedup_by(|a, b| a.members == b.members);
    out
}

/// Whether (almost) all internal pairs are at or below `th`.
fn coherent(t: &Table, set: &[usize], th: f64) -> bool {
    let (above, measured) = t.count_above(set, None, th);
    if measured == 0 {
        return false;
    }
    (above as f64) <= OUTLIER_FRACTION * measured as f64
}

/// Whether (almost) all pairs from the set to the rest are above `th`.
fn separated(t: &Table, set: &[usize], th: f64) -> bool {
    let mut inside = vec![false; t.n];
    for &x in set {
        inside[x] = true;
    }
    let rest: Vec<usize> = (0..t.n).filter(|&x| !inside[x]).collect();
    let (above, measured) = t.count_above(set, Some(&rest), th);
    let below = measured - above;
    (below as f64) <= OUTLIER_FRACTION * measured as f64
}

fn split_by_average(t: &Table, set: &[usize], th: f64) -> Vec<Vec<usize>> {
    let d = Triangle::from_fn(set.len(), |i, j| t.get(set[i], set[j]));
    cluster(d, Linkage::Average)
        .cut(th)
        .into_iter()
        .map(|part| part.into_iter().map(|i| set[i]).collect())
        .collect()
}
