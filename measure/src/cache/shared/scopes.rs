//! The scopes of the latency topology around one context (its core, each enclosing group,
//! its socket, the machine), the partners tested in each, and the instances a sharing
//! scope gives.

use topoprobe_model::{Component, ContextId, CoreId, SocketId, Topology};

/// A scope of the latency topology around one context, with a partner inside it but
/// outside the previous scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// The component (core, group, socket) — `None` for the whole machine.
    pub component: Option<Component>,
    /// The context tested against the first one.
    pub partner: ContextId,
}

/// A scope and the contexts it adds to the previous one (its ring), ascending.
fn rings(topo: &Topology, ctx: ContextId) -> Vec<(Option<Component>, Vec<ContextId>)> {
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
        let ring: Vec<ContextId> = members
            .iter()
            .copied()
            .filter(|m| !inside.contains(m))
            .collect();
        if !ring.is_empty() {
            out.push((c, ring));
        }
        inside = members;
    }
    out
}

/// The scopes around `ctx` that contain another context, innermost first.
#[must_use]
pub fn scopes(topo: &Topology, ctx: ContextId) -> Vec<Scope> {
    rings(topo, ctx)
        .into_iter()
        .filter_map(|(component, ring)| ring.first().map(|&partner| Scope { component, partner }))
        .collect()
}

/// A scope and the partners walked with the first context in it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopeTest {
    /// The scope (its `partner` is the first of `partners`).
    pub scope: Scope,
    /// One partner; two when the OS's instance of the level cuts the scope's ring: one
    /// inside that instance, one outside, so that the OS's boundary is tested.
    pub partners: Vec<ContextId>,
}

/// The scopes around `ctx` and their partners, innermost first; `os_instance` is the
/// OS's instance of the level that holds `ctx`, when the OS lists one.
#[must_use]
pub fn scope_tests(
    topo: &Topology,
    ctx: ContextId,
    os_instance: Option<&[ContextId]>,
) -> Vec<ScopeTest> {
    rings(topo, ctx)
        .into_iter()
        .filter_map(|(component, ring)| {
            let inside = os_instance.and_then(|o| ring.iter().copied().find(|c| o.contains(c)));
            let outside = os_instance.and_then(|o| ring.iter().copied().find(|c| !o.contains(c)));
            let partners = match (inside, outside) {
                (Some(i), Some(o)) => vec![i, o],
                _ => vec![*ring.first()?],
            };
            Some(ScopeTest {
                scope: Scope {
                    component,
                    partner: partners[0],
                },
                partners,
            })
        })
        .collect()
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
                    .map(|i| Component::Core(CoreId(i)))
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
                    .map(|i| Component::Socket(SocketId(i)))
                    .collect(),
                other => vec![*other],
            };
            kind.into_iter().map(|k| topo.contexts_of(k)).collect()
        }
    }
}
