//! The component tree: latency components and profile groups merged into one laminar
//! family of context sets, with the evidence for each.

use crate::profiles::{ProfileGroup, Profiles};
use crate::table::Table;
use crate::threshold::LatencyComponent;

/// Evidence that a profile group has: the number of components it merged and its separation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ProfileEvidence {
    pub(crate) children: usize,
    pub(crate) separation: f64,
    pub(crate) plain_separation: f64,
    /// Profile discrepancy (log) of the nearest outsider.
    pub(crate) outside: f64,
}

/// What the operating system says of a set of contexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OsSet {
    /// The contexts are SMT siblings of one core.
    Core,
    /// The contexts share a cache of this level.
    Cache(u8),
}

/// A candidate set of contexts with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    pub(crate) members: Vec<usize>,
    /// Class boundary below which the members form a latency component.
    pub(crate) latency: Option<usize>,
    /// Profile-group evidence.
    pub(crate) profile: Option<ProfileEvidence>,
    /// What the operating system says of the set, when it lists it.
    pub(crate) os: Option<OsSet>,
    /// A socket the socket decision chose (it takes precedence over every other set).
    pub(crate) socket: bool,
    /// Two contexts left beside the SMT cores of their kind that every other context sees
    /// alike: one core of that kind (garbled siblings).
    pub(crate) paired: bool,
}

/// A candidate left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dropped {
    pub(crate) members: Vec<usize>,
    pub(crate) reason: DropReason,
    /// It had strong evidence: a latency gap, a profile group of at least three parts, or
    /// the operating system's word.
    pub(crate) strong: bool,
}

impl Candidate {
    /// Whether the set has strong evidence (see [`Dropped::strong`]).
    pub(crate) fn strong(&self) -> bool {
        self.latency.is_some() || self.os.is_some() || self.profile.is_some_and(|p| p.children >= 3)
    }
}

/// Why a candidate was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DropReason {
    /// A profile pair without a latency gap (for example two cores on one mesh stop).
    ProfilePair,
    /// A fast pair whose latency profiles differ: an outlier measurement.
    OutlierPair,
    /// It crosses a set with stronger evidence.
    Crossing,
    /// Its members are only set apart by lacking (or having) a close partner, such as
    /// contexts whose SMT sibling was not measured.
    PartnerOnly,
    /// An operating-system set that crosses a set the latencies show.
    OsConflict,
    /// A group whose contrast with the rest of its parent is below what the noise and the
    /// timer resolve.
    WeakContrast,
    /// A group that is only the rest of its parent beside one or two far cores.
    FarCores,
    /// A profile group that is only the rest of its parent beside a few cores that are
    /// each odd in their own way (no profile in common).
    OddCores,
}

/// A node of the component tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TreeNode {
    pub(crate) members: Vec<usize>,
    /// What the operating system says of the set.
    pub(crate) os: Option<OsSet>,
    /// A socket the socket decision chose.
    pub(crate) socket: bool,
    /// Paired as garbled siblings (see [`Candidate::paired`]).
    pub(crate) paired: bool,
    pub(crate) children: Vec<usize>,
    /// Contexts directly under this node (in no child).
    pub(crate) leaves: Vec<usize>,
    pub(crate) parent: Option<usize>,
    pub(crate) latency: Option<usize>,
    pub(crate) profile: Option<ProfileEvidence>,
}

/// The tree; node 0 is the root (every context).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ComponentTree {
    pub(crate) nodes: Vec<TreeNode>,
}

