//! The temporary files of [`replace`](crate::replace): their names, the ones a
//! write has in progress (so that a signal handler can remove them), and the cleaning of
//! the ones a dead process left behind.
//!
//! A temporary file is named `.topoprobe-<pid>-<random>.tmp` in the target's directory.
//! While it is written its path is in [`in_progress`]: a handler of the terminating
//! signals (`topoprobe_sys::temps`) unlinks those paths before the process dies. A
//! process killed outright (`SIGKILL`, a power cut) cannot clean up: the next write into
//! the same directory removes the temporary files of processes that no longer exist.

use std::ffi::{c_char, CString};
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, SystemTime};

/// How many writes may be in progress at once with their temporary file known to the
/// signal handler (further ones are still written, and cleaned by a later write).
pub const SLOTS: usize = 64;

/// The paths of the temporary files being written, as NUL-terminated strings; null slots
/// are free. A path once stored is never freed (it stays valid for the life of the
/// process, so that a signal handler may read it at any time).
static IN_PROGRESS: [AtomicPtr<c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// The slots of the temporary files being written: each non-null pointer is a
/// NUL-terminated path that stays valid for the life of the process. For a signal
/// handler, which may read them and unlink the files.
#[must_use]
pub fn in_progress() -> &'static [AtomicPtr<c_char>; SLOTS] {
    &IN_PROGRESS
}

/// The prefix of this process's temporary files: `.topoprobe-<pid>-`.
pub(crate) fn prefix() -> String {
    format!(".topoprobe-{}-", std::process::id())
}

/// A temporary file's path held in [`in_progress`] until dropped.
#[derive(Debug)]
pub(crate) struct Registered(Option<usize>);

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            // The string is left allocated: a handler may be reading it.
            IN_PROGRESS[i].store(std::ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

/// Puts `path` in a free slot of [`in_progress`] (none free: it is not registered).
pub(crate) fn register(path: &Path) -> Registered {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return Registered(None);
    };
    let raw = c.into_raw();
    for (i, slot) in IN_PROGRESS.iter().enumerate() {
        if slot
            .compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            return Registered(Some(i));
        }
    }
    // No slot was free (64 writes at once): the path is left allocated, as the stored
    // ones are, and this file is cleaned by a later write if a signal leaves it behind.
    Registered(None)
}

/// Most directory entries looked at for stale temporary files on one write.
const MAX_SCANNED: usize = 4096;
/// A temporary file of a dead process is removed once unchanged this long (a live writer
/// in another PID namespace, whose process id means nothing here, keeps its file changing).
const STALE_AFTER: Duration = Duration::from_secs(10);
/// A temporary file with no process id in its name (written by an older version) is
/// removed once unchanged this long.
const OLD_STYLE_STALE_AFTER: Duration = Duration::from_secs(3600);

/// Removes the temporary files in `dir` that processes which no longer exist left there
/// (see the [module docs](self)). Best effort: what cannot be read or removed is left.
pub(crate) fn clean_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.take(MAX_SCANNED).flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(middle) = name
            .strip_prefix(".topoprobe-")
            .and_then(|n| n.strip_suffix(".tmp"))
        else {
            continue;
        };
        let after = match middle.split_once('-') {
            Some((pid, _)) if pid.bytes().all(|b| b.is_ascii_digit()) && !pid.is_empty() => {
                if Path::new("/proc").join(pid).exists() {
                    continue;
                }
                STALE_AFTER
            }
            _ => OLD_STYLE_STALE_AFTER,
        };
        let Ok(meta) = entry.metadata() else { continue };
        let unchanged = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if meta.is_file() && unchanged >= after {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
