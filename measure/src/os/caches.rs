//! Caches (`/sys/devices/system/cpu/cpu*/cache/index*`). Cache information is optional:
//! an entry that cannot be read is left out with a note.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use topoprobe_model::{format_cpu_list, CacheType, OsCache, OsCpu};

use super::files::{clean, excerpt, numbered_entries, optional_number, read_optional, Notes};
use super::groups::Raw;

/// Parses a sysfs cache size (`32K`, `4096K`, `1M`, or bytes) into bytes.
pub(super) fn parse_size(s: &str) -> Option<u64> {
    let s = clean(s);
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KB" | "k" | "kB" => 1 << 10,
        "M" | "MB" => 1 << 20,
        "G" | "GB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

fn parse_type(s: &str) -> Option<CacheType> {
    match clean(s) {
        "Data" => Some(CacheType::Data),
        "Instruction" => Some(CacheType::Instruction),
        "Unified" => Some(CacheType::Unified),
        _ => None,
    }
}

/// What became of the entries without a usable CPU set.
#[derive(Default)]
struct Unshared {
    /// Entries with neither `shared_cpu_map` nor `shared_cpu_list`, left out.
    missing: Vec<String>,
    /// Entries whose set is empty, given their core's CPUs instead (as on Itanium).
    empty: Vec<String>,
}

/// Reads one `indexN` directory of `cpu`; `None` (with a note) when it is unusable.
fn read_index(
    cpu: u32,
    dir: &Path,
    core: Option<&Vec<u32>>,
    unshared: &mut Unshared,
    notes: &mut Notes,
) -> Option<OsCache> {
    let level: u8 = optional_number(&dir.join("level"), notes)?;
    let ty = read_optional(&dir.join("type"), notes)?;
    let Some(kind) = parse_type(&ty) else {
        notes.add(format!(
            "{}: unknown cache type {:?}; cache left out",
            dir.join("type").display(),
            excerpt(&ty)
        ));
        return None;
    };
    let size_bytes = read_optional(&dir.join("size"), notes).and_then(|s| {
        let v = parse_size(&s);
        if v.is_none() {
            notes.add(format!(
                "{}: cannot parse {:?}; size unknown",
                dir.join("size").display(),
                excerpt(&s)
            ));
        }
        v
    });
    let mut cpus = None;
    for (name, list) in [("shared_cpu_map", false), ("shared_cpu_list", true)] {
        let path = dir.join(name);
        if let Some(s) = read_optional(&path, notes) {
            let parsed = super::files::parse_cpus(&s, list);
            match parsed {
                Ok(v) => {
                    cpus = Some(v);
                    break;
                }
                Err(e) => notes.add(format!("{}: {e}", path.display())),
            }
        }
    }
    let short = || {
        let n = dir.components().count();
        dir.components()
            .skip(n.saturating_sub(3))
            .collect::<std::path::PathBuf>()
            .display()
            .to_string()
    };
    let Some(mut cpus) = cpus else {
        // hwloc ignores such entries too: no set says who shares the cache.
        unshared.missing.push(short());
        return None;
    };
    if cpus.is_empty() {
        // Itanium kernels give an empty set for L3 and L2i: hwloc uses the core's CPUs.
        unshared.empty.push(short());
        cpus = core.cloned().unwrap_or_default();
    }
    if let Err(i) = cpus.binary_search(&cpu) {
        cpus.insert(i, cpu);
    }
    Some(OsCache {
        level,
        kind,
        size_bytes,
        line_size: optional_number(&dir.join("coherency_line_size"), notes),
        ways: optional_number(&dir.join("ways_of_associativity"), notes),
        cpus,
    })
}

/// The caches of the given online CPUs, one entry per physical cache, ascending by level,
/// type and CPUs. Entries without `shared_cpu_map` or `shared_cpu_list` are left out with
/// a note; an empty set stands for the CPU's core (`raw`'s core mask), as hwloc reads it.
pub(super) fn read_caches(
    cpu_dir: &Path,
    online: &[u32],
    raw: &BTreeMap<u32, Raw>,
    notes: &mut Notes,
) -> Vec<OsCache> {
    let mut unique: BTreeMap<(u8, CacheType, Vec<u32>), OsCache> = BTreeMap::new();
    let mut unshared = Unshared::default();
    for &cpu in online {
        let dir = cpu_dir.join(format!("cpu{cpu}/cache"));
        let indices = match numbered_entries(&dir, "index") {
            Ok(v) => v,
            Err(e) => {
                notes.add(e.to_string());
                continue;
            }
        };
        for (_, index) in indices {
            let core = raw.get(&cpu).and_then(|r| r.core_mask.as_ref());
            if let Some(c) = read_index(cpu, &index, core, &mut unshared, notes) {
                unique.entry((c.level, c.kind, c.cpus.clone())).or_insert(c);
            }
        }
    }
    for (list, what) in [
        (
            &unshared.missing,
            "no shared_cpu_map or shared_cpu_list; left out",
        ),
        (
            &unshared.empty,
            "an empty shared_cpu_map; the core's CPUs taken",
        ),
    ] {
        if let Some(first) = list.first() {
            notes.add(format!(
                "{} cache entries have {what} (first: {first})",
                list.len()
            ));
        }
    }
    let caches: Vec<OsCache> = unique.into_values().collect();
    note_overlaps(cpu_dir, &caches, notes);
    caches
}

/// Notes the CPUs that the `shared_cpu_map`s put in two caches of the same level and
/// type (a cache is shared by a set of CPUs, and each CPU has one cache of each level):
/// one note per level and type, with the first such CPU and its two caches.
fn note_overlaps(cpu_dir: &Path, caches: &[OsCache], notes: &mut Notes) {
    let mut owner: BTreeMap<(u8, CacheType, u32), usize> = BTreeMap::new();
    let mut said: BTreeMap<(u8, CacheType), (u32, usize, usize, usize)> = BTreeMap::new();
    for (i, c) in caches.iter().enumerate() {
        for &cpu in &c.cpus {
            if let Some(&first) = owner.get(&(c.level, c.kind, cpu)) {
                said.entry((c.level, c.kind))
                    .and_modify(|e| e.3 += 1)
                    .or_insert((cpu, first, i, 1));
            } else {
                owner.insert((c.level, c.kind, cpu), i);
            }
        }
    }
    for ((level, kind), (cpu, a, b, count)) in said {
        notes.add(format!(
            "{}: the shared_cpu_maps put CPU {cpu} in two L{level} {} caches (CPUs {} and CPUs \
             {}){}; each is kept as the OS gives it",
            cpu_dir.display(),
            kind.as_str(),
            format_cpu_list(&caches[a].cpus),
            format_cpu_list(&caches[b].cpus),
            if count > 1 {
                format!(", and {} more such CPUs", count - 1)
            } else {
                String::new()
            }
        ));
    }
}

/// The CPUs sharing each online CPU's L1 data (or unified) cache.
pub(super) fn l1d_of(caches: &[OsCache]) -> BTreeMap<u32, Vec<u32>> {
    let mut out = BTreeMap::new();
    for c in caches
        .iter()
        .filter(|c| c.level == 1 && c.kind.holds_data())
    {
        for &cpu in &c.cpus {
            out.entry(cpu).or_insert_with(|| c.cpus.clone());
        }
    }
    out
}

/// `caches` without those whose online CPUs cross a package: neither inside one package
/// nor made of whole packages (hwloc ignores them too). Each is noted.
pub(super) fn within_packages(
    caches: Vec<OsCache>,
    cpus: &[OsCpu],
    notes: &mut Notes,
) -> Vec<OsCache> {
    let package_of: BTreeMap<u32, i64> = cpus.iter().map(|c| (c.id, c.package)).collect();
    let mut size: BTreeMap<i64, usize> = BTreeMap::new();
    for c in cpus {
        *size.entry(c.package).or_default() += 1;
    }
    caches
        .into_iter()
        .filter(|c| {
            let mut count: BTreeMap<i64, usize> = BTreeMap::new();
            for cpu in &c.cpus {
                if let Some(p) = package_of.get(cpu) {
                    *count.entry(*p).or_default() += 1;
                }
            }
            let whole = count.iter().all(|(p, n)| size.get(p) == Some(n));
            let fits = count.len() <= 1 || whole;
            if !fits {
                let packages: BTreeSet<i64> = count.keys().copied().collect();
                notes.add(format!(
                    "L{} {} cache of CPUs {} crosses packages {:?} without holding them whole; \
                     left out",
                    c.level,
                    c.kind,
                    format_cpu_list(&c.cpus),
                    packages
                ));
            }
            fits
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_size("4096K\n\0"), Some(4 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("12X"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999999999999K"), None);
    }
}
