//! File formats and views: the JSON description (`topoprobe/1`), libmctop's `.mct`,
//! latency-matrix CSV, the partition TSV, hwloc v2 XML, the text view, Graphviz graphs, the
//! latency heatmap (SVG) and the HTML report.
//!
//! Readers never panic: malformed input gives a [`ModelError::Parse`](crate::ModelError)
//! naming the file, the line and the problem.

pub mod csv;
pub mod dot;
pub mod heatmap;
pub mod hwloc_xml;
pub mod json;
pub mod mct;
pub mod report;
pub mod text;
pub mod tsv;

mod atomic;
mod common;
pub use atomic::write_atomic;
