//! A parsed CPU-set expression: terms, each an operator and what it names.

use super::objects::ObjectType;

/// How a term combines with the set built so far (left to right, as hwloc-calc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Add its CPUs (no prefix, `+`, or after `@`).
    Union,
    /// Remove its CPUs (`~`).
    Clear,
    /// Keep only its CPUs (`x`).
    Intersect,
    /// Add those not in the set, remove those in it (`^`).
    Xor,
}

/// One item of an operating-system CPU list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsItem {
    /// One CPU.
    One(u32),
    /// `A-B`, every `group` CPUs from `A` the first `used` (`A-B:used/group`; `1/1` for
    /// a plain range).
    Range {
        /// First CPU.
        lo: u32,
        /// Last CPU.
        hi: u32,
        /// CPUs taken in each group.
        used: u32,
        /// Group size.
        group: u32,
    },
}

/// One item of an index list (hwloc's logical indexes, likwid's indexes in a domain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexItem {
    /// One index.
    One(u32),
    /// `A-B`: from A to B (likwid also allows B < A: descending).
    Range(u32, u32),
    /// `A-`: from A to the last.
    From(u32),
    /// `A:N`: N objects from A, wrapping around the end (hwloc).
    Count(u32, u32),
}

/// Which objects of a level a location takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// `all`.
    All,
    /// `odd`: the odd indexes.
    Odd,
    /// `even`: the even indexes.
    Even,
    /// A list of indexes and ranges.
    Items(Vec<IndexItem>),
}

/// One step of an hwloc location: `core:0-3` in `package:1.core:0-3`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The type of the objects.
    pub ty: ObjectType,
    /// Which of them (logical indexes inside the previous step's objects).
    pub selection: Selection,
}

/// The kinds of likwid affinity domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DomainKind {
    /// `N`: the whole node (machine).
    Node,
    /// `S<i>`: a socket.
    Socket,
    /// `D<i>`: a die.
    Die,
    /// `C<i>`: a last-level cache.
    Cache,
    /// `M<i>`: a memory (NUMA) domain.
    Memory,
}

impl DomainKind {
    /// The kind a domain letter names.
    pub(crate) const fn of_letter(c: u8) -> Option<Self> {
        Some(match c {
            b'N' => Self::Node,
            b'S' => Self::Socket,
            b'D' => Self::Die,
            b'C' => Self::Cache,
            b'M' => Self::Memory,
            _ => return None,
        })
    }

    /// The domain letter.
    #[must_use]
    pub const fn letter(self) -> char {
        match self {
            Self::Node => 'N',
            Self::Socket => 'S',
            Self::Die => 'D',
            Self::Cache => 'C',
            Self::Memory => 'M',
        }
    }
}

/// A likwid affinity domain: `N`, `S1`, `C0`...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Domain {
    /// Its kind.
    pub kind: DomainKind,
    /// Its number (0 for `N`).
    pub index: u32,
}

/// What a term names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atom {
    /// Operating-system CPU numbers: `0-3,8`.
    Os(Vec<OsItem>),
    /// A hexadecimal mask, as its set bits: `0x3c0f`, `0xffffffff,0x0000000f`.
    Mask(Vec<u32>),
    /// The whole machine: `all`, `root`, `machine:0`.
    All,
    /// An hwloc location: `package:1.core:0-3`.
    Location(Vec<Step>),
    /// A likwid domain, whole (`S1`, `S1:`) or by indexes with physical cores first
    /// (`S1:0-3`, `L:S1:0-3`).
    Domain(Domain, Option<Vec<IndexItem>>),
    /// likwid's expression `E:S0:count[:chunk:stride[:offset]]`.
    Expression {
        /// The domain.
        domain: Domain,
        /// How many CPUs (`None`: as many as the machine has).
        count: Option<u32>,
        /// CPUs taken in a row.
        chunk: u32,
        /// Distance between the starts of two chunks.
        stride: u32,
        /// Where to start.
        offset: u32,
    },
    /// likwid's `S:scatter[:count]`: round robin over the domains of a kind, physical
    /// cores first.
    Scatter {
        /// The kind of domain.
        kind: DomainKind,
        /// How many CPUs (`None`: all).
        count: Option<u32>,
    },
}

impl Atom {
    /// Whether the atom names something only a topology knows (anything but CPU
    /// numbers and masks).
    pub(crate) const fn needs_topology(&self) -> bool {
        !matches!(self, Self::Os(_) | Self::Mask(_))
    }
}

/// A term: an operator, what it names, and its text as typed (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// How it combines.
    pub op: Op,
    /// What it names.
    pub atom: Atom,
    /// The term as typed.
    pub text: String,
}
