//! Which contexts share a cache level (Servet Fig. 5), tested on representatives chosen
//! from the latency topology rather than on all pairs.
//!
//! Two threads walk arrays of two thirds of the level's size at the same time; when they
//! share the level, the arrays no longer fit together and each walk becomes at least
//! twice as slow as alone. From one context outwards, one partner per latency scope (its
//! core, each enclosing group, its socket, the machine) is tested; the widest scope that
//! still shares is the level's sharing domain, and its components are the instances.

use std::sync::Barrier;

use topoprobe_model::{Component, ContextId, Topology};

use super::traverse;
use crate::cache::CacheError;
use topoprobe_sys::affinity::pin_current_thread;
use topoprobe_sys::buffer::{Buffer, PagePlacement};

/// Slowdown above which two contexts share the level (Servet's ratio > 2).
pub const SHARED_RATIO: f64 = 2.0;

/// A scope of the latency topology around one context, with a partner inside it but
/// outside the previous scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// The component (core, group, socket) — `None` for the whole machine.
    pub component: Option<Component>,
    /// The context tested against the first one.
    pub partner: ContextId,
}

/// The scopes around `ctx` that contain another context, innermost first.
#[must_use]
pub fn scopes(topo: &Topology, ctx: ContextId) -> Vec<Scope> {
    let mut around: Vec<Option<Component>> = Vec::new();
    if let Some(core) = topo.core_of(ctx) {
        around.push(Some(Component::Core(core)));
    }
    around.extend(
        topo.groups_of(ctx)
            .into_iter()
            .map(|g| Some(Component::Group(g))),
    );
    if let Some(s) = topo.socket_of(ctx) {
        around.push(Some(Component::Socket(s)));
    }
    around.push(None);
    let mut out = Vec::new();
    let mut inside: Vec<ContextId> = vec![ctx];
    for c in around {
        let members: Vec<ContextId> = match c {
            Some(c) => topo.contexts_of(c),
            None => topo.contexts().iter().map(|h| h.id).collect(),
        };
        if let Some(&partner) = members.iter().find(|m| !inside.contains(m)) {
            out.push(Scope {
                component: c,
                partner,
            });
        }
        inside = members;
    }
    out
}

/// The instances of a level shared within `scope`: the contexts of every component of the
/// scope's kind (every context alone when `scope` is `None`: the level is private).
#[must_use]
pub fn instances(topo: &Topology, scope: Option<&Scope>) -> Vec<Vec<ContextId>> {
    match scope {
        None => topo.contexts().iter().map(|h| vec![h.id]).collect(),
        Some(Scope {
            component: None, ..
        }) => vec![topo.contexts().iter().map(|h| h.id).collect()],
        Some(Scope {
            component: Some(c), ..
        }) => {
            let kind: Vec<Component> = match c {
                Component::Core(_) => (0..topo.num_cores())
                    .map(|i| Component::Core(topoprobe_model::CoreId(i)))
                    .collect(),
                Component::Group(g) => {
                    let depth = topo.groups()[g.0].depth;
                    topo.groups()
                        .iter()
                        .filter(|x| x.depth == depth)
                        .map(|x| Component::Group(x.id))
                        .collect()
                }
                Component::Socket(_) => (0..topo.num_sockets())
                    .map(|i| Component::Socket(topoprobe_model::SocketId(i)))
                    .collect(),
                other => vec![*other],
            };
            kind.into_iter().map(|k| topo.contexts_of(k)).collect()
        }
    }
}

/// One tested pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairTest {
    /// First context.
    pub a: ContextId,
    /// Second context.
    pub b: ContextId,
    /// Concurrent walk time over the walk alone.
    pub ratio: f64,
}

/// Finds the sharing domain of a level of `bytes` bytes: tests the scopes around the first
/// context from the inside out and stops at the first that does not share. Returns the
/// instances and every pair tested.
///
/// # Errors
///
/// [`CacheError`] when a thread cannot be pinned or an array allocated.
pub fn sharing(
    topo: &Topology,
    bytes: u64,
    rounds: usize,
) -> Result<(Vec<Vec<ContextId>>, Vec<PairTest>), CacheError> {
    let array = (bytes * 2 / 3).max(traverse::STRIDE_BYTES as u64);
    let os = |c: ContextId| topo.contexts()[c.0].os_id;
    sharing_with(topo, |a, b| {
        let cpus: Vec<u32> = std::iter::once(os(a)).chain(b.map(os)).collect();
        let times = walk_together(&cpus, array, rounds)?;
        Ok(times.iter().sum::<f64>() / times.len() as f64)
    })
}

/// [`sharing`] with the walk given: `walk(a, None)` is the time of a walk alone on `a`,
/// `walk(a, Some(b))` the mean time of two walks at once (tests drive it with simulated
/// caches).
///
/// # Errors
///
/// What `walk` returns.
pub fn sharing_with<E>(
    topo: &Topology,
    mut walk: impl FnMut(ContextId, Option<ContextId>) -> Result<f64, E>,
) -> Result<(Vec<Vec<ContextId>>, Vec<PairTest>), E> {
    let Some(first) = topo.contexts().first().map(|h| h.id) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let alone = walk(first, None)?;
    let mut tests = Vec::new();
    let mut widest: Option<Scope> = None;
    for scope in scopes(topo, first) {
        let ratio = walk(first, Some(scope.partner))? / alone;
        tests.push(PairTest {
            a: first,
            b: scope.partner,
            ratio,
        });
        if ratio <= SHARED_RATIO {
            break;
        }
        widest = Some(scope);
    }
    Ok((instances(topo, widest.as_ref()), tests))
}

