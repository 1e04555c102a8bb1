//! The specification of a simulated machine: sockets as trees of groups and cores, the
//! cross-socket links, the numbering of contexts, noise and timer resolution.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use topoprobe_model::{LatencyUnit, Source};

use crate::InferOptions;

/// A node of a socket's tree: a group of units, or a core.
///
/// A socket is a tree whose root is a [`Unit::Group`]: the root's `latency` is the latency
/// between contexts in different direct members of the socket (the socket-level latency).
/// Groups nest to any depth and may have members of unequal sizes.
///
/// ```
/// use topoprobe_infer::sim::Unit;
///
/// // A socket of two CCXs of four SMT2 cores (ns).
/// let ccx = Unit::group(25.0, Unit::cores(4, 2, 8.0));
/// let socket = Unit::group(120.0, vec![ccx.clone(), ccx]);
/// assert_eq!((socket.num_cores(), socket.num_contexts()), (8, 16));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A group of cores or groups.
    Group {
        /// One-way latency between contexts in different direct members of this group.
        latency: f64,
        /// The direct members, in tree order.
        members: Vec<Unit>,
    },
    /// A physical core.
    Core {
        /// Number of hardware contexts (SMT threads); at least 1.
        contexts: usize,
        /// Latency between two contexts of this core (ignored when `contexts == 1`).
        smt_latency: f64,
    },
}

impl Unit {
    /// A group with the given internal latency and members.
    #[must_use]
    pub fn group(latency: f64, members: Vec<Unit>) -> Self {
        Self::Group { latency, members }
    }

    /// A core with `contexts` hardware contexts at `smt_latency` from each other.
    #[must_use]
    pub fn core(contexts: usize, smt_latency: f64) -> Self {
        Self::Core {
            contexts,
            smt_latency,
        }
    }

    /// A core with a single hardware context (no SMT).
    #[must_use]
    pub fn single_core() -> Self {
        Self::core(1, 0.0)
    }

    /// `n` identical cores, each with `contexts` contexts at `smt_latency` from each other.
    #[must_use]
    pub fn cores(n: usize, contexts: usize, smt_latency: f64) -> Vec<Unit> {
        vec![Self::core(contexts, smt_latency); n]
    }

    /// Number of cores in this unit (1 for a core).
    #[must_use]
    pub fn num_cores(&self) -> usize {
        match self {
            Self::Group { members, .. } => members.iter().map(Unit::num_cores).sum(),
            Self::Core { .. } => 1,
        }
    }

    /// Number of hardware contexts in this unit.
    #[must_use]
    pub fn num_contexts(&self) -> usize {
        match self {
            Self::Group { members, .. } => members.iter().map(Unit::num_contexts).sum(),
            Self::Core { contexts, .. } => *contexts,
        }
    }
}

/// Latency between contexts of different sockets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CrossSocket {
    /// The same latency between every pair of sockets (fully connected).
    Uniform(f64),
    /// `m[s][t]`: latency from socket `s` to socket `t` (the diagonal is ignored); for
    /// machines where some sockets are two or more hops apart.
    Matrix(Vec<Vec<f64>>),
}

impl CrossSocket {
    /// A socket-to-socket matrix from direct links: sockets `k` hops apart are at
    /// `per_hop[k - 1]` (pairs further than `per_hop.len()` hops take the last entry).
    ///
    /// # Errors
    ///
    /// Returns [`SpecError::Link`] when a link names a socket that does not exist or links a
    /// socket to itself, [`SpecError::Disconnected`] when some sockets cannot reach each
    /// other, and [`SpecError::BadValue`] when `per_hop` is empty or has a latency that is
    /// not finite and positive.
    pub fn from_links(
        sockets: usize,
        links: &[(usize, usize)],
        per_hop: &[f64],
    ) -> Result<Self, SpecError> {
        if per_hop.is_empty() {
            return Err(SpecError::BadValue {
                what: "the list of per-hop latencies".into(),
                value: 0.0,
                expected: "non-empty",
            });
        }
        for (k, &v) in per_hop.iter().enumerate() {
            positive(&format!("the {}-hop latency", k + 1), v)?;
        }
        for &(a, b) in links {
            if a >= sockets || b >= sockets || a == b {
                return Err(SpecError::Link { a, b, sockets });
            }
        }
        let hops = hop_counts(sockets, links);
        for (a, row) in hops.iter().enumerate() {
            if let Some(b) = row.iter().position(Option::is_none) {
                return Err(SpecError::Disconnected { a, b });
            }
        }
        Ok(links_matrix(sockets, links, per_hop))
    }

