//! Application heartbeats in shared memory: a program counts units of work
//! ([`beat`]) and may declare phases ([`phase`]); a tuner on the same machine reads both
//! ([`HeartbeatReader`]) to score how fast the program progresses.
//!
//! The page is a file named by the environment variable [`HEARTBEAT_VAR`]
//! (`TOPOPROBE_HEARTBEAT`), mapped shared by both sides. The first [`beat`] of a
//! program opens and maps it (a few system calls, once); every later beat is one atomic
//! add in memory, with no system call. Without the variable [`beat`] does nothing but
//! one load and a branch.
//!
//! Layout (one page, native endianness): a magic number at offset 0, the beat count at
//! offset 64 and the phase at offset 128, each a 64-bit atomic on its own cache line.

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The environment variable that names the heartbeat file of a program.
pub const HEARTBEAT_VAR: &str = "TOPOPROBE_HEARTBEAT";
/// Size of the heartbeat file and of its mapping, in bytes.
pub const PAGE_BYTES: usize = 4096;
/// The magic number at offset 0 (`TPHBEAT1` in ASCII, little-endian).
pub const MAGIC: u64 = u64::from_le_bytes(*b"TPHBEAT1");
/// [`MAGIC`] as it lies in the file (native endianness, as the page is mapped).
const MAGIC_BYTES: [u8; 8] = MAGIC.to_ne_bytes();
/// Offset of the beat count.
const BEATS_OFFSET: usize = 64;
/// Offset of the phase.
const PHASE_OFFSET: usize = 128;

/// Why a heartbeat file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum HeartbeatError {
    /// The file could not be opened, sized or mapped.
    #[error("heartbeat file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The file is not a heartbeat page.
    #[error("heartbeat file {}: {what}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
}

/// A shared mapping of one heartbeat page.
#[derive(Debug)]
struct Page {
    base: *mut u8,
}

// SAFETY: the page is only accessed through atomics at fixed offsets inside a mapping
// that lives as long as the `Page`; sharing or sending the pointer is sound.
unsafe impl Send for Page {}
// SAFETY: as above: every access is atomic.
unsafe impl Sync for Page {}

impl Page {
    /// Opens (creating when missing) and maps the page at `path`, writing the magic
    /// number into a new page. The file is checked before anything in it changes (see
    /// [`topoprobe_files::open_fixed`]): a regular file, not a symbolic link, empty (a new
    /// page) or of the page's size with its magic number; any other file is left byte
    /// for byte.
    fn open(path: &Path) -> Result<Self, HeartbeatError> {
        let form = topoprobe_files::Fixed {
            name: "a heartbeat page",
            len: PAGE_BYTES as u64,
            magic: &MAGIC_BYTES,
        };
        let file = topoprobe_files::open_fixed(path, &form, true).map_err(|e| match e {
            topoprobe_files::FileError::Io { path, source } => HeartbeatError::Io { path, source },
            other => HeartbeatError::Invalid {
                path: other.path().to_path_buf(),
                what: other.message(),
            },
        })?;
        // The mapping stays valid once the file is closed.
        Self::map_fd(file.as_raw_fd(), path)
    }

    /// Maps an open heartbeat file of [`PAGE_BYTES`], checked by [`Page::open`].
    fn map_fd(fd: libc::c_int, path: &Path) -> Result<Self, HeartbeatError> {
        let io = |source: io::Error| HeartbeatError::Io {
            path: path.to_path_buf(),
            source,
        };
        // SAFETY: maps PAGE_BYTES of a file at least that long, shared, readable and
        // writable; the result is checked against MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io(io::Error::last_os_error()));
        }
        let page = Self { base: base.cast() };
        if let Err(found) =
            page.word(0)
                .compare_exchange(0, MAGIC, Ordering::SeqCst, Ordering::SeqCst)
        {
            if found != MAGIC {
                return Err(HeartbeatError::Invalid {
                    path: path.to_path_buf(),
                    what: format!("magic number {found:#x}, not a heartbeat page"),
                });
            }
        }
        Ok(page)
    }

    /// The atomic word at `offset` (a multiple of 8 inside the page).
    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= PAGE_BYTES);
        // SAFETY: the mapping is PAGE_BYTES long and page-aligned, so `base + offset` is
        // in bounds and 8-byte aligned; the memory is only accessed atomically and lives
        // as long as `self`.
        unsafe { &*self.base.add(offset).cast::<AtomicU64>() }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: `base` is a mapping of PAGE_BYTES made by `open` and not used after this.
        unsafe {
            libc::munmap(self.base.cast(), PAGE_BYTES);
        }
    }
}

