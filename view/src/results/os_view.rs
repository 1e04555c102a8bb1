//! The text of `topoprobe os` ([`OsReport`], in `topoprobe_model::results::os`): what the
//! operating system says about a machine, as a tree of packages, dies, clusters and cores,
//! then its CPUs' caches, NUMA nodes, offline and disallowed CPUs and notes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use topoprobe_model::results::os::{CacheUse, CpuEntry, OsReport};
use topoprobe_model::{format_cpu_list, size_text, CacheType};

use super::Rendered;

/// `L1d`, `L1i`, `L2`, `L3`...
fn cache_label(level: u8, kind: CacheType) -> String {
    match kind {
        CacheType::Data => format!("L{level}d"),
        CacheType::Instruction => format!("L{level}i"),
        CacheType::Unified => format!("L{level}"),
    }
}

/// `2 MiB, 64 B lines, 16-way` (what is known of it).
fn cache_details(c: &CacheUse) -> String {
    let mut parts = Vec::new();
    if let Some(s) = c.size_bytes {
        parts.push(size_text(s));
    }
    if let Some(l) = c.line_size {
        parts.push(format!("{l} B lines"));
    }
    if let Some(w) = c.ways {
        parts.push(format!("{w}-way"));
    }
    parts.join(", ")
}

/// The CPU list of `cpus`.
fn cpu_list(cpus: &[&CpuEntry]) -> String {
    let ids: Vec<u32> = cpus.iter().map(|c| c.cpu).collect();
    format_cpu_list(&ids)
}

/// The cores of `cpus`: (core id, its CPUs, its kind), ascending by first CPU.
fn cores_of<'a>(cpus: &[&'a CpuEntry]) -> Vec<(i64, Vec<u32>, Option<&'a str>)> {
    let mut cores: BTreeMap<Vec<u32>, (i64, Option<&str>)> = BTreeMap::new();
    for c in cpus {
        cores.insert(c.core_cpus.clone(), (c.core, c.kind.as_deref()));
    }
    let mut out: Vec<(i64, Vec<u32>, Option<&str>)> = cores
        .into_iter()
        .map(|(cpus, (core, kind))| (core, cpus, kind))
        .collect();
    out.sort_by_key(|(_, cpus, _)| cpus.first().copied());
    out
}

