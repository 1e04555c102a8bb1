//! The balancer (after SyMMer, the Systems Mapping Manager): monitor running processes
//! and their threads with pluggable [`metrics`], let [`rules`] propose moves from the
//! measured topology ([`layout`]), and apply those that hold ([`engine`]).

pub mod engine;
pub mod layout;
pub mod metrics;
pub mod rules;
pub mod sample;
