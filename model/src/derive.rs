//! Computation and checking of everything a topology derives from its structure.

use std::collections::{HashMap, VecDeque};

use crate::components::{Interconnect, Member, Parent, Role};
use crate::data::TopologyData;
use crate::error::ModelError;
use crate::ids::{ContextId, CoreId, GroupId, SocketId};
use crate::limits::{MAX_CONTEXTS, MAX_NODES};
use crate::matrix::{LatencyMatrix, LatencySummary};

fn structure(msg: impl Into<String>) -> ModelError {
    ModelError::Structure(msg.into())
}

/// A parent in words: `socket 0`, `group 3`.
fn parent_name(p: Parent) -> String {
    match p {
        Parent::Socket(s) => format!("socket {}", s.0),
        Parent::Group(g) => format!("group {}", g.0),
    }
}

/// Fills every derived field of `d` from its structure (cores' contexts, members of
/// groups and sockets, nodes' local sockets), checking the structure on the way.
pub(crate) fn derive(d: &mut TopologyData) -> Result<(), ModelError> {
    check_tables_and_ids(d)?;
    check_limits(d)?;
    check_os_numbers(d)?;
    assign_cores(d)?;
    assign_parents(d)?;
    walk_sockets(d)?;
    fill_groups(d);
    summarize_latencies(d);
    d.interconnects = interconnects(d);
    assign_local_nodes(d)?;
    d.facts.sockets.value = d.sockets.len();
    d.facts.smt.value = d.cores.iter().any(|c| c.contexts.len() > 1);
    Ok(())
}

/// Checks that there are contexts, that the latency tables have a row per context, and
/// that every context's id is its position.
fn check_tables_and_ids(d: &TopologyData) -> Result<(), ModelError> {
    let n = d.contexts.len();
    if n == 0 {
        return Err(structure("no hardware contexts"));
    }
    for (name, m) in [
        ("raw", &d.latency.raw),
        ("normalized", &d.latency.normalized),
    ] {
        if m.len() != n {
            return Err(structure(format!(
                "{name} latency table has {} rows for {n} contexts",
                m.len()
            )));
        }
    }
    if let Some(s) = &d.latency.spread {
        if s.len() != n {
            return Err(structure(format!(
                "spread table has {} rows for {n} contexts",
                s.len()
            )));
        }
    }
    for (i, c) in d.contexts.iter().enumerate() {
        if c.id != ContextId(i) {
            return Err(structure(format!(
                "context at position {i} has id {}",
                c.id
            )));
        }
    }
    Ok(())
}

/// Checks the numbers of contexts and memory nodes against what topoprobe reads.
fn check_limits(d: &TopologyData) -> Result<(), ModelError> {
    let n = d.contexts.len();
    if n > MAX_CONTEXTS {
        return Err(structure(format!(
            "{n} hardware contexts: topoprobe reads machines of up to {MAX_CONTEXTS} (see docs/LIMITS.md)"
        )));
    }
    if d.nodes.len() > MAX_NODES {
        return Err(structure(format!(
            "{} memory nodes: topoprobe reads machines of up to {MAX_NODES} (see docs/LIMITS.md)",
            d.nodes.len()
        )));
    }
    Ok(())
}

/// Checks the operating system's numbers of contexts and nodes: in range, and no number
/// given twice.
fn check_os_numbers(d: &TopologyData) -> Result<(), ModelError> {
    let mut by_os_id: HashMap<u32, usize> = HashMap::with_capacity(d.contexts.len());
    for (i, c) in d.contexts.iter().enumerate() {
        if c.os_id > crate::MAX_CPU {
            return Err(structure(format!(
                "context {i} has OS CPU number (os_id) {}: topoprobe reads CPU numbers up to {} \
                 (see docs/LIMITS.md)",
                c.os_id,
                crate::MAX_CPU
            )));
        }
        if let Some(first) = by_os_id.insert(c.os_id, i) {
            return Err(structure(format!(
                "contexts {first} and {i} have the same OS CPU number (os_id) {}",
                c.os_id
            )));
        }
    }
    let mut node_ids: HashMap<u32, usize> = HashMap::new();
    for (i, node) in d.nodes.iter().enumerate() {
        if let Some(os) = node.os_id {
            if os as usize >= MAX_NODES {
                return Err(structure(format!(
                    "node {i} has OS node number (os_id) {os}: Linux numbers nodes below \
                     {MAX_NODES} (see docs/LIMITS.md)"
                )));
            }
            if let Some(first) = node_ids.insert(os, i) {
                return Err(structure(format!(
                    "nodes {first} and {i} have the same OS node number (os_id) {os}"
                )));
            }
        }
    }
    Ok(())
}