/// This program's heartbeat page, mapped on first use (`None`: no variable, or the file
/// cannot be used; said once on standard error).
fn own_page() -> Option<&'static Page> {
    static PAGE: OnceLock<Option<Page>> = OnceLock::new();
    PAGE.get_or_init(|| {
        let path = std::env::var_os(HEARTBEAT_VAR).filter(|p| !p.is_empty())?;
        match Page::open(Path::new(&path)) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("topoprobe: heartbeats off: {e}");
                None
            }
        }
    })
    .as_ref()
}

/// Counts `n` units of work done by this program (any thread). No system call after the
/// first one; nothing when [`HEARTBEAT_VAR`] is not set.
pub fn beat(n: u64) {
    if let Some(p) = own_page() {
        p.word(BEATS_OFFSET).fetch_add(n, Ordering::Relaxed);
    }
}

/// Declares that the program entered phase `id` (a tuner restarts its search when the
/// phase changes). Nothing when [`HEARTBEAT_VAR`] is not set.
pub fn phase(id: u64) {
    if let Some(p) = own_page() {
        p.word(PHASE_OFFSET).store(id, Ordering::Release);
    }
}

/// Whether this program publishes heartbeats ([`HEARTBEAT_VAR`] names a usable file).
#[must_use]
pub fn enabled() -> bool {
    own_page().is_some()
}

/// What a heartbeat page holds at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heartbeats {
    /// Units of work counted since the page was made.
    pub beats: u64,
    /// The phase last declared (0 before any).
    pub phase: u64,
}

/// The tuner's side of a heartbeat page.
#[derive(Debug)]
pub struct HeartbeatReader {
    page: Page,
    path: PathBuf,
}

impl HeartbeatReader {
    /// Opens the page at `path`, creating it when missing (a program that has not beaten
    /// yet reads as zero).
    ///
    /// # Errors
    ///
    /// [`HeartbeatError::Io`] when the file cannot be opened, sized or mapped;
    /// [`HeartbeatError::Invalid`] when it is not a heartbeat page.
    pub fn open(path: &Path) -> Result<Self, HeartbeatError> {
        Ok(Self {
            page: Page::open(path)?,
            path: path.to_path_buf(),
        })
    }

    /// The current count and phase.
    #[must_use]
    pub fn read(&self) -> Heartbeats {
        Heartbeats {
            beats: self.page.word(BEATS_OFFSET).load(Ordering::Relaxed),
            phase: self.page.word(PHASE_OFFSET).load(Ordering::Acquire),
        }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tp-hb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        dir.join(name)
    }

    #[test]
    fn two_mappings_share_the_counts() {
        let path = tmp("shared");
        let _ = std::fs::remove_file(&path);
        let reader = HeartbeatReader::open(&path).expect("reader");
        assert_eq!(reader.read(), Heartbeats::default());
        let writer = Page::open(&path).expect("writer");
        writer.word(BEATS_OFFSET).fetch_add(5, Ordering::Relaxed);
        writer.word(PHASE_OFFSET).store(2, Ordering::Release);
        assert_eq!(reader.read(), Heartbeats { beats: 5, phase: 2 });
        assert_eq!(
            std::fs::metadata(&path).expect("meta").len(),
            PAGE_BYTES as u64
        );
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn other_files_are_refused() {
        let path = tmp("not-a-page");
        std::fs::write(&path, b"hello, this is text").expect("write");
        let e = HeartbeatReader::open(&path).unwrap_err();
        assert!(e.to_string().contains("not a heartbeat page"), "{e}");
        // Left byte for byte: not grown to a page before the check.
        assert_eq!(std::fs::read(&path).expect("read"), b"hello, this is text");
        let mut other = vec![0_u8; PAGE_BYTES];
        other[..8].copy_from_slice(b"NOTAPAGE");
        std::fs::write(&path, &other).expect("write");
        let e = HeartbeatReader::open(&path).unwrap_err();
        assert!(e.to_string().contains("magic number"), "{e}");
        assert_eq!(std::fs::read(&path).expect("read"), other);
        std::fs::write(&path, vec![1_u8; PAGE_BYTES + 1]).expect("write");
        let e = HeartbeatReader::open(&path).unwrap_err();
        assert!(e.to_string().contains("more than a heartbeat page"), "{e}");
        std::fs::remove_file(&path).ok();
        let dir = tmp("");
        assert!(HeartbeatReader::open(&dir).is_err());
    }
}
