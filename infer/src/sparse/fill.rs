//! Filling in the pairs that were not measured, from the discovered structure.
//!
//! Two contexts meet at the node whose children hold them apart. An unmeasured pair takes
//! the median of the measured pairs between the same two children (its *class pair*);
//! without any, the larger of the two children's latencies from the node's pivot (exact for
//! a tree of groups; the band-pair checks measured every child pair where it is not);
//! without those, the median of the measured pairs between the same two bands of that
//! node, or the latency of the farther of the two bands.

use std::collections::HashMap;

use topoprobe_model::{median_in_place, LatencyMatrix};

use super::discover::ModuleTree;
use super::meter::{Meter, PairValue};

/// Where two contexts meet: a node and the children holding each.
type Meet = (usize, usize, usize);

/// The class pairs of a structure with their measured values.
#[derive(Debug, Clone)]
pub(super) struct Fill<'t> {
    tree: &'t ModuleTree,
    /// Nodes from the root to each context's leaf (empty when the context is in none).
    paths: Vec<Vec<usize>>,
    /// Latency from each node's parent's pivot to its own pivot (0 for the pivot's leaf).
    row: Vec<Option<f64>>,
    /// Largest disagreement (log ratio) that counts as noise.
    tolerance: f64,
    by_child: HashMap<Meet, Vec<PairValue>>,
    by_band: HashMap<Meet, Vec<PairValue>>,
    /// For each child node, the measured pairs between it and children of its parent in
    /// bands closer to the pivot (all at one latency in a tree of groups).
    by_far: HashMap<usize, Vec<PairValue>>,
    /// The medians of `by_child`, `by_band` and `by_far`, once no more pairs are added.
    frozen: Option<Frozen>,
}

/// Medians of the class pairs, band pairs and far children.
#[derive(Debug, Clone)]
struct Frozen {
    child: HashMap<Meet, PairValue>,
    band: HashMap<Meet, PairValue>,
    far: HashMap<usize, PairValue>,
}

impl<'t> Fill<'t> {
    /// An index over `tree` holding no pair, with the pivots' rows measured by `meter`.
    fn new(tree: &'t ModuleTree, meter: &Meter<'_>, tolerance: f64) -> Self {
        let mut paths = vec![Vec::new(); meter.contexts()];
        let mut row = vec![None; tree.nodes.len()];
        let mut stack: Vec<Vec<usize>> = if tree.nodes.is_empty() {
            Vec::new()
        } else {
            vec![vec![0]]
        };
        while let Some(path) = stack.pop() {
            let Some(node) = path.last().and_then(|&id| tree.nodes.get(id)) else {
                continue;
            };
            if node.children.is_empty() {
                if let Some(slot) = node.members.first().and_then(|&x| paths.get_mut(x)) {
                    slot.clone_from(&path);
                }
            }
            for &c in &node.children {
                if let Some(child) = tree.nodes.get(c) {
                    row[c] = if child.pivot == node.pivot {
                        Some(0.0)
                    } else {
                        meter.known(node.pivot, child.pivot)
                    };
                }
                let mut p = path.clone();
                p.push(c);
                stack.push(p);
            }
        }
        Self {
            tree,
            paths,
            row,
            tolerance,
            by_child: HashMap::new(),
            by_band: HashMap::new(),
            by_far: HashMap::new(),
            frozen: None,
        }
    }

    /// An index over `tree` holding every pair measured by `meter`; disagreements up to
    /// `tolerance` (log ratio) count as noise.
    pub(super) fn from_meter(tree: &'t ModuleTree, meter: &Meter<'_>, tolerance: f64) -> Self {
        let mut fill = Self::new(tree, meter, tolerance);
        for ((a, b), v) in meter.measured() {
            fill.add(a, b, v);
        }
        fill
    }

    /// Where `a` and `b` meet: the node, and its children holding `a` and `b`.
    fn meet(&self, a: usize, b: usize) -> Option<Meet> {
        let (pa, pb) = (self.paths.get(a)?, self.paths.get(b)?);
        let k = pa.iter().zip(pb).take_while(|(x, y)| x == y).count();
        let node = *pa.get(k.checked_sub(1)?)?;
        Some((node, *pa.get(k)?, *pb.get(k)?))
    }

