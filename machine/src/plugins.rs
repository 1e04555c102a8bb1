//! Plugins: the measurements that enrich a freshly inferred description (memory, caches,
//! shared caches, contention, power), chosen by name (`--plugins cache,mem`).

use topoprobe_measure::cache::{self, shared, CacheOptions};
use topoprobe_measure::contention::{self, ContentionOptions};
use topoprobe_measure::memory::{self, MemOptions, MemReport};
use topoprobe_measure::power::{self, PowerOptions};
use topoprobe_measure::steady::SteadyRule;
use topoprobe_model::{
    Access, CacheSection, LatencyUnit, MemoryBandwidth, MemoryLatency, MemorySection, NodeId,
    OsView, SocketId, Threads, Topology, Warning,
};

use crate::{MachineError, Progress};

/// A plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plugin {
    /// Cache sizes and latencies.
    Cache,
    /// Which contexts share each cache level (implies `cache`).
    SharedCaches,
    /// Memory latency and bandwidth.
    Mem,
    /// Memory latency only.
    MemLatency,
    /// Memory-access overhead groups and scalability.
    Contention,
    /// Power (RAPL).
    Power,
}

/// Every plugin with its name.
const ALL: [(&str, Plugin); 6] = [
    ("cache", Plugin::Cache),
    ("shared-caches", Plugin::SharedCaches),
    ("mem", Plugin::Mem),
    ("mem-latency", Plugin::MemLatency),
    ("contention", Plugin::Contention),
    ("power", Plugin::Power),
];

/// The plugins run when `--plugins` is not given: the set that finishes in a few seconds.
pub const DEFAULT: &str = "cache,mem,power";

impl Plugin {
    /// The plugin's name, as [`parse`] takes it.
    #[must_use]
    pub fn name(self) -> &'static str {
        ALL.iter()
            .find(|(_, p)| *p == self)
            .map_or("?", |(n, _)| *n)
    }
}

/// Parses `none`, `all` or a comma-separated list of plugin names.
///
/// # Errors
///
/// [`MachineError::UnknownPlugin`] for an unknown name, with the known ones.
pub fn parse(list: &str) -> Result<Vec<Plugin>, MachineError> {
    let list = list.trim();
    if list == "none" || list.is_empty() {
        return Ok(Vec::new());
    }
    if list == "all" {
        return Ok(ALL.iter().map(|(_, p)| *p).collect());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        let Some((_, p)) = ALL.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = ALL.iter().map(|(n, _)| *n).collect();
            return Err(MachineError::UnknownPlugin {
                name: name.to_string(),
                known: known.join(", "),
            });
        };
        if !out.contains(p) {
            out.push(*p);
        }
    }
    Ok(out)
}

/// The memory section of a measurement, latencies in the topology's unit.
pub fn memory_section(topo: &Topology, r: &MemReport, ghz: Option<f64>) -> MemorySection {
    let unit = |ns: f64| match (topo.units(), ghz) {
        (LatencyUnit::Cycles, Some(g)) => ns * g,
        _ => ns,
    };
    let latency = r
        .latency
        .iter()
        .filter_map(|l| {
            let ctx = topo.context_by_os_id(l.cpu)?;
            Some(MemoryLatency {
                context: ctx,
                node: NodeId(l.node as usize),
                latency: unit(l.ns()),
                cycles: ghz.map(|g| l.ns() * g),
            })
        })
        .collect();
    let mut bandwidth = Vec::new();
    for b in &r.bandwidth {
        let socket_size = topo.sockets()[b.socket].contexts.len();
        let threads = match b.threads {
            1 => Threads::Single,
            n if n == socket_size => Threads::AllContexts,
            n => Threads::Count(n),
        };
        for (access, gbps) in [
            (Access::Read, b.read),
            (Access::Write, b.write),
            (Access::Copy, b.copy),
        ] {
            bandwidth.push(MemoryBandwidth {
                socket: SocketId(b.socket),
                node: NodeId(b.node as usize),
                access,
                threads,
                gbps,
            });
        }
    }
    MemorySection { latency, bandwidth }
}

