//! The socket hint on every sysfs capture of `measure/tests/data/sysfs`: the number of
//! distinct packages, checked against what `lstopo -v` printed for the capture, and never
//! the NUMA node count (the SNC capture `memorysidecaches` has 4 nodes on 2 packages).

use crate::common;

use common::{captures, data_dir, unpack};

use topoprobe_machine::hints::os_hints;
use topoprobe_measure::os::read_os_view;

/// `depth N:  K Package (type #1)` in lstopo's summary.
fn lstopo_count(console: &str, ty: &str) -> usize {
    console
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once(':')?;
            let mut w = rest.split_whitespace();
            let n = w.next()?.parse().ok()?;
            (w.next()? == ty).then_some(n)
        })
        .unwrap_or_else(|| panic!("no {ty} count in the console output"))
}

#[test]
fn the_socket_hint_is_the_package_count_on_every_capture() {
    let names = captures();
    assert!(names.len() >= 6, "{names:?}");
    let mut snc_seen = false;
    for name in &names {
        let (_dir, root) = unpack(name);
        let view = read_os_view(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
        let console =
            std::fs::read_to_string(data_dir().join(format!("{name}.debian-hwloc2.9.console")))
                .expect("console");
        let packages = lstopo_count(&console, "Package");
        let nodes = lstopo_count(&console, "NUMANode");
        let h = os_hints(&view, &view.online());
        assert_eq!(
            h.sockets,
            Some(packages),
            "{name}: socket hint vs lstopo's packages"
        );
        assert_eq!(h.numa_nodes, Some(nodes), "{name}: NUMA nodes vs lstopo's");
        if name == "memorysidecaches" {
            assert_eq!((packages, nodes), (2, 4), "the SNC capture");
            snc_seen = true;
        }
        // A subset of the CPUs: only the packages that hold them.
        let first = view.online()[0];
        let h = os_hints(&view, &[first]);
        assert_eq!(h.sockets, Some(1), "{name}");
        // (offline-cpu0-node0 lists its first online CPU in no node: unknown, not 0.)
        assert!(h.numa_nodes.is_none_or(|n| n == 1), "{name}: {h:?}");
        assert_eq!(os_hints(&view, &[u32::MAX]).sockets, None, "{name}");
    }
    assert!(
        snc_seen,
        "the SNC capture memorysidecaches is among {names:?}"
    );
}