    /// Latency from socket `s` to socket `t` (`NaN` when the matrix has no such entry).
    #[must_use]
    pub fn between(&self, s: usize, t: usize) -> f64 {
        match self {
            Self::Uniform(v) => *v,
            Self::Matrix(m) => m
                .get(s)
                .and_then(|row| row.get(t))
                .copied()
                .unwrap_or(f64::NAN),
        }
    }

    /// The cross-socket latency "from" socket `s`: the uniform value, or the mean of row `s`
    /// of the matrix without its diagonal (`None` when there is no other socket).
    #[must_use]
    pub fn from_socket(&self, s: usize) -> Option<f64> {
        match self {
            Self::Uniform(v) => Some(*v),
            Self::Matrix(m) => {
                let row = m.get(s)?;
                let others: Vec<f64> = row
                    .iter()
                    .enumerate()
                    .filter(|&(t, _)| t != s)
                    .map(|(_, &v)| v)
                    .collect();
                if others.is_empty() {
                    None
                } else {
                    Some(others.iter().sum::<f64>() / others.len() as f64)
                }
            }
        }
    }
}

/// Breadth-first hop counts between sockets (`None`: unreachable); out-of-range links are
/// skipped.
fn hop_counts(sockets: usize, links: &[(usize, usize)]) -> Vec<Vec<Option<usize>>> {
    let mut adj = vec![Vec::new(); sockets];
    for &(a, b) in links {
        if a < sockets && b < sockets && a != b {
            adj[a].push(b);
            adj[b].push(a);
        }
    }
    (0..sockets)
        .map(|s| {
            let mut dist = vec![None; sockets];
            dist[s] = Some(0);
            let mut queue = VecDeque::from([s]);
            while let Some(x) = queue.pop_front() {
                let d = dist[x].unwrap_or(0);
                for &y in &adj[x] {
                    if dist[y].is_none() {
                        dist[y] = Some(d + 1);
                        queue.push_back(y);
                    }
                }
            }
            dist
        })
        .collect()
}

/// The socket-to-socket matrix of a set of links, without validation: unreachable pairs and
/// pairs beyond the last hop take the last latency of `per_hop` (`NaN` when it is empty).
pub(crate) fn links_matrix(
    sockets: usize,
    links: &[(usize, usize)],
    per_hop: &[f64],
) -> CrossSocket {
    let last = per_hop.last().copied().unwrap_or(f64::NAN);
    let hops = hop_counts(sockets, links);
    CrossSocket::Matrix(
        hops.iter()
            .map(|row| {
                row.iter()
                    .map(|h| match h {
                        Some(0) => 0.0,
                        Some(k) => per_hop.get(k - 1).copied().unwrap_or(last),
                        None => last,
                    })
                    .collect()
            })
            .collect(),
    )
}

/// How hardware-context ids are assigned.
///
/// Contexts are first enumerated canonically as (socket, core index within the socket in
/// tree order, SMT index); the numbering then orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Numbering {
    /// Linux's usual order: the first context of every core (socket 0 first), then every
    /// second context, ...; with uniform SMT2 the siblings are `i` and `i + N/2`.
    #[default]
    SiblingsFar,
    /// Siblings are consecutive: `2k` and `2k + 1` with SMT2 (the canonical order).
    SiblingsAdjacent,
    /// Sockets interleaved, as on machines where CPU `n` is on socket `n % S`: ordered by
    /// (SMT index, core index within the socket, socket).
    InterleavedSockets,
    /// A shuffle of the canonical order, reproducible from the seed.
    Random(u64),
}

/// Measurement noise.
///
/// Every pair is multiplied by `exp(sigma · z)` with `z` standard normal (a log-normal error);
/// with probability `outliers` it is also multiplied or divided (equally likely) by
/// `outlier_factor`. Everything is drawn from a `ChaCha8` generator seeded by `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// Standard deviation of the log of the multiplicative error (0.02 is about 2 %).
    pub sigma: f64,
    /// Probability that a pair is an outlier.
    pub outliers: f64,
    /// Factor by which an outlier is multiplied or divided (at least 1).
    pub outlier_factor: f64,
    /// Whether `(a, b)` and `(b, a)` are measured separately (a directed matrix).
    pub directed: bool,
    /// Seed of the random generator.
    pub seed: u64,
}

impl Noise {
    /// No noise at all: the matrix is the exact one (quantized when the spec says so).
    #[must_use]
    pub const fn none() -> Self {
        Self {
            sigma: 0.0,
            outliers: 0.0,
            outlier_factor: 3.0,
            directed: false,
            seed: 0,
        }
    }

