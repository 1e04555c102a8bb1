//! Top-down discovery of a machine's structure with few measurements: pivots, bands of
//! equal latency, modules inside bands (see the parent module's documentation).

use std::collections::{HashMap, HashSet};

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::meter::Meter;
use crate::InferError;
use topoprobe_model::median_in_place;

/// Smallest relative gap (log ratio) between two bands of a pivot's row.
const BAND_GAP_MIN: f64 = 0.08;
/// Two contexts of a band share a module when their latency is below this fraction of the
/// smaller of their latencies from the pivot: cores of a cluster, clusters of a socket and
/// sockets are at most about half as far from each other as from outsiders (EPYC's 120 ns
/// inside a socket against 230 ns across), while neighbours on a ring or mesh are at 70–90%
/// and sockets one link apart at 75% of two links.
const ADMIT_RATIO: f64 = 0.6;
/// Band gap in units of the estimated noise of a pair's value.
const BAND_GAP_NOISE: f64 = 5.0;
/// Smallest disagreement (log ratio) between a value and its prediction that counts.
const AGREE_MIN: f64 = 0.03;
/// Disagreement in units of the estimated noise.
const AGREE_NOISE: f64 = 5.0;
/// A value this far (log of 1.5) from what the structure predicts is measured again before
/// it is believed: an outlier (a preempted run), not a level.
pub(super) const OUTLIER_LN: f64 = 0.405;
/// Module pairs sampled per pair of bands to test the nested-bands prediction.
const BAND_PAIR_SAMPLES: usize = 2;
/// A band of at least this many modules, each a single context, is flat (the cores of a
/// socket without SMT, the ranks of one node): a context is then compared with
/// [`FLAT_TRIES`] modules only, its neighbours' at the learned strides first, instead of
/// with every one (k²/2 pairs for k contexts). The band-pair samples and the verification
/// pairs still check the band.
const FLAT_AFTER: usize = 6;
/// See [`FLAT_AFTER`].
const FLAT_TRIES: usize = 3;
/// Rounds of splitting modules that a witness does not see as one.
const REFINE_ROUNDS: usize = 3;
/// A module whose inside is slower than this fraction of its band's latency is loosely bound
/// (it may be several modules, close to each other but not to the pivot).
const LOOSE: f64 = 0.5;
/// In bands of at most this many modules, representatives of modules of different sizes
/// are confirmed apart (see `merge_close`).
const FEW_MODULES: usize = 4;
/// Bands of the root at most this large give the numbering strides to try first.
const BASE_STRIDE_BAND: usize = 16;

/// Log-ratio distance of two latencies.
pub(super) fn log_gap(a: f64, b: f64) -> f64 {
    (a / b).ln().abs()
}

/// Tolerances (log ratios) for the current noise.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tolerance {
    /// Gap between two bands of a row, and margin by which two contexts must be closer to
    /// each other than to the pivot to share a module.
    pub gap: f64,
    /// Disagreement between a value and its prediction.
    pub agree: f64,
}

impl Tolerance {
    /// Tolerances for values of relative error `noise`.
    pub(super) fn for_noise(noise: f64) -> Self {
        Self {
            gap: (BAND_GAP_NOISE * noise).max(BAND_GAP_MIN),
            agree: (AGREE_NOISE * noise).max(AGREE_MIN),
        }
    }
}

/// A node of the discovered structure: a pivot, and its other contexts grouped into bands
/// (by their latency from the pivot) and modules (by their latency to each other).
#[derive(Debug, Clone)]
pub(super) struct Node {
    /// Every context under this node.
    pub members: Vec<usize>,
    /// The context whose row split this node.
    pub pivot: usize,
    /// Child nodes: the pivot's leaf first, then the modules of every band.
    pub children: Vec<usize>,
    /// Index of this node's band in its parent (0 for the parent's pivot leaf).
    pub band: usize,
    /// Latency of each band from the pivot (index 0: the pivot itself; `NaN`: unmeasured).
    pub levels: Vec<f64>,
    /// Pairs of bands (indices as in `levels`, ascending) whose module pairs disagree with
    /// the nested-bands prediction: each module pair has its own value.
    pub irregular: Vec<(usize, usize)>,
}

/// The discovered structure: nodes, the root first.
#[derive(Debug, Clone, Default)]
pub(super) struct ModuleTree {
    /// Every node; node 0 is the root.
    pub nodes: Vec<Node>,
}

/// A module of a band: contexts closer to each other than to the band's latency.
#[derive(Debug, Clone)]
struct Module {
    rep: usize,
    members: Vec<usize>,
}

/// A band of a pivot's row: contexts at one latency from the pivot, grouped into modules.
#[derive(Debug, Clone)]
struct Band {
    /// The pivot.
    pivot: usize,
    /// Median latency from the pivot (`NaN` for the contexts it could not be measured to).
    level: f64,
    /// Smallest and largest latency from the pivot.
    range: (f64, f64),
    modules: Vec<Module>,
    /// Context → index of its module.
    of: HashMap<usize, usize>,
    /// Contexts of the band not yet placed in a module.
    pending: Vec<usize>,
}

