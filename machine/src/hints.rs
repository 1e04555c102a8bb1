//! The hints the OS gives the inference, from the right source: the socket count is the
//! number of distinct packages (`physical_package_id`) among the measured CPUs, never the
//! number of NUMA nodes, which sub-NUMA clustering (Intel SNC, AMD NPS2/NPS4, Threadripper's
//! NUMA mode), Kunpeng and Altra make larger than the package count. The NUMA node count is
//! kept as a fact of its own.

use topoprobe_model::OsView;

/// What the OS says about the measured CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OsHints {
    /// Distinct packages holding the measured CPUs: the socket hint.
    pub sockets: Option<usize>,
    /// NUMA nodes holding the measured CPUs (a separate fact, not a socket count).
    pub numa_nodes: Option<usize>,
}

/// The socket hint and the NUMA node count of `cpus` in `os`; `None` for a count the OS
/// does not give (no measured CPU is known to it, or it lists no node).
#[must_use]
pub fn os_hints(os: &OsView, cpus: &[u32]) -> OsHints {
    let sockets = os
        .packages()
        .values()
        .filter(|members| members.iter().any(|c| cpus.contains(c)))
        .count();
    let nodes = os.node_cpus();
    let numa_nodes = (!nodes.is_empty()).then(|| {
        nodes
            .values()
            .filter(|members| members.iter().any(|c| cpus.contains(c)))
            .count()
    });
    OsHints {
        sockets: (sockets > 0).then_some(sockets),
        numa_nodes: numa_nodes.filter(|&n| n > 0),
    }
}
