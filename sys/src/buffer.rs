//! Page-aligned measurement buffers: mapped anonymously, optionally bound to one memory
//! node (`mbind`) and optionally backed by transparent huge pages.
//!
//! The memory, cache and contention probes need buffers whose physical placement they
//! control: a buffer bound to the node being measured, first touched by the thread that
//! will use it, released as soon as the probe is done (libmctop kept contexts × nodes × 2 GB
//! alive; topoprobe keeps one buffer per running thread).

use std::ptr::NonNull;

use crate::memory::max_node;
use crate::NodeSet;

/// Where a buffer's pages come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PagePlacement {
    /// Bind the pages to this memory node (`None`: the kernel's default policy).
    pub node: Option<u32>,
    /// `Some(true)`: ask for transparent huge pages (`MADV_HUGEPAGE`); `Some(false)`:
    /// refuse them (`MADV_NOHUGEPAGE`), so that a probe sees ordinary 4 KiB pages; `None`:
    /// the kernel's default.
    pub huge_pages: Option<bool>,
}

/// Why a buffer could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BufferError {
    /// `mmap` failed.
    #[error("cannot map a {bytes}-byte measurement buffer: {source}")]
    Map {
        /// Requested size.
        bytes: usize,
        /// The OS error.
        source: std::io::Error,
    },
    /// `mbind` failed.
    #[error("cannot bind a measurement buffer to memory node {node}: {source}")]
    Bind {
        /// The node.
        node: u32,
        /// The OS error.
        source: std::io::Error,
    },
    /// A size of zero or one that overflows.
    #[error("a measurement buffer of {0} bytes is not possible")]
    Size(usize),
}

/// An anonymous, page-aligned mapping of `u64` words, unmapped on drop.
#[derive(Debug)]
pub struct Buffer {
    ptr: NonNull<u64>,
    words: usize,
    bytes: usize,
}

// SAFETY: the buffer owns its mapping exclusively; moving it to another thread moves that
// ownership (no thread-local state is involved).
unsafe impl Send for Buffer {}

// SAFETY: `&Buffer` only hands out shared views of the mapping (`&[u64]`, `&[AtomicU64]`);
// writing through it needs `&mut Buffer` or atomics, so sharing it between threads is sound.
unsafe impl Sync for Buffer {}

/// `MPOL_MF_STRICT` | `MPOL_MF_MOVE`: fail if pages cannot be placed, move existing ones.
const MPOL_MF_STRICT_MOVE: libc::c_uint = 1 | 2;

