//! The flattened form of a [`MachineSpec`]: every context with its socket, core and path of
//! groups, in context-id order.

use std::collections::BTreeSet;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::spec::{MachineSpec, Numbering, Unit};
use super::truth::Truth;

/// A group node of a socket tree (the socket root included).
#[derive(Debug, Clone)]
struct GroupNode {
    latency: f64,
    root: bool,
    cores: usize,
    /// Canonical indices of its contexts.
    canonical: Vec<usize>,
}

/// A hardware context, canonically placed.
#[derive(Debug, Clone)]
struct Context {
    socket: usize,
    /// Core index within the socket, in tree order.
    core_in_socket: usize,
    /// Position on the socket's ring or mesh: the core index (within the socket) where the
    /// socket root's direct member holding this context starts, so that the cores of a
    /// cluster share one stop.
    stop: usize,
    /// Core index over the whole machine, in canonical order.
    core: usize,
    smt: usize,
    smt_latency: f64,
    /// Group nodes from the socket root down to the core's parent.
    path: Vec<usize>,
}

/// The machine flattened: contexts in context-id order.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Contexts in canonical order.
    canonical: Vec<Context>,
    /// Context id → canonical index.
    order: Vec<usize>,
    /// Canonical index → context id.
    id_of: Vec<usize>,
    groups: Vec<GroupNode>,
    cores_per_socket: Vec<usize>,
}

struct Walker {
    canonical: Vec<Context>,
    groups: Vec<GroupNode>,
    core: usize,
}

impl Walker {
    /// Walks `unit` (in socket `socket`), returning the canonical indices of its contexts.
    fn walk(
        &mut self,
        socket: usize,
        unit: &Unit,
        path: &mut Vec<usize>,
        in_socket: &mut usize,
        stop: usize,
    ) -> Vec<usize> {
        match unit {
            Unit::Group { latency, members } => {
                let id = self.groups.len();
                self.groups.push(GroupNode {
                    latency: *latency,
                    root: path.is_empty(),
                    cores: unit.num_cores(),
                    canonical: Vec::new(),
                });
                path.push(id);
                let mut all = Vec::new();
                let at_root = path.len() == 1;
                for m in members {
                    let stop = if at_root { *in_socket } else { stop };
                    all.extend(self.walk(socket, m, path, in_socket, stop));
                }
                path.pop();
                self.groups[id].canonical.clone_from(&all);
                all
            }
            Unit::Core {
                contexts,
                smt_latency,
            } => {
                let first = self.canonical.len();
                for smt in 0..*contexts {
                    self.canonical.push(Context {
                        socket,
                        core_in_socket: *in_socket,
                        stop,
                        core: self.core,
                        smt,
                        smt_latency: *smt_latency,
                        path: path.clone(),
                    });
                }
                self.core += 1;
                *in_socket += 1;
                (first..self.canonical.len()).collect()
            }
        }
    }
}

