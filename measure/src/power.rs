//! Power measurements: RAPL energy counters under idle and busy loads (libmctop's power
//! plugin, paper §4).
//!
//! # Sources
//!
//! Energy is read from one of two sources, tried in this order:
//!
//! 1. [`powercap`]: the kernel's powercap tree (default `/sys/class/powercap`), package
//!    zones `intel-rapl:N` (or `amd-rapl:N`, `intel-rapl-mmio:N`) named `package-P` (or
//!    `package-P-die-D`, summed per package) with their `core` and `dram` subzones
//!    `intel-rapl:N:M`; `energy_uj` counters wrap at `max_energy_range_uj`.
//! 2. [`perf`]: the `power` PMU (default `/sys/bus/event_source/devices/power`), events
//!    `energy-pkg`, `energy-cores` and `energy-ram`, opened system-wide on one CPU of each
//!    socket with `perf_event_open`.
//!
//! When neither gives package energy, [`measure_power`] returns
//! [`PowerError::Unavailable`], whose message reads `unavailable: <reason>`; the reason names
//! what was looked for and where, and says when permissions are the cause. Nothing is ever
//! estimated in place of a measurement.
//!
//! # Sockets
//!
//! Each socket of the topology is matched with a RAPL package through the
//! `physical_package_id` of its first context's OS CPU (`<os_root>/sys/devices/system/cpu/
//! cpuN/topology/physical_package_id`). When that cannot be read for every socket (a
//! topology from another machine, or a tree without sysfs), sockets are matched with the
//! packages in ascending order, provided their numbers agree; otherwise the measurement
//! fails with a message saying so.
//!
//! # Load states
//!
//! For every socket, as libmctop does (libmctop's names in brackets):
//!
//! - idle (`idle`): nothing runs; absolute power. One idle interval serves every socket.
//! - first core (`1stcore`): one context busy; the increment over idle.
//! - second core (`2ndcore`): a context of a second core busy as well; the increment over
//!   the first-core state. Only when every socket has two cores.
//! - second context (`2ndhwc`): the second context of the first core busy as well; the
//!   increment over the first-core state. Only with SMT.
//! - all cores (`allcor`): one context of every core busy; absolute power.
//! - all contexts (`allhwc`): every context busy; absolute power.
//!
//! Power is the energy difference over an interval divided by its length. Every entry has
//! cores (RAPL PP0), rest (package minus cores), package, DRAM and total (package plus
//! DRAM) watts. A domain the hardware does not report (no `core` or `dram` zone) is written
//! as 0 W, libmctop's convention for "not measured", and [`PowerReport`] says which
//! domains were measured. The machine total of each state is the sum over the sockets.
//!
//! The load is memory intensive, as in the paper: each busy thread, pinned to its context,
//! streams over its share of [`PowerOptions::memory_bytes`] (0: a compute loop).
//!
//! The measurement is generic over an [`EnergySource`] and a [`Workload`], so that its
//! arithmetic can be driven without hardware ([`measure_with`]).

use std::path::PathBuf;
use std::time::Duration;

use topoprobe_model::{
    Budget, ContextId, CostPlan, CostStep, PowerEntry, PowerScope, PowerSection, PowerState,
    SocketId, Topology,
};

mod files;
mod load;
pub mod perf;
pub mod powercap;

pub use load::BusyLoad;

/// Why power could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    /// No source of energy counters is usable on this machine (no RAPL zones, no `power`
    /// PMU, no permission, counters that do not count). A missing feature, not a failure.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A file of a source holds something unexpected.
    #[error("{}: {problem}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A file or directory of a source could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The topology's sockets cannot be matched with the RAPL packages, or the topology
    /// has nothing to measure.
    #[error("{0}")]
    Mapping(String),
    /// An energy counter behaved impossibly (ran backwards, time did not advance).
    #[error("{0}")]
    Counter(String),
    /// The busy load could not be started on a CPU.
    #[error("cannot run the power load on CPU {cpu}: {reason}")]
    Load {
        /// The CPU (OS number).
        cpu: u32,
        /// What went wrong.
        reason: String,
    },
}

