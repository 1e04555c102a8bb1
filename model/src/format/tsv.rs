//! The partition TSV: which core, socket, node and groups each hardware context is in.
//!
//! Scripts score inference with it. The file starts with the header
//! `cpu\tcore\tsocket\tnode\tgroups` and has one line per hardware context, in context
//! order: its operating-system CPU number (the matrix row when read from a matrix), its
//! core id, its socket id, its local memory node id (`-1` when unknown) and the
//! comma-separated ids of the groups that contain it, innermost first (empty when none).
//! It ends with one comment line per structural level the inference could not resolve
//! (`# unresolved: <level>: <reason>`), so that the header stays the first line.

use std::fmt::Write as _;
use std::io::Write;

use crate::topology::Topology;

/// Writes the partition TSV of a topology (see the [module documentation](self)).
///
/// # Errors
///
/// Returns the error of the writer.
pub fn write_partition(topo: &Topology, w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(partition_string(topo).as_bytes())
}

/// The partition TSV of a topology as a string (see the [module documentation](self)).
#[must_use]
pub fn partition_string(topo: &Topology) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail: the results of `write!` are ignored below.
    out.push_str("cpu\tcore\tsocket\tnode\tgroups\n");
    for ctx in topo.contexts() {
        let node = topo
            .local_node(ctx.id)
            .map_or_else(|| "-1".to_string(), |n| n.0.to_string());
        let groups: Vec<String> = topo
            .groups_of(ctx.id)
            .iter()
            .map(|g| g.0.to_string())
            .collect();
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{node}\t{}",
            ctx.os_id,
            ctx.core.0,
            ctx.socket.0,
            groups.join(",")
        );
    }
    for u in &topo.validation().unresolved {
        let reason: String = u
            .reason
            .chars()
            .map(|c| {
                if matches!(c, '\n' | '\r' | '\t') {
                    ' '
                } else {
                    c
                }
            })
            .collect();
        let _ = writeln!(out, "# unresolved: {}: {reason}", u.level.as_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ContextId, Evidence, LatencyMatrix, LatencyUnit, Member, StructureLevel, TopologyBuilder,
        Unresolved, Validation,
    };

    #[test]
    fn partition_of_grouped_machine() {
        // 2 sockets; socket 0 has a group of two cores (one nested group), socket 1 one core.
        let mut b = TopologyBuilder::new(vec![0, 1, 2, 3, 4], LatencyUnit::Ns);
        let c0 = b.core(vec![ContextId(0), ContextId(3)]);
        let c1 = b.core(vec![ContextId(1)]);
        let c2 = b.core(vec![ContextId(2), ContextId(4)]);
        let inner = b.group(vec![Member::Core(c0)], Evidence::Given);
        let outer = b.group(
            vec![Member::Group(inner), Member::Core(c1)],
            Evidence::Given,
        );
        b.socket(vec![Member::Group(outer)]);
        let s1 = b.socket(vec![Member::Core(c2)]);
        b.node(None, None, vec![s1]);
        b.latencies(
            LatencyMatrix::from_fn(5, |_, _| Some(10.0)),
            LatencyMatrix::from_fn(5, |_, _| Some(10.0)),
        );
        b.validation(Validation {
            unresolved: vec![Unresolved {
                level: StructureLevel::Group,
                reason: "two\tways\nto split".to_string(),
            }],
            ..Validation::default()
        });
        let topo = b.build().unwrap();
        assert_eq!(
            partition_string(&topo),
            "cpu\tcore\tsocket\tnode\tgroups\n\
             0\t0\t0\t-1\t0,1\n\
             1\t1\t0\t-1\t1\n\
             2\t2\t1\t0\t\n\
             3\t0\t0\t-1\t0,1\n\
             4\t2\t1\t0\t\n\
             # unresolved: group: two ways to split\n"
        );
        let mut out = Vec::new();
        write_partition(&topo, &mut out).unwrap();
        assert_eq!(out, partition_string(&topo).into_bytes());
    }
}
