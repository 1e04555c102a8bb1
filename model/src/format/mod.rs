//! File formats: the JSON description (`topoprobe/1`), libmctop's `.mct`, latency-matrix
//! CSV, the partition TSV and hwloc v2 XML, with atomic writes. The views (text tree,
//! Graphviz graphs, heatmap, HTML report) are in the `topoprobe-view` crate.
//!
//! Readers never panic: malformed input gives a [`ModelError::Parse`](crate::ModelError)
//! naming the file, the line and the problem. The text formats read their files through
//! one lexer (module `lexer`: a size limit, the byte-order mark, lines and tokens with
//! their line numbers, latency tokens and tokens quoted for messages).
//!
//! [`plural`] and [`escape_xml`] are the text helpers the formats here share with the
//! views.

pub mod csv;
pub mod hwloc_xml;
pub mod json;
pub mod mct;
pub mod tsv;

mod atomic;
mod common;
mod lexer;

pub use atomic::write_atomic;
pub use common::{escape_xml, plural};