impl Band {
    fn new(pivot: usize, level: f64, range: (f64, f64)) -> Self {
        Self {
            pivot,
            level,
            range,
            modules: Vec::new(),
            of: HashMap::new(),
            pending: Vec::new(),
        }
    }

    fn join(&mut self, m: usize, x: usize) {
        if let Some(module) = self.modules.get_mut(m) {
            module.members.push(x);
            self.of.insert(x, m);
        }
    }

    fn open(&mut self, x: usize) {
        self.of.insert(x, self.modules.len());
        self.modules.push(Module {
            rep: x,
            members: vec![x],
        });
    }

    fn remove(&mut self, x: usize) {
        if let Some(m) = self.of.remove(&x) {
            if let Some(module) = self.modules.get_mut(m) {
                module.members.retain(|&y| y != x);
            }
        }
    }

    /// Whether a latency from the pivot falls in this band (within `tol.gap` of its range).
    fn holds(&self, v: f64, tol: Tolerance) -> bool {
        let (lo, hi) = self.range;
        lo.is_finite()
            && hi.is_finite()
            && v.ln() >= lo.ln() - tol.gap
            && v.ln() <= hi.ln() + tol.gap
    }

    /// Whether the band is flat: at least [`FLAT_AFTER`] modules, each a single context.
    fn is_flat(&self) -> bool {
        let live = self.live();
        live.len() >= FLAT_AFTER && live.iter().all(|&m| self.modules[m].members.len() == 1)
    }

    /// Indices of the modules that still have members.
    fn live(&self) -> Vec<usize> {
        (0..self.modules.len())
            .filter(|&m| !self.modules[m].members.is_empty())
            .collect()
    }

    /// The most common module size (the larger on ties).
    fn mode(&self) -> usize {
        let mut count: HashMap<usize, usize> = HashMap::new();
        for m in self.live() {
            *count.entry(self.modules[m].members.len()).or_default() += 1;
        }
        count
            .into_iter()
            .max_by_key(|&(size, c)| (c, size))
            .map_or(0, |(size, _)| size)
    }
}

/// Discovers the structure top-down.
pub(super) struct Discovery<'m, 'a> {
    meter: &'m mut Meter<'a>,
    hint_of: Vec<Option<usize>>,
    hint_sets: Vec<Vec<usize>>,
    base_strides: Vec<usize>,
    learned: HashMap<usize, usize>,
    rng: ChaCha8Rng,
    tree: ModuleTree,
}

impl<'m, 'a> Discovery<'m, 'a> {
    /// A discovery measuring through `meter`, trying the sets of `hint` first.
    pub(super) fn new(
        meter: &'m mut Meter<'a>,
        hint: Option<&[Vec<usize>]>,
        rng: ChaCha8Rng,
    ) -> Self {
        let n = meter.contexts();
        let mut hint_of = vec![None; n];
        let mut hint_sets = Vec::new();
        for set in hint.unwrap_or(&[]) {
            let id = hint_sets.len();
            let mut kept = Vec::new();
            for &x in set {
                if let Some(slot) = hint_of.get_mut(x).filter(|s| s.is_none()) {
                    *slot = Some(id);
                    kept.push(x);
                }
            }
            hint_sets.push(kept);
        }
        Self {
            meter,
            hint_of,
            hint_sets,
            base_strides: Vec::new(),
            learned: HashMap::new(),
            rng,
            tree: ModuleTree::default(),
        }
    }

    /// Discovers the structure of all contexts, pivoting first on context 0.
    ///
    /// # Errors
    ///
    /// Returns [`InferError::Probe`] when the probe fails.
    pub(super) fn run(mut self) -> Result<ModuleTree, InferError> {
        let all: Vec<usize> = (0..self.meter.contexts()).collect();
        self.build(0, all)?;
        Ok(self.tree)
    }

    /// The tolerances for the noise measured so far.
    fn tolerance(&mut self) -> Tolerance {
        Tolerance::for_noise(self.meter.noise())
    }

    fn push(&mut self, node: Node) -> usize {
        self.tree.nodes.push(node);
        self.tree.nodes.len() - 1
    }

    /// Builds the node of `members` (which contain `pivot`) and, recursively, its children;
    /// returns its index.
    fn build(&mut self, pivot: usize, members: Vec<usize>) -> Result<usize, InferError> {
        let root = self.tree.nodes.is_empty();
        let id = self.push(Node {
            members: members.clone(),
            pivot,
            children: Vec::new(),
            band: 0,
            levels: vec![0.0],
            irregular: Vec::new(),
        });
        if members.len() < 2 {
            return Ok(id);
        }
        let mut bands = self.bands(pivot, &members)?;
        if root {
            self.learn_base_strides(pivot, &bands);
        }
        let tol = self.tolerance();
        let mut moved = Vec::new();
        for band in &mut bands {
            moved.extend(self.split(band, tol)?);
        }
        self.relocate(&mut bands, moved, tol)?;
        self.check_modules(&mut bands, tol)?;
        let mut irregular = self.check_band_pairs(&bands, tol)?;
        for _ in 0..REFINE_ROUNDS {
            let mut changed = false;
            for band in &mut bands {
                changed |= self.merge_close(band, tol)?;
            }
            changed |= self.refine(&mut bands, &irregular, tol)?;
            if !changed {
                break;
            }
            irregular = self.check_band_pairs(&bands, tol)?;
        }
        self.tree.nodes[id].irregular = irregular;
        self.attach(id, pivot, &bands)
    }