    /// The band (in the meeting node) of a child node.
    fn band(&self, child: usize) -> usize {
        self.tree.nodes.get(child).map_or(0, |n| n.band)
    }

    /// Records a measured pair.
    pub(super) fn add(&mut self, a: usize, b: usize, value: PairValue) {
        let Some((node, ca, cb)) = self.meet(a, b) else {
            return;
        };
        let (ra, rb) = (self.band(ca), self.band(cb));
        self.by_child
            .entry((node, ca.min(cb), ca.max(cb)))
            .or_default()
            .push(value);
        self.by_band
            .entry((node, ra.min(rb), ra.max(rb)))
            .or_default()
            .push(value);
        if let Some(far) = self.far_child(node, ca, cb) {
            self.by_far.entry(far).or_default().push(value);
        }
    }

    /// Of two children in different bands, the one in the farther band.
    fn far_child(&self, node: usize, ca: usize, cb: usize) -> Option<usize> {
        let levels = &self.tree.nodes.get(node)?.levels;
        let la = *levels.get(self.band(ca))?;
        let lb = *levels.get(self.band(cb))?;
        if !(la.is_finite() && lb.is_finite()) || self.band(ca) == self.band(cb) {
            return None;
        }
        Some(if la > lb { ca } else { cb })
    }

    /// Whether the bands of two children were found irregular (each child pair has its own
    /// value) or are one band.
    fn own_values(&self, node: usize, ca: usize, cb: usize) -> bool {
        let (ra, rb) = (self.band(ca), self.band(cb));
        ra == rb
            || self
                .tree
                .nodes
                .get(node)
                .is_some_and(|n| n.irregular.contains(&(ra.min(rb), ra.max(rb))))
    }

    /// The class pair of `a` and `b`: the meeting node and its two children (ordered).
    pub(super) fn class_pair(&self, a: usize, b: usize) -> Option<Meet> {
        self.meet(a, b)
            .map(|(node, ca, cb)| (node, ca.min(cb), ca.max(cb)))
    }

    /// Members of a node.
    pub(super) fn members(&self, node: usize) -> &[usize] {
        self.tree.nodes.get(node).map_or(&[], |n| &n.members)
    }

    /// The value the structure gives the pair of `a` and `b`. Between two bands that
    /// follow the nested-bands prediction: the median of the measured pairs between the
    /// farther child and any child of a closer band (the pivot's row to it, mostly), so that
    /// all the contexts the structure holds equivalent get the same value. Otherwise: the
    /// median of the measured pairs of its class pair; without any, the nested-bands value;
    /// without that, the median of the band pair, or the farther band's latency.
    pub(super) fn predict(&self, a: usize, b: usize) -> Option<PairValue> {
        let (node, ca, cb) = self.meet(a, b)?;
        let own = self.child_value(node, ca, cb);
        let far = self.far_value(node, ca, cb);
        match (own, far) {
            (Some(o), Some(f)) if self.own_values(node, ca, cb) => {
                // Within the noise of the nested-bands value, take it: contexts held
                // equivalent get the same values.
                let same = self.far_child(node, ca, cb).is_some()
                    && (o.value / f.value).ln().abs() <= self.tolerance;
                return Some(if same { f } else { o });
            }
            (_, Some(f)) if !self.own_values(node, ca, cb) => return Some(f),
            (Some(o), _) => return Some(o),
            (None, Some(f)) => return Some(f),
            (None, None) => {}
        }
        let (ra, rb) = (self.band(ca), self.band(cb));
        if let Some(v) = self.band_value(node, ra, rb) {
            return Some(v);
        }
        let level = *self.tree.nodes.get(node)?.levels.get(ra.max(rb))?;
        (level.is_finite() && level > 0.0).then_some(PairValue {
            value: level,
            spread: 0.0,
            noisy: false,
        })
    }

