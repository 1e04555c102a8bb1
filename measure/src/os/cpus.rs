//! The online CPUs and their topology (`/sys/devices/system/cpu`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use topoprobe_model::{format_cpu_list, OsCpu};

use super::files::{
    clean, excerpt, numbered_entries, optional_number, parse_error, read_optional, Notes,
};
use super::groups::Raw;
use super::OsError;

/// The online CPUs (ascending) and the offline ones: present (a `cpuN` directory, or in
/// the `present` list) but not online, ascending.
pub(super) struct Cpus {
    pub(super) online: Vec<OsCpu>,
    pub(super) offline: Vec<u32>,
    /// What sysfs says of each online CPU's package and core, to decide them
    /// ([`groups::decide`]) once the caches are known.
    pub(super) raw: BTreeMap<u32, Raw>,
}

/// Parses `content` of `path` as a CPU list (`*_list`, `online`) or a mask.
fn cpu_set(path: &Path, content: &str, list: bool) -> Result<Vec<u32>, OsError> {
    let parsed = super::files::parse_cpus(content, list);
    parsed.map_err(|e| parse_error(path, content, e.to_string()))
}

/// The first of `files` (in `dir`) that exists and parses, as a mask or, for names ending
/// in `_list`, a list; `None` when none does. Unreadable or malformed ones are noted.
fn first_set(dir: &Path, files: &[&str], notes: &mut Notes) -> Option<Vec<u32>> {
    for name in files {
        let path = dir.join(name);
        let Some(s) = read_optional(&path, notes) else {
            continue;
        };
        match cpu_set(&path, &s, name.ends_with("_list")) {
            Ok(v) if !v.is_empty() => return Some(v),
            Ok(_) => notes.add(format!("{}: empty; ignored", path.display())),
            Err(e) => notes.add(format!("ignored: {e}")),
        }
    }
    None
}

/// Which CPU directories are online: the `online` list when there is one that parses,
/// else each CPU's `online` file (cpu0 often has none; an empty or malformed one is
/// noted), else whether it has a `topology` directory. Also says why the `online` list
/// was not used, when it exists and was not (for the error of a tree with no online CPU).
fn online_set(
    cpu_dir: &Path,
    present: &[(u32, PathBuf)],
    notes: &mut Notes,
) -> (BTreeSet<u32>, Option<String>) {
    let path = cpu_dir.join("online");
    let mut why = None;
    let text = match super::files::read(&path) {
        Ok(t) => t,
        Err(e) => {
            let said = e.to_string();
            notes.add(said.clone());
            why = Some(said);
            None
        }
    };
    let listed = text.and_then(|s| match cpu_set(&path, &s, true) {
        Ok(v) if !v.is_empty() => Some(v),
        Ok(_) => {
            let said = format!("{}: empty; each CPU's online file used", path.display());
            notes.add(said.clone());
            why = Some(said);
            None
        }
        Err(e) => {
            let said = format!("ignored: {e}; each CPU's online file used");
            notes.add(said.clone());
            why = Some(said);
            None
        }
    });
    if let Some(listed) = listed {
        let listed: BTreeSet<u32> = listed.into_iter().collect();
        let dirs: BTreeSet<u32> = present.iter().map(|(n, _)| *n).collect();
        let missing: Vec<u32> = listed.difference(&dirs).copied().collect();
        if !missing.is_empty() {
            notes.add(format!(
                "{}: CPUs {} are online but have no directory; left out",
                path.display(),
                format_cpu_list(&missing)
            ));
        }
        return (listed.intersection(&dirs).copied().collect(), None);
    }
    let mut out = BTreeSet::new();
    for (n, dir) in present {
        let flag = dir.join("online");
        let has_topology = dir.join("topology").is_dir();
        let online = match read_optional(&flag, notes) {
            Some(s) => match clean(&s) {
                "1" => true,
                "0" => false,
                _ => {
                    notes.add(format!(
                        "{}: {:?} is not 0 or 1; CPU {n} taken as {} by its topology directory",
                        flag.display(),
                        excerpt(&s),
                        if has_topology { "online" } else { "offline" }
                    ));
                    has_topology
                }
            },
            None => has_topology,
        };
        if online {
            out.insert(*n);
        }
    }
    (out, why)
}

/// CPU kinds of hybrid machines: `/sys/devices/cpu_<kind>/cpus` (Intel's `cpu_core` and
/// `cpu_atom` PMUs), by CPU.
fn kinds(root: &Path, notes: &mut Notes) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    let dir = root.join("sys/devices");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return out;
    };
    let mut pmus: Vec<(String, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let kind = name.strip_prefix("cpu_")?.to_string();
            Some((kind, e.path().join("cpus")))
        })
        .collect();
    pmus.sort();
    for (kind, path) in pmus {
        let Some(s) = read_optional(&path, notes) else {
            continue;
        };
        match cpu_set(&path, &s, true) {
            Ok(cpus) => {
                for c in cpus {
                    out.insert(c, kind.clone());
                }
            }
            Err(e) => notes.add(format!("ignored: {e}")),
        }
    }
    out
}

/// The `cluster_id` of a CPU without a cluster on x86.
const NO_CLUSTER: i64 = 0xffff;