impl PowerError {
    /// The reason, when the error says that power measurement is unavailable.
    #[must_use]
    pub fn unavailable_reason(&self) -> Option<&str> {
        match self {
            Self::Unavailable(r) => Some(r),
            _ => None,
        }
    }
}

/// How to measure power.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerOptions {
    /// How long each load state is measured (default 0.5 s).
    pub duration: Duration,
    /// How long the load runs before its interval starts, so that frequency and power
    /// settle (default 0.1 s).
    pub settle: Duration,
    /// Memory streamed by the busy threads of a state together, in bytes, split evenly
    /// between them (default 256 MiB; 0: a compute loop without memory traffic).
    pub memory_bytes: usize,
    /// The powercap tree (default `/sys/class/powercap`).
    pub powercap_root: PathBuf,
    /// The perf event sources (default `/sys/bus/event_source/devices`).
    pub perf_root: PathBuf,
    /// The root of sysfs and procfs, for CPUs' package ids and `perf_event_paranoid`
    /// (default `/`).
    pub os_root: PathBuf,
    /// Whether to try the perf `power` PMU when powercap is unavailable (default true).
    pub use_perf: bool,
    /// Sockets measured: the first this many (`None`: every socket). The machine totals
    /// are given only when every socket is measured.
    pub sockets: Option<usize>,
}

impl Default for PowerOptions {
    fn default() -> Self {
        Self {
            duration: Duration::from_millis(500),
            settle: Duration::from_millis(100),
            memory_bytes: 256 << 20,
            powercap_root: PathBuf::from("/sys/class/powercap"),
            perf_root: PathBuf::from("/sys/bus/event_source/devices"),
            os_root: PathBuf::from("/"),
            use_perf: true,
            sockets: None,
        }
    }
}

/// Shortest interval a load state is measured when the budget is tight.
pub const MIN_DURATION: Duration = Duration::from_millis(100);

/// How the power measurement runs on this machine, and what it will cost.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerPlan {
    /// The options to measure with (interval length, sockets, memory of the load).
    pub options: PowerOptions,
    /// One step per socket measured (the idle interval goes with the first).
    pub steps: Vec<CostStep>,
    /// What the budget changed or left out.
    pub notes: Vec<String>,
    /// The budget.
    pub budget: Budget,
}

impl PowerPlan {
    /// The plan as a record.
    #[must_use]
    pub fn cost(&self) -> CostPlan {
        CostPlan::of(self.budget, self.steps.clone(), self.notes.clone())
    }
}

/// Load states of a socket of `shape`: first core, second core (two cores or more), second
/// context (SMT), all cores, all contexts.
fn states_of(socket: &crate::plan::SocketShape) -> usize {
    let smt = socket.cpus.len() > socket.cores;
    3 + usize::from(socket.cores > 1) + usize::from(smt)
}

/// Seconds of one load interval of `threads` busy contexts streaming over `memory` bytes,
/// at rates `r`.
fn interval_seconds(
    r: &crate::plan::Rates,
    opts: &PowerOptions,
    threads: usize,
    memory: u64,
) -> f64 {
    threads as f64 * r.thread_start_s
        + r.touch_seconds(memory, threads.max(1))
        + opts.settle.as_secs_f64()
        + opts.duration.as_secs_f64()
}

