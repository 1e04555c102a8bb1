//! Hierarchical clustering primitives: union-find, and the nearest-neighbour-chain
//! algorithm for complete and average linkage (O(k²) time).

/// Disjoint-set forest.
pub(crate) struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            parent: (0..n).collect(),
        }
    }

    pub(crate) fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    pub(crate) fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }

    /// The sets, each sorted, ordered by their smallest element.
    pub(crate) fn sets(&mut self) -> Vec<Vec<usize>> {
        let n = self.parent.len();
        let mut by_root: Vec<Vec<usize>> = vec![Vec::new(); n];
        for x in 0..n {
            let r = self.find(x);
            by_root[r].push(x);
        }
        by_root.into_iter().filter(|s| !s.is_empty()).collect()
    }
}

/// How the dissimilarity of a merged cluster to another is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Linkage {
    /// Largest dissimilarity between members.
    Complete,
    /// Mean dissimilarity over the member pairs that have one (missing pairs ignored).
    Average,
}

/// One node of a dendrogram over `k` leaves: leaves are `0..k`, merges `k..2k-1`.
#[derive(Debug, Clone)]
pub(crate) struct DendroNode {
    /// The two merged nodes (none for a leaf).
    pub(crate) children: Option<(usize, usize)>,
    /// Merge height (0 for a leaf).
    pub(crate) height: f64,
    /// The leaves below, sorted.
    pub(crate) leaves: Vec<usize>,
}

/// A dendrogram: leaves first, then merges in increasing height; the last node is the root.
#[derive(Debug, Clone)]
pub(crate) struct Dendrogram {
    pub(crate) nodes: Vec<DendroNode>,
}

/// Clusters `k` items given a symmetric dissimilarity matrix (row-major, NaN = unknown)
/// with the nearest-neighbour-chain algorithm.
pub(crate) fn cluster(d: &[f64], k: usize, linkage: Linkage) -> Dendrogram {
    let mut nodes: Vec<DendroNode> = (0..k)
        .map(|i| DendroNode {
            children: None,
            height: 0.0,
            leaves: vec![i],
        })
        .collect();
    if k < 2 {
        return Dendrogram { nodes };
    }
    // Working sums and counts so that average linkage ignores missing pairs.
    let mut sum = vec![0.0_f64; k * k];
    let mut cnt = vec![0.0_f64; k * k];
    for i in 0..k {
        for j in 0..k {
            let v = d[i * k + j];
            if i != j && !v.is_nan() {
                sum[i * k + j] = v;
                cnt[i * k + j] = 1.0;
            }
        }
    }
    let dist = |sum: &[f64], cnt: &[f64], i: usize, j: usize| -> f64 {
        let c = cnt[i * k + j];
        if c == 0.0 {
            f64::INFINITY
        } else {
            match linkage {
                Linkage::Complete => sum[i * k + j],
                Linkage::Average => sum[i * k + j] / c,
            }
        }
    };
    let mut active = vec![true; k];
    let mut remaining = k;
    let mut chain: Vec<usize> = Vec::new();
    let mut merges: Vec<(usize, usize, f64)> = Vec::with_capacity(k - 1);
    while remaining > 1 {
        if chain.is_empty() {
            let first = active.iter().position(|&a| a).unwrap_or(0);
            chain.push(first);
        }
        loop {
            let a = chain[chain.len() - 1];
            let prev = (chain.len() >= 2).then(|| chain[chain.len() - 2]);
            // Nearest active neighbour of a, preferring prev on ties.
            let mut best = prev;
            let mut best_d = prev.map_or(f64::INFINITY, |p| dist(&sum, &cnt, a, p));
            for (c, &alive) in active.iter().enumerate() {
                if c == a || !alive || Some(c) == prev {
                    continue;
                }
                let dc = dist(&sum, &cnt, a, c);
                if best.is_none() || dc < best_d {
                    best = Some(c);
                    best_d = dc;
                }
            }
            let Some(b) = best else { break };
            if Some(b) == prev {
                chain.pop();
                chain.pop();
                merges.push((a.min(b), a.max(b), best_d));
                // Merge b into a (keep the smaller index as the cluster's slot).
                let (keep, gone) = (a.min(b), a.max(b));
                for c in 0..k {
                    if !active[c] || c == keep || c == gone {
                        continue;
                    }
                    let (s1, c1) = (sum[keep * k + c], cnt[keep * k + c]);
                    let (s2, c2) = (sum[gone * k + c], cnt[gone * k + c]);
                    let (s, n) = match linkage {
                        Linkage::Average => (s1 + s2, c1 + c2),
                        Linkage::Complete => {
                            if c1 == 0.0 || c2 == 0.0 {
                                (f64::INFINITY, 1.0)
                            } else {
                                (s1.max(s2), 1.0)
                            }
                        }
                    };
                    sum[keep * k + c] = s;
                    sum[c * k + keep] = s;
                    cnt[keep * k + c] = n;
                    cnt[c * k + keep] = n;
                }
                active[gone] = false;
                remaining -= 1;
                break;
            }
            chain.push(b);
        }
    }
    // Replay the merges in height order to number the dendrogram nodes.
    merges.sort_by(|x, y| x.2.total_cmp(&y.2));
    let mut uf = UnionFind::new(k);
    let mut node_of_root: Vec<usize> = (0..k).collect();
    for (a, b, h) in merges {
        let (ra, rb) = (uf.find(a), uf.find(b));
        let (na, nb) = (node_of_root[ra], node_of_root[rb]);
        let mut leaves = nodes[na].leaves.clone();
        leaves.extend_from_slice(&nodes[nb].leaves);
        leaves.sort_unstable();
        nodes.push(DendroNode {
            children: Some((na, nb)),
            height: h,
            leaves,
        });
        uf.union(ra, rb);
        let r = uf.find(ra);
        node_of_root[r] = nodes.len() - 1;
    }
    Dendrogram { nodes }
}

