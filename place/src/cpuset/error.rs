//! Why a CPU-set expression was refused: the term at fault and what is wrong with it.

/// What kind of mistake a [`CpuSetError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text does not follow the grammar (or is over a size limit).
    Syntax,
    /// The term names something the topology does not have (`package:3` of two packages,
    /// CPU 9 of a machine with 8).
    NotInTopology,
    /// The topology does not say what the term needs (which contexts share an L3 cache,
    /// the memory nodes): another source of the topology may.
    Unknown,
    /// The term needs a topology and none was given.
    NeedsTopology,
}

/// A CPU-set expression that could not be parsed or resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", message(.term, .reason))]
pub struct CpuSetError {
    /// The term at fault, as typed (`package:3`), or the whole expression.
    pub term: String,
    /// What is wrong, and what exists instead.
    pub reason: String,
    /// The kind of mistake.
    pub kind: ErrorKind,
}

impl CpuSetError {
    /// An error of `kind` about `term`.
    pub(crate) fn new(kind: ErrorKind, term: &str, reason: impl Into<String>) -> Self {
        Self {
            term: term.to_string(),
            reason: reason.into(),
            kind,
        }
    }

    /// A syntax error about `term`.
    pub(crate) fn syntax(term: &str, reason: impl Into<String>) -> Self {
        Self::new(ErrorKind::Syntax, term, reason)
    }

    /// A term naming something the topology lacks.
    pub(crate) fn absent(term: &str, reason: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotInTopology, term, reason)
    }
}

/// The message of a [`CpuSetError`]: the reason, after the term when there is one.
fn message(term: &str, reason: &str) -> String {
    if term.is_empty() {
        reason.to_string()
    } else {
        format!("{}: {reason}", topoprobe_model::format::elided(term))
    }
}