impl Layout {
    pub(crate) fn new(spec: &MachineSpec) -> Self {
        let mut w = Walker {
            canonical: Vec::new(),
            groups: Vec::new(),
            core: 0,
        };
        let mut cores_per_socket = Vec::with_capacity(spec.sockets.len());
        for (s, root) in spec.sockets.iter().enumerate() {
            let mut in_socket = 0;
            w.walk(s, root, &mut Vec::new(), &mut in_socket, 0);
            cores_per_socket.push(in_socket);
        }
        let Walker {
            canonical, groups, ..
        } = w;
        let mut order: Vec<usize> = (0..canonical.len()).collect();
        match spec.numbering {
            Numbering::SiblingsAdjacent => {}
            Numbering::SiblingsFar => order.sort_by_key(|&i| (canonical[i].smt, i)),
            Numbering::InterleavedSockets => order.sort_by_key(|&i| {
                let c = &canonical[i];
                (c.smt, c.core_in_socket, c.socket)
            }),
            Numbering::Random(seed) => order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed)),
        }
        let mut id_of = vec![0; order.len()];
        for (id, &c) in order.iter().enumerate() {
            id_of[c] = id;
        }
        Self {
            canonical,
            order,
            id_of,
            groups,
            cores_per_socket,
        }
    }

    /// Number of contexts.
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// The noise-free latency from context `a` to context `b` (see
    /// [`MachineSpec::true_latency`]).
    pub(crate) fn latency(&self, spec: &MachineSpec, a: usize, b: usize) -> f64 {
        let (Some(&ia), Some(&ib)) = (self.order.get(a), self.order.get(b)) else {
            return f64::NAN;
        };
        if ia == ib {
            return 0.0;
        }
        let (x, y) = (&self.canonical[ia], &self.canonical[ib]);
        if x.socket != y.socket {
            return spec.cross.between(x.socket, y.socket);
        }
        if x.core == y.core {
            return x.smt_latency;
        }
        let lca = x
            .path
            .iter()
            .zip(&y.path)
            .take_while(|(p, q)| p == q)
            .last()
            .map(|(p, _)| *p);
        let Some(g) = lca.and_then(|g| self.groups.get(g)) else {
            return f64::NAN;
        };
        if !g.root {
            if spec.group_mesh > 0.0 {
                let n = g.cores.max(1) as f64;
                let dist = x.core_in_socket.abs_diff(y.core_in_socket) as f64;
                return g.latency * (1.0 + spec.group_mesh * dist / n);
            }
            return g.latency;
        }
        if spec.home_node == Some(x.socket) {
            if let Some(v) = spec.cross.from_socket(x.socket) {
                return v;
            }
        }
        let n = self.cores_per_socket[x.socket].max(1) as f64;
        let dist = x.stop.abs_diff(y.stop) as f64;
        g.latency * (1.0 + spec.mesh * dist / n)
    }

    /// The latency a slow block gives the pair `(a, b)` in the measured matrix (see
    /// [`MachineSpec::slow_blocks`]): the cross-socket latency from their socket when they
    /// are in different direct members of one socket and the block of either core towards
    /// the other's member is slow; `None` otherwise.
    pub(crate) fn slow_block(&self, spec: &MachineSpec, a: usize, b: usize) -> Option<f64> {
        if spec.slow_blocks <= 0.0 {
            return None;
        }
        let (x, y) = (
            &self.canonical[*self.order.get(a)?],
            &self.canonical[*self.order.get(b)?],
        );
        if x.socket != y.socket || x.stop == y.stop || x.core == y.core {
            return None;
        }
        // A fixed pseudo-random draw per (core, member), from the noise seed.
        let draw = |core: usize, member: usize| -> f64 {
            let mut h = spec.noise.seed ^ 0x9e37_79b9_7f4a_7c15;
            for v in [core as u64, member as u64] {
                h = (h ^ v).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                h ^= h >> 31;
            }
            (h >> 11) as f64 / (1u64 << 53) as f64
        };
        let slow =
            draw(x.core, y.stop) < spec.slow_blocks || draw(y.core, x.stop) < spec.slow_blocks;
        if !slow {
            return None;
        }
        spec.cross.from_socket(x.socket)
    }

    /// The ground truth in context-id order.
    pub(crate) fn truth(&self) -> Truth {
        let core = self.order.iter().map(|&c| self.canonical[c].core).collect();
        let socket = self
            .order
            .iter()
            .map(|&c| self.canonical[c].socket)
            .collect();
        let mut socket_sets: Vec<BTreeSet<usize>> =
            vec![BTreeSet::new(); self.cores_per_socket.len()];
        for (c, ctx) in self.canonical.iter().enumerate() {
            socket_sets[ctx.socket].insert(self.id_of[c]);
        }
        let mut groups = BTreeSet::new();
        for g in self.groups.iter().filter(|g| !g.root && g.cores > 1) {
            let mut ids: Vec<usize> = g.canonical.iter().map(|&c| self.id_of[c]).collect();
            ids.sort_unstable();
            let whole_socket = g
                .canonical
                .first()
                .map(|&c| self.canonical[c].socket)
                .and_then(|s| socket_sets.get(s))
                .is_some_and(|set| set.len() == ids.len());
            if !whole_socket {
                groups.insert(ids);
            }
        }
        Truth {
            core,
            socket,
            groups: groups.into_iter().collect(),
        }
    }
}
