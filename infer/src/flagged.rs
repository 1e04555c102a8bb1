//! Pairs a collection flags as uncertain: kept although their samples stayed noisy, or
//! missing because the probe gave up on them. The inference treats the first kind as
//! uncertain evidence ([`Collected::infer`](crate::Collected::infer)); both are reported.

use std::fmt;

use topoprobe_model::Noisy;

/// A pair of rows the collection flags, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FlaggedPair {
    /// First row (`a < b`).
    pub a: usize,
    /// Second row.
    pub b: usize,
    /// Why the pair is flagged.
    pub flag: PairFlag,
}

/// Why a pair is flagged.
#[derive(Debug, Clone, PartialEq)]
pub enum PairFlag {
    /// The pair is in the table, but its samples' spread stayed above the probe's limit
    /// after every retry (every reading of it, for a pair read more than once): its value
    /// is the best estimate there is, and uncertain.
    Noisy {
        /// Relative spread of its samples (the median over its readings).
        spread: f64,
        /// The most spread the probe accepts (relative).
        limit: f64,
        /// Batches the probe measured before keeping the best one (on its last reading).
        batches: usize,
    },
    /// The pair is missing: the probe tried and gave up (why).
    GaveUp(String),
}

impl PairFlag {
    /// The flag of a noisy sample of relative spread `spread`.
    #[must_use]
    pub fn noisy(spread: f64, noisy: Noisy) -> Self {
        Self::Noisy {
            spread,
            limit: noisy.limit,
            batches: noisy.batches,
        }
    }

    /// Whether the pair is in the table (noisy) rather than missing.
    #[must_use]
    pub fn is_noisy(&self) -> bool {
        matches!(self, Self::Noisy { .. })
    }
}

impl fmt::Display for PairFlag {
    /// "spread 10.2% above the 14.0% limit after 5 batches", or "not measured: " and why.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Noisy {
                spread,
                limit,
                batches,
            } => {
                let n = Noisy {
                    limit: *limit,
                    batches: *batches,
                };
                f.write_str(&n.describe(*spread))
            }
            Self::GaveUp(why) => write!(f, "not measured: {why}"),
        }
    }
}

/// Names of the rows: their OS CPU numbers when known (`cpu_ids`), else the row numbers.
pub(crate) fn pair_name(a: usize, b: usize, cpu_ids: Option<&[u32]>) -> String {
    let id = |r: usize| match cpu_ids.and_then(|ids| ids.get(r)) {
        Some(c) => c.to_string(),
        None => r.to_string(),
    };
    format!("({}, {})", id(a), id(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_say_what_they_mean() {
        let f = PairFlag::noisy(
            0.102,
            Noisy {
                limit: 0.14,
                batches: 5,
            },
        );
        assert!(f.is_noisy());
        assert!(f.to_string().starts_with("more than half"), "{f}");
        let f = PairFlag::noisy(
            0.3,
            Noisy {
                limit: 0.14,
                batches: 5,
            },
        );
        assert_eq!(
            f.to_string(),
            "spread 30.0% above the 14.0% limit after 5 batches"
        );
        let g = PairFlag::GaveUp("the partner stalled".into());
        assert!(!g.is_noisy());
        assert_eq!(g.to_string(), "not measured: the partner stalled");
        assert_eq!(pair_name(1, 2, Some(&[4, 5, 6])), "(5, 6)");
        assert_eq!(pair_name(1, 2, None), "(1, 2)");
    }
}
