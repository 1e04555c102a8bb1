//! RAPL energy counters through the perf `power` PMU.
//!
//! The PMU is described under `/sys/bus/event_source/devices/power`: `type` (the PMU's
//! number for `perf_event_open`), and `events/energy-pkg`, `energy-cores` and `energy-ram`
//! (each `event=0x..`) with their `.scale` (joules per count) and `.unit` (`Joules`).
//! Counters are opened through perf-event2, as its `Raw` event with the PMU's type and the
//! event's config, system-wide (any process) on the first context of each socket; the
//! kernel counts the whole package there, in 64 bits, from 0 at opening, so they do not
//! wrap. `energy-pkg` is needed; the other two are used when present.

use std::path::{Path, PathBuf};
use std::time::Instant;

use perf_event::events::Raw;
use perf_event::{Builder, Counter};
use topoprobe_model::{SocketId, Topology};

use super::files::{read_text, read_u64, shown, socket_cpu};
use super::{EnergySource, PowerError, Sample, SocketEnergy};

/// The event names: package, cores, DRAM.
pub const EVENTS: [&str; 3] = ["energy-pkg", "energy-cores", "energy-ram"];

/// What helps when the sysfs description of the PMU cannot be read.
const SYSFS_HINT: &str = "the perf event sources are readable by all users normally";

/// One event of the `power` PMU.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Its name (`energy-pkg`).
    pub name: String,
    /// The `config` of `perf_event_open` (the `event=` value).
    pub config: u64,
    /// Joules per count (`.scale`).
    pub scale: f64,
}

/// The energy events of the `power` PMU.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfEvents {
    /// The PMU's directory.
    pub dir: PathBuf,
    /// The PMU's type number.
    pub pmu_type: u32,
    /// Package energy.
    pub package: Event,
    /// The cores' energy, when the PMU has it.
    pub cores: Option<Event>,
    /// DRAM energy, when the PMU has it.
    pub dram: Option<Event>,
}

/// Parses an event description: `event=0x02` (hexadecimal or decimal).
fn parse_config(text: &str) -> Option<u64> {
    let mut config = None;
    for term in text.split(',') {
        let value = term.trim().strip_prefix("event=")?;
        config = Some(match value.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok()?,
            None => value.parse().ok()?,
        });
    }
    config
}

/// Reads one event, `None` when the PMU does not have it.
fn read_event(events: &Path, name: &str) -> Result<Option<Event>, PowerError> {
    let path = events.join(name);
    if !path.exists() {
        return Ok(None);
    }
    let text = read_text(&path, SYSFS_HINT)?;
    let config = parse_config(&text).ok_or_else(|| PowerError::Malformed {
        path: path.clone(),
        problem: format!("expected `event=0x..`, found {}", shown(&text)),
    })?;
    let scale_path = events.join(format!("{name}.scale"));
    let scale_text = read_text(&scale_path, SYSFS_HINT)?;
    let scale = match scale_text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => v,
        _ => {
            return Err(PowerError::Malformed {
                path: scale_path,
                problem: format!(
                    "expected a positive number of joules per count, found {}",
                    shown(&scale_text)
                ),
            })
        }
    };
    let unit_path = events.join(format!("{name}.unit"));
    if unit_path.exists() {
        let unit = read_text(&unit_path, SYSFS_HINT)?;
        if unit != "Joules" {
            return Err(PowerError::Malformed {
                path: unit_path,
                problem: format!("expected the unit `Joules`, found {}", shown(&unit)),
            });
        }
    }
    Ok(Some(Event {
        name: name.to_string(),
        config,
        scale,
    }))
}

