//! The integration tests of this crate, in one test binary (one link instead of one per file).

mod formats;
mod hardening;
mod hwloc_xml;
mod queries;
