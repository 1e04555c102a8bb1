//! Memory policies (Linux `set_mempolicy`, `mbind`) and node-local allocation.

use std::io;

use topoprobe_measure::buffer::{Buffer, BufferError, Placement};

use crate::error::PlaceError;

/// Linux memory-policy modes (`linux/mempolicy.h`).
const MPOL_BIND: libc::c_int = 2;
const MPOL_INTERLEAVE: libc::c_int = 3;
const MPOL_LOCAL: libc::c_int = 4;

/// Where a process's memory goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemPolicy {
    /// On the node of the CPU that first touches it (`numactl --localalloc`).
    Local,
    /// Interleaved page by page over these nodes (`numactl --interleave`).
    Interleave(Vec<u32>),
    /// Only on these nodes (`numactl --membind`).
    Bind(Vec<u32>),
}

/// A node mask of `u64` words for the given node numbers, and the `maxnode` argument.
fn node_mask(nodes: &[u32]) -> (Vec<u64>, libc::c_ulong) {
    let highest = nodes.iter().copied().max().unwrap_or(0) as usize;
    let mut mask = vec![0_u64; highest / 64 + 1];
    for &n in nodes {
        mask[n as usize / 64] |= 1 << (n % 64);
    }
    let maxnode = (mask.len() * 64 + 1) as libc::c_ulong;
    (mask, maxnode)
}

/// Sets the calling thread's memory policy; threads and processes it creates afterwards
/// inherit it (across `exec` too).
///
/// # Errors
///
/// [`PlaceError::Memory`] when the kernel refuses (no NUMA support, a node that does not
/// exist or has no memory, an empty node list).
pub fn set_policy(policy: &MemPolicy) -> Result<(), PlaceError> {
    let (mode, nodes): (libc::c_int, &[u32]) = match policy {
        MemPolicy::Local => (MPOL_LOCAL, &[]),
        MemPolicy::Interleave(n) => (MPOL_INTERLEAVE, n),
        MemPolicy::Bind(n) => (MPOL_BIND, n),
    };
    let call = format!("set_mempolicy({policy:?})");
    if mode != MPOL_LOCAL && nodes.is_empty() {
        return Err(PlaceError::Memory {
            call,
            source: io::Error::from(io::ErrorKind::InvalidInput),
        });
    }
    let (mask, maxnode) = node_mask(nodes);
    let (ptr, maxnode) = if mode == MPOL_LOCAL {
        (std::ptr::null(), 0)
    } else {
        (mask.as_ptr(), maxnode)
    };
    // SAFETY: set_mempolicy reads at most `maxnode` bits from `ptr`, which points into the
    // live `mask` vector of that many bits (or is null with maxnode 0 for MPOL_LOCAL).
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, maxnode) };
    if rc == 0 {
        Ok(())
    } else {
        Err(PlaceError::Memory {
            call,
            source: io::Error::last_os_error(),
        })
    }
}

/// Memory mapped on one node (`mmap` + `mbind`, through the measurement crate's
/// [`Buffer`]), unmapped on drop.
#[derive(Debug)]
pub struct NodeBuffer {
    buf: Buffer,
    len: usize,
}

impl NodeBuffer {
    /// Maps `len` bytes (at least one page) of zeroed memory bound to `node`, or on the
    /// first-touching CPU's node when `node` is `None`.
    ///
    /// # Errors
    ///
    /// [`PlaceError::Memory`] when the mapping or the binding fails.
    pub fn new(len: usize, node: Option<u32>) -> Result<Self, PlaceError> {
        let len = len.max(1);
        let buf = Buffer::new(
            len,
            Placement {
                node,
                huge_pages: None,
            },
        )
        .map_err(|e| match e {
            BufferError::Map { bytes, source } => PlaceError::Memory {
                call: format!("mmap({bytes} bytes)"),
                source,
            },
            BufferError::Bind { node, source } => PlaceError::Memory {
                call: format!("mbind({len} bytes, node {node})"),
                source,
            },
            BufferError::Size(bytes) => PlaceError::Memory {
                call: format!("mmap({bytes} bytes)"),
                source: io::Error::from(io::ErrorKind::InvalidInput),
            },
        })?;
        Ok(Self { buf, len })
    }

    /// The memory.
    #[must_use]
    pub fn as_slice(&self) -> &[u8] {
        &self.buf.bytes()[..self.len]
    }

    /// The memory, writable.
    #[must_use]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf.bytes_mut()[..self.len]
    }

    /// Start address (for C callers).
    #[must_use]
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.bytes_mut().as_mut_ptr()
    }

    /// Length in bytes.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never: at least one byte is mapped).
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        false
    }
}
