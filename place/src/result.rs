//! A placement as data ([`PlacementResult`]): what `topoprobe place` writes, in any of the
//! forms `topoprobe-view` renders.

use topoprobe_model::results::placement::{EnvVar, PlacementResult, ThreadInfo};
use topoprobe_model::Topology;

use crate::error::PlaceError;
use crate::export;
use crate::plan::{plan, Plan, Request};
use crate::summary::Summary;

/// Plans `req` over `topo` and describes the placement.
///
/// # Errors
///
/// As [`plan`](crate::plan()): requests this topology cannot serve.
///
/// ```
/// use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};
/// use topoprobe_place::{place, Policy, Request};
///
/// let mut b = TopologyBuilder::new(vec![0, 1], LatencyUnit::Ns);
/// let c0 = b.core(vec![ContextId(0)]);
/// let c1 = b.core(vec![ContextId(1)]);
/// b.socket(vec![Member::Core(c0), Member::Core(c1)]);
/// let lat = LatencyMatrix::from_fn(2, |_, _| Some(40.0));
/// b.latencies(lat.clone(), lat);
/// let topo = b.build()?;
///
/// let p = place(&topo, &Request::new(Policy::ConHwc))?;
/// assert_eq!(p.contexts, vec![0, 1]);
/// assert_eq!(p.omp[0].value, "2");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn place(topo: &Topology, req: &Request) -> Result<PlacementResult, PlaceError> {
    Ok(describe(topo, &plan(topo, req)?))
}

/// The placements a report shows as examples: a few policies (`CON_HWC`, `CON_CORE_HWC`,
/// `BALANCE_CORE`, `RR_CORE`, `RR_SCALE`, `POWER`), each for half and for all of the
/// machine's contexts; those a policy cannot serve (POWER without power figures, RR_SCALE
/// without bandwidth) are left out.
#[must_use]
pub fn examples(topo: &Topology) -> Vec<PlacementResult> {
    use crate::policy::Policy;
    let n = topo.num_contexts();
    let mut out = Vec::new();
    for policy in [
        Policy::ConHwc,
        Policy::ConCoreHwc,
        Policy::BalanceCore,
        Policy::RrCore,
        Policy::RrScale,
        Policy::Power,
    ] {
        for threads in [(n / 2).max(1), n] {
            let req = Request {
                threads: Some(threads),
                ..Request::new(policy)
            };
            if let Ok(p) = place(topo, &req) {
                out.push(p);
            }
        }
    }
    out
}

/// A plan over its topology as data: its CPUs, nodes, every slot, the summary and the
/// OpenMP environment.
#[must_use]
pub fn describe(topo: &Topology, plan: &Plan) -> PlacementResult {
    let host = topo.machine().hostname.clone().filter(|h| !h.is_empty());
    PlacementResult {
        policy: plan.policy.name().to_string(),
        threads: plan.threads,
        pinned: plan.pinned,
        contexts: export::cpus(topo, plan),
        nodes: export::nodes(topo, plan),
        host,
        omp: export::omp_env(topo, plan)
            .into_iter()
            .map(|(k, v)| EnvVar::new(k, v))
            .collect(),
        slots: thread_infos(topo, plan),
        summary: Summary::new(topo, plan).into(),
    }
}

/// Every pinned thread's place, in placement order (empty for an unpinned plan).
fn thread_infos(topo: &Topology, plan: &Plan) -> Vec<ThreadInfo> {
    if !plan.pinned {
        return Vec::new();
    }
    let mut infos = Vec::with_capacity(plan.contexts.len());
    for (i, &ctx) in plan.contexts.iter().enumerate() {
        let hw = &topo.contexts()[ctx.index()];
        let earlier = &plan.contexts[..i];
        let node_id = topo.local_node(ctx);
        let node = node_id.map(|n| {
            topo.nodes()
                .get(n.index())
                .and_then(|x| x.os_id)
                .unwrap_or(n.index() as u32)
        });
        let leads_node = match node_id {
            Some(n) => !earlier.iter().any(|&c| topo.local_node(c) == Some(n)),
            None => !earlier
                .iter()
                .any(|&c| topo.socket_of(c) == Some(hw.socket)),
        };
        infos.push(ThreadInfo {
            thread: i,
            context: hw.os_id,
            core: hw.core.index(),
            socket: hw.socket.index(),
            node,
            index_in_socket: earlier
                .iter()
                .filter(|&&c| topo.socket_of(c) == Some(hw.socket))
                .count(),
            index_in_core: earlier
                .iter()
                .filter(|&&c| topo.core_of(c) == Some(hw.core))
                .count(),
            leads_node,
        });
    }
    infos
}
