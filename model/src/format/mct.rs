//! libmctop's `.mct` description files.
//!
//! The format is token based, as libmctop reads it with `fscanf`: tokens are separated by
//! white space, and a `#` always starts a new token, even in the middle of a word (libmctop
//! writes its last `Cache_level` line without a newline, straight into
//! `#Power_measurements`). A file holds:
//!
//! - the header `#<host> #HWCs <N> #Nodes <S> SMT <0|1>`;
//! - N² triples `x y latency`, one per ordered pair of contexts (0 on the diagonal);
//! - optional sections, in any order, each a `#Name <count>` header and its data:
//!   - `#Mem_latencies K`: N×K triples `context node latency` (0 where not measured);
//!   - `#Mem_bw-READ K`, `#Mem_bw1-READ K`, `#Mem_bw-WRITE K`, `#Mem_bw1-WRITE K`:
//!     sockets×K triples `socket node GB/s`, measured with every context of the socket
//!     (`bw`) or with one thread (`bw1`);
//!   - `#Cache_levels L`: L lines `Cache_level i Latency l SizeOS s SizeEst e` (sizes in
//!     KiB, 0 when unknown);
//!   - `#Power_measurements K`: for each socket `s` and each of the K load states, a line
//!     `Power_sockt_<s>_<state> cores rest package dram total` (watts), then K lines
//!     `Power_total_<sockets>_<state> ...` for the whole machine.
//!
//! [`write_mct`] writes a [`Topology`] in libmctop's layout.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufWriter, Write};
use std::path::Path;

use super::common::plural;
use super::lexer::{check_latency, read_text, shown, Token, Tokens, ANY_SIZE};
use crate::error::ModelError;
use crate::ids::{ContextId, NodeId, SocketId};
use crate::matrix::LatencyMatrix;
use crate::os_view::CacheType;
use crate::sections::{
    Access, CacheLevel, CacheSection, MemoryBandwidth, MemoryLatency, MemorySection, PowerEntry,
    PowerScope, PowerSection, PowerState, Threads,
};
use crate::topology::Topology;

/// The content of a libmctop `.mct` file.
#[derive(Debug, Clone, PartialEq)]
pub struct MctFile {
    /// The host name of the header (`#<host>`).
    pub host: String,
    /// Number of hardware contexts (`#HWCs`).
    pub contexts: usize,
    /// Number of memory nodes (`#Nodes`; libmctop uses one node per socket).
    pub nodes: usize,
    /// Whether the machine has SMT (`SMT 1`).
    pub smt: bool,
    /// Context-to-context latencies (libmctop writes normalized latencies, in cycles);
    /// `None` on the diagonal.
    pub latency: LatencyMatrix,
    /// Memory latencies and bandwidths, when the file has a `#Mem_…` section. Entries that
    /// libmctop wrote as 0 (not measured) are left out.
    pub memory: Option<MemorySection>,
    /// Cache levels, when the file has a `#Cache_levels` section.
    pub caches: Option<CacheSection>,
    /// Power figures, when the file has a `#Power_measurements` section.
    pub power: Option<PowerSection>,
}

/// Reads a libmctop `.mct` file.
///
/// # Errors
///
/// Returns [`ModelError::Io`] when the file cannot be read, and [`ModelError::Parse`]
/// (naming the file, the line and the problem) when it is not UTF-8 text or not a valid
/// `.mct` file; see [`parse_mct`].
pub fn read_mct(path: &Path) -> Result<MctFile, ModelError> {
    let text = read_text(path, ANY_SIZE)?;
    parse_mct(&text, path)
}

/// Parses the text of a libmctop `.mct` file; `path` is only used in error messages.
///
/// # Errors
///
/// Returns [`ModelError::Parse`] naming `path`, the 1-based line and the problem when the
/// header is malformed; when the latency table is truncated, names a context out of range,
/// lists a pair twice, or holds a value that is not a number, is negative, NaN, infinite,
/// implausibly large or zero off the diagonal; when a section is unknown, appears twice, is
/// truncated or holds malformed data.
pub fn parse_mct(text: &str, path: &Path) -> Result<MctFile, ModelError> {
    Parser {
        toks: Tokens::new(text).break_before(b'#'),
        path,
    }
    .file()
}

/// The libmctop sections with bandwidth data: name, access, threads.
const BANDWIDTH_SECTIONS: [(&str, Access, Threads); 4] = [
    ("#Mem_bw-READ", Access::Read, Threads::AllContexts),
    ("#Mem_bw1-READ", Access::Read, Threads::Single),
    ("#Mem_bw-WRITE", Access::Write, Threads::AllContexts),
    ("#Mem_bw1-WRITE", Access::Write, Threads::Single),
];

