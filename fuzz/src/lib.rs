//! Fuzz targets of every input topoprobe reads: the `.mct` reader, the matrix CSV reader,
//! the JSON description loader, the sysfs files the OS view reads, CPU-list, CPU-mask
//! and size arguments, the hwloc XML reader and the capture-archive reader; and two structure-aware ones: descriptions made from real ones with
//! extreme values and long repetitions ([`json_gen()`], [`mod@json_gen`]), and CPU lists repeating ranges
//! thousands of times ([`args_gen()`], [`mod@args_gen`]).
//!
//! Each target is a function taking arbitrary bytes; it must return without panicking,
//! hanging or allocating without bound whatever the bytes are (the JSON targets measure
//! the memory the loader holds with this crate's counting allocator, [`alloc`]). The AFL++
//! entry points in `src/bin/` call them (`cargo afl build --features afl`), and
//! `tests/replay.rs` runs every file of the minimized corpus (`corpus/<target>/`) through
//! them in `cargo test`. `docs/FUZZING.md` has the commands.

use std::path::{Path, PathBuf};

use topoprobe_model::format::{csv, json, mct, tsv};

pub mod alloc;
pub mod args_gen;
pub mod json_gen;
mod targets;
pub mod tree;

pub use targets::{args_gen, json_gen};

/// Every binary and test linking this crate counts its allocations (see [`alloc`]).
#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

/// A fuzz target: a function of arbitrary bytes.
pub type Target = fn(&[u8]);

/// The targets, by name: the corpus of target `name` is in `corpus/name/`.
pub const TARGETS: [(&str, Target); 9] = [
    ("mct", mct),
    ("csv", csv),
    ("json", json),
    ("sysfs", sysfs),
    ("args", args),
    ("json_gen", json_gen),
    ("args_gen", args_gen),
    ("hwloc_xml", hwloc_xml),
    ("capture", capture),
];

/// The bytes as text, as the readers see a file: invalid UTF-8 is refused by the reader
/// before any parser runs, so it is not interesting here.
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// The `.mct` reader; a file it accepts is written back (with the views of its latency
/// table) and read again.
///
/// # Panics
///
/// When the reader breaks its own contract: that is the finding the fuzzer looks for.
pub fn mct(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let path = Path::new("fuzz.mct");
    if let Ok(file) = mct::parse_mct(text, path) {
        assert!(file.contexts <= topoprobe_model::limits::MAX_CONTEXTS);
        assert!(file.nodes <= topoprobe_model::limits::MAX_NODES);
        assert_eq!(file.latency.len(), file.contexts);
    }
}

/// The latency-matrix CSV reader; a matrix it accepts is written and read back unchanged.
///
/// # Panics
///
/// When the reader breaks its own contract: that is the finding the fuzzer looks for.
pub fn csv(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let path = Path::new("fuzz.csv");
    if let Ok(m) = csv::parse_matrix(text, path) {
        let mut out = Vec::new();
        csv::write_matrix(&m, &mut out).expect("writing to memory");
        let again = String::from_utf8(out).expect("the writer writes text");
        let back = csv::parse_matrix(&again, path).expect("a written matrix reads back");
        assert_eq!(back.len(), m.len());
    }
}

/// The JSON description loader (syntax, shape and every consistency check), which must
/// hold no more than [`alloc::reading_bound`] of the text while reading; a description it
/// accepts is rendered in the formats that need no frequency and read back (its hwloc
/// XML by the hwloc XML reader).
///
/// # Panics
///
/// When the reader breaks its own contract: that is the finding the fuzzer looks for.
pub fn json(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let path = Path::new("fuzz.json");
    let (loaded, peak) = alloc::measure(|| json::from_json_str(text, path));
    let bound = alloc::reading_bound(text.len());
    assert!(
        peak <= bound,
        "reading {} bytes held {peak} bytes, more than {bound}",
        text.len()
    );
    if let Ok(topo) = loaded {
        let again = json::to_json_string(&topo);
        let back = json::from_json_str(&again, path).expect("a written description reads back");
        // Written, a description keeps 10 significant digits: the first trip may round,
        // the second changes nothing.
        assert_eq!(back.contexts(), topo.contexts());
        assert_eq!(json::to_json_string(&back), again);
        let _ = tsv::partition_string(&topo);
        let xml = topoprobe_model::format::hwloc_xml::render(&topo);
        let _ = topoprobe_model::format::hwloc_xml::annotate::render(&topo);
        // The export reads back as the OS's view of the same CPUs.
        let os = topoprobe_model::format::hwloc_xml::read::read_os_view(&xml, path)
            .expect("an exported hwloc XML reads back");
        assert_eq!(os.cpus.len(), topo.num_contexts());
    }
}