impl Dendrogram {
    /// The clusters obtained by cutting at `height` (merges at or below it are kept).
    pub(crate) fn cut(&self, height: f64) -> Vec<Vec<usize>> {
        let k = self.nodes.iter().filter(|n| n.children.is_none()).count();
        let mut uf = UnionFind::new(k);
        for n in &self.nodes {
            if let Some((a, b)) = n.children {
                if n.height <= height {
                    uf.union(self.nodes[a].leaves[0], self.nodes[b].leaves[0]);
                }
            }
        }
        uf.sets()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(k: usize, f: impl Fn(usize, usize) -> f64) -> Vec<f64> {
        let mut d = vec![f64::NAN; k * k];
        for i in 0..k {
            for j in 0..k {
                if i != j {
                    d[i * k + j] = f(i, j);
                }
            }
        }
        d
    }

    #[test]
    fn recovers_nested_clusters() {
        // Two groups of two pairs.
        let d = matrix(8, |i, j| {
            if i / 2 == j / 2 {
                1.0
            } else if i / 4 == j / 4 {
                5.0
            } else {
                20.0
            }
        });
        for linkage in [Linkage::Complete, Linkage::Average] {
            let den = cluster(&d, 8, linkage);
            assert_eq!(den.nodes.len(), 15);
            assert_eq!(den.cut(1.0).len(), 4);
            assert_eq!(den.cut(5.0), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
            assert_eq!(den.nodes.last().unwrap().leaves.len(), 8);
        }
    }

    #[test]
    fn average_linkage_ignores_missing_pairs() {
        let mut d = matrix(4, |i, j| if i / 2 == j / 2 { 1.0 } else { 10.0 });
        d[2] = f64::NAN;
        d[8] = f64::NAN;
        let den = cluster(&d, 4, Linkage::Average);
        assert_eq!(den.cut(2.0), vec![vec![0, 1], vec![2, 3]]);
    }
}
