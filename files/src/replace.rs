//! Replacing a file where the shell's `>` could write it: atomically for a regular file,
//! in place for a FIFO, terminal or device, never over a file this user may not write.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{FileError, STREAM_WAIT};

/// How many symbolic links are followed before giving up (Linux's limit).
const MAX_LINKS: usize = 40;

/// Writes `bytes` to `path`, replacing what is there, where the shell's `>` could.
///
/// - A regular file (or a new one) is written **atomically**: to a temporary file
///   `.topoprobe-<pid>-<random>.tmp` in the target's directory, flushed and synced, then
///   renamed over the target, so that readers see the old file or the complete new one.
///   A symbolic link is followed and kept. A replaced file keeps its permissions and,
///   where this process may set them, its owner and group; a new file gets `0o666` less
///   the umask. The directory must exist (see [`create_parent`]).
/// - An existing regular file this user may not write (`faccessat(W_OK)` with the
///   effective ids: a user's own mode-0444 file, a file on a read-only file system) is
///   **refused** and left as it is, as `>` would fail on it. Root, whom `>` lets write any
///   file, replaces it.
/// - A file this user may write in a directory it may not write is written **in place**
///   (truncated, as `>` does), since no temporary file can be made beside it.
/// - A FIFO, terminal, pipe or device (`/dev/stdout`, `/dev/null`) is written **in place**,
///   never replaced by a rename; a FIFO that nothing reads within [`STREAM_WAIT`] is an
///   error rather than a wait forever. A directory or socket is refused.
///
/// The temporary file is listed in [`temps::in_progress`](crate::temps::in_progress)
/// while it is written, for a signal handler to remove; the temporary files of processes
/// that no longer exist are removed from the directory first (see [`temps`](crate::temps)).
///
/// # Errors
///
/// [`FileError::Refused`] (kind `PermissionDenied`) for a file this user may not write,
/// (kind `TimedOut`) for a FIFO nothing reads; [`FileError::Io`] naming the directory when
/// it does not exist, and naming `path` when a file cannot be created, written, synced or
/// renamed; [`FileError::NotRegular`] for a directory or socket.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    replace_with(path, |w| w.write_all(bytes))
}

/// [`replace`], the content written by `write` as it goes (a large result need not be
/// held in memory whole).
///
/// # Errors
///
/// As [`replace`]; an error `write` returns, naming `path` (a regular target is then
/// left as it was).
pub fn replace_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), FileError> {
    match place(path)? {
        Place::Special => write_in_place(path, false, write),
        Place::Truncate(target) => write_in_place(&target, true, write),
        Place::Rename(target) => write_renamed(path, &target, write),
    }
}

/// Checks, before work whose result goes there, that [`replace`] may write `path`: its
/// directory (after following links) exists, a regular file there is one this user may
/// write, and it is not a directory or socket. A FIFO is not waited for here.
///
/// # Errors
///
/// As [`replace`], for what can be known without writing.
pub fn check_replace(path: &Path) -> Result<(), FileError> {
    place(path).map(|_| ())
}

/// Whether this user may write the existing file `path` (`faccessat(W_OK)`, effective
/// ids); `Ok(false)` with the OS's error kind folded in for "no".
///
/// # Errors
///
/// [`FileError::Io`] when the OS cannot tell (the path cannot be looked up).
pub fn may_replace(path: &Path) -> Result<bool, FileError> {
    match access_w(path) {
        Ok(()) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(FileError::io(path, e)),
    }
}

/// Creates the missing directories above `path`, for writers that own their place (the
/// default place of this machine's description, a cache).
///
/// # Errors
///
/// [`FileError::Io`] naming the directory when it cannot be created.
pub fn create_parent(path: &Path) -> Result<(), FileError> {
    let dir = parent(path);
    std::fs::create_dir_all(dir).map_err(|e| FileError::io(dir, e))
}

