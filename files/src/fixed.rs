//! Opening a file of a fixed form (a heartbeat page) for reading and writing, checked
//! before anything in it is changed.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::FileError;

/// The form of a file [`open_fixed`] opens: its size and the magic number it starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed {
    /// What the file is, for messages ("a heartbeat page").
    pub name: &'static str,
    /// Its size in bytes.
    pub len: u64,
    /// The bytes at offset 0 of a file of this form (all zeros is accepted too: a file
    /// another process is making).
    pub magic: &'static [u8],
}

/// Opens `path` for reading and writing as a file of the form `form`, creating it (mode
/// `0600`) when missing and `create` is set. Nothing is changed before the file is known
/// to be of the form: it must be a regular file (a symbolic link is not followed, a FIFO
/// or device is refused without being opened) that is either empty, and is then grown to
/// `form.len` bytes of zeros, or exactly `form.len` bytes long and starting with
/// `form.magic` (or zeros). Any other file is left byte for byte.
///
/// Writing the magic number into a new file is the caller's, once it holds the file
/// (a heartbeat page is mapped and the number set atomically).
///
/// # Errors
///
/// [`FileError::Io`] when the file cannot be opened, read or grown;
/// [`FileError::NotRegular`] for anything but a regular file; [`FileError::Refused`]
/// (kind `InvalidData`) for a regular file of another size or magic number.
pub fn open_fixed(path: &Path, form: &Fixed, create: bool) -> Result<File, FileError> {
    let io = |e: io::Error| FileError::io(path, e);
    let not_regular = |t: std::fs::FileType| FileError::NotRegular {
        path: path.to_path_buf(),
        what: crate::kind_of(t),
        expected: "a regular file",
    };
    // Looked at before opening: opening a device may have effects.
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() => return Err(not_regular(m.file_type())),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound && create => {}
        Err(e) => return Err(io(e)),
    }
    let mut options = OpenOptions::new();
    options
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC);
    if create {
        options.create(true).mode(0o600);
    }
    let file = options.open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let refused = |why: String| FileError::refused(path, io::ErrorKind::InvalidData, why);
    let size = meta.len();
    if size == 0 {
        // Nothing to lose: made the form's size (zero-filled). Two processes doing it at
        // once is harmless.
        file.set_len(form.len).map_err(io)?;
        return Ok(file);
    }
    if size > form.len {
        return Err(refused(format!(
            "{size} bytes, more than {} ({} bytes): left as it is",
            form.name, form.len
        )));
    }
    if size < form.len {
        return Err(refused(format!(
            "{size} bytes, not {} ({} bytes): left as it is",
            form.name, form.len
        )));
    }
    let mut head = vec![0_u8; form.magic.len()];
    file.read_exact_at(&mut head, 0).map_err(io)?;
    if head != form.magic && head.iter().any(|&b| b != 0) {
        let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
        return Err(refused(format!(
            "starts with 0x{hex}, not {}'s magic number: left as it is",
            form.name
        )));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: Fixed = Fixed {
        name: "a test page",
        len: 64,
        magic: b"TPTEST01",
    };

    #[test]
    fn a_new_or_empty_file_is_made_the_form() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("page");
        let f = open_fixed(&path, &PAGE, true).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 64);
        f.write_all_at(b"TPTEST01", 0).unwrap();
        drop(f);
        open_fixed(&path, &PAGE, false).unwrap();
        assert!(open_fixed(&dir.path().join("none"), &PAGE, false).is_err());
    }

    #[test]
    fn other_files_are_left_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, b"hello").unwrap();
        let e = open_fixed(&small, &PAGE, true).unwrap_err();
        assert!(e.to_string().contains("not a test page"), "{e}");
        assert_eq!(std::fs::read(&small).unwrap(), b"hello");
        let other = dir.path().join("other");
        std::fs::write(&other, [7_u8; 64]).unwrap();
        let e = open_fixed(&other, &PAGE, true).unwrap_err();
        assert!(e.to_string().contains("magic number"), "{e}");
        assert_eq!(std::fs::read(&other).unwrap(), [7_u8; 64]);
        let big = dir.path().join("big");
        std::fs::write(&big, [0_u8; 65]).unwrap();
        let e = open_fixed(&big, &PAGE, true).unwrap_err();
        assert!(e.to_string().contains("more than a test page"), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&small, &link).unwrap();
        assert!(open_fixed(&link, &PAGE, true).is_err());
        let e = open_fixed(dir.path(), &PAGE, true).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
    }
}
