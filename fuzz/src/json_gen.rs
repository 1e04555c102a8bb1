//! The structure-aware description generator of the `json_gen` target: the input bytes
//! pick a real description (`templates/`, written by `scripts/fuzz-seeds.py` from
//! `topoprobe infer`) and a list of edits to it: extreme values put in place of a node
//! (OS numbers around the CPU, node and `u32` limits, latencies of 1e308, denormals,
//! negatives, confidences outside 0..1, ...) and nodes repeated in their array (a
//! context 4097 times, a latency 10⁷ times, a row a million times). The edited tree is
//! written as compact JSON, so a corpus file of a few bytes stands for a description of
//! megabytes, while the generator stays within [`BUDGET`].
//!
//! Input layout: byte 0 picks the template (low 2 bits) and the placement policy (the
//! rest); then every 4 bytes `op, hi, lo, arg` are one edit of node `(hi·256 + lo) mod
//! size` (nodes numbered in preorder): `op mod 4` = 0 an extreme token
//! ([`TOKENS`]`[arg]`), 1 a repetition ([`COUNTS`]`[arg]` copies; 0 removes it), 2 a number
//! near a limit ([`LIMITS`]`[arg]` plus `op / 4 − 32`), 3 the node's number scaled by
//! `10^(arg as i8)` (negated when `op / 4` is odd).

use std::sync::OnceLock;

use crate::tree::Node;

/// The templates: descriptions `topoprobe infer` wrote, minified: a 4-context SMT
/// desktop, a 10-core laptop with clusters (groups), an 8-context machine with a memory
/// node, and a 2-socket, 2-node, 40-context server with caches and power figures.
const TEMPLATES: [&str; 4] = [
    include_str!("../templates/i3-4150.json"),
    include_str!("../templates/m1pro.json"),
    include_str!("../templates/pc4.json"),
    include_str!("../templates/xeon-2s.json"),
];

/// Generated text beyond which no more copies are written: 16 MiB (a row of eight
/// million latencies).
pub const BUDGET: usize = 16 << 20;

/// Elements of a bounded list ([`BOUNDED`]) past this index are over its limit
/// (`MAX_CONTEXTS`): their text is [`Generated::excess`].
const LIST_LIMIT: usize = topoprobe_model::limits::MAX_CONTEXTS;

/// The lists a description bounds while reading (`docs/LIMITS.md`), as paths of member
/// names (`*` for any element): contexts, cores, groups, sockets and nodes, their member
/// lists, latency levels, and the latency tables and their rows. The other lists of a
/// description (caches, memory, power, validation, interconnects) have no limit of
/// their own: their copies are text like any other.
pub const BOUNDED: [&[&str]; 17] = [
    &["levels"],
    &["contexts"],
    &["cores"],
    &["groups"],
    &["sockets"],
    &["nodes"],
    &["cores", "*", "contexts"],
    &["groups", "*", "members"],
    &["groups", "*", "cores"],
    &["groups", "*", "contexts"],
    &["sockets", "*", "members"],
    &["sockets", "*", "groups"],
    &["sockets", "*", "cores"],
    &["sockets", "*", "contexts"],
    &["latency", "raw"],
    &["latency", "normalized"],
    &["latency", "*", "*"],
];

/// The most edits one input makes.
const MAX_EDITS: usize = 64;

/// Extreme values written in place of a node.
pub const TOKENS: [&str; 50] = [
    "0",
    "-0",
    "-1",
    "1",
    "0.5",
    "-0.1",
    "1.0000001",
    "7.5",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "1e309",
    "1e-300",
    "5e-324",
    "2.2250738585072014e-308",
    "1e12",
    "1000000000001",
    "1048575",
    "1048576",
    "1048577",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "9007199254740993",
    "-9223372036854775808",
    "1023",
    "1024",
    "4095",
    "4096",
    "4097",
    "null",
    "true",
    "false",
    "\"\"",
    "\"x\"",
    "\"topoprobe/2\"",
    "\"smt\"",
    "\"socket\"",
    "\"cycles\"",
    "[]",
    "[[]]",
    "[null]",
    "{}",
    "{\"socket\":0}",
    "{\"core\":0}",
    "{\"group\":0}",
    "\"\\u0000\"",
    // A memory node of the second socket, with an OS number at or above Linux's limit.
    "{\"id\":1,\"local_sockets\":[1],\"os_id\":1024}",
    "{\"id\":1,\"local_sockets\":[1],\"os_id\":4294967295}",
];

