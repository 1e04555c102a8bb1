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
use crate::error::Usage;

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

/// [`topology`] for a command that names or acts on this machine's CPUs (`place`, `run`,
/// `autopin`, `balance`): this machine's description of another machine is replaced by
/// the OS's view, with a note naming the machine it is of (see [`check_here`] for a file
/// named by `--topology`).
///
/// # Errors
///
/// As [`topology`].
pub(crate) fn topology_here(path: Option<&Path>) -> Result<Topology> {
    let loaded = topoprobe_machine::load::topology_or_os_here(path)?;
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
        let topo = topology_here(self.topology.as_deref())?;
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
            if let Some(note) = self.threads.and_then(|n| pin_threads_note(n, cpus.len())) {
                eprintln!("topoprobe: note: {note}");
            }
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

/// What `-n N` does beside `--pin LIST` of `listed` CPUs, when it changes anything: fewer
/// threads use the start of the list, more share it.
fn pin_threads_note(threads: usize, listed: usize) -> Option<String> {
    let cpus = |n: usize| format!("{n} CPU{}", if n == 1 { "" } else { "s" });
    if threads < listed && threads > 0 {
        Some(format!(
            "-n {threads} with --pin's {}: only the first {} of the list are used",
            cpus(listed),
            cpus(threads)
        ))
    } else if threads > listed {
        Some(format!(
            "-n {threads} with --pin's {}: threads {} to {threads} are not pinned to one CPU; \
             they may run on any CPU of the list",
            cpus(listed),
            listed + 1
        ))
    } else {
        None
    }
}

/// What a command does with this machine's CPUs, for [`check_here`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// Names CPUs (`place`, `cpus`): a topology of another machine is planning for it.
    Plan,
    /// Runs a program on the placement's CPUs (`run`): those must be this machine's
    /// (`topoprobe_place::launch` refuses otherwise, naming the machine).
    Run,
    /// Moves threads over the topology's CPUs (`autopin`, `balance`): all of them must
    /// be this machine's.
    Act,
}

/// Checks a topology against this machine (`topoprobe_sys::here`, the one check `run`'s
/// refusal names the machine with) for a command that names or acts on this machine's
/// CPUs: a topology of another machine is a usage error for `autopin` and `balance`, a
/// warning for `run` (which then refuses CPUs this process may not run on), and a note
/// for `place` and `cpus` (planning for that machine with `--topology FILE` keeps
/// working). `file` names where the topology came from (`None`: this machine's
/// description, which the loader already replaces by the OS's view when it is of another
/// machine).
///
/// # Errors
///
/// A usage error naming the description's machine, for [`Use::Act`].
pub(crate) fn check_here(topo: &Topology, file: Option<&Path>, how: Use) -> Result<()> {
    let Err(e) = topoprobe_sys::here::check_this_machine(topo) else {
        return Ok(());
    };
    let from = file.map_or_else(String::new, |p| format!("{}: ", p.display()));
    match how {
        Use::Act => Err(Usage(format!(
            "{from}{e}, and this process may not run on them: measure this machine with \
             `topoprobe infer`, or name a description of it with --topology"
        ))
        .into()),
        Use::Run => {
            eprintln!(
                "topoprobe: warning: {from}{e}; the placement is made on that machine's \
                 topology, and may use only CPUs this one has"
            );
            Ok(())
        }
        Use::Plan => {
            eprintln!(
                "topoprobe: note: {from}{e}; the CPUs named are that machine's (planning for \
                 it, not for this one)"
            );
            Ok(())
        }
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