/// Walks an array of `bytes` on each CPU at the same time; returns each walk's ns/access.
fn walk_together(cpus: &[u32], bytes: u64, rounds: usize) -> Result<Vec<f64>, CacheError> {
    let barrier = Barrier::new(cpus.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                let barrier = &barrier;
                s.spawn(move || -> Result<f64, CacheError> {
                    let pinned = pin_current_thread(cpu);
                    let buf = Buffer::new(
                        bytes as usize,
                        PagePlacement {
                            node: None,
                            huge_pages: Some(false),
                        },
                    );
                    // Every thread reaches the barrier, even one that failed.
                    let ready = pinned.map_err(CacheError::from).and_then(|()| {
                        let mut b = buf?;
                        b.touch();
                        let n = traverse::prepare(b.words_mut(), bytes as usize);
                        traverse::walk(b.words(), n);
                        Ok((b, n))
                    });
                    barrier.wait();
                    let (b, n) = ready?;
                    Ok(traverse::ns_per_access(
                        b.words(),
                        n,
                        rounds,
                        n.max(1 << 20),
                    ))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_infer::{infer, InferOptions};
    use topoprobe_model::LatencyMatrix;

    /// 2 sockets × 2 groups × 2 cores × 2 SMT contexts (context i's sibling is i + 8).
    fn topo() -> Topology {
        let lat = LatencyMatrix::from_fn(16, |a, b| {
            let (ca, cb) = (a % 8, b % 8);
            Some(if a == b {
                0.0
            } else if ca == cb {
                8.0
            } else if ca / 2 == cb / 2 {
                30.0
            } else if ca / 4 == cb / 4 {
                60.0
            } else {
                200.0
            })
        });
        infer(&lat, &InferOptions::default()).unwrap()
    }

    #[test]
    fn scopes_go_from_the_core_to_the_machine() {
        let t = topo();
        let s = scopes(&t, ContextId(0));
        let partners: Vec<usize> = s.iter().map(|x| x.partner.0).collect();
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(partners[0], 8);
        assert!(matches!(s[0].component, Some(Component::Core(_))));
        assert!(matches!(s[1].component, Some(Component::Group(_))));
        assert!(matches!(s[2].component, Some(Component::Socket(_))));
        assert!(s[3].component.is_none());
        // Each partner is outside the previous scope.
        assert_eq!(t.context_latency(ContextId(0), s[1].partner), Some(30.0));
    }

    #[test]
    fn instances_follow_the_widest_sharing_scope() {
        let t = topo();
        let s = scopes(&t, ContextId(0));
        assert_eq!(instances(&t, None).len(), 16);
        let per_core = instances(&t, Some(&s[0]));
        assert_eq!(per_core.len(), 8);
        assert!(per_core.iter().all(|c| c.len() == 2));
        let per_group = instances(&t, Some(&s[1]));
        assert_eq!(per_group.len(), 4);
        assert!(per_group.iter().all(|c| c.len() == 4));
        assert_eq!(instances(&t, Some(&s[2])).len(), 2);
        assert_eq!(
            instances(&t, Some(&s[3])),
            vec![(0..16).map(ContextId).collect::<Vec<_>>()]
        );
    }

    #[test]
    fn simulated_caches_give_their_sharing_domains() {
        let t = topo();
        // A simulated machine: L1 per core (shared by SMT siblings), L2 per group of two
        // cores, L3 per socket. Two walks that share the level take 3× as long (noise
        // aside); walks that do not, 1.05×.
        let shares = |level: usize, a: ContextId, b: ContextId| match level {
            1 => a.0 % 8 == b.0 % 8,
            2 => (a.0 % 8) / 2 == (b.0 % 8) / 2,
            _ => (a.0 % 8) / 4 == (b.0 % 8) / 4,
        };
        for (level, count, size) in [(1usize, 8usize, 2usize), (2, 4, 4), (3, 2, 8)] {
            let (inst, tests) = sharing_with(&t, |a, b| -> Result<f64, ()> {
                Ok(match b {
                    None => 10.0,
                    Some(b) if shares(level, a, b) => 31.0,
                    Some(_) => 10.5,
                })
            })
            .unwrap();
            assert_eq!(inst.len(), count, "level {level}: {inst:?}");
            assert!(
                inst.iter().all(|i| i.len() == size),
                "level {level}: {inst:?}"
            );
            // It stops at the first scope that does not share.
            assert!(tests.last().unwrap().ratio < SHARED_RATIO);
            assert_eq!(tests.len(), level + 1);
        }
        // A private cache: even the SMT sibling does not share it.
        let (inst, tests) = sharing_with(&t, |_, b| -> Result<f64, ()> {
            Ok(if b.is_none() { 10.0 } else { 10.2 })
        })
        .unwrap();
        assert_eq!(inst.len(), 16);
        assert_eq!(tests.len(), 1);
    }
}
