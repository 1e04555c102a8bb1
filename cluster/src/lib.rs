//! The communication layers of a cluster (Servet §III-D), measured over MPI by the
//! `topoprobe-cluster` program (built with the `mpi` feature) and analysed here.
//!
//! On a cluster the latency and bandwidth between two processes fall into *layers*: the
//! same core's caches, the same socket, another socket, another node through the network,
//! another switch. This crate finds them as the core-level inference finds latency levels,
//! and explains each with how its pairs are related in the nodes' descriptions:
//!
//! 1. every rank reports its host and binding ([`RankInfo`]); each host's first rank its
//!    [`NodeLayout`] (from its description, a measurement or the OS's view: [`node`]);
//! 2. rank pairs are measured ([`collect`]): every pair up to a size, beyond it the
//!    inference's sparse strategy over ranks (representatives per host and per level,
//!    random verification pairs), bandwidth per layer representative;
//! 3. the latencies are clustered into [`layers`] by the inference's scale-free clustering
//!    ([`topoprobe_infer::layers`]), each labelled with the relations of its pairs
//!    ([`Relation`]: same core, same socket, …, inter-node);
//! 4. the faster layers group the ranks: communicator-split [`advice`];
//! 5. the [`ClusterReport`] is printed as text, JSON or a heatmap.
//!
//! Everything but the transport is pure and tested on simulated clusters (the `sim`
//! feature); the MPI transport (`mpi` feature) only carries messages and measures.

#![forbid(unsafe_code)]

pub mod advice;
pub mod collect;
mod error;
pub mod layers;
pub mod layout;
pub mod node;
mod probe;
pub mod ranks;
mod report;
#[cfg(feature = "sim")]
pub mod sim;
#[cfg(feature = "mpi")]
pub mod transport;

pub use collect::{CollectOptions, Strategy};
pub use error::ClusterError;
pub use layout::{NodeLayout, Relation};
pub use probe::RankProbe;
pub use ranks::{HostInfo, RankInfo, Ranks};
pub use report::{analyse, ClusterReport, Measurement, Progress, FORMAT};
