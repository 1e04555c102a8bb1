//! What the `.mct` reader and writer share: the content of a file, and the names and order
//! libmctop gives its sections.

use crate::matrix::LatencyMatrix;
use crate::os_view::CacheType;
use crate::sections::{
    Access, CacheLevel, CacheSection, MemorySection, PowerScope, PowerSection, Threads,
};

/// The content of a libmctop `.mct` file.
#[derive(Debug, Clone, PartialEq)]
pub struct MctFile {
    /// The host name of the header (`#<host>`).
    pub host: String,
    /// Number of hardware contexts (`#HWCs`).
    pub contexts: usize,
    /// Number of memory nodes (`#Nodes`; libmctop uses one node per socket).
    pub nodes: usize,
    /// Whether the machine has SMT (`SMT 1`).
    pub smt: bool,
    /// Context-to-context latencies (libmctop writes normalized latencies, in cycles);
    /// `None` on the diagonal.
    pub latency: LatencyMatrix,
    /// Memory latencies and bandwidths, when the file has a `#Mem_…` section. Entries that
    /// libmctop wrote as 0 (not measured) are left out.
    pub memory: Option<MemorySection>,
    /// Cache levels, when the file has a `#Cache_levels` section.
    pub caches: Option<CacheSection>,
    /// Power figures, when the file has a `#Power_measurements` section.
    pub power: Option<PowerSection>,
}

/// The libmctop sections with bandwidth data: name, access, threads.
pub(super) const BANDWIDTH_SECTIONS: [(&str, Access, Threads); 4] = [
    ("#Mem_bw-READ", Access::Read, Threads::AllContexts),
    ("#Mem_bw1-READ", Access::Read, Threads::Single),
    ("#Mem_bw-WRITE", Access::Write, Threads::AllContexts),
    ("#Mem_bw1-WRITE", Access::Write, Threads::Single),
];

/// libmctop's line number of a cache level: 0 for the L1 instruction cache, 1 for L1
/// data (or unified), the level number above.
pub(super) fn mct_cache_line(l: &CacheLevel) -> u32 {
    match (l.level, l.kind) {
        (1, Some(CacheType::Instruction)) => 0,
        (n, _) => n,
    }
}

/// Sockets in id order, then the total.
pub(super) fn scope_key(s: &PowerScope) -> (usize, usize) {
    match s {
        PowerScope::Socket(id) => (0, id.0),
        PowerScope::Total => (1, 0),
    }
}
