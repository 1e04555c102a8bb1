//! Memory policies (Linux `set_mempolicy`) and the kernel's memory nodes.

use std::io;

use crate::NodeSet;

/// `MPOL_BIND` of `<linux/mempolicy.h>`.
pub(crate) const MPOL_BIND: libc::c_int = 2;
/// `MPOL_INTERLEAVE` of `<linux/mempolicy.h>`.
const MPOL_INTERLEAVE: libc::c_int = 3;
/// `MPOL_LOCAL` of `<linux/mempolicy.h>`.
const MPOL_LOCAL: libc::c_int = 4;

/// Where a process's memory goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// On the node of the CPU that first touches it (`numactl --localalloc`).
    Local,
    /// Interleaved page by page over these nodes (`numactl --interleave`).
    Interleave(NodeSet),
    /// Only on these nodes (`numactl --membind`).
    Bind(NodeSet),
}

/// Bytes from which every block the C library's allocator hands out is a mapping of its
/// own (glibc's `M_MMAP_THRESHOLD`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const OWN_MAPPING_FROM: libc::c_int = 4 << 20;

/// Has the C library's allocator give every block of 4 MiB or more back to the kernel as
/// soon as it is freed, so that the process's resident memory is what it holds, not what
/// it once held. By default glibc raises that threshold after each large free (up to
/// 32 MiB), after which the large temporary tables of the inference are kept in its heap
/// once freed: tens of MiB resident beyond what is held at 4096 contexts. Does nothing
/// with another C library. Call it at the start of `main`, before threads start.
pub fn return_large_blocks_when_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a tunable of glibc's allocator (its own lock guards it);
    // it touches no memory of ours. Its result (0 when refused) leaves the default in place,
    // which is correct, only larger.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_MAPPING_FROM);
    }
}

/// A memory-policy call the kernel refused.
#[derive(Debug, thiserror::Error)]
#[error("{call}: {source}")]
pub struct MemPolicyError {
    /// The call and its arguments.
    pub call: String,
    /// What the kernel said.
    pub source: io::Error,
}

/// The `maxnode` argument of the memory-policy calls for a mask of these words.
pub(crate) fn max_node(mask: &[u64]) -> libc::c_ulong {
    (std::mem::size_of_val(mask) * 8 + 1) as libc::c_ulong
}

/// Sets the calling thread's memory policy; threads and processes it creates afterwards
/// inherit it (across `exec` too).
///
/// # Errors
///
/// [`MemPolicyError`] when the kernel refuses (no NUMA support, a node that does not
/// exist or has no memory) or the node set is empty.
pub fn set_policy(policy: &MemPolicy) -> Result<(), MemPolicyError> {
    let call = match policy {
        MemPolicy::Local => "set_mempolicy(local)".to_string(),
        MemPolicy::Interleave(n) => format!("set_mempolicy(interleave over nodes {n})"),
        MemPolicy::Bind(n) => format!("set_mempolicy(bind to nodes {n})"),
    };
    let (mode, nodes) = match policy {
        MemPolicy::Local => (MPOL_LOCAL, None),
        MemPolicy::Interleave(n) => (MPOL_INTERLEAVE, Some(n)),
        MemPolicy::Bind(n) => (MPOL_BIND, Some(n)),
    };
    if nodes.is_some_and(NodeSet::is_empty) {
        return Err(MemPolicyError {
            call,
            source: io::Error::new(io::ErrorKind::InvalidInput, "no node given"),
        });
    }
    let mask = nodes.map(NodeSet::to_words).unwrap_or_default();
    let (ptr, maxnode) = if mask.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (mask.as_ptr(), max_node(&mask))
    };
    // SAFETY: set_mempolicy reads at most `maxnode` bits from `ptr`, which points into the
    // live `mask` vector of that many bits (or is null with maxnode 0 for MPOL_LOCAL).
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    if rc == 0 {
        Ok(())
    } else {
        Err(MemPolicyError {
            call,
            source: io::Error::last_os_error(),
        })
    }
}

/// The memory nodes the kernel has, from `/sys/devices/system/node/online`, or node 0
/// alone when the kernel has no NUMA support.
#[must_use]
pub fn online_nodes() -> NodeSet {
    crate::proc::read_small(std::path::Path::new("/sys/devices/system/node/online"))
        .ok()
        .and_then(|s| NodeSet::parse_list(s.trim()).ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| NodeSet::from([0]))
}

/// The memory nodes (from `/sys/devices/system/node/node<N>/cpulist`) that hold at least one
/// of `cpus`, ascending; `None` when the kernel says nothing about nodes or none holds them.
#[must_use]
pub fn nodes_of_cpus(cpus: &[u32]) -> Option<Vec<u32>> {
    let dir = std::fs::read_dir("/sys/devices/system/node").ok()?;
    let mut nodes: Vec<u32> = dir
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name();
            let id: u32 = name.to_str()?.strip_prefix("node")?.parse().ok()?;
            let list = crate::proc::read_small(&e.path().join("cpulist")).ok()?;
            let set = crate::CpuSet::parse_list(list.trim()).ok()?;
            cpus.iter().any(|&c| set.contains(c)).then_some(id)
        })
        .collect();
    nodes.sort_unstable();
    (!nodes.is_empty()).then_some(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_node_sets_are_refused_and_local_works() {
        let e = set_policy(&MemPolicy::Interleave(NodeSet::new())).unwrap_err();
        assert!(e.to_string().contains("interleave"), "{e}");
        std::thread::spawn(|| {
            // A kernel without NUMA support refuses even `local`; then it says so.
            if let Err(e) = set_policy(&MemPolicy::Local) {
                assert!(e.to_string().contains("local"), "{e}");
            }
        })
        .join()
        .expect("thread");
        assert!(online_nodes().contains(0) || !online_nodes().is_empty());
        // CPU 0 is on a node whenever the kernel reports nodes.
        if std::path::Path::new("/sys/devices/system/node/node0").exists() {
            assert!(nodes_of_cpus(&[0]).is_some_and(|n| !n.is_empty()));
        }
        assert_eq!(nodes_of_cpus(&[]), None);
    }

    #[test]
    fn max_node_counts_every_bit() {
        assert_eq!(max_node(&[0]), 65);
        assert_eq!(max_node(&[0, 0]), 129);
    }
}
