//! The data of the memory sections: `#Mem_latencies` and the four bandwidth sections.

use std::collections::HashSet;

use super::{Parser, Section};
use crate::error::ModelError;
use crate::format::common::plural;
use crate::format::lexer::{check_latency, shown, Token};
use crate::ids::{ContextId, NodeId, SocketId};
use crate::sections::{Access, MemoryBandwidth, MemoryLatency, Threads};

impl<'a> Parser<'a> {
    /// The triples of `#Mem_latencies`, one per context and node; measured ones only.
    pub(super) fn memory_latencies(
        &mut self,
        s: &Section<'_>,
        n: usize,
    ) -> Result<Vec<MemoryLatency>, ModelError> {
        let k = s.nodes(self)?;
        let expected = n
            .checked_mul(k)
            .ok_or_else(|| self.err(s.line, format!("section `{} {k}`: too many nodes", s.name)))?;
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let nodes_range = format!("the section header says {}", plural(k, "node"));
        let ctx_range = format!("the header says #HWCs {n}");
        for i in 0..expected {
            let what = || {
                format!(
                    "section `{} {k}` needs {expected} `context node latency` triples \
                     ({n} contexts × {k} nodes), only {i} are complete",
                    s.name
                )
            };
            let tc = self.data(&what)?;
            let tn = self.data(&what)?;
            let tl = self.data(&what)?;
            let c = self.index(tc, "context", n, &ctx_range)?;
            let node = self.index(tn, "node", k, &nodes_range)?;
            if !seen.insert((c, node)) {
                return Err(self.err(
                    tc.line,
                    format!(
                        "section `{}`: context {c} and node {node} appear twice",
                        s.name
                    ),
                ));
            }
            let v = check_latency(tl.text).map_err(|problem| {
                self.err(
                    tl.line,
                    format!(
                        "section `{}`: memory latency of context {c} to node {node}: {problem}",
                        s.name
                    ),
                )
            })?;
            if v > 0.0 {
                out.push(MemoryLatency {
                    context: ContextId(c),
                    node: NodeId(node),
                    latency: v,
                    cycles: None,
                });
            }
        }
        Ok(out)
    }

    /// The triples of a bandwidth section, one per socket and node; measured ones only.
    pub(super) fn bandwidth(
        &mut self,
        s: &Section<'a>,
        access: Access,
        threads: Threads,
    ) -> Result<Vec<MemoryBandwidth>, ModelError> {
        let k = s.nodes(self)?;
        let nodes_range = format!("the section header says {}", plural(k, "node"));
        let mut raw: Vec<(Token<'a>, usize, usize, f64)> = Vec::new();
        while self.toks.peek().is_some_and(|t| !t.text.starts_with('#')) {
            let i = raw.len();
            let what = || {
                format!(
                    "section `{} {k}`: triple {} (`socket node GB/s`) is incomplete",
                    s.name,
                    i + 1
                )
            };
            let ts = self.data(&what)?;
            let tn = self.data(&what)?;
            let tv = self.data(&what)?;
            let socket: usize = ts.text.parse().map_err(|_| {
                self.err(
                    ts.line,
                    format!("expected socket (a whole number), found {}", shown(ts.text)),
                )
            })?;
            let node = self.index(tn, "node", k, &nodes_range)?;
            let gbps = self.number(tv, "bandwidth")?;
            if gbps < 0.0 {
                return Err(self.err(
                    tv.line,
                    format!(
                        "section `{}`: negative bandwidth {}",
                        s.name,
                        shown(tv.text)
                    ),
                ));
            }
            raw.push((ts, socket, node, gbps));
        }
        if raw.is_empty() || !raw.len().is_multiple_of(k) {
            return Err(self.err(
                s.line,
                format!(
                    "section `{} {k}` has {}: expected one `socket node GB/s` triple per socket \
                     and node, a non-zero multiple of {k} (truncated?)",
                    s.name,
                    plural(raw.len(), "triple")
                ),
            ));
        }
        let sockets = raw.len() / k;
        self.agree_on_sockets(sockets, s.name, s.line)?;
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for (t, socket, node, gbps) in raw {
            if socket >= sockets {
                return Err(self.err(
                    t.line,
                    format!(
                        "section `{}`: socket {socket} is out of range: {} triples for {k} nodes \
                         make {}",
                        s.name,
                        sockets * k,
                        plural(sockets, "socket")
                    ),
                ));
            }
            if !seen.insert((socket, node)) {
                return Err(self.err(
                    t.line,
                    format!(
                        "section `{}`: socket {socket} and node {node} appear twice",
                        s.name
                    ),
                ));
            }
            if gbps > 0.0 {
                out.push(MemoryBandwidth {
                    socket: SocketId(socket),
                    node: NodeId(node),
                    access,
                    threads,
                    gbps,
                });
            }
        }
        Ok(out)
    }
}
