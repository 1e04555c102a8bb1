//! The integration tests of this crate, in one test binary (one link instead of one per file).

mod cpuset;
mod launch;
mod policies;
mod slots;
