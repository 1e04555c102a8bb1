//! The topology a command works on, from its arguments: a file (`--topology`), a matrix
//! to infer from (`--from-matrix`), or this machine's description; and the placement
//! `place` and `run` ask for.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use topoprobe_infer::load_topology;
use topoprobe_machine::stamp;
use topoprobe_model::format::csv;
use topoprobe_model::{Source, Topology};
use topoprobe_place::{Policy, Request};

use crate::args::{Hints, Input, PinList, PlacementArgs};

/// Loads `path` (a description, `.mct` file or matrix), or this machine's description, or
/// — when this machine has no (fresh) description — the operating system's view of it,
/// saying so on standard error.
///
/// # Errors
///
/// When the file cannot be read or inferred from, or this machine's description cannot
/// be read, or there is none and the OS view cannot be read either.
pub(crate) fn topology(path: Option<&Path>) -> Result<Topology> {
    let loaded = topoprobe_machine::load::topology_or_os(path)?;
    if let Some(note) = loaded.note {
        eprintln!("topoprobe: note: {note}");
    }
    Ok(loaded.topology)
}

/// Infers the topology of a latency-matrix file (`hints` as given on the command line),
/// with a spinner on large tables.
///
/// # Errors
///
/// When the file cannot be read or parsed, or inference fails.
pub(crate) fn infer_matrix_file(path: &Path, hints: &Hints) -> Result<Topology> {
    let m = csv::read_matrix(path)?;
    let mut opts = hints.options();
    opts.source = Source::Matrix {
        path: path.display().to_string(),
    };
    let n = m.len();
    crate::progress::while_inferring(n, || topoprobe_infer::infer_owned(m, &opts))
        .with_context(|| format!("inferring the topology of {}", path.display()))
}

impl Input {
    /// The files the topology is read from (none for this machine's description), which
    /// an output must not overwrite.
    pub(crate) fn paths(&self) -> Vec<&Path> {
        self.topology
            .iter()
            .chain(&self.from_matrix)
            .map(std::path::PathBuf::as_path)
            .collect()
    }

    /// Checks, before any work, that a result can be written to `out`: its directory
    /// exists and it is not the input file.
    ///
    /// # Errors
    ///
    /// A usage error when `out` is the input file; an error naming a missing directory.
    pub(crate) fn check_output(&self, out: Option<&Path>) -> Result<()> {
        crate::output::check_target(out, &self.paths())
    }

    /// Loads (or infers) the topology of a view.
    ///
    /// # Errors
    ///
    /// Fails when the file cannot be read or parsed, inference fails, or (without a file)
    /// this machine has no readable description.
    pub(crate) fn load(&self) -> Result<Topology> {
        let started = Instant::now();
        let mut topo = match (&self.topology, &self.from_matrix) {
            (Some(p), _) => {
                let topo = load_topology(p, &self.hints.options())?;
                if let Some(note) = topoprobe_machine::load::file_note(&topo) {
                    eprintln!("topoprobe: note: {note}");
                }
                topo
            }
            (None, Some(p)) => infer_matrix_file(p, &self.hints)?,
            (None, None) => topology(None)?,
        };
        if topo.provenance().created.is_none() {
            stamp(&mut topo, started);
        }
        Ok(topo)
    }
}

impl PlacementArgs {
    /// Loads the topology and makes the request the arguments describe.
    ///
    /// # Errors
    ///
    /// When the topology cannot be loaded, or the `--cpus` expression is malformed or
    /// names what the topology lacks (a usage error).
    pub(crate) fn request(&self) -> Result<(Topology, Request)> {
        let topo = topology(self.topology.as_deref())?;
        // On this machine, hwloc's and likwid's names mean the OS's objects, as in those
        // tools; a file's objects are its own.
        let this_machine = self.topology.is_none();
        let cpus = match &self.cpus {
            Some(expr) if this_machine => Some(crate::cpusets::on_this_machine("--cpus", expr)?),
            Some(expr) => Some(crate::cpusets::on_topology("--cpus", expr, &topo)?),
            // A process confined by a cpuset (Slurm, a container) places on the CPUs it
            // may use, as hwloc shows them.
            None if this_machine => confined_cpus(&topo),
            None => None,
        };
        if let Some(list) = &self.pin {
            let cpus = match list {
                PinList::Cpus(c) => c.clone(),
                PinList::Expr(e) if this_machine => {
                    crate::cpusets::ordered_on_this_machine("--pin", e)?
                }
                PinList::Expr(e) => crate::cpusets::ordered_on_topology("--pin", e, &topo)?,
            };
            return Ok((
                topo,
                Request {
                    policy: Policy::List,
                    threads: self.threads,
                    sockets: None,
                    kind: None,
                    cpus: Some(cpus),
                },
            ));
        }
        let req = Request {
            policy: self.policy.unwrap_or(Policy::None),
            threads: self.threads,
            sockets: self.sockets,
            kind: self.kind,
            cpus,
        };
        Ok((topo, req))
    }
}

/// The contexts of `topo` this process may run on (its affinity, which a cgroup cpuset
/// narrows), when they are not all of them; `None` when it may use every one, or its
/// affinity cannot be read (the launch then checks each CPU).
fn confined_cpus(topo: &Topology) -> Option<Vec<u32>> {
    let allowed = topoprobe_sys::affinity::allowed_cpus().ok()?;
    let all: Vec<u32> = topo.contexts().iter().map(|c| c.os_id).collect();
    let mine: Vec<u32> = all
        .iter()
        .copied()
        .filter(|&c| allowed.contains(c))
        .collect();
    (!mine.is_empty() && mine.len() < all.len()).then_some(mine)
}
