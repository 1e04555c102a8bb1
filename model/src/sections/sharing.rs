//! How the shared-cache test of one cache level came out: the walks it made, what they
//! decided, and where the level's `shared_by` comes from.

use serde::{Deserialize, Serialize};

use crate::ids::ContextId;
use crate::meta::Origin;

/// What the shared-cache test of a level concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SharingOutcome {
    /// Every scope tested gave a clear answer: the level's `shared_by` is measured.
    Decided,
    /// Some answer was unclear (or the walks could not be sized so that a private and a
    /// shared level differ): `shared_by` is the OS's when the OS lists the level, what was
    /// decided otherwise.
    Inconclusive,
    /// Nothing was walked (the arrays exceed the memory budget, the size is unknown):
    /// `shared_by` is the OS's when the OS lists the level.
    Unavailable,
}

impl SharingOutcome {
    /// Lower-case name (`decided`, `inconclusive`, `unavailable`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Decided => "decided",
            Self::Inconclusive => "inconclusive",
            Self::Unavailable => "unavailable",
        }
    }
}

/// What one pair's concurrent walks say about the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairVerdict {
    /// The two walks slow each other down as one walk of both arrays would: they share it.
    Shared,
    /// Each walk runs as fast as alone: each context has its own instance.
    Private,
    /// Neither: noise, a vCPU moved by the host, a replacement policy in between.
    Unclear,
}

impl PairVerdict {
    /// Lower-case name (`shared`, `private`, `unclear`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Private => "private",
            Self::Unclear => "unclear",
        }
    }
}

/// Two contexts walking arrays of the test's size at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SharingPair {
    /// First context.
    pub a: ContextId,
    /// Second context.
    pub b: ContextId,
    /// Time of an access while both walk, over the time of a walk alone.
    pub ratio: f64,
    /// Where that time falls between the walk alone (0: a private level) and one walk
    /// over both arrays (1: a shared level).
    pub fraction: f64,
    /// The same fraction when the pair walked again after the other pairs (absent in
    /// descriptions made before the pairs were walked twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction_again: Option<f64>,
    /// What the two walks say: `unclear` when either is, or when they disagree.
    pub verdict: PairVerdict,
}

/// The record of a level's shared-cache test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharingTest {
    /// What the walks concluded.
    pub outcome: SharingOutcome,
    /// Where the level's `shared_by` comes from: `measured`, or `os` when the walks did
    /// not decide and the OS's sharing was kept (absent when neither gave one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Origin>,
    /// Size of each walk's array, KiB (absent when nothing was walked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_kib: Option<u64>,
    /// Time of one access of one context walking that array alone, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_ns: Option<f64>,
    /// Time of one access of one context walking an array twice that size alone, ns:
    /// what two walks that share the level cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub double_ns: Option<f64>,
    /// The pairs walked together, innermost scope first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<SharingPair>,
    /// Why the walks did not decide, or did not run (absent when they decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
