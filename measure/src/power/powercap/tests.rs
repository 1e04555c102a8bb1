//! The powercap reader against fake trees in a temporary directory.

// Tests write their own fixtures.
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::Path;

use super::*;
use crate::power::tests::machine;
use crate::power::{measure_with, EnergySource, PowerOptions, Workload};

/// Writes a zone `id` with a name, a counter and a range.
fn zone(root: &Path, id: &str, name: &str, energy: u64, max: u64) {
    let dir = root.join(id);
    fs::create_dir_all(&dir).expect("mkdir");
    fs::write(dir.join("name"), format!("{name}\n")).expect("name");
    fs::write(dir.join("energy_uj"), format!("{energy}\n")).expect("energy");
    fs::write(dir.join("max_energy_range_uj"), format!("{max}\n")).expect("range");
}

/// Sets a zone's counter.
fn set(root: &Path, id: &str, energy: u64) {
    fs::write(root.join(id).join("energy_uj"), format!("{energy}\n")).expect("energy");
}

const MAX: u64 = 262_143_328_850;

/// Two packages with core and DRAM subzones, a psys zone, and MMIO copies of package 0.
fn two_packages(root: &Path) {
    zone(root, "intel-rapl:0", "package-0", 1_000, MAX);
    zone(root, "intel-rapl:0:0", "core", 100, MAX);
    zone(root, "intel-rapl:0:1", "dram", 50, MAX);
    zone(root, "intel-rapl:0:2", "uncore", 7, MAX);
    zone(root, "intel-rapl:1", "package-1", 2_000, MAX);
    zone(root, "intel-rapl:1:0", "core", 200, MAX);
    zone(root, "intel-rapl:1:1", "dram", 60, MAX);
    zone(root, "intel-rapl:2", "psys", 5, MAX);
    zone(root, "intel-rapl-mmio:0", "package-0", 9, MAX);
    // The control-type directory itself, as the kernel lists it.
    fs::create_dir_all(root.join("intel-rapl")).expect("mkdir");
}

fn ids(zones: &[Zone]) -> Vec<&str> {
    zones.iter().map(|z| z.id.as_str()).collect()
}

#[test]
fn packages_and_their_core_and_dram_subzones_are_found() {
    let t = tempfile::tempdir().expect("tempdir");
    two_packages(t.path());
    let d = discover(t.path()).expect("zones");
    assert_eq!(d.control_type, "intel-rapl");
    assert_eq!(d.packages.len(), 2);
    let p0 = &d.packages[0];
    assert_eq!(p0.package, 0);
    assert_eq!(ids(&p0.zones), ["intel-rapl:0"]);
    assert_eq!(ids(&p0.cores), ["intel-rapl:0:0"]);
    assert_eq!(ids(&p0.dram), ["intel-rapl:0:1"]);
    assert_eq!(p0.zones[0].max_range_uj, MAX);
    assert_eq!(ids(&d.packages[1].dram), ["intel-rapl:1:1"]);
}

#[test]
fn energy_is_read_per_socket_with_and_without_dram() {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path();
    zone(root, "intel-rapl:0", "package-0", 1_000_000, MAX);
    zone(root, "intel-rapl:0:0", "core", 500_000, MAX);
    zone(root, "intel-rapl:0:1", "dram", 0, MAX);
    zone(root, "intel-rapl:1", "package-1", 0, MAX);
    zone(root, "intel-rapl:1:0", "core", 0, MAX);
    // Package 1 has no DRAM zone. No sysfs under the tree: sockets match packages in order.
    let topo = machine(2, 2, 1);
    let mut src = PowercapSource::open(root, &topo, root).expect("source");
    let a = src.read().expect("read");
    assert_eq!(a.sockets.len(), 2);
    assert_eq!(a.sockets[0].package_j, 0.0, "energy counts from opening");
    set(root, "intel-rapl:0", 3_000_000);
    set(root, "intel-rapl:0:0", 1_500_000);
    set(root, "intel-rapl:0:1", 250_000);
    set(root, "intel-rapl:1", 4_000_000);
    set(root, "intel-rapl:1:0", 1_000_000);
    let b = src.read().expect("read");
    assert!(b.seconds >= a.seconds);
    let s0 = b.sockets[0];
    assert!((s0.package_j - 2.0).abs() < 1e-12, "{s0:?}");
    assert_eq!(s0.cores_j, Some(1.0));
    assert_eq!(s0.dram_j, Some(0.25));
    let s1 = b.sockets[1];
    assert!((s1.package_j - 4.0).abs() < 1e-12, "{s1:?}");
    assert_eq!(s1.cores_j, Some(1.0));
    assert_eq!(s1.dram_j, None, "no DRAM zone: not measured");
    assert!(
        src.describe().contains("intel-rapl:1:0"),
        "{}",
        src.describe()
    );
}