/// How a target is written.
enum Place {
    /// Not a regular file: written in place, opened by the path given (the kernel
    /// follows `/dev/stdout` -> `/proc/self/fd/1` -> a pipe, whose link text is no path).
    Special,
    /// A regular file this user may write, in a directory it may not: truncated and
    /// written in place, as `>` would.
    Truncate(PathBuf),
    /// A regular file, or none yet: written beside and renamed over.
    Rename(PathBuf),
}

/// Where and how `path` is written, after the rules are checked.
fn place(path: &Path) -> Result<Place, FileError> {
    if let Ok(m) = std::fs::metadata(path) {
        let t = m.file_type();
        if t.is_dir() || t.is_socket() {
            return Err(FileError::NotRegular {
                path: path.to_path_buf(),
                what: crate::kind_of(t),
                expected: "a file to write",
            });
        }
        if !m.is_file() {
            return Ok(Place::Special);
        }
    }
    let target = follow_links(path)?;
    let dir = parent(&target);
    existing_directory(dir)?;
    let exists = std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_file());
    if !exists {
        return Ok(Place::Rename(target));
    }
    if !may_replace(&target)? {
        let mode = std::fs::metadata(&target).map_or(0, |m| {
            use std::os::unix::fs::PermissionsExt;
            m.permissions().mode() & 0o7777
        });
        return Err(FileError::refused(
            path,
            io::ErrorKind::PermissionDenied,
            format!(
                "permission denied: this user may not write it (mode {mode:04o}); topoprobe \
                 replaces a file only where the shell's `>` could, and leaves it as it is"
            ),
        ));
    }
    if access_w(dir).is_err() {
        return Ok(Place::Truncate(target));
    }
    Ok(Place::Rename(target))
}

/// `faccessat(path, W_OK, AT_EACCESS)`: whether the effective user may write `path`.
fn access_w(path: &Path) -> io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call; faccessat only reads
    // it and touches no memory of this process.
    let r = unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::W_OK, libc::AT_EACCESS) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes the new content beside `target` and renames it over.
