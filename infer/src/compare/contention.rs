//! Measured memory-access contention against the OS's NUMA nodes: two contexts that the
//! OS places in different nodes have separate memory controllers, so their copies should
//! not slow each other down.

use std::collections::BTreeSet;

use topoprobe_model::{OsDifference, OsView, StructureLevel, Topology};

/// A pair copying together below this share of the bandwidth alone contends (the
/// contention probe's threshold).
const OVERHEAD_SHARE: f64 = 0.9;

/// The measured pairs of `topo`'s contention section that contend although the OS puts
/// their CPUs (both in `common`) in different NUMA nodes, as one difference (none without
/// a contention section or NUMA information).
pub(super) fn differences(
    topo: &Topology,
    os: &OsView,
    common: &BTreeSet<u32>,
) -> Vec<OsDifference> {
    let Some(section) = topo.contention() else {
        return Vec::new();
    };
    let node = |cpu: u32| os.cpu(cpu).and_then(|c| c.node);
    let os_id = |c: topoprobe_model::ContextId| topo.contexts().get(c.0).map(|h| h.os_id);
    let across: Vec<String> = section
        .pairs
        .iter()
        .filter(|p| p.gbps < section.alone_gbps * OVERHEAD_SHARE)
        .filter_map(|p| {
            let (a, b) = (os_id(p.a)?, os_id(p.b)?);
            if !common.contains(&a) || !common.contains(&b) {
                return None;
            }
            let (na, nb) = (node(a)?, node(b)?);
            (na != nb).then(|| {
                format!(
                    "CPUs {a} (node {na}) and {b} (node {nb}) copying together each got \
                     {:.0}% of the bandwidth alone",
                    p.gbps / section.alone_gbps * 100.0
                )
            })
        })
        .collect();
    if across.is_empty() {
        return Vec::new();
    }
    vec![OsDifference {
        level: StructureLevel::Node,
        message: format!(
            "contexts of different OS NUMA nodes contend for memory: {}; their memory traffic \
             shares a path the OS's nodes do not show (nodes without their own controllers, \
             or buffers that were not local)",
            across.join("; ")
        ),
        rerun: "re-run `topoprobe contention`, and `topoprobe mem --all` to see each \
                context's local node and bandwidth"
            .into(),
    }]
}