/// Plans the power measurement of a machine of `shape` with `opts`, within `budget`: the
/// interval is shortened (to [`MIN_DURATION`] at least), then sockets are left out (the
/// first ones are measured, said), and the load's memory is kept within the memory budget.
#[must_use]
pub fn plan_power(shape: &crate::plan::Shape, opts: &PowerOptions, budget: Budget) -> PowerPlan {
    let mut o = opts.clone();
    let mut notes = Vec::new();
    let room = budget.bytes.saturating_sub(crate::plan::PROCESS_BYTES) as usize;
    if o.memory_bytes > room {
        notes.push(format!(
            "the busy load streams over {} instead of {} (the memory budget)",
            topoprobe_model::size_text(room as u64),
            topoprobe_model::size_text(o.memory_bytes as u64)
        ));
        o.memory_bytes = room;
    }
    let memory = o.memory_bytes as u64;
    let rates = shape.rates();
    let steps_for = |o: &PowerOptions, k: usize| -> Vec<CostStep> {
        shape
            .sockets
            .iter()
            .take(k)
            .enumerate()
            .map(|(i, s)| {
                let states = states_of(s);
                let busy: f64 = [1, 2, 2, s.cores, s.cpus.len()]
                    .iter()
                    .take(states)
                    .map(|&t| interval_seconds(&rates, o, t, memory))
                    .sum();
                let idle = if i == 0 {
                    interval_seconds(&rates, o, 0, 0)
                } else {
                    0.0
                };
                CostStep::new(
                    "power",
                    format!("power socket {i}"),
                    memory,
                    (states + usize::from(i == 0)) as u64,
                    busy + idle,
                )
            })
            .collect()
    };
    let total = |v: &[CostStep]| v.iter().map(|s| s.seconds).sum::<f64>();
    let sockets = shape.sockets.len().max(1);
    let mut k = o.sockets.unwrap_or(sockets).clamp(1, sockets);
    let mut steps = steps_for(&o, k);
    if total(&steps) > budget.seconds && o.duration > MIN_DURATION {
        let fixed = total(&steps_for(
            &PowerOptions {
                duration: Duration::ZERO,
                ..o.clone()
            },
            k,
        ));
        let intervals: u64 = steps.iter().map(|s| s.passes).sum();
        let per = ((budget.seconds - fixed) / intervals.max(1) as f64).max(0.0);
        let d = Duration::from_secs_f64(per).clamp(MIN_DURATION, o.duration);
        notes.push(format!(
            "each load state is measured for {:.2} s instead of {:.2} s (the {} budget)",
            d.as_secs_f64(),
            o.duration.as_secs_f64(),
            crate::plan::secs(budget.seconds)
        ));
        o.duration = d;
        steps = steps_for(&o, k);
    }
    while total(&steps) > budget.seconds && k > 1 {
        k -= 1;
        steps = steps_for(&o, k);
    }
    if k < sockets {
        notes.push(format!(
            "power measured on {k} of {sockets} sockets (the {} budget); no machine \
             totals",
            crate::plan::secs(budget.seconds)
        ));
        o.sockets = Some(k);
    }
    PowerPlan {
        options: o,
        steps,
        notes,
        budget,
    }
}

/// Cumulative energy of one socket since its source was opened, in joules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SocketEnergy {
    /// Package energy (all package zones of the socket).
    pub package_j: f64,
    /// Energy of the cores (RAPL PP0), when the hardware reports it.
    pub cores_j: Option<f64>,
    /// DRAM energy, when the hardware reports it.
    pub dram_j: Option<f64>,
}

/// One reading of every socket's energy counters.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// When it was taken, in seconds since the source was opened.
    pub seconds: f64,
    /// One entry per socket of the topology, in socket order.
    pub sockets: Vec<SocketEnergy>,
}

/// Something that reads cumulative energy per socket: RAPL through powercap or perf, or a
/// fake in tests.
pub trait EnergySource {
    /// A short description for reports (`powercap /sys/class/powercap: intel-rapl:0, ...`).
    fn describe(&self) -> String;

    /// Reads every socket's cumulative energy.
    ///
    /// # Errors
    ///
    /// Returns a [`PowerError`] when a counter cannot be read or holds nonsense.
    fn read(&mut self) -> Result<Sample, PowerError>;
}

/// Something that keeps a set of CPUs busy: [`BusyLoad`], or a fake in tests.
pub trait Workload {
    /// Starts keeping `cpus` (OS CPU numbers) busy; an empty set means idle. Returns once
    /// every CPU is running its load.
    ///
    /// # Errors
    ///
    /// Returns [`PowerError::Load`] when a CPU cannot run the load (pinning refused, memory
    /// not available).
    fn start(&mut self, cpus: &[u32]) -> Result<(), PowerError>;

    /// Stops the load and waits for it to end.
    fn stop(&mut self);
}

