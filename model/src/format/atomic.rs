//! Writing results: the rules of `topoprobe_files` (atomic replacement where the shell's
//! `>` could write, in place for a FIFO, terminal or device), with errors as
//! [`ModelError`]s.

use std::io::Write;
use std::path::Path;

use crate::error::ModelError;

/// Writes `bytes` to `path`, replacing it atomically where the shell's `>` could write
/// it (see [`topoprobe_files::replace`]): readers see the old file or the complete new
/// one; a symbolic link is followed and kept; a replaced file keeps its mode and, where
/// this process may set them, its owner and group; a FIFO, terminal or device is written
/// in place; a regular file this user may not write is refused and left as it is. The
/// directory must exist: it is not created (see [`create_parent`]).
///
/// # Errors
///
/// [`ModelError::Io`] naming the directory when it does not exist, and naming `path` when
/// it may not be written (permission denied), is a directory, is a FIFO nothing reads
/// within 10 s, or cannot be created, written, synced or renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ModelError> {
    Ok(topoprobe_files::replace(path, bytes)?)
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
    Ok(topoprobe_files::replace_with(path, write)?)
}

/// Checks, before work whose result goes there, that [`write_atomic`] may write `path`:
/// its directory (after following links) exists, and an existing regular file there is
/// one this user may write.
///
/// # Errors
///
/// [`ModelError::Io`] naming the directory when it does not exist or is not a directory,
/// or naming `path` when a link cannot be followed or the file may not be written.
pub fn check_place(path: &Path) -> Result<(), ModelError> {
    Ok(topoprobe_files::check_replace(path)?)
}

/// Creates the missing directories above `path`, for writers that own their place (the
/// default place of this machine's description).
///
/// # Errors
///
/// [`ModelError::Io`] naming the directory when it cannot be created.
pub fn create_parent(path: &Path) -> Result<(), ModelError> {
    Ok(topoprobe_files::create_parent(path)?)
}
