//! Printing a measurement's cost plan (`--plan`, a dry run): as a table for people, or as
//! JSON.

use std::path::Path;

use anyhow::Result;
use topoprobe_model::CostPlan;

use crate::output::write_to;

/// Writes `plan` to `path` (standard output when `None`): JSON when `json`, else the table.
///
/// # Errors
///
/// Fails when the file or standard output cannot be written.
pub(crate) fn print(plan: &CostPlan, json: bool, path: Option<&Path>) -> Result<()> {
    let text = if json {
        format!("{}\n", serde_json::to_string_pretty(plan)?)
    } else {
        topoprobe_view::cost::render(plan)
    };
    write_to(path, text.as_bytes())
}
