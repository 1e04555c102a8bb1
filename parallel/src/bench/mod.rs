//! The experiments of the parallel algorithms behind `topoprobe bench`, as library calls
//! that return data ([`topoprobe_model::results::bench`]):
//!
//! - [`sort`]: topoprobe's sort against rayon's `par_sort_unstable` and std's
//!   `sort_unstable` on the same random arrays (paper §7.2);
//! - [`reduce`]: vectors summed along the topology's reduction tree against a flat sum
//!   (paper §5).
//!
//! Each experiment's `Config::check` says before any work whether a request can run (a
//! [`ParallelError::Parameter`] names the first value out of range). Results are medians
//! over runs that interleave the alternatives, and every result is checked.

use topoprobe_model::size_text;

use crate::error::ParallelError;

pub mod reduce;
pub mod sort;

/// Runs from 1 to this many are accepted by every experiment.
pub const MAX_RUNS: usize = 1000;

/// Checks a count of runs.
pub(crate) fn check_runs(runs: usize) -> Result<(), ParallelError> {
    if runs == 0 || runs > MAX_RUNS {
        return Err(ParallelError::parameter(
            "runs",
            runs,
            format!("1 to {MAX_RUNS}"),
        ));
    }
    Ok(())
}

/// Checks the bytes of an array: from `min` to `max`.
pub(crate) fn check_bytes(value: u64, min: u64, max: u64) -> Result<(), ParallelError> {
    if value < min || value > max {
        return Err(ParallelError::parameter(
            "size",
            size_text(value),
            format!("{} to {}", size_text(min), size_text(max)),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_said_in_their_unit() {
        assert_eq!(
            check_bytes(1, 8, 1 << 36).unwrap_err().to_string(),
            "size 1 B is out of range (allowed: 8 B to 64 GiB)"
        );
        assert!(check_runs(0).is_err() && check_runs(1).is_ok());
    }
}