#[test]
fn a_counter_that_wraps_is_counted_across_the_wrap() {
    assert_eq!(advance(10, 30, 100), 20);
    assert_eq!(advance(90, 5, 100), 15);
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path();
    zone(
        root,
        "intel-rapl:0",
        "package-0",
        999_000_000,
        1_000_000_000,
    );
    let topo = machine(1, 2, 1);
    let mut src = PowercapSource::open(root, &topo, root).expect("source");
    src.read().expect("read");
    set(root, "intel-rapl:0", 500_000);
    let s = src.read().expect("read");
    assert!((s.sockets[0].package_j - 1.5).abs() < 1e-12, "{s:?}");
    set(root, "intel-rapl:0", 1_500_000);
    let s = src.read().expect("read");
    assert!((s.sockets[0].package_j - 2.5).abs() < 1e-12, "{s:?}");
}

#[test]
fn dies_of_a_package_are_summed_and_mmio_is_used_only_alone() {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path();
    zone(root, "intel-rapl-mmio:0", "package-0", 0, MAX);
    let d = discover(root).expect("zones");
    assert_eq!(d.control_type, "intel-rapl-mmio");
    zone(root, "intel-rapl:0", "package-0-die-0", 0, MAX);
    zone(root, "intel-rapl:1", "package-0-die-1", 0, MAX);
    let d = discover(root).expect("zones");
    assert_eq!(d.control_type, "intel-rapl");
    assert_eq!(d.packages.len(), 1);
    assert_eq!(ids(&d.packages[0].zones), ["intel-rapl:0", "intel-rapl:1"]);
    let topo = machine(1, 2, 1);
    let mut src = PowercapSource::open(root, &topo, root).expect("source");
    src.read().expect("read");
    set(root, "intel-rapl:0", 1_000_000);
    set(root, "intel-rapl:1", 2_000_000);
    let s = src.read().expect("read");
    assert!((s.sockets[0].package_j - 3.0).abs() < 1e-12, "{s:?}");
}

#[test]
fn amd_zones_are_read() {
    let t = tempfile::tempdir().expect("tempdir");
    zone(t.path(), "amd-rapl:0", "package-0", 0, MAX);
    zone(t.path(), "amd-rapl:0:0", "core", 0, MAX);
    let d = discover(t.path()).expect("zones");
    assert_eq!(d.control_type, "amd-rapl");
    assert_eq!(ids(&d.packages[0].cores), ["amd-rapl:0:0"]);
}

#[test]
fn no_zones_is_unavailable_and_says_where_it_looked() {
    let t = tempfile::tempdir().expect("tempdir");
    let e = discover(&t.path().join("absent")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("unavailable: no RAPL zones under "),
        "{msg}"
    );
    assert!(msg.contains("absent (it does not exist)"), "{msg}");
    let e = discover(t.path()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("unavailable: no RAPL zones under "),
        "{msg}"
    );
    assert!(msg.contains("intel-rapl:N"), "{msg}");
    zone(t.path(), "intel-rapl:0", "psys", 0, MAX);
    let e = discover(t.path()).unwrap_err();
    assert!(
        e.to_string()
            .contains("no RAPL package zone (named package-N)"),
        "{e}"
    );
    assert!(e.to_string().contains("zones: intel-rapl:0"), "{e}");
}

