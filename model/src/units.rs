//! Units of latency values.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The unit every latency of a topology is expressed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LatencyUnit {
    /// Nanoseconds.
    ///
    /// What core-to-core-latency and topoprobe's probe report.
    #[default]
    Ns,
    /// Cycles.
    ///
    /// CPU or timestamp-counter cycles (what libmctop reports).
    Cycles,
}

impl LatencyUnit {
    /// The short name used in text output and on the command line (`ns` or `cycles`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ns => "ns",
            Self::Cycles => "cycles",
        }
    }
}

impl fmt::Display for LatencyUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error returned when a unit name is neither `ns` nor `cycles`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown latency unit {0:?} (expected `ns` or `cycles`)")]
pub struct UnknownUnit(pub String);

impl FromStr for LatencyUnit {
    type Err = UnknownUnit;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ns" | "nanoseconds" => Ok(Self::Ns),
            "cycles" | "cycle" => Ok(Self::Cycles),
            _ => Err(UnknownUnit(s.to_string())),
        }
    }
}
