//! CPU sets named the ways HPC tools name them: operating-system CPU lists and masks,
//! hwloc-calc's locations (`package:1.core:0-3`, `node:0`, `l3cache:2`), likwid-pin's
//! affinity domains (`S1:0-3`, `N:0-7`, `C0:`, `M1:`, `E:S0:4:1:2`), and set arithmetic
//! between them; resolved against a topology ([`Inventory`]) into operating-system CPU
//! numbers, in order.
//!
//! ```
//! use topoprobe_place::cpuset::{CpuSetExpr, Inventory};
//! # use topoprobe_model::{ContextId, LatencyMatrix, LatencyUnit, Member, TopologyBuilder};
//! # let mut b = TopologyBuilder::new(vec![0, 1, 2, 3], LatencyUnit::Ns);
//! # let c0 = b.core(vec![ContextId(0), ContextId(2)]);
//! # let c1 = b.core(vec![ContextId(1), ContextId(3)]);
//! # b.socket(vec![Member::Core(c0), Member::Core(c1)]);
//! # let lat = LatencyMatrix::from_fn(4, |a, b| Some(if a % 2 == b % 2 { 8.0 } else { 40.0 }));
//! # b.latencies(lat.clone(), lat);
//! # let topo = b.build()?;
//! // One socket, two cores with SMT siblings 0/2 and 1/3.
//! let inv = Inventory::from_topology(&topo);
//! let core1 = CpuSetExpr::parse("core:1")?.resolve(&inv)?;
//! assert_eq!(core1.cpus, vec![1, 3]);
//! // likwid numbers a domain's threads physical cores first.
//! let s0 = CpuSetExpr::parse("S0:0-1")?.resolve(&inv)?;
//! assert_eq!(s0.order, vec![0, 1]);
//! let rest = CpuSetExpr::parse("all ~pu:0")?.resolve(&inv)?;
//! assert_eq!(rest.cpus, vec![1, 2, 3]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Grammar
//!
//! ```text
//! expression := term ( separator term )*            at most 64 KiB, ASCII
//! separator  := whitespace+ | "@" | ","             "," only before a term that does not
//!                                                   start with a digit (see the lists)
//! term       := [ "+" | "~" | "x" | "^" ] atom      union (default), clear, intersect, xor
//! atom       := os-list | mask | "all" | "root" | location | likwid
//!
//! os-list    := os-item ( "," os-item )*            a "," followed by a digit goes on
//! os-item    := N | N "-" N [ ":" USED "/" GROUP ]  Linux's list syntax; A <= B
//! mask       := "0x" HEX+                           one number of any length (place's mask)
//!             | "0x" HEX{1,8} ( "," ["0x"] HEX{0,8} )+   hwloc's 32-bit words, most
//!                                                   significant first; empty = zeros
//! location   := step ( "." step )*                  each step inside the previous one
//! step       := TYPE ":" indexes
//! TYPE       := machine | package | socket | die | numanode | node | group | l3cache
//!             | l3 | l2cache | l2 | l1cache | l1dcache | l1 | l1d | core | pu
//!                                                   any case; a prefix of 2+ letters
//!                                                   naming one type (pack, co, nu)
//! indexes    := "all" | "odd" | "even" | index ( "," index )*
//! index      := N | N "-" N | N "-" | N ":" COUNT   logical indexes; N:COUNT wraps
//!
//! likwid     := DOMAIN [ ":" [ lw-indexes ] ]       DOMAIN or DOMAIN: is the whole domain
//!             | "L:" [ DOMAIN ":" ] lw-indexes       the same (L: alone is in N)
//!             | "E:" DOMAIN [ ":" COUNT [ ":" CHUNK ":" STRIDE [ ":" OFFSET ] ] ]
//!             | KIND ":scatter" [ ":" COUNT ]
//! DOMAIN     := "N" | KIND N                        N: node, S: socket, D: die,
//! KIND       := "S" | "D" | "C" | "M" | "N"         C: last-level cache, M: NUMA node
//! lw-indexes := lw-index ( "," lw-index )*
//! lw-index   := N | N "-" N                         B < A counts down
//! N          := decimal digits, at most 1048575
//! ```
//!
//! **Meaning.** Terms are applied left to right to a set that starts empty: no prefix or
//! `+` adds, `~` removes, `x` keeps only the term's CPUs, `^` toggles them (hwloc-calc's
//! operators). `@` (likwid's concatenation) and `,` between terms add, like a space.
//!
//! - CPU lists and masks are operating-system numbers; every CPU they name must be in
//!   the topology.
//! - hwloc locations use hwloc's *logical* indexes (`pu:5` is the sixth PU of a walk of
//!   the machine's tree, not CPU 5): see [`Inventory`] for the order. In `package:1.core:0-3`
//!   the cores are numbered inside package 1. `node:0` is the first NUMA node.
//! - A likwid domain's threads are numbered with the physical cores first (`S1:0-3` is the
//!   first thread of the first four cores of socket 1); a whole domain (`S1`, `S1:`)
//!   and `E:` expressions follow the domain's own order (a core's threads together).
//!
//! **Order.** The result keeps the order CPUs were added in ([`Resolved::order`]): a list
//! in its order, a mask ascending, a location in logical order, a likwid term in likwid's.
//! A CPU named twice keeps its first place; one removed then added again takes its new
//! place.
//!
//! **Limits.** The text is read only up to 64 KiB ([`MAX_EXPR_BYTES`]); numbers above
//! 1,048,575 ([`topoprobe_model::MAX_CPU`]) are refused as they are read, and ranges and
//! indexes are checked against the topology before anything is listed. Each term costs
//! time in proportion to its text and to the CPUs it names.