/// Finds which contexts share every data level of `section` (concurrent walks on
/// contexts chosen from the topology, checked against the OS's `os` caches) and records
/// it; returns each level's name and result, with a warning where the walks did not
/// decide or did not run ([`shared::measure_section`]).
///
/// # Errors
///
/// [`MachineError::Plugin`] when a walk cannot run (a CPU cannot be pinned, an array
/// cannot be allocated).
pub fn measure_sharing(
    topo: &Topology,
    os: Option<&OsView>,
    section: &mut CacheSection,
) -> Result<Vec<(String, shared::LevelSharing)>, MachineError> {
    shared::measure_section(topo, os, section, &shared::SharingOptions::default()).map_err(|e| {
        MachineError::Plugin {
            plugin: "shared-caches",
            source: format!("finding which contexts share a cache level: {e}").into(),
        }
    })
}

/// The working set of the memory and contention plugins and where its size comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkingSet {
    /// Bytes, of all threads together.
    pub bytes: u64,
    /// The largest last-level cache of a socket it was sized from, when known.
    pub llc_bytes: Option<u64>,
}

impl WorkingSet {
    /// How the description records it: `192 MiB (6 × the 32 MiB last-level cache)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let mib = |b: u64| format!("{} MiB", b >> 20);
        match self.llc_bytes {
            Some(l) if self.bytes == l * memory::WORKING_SET_FACTOR => format!(
                "{} ({} × the {} last-level cache)",
                mib(self.bytes),
                memory::WORKING_SET_FACTOR,
                mib(l)
            ),
            Some(l) => format!(
                "{} ({} × the {} last-level cache, kept between {} and {})",
                mib(self.bytes),
                memory::WORKING_SET_FACTOR,
                mib(l),
                mib(memory::MIN_WORKING_SET),
                mib(memory::MAX_WORKING_SET)
            ),
            None => format!("{} (the last-level cache is unknown)", mib(self.bytes)),
        }
    }
}

/// The working set for this machine: from the largest last-level cache of a socket
/// (all its instances added up), as the OS reports it ([`memory::working_set`]).
#[must_use]
pub fn working_set(topo: &Topology, os: Option<&OsView>) -> WorkingSet {
    let llc_bytes = os.and_then(|os| {
        (0..topo.num_sockets())
            .filter_map(|s| {
                let cpus: Vec<u32> = topo
                    .socket_contexts(SocketId(s))
                    .iter()
                    .map(|c| topo.contexts()[c.0].os_id)
                    .collect();
                memory::last_level_bytes(os, &cpus)
            })
            .max()
    });
    WorkingSet {
        bytes: memory::working_set(llc_bytes),
        llc_bytes,
    }
}

/// Wraps a plugin's error.
fn failed<E: std::error::Error + Send + Sync + 'static>(
    plugin: Plugin,
) -> impl FnOnce(E) -> MachineError {
    move |e| MachineError::Plugin {
        plugin: plugin.name(),
        source: Box::new(e),
    }
}

