//! A plan in the forms other tools take: a CPU list, a mask, `taskset`, `numactl`,
//! OpenMP's environment and `likwid-pin`.

use topoprobe_model::{format_cpu_list, Topology};

use crate::plan::Plan;

/// Operating-system CPU numbers of the plan, in placement order.
#[must_use]
pub fn cpus(topo: &Topology, plan: &Plan) -> Vec<u32> {
    plan.contexts
        .iter()
        .map(|c| topo.contexts()[c.index()].os_id)
        .collect()
}

/// The same CPUs, ascending and without repeats.
fn cpu_set(topo: &Topology, plan: &Plan) -> Vec<u32> {
    let mut v = cpus(topo, plan);
    v.sort_unstable();
    v.dedup();
    v
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

/// The CPU set as a hexadecimal mask (`taskset` without `-c`): `0x3` for CPUs 0 and 1.
#[must_use]
pub fn mask(topo: &Topology, plan: &Plan) -> String {
    let set = cpu_set(topo, plan);
    let highest = set.last().copied().unwrap_or(0) as usize;
    let mut nibbles = vec![0_u8; highest / 4 + 1];
    for c in set {
        let c = c as usize;
        nibbles[c / 4] |= 1 << (c % 4);
    }
    let hex: String = nibbles
        .iter()
        .rev()
        .map(|n| char::from_digit(u32::from(*n), 16).unwrap_or('0'))
        .collect();
    format!("0x{hex}")
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

/// A `taskset` command prefix: `taskset -c 0-1,20-21`.
#[must_use]
pub fn taskset(topo: &Topology, plan: &Plan) -> String {
    format!("taskset -c {}", format_cpu_list(&cpu_set(topo, plan)))
}

/// A `numactl` command prefix: `numactl --physcpubind=0-1 --membind=0` (the memory binding
/// only when the description knows the nodes' numbers).
#[must_use]
pub fn numactl(topo: &Topology, plan: &Plan) -> String {
    let mut s = format!(
        "numactl --physcpubind={}",
        format_cpu_list(&cpu_set(topo, plan))
    );
    if let Some(n) = nodes(topo, plan).filter(|n| !n.is_empty()) {
        s.push_str(&format!(" --membind={}", format_cpu_list(&n)));
    }
    s
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

/// [`omp_env`] as lines (`env $(...) prog` and `export $(...)` take them as they are).
#[must_use]
pub fn omp(topo: &Topology, plan: &Plan) -> String {
    omp_env(topo, plan)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `likwid-pin` command prefix pinning threads in placement order: `likwid-pin -c 0,20,1`.
#[must_use]
pub fn likwid(topo: &Topology, plan: &Plan) -> String {
    format!("likwid-pin -c {}", list(topo, plan))
}
