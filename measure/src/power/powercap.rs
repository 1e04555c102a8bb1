//! RAPL energy counters through the kernel's powercap tree (`/sys/class/powercap`).
//!
//! The tree lists zones as `<type>:<N>` (a package zone) and `<type>:<N>:<M>` (its
//! subzones), each a directory with `name`, `energy_uj` and `max_energy_range_uj`. The
//! control types `intel-rapl`, `amd-rapl` and `intel-rapl-mmio` are read, the first of them
//! that has package zones (MMIO zones repeat the MSR ones). A package zone is named
//! `package-P` (or `package-P-die-D` on multi-die packages, whose dies are summed); its
//! subzones named `core` and `dram` give the cores' and the DRAM's energy; other zones
//! (`psys`, `uncore`) are not used. `energy_uj` counts microjoules and wraps to 0 after
//! `max_energy_range_uj`; one wrap between two readings is accounted for (at RAPL's
//! power levels a wrap takes minutes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use topoprobe_model::Topology;

use super::files::{match_sockets, read_text, read_u64};
use super::{EnergySource, PowerError, Sample, SocketEnergy};

/// Control types read, in order of preference.
pub const CONTROL_TYPES: [&str; 3] = ["intel-rapl", "amd-rapl", "intel-rapl-mmio"];

/// What helps when `energy_uj` cannot be read.
const PERMISSION_HINT: &str = "RAPL energy counters are readable by root only since Linux \
                               5.10; run as root or make energy_uj readable";

/// One powercap zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// Its directory.
    pub dir: PathBuf,
    /// Its id, the directory's name (`intel-rapl:0:1`).
    pub id: String,
    /// The content of its `name` file (`package-0`, `core`, `dram`).
    pub name: String,
    /// The value after which `energy_uj` wraps to 0 (`max_energy_range_uj`).
    pub max_range_uj: u64,
}

/// The zones of one package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// The package number (`physical_package_id`), from the zone name `package-P`.
    pub package: u32,
    /// Its package zones (one, or one per die).
    pub zones: Vec<Zone>,
    /// Its `core` subzones (RAPL PP0).
    pub cores: Vec<Zone>,
    /// Its `dram` subzones.
    pub dram: Vec<Zone>,
}

/// The RAPL zones found under a powercap root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The root searched.
    pub root: PathBuf,
    /// The control type used (`intel-rapl`).
    pub control_type: String,
    /// The packages, by package number.
    pub packages: Vec<Package>,
}

/// A zone id `<type>:<N>[:<M>]` split into its type and numbers.
fn parse_id(id: &str) -> Option<(&str, u32, Option<u32>)> {
    let mut parts = id.split(':');
    let ty = parts.next()?;
    let n = parts.next()?.parse().ok()?;
    let m = match parts.next() {
        Some(m) => Some(m.parse().ok()?),
        None => None,
    };
    parts.next().is_none().then_some((ty, n, m))
}

/// The package number of a package zone's name (`package-3`, `package-3-die-1`).
fn package_number(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("package-")?;
    let number = rest.split_once("-die-").map_or(rest, |(p, _)| p);
    number.parse().ok()
}

/// Reads a zone's `name` and `max_energy_range_uj`, and checks that `energy_uj` reads.
fn read_zone(dir: &Path, id: &str) -> Result<Zone, PowerError> {
    let name = read_text(&dir.join("name"), PERMISSION_HINT)?;
    let range_path = dir.join("max_energy_range_uj");
    let max_range_uj = read_u64(&range_path, PERMISSION_HINT)?;
    if max_range_uj == 0 {
        return Err(PowerError::Malformed {
            path: range_path,
            problem: "the counter range is 0".to_string(),
        });
    }
    let zone = Zone {
        dir: dir.to_path_buf(),
        id: id.to_string(),
        name,
        max_range_uj,
    };
    read_energy(&zone)?;
    Ok(zone)
}

/// A zone's `energy_uj`, checked against its range.
fn read_energy(zone: &Zone) -> Result<u64, PowerError> {
    let path = zone.dir.join("energy_uj");
    let v = read_u64(&path, PERMISSION_HINT)?;
    if v > zone.max_range_uj {
        return Err(PowerError::Malformed {
            path,
            problem: format!(
                "{v} µJ is above the counter's range, max_energy_range_uj {}",
                zone.max_range_uj
            ),
        });
    }
    Ok(v)
}

