//! Turns the tree and its roles into a [`Topology`]: numbering, normalized latencies and
//! latency levels.

use topoprobe_model::{
    ContextId, Evidence, LatencyLevel, LatencyMatrix, LatencySummary, Member, Role, TopologyBuilder,
};

use crate::levels::MIN_GAP;
use crate::roles::{Kind, Roles};
use crate::table::Table;
use crate::tree::ComponentTree;

/// The smallest component containing both ends of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum SharedComponent {
    Core(usize),
    Group(usize),
    Socket(usize),
    Sockets(usize, usize),
}

impl SharedComponent {
    fn role(self) -> Role {
        match self {
            Self::Core(_) => Role::Smt,
            Self::Group(_) => Role::Group,
            Self::Socket(_) => Role::Socket,
            Self::Sockets(..) => Role::CrossSocket,
        }
    }
}

/// Adds the structure to the builder and returns, per context, its chain of components
/// from the core up to the socket.
pub(crate) fn structure(
    tree: &ComponentTree,
    roles: &Roles,
    b: &mut TopologyBuilder,
) -> Vec<Vec<SharedComponent>> {
    let n = tree.nodes[0].members.len();
    let mut chain: Vec<Vec<SharedComponent>> = vec![Vec::new(); n];
    let mut sockets: Vec<usize> = roles.sockets.clone();
    sockets.sort_by_key(|&s| tree.nodes[s].members[0]);
    for &s in &sockets {
        let members = if roles.kind[s] == Kind::Core {
            vec![add_core(tree.nodes[s].members.clone(), b, &mut chain)]
        } else {
            add_parts(tree, roles, s, b, &mut chain)
        };
        let sid = b.socket(members);
        for &x in &tree.nodes[s].members {
            chain[x].push(SharedComponent::Socket(sid.0));
        }
    }
    chain
}

fn add_core(
    members: Vec<usize>,
    b: &mut TopologyBuilder,
    chain: &mut [Vec<SharedComponent>],
) -> Member {
    let id = b.core(members.iter().map(|&x| ContextId(x)).collect());
    for &x in &members {
        chain[x].push(SharedComponent::Core(id.0));
    }
    Member::Core(id)
}

/// Adds the direct parts of a node (recursively) and returns them as members.
fn add_parts(
    tree: &ComponentTree,
    roles: &Roles,
    node: usize,
    b: &mut TopologyBuilder,
    chain: &mut [Vec<SharedComponent>],
) -> Vec<Member> {
    enum P {
        Node(usize),
        Ctx(usize),
    }
    let n = &tree.nodes[node];
    let mut ps: Vec<(usize, P)> = n
        .children
        .iter()
        .map(|&c| (tree.nodes[c].members[0], P::Node(c)))
        .collect();
    ps.extend(n.leaves.iter().map(|&x| (x, P::Ctx(x))));
    ps.sort_by_key(|p| p.0);
    let mut out = Vec::new();
    for (_, p) in ps {
        match p {
            P::Ctx(x) => out.push(add_core(vec![x], b, chain)),
            P::Node(c) => match roles.kind[c] {
                Kind::Core => out.push(add_core(tree.nodes[c].members.clone(), b, chain)),
                _ => {
                    let members = add_parts(tree, roles, c, b, chain);
                    let cn = &tree.nodes[c];
                    let evidence = match (cn.latency.is_some(), cn.profile.is_some(), cn.os) {
                        (true, true, _) => Evidence::LatencyGapAndProfile,
                        (true, false, _) => Evidence::LatencyGap,
                        (false, true, _) => Evidence::Profile,
                        // Only the operating system lists it (a shared cache).
                        (false, false, Some(_)) => Evidence::Given,
                        (false, false, None) => Evidence::Profile,
                    };
                    if members.len() == 1 {
                        // A set holding a single core or group adds nothing.
                        out.extend(members);
                    } else {
                        let g = b.group(members, evidence);
                        for &x in &cn.members {
                            chain[x].push(SharedComponent::Group(g.0));
                        }
                        out.push(Member::Group(g));
                    }
                }
            },
        }
    }
    out
}

/// The smallest shared component of every pair, with the latencies of the pairs of each
/// component and its latency level.
///
/// The component of a pair is found from the two contexts' chains when it is asked for,
/// and the latencies of a component are read from the table when they are needed, so
/// that nothing here grows with the number of pairs.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    n: usize,
    /// Every context's chain of dense component ids, outermost (its socket) first.
    ids: Vec<Vec<u32>>,
    /// Every context's socket.
    socket_of: Vec<usize>,
    /// The number of sockets.
    sockets: usize,
    /// The dense id of the component across each pair of sockets (`sockets`², row-major).
    pair_id: Vec<u32>,
    /// The number of measured latencies of the pairs of each component.
    pub(crate) counts: Vec<usize>,
    /// The median latency of each component (a component without any measured pair takes
    /// the median of the components of its role); NaN when none of its role has any.
    pub(crate) median: Vec<f64>,
    /// The latency level of each component.
    pub(crate) level: Vec<usize>,
    /// The levels: role and components.
    pub(crate) levels: Vec<(Role, Vec<usize>)>,
}