const KNOWN_SECTIONS: &str = "#Mem_latencies, #Mem_bw-READ, #Mem_bw1-READ, #Mem_bw-WRITE, \
                              #Mem_bw1-WRITE, #Cache_levels, #Power_measurements";

const HEADER: &str = "`#<host> #HWCs <contexts> #Nodes <nodes> SMT <0|1>`";

struct Parser<'a> {
    toks: Tokens<'a>,
    path: &'a Path,
}

impl<'a> Parser<'a> {
    fn err(&self, line: usize, message: impl Into<String>) -> ModelError {
        ModelError::parse(self.path, line, message)
    }

    /// The next token of a data record: an error when the file ends or a section starts.
    /// `what` says what was being read, for the message.
    fn data(&mut self, what: &dyn Fn() -> String) -> Result<Token<'a>, ModelError> {
        match self.toks.next() {
            None => Err(self.err(
                self.toks.last_line(),
                format!("truncated file: {}, found the end of the file", what()),
            )),
            Some(t) if t.text.starts_with('#') => Err(self.err(
                t.line,
                format!("truncated data: {}, found {}", what(), shown(t.text)),
            )),
            Some(t) => Ok(t),
        }
    }

    /// The next header token, which must be `keyword`.
    fn keyword(&mut self, keyword: &str, after: &str) -> Result<(), ModelError> {
        match self.toks.next() {
            Some(t) if t.text == keyword => Ok(()),
            Some(t) => Err(self.err(
                t.line,
                format!(
                    "bad header: expected `{keyword}` after {after}, found {} (the header is \
                     {HEADER})",
                    shown(t.text)
                ),
            )),
            None => Err(self.err(
                self.toks.last_line(),
                format!(
                    "bad header: expected `{keyword}` after {after}, found the end of the \
                     file"
                ),
            )),
        }
    }

    fn header_number(&mut self, after: &str) -> Result<usize, ModelError> {
        match self.toks.next() {
            Some(t) => t.text.parse().map_err(|_| {
                self.err(
                    t.line,
                    format!(
                        "bad header: expected a whole number after `{after}`, found {}",
                        shown(t.text)
                    ),
                )
            }),
            None => Err(self.err(
                self.toks.last_line(),
                format!("bad header: expected a number after `{after}`, found the end of the file"),
            )),
        }
    }

    fn index(
        &self,
        t: Token<'_>,
        what: &str,
        limit: usize,
        limit_what: &str,
    ) -> Result<usize, ModelError> {
        let v: usize = t.text.parse().map_err(|_| {
            self.err(
                t.line,
                format!("expected {what} (a whole number), found {}", shown(t.text)),
            )
        })?;
        if v >= limit {
            return Err(self.err(t.line, format!("{what} {v} is out of range: {limit_what}")));
        }
        Ok(v)
    }

    fn number(&self, t: Token<'_>, what: &str) -> Result<f64, ModelError> {
        let v: f64 = t.text.parse().map_err(|_| {
            self.err(
                t.line,
                format!("expected {what} (a number), found {}", shown(t.text)),
            )
        })?;
        if !v.is_finite() {
            return Err(self.err(
                t.line,
                format!("{what} is {}: it must be a finite number", shown(t.text)),
            ));
        }
        Ok(v)
    }

    fn file(mut self) -> Result<MctFile, ModelError> {
        let first = self.toks.next().ok_or_else(|| {
            self.err(
                1,
                format!("empty file: expected the libmctop header {HEADER}"),
            )
        })?;
        let host = first.text.strip_prefix('#').ok_or_else(|| {
            self.err(
                first.line,
                format!(
                    "bad header: expected {HEADER}, found {} (is this a libmctop .mct file?)",
                    shown(first.text)
                ),
            )
        })?;
        if host.is_empty() {
            return Err(self.err(
                first.line,
                format!("bad header: the host name after `#` is missing (the header is {HEADER})"),
            ));
        }
        let host = host.to_string();
        self.keyword("#HWCs", "the host name")?;
        let n = self.header_number("#HWCs")?;
        if n == 0 {
            return Err(self.err(
                first.line,
                "bad header: `#HWCs 0`: a machine has at least one hardware context",
            ));
        }
        self.keyword("#Nodes", "the number of contexts")?;
        let nodes = self.header_number("#Nodes")?;
        self.keyword("SMT", "the number of nodes")?;
        let smt = match self.toks.next() {
            Some(t) if t.text == "0" => false,
            Some(t) if t.text == "1" => true,
            Some(t) => {
                return Err(self.err(
                    t.line,
                    format!("bad header: SMT must be 0 or 1, found {}", shown(t.text)),
                ))
            }
            None => {
                return Err(self.err(
                    self.toks.last_line(),
                    "bad header: expected 0 or 1 after `SMT`, found the end of the file",
                ))
            }
        };
        let latency = self.latency_table(n, first.line)?;
        let mut out = MctFile {
            host,
            contexts: n,
            nodes,
            smt,
            latency,
            memory: None,
            caches: None,
            power: None,
        };
        self.sections(&mut out)?;
        Ok(out)
    }

    fn latency_table(&mut self, n: usize, header_line: usize) -> Result<LatencyMatrix, ModelError> {
        // Every triple takes at least 5 bytes ("0 0 1"): refuse to allocate a table that
        // the file cannot hold.
        let room = self.toks.source_len() / 5 + 1;
        let nn = match n.checked_mul(n) {
            Some(nn) if nn <= room => nn,
            _ => {
                return Err(self.err(
                    header_line,
                    format!(
                        "truncated file: `#HWCs {n}` needs {n}×{n} `x y latency` triples, but \
                         the file is only {} bytes long",
                        self.toks.source_len()
                    ),
                ))
            }
        };
        let mut m = LatencyMatrix::empty(n);
        let mut first_line = vec![0_usize; nn];
        let range = format!("the header says #HWCs {n}");
        for k in 0..nn {
            let what = || {
                format!(
                    "the latency table needs {nn} `x y latency` triples (#HWCs {n}), only {k} \
                     are complete"
                )
            };
            let tx = self.data(&what)?;
            let ty = self.data(&what)?;
            let tl = self.data(&what)?;
            let x = self.index(tx, "context", n, &range)?;
            let y = self.index(ty, "context", n, &range)?;
            let slot = &mut first_line[x * n + y];
            if *slot != 0 {
                return Err(self.err(
                    tx.line,
                    format!(
                        "the pair ({x}, {y}) appears twice in the latency table (first at line {})",
                        *slot
                    ),
                ));
            }
            *slot = tx.line;
            let v = check_latency(tl.text).map_err(|problem| {
                self.err(tl.line, format!("latency of ({x}, {y}): {problem}"))
            })?;
            if x != y {
                if v == 0.0 {
                    return Err(self.err(
                        tl.line,
                        format!(
                            "latency of ({x}, {y}) is 0: latencies between different contexts \
                             must be positive"
                        ),
                    ));
                }
                m.set(x, y, Some(v));
            }
        }
        Ok(m)
    }

    fn sections(&mut self, out: &mut MctFile) -> Result<(), ModelError> {
        let mut seen: HashMap<&'a str, usize> = HashMap::new();
        while let Some(t) = self.toks.next() {
            if !t.text.starts_with('#') {
                return Err(self.err(
                    t.line,
                    format!(
                        "expected a section header ({KNOWN_SECTIONS}), found {} (more latency \
                         triples than #HWCs {} announces?)",
                        shown(t.text),
                        out.contexts
                    ),
                ));
            }
            let name = t.text;
            let known = name == "#Mem_latencies"
                || name == "#Cache_levels"
                || name == "#Power_measurements"
                || BANDWIDTH_SECTIONS.iter().any(|s| s.0 == name);
            if !known {
                return Err(self.err(
                    t.line,
                    format!("unknown section {} (known: {KNOWN_SECTIONS})", shown(name)),
                ));
            }
            if let Some(first) = seen.insert(name, t.line) {
                return Err(self.err(
                    t.line,
                    format!("section `{name}` appears twice (first at line {first})"),
                ));
            }
            let k = match self.toks.next() {
                Some(c) if c.text.starts_with('#') => {
                    return Err(self.err(
                        c.line,
                        format!(
                            "truncated section `{name}`: expected its count, found {}",
                            shown(c.text)
                        ),
                    ))
                }
                Some(c) => c.text.parse::<usize>().map_err(|_| {
                    self.err(
                        c.line,
                        format!(
                            "section `{name}`: expected its count (a whole number), found {}",
                            shown(c.text)
                        ),
                    )
                })?,
                None => {
                    return Err(self.err(
                        self.toks.last_line(),
                        format!(
                        "truncated section `{name}`: expected its count, found the end of the file"
                    ),
                    ))
                }
            };
            let section = Section {
                name,
                count: k,
                line: t.line,
            };
            if name == "#Mem_latencies" {
                let lat = self.memory_latencies(&section, out.contexts)?;
                out.memory
                    .get_or_insert_with(MemorySection::default)
                    .latency = lat;
            } else if name == "#Cache_levels" {
                out.caches = Some(self.caches(&section)?);
            } else if name == "#Power_measurements" {
                out.power = Some(self.power(&section)?);
            } else if let Some(&(_, access, threads)) =
                BANDWIDTH_SECTIONS.iter().find(|s| s.0 == name)
            {
                let bw = self.bandwidth(&section, access, threads)?;
                out.memory
                    .get_or_insert_with(MemorySection::default)
                    .bandwidth
                    .extend(bw);
            }
        }
        Ok(())
    }

    fn memory_latencies(
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

    fn bandwidth(
        &mut self,
        s: &Section<'_>,
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

    fn caches(&mut self, s: &Section<'_>) -> Result<CacheSection, ModelError> {
        let mut levels: Vec<CacheLevel> = Vec::new();
        for i in 0..s.count {
            let what = || {
                format!(
                    "section `{} {}` needs {} `Cache_level i Latency l SizeOS s SizeEst e`, \
                     only {i} are complete",
                    s.name,
                    s.count,
                    plural(s.count, "line")
                )
            };
            let field = |this: &mut Self, key: &str| -> Result<Token<'a>, ModelError> {
                let t = this.data(&what)?;
                if t.text != key {
                    return Err(this.err(
                        t.line,
                        format!(
                            "section `{}`: expected `{key}`, found {} (lines are `Cache_level i \
                             Latency l SizeOS s SizeEst e`)",
                            s.name,
                            shown(t.text)
                        ),
                    ));
                }
                this.data(&what)
            };
            let tl = field(self, "Cache_level")?;
            let tlat = field(self, "Latency")?;
            let tos = field(self, "SizeOS")?;
            let test = field(self, "SizeEst")?;
            let level: u32 = tl.text.parse().map_err(|_| {
                self.err(
                    tl.line,
                    format!(
                        "section `{}`: expected a cache level number, found {}",
                        s.name,
                        shown(tl.text)
                    ),
                )
            })?;
            if levels.iter().any(|l| mct_cache_line(l) == level) {
                return Err(self.err(
                    tl.line,
                    format!("section `{}`: cache level {level} appears twice", s.name),
                ));
            }
            let latency = check_latency(tlat.text).map_err(|problem| {
                self.err(
                    tlat.line,
                    format!("section `{}`: level {level}: {problem}", s.name),
                )
            })?;
            let size = |this: &Self, t: Token<'_>, what: &str| -> Result<Option<u64>, ModelError> {
                let v: u64 = t.text.parse().map_err(|_| {
                    this.err(
                        t.line,
                        format!(
                            "section `{}`: level {level}: expected the {what} in KiB (a whole \
                             number), found {}",
                            s.name,
                            shown(t.text)
                        ),
                    )
                })?;
                Ok((v > 0).then_some(v))
            };
            // libmctop's line 0 is the L1 instruction cache, line 1 the L1 data cache.
            let (number, kind) = match level {
                0 => (1, CacheType::Instruction),
                1 => (1, CacheType::Data),
                n => (n, CacheType::Unified),
            };
            levels.push(CacheLevel {
                latency: (latency > 0.0).then_some(latency),
                os_size_kib: size(self, tos, "size the OS reports")?,
                measured_size_kib: size(self, test, "measured size")?,
                ..CacheLevel::new(number, Some(kind))
            });
        }
        Ok(CacheSection { levels })
    }

    fn power(&mut self, s: &Section<'_>) -> Result<PowerSection, ModelError> {
        let mut entries: Vec<PowerEntry> = Vec::new();
        let mut first: HashMap<(PowerScope, PowerState), usize> = HashMap::new();
        while self.toks.peek().is_some_and(|t| !t.text.starts_with('#')) {
            let what = || format!("section `{} {}`: expected a power line", s.name, s.count);
            let t = self.data(&what)?;
            let (scope, rest) = if let Some(rest) = t.text.strip_prefix("Power_sockt_") {
                (None, rest)
            } else if let Some(rest) = t.text.strip_prefix("Power_total_") {
                (Some(()), rest)
            } else {
                return Err(self.err(
                    t.line,
                    format!(
                        "section `{}`: expected `Power_sockt_<socket>_<state>` or \
                         `Power_total_<sockets>_<state>`, found {}",
                        s.name,
                        shown(t.text)
                    ),
                ));
            };
            let bad_name = || {
                self.err(
                    t.line,
                    format!(
                        "section `{}`: malformed power line name {} (expected \
                         `Power_sockt_<socket>_<state>` or `Power_total_<sockets>_<state>`)",
                        s.name,
                        shown(t.text)
                    ),
                )
            };
            let (number, state_name) = rest.split_once('_').ok_or_else(bad_name)?;
            let number: usize = number.parse().map_err(|_| bad_name())?;
            let state = PowerState::from_mct_name(state_name).ok_or_else(|| {
                self.err(
                    t.line,
                    format!(
                        "section `{}`: unknown power state {} (expected one of idle, 1stcore, \
                         2ndcore, 2ndhwc, allcor, allhwc)",
                        s.name,
                        shown(state_name)
                    ),
                )
            })?;
            let scope = match scope {
                None => PowerScope::Socket(SocketId(number)),
                Some(()) => PowerScope::Total,
            };
            if let Some(line) = first.insert((scope, state), t.line) {
                return Err(self.err(
                    t.line,
                    format!(
                        "section `{}`: {} appears twice (first at line {line})",
                        s.name, t.text
                    ),
                ));
            }
            let mut values = [0.0; 5];
            for (i, v) in values.iter_mut().enumerate() {
                let what = || {
                    format!(
                        "section `{}`: `{}` needs 5 values (cores, rest, package, dram, total \
                         watts), only {i} are there",
                        s.name, t.text
                    )
                };
                let tv = self.data(&what)?;
                if tv.text.starts_with("Power_") {
                    return Err(self.err(t.line, format!("truncated data: {}", what())));
                }
                *v = self.number(tv, "power")?;
            }
            let [cores_w, rest_w, package_w, dram_w, total_w] = values;
            entries.push(PowerEntry {
                scope,
                state,
                cores_w,
                rest_w,
                package_w,
                dram_w,
                total_w,
            });
        }
        let mut per_scope: BTreeMap<(usize, usize), (PowerScope, usize)> = BTreeMap::new();
        for e in &entries {
            per_scope
                .entry(scope_key(&e.scope))
                .or_insert((e.scope, 0))
                .1 += 1;
        }
        if entries.is_empty() && s.count > 0 {
            return Err(self.err(
                s.line,
                format!(
                    "truncated section `{} {}`: expected {} per socket and for the total, \
                     found none",
                    s.name,
                    s.count,
                    plural(s.count, "line")
                ),
            ));
        }
        for &(scope, found) in per_scope.values() {
            if found != s.count {
                let scope = match scope {
                    PowerScope::Socket(id) => format!("socket {}", id.0),
                    PowerScope::Total => "the total".to_string(),
                };
                return Err(self.err(
                    s.line,
                    format!(
                        "section `{} {}`: {scope} has {}, expected {} (one per load state; \
                         truncated?)",
                        s.name,
                        s.count,
                        plural(found, "line"),
                        s.count
                    ),
                ));
            }
        }
        Ok(PowerSection { entries })
    }
}

