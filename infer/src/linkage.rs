//! Hierarchical clustering primitives: union-find, and the nearest-neighbour-chain
//! algorithm for complete and average linkage (O(k²) time).

use crate::triangle::{self, Triangle};

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
    /// Number of leaves below.
    pub(crate) size: usize,
}

/// A dendrogram: leaves first, then merges in increasing height; the last node is the root.
#[derive(Debug, Clone)]
pub(crate) struct Dendrogram {
    pub(crate) nodes: Vec<DendroNode>,
}

/// Clusters the items of a symmetric dissimilarity table (NaN = unknown) with the
/// nearest-neighbour-chain algorithm: O(k²) time, the table itself as the working copy
/// (and a table of counts for average linkage where some pairs are unknown).
pub(crate) fn cluster(d: Triangle, linkage: Linkage) -> Dendrogram {
    let k = d.items();
    let mut nodes: Vec<DendroNode> = (0..k)
        .map(|_| DendroNode {
            children: None,
            height: 0.0,
            size: 1,
        })
        .collect();
    if k < 2 {
        return Dendrogram { nodes };
    }
    // Working dissimilarities: the complete linkage keeps the largest (infinite when a pair
    // is unknown); the average keeps sums, and counts where some pairs are unknown so that
    // it ignores them (where every pair is known, the count between two clusters is the
    // product of their sizes).
    let average = linkage == Linkage::Average;
    let mut sum = d.into_values();
    let mut cnt: Option<Vec<u32>> = (average && sum.iter().any(|v| v.is_nan()))
        .then(|| sum.iter().map(|v| u32::from(!v.is_nan())).collect());
    for v in sum.iter_mut().filter(|v| v.is_nan()) {
        *v = if average { 0.0 } else { f64::INFINITY };
    }
    let mut size = vec![1_u32; k];
    let at = |i: usize, j: usize| triangle::index(k, i, j);
    let dist = |sum: &[f64], cnt: Option<&[u32]>, size: &[u32], i: usize, j: usize| -> f64 {
        let s = sum[at(i, j)];
        if !average {
            return s;
        }
        let c = match cnt {
            Some(c) => f64::from(c[at(i, j)]),
            None => f64::from(size[i]) * f64::from(size[j]),
        };
        if c == 0.0 {
            f64::INFINITY
        } else {
            s / c
        }
    };
    let mut active = vec![true; k];
    let mut alive: Vec<usize> = (0..k).collect();
    let mut remaining = k;
    let mut chain: Vec<usize> = Vec::new();
    let mut merges: Vec<(usize, usize, f64)> = Vec::with_capacity(k - 1);
    while remaining > 1 {
        if chain.is_empty() {
            let first = alive.iter().copied().find(|&c| active[c]).unwrap_or(0);
            chain.push(first);
        }
        loop {
            let a = chain[chain.len() - 1];
            let prev = (chain.len() >= 2).then(|| chain[chain.len() - 2]);
            // Nearest active neighbour of a, preferring prev on ties.
            let mut best = prev;
            let mut best_d =
                prev.map_or(f64::INFINITY, |p| dist(&sum, cnt.as_deref(), &size, a, p));
            for &c in &alive {
                if c == a || Some(c) == prev {
                    continue;
                }
                let dc = dist(&sum, cnt.as_deref(), &size, a, c);
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
                for &c in &alive {
                    if c == keep || c == gone {
                        continue;
                    }
                    let (kc, gc) = (at(keep, c), at(gone, c));
                    if let Some(cnt) = cnt.as_mut() {
                        cnt[kc] += cnt[gc];
                    }
                    sum[kc] = if average {
                        sum[kc] + sum[gc]
                    } else {
                        sum[kc].max(sum[gc])
                    };
                }
                size[keep] += size[gone];
                active[gone] = false;
                alive.retain(|&c| c != gone);
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
        nodes.push(DendroNode {
            children: Some((na, nb)),
            height: h,
            size: nodes[na].size + nodes[nb].size,
        });
        uf.union(ra, rb);
        let r = uf.find(ra);
        node_of_root[r] = nodes.len() - 1;
    }
    Dendrogram { nodes }
}

impl Dendrogram {
    /// The leaves below a node, sorted.
    pub(crate) fn leaves(&self, node: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.nodes[node].size);
        let mut stack = vec![node];
        while let Some(x) = stack.pop() {
            match self.nodes[x].children {
                Some((a, b)) => {
                    stack.push(a);
                    stack.push(b);
                }
                None => out.push(x),
            }
        }
        out.sort_unstable();
        out
    }

    /// The `k` clusters left when the last `k - 1` merges are undone (every leaf alone when
    /// `k` is at least the number of leaves), each sorted, ordered by their first leaf.
    pub(crate) fn clusters(&self, k: usize) -> Vec<Vec<usize>> {
        let leaves = self.nodes.iter().filter(|n| n.children.is_none()).count();
        let merges = self.nodes.len() - leaves;
        let keep = merges.saturating_sub(k.saturating_sub(1));
        let mut uf = UnionFind::new(leaves);
        let mut leaf = vec![0_usize; self.nodes.len()];
        let mut done = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            leaf[i] = match n.children {
                None => i,
                Some((a, _)) => leaf[a],
            };
            if let Some((a, b)) = n.children {
                if done < keep {
                    uf.union(leaf[a], leaf[b]);
                }
                done += 1;
            }
        }
        uf.sets()
    }

    /// The clusters obtained by cutting at `height` (merges at or below it are kept).
    pub(crate) fn cut(&self, height: f64) -> Vec<Vec<usize>> {
        let k = self.nodes.iter().filter(|n| n.children.is_none()).count();
        let mut uf = UnionFind::new(k);
        // A leaf of every node, to union clusters by.
        let mut leaf = vec![0_usize; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            leaf[i] = match n.children {
                None => i,
                Some((a, _)) => leaf[a],
            };
            if let Some((a, b)) = n.children {
                if n.height <= height {
                    uf.union(leaf[a], leaf[b]);
                }
            }
        }
        uf.sets()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(k: usize, f: impl Fn(usize, usize) -> f64) -> Triangle {
        Triangle::from_fn(k, f)
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
            let den = cluster(d.clone(), linkage);
            assert_eq!(den.nodes.len(), 15);
            assert_eq!(den.cut(1.0).len(), 4);
            assert_eq!(den.cut(5.0), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
            assert_eq!(den.leaves(den.nodes.len() - 1).len(), 8);
            assert_eq!(den.nodes.last().unwrap().size, 8);
        }
    }

    #[test]
    fn undoing_the_last_merges_gives_k_clusters() {
        let d = matrix(8, |i, j| {
            if i / 2 == j / 2 {
                1.0
            } else if i / 4 == j / 4 {
                5.0
            } else {
                20.0
            }
        });
        let den = cluster(d, Linkage::Average);
        assert_eq!(den.clusters(1).len(), 1);
        assert_eq!(den.clusters(2), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(den.clusters(4).len(), 4);
        assert_eq!(den.clusters(9).len(), 8);
    }

    #[test]
    fn average_linkage_ignores_missing_pairs() {
        // The pair (0, 2) is unknown.
        let d = matrix(4, |i, j| match (i, j) {
            (0, 2) => f64::NAN,
            _ if i / 2 == j / 2 => 1.0,
            _ => 10.0,
        });
        let den = cluster(d, Linkage::Average);
        assert_eq!(den.cut(2.0), vec![vec![0, 1], vec![2, 3]]);
    }
}
