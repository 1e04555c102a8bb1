//! The integration tests of this crate, in one test binary (one link instead of one per file).

mod cache_to_cache;
mod locks;
