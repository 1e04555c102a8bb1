//! Command results as data: every command's result is a `Serialize` value that this module
//! turns into JSON (one rounding rule for every figure) and that its [`Rendered`] impl
//! turns into text and, for results that are tables, CSV.
//!
//! ```
//! use serde::Serialize;
//! use topoprobe_view::results::{json, Rendered};
//!
//! #[derive(Serialize)]
//! struct Pair {
//!     a: u32,
//!     b: u32,
//!     median_ns: f64,
//! }
//!
//! impl Rendered for Pair {
//!     fn text(&self) -> String {
//!         format!("CPU {} <-> CPU {}: {:.1} ns\n", self.a, self.b, self.median_ns)
//!     }
//! }
//!
//! let p = Pair { a: 0, b: 1, median_ns: 31.234_567 };
//! assert_eq!(p.text(), "CPU 0 <-> CPU 1: 31.2 ns\n");
//! assert!(json(&p).unwrap().contains("\"median_ns\": 31.23"));
//! ```

pub mod autopin;
pub mod balance;
pub mod placement;

use serde::Serialize;

pub mod bench;
pub mod cache;
pub mod cache_to_cache;
pub mod contention;
pub mod latency;
pub mod matrix;
pub mod memory;
pub mod os_view;
pub mod power;

/// A result that can be shown to people: text always, CSV when it is a table. Its JSON is
/// its `Serialize` form, written by [`json`].
pub trait Rendered: Serialize {
    /// Whether [`Rendered::csv`] gives a table (checked before a command measures, so that
    /// `--format csv` on a result with no table is refused before any work).
    const HAS_CSV: bool = false;

    /// The text view, ending with a newline.
    fn text(&self) -> String;

    /// The result as CSV (a header line, then one line per row), for results that are
    /// tables; `None` otherwise.
    fn csv(&self) -> Option<String> {
        None
    }
}

/// `value` as pretty-printed JSON ending with a newline, every figure rounded to what a
/// measurement resolves (`topoprobe_model::format::rounding`: 4 significant digits, never
/// fewer than the integer digits, no `-0`).
///
/// # Errors
///
/// Fails only when `value` cannot be represented in JSON (a map whose keys are not
/// strings).
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    topoprobe_model::format::rounding::to_rounded_json(value)
}

/// One CSV field: quoted when it holds a comma, a quote or a line break.
#[must_use]
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("0-3"), "0-3");
        assert_eq!(csv_field("0,2"), "\"0,2\"");
        assert_eq!(csv_field("a \"b\""), "\"a \"\"b\"\"\"");
    }
}