impl Shared {
    /// Finds the smallest shared component of every pair of `t`, given each context's chain
    /// of components from its core up to its socket.
    pub(crate) fn new(t: &Table, chain: &[Vec<SharedComponent>]) -> Self {
        let n = t.n;
        let mut components: Vec<SharedComponent> = Vec::new();
        let mut index = std::collections::HashMap::new();
        let mut id_of = |c: SharedComponent, components: &mut Vec<SharedComponent>| -> u32 {
            *index.entry(c).or_insert_with(|| {
                components.push(c);
                u32::try_from(components.len() - 1).unwrap_or(u32::MAX)
            })
        };
        // Chains as dense ids, outermost (the socket) first.
        let ids: Vec<Vec<u32>> = chain
            .iter()
            .map(|c| c.iter().rev().map(|&m| id_of(m, &mut components)).collect())
            .collect();
        let socket_of: Vec<usize> = chain
            .iter()
            .map(|c| match c.last() {
                Some(SharedComponent::Socket(s)) => *s,
                _ => 0,
            })
            .collect();
        let sockets = socket_of.iter().copied().max().map_or(1, |m| m + 1);
        let mut pair_id = vec![u32::MAX; sockets * sockets];
        for a in 0..sockets {
            for b in a + 1..sockets {
                let id = id_of(SharedComponent::Sockets(a, b), &mut components);
                pair_id[a * sockets + b] = id;
                pair_id[b * sockets + a] = id;
            }
        }
        let mut shared = Self {
            n,
            ids,
            socket_of,
            sockets,
            pair_id,
            counts: Vec::new(),
            median: Vec::new(),
            level: Vec::new(),
            levels: Vec::new(),
        };
        // Whether a component is the smallest shared one of some pair (a core of one
        // context never is).
        let mut used = vec![false; components.len()];
        for a in 0..n {
            for b in a + 1..n {
                let id = shared.id(a, b);
                if id != u32::MAX {
                    used[id as usize] = true;
                }
            }
        }
        let (middles, counts) = topoprobe_model::streamed_middles(
            components.len(),
            &|f: &mut dyn FnMut(usize, f64)| {
                shared.each_pair(t, &mut |_, _, id, v| f(id, v));
            },
        );
        let mut median: Vec<f64> = middles
            .into_iter()
            .map(crate::table::decimal_median)
            .collect();
        // A component without any measured pair (its pairs missing or rejected as outliers)
        // takes the median of the components of the same role.
        for role in [Role::Smt, Role::Group, Role::Socket, Role::CrossSocket] {
            let mut of_role: Vec<f64> = components
                .iter()
                .zip(&median)
                .filter(|(c, m)| c.role() == role && !m.is_nan())
                .map(|(_, &m)| m)
                .collect();
            let typical = topoprobe_model::median_in_place(&mut of_role).unwrap_or(f64::NAN);
            for ((c, m), &u) in components.iter().zip(median.iter_mut()).zip(&used) {
                if u && c.role() == role && m.is_nan() {
                    *m = typical;
                }
            }
        }
        let levels = level_groups(&components, &median, &counts, n);
        let mut level = vec![usize::MAX; components.len()];
        for (i, (_, members)) in levels.iter().enumerate() {
            for &c in members {
                level[c] = i;
            }
        }
        shared.counts = counts;
        shared.median = median;
        shared.level = level;
        shared.levels = levels;
        shared
    }

    /// The dense id of the smallest shared component of `a` and `b` (`a != b`), `u32::MAX`
    /// when there is none.
    #[inline]
    fn id(&self, a: usize, b: usize) -> u32 {
        let (ca, cb) = (&self.ids[a], &self.ids[b]);
        if self.socket_of[a] != self.socket_of[b] || ca.is_empty() || cb.is_empty() {
            self.pair_id[self.socket_of[a] * self.sockets + self.socket_of[b]]
        } else {
            let mut last = ca[0];
            for (x, y) in ca.iter().zip(cb) {
                if x != y {
                    break;
                }
                last = *x;
            }
            last
        }
    }

    /// Calls `f(a, b, component, latency)` for every measured pair `a < b` that has a
    /// shared component, in row order, each latency as the table holds it (single
    /// precision, in the order of the decimals it stands for: [`crate::table::decimal_of_held`]
    /// turns a minimum, a maximum or a median's middle values into those decimals).
    fn each_pair(&self, t: &Table, f: &mut dyn FnMut(usize, usize, usize, f64)) {
        for a in 0..self.n {
            for (b, &v) in (a + 1..self.n).zip(t.upper_row(a)) {
                if v.is_nan() {
                    continue;
                }
                let id = self.id(a, b);
                if id != u32::MAX {
                    f(a, b, id as usize, f64::from(v));
                }
            }
        }
    }