/// How many copies a repetition writes (each capped by [`BUDGET`]).
pub const COUNTS: [usize; 16] = [
    0,
    2,
    3,
    64,
    1023,
    1024,
    1025,
    4095,
    4096,
    4097,
    65_536,
    1 << 20,
    4 << 20,
    10_000_000,
    100_000_000,
    7,
];

/// Numbers near the limits, before the edit's offset.
pub const LIMITS: [i128; 12] = [
    0,
    topoprobe_model::MAX_CPU as i128,
    u32::MAX as i128,
    topoprobe_model::limits::MAX_NODES as i128,
    topoprobe_model::limits::MAX_CONTEXTS as i128,
    i32::MAX as i128,
    i64::MAX as i128,
    u64::MAX as i128,
    1 << 53,
    1_000_000_000_000,
    i64::MIN as i128,
    64,
];

/// One edit (a node may have one of each kind: an extreme value, repeated).
#[derive(Debug, Clone, PartialEq)]
enum Edit {
    /// The node's text replaced by this.
    Text(String),
    /// The node written this many times in its array (not at all for 0; no effect
    /// outside an array).
    Repeat(usize),
}

/// A generated description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The JSON text.
    pub text: String,
    /// The bytes of `text` that are elements of an array past the list limit
    /// ([`topoprobe_model::limits::MAX_CONTEXTS`] elements): a reader refuses such a list
    /// at its limit, so they must not cost it memory.
    pub excess: usize,
    /// The template it came from (an index into the templates).
    pub template: usize,
    /// The placement policy chosen (an index into the policies of the target).
    pub policy: usize,
}

/// The parsed templates.
fn templates() -> &'static [Node] {
    static PARSED: OnceLock<Vec<Node>> = OnceLock::new();
    PARSED.get_or_init(|| {
        TEMPLATES
            .iter()
            .map(|t| serde_json::from_str(t).expect("the templates are JSON"))
            .collect()
    })
}

/// The text of one edit of `node`.
fn edit_of(op: u8, arg: u8, node: &Node) -> Edit {
    let offset = i128::from(op >> 2) - 32;
    match op % 4 {
        0 => Edit::Text(TOKENS[usize::from(arg) % TOKENS.len()].to_string()),
        1 => Edit::Repeat(COUNTS[usize::from(arg) % COUNTS.len()]),
        2 => Edit::Text((LIMITS[usize::from(arg) % LIMITS.len()] + offset).to_string()),
        _ => {
            let exp = i32::from(i8::from_ne_bytes([arg]));
            let base = match node {
                Node::Scalar(s) if s.starts_with(|c: char| c == '-' || c.is_ascii_digit()) => {
                    s.trim_start_matches('-').to_string()
                }
                _ => "1".to_string(),
            };
            let sign = if (op >> 2) % 2 == 1 { "-" } else { "" };
            // `26.0e300`: the number as written, with an exponent of its own (a number
            // written with one already gets a factor instead).
            if base.contains(['e', 'E']) {
                Edit::Text(format!("{sign}{base}"))
            } else {
                Edit::Text(format!("{sign}{base}e{exp}"))
            }
        }
    }
}

/// The generator's state while writing.
struct Writer<'a> {
    edits: &'a [(usize, Edit)],
    out: String,
    /// Where the node being written is: member names, `*` for array elements.
    path: Vec<&'static str>,
}