#[test]
fn malformed_content_names_the_file() {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path();
    zone(root, "intel-rapl:0", "package-0", 0, MAX);
    fs::write(root.join("intel-rapl:0/energy_uj"), "lots\n").expect("write");
    let e = discover(root).unwrap_err();
    assert!(matches!(e, PowerError::Malformed { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("intel-rapl:0/energy_uj"), "{msg}");
    assert!(
        msg.contains("expected a whole number, found \"lots\""),
        "{msg}"
    );

    fs::write(root.join("intel-rapl:0/energy_uj"), "5\n").expect("write");
    fs::write(root.join("intel-rapl:0/max_energy_range_uj"), "4\n").expect("write");
    let e = discover(root).unwrap_err();
    assert!(e.to_string().contains("above the counter's range"), "{e}");

    fs::write(root.join("intel-rapl:0/max_energy_range_uj"), "0\n").expect("write");
    let e = discover(root).unwrap_err();
    assert!(
        e.to_string()
            .contains("max_energy_range_uj: the counter range is 0"),
        "{e}"
    );

    fs::remove_file(root.join("intel-rapl:0/max_energy_range_uj")).expect("rm");
    let e = discover(root).unwrap_err();
    assert!(matches!(e, PowerError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("max_energy_range_uj"), "{e}");

    // A subzone is checked as well.
    fs::write(root.join("intel-rapl:0/max_energy_range_uj"), "100\n").expect("write");
    zone(root, "intel-rapl:0:0", "dram", 0, MAX);
    fs::write(root.join("intel-rapl:0:0/energy_uj"), "-3\n").expect("write");
    let e = discover(root).unwrap_err();
    assert!(e.to_string().contains("intel-rapl:0:0/energy_uj"), "{e}");
}

#[test]
fn a_counter_that_becomes_malformed_while_measuring_is_an_error() {
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path();
    zone(root, "intel-rapl:0", "package-0", 0, MAX);
    let mut src = PowercapSource::open(root, &machine(1, 1, 1), root).expect("source");
    fs::write(root.join("intel-rapl:0/energy_uj"), "\n").expect("write");
    let e = src.read().unwrap_err();
    assert!(
        e.to_string().contains("energy_uj: expected a whole number"),
        "{e}"
    );
}

#[test]
fn permission_denied_is_unavailable_and_says_so() {
    let e = crate::power::files::io_error(
        Path::new("/x/energy_uj"),
        std::io::Error::from_raw_os_error(libc::EACCES),
        PERMISSION_HINT,
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("unavailable: permission denied reading /x/energy_uj"),
        "{msg}"
    );
    assert!(msg.contains("root only"), "{msg}");

    // The real thing, where file permissions apply (not to root).
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().expect("tempdir");
    zone(t.path(), "intel-rapl:0", "package-0", 0, MAX);
    let file = t.path().join("intel-rapl:0/energy_uj");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o000)).expect("chmod");
    if fs::read(&file).is_ok() {
        eprintln!("skipped the file part: permissions do not apply to this user");
        return;
    }
    let e = discover(t.path()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("unavailable: permission denied"), "{msg}");
    assert!(msg.contains("energy_uj"), "{msg}");
}

/// A fake sysfs with the package of each CPU.
fn sysfs(root: &Path, packages: &[(u32, u32)]) {
    for (cpu, package) in packages {
        let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/topology"));
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(dir.join("physical_package_id"), format!("{package}\n")).expect("write");
    }
}

#[test]
fn sockets_are_matched_through_the_package_ids_of_their_cpus() {
    let t = tempfile::tempdir().expect("tempdir");
    let caps = t.path().join("powercap");
    let os = t.path().join("os");
    zone(&caps, "intel-rapl:0", "package-0", 0, MAX);
    zone(&caps, "intel-rapl:1", "package-1", 0, MAX);
    // Socket 0 (CPUs 0-1) lies in package 1, socket 1 (CPUs 2-3) in package 0.
    sysfs(&os, &[(0, 1), (2, 0)]);
    let topo = machine(2, 2, 1);
    let mut src = PowercapSource::open(&caps, &topo, &os).expect("source");
    src.read().expect("read");
    set(&caps, "intel-rapl:1", 1_000_000);
    let s = src.read().expect("read");
    assert_eq!(s.sockets[0].package_j, 1.0);
    assert_eq!(s.sockets[1].package_j, 0.0);

    // Two sockets in one package cannot be told apart.
    sysfs(&os, &[(0, 1), (2, 1)]);
    let e = PowercapSource::open(&caps, &topo, &os).unwrap_err();
    assert!(matches!(e, PowerError::Mapping(_)), "{e:?}");
    assert!(e.to_string().contains("both lie in package 1"), "{e}");

    // A package without a zone.
    sysfs(&os, &[(0, 1), (2, 7)]);
    let e = PowercapSource::open(&caps, &topo, &os).unwrap_err();
    assert!(e.to_string().contains("package 7, which powercap"), "{e}");

    // Without sysfs, the numbers must agree.
    let e = PowercapSource::open(&caps, &machine(3, 1, 1), &caps).unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot match the topology's 3 sockets"),
        "{e}"
    );
}

