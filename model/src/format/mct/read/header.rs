//! The header of a `.mct` file: `#<host> #HWCs <contexts> #Nodes <nodes> SMT <0|1>`.

use super::Parser;
use crate::error::ModelError;
use crate::format::lexer::shown;
use crate::limits::{MAX_CONTEXTS, MAX_NODES};

/// The header, for messages.
const HEADER: &str = "`#<host> #HWCs <contexts> #Nodes <nodes> SMT <0|1>`";

/// What the header says.
pub(super) struct Header {
    /// The host name (`#<host>`).
    pub(super) host: String,
    /// Number of hardware contexts (`#HWCs`), at least 1.
    pub(super) contexts: usize,
    /// Number of memory nodes (`#Nodes`).
    pub(super) nodes: usize,
    /// The SMT flag.
    pub(super) smt: bool,
    /// The line the header starts on.
    pub(super) line: usize,
}

impl Parser<'_> {
    /// The header, the first tokens of the file.
    pub(super) fn header(&mut self) -> Result<Header, ModelError> {
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
        if n > MAX_CONTEXTS {
            return Err(self.err(
                first.line,
                format!(
                    "bad header: `#HWCs {n}`: topoprobe reads machines of up to {MAX_CONTEXTS} \
                     contexts (see docs/LIMITS.md)"
                ),
            ));
        }
        self.keyword("#Nodes", "the number of contexts")?;
        let nodes = self.header_number("#Nodes")?;
        if nodes > MAX_NODES {
            return Err(self.err(
                first.line,
                format!(
                    "bad header: `#Nodes {nodes}`: topoprobe reads machines of up to \
                     {MAX_NODES} memory nodes (see docs/LIMITS.md)"
                ),
            ));
        }
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
        Ok(Header {
            host,
            contexts: n,
            nodes,
            smt,
            line: first.line,
        })
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

    /// A whole number in the header, after `after`.
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
}
