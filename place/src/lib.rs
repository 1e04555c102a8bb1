//! Thread placement over a measured topology (MCTOP-PLACE, paper §6).
//!
//! - [`Policy`]: the twelve policies of the paper's Table 2; [`plan()`] turns a policy, a
//!   thread count, a socket count and filters ([`Request`]) into an ordered list of
//!   hardware contexts ([`Plan`]). Planning is pure.
//! - [`Placement`]: threads pin themselves to the next free context of a plan and learn
//!   their place ([`ThreadInfo`]: context, core, socket, node, index within socket and
//!   core, whether they lead their node); [`Summary`] is the paper's Figure 7.
//! - [`Pool`]: several placements, the current policy switched at run time; threads
//!   re-pin at their next pin point.
//! - [`place()`] / [`describe`]: a placement as data ([`PlacementResult`]: its CPUs,
//!   nodes, every thread's place, the summary and OpenMP's environment), which
//!   `topoprobe_view::results::placement` renders as a CPU list, a mask, `taskset`,
//!   `numactl`, OpenMP's environment, `likwid-pin`, `hwloc-bind` or MPI launcher
//!   arguments; [`export`]: the CPU list, nodes and OpenMP environment of a plan.
//! - [`cpuset`]: CPU sets named as hwloc-calc and likwid-pin name them
//!   (`package:1.core:0-3`, `S1:0-3`, masks, set arithmetic), resolved against a topology
//!   or the operating system's view of a machine.
//! - [`launch`]: run a program with its threads placed (`topoprobe run`): the pinning
//!   library preloaded, the OpenMP environment and the memory policy set; [`preload`]:
//!   where that library is (`$TOPOPROBE_PRELOAD`, on disk, or the copy carried inside the
//!   binary).
//!
//! ```
//! use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};
//! use topoprobe_place::{export, plan, Policy, Request};
//!
//! // Two cores with two SMT contexts each (siblings 0/2 and 1/3), in one socket.
//! let mut b = TopologyBuilder::new(vec![0, 1, 2, 3], LatencyUnit::Ns);
//! let c0 = b.core(vec![ContextId(0), ContextId(2)]);
//! let c1 = b.core(vec![ContextId(1), ContextId(3)]);
//! b.socket(vec![Member::Core(c0), Member::Core(c1)]);
//! let lat = LatencyMatrix::from_fn(4, |a, b| Some(if a % 2 == b % 2 { 8.0 } else { 40.0 }));
//! b.latencies(lat.clone(), lat);
//! let topo = b.build()?;
//!
//! let p = plan(&topo, &Request::new(Policy::ConHwc).threads(3))?;
//! assert_eq!(export::list(&topo, &p), "0,2,1");
//! let p = plan(&topo, &Request::new(Policy::ConCoreHwc).threads(3))?;
//! assert_eq!(export::list(&topo, &p), "0,1,2");
//! let placed = topoprobe_place::describe(&topo, &p);
//! assert_eq!(placed.contexts, vec![0, 1, 2]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod cpuset;
mod error;
pub mod export;
mod kind;
pub mod launch;
mod placement;
mod plan;
mod policy;
mod pool;
pub mod preload;
mod result;
pub mod sockets;
mod summary;

pub use error::{PlaceError, WorkError};
pub use kind::{core_kinds, kind_of, CoreKind, UnknownKind};
pub use placement::Placement;
pub use plan::{plan, Plan, Request};
pub use policy::{Policy, UnknownPolicy};
pub use pool::Pool;
pub use result::{describe, examples, place};
pub use summary::Summary;
pub use topoprobe_model::results::placement::{
    PlacementResult, PlacementSummary, PowerEstimate, SocketUse, ThreadInfo,
};
