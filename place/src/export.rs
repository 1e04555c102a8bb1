//! A plan in the forms other tools take: a CPU list, a mask, `taskset`, `numactl`,
//! OpenMP's environment, `likwid-pin`, `hwloc-bind`, and the MPI launchers (Open MPI's
//! rankfile, Slurm's `--cpu-bind`, Intel MPI's processor list): one rank per thread of the
//! plan, rank `i` on the plan's `i`-th CPU.

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

/// A `hwloc-bind` command prefix binding to the plan's CPUs by their operating-system
/// numbers: `hwloc-bind --physical pu:0 pu:20 pu:1 pu:21` (append `-- prog`).
#[must_use]
pub fn hwloc(topo: &Topology, plan: &Plan) -> String {
    let mut s = String::from("hwloc-bind --physical");
    for c in cpu_set(topo, plan) {
        s.push_str(&format!(" pu:{c}"));
    }
    s
}

/// An Open MPI rankfile placing rank `i` on the plan's `i`-th CPU, by operating-system
/// CPU number, on the described machine (its host name, `localhost` when the description
/// has none): `rank 0=node7 slot=0`, one line per rank, after comment lines giving the
/// `mpirun` options it needs (`--mca rmaps_rank_file_physical 1`: the slots are physical
/// processor numbers).
#[must_use]
pub fn rankfile(topo: &Topology, plan: &Plan) -> String {
    let cpus = cpus(topo, plan);
    let host = topo
        .machine()
        .hostname
        .as_deref()
        .filter(|h| !h.is_empty() && !h.contains(char::is_whitespace))
        .unwrap_or("localhost");
    let mut s = format!(
        "# Open MPI rankfile: {} ranks, rank i on the i-th CPU of the placement (physical numbers)\n\
         # mpirun --mca rmaps_rank_file_physical 1 --use-hwthread-cpus --rankfile FILE -np {} prog\n",
        cpus.len(),
        cpus.len()
    );
    for (rank, c) in cpus.iter().enumerate() {
        s.push_str(&format!("rank {rank}={host} slot={c}\n"));
    }
    s.pop();
    s
}

/// Slurm's binding of the ranks of each node, rank `i` on the plan's `i`-th CPU:
/// `--cpu-bind=map_cpu:0,20,1,21` (decimal machine CPU numbers, reused from the start
/// when a node runs more tasks).
#[must_use]
pub fn slurm_map(topo: &Topology, plan: &Plan) -> String {
    format!("--cpu-bind=map_cpu:{}", list(topo, plan))
}

/// Slurm's binding by masks, one per rank in placement order:
/// `--cpu-bind=mask_cpu:0x1,0x100000,0x2,0x200000`.
#[must_use]
pub fn slurm_mask(topo: &Topology, plan: &Plan) -> String {
    let masks: Vec<String> = cpus(topo, plan).into_iter().map(single_mask).collect();
    format!("--cpu-bind=mask_cpu:{}", masks.join(","))
}

/// The hexadecimal mask of one CPU: `0x1` for CPU 0, `0x100000` for CPU 20.
fn single_mask(cpu: u32) -> String {
    let c = cpu as usize;
    let mut hex = String::from(["1", "2", "4", "8"][c % 4]);
    hex.push_str(&"0".repeat(c / 4));
    format!("0x{hex}")
}

/// Intel MPI's pinning of rank `i` to the plan's `i`-th CPU:
/// `I_MPI_PIN_PROCESSOR_LIST=0,20,1,21`.
#[must_use]
pub fn intel_mpi(topo: &Topology, plan: &Plan) -> String {
    format!("I_MPI_PIN_PROCESSOR_LIST={}", list(topo, plan))
}

#[cfg(test)]
mod tests {
    use super::single_mask;

    #[test]
    fn a_single_cpu_mask_has_exactly_its_bit() {
        for cpu in 0..1024_u32 {
            let m = single_mask(cpu);
            let hex = m.strip_prefix("0x").expect("0x");
            // Parse as Slurm does: hexadecimal digits, least significant last.
            let bits: Vec<u32> = hex
                .chars()
                .rev()
                .enumerate()
                .flat_map(|(i, d)| {
                    let v = d.to_digit(16).expect("hex digit");
                    (0..4)
                        .filter(move |b| v & (1 << b) != 0)
                        .map(move |b| 4 * i as u32 + b)
                })
                .collect();
            assert_eq!(bits, vec![cpu], "{m}");
        }
    }
}
