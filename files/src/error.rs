//! The error of every open, read and replace: it always names the path.

use std::io;
use std::path::{Path, PathBuf};

/// Why a file could not be opened, read or replaced. Every variant names the path; the
/// message is whole in [`Display`](std::fmt::Display) (the OS's error included), so the
/// error has no separate source.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The operating system refused (missing file, permission, a symbolic-link loop...).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The file is larger than the reader's limit: by its size, before reading, or by
    /// what was read (a file whose size says less, a stream).
    #[error(
        "{}: too large: more than {limit} bytes ({}); topoprobe reads files of up to {} \
         (see docs/LIMITS.md)",
        path.display(),
        if *by_size { format!("its size is {found}") } else { format!("read {found}") },
        crate::size_text(*limit)
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The reader's limit, in bytes.
        limit: u64,
        /// The file's size, or the bytes read when the limit was passed.
        found: u64,
        /// Whether `found` is the file's size (else what was read).
        by_size: bool,
    },
    /// The file is of a type the reader does not take (a directory, a FIFO, a device).
    #[error("{}: {what}, where {expected} is expected", path.display())]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is ("a FIFO", "a character device").
        what: &'static str,
        /// What the reader takes ("a regular file").
        expected: &'static str,
    },
    /// The file was refused by a rule: not writable where `>` could not write, a FIFO
    /// nothing reads or writes within the wait, a file that is not of the fixed form
    /// asked for.
    #[error("{}: {why}", path.display())]
    Refused {
        /// The file.
        path: PathBuf,
        /// The kind of error, for callers that sort them.
        kind: io::ErrorKind,
        /// Why, in words.
        why: String,
    },
}

impl FileError {
    /// The OS's error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// A refusal of `path` by a rule.
    pub fn refused(path: impl Into<PathBuf>, kind: io::ErrorKind, why: impl Into<String>) -> Self {
        Self::Refused {
            path: path.into(),
            kind,
            why: why.into(),
        }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::TooLarge { path, .. }
            | Self::NotRegular { path, .. }
            | Self::Refused { path, .. } => path,
        }
    }

    /// The kind of I/O error this is.
    #[must_use]
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            Self::Io { source, .. } => source.kind(),
            Self::TooLarge { .. } => io::ErrorKind::FileTooLarge,
            Self::NotRegular { what, .. } if *what == "a directory" => io::ErrorKind::IsADirectory,
            Self::NotRegular { .. } => io::ErrorKind::InvalidInput,
            Self::Refused { kind, .. } => *kind,
        }
    }

    /// Whether the file does not exist (or a folder on its path is not a folder): the
    /// readers of optional files take that for "absent".
    #[must_use]
    pub fn is_absent(&self) -> bool {
        matches!(self, Self::Io { source, .. } if matches!(
            source.kind(),
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
        ))
    }

    /// The message without the path, for callers that name the path themselves.
    #[must_use]
    pub fn message(&self) -> String {
        let whole = self.to_string();
        let prefix = format!("{}: ", self.path().display());
        whole
            .strip_prefix(&prefix)
            .map_or_else(|| whole.clone(), str::to_string)
    }

    /// This error as an [`io::Error`] of the same kind, its message without the path
    /// (for callers that wrap it with the path themselves).
    #[must_use]
    pub fn into_io_without_path(self) -> io::Error {
        match self {
            Self::Io { source, .. } => source,
            other => io::Error::new(other.kind(), other.message()),
        }
    }
}

impl From<FileError> for io::Error {
    /// The error as an [`io::Error`] of the same kind whose message names the path.
    fn from(e: FileError) -> Self {
        Self::new(e.kind(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_path_once() {
        let e = FileError::TooLarge {
            path: "/x/m.csv".into(),
            limit: 256 << 20,
            found: 300 << 20,
            by_size: true,
        };
        let s = e.to_string();
        assert!(s.starts_with("/x/m.csv: too large"), "{s}");
        assert!(s.contains("256 MiB") && s.contains("its size is"), "{s}");
        assert!(!e.message().contains("/x/m.csv"));
        let absent = FileError::io("/x", io::Error::from(io::ErrorKind::NotFound));
        assert!(absent.is_absent());
        assert_eq!(io::Error::from(absent).kind(), io::ErrorKind::NotFound);
    }
}
