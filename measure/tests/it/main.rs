//! The integration tests of this crate, in one test binary (one link instead of one per file).

#[path = "support/hwloc.rs"]
mod hwloc;
#[path = "support/tree.rs"]
mod tree;

mod cache_curves;
mod os_agreement;
mod os_captures;
mod os_classes;
