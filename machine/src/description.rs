//! This machine's description file: where it lives, its identity (fingerprint), and
//! loading it in one call with stale detection.
//!
//! ```no_run
//! // In a program that places its threads by topology:
//! let topo = topoprobe_machine::description::load_this_machine()?;
//! println!("{} sockets", topo.num_sockets());
//! # Ok::<(), topoprobe_machine::description::DescriptionError>(())
//! ```

use std::path::{Path, PathBuf};

use topoprobe_model::format::{create_parent, json, write_atomic};
use topoprobe_model::{Machine, ModelError, Topology};

/// Why this machine's description could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DescriptionError {
    /// There is no description yet.
    #[error("no topology description at {path}: create it with `topoprobe infer` (or point TOPOPROBE_FILE at one)")]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The description was made on a different machine or configuration.
    #[error("the topology description at {path} is stale ({}): re-create it with `topoprobe infer`", describe(.differences))]
    Stale {
        /// The file.
        path: PathBuf,
        /// `(field, described, current)` for every fingerprint field that changed.
        differences: Vec<(&'static str, String, String)>,
    },
    /// The description names CPUs this machine does not have online: it is of another
    /// machine (one without a fingerprint, or whose fingerprint agrees by chance).
    #[error("the topology description at {path} is not this machine's: {why}")]
    OtherMachine {
        /// The file.
        path: PathBuf,
        /// Which machine it is of, and the CPUs that differ.
        why: topoprobe_sys::here::Elsewhere,
    },
    /// The file exists but cannot be read or is not a valid description.
    #[error(transparent)]
    Invalid(#[from] ModelError),
    /// No place for the description is known (neither `TOPOPROBE_FILE`, `XDG_DATA_HOME`
    /// nor `HOME` is set).
    #[error("no place for the topology description: set TOPOPROBE_FILE, XDG_DATA_HOME or HOME")]
    NoPlace,
}

/// Lists fingerprint differences for a message.
fn describe(d: &[(&'static str, String, String)]) -> String {
    d.iter()
        .map(|(f, a, b)| format!("{f} was {a:?}, is {b:?}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reads a small text file, trimmed of whitespace and NUL bytes; `None` when unreadable
/// or empty.
fn read_trimmed(path: &str) -> Option<String> {
    let rules = topoprobe_files::Rules::file(topoprobe_model::limits::MAX_SYSFS_FILE_BYTES);
    let s = topoprobe_files::read_string_lossy(Path::new(path), rules).ok()?;
    let t = s.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    (!t.is_empty()).then(|| t.to_string())
}

/// The running machine's identity: host name, CPU model, online CPUs and kernel, from the
/// OS view (only the online CPUs and the kernel when the OS view cannot be read).
#[must_use]
pub fn this_machine() -> Machine {
    match topoprobe_measure::os::current() {
        Ok(view) => view.machine(),
        Err(_) => Machine {
            hostname: read_trimmed("/proc/sys/kernel/hostname"),
            cpu_model: None,
            online_cpus: read_trimmed("/sys/devices/system/cpu/online"),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        },
    }
}

/// Where this machine's description lives: `$TOPOPROBE_FILE` when set, otherwise
/// `$XDG_DATA_HOME/topoprobe/<host>.json` (`$XDG_DATA_HOME` defaults to
/// `~/.local/share`).
///
/// # Errors
///
/// Returns [`DescriptionError::NoPlace`] when none of the variables is set.
pub fn default_path() -> Result<PathBuf, DescriptionError> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(f) = env("TOPOPROBE_FILE") {
        return Ok(PathBuf::from(f));
    }
    let base = match env("XDG_DATA_HOME") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env("HOME").ok_or(DescriptionError::NoPlace)?)
            .join(".local")
            .join("share"),
    };
    let host = file_stem_of_host(read_trimmed("/proc/sys/kernel/hostname").as_deref());
    Ok(base.join("topoprobe").join(format!("{host}.json")))
}

/// The file name (without `.json`) of the description of a machine whose kernel host name
/// is `host`: `localhost` when the host has no name (none read, or the kernel's `(none)`
/// of a guest that never set one) or a name that is no file name (`.`, `..`), and the
/// name with any path separator or NUL replaced otherwise (a host name never holds one,
/// but a file does not trust it to).
fn file_stem_of_host(host: Option<&str>) -> String {
    match host {
        None | Some("" | "(none)" | "." | "..") => "localhost".to_string(),
        Some(h) => h
            .chars()
            .map(|c| if c == '/' || c == '\0' { '_' } else { c })
            .collect(),
    }
}

/// Loads the description at `path` and checks it against the running machine.
///
/// # Errors
///
/// [`DescriptionError::Missing`] when there is no file, [`DescriptionError::Invalid`] when
/// it cannot be read or parsed, [`DescriptionError::Stale`] when its fingerprint (CPU
/// model, online CPUs, kernel) differs from the running machine's.
pub fn load_checked(path: &Path) -> Result<Topology, DescriptionError> {
    if !path.exists() {
        return Err(DescriptionError::Missing {
            path: path.to_path_buf(),
        });
    }
    let topo = json::read_description(path)?;
    let differences = topo.machine().differences(&this_machine());
    if !differences.is_empty() {
        return Err(DescriptionError::Stale {
            path: path.to_path_buf(),
            differences,
        });
    }
    Ok(topo)
}

/// [`load_checked`], and that the description names only CPUs this machine has online
/// ([`topoprobe_sys::here::check_this_machine`]): for the commands that name or act on
/// this machine's CPUs from it (`place`, `run`, `autopin`, `balance`).
///
/// # Errors
///
/// As [`load_checked`]; [`DescriptionError::OtherMachine`] naming the machine it is of.
pub fn load_checked_here(path: &Path) -> Result<Topology, DescriptionError> {
    let topo = load_checked(path)?;
    topoprobe_sys::here::check_this_machine(&topo).map_err(|why| {
        DescriptionError::OtherMachine {
            path: path.to_path_buf(),
            why,
        }
    })?;
    Ok(topo)
}

/// Writes a description to `path` atomically (a reader never sees half a file).
///
/// # Errors
///
/// [`ModelError`] when the file cannot be written.
pub fn save(topo: &Topology, path: &Path) -> Result<(), ModelError> {
    create_parent(path)?;
    write_atomic(path, json::to_json_string(topo).as_bytes())
}

/// Loads this machine's description from [`default_path`], checking that it is not stale.
///
/// # Errors
///
/// See [`default_path`] and [`load_checked`].
pub fn load_this_machine() -> Result<Topology, DescriptionError> {
    load_checked(&default_path()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_is_identified() {
        let m = this_machine();
        assert!(m.online_cpus.is_some());
        assert!(m.kernel.is_some());
    }

    #[test]
    fn a_host_without_a_name_saves_as_localhost() {
        assert_eq!(file_stem_of_host(None), "localhost");
        assert_eq!(file_stem_of_host(Some("(none)")), "localhost");
        assert_eq!(file_stem_of_host(Some("..")), "localhost");
        assert_eq!(file_stem_of_host(Some("node-17")), "node-17");
        assert_eq!(file_stem_of_host(Some("a/b\0c")), "a_b_c");
    }

    #[test]
    fn a_missing_description_says_how_to_create_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = load_checked(&dir.path().join("none.json")).unwrap_err();
        assert!(matches!(e, DescriptionError::Missing { .. }));
        assert!(e.to_string().contains("topoprobe infer"), "{e}");
    }

    #[test]
    fn a_stale_description_names_what_changed() {
        let e = DescriptionError::Stale {
            path: PathBuf::from("/x.json"),
            differences: vec![("online_cpus", "0-3".into(), "0-1".into())],
        };
        let text = e.to_string();
        assert!(
            text.contains("online_cpus was \"0-3\", is \"0-1\""),
            "{text}"
        );
    }
}