    /// The nested-bands value of two children: the median of the measured pairs between the
    /// farther one and closer bands; without any, the larger of the pivot's latencies to
    /// them.
    fn far_value(&self, node: usize, ca: usize, cb: usize) -> Option<PairValue> {
        if let Some(far) = self.far_child(node, ca, cb) {
            let v = match &self.frozen {
                Some(f) => f.far.get(&far).copied(),
                None => self.by_far.get(&far).and_then(|v| summary(v)),
            };
            if v.is_some() {
                return v;
            }
        }
        let (x, y) = ((*self.row.get(ca)?)?, (*self.row.get(cb)?)?);
        Some(PairValue {
            value: x.max(y),
            spread: 0.0,
            noisy: false,
        })
    }

    fn child_value(&self, node: usize, ca: usize, cb: usize) -> Option<PairValue> {
        let key = (node, ca.min(cb), ca.max(cb));
        match &self.frozen {
            Some(f) => f.child.get(&key).copied(),
            None => self.by_child.get(&key).and_then(|v| summary(v)),
        }
    }

    fn band_value(&self, node: usize, ra: usize, rb: usize) -> Option<PairValue> {
        let key = (node, ra.min(rb), ra.max(rb));
        match &self.frozen {
            Some(f) => f.band.get(&key).copied(),
            None => self.by_band.get(&key).and_then(|v| summary(v)),
        }
    }

    /// Computes every median once (no more pairs are added).
    fn freeze(&mut self) {
        fn all<K: Copy + Eq + std::hash::Hash>(
            m: &HashMap<K, Vec<PairValue>>,
        ) -> HashMap<K, PairValue> {
            m.iter()
                .filter_map(|(&k, v)| summary(v).map(|s| (k, s)))
                .collect()
        }
        self.frozen = Some(Frozen {
            child: all(&self.by_child),
            band: all(&self.by_band),
            far: all(&self.by_far),
        });
    }
}

/// Median value and spread of a class pair's measured pairs: of its accepted pairs when it
/// has any (noisy pairs count only where nothing else was measured).
fn summary(values: &[PairValue]) -> Option<PairValue> {
    let noisy = values.iter().all(|p| p.noisy);
    let used = values.iter().filter(|p| noisy || !p.noisy);
    let mut v: Vec<f64> = used.clone().map(|p| p.value).collect();
    let mut s: Vec<f64> = used.map(|p| p.spread).collect();
    Some(PairValue {
        value: median_in_place(&mut v)?,
        spread: median_in_place(&mut s)?,
        noisy,
    })
}

/// The complete table, with the spread table and the table of measured pairs only.
///
/// Every pair takes the value of its class pair ([`Fill::predict`]): contexts the structure
/// holds equivalent get exactly the same values, so that no context looks different from
/// its equivalents merely because more of its own pairs were measured. A measured pair that
/// disagrees with its class pair by more than `tolerance` (log ratio) keeps its own value,
/// unless it is noisy: a noisy pair never stands apart from its class on its own.
pub(super) fn tables(
    tree: &ModuleTree,
    meter: &Meter<'_>,
    tolerance: f64,
) -> (LatencyMatrix, LatencyMatrix, LatencyMatrix) {
    let n = meter.contexts();
    let mut fill = Fill::from_meter(tree, meter, tolerance);
    fill.freeze();
    let mut latency = LatencyMatrix::empty(n);
    let mut spread = LatencyMatrix::empty(n);
    let mut measured = LatencyMatrix::empty(n);
    for a in 0..n {
        for b in a + 1..n {
            let own = meter.pair(a, b);
            if let Some(p) = own {
                set(&mut measured, a, b, Some(p.value));
            }
            let class = fill.predict(a, b);
            let value = match (own, class) {
                (Some(o), Some(c)) if !o.noisy && (o.value / c.value).ln().abs() > tolerance => {
                    Some(o)
                }
                (o, c) => c.or(o),
            };
            if let Some(p) = value {
                set(&mut latency, a, b, Some(p.value));
                set(&mut spread, a, b, Some(p.spread));
            }
        }
    }
    (latency, spread, measured)
}

fn set(m: &mut LatencyMatrix, a: usize, b: usize, v: Option<f64>) {
    m.set(a, b, v);
    m.set(b, a, v);
}
