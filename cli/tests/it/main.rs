//! The integration tests of this crate, in one test binary (one link instead of one per file).

mod autopin;
mod balance;
mod bench;
mod bench_output;
mod cli;
mod common;
mod cpus;
mod hardening;
mod hints;
mod hwloc;
mod live;
mod measuring;
mod one_language;
mod os_command;
mod os_view_fallback;
mod packaging;
mod place;
mod placing;
mod plugins;
mod power;
mod signals;
mod views;
mod views_output;
mod virtual_servers;