    /// Log-normal noise of standard deviation `sigma`, undirected, without outliers.
    #[must_use]
    pub const fn lognormal(sigma: f64, seed: u64) -> Self {
        Self {
            sigma,
            outliers: 0.0,
            outlier_factor: 3.0,
            directed: false,
            seed,
        }
    }

    /// This noise with outliers of probability `p` and factor `factor`.
    #[must_use]
    pub const fn with_outliers(mut self, p: f64, factor: f64) -> Self {
        self.outliers = p;
        self.outlier_factor = factor;
        self
    }

    /// This noise, measuring `(a, b)` and `(b, a)` separately or not.
    #[must_use]
    pub const fn directed(mut self, directed: bool) -> Self {
        self.directed = directed;
        self
    }
}

impl Default for Noise {
    fn default() -> Self {
        Self::none()
    }
}

/// Why a machine specification is invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// The machine has no sockets.
    #[error("the machine has no sockets")]
    NoSockets,
    /// A socket's root is a core, not a group.
    #[error("socket {socket}: the root must be a group, found a core")]
    RootNotGroup {
        /// The socket.
        socket: usize,
    },
    /// A group has no members.
    #[error("socket {socket}: the group at {path} has no members")]
    EmptyGroup {
        /// The socket.
        socket: usize,
        /// Position in the socket's tree (`root.2.0`: member 0 of member 2 of the root).
        path: String,
    },
    /// A core has no hardware contexts.
    #[error("socket {socket}: the core at {path} has no hardware contexts")]
    NoContexts {
        /// The socket.
        socket: usize,
        /// Position in the socket's tree.
        path: String,
    },
    /// A number is out of range.
    #[error("{what} is {value}: it must be {expected}")]
    BadValue {
        /// What the number is.
        what: String,
        /// The offending value.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// The cross-socket matrix does not have one row and one column per socket.
    #[error("the cross-socket matrix has {found} entries in {what}, expected {expected} (one per socket)")]
    CrossShape {
        /// `rows`, or `row N`.
        what: String,
        /// Number of entries found.
        found: usize,
        /// Number of sockets.
        expected: usize,
    },
    /// The home node is not a socket.
    #[error("home node {node} does not exist (the machine has {sockets} sockets)")]
    HomeNode {
        /// The home node given.
        node: usize,
        /// Number of sockets.
        sockets: usize,
    },
    /// A link names a socket that does not exist, or links a socket to itself.
    #[error("link ({a}, {b}) is invalid for {sockets} sockets")]
    Link {
        /// One end.
        a: usize,
        /// The other end.
        b: usize,
        /// Number of sockets.
        sockets: usize,
    },
    /// Two sockets are not connected by any chain of links.
    #[error("sockets {a} and {b} are not connected by any chain of links")]
    Disconnected {
        /// One socket.
        a: usize,
        /// Another socket it cannot reach.
        b: usize,
    },
    /// A drift factor of the simulated probe is out of range.
    #[error("drift factor {0} must be finite and positive")]
    Drift(f64),
}

fn positive(what: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(SpecError::BadValue {
            what: what.to_string(),
            value: v,
            expected: "finite and positive",
        })
    }
}

fn non_negative(what: &str, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(SpecError::BadValue {
            what: what.to_string(),
            value: v,
            expected: "finite and not negative",
        })
    }
}

