//! The operating system's view of the machine, read from Linux's sysfs and procfs under a
//! configurable root (`/` for this machine, or an unpacked capture of another one).
//!
//! The root is `/`, a directory holding another machine's `sys/` and `proc/`, or, through
//! [`read_os_view_at`], a capture archive of `hwloc-gather-topology` ([`unpack_capture`]).
//!
//! What is read: `<root>/sys/devices/system/cpu` (online and offline CPUs, package, die,
//! cluster and core ids, sibling masks, caches, capacity, highest frequency),
//! `<root>/sys/devices/system/node` (NUMA nodes, their CPUs, distances, memory and
//! memory-side caches), the cgroup cpuset (`<root>/proc/self/cgroup`, `<root>/proc/mounts`,
//! `<root>/sys/fs/cgroup`),
//! `<root>/sys/devices/cpu_*/cpus` (CPU kinds of hybrid machines), and `<root>/proc`
//! (CPU model, kernel release, host name).
//!
//! Real captures are tolerated as they come: hex masks without `*_list` files, trailing NUL
//! bytes and whitespace, sparse and huge or negative ids, offline CPUs without a `topology`
//! directory (and cpu0 without an `online` file), CPU-less nodes, and a missing node
//! directory (the NUMA layout is then unknown). Missing or malformed *essential* data (the
//! CPU directory, the `online` list, an online CPU's package or core id, a sibling mask, a
//! node's CPU list) is an [`OsError`] naming the file and its content; missing or malformed
//! optional data is left out and described in [`OsView::notes`].
//!
//! ```no_run
//! let os = topoprobe_measure::os::current()?;
//! println!(
//!     "{} packages, {} cores, {} CPUs, SMT: {}",
//!     os.num_packages(),
//!     os.num_cores(),
//!     os.num_pus(),
//!     os.smt()
//! );
//! # Ok::<(), topoprobe_measure::os::OsError>(())
//! ```

mod caches;
mod capture;
mod cgroup;
mod cpus;
mod files;
mod groups;
mod hmat;
mod ident;
mod nodes;
mod options;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use capture::{unpack_capture, Unpacked};
pub use options::ReadOptions;
pub use topoprobe_model::OsView;

use files::Notes;

/// Why the OS view could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OsError {
    /// A file or directory exists but cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is malformed.
    #[error("{}: cannot parse {content:?}: {reason}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Its content (the first 80 characters).
        content: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A capture archive (`hwloc-gather-topology`'s tarball) cannot be unpacked: it is
    /// not a tar archive, is over a limit of `docs/LIMITS.md`, or has an entry that would
    /// leave its folder.
    #[error("{}: {problem}", path.display())]
    Capture {
        /// The archive.
        path: PathBuf,
        /// What is wrong, naming the entry at fault.
        problem: String,
    },
    /// Something essential is missing.
    #[error("{}: {problem}", path.display())]
    Missing {
        /// The file or directory that should exist.
        path: PathBuf,
        /// What is missing, and why it matters.
        problem: String,
    },
}

/// Reads the OS view of the machine whose sysfs and procfs lie under `root`
/// (`<root>/sys/devices/system/cpu`, `<root>/sys/devices/system/node`, `<root>/proc`),
/// with the default [`ReadOptions`].
///
/// # Errors
///
/// Returns [`OsError`] when the CPU directory is missing, cannot be listed or has no
/// online CPU with a topology directory. Every other missing, unreadable or malformed
/// file is a note of [`OsView::notes`] naming it, and the view says less.
pub fn read_os_view(root: &Path) -> Result<OsView, OsError> {
    read_os_view_with(root, &ReadOptions::default())
}

/// [`read_os_view`] with options ([`ReadOptions`]).
///
/// # Errors
///
/// As [`read_os_view`].
pub fn read_os_view_with(root: &Path, options: &ReadOptions) -> Result<OsView, OsError> {
    let mut notes = Notes::default();
    let cpus::Cpus {
        online: mut cpus,
        offline,
        raw,
    } = cpus::read_cpus(root, &mut notes)?;
    let ids: Vec<u32> = cpus.iter().map(|c| c.id).collect();
    let cpu_dir = root.join("sys/devices/system/cpu");
    let caches = caches::read_caches(&cpu_dir, &ids, &raw, &mut notes);
    let evidence = groups::CoreEvidence {
        l1d: caches::l1d_of(&caches),
        amd_compute_units: ident::amd_compute_units(root),
    };
    groups::decide(&mut cpus, &raw, &evidence, &mut notes);
    let caches = caches::within_packages(caches, &cpus, &mut notes);
    let nodes::Nodes {
        nodes,
        memory_side_caches,
        initiators,
        hmat,
    } = nodes::read_nodes(root, &ids, options, &mut notes)?;
    let mut node_of: BTreeMap<u32, u32> = BTreeMap::new();
    for n in nodes.iter().flatten() {
        for &c in &n.cpus {
            if let Some(other) = node_of.insert(c, n.id) {
                notes.add(format!(
                    "CPU {c} is listed in nodes {other} and {}; node {} kept",
                    n.id, n.id
                ));
            }
        }
    }
    for c in &mut cpus {
        c.node = node_of.get(&c.id).copied();
    }
    let without: Vec<u32> = cpus
        .iter()
        .filter(|c| c.node.is_none())
        .map(|c| c.id)
        .collect();
    if nodes.is_some() && !without.is_empty() {
        notes.add(format!(
            "CPUs {} are in no NUMA node the OS lists; their node is unknown",
            topoprobe_model::format_cpu_list(&without)
        ));
    }
    let (cpu_model, kernel, hostname) = ident::read_identity(root, &mut notes);
    let allowed = cgroup::read_allowed(root, &mut notes);
    Ok(OsView {
        cpus,
        offline,
        nodes,
        caches,
        cpu_model,
        kernel,
        hostname,
        memory_side_caches,
        cpuset: allowed.cpus,
        allowed_nodes: allowed.mems,
        initiators,
        hmat,
        notes: notes.into_vec(),
    })
}

