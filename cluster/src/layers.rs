//! Communication layers (Servet §III-D): sets of rank pairs whose latencies are alike,
//! found by the clustering the core-level inference uses for its latency classes
//! ([`topoprobe_infer::layers::classify`]), each explained by how its pairs are related
//! in the nodes' descriptions (same core, same socket, …, inter-node).

use serde::{Deserialize, Serialize};
use topoprobe_infer::layers::classify;
use topoprobe_model::{LatencyMatrix, LatencySummary};

use crate::layout::Relation;
use crate::ranks::Ranks;

/// How many pairs of a layer have one relation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationCount {
    /// The relation's label (`same socket`, `inter-node`, …).
    pub relation: String,
    /// Pairs of the layer with it.
    pub pairs: usize,
}

/// One communication layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    /// Median one-way latency of its pairs, µs.
    pub latency_us: f64,
    /// Smallest and largest latency of its pairs, µs.
    pub latency_range_us: [f64; 2],
    /// Median bandwidth of its pairs, GB/s, when measured.
    pub bandwidth_gbps: Option<f64>,
    /// Number of rank pairs in it.
    pub pairs: usize,
    /// Of those, pairs whose latency was measured (the others were filled in).
    pub measured_pairs: usize,
    /// What explains it: the relations of its pairs, closest first, joined by ` or `.
    pub explained_by: String,
    /// Whether the descriptions tell it apart: none of its relations occurs in another
    /// layer. When false, [`Layer::note`] says why.
    pub explained: bool,
    /// Why the layer is not fully explained, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Its pairs by relation, closest first.
    pub relations: Vec<RelationCount>,
    /// A pair of the layer whose latency was measured, closest to the layer's median.
    pub example: Option<[usize; 2]>,
}

/// The layers of a table and the layer of every pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Layers {
    /// The layers, fastest first.
    pub layers: Vec<Layer>,
    n: usize,
    of: Vec<Option<usize>>,
}

impl Layers {
    /// The layer of the pair `(a, b)`; `None` on the diagonal, out of range or for a pair
    /// without latency.
    #[must_use]
    pub fn of(&self, a: usize, b: usize) -> Option<usize> {
        if a >= self.n || b >= self.n {
            return None;
        }
        self.of[a * self.n + b]
    }

    /// The layer of every pair as rows (`None` on the diagonal).
    #[must_use]
    pub fn rows(&self) -> Vec<Vec<Option<usize>>> {
        self.of.chunks(self.n.max(1)).map(<[_]>::to_vec).collect()
    }

    /// Sets every layer's bandwidth to the median of its pairs' bandwidths.
    pub fn set_bandwidth(&mut self, bandwidth: &LatencyMatrix) {
        for (k, layer) in self.layers.iter_mut().enumerate() {
            let values = (0..self.n).flat_map(|a| {
                let of = &self.of;
                let n = self.n;
                (a + 1..n)
                    .filter(move |&b| of[a * n + b] == Some(k))
                    .filter_map(move |b| bandwidth.get(a, b))
            });
            layer.bandwidth_gbps = LatencySummary::of(values).map(|s| s.median);
        }
    }
}

