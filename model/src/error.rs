//! Errors of the model crate.

use std::path::PathBuf;

/// Errors from building, reading or writing a topology.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The structure is inconsistent (a context in two cores, a dangling id, ...).
    #[error("inconsistent topology: {0}")]
    Structure(String),
    /// A file is malformed; names the file, the line (1-based, 0 when the problem is not
    /// tied to a line, and then left out of the message) and the problem.
    #[error("{}", located(path, *line, message))]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0 when the problem is not tied to a line).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing a file failed (the cause is the error's source).
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A query named a component that does not exist.
    #[error("no such component: {0}")]
    NoSuchComponent(String),
}

/// `path:line: message`, or `path: message` for line 0.
fn located(path: &std::path::Path, line: usize, message: &str) -> String {
    if line == 0 {
        format!("{}: {message}", path.display())
    } else {
        format!("{}:{line}: {message}", path.display())
    }
}

impl ModelError {
    /// A parse error at `line` of `path`.
    pub fn parse(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        Self::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

impl From<topoprobe_files::FileError> for ModelError {
    /// A file over its limit is a [`ModelError::Parse`] at line 0 (the message names the
    /// limit); every other refusal an [`ModelError::Io`] naming the path.
    fn from(e: topoprobe_files::FileError) -> Self {
        match e {
            topoprobe_files::FileError::TooLarge { .. } => Self::Parse {
                path: e.path().to_path_buf(),
                line: 0,
                message: e.message(),
            },
            other => Self::Io {
                path: other.path().to_path_buf(),
                source: other.into_io_without_path(),
            },
        }
    }
}
