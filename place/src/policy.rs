//! The twelve placement policies of MCTOP-PLACE (paper Table 2).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A placement policy: how threads are mapped to hardware contexts.
///
/// "Compact" policies start on the start socket (the one with the best local memory
/// bandwidth; ties go to the lowest id) and continue to the next sockets in order of
/// latency from it, then bandwidth. Inside a socket, cores are taken in the order of the
/// socket's tree, so that a group (a CCX, an E-core cluster) is used up before the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Policy {
    /// Threads are not pinned.
    None,
    /// The operating system's CPU numbering, in order.
    Sequential,
    /// Every context of a core, core after core, socket after socket.
    ConHwc,
    /// The first context of every core of a socket, then the second contexts; socket after
    /// socket.
    ConCoreHwc,
    /// The first context of every core of all the sockets needed (by core count), then the
    /// second contexts.
    ConCore,
    /// [`Policy::ConHwc`] inside each socket, with the threads balanced across the sockets.
    BalanceHwc,
    /// [`Policy::ConCoreHwc`] inside each socket, with the threads balanced across the
    /// sockets.
    BalanceCoreHwc,
    /// [`Policy::ConCore`] with the threads balanced across the sockets needed by core
    /// count.
    BalanceCore,
    /// Round robin over the sockets; inside a socket as [`Policy::ConHwc`].
    RrHwc,
    /// Round robin over the sockets; inside a socket as [`Policy::ConCoreHwc`].
    RrCore,
    /// Each thread where it adds the least estimated power (needs the power section).
    Power,
    /// [`Policy::RrCore`], with at most as many threads per socket as saturate its local
    /// memory bandwidth first (needs the bandwidth section).
    RrScale,
    /// One thread a core, as far apart as the tree allows: round robin over the sockets,
    /// inside each over its groups at every level (dies, CCXs, clusters), then over their
    /// cores; the second contexts once every core has one (`KMP_AFFINITY=scatter`,
    /// `hwloc-distrib`). Threads that share no cache get the most of every cache.
    Scatter,
    /// An explicit list of CPUs (`run --pin 3,1,2`, like `likwid-pin -c`): thread `i` on
    /// the `i`-th CPU of [`Request::cpus`](crate::Request::cpus), in its order. Not one of
    /// the paper's policies: it is not in [`Policy::ALL`], has no C API number and no
    /// name `--policy` accepts.
    List,
}

impl Policy {
    /// Every policy, in the paper's order.
    pub const ALL: [Self; 13] = [
        Self::None,
        Self::Sequential,
        Self::ConHwc,
        Self::ConCoreHwc,
        Self::ConCore,
        Self::BalanceHwc,
        Self::BalanceCoreHwc,
        Self::BalanceCore,
        Self::RrHwc,
        Self::RrCore,
        Self::Power,
        Self::RrScale,
        Self::Scatter,
    ];

    /// The policy's name as written on the command line and in the C API (`CON_HWC`, ...).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Sequential => "SEQUENTIAL",
            Self::ConHwc => "CON_HWC",
            Self::ConCoreHwc => "CON_CORE_HWC",
            Self::ConCore => "CON_CORE",
            Self::BalanceHwc => "BALANCE_HWC",
            Self::BalanceCoreHwc => "BALANCE_CORE_HWC",
            Self::BalanceCore => "BALANCE_CORE",
            Self::RrHwc => "RR_HWC",
            Self::RrCore => "RR_CORE",
            Self::Power => "POWER",
            Self::RrScale => "RR_SCALE",
            Self::Scatter => "SCATTER",
            Self::List => "LIST",
        }
    }

    /// The number of the policy in the C API (its position in [`Policy::ALL`]);
    /// `u32::MAX` for [`Policy::List`], which has none.
    #[must_use]
    pub fn code(self) -> u32 {
        // ALL has 12 entries.
        Self::ALL
            .iter()
            .position(|&p| p == self)
            .map_or(u32::MAX, |i| i as u32)
    }

    /// The policy with the given C API number.
    #[must_use]
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.get(code as usize).copied()
    }

    /// Whether threads are pinned at all.
    #[must_use]
    pub const fn pins(self) -> bool {
        !matches!(self, Self::None)
    }

    /// One line on what the policy does, including with the P- and E-cores of a hybrid
    /// processor.
    #[must_use]
    pub const fn description(self) -> &'static str {
        match self {
            Self::None => "threads are not pinned; the OS schedules them on any context",
            Self::Sequential => "contexts in the OS's CPU numbering, P- and E-cores as numbered",
            Self::ConHwc => "all contexts of a core, core after core (a group is filled before the next; P-cores before E-cores), socket after socket",
            Self::ConCoreHwc => "one context per core of a socket (P-cores, then E-cores), then the second contexts of the P-cores; socket after socket",
            Self::ConCore => "one context per core of every socket needed, then the second contexts",
            Self::BalanceHwc => "as CON_HWC inside each socket, threads balanced across the sockets",
            Self::BalanceCoreHwc => "as CON_CORE_HWC inside each socket, threads balanced across the sockets",
            Self::BalanceCore => "as CON_CORE, threads balanced across the sockets needed by core count",
            Self::RrHwc => "round robin over the sockets, each filled as CON_HWC",
            Self::RrCore => "round robin over the sockets, each filled as CON_CORE_HWC",
            Self::Power => "each thread where it adds the least estimated power: second contexts, then new cores, then new sockets",
            Self::RrScale => "as RR_CORE, with per-socket thread counts that just saturate local bandwidth first",
            Self::Scatter => "one context per core, spread as far apart as the tree allows: round robin over the sockets, then over each one's groups at every level, then their cores; the second contexts last",
            Self::List => "thread i on the i-th CPU of an explicit list, in its order",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name that is not one of the twelve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown placement policy {name:?}; the policies are: {all}", name = .0, all = Policy::ALL.map(Policy::name).join(", "))]
pub struct UnknownPolicy(pub String);

impl FromStr for Policy {
    type Err = UnknownPolicy;

    /// Parses a policy name, case-insensitively, with `-` or `_` between words and an
    /// optional `MCTOP_PLACE_` prefix.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_uppercase().replace('-', "_");
        let norm = norm.strip_prefix("MCTOP_PLACE_").unwrap_or(&norm);
        Self::ALL
            .into_iter()
            .find(|p| p.name() == norm)
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in Policy::ALL {
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
            assert_eq!(
                p.name().to_lowercase().replace('_', "-").parse::<Policy>(),
                Ok(p)
            );
            assert_eq!(Policy::from_code(p.code()), Some(p));
        }
        assert_eq!("mctop_place_con_hwc".parse::<Policy>(), Ok(Policy::ConHwc));
        let e = "compact".parse::<Policy>().unwrap_err();
        assert!(e.to_string().contains("RR_SCALE"), "{e}");
    }
}
