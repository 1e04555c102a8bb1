//! `topoprobe contention`: memory-access overhead groups and how bandwidth scales with
//! threads.

use serde::{Deserialize, Serialize};

use crate::{ContentionSection, CostPlan};

/// What the contention measurement found: the description's section, and its cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentionResult {
    /// The figures (`alone_gbps`, `pairs`, `levels`, `scalability`, `socket_curve`), as
    /// in a description's contention section.
    #[serde(flatten)]
    pub section: ContentionSection,
    /// The plan, with what the measurement spent.
    pub cost: CostPlan,
    /// Remarks: the topology measured on is the OS's view (no description saved).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