impl Buffer {
    /// Maps `bytes` bytes (rounded up to whole pages), placed as asked. The pages are not
    /// touched: call [`Buffer::touch`] from the thread that will use them.
    ///
    /// # Errors
    ///
    /// [`BufferError::Size`] for a zero size, [`BufferError::Map`] when the mapping fails
    /// (not enough memory), [`BufferError::Bind`] when the node binding is refused (no such
    /// node, or a kernel without NUMA support).
    pub fn new(bytes: usize, placement: PagePlacement) -> Result<Self, BufferError> {
        const PAGE: usize = 4096;
        if bytes == 0 {
            return Err(BufferError::Size(bytes));
        }
        let bytes = bytes
            .checked_add(PAGE - 1)
            .map(|b| b / PAGE * PAGE)
            .ok_or(BufferError::Size(bytes))?;
        // SAFETY: an anonymous private mapping with no address hint; the result is checked
        // against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(BufferError::Map {
                bytes,
                source: std::io::Error::last_os_error(),
            });
        }
        let Some(nn) = NonNull::new(ptr.cast::<u64>()) else {
            return Err(BufferError::Size(bytes));
        };
        let buffer = Self {
            ptr: nn,
            words: bytes / 8,
            bytes,
        };
        if let Some(huge) = placement.huge_pages {
            let advice = if huge {
                libc::MADV_HUGEPAGE
            } else {
                libc::MADV_NOHUGEPAGE
            };
            // SAFETY: the range is exactly the mapping made above. The advice is a hint:
            // its failure (a kernel without THP) changes nothing the probe relies on.
            unsafe {
                libc::madvise(ptr, bytes, advice);
            }
        }
        if let Some(node) = placement.node {
            buffer.bind(node)?;
        }
        Ok(buffer)
    }

    fn bind(&self, node: u32) -> Result<(), BufferError> {
        let mask = NodeSet::from([node]).to_words();
        let max_node = max_node(&mask);
        // SAFETY: mbind reads `mask.len()` words from the mask (max_node bits, rounded as the
        // kernel documents it) and only changes the policy of our own mapping.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                self.ptr.as_ptr().cast::<libc::c_void>(),
                self.bytes as libc::c_ulong,
                crate::memory::MPOL_BIND,
                mask.as_ptr(),
                max_node,
                MPOL_MF_STRICT_MOVE,
            )
        };
        if rc != 0 {
            return Err(BufferError::Bind {
                node,
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// Writes every page once, so that the calling thread's node policy (first touch) and
    /// the binding place them now rather than during the measurement.
    pub fn touch(&mut self) {
        for w in self.words_mut().iter_mut().step_by(512) {
            *w = 0;
        }
    }

    /// Size in bytes (whole pages).
    #[must_use]
    pub fn len_bytes(&self) -> usize {
        self.bytes
    }

    /// The buffer as bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `bytes` readable bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u8>(), self.bytes) }
    }

    /// The buffer as mutable bytes.
    #[must_use]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<u8>(), self.bytes) }
    }

    /// Bytes of this buffer the kernel backs with transparent huge pages now: the
    /// `AnonHugePages` of the mappings that overlap it in `/proc/self/smaps` (a mapping
    /// merged with a neighbour counts the neighbour's huge pages too; the result never
    /// exceeds the buffer's size). Lines are read one at a time, each at most 4 KiB.
    ///
    /// # Errors
    ///
    /// The I/O error when `/proc/self/smaps` cannot be read (no `/proc`), or
    /// [`std::io::ErrorKind::InvalidData`] for a line longer than 4 KiB.
    pub fn huge_page_bytes(&self) -> std::io::Result<u64> {
        use std::io::BufRead;
        let start = self.ptr.as_ptr() as usize;
        let end = start + self.bytes;
        // Read line by line (4 KiB at most each) and not kept; 256 MiB in all at most
        // (about 250 000 mappings).
        let file = topoprobe_files::open(
            std::path::Path::new("/proc/self/smaps"),
            topoprobe_files::Rules::file(256 << 20),
        )?;
        let mut reader = std::io::BufReader::new(file);
        let mut line = String::new();
        let mut inside = false;
        let mut total = 0u64;
        loop {
            line.clear();
            let n = std::io::Read::take(&mut reader, 4097).read_line(&mut line)?;
            if n == 0 {
                break;
            }
            if n > 4096 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "/proc/self/smaps: a line longer than 4 KiB",
                ));
            }
            if let Some(kib) = line.strip_prefix("AnonHugePages:") {
                if inside {
                    let kib: u64 = kib
                        .split_whitespace()
                        .next()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    total = total.saturating_add(kib.saturating_mul(1024));
                }
            } else if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = a < end && b > start;
                    }
                }
            }
        }
        Ok(total.min(self.bytes as u64))
    }

    /// The buffer as words.
    #[must_use]
    pub fn words(&self) -> &[u64] {
        // SAFETY: the mapping is `words` u64s long, readable, page-aligned and owned by self;
        // anonymous pages read as zero until written.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.words) }
    }

    /// The buffer as atomic words, for probes whose threads share the lines (cache-line
    /// transfers between cores).
    #[must_use]
    pub fn atomic_words(&self) -> &[std::sync::atomic::AtomicU64] {
        // SAFETY: `AtomicU64` has the size and alignment of `u64` on every target that has
        // it; the mapping is `words` page-aligned u64s owned by self, and every access
        // through the returned slice is atomic.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.as_ptr().cast::<std::sync::atomic::AtomicU64>(),
                self.words,
            )
        }
    }

    /// The buffer as mutable words.
    #[must_use]
    pub fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `words`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.words) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`; no reference into it outlives
        // `self` (the slices borrow `self`).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast::<libc::c_void>(), self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_touches_and_binds_to_an_online_node() {
        let mut b = Buffer::new(10_000, PagePlacement::default()).unwrap();
        assert_eq!(b.len_bytes(), 12_288);
        b.touch();
        b.words_mut()[1535] = 7;
        assert_eq!(b.words()[1535], 7);
        let node = crate::memory::online_nodes().iter().next().unwrap_or(0);
        let bound = Buffer::new(
            1 << 20,
            PagePlacement {
                node: Some(node),
                huge_pages: Some(true),
            },
        );
        // A kernel without NUMA support refuses mbind; that is reported, not hidden.
        if let Err(e) = &bound {
            assert!(matches!(e, BufferError::Bind { .. }), "{e}");
        }
    }

    #[test]
    fn huge_pages_are_counted_within_the_buffer() {
        let mut small = Buffer::new(
            8 << 20,
            PagePlacement {
                node: None,
                huge_pages: Some(false),
            },
        )
        .unwrap();
        small.touch();
        // Refused huge pages: none, wherever /proc is readable.
        if let Ok(b) = small.huge_page_bytes() {
            assert_eq!(b, 0);
        }
        let mut huge = Buffer::new(
            8 << 20,
            PagePlacement {
                node: None,
                huge_pages: Some(true),
            },
        )
        .unwrap();
        huge.touch();
        if let Ok(b) = huge.huge_page_bytes() {
            assert!(b <= 8 << 20 && b % (4096) == 0, "{b}");
        }
    }

    #[test]
    fn refuses_impossible_sizes_and_nodes() {
        assert!(matches!(
            Buffer::new(0, PagePlacement::default()),
            Err(BufferError::Size(0))
        ));
        let e = Buffer::new(
            4096,
            PagePlacement {
                node: Some(1000),
                huge_pages: None,
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("node 1000"), "{e}");
    }
}