/// The result of a power measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerReport {
    /// The figures, for the description.
    pub section: PowerSection,
    /// Where the energy came from.
    pub source: String,
    /// Whether the cores' power (RAPL PP0) was measured on every socket (otherwise
    /// `cores_w` is 0 and `rest_w` is the package power).
    pub cores_measured: bool,
    /// Whether DRAM power was measured on every socket (otherwise `dram_w` is 0).
    pub dram_measured: bool,
    /// Length of each measured interval, in seconds.
    pub seconds_per_state: f64,
}

/// Measures the power of every socket of `topo` under libmctop's load states (see the
/// module documentation), on this machine, and returns the section for the description.
///
/// # Errors
///
/// [`PowerError::Unavailable`] when no energy counters can be used (the message reads
/// `unavailable: <reason>`); other variants when a source is malformed, the sockets cannot
/// be matched with RAPL packages, or the load cannot run.
pub fn measure_power(topo: &Topology, opts: &PowerOptions) -> Result<PowerSection, PowerError> {
    measure_power_report(topo, opts).map(|r| r.section)
}

/// As [`measure_power`], with the source and the domains measured.
///
/// # Errors
///
/// As [`measure_power`].
pub fn measure_power_report(
    topo: &Topology,
    opts: &PowerOptions,
) -> Result<PowerReport, PowerError> {
    let mut source = open_source(topo, opts)?;
    let mut load = BusyLoad::new(opts.memory_bytes);
    measure_with(topo, opts, source.as_mut(), &mut load)
}

