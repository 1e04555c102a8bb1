//! Atomic file writes: readers see either the old file or the complete new one.

use std::io::Write;
use std::path::Path;

use crate::error::ModelError;

/// Writes `bytes` to `path` atomically.
///
/// Missing parent directories are created; the bytes are written to a temporary file in
/// the target's directory, flushed and synced to disk, then renamed over the target. The
/// new file gets the permissions a newly created file gets (`0o666` less the umask on Unix).
///
/// # Errors
///
/// Returns [`ModelError::Io`] naming the directory when it cannot be created, and naming
/// `path` when the temporary file cannot be created, written, synced or renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ModelError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
    let io = |e: std::io::Error| ModelError::io(path, e);
    let mut builder = tempfile::Builder::new();
    builder.prefix(".topoprobe-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(io)?;
    tmp.write_all(bytes).map_err(io)?;
    tmp.flush().map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    // Make the rename itself durable. Best effort: the file is complete either way, and
    // some platforms and file systems cannot sync a directory.
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
