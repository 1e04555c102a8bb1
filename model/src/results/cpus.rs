//! `topoprobe cpus EXPR`: a CPU-set expression resolved against a topology, in every form
//! the tools take, and the objects it touches.

use serde::{Deserialize, Serialize};

/// A CPU-set expression resolved against a topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSetResult {
    /// The expression as given (its words joined by spaces).
    pub expression: String,
    /// The topology it was resolved against, in words.
    pub topology: String,
    /// The CPUs (OS numbers), ascending.
    pub cpus: Vec<u32>,
    /// The CPUs in the order the expression names them (likwid's order).
    pub order: Vec<u32>,
    /// The CPUs as a Linux CPU list (`0-3,8`).
    pub list: String,
    /// The CPUs as one hexadecimal mask (`0x3c0f`, `taskset`'s form).
    pub mask: String,
    /// The CPUs as hwloc's CPU-set string (32-bit words, most significant first, as
    /// `hwloc-calc` prints it).
    pub hwloc: String,
    /// The CPUs in the expression's order, comma-separated (`likwid-pin -c`'s list).
    pub likwid: String,
    /// How many objects of a type hold a CPU of the set (`--number-of TYPE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of: Option<ObjectCount>,
    /// The logical indexes of the objects of a type that hold a CPU of the set
    /// (`--intersect TYPE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intersect: Option<ObjectIndexes>,
}

/// How many objects of a type a CPU set touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectCount {
    /// The type, as hwloc names it (`core`, `package`, `numa`...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The number of objects of that type holding a CPU of the set.
    pub count: usize,
}

/// Which objects of a type a CPU set touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectIndexes {
    /// The type, as hwloc names it (`core`, `package`, `numa`...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The logical indexes of the objects of that type holding a CPU of the set.
    pub indexes: Vec<usize>,
}
