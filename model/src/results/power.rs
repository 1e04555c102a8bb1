//! `topoprobe power`: RAPL power of every socket under libmctop's load states.

use serde::{Deserialize, Serialize};

use crate::PowerEntry;

/// The power of this machine, or why it could not be measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerResult {
    /// Why nothing was measured (no usable energy counters), when nothing was: the
    /// command then exits 1.
    pub unavailable: Option<String>,
    /// Where the energy came from (`powercap /sys/class/powercap (intel-rapl:0)`).
    pub source: Option<String>,
    /// Length of each measured interval, seconds.
    pub seconds_per_state: Option<f64>,
    /// Whether the cores' power (RAPL PP0) was measured on every socket (otherwise
    /// `cores_w` is 0 and `rest_w` is the package power).
    pub cores_measured: bool,
    /// Whether DRAM power was measured on every socket (otherwise `dram_w` is 0).
    pub dram_measured: bool,
    /// Watts of every socket and of the machine in every load state.
    pub entries: Vec<PowerEntry>,
    /// What the budget changed (shorter intervals, sockets left out).
    pub notes: Vec<String>,
}

impl PowerResult {
    /// A result that says why power could not be measured.
    #[must_use]
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Self {
            unavailable: Some(reason.into()),
            source: None,
            seconds_per_state: None,
            cores_measured: false,
            dram_measured: false,
            entries: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Whether anything was measured.
    #[must_use]
    pub fn measured(&self) -> bool {
        self.unavailable.is_none()
    }
}