    /// Tests the modules of irregular band pairs against the other band's modules as
    /// witnesses, and splits a module that a witness does not see as one (two sockets one
    /// link apart and two links from the pivot look like one module from the pivot). Only
    /// loosely bound modules are tested: those whose inside is slower than half the band's
    /// latency. Returns whether a module was split.
    fn refine(
        &mut self,
        bands: &mut [Band],
        irregular: &[(usize, usize)],
        tol: Tolerance,
    ) -> Result<bool, InferError> {
        let mut changed = false;
        for &(i, j) in irregular {
            let (i, j) = (i - 1, j - 1);
            for (t, w) in [(j, i), (i, j)] {
                let witnesses: Vec<usize> = bands[w]
                    .live()
                    .into_iter()
                    .map(|m| bands[w].modules[m].rep)
                    .collect();
                changed |= self.refine_band(&mut bands[t], &witnesses, tol)?;
                if i == j {
                    break;
                }
            }
        }
        Ok(changed)
    }

    /// Splits the loosely bound modules of `band` that one of `witnesses` does not see at
    /// one latency, by that witness's latencies to their members.
    fn refine_band(
        &mut self,
        band: &mut Band,
        witnesses: &[usize],
        tol: Tolerance,
    ) -> Result<bool, InferError> {
        let mut changed = false;
        for m in band.live() {
            let probes = self.loose_probes(band, m, tol);
            if probes.is_empty() {
                continue;
            }
            let rep = band.modules[m].rep;
            let outside: Vec<usize> = witnesses
                .iter()
                .copied()
                .filter(|w| !band.modules[m].members.contains(w))
                .collect();
            for w in outside {
                if self.sees_apart(w, rep, &probes, tol)? && self.split_module(band, m, w, tol)? {
                    changed = true;
                    break;
                }
            }
        }
        Ok(changed)
    }

    /// Members of a loosely bound module to compare with its representative: two of each
    /// class of the representative's latencies inside it that is slower than half the
    /// band's latency (none for a tightly bound module).
    fn loose_probes(&self, band: &Band, m: usize, tol: Tolerance) -> Vec<usize> {
        let module = &band.modules[m];
        let floor = band.range.0 * LOOSE;
        let mut inside: Vec<(usize, f64)> = module
            .members
            .iter()
            .filter(|&&y| y != module.rep)
            .filter_map(|&y| self.meter.known(module.rep, y).map(|v| (y, v)))
            .filter(|&(_, v)| v > floor)
            .collect();
        inside.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut probes = Vec::new();
        let mut last = f64::NAN;
        for (k, &(y, v)) in inside.iter().enumerate() {
            let next_gap = inside.get(k + 1).is_none_or(|n| log_gap(n.1, v) > tol.gap);
            let edge = probes.is_empty() || log_gap(v, last) > tol.gap || next_gap;
            if edge && !probes.contains(&y) {
                probes.push(y);
            }
            last = v;
        }
        probes
    }

