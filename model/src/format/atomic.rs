//! Atomic file writes: readers see either the old file or the complete new one.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::ModelError;

/// How many symbolic links [`write_atomic`] follows before giving up (Linux's limit).
const MAX_LINKS: usize = 40;

/// Writes `bytes` to `path` atomically.
///
/// The bytes are written to a temporary file in the target's directory, flushed and
/// synced to disk, then renamed over the target. When `path` is a symbolic link, the file
/// it points to is replaced and the link kept. A file that is replaced keeps its
/// permissions and, where this process may set them, its owner and group; a new file gets
/// the permissions a newly created file gets (`0o666` less the umask on Unix). The
/// directory must exist: it is not created (see [`create_parent`]).
///
/// A target that exists and is not a regular file (a terminal, `/dev/stdout`, a FIFO, a
/// device) is written directly, never replaced: a rename would put a regular file in its
/// place.
///
/// The temporary file (`.topoprobe-<pid>-<random>.tmp`) is listed in
/// [`temps::in_progress`](super::temps::in_progress) while it is written, for a signal
/// handler to remove; the temporary files of processes that no longer exist are removed
/// from the directory first (see [`temps`](super::temps)).
///
/// # Errors
///
/// Returns [`ModelError::Io`] naming the directory when it does not exist, and naming
/// `path` when the temporary file cannot be created, written, synced or renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ModelError> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// [`write_atomic`], the content written by `write` as it goes (a large result need not
/// be held in memory whole).
///
/// # Errors
///
/// As [`write_atomic`]; an error `write` returns, naming `path` (the target is then left
/// as it was).
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), ModelError> {
    let io = |e: std::io::Error| ModelError::io(path, e);
    // The kernel follows the links (`/dev/stdout` -> `/proc/self/fd/1` -> a pipe, whose
    // link text is no path); a target that is not a regular file is opened as it is.
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() && !m.is_dir() {
            return write_special(path, write).map_err(io);
        }
    }
    let target = follow_links(path)?;
    let dir = parent(&target);
    existing_directory(dir)?;
    let old = std::fs::metadata(&target)
        .ok()
        .filter(std::fs::Metadata::is_file);
    super::temps::clean_stale(dir);
    let prefix = super::temps::prefix();
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(io)?;
    // Known to a handler of terminating signals until renamed (or removed on an error).
    let _registered = super::temps::register(tmp.path());
    {
        let mut out = std::io::BufWriter::new(tmp.as_file_mut());
        write(&mut out).map_err(io)?;
        out.flush().map_err(io)?;
    }
    if let Some(old) = old {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // Keep the owner and group of the file replaced. Only a privileged process
            // may give a file away; others keep their own, as any editor does.
            let _ = std::os::unix::fs::fchown(tmp.as_file(), Some(old.uid()), Some(old.gid()));
        }
        tmp.as_file()
            .set_permissions(old.permissions())
            .map_err(io)?;
    }
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(&target).map_err(|e| io(e.error))?;
    // Make the rename itself durable. Best effort: the file is complete either way, and
    // some platforms and file systems cannot sync a directory.
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes into an existing file that is not a regular one (a terminal, a pipe, a
/// device): opened for writing as it is, neither truncated nor replaced.
fn write_special(
    target: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new().write(true).open(target)?;
    let mut out = std::io::BufWriter::new(f);
    write(&mut out)?;
    out.flush()
}

/// Checks, before work whose result goes there, that [`write_atomic`] can place `path`:
/// its directory (after following links) exists.
///
/// # Errors
///
/// Returns [`ModelError::Io`] naming the directory when it does not exist or is not a
/// directory, or naming `path` when a link cannot be followed.
pub fn check_place(path: &Path) -> Result<(), ModelError> {
    existing_directory(parent(&follow_links(path)?))
}

/// `Ok` when `dir` is an existing directory.
fn existing_directory(dir: &Path) -> Result<(), ModelError> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(ModelError::io(
                dir,
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ModelError::io(
                dir,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such directory (it is not created: make it first)",
                ),
            ))
        }
        Err(e) => return Err(ModelError::io(dir, e)),
    }
    Ok(())
}

/// Creates the missing directories above `path`, for writers that own their place (the
/// default place of this machine's description).
///
/// # Errors
///
/// Returns [`ModelError::Io`] naming the directory when it cannot be created.
pub fn create_parent(path: &Path) -> Result<(), ModelError> {
    let dir = parent(path);
    std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))
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
fn follow_links(path: &Path) -> Result<PathBuf, ModelError> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| ModelError::io(&p, e))?;
                p = parent(&p).join(to);
            }
            _ => return Ok(p),
        }
    }
    Err(ModelError::io(
        path,
        std::io::Error::other(format!("more than {MAX_LINKS} symbolic links")),
    ))
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn special_files_are_written_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("null.json");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        write_atomic(&link, b"{}\n").unwrap();
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
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        let mode = std::fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn temporary_files_of_dead_processes_are_removed_on_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        let make = |name: &str, aged: bool| {
            let p = dir.path().join(name);
            let f = std::fs::File::create(&p).unwrap();
            if aged {
                f.set_modified(old).unwrap();
            }
            p
        };
        // No process has id 999999999 (Linux's pid_max is at most 4194304).
        let dead = make(".topoprobe-999999999-AbC123.tmp", true);
        let dead_but_fresh = make(".topoprobe-999999998-AbC123.tmp", false);
        let mine = make(
            &format!("{}XyZ789.tmp", super::super::temps::prefix()),
            true,
        );
        let old_style = make(".topoprobe-QwErTy.tmp", true);
        let other = make("notes.tmp", true);
        write_atomic(&dir.path().join("out.json"), b"{}").unwrap();
        assert!(!dead.exists(), "a dead process's temporary file is removed");
        assert!(!old_style.exists(), "an hour-old nameless one too");
        assert!(dead_but_fresh.exists(), "one still changing is kept");
        assert!(mine.exists(), "a live process's is kept");
        assert!(other.exists(), "other files are not touched");
    }

    #[test]
    fn a_missing_directory_is_named_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/x.json");
        let e = write_atomic(&path, b"x").unwrap_err();
        assert!(e.to_string().ends_with("no/such"), "{e}");
        assert!(!dir.path().join("no").exists());
        create_parent(&path).unwrap();
        write_atomic(&path, b"x").unwrap();
    }
}