/// Reads the OS view at `path`: a directory is a root (as [`read_os_view`]); a file is a
/// capture archive (`hwloc-gather-topology`'s tarball: tar, tar.gz or tar.bz2), unpacked
/// into a temporary directory ([`unpack_capture`]) that is removed before this returns,
/// on success or error alike.
///
/// # Errors
///
/// [`OsError::Read`] when `path` does not exist or cannot be read; [`OsError::Capture`]
/// for an archive that cannot be unpacked; then as [`read_os_view`]. The errors name the
/// unpacked files by their path inside the archive's folder.
pub fn read_os_view_at(path: &Path) -> Result<OsView, OsError> {
    read_os_view_at_with(path, &ReadOptions::default())
}

/// [`read_os_view_at`] with options ([`ReadOptions`]).
///
/// # Errors
///
/// As [`read_os_view_at`].
pub fn read_os_view_at_with(path: &Path, options: &ReadOptions) -> Result<OsView, OsError> {
    let meta = std::fs::metadata(path).map_err(|source| OsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_dir() {
        return read_os_view_with(path, options);
    }
    let unpacked = unpack_capture(path)?;
    read_os_view_with(unpacked.root(), options).map_err(|e| inside_archive(e, path, unpacked.dir()))
}

/// `e` with the temporary paths under `dir` written as `archive:<path in the archive>`.
fn inside_archive(e: OsError, archive: &Path, dir: &Path) -> OsError {
    let rename = |p: PathBuf| match p.strip_prefix(dir) {
        Ok(rel) => PathBuf::from(format!("{}:{}", archive.display(), rel.display())),
        Err(_) => p,
    };
    match e {
        OsError::Read { path, source } => OsError::Read {
            path: rename(path),
            source,
        },
        OsError::Parse {
            path,
            content,
            reason,
        } => OsError::Parse {
            path: rename(path),
            content,
            reason,
        },
        OsError::Missing { path, problem } => OsError::Missing {
            path: rename(path),
            problem,
        },
        e @ OsError::Capture { .. } => e,
    }
}

/// Whether the machine whose `/proc` lies under `root` is a virtual machine (the
/// `hypervisor` CPU flag of `/proc/cpuinfo`); `None` when that file cannot be read. A
/// guest's vCPUs may be moved by the host between its cores, dies and SMT siblings: what a
/// measurement sees is the placement of the moment.
#[must_use]
pub fn is_virtual_machine(root: &Path) -> Option<bool> {
    ident::hypervisor(root)
}

/// Free memory of NUMA node `id` of this machine now (`MemFree` of
/// `/sys/devices/system/node/node<id>/meminfo`), in bytes; `None` when the OS does not say.
/// It changes from moment to moment, unlike the node's total ([`OsView::nodes`]).
#[must_use]
pub fn node_free_bytes(id: u32) -> Option<u64> {
    nodes::free_bytes(Path::new("/"), id)
}

/// Memory the kernel could give a program now without swapping (`MemAvailable` of
/// `/proc/meminfo`), bytes; `None` when the kernel does not say.
#[must_use]
pub fn available_bytes() -> Option<u64> {
    nodes::meminfo_field(Path::new("/proc"), "MemAvailable:", &mut Notes::default())
}

/// Free memory of the node with the least of it now, among this machine's online nodes
/// that have memory, bytes; `None` when the OS does not say.
#[must_use]
pub fn least_free_bytes() -> Option<u64> {
    topoprobe_sys::memory::online_nodes()
        .iter()
        .filter_map(node_free_bytes)
        .filter(|&f| f > 0)
        .min()
}

/// Reads the OS view of this machine (root `/`).
///
/// # Errors
///
/// As [`read_os_view`].
pub fn current() -> Result<OsView, OsError> {
    read_os_view(Path::new("/"))
}

#[cfg(test)]
mod tests;