/// Contexts -> cores: sorts each core's contexts and sets every context's core, checking
/// that each context is in exactly one core.
fn assign_cores(d: &mut TopologyData) -> Result<(), ModelError> {
    let n = d.contexts.len();
    let mut core_of: Vec<Option<CoreId>> = vec![None; n];
    for (ci, core) in d.cores.iter_mut().enumerate() {
        if core.id != CoreId(ci) {
            return Err(structure(format!(
                "core at position {ci} has id {}",
                core.id
            )));
        }
        if core.contexts.is_empty() {
            return Err(structure(format!("core {ci} has no contexts")));
        }
        core.contexts.sort_unstable();
        for &ctx in &core.contexts {
            let slot = core_of
                .get_mut(ctx.0)
                .ok_or_else(|| structure(format!("core {ci} names context {} of {n}", ctx.0)))?;
            if let Some(other) = slot {
                return Err(structure(format!(
                    "context {} is in core {} and core {ci}",
                    ctx.0, other.0
                )));
            }
            *slot = Some(CoreId(ci));
        }
    }
    for (i, c) in core_of.iter().enumerate() {
        match c {
            Some(core) => d.contexts[i].core = *core,
            None => return Err(structure(format!("context {i} is in no core"))),
        }
    }
    Ok(())
}

/// The parent of every core and group, as the members of sockets and groups name them.
struct Parents {
    core: Vec<Option<Parent>>,
    group: Vec<Option<Parent>>,
}

impl Parents {
    /// Records `parent` as the parent of `member`, which must exist and have no other.
    fn assign(&mut self, member: Member, parent: Parent) -> Result<(), ModelError> {
        let (n_cores, n_groups) = (self.core.len(), self.group.len());
        let (slot, what) = match member {
            Member::Core(c) => (
                self.core.get_mut(c.0).ok_or_else(|| {
                    structure(format!(
                        "{} names core {} of {n_cores}",
                        parent_name(parent),
                        c.0
                    ))
                })?,
                format!("core {}", c.0),
            ),
            Member::Group(g) => (
                self.group.get_mut(g.0).ok_or_else(|| {
                    structure(format!(
                        "{} names group {} of {n_groups}",
                        parent_name(parent),
                        g.0
                    ))
                })?,
                format!("group {}", g.0),
            ),
        };
        if let Some(old) = slot {
            return Err(structure(format!(
                "{what} has two parents: {} and {}",
                parent_name(*old),
                parent_name(parent)
            )));
        }
        *slot = Some(parent);
        Ok(())
    }
}

/// Parents of cores and groups: checks the ids and members of sockets and groups and sets
/// every core's and group's parent, each having exactly one.
fn assign_parents(d: &mut TopologyData) -> Result<(), ModelError> {
    let mut parents = Parents {
        core: vec![None; d.cores.len()],
        group: vec![None; d.groups.len()],
    };
    for (si, s) in d.sockets.iter().enumerate() {
        if s.id != SocketId(si) {
            return Err(structure(format!(
                "socket at position {si} has id {}",
                s.id
            )));
        }
        if s.members.is_empty() {
            return Err(structure(format!("socket {si} is empty")));
        }
        for &m in &s.members {
            parents.assign(m, Parent::Socket(SocketId(si)))?;
        }
    }
    for (gi, g) in d.groups.iter().enumerate() {
        if g.id != GroupId(gi) {
            return Err(structure(format!("group at position {gi} has id {}", g.id)));
        }
        if g.members.is_empty() {
            return Err(structure(format!("group {gi} is empty")));
        }
        for &m in &g.members {
            if m == Member::Group(GroupId(gi)) {
                return Err(structure(format!("group {gi} contains itself")));
            }
            parents.assign(m, Parent::Group(GroupId(gi)))?;
        }
    }
    for (i, p) in parents.core.iter().enumerate() {
        d.cores[i].parent =
            p.ok_or_else(|| structure(format!("core {i} is in no socket or group")))?;
    }
    for (i, p) in parents.group.iter().enumerate() {
        d.groups[i].parent =
            p.ok_or_else(|| structure(format!("group {i} is in no socket or group")))?;
    }
    Ok(())
}

