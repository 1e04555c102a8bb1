//! Capture archives: a machine's sysfs and procfs saved by `hwloc-gather-topology` (a tar
//! archive, compressed with bzip2 or gzip or not at all, holding one folder `<name>/` with
//! `sys/` and `proc/` inside), unpacked into a temporary directory that is removed when the
//! [`Unpacked`] value is dropped, on success or error alike.
//!
//! Every limit is checked before anything is written (`topoprobe_model::limits`,
//! `docs/LIMITS.md`): the number of entries, the size of each file and of all of them, the
//! depth of each path. An entry whose path is absolute or has a `..`, that would be written
//! through a symbolic link, or a link that leads out of the capture, is refused, as is
//! anything but files, directories and links (a FIFO, a device).

use std::ffi::OsStr;
use std::fs;
use std::io::{self, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use topoprobe_model::limits::{
    MAX_CAPTURE_ARCHIVE_BYTES, MAX_CAPTURE_BYTES, MAX_CAPTURE_DEPTH, MAX_CAPTURE_ENTRIES,
    MAX_CAPTURE_FILE_BYTES,
};

use super::OsError;

/// The longest path a long-name entry or an extended header may give (Linux's
/// `PATH_MAX`).
const MAX_PATH_BYTES: u64 = 4096;

/// The largest extended (pax) header read.
const MAX_PAX_BYTES: u64 = 64 << 10;

/// A capture unpacked into a temporary directory, removed when this is dropped.
#[derive(Debug)]
pub struct Unpacked {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl Unpacked {
    /// The root of the captured machine's file system (the folder holding `sys/` and
    /// `proc/`).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The temporary directory everything was unpacked into.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// An error about the archive at `path`.
fn capture_error(path: &Path, problem: impl Into<String>) -> OsError {
    OsError::Capture {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// How the archive is compressed, by its first bytes.
enum Compression {
    Bzip2,
    Gzip,
    None,
}

/// Tells the compression from the first bytes of the file (`BZh`, `1f 8b`, or `ustar` at
/// offset 257 of a plain tar archive).
fn sniff(path: &Path, head: &[u8]) -> Result<Compression, OsError> {
    if head.starts_with(b"BZh") {
        Ok(Compression::Bzip2)
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Compression::Gzip)
    } else if head.get(257..262) == Some(b"ustar") {
        Ok(Compression::None)
    } else {
        Err(capture_error(
            path,
            "not a tar archive (plain, gzip or bzip2): expected a directory holding a \
             machine's sys/ and proc/, or a hwloc-gather-topology tarball",
        ))
    }
}

/// The archive's content, decompressed.
fn open(path: &Path) -> Result<Box<dyn Read>, OsError> {
    let read_error = |source| OsError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Opened without blocking (a FIFO or device is refused before any read), and read
    // to at most the archive limit.
    let rules = topoprobe_files::Rules::file(MAX_CAPTURE_ARCHIVE_BYTES);
    let mut f = topoprobe_files::open(path, rules).map_err(|e| match e {
        topoprobe_files::FileError::NotRegular { what, .. } => capture_error(
            path,
            format!("{what}, not a regular file: expected a directory or a tar archive"),
        ),
        other => read_error(other.into_io_without_path()),
    })?;
    let mut head = Vec::with_capacity(512);
    (&mut f)
        .take(512)
        .read_to_end(&mut head)
        .map_err(read_error)?;
    let compression = sniff(path, &head)?;
    let f = BufReader::new(io::Cursor::new(head).chain(f));
    Ok(match compression {
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(f)),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(f)),
        Compression::None => Box::new(f),
    })
}

/// An entry's path made relative and checked: no absolute path, no `..`, at most
/// [`MAX_CAPTURE_DEPTH`] components. `.` components are dropped; empty for the archive's
/// own top (`./`).
fn entry_path(bytes: &[u8]) -> Result<PathBuf, String> {
    let path = Path::new(OsStr::from_bytes(bytes));
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for c in path.components() {
        match c {
            Component::Normal(n) => {
                depth += 1;
                if depth > MAX_CAPTURE_DEPTH {
                    return Err(format!(
                        "its path is more than {MAX_CAPTURE_DEPTH} folders deep (the limit of \
                         docs/LIMITS.md)"
                    ));
                }
                out.push(n);
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err("its path is absolute: a capture's paths are relative".into())
            }
            Component::ParentDir => {
                return Err("its path has `..`, which would leave the capture's folder".into())
            }
        }
    }
    Ok(out)
}

/// Whether the link at `link` (relative to the top) with target `target` stays inside the
/// top when its path is resolved as written (the resolution through other links is
/// checked once everything is unpacked).
fn link_stays_inside(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth: usize = link.components().count().saturating_sub(1);
    for c in target.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                let Some(d) = depth.checked_sub(1) else {
                    return false;
                };
                depth = d;
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Reads the data of a long-name or extended-header entry of at most `max` bytes.
fn small_data(entry: &mut impl Read, size: u64, max: u64, what: &str) -> Result<Vec<u8>, String> {
    if size > max {
        return Err(format!("its {what} of {size} bytes is over {max} bytes"));
    }
    let mut v = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    entry
        .take(size)
        .read_to_end(&mut v)
        .map_err(|e| format!("reading its {what}: {e}"))?;
    while v.last() == Some(&0) {
        v.pop();
    }
    Ok(v)
}

/// The `path` and `linkpath` records of a pax extended header, when it has them.
struct PaxNames {
    path: Option<Vec<u8>>,
    link: Option<Vec<u8>>,
}

/// The `path` and `linkpath` records of a pax extended header; a `size` record (a file
/// over 8 GiB) is refused.
fn pax_records(data: &[u8]) -> Result<PaxNames, String> {
    let mut path = None;
    let mut link = None;
    for ext in tar::PaxExtensions::new(data) {
        let ext = ext.map_err(|e| format!("malformed extended header: {e}"))?;
        match ext.key_bytes() {
            b"path" => path = Some(ext.value_bytes().to_vec()),
            b"linkpath" => link = Some(ext.value_bytes().to_vec()),
            b"size" => {
                return Err(
                    "its extended header gives a size (a file over 8 GiB): over the limit".into(),
                )
            }
            _ => {}
        }
    }
    Ok(PaxNames { path, link })
}

/// Creates the folders of `rel` under `top` that do not exist, refusing to go through
/// anything that is not a folder (a link written earlier, or a file).
fn make_dirs(top: &Path, rel: &Path) -> Result<(), String> {
    let mut at = top.to_path_buf();
    for c in rel.components() {
        at.push(c);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "it would be written through the link {}",
                    at.strip_prefix(top).unwrap_or(&at).display()
                ))
            }
            Ok(_) => {
                return Err(format!(
                    "{} is a file, not a folder",
                    at.strip_prefix(top).unwrap_or(&at).display()
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir(&at).map_err(|e| format!("creating {}: {e}", at.display()))?;
            }
            Err(e) => return Err(format!("{}: {e}", at.display())),
        }
    }
    Ok(())
}

/// What is being unpacked: totals so far, and the links written.
struct State {
    entries: usize,
    bytes: u64,
    links: Vec<PathBuf>,
}

/// Unpacks one entry (a file, folder, link or hard link) at `rel` under `top`.
fn unpack_entry(
    entry: &mut tar::Entry<'_, Box<dyn Read>>,
    rel: &Path,
    link_name: Option<Vec<u8>>,
    top: &Path,
    state: &mut State,
) -> Result<(), String> {
    let kind = entry.header().entry_type();
    if rel.as_os_str().is_empty() {
        return if kind.is_dir() {
            Ok(())
        } else {
            Err("it has no name".into())
        };
    }
    let parent = rel.parent().unwrap_or(Path::new(""));
    if kind.is_dir() {
        return make_dirs(top, rel);
    }
    let dest = top.join(rel);
    if kind.is_file() || kind.is_contiguous() {
        let size = entry.header().size().map_err(|e| e.to_string())?;
        if size > MAX_CAPTURE_FILE_BYTES {
            return Err(format!(
                "the file holds {size} bytes, over the {MAX_CAPTURE_FILE_BYTES} of a file \
                 (the limit of docs/LIMITS.md)"
            ));
        }
        state.bytes = state.bytes.saturating_add(size);
        if state.bytes > MAX_CAPTURE_BYTES {
            return Err(format!(
                "the files unpacked so far hold more than {MAX_CAPTURE_BYTES} bytes (the limit \
                 of docs/LIMITS.md)"
            ));
        }
        make_dirs(top, parent)?;
        // A new file in the folder this reader made (create_new: never one that exists).
        #[allow(clippy::disallowed_methods)]
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&dest)
            .map_err(|e| format!("creating {}: {e}", dest.display()))?;
        let copied = io::copy(&mut entry.take(size), &mut out)
            .map_err(|e| format!("unpacking {}: {e}", dest.display()))?;
        if copied != size {
            return Err(format!(
                "the archive ends inside it ({copied} of {size} bytes)"
            ));
        }
        return Ok(());
    }
    if !kind.is_symlink() && !kind.is_hard_link() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_character_special() || kind.is_block_special() {
            "a device"
        } else if kind.is_gnu_sparse() {
            "a sparse file"
        } else {
            "of an unknown type"
        };
        return Err(format!(
            "it is {what}: a capture holds files, folders and links only"
        ));
    }
    let target = link_name.ok_or("a link without a target")?;
    let target = PathBuf::from(OsStr::from_bytes(&target));
    if kind.is_symlink() {
        if !link_stays_inside(rel, &target) {
            return Err(format!(
                "the link to {} leads out of the capture",
                target.display()
            ));
        }
        make_dirs(top, parent)?;
        std::os::unix::fs::symlink(&target, &dest)
            .map_err(|e| format!("creating the link {}: {e}", dest.display()))?;
        state.links.push(dest);
        return Ok(());
    }
    // A hard link: to a file unpacked before it, reached through folders only.
    let target_rel = entry_path(target.as_os_str().as_bytes())?;
    let source = top.join(&target_rel);
    make_dirs(top, target_rel.parent().unwrap_or(Path::new("")))?;
    match fs::symlink_metadata(&source) {
        Ok(m) if m.is_file() => {}
        _ => {
            return Err(format!(
                "a hard link to {}, which is no file unpacked before it",
                target.display()
            ))
        }
    }
    make_dirs(top, parent)?;
    fs::hard_link(&source, &dest).map_err(|e| format!("creating the link {}: {e}", dest.display()))
}