impl<'a> Writer<'a> {
    /// The text edit of node `id`, the last one given.
    fn text(&self, id: usize) -> Option<&'a str> {
        self.edits.iter().rev().find_map(|(n, e)| match e {
            Edit::Text(t) if *n == id => Some(t.as_str()),
            _ => None,
        })
    }

    /// The repetition of node `id`, the last one given (1 copy without one).
    fn copies_of(&self, id: usize) -> usize {
        self.edits
            .iter()
            .rev()
            .find_map(|(n, e)| match e {
                Edit::Repeat(c) if *n == id => Some(*c),
                _ => None,
            })
            .unwrap_or(1)
    }

    /// Whether the array being written is one of the [`BOUNDED`] lists.
    fn bounded(&self) -> bool {
        BOUNDED.iter().any(|p| {
            p.len() == self.path.len() && p.iter().zip(&self.path).all(|(a, b)| *a == "*" || a == b)
        })
    }

    /// Writes `node` (numbered `id`) and returns the bytes of it over the list limits.
    fn node(&mut self, node: &'static Node, id: usize) -> usize {
        if let Some(t) = self.text(id) {
            self.out.push_str(t);
            return 0;
        }
        match node {
            Node::Scalar(s) => {
                self.out.push_str(s);
                0
            }
            Node::Object(members) => {
                self.out.push('{');
                let mut excess = 0;
                let mut next = id + 1;
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.out
                        .push_str(&serde_json::to_string(k).unwrap_or_default());
                    self.out.push(':');
                    self.path.push(k);
                    excess += self.node(v, next);
                    self.path.pop();
                    next += v.size();
                }
                self.out.push('}');
                excess
            }
            Node::Array(items) => {
                self.out.push('[');
                let (mut written, mut excess) = (0_usize, 0_usize);
                let limit = if self.bounded() {
                    LIST_LIMIT
                } else {
                    usize::MAX
                };
                let mut next = id + 1;
                self.path.push("*");
                for item in items {
                    let copies = self.copies_of(next);
                    if copies > 0 {
                        excess += self.copies(item, next, copies, (&mut written, limit));
                    }
                    next += item.size();
                }
                self.path.pop();
                self.out.push(']');
                excess
            }
        }
    }

    /// Writes `copies` copies of array element `item` (numbered `id`), `written` elements
    /// being already in the array whose limit is `limit`; returns the bytes over the
    /// list limits.
    fn copies(
        &mut self,
        item: &'static Node,
        id: usize,
        copies: usize,
        (written, limit): (&mut usize, usize),
    ) -> usize {
        if *written > 0 {
            self.out.push(',');
        }
        let start = self.out.len();
        let inner = self.node(item, id);
        let piece = self.out.len() - start;
        let mut excess = if *written >= limit { piece + 1 } else { inner };
        *written += 1;
        let room = BUDGET.saturating_sub(self.out.len()) / (piece + 1);
        let more = (copies - 1).min(room);
        if more > 0 {
            let unit = format!(",{}", &self.out[start..]);
            self.out.push_str(&unit.repeat(more));
            let within = more.min(limit.saturating_sub(*written));
            excess += within * inner + (more - within) * unit.len();
            *written += more;
        }
        excess
    }
}

/// The description `data` describes (see the module's documentation).
#[must_use]
pub fn generate(data: &[u8]) -> Generated {
    let (&first, rest) = data.split_first().unwrap_or((&0, &[]));
    let template = usize::from(first % 4);
    let root = &templates()[template];
    let size = root.size();
    let mut edits: Vec<(usize, Edit)> = Vec::new();
    for chunk in rest.chunks_exact(4).take(MAX_EDITS) {
        let id = usize::from(u16::from_be_bytes([chunk[1], chunk[2]])) % size;
        let node = find(root, id);
        edits.push((id, edit_of(chunk[0], chunk[3], node)));
    }
    let mut w = Writer {
        edits: &edits,
        out: String::new(),
        path: Vec::new(),
    };
    let excess = w.node(root, 0);
    Generated {
        text: w.out,
        excess,
        template,
        policy: usize::from(first >> 2),
    }
}

