//! One module per command.

pub(crate) mod autopin;
pub(crate) mod balance;
pub(crate) mod bench;
pub(crate) mod cache;
pub(crate) mod contention;
pub(crate) mod cpus;
pub(crate) mod heatmap;
pub(crate) mod infer;
pub(crate) mod latency;
pub(crate) mod matrix;
pub(crate) mod mem;
pub(crate) mod mem_c2c;
pub(crate) mod os;
pub(crate) mod packaging;
pub(crate) mod place;
pub(crate) mod power;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod show;