/// Checks, without a topology and without measuring, that a source of energy counters is
/// there and readable; returns its kind (`powercap` or `perf`).
///
/// # Errors
///
/// As [`open_source`], except for errors that need the topology.
pub fn check_available(opts: &PowerOptions) -> Result<&'static str, PowerError> {
    match powercap::discover(&opts.powercap_root) {
        Ok(_) => Ok("powercap"),
        Err(PowerError::Unavailable(first)) if opts.use_perf => {
            match perf::discover(&opts.perf_root) {
                Ok(_) => Ok("perf"),
                Err(PowerError::Unavailable(second)) => {
                    Err(PowerError::Unavailable(format!("{first}, and {second}")))
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Opens the first usable energy source for `topo`: powercap, then perf (when
/// [`PowerOptions::use_perf`]).
///
/// # Errors
///
/// [`PowerError::Unavailable`] naming why each source cannot be used; a malformed source
/// or an impossible socket mapping as such.
pub fn open_source(
    topo: &Topology,
    opts: &PowerOptions,
) -> Result<Box<dyn EnergySource>, PowerError> {
    match powercap::PowercapSource::open(&opts.powercap_root, topo, &opts.os_root) {
        Ok(s) => Ok(Box::new(s)),
        Err(PowerError::Unavailable(first)) if opts.use_perf => {
            match perf::PerfSource::open(&opts.perf_root, topo, &opts.os_root) {
                Ok(s) => Ok(Box::new(s)),
                Err(PowerError::Unavailable(second)) => {
                    Err(PowerError::Unavailable(format!("{first}, and {second}")))
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Power of one socket over an interval.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Watts {
    package: f64,
    cores: Option<f64>,
    dram: Option<f64>,
}

impl Watts {
    /// The increment from `base` to `self`.
    fn minus(self, base: Self) -> Self {
        Self {
            package: self.package - base.package,
            cores: self.cores.zip(base.cores).map(|(a, b)| a - b),
            dram: self.dram.zip(base.dram).map(|(a, b)| a - b),
        }
    }

    /// The entry of the description (missing domains as 0 W).
    fn entry(self, scope: PowerScope, state: PowerState) -> PowerEntry {
        let cores_w = self.cores.unwrap_or(0.0);
        let dram_w = self.dram.unwrap_or(0.0);
        PowerEntry {
            scope,
            state,
            cores_w,
            rest_w: self.package - cores_w,
            package_w: self.package,
            dram_w,
            total_w: self.package + dram_w,
        }
    }
}

/// The contexts each state of a socket keeps busy.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SocketPlan {
    socket: SocketId,
    first: u32,
    second_core: Option<u32>,
    second_context: Option<u32>,
    all_cores: Vec<u32>,
    all_contexts: Vec<u32>,
}

/// The OS CPU number of a context.
fn os_id(topo: &Topology, ctx: ContextId) -> Option<u32> {
    topo.contexts().get(ctx.0).map(|c| c.os_id)
}

/// Chooses the contexts of every state, socket by socket.
fn plan(topo: &Topology) -> Result<Vec<SocketPlan>, PowerError> {
    if topo.num_sockets() == 0 {
        return Err(PowerError::Mapping(
            "the topology has no socket to measure".to_string(),
        ));
    }
    let mut plans = Vec::with_capacity(topo.num_sockets());
    for s in 0..topo.num_sockets() {
        let socket = SocketId(s);
        let cores = topo.socket_cores(socket);
        let first_of = |core| {
            topo.core_contexts(core)
                .first()
                .and_then(|&c| os_id(topo, c))
        };
        let all_cores: Vec<u32> = cores.iter().filter_map(|&c| first_of(c)).collect();
        let all_contexts: Vec<u32> = topo
            .socket_contexts(socket)
            .iter()
            .filter_map(|&c| os_id(topo, c))
            .collect();
        let Some(&first) = all_cores.first() else {
            return Err(PowerError::Mapping(format!(
                "socket {s} of the topology has no core with a context"
            )));
        };
        let second_context = cores
            .first()
            .and_then(|&c| topo.core_contexts(c).get(1).copied())
            .and_then(|c| os_id(topo, c));
        plans.push(SocketPlan {
            socket,
            first,
            second_core: all_cores.get(1).copied(),
            second_context,
            all_cores,
            all_contexts,
        });
    }
    Ok(plans)
}

/// Runs `cpus` busy for one interval and returns every socket's power.
fn interval<S, W>(
    source: &mut S,
    load: &mut W,
    cpus: &[u32],
    opts: &PowerOptions,
    sockets: usize,
) -> Result<Vec<Watts>, PowerError>
where
    S: EnergySource + ?Sized,
    W: Workload + ?Sized,
{
    if let Err(e) = load.start(cpus) {
        load.stop();
        return Err(e);
    }
    let mut read = || -> Result<(Sample, Sample), PowerError> {
        std::thread::sleep(opts.settle);
        let a = source.read()?;
        std::thread::sleep(opts.duration);
        let b = source.read()?;
        Ok((a, b))
    };
    let measured = read();
    load.stop();
    let (a, b) = measured?;
    watts_between(&a, &b, sockets, &source.describe())
}

/// Every socket's power between two samples.
fn watts_between(
    a: &Sample,
    b: &Sample,
    sockets: usize,
    source: &str,
) -> Result<Vec<Watts>, PowerError> {
    if a.sockets.len() != sockets || b.sockets.len() != sockets {
        return Err(PowerError::Counter(format!(
            "{source} read {}, the topology has {sockets}",
            topoprobe_model::format::plural(a.sockets.len().min(b.sockets.len()), "socket")
        )));
    }
    let dt = b.seconds - a.seconds;
    if !(dt.is_finite() && dt > 0.0) {
        return Err(PowerError::Counter(format!(
            "{source}: time did not advance between two readings ({} s to {} s)",
            a.seconds, b.seconds
        )));
    }
    let rate = |what: &str, s: usize, x: f64, y: f64| -> Result<f64, PowerError> {
        let j = y - x;
        if j.is_finite() && j >= 0.0 {
            Ok(j / dt)
        } else {
            Err(PowerError::Counter(format!(
                "{source}: the {what} energy of socket {s} went from {x} J to {y} J (backwards)"
            )))
        }
    };
    let mut out = Vec::with_capacity(sockets);
    for (s, (x, y)) in a.sockets.iter().zip(&b.sockets).enumerate() {
        let pair =
            |p: Option<f64>, q: Option<f64>, what: &str| -> Result<Option<f64>, PowerError> {
                match (p, q) {
                    (Some(p), Some(q)) => rate(what, s, p, q).map(Some),
                    _ => Ok(None),
                }
            };
        out.push(Watts {
            package: rate("package", s, x.package_j, y.package_j)?,
            cores: pair(x.cores_j, y.cores_j, "cores")?,
            dram: pair(x.dram_j, y.dram_j, "DRAM")?,
        });
    }
    Ok(out)
}

/// Measures every load state with `source` and `load` (see the module documentation).
///
/// # Errors
///
/// [`PowerError::Unavailable`] when a package counter does not advance while idle (the
/// counters are not live, as in virtual machines that do not pass RAPL through);
/// [`PowerError::Mapping`] when the topology has nothing to measure; the source's and the
/// load's errors as they come.
pub fn measure_with<S, W>(
    topo: &Topology,
    opts: &PowerOptions,
    source: &mut S,
    load: &mut W,
) -> Result<PowerReport, PowerError>
where
    S: EnergySource + ?Sized,
    W: Workload + ?Sized,
{
    let plans = plan(topo)?;
    let n = plans.len();
    let with_second_core = plans.iter().all(|p| p.second_core.is_some());
    let with_second_context = plans.iter().all(|p| p.second_context.is_some());
    let idle = interval(source, load, &[], opts, n)?;
    for (s, w) in idle.iter().enumerate() {
        if w.package <= 0.0 {
            return Err(PowerError::Unavailable(format!(
                "the package energy counter of socket {s} ({}) did not advance during {:.2} s \
                 of idle: the counters are not live (a virtual machine that does not pass \
                 RAPL through?)",
                source.describe(),
                opts.duration.as_secs_f64()
            )));
        }
    }
    let mut entries = Vec::new();
    let measured = opts.sockets.unwrap_or(plans.len()).clamp(1, plans.len());
    for p in plans.iter().take(measured) {
        let s = p.socket.0;
        let scope = PowerScope::Socket(p.socket);
        let at = |w: Vec<Watts>| w[s];
        entries.push(idle[s].entry(scope, PowerState::Idle));
        let one = at(interval(source, load, &[p.first], opts, n)?);
        entries.push(one.minus(idle[s]).entry(scope, PowerState::FirstCore));
        if let (true, Some(b)) = (with_second_core, p.second_core) {
            let two = at(interval(source, load, &[p.first, b], opts, n)?);
            entries.push(two.minus(one).entry(scope, PowerState::SecondCore));
        }
        if let (true, Some(b)) = (with_second_context, p.second_context) {
            let two = at(interval(source, load, &[p.first, b], opts, n)?);
            entries.push(two.minus(one).entry(scope, PowerState::SecondContext));
        }
        let all = at(interval(source, load, &p.all_cores, opts, n)?);
        entries.push(all.entry(scope, PowerState::AllCores));
        let all = at(interval(source, load, &p.all_contexts, opts, n)?);
        entries.push(all.entry(scope, PowerState::AllContexts));
    }
    if measured == plans.len() {
        entries.extend(totals(&entries));
    }
    Ok(PowerReport {
        section: PowerSection { entries },
        source: source.describe(),
        cores_measured: idle.iter().all(|w| w.cores.is_some()),
        dram_measured: idle.iter().all(|w| w.dram.is_some()),
        seconds_per_state: opts.duration.as_secs_f64(),
    })
}

/// The machine total of every state: the sum over the sockets.
fn totals(entries: &[PowerEntry]) -> Vec<PowerEntry> {
    PowerState::ALL
        .into_iter()
        .filter_map(|state| {
            let of: Vec<&PowerEntry> = entries.iter().filter(|e| e.state == state).collect();
            (!of.is_empty()).then(|| {
                let sum = |f: fn(&PowerEntry) -> f64| of.iter().map(|e| f(e)).sum::<f64>();
                PowerEntry {
                    scope: PowerScope::Total,
                    state,
                    cores_w: sum(|e| e.cores_w),
                    rest_w: sum(|e| e.rest_w),
                    package_w: sum(|e| e.package_w),
                    dram_w: sum(|e| e.dram_w),
                    total_w: sum(|e| e.total_w),
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
