//! How numbers are written in topoprobe's JSON: to what a measurement resolves.
//!
//! The rule for every result, report and plan topoprobe writes ([`to_rounded_json`]):
//!
//! - integers are written as they are;
//! - a fractional number keeps **4 significant digits**, and never fewer than its integer
//!   digits (`115.44446` → `115.4`, `9.0027935` → `9.003`, `0.0123456` → `0.01235`,
//!   `2093.51` → `2094`). The spread of repeated measurements on the machines topoprobe
//!   runs on is at least 0.1 %, so a fifth digit would only be noise;
//! - `-0` is written `0`; a number that is not finite (never produced) would be `null`.
//!
//! A description file is data that other tools exchange: a libmctop file read into it
//! keeps the digits its source gave. Its figures keep [`DESCRIPTION_DIGITS`] significant
//! digits, which removes the tails of binary arithmetic (`9.002793525000001` →
//! `9.002793525`) and `-0`, and nothing a source wrote ([`to_description_json`]). Its
//! latency tables, N² entries, are held and written with 5 significant digits, one row
//! per line ([`LatencyMatrix`](crate::LatencyMatrix): a 4096-context description must
//! stay readable).

use serde::Serialize;
use serde_json::{Number, Value};

/// Significant digits kept in the fractional numbers of results.
pub const SIGNIFICANT_DIGITS: i32 = 4;

/// Significant digits kept in the fractional numbers of a description file.
pub const DESCRIPTION_DIGITS: i32 = 10;

/// `x` rounded by the rule of this module for results ([`SIGNIFICANT_DIGITS`]).
#[must_use]
pub fn round_figure(x: f64) -> f64 {
    round_to(x, SIGNIFICANT_DIGITS)
}

/// `x` with `digits` significant digits, never fewer than its integer digits; `-0` is 0.
#[must_use]
pub fn round_to(x: f64, digits: i32) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return if x == 0.0 { 0.0 } else { x };
    }
    if x.fract() == 0.0 {
        return x + 0.0;
    }
    // Digits before the decimal point (0 for |x| < 1, negative below 0.1).
    let magnitude = x.abs().log10().floor() as i32 + 1;
    let decimals = (digits - magnitude).max(0);
    if decimals > 300 {
        return x;
    }
    let scale = 10f64.powi(decimals);
    let rounded = (x * scale).round() / scale;
    // `+ 0.0` turns `-0.0` into `0.0`.
    if rounded.is_finite() {
        rounded + 0.0
    } else {
        x
    }
}

/// Rounds every fractional number of a JSON value in place to `digits` significant
/// digits (see [`round_to`]).
pub fn round_numbers(value: &mut Value, digits: i32) {
    match value {
        Value::Number(n) => {
            if n.is_f64() {
                if let Some(x) = n.as_f64() {
                    *n = Number::from_f64(round_to(x, digits)).unwrap_or_else(|| n.clone());
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| round_numbers(v, digits)),
        Value::Object(map) => map.values_mut().for_each(|v| round_numbers(v, digits)),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// `value` as pretty-printed JSON ending with a newline, its numbers rounded by the rule
/// of this module.
///
/// # Errors
///
/// Fails only when `value` cannot be represented in JSON (a map whose keys are not
/// strings, or a serializer that reports an error).
pub fn to_rounded_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    to_json_with(value, SIGNIFICANT_DIGITS)
}

/// `value` as a description file writes it: pretty-printed JSON ending with a newline, its
/// numbers with [`DESCRIPTION_DIGITS`] significant digits.
///
/// # Errors
///
/// As [`to_rounded_json`].
pub fn to_description_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    write_description_json(value, &mut out)?;
    // serde_json writes UTF-8 only.
    String::from_utf8(out).map_err(|e| serde_json::Error::io(std::io::Error::other(e)))
}

/// [`to_description_json`] written into `w` as it is serialized (a description of 4096
/// contexts, two N² tables, is never held whole).
///
/// # Errors
///
/// As [`to_rounded_json`], and the errors of `w`.
pub fn write_description_json<T: Serialize + ?Sized, W: std::io::Write>(
    value: &T,
    w: W,
) -> Result<(), serde_json::Error> {
    // Written as it is serialized, never as a tree of values: the latency tables of 4096
    // contexts are 16.7 million entries each (one line per row, see
    // `crate::matrix::TABLE_DIGITS`), which a tree would hold at 32 bytes an entry.
    let mut ser = serde_json::Serializer::with_formatter(
        w,
        Rounding {
            pretty: serde_json::ser::PrettyFormatter::new(),
            digits: DESCRIPTION_DIGITS,
        },
    );
    value.serialize(&mut ser)?;
    let mut w = ser.into_inner();
    w.write_all(b"\n").map_err(serde_json::Error::io)
}

/// serde_json's pretty formatter with every fractional number rounded to `digits`
/// significant digits as it is written ([`round_to`]).
struct Rounding<'a> {
    pretty: serde_json::ser::PrettyFormatter<'a>,
    digits: i32,
}

impl serde_json::ser::Formatter for Rounding<'_> {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        serde_json::ser::CompactFormatter.write_f64(writer, round_to(value, self.digits))
    }
    fn write_f32<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: f32,
    ) -> std::io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.pretty.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.pretty.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_object_value(w)
    }
}

/// Pretty-printed JSON with `digits` significant digits.
fn to_json_with<T: Serialize + ?Sized>(
    value: &T,
    digits: i32,
) -> Result<String, serde_json::Error> {
    let mut v = serde_json::to_value(value)?;
    round_numbers(&mut v, digits);
    let mut text = serde_json::to_string_pretty(&v)?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_four_significant_digits() {
        assert_eq!(round_figure(115.444_460_479_460_47), 115.4);
        assert_eq!(round_figure(9.002_793_525_000_001), 9.003);
        assert_eq!(round_figure(0.012_345_6), 0.01235);
        assert_eq!(round_figure(2093.51), 2094.0);
        assert_eq!(round_figure(123_456.7), 123_457.0);
        assert_eq!(round_figure(30.0), 30.0);
        assert_eq!(round_figure(-1.23456), -1.235);
        assert!(round_figure(-0.0).is_sign_positive());
        assert!(round_figure(-0.000_01).abs() < 1e-4);
    }

    #[test]
    fn json_has_no_negative_zero_and_no_long_tails() {
        let text = to_rounded_json(&serde_json::json!({
            "median_ns": 115.444_460_479_460_47,
            "duration_s": 9.002_793_525_000_001,
            "load": [-0.0, 0.5],
            "bytes": 123_456_789_u64,
        }))
        .unwrap();
        assert!(
            text.contains("115.4,") || text.contains("115.4\n"),
            "{text}"
        );
        assert!(text.contains("9.003"), "{text}");
        assert!(!text.contains("-0"), "{text}");
        assert!(text.contains("123456789"), "{text}");
    }

    #[test]
    fn descriptions_keep_what_their_source_wrote() {
        let text = to_description_json(&serde_json::json!({
            "bw": 46.044_875,
            "duration_s": 9.002_793_525_000_001,
            "zero": -0.0,
        }))
        .unwrap();
        assert!(text.contains("46.044875"), "{text}");
        assert!(
            text.contains("9.002793525,") || text.contains("9.002793525\n"),
            "{text}"
        );
        assert!(!text.contains("-0"), "{text}");
    }

    #[test]
    fn rounding_is_idempotent() {
        for x in [115.444_46, 0.000_123_456, 98_765.432_1, 1.000_05, 7.5] {
            let once = round_figure(x);
            assert_eq!(round_figure(once), once, "{x}");
        }
    }
}