/// An entry's name for a message: at most 120 characters, the rest elided (a pax name
/// may be 64 KiB long).
fn shortened(name: &Path) -> String {
    let text = name.display().to_string();
    match text.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// Unpacks every entry of `archive` into `top`.
fn unpack_all(path: &Path, reader: Box<dyn Read>, top: &Path) -> Result<(), OsError> {
    let ended = std::rc::Rc::new(std::cell::Cell::new(false));
    let watched: Box<dyn Read> = Box::new(EndWatch {
        inner: reader,
        ended: std::rc::Rc::clone(&ended),
    });
    let mut archive = tar::Archive::new(watched);
    let mut state = State {
        entries: 0,
        bytes: 0,
        links: Vec::new(),
    };
    let err = |n: usize, name: &Path, problem: String| {
        capture_error(path, format!("entry {n} ({}): {problem}", shortened(name)))
    };
    let entries = archive
        .entries()
        .map_err(|e| capture_error(path, format!("not a tar archive: {e}")))?
        .raw(true);
    let mut long_name: Option<Vec<u8>> = None;
    let mut long_link: Option<Vec<u8>> = None;
    for entry in entries {
        let mut entry = entry.map_err(|e| {
            capture_error(
                path,
                format!("after entry {}: not a tar archive: {e}", state.entries),
            )
        })?;
        state.entries += 1;
        let n = state.entries;
        let header_path = entry.header().path_bytes().into_owned();
        let shown = PathBuf::from(OsStr::from_bytes(&header_path));
        if n > MAX_CAPTURE_ENTRIES {
            return Err(capture_error(
                path,
                format!("more than {MAX_CAPTURE_ENTRIES} entries (the limit of docs/LIMITS.md)"),
            ));
        }
        let kind = entry.header().entry_type();
        let size = entry.header().size().unwrap_or(u64::MAX);
        if kind.is_gnu_longname() {
            long_name = Some(
                small_data(&mut entry, size, MAX_PATH_BYTES, "long name")
                    .map_err(|p| err(n, &shown, p))?,
            );
            continue;
        }
        if kind.is_gnu_longlink() {
            long_link = Some(
                small_data(&mut entry, size, MAX_PATH_BYTES, "long link name")
                    .map_err(|p| err(n, &shown, p))?,
            );
            continue;
        }
        if kind.is_pax_local_extensions() {
            let data = small_data(&mut entry, size, MAX_PAX_BYTES, "extended header")
                .map_err(|p| err(n, &shown, p))?;
            let names = pax_records(&data).map_err(|p| err(n, &shown, p))?;
            long_name = names.path.or(long_name);
            long_link = names.link.or(long_link);
            continue;
        }
        if kind.is_pax_global_extensions() {
            continue;
        }
        let name = long_name.take().unwrap_or(header_path);
        let shown = PathBuf::from(OsStr::from_bytes(&name));
        for (what, bytes) in [("path", Some(&name)), ("link target", long_link.as_ref())] {
            if bytes.is_some_and(|b| b.len() as u64 > MAX_PATH_BYTES) {
                return Err(err(
                    n,
                    &shown,
                    format!("its {what} is longer than {MAX_PATH_BYTES} bytes (Linux's PATH_MAX)"),
                ));
            }
        }
        let link = long_link
            .take()
            .or_else(|| entry.header().link_name_bytes().map(|b| b.into_owned()));
        let rel = entry_path(&name).map_err(|p| err(n, &shown, p))?;
        unpack_entry(&mut entry, &rel, link, top, &mut state).map_err(|p| err(n, &shown, p))?;
    }
    // A tar archive ends with a block of zeros (two, as tar writes it), where the reader
    // stops; an archive whose data ends first, on a 512-byte boundary, was cut.
    if ended.get() {
        return Err(capture_error(
            path,
            format!(
                "the archive is truncated: it ends after entry {} without tar's end marker \
                 (blocks of zeros), on a 512-byte boundary",
                state.entries
            ),
        ));
    }
    // Links checked one by one as written; resolved through each other, they must still
    // stay inside.
    for link in &state.links {
        let rel = link.strip_prefix(top).unwrap_or(link);
        if !resolves_inside(top, rel) {
            return Err(capture_error(
                path,
                format!(
                    "the link {} leads out of the capture through other links",
                    rel.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The decompressed archive, noting whether its data ran out (a read of nothing), as it
/// does when the archive has no end marker.
struct EndWatch {
    inner: Box<dyn Read>,
    ended: std::rc::Rc<std::cell::Cell<bool>>,
}

impl Read for EndWatch {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let got = self.inner.read(buf)?;
        if got == 0 && !buf.is_empty() {
            self.ended.set(true);
        }
        Ok(got)
    }
}

/// Whether `rel` (relative to `top`) resolves inside `top` as the kernel resolves it:
/// component by component, following each link where it lies. A missing component ends
/// the resolution inside (the kernel stops there too); so do 40 links in a row (the kernel
/// gives up with `ELOOP`).
fn resolves_inside(top: &Path, rel: &Path) -> bool {
    let mut at: Vec<std::ffi::OsString> = Vec::new();
    let mut pending: Vec<std::ffi::OsString> = rel
        .components()
        .rev()
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    let mut hops = 0;
    while let Some(c) = pending.pop() {
        match c.to_str() {
            Some(".") => continue,
            Some("..") => {
                if at.pop().is_none() {
                    return false;
                }
                continue;
            }
            Some("/") => return false,
            _ => {}
        }
        at.push(c);
        let here: PathBuf = at.iter().fold(top.to_path_buf(), |p, c| p.join(c));
        match fs::symlink_metadata(&here) {
            Ok(m) if m.file_type().is_symlink() => {
                hops += 1;
                if hops > 40 {
                    return true;
                }
                let Ok(target) = fs::read_link(&here) else {
                    return true;
                };
                if target.is_absolute() {
                    return false;
                }
                at.pop();
                pending.extend(
                    target
                        .components()
                        .rev()
                        .map(|c| c.as_os_str().to_os_string()),
                );
            }
            Ok(_) => {}
            Err(_) => return true,
        }
    }
    true
}

/// The root of an unpacked capture: `top` itself when it holds `sys/`, else its one
/// folder (`hwloc-gather-topology` writes `<name>/sys`, `<name>/proc`...).
fn find_root(path: &Path, top: &Path) -> Result<PathBuf, OsError> {
    if top.join("sys").is_dir() {
        return Ok(top.to_path_buf());
    }
    let read_error = |source| OsError::Read {
        path: top.to_path_buf(),
        source,
    };
    let mut dirs = Vec::new();
    for e in fs::read_dir(top).map_err(read_error)? {
        let e = e.map_err(read_error)?;
        if e.file_type().map_err(read_error)?.is_dir() {
            dirs.push(e.path());
        }
    }
    match dirs.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(capture_error(
            path,
            "holds no folder: a hwloc-gather-topology capture holds one, with sys/ and proc/",
        )),
        _ => Err(capture_error(
            path,
            format!(
                "holds {} folders at its top and no sys/: a hwloc-gather-topology capture \
                 holds one",
                dirs.len()
            ),
        )),
    }
}

/// Unpacks the capture archive at `path` (tar, tar.gz or tar.bz2, told by content) into a
/// new temporary directory, removed when the result is dropped.
///
/// # Errors
///
/// [`OsError::Capture`] when it is not a tar archive, goes over a limit of
/// `docs/LIMITS.md`, has an entry that would leave its folder or that is neither a file, a
/// folder nor a link, or holds no single root; [`OsError::Read`] when it cannot be read or
/// the temporary directory cannot be made.
pub fn unpack_capture(path: &Path) -> Result<Unpacked, OsError> {
    let reader = open(path)?;
    let dir = tempfile::Builder::new()
        .prefix("topoprobe-capture-")
        .tempdir()
        .map_err(|source| OsError::Read {
            path: std::env::temp_dir(),
            source,
        })?;
    unpack_all(path, reader, dir.path())?;
    let root = find_root(path, dir.path())?;
    Ok(Unpacked { dir, root })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths() {
        assert_eq!(entry_path(b"./a/b").unwrap(), PathBuf::from("a/b"));
        assert_eq!(entry_path(b"./").unwrap(), PathBuf::new());
        assert!(entry_path(b"/etc/passwd").unwrap_err().contains("absolute"));
        assert!(entry_path(b"a/../../x").unwrap_err().contains(".."));
        let deep = "a/".repeat(MAX_CAPTURE_DEPTH + 1);
        assert!(entry_path(deep.as_bytes()).unwrap_err().contains("deep"));
    }

    #[test]
    fn links() {
        let l = Path::new("m/sys/bus/cpu/devices/cpu0");
        assert!(link_stays_inside(
            l,
            Path::new("../../../devices/system/cpu/cpu0")
        ));
        assert!(link_stays_inside(l, Path::new("../../../../..")));
        assert!(!link_stays_inside(l, Path::new("../../../../../..")));
        assert!(!link_stays_inside(l, Path::new("/etc")));
    }

    #[test]
    fn links_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        fs::create_dir_all(top.join("d/e/f")).unwrap();
        fs::create_dir_all(top.join("d/y")).unwrap();
        // Each link stays inside as written...
        std::os::unix::fs::symlink("../../y", top.join("d/e/f/r")).unwrap();
        assert!(resolves_inside(top, Path::new("d/e/f/r")));
        // ...but through `r`, which leads two folders up, three `..` leave the top.
        std::os::unix::fs::symlink("d/e/f/r/../../..", top.join("a")).unwrap();
        assert!(link_stays_inside(
            Path::new("a"),
            Path::new("d/e/f/r/../../..")
        ));
        assert!(!resolves_inside(top, Path::new("a")));
        // Dangling inside is harmless.
        std::os::unix::fs::symlink("d/missing/../..", top.join("b")).unwrap();
        assert!(resolves_inside(top, Path::new("b")));
    }
}