/// A simulated machine.
///
/// ```
/// use topoprobe_infer::sim::{platforms, Noise};
///
/// let spec = platforms::ivy().with_noise(Noise::lognormal(0.02, 1));
/// let m = spec.matrix();
/// assert_eq!(m.len(), 40);
/// assert_eq!(spec.true_latency(0, 20), 28.0); // SMT siblings
/// assert_eq!(spec.true_latency(0, 1), 112.0); // same socket
/// assert_eq!(spec.true_latency(0, 10), 308.0); // different sockets
/// let truth = spec.truth();
/// assert_eq!((truth.num_cores(), truth.num_sockets()), (20, 2));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineSpec {
    /// Name of the machine (used as the source of inferred topologies).
    pub name: String,
    /// One tree per socket, each rooted at a [`Unit::Group`].
    pub sockets: Vec<Unit>,
    /// Latency between contexts of different sockets.
    pub cross: CrossSocket,
    /// How context ids are assigned.
    #[serde(default)]
    pub numbering: Numbering,
    /// `Some(s)`: every pair inside socket `s` whose lowest common component is the socket
    /// root is as slow as the cross-socket latency from `s` ([`CrossSocket::from_socket`]),
    /// the "home-node effect" of many AMD servers. No effect when there is no cross-socket
    /// latency from `s` (a one-socket matrix).
    #[serde(default)]
    pub home_node: Option<usize>,
    /// Measurement noise of [`MachineSpec::matrix`] (and of [`super::SimProbe`]).
    #[serde(default)]
    pub noise: Noise,
    /// `Some(q)`: every measured latency is rounded to a multiple of `q`, at least `q` (a
    /// coarse timer).
    #[serde(default)]
    pub quantum: Option<f64>,
    /// Unit of every latency of the spec.
    #[serde(default)]
    pub units: LatencyUnit,
    /// Clock frequency in GHz (what converts cycles and ns).
    #[serde(default)]
    pub ghz: Option<f64>,
    /// Mesh gradient (0 = off): a pair at socket-root level between cores at positions `i`
    /// and `j` of a socket of `n` cores gets `latency × (1 + mesh × |i − j| / n)`, so that
    /// a flat socket looks like a ring or mesh without cluster structure. The cores of a
    /// group directly in the socket share one position (a cluster is one ring stop).
    #[serde(default)]
    pub mesh: f64,
    /// Gradient inside groups (0 = off): a pair whose lowest common component is a group
    /// below the socket root, between its cores at positions `i` and `j` of its `n`, gets
    /// `latency × (1 + group_mesh × |i − j| / n)` — a ring inside a CCD, where some cores
    /// are farther than others.
    #[serde(default)]
    pub group_mesh: f64,
    /// With a `quantum`, a latency below half a quantum reads as 0, as core-to-core-latency
    /// prints a pair below its timer's resolution (otherwise it reads as one quantum).
    #[serde(default)]
    pub zeros: bool,
    /// Share (0..1) of the blocks of pairs between a core and another direct member of its
    /// socket that read at the cross-socket latency from that socket in the measured matrix
    /// (a few percent of a chiplet server's in-socket pairs do): each core is slow towards
    /// each other member with this probability, drawn from the noise seed.
    #[serde(default)]
    pub slow_blocks: f64,
}

impl MachineSpec {
    /// A machine with the given sockets and cross-socket latency, and defaults for the rest:
    /// [`Numbering::SiblingsFar`], no home node, no noise, no quantum, ns, no frequency, no
    /// mesh.
    #[must_use]
    pub fn new(name: impl Into<String>, sockets: Vec<Unit>, cross: CrossSocket) -> Self {
        Self {
            name: name.into(),
            sockets,
            cross,
            numbering: Numbering::SiblingsFar,
            home_node: None,
            noise: Noise::none(),
            quantum: None,
            units: LatencyUnit::Ns,
            ghz: None,
            mesh: 0.0,
            group_mesh: 0.0,
            zeros: false,
            slow_blocks: 0.0,
        }
    }

    /// `count` copies of the same socket.
    #[must_use]
    pub fn symmetric(
        name: impl Into<String>,
        count: usize,
        socket: Unit,
        cross: CrossSocket,
    ) -> Self {
        Self::new(name, vec![socket; count], cross)
    }

    /// This machine with another noise.
    #[must_use]
    pub fn with_noise(mut self, noise: Noise) -> Self {
        self.noise = noise;
        self
    }

    /// This machine with another numbering.
    #[must_use]
    pub fn with_numbering(mut self, numbering: Numbering) -> Self {
        self.numbering = numbering;
        self
    }

    /// This machine with a timer quantum (`None`: exact values).
    #[must_use]
    pub fn with_quantum(mut self, quantum: Option<f64>) -> Self {
        self.quantum = quantum;
        self
    }

    /// This machine with latencies in `units` and a clock of `ghz` GHz.
    #[must_use]
    pub fn with_units(mut self, units: LatencyUnit, ghz: Option<f64>) -> Self {
        self.units = units;
        self.ghz = ghz;
        self
    }

    /// This machine with the home-node effect on socket `home_node` (or none).
    #[must_use]
    pub fn with_home_node(mut self, home_node: Option<usize>) -> Self {
        self.home_node = home_node;
        self
    }

    /// This machine with a mesh gradient (0 = off).
    #[must_use]
    pub fn with_mesh(mut self, mesh: f64) -> Self {
        self.mesh = mesh;
        self
    }

    /// This machine with a gradient inside its groups (0 = off).
    #[must_use]
    pub fn with_group_mesh(mut self, gradient: f64) -> Self {
        self.group_mesh = gradient;
        self
    }

    /// This machine reading latencies below half its quantum as 0 (or not).
    #[must_use]
    pub fn with_zeros(mut self, zeros: bool) -> Self {
        self.zeros = zeros;
        self
    }

