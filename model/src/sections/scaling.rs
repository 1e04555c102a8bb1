//! Bandwidth scalability across one socket (Servet Fig. 9): the copy bandwidth as threads
//! are added, and the thread count from which they contend.

use serde::{Deserialize, Serialize};

use crate::ids::{ContextId, SocketId};

/// Total copy bandwidth of a number of threads copying at once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Threads copying at once.
    pub threads: usize,
    /// Their total bandwidth, GB/s.
    pub gbps: f64,
}

/// Copy bandwidth as threads are added across the contexts of one socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketCurve {
    /// The socket.
    pub socket: SocketId,
    /// Its contexts in the order threads are added (one per core first, spread over the
    /// socket's groups); the curve may stop before the last.
    pub contexts: Vec<ContextId>,
    /// Total bandwidth at 1, 2, 4, … threads (and at the largest count measured).
    pub points: Vec<CurvePoint>,
    /// Smallest thread count from which every thread gets less than 90% of the bandwidth
    /// of one thread alone (absent: no contention up to the largest count measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention_from: Option<usize>,
}

impl SocketCurve {
    /// Largest thread count measured.
    #[must_use]
    pub fn max_threads(&self) -> usize {
        self.points.iter().map(|p| p.threads).max().unwrap_or(0)
    }

    /// One sentence for people: `contention from 4 threads: …` or
    /// `no contention up to 16 threads`.
    #[must_use]
    pub fn summary(&self, alone_gbps: f64) -> String {
        let n = self.max_threads();
        let of = if n < self.contexts.len() {
            format!(" (of {} contexts)", self.contexts.len())
        } else {
            String::new()
        };
        match self.contention_from {
            None => format!(
                "no contention up to {n} thread{}{of}: each gets at least 90% of the bandwidth alone",
                if n == 1 { "" } else { "s" }
            ),
            Some(k) => {
                let share = self
                    .points
                    .iter()
                    .find(|p| p.threads == n)
                    .filter(|_| alone_gbps > 0.0 && n > 0)
                    .map(|p| p.gbps / n as f64 / alone_gbps);
                match share {
                    Some(s) => format!(
                        "contention from {k} threads{of}: at {n} each gets {:.0}% of the bandwidth alone",
                        s * 100.0
                    ),
                    None => format!("contention from {k} threads{of}"),
                }
            }
        }
    }
}