fn write_renamed(
    path: &Path,
    target: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), FileError> {
    let io = |e: io::Error| FileError::io(path, e);
    let dir = parent(target);
    let old = std::fs::metadata(target)
        .ok()
        .filter(std::fs::Metadata::is_file);
    crate::temps::clean_stale(dir);
    let prefix = crate::temps::prefix();
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(io)?;
    // Known to a handler of terminating signals until renamed (or removed on an error).
    let _registered = crate::temps::register(tmp.path());
    {
        let mut out = io::BufWriter::new(tmp.as_file_mut());
        write(&mut out).map_err(io)?;
        out.flush().map_err(io)?;
    }
    if let Some(old) = old {
        use std::os::unix::fs::MetadataExt;
        // Keep the owner and group of the file replaced. Only a privileged process may
        // give a file away; others keep their own, as any editor does.
        let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(old.uid()), Some(old.gid()));
        tmp.as_file()
            .set_permissions(old.permissions())
            .map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(target).map_err(|e| io(e.error))?;
    // Make the rename itself durable. Best effort: the file is complete either way, and
    // some file systems cannot sync a directory.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes into an existing file in place: a FIFO, terminal or device as it is (`truncate`
/// false), or a regular file truncated first (`truncate` true).
fn write_in_place(
    path: &Path,
    truncate: bool,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), FileError> {
    let io = |e: io::Error| FileError::io(path, e);
    let f = open_for_writing(path, truncate, STREAM_WAIT)?;
    let mut out = io::BufWriter::new(f);
    write(&mut out).map_err(io)?;
    out.flush().map_err(io)
}

/// Opens an existing file for writing without blocking on a FIFO that nothing reads:
/// tries again until `wait` has passed, then fails. What is opened writes as a blocking
/// file would.
fn open_for_writing(path: &Path, truncate: bool, wait: Duration) -> Result<File, FileError> {
    let deadline = Instant::now() + wait;
    let mut nap = Duration::from_millis(1);
    loop {
        let opened = OpenOptions::new()
            .write(true)
            .truncate(truncate)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
            .open(path);
        match opened {
            Ok(f) => {
                blocking(&f).map_err(|e| FileError::io(path, e))?;
                return Ok(f);
            }
            // ENXIO: a FIFO with no reader (opened without blocking).
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if Instant::now() >= deadline {
                    return Err(FileError::refused(
                        path,
                        io::ErrorKind::TimedOut,
                        format!(
                            "a FIFO that nothing read from in {} s: is a program reading it?",
                            wait.as_secs_f64()
                        ),
                    ));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FileError::io(path, e)),
        }
        // Sleeps rather than spinning while the reader comes.
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    }
}

/// Clears `O_NONBLOCK` on an open file, so that writing waits for a slow reader.
fn blocking(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: `fd` is an open descriptor owned by `f` for the duration of the calls;
    // F_GETFL and F_SETFL read and set its status flags only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `Ok` when `dir` is an existing directory.
fn existing_directory(dir: &Path) -> Result<(), FileError> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(FileError::io(
            dir,
            io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(FileError::io(
            dir,
            io::Error::new(
                io::ErrorKind::NotFound,
                "no such directory (it is not created: make it first)",
            ),
        )),
        Err(e) => Err(FileError::io(dir, e)),
    }
}

/// The directory of `path` (`.` for a bare file name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The file `path` names once symbolic links are followed (relative links from the
/// directory of the link); `path` itself when it is not a link or does not exist.
fn follow_links(path: &Path) -> Result<PathBuf, FileError> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| FileError::io(&p, e))?;
                p = parent(&p).join(to);
            }
            _ => return Ok(p),
        }
    }
    Err(FileError::io(
        path,
        io::Error::other(format!("more than {MAX_LINKS} symbolic links")),
    ))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn is_root() -> bool {
        // SAFETY: geteuid takes no arguments and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn special_files_are_written_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("null.json");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        replace(&link, b"{}\n").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn links_are_followed_and_modes_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        replace(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_read_only_file_is_replaced_only_where_the_shell_could_write_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.json");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let shell_could = access_w(&path).is_ok();
        assert_eq!(
            shell_could,
            is_root(),
            "root may write any file, others not 0444"
        );
        let got = replace(&path, b"new");
        if shell_could {
            got.unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        } else {
            let e = got.unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
            assert!(e.to_string().contains("kept.json"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
            assert!(check_replace(&path).is_err());
        }
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o444);
    }

    #[test]
    fn a_fifo_that_nothing_reads_is_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        let e = open_for_writing(&path, false, Duration::from_millis(100)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("out.json"), "{e}");
        // With a reader, it is written.
        let reader = std::thread::spawn({
            let path = path.clone();
            move || std::fs::read(path).unwrap()
        });
        replace(&path, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
    }

    #[test]
    fn directories_are_refused_and_missing_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = replace(dir.path(), b"x").unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let path = dir.path().join("no/such/x.json");
        let e = replace(&path, b"x").unwrap_err();
        assert!(e.to_string().contains("no/such"), "{e}");
        assert!(!dir.path().join("no").exists());
        create_parent(&path).unwrap();
        replace(&path, b"x").unwrap();
    }

    #[test]
    fn temporary_files_of_dead_processes_are_removed_on_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(7200);
        let make = |name: &str, aged: bool| {
            let p = dir.path().join(name);
            let f = File::create(&p).unwrap();
            if aged {
                f.set_modified(old).unwrap();
            }
            p
        };
        // No process has id 999999999 (Linux's pid_max is at most 4194304).
        let dead = make(".topoprobe-999999999-AbC123.tmp", true);
        let dead_but_fresh = make(".topoprobe-999999998-AbC123.tmp", false);
        let mine = make(&format!("{}XyZ789.tmp", crate::temps::prefix()), true);
        let old_style = make(".topoprobe-QwErTy.tmp", true);
        let other = make("notes.tmp", true);
        replace(&dir.path().join("out.json"), b"{}").unwrap();
        assert!(!dead.exists(), "a dead process's temporary file is removed");
        assert!(!old_style.exists(), "an hour-old nameless one too");
        assert!(dead_but_fresh.exists(), "one still changing is kept");
        assert!(mine.exists(), "a live process's is kept");
        assert!(other.exists(), "other files are not touched");
    }
}