/// Merges latency components, profile groups and the operating system's sets into a
/// laminar family, applying the significance rules: a profile group needs at least three
/// parts (pairs are common artefacts such as two cores on one mesh stop) unless it is a
/// pair of single contexts, which may be an SMT core (the SMT decision takes or drops it),
/// and a fast pair must also be a pair by profile (otherwise it is an outlier measurement).
/// Latency components come first, then profile groups, then the operating system's sets;
/// a set crossing one kept before it is left out.
pub(crate) fn family(
    t: &Table,
    components: &[LatencyComponent],
    profiles: &Profiles,
    os: Option<&crate::options::OsEvidence>,
) -> (Vec<Candidate>, Vec<Dropped>) {
    let groups: &[ProfileGroup] = &profiles.sets;
    let mut cands: Vec<Candidate> = Vec::new();
    let mut index: std::collections::HashMap<Vec<usize>, usize> = std::collections::HashMap::new();
    let mut add = |cands: &mut Vec<Candidate>, members: &[usize]| -> usize {
        *index.entry(members.to_vec()).or_insert_with(|| {
            cands.push(Candidate {
                members: members.to_vec(),
                latency: None,
                profile: None,
                os: None,
                socket: false,
                paired: false,
            });
            cands.len() - 1
        })
    };
    for c in components {
        let i = add(&mut cands, &c.members);
        cands[i].latency = Some(cands[i].latency.map_or(c.boundary, |b| b.min(c.boundary)));
    }
    for tw in groups {
        let i = add(&mut cands, &tw.members);
        cands[i].profile = Some(ProfileEvidence {
            children: tw.children,
            separation: tw.separation,
            plain_separation: tw.plain_separation,
            outside: tw.outside,
        });
    }
    if let Some(os) = os {
        let sets = os.smt_siblings.iter().map(|s| (s, OsSet::Core)).chain(
            os.shared_caches
                .iter()
                .map(|c| (&c.rows, OsSet::Cache(c.level))),
        );
        for (rows, what) in sets {
            let mut m: Vec<usize> = rows.iter().copied().filter(|&x| x < t.n).collect();
            m.sort_unstable();
            m.dedup();
            if m.len() < 2 || m.len() >= t.n {
                continue;
            }
            let i = add(&mut cands, &m);
            // A core's set is its siblings even when a cache is shared by exactly them.
            if cands[i].os != Some(OsSet::Core) {
                cands[i].os = Some(what);
            }
        }
    }
    // Sizes of the sets that both latency and profile confirm (for example SMT cores): a
    // two-part profile group of such a size whose parts have no latency between them
    // (missing or rejected as outliers) is taken to be one more of the same.
    let confirmed: Vec<usize> = cands
        .iter()
        .filter(|c| c.latency.is_some() && c.profile.is_some())
        .map(|c| c.members.len())
        .collect();
    let unmeasured: Vec<Vec<usize>> = groups
        .iter()
        .filter(|tw| {
            tw.parts.len() == 2
                && confirmed.contains(&tw.members.len())
                && t.between(&tw.parts[0], &tw.parts[1]).is_empty()
        })
        .map(|tw| tw.members.clone())
        .collect();
    let mut dropped = Vec::new();
    let mut kept: Vec<Candidate> = Vec::new();
    for c in cands {
        let profile_only = c.latency.is_none() && c.os.is_none();
        let reason = if profile_only
            && c.profile.is_some_and(|p| p.children < 3)
            && c.members.len() > 2
            && !unmeasured.contains(&c.members)
            && !inverted(t, &c.members)
        {
            Some(DropReason::ProfilePair)
        } else if profile_only
            && c.profile
                .is_some_and(|p| p.plain_separation < crate::profiles::SEPARATION)
            && !unmeasured.contains(&c.members)
        {
            Some(DropReason::PartnerOnly)
        } else if c.members.len() == 2
            && c.profile.is_none()
            && c.os.is_none()
            && !crate::profiles::confirmed_by_profiles(profiles, c.members[0], c.members[1])
        {
            Some(DropReason::OutlierPair)
        } else {
            None
        };
        match reason {
            Some(reason) => dropped.push(Dropped {
                strong: c.strong(),
                members: c.members,
                reason,
            }),
            None => kept.push(c),
        }
    }
    let (family, crossing) = laminar(t.n, kept);
    dropped.extend(crossing);
    (family, dropped)
}

/// The priority of a candidate when sets cross: chosen sockets, then latency components
/// (small first), then profile groups (best separated first), then the operating system's
/// sets.
fn priority(c: &Candidate) -> (u8, usize, f64) {
    let tier = if c.socket || c.paired {
        0
    } else if c.latency.is_some() {
        1
    } else if c.profile.is_some() {
        2
    } else {
        3
    };
    let size = if tier == 2 { 0 } else { c.members.len() };
    (tier, size, -c.profile.map_or(0.0, |p| p.separation))
}

