//! The topology a measuring command works on: a file given with `--topology`, or this
//! machine's saved description.

use std::path::Path;

use anyhow::{Context, Result};
use topoprobe_infer::{load_topology, InferOptions};
use topoprobe_measure::description::{self, DescriptionError};
use topoprobe_model::Topology;

/// Loads `path` (a description, `.mct` or matrix), or this machine's description when
/// `path` is `None`.
///
/// # Errors
///
/// When the file cannot be read or inferred from, or this machine has no (fresh)
/// description: the message says to run `topoprobe infer`.
pub(crate) fn topology(path: Option<&Path>) -> Result<Topology> {
    if let Some(p) = path {
        return load_topology(p, &InferOptions::default())
            .with_context(|| format!("loading the topology {}", p.display()));
    }
    match description::load_this_machine() {
        Ok(t) => Ok(t),
        Err(e @ (DescriptionError::Missing { .. } | DescriptionError::Stale { .. })) => {
            Err(anyhow::Error::new(e).context(
                "this command needs this machine's topology: run `topoprobe infer` first, or \
                 give one with --topology FILE",
            ))
        }
        Err(e) => Err(e).context("loading this machine's description"),
    }
}