    /// The dense id of the smallest shared component of `a` and `b` (`a != b`).
    #[inline]
    pub(crate) fn of(&self, a: usize, b: usize) -> usize {
        self.id(a, b) as usize
    }

    /// The normalized table (every pair replaced by the median latency of its smallest
    /// shared component) and the latency levels (per role, medians closer than
    /// [`MIN_GAP`] merged), with summaries over the measured pairs of `t`.
    pub(crate) fn normalized(&self, t: &Table) -> (LatencyMatrix, Vec<LatencyLevel>) {
        let n = self.n;
        let normalized = LatencyMatrix::from_fn(n, |a, b| {
            let id = self.id(a, b);
            let m = self.median.get(id as usize).copied().unwrap_or(f64::NAN);
            (!m.is_nan()).then_some(m)
        });
        let levels = self.levels.len();
        let mut min = vec![f64::INFINITY; levels];
        let mut max = vec![f64::NEG_INFINITY; levels];
        let of_level = |id: usize| self.level.get(id).copied().filter(|&l| l < levels);
        self.each_pair(t, &mut |_, _, id, v| {
            if let Some(l) = of_level(id) {
                min[l] = min[l].min(v);
                max[l] = max[l].max(v);
            }
        });
        let (middles, count) =
            topoprobe_model::streamed_middles(levels, &|f: &mut dyn FnMut(usize, f64)| {
                self.each_pair(t, &mut |_, _, id, v| {
                    if let Some(l) = of_level(id) {
                        f(l, v);
                    }
                });
            });
        let levels = self
            .levels
            .iter()
            .enumerate()
            .filter(|&(l, _)| count[l] > 0)
            .map(|(l, (role, _))| LatencyLevel {
                id: 0,
                role: *role,
                latency: LatencySummary {
                    min: crate::table::decimal_of_held(min[l]),
                    median: crate::table::decimal_median(middles[l]),
                    max: crate::table::decimal_of_held(max[l]),
                    count: count[l],
                },
            })
            .collect();
        (normalized, levels)
    }
}

/// Groups components into levels: per role, medians closer than [`MIN_GAP`] merged,
/// and levels of fewer than `max(2, n/8)` pairs merged into their nearest neighbour of the
/// same role (a single odd core makes no level of its own).
fn level_groups(
    components: &[SharedComponent],
    median: &[f64],
    counts: &[usize],
    n: usize,
) -> Vec<(Role, Vec<usize>)> {
    let min_pairs = (n / 8).max(2);
    let mut out = Vec::new();
    for role in [Role::Smt, Role::Group, Role::Socket, Role::CrossSocket] {
        let mut keys: Vec<(f64, usize)> = (0..components.len())
            .filter(|&c| components[c].role() == role && !median[c].is_nan())
            .map(|c| (median[c], c))
            .collect();
        keys.sort_by(|x, y| {
            x.0.total_cmp(&y.0)
                .then_with(|| components[x.1].cmp(&components[y.1]))
        });
        let mut groups: Vec<Vec<(f64, usize)>> = Vec::new();
        let mut start = 0;
        for i in 0..keys.len() {
            if i + 1 == keys.len() || keys[i + 1].0 / keys[i].0 >= MIN_GAP {
                groups.push(keys[start..=i].to_vec());
                start = i + 1;
            }
        }
        let pairs = |g: &[(f64, usize)]| -> usize { g.iter().map(|k| counts[k.1]).sum() };
        while groups.len() > 1 {
            let Some(small) = (0..groups.len()).find(|&i| pairs(&groups[i]) < min_pairs) else {
                break;
            };
            // Merge into the neighbour across the smaller ratio.
            let gap = |i: usize, j: usize| -> f64 {
                let (a, b) = if i < j { (i, j) } else { (j, i) };
                groups[b][0].0 / groups[a][groups[a].len() - 1].0
            };
            let target = match (
                small.checked_sub(1),
                (small + 1 < groups.len()).then_some(small + 1),
            ) {
                (Some(l), Some(r)) => {
                    if gap(l, small) <= gap(small, r) {
                        l
                    } else {
                        r
                    }
                }
                (Some(l), None) => l,
                (None, Some(r)) => r,
                (None, None) => break,
            };
            let moved = groups.remove(small);
            let target = if target > small { target - 1 } else { target };
            groups[target].extend(moved);
            groups[target].sort_by(|x, y| x.0.total_cmp(&y.0));
        }
        out.extend(
            groups
                .into_iter()
                .map(|g| (role, g.into_iter().map(|k| k.1).collect())),
        );
    }
    out
}