    /// This machine with a share of its in-socket blocks read at the cross-socket latency.
    #[must_use]
    pub fn with_slow_blocks(mut self, share: f64) -> Self {
        self.slow_blocks = share;
        self
    }

    /// Checks that the specification describes a machine.
    ///
    /// # Errors
    ///
    /// Returns [`SpecError`] when there are no sockets, a socket root is not a group, a
    /// group is empty, a core has no contexts, a latency (group, SMT of a multi-context core,
    /// cross-socket) is not finite and positive, the cross-socket matrix is not square with
    /// one row per socket, the home node is not a socket, or a noise parameter, the quantum,
    /// the frequency or the mesh gradient is out of range.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.sockets.is_empty() {
            return Err(SpecError::NoSockets);
        }
        for (s, root) in self.sockets.iter().enumerate() {
            if matches!(root, Unit::Core { .. }) {
                return Err(SpecError::RootNotGroup { socket: s });
            }
            validate_unit(s, root, "root")?;
        }
        let n = self.sockets.len();
        match &self.cross {
            CrossSocket::Uniform(v) => positive("the cross-socket latency", *v)?,
            CrossSocket::Matrix(m) => {
                if m.len() != n {
                    return Err(SpecError::CrossShape {
                        what: "rows".into(),
                        found: m.len(),
                        expected: n,
                    });
                }
                for (s, row) in m.iter().enumerate() {
                    if row.len() != n {
                        return Err(SpecError::CrossShape {
                            what: format!("row {s}"),
                            found: row.len(),
                            expected: n,
                        });
                    }
                    for (t, &v) in row.iter().enumerate() {
                        if s != t {
                            positive(&format!("the cross-socket latency from {s} to {t}"), v)?;
                        }
                    }
                }
            }
        }
        if let Some(h) = self.home_node {
            if h >= n {
                return Err(SpecError::HomeNode {
                    node: h,
                    sockets: n,
                });
            }
        }
        non_negative("the noise sigma", self.noise.sigma)?;
        if !(0.0..=1.0).contains(&self.noise.outliers) {
            return Err(SpecError::BadValue {
                what: "the outlier probability".into(),
                value: self.noise.outliers,
                expected: "between 0 and 1",
            });
        }
        if !(self.noise.outlier_factor.is_finite() && self.noise.outlier_factor >= 1.0) {
            return Err(SpecError::BadValue {
                what: "the outlier factor".into(),
                value: self.noise.outlier_factor,
                expected: "finite and at least 1",
            });
        }
        if let Some(q) = self.quantum {
            positive("the quantum", q)?;
        }
        if let Some(g) = self.ghz {
            positive("the frequency (GHz)", g)?;
        }
        non_negative("the group gradient", self.group_mesh)?;
        if !(0.0..=1.0).contains(&self.slow_blocks) {
            return Err(SpecError::BadValue {
                what: "the share of slow blocks".into(),
                value: self.slow_blocks,
                expected: "between 0 and 1",
            });
        }
        non_negative("the mesh gradient", self.mesh)
    }

    /// Number of hardware contexts.
    #[must_use]
    pub fn contexts(&self) -> usize {
        self.sockets.iter().map(Unit::num_contexts).sum()
    }

    /// Number of cores.
    #[must_use]
    pub fn cores(&self) -> usize {
        self.sockets.iter().map(Unit::num_cores).sum()
    }

    /// Inference options matching this machine: its units and frequency, and a simulated
    /// source named after it.
    #[must_use]
    pub fn infer_options(&self) -> InferOptions {
        InferOptions {
            units: self.units,
            ghz: self.ghz,
            source: Source::Simulated {
                spec: self.name.clone(),
            },
            ..InferOptions::default()
        }
    }
}

fn validate_unit(socket: usize, unit: &Unit, path: &str) -> Result<(), SpecError> {
    match unit {
        Unit::Group { latency, members } => {
            if members.is_empty() {
                return Err(SpecError::EmptyGroup {
                    socket,
                    path: path.to_string(),
                });
            }
            positive(
                &format!("socket {socket}: the latency of the group at {path}"),
                *latency,
            )?;
            for (i, m) in members.iter().enumerate() {
                validate_unit(socket, m, &format!("{path}.{i}"))?;
            }
            Ok(())
        }
        Unit::Core {
            contexts,
            smt_latency,
        } => {
            if *contexts == 0 {
                return Err(SpecError::NoContexts {
                    socket,
                    path: path.to_string(),
                });
            }
            if *contexts > 1 {
                positive(
                    &format!("socket {socket}: the SMT latency of the core at {path}"),
                    *smt_latency,
                )?;
            }
            Ok(())
        }
    }
}
