//! Turns the tree and its roles into a [`Topology`]: numbering, normalized latencies and
//! latency levels.

use std::collections::HashMap;

use topoprobe_model::{
    ContextId, Evidence, LatencyLevel, LatencyMatrix, LatencySummary, Member, Role, TopologyBuilder,
};

use crate::levels::MIN_GAP;
use crate::roles::{Kind, Roles};
use crate::table::Table;
use crate::tree::ComponentTree;

/// The smallest component containing both ends of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
                    let evidence = match (cn.latency.is_some(), cn.profile.is_some()) {
                        (true, true) => Evidence::LatencyGapAndProfile,
                        (true, false) => Evidence::LatencyGap,
                        _ => Evidence::Profile,
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

/// The smallest component containing both contexts.
pub(crate) fn shared_component(
    chain: &[Vec<SharedComponent>],
    a: usize,
    b: usize,
) -> SharedComponent {
    for m in &chain[a] {
        if chain[b].contains(m) {
            return *m;
        }
    }
    let sa = match chain[a].last() {
        Some(SharedComponent::Socket(s)) => *s,
        _ => 0,
    };
    let sb = match chain[b].last() {
        Some(SharedComponent::Socket(s)) => *s,
        _ => 0,
    };
    SharedComponent::Sockets(sa.min(sb), sa.max(sb))
}

/// Normalized table (every pair replaced by the median latency of its smallest shared component, or
/// socket pair) and the latency levels (per role, medians closer than [`MIN_GAP`] merged).
pub(crate) fn normalize(
    t: &Table,
    chain: &[Vec<SharedComponent>],
) -> (LatencyMatrix, Vec<LatencyLevel>) {
    let n = t.n;
    let (values, med) = values_by_component(t, chain);
    let normalized =
        LatencyMatrix::from_fn(n, |a, b| med.get(&shared_component(chain, a, b)).copied());
    let levels = level_groups(&med, &values, n)
        .into_iter()
        .filter_map(|(role, keys)| {
            let all: Vec<f64> = keys
                .iter()
                .flat_map(|m| values[m].iter().copied())
                .collect();
            LatencySummary::of(all).map(|latency| LatencyLevel {
                id: 0,
                role,
                latency,
            })
        })
        .collect();
    (normalized, levels)
}

/// For every smallest shared component (or socket pair), its latency level's index.
pub(crate) fn level_map(
    t: &Table,
    chain: &[Vec<SharedComponent>],
) -> HashMap<SharedComponent, usize> {
    let (values, med) = values_by_component(t, chain);
    let mut out = HashMap::new();
    for (i, (_, keys)) in level_groups(&med, &values, t.n).into_iter().enumerate() {
        for k in keys {
            out.insert(k, i);
        }
    }
    out
}

/// Groups shared components into levels: per role, medians closer than [`MIN_GAP`] merged,
/// and levels of fewer than `max(2, n/8)` pairs merged into their nearest neighbour of the
/// same role (a single odd core makes no level of its own).
fn level_groups(
    med: &HashMap<SharedComponent, f64>,
    values: &HashMap<SharedComponent, Vec<f64>>,
    n: usize,
) -> Vec<(Role, Vec<SharedComponent>)> {
    let min_pairs = (n / 8).max(2);
    let mut out = Vec::new();
    for role in [Role::Smt, Role::Group, Role::Socket, Role::CrossSocket] {
        let mut keys: Vec<(f64, SharedComponent)> = med
            .iter()
            .filter(|(m, _)| m.role() == role)
            .map(|(m, v)| (*v, *m))
            .collect();
        keys.sort_by(|x, y| {
            x.0.total_cmp(&y.0)
                .then_with(|| format!("{:?}", x.1).cmp(&format!("{:?}", y.1)))
        });
        let mut groups: Vec<Vec<(f64, SharedComponent)>> = Vec::new();
        let mut start = 0;
        for i in 0..keys.len() {
            if i + 1 == keys.len() || keys[i + 1].0 / keys[i].0 >= MIN_GAP {
                groups.push(keys[start..=i].to_vec());
                start = i + 1;
            }
        }
        let pairs =
            |g: &[(f64, SharedComponent)]| -> usize { g.iter().map(|k| values[&k.1].len()).sum() };
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

/// The latencies of the pairs whose smallest shared component is each component, and their medians.
fn values_by_component(
    t: &Table,
    chain: &[Vec<SharedComponent>],
) -> (
    HashMap<SharedComponent, Vec<f64>>,
    HashMap<SharedComponent, f64>,
) {
    let n = t.n;
    let mut values: HashMap<SharedComponent, Vec<f64>> = HashMap::new();
    for a in 0..n {
        for b in a + 1..n {
            let v = t.get(a, b);
            let m = shared_component(chain, a, b);
            let e = values.entry(m).or_default();
            if !v.is_nan() {
                e.push(v);
            }
        }
    }
    let mut med: HashMap<SharedComponent, f64> = HashMap::new();
    for (m, v) in &values {
        if let Some(s) = LatencySummary::of(v.iter().copied()) {
            med.insert(*m, s.median);
        }
    }
    // A component without any measured pair (its pairs missing or rejected as outliers)
    // takes the median of the components of the same role.
    for role in [Role::Smt, Role::Group, Role::Socket, Role::CrossSocket] {
        let of_role = LatencySummary::of(
            med.iter()
                .filter(|(m, _)| m.role() == role)
                .map(|(_, v)| *v)
                .collect::<Vec<f64>>(),
        );
        if let Some(s) = of_role {
            for m in values.keys() {
                if m.role() == role && !med.contains_key(m) {
                    med.insert(*m, s.median);
                }
            }
        }
    }
    (values, med)
}
