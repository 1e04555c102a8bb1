//! File formats: the JSON description (`topoprobe/1`), libmctop's `.mct`, latency-matrix
//! CSV, the partition TSV and hwloc v2 XML, with atomic writes. The views (text tree,
//! Graphviz graphs, heatmap, HTML report) are in the `topoprobe-view` crate.
//!
//! Readers never panic: malformed input gives a [`ModelError::Parse`](crate::ModelError)
//! naming the file, the line and the problem. The text formats read their files through
//! one lexer (module `lexer`: a size limit, the byte-order mark, lines and tokens with
//! their line numbers, latency tokens and tokens quoted for messages).
//!
//! [`plural`], [`short_latency`] and [`escape_xml`] are the text helpers the formats here share with the
//! views.

pub mod csv;
pub mod hwloc_xml;
pub mod json;
pub mod mct;
pub mod rounding;
pub mod tsv;

mod atomic;
mod common;
mod lexer;
mod sink;

pub use atomic::{check_place, create_parent, write_atomic, write_atomic_with};
/// The temporary files of [`write_atomic`] (moved to `topoprobe_files::temps`).
pub use topoprobe_files::temps;

/// Reads a file as text for any reader here, or standard input when `path` is `-`: at
/// most [`MAX_FILE_BYTES`](crate::limits::MAX_FILE_BYTES), refused before it is allocated
/// and as soon as it grows past the limit, and refused at its first byte that is not text
/// (a NUL byte or invalid UTF-8). A UTF-8 byte-order mark is left for the parsers, which
/// all skip it.
///
/// # Errors
///
/// Returns [`ModelError::Io`](crate::ModelError) when the file cannot be read, and
/// [`ModelError::Parse`](crate::ModelError) when it is too large or not text.
pub fn read_input(path: &std::path::Path) -> Result<String, crate::ModelError> {
    lexer::read_text(path, crate::limits::MAX_FILE_BYTES)
}
pub use common::{
    compact_cpu_lists, cpu_ranges, elided, escape_xml, plural, short_latency, ECHOED_CHARS,
};