    /// Whether witness `w` sees one of `probes` at another latency than `rep`: farther
    /// apart than two bands of a row (`tol.gap`), measured again before it counts. Two
    /// readings of one latency differ by more than `tol.agree` often enough among the many
    /// members of a large module (a socket seen from another CCX).
    fn sees_apart(
        &mut self,
        w: usize,
        rep: usize,
        probes: &[usize],
        tol: Tolerance,
    ) -> Result<bool, InferError> {
        let Some(base) = self.meter.value(w, rep)? else {
            return Ok(false);
        };
        for &y in probes {
            let Some(mut v) = self.meter.value(w, y)? else {
                continue;
            };
            if log_gap(v, base) > tol.gap {
                v = self.meter.confirm(w, y, tol.agree)?.unwrap_or(v);
            }
            if log_gap(v, base) > tol.gap {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Splits module `m` of `band` by witness `w`'s latencies to its members, clustered like
    /// a pivot's row into classes apart by more than `tol.gap` (a value alone at its
    /// latency measured again first: one outlier must not make a module): the class of the
    /// representative stays, each other class becomes a module. Returns whether the module
    /// was split. Comparing each member with the witness's single reading of the
    /// representative instead split a socket at random where the two latencies differ by
    /// a few noise widths only (`epyc_2x64_home_node`).
    fn split_module(
        &mut self,
        band: &mut Band,
        m: usize,
        w: usize,
        tol: Tolerance,
    ) -> Result<bool, InferError> {
        let members = band.modules[m].members.clone();
        let rep = band.modules[m].rep;
        let mut row = Vec::new();
        for &y in &members {
            if let Some(v) = self.meter.value(w, y)? {
                row.push((y, v));
            }
        }
        let isolated: Vec<usize> = row
            .iter()
            .filter(|&&(y, v)| !row.iter().any(|&(z, u)| z != y && log_gap(u, v) <= tol.gap))
            .map(|&(y, _)| y)
            .collect();
        if row.len() >= 3 && !isolated.is_empty() {
            for &y in &isolated {
                self.meter.confirm(w, y, tol.agree)?;
            }
            row = row
                .into_iter()
                .map(|(y, v)| (y, self.meter.known(w, y).unwrap_or(v)))
                .collect();
        }
        let groups = runs(row, tol.gap);
        let Some(home) = groups.iter().position(|g| g.1.contains(&rep)) else {
            return Ok(false);
        };
        if groups.len() < 2 {
            return Ok(false);
        }
        for (k, (_, group)) in groups.into_iter().enumerate() {
            if k == home {
                continue;
            }
            let first = band.modules.len();
            for (i, &y) in group.iter().enumerate() {
                band.remove(y);
                if i == 0 {
                    band.open(y);
                } else {
                    band.join(first, y);
                }
            }
        }
        Ok(true)
    }

    /// Creates the pivot's leaf and the children of every module under node `id`.
    fn attach(&mut self, id: usize, pivot: usize, bands: &[Band]) -> Result<usize, InferError> {
        let leaf = self.push(Node {
            members: vec![pivot],
            pivot,
            children: Vec::new(),
            band: 0,
            levels: vec![0.0],
            irregular: Vec::new(),
        });
        let mut children = vec![leaf];
        let mut levels = vec![0.0];
        for (r, band) in bands.iter().enumerate() {
            levels.push(band.level);
            for m in band.live() {
                let module = &band.modules[m];
                let child = self.build(module.rep, module.members.clone())?;
                self.tree.nodes[child].band = r + 1;
                children.push(child);
            }
        }
        let node = &mut self.tree.nodes[id];
        node.children = children;
        node.levels = levels;
        Ok(id)
    }

    /// The pivot's row over `members`, split into bands of equal latency (ascending, the
    /// contexts it could not be measured to last, at `NaN`); the bands' contexts are in
    /// their `of` maps, not yet in modules. A band of a single context is measured again
    /// first: one slow measurement must not make a level.
    fn bands(&mut self, pivot: usize, members: &[usize]) -> Result<Vec<Band>, InferError> {
        let mut missing = Vec::new();
        for &x in members.iter().filter(|&&x| x != pivot) {
            if self.meter.value(pivot, x)?.is_none() {
                missing.push(x);
            }
        }
        self.meter.sync()?;
        let tol = self.tolerance();
        let mut bands = self.classes(pivot, members, tol.gap);
        // Below the root, the parent checked the admissions (`check_admissions`), but not
        // the pivot's own readings: a lone context slower than all the others (a pivot
        // sees no single member of its own module beyond the rest) is measured again.
        let root = self.tree.nodes.len() == 1;
        if members.len() >= 3 {
            let last = bands.len().saturating_sub(1);
            let lonely: Vec<usize> = bands
                .iter()
                .enumerate()
                .filter(|&(i, r)| r.pending.len() == 1 && (root || (i == last && i > 0)))
                .flat_map(|(_, r)| r.pending.iter().copied())
                .collect();
            for &x in &lonely {
                self.meter.confirm(pivot, x, tol.agree)?;
            }
            if !lonely.is_empty() {
                bands = self.classes(pivot, members, tol.gap);
            }
        }
        if !missing.is_empty() {
            let mut band = Band::new(pivot, f64::NAN, (f64::NAN, f64::NAN));
            band.pending = missing;
            bands.push(band);
        }
        Ok(bands)
    }

    /// The measured members of the pivot's row, clustered where consecutive values differ by
    /// more than `gap` (log ratio); each class with its median latency.
    fn classes(&self, pivot: usize, members: &[usize], gap: f64) -> Vec<Band> {
        let row: Vec<(usize, f64)> = members
            .iter()
            .filter(|&&x| x != pivot)
            .filter_map(|&x| self.meter.known(pivot, x).map(|v| (x, v)))
            .collect();
        runs(row, gap)
            .into_iter()
            .map(|(mut vs, xs)| {
                let range = (
                    vs.first().copied().unwrap_or(f64::NAN),
                    vs.last().copied().unwrap_or(f64::NAN),
                );
                let mut band =
                    Band::new(pivot, median_in_place(&mut vs).unwrap_or(f64::NAN), range);
                band.pending = xs;
                band
            })
            .collect()
    }

    /// Strides of the numbering suggested by the root's innermost band (an SMT sibling at
    /// `+N/2`, consecutive strands, ...).
    fn learn_base_strides(&mut self, pivot: usize, bands: &[Band]) {
        if let Some(first) = bands
            .first()
            .filter(|r| r.pending.len() <= BASE_STRIDE_BAND)
        {
            self.base_strides = first.pending.iter().map(|&x| x.abs_diff(pivot)).collect();
        }
    }

    /// Splits a band into modules, placing its contexts one by one in numbering order;
    /// returns the contexts that belong to another band, with their latency from the pivot.
    fn split(&mut self, band: &mut Band, tol: Tolerance) -> Result<Vec<(usize, f64)>, InferError> {
        let mut elems = std::mem::take(&mut band.pending);
        elems.sort_unstable();
        let mut moved = Vec::new();
        for x in elems {
            moved.extend(self.place(band, x, tol, true)?);
        }
        Ok(moved)
    }

    /// Places contexts that left their band into the band their latency from the pivot
    /// falls in, or into a new band.
    fn relocate(
        &mut self,
        bands: &mut Vec<Band>,
        moved: Vec<(usize, f64)>,
        tol: Tolerance,
    ) -> Result<(), InferError> {
        for (x, v) in moved {
            if let Some(t) = bands.iter().position(|band| band.holds(v, tol)) {
                self.place(&mut bands[t], x, tol, false)?;
            } else if let Some(pivot) = bands.first().map(|r| r.pivot) {
                let mut band = Band::new(pivot, v, (v, v));
                band.open(x);
                bands.push(band);
            }
        }
        Ok(())
    }

    /// The latency below which `x` and `y` share a module of `band`: a margin below the
    /// smaller of their latencies from the pivot (log; `None` when one is unmeasured).
    fn limit(&self, band: &Band, x: usize, y: usize) -> Option<f64> {
        let lx = self.meter.known(band.pivot, x)?;
        let ly = self.meter.known(band.pivot, y)?;
        Some((lx.min(ly) * ADMIT_RATIO).ln())
    }

    /// Whether `x` is closer to `y` than the pivot is to either (by the margin).
    fn close(&mut self, band: &Band, x: usize, y: usize) -> Result<bool, InferError> {
        let Some(limit) = self.limit(band, x, y) else {
            return Ok(false);
        };
        Ok(self.meter.value(x, y)?.is_some_and(|v| v.ln() < limit))
    }

    /// Puts `x` into the module of `band` whose representative is close to it (predicted
    /// modules first), or into a new module. With `may_move`, a representative far beyond
    /// the pivot's latencies to both (which a tree of groups cannot have, a band of clusters
    /// slower inside than out only by a little) has the pair and then `x`'s latency from the
    /// pivot measured again: when that latency leaves the band, `x` is returned with it
    /// instead (an outlier had put it there).
    fn place(
        &mut self,
        band: &mut Band,
        x: usize,
        tol: Tolerance,
        may_move: bool,
    ) -> Result<Vec<(usize, f64)>, InferError> {
        let mut moved = Vec::new();
        if !band.level.is_finite() {
            band.open(x);
            return Ok(moved);
        }
        let candidates = if band.is_flat() {
            let mut c = self.by_stride(band, x);
            c.extend(self.candidates(band, x));
            let mut seen = HashSet::new();
            c.retain(|m| seen.insert(*m));
            c.truncate(FLAT_TRIES);
            c
        } else {
            self.candidates(band, x)
        };
        for m in candidates {
            let rep = band.modules[m].rep;
            if self.close(band, x, rep)? {
                self.learn(&band.modules[m].members, x);
                band.join(m, x);
                return Ok(moved);
            }
            if may_move && self.too_far(band, x, rep, tol)? {
                if let Some(v) = self.leaves(band, x, tol)? {
                    moved.push((x, v));
                    return Ok(moved);
                }
                if band.modules[m].members.len() == 1 {
                    if let Some(v) = self.leaves(band, rep, tol)? {
                        band.remove(rep);
                        moved.push((rep, v));
                    }
                }
            }
        }
        band.open(x);
        Ok(moved)
    }

    /// `x`'s latency from the pivot, measured again, when it no longer falls in the band.
    fn leaves(&mut self, band: &Band, x: usize, tol: Tolerance) -> Result<Option<f64>, InferError> {
        Ok(self
            .meter
            .confirm(band.pivot, x, tol.agree)?
            .filter(|&v| !band.holds(v, tol)))
    }

    /// Whether `x` and `y` are more than 1.5 times farther apart than the pivot is from
    /// either of them (measured again before it counts).
    fn too_far(
        &mut self,
        band: &Band,
        x: usize,
        y: usize,
        tol: Tolerance,
    ) -> Result<bool, InferError> {
        let (Some(lx), Some(ly)) = (
            self.meter.known(band.pivot, x),
            self.meter.known(band.pivot, y),
        ) else {
            return Ok(false);
        };
        let far = |v: Option<f64>| v.is_some_and(|v| (v / lx.max(ly)).ln() > OUTLIER_LN);
        if !far(self.meter.known(x, y)) {
            return Ok(false);
        }
        Ok(far(self.meter.confirm(x, y, tol.agree)?))
    }
    /// Every live module of `band`: the predicted ones first, then by distance of their
    /// representative's number from `x`.
    fn candidates(&self, band: &Band, x: usize) -> Vec<usize> {
        let mut out = self.predicted(band, x);
        let mut rest: Vec<usize> = band
            .live()
            .into_iter()
            .filter(|m| !out.contains(m))
            .collect();
        rest.sort_by_key(|&m| band.modules[m].rep.abs_diff(x));
        out.extend(rest);
        out
    }

    /// Modules of `x`'s neighbours in the numbering at the strides seen so far.
    fn by_stride(&self, band: &Band, x: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for d in self.strides() {
            for y in [x.checked_sub(d), x.checked_add(d)].into_iter().flatten() {
                if let Some(&m) = band.of.get(&y) {
                    if !out.contains(&m) && !band.modules[m].members.is_empty() {
                        out.push(m);
                    }
                }
            }
        }
        out
    }

    /// Modules predicted for `x`: those of its hinted mates, then of its neighbours in the
    /// numbering at the strides seen so far.
    fn predicted(&self, band: &Band, x: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut add = |y: usize| {
            if let Some(&m) = band.of.get(&y) {
                if !out.contains(&m) && !band.modules[m].members.is_empty() {
                    out.push(m);
                }
            }
        };
        if let Some(h) = self.hint_of.get(x).copied().flatten() {
            for &y in &self.hint_sets[h] {
                add(y);
            }
        }
        for d in self.strides() {
            if let Some(y) = x.checked_sub(d) {
                add(y);
            }
            add(x + d);
        }
        out
    }

    /// Strides to try: the two most often seen between a context and its module, 1, and
    /// the root's.
    fn strides(&self) -> Vec<usize> {
        let mut seen: Vec<(usize, usize)> = self.learned.iter().map(|(&d, &c)| (d, c)).collect();
        seen.sort_by_key(|&(d, c)| (std::cmp::Reverse(c), d));
        let mut out: Vec<usize> = seen.into_iter().take(2).map(|(d, _)| d).collect();
        for d in std::iter::once(1).chain(self.base_strides.iter().copied()) {
            if d > 0 && !out.contains(&d) {
                out.push(d);
            }
        }
        out
    }

    /// Records the stride between `x` and the closest member of the module it joins.
    fn learn(&mut self, members: &[usize], x: usize) {
        if let Some(d) = members.iter().map(|&y| y.abs_diff(x)).min() {
            *self.learned.entry(d).or_default() += 1;
        }
    }

    /// Second looks at modules whose size breaks the band's pattern: a module one context
    /// larger than usual has its admissions measured again (an outlier can admit a
    /// stranger); a lone context where modules have several has its latency from the pivot
    /// and its predicted modules measured again (an outlier can put it in the wrong band or
    /// keep it out of its module).
    fn check_modules(&mut self, bands: &mut Vec<Band>, tol: Tolerance) -> Result<(), InferError> {
        let mut moved = Vec::new();
        for band in bands.iter_mut() {
            if !band.level.is_finite() {
                continue;
            }
            let mode = band.mode();
            self.check_oversized(band, mode, tol)?;
            let sizes: Vec<usize> = band
                .live()
                .into_iter()
                .map(|m| band.modules[m].members.len())
                .collect();
            // A lone context beside modules of sizes s and s + 1: one fast reading may have
            // put the lone one's partner into a neighbouring module.
            let smallest = sizes.iter().copied().filter(|&k| k >= 2).min();
            if let Some(s) = smallest.filter(|&s| s != mode && sizes.contains(&(s + 1))) {
                if sizes.contains(&1) {
                    self.check_oversized(band, s, tol)?;
                }
            }
            self.check_admissions(band, tol)?;
            if mode >= 2 {
                moved.extend(self.check_lonely(band, tol)?);
            }
        }
        self.relocate(bands, moved, tol)
    }

    /// Measures again the admissions of modules one context larger than the band's usual
    /// size, and places again the contexts that do not belong.
    fn check_oversized(
        &mut self,
        band: &mut Band,
        mode: usize,
        tol: Tolerance,
    ) -> Result<(), InferError> {
        let mut ejected = Vec::new();
        for m in band.live() {
            if band.modules[m].members.len() != mode + 1 {
                continue;
            }
            let rep = band.modules[m].rep;
            for y in band.modules[m].members.clone() {
                if y == rep {
                    continue;
                }
                let v = self.meter.confirm(rep, y, tol.agree)?;
                let limit = self.limit(band, rep, y);
                if !matches!((v, limit), (Some(v), Some(l)) if v.ln() < l) {
                    ejected.push(y);
                }
            }
        }
        for y in ejected {
            band.remove(y);
            self.place(band, y, tol, false)?;
        }
        Ok(())
    }

    /// Measures again the lone contexts of a band whose modules have several contexts:
    /// returns those that belong to another band (with their latency from the pivot), and
    /// merges those whose predicted module takes them after all.
    fn check_lonely(
        &mut self,
        band: &mut Band,
        tol: Tolerance,
    ) -> Result<Vec<(usize, f64)>, InferError> {
        let lonely: Vec<usize> = band
            .live()
            .into_iter()
            .filter(|&m| band.modules[m].members.len() == 1)
            .map(|m| band.modules[m].rep)
            .collect();
        let mut moved = Vec::new();
        for x in lonely {
            let Some(v) = self.meter.confirm(band.pivot, x, tol.agree)? else {
                continue;
            };
            if !band.holds(v, tol) {
                band.remove(x);
                moved.push((x, v));
                continue;
            }
            let own = band.of.get(&x).copied();
            for m in self.predicted(band, x) {
                if Some(m) == own {
                    continue;
                }
                let rep = band.modules[m].rep;
                self.meter.confirm(x, rep, tol.agree)?;
                if self.close(band, x, rep)? {
                    band.remove(x);
                    band.join(m, x);
                    break;
                }
            }
        }
        Ok(moved)
    }

    /// Measures again the admission of each member of a module of three or more that is
    /// alone at its latency from the representative, and places it again when it no longer
    /// passes (an outlier admitted a stranger).
    fn check_admissions(&mut self, band: &mut Band, tol: Tolerance) -> Result<(), InferError> {
        let mut ejected = Vec::new();
        for m in band.live() {
            let module = &band.modules[m];
            if module.members.len() < 3 {
                continue;
            }
            let rep = module.rep;
            let mut row: Vec<(usize, f64)> = module
                .members
                .iter()
                .filter(|&&y| y != rep)
                .filter_map(|&y| self.meter.known(rep, y).map(|v| (y, v)))
                .collect();
            row.sort_by(|a, b| a.1.total_cmp(&b.1));
            for k in 0..row.len() {
                let apart =
                    |j: Option<&(usize, f64)>| j.is_none_or(|o| log_gap(o.1, row[k].1) > tol.gap);
                if !(apart(k.checked_sub(1).and_then(|j| row.get(j))) && apart(row.get(k + 1))) {
                    continue;
                }
                let y = row[k].0;
                self.meter.confirm(rep, y, tol.agree)?;
                if !self.close(band, y, rep)? {
                    ejected.push(y);
                }
            }
        }
        for y in ejected {
            band.remove(y);
            self.place(band, y, tol, false)?;
        }
        Ok(())
    }

    /// Merges modules of a band whose representatives turn out close after all: a pair far
    /// below the pivot's latencies to both is measured again first, and so is every pair of
    /// modules of different sizes in a band of at most [`FEW_MODULES`] modules (a slow
    /// reading between two contexts of one socket looks like the link to another socket,
    /// and splits the socket in two unequal parts).
    /// Returns whether two modules were merged.
    fn merge_close(&mut self, band: &mut Band, tol: Tolerance) -> Result<bool, InferError> {
        let mut merged = false;
        if !band.level.is_finite() {
            return Ok(merged);
        }
        let few = band.live().len() <= FEW_MODULES;
        for (a, b) in module_pairs(band, band, true) {
            let (Some(v), Some(la), Some(lb)) = (
                self.meter.known(a, b),
                self.meter.known(band.pivot, a),
                self.meter.known(band.pivot, b),
            ) else {
                continue;
            };
            if !self.close(band, a, b)? {
                let suspect = (la.max(lb) / v).ln() > OUTLIER_LN;
                let unequal = match (band.of.get(&a), band.of.get(&b)) {
                    (Some(&ma), Some(&mb)) => {
                        band.modules[ma].members.len() != band.modules[mb].members.len()
                    }
                    _ => false,
                };
                let unconfirmed = few && unequal && self.meter.readings_of(a, b) < 2;
                if !suspect && !unconfirmed {
                    continue;
                }
                self.meter.confirm(a, b, tol.agree)?;
            }
            let (Some(&ma), Some(&mb)) = (band.of.get(&a), band.of.get(&b)) else {
                continue;
            };
            if ma != mb && self.close(band, a, b)? {
                for y in band.modules[mb].members.clone() {
                    band.remove(y);
                    band.join(ma, y);
                }
                merged = true;
            }
        }
        Ok(merged)
    }

    /// Tests, for every pair of bands, the nested-bands prediction: two modules are at the
    /// larger of their representatives' latencies from the pivot (exact for a tree of
    /// groups). A few module pairs are sampled; where one disagrees (an outlier-sized
    /// disagreement measured again first), every module pair of the two bands is measured:
    /// multi-hop links between sockets, a ring or mesh gradient, clusters slower inside than
    /// out.
    /// Returns the irregular band pairs (indices as in [`Node::levels`]).
    fn check_band_pairs(
        &mut self,
        bands: &[Band],
        tol: Tolerance,
    ) -> Result<Vec<(usize, usize)>, InferError> {
        let mut irregular = Vec::new();
        for i in 0..bands.len() {
            for j in i..bands.len() {
                let pairs = module_pairs(&bands[i], &bands[j], i == j);
                if pairs.is_empty() {
                    continue;
                }
                let known = bands[i].level.is_finite() && bands[j].level.is_finite();
                if known {
                    let contexts = bands[i].of.len() + bands[j].of.len();
                    self.sample(&pairs, contexts)?;
                }
                if !known || self.irregular(bands[i].pivot, &pairs, tol)? {
                    self.measure_all(&pairs)?;
                    self.recheck_isolated(&pairs, tol)?;
                    irregular.push((i + 1, j + 1));
                }
            }
        }
        Ok(irregular)
    }

    /// Measures random pairs of `pairs` until at least [`BAND_PAIR_SAMPLES`] are measured,
    /// or all of them when they are at most half as many as the `contexts` of the two bands
    /// (few large modules, such as sockets two hops apart or not: cheap to measure all).
    fn sample(&mut self, pairs: &[(usize, usize)], contexts: usize) -> Result<(), InferError> {
        let have = pairs
            .iter()
            .filter(|&&(a, b)| self.meter.is_measured(a, b))
            .count();
        let want = if 2 * pairs.len() <= contexts {
            pairs.len()
        } else {
            BAND_PAIR_SAMPLES
        };
        if have >= want {
            return Ok(());
        }
        let mut todo: Vec<(usize, usize)> = pairs
            .iter()
            .copied()
            .filter(|&(a, b)| !self.meter.is_measured(a, b))
            .collect();
        todo.shuffle(&mut self.rng);
        for &(a, b) in todo.iter().take(want - have) {
            self.meter.value(a, b)?;
        }
        Ok(())
    }

    /// Whether a measured pair disagrees with its nested-bands prediction (outlier-sized
    /// disagreements are measured again before they count).
    fn irregular(
        &mut self,
        pivot: usize,
        pairs: &[(usize, usize)],
        tol: Tolerance,
    ) -> Result<bool, InferError> {
        let mut irregular = false;
        for &(a, b) in pairs {
            let expect = match (self.meter.known(pivot, a), self.meter.known(pivot, b)) {
                (Some(x), Some(y)) => x.max(y),
                _ => return Ok(true),
            };
            let Some(mut v) = self.meter.known(a, b) else {
                continue;
            };
            if log_gap(v, expect) > OUTLIER_LN {
                v = self.meter.confirm(a, b, tol.agree)?.unwrap_or(v);
            }
            irregular |= log_gap(v, expect) > tol.agree;
        }
        Ok(irregular)
    }

    fn measure_all(&mut self, pairs: &[(usize, usize)]) -> Result<(), InferError> {
        self.meter.expect_more(pairs.len());
        for &(a, b) in pairs {
            self.meter.value(a, b)?;
        }
        Ok(())
    }

    /// Measures again the values of `pairs` far from all the others (at least three).
    fn recheck_isolated(
        &mut self,
        pairs: &[(usize, usize)],
        tol: Tolerance,
    ) -> Result<(), InferError> {
        let values: Vec<((usize, usize), f64)> = pairs
            .iter()
            .filter_map(|&(a, b)| self.meter.known(a, b).map(|v| ((a, b), v)))
            .collect();
        if values.len() < 3 {
            return Ok(());
        }
        for &((a, b), v) in &values {
            let near = values
                .iter()
                .any(|&(k, w)| k != (a, b) && log_gap(v, w) <= tol.agree);
            if !near {
                self.meter.confirm(a, b, tol.agree)?;
            }
        }
        Ok(())
    }
}

/// The contexts of a row by ascending latency, clustered where consecutive values differ by
/// more than `gap` (log ratio); each class with its values.
fn runs(mut row: Vec<(usize, f64)>, gap: f64) -> Vec<(Vec<f64>, Vec<usize>)> {
    row.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut out: Vec<(Vec<f64>, Vec<usize>)> = Vec::new();
    let mut last = f64::NAN;
    for (x, v) in row {
        match out.last_mut() {
            Some(c) if log_gap(v, last) <= gap => {
                c.0.push(v);
                c.1.push(x);
            }
            _ => out.push((vec![v], vec![x])),
        }
        last = v;
    }
    out
}

/// Representative pairs of the module pairs of bands `a` and `b` (`same`: the same band).
fn module_pairs(a: &Band, b: &Band, same: bool) -> Vec<(usize, usize)> {
    let (la, lb) = (a.live(), b.live());
    let mut out = Vec::new();
    for (i, &ma) in la.iter().enumerate() {
        let start = if same { i + 1 } else { 0 };
        for &mb in &lb[start.min(lb.len())..] {
            out.push((a.modules[ma].rep, b.modules[mb].rep));
        }
    }
    out
}