/// Keeps candidates in priority order, leaving out every one that crosses a set kept
/// before it (shares contexts without either holding the other).
pub(crate) fn laminar(n: usize, mut cands: Vec<Candidate>) -> (Vec<Candidate>, Vec<Dropped>) {
    cands.sort_by(|a, b| {
        let (pa, pb) = (priority(a), priority(b));
        pa.0.cmp(&pb.0)
            .then(pa.1.cmp(&pb.1))
            .then(pa.2.total_cmp(&pb.2))
            .then_with(|| a.members.cmp(&b.members))
    });
    // The kept sets holding each context.
    let mut holding: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut kept: Vec<Candidate> = Vec::new();
    let mut dropped = Vec::new();
    let mut count = vec![0_usize; 0];
    for c in cands {
        // How many of c's contexts each kept set holds.
        count.clear();
        count.resize(kept.len(), 0);
        let mut touched: Vec<usize> = Vec::new();
        for &x in &c.members {
            for &k in &holding[x] {
                if count[k] == 0 {
                    touched.push(k);
                }
                count[k] += 1;
            }
        }
        let m = c.members.len();
        let crosses = touched.iter().any(|&k| {
            let shared = count[k];
            let size = kept[k].members.len();
            shared < m && shared < size
        });
        if crosses {
            let reason = if c.os.is_some() && c.latency.is_none() && c.profile.is_none() {
                DropReason::OsConflict
            } else {
                DropReason::Crossing
            };
            dropped.push(Dropped {
                strong: c.strong(),
                members: c.members,
                reason,
            });
        } else {
            let id = kept.len();
            for &x in &c.members {
                holding[x].push(id);
            }
            kept.push(c);
        }
    }
    (kept, dropped)
}

/// Whether the latencies inside a set are all above its latencies to every other context
/// (as in an Intel E-core cluster), which mesh artefacts never are.
fn inverted(t: &Table, members: &[usize]) -> bool {
    let rest: Vec<usize> = (0..t.n)
        .filter(|x| members.binary_search(x).is_err())
        .collect();
    let mut inside = t.within(members);
    let mut outside = t.between(members, &rest);
    if inside.is_empty() || outside.is_empty() {
        return false;
    }
    crate::table::quantile(&mut inside, 0.05)
        > crate::levels::MIN_GAP.sqrt() * crate::table::quantile(&mut outside, 0.95)
}

/// Builds the tree of a laminar family over `n` contexts.
pub(crate) fn build(n: usize, family: &[Candidate]) -> ComponentTree {
    let mut order: Vec<&Candidate> = family.iter().filter(|c| c.members.len() < n).collect();
    order.sort_by(|a, b| {
        b.members
            .len()
            .cmp(&a.members.len())
            .then(a.members.cmp(&b.members))
    });
    let root_evidence = family.iter().find(|c| c.members.len() == n);
    let mut nodes = vec![TreeNode {
        members: (0..n).collect(),
        children: Vec::new(),
        leaves: Vec::new(),
        parent: None,
        latency: root_evidence.and_then(|c| c.latency),
        profile: root_evidence.and_then(|c| c.profile),
        os: root_evidence.and_then(|c| c.os),
        socket: root_evidence.is_some_and(|c| c.socket),
        paired: false,
    }];
    let mut owner = vec![0_usize; n];
    for c in order {
        let parent = owner[c.members[0]];
        let id = nodes.len();
        nodes.push(TreeNode {
            members: c.members.clone(),
            children: Vec::new(),
            leaves: Vec::new(),
            parent: Some(parent),
            latency: c.latency,
            profile: c.profile,
            os: c.os,
            socket: c.socket,
            paired: c.paired,
        });
        nodes[parent].children.push(id);
        for &x in &c.members {
            owner[x] = id;
        }
    }
    for (x, &o) in owner.iter().enumerate() {
        nodes[o].leaves.push(x);
    }
    ComponentTree { nodes }
}

impl ComponentTree {
    /// Nodes from the root down (parents before children).
    pub(crate) fn top_down(&self) -> Vec<usize> {
        let mut out = vec![0];
        let mut i = 0;
        while i < out.len() {
            out.extend(self.nodes[out[i]].children.iter().copied());
            i += 1;
        }
        out
    }
}
