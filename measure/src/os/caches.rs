//! Caches (`/sys/devices/system/cpu/cpu*/cache/index*`). Cache information is optional:
//! an entry that cannot be read is left out with a note.

use std::collections::BTreeMap;
use std::path::Path;

use topoprobe_model::{parse_cpu_list, parse_cpu_mask, CacheType, OsCache};

use super::files::{clean, excerpt, numbered_entries, optional_number, read_optional, Notes};

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

/// Reads one `indexN` directory of `cpu`; `None` (with a note) when it is unusable.
fn read_index(cpu: u32, dir: &Path, notes: &mut Notes) -> Option<OsCache> {
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
            let parsed = if list {
                parse_cpu_list(&s)
            } else {
                parse_cpu_mask(&s)
            };
            match parsed {
                Ok(v) => {
                    cpus = Some(v);
                    break;
                }
                Err(e) => notes.add(format!("{}: {e}", path.display())),
            }
        }
    }
    let mut cpus = cpus.unwrap_or_default();
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
/// type and CPUs.
pub(super) fn read_caches(cpu_dir: &Path, online: &[u32], notes: &mut Notes) -> Vec<OsCache> {
    let mut unique: BTreeMap<(u8, CacheType, Vec<u32>), OsCache> = BTreeMap::new();
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
            if let Some(c) = read_index(cpu, &index, notes) {
                unique.entry((c.level, c.kind, c.cpus.clone())).or_insert(c);
            }
        }
    }
    unique.into_values().collect()
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
