//! Simulator of synthetic machines.