/// Finds the energy events of the `power` PMU under `perf_root`
/// (`/sys/bus/event_source/devices`).
///
/// # Errors
///
/// [`PowerError::Unavailable`] when there is no `power` PMU or it has no `energy-pkg`
/// event; [`PowerError::Malformed`] naming the file when `type`, an event, its scale or
/// its unit is malformed; [`PowerError::Io`] when a file cannot be read.
pub fn discover(perf_root: &Path) -> Result<PerfEvents, PowerError> {
    let dir = perf_root.join("power");
    if !dir.is_dir() {
        return Err(PowerError::Unavailable(format!(
            "no `power` PMU under {}",
            perf_root.display()
        )));
    }
    let type_path = dir.join("type");
    let pmu_type = read_u64(&type_path, SYSFS_HINT)?;
    let pmu_type = u32::try_from(pmu_type).map_err(|_| PowerError::Malformed {
        path: type_path,
        problem: format!("PMU type {pmu_type} does not fit in 32 bits"),
    })?;
    let events = dir.join("events");
    let [package, cores, dram] = EVENTS.map(|name| read_event(&events, name));
    let Some(package) = package? else {
        let mut names: Vec<String> = std::fs::read_dir(&events)
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| !n.contains('.'))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        return Err(PowerError::Unavailable(format!(
            "the `power` PMU under {} has no energy-pkg event (it has {})",
            perf_root.display(),
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    Ok(PerfEvents {
        dir,
        pmu_type,
        package,
        cores: cores?,
        dram: dram?,
    })
}

/// The counter of `config` of the PMU numbered `pmu_type`, system-wide on `cpu`, as
/// perf-event2 will ask the kernel for it: any process (pid -1) on that one CPU, counting
/// from opening (enabled), not sampling, and with no `exclude_*` filter, which the `power`
/// PMU refuses (it counts the whole package, whatever runs).
fn counter_builder(pmu_type: u32, config: u64, cpu: u32) -> Builder<'static> {
    let mut builder = Builder::new(Raw::new(config));
    // `Raw` is the processor's own PMU; a PMU described in sysfs has its own type number.
    builder.attrs_mut().type_ = pmu_type;
    builder
        .any_pid()
        // A CPU number fits in `usize` on every target Linux runs on.
        .one_cpu(cpu as usize)
        .enabled(true)
        .exclude_kernel(false)
        .exclude_hv(false);
    builder
}

/// Opens a counting, enabled, system-wide event on `cpu`.
fn open_event(pmu_type: u32, config: u64, cpu: u32) -> std::io::Result<Counter> {
    counter_builder(pmu_type, config, cpu).build()
}

/// An open event and its scale.
#[derive(Debug)]
struct OpenEvent {
    counter: Counter,
    scale: f64,
    name: String,
    cpu: u32,
}

impl OpenEvent {
    /// Energy since opening, in joules.
    fn joules(&mut self) -> Result<f64, PowerError> {
        let count = self.counter.read().map_err(|e| {
            PowerError::Counter(format!(
                "cannot read the perf event power/{} on CPU {}: {e}",
                self.name, self.cpu
            ))
        })?;
        // A 64-bit count in f64: exact up to 2^53 counts, far beyond any measurement.
        Ok(count as f64 * self.scale)
    }
}

/// The counters of one socket.
#[derive(Debug)]
struct SocketEvents {
    package: OpenEvent,
    cores: Option<OpenEvent>,
    dram: Option<OpenEvent>,
}

/// RAPL energy per socket from the perf `power` PMU.
#[derive(Debug)]
pub struct PerfSource {
    events: PerfEvents,
    cpus: Vec<u32>,
    sockets: Vec<SocketEvents>,
    opened: Instant,
}

/// The message for a failed `perf_event_open` of `energy-pkg`.
fn open_error(e: &std::io::Error, cpu: u32, os_root: &Path) -> PowerError {
    let paranoid_path = os_root.join("proc/sys/kernel/perf_event_paranoid");
    let paranoid =
        super::files::read_text_or_none(&paranoid_path).unwrap_or_else(|| "unknown".to_string());
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => PowerError::Unavailable(format!(
            "permission denied opening the perf event power/energy-pkg on CPU {cpu}: {e} \
             (kernel.perf_event_paranoid is {paranoid}; system-wide events need root, \
             CAP_PERFMON or a value of 0 or less)"
        )),
        _ => PowerError::Unavailable(format!(
            "perf_event_open of power/energy-pkg on CPU {cpu} failed: {e} (the processor \
             or the hypervisor does not provide the counter)"
        )),
    }
}

impl PerfSource {
    /// Finds the events under `perf_root` and opens them on the first context of every
    /// socket of `topo` (`os_root`: the root of sysfs and procfs, for messages and package
    /// checks).
    ///
    /// # Errors
    ///
    /// As [`discover`]; [`PowerError::Unavailable`] when `energy-pkg` cannot be opened
    /// (saying whether permissions are the cause); [`PowerError::Mapping`] when two sockets
    /// lie in one package or a socket has no context.
    pub fn open(perf_root: &Path, topo: &Topology, os_root: &Path) -> Result<Self, PowerError> {
        let events = discover(perf_root)?;
        // The kernel counts the package of the CPU an event is opened on.
        let cpus: Vec<u32> = (0..topo.num_sockets())
            .map(|s| {
                socket_cpu(topo, SocketId(s)).ok_or_else(|| {
                    PowerError::Mapping(format!("socket {s} of the topology has no context"))
                })
            })
            .collect::<Result<_, _>>()?;
        super::files::distinct_packages(os_root, &cpus)?;
        let open = |ev: &Event, cpu: u32| -> std::io::Result<OpenEvent> {
            Ok(OpenEvent {
                counter: open_event(events.pmu_type, ev.config, cpu)?,
                scale: ev.scale,
                name: ev.name.clone(),
                cpu,
            })
        };
        let mut sockets = Vec::with_capacity(cpus.len());
        for &cpu in &cpus {
            let package = open(&events.package, cpu).map_err(|e| open_error(&e, cpu, os_root))?;
            sockets.push(SocketEvents {
                package,
                cores: events.cores.as_ref().and_then(|ev| open(ev, cpu).ok()),
                dram: events.dram.as_ref().and_then(|ev| open(ev, cpu).ok()),
            });
        }
        Ok(Self {
            events,
            cpus,
            sockets,
            opened: Instant::now(),
        })
    }
}

impl EnergySource for PerfSource {
    fn describe(&self) -> String {
        let mut names = vec![self.events.package.name.as_str()];
        names.extend(self.events.cores.as_ref().map(|e| e.name.as_str()));
        names.extend(self.events.dram.as_ref().map(|e| e.name.as_str()));
        let cpus: Vec<String> = self.cpus.iter().map(u32::to_string).collect();
        format!(
            "perf {} ({} on CPUs {})",
            self.events.dir.display(),
            names.join(", "),
            cpus.join(", ")
        )
    }

    fn read(&mut self) -> Result<Sample, PowerError> {
        let before = self.opened.elapsed().as_secs_f64();
        let mut sockets = Vec::with_capacity(self.sockets.len());
        for s in &mut self.sockets {
            sockets.push(SocketEnergy {
                package_j: s.package.joules()?,
                cores_j: s.cores.as_mut().map(OpenEvent::joules).transpose()?,
                dram_j: s.dram.as_mut().map(OpenEvent::joules).transpose()?,
            });
        }
        let after = self.opened.elapsed().as_secs_f64();
        Ok(Sample {
            seconds: (before + after) / 2.0,
            sockets,
        })
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;

    #[test]
    fn event_configs_parse() {
        assert_eq!(parse_config("event=0x02"), Some(2));
        assert_eq!(parse_config("event=5"), Some(5));
        assert_eq!(parse_config("umask=0x1"), None);
        assert_eq!(parse_config("event=0xzz"), None);
    }

    #[test]
    fn the_pmu_description_becomes_a_system_wide_counting_event() {
        let t = tempfile::tempdir().expect("tempdir");
        pmu(
            t.path(),
            &[
                ("energy-pkg", "event=0x02\n"),
                ("energy-pkg.scale", "2.3283064365386962890625e-10\n"),
            ],
        );
        let e = discover(t.path()).expect("events");
        let builder = counter_builder(e.pmu_type, e.package.config, 3);
        let attrs = builder.attrs();
        assert_eq!((attrs.type_, attrs.config), (9, 2));
        assert_eq!((attrs.config1, attrs.config2), (0, 0));
        // Counting from opening, not sampling.
        assert_eq!(attrs.disabled(), 0);
        assert_eq!((attrs.sample_type, attrs.freq()), (0, 0));
        // The `power` PMU refuses every `exclude_*` filter.
        let excludes = [
            attrs.exclude_user(),
            attrs.exclude_kernel(),
            attrs.exclude_hv(),
            attrs.exclude_idle(),
            attrs.exclude_host(),
            attrs.exclude_guest(),
        ];
        assert_eq!(excludes, [0; 6]);
        assert_eq!(attrs.inherit(), 0);
    }

    fn pmu(root: &Path, events: &[(&str, &str)]) {
        let dir = root.join("power/events");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(root.join("power/type"), "9\n").expect("write");
        for (name, content) in events {
            std::fs::write(dir.join(name), content).expect("write");
        }
    }

    #[test]
    fn events_are_found_with_their_scales() {
        let t = tempfile::tempdir().expect("tempdir");
        pmu(
            t.path(),
            &[
                ("energy-pkg", "event=0x02\n"),
                ("energy-pkg.scale", "2.3283064365386962890625e-10\n"),
                ("energy-pkg.unit", "Joules\n"),
                ("energy-ram", "event=0x03\n"),
                ("energy-ram.scale", "1.52587890625e-05\n"),
            ],
        );
        let e = discover(t.path()).expect("events");
        assert_eq!(e.pmu_type, 9);
        assert_eq!(e.package.config, 2);
        assert!((e.package.scale - 2.328_306_436_538_696_3e-10).abs() < 1e-20);
        assert!(e.cores.is_none());
        assert_eq!(e.dram.as_ref().map(|d| d.config), Some(3));
    }

    #[test]
    fn a_pmu_without_energy_pkg_is_unavailable_and_says_what_it_has() {
        let t = tempfile::tempdir().expect("tempdir");
        pmu(
            t.path(),
            &[
                ("energy-psys", "event=0x05"),
                ("energy-psys.scale", "2.3e-10"),
            ],
        );
        let e = discover(t.path()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("unavailable: "), "{msg}");
        assert!(
            msg.contains("no energy-pkg event (it has energy-psys)"),
            "{msg}"
        );
    }

    #[test]
    fn no_pmu_is_unavailable_and_malformed_files_are_named() {
        let t = tempfile::tempdir().expect("tempdir");
        let e = discover(t.path()).unwrap_err();
        assert!(e.to_string().contains("no `power` PMU under"), "{e}");
        pmu(
            t.path(),
            &[("energy-pkg", "event=0x02"), ("energy-pkg.scale", "-1")],
        );
        let e = discover(t.path()).unwrap_err();
        assert!(matches!(e, PowerError::Malformed { .. }), "{e:?}");
        assert!(e.to_string().contains("energy-pkg.scale"), "{e}");
        std::fs::write(t.path().join("power/type"), "power\n").expect("write");
        let e = discover(t.path()).unwrap_err();
        assert!(e.to_string().contains("power/type"), "{e}");
    }

    #[test]
    fn a_real_power_event_is_read_where_there_is_one() {
        // An impossible PMU type is refused by the kernel, whatever the machine, with an
        // errno that the messages of `open_error` are chosen by.
        let refused = open_event(0xFFFF_FF00, 0, 0).expect_err("no PMU has this type");
        assert!(refused.raw_os_error().is_some(), "{refused:?}");
        let why = open_error(&refused, 0, Path::new("/")).to_string();
        assert!(why.starts_with("unavailable: "), "{why}");
        let root = Path::new("/sys/bus/event_source/devices");
        let Ok(pmu_type) = read_u64(&root.join("power/type"), "") else {
            eprintln!("skipped: no power PMU");
            return;
        };
        let pmu_type = u32::try_from(pmu_type).expect("PMU type");
        let events = root.join("power/events");
        for name in ["energy-pkg", "energy-psys", "energy-cores", "energy-ram"] {
            if let Ok(Some(ev)) = read_event(&events, name) {
                match open_event(pmu_type, ev.config, 0) {
                    Ok(mut counter) => {
                        counter.read().expect("an open event has a count");
                        return;
                    }
                    Err(e) => eprintln!("skipped {name}: {e}"),
                }
            }
        }
    }

    #[test]
    fn permission_errors_name_the_paranoia_level() {
        let t = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(t.path().join("proc/sys/kernel")).expect("mkdir");
        std::fs::write(t.path().join("proc/sys/kernel/perf_event_paranoid"), "2\n").expect("write");
        let e = open_error(
            &std::io::Error::from_raw_os_error(libc::EACCES),
            3,
            t.path(),
        );
        let msg = e.to_string();
        assert!(msg.starts_with("unavailable: permission denied"), "{msg}");
        assert!(msg.contains("perf_event_paranoid is 2"), "{msg}");
        let e = open_error(
            &std::io::Error::from_raw_os_error(libc::ENOENT),
            3,
            t.path(),
        );
        assert!(e.to_string().contains("does not provide"), "{e}");
    }
}