/// A section header: name, count and line.
struct Section<'a> {
    name: &'a str,
    count: usize,
    line: usize,
}

impl Section<'_> {
    /// The count of a memory section: a number of nodes, at least 1.
    fn nodes(&self, p: &Parser<'_>) -> Result<usize, ModelError> {
        if self.count == 0 {
            return Err(p.err(
                self.line,
                format!(
                    "section `{} 0`: the number of memory nodes must be at least 1",
                    self.name
                ),
            ));
        }
        Ok(self.count)
    }
}

/// Sockets in id order, then the total.
fn scope_key(s: &PowerScope) -> (usize, usize) {
    match s {
        PowerScope::Socket(id) => (0, id.0),
        PowerScope::Total => (1, 0),
    }
}

/// A latency as libmctop writes it: a whole number, at least 1 for a measured value; 0 for
/// none.
fn whole(v: Option<f64>) -> u64 {
    match v {
        Some(v) if v.is_finite() => {
            let r = v.round();
            if r < 1.0 {
                1
            } else {
                // Saturates for values beyond u64 (never produced by a reader).
                r as u64
            }
        }
        _ => 0,
    }
}

/// A host name usable as the first header token: no white space, no `#`.
fn header_host(topo: &Topology) -> String {
    let host = topo
        .machine()
        .hostname
        .as_deref()
        .filter(|h| !h.trim().is_empty())
        .unwrap_or("topoprobe");
    host.chars()
        .map(|c| {
            if c.is_whitespace() || c == '#' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Writes a topology in libmctop's `.mct` layout.
///
/// The header is `#<host> #HWCs <n> #Nodes <nodes> SMT <0|1>`, with the machine's host name
/// (`topoprobe` when unknown; white space and `#` replaced by `_`) and the number of memory
/// nodes (the number of sockets when no node is known). Then come N² lines `x y latency`
/// with the normalized latency rounded to a whole number (0 on the diagonal, at least 1 off
/// it; the raw latency where the normalized one is missing, the reverse direction where
/// both are missing, 0 when the pair has no latency at all, which libmctop cannot express),
/// then the memory sections (latencies and bandwidths, 0 where not measured; memory
/// latencies rounded like the latency table; copy bandwidths and fixed thread counts have
/// no place in the format and are left out), the cache levels and the power figures, each
/// only when the topology has them.
///
/// The format holds cycles. A topology in nanoseconds is converted with the clock
/// frequency `ghz`, or else the one recorded in its provenance (`ghz` parameter).
///
/// # Errors
///
/// Returns the error of the writer, or an [`std::io::ErrorKind::InvalidInput`] error when
/// the topology is in nanoseconds and no frequency is known.
pub fn write_mct(topo: &Topology, ghz: Option<f64>, w: &mut impl Write) -> std::io::Result<()> {
    let scale = cycles_per_unit(topo, ghz)?;
    let whole = |v: Option<f64>| whole(v.map(|x| x * scale));
    let mut w = BufWriter::new(w);
    let n = topo.num_contexts();
    let nodes = if topo.num_nodes() > 0 {
        topo.num_nodes()
    } else {
        topo.num_sockets()
    };
    writeln!(
        w,
        "#{} #HWCs {n} #Nodes {nodes} SMT {}",
        header_host(topo),
        u8::from(topo.has_smt())
    )?;
    let t = topo.latency_tables();
    for x in 0..n {
        for y in 0..n {
            let lat = if x == y {
                0
            } else {
                whole(
                    t.normalized
                        .get(x, y)
                        .or_else(|| t.raw.get(x, y))
                        .or_else(|| t.normalized.get(y, x))
                        .or_else(|| t.raw.get(y, x)),
                )
            };
            writeln!(w, "{x:<4} {y:<4} {lat}")?;
        }
    }
    if let Some(mem) = topo.memory() {
        write_memory(&mut w, mem, n, nodes, topo.num_sockets(), scale)?;
    }
    if let Some(caches) = topo.caches() {
        writeln!(w, "#Cache_levels {}", caches.levels.len())?;
        let mut levels: Vec<(u32, &CacheLevel)> = caches
            .levels
            .iter()
            .map(|l| (mct_cache_line(l), l))
            .collect();
        levels.sort_by_key(|(line, _)| *line);
        for (line, l) in levels {
            writeln!(
                w,
                "Cache_level {:<3} Latency {:<6} SizeOS {:<5} SizeEst {:<5}",
                line,
                whole(l.latency),
                l.os_size_kib.unwrap_or(0),
                l.measured_size_kib.unwrap_or(0)
            )?;
        }
    }
    if let Some(power) = topo.power() {
        write_power(&mut w, power, topo.num_sockets())?;
    }
    w.flush()
}

/// libmctop's line number of a cache level: 0 for the L1 instruction cache, 1 for L1
/// data (or unified), the level number above.
fn mct_cache_line(l: &CacheLevel) -> u32 {
    match (l.level, l.kind) {
        (1, Some(CacheType::Instruction)) => 0,
        (n, _) => n,
    }
}

/// Cycles per latency unit of a topology: 1 for cycles, the clock frequency in GHz for ns.
fn cycles_per_unit(topo: &Topology, ghz: Option<f64>) -> std::io::Result<f64> {
    match topo.units() {
        crate::units::LatencyUnit::Cycles => Ok(1.0),
        crate::units::LatencyUnit::Ns => ghz
            .or_else(|| {
                topo.provenance()
                    .parameters
                    .get("ghz")
                    .and_then(|g| g.parse().ok())
            })
            .filter(|g: &f64| g.is_finite() && *g > 0.0)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the .mct format holds latencies in cycles and this topology is in ns: \
                     give the clock frequency (--ghz) to convert them",
                )
            }),
    }
}

