//! Unit tests of the sysfs reader on small synthetic trees.

// Tests write their own fixtures.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::Path;

use super::*;

fn write(root: &Path, rel: &str, content: &[u8]) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

/// Writes CPU `id` with the given package, core and thread-sibling mask (masks only, with
/// trailing NUL bytes as some kernels leave them).
fn cpu(root: &Path, id: u32, package: &str, core: &str, siblings: &str, package_mask: &str) {
    let t = format!("sys/devices/system/cpu/cpu{id}/topology");
    write(
        root,
        &format!("{t}/physical_package_id"),
        format!("{package}\n").as_bytes(),
    );
    write(
        root,
        &format!("{t}/core_id"),
        format!("{core}\n\0").as_bytes(),
    );
    write(
        root,
        &format!("{t}/thread_siblings"),
        format!("{siblings}\n\0").as_bytes(),
    );
    write(
        root,
        &format!("{t}/core_siblings"),
        format!("{package_mask}\n").as_bytes(),
    );
}

/// Two packages (ids 36 and 8442) of two cores with two threads each: CPUs 0-7, siblings
/// `i` and `i + 4`; CPUs 8 and 9 are offline; node 0 has package 36, node 1 the other,
/// node 2 no CPU.
fn machine(root: &Path) {
    for id in 0..8u32 {
        let c = id % 4;
        let package = if c < 2 { "36" } else { "8442" };
        let siblings = format!("{:08x}", (1u32 << c) | (1 << (c + 4)));
        let package_mask = if c < 2 { "00000033" } else { "000000cc" };
        cpu(
            root,
            id,
            package,
            &(c % 2).to_string(),
            &siblings,
            package_mask,
        );
        let idx = format!("sys/devices/system/cpu/cpu{id}/cache/index0");
        write(root, &format!("{idx}/level"), b"1\n");
        write(root, &format!("{idx}/type"), b"Data\n");
        write(root, &format!("{idx}/size"), b"32K\n");
        write(root, &format!("{idx}/coherency_line_size"), b"64\n");
        write(root, &format!("{idx}/shared_cpu_map"), siblings.as_bytes());
        let idx = format!("sys/devices/system/cpu/cpu{id}/cache/index2");
        write(root, &format!("{idx}/level"), b"3\n");
        write(root, &format!("{idx}/type"), b"Unified\n");
        write(root, &format!("{idx}/size"), b"4096K\n");
        write(
            root,
            &format!("{idx}/shared_cpu_map"),
            format!("{package_mask}\n\0").as_bytes(),
        );
    }
    for id in [8, 9] {
        write(
            root,
            &format!("sys/devices/system/cpu/cpu{id}/online"),
            b"0\n",
        );
    }
    write(root, "sys/devices/system/cpu/cpu1/online", b"1\n");
    let n = "sys/devices/system/node";
    write(root, &format!("{n}/node0/cpumap"), b"00000000,00000333\n");
    write(root, &format!("{n}/node0/distance"), b"10 20 30\n");
    write(
        root,
        &format!("{n}/node0/meminfo"),
        b"Node 0 MemTotal:       1024 kB\nNode 0 MemFree: 1 kB\n",
    );
    write(root, &format!("{n}/node1/cpulist"), b"2-3,6-7\n\0");
    write(root, &format!("{n}/node1/distance"), b"20 10 30\n");
    write(root, &format!("{n}/node2/cpulist"), b"\n");
    write(root, &format!("{n}/node2/distance"), b"30 30 10\n");
    write(
        root,
        "proc/cpuinfo",
        b"processor\t: 0\nmodel name\t:  Test CPU @ 1GHz\n\n",
    );
    write(root, "proc/sys/kernel/osrelease", b"6.1.0-test\n");
}

