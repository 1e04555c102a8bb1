//! A builder of small sysfs/procfs trees in a temporary directory, for tests of the OS
//! view: each call writes the files the kernel would, and the tree can be read by
//! `topoprobe_measure::os::read_os_view` and by hwloc (`lstopo-no-graphics --input`).

#![allow(dead_code)]

use std::fs;
use std::path::Path;

/// A sysfs/procfs tree being written under a temporary directory.
pub struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    /// An empty tree with an x86 `/proc/cpuinfo` of `cpus` processors of `vendor` and
    /// `family`.
    #[must_use]
    pub fn x86(cpus: u32, vendor: &str, family: u32) -> Self {
        let t = Self {
            dir: tempfile::tempdir().expect("temporary directory"),
        };
        let mut info = String::new();
        for c in 0..cpus {
            info.push_str(&format!(
                "processor\t: {c}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: 1\n\
                 model name\t: Test CPU\n\n"
            ));
        }
        t.file("proc/cpuinfo", &info);
        // What hwloc-gather-topology records of the machine (hwloc reads its quirks by it).
        t.file("proc/hwloc-nofile-info", "Architecture: x86_64\n");
        t
    }

    /// The root of the tree.
    #[must_use]
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `content` to `rel` (folders made as needed).
    pub fn file(&self, rel: &str, content: &str) -> &Self {
        let p = self.root().join(rel);
        fs::create_dir_all(p.parent().expect("a parent")).expect("folders");
        fs::write(p, content).expect("a file");
        self
    }

    /// Removes `rel`, a file.
    pub fn remove(&self, rel: &str) -> &Self {
        fs::remove_file(self.root().join(rel)).expect("removed");
        self
    }

    /// The `online` and `present` lists of the CPU folder.
    pub fn online(&self, list: &str) -> &Self {
        self.file("sys/devices/system/cpu/online", &format!("{list}\n"));
        self.file("sys/devices/system/cpu/present", &format!("{list}\n"))
    }

    /// CPU `id`: `physical_package_id`, `core_id` (each left out when `None`), and the
    /// sibling lists as masks (`thread_siblings`, `core_siblings`) given as CPU lists.
    pub fn cpu(
        &self,
        id: u32,
        package: Option<i64>,
        core: Option<i64>,
        threads: &str,
        package_cpus: &str,
    ) -> &Self {
        let t = format!("sys/devices/system/cpu/cpu{id}/topology");
        if let Some(p) = package {
            self.file(&format!("{t}/physical_package_id"), &format!("{p}\n"));
        }
        if let Some(c) = core {
            self.file(&format!("{t}/core_id"), &format!("{c}\n"));
        }
        self.file(&format!("{t}/thread_siblings"), &mask(threads));
        self.file(
            &format!("{t}/thread_siblings_list"),
            &format!("{threads}\n"),
        );
        self.file(&format!("{t}/core_siblings"), &mask(package_cpus));
        self.file(
            &format!("{t}/core_siblings_list"),
            &format!("{package_cpus}\n"),
        )
    }

    /// Cache `index` of CPU `cpu`: level, type (`Data`, `Instruction`, `Unified`), size
    /// in KiB and the CPUs sharing it (a list; `None` writes no `shared_cpu_map`).
    pub fn cache(
        &self,
        cpu: u32,
        index: u32,
        level: u8,
        kind: &str,
        kib: u32,
        shared: Option<&str>,
    ) -> &Self {
        let d = format!("sys/devices/system/cpu/cpu{cpu}/cache/index{index}");
        self.file(&format!("{d}/level"), &format!("{level}\n"));
        self.file(&format!("{d}/type"), &format!("{kind}\n"));
        self.file(&format!("{d}/size"), &format!("{kib}K\n"));
        self.file(&format!("{d}/coherency_line_size"), "64\n");
        if let Some(s) = shared {
            self.file(&format!("{d}/shared_cpu_map"), &mask(s));
            self.file(&format!("{d}/shared_cpu_list"), &format!("{s}\n"));
        }
        self
    }

    /// NUMA node `id` with these CPUs (a list) and `kib` KiB of memory.
    pub fn node(&self, id: u32, cpus: &str, kib: u64) -> &Self {
        let d = format!("sys/devices/system/node/node{id}");
        self.file(&format!("{d}/cpumap"), &mask(cpus));
        self.file(&format!("{d}/cpulist"), &format!("{cpus}\n"));
        self.file(
            &format!("{d}/meminfo"),
            &format!("Node {id} MemTotal:       {kib} kB\nNode {id} MemFree: 1 kB\n"),
        )
    }

    /// The distance table of nodes `0..rows.len()`.
    pub fn distances(&self, rows: &[&str]) -> &Self {
        for (i, r) in rows.iter().enumerate() {
            self.file(
                &format!("sys/devices/system/node/node{i}/distance"),
                &format!("{r}\n"),
            );
        }
        self
    }
}

/// A CPU list (`0-3,8`) as a sysfs mask (`00000000,0000010f`).
#[must_use]
pub fn mask(list: &str) -> String {
    let mut words = vec![0u32; 2];
    for part in list.split(',').filter(|p| !p.trim().is_empty()) {
        let (a, b) = match part.trim().split_once('-') {
            Some((a, b)) => (a.parse::<u32>().unwrap(), b.parse::<u32>().unwrap()),
            None => {
                let a = part.trim().parse::<u32>().unwrap();
                (a, a)
            }
        };
        for c in a..=b {
            let w = (c / 32) as usize;
            if w >= words.len() {
                words.resize(w + 1, 0);
            }
            words[w] |= 1 << (c % 32);
        }
    }
    let s: Vec<String> = words.iter().rev().map(|w| format!("{w:08x}")).collect();
    format!("{}\n", s.join(","))
}
