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
}
