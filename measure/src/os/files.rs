//! Reading sysfs and procfs files: size-capped, NUL- and whitespace-trimmed, with errors that
//! name the file and its content.

use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::OsError;

use topoprobe_model::limits::MAX_SYSFS_FILE_BYTES;

/// At most this many notes are kept; later ones are counted.
const MAX_NOTES: usize = 40;

/// Notes on optional information that could not be read.
#[derive(Debug, Default)]
pub(super) struct Notes {
    kept: Vec<String>,
    dropped: usize,
}

impl Notes {
    /// Records one note.
    pub(super) fn add(&mut self, note: impl Into<String>) {
        if self.kept.len() < MAX_NOTES {
            self.kept.push(note.into());
        } else {
            self.dropped += 1;
        }
    }

    /// The notes, with a final count of those left out.
    pub(super) fn into_vec(mut self) -> Vec<String> {
        if self.dropped > 0 {
            self.kept
                .push(format!("... and {} more notes like these", self.dropped));
        }
        self.kept
    }
}

/// `s` without surrounding whitespace and NUL bytes.
pub(super) fn clean(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\0')
}

/// The first 80 characters of `s`, for error messages.
pub(super) fn excerpt(s: &str) -> String {
    let mut e: String = s.chars().take(80).collect();
    if s.chars().nth(80).is_some() {
        e.push_str("...");
    }
    e
}

fn is_absent(e: &io::Error) -> bool {
    // A missing file, or a path through something that is not a directory (a broken capture).
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// The content of `path` (lossy UTF-8, at most [`MAX_SYSFS_FILE_BYTES`]), or `None` when
/// it does not exist. Read by the rules of `topoprobe_files`: never blocks (a FIFO,
/// socket or device, in a capture or a `--root` tree, is an error before any read, as the
/// attribute files of sysfs and procfs are regular files), and bounded even where the
/// size reads as 0 or 4096.
///
/// # Errors
///
/// [`OsError::Read`] when the file exists but cannot be read, is not a regular file, or
/// is larger than the limit (the message names the size and the limit).
pub(super) fn read(path: &Path) -> Result<Option<String>, OsError> {
    let rules = topoprobe_files::Rules::file(MAX_SYSFS_FILE_BYTES);
    match topoprobe_files::read_optional(path, rules) {
        Ok(None) => Ok(None),
        Ok(Some(bytes)) => Ok(Some(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })),
        Err(e) => Err(OsError::Read {
            path: path.to_path_buf(),
            source: e.into_io_without_path(),
        }),
    }
}

/// The content of an optional file: `None` when absent, or unreadable (with a note).
pub(super) fn read_optional(path: &Path, notes: &mut Notes) -> Option<String> {
    match read(path) {
        Ok(v) => v,
        Err(e) => {
            notes.add(e.to_string());
            None
        }
    }
}

/// A parse error for `path` whose content is `content`.
pub(super) fn parse_error(path: &Path, content: &str, reason: impl Into<String>) -> OsError {
    OsError::Parse {
        path: path.to_path_buf(),
        content: excerpt(content),
        reason: reason.into(),
    }
}

/// Parses the whole (cleaned) content of `path` as a number.
///
/// # Errors
///
/// [`OsError::Parse`] naming the file and its content.
pub(super) fn parse_number<T: FromStr>(path: &Path, content: &str) -> Result<T, OsError> {
    clean(content)
        .parse()
        .map_err(|_| parse_error(path, content, "not a number"))
}

/// An optional number file: `None` when absent; unreadable or malformed ones are noted.
pub(super) fn optional_number<T: FromStr>(path: &Path, notes: &mut Notes) -> Option<T> {
    let s = read_optional(path, notes)?;
    match parse_number(path, &s) {
        Ok(v) => Some(v),
        Err(e) => {
            notes.add(format!("ignored: {e}"));
            None
        }
    }
}

/// The entries `<prefix><number>` of `dir` (such as `cpu12` or `node3`), ascending by number;
/// empty when `dir` does not exist.
///
/// # Errors
///
/// [`OsError::Read`] when `dir` exists but cannot be listed.
pub(super) fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<(u32, PathBuf)>, OsError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if is_absent(&e) => return Ok(Vec::new()),
        Err(source) => {
            return Err(OsError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|source| OsError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(digits) = name.strip_prefix(prefix) else {
            continue;
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(n) = digits.parse::<u32>() else {
            continue;
        };
        let path = entry.path();
        if path.is_dir() {
            out.push((n, path));
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The numbers `N` of the entries `<prefix>N` of `dir`, whatever they are (sysfs makes
/// them links; captures may keep them as links or folders).
///
/// # Errors
///
/// When `dir` cannot be listed (or does not exist).
pub(super) fn numbered_names(dir: &Path, prefix: &str) -> std::io::Result<Vec<u32>> {
    let mut out: Vec<u32> = std::fs::read_dir(dir)?
        .flatten()
        .take(MAX_ENTRIES)
        .filter_map(|e| {
            let name = e.file_name();
            let digits = name.to_str()?.strip_prefix(prefix)?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok()
        })
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// The most entries of one folder looked at.
pub(super) const MAX_ENTRIES: usize = 1 << 16;

/// `content` as a CPU set: a list (`0-3,8`, the `*_list` and `cpulist` files) when `list`,
/// else a hex mask (`cpumap`, `*_map`, the sibling masks).
///
/// # Errors
///
/// When the content is neither.
pub(super) fn parse_cpus(
    content: &str,
    list: bool,
) -> Result<Vec<u32>, topoprobe_model::CpuListError> {
    if list {
        topoprobe_model::parse_cpu_list(content)
    } else {
        topoprobe_model::parse_cpu_mask(content)
    }
}