/// Walks every socket top-down, setting the socket of its cores, groups and contexts,
/// the depth of its groups and its own groups, cores and contexts; checks that every group
/// is reached exactly once.
fn walk_sockets(d: &mut TopologyData) -> Result<(), ModelError> {
    let mut group_seen = vec![false; d.groups.len()];
    for si in 0..d.sockets.len() {
        let sid = SocketId(si);
        let mut order: Vec<GroupId> = Vec::new();
        let mut queue: VecDeque<(Member, usize)> =
            d.sockets[si].members.iter().map(|&m| (m, 1)).collect();
        let mut cores: Vec<CoreId> = Vec::new();
        while let Some((m, depth)) = queue.pop_front() {
            match m {
                Member::Core(c) => {
                    d.cores[c.0].socket = sid;
                    cores.push(c);
                }
                Member::Group(g) => {
                    if group_seen[g.0] {
                        return Err(structure(format!("group {} is reached twice", g.0)));
                    }
                    group_seen[g.0] = true;
                    d.groups[g.0].socket = sid;
                    d.groups[g.0].depth = depth;
                    order.push(g);
                    for &child in &d.groups[g.0].members {
                        queue.push_back((child, depth + 1));
                    }
                }
            }
        }
        cores.sort_unstable();
        let contexts = contexts_of_cores(d, &cores);
        for &ctx in &contexts {
            d.contexts[ctx.0].socket = sid;
        }
        let s = &mut d.sockets[si];
        s.groups = order;
        s.cores = cores;
        s.contexts = contexts;
    }
    if let Some(g) = group_seen.iter().position(|seen| !seen) {
        return Err(structure(format!(
            "group {g} is not inside any socket (cycle?)"
        )));
    }
    Ok(())
}

/// The contexts of `cores`, sorted.
fn contexts_of_cores(d: &TopologyData, cores: &[CoreId]) -> Vec<ContextId> {
    let mut contexts: Vec<ContextId> = cores
        .iter()
        .flat_map(|c| d.cores[c.0].contexts.iter().copied())
        .collect();
    contexts.sort_unstable();
    contexts
}

/// Contents of groups (cores and contexts), innermost first so that nested groups are
/// done first.
fn fill_groups(d: &mut TopologyData) {
    let mut by_depth: Vec<usize> = (0..d.groups.len()).collect();
    by_depth.sort_by_key(|&g| std::cmp::Reverse(d.groups[g].depth));
    for g in by_depth {
        let mut cores = Vec::new();
        for &m in &d.groups[g].members {
            match m {
                Member::Core(c) => cores.push(c),
                Member::Group(child) => cores.extend(d.groups[child.0].cores.iter().copied()),
            }
        }
        cores.sort_unstable();
        let contexts = contexts_of_cores(d, &cores);
        d.groups[g].cores = cores;
        d.groups[g].contexts = contexts;
    }
}

/// Latency summaries of groups and sockets, between their direct members, both directions
/// of a pair taken together (read in place: no symmetric copy of an N² table).
fn summarize_latencies(d: &mut TopologyData) {
    let sym = &d.latency.raw;
    for g in 0..d.groups.len() {
        let sets = member_contexts(d, &d.groups[g].members);
        d.groups[g].latency = summary_between(sym, &sets);
    }
    for s in 0..d.sockets.len() {
        let sets = member_contexts(d, &d.sockets[s].members);
        d.sockets[s].latency = summary_between(sym, &sets);
    }
}

/// The interconnects between every two sockets with a latency between them: its level is
/// the nearest, its hops that level's rank among the cross-socket levels (1 if none).
fn interconnects(d: &TopologyData) -> Vec<Interconnect> {
    let sym = &d.latency.raw;
    let cross_levels: Vec<usize> = d
        .levels
        .iter()
        .filter(|l| l.role == Role::CrossSocket)
        .map(|l| l.id)
        .collect();
    let mut links = Vec::new();
    for a in 0..d.sockets.len() {
        for b in a + 1..d.sockets.len() {
            let sets = vec![d.sockets[a].contexts.clone(), d.sockets[b].contexts.clone()];
            if let Some(lat) = summary_between(sym, &sets) {
                let level = nearest_level(d, lat.median);
                let hops = cross_levels
                    .iter()
                    .position(|&l| l == level)
                    .map_or(1, |p| p + 1);
                links.push(Interconnect {
                    a: SocketId(a),
                    b: SocketId(b),
                    latency: lat,
                    level,
                    hops,
                });
            }
        }
    }
    links
}

