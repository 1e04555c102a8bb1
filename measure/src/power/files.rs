//! Reading the small files of powercap, perf and sysfs, and matching sockets with packages.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use topoprobe_model::limits::MAX_SYSFS_FILE_BYTES;
use topoprobe_model::{SocketId, Topology};

use super::PowerError;

/// The error for a file that could not be read: permission problems are
/// [`PowerError::Unavailable`] (with `hint` saying what would help), others
/// [`PowerError::Io`].
pub(super) fn io_error(path: &Path, e: io::Error, hint: &str) -> PowerError {
    if e.kind() == io::ErrorKind::PermissionDenied {
        PowerError::Unavailable(format!(
            "permission denied reading {} ({hint})",
            path.display()
        ))
    } else {
        PowerError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// A small file of powercap, perf or sysfs, as text: a regular file (a FIFO or device
/// is refused without blocking) of at most [`MAX_SYSFS_FILE_BYTES`], read by the rules
/// of `topoprobe_files`.
fn read_small(path: &Path) -> io::Result<String> {
    topoprobe_files::read_string_lossy(path, topoprobe_files::Rules::file(MAX_SYSFS_FILE_BYTES))
        .map_err(topoprobe_files::FileError::into_io_without_path)
}

/// A text file, trimmed of white space.
pub(super) fn read_text(path: &Path, hint: &str) -> Result<String, PowerError> {
    read_small(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| io_error(path, e, hint))
}

/// A text file, trimmed, when it can be read (a value for a message).
pub(super) fn read_text_or_none(path: &Path) -> Option<String> {
    read_small(path).ok().map(|s| s.trim().to_string())
}

/// A file holding one whole number.
pub(super) fn read_u64(path: &Path, hint: &str) -> Result<u64, PowerError> {
    let text = read_text(path, hint)?;
    text.parse().map_err(|_| PowerError::Malformed {
        path: path.to_path_buf(),
        problem: format!("expected a whole number, found {}", shown(&text)),
    })
}

/// Text for a message: quoted, cut at 40 characters.
pub(super) fn shown(text: &str) -> String {
    let cut: String = text.chars().take(40).collect();
    if cut.len() < text.len() {
        format!("{cut:?}...")
    } else {
        format!("{cut:?}")
    }
}

/// The package (`physical_package_id`) of an OS CPU, when sysfs under `os_root` says.
fn package_of_cpu(os_root: &Path, cpu: u32) -> Option<u32> {
    let path = os_root.join(format!(
        "sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"
    ));
    read_small(&path).ok()?.trim().parse().ok()
}

/// The OS CPU that stands for a socket: its first context's.
pub(super) fn socket_cpu(topo: &Topology, socket: SocketId) -> Option<u32> {
    let ctx = topo.socket_contexts(socket).first()?;
    topo.contexts().get(ctx.0).map(|c| c.os_id)
}

/// The package of every socket of `topo`, among `available` (the packages a source has,
/// with a name for messages): through the `physical_package_id` of each socket's first
/// context when sysfs gives it for every socket, otherwise in ascending order when the
/// numbers agree.
pub(super) fn match_sockets(
    topo: &Topology,
    os_root: &Path,
    available: &[u32],
    source: &str,
) -> Result<Vec<u32>, PowerError> {
    let sockets = topo.num_sockets();
    let listed = || {
        available
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let by_sysfs: Option<Vec<(u32, u32)>> = (0..sockets)
        .map(|s| {
            let cpu = socket_cpu(topo, SocketId(s))?;
            Some((cpu, package_of_cpu(os_root, cpu)?))
        })
        .collect();
    let Some(by_sysfs) = by_sysfs else {
        if available.len() == sockets {
            return Ok(available.to_vec());
        }
        return Err(PowerError::Mapping(format!(
            "cannot match the topology's {} with the packages of {source} ({}): the CPUs' \
             physical_package_id under {} cannot be read for every socket, and the numbers \
             differ",
            topoprobe_model::format::plural(sockets, "socket"),
            listed(),
            os_root.join("sys/devices/system/cpu").display()
        )));
    };
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(sockets);
    for (s, (cpu, package)) in by_sysfs.into_iter().enumerate() {
        if !available.contains(&package) {
            return Err(PowerError::Mapping(format!(
                "socket {s} (CPU {cpu}) lies in package {package}, which {source} does not \
                 measure (packages {})",
                listed()
            )));
        }
        if let Some(other) = seen.insert(package, s) {
            return Err(PowerError::Mapping(format!(
                "sockets {other} and {s} of the topology both lie in package {package}: RAPL \
                 measures whole packages and cannot split it"
            )));
        }
        out.push(package);
    }
    Ok(out)
}

/// Checks that the sockets' CPUs (one per socket, in socket order) lie in different
/// packages, where sysfs under `os_root` says which.
pub(super) fn distinct_packages(os_root: &Path, cpus: &[u32]) -> Result<(), PowerError> {
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    for (s, &cpu) in cpus.iter().enumerate() {
        let Some(package) = package_of_cpu(os_root, cpu) else {
            continue;
        };
        if let Some(other) = seen.insert(package, s) {
            return Err(PowerError::Mapping(format!(
                "sockets {other} and {s} of the topology both lie in package {package}: RAPL \
                 measures whole packages and cannot split it"
            )));
        }
    }
    Ok(())
}
