//! The results of topoprobe's commands as data: what a library call returns and the CLI
//! writes, as text, JSON or CSV (rendered by `topoprobe-view`). One module per command
//! or family of commands; every type is `Serialize` and documented field by field, since
//! its JSON is a contract scripts read.

pub mod autopin;
pub mod balance;
pub mod bench;
pub mod cache;
pub mod cache_to_cache;
pub mod contention;
pub mod cpus;
pub mod heatmap;
pub mod latency;
pub mod matrix;
pub mod memory;
pub mod os;
pub mod placement;
pub mod power;