#[test]
fn reads_masks_nul_bytes_and_offline_cpus() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    let v = read_os_view(dir.path()).unwrap();
    assert_eq!(v.online(), (0..8).collect::<Vec<_>>());
    assert_eq!(v.offline, vec![8, 9]);
    assert_eq!(v.num_packages(), 2);
    assert_eq!(v.num_cores(), 4);
    assert!(v.smt());
    assert_eq!(v.packages()[&8442], vec![2, 3, 6, 7]);
    assert_eq!(v.cpu(5).unwrap().thread_siblings, vec![1, 5]);
    assert_eq!(v.cpu(5).unwrap().core_siblings, vec![0, 1, 4, 5]);
    assert_eq!(v.cpu(6).unwrap().node, Some(1));
    assert_eq!(v.num_numa_nodes(), Some(3));
    let nodes = v.nodes.as_ref().unwrap();
    assert!(nodes[2].cpus.is_empty());
    assert_eq!(nodes[0].distances, vec![10, 20, 30]);
    assert_eq!(nodes[0].memory_bytes, Some(1 << 20));
    assert_eq!(super::nodes::free_bytes(dir.path(), 0), Some(1024));
    assert_eq!(super::nodes::free_bytes(dir.path(), 1), None);
    // Node 0's mask names offline CPUs 8 and 9; only online ones count per node.
    assert_eq!(v.node_cpus()[&0], vec![0, 1, 4, 5]);
    assert_eq!(v.cache_groups(1).len(), 4);
    assert_eq!(v.cache_groups(3), vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
    assert_eq!(v.caches.len(), 6);
    assert_eq!(v.caches[0].size_bytes, Some(32 << 10));
    assert_eq!(v.cpu_model.as_deref(), Some("Test CPU @ 1GHz"));
    assert_eq!(v.kernel.as_deref(), Some("6.1.0-test"));
    assert_eq!(v.machine().online_cpus.as_deref(), Some("0-7"));
}

#[test]
fn online_list_wins_and_sparse_ids() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    cpu(root, 0, "-1", "0", "1", "00000001");
    cpu(root, 1000, "4294967296", "7", "00000100,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000,00000000", "0");
    write(
        root,
        "sys/devices/system/cpu/cpu1000/topology/die_id",
        b"-1\n",
    );
    write(root, "sys/devices/system/cpu/cpu5/online", b"1\n");
    write(root, "sys/devices/system/cpu/online", b"0,1000,2000\n");
    let v = read_os_view(root).unwrap();
    assert_eq!(v.online(), vec![0, 1000]);
    assert_eq!(v.offline, vec![5]);
    // Package -1 names no package: the first free number stands for it, with a note.
    assert_eq!(v.cpu(0).unwrap().package, 0);
    assert!(v.notes.iter().any(|n| n.contains("(-1)")), "{:?}", v.notes);
    assert_eq!(v.cpu(1000).unwrap().package, 4_294_967_296);
    assert_eq!(v.cpu(1000).unwrap().die, None);
    assert_eq!(v.cpu(1000).unwrap().thread_siblings, vec![1000]);
    // An empty package mask is derived from the package ids.
    assert_eq!(v.cpu(1000).unwrap().core_siblings, vec![1000]);
    // No node directory: one node holding every CPU.
    assert_eq!(v.num_numa_nodes(), Some(1));
    assert_eq!(v.node_cpus()[&0], vec![0, 1000]);
    assert!(v.notes.iter().any(|n| n.contains("2000")), "{:?}", v.notes);
    assert!(v.notes.iter().any(|n| n.contains("NUMA")), "{:?}", v.notes);
}

#[test]
fn lists_are_used_when_masks_are_missing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let t = "sys/devices/system/cpu/cpu3/topology";
    write(root, &format!("{t}/physical_package_id"), b"0");
    write(root, &format!("{t}/core_id"), b"3");
    write(root, &format!("{t}/core_cpus_list"), b"3\n");
    let v = read_os_view(root).unwrap();
    assert_eq!(v.cpu(3).unwrap().thread_siblings, vec![3]);
    // No package mask or list: derived from the package ids.
    assert_eq!(v.cpu(3).unwrap().core_siblings, vec![3]);
}

/// Reads `root`, which must succeed, and checks that a note names `file` and `content`.
fn noted(root: &Path, file: &str, content: &str) -> OsView {
    let v = read_os_view(root).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains(file) && n.contains(content)),
        "{file}: {:?}",
        v.notes
    );
    v
}