/// `none` for an empty list, else the CPU list.
fn list_or_none(cpus: &[u32]) -> String {
    if cpus.is_empty() {
        "none".to_string()
    } else {
        format_cpu_list(cpus)
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The sections of the text, each drawn into `out`.
trait Sections {
    fn tree(&self, out: &mut String);
    fn caches_text(&self, out: &mut String);
    fn nodes_text(&self, out: &mut String);
}

impl Sections for OsReport {
    /// The tree: packages, then dies (where a package has several), clusters (of several
    /// cores), and cores with their CPUs.
    fn tree(&self, out: &mut String) {
        let mut packages: BTreeMap<i64, Vec<&CpuEntry>> = BTreeMap::new();
        for c in &self.cpus {
            packages.entry(c.package).or_default().push(c);
        }
        for (package, cpus) in &packages {
            let _ = writeln!(out, "Package {package}: CPUs {}", cpu_list(cpus));
            let mut dies: BTreeMap<Option<i64>, Vec<&CpuEntry>> = BTreeMap::new();
            for &c in cpus {
                dies.entry(c.die).or_default().push(c);
            }
            let show_dies = dies.len() > 1;
            for (die, cpus) in &dies {
                let mut indent = "  ".to_string();
                if let (true, Some(d)) = (show_dies, die) {
                    let _ = writeln!(out, "{indent}Die {d}: CPUs {}", cpu_list(cpus));
                    indent.push_str("  ");
                }
                let mut clusters: BTreeMap<Option<i64>, Vec<&CpuEntry>> = BTreeMap::new();
                for &c in cpus {
                    clusters.entry(c.cluster).or_default().push(c);
                }
                for (cluster, cpus) in &clusters {
                    let cores = cores_of(cpus);
                    let mut inner = indent.clone();
                    if let (true, Some(k)) = (cores.len() > 1, cluster) {
                        let _ = writeln!(out, "{inner}Cluster {k}: CPUs {}", cpu_list(cpus));
                        inner.push_str("  ");
                    }
                    for (core, cpus, kind) in cores {
                        let kind = kind.map_or_else(String::new, |k| format!(" ({k})"));
                        let noun = if cpus.len() == 1 { "CPU" } else { "CPUs" };
                        let _ = writeln!(
                            out,
                            "{inner}Core {core}: {noun} {}{kind}",
                            format_cpu_list(&cpus)
                        );
                    }
                }
            }
        }
    }

    /// The caches, grouped by level, type and geometry, each instance with its CPUs.
    fn caches_text(&self, out: &mut String) {
        if self.caches.is_empty() {
            out.push_str("Caches: none given\n");
            return;
        }
        out.push_str("Caches (CPUs sharing each):\n");
        let mut groups: BTreeMap<(u8, CacheType, String), Vec<&CacheUse>> = BTreeMap::new();
        for c in &self.caches {
            groups
                .entry((c.level, c.kind, cache_details(c)))
                .or_default()
                .push(c);
        }
        for ((level, kind, details), caches) in &groups {
            let sets: Vec<String> = caches.iter().map(|c| format_cpu_list(&c.cpus)).collect();
            let details = if details.is_empty() {
                String::new()
            } else {
                format!(" ({details})")
            };
            let _ = writeln!(
                out,
                "  {} {kind} ×{}{details}: {}",
                cache_label(*level, *kind),
                caches.len(),
                sets.join(" | ")
            );
        }
    }

    fn nodes_text(&self, out: &mut String) {
        let Some(nodes) = &self.nodes else {
            out.push_str("NUMA nodes: not given by the OS\n");
            return;
        };
        for n in nodes {
            let memory = n
                .memory_bytes
                .map_or_else(|| "memory unknown".to_string(), size_text);
            let cpus = if n.cpus.is_empty() {
                "no CPU".to_string()
            } else {
                format!("CPUs {}", format_cpu_list(&n.cpus))
            };
            let mut line = format!("NUMA node {}: {cpus}, {memory}", n.node);
            if !n.distances.is_empty() {
                let d: Vec<String> = n.distances.iter().map(u32::to_string).collect();
                let _ = write!(line, ", distances {}", d.join(" "));
            }
            if let Some(near) = n.near_cpus.as_deref().filter(|v| !v.is_empty()) {
                let _ = write!(line, ", near CPUs {}", format_cpu_list(near));
            }
            let _ = writeln!(out, "{line}");
            for h in &n.hmat {
                let figure =
                    |v: Option<u64>, unit: &str| v.map_or("-".into(), |x| format!("{x} {unit}"));
                let from: Vec<String> = h.initiators.iter().map(u32::to_string).collect();
                let _ = writeln!(
                    out,
                    "  HMAT access{} from nodes {}: read {} {}, write {} {}",
                    h.class,
                    if from.is_empty() {
                        "-".to_string()
                    } else {
                        from.join(",")
                    },
                    figure(h.read_latency_ns, "ns"),
                    figure(h.read_bandwidth_mbps, "MB/s"),
                    figure(h.write_latency_ns, "ns"),
                    figure(h.write_bandwidth_mbps, "MB/s")
                );
            }
            for m in &n.memory_side_caches {
                let mut parts = vec![m
                    .size_bytes
                    .map_or_else(|| "size unknown".into(), size_text)];
                if let Some(l) = m.line_size {
                    parts.push(format!("{l} B lines"));
                }
                if let Some(d) = m.direct_mapped {
                    parts.push(if d { "direct-mapped" } else { "indexed" }.to_string());
                }
                if let Some(w) = &m.write_policy {
                    parts.push(w.clone());
                }
                let _ = writeln!(
                    out,
                    "  memory-side cache L{}: {}",
                    m.level,
                    parts.join(", ")
                );
            }
        }
    }
}

impl Rendered for OsReport {
    fn text(&self) -> String {
        let mut out = String::new();
        let mut title = format!("Operating system's view of {}", self.source);
        let who: Vec<&str> = [self.cpu_model.as_deref(), self.hostname.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if !who.is_empty() {
            let _ = write!(title, ": {}", who.join(", "));
        }
        if let Some(k) = &self.kernel {
            let _ = write!(title, " (Linux {k})");
        }
        let _ = writeln!(out, "{title}");
        let c = &self.counts;
        let mut counts = vec![plural(c.packages, "package", "packages")];
        if c.dies > 0 {
            counts.push(plural(c.dies, "die", "dies"));
        }
        if c.clusters > 0 {
            counts.push(plural(c.clusters, "cluster", "clusters"));
        }
        counts.push(plural(c.cores, "core", "cores"));
        counts.push(format!(
            "{} ({})",
            plural(c.pus, "CPU", "CPUs"),
            if self.smt { "SMT" } else { "no SMT" }
        ));
        counts.push(match c.numa_nodes {
            Some(n) => plural(n, "NUMA node", "NUMA nodes"),
            None => "NUMA unknown".to_string(),
        });
        counts.push(plural(c.caches, "cache", "caches"));
        let _ = writeln!(out, "{}\n", counts.join(", "));
        self.tree(&mut out);
        out.push('\n');
        self.caches_text(&mut out);
        out.push('\n');
        self.nodes_text(&mut out);
        if !self.cpu_kinds.is_empty() {
            let kinds: Vec<String> = self
                .cpu_kinds
                .iter()
                .map(|k| format!("{}: {}", k.label, format_cpu_list(&k.cpus)))
                .collect();
            let _ = writeln!(out, "CPU kinds: {}", kinds.join("; "));
        }
        let _ = writeln!(out, "Offline CPUs: {}", list_or_none(&self.offline));
        match &self.cpuset {
            Some(set) => {
                let _ = writeln!(
                    out,
                    "cgroup cpuset: {}; disallowed online CPUs: {}",
                    list_or_none(set),
                    list_or_none(&self.disallowed)
                );
            }
            None => out.push_str("cgroup cpuset: none found (every online CPU allowed)\n"),
        }
        if let Some(nodes) = &self.allowed_nodes {
            let _ = writeln!(
                out,
                "cgroup cpuset memory nodes: {}; disallowed nodes: {}",
                list_or_none(nodes),
                list_or_none(&self.disallowed_nodes)
            );
        }
        if !self.notes.is_empty() {
            out.push_str("Notes:\n");
            for n in &self.notes {
                let _ = writeln!(out, "  {n}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_model::{OsCache, OsCpu, OsNode, OsView};

    fn cpu(id: u32, core: i64) -> OsCpu {
        OsCpu {
            id,
            package: 0,
            die: None,
            core,
            cluster: None,
            thread_siblings: vec![],
            core_siblings: vec![],
            node: Some(0),
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            kind: None,
        }
    }

    fn view() -> OsView {
        let l2 = |cpus: Vec<u32>| OsCache {
            level: 2,
            kind: CacheType::Unified,
            size_bytes: Some(2 << 20),
            line_size: Some(64),
            ways: Some(16),
            cpus,
        };
        OsView {
            cpus: vec![cpu(0, 0), cpu(1, 0), cpu(2, 1)],
            offline: vec![3],
            nodes: Some(vec![OsNode {
                id: 0,
                cpus: vec![0, 1, 2, 3],
                distances: vec![10],
                memory_bytes: Some(3 << 30),
            }]),
            caches: vec![l2(vec![0, 1]), l2(vec![2, 3]), l2(vec![3])],
            cpuset: Some(vec![0, 1]),
            ..OsView::default()
        }
    }

    #[test]
    fn per_cpu_caches_and_nodes() {
        let r = OsReport::new(&view(), "/x");
        assert_eq!(r.counts.cores, 2);
        assert_eq!(
            r.counts.caches, 2,
            "the cache of offline CPU 3 alone is left out"
        );
        assert_eq!(r.cpus[2].caches[0].cpus, vec![2]);
        assert_eq!(r.cpus[0].core_cpus, vec![0, 1]);
        assert_eq!(r.disallowed, vec![2]);
        let nodes = r.nodes.as_ref().unwrap();
        assert_eq!(nodes[0].cpus, vec![0, 1, 2]);
        let text = r.text();
        assert!(text.contains("Core 0: CPUs 0-1"), "{text}");
        assert!(
            text.contains("L2 unified ×2 (2 MiB, 64 B lines, 16-way): 0-1 | 2"),
            "{text}"
        );
        assert!(
            text.contains("NUMA node 0: CPUs 0-2, 3 GiB, distances 10"),
            "{text}"
        );
        assert!(text.contains("Offline CPUs: 3"), "{text}");
        assert!(text.contains("disallowed online CPUs: 2"), "{text}");
    }
}
