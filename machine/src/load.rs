//! The topology a command or program works on: a file it names, or this machine's saved
//! description.

use std::path::Path;

use topoprobe_infer::{load_topology, InferOptions};
use topoprobe_model::Topology;

use crate::description::{self, DescriptionError};
use crate::MachineError;

/// Loads `path` (a description, `.mct` file or latency matrix; the last two are
/// inferred), or this machine's description when `path` is `None`.
///
/// # Errors
///
/// [`MachineError::Load`] when the file cannot be read or inferred from;
/// [`MachineError::NoDescription`] when this machine has no (fresh) description — the
/// message says to run `topoprobe infer`; [`MachineError::LoadDescription`] when it
/// cannot be read.
pub fn topology(path: Option<&Path>) -> Result<Topology, MachineError> {
    topology_with(path, false)
}

/// [`topology`] for a command that names or acts on this machine's CPUs (`place`, `run`,
/// `autopin`, `balance`): this machine's description must also name only CPUs this
/// machine has online ([`description::load_checked_here`]); one of another machine is
/// [`MachineError::NoDescription`], as a stale one is.
///
/// # Errors
///
/// As [`topology`].
pub fn topology_here(path: Option<&Path>) -> Result<Topology, MachineError> {
    topology_with(path, true)
}

/// [`topology`], or [`topology_here`] when `here`.
fn topology_with(path: Option<&Path>, here: bool) -> Result<Topology, MachineError> {
    if let Some(p) = path {
        return load_topology(p, &InferOptions::default()).map_err(|source| MachineError::Load {
            path: p.to_path_buf(),
            source,
        });
    }
    let loaded = if here {
        description::default_path().and_then(|p| description::load_checked_here(&p))
    } else {
        description::load_this_machine()
    };
    match loaded {
        Ok(t) => Ok(t),
        Err(
            e @ (DescriptionError::Missing { .. }
            | DescriptionError::Stale { .. }
            | DescriptionError::OtherMachine { .. }),
        ) => Err(MachineError::NoDescription(e)),
        Err(e) => Err(MachineError::LoadDescription(e)),
    }
}

/// The note for a topology read from a file that holds no measurement: an hwloc XML
/// file, read as the operating system's structure (no latency); `None` otherwise.
#[must_use]
pub fn file_note(topology: &Topology) -> Option<String> {
    let path = topology.provenance().parameters.get("hwloc_xml")?;
    Some(format!(
        "{path}: the operating system's structure from hwloc XML, with no latency; \
         `topoprobe infer` on that machine measures it"
    ))
}

/// The topology a command works on and, when it is not a measured description, the note
/// that says so.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The topology.
    pub topology: Topology,
    /// Set when the topology is the operating system's view of this machine (no saved
    /// description, or a stale one) or of the machine of an hwloc XML file: the sentence
    /// to show the user.
    pub note: Option<String>,
}

/// Loads `path` as [`topology`] does; without a path, this machine's description, or —
/// when it has none or a stale one — the operating system's view of this machine
/// ([`OsView::structure`](topoprobe_model::OsView::structure): structure only, no
/// latency), with a note saying so, as lstopo and likwid-pin work at once.
///
/// # Errors
///
/// As [`topology`] for a file or an unreadable description; [`MachineError::NoDescription`]
/// when there is no description and the OS view cannot be read either (the message of
/// that failure is in the chain).
pub fn topology_or_os(path: Option<&Path>) -> Result<Loaded, MachineError> {
    or_os(path, false)
}

/// [`topology_or_os`] for a command that names or acts on this machine's CPUs: this
/// machine's description of another machine (one naming CPUs this machine does not have
/// online) is replaced by the OS's view too, with a note naming the machine it is of.
///
/// # Errors
///
/// As [`topology_or_os`].
pub fn topology_or_os_here(path: Option<&Path>) -> Result<Loaded, MachineError> {
    or_os(path, true)
}

/// [`topology_or_os`], checked against this machine when `here`.
fn or_os(path: Option<&Path>, here: bool) -> Result<Loaded, MachineError> {
    match topology_with(path, here) {
        Ok(topology) => Ok(Loaded {
            note: file_note(&topology),
            topology,
        }),
        Err(MachineError::NoDescription(why)) => {
            let fallback = topoprobe_measure::os::current()
                .map_err(|e| e.to_string())
                .and_then(|os| os.structure().map_err(|e| e.to_string()));
            match fallback {
                Ok(topology) => {
                    let reason = match &why {
                        DescriptionError::Missing { path } => {
                            format!("no description at {}", path.display())
                        }
                        DescriptionError::Stale { path, .. } => {
                            format!("the description at {} is stale", path.display())
                        }
                        DescriptionError::OtherMachine { path, why } => format!(
                            "the description at {} is of another machine ({}), not this one",
                            path.display(),
                            why.machine
                        ),
                        other => other.to_string(),
                    };
                    Ok(Loaded {
                        topology,
                        note: Some(format!(
                            "from the operating system's view; `topoprobe infer` measures it \
                             ({reason})"
                        )),
                    })
                }
                Err(_) => Err(MachineError::NoDescription(why)),
            }
        }
        Err(e) => Err(e),
    }
}