#[test]
fn malformed_topology_files_are_notes_naming_path_and_content() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    write(
        dir.path(),
        "sys/devices/system/cpu/cpu2/topology/core_id",
        b"two\n\0",
    );
    // The masks still decide the core.
    let v = noted(dir.path(), "cpu2/topology/core_id", "two");
    assert_eq!(v.num_cores(), 4);

    machine(dir.path());
    write(
        dir.path(),
        "sys/devices/system/cpu/cpu4/topology/thread_siblings",
        b"0000001x\n",
    );
    let v = noted(dir.path(), "cpu4/topology/thread_siblings", "0000001x");
    assert_eq!(v.num_cores(), 4);

    machine(dir.path());
    write(dir.path(), "sys/devices/system/cpu/online", b"0-3,a\n");
    let v = noted(dir.path(), "system/cpu/online", "\"a\"");
    assert_eq!(v.online(), (0..8).collect::<Vec<_>>());

    machine(dir.path());
    fs::remove_file(dir.path().join("sys/devices/system/cpu/online")).unwrap();
    write(dir.path(), "sys/devices/system/cpu/cpu7/online", b"yes\n");
    let v = noted(dir.path(), "cpu7/online", "yes");
    assert_eq!(v.num_pus(), 8, "a topology directory: online");

    machine(dir.path());
    fs::remove_file(dir.path().join("sys/devices/system/cpu/cpu7/online")).unwrap();
    fs::remove_file(
        dir.path()
            .join("sys/devices/system/cpu/cpu6/topology/physical_package_id"),
    )
    .unwrap();
    let v = noted(dir.path(), "physical_package_id", "6");
    assert_eq!(v.num_packages(), 2, "the package mask decides");
}

#[test]
fn malformed_optional_files_are_noted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    machine(root);
    write(root, "sys/devices/system/cpu/cpu0/cpu_capacity", b"lots\n");
    write(
        root,
        "sys/devices/system/cpu/cpu0/cache/index0/type",
        b"Weird\n",
    );
    write(
        root,
        "sys/devices/system/cpu/cpu1/cache/index2/size",
        b"4Q\n",
    );
    write(root, "sys/devices/system/node/node1/distance", b"20 x\n");
    let v = read_os_view(root).unwrap();
    assert_eq!(v.cpu(0).unwrap().capacity, None);
    let notes = v.notes.join("\n");
    for needle in ["cpu_capacity", "Weird", "4Q", "node1/distance"] {
        assert!(notes.contains(needle), "{needle} not in {notes}");
    }
    assert!(v.nodes.unwrap()[1].distances.is_empty());
}

#[test]
fn hybrid_kinds_capacity_and_frequency() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for id in 0..4u32 {
        cpu(
            root,
            id,
            "0",
            &id.to_string(),
            &format!("{:x}", 1u32 << id),
            "f",
        );
        write(
            root,
            &format!("sys/devices/system/cpu/cpu{id}/cpufreq/cpuinfo_max_freq"),
            if id < 2 { b"5000000\n" } else { b"3900000\n" },
        );
    }
    let v = read_os_view(root).unwrap();
    let kinds = v.cpu_kinds();
    assert_eq!(kinds.len(), 2);
    assert_eq!(kinds[0].cpus, vec![2, 3]);
    write(root, "sys/devices/cpu_core/cpus", b"0-1\n");
    write(root, "sys/devices/cpu_atom/cpus", b"2-3\n");
    let v = read_os_view(root).unwrap();
    assert_eq!(v.cpu(3).unwrap().kind.as_deref(), Some("atom"));
    assert_eq!(v.cpu_kinds()[1].label, "core");
}

#[test]
fn not_a_sysfs_root() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_os_view(dir.path()).unwrap_err();
    assert!(matches!(e, OsError::Missing { .. }), "{e}");
    write(dir.path(), "sys/devices/system/cpu/cpu0/online", b"0\n");
    let e = read_os_view(dir.path()).unwrap_err().to_string();
    assert!(e.contains("no online CPU"), "{e}");
}

