//! The online CPUs and their topology (`/sys/devices/system/cpu`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use topoprobe_model::{format_cpu_list, parse_cpu_list, parse_cpu_mask, CoreKey, OsCpu};

use super::files::{
    clean, numbered_entries, optional_number, parse_error, parse_number, read, read_optional,
    read_required, Notes,
};
use super::OsError;

/// The online CPUs (ascending) and the offline ones: present (a `cpuN` directory, or in
/// the `present` list) but not online, ascending.
pub(super) struct Cpus {
    pub(super) online: Vec<OsCpu>,
    pub(super) offline: Vec<u32>,
}

/// Parses `content` of `path` as a CPU list (`*_list`, `online`) or a mask.
fn cpu_set(path: &Path, content: &str, list: bool) -> Result<Vec<u32>, OsError> {
    let parsed = if list {
        parse_cpu_list(content)
    } else {
        parse_cpu_mask(content)
    };
    parsed.map_err(|e| parse_error(path, content, e.to_string()))
}

/// The first of `files` (in `dir`) that exists, parsed as a mask or, for names ending in
/// `_list`, a list; `None` when none exists.
fn first_set(dir: &Path, files: &[&str]) -> Result<Option<Vec<u32>>, OsError> {
    for name in files {
        let path = dir.join(name);
        if let Some(s) = read(&path)? {
            return cpu_set(&path, &s, name.ends_with("_list")).map(Some);
        }
    }
    Ok(None)
}

/// Which CPU directories are online: the `online` list when there is one, else each CPU's
/// `online` file (cpu0 often has none), else whether it has a `topology` directory.
fn online_set(
    cpu_dir: &Path,
    present: &[(u32, PathBuf)],
    notes: &mut Notes,
) -> Result<BTreeSet<u32>, OsError> {
    let path = cpu_dir.join("online");
    if let Some(s) = read(&path)? {
        let listed: BTreeSet<u32> = cpu_set(&path, &s, true)?.into_iter().collect();
        let dirs: BTreeSet<u32> = present.iter().map(|(n, _)| *n).collect();
        let missing: Vec<u32> = listed.difference(&dirs).copied().collect();
        if !missing.is_empty() {
            notes.add(format!(
                "{}: CPUs {} are online but have no directory; left out",
                path.display(),
                format_cpu_list(&missing)
            ));
        }
        return Ok(listed.intersection(&dirs).copied().collect());
    }
    let mut out = BTreeSet::new();
    for (n, dir) in present {
        let flag = dir.join("online");
        let online = match read(&flag)? {
            Some(s) => match clean(&s) {
                "1" => true,
                "0" => false,
                _ => return Err(parse_error(&flag, &s, "expected 0 or 1")),
            },
            None => dir.join("topology").is_dir(),
        };
        if online {
            out.insert(*n);
        }
    }
    Ok(out)
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

/// Reads one online CPU from its directory.
fn read_cpu(id: u32, dir: &Path, notes: &mut Notes) -> Result<OsCpu, OsError> {
    let topo = dir.join("topology");
    if !topo.is_dir() {
        return Err(OsError::Missing {
            path: topo,
            problem: format!("missing, though CPU {id} is online"),
        });
    }
    let number = |name: &str, what: &str| -> Result<i64, OsError> {
        let path = topo.join(name);
        parse_number(&path, &read_required(&path, what)?)
    };
    let package = number("physical_package_id", "package of an online CPU")?;
    let core = number("core_id", "core of an online CPU")?;
    let optional_id = |name: &str, notes: &mut Notes| {
        optional_number::<i64>(&topo.join(name), notes).filter(|&v| v >= 0)
    };
    let die = optional_id("die_id", notes);
    // x86 kernels write 65535 (their invalid APIC id, 0xffff) where the CPU has no
    // cluster: not a cluster of every CPU (hwloc hides it too).
    let cluster = optional_id("cluster_id", notes).filter(|&v| v != NO_CLUSTER);
    let thread_siblings = first_set(
        &topo,
        &[
            "thread_siblings",
            "core_cpus",
            "thread_siblings_list",
            "core_cpus_list",
        ],
    )?
    .unwrap_or_default();
    let core_siblings = first_set(
        &topo,
        &[
            "core_siblings",
            "package_cpus",
            "core_siblings_list",
            "package_cpus_list",
        ],
    )?
    .unwrap_or_default();
    Ok(OsCpu {
        id,
        package,
        die,
        core,
        cluster,
        thread_siblings,
        core_siblings,
        node: None,
        capacity: optional_number(&dir.join("cpu_capacity"), notes),
        base_freq_khz: optional_number(&dir.join("cpufreq/base_frequency"), notes),
        max_freq_khz: optional_number(&dir.join("cpufreq/cpuinfo_max_freq"), notes),
        kind: None,
    })
}

/// Fills sibling lists the OS did not give from the ids: the CPUs of the same
/// (package, die, cluster, core), and of the same package.
fn derive_missing_siblings(cpus: &mut [OsCpu]) {
    let mut cores: BTreeMap<CoreKey, Vec<u32>> = BTreeMap::new();
    let mut packages: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
    for c in cpus.iter() {
        cores.entry(c.core_key()).or_default().push(c.id);
        packages.entry(c.package).or_default().push(c.id);
    }
    for c in cpus.iter_mut() {
        if c.thread_siblings.is_empty() {
            if let Some(v) = cores.get(&c.core_key()) {
                c.thread_siblings.clone_from(v);
            }
        }
        if c.core_siblings.is_empty() {
            if let Some(v) = packages.get(&c.package) {
                c.core_siblings.clone_from(v);
            }
        }
    }
}

/// Reads the online CPUs under `<root>/sys/devices/system/cpu`.
///
/// # Errors
///
/// [`OsError`] when the directory is missing or has no online CPU, the `online` list is
/// malformed, or an online CPU lacks its package or core id.
pub(super) fn read_cpus(root: &Path, notes: &mut Notes) -> Result<Cpus, OsError> {
    let cpu_dir = root.join("sys/devices/system/cpu");
    if !cpu_dir.is_dir() {
        return Err(OsError::Missing {
            path: cpu_dir,
            problem: "missing (not a Linux sysfs root?)".into(),
        });
    }
    let present = numbered_entries(&cpu_dir, "cpu")?;
    let online = online_set(&cpu_dir, &present, notes)?;
    if online.is_empty() {
        return Err(OsError::Missing {
            path: cpu_dir,
            problem: "no online CPU found".into(),
        });
    }
    let kinds = kinds(root, notes);
    let mut cpus = Vec::with_capacity(online.len());
    let mut offline = Vec::new();
    for (id, dir) in &present {
        if online.contains(id) {
            let mut cpu = read_cpu(*id, dir, notes)?;
            cpu.kind = kinds.get(id).cloned();
            cpus.push(cpu);
        } else {
            offline.push(*id);
        }
    }
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
    derive_missing_siblings(&mut cpus);
    Ok(Cpus {
        online: cpus,
        offline,
    })
}
