//! The topology model of topoprobe: a multi-core machine described by its hardware
//! contexts, cores, groups (at any depth), sockets, memory nodes and the latencies
//! between them (MCTOP, "multi-core topology"), with its queries, the pair-latency probe
//! trait ([`PairLatency`]) and the file formats that store it ([`format`](mod@format): the JSON
//! description, libmctop's `.mct`, latency-matrix CSV, the partition TSV and hwloc XML).
//! The views of a topology (text tree, Graphviz graphs, heatmap, HTML report) are in the
//! `topoprobe-view` crate.
//!
//! This crate is pure: it never touches the operating system and only reads or writes
//! the files it is given.
//!
//! ```
//! use topoprobe_model::{ContextId, Evidence, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};
//!
//! // Two cores with two SMT contexts each, in one socket.
//! let mut b = TopologyBuilder::new(vec![0, 1, 2, 3], LatencyUnit::Ns);
//! let c0 = b.core(vec![ContextId(0), ContextId(2)]);
//! let c1 = b.core(vec![ContextId(1), ContextId(3)]);
//! b.socket(vec![Member::Core(c0), Member::Core(c1)]);
//! let lat = LatencyMatrix::from_fn(4, |a, b| Some(if a % 2 == b % 2 { 8.0 } else { 40.0 }));
//! b.latencies(lat.clone(), lat);
//! let topo = b.build().unwrap();
//! assert_eq!(topo.num_cores(), 2);
//! assert!(topo.has_smt());
//! assert_eq!(topo.latency(ContextId(0), ContextId(2)).unwrap(), 8.0);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bounded;
mod components;
mod cost;
mod data;
mod derive;
mod error;
mod figures;
pub mod format;
mod ids;
pub mod limits;
mod matrix;
mod median;
mod meta;
mod os_view;
mod probe;
mod query;
pub mod results;
mod sections;
mod size;
mod topology;
mod units;

pub use components::{
    Core, Evidence, Group, HwContext, Interconnect, LatencyLevel, Member, Node, Parent, Role,
    Socket,
};
pub use cost::{seconds_text, Budget, CostPlan, CostStep};
pub use error::ModelError;
pub use ids::{ContextId, CoreId, GroupId, NodeId, SocketId};
pub use matrix::{
    round_half_away, round_significant, LatencyMatrix, LatencySummary, MatrixShapeError,
    MAX_ENTRY_CHARS, TABLE_DIGITS,
};
pub use median::{
    median, median_in_place, median_sorted, streamed_medians, streamed_middles, ValueStream,
};
pub use meta::{
    Fact, Facts, LevelConfidence, Machine, Origin, OsDifference, Provenance, Source,
    StructureLevel, Unresolved, Validation, Warning, WarningKind,
};
pub use os_view::{
    format_cpu_list, parse_cpu_list, parse_cpu_mask, CacheType, CoreKey, CpuKind, CpuListError,
    OsCache, OsCpu, OsHmatAccess, OsMemoryCache, OsNode, OsView, MAX_CPU,
};
pub use probe::{MatrixProbe, Noisy, PairLatency, PairReading, PairSample, ProbeError};
pub use query::{Component, Level};
pub use sections::{
    knee, Access, CacheLevel, CacheSection, ContentionLevel, ContentionPair, ContentionSection,
    CurvePoint, Knee, LoadedCurve, LoadedPoint, MatrixInitiator, MemoryBandwidth, MemoryDetail,
    MemoryLatency, MemorySection, Mix, MixBandwidth, NodeMatrix, PairVerdict, PowerEntry,
    PowerScope, PowerSection, PowerState, Saturation, ScalingPoint, SharingOutcome, SharingPair,
    SharingTest, SocketCurve, Threads, TlbReach, KNEE_FACTOR, SATURATION_SHARE,
};
pub use size::{parse_size, size_text, SizeError, MAX_SIZE};
pub use topology::{LatencyTables, Topology, TopologyBuilder, FORMAT};
pub use units::{LatencyUnit, UnknownUnit};