/// A load that does nothing: the fake tree's counters stay where they are.
struct NoLoad;

impl Workload for NoLoad {
    fn start(&mut self, _: &[u32]) -> Result<(), PowerError> {
        Ok(())
    }
    fn stop(&mut self) {}
}

#[test]
fn counters_that_stand_still_make_the_measurement_unavailable() {
    let t = tempfile::tempdir().expect("tempdir");
    two_packages(t.path());
    let topo = machine(2, 2, 2);
    let mut src = PowercapSource::open(t.path(), &topo, t.path()).expect("source");
    let opts = PowerOptions {
        duration: std::time::Duration::from_millis(1),
        settle: std::time::Duration::ZERO,
        ..PowerOptions::default()
    };
    let e = measure_with(&topo, &opts, &mut src, &mut NoLoad).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("unavailable: the package energy counter of socket 0"),
        "{msg}"
    );
    assert!(msg.contains("did not advance"), "{msg}");
}

/// A powercap source whose fake counters advance by a fixed amount before every read.
struct Advancing {
    inner: PowercapSource,
    root: std::path::PathBuf,
    uj: u64,
}

impl EnergySource for Advancing {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn read(&mut self) -> Result<crate::power::Sample, PowerError> {
        self.uj += 1_000_000;
        set(&self.root, "intel-rapl:0", self.uj);
        set(&self.root, "intel-rapl:0:0", self.uj / 2);
        self.inner.read()
    }
}

#[test]
fn the_whole_measurement_runs_with_the_real_load_on_a_fake_tree() {
    let cpus = topoprobe_sys::affinity::allowed_cpus()
        .expect("affinity")
        .to_vec();
    let cpus: Vec<u32> = cpus.into_iter().take(2).collect();
    let mut b =
        topoprobe_model::TopologyBuilder::new(cpus.clone(), topoprobe_model::LatencyUnit::Ns);
    let members = (0..cpus.len())
        .map(|i| topoprobe_model::Member::Core(b.core(vec![topoprobe_model::ContextId(i)])))
        .collect();
    b.socket(members);
    let topo = b.build().expect("topology");
    let t = tempfile::tempdir().expect("tempdir");
    let root = t.path();
    zone(root, "intel-rapl:0", "package-0", 0, MAX);
    zone(root, "intel-rapl:0:0", "core", 0, MAX);
    let inner = PowercapSource::open(root, &topo, root).expect("source");
    let mut src = Advancing {
        inner,
        root: root.to_path_buf(),
        uj: 0,
    };
    let opts = PowerOptions {
        duration: std::time::Duration::from_millis(5),
        settle: std::time::Duration::ZERO,
        memory_bytes: 1 << 20,
        ..PowerOptions::default()
    };
    let mut load = crate::power::BusyLoad::new(opts.memory_bytes);
    let r = measure_with(&topo, &opts, &mut src, &mut load).expect("measured");
    assert!(r.cores_measured && !r.dram_measured);
    assert_eq!(load.running(), 0, "the load was stopped");
    let states = if cpus.len() > 1 { 5 } else { 4 };
    assert_eq!(r.section.entries.len(), 2 * states);
    let idle = r.section.entries[0];
    assert_eq!(idle.state, topoprobe_model::PowerState::Idle);
    assert!(idle.package_w > 0.0 && idle.cores_w > 0.0, "{idle:?}");
    assert!(
        (idle.rest_w - idle.cores_w).abs() < 1e-9 * idle.package_w,
        "{idle:?}"
    );
    assert_eq!(idle.dram_w, 0.0);
    assert!(r.source.contains("intel-rapl:0:0"), "{}", r.source);
}