/// Sets every socket's local node from the nodes' local sockets, checking the nodes' ids,
/// that the sockets exist and that none has two local nodes.
fn assign_local_nodes(d: &mut TopologyData) -> Result<(), ModelError> {
    for s in &mut d.sockets {
        s.local_node = None;
    }
    for (ni, node) in d.nodes.iter().enumerate() {
        if node.id.0 != ni {
            return Err(structure(format!(
                "node at position {ni} has id {}",
                node.id
            )));
        }
        for &s in &node.local_sockets {
            let socket = d.sockets.get_mut(s.0).ok_or_else(|| {
                structure(format!(
                    "node {ni} names socket {} that does not exist",
                    s.0
                ))
            })?;
            if let Some(other) = socket.local_node {
                return Err(structure(format!(
                    "socket {} has two local nodes: {} and {ni}",
                    s.0, other.0
                )));
            }
            socket.local_node = Some(node.id);
        }
    }
    Ok(())
}

/// The contexts of each of `members`.
fn member_contexts(d: &TopologyData, members: &[Member]) -> Vec<Vec<ContextId>> {
    members
        .iter()
        .map(|m| match *m {
            Member::Core(c) => d.cores[c.0].contexts.clone(),
            Member::Group(g) => d.groups[g.0].contexts.clone(),
        })
        .collect()
}

/// Pairs between sets up to which their latencies are summarized from a list (8 bytes a
/// pair: 16 MiB); more are streamed, 4 bytes a pair.
const LISTED_PAIRS: usize = 2 << 20;

/// The latencies between members of different sets, summarized: from a list of them, or,
/// for more than [`LISTED_PAIRS`] (a socket of 4096 contexts has 8 million), as they are
/// streamed, never held as `f64`.
fn summary_between(sym: &LatencyMatrix, sets: &[Vec<ContextId>]) -> Option<LatencySummary> {
    let each = |f: &mut dyn FnMut(f64)| {
        for i in 0..sets.len() {
            for j in i + 1..sets.len() {
                for a in &sets[i] {
                    for b in &sets[j] {
                        if let Some(v) = sym.between(a.0, b.0) {
                            f(v);
                        }
                    }
                }
            }
        }
    };
    let sizes: Vec<usize> = sets.iter().map(Vec::len).collect();
    let total: usize = sizes.iter().sum();
    let pairs = sizes.iter().map(|&s| s * (total - s)).sum::<usize>() / 2;
    if pairs > LISTED_PAIRS {
        return LatencySummary::of_streamed(each);
    }
    let mut values = Vec::with_capacity(pairs);
    each(&mut |v| values.push(v));
    LatencySummary::of(values)
}

/// The level whose range contains `value`, else the closest one in log distance (0 when
/// there are no levels).
fn nearest_level(d: &TopologyData, value: f64) -> usize {
    // Compared at the precision a description file keeps, so that the level chosen when
    // writing is the one chosen again when the file is read back.
    let r =
        |x: f64| crate::format::rounding::round_to(x, crate::format::rounding::DESCRIPTION_DIGITS);
    let value = r(value);
    if let Some(l) = d
        .levels
        .iter()
        .find(|l| r(l.latency.min) <= value && value <= r(l.latency.max))
    {
        return l.id;
    }
    d.levels
        .iter()
        .min_by(|a, b| {
            let da = (r(a.latency.median).max(f64::MIN_POSITIVE) / value.max(f64::MIN_POSITIVE))
                .ln()
                .abs();
            let db = (r(b.latency.median).max(f64::MIN_POSITIVE) / value.max(f64::MIN_POSITIVE))
                .ln()
                .abs();
            da.total_cmp(&db)
        })
        .map_or(0, |l| l.id)
}

