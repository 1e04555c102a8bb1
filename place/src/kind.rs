//! Core kinds of hybrid processors (P-cores and E-cores).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use topoprobe_model::{CoreId, Topology};

/// The kind of a core on a hybrid processor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoreKind {
    /// A performance core (Intel P-core).
    Performance,
    /// An efficiency core (Intel E-core).
    Efficiency,
}

impl CoreKind {
    /// Short name: `p` or `e`.
    #[must_use]
    pub const fn short(self) -> &'static str {
        match self {
            Self::Performance => "p",
            Self::Efficiency => "e",
        }
    }
}

impl fmt::Display for CoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Performance => "P-cores",
            Self::Efficiency => "E-cores",
        })
    }
}

/// A core-kind name that is not `p` or `e`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown core kind {0:?}: use p (performance) or e (efficiency)")]
pub struct UnknownKind(pub String);

impl FromStr for CoreKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "p" | "performance" | "p-core" | "pcore" => Ok(Self::Performance),
            "e" | "efficiency" | "e-core" | "ecore" => Ok(Self::Efficiency),
            _ => Err(UnknownKind(s.to_string())),
        }
    }
}

/// The kind of every core (indexed by [`CoreId`]), when the topology shows two kinds: the
/// cores with the most contexts are P-cores, the others E-cores (Intel hybrids: P-cores
/// have SMT, E-cores do not). `None` when every core has the same number of contexts.
#[must_use]
pub fn core_kinds(topo: &Topology) -> Option<Vec<CoreKind>> {
    let sizes: Vec<usize> = topo.cores().iter().map(|c| c.contexts.len()).collect();
    let max = sizes.iter().copied().max()?;
    let min = sizes.iter().copied().min()?;
    if max == min {
        return None;
    }
    Some(
        sizes
            .into_iter()
            .map(|n| {
                if n == max {
                    CoreKind::Performance
                } else {
                    CoreKind::Efficiency
                }
            })
            .collect(),
    )
}

/// The kind of one core, given [`core_kinds`]'s result.
#[must_use]
pub fn kind_of(kinds: Option<&[CoreKind]>, core: CoreId) -> Option<CoreKind> {
    kinds.and_then(|k| k.get(core.index()).copied())
}
