//! The median of measured values, one definition for every crate: NaN values are ignored
//! (a reading that failed is no reading), no value left gives `None`, and an even count
//! gives the mean of the two middle values. [`streamed_medians`] gives the same medians of
//! groups of values too many to hold, from a stream of them.
//!
//! ```
//! use topoprobe_model::{median, median_in_place, median_sorted};
//!
//! assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
//! assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
//! assert_eq!(median(&[f64::NAN, 1.0, 2.0]), Some(1.5));
//! assert_eq!(median(&[]), None);
//! let mut v = [5.0, 1.0, 4.0];
//! assert_eq!(median_in_place(&mut v), Some(4.0));
//! assert_eq!(median_sorted(&[1.0, 2.0, 4.0, 8.0]), Some(3.0));
//! ```

mod streamed;

pub use streamed::{streamed_medians, streamed_middles, ValueStream};

/// The median of `values`: NaN values ignored, `None` when no other value is left, the
/// mean of the two middle values for an even count. Leaves `values` as they are (it works
/// on a copy); [`median_in_place`] saves the copy.
#[must_use]
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    median_in_place(&mut v)
}

/// The median of `values` as [`median`] defines it, found in linear time by reordering
/// `values` (no allocation, no sort).
#[must_use]
pub fn median_in_place(values: &mut [f64]) -> Option<f64> {
    let n = move_nan_last(values);
    let v = &mut values[..n];
    if n == 0 {
        return None;
    }
    let (lower, upper, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        Some(upper)
    } else {
        let below = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some((below + upper) / 2.0)
    }
}

/// The median of values already sorted in ascending order, as [`median`] defines it:
/// NaN values at either end (where [`f64::total_cmp`] sorts them) are ignored, `None` when
/// no other value is left.
#[must_use]
pub fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let start = sorted.iter().position(|x| !x.is_nan())?;
    let end = sorted.iter().rposition(|x| !x.is_nan())? + 1;
    let v = &sorted[start..end];
    let n = v.len();
    if n % 2 == 1 {
        Some(v[n / 2])
    } else {
        Some((v[n / 2 - 1] + v[n / 2]) / 2.0)
    }
}

/// Moves the values that are not NaN to the front of `v`, keeping none of its order;
/// returns how many there are.
fn move_nan_last(v: &mut [f64]) -> usize {
    let mut kept = 0;
    for i in 0..v.len() {
        if !v[i].is_nan() {
            v.swap(kept, i);
            kept += 1;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three functions agree on `values` and give `expected`.
    fn check(values: &[f64], expected: Option<f64>) {
        assert_eq!(median(values), expected, "{values:?}");
        let mut v = values.to_vec();
        assert_eq!(median_in_place(&mut v), expected, "{values:?}");
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(median_sorted(&sorted), expected, "{values:?}");
    }

    #[test]
    fn the_definition() {
        check(&[1.0, 2.0, 3.0, 4.0], Some(2.5));
        check(&[3.0, 1.0, 2.0], Some(2.0));
        check(&[7.0], Some(7.0));
        check(&[], None);
        check(&[2.0, 2.0, 1.0, 9.0], Some(2.0));
        check(&[-1.0, 1.0], Some(0.0));
    }

    #[test]
    fn nan_values_are_ignored() {
        check(&[f64::NAN, 3.0, 1.0, 2.0], Some(2.0));
        check(&[3.0, -f64::NAN, 1.0, f64::NAN, 2.0, 4.0], Some(2.5));
        check(&[f64::NAN], None);
        check(&[f64::NAN, -f64::NAN], None);
    }

    #[test]
    fn infinities_are_values() {
        check(&[f64::INFINITY, 1.0, 2.0], Some(2.0));
        check(&[f64::NEG_INFINITY, 1.0], Some(f64::NEG_INFINITY));
    }

    #[test]
    fn in_place_keeps_every_value() {
        let mut v = [5.0, f64::NAN, 1.0, 4.0, 2.0];
        assert_eq!(median_in_place(&mut v), Some(3.0));
        let mut got: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
        got.sort_by(f64::total_cmp);
        assert_eq!(got, vec![1.0, 2.0, 4.0, 5.0]);
        assert!(v[4].is_nan());
    }
}
