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
    if let Some(p) = path {
        return load_topology(p, &InferOptions::default()).map_err(|source| MachineError::Load {
            path: p.to_path_buf(),
            source,
        });
    }
    match description::load_this_machine() {
        Ok(t) => Ok(t),
        Err(e @ (DescriptionError::Missing { .. } | DescriptionError::Stale { .. })) => {
            Err(MachineError::NoDescription(e))
        }
        Err(e) => Err(MachineError::LoadDescription(e)),
    }
}