/// Finds the RAPL package zones and their `core` and `dram` subzones under `root`, and
/// checks that their counters read.
///
/// # Errors
///
/// [`PowerError::Unavailable`] when `root` does not exist or has no package zone, or when a
/// counter may not be read (permission); [`PowerError::Malformed`] naming the file when a
/// counter or range is not a number, or a counter is above its range;
/// [`PowerError::Io`] when a file cannot be read for another reason.
pub fn discover(root: &Path) -> Result<Discovery, PowerError> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PowerError::Unavailable(format!(
                "no RAPL zones under {} (it does not exist)",
                root.display()
            )))
        }
        Err(e) => {
            return Err(super::files::io_error(
                root,
                e,
                "the powercap tree is readable by all users normally",
            ))
        }
    };
    let mut ids: Vec<String> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| PowerError::Io {
            path: root.to_path_buf(),
            source: e,
        })?;
        if let Some(id) = entry.file_name().to_str() {
            ids.push(id.to_string());
        }
    }
    ids.sort();
    for ty in CONTROL_TYPES {
        let packages = discover_type(root, ty, &ids)?;
        if !packages.is_empty() {
            return Ok(Discovery {
                root: root.to_path_buf(),
                control_type: ty.to_string(),
                packages,
            });
        }
    }
    let zones: Vec<&str> = ids
        .iter()
        .filter(|id| parse_id(id).is_some())
        .map(String::as_str)
        .collect();
    Err(PowerError::Unavailable(if zones.is_empty() {
        format!(
            "no RAPL zones under {} (looked for {})",
            root.display(),
            CONTROL_TYPES.map(|t| format!("{t}:N")).join(", ")
        )
    } else {
        format!(
            "no RAPL package zone (named package-N) under {} (zones: {})",
            root.display(),
            zones.join(", ")
        )
    }))
}

/// The packages of one control type.
fn discover_type(root: &Path, ty: &str, ids: &[String]) -> Result<Vec<Package>, PowerError> {
    let mut packages: BTreeMap<u32, Package> = BTreeMap::new();
    // Top-level zone number -> package number, for the subzones.
    let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
    for id in ids {
        let Some((t, n, None)) = parse_id(id) else {
            continue;
        };
        if t != ty {
            continue;
        }
        let dir = root.join(id);
        let name = read_text(&dir.join("name"), PERMISSION_HINT)?;
        let Some(p) = package_number(&name) else {
            continue; // psys and other platform zones
        };
        let zone = read_zone(&dir, id)?;
        parent.insert(n, p);
        packages
            .entry(p)
            .or_insert_with(|| Package {
                package: p,
                zones: Vec::new(),
                cores: Vec::new(),
                dram: Vec::new(),
            })
            .zones
            .push(zone);
    }
    for id in ids {
        let Some((t, n, Some(_))) = parse_id(id) else {
            continue;
        };
        let Some(p) = parent.get(&n) else {
            continue;
        };
        if t != ty {
            continue;
        }
        let dir = root.join(id);
        let name = read_text(&dir.join("name"), PERMISSION_HINT)?;
        if name != "core" && name != "dram" {
            continue;
        }
        let zone = read_zone(&dir, id)?;
        if let Some(pkg) = packages.get_mut(p) {
            if name == "core" {
                pkg.cores.push(zone);
            } else {
                pkg.dram.push(zone);
            }
        }
    }
    Ok(packages.into_values().collect())
}

/// A zone's counter with the energy accumulated since the source was opened.
#[derive(Debug, Clone)]
struct ZoneCounter {
    zone: Zone,
    last: u64,
    total_uj: u128,
}

impl ZoneCounter {
    fn open(zone: Zone) -> Result<Self, PowerError> {
        let last = read_energy(&zone)?;
        Ok(Self {
            zone,
            last,
            total_uj: 0,
        })
    }