/// The files of a sysfs capture the OS view reads, in the order the bytes give them: the
/// input is split at each 0xFF byte (never in UTF-8 text) and the pieces fill these files
/// in turn; the files without a piece are absent.
pub const SYSFS_FILES: [&str; 27] = [
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/cpu0/topology/physical_package_id",
    "sys/devices/system/cpu/cpu0/topology/core_id",
    "sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
    "sys/devices/system/cpu/cpu0/topology/core_siblings",
    "sys/devices/system/cpu/cpu0/topology/die_id",
    "sys/devices/system/cpu/cpu0/topology/cluster_id",
    "sys/devices/system/cpu/cpu0/cache/index0/level",
    "sys/devices/system/cpu/cpu0/cache/index0/type",
    "sys/devices/system/cpu/cpu0/cache/index0/size",
    "sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list",
    "sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size",
    "sys/devices/system/cpu/cpu0/cache/index0/ways_of_associativity",
    "sys/devices/system/cpu/cpu0/cpu_capacity",
    "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
    "sys/devices/system/cpu/cpu1/online",
    "sys/devices/system/cpu/cpu1/topology/physical_package_id",
    "sys/devices/system/cpu/cpu1/topology/core_id",
    "sys/devices/system/cpu/cpu1/topology/thread_siblings",
    "sys/devices/system/cpu/cpu1/topology/core_cpus_list",
    "sys/devices/system/node/online",
    "sys/devices/system/node/node0/cpulist",
    "sys/devices/system/node/node0/distance",
    "sys/devices/system/node/node0/meminfo",
    "sys/devices/system/node/node1/cpumap",
    "sys/devices/cpu_core/cpus",
    "proc/cpuinfo",
];

/// The scratch tree of this process (in `/dev/shm` when it exists: fast, and no disk).
fn sysfs_root() -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    base.join(format!("topoprobe-fuzz-sysfs-{}", std::process::id()))
}

/// The hwloc XML reader (`--topology FILE.xml`): as the operating system's view, then as
/// a description of its structure. A view it accepts holds at most the context and node
/// limits of PUs and nodes.
///
/// # Panics
///
/// When the reader breaks its own contract: that is the finding the fuzzer looks for.
pub fn hwloc_xml(data: &[u8]) {
    use topoprobe_model::format::hwloc_xml::read;
    use topoprobe_model::limits::{MAX_CONTEXTS, MAX_NODES};
    let Some(t) = text(data) else { return };
    let path = Path::new("fuzz.xml");
    if let Ok(view) = read::read_os_view(t, path) {
        assert!(view.num_pus() <= MAX_CONTEXTS, "{} PUs", view.num_pus());
        assert!(view.nodes.as_ref().map_or(0, Vec::len) <= MAX_NODES);
        let _ = view.structure();
    }
    let _ = read::read_topology(t, path);
}

/// The scratch file of [`capture`]: in memory where `/dev/shm` exists.
fn capture_path() -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    base.join(format!("topoprobe-fuzz-capture-{}.tar", std::process::id()))
}

/// The capture-archive reader (`os --root FILE`): the input as an archive (plain tar,
/// gzip or bzip2, told by content), unpacked into a temporary directory and read as the
/// operating system's view. What it unpacks stays in that directory, which is removed
/// afterwards.
///
/// # Panics
///
/// When the reader breaks its own contract: that is the finding the fuzzer looks for.
pub fn capture(data: &[u8]) {
    let path = capture_path();
    // The harness writes the scratch file it names, not a file it was handed.
    #[allow(clippy::disallowed_methods)]
    std::fs::write(&path, data).expect("writing the scratch archive");
    if let Ok(unpacked) = topoprobe_measure::os::unpack_capture(&path) {
        let dir = unpacked.dir().to_path_buf();
        assert!(
            unpacked.root().starts_with(&dir),
            "the root {} lies outside {}",
            unpacked.root().display(),
            dir.display()
        );
        let _ = topoprobe_measure::os::read_os_view(unpacked.root());
        drop(unpacked);
        assert!(!dir.exists(), "{} is left behind", dir.display());
    }
    let _ = std::fs::remove_file(&path);
}

/// Removes the scratch tree of [`sysfs`] (left in place between inputs while fuzzing).
pub fn sysfs_cleanup() {
    let _ = std::fs::remove_dir_all(sysfs_root());
}

/// The OS view reader on a sysfs tree made of the input (see [`SYSFS_FILES`]).
///
/// # Panics
///
/// When the reader breaks its own contract: that is the finding the fuzzer looks for.
pub fn sysfs(data: &[u8]) {
    let root = sysfs_root();
    let mut pieces = data.split(|&b| b == 0xff);
    for rel in SYSFS_FILES {
        let path = root.join(rel);
        match pieces.next() {
            Some(content) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).expect("creating the scratch tree");
                }
                // The harness writes the scratch tree it made, not a file it was handed.
                #[allow(clippy::disallowed_methods)]
                std::fs::write(&path, content).expect("writing the scratch tree");
            }
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    if let Ok(view) = topoprobe_measure::os::read_os_view(&root) {
        let _ = (
            view.num_packages(),
            view.num_cores(),
            view.num_pus(),
            view.smt(),
        );
    }
}

/// Command-line arguments: the first byte picks the parser (CPU list, CPU mask or size),
/// the rest is the argument.
///
/// # Panics
///
/// When the reader breaks its own contract: that is the finding the fuzzer looks for.
pub fn args(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Some(s) = text(rest) else { return };
    match which % 3 {
        0 => {
            if let Ok(cpus) = topoprobe_model::parse_cpu_list(s) {
                assert!(cpus.windows(2).all(|w| w[0] < w[1]));
                let again = topoprobe_model::format_cpu_list(&cpus);
                assert_eq!(topoprobe_model::parse_cpu_list(&again).as_ref(), Ok(&cpus));
            }
        }
        1 => {
            if let Ok(cpus) = topoprobe_model::parse_cpu_mask(s) {
                assert!(cpus.iter().all(|&c| c <= topoprobe_model::MAX_CPU));
            }
        }
        _ => {
            if let Ok(n) = topoprobe_model::parse_size(s) {
                assert!((1..=topoprobe_model::MAX_SIZE).contains(&n));
            }
        }
    }
}