fn write_memory(
    w: &mut impl Write,
    mem: &MemorySection,
    n: usize,
    nodes: usize,
    sockets: usize,
    scale: f64,
) -> std::io::Result<()> {
    if !mem.latency.is_empty() {
        let k = mem
            .latency
            .iter()
            .map(|l| l.node.0 + 1)
            .fold(nodes.max(1), usize::max);
        let mut table: HashMap<(usize, usize), f64> = HashMap::new();
        for l in &mem.latency {
            table.entry((l.context.0, l.node.0)).or_insert(l.latency);
        }
        writeln!(w, "#Mem_latencies {k}")?;
        for c in 0..n {
            for node in 0..k {
                let v = table.get(&(c, node)).copied().filter(|v| *v > 0.0);
                writeln!(w, "{c:<4} {node:<4} {}", whole(v.map(|x| x * scale)))?;
            }
        }
    }
    for (name, access, threads) in BANDWIDTH_SECTIONS {
        let entries: Vec<&MemoryBandwidth> = mem
            .bandwidth
            .iter()
            .filter(|b| b.access == access && b.threads == threads)
            .collect();
        if entries.is_empty() {
            continue;
        }
        let k = entries
            .iter()
            .map(|b| b.node.0 + 1)
            .fold(nodes.max(1), usize::max);
        let s_count = entries
            .iter()
            .map(|b| b.socket.0 + 1)
            .fold(sockets.max(1), usize::max);
        let mut table: HashMap<(usize, usize), f64> = HashMap::new();
        for b in &entries {
            table.entry((b.socket.0, b.node.0)).or_insert(b.gbps);
        }
        writeln!(w, "{name} {k}")?;
        for s in 0..s_count {
            for node in 0..k {
                let v = table.get(&(s, node)).copied().unwrap_or(0.0);
                writeln!(w, "{s:<4} {node:<4} {v:.6}")?;
            }
        }
    }
    Ok(())
}

