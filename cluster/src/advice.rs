//! Communicator-split advice: which ranks to group so that each group communicates within
//! the faster layers, as `MPI_Comm_split` colours.
//!
//! For every boundary between two layers, the ranks joined by pairs at or below it form
//! groups (connected components). A split is *clean* when every pair inside a group is in
//! those layers; it is advised only when it has more than one group and fewer groups than
//! ranks. Splits that give the same groups as a faster boundary are left out.

use serde::{Deserialize, Serialize};

use crate::layers::Layers;
use crate::ranks::Ranks;

/// One advised split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    /// The slowest layer inside a group (index into the layers).
    pub up_to_layer: usize,
    /// What that layer is explained by.
    pub within: String,
    /// Pairs inside a group are faster than this latency, µs (the boundary to the next
    /// layer).
    pub below_latency_us: f64,
    /// The groups, ascending, in order of their first rank.
    pub groups: Vec<Vec<usize>>,
    /// The colour of every rank (its group's index) for `MPI_Comm_split`.
    pub color: Vec<usize>,
    /// Whether every pair inside a group is in the layers up to `up_to_layer`.
    pub clean: bool,
    /// Whether the groups are exactly the hosts (what `MPI_COMM_TYPE_SHARED` gives).
    pub by_host: bool,
}

/// Minimal union–find over ranks.
struct Sets(Vec<usize>);

impl Sets {
    fn find(&mut self, x: usize) -> usize {
        let mut r = x;
        while self.0[r] != r {
            r = self.0[r];
        }
        let mut y = x;
        while self.0[y] != r {
            let next = self.0[y];
            self.0[y] = r;
            y = next;
        }
        r
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra.max(rb)] = ra.min(rb);
        }
    }
}

/// The advised splits of `layers` over `ranks` (see the [module documentation](self)).
#[must_use]
pub fn splits(layers: &Layers, ranks: &Ranks) -> Vec<Split> {
    let n = ranks.len();
    let k = layers.layers.len();
    let mut out: Vec<Split> = Vec::new();
    for up_to in 0..k.saturating_sub(1) {
        let mut sets = Sets((0..n).collect());
        for a in 0..n {
            for b in a + 1..n {
                if layers.of(a, b).is_some_and(|l| l <= up_to) {
                    sets.union(a, b);
                }
            }
        }
        let mut color = vec![usize::MAX; n];
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut root_group = vec![usize::MAX; n];
        for r in 0..n {
            let root = sets.find(r);
            if root_group[root] == usize::MAX {
                root_group[root] = groups.len();
                groups.push(Vec::new());
            }
            color[r] = root_group[root];
            groups[color[r]].push(r);
        }
        if groups.len() < 2 || groups.len() == n || out.iter().any(|s| s.groups == groups) {
            continue;
        }
        let clean = groups.iter().all(|g| {
            g.iter().enumerate().all(|(i, &a)| {
                g[i + 1..]
                    .iter()
                    .all(|&b| layers.of(a, b).is_some_and(|l| l <= up_to))
            })
        });
        let by_host = groups.len() == ranks.hosts().len()
            && groups
                .iter()
                .all(|g| g.iter().all(|&r| ranks.host_of(r) == ranks.host_of(g[0])));
        let below = (layers.layers[up_to].latency_range_us[1]
            * layers.layers[up_to + 1].latency_range_us[0])
            .sqrt();
        out.push(Split {
            up_to_layer: up_to,
            within: layers.layers[up_to].explained_by.clone(),
            below_latency_us: below,
            groups,
            color,
            clean,
            by_host,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::find_layers;
    use crate::layout::Relation;
    use crate::ranks::tests::bound_cluster;
    use topoprobe_model::LatencyMatrix;

    #[test]
    fn splits_by_socket_then_by_host() {
        let ranks = bound_cluster(2, 2, 2);
        let lat = LatencyMatrix::from_fn(8, |a, b| {
            Some(match ranks.relation(a, b) {
                Relation::Socket => 0.3,
                Relation::OtherSocket => 0.7,
                _ => 3.0,
            })
        });
        let layers = find_layers(&lat, &lat, &ranks);
        let s = splits(&layers, &ranks);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].groups,
            vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]
        );
        assert!(s[0].clean && !s[0].by_host);
        assert_eq!(s[1].color, vec![0, 0, 0, 0, 1, 1, 1, 1]);
        assert!(s[1].clean && s[1].by_host);
        assert_eq!(s[1].within, "other socket");
        assert!(s[1].below_latency_us > 0.7 && s[1].below_latency_us < 3.0);
    }
}