/// Node `id` of the preorder numbering under `root` (`root` itself when out of range).
fn find(root: &Node, mut id: usize) -> &Node {
    let mut node = root;
    'down: while id > 0 {
        id -= 1;
        let children: Vec<&Node> = match node {
            Node::Scalar(_) => return node,
            Node::Array(items) => items.iter().collect(),
            Node::Object(members) => members.iter().map(|(_, n)| n).collect(),
        };
        for child in children {
            let s = child.size();
            if id < s {
                node = child;
                continue 'down;
            }
            id -= s;
        }
        return root;
    }
    node
}

/// The preorder number of the first node whose path (object keys and array indices,
/// `/`-separated, as `latency/raw/0/1`) is `path` in template `template`: for the seeds
/// and tests that aim an edit at a known place.
#[must_use]
pub fn node_id(template: usize, path: &str) -> Option<usize> {
    let mut node = &templates()[template];
    let mut id = 0;
    for step in path.split('/').filter(|s| !s.is_empty()) {
        let children: Vec<(String, &Node)> = match node {
            Node::Scalar(_) => return None,
            Node::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, n)| (i.to_string(), n))
                .collect(),
            Node::Object(members) => members.iter().map(|(k, n)| (k.clone(), n)).collect(),
        };
        id += 1;
        let mut found = None;
        for (k, child) in children {
            if k == step {
                found = Some(child);
                break;
            }
            id += child.size();
        }
        node = found?;
    }
    Some(id)
}

/// The input bytes of `edits` (`(op, path, arg)`) over template `template` with policy
/// `policy`: how the seeds and tests write a description generator input.
///
/// # Panics
///
/// When a path names no node of the template, or a node past the 16-bit numbering.
#[must_use]
pub fn input(template: usize, policy: u8, edits: &[(u8, &str, u8)]) -> Vec<u8> {
    let mut out = vec![u8::try_from(template).expect("a template index") | (policy << 2)];
    for &(op, path, arg) in edits {
        let id = node_id(template, path).unwrap_or_else(|| panic!("no node {path}"));
        let id = u16::try_from(id).expect("a node of the 16-bit numbering");
        out.push(op);
        out.extend_from_slice(&id.to_be_bytes());
        out.push(arg);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_edit_writes_the_template_as_it_reads() {
        for t in 0..TEMPLATES.len() {
            let g = generate(&[u8::try_from(t).unwrap()]);
            let back: Node = serde_json::from_str(&g.text).expect("json");
            assert_eq!(&back, &templates()[t]);
            assert_eq!(g.excess, 0);
        }
    }

    #[test]
    fn paths_and_numbers_agree() {
        let id = node_id(0, "contexts/1/os_id").expect("a node");
        assert_eq!(find(&templates()[0], id), &Node::Scalar("1".into()));
        let data = input(0, 0, &[(2, "contexts/1/os_id", 2)]);
        let g = generate(&data);
        assert!(
            g.text.contains("\"os_id\":4294967263"),
            "{}",
            &g.text[..400]
        );
    }

    #[test]
    fn repetitions_expand_and_count_their_excess() {
        // Latency (0, 1) of the raw table, 10⁷ times: the row stops at the budget.
        let g = generate(&input(0, 0, &[(1, "latency/raw/0/1", 13)]));
        assert!(g.text.len() > BUDGET / 2 && g.text.len() < BUDGET + 4096);
        assert!(g.excess > g.text.len() - 65_536, "{}", g.excess);
        // A context 4097 times: with the three others, four over the limit.
        let g = generate(&input(0, 0, &[(1, "contexts/0", 9)]));
        let one = r#"{"core":0,"id":0,"os_id":0,"socket":0}"#;
        assert_eq!(g.text.matches(one).count(), 4097);
        assert_eq!(g.excess, 4 * (one.len() + 1));
        // Removed.
        let g = generate(&input(0, 0, &[(1, "contexts/0", 0)]));
        assert!(!g.text.contains(one));
    }
}
