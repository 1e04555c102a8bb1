//! A plan in the forms topoprobe itself uses: its CPUs in order, as a list, the memory
//! nodes of its sockets, and OpenMP's environment. The forms other tools take (`taskset`,
//! `numactl`, `likwid-pin`, `hwloc-bind`, MPI launchers) are renderings of a
//! [`PlacementResult`](topoprobe_model::results::placement::PlacementResult)
//! ([`describe`](crate::describe)), in `topoprobe_view::results::placement`.

use topoprobe_model::Topology;

use crate::plan::Plan;

/// Operating-system CPU numbers of the plan, in placement order.
#[must_use]
pub fn cpus(topo: &Topology, plan: &Plan) -> Vec<u32> {
    plan.contexts
        .iter()
        .map(|c| topo.contexts()[c.index()].os_id)
        .collect()
}

/// Comma-separated CPU numbers in placement order (`0,20,1,21`).
#[must_use]
pub fn list(topo: &Topology, plan: &Plan) -> String {
    cpus(topo, plan)
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The operating-system numbers of the local nodes of the plan's sockets, when all known.
#[must_use]
pub fn nodes(topo: &Topology, plan: &Plan) -> Option<Vec<u32>> {
    let mut v = Vec::new();
    for s in &plan.sockets {
        let node = topo.sockets()[s.index()].local_node?;
        v.push(topo.nodes().get(node.index())?.os_id?);
    }
    v.sort_unstable();
    v.dedup();
    Some(v)
}

/// OpenMP's environment, one `NAME=value` per line: `OMP_NUM_THREADS`, and `OMP_PLACES`
/// with one place per thread in placement order and `OMP_PROC_BIND=close` (thread `i` on
/// place `i`), or `OMP_PROC_BIND=false` for an unpinned plan.
#[must_use]
pub fn omp_env(topo: &Topology, plan: &Plan) -> Vec<(String, String)> {
    let mut v = vec![("OMP_NUM_THREADS".to_string(), plan.threads.to_string())];
    if plan.pinned {
        let places: Vec<String> = cpus(topo, plan)
            .iter()
            .map(|c| format!("{{{c}}}"))
            .collect();
        v.push(("OMP_PLACES".into(), places.join(",")));
        v.push(("OMP_PROC_BIND".into(), "close".into()));
    } else {
        v.push(("OMP_PROC_BIND".into(), "false".into()));
    }
    v
}
