//! `topoprobe cache`: cache sizes and latencies by measurement, beside the OS's, and with
//! `--shared` which contexts share each level.

use serde::{Deserialize, Serialize};

use crate::{CacheType, ContextId, CostPlan, OsDifference, SharingTest};

/// How a level's measured size compares with the size the OS lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheAgreement {
    /// The curve's own fit gives the OS's size.
    Agrees,
    /// The OS's size explains the rise, though the fit alone gives another size.
    Explains,
    /// The OS's size does not explain the rise: the measured size differs.
    Differs,
    /// The OS lists the level but the curve shows no rise for it.
    NotSeen,
    /// The curve shows a level and there is no OS view to set it beside.
    Unlisted,
    /// The OS's alone (an instruction cache: the walk loads data).
    OsOnly,
}

impl CacheAgreement {
    /// A short phrase for tables.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Agrees => "= OS",
            Self::Explains => "OS size explains the rise",
            Self::Differs => "differs from the OS",
            Self::NotSeen => "no rise in the curve",
            Self::Unlisted => "no OS view",
            Self::OsOnly => "OS only",
        }
    }
}

/// One cache level, measured and as the OS lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheLevelResult {
    /// Level number (1 for L1).
    pub level: u32,
    /// Short name (`L1d`, `L2`).
    pub name: String,
    /// What it holds, when known.
    pub kind: Option<CacheType>,
    /// Measured size, bytes (`null` when the curve shows no rise for it).
    pub size_bytes: Option<u64>,
    /// Size the OS lists, bytes.
    pub os_size_bytes: Option<u64>,
    /// Measured access latency, ns.
    pub latency_ns: Option<f64>,
    /// The same latency in cycles of the timer, when its rate is known.
    pub latency_cycles: Option<f64>,
    /// Line size the OS lists, bytes.
    pub line_bytes: Option<u32>,
    /// How the size was found and how it compares with the OS's, for people.
    pub method: String,
    /// How the size compares with the OS's.
    pub agreement: Option<CacheAgreement>,
    /// The level's instances (hardware contexts of the measured topology), when known.
    pub shared_by: Vec<Vec<ContextId>>,
}

/// Where the 4 KiB-page walk parts from the huge-page walk: the reach of a TLB.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TlbResult {
    /// Page size, bytes.
    pub page_bytes: u64,
    /// Bytes the TLB covers.
    pub reach_bytes: u64,
    /// Entries (reach over page size).
    pub entries: u64,
    /// Extra ns per access beyond the reach.
    pub extra_ns: f64,
}

/// One size of the measured curve (`cache --curve`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurveSample {
    /// Array size, bytes.
    pub size_bytes: u64,
    /// ns per access on the main walk (huge pages when granted).
    pub ns: f64,
    /// ns per access on 4 KiB pages, when that walk ran beside the main one.
    pub ns_4k_pages: Option<f64>,
}

/// The shared-cache test of one level (`cache --shared`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSharingResult {
    /// The level's name (`L2`).
    pub level: String,
    /// Its instances: measured, or the OS's when the walks did not decide.
    pub shared_by: Vec<Vec<ContextId>>,
    /// The record of the test.
    pub test: SharingTest,
    /// What a person should know when the walks did not decide or did not run.
    pub warning: Option<String>,
}

/// The caches of one hardware context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheResult {
    /// The CPU measured on (OS number).
    pub cpu: u32,
    /// The levels, innermost first.
    pub levels: Vec<CacheLevelResult>,
    /// Access time beyond the last level, ns.
    pub memory_ns: Option<f64>,
    /// Remarks: where the curve and the OS disagree, what the budget changed.
    pub notes: Vec<String>,
    /// Wall time of the walks, seconds.
    pub seconds: f64,
    /// Largest array walked, bytes.
    pub max_bytes: u64,
    /// Sizes walked.
    pub sizes_walked: usize,
    /// Which pages the arrays were walked on, for people.
    pub pages: String,
    /// The plan, with what each step spent.
    pub cost: CostPlan,
    /// TLB reaches found.
    pub tlb: Vec<TlbResult>,
    /// The shared-cache test of each level, with `--shared`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing_tests: Option<Vec<LevelSharingResult>>,
    /// Where the measured sharing differs from the OS's, with `--shared`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_differences: Option<Vec<OsDifference>>,
    /// The measured curve, with `--curve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<Vec<CurveSample>>,
}