#[test]
fn garbage_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    machine(root);
    let garbage: [&[u8]; 6] = [
        b"",
        b"\0\0\0",
        b"\xff\xfe",
        b"-",
        b"99999999999999999999999",
        b",,,",
    ];
    let files = [
        "sys/devices/system/cpu/online",
        "sys/devices/system/cpu/cpu1/online",
        "sys/devices/system/cpu/cpu1/topology/physical_package_id",
        "sys/devices/system/cpu/cpu1/topology/core_siblings",
        "sys/devices/system/cpu/cpu1/cache/index2/shared_cpu_map",
        "sys/devices/system/cpu/cpu1/cache/index2/level",
        "sys/devices/system/node/node1/cpulist",
        "sys/devices/system/node/node0/meminfo",
        "proc/cpuinfo",
    ];
    for f in files {
        for g in garbage {
            machine(root);
            write(root, f, g);
            // Either an error or a view; never a panic.
            let _ = read_os_view(root);
        }
    }
}

#[test]
fn the_hypervisor_flag_says_virtual_machine() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(super::is_virtual_machine(dir.path()), None);
    write(
        dir.path(),
        "proc/cpuinfo",
        b"processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n\n",
    );
    assert_eq!(super::is_virtual_machine(dir.path()), Some(true));
    write(
        dir.path(),
        "proc/cpuinfo",
        b"processor\t: 0\nflags\t\t: fpu vme hypervisorx\n\n",
    );
    assert_eq!(super::is_virtual_machine(dir.path()), Some(false));
}

/// Makes a FIFO at `rel` under `root` (replacing a file there).
fn fifo(root: &Path, rel: &str) {
    let p = root.join(rel);
    let _ = fs::remove_file(&p);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .expect("running mkfifo");
    assert!(status.success(), "mkfifo {}", p.display());
}

/// Reads the view under `root` in another thread; a read that blocks (on a FIFO with no
/// writer) fails the test after a generous watchdog instead of hanging it.
fn read_unblocked(root: &Path) -> Result<OsView, OsError> {
    let root = root.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(read_os_view(&root));
    });
    rx.recv_timeout(std::time::Duration::from_secs(120))
        .expect("the reader blocked on a FIFO")
}

#[test]
fn fifos_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    machine(root);
    // Optional files: left out with a note naming the FIFO.
    fifo(root, "proc/cpuinfo");
    fifo(root, "sys/devices/system/cpu/cpu1/cache/index2/size");
    fifo(root, "sys/devices/system/node/node0/distance");
    let v = read_unblocked(root).expect("optional FIFOs are left out");
    assert_eq!(v.num_pus(), 8);
    assert_eq!(v.cpu_model, None);
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("proc/cpuinfo") && n.contains("a FIFO")),
        "{:?}",
        v.notes
    );
    assert!(v.nodes.as_ref().unwrap()[0].distances.is_empty());
    // A topology file: a note naming it; the masks decide.
    fifo(root, "sys/devices/system/cpu/cpu3/topology/core_id");
    let v = read_unblocked(root).expect("a FIFO core_id is a note");
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("cpu3/topology/core_id") && n.contains("a FIFO")),
        "{:?}",
        v.notes
    );
    assert_eq!(v.num_cores(), 4);
    // The CPU list (in a fresh tree: writing into a FIFO would block this test).
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    fifo(dir.path(), "sys/devices/system/cpu/online");
    let v = read_unblocked(dir.path()).expect("a FIFO online list is a note");
    assert!(
        v.notes
            .iter()
            .any(|n| n.contains("cpu/online") && n.contains("a FIFO")),
        "{:?}",
        v.notes
    );
    assert_eq!(v.num_pus(), 8);
}

/// A tar archive of the tree under `root`, as folder `name/`.
fn tar_of(root: &Path, name: &str) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    b.append_dir_all(name, root).unwrap();
    b.into_inner().unwrap()
}

