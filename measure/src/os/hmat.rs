//! What ACPI HMAT says of a memory node's performance (`node*/access0`, `access1`): its
//! best initiators and their read and write latency and bandwidth, as the kernel exposes
//! them (`Documentation/ABI/stable/sysfs-devices-node`).

use std::path::Path;

use topoprobe_model::OsHmatAccess;

use super::files::{numbered_names, optional_number, Notes};

/// The access classes the kernel exposes: 0 (any initiator), 1 (CPUs only).
const CLASSES: [u8; 2] = [0, 1];

/// The HMAT figures of node `id` (its folder `dir`), one per access class it has;
/// empty where the firmware gives none (no `accessN/initiators` folder). A figure that
/// cannot be read is left out with a note.
pub(super) fn read(id: u32, dir: &Path, notes: &mut Notes) -> Vec<OsHmatAccess> {
    let mut out = Vec::new();
    for class in CLASSES {
        let folder = dir.join(format!("access{class}/initiators"));
        let Ok(initiators) = numbered_names(&folder, "node") else {
            continue;
        };
        let figure =
            |name: &str, notes: &mut Notes| optional_number::<u64>(&folder.join(name), notes);
        let access = OsHmatAccess {
            node: id,
            class,
            initiators,
            read_latency_ns: figure("read_latency", notes),
            write_latency_ns: figure("write_latency", notes),
            read_bandwidth_mbps: figure("read_bandwidth", notes),
            write_bandwidth_mbps: figure("write_bandwidth", notes),
        };
        let any = access.read_latency_ns.is_some()
            || access.write_latency_ns.is_some()
            || access.read_bandwidth_mbps.is_some()
            || access.write_bandwidth_mbps.is_some();
        if any || !access.initiators.is_empty() {
            out.push(access);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;

    #[test]
    fn access_classes_are_read_with_their_initiators() {
        let dir = tempfile::tempdir().expect("tempdir");
        let node = dir.path().join("node4");
        for class in [0, 1] {
            let init = node.join(format!("access{class}/initiators"));
            std::fs::create_dir_all(init.join("node0")).unwrap();
            std::fs::write(init.join("read_latency"), "170\n").unwrap();
            std::fs::write(init.join("read_bandwidth"), "20000\n").unwrap();
            std::fs::write(init.join("write_bandwidth"), "junk\n").unwrap();
        }
        let mut notes = Notes::default();
        let got = read(4, &node, &mut notes);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].class, 1);
        assert_eq!(got[0].initiators, vec![0]);
        assert_eq!(got[0].read_latency_ns, Some(170));
        assert_eq!(got[0].read_bandwidth_mbps, Some(20000));
        assert_eq!(got[0].write_bandwidth_mbps, None);
        assert_eq!(got[0].write_latency_ns, None);
        let notes = notes.into_vec();
        assert!(
            notes.iter().any(|n| n.contains("write_bandwidth")),
            "{notes:?}"
        );
        assert!(read(3, &dir.path().join("node3"), &mut Notes::default()).is_empty());
    }
}