/// Finds the layers of a latency table (µs, symmetric: the upper triangle is used) and
/// explains them with the ranks' relations. `measured` tells measured pairs from filled-in
/// ones.
#[must_use]
pub fn find_layers(latency: &LatencyMatrix, measured: &LatencyMatrix, ranks: &Ranks) -> Layers {
    let n = latency.len();
    let pairs: Vec<(usize, usize, f64)> = (0..n)
        .flat_map(|a| (a + 1..n).filter_map(move |b| latency.get(a, b).map(|v| (a, b, v))))
        .filter(|&(_, _, v)| v.is_finite() && v > 0.0)
        .collect();
    let values: Vec<f64> = pairs.iter().map(|p| p.2).collect();
    let classes = classify(&values, n);
    let k = classes.len();
    let mut of = vec![None; n * n];
    let mut members: Vec<Vec<(usize, usize, f64)>> = vec![Vec::new(); k];
    for &(a, b, v) in &pairs {
        if let Some(c) = classes.class_of(v) {
            of[a * n + b] = Some(c);
            of[b * n + a] = Some(c);
            members[c].push((a, b, v));
        }
    }
    // Relations of every layer, and in how many layers each relation occurs.
    let counts: Vec<Vec<usize>> = members
        .iter()
        .map(|m| {
            let mut c = vec![0; Relation::ALL.len()];
            for &(a, b, _) in m {
                c[ranks.relation(a, b) as usize] += 1;
            }
            c
        })
        .collect();
    let layers_with = |r: usize| counts.iter().filter(|c| c[r] > 0).count();
    let layers = members
        .iter()
        .zip(&counts)
        .map(|(m, c)| {
            let summary = LatencySummary::of(m.iter().map(|p| p.2));
            let median = summary.map_or(0.0, |s| s.median);
            let present: Vec<Relation> = Relation::ALL
                .into_iter()
                .filter(|&r| c[r as usize] > 0)
                .collect();
            let shared: Vec<Relation> = present
                .iter()
                .copied()
                .filter(|&r| layers_with(r as usize) > 1)
                .collect();
            let note = (!shared.is_empty()).then(|| {
                let names: Vec<&str> = shared.iter().map(|r| r.label()).collect();
                let mut s = format!(
                    "{} pairs also fall in other layers: the descriptions do not tell these layers apart",
                    names.join(" and ")
                );
                if shared.contains(&Relation::InterNode) {
                    s.push_str(" (inter-node: another switch or route, or a loaded link)");
                } else if shared.contains(&Relation::Node) {
                    s.push_str(" (ranks not bound, or nodes without description)");
                }
                s
            });
            let example = m
                .iter()
                .filter(|&&(a, b, _)| measured.get(a, b).is_some())
                .min_by(|x, y| (x.2 - median).abs().total_cmp(&(y.2 - median).abs()))
                .map(|&(a, b, _)| [a, b]);
            Layer {
                latency_us: median,
                latency_range_us: summary.map_or([0.0, 0.0], |s| [s.min, s.max]),
                bandwidth_gbps: None,
                pairs: m.len(),
                measured_pairs: m
                    .iter()
                    .filter(|&&(a, b, _)| measured.get(a, b).is_some())
                    .count(),
                explained_by: present
                    .iter()
                    .map(|r| r.label())
                    .collect::<Vec<_>>()
                    .join(" or "),
                explained: shared.is_empty(),
                note,
                relations: present
                    .iter()
                    .map(|&r| RelationCount {
                        relation: r.label().into(),
                        pairs: c[r as usize],
                    })
                    .collect(),
                example,
            }
        })
        .collect();
    Layers { layers, n, of }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::tests::bound_cluster;

    #[test]
    fn three_layers_explained_by_socket_and_node() {
        // 2 hosts × 2 sockets × 4 cores.
        let ranks = bound_cluster(2, 2, 4);
        let lat = LatencyMatrix::from_fn(16, |a, b| {
            Some(match ranks.relation(a, b) {
                Relation::Socket => 0.3 + 0.001 * (a + b) as f64,
                Relation::OtherSocket => 0.7,
                _ => 3.0,
            })
        });
        let l = find_layers(&lat, &lat, &ranks);
        let names: Vec<&str> = l.layers.iter().map(|x| x.explained_by.as_str()).collect();
        assert_eq!(names, ["same socket", "other socket", "inter-node"]);
        assert!(l.layers.iter().all(|x| x.explained && x.note.is_none()));
        assert_eq!(l.layers[2].pairs, 64);
        assert_eq!(l.layers[0].pairs, 2 * 2 * 6);
        assert_eq!(l.of(0, 8), Some(2));
        assert_eq!(l.of(3, 3), None);
        let ex = l.layers[1].example.unwrap();
        assert_eq!(ranks.relation(ex[0], ex[1]), Relation::OtherSocket);
    }

    #[test]
    fn a_relation_in_two_layers_is_not_explained() {
        // Two inter-node layers (a far switch for host 2) and one intra-node layer.
        let ranks = bound_cluster(3, 1, 4);
        let lat = LatencyMatrix::from_fn(12, |a, b| {
            Some(match (ranks.host_of(a), ranks.host_of(b)) {
                (x, y) if x == y => 0.4,
                (2, _) | (_, 2) => 9.0,
                _ => 3.0,
            })
        });
        let l = find_layers(&lat, &lat, &ranks);
        assert_eq!(l.layers.len(), 3);
        assert!(l.layers[0].explained);
        assert_eq!(l.layers[1].explained_by, "inter-node");
        assert!(!l.layers[2].explained);
        assert!(l.layers[2]
            .note
            .as_deref()
            .unwrap()
            .contains("another switch"));
    }
}
