//! The workflows a topoprobe user runs, as library calls:
//!
//! - [`measure_this_machine`] / [`measure_and_save`]: measure core-to-core latencies on
//!   this machine, infer its topology with the OS's hints, record the OS's memory nodes and
//!   where the OS disagrees, add the plugins' sections (caches, memory, contention,
//!   power), stamp and save the description — with a [`Progress`] callback.
//! - [`description`]: where this machine's description lives, its fingerprint, loading it
//!   with a staleness check, saving it atomically.
//! - [`load::topology`]: a topology file, or this machine's description.
//! - [`pairs`]: the pieces of a live latency measurement (CPU selection, the probe's
//!   settings, collecting a table), for commands that print a matrix or one pair.
//! - [`pair_plan`]: which latency pairs are measured, how much each is repeated, and what
//!   they cost within their share of the budget.
//! - [`plan`]: the cost plan of a measurement within its budget (time and memory), from
//!   the shape of the machine, before anything is measured.
//! - [`deadlines`]: the clock a run's deadlines are read on, how far a step may overrun
//!   its plan, and a plugin's share of the time left.
//! - [`plugins`]: the plugins by name, their plans and the sections they add.
//! - [`probes`]: the measuring commands (one pair's latency, the latency matrix, caches,
//!   memory, contention, power) as library calls returning their results.
//! - [`stability`]: guests whose vCPUs the host moves: reference pairs re-measured
//!   between phases, the SMT probe repeated, the saved description compared; an unstable
//!   topology said as such.
//! - [`hints`]: what the OS says about the measured CPUs (the socket hint is the package
//!   count; the NUMA node count is a separate fact).
//!
//! ```no_run
//! use topoprobe_machine::{measure_and_save, MeasureOptions};
//!
//! let m = measure_and_save(&MeasureOptions::default(), &mut |_| {})?;
//! println!("{} sockets, saved to {}", m.topology.num_sockets(), m.path.display());
//! # Ok::<(), topoprobe_machine::MachineError>(())
//! ```

#![forbid(unsafe_code)]

pub mod deadlines;
pub mod description;
mod error;
pub mod hints;
pub mod load;
mod measurement;
pub mod pair_plan;
pub mod pairs;
pub mod plan;
pub mod plugins;
pub mod probes;
pub mod stability;

#[cfg(test)]
mod scripted_tests;

use std::time::Instant;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use topoprobe_model::{CostPlan, Topology};

pub use error::{MachineError, PluginFailure};
pub use measurement::{
    measure_and_save, measure_this_machine, plan_only, plan_this_machine, shape_of_this_machine,
    MeasureOptions, Measurement,
};

/// What a long measurement is doing, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// Core-to-core latencies: `done` of (currently) `total` pairs measured.
    Pairs {
        /// Pairs measured.
        done: usize,
        /// Pairs planned so far (the sparse strategy adds pairs as it learns).
        total: usize,
    },
    /// The latency measurement is over.
    PairsDone,
    /// The plan of the whole measurement, before anything is measured: every step with its
    /// planned seconds (a progress display shows the steps with an ETA from it).
    Plan(&'a CostPlan),
    /// A plugin started (`cache`, `mem`, ...).
    Plugin(&'a str),
    /// A plugin step started (for example `caches`, `latency CPU 0 -> node 0`), named as in
    /// the plan.
    Step(&'a str),
    /// The plugins are done.
    StepsDone,
}

/// The OS's numbers of the memory nodes that hold `cpus`, in increasing order; `None` when
/// the OS view cannot be read, has no nodes, or none holds these CPUs.
#[must_use]
pub fn os_nodes_of(cpus: &[u32]) -> Option<Vec<u32>> {
    let view = topoprobe_measure::os::current().ok()?;
    let mut v: Vec<u32> = view
        .nodes?
        .iter()
        .filter(|n| n.cpus.iter().any(|c| cpus.contains(c)))
        .map(|n| n.id)
        .collect();
    v.sort_unstable();
    (!v.is_empty()).then_some(v)
}

/// Records when and in how long a topology was made (`started`: when the work began).
pub fn stamp(topo: &mut Topology, started: Instant) {
    let p = topo.provenance_mut();
    p.created = OffsetDateTime::now_utc().format(&Rfc3339).ok();
    p.duration_s = Some(started.elapsed().as_secs_f64());
}