    /// Reads the counter and returns the energy since opening, in joules.
    fn read(&mut self) -> Result<f64, PowerError> {
        let now = read_energy(&self.zone)?;
        self.total_uj += u128::from(advance(self.last, now, self.zone.max_range_uj));
        self.last = now;
        // Microjoules to joules; exact enough far beyond any measurement's length.
        Ok(self.total_uj as f64 / 1e6)
    }
}

/// The increase of a counter from `before` to `now` that wraps to 0 after `max`.
#[must_use]
pub fn advance(before: u64, now: u64, max: u64) -> u64 {
    if now >= before {
        now - before
    } else {
        max.saturating_sub(before) + now
    }
}

/// The counters of one socket.
#[derive(Debug, Clone)]
struct SocketCounters {
    package: Vec<ZoneCounter>,
    cores: Vec<ZoneCounter>,
    dram: Vec<ZoneCounter>,
}

/// Sum of a domain's counters; `None` when the domain is not reported for every package
/// zone.
fn sum(counters: &mut [ZoneCounter], expected: usize) -> Result<Option<f64>, PowerError> {
    if counters.is_empty() || counters.len() != expected {
        return Ok(None);
    }
    let mut total = 0.0;
    for c in counters {
        total += c.read()?;
    }
    Ok(Some(total))
}

/// RAPL energy per socket from a powercap tree.
#[derive(Debug, Clone)]
pub struct PowercapSource {
    discovery: Discovery,
    sockets: Vec<SocketCounters>,
    opened: Instant,
}

impl PowercapSource {
    /// Finds the zones under `root` and matches them with the sockets of `topo` (see
    /// [`super`] for the matching; `os_root` is the root of sysfs).
    ///
    /// # Errors
    ///
    /// As [`discover`]; [`PowerError::Mapping`] when the sockets cannot be matched with the
    /// packages.
    pub fn open(root: &Path, topo: &Topology, os_root: &Path) -> Result<Self, PowerError> {
        Self::with_discovery(discover(root)?, topo, os_root)
    }

    /// As [`PowercapSource::open`], with zones already found.
    ///
    /// # Errors
    ///
    /// [`PowerError::Mapping`] when the sockets cannot be matched with the packages; the
    /// errors of reading a counter.
    pub fn with_discovery(
        discovery: Discovery,
        topo: &Topology,
        os_root: &Path,
    ) -> Result<Self, PowerError> {
        let available: Vec<u32> = discovery.packages.iter().map(|p| p.package).collect();
        let what = format!("powercap under {}", discovery.root.display());
        let matched = match_sockets(topo, os_root, &available, &what)?;
        let mut sockets = Vec::with_capacity(matched.len());
        for package in matched {
            let Some(p) = discovery.packages.iter().find(|p| p.package == package) else {
                return Err(PowerError::Mapping(format!(
                    "package {package} has no zone under {}",
                    discovery.root.display()
                )));
            };
            let open = |zones: &[Zone]| -> Result<Vec<ZoneCounter>, PowerError> {
                zones.iter().cloned().map(ZoneCounter::open).collect()
            };
            sockets.push(SocketCounters {
                package: open(&p.zones)?,
                cores: open(&p.cores)?,
                dram: open(&p.dram)?,
            });
        }
        Ok(Self {
            discovery,
            sockets,
            opened: Instant::now(),
        })
    }

    /// The zones found.
    #[must_use]
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }
}

impl EnergySource for PowercapSource {
    fn describe(&self) -> String {
        let zones: Vec<&str> = self
            .discovery
            .packages
            .iter()
            .flat_map(|p| p.zones.iter().chain(&p.cores).chain(&p.dram))
            .map(|z| z.id.as_str())
            .collect();
        format!(
            "powercap {} ({})",
            self.discovery.root.display(),
            zones.join(", ")
        )
    }

    fn read(&mut self) -> Result<Sample, PowerError> {
        let before = self.opened.elapsed().as_secs_f64();
        let mut sockets = Vec::with_capacity(self.sockets.len());
        for s in &mut self.sockets {
            let n = s.package.len();
            let package_j = sum(&mut s.package, n)?.unwrap_or(0.0);
            sockets.push(SocketEnergy {
                package_j,
                cores_j: sum(&mut s.cores, n)?,
                dram_j: sum(&mut s.dram, n)?,
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
mod tests;
