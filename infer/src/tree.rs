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
}

/// A candidate set of contexts with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    pub(crate) members: Vec<usize>,
    /// Class boundary below which the members form a latency component.
    pub(crate) latency: Option<usize>,
    /// Profile-group evidence.
    pub(crate) profile: Option<ProfileEvidence>,
}

/// A candidate left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dropped {
    pub(crate) members: Vec<usize>,
    pub(crate) reason: DropReason,
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
}

/// A node of the component tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TreeNode {
    pub(crate) members: Vec<usize>,
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

/// Merges latency components and profile groups into a laminar family, applying the
/// significance rules: a profile group needs at least three parts (pairs are common
/// artefacts such as two cores on one mesh stop), and a fast pair must also be a pair by
/// profile (otherwise it is an outlier measurement).
pub(crate) fn family(
    t: &Table,
    components: &[LatencyComponent],
    profiles: &Profiles,
) -> (Vec<Candidate>, Vec<Dropped>) {
    let groups: &[ProfileGroup] = &profiles.sets;
    let mut cands: Vec<Candidate> = Vec::new();
    let find = |cands: &Vec<Candidate>, m: &[usize]| cands.iter().position(|c| c.members == m);
    for c in components {
        match find(&cands, &c.members) {
            Some(i) => {
                cands[i].latency = Some(cands[i].latency.map_or(c.boundary, |b| b.min(c.boundary)))
            }
            None => cands.push(Candidate {
                members: c.members.clone(),
                latency: Some(c.boundary),
                profile: None,
            }),
        }
    }
    for tw in groups {
        let ev = ProfileEvidence {
            children: tw.children,
            separation: tw.separation,
            plain_separation: tw.plain_separation,
        };
        match find(&cands, &tw.members) {
            Some(i) => cands[i].profile = Some(ev),
            None => cands.push(Candidate {
                members: tw.members.clone(),
                latency: None,
                profile: Some(ev),
            }),
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
        let reason = if c.latency.is_none()
            && c.profile.is_some_and(|p| p.children < 3)
            && !unmeasured.contains(&c.members)
            && !inverted(t, &c.members)
        {
            Some(DropReason::ProfilePair)
        } else if c.latency.is_none()
            && c.profile
                .is_some_and(|p| p.plain_separation < crate::profiles::SEPARATION)
            && !unmeasured.contains(&c.members)
        {
            Some(DropReason::PartnerOnly)
        } else if c.members.len() == 2
            && c.profile.is_none()
            && !crate::pipeline::confirmed_by_profiles(profiles, t.n, c.members[0], c.members[1])
        {
            Some(DropReason::OutlierPair)
        } else {
            None
        };
        match reason {
            Some(reason) => dropped.push(Dropped {
                members: c.members,
                reason,
            }),
            None => kept.push(c),
        }
    }
    // Priority: latency components (small first), then profile groups by separation.
    kept.sort_by(|a, b| {
        let ka = (a.latency.is_none(), a.members.len());
        let kb = (b.latency.is_none(), b.members.len());
        ka.cmp(&kb).then_with(|| {
            let sa = a.profile.map_or(0.0, |p| p.separation);
            let sb = b.profile.map_or(0.0, |p| p.separation);
            sb.total_cmp(&sa)
        })
    });
    let words = t.n.div_ceil(64);
    let bits = |m: &[usize]| {
        let mut v = vec![0_u64; words];
        for &x in m {
            v[x / 64] |= 1 << (x % 64);
        }
        v
    };
    let mut accepted: Vec<(Vec<u64>, Candidate)> = Vec::new();
    for c in kept {
        let b = bits(&c.members);
        let crosses = accepted.iter().any(|(ab, _)| {
            let mut inter = false;
            let mut a_minus_b = false;
            let mut b_minus_a = false;
            for w in 0..words {
                inter |= ab[w] & b[w] != 0;
                a_minus_b |= ab[w] & !b[w] != 0;
                b_minus_a |= b[w] & !ab[w] != 0;
            }
            inter && a_minus_b && b_minus_a
        });
        if crosses {
            dropped.push(Dropped {
                members: c.members,
                reason: DropReason::Crossing,
            });
        } else {
            accepted.push((b, c));
        }
    }
    (accepted.into_iter().map(|(_, c)| c).collect(), dropped)
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