/// Reads one online CPU from its directory: the CPU, with package and core still to be
/// decided ([`groups::decide`]), and what sysfs says of them.
fn read_cpu(id: u32, dir: &Path, notes: &mut Notes) -> (OsCpu, Raw) {
    let topo = dir.join("topology");
    let id_file = |name: &str, notes: &mut Notes| optional_number::<i64>(&topo.join(name), notes);
    let package_id = id_file("physical_package_id", notes);
    let core_id = id_file("core_id", notes);
    let die = id_file("die_id", notes).filter(|&v| v >= 0);
    // x86 kernels write 65535 (their invalid APIC id, 0xffff) where the CPU has no
    // cluster: not a cluster of every CPU (hwloc hides it too).
    let cluster = id_file("cluster_id", notes).filter(|&v| v >= 0 && v != NO_CLUSTER);
    let core_mask = first_set(
        &topo,
        &[
            "core_cpus",
            "thread_siblings",
            "core_cpus_list",
            "thread_siblings_list",
        ],
        notes,
    );
    let package_mask = first_set(
        &topo,
        &[
            "package_cpus",
            "core_siblings",
            "package_cpus_list",
            "core_siblings_list",
        ],
        notes,
    );
    let cpu = OsCpu {
        id,
        package: package_id.unwrap_or(-1),
        die,
        core: core_id.unwrap_or(-1),
        cluster,
        thread_siblings: core_mask.clone().unwrap_or_default(),
        core_siblings: package_mask.clone().unwrap_or_default(),
        node: None,
        capacity: optional_number(&dir.join("cpu_capacity"), notes),
        base_freq_khz: optional_number(&dir.join("cpufreq/base_frequency"), notes),
        max_freq_khz: optional_number(&dir.join("cpufreq/cpuinfo_max_freq"), notes),
        kind: None,
    };
    let raw = Raw {
        package_id,
        core_id,
        core_mask,
        package_mask,
    };
    (cpu, raw)
}

/// Reads one id of a CPU's [`Raw`] record.
type IdOf = fn(&Raw) -> Option<i64>;

/// Notes the online CPUs missing a package or core id (the sibling lists, else the CPU
/// alone, stand for them).
fn note_missing_ids(cpu_dir: &Path, raw: &BTreeMap<u32, Raw>, notes: &mut Notes) {
    let files: [(&str, IdOf); 2] = [
        ("physical_package_id", |r| r.package_id),
        ("core_id", |r| r.core_id),
    ];
    for (file, get) in files {
        let missing: Vec<u32> = raw
            .iter()
            .filter(|(_, r)| get(r).is_none())
            .map(|(&c, _)| c)
            .collect();
        if let Some(first) = missing.first() {
            notes.add(format!(
                "{}: no {file} for CPUs {}; the sibling lists decide, else each CPU stands alone",
                cpu_dir.join(format!("cpu{first}/topology")).display(),
                format_cpu_list(&missing)
            ));
        }
    }
}

/// Reads the online CPUs under `<root>/sys/devices/system/cpu`.
///
/// # Errors
///
/// [`OsError`] when the directory is missing or cannot be listed, or has no online CPU
/// with a topology directory. Everything else missing or malformed is a note.
pub(super) fn read_cpus(root: &Path, notes: &mut Notes) -> Result<Cpus, OsError> {
    let cpu_dir = root.join("sys/devices/system/cpu");
    if !cpu_dir.is_dir() {
        return Err(OsError::Missing {
            path: cpu_dir,
            problem: "missing (not a Linux sysfs root?)".into(),
        });
    }
    let present = numbered_entries(&cpu_dir, "cpu")?;
    let (mut online, online_why) = online_set(&cpu_dir, &present, notes);
    // hwloc, too, leaves out online CPUs without topology information.
    let no_topology: Vec<u32> = present
        .iter()
        .filter(|(n, d)| online.contains(n) && !d.join("topology").is_dir())
        .map(|(n, _)| *n)
        .collect();
    if !no_topology.is_empty() {
        notes.add(format!(
            "{}: CPUs {} are online but have no topology directory; left out",
            cpu_dir.display(),
            format_cpu_list(&no_topology)
        ));
        for n in &no_topology {
            online.remove(n);
        }
    }
    if online.is_empty() {
        return Err(OsError::Missing {
            path: cpu_dir,
            problem: match online_why {
                Some(why) => format!(
                    "no online CPU with a topology directory found (the online list was not \
                     used: {why})"
                ),
                None => "no online CPU with a topology directory found".into(),
            },
        });
    }
    let kinds = kinds(root, notes);
    let mut cpus = Vec::with_capacity(online.len());
    let mut raw = BTreeMap::new();
    let mut offline = Vec::new();
    for (id, dir) in &present {
        if online.contains(id) {
            let (mut cpu, r) = read_cpu(*id, dir, notes);
            cpu.kind = kinds.get(id).cloned();
            cpus.push(cpu);
            raw.insert(*id, r);
        } else if !no_topology.contains(id) {
            offline.push(*id);
        }
    }
    note_missing_ids(&cpu_dir, &raw, notes);
    // CPUs the kernel lists as present (`present`) but not online are offline too,
    // whether or not the capture kept their directory.
    let present_path = cpu_dir.join("present");
    if let Some(s) = read_optional(&present_path, notes) {
        match cpu_set(&present_path, &s, true) {
            Ok(listed) => {
                offline.extend(listed.into_iter().filter(|c| !online.contains(c)));
                offline.sort_unstable();
                offline.dedup();
            }
            Err(e) => notes.add(format!("ignored: {e}")),
        }
    }
    Ok(Cpus {
        online: cpus,
        offline,
        raw,
    })
}