fn write_power(w: &mut impl Write, power: &PowerSection, sockets: usize) -> std::io::Result<()> {
    let mut states: Vec<PowerState> = Vec::new();
    for s in PowerState::ALL {
        if power.entries.iter().any(|e| e.state == s) {
            states.push(s);
        }
    }
    let mut scopes: Vec<PowerScope> = power.entries.iter().map(|e| e.scope).collect();
    scopes.sort_by_key(scope_key);
    scopes.dedup();
    writeln!(w, "#Power_measurements {}", states.len())?;
    for scope in scopes {
        for &state in &states {
            let Some(e) = power
                .entries
                .iter()
                .find(|e| e.scope == scope && e.state == state)
            else {
                continue;
            };
            match scope {
                PowerScope::Socket(s) => write!(w, "Power_sockt_{}_{} \t", s.0, state.mct_name())?,
                PowerScope::Total => write!(w, "Power_total_{sockets}_{} \t", state.mct_name())?,
            }
            for v in [e.cores_w, e.rest_w, e.package_w, e.dram_w, e.total_w] {
                write!(w, "{v:<10.6} ")?;
            }
            writeln!(w)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MctFile, ModelError> {
        parse_mct(text, Path::new("t.mct"))
    }

    fn err(text: &str) -> (usize, String) {
        match parse(text) {
            Err(ModelError::Parse { line, message, .. }) => (line, message),
            other => panic!("expected a parse error for {text:?}, got {other:?}"),
        }
    }

    const SMALL: &str = "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 10\n1 0 10\n1 1 0\n";

    #[test]
    fn minimal_file() {
        let f = parse(SMALL).unwrap();
        assert_eq!(
            (f.host.as_str(), f.contexts, f.nodes, f.smt),
            ("h", 2, 1, false)
        );
        assert_eq!(f.latency.get(0, 1), Some(10.0));
        assert_eq!(f.latency.get(0, 0), None);
        assert!(f.memory.is_none() && f.caches.is_none() && f.power.is_none());
    }

    #[test]
    fn sections_in_any_order() {
        let text = format!(
            "{SMALL}#Cache_levels 1\nCache_level 0 Latency 4 SizeOS 32 SizeEst 0#Mem_bw1-WRITE 1\n\
             0 0 5.5\n#Mem_latencies 1\n0 0 200\n1 0 0\n"
        );
        let f = parse(&text).unwrap();
        let c = f.caches.unwrap();
        assert_eq!(
            c.levels,
            [CacheLevel {
                latency: Some(4.0),
                os_size_kib: Some(32),
                ..CacheLevel::new(1, Some(CacheType::Instruction))
            }]
        );
        let m = f.memory.unwrap();
        assert_eq!(m.latency.len(), 1);
        assert_eq!(m.bandwidth[0].access, Access::Write);
        assert_eq!(m.bandwidth[0].threads, Threads::Single);
        assert_eq!(m.bandwidth[0].gbps, 5.5);
    }

    #[test]
    fn errors() {
        let cases: Vec<(String, usize, &str)> = vec![
            (String::new(), 1, "empty file"),
            ("hello".into(), 1, "bad header"),
            ("#h #HWC 2".into(), 1, "expected `#HWCs`"),
            ("#h #HWCs x".into(), 1, "whole number"),
            ("#h #HWCs 2 #Nodes 1 SMT 2".into(), 1, "SMT must be 0 or 1"),
            (
                "#h #HWCs 99999999999 #Nodes 1 SMT 0\n0 0 0".into(),
                1,
                "truncated file",
            ),
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 10\n".into(),
                3,
                "only 2 are complete",
            ),
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 10\n#Mem_latencies 1".into(),
                4,
                "truncated data",
            ),
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 10\n0 1 10\n1 1 0".into(),
                4,
                "appears twice",
            ),
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 2 10\n".into(),
                3,
                "out of range",
            ),
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 0\n".into(),
                3,
                "must be positive",
            ),
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 -4\n".into(),
                3,
                "negative",
            ),
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 nan\n".into(),
                3,
                "NaN",
            ),
            (format!("{SMALL}#Foo 3\n"), 6, "unknown section \"#Foo\""),
            (format!("{SMALL}1 1 1\n"), 6, "more latency triples"),
            (
                format!("{SMALL}#Mem_latencies 1\n0 0 1\n"),
                7,
                "only 1 are complete",
            ),
            (format!("{SMALL}#Mem_latencies 0\n"), 6, "at least 1"),
            (
                format!("{SMALL}#Mem_bw-READ 2\n0 0 1\n0 1 1\n1 0 1\n"),
                6,
                "multiple of 2",
            ),
            (
                format!("{SMALL}#Mem_bw-READ 1\n0 0 1\n0 0 1\n"),
                8,
                "socket 0 and node 0 appear twice",
            ),
            (
                format!("{SMALL}#Mem_bw-READ 1\n0 0 1\n3 0 1\n"),
                8,
                "socket 3 is out of range",
            ),
            (
                format!("{SMALL}#Mem_bw-READ 1\n0 0 1\n#Mem_bw-READ 1\n0 0 1\n"),
                8,
                "appears twice",
            ),
            (
                format!("{SMALL}#Cache_levels 2\nCache_level 0 Latency 1 SizeOS 1 SizeEst 1\n"),
                7,
                "only 1 are complete",
            ),
            (
                format!("{SMALL}#Cache_levels 1\nCache_level 0 Lat 1 SizeOS 1 SizeEst 1\n"),
                7,
                "expected `Latency`",
            ),
            (
                format!("{SMALL}#Cache_levels 1\nCache_level 0 Latency 1 SizeOS 1.5 SizeEst 1\n"),
                7,
                "whole number",
            ),
            (
                format!("{SMALL}#Power_measurements 1\nPower_sockt_0_idle 1 2 3\n"),
                7,
                "only 3 are there",
            ),
            (
                format!("{SMALL}#Power_measurements 1\nPower_sockt_0_busy 1 2 3 4 5\n"),
                7,
                "unknown power state",
            ),
            (
                format!("{SMALL}#Power_measurements 2\nPower_sockt_0_idle 1 2 3 4 5\n"),
                6,
                "socket 0 has 1 line, expected 2",
            ),
            (
                format!("{SMALL}#Power_measurements 1\nPowerX 1 2 3 4 5\n"),
                7,
                "expected `Power_sockt_",
            ),
            (
                format!("{SMALL}#Power_measurements 1\nPower_sockt_x_idle 1 2 3 4 5\n"),
                7,
                "malformed",
            ),
            (
                format!("{SMALL}#Power_measurements 1\nPower_sockt_0_idle 1 2 3 4 inf\n"),
                7,
                "finite",
            ),
        ];
        for (text, line, needle) in cases {
            let (l, message) = err(&text);
            assert!(message.contains(needle), "{text:?}: {message}");
            assert_eq!(l, line, "{text:?}: {message}");
        }
    }

    #[test]
    fn whole_rounds_and_keeps_measured_values_positive() {
        assert_eq!(whole(None), 0);
        assert_eq!(whole(Some(0.2)), 1);
        assert_eq!(whole(Some(41.5)), 42);
        assert_eq!(whole(Some(f64::NAN)), 0);
        assert_eq!(whole(Some(1e300)), u64::MAX);
    }
}