mod ast;
mod error;
mod eval;
mod inventory;
mod lexer;
mod likwid;
mod objects;
mod parser;
pub mod render;
mod sources;

use std::fmt;
use std::str::FromStr;

pub use error::{CpuSetError, ErrorKind};
pub use inventory::Inventory;
pub use objects::{ObjectType, UnknownType, ALL_TYPES};

/// The longest expression read, in bytes.
pub const MAX_EXPR_BYTES: usize = 64 * 1024;

/// A CPU set resolved against a topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The CPUs (operating-system numbers), ascending.
    pub cpus: Vec<u32>,
    /// The same CPUs in the order the expression named them (likwid's order for likwid
    /// terms, hwloc's logical order for locations, as typed for lists).
    pub order: Vec<u32>,
}

/// A parsed CPU-set expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSetExpr {
    text: String,
    terms: Vec<ast::Term>,
}

impl CpuSetExpr {
    /// Parses an expression (the grammar is in the [module documentation](self)).
    ///
    /// # Errors
    ///
    /// [`CpuSetError`] of kind [`ErrorKind::Syntax`] naming the term at fault and what
    /// is wrong with it.
    pub fn parse(text: &str) -> Result<Self, CpuSetError> {
        let terms = parser::parse_terms(text)?;
        Ok(Self {
            text: text.to_string(),
            terms,
        })
    }

    /// The expression as typed.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a term names objects of a topology (anything but CPU numbers and masks).
    #[must_use]
    pub fn needs_topology(&self) -> bool {
        self.terms.iter().any(|t| t.atom.needs_topology())
    }

    /// The CPUs of the expression on the machine `inv` describes.
    ///
    /// # Errors
    ///
    /// [`CpuSetError`] naming the first term that names what the machine does not have
    /// (an index past the last object, a CPU it lacks: [`ErrorKind::NotInTopology`]) or
    /// what the source does not know (which contexts share a cache:
    /// [`ErrorKind::Unknown`]).
    pub fn resolve(&self, inv: &Inventory) -> Result<Resolved, CpuSetError> {
        eval::resolve(&self.terms, inv)
    }

    /// The CPUs of an expression of CPU numbers and masks alone, without a topology.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NeedsTopology`] when a term names objects of a topology.
    pub fn resolve_numbers(&self) -> Result<Resolved, CpuSetError> {
        eval::plain(&self.terms)?;
        let highest = self
            .terms
            .iter()
            .filter_map(|t| match &t.atom {
                ast::Atom::Os(items) => items
                    .iter()
                    .map(|i| match *i {
                        ast::OsItem::One(c) => c,
                        ast::OsItem::Range { hi, .. } => hi,
                    })
                    .max(),
                ast::Atom::Mask(bits) => bits.last().copied(),
                _ => None,
            })
            .max();
        let n = highest.map_or(0, |h| h as usize + 1);
        eval::resolve(&self.terms, &Inventory::numbers(n))
    }
}

impl FromStr for CpuSetExpr {
    type Err = CpuSetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for CpuSetExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests;
