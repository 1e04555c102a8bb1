//! Reading libmctop's `.mct` files: the token helpers and the section headers here; the
//! header in `header`, the latency table in `latency`, the data of the memory sections in
//! `memory`, of `#Cache_levels` in `caches` and of `#Power_measurements` in `power`.

mod caches;
mod header;
mod latency;
mod memory;
mod power;

use std::collections::HashMap;
use std::path::Path;

use super::layout::{MctFile, BANDWIDTH_SECTIONS};
use crate::error::ModelError;
use crate::format::common::plural;
use crate::format::lexer::{read_text, shown, strip_bom, Token, Tokens};
use crate::limits::MAX_FILE_BYTES;
use crate::sections::MemorySection;

/// Reads a libmctop `.mct` file.
///
/// # Errors
///
/// Returns [`ModelError::Io`] when the file cannot be read, and [`ModelError::Parse`]
/// (naming the file, the line and the problem) when it is not UTF-8 text or not a valid
/// `.mct` file; see [`parse_mct`].
pub fn read_mct(path: &Path) -> Result<MctFile, ModelError> {
    let text = read_text(path, MAX_FILE_BYTES)?;
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
        toks: Tokens::new(strip_bom(text)).break_before(b'#'),
        path,
        sockets: None,
    }
    .file()
}

/// The section names, for messages.
const KNOWN_SECTIONS: &str = "#Mem_latencies, #Mem_bw-READ, #Mem_bw1-READ, #Mem_bw-WRITE, \
                              #Mem_bw1-WRITE, #Cache_levels, #Power_measurements";

/// A reader of one `.mct` text; the methods of each kind of section are in the submodule
/// of that name.
struct Parser<'a> {
    /// The tokens of the text; a `#` starts a token.
    toks: Tokens<'a>,
    /// The file, for messages.
    path: &'a Path,
    /// The number of sockets the first section with per-socket data gives: count, section
    /// name and line; every later such section must agree.
    sockets: Option<(usize, &'a str, usize)>,
}

impl<'a> Parser<'a> {
    /// A parse error at `line`.
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

    /// A token holding an index below `limit` (`what` names the index, `limit_what` says
    /// where the limit comes from, both for the message).
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

    /// A token holding a finite number (`what` names it, for the message).
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

    /// Checks that `section` (at `line`) describes as many sockets as the sections before it.
    fn agree_on_sockets(
        &mut self,
        sockets: usize,
        section: &'a str,
        line: usize,
    ) -> Result<(), ModelError> {
        match self.sockets {
            None => {
                self.sockets = Some((sockets, section, line));
                Ok(())
            }
            Some((n, _, _)) if n == sockets => Ok(()),
            Some((n, first, first_line)) => Err(self.err(
                line,
                format!(
                    "section `{section}` describes {}, but section `{first}` (line \
                     {first_line}) describes {}",
                    plural(sockets, "socket"),
                    plural(n, "socket")
                ),
            )),
        }
    }

    /// The whole file: the header, the latency table and the optional sections.
    fn file(mut self) -> Result<MctFile, ModelError> {
        let header = self.header()?;
        let latency = self.latency_table(header.contexts, header.line)?;
        let mut out = MctFile {
            host: header.host,
            contexts: header.contexts,
            nodes: header.nodes,
            smt: header.smt,
            latency,
            memory: None,
            caches: None,
            power: None,
        };
        self.sections(&mut out)?;
        Ok(out)
    }

    /// The optional sections, up to the end of the file.
    fn sections(&mut self, out: &mut MctFile) -> Result<(), ModelError> {
        let mut seen: HashMap<&'a str, usize> = HashMap::new();
        while let Some(t) = self.toks.next() {
            let section = self.section_header(t, out.contexts, &mut seen)?;
            self.section(&section, out)?;
        }
        Ok(())
    }

