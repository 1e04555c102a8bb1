//! The views of topoprobe: a [`Topology`](topoprobe_model::Topology) rendered for people,
//! and those renderings turned into pictures.
//!
//! | module | what it renders |
//! |---|---|
//! | [`text`] | the text tree (sockets, nodes, groups, cores, contexts, with the latency of every level) and its tables, optionally coloured ([`text::TextOptions`]) |
//! | [`dot`] | Graphviz (DOT) graphs: intra-socket and cross-socket, as libmctop draws them |
//! | [`heatmap`] | the latency matrix as an SVG heatmap, contexts in topology order |
//! | [`report`] | one self-contained HTML page with all of the above |
//! | [`picture`] | picture formats, and SVG → PNG with resvg (the `png` feature) |
//! | [`graphviz`] | DOT → SVG or PNG with Graphviz's `dot`: the one place this crate starts a process |
//! | [`cost`] | a measurement's cost plan: steps, planned and spent seconds and memory, what the budget left out |
//! | [`results`] | a command's result: JSON by one rounding rule, text and CSV by its [`results::Rendered`] impl |
//! | [`color`] | whether to colour the text view (`--color`, `NO_COLOR`, a terminal) |
//!
//! The renderers ([`text`], [`dot`], [`heatmap`], [`report`]) are pure functions of the
//! topology and their options, returning text. The file formats that store a topology
//! (JSON description, `.mct`, matrix CSV, partition TSV, hwloc XML) are in
//! `topoprobe_model::format`.
//!
//! ```
//! use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};
//!
//! let mut b = TopologyBuilder::new(vec![0, 1], LatencyUnit::Ns);
//! let c0 = b.core(vec![ContextId(0)]);
//! let c1 = b.core(vec![ContextId(1)]);
//! b.socket(vec![Member::Core(c0), Member::Core(c1)]);
//! let lat = LatencyMatrix::from_fn(2, |_, _| Some(30.0));
//! b.latencies(lat.clone(), lat);
//! let topo = b.build().unwrap();
//! assert!(topoprobe_view::text::render(&topo).contains("2 cores"));
//! assert!(topoprobe_view::dot::render(&topo).starts_with("digraph \"socket0\""));
//! assert!(topoprobe_view::heatmap::render(&topo).contains("<svg"));
//! ```
//!
//! # Features
//!
//! - `png` (off by default): `picture::svg_to_png` and `picture::PngError`, SVG rendered to
//!   PNG with resvg. Without it they do not exist, rather than failing at run time: a
//!   caller that renders PNG says so in its `Cargo.toml` (the CLI does) and the compiler
//!   holds it to that, while the crates that only use the text, JSON and SVG views (the C
//!   library among them) neither build nor link resvg and its font stack. Graphviz's PNG
//!   ([`graphviz::render`] with [`picture::Picture::Png`]) runs `dot` and needs no feature.
//! - `clap`: `clap::ValueEnum` on the enums the CLI takes as command-line values.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod color;
pub mod cost;
pub mod dot;
pub mod graphviz;
pub mod heatmap;
pub mod memory_load;
pub mod picture;
pub mod report;
pub mod results;
pub mod text;

mod common;