/// Checks that the derived fields stored in a file agree with those recomputed from its
/// structure; names the first disagreement.
pub(crate) fn check_same(stored: &TopologyData, derived: &TopologyData) -> Result<(), ModelError> {
    fn first_diff<T: PartialEq + serde::Serialize>(
        what: &str,
        a: &[T],
        b: &[T],
    ) -> Result<(), ModelError> {
        if a.len() != b.len() {
            return Err(structure(format!(
                "the file has {} {what}s, the structure makes {}",
                a.len(),
                b.len()
            )));
        }
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            if x != y {
                if let Some(diff) = field_diff(x, y) {
                    return Err(structure(format!(
                        "{what} {i} disagrees with the structure: {diff}"
                    )));
                }
            }
        }
        Ok(())
    }
    first_diff("context", &stored.contexts, &derived.contexts)?;
    first_diff("core", &stored.cores, &derived.cores)?;
    first_diff("group", &stored.groups, &derived.groups)?;
    first_diff("socket", &stored.sockets, &derived.sockets)?;
    // An interconnect's level is the cross-socket level nearest its latency: at a tie of
    // rounded figures (a file keeps 10 digits) the file's choice stands, provided it is a
    // cross-socket level and its hops are that level's.
    let cross: Vec<usize> = stored
        .levels
        .iter()
        .filter(|l| l.role == Role::CrossSocket)
        .map(|l| l.id)
        .collect();
    let mut matched = derived.interconnects.clone();
    for (m, s) in matched.iter_mut().zip(&stored.interconnects) {
        let hops_of_level = cross.iter().position(|&l| l == s.level).map(|p| p + 1);
        if s.level != m.level && hops_of_level == Some(s.hops) {
            m.level = s.level;
            m.hops = s.hops;
        }
    }
    first_diff("interconnect", &stored.interconnects, &matched)?;
    first_diff("level", &stored.levels, &derived.levels)?;
    if stored.facts != derived.facts {
        if let Some(diff) = field_diff(&stored.facts, &derived.facts) {
            return Err(structure(format!(
                "the facts disagree with the structure: {diff}"
            )));
        }
    }
    Ok(())
}

/// Relative difference below which two figures are the same: the latency summaries are
/// derived from tables that keep 5 significant digits (`crate::matrix::TABLE_DIGITS`, a
/// relative 5·10⁻⁵ at most), and a description written when tables kept 10 digits holds
/// summaries of the longer figures: twice the tables' resolution covers both.
const ROUNDING_TOLERANCE: f64 = 1e-4;

/// Whether two figures agree to the precision a description keeps.
fn same_figure(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= ROUNDING_TOLERANCE * a.abs().max(b.abs())
}

/// The first field in which two values differ, as their JSON shows it:
/// `"socket" is 1 in the file, 0 from the structure`; `None` when they agree to the
/// precision a file keeps (see [`same_figure`]).
fn field_diff<T: serde::Serialize>(stored: &T, derived: &T) -> Option<String> {
    fn walk(path: &str, a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, va) in x {
                    let vb = y.get(k).unwrap_or(&Value::Null);
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    if let Some(d) = walk(&p, va, vb) {
                        return Some(d);
                    }
                }
                y.iter().find(|(k, _)| !x.contains_key(*k)).map(|(k, v)| {
                    format!(
                        "`{k}` is missing in the file, {} from the structure",
                        short(v)
                    )
                })
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (va, vb))| walk(&format!("{path}[{i}]"), va, vb)),
            _ if a == b => None,
            (Value::Number(x), Value::Number(y))
                if x.as_f64()
                    .zip(y.as_f64())
                    .is_some_and(|(x, y)| same_figure(x, y)) =>
            {
                None
            }
            _ => Some(format!(
                "`{}` is {} in the file, {} from the structure",
                if path.is_empty() { "value" } else { path },
                short(a),
                short(b)
            )),
        }
    }
    fn short(v: &serde_json::Value) -> String {
        let t = v.to_string();
        if t.chars().count() > 60 {
            let head: String = t.chars().take(60).collect();
            format!("{head}…")
        } else {
            t
        }
    }
    match (serde_json::to_value(stored), serde_json::to_value(derived)) {
        (Ok(a), Ok(b)) => walk("", &a, &b),
        _ => Some("a value differs".to_string()),
    }
}