/// Runs `plugins` on this machine and stores their sections in `topo`, reporting each step
/// to `progress`; a plugin whose hardware is missing leaves a warning saying
/// `unavailable: <reason>`.
///
/// # Errors
///
/// [`MachineError::Plugin`] when a measurement fails (a CPU cannot be pinned, memory
/// cannot be allocated).
pub fn run(
    topo: &mut Topology,
    os: Option<&OsView>,
    plugins: &[Plugin],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(), MachineError> {
    let timer = topoprobe_measure::timer::Timer::calibrate();
    let ghz = (timer.kind() != topoprobe_measure::timer::TimerKind::Monotonic).then(|| timer.ghz());
    if let Some(g) = ghz {
        // The TSC's rate: what converts this description's ns into a .mct file's cycles.
        topo.provenance_mut()
            .parameters
            .entry("ghz".into())
            .or_insert_with(|| format!("{g:.4}"));
    }
    let want = |p: Plugin| plugins.contains(&p);
    if want(Plugin::Cache) || want(Plugin::SharedCaches) {
        progress(Progress::Step("caches"));
        let cpu = topo.contexts().first().map_or(0, |c| c.os_id);
        let report = cache::measure_caches(
            os,
            &CacheOptions {
                ghz,
                ..CacheOptions::quick(cpu, os)
            },
        )
        .map_err(failed(Plugin::Cache))?;
        for n in &report.notes {
            topo.validation_mut()
                .warnings
                .push(Warning::new("cache", n.clone()));
        }
        let mut section = report.section;
        if want(Plugin::SharedCaches) {
            progress(Progress::Step("shared caches"));
            for (_, found) in measure_sharing(topo, os, &mut section)? {
                let warning = found.warning.map(|w| Warning::new("shared_caches", w));
                topo.validation_mut().warnings.extend(warning);
            }
        }
        topo.set_caches(Some(section));
    }
    let working_set = working_set(topo, os);
    let mut recorded = false;
    let mut record_working_set = |topo: &mut Topology| {
        if !recorded {
            recorded = true;
            topo.provenance_mut()
                .parameters
                .insert("memory_working_set".into(), working_set.describe());
        }
    };
    if want(Plugin::Mem) || want(Plugin::MemLatency) {
        record_working_set(topo);
        let opts = MemOptions {
            bytes: working_set.bytes,
            chase_steps: 1 << 20,
            small_pages: false,
            rule: SteadyRule {
                max_rounds: 10,
                max_seconds: 1.0,
                ..SteadyRule::default()
            },
            latency_only: !want(Plugin::Mem),
            ghz,
            ..MemOptions::default()
        };
        let report = memory::measure_memory(topo, &opts, |s| progress(Progress::Step(s)))
            .map_err(failed(Plugin::Mem))?;
        for n in &report.notes {
            topo.validation_mut()
                .warnings
                .push(Warning::new("memory", n.clone()));
        }
        let section = memory_section(topo, &report, ghz);
        topo.set_memory(Some(section));
    }
    if want(Plugin::Contention) {
        record_working_set(topo);
        let opts = ContentionOptions {
            total_bytes: Some(working_set.bytes),
            ..ContentionOptions::default()
        };
        let section = contention::measure_contention(topo, &opts, |s| {
            progress(Progress::Step(s));
        })
        .map_err(failed(Plugin::Contention))?;
        topo.set_contention(Some(section));
    }
    if want(Plugin::Power) {
        progress(Progress::Step("power"));
        match power::measure_power(topo, &PowerOptions::default()) {
            Ok(section) => topo.set_power(Some(section)),
            Err(e) => match e.unavailable_reason() {
                Some(reason) => topo
                    .validation_mut()
                    .warnings
                    .push(Warning::new("power", format!("unavailable: {reason}"))),
                None => return Err(failed(Plugin::Power)(e)),
            },
        }
    }
    if let Some(os) = os {
        // The sections just measured (cache sharing, contention) are compared too.
        topoprobe_infer::compare::record_os_differences(topo, os);
    }
    progress(Progress::StepsDone);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_lists_parse() {
        assert_eq!(parse("none").unwrap(), []);
        assert_eq!(parse("all").unwrap().len(), ALL.len());
        assert_eq!(
            parse("mem, cache,mem").unwrap(),
            [Plugin::Mem, Plugin::Cache]
        );
        let e = parse("cache,bogus").unwrap_err().to_string();
        assert!(e.contains("\"bogus\"") && e.contains("contention"), "{e}");
        assert_eq!(parse(DEFAULT).unwrap().len(), 3);
    }
}