#[test]
fn captures_plain_gzip_and_bzip2_read_alike() {
    use std::io::Write;
    let tree = tempfile::tempdir().unwrap();
    machine(tree.path());
    let plain = tar_of(tree.path(), "m");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    bz.write_all(&plain).unwrap();
    let bz = bz.finish().unwrap();
    let expected = read_os_view(tree.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    for (name, bytes) in [("m.tar", plain), ("m.tgz", gz), ("m.tar.bz2", bz)] {
        let path = out.path().join(name);
        fs::write(&path, bytes).unwrap();
        let unpacked = unpack_capture(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(unpacked.root().file_name().unwrap(), "m");
        let dir = unpacked.dir().to_path_buf();
        drop(unpacked);
        assert!(!dir.exists(), "{name}: the temporary directory is removed");
        let v = read_os_view_at(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(v.cpus, expected.cpus, "{name}");
        assert_eq!(v.caches, expected.caches, "{name}");
        assert_eq!(v.nodes, expected.nodes, "{name}");
    }
    // A directory reads as itself.
    assert_eq!(read_os_view_at(tree.path()).unwrap(), expected);
}

#[test]
fn an_archive_cut_on_a_block_boundary_is_truncated_not_missing_a_file() {
    let tree = tempfile::tempdir().unwrap();
    machine(tree.path());
    let whole = tar_of(tree.path(), "m");
    // Without the end marker (the last 1024 bytes of zeros), then cut further, at a
    // header (a multiple of 512 bytes) half-way through.
    let out = tempfile::tempdir().unwrap();
    let ends = [whole.len() - 1024, (whole.len() / 2) & !511];
    for (i, end) in ends.into_iter().enumerate() {
        let path = out.path().join(format!("cut{i}.tar"));
        fs::write(&path, &whole[..end]).unwrap();
        let e = read_os_view_at(&path).unwrap_err().to_string();
        assert!(e.contains("truncated") && e.contains("cut"), "{end}: {e}");
    }
    let path = out.path().join("whole.tar");
    fs::write(&path, &whole).unwrap();
    read_os_view_at(&path).unwrap();
}

#[test]
fn a_root_that_is_a_fifo_or_device_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    fifo(dir.path(), "root.tar");
    let root = dir.path().join("root.tar");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(read_os_view_at(&root).map_err(|e| e.to_string()));
    });
    let e2 = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the reader blocked on a FIFO");
    let e2 = e2.unwrap_err();
    assert!(e2.contains("root.tar") && e2.contains("a FIFO"), "{e2}");
    let e = read_os_view_at(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/dev/zero") && e.contains("character device"),
        "{e}"
    );
}

#[test]
fn a_distance_row_longer_than_the_nodes_is_noted_and_not_used() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    write(
        dir.path(),
        "sys/devices/system/node/node1/distance",
        b"20 10 30 40 50\n",
    );
    let v = noted(dir.path(), "node1/distance", "5 distances for 3 nodes");
    let nodes = v.nodes.as_ref().unwrap();
    assert!(nodes[1].distances.is_empty());
    assert_eq!(nodes[0].distances, [10, 20, 30]);
}

#[test]
fn a_cpu_in_two_caches_of_one_level_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path());
    // CPU 1's L3 says it shares with CPUs 0-3, while CPUs 0 and 4's say 0-1,4-5.
    write(
        dir.path(),
        "sys/devices/system/cpu/cpu1/cache/index2/shared_cpu_map",
        b"0000000f\n",
    );
    noted(
        dir.path(),
        "cpu",
        "in two L3 unified caches (CPUs 0-3 and CPUs 0-1,4-5)",
    );
}

#[test]
fn an_online_list_over_the_limit_is_named_with_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "sys/devices/system/cpu/cpu0/cache/index0/level",
        b"1\n",
    );
    let online = root.join("sys/devices/system/cpu/online");
    let f = fs::File::create(&online).unwrap();
    // Sparse: 2 GiB long, nothing written.
    f.set_len(2 << 30).unwrap();
    let e = read_os_view(root).unwrap_err().to_string();
    assert!(
        e.contains("cpu/online") && e.contains("its size is 2147483648") && e.contains("16 MiB"),
        "{e}"
    );
}