    /// A section header starting with `t`: a known section name not `seen` before, and its
    /// count. `contexts` is the number of contexts of the file, for the message when `t`
    /// is not a section name.
    fn section_header(
        &mut self,
        t: Token<'a>,
        contexts: usize,
        seen: &mut HashMap<&'a str, usize>,
    ) -> Result<Section<'a>, ModelError> {
        if !t.text.starts_with('#') {
            return Err(self.err(
                t.line,
                format!(
                    "expected a section header ({KNOWN_SECTIONS}), found {} (more latency \
                     triples than #HWCs {contexts} announces?)",
                    shown(t.text),
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
        let count = match self.toks.next() {
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
        Ok(Section {
            name,
            count,
            line: t.line,
        })
    }

    /// The data of a section, into `out`.
    fn section(&mut self, section: &Section<'a>, out: &mut MctFile) -> Result<(), ModelError> {
        let name = section.name;
        let memory = name == "#Mem_latencies" || BANDWIDTH_SECTIONS.iter().any(|s| s.0 == name);
        if memory && section.count != 0 && section.count != out.nodes {
            return Err(self.err(
                section.line,
                format!(
                    "section `{name} {}` has data for {}, but the header says #Nodes {}",
                    section.count,
                    plural(section.count, "node"),
                    out.nodes
                ),
            ));
        }
        if name == "#Mem_latencies" {
            let lat = self.memory_latencies(section, out.contexts)?;
            out.memory
                .get_or_insert_with(MemorySection::default)
                .latency = lat;
        } else if name == "#Cache_levels" {
            out.caches = Some(self.caches(section)?);
        } else if name == "#Power_measurements" {
            out.power = Some(self.power(section)?);
        } else if let Some(&(_, access, threads)) = BANDWIDTH_SECTIONS.iter().find(|s| s.0 == name)
        {
            let bw = self.bandwidth(section, access, threads)?;
            out.memory
                .get_or_insert_with(MemorySection::default)
                .bandwidth
                .extend(bw);
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os_view::CacheType;
    use crate::sections::{Access, CacheLevel, Threads};

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
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1 9 7\n1 0 9\n1 1 0\n".into(),
                3,
                "more than the three values",
            ),
            (
                "#h #HWCs 2 #Nodes 1 SMT 0\n0 0 0\n0 1\n1 0 9\n1 1 0\n".into(),
                3,
                "holds 2 values",
            ),
            ("#h #HWC 2".into(), 1, "expected `#HWCs`"),
            ("#h #HWCs x".into(), 1, "whole number"),
            ("#h #HWCs 2 #Nodes 1 SMT 2".into(), 1, "SMT must be 0 or 1"),
            (
                "#h #HWCs 99999999999 #Nodes 1 SMT 0\n0 0 0".into(),
                1,
                "up to 4096 contexts",
            ),
            (
                "#h #HWCs 3000 #Nodes 1 SMT 0\n0 0 0".into(),
                1,
                "truncated file",
            ),
            (
                "#h #HWCs 2 #Nodes 100000000 SMT 0\n0 0 0".into(),
                1,
                "up to 1024 memory nodes",
            ),
            (
                format!("{SMALL}#Mem_latencies 2\n0 0 1\n0 1 1\n1 0 1\n1 1 1\n"),
                6,
                "section `#Mem_latencies 2` has data for 2 nodes, but the header says #Nodes 1",
            ),
            (
                format!(
                    "{SMALL}#Mem_bw-READ 1\n0 0 1\n#Power_measurements 1\n\
                     Power_sockt_0_idle 1 2 3 4 5\nPower_sockt_1_idle 1 2 3 4 5\n\
                     Power_total_2_idle 1 2 3 4 5\n"
                ),
                8,
                "describes 2 sockets, but section `#Mem_bw-READ` (line 6) describes 1 socket",
            ),
            (
                format!(
                    "{SMALL}#Power_measurements 1\nPower_sockt_0_idle 1 2 3 4 5\n\
                     Power_total_3_idle 1 2 3 4 5\n"
                ),
                8,
                "names 3 sockets, but the section has lines for 1 socket",
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
                format!(
                    "{}#Mem_bw-READ 2\n0 0 1\n0 1 1\n1 0 1\n",
                    SMALL.replace("#Nodes 1", "#Nodes 2")
                ),
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
}
