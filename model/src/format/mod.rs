//! File formats: the JSON description (`topoprobe/1`), libmctop's `.mct`, latency-matrix
//! CSV, the partition TSV and the text view.
//!
//! Readers never panic: malformed input gives a [`ModelError::Parse`](crate::ModelError)
//! naming the file, the line and the problem.

pub mod csv;
pub mod json;
pub mod mct;
pub mod text;
pub mod tsv;

mod atomic;
pub use atomic::write_atomic;
