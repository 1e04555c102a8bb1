//! Deserializing what a description file holds with the limits of `docs/LIMITS.md`
//! checked while reading, before anything grows past them: a latency matrix (rows of at
//! most [`MAX_CONTEXTS`] entries, every row as long as the first) and lists of contexts,
//! cores, groups, sockets and nodes. A crafted file of 200 MB with one long row is refused
//! at its first row instead of after allocating gigabytes.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

use crate::limits::MAX_CONTEXTS;
use crate::LatencyMatrix;

/// A sequence of at most `MAX` elements (`what` names them in the error).
struct Bounded<T, const MAX: usize> {
    what: &'static str,
    _t: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for Bounded<T, MAX> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of at most {MAX} {}", self.what)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX).min(1024));
        while let Some(x) = seq.next_element()? {
            if out.len() == MAX {
                return Err(de::Error::custom(format!(
                    "more than {MAX} {}: topoprobe reads machines of up to {MAX} (see docs/LIMITS.md)",
                    self.what
                )));
            }
            out.push(x);
        }
        Ok(out)
    }
}

/// Deserializes a list of at most [`MAX_CONTEXTS`] elements: contexts, cores, groups,
/// sockets, the members of one of them.
///
/// # Errors
///
/// The deserializer's, and one naming the limit for a longer list.
pub(crate) fn contexts_at_most<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(Bounded::<T, MAX_CONTEXTS> {
        what: "entries (contexts, cores, groups or sockets)",
        _t: PhantomData,
    })
}

/// Deserializes a list of at most [`MAX_NODES`](crate::limits::MAX_NODES) memory nodes.
///
/// # Errors
///
/// The deserializer's, and one naming the limit for a longer list.
pub(crate) fn nodes_at_most<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(Bounded::<T, { crate::limits::MAX_NODES }> {
        what: "memory nodes",
        _t: PhantomData,
    })
}

/// One row of a matrix: at most `limit` entries, read into `values`.
struct Row<'a> {
    values: &'a mut Vec<f32>,
    limit: usize,
    /// The row's index, for messages.
    index: usize,
}

impl<'de> de::DeserializeSeed<'de> for Row<'_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Row<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a row of at most {} latencies", self.limit)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut count = 0;
        while let Some(v) = seq.next_element::<Option<f64>>()? {
            if count == self.limit {
                return Err(de::Error::custom(format!(
                    "a latency row longer than {}: a matrix has at most {MAX_CONTEXTS} \
                     contexts and every row as many entries as the first (see docs/LIMITS.md)",
                    self.limit
                )));
            }
            // Stored compactly as it is read (NaN: missing); a value past the largest
            // latency (which an `f32` may not even hold) is refused here with its place,
            // the others by `LatencyMatrix::from_stored`.
            if let Some(x) = v.filter(|x| x.abs() > crate::format::csv::MAX_LATENCY) {
                return Err(de::Error::custom(format!(
                    "latency table entry [{}][{count}] is {x:e}: a latency is finite, 0 to {:e}",
                    self.index,
                    crate::format::csv::MAX_LATENCY
                )));
            }
            #[allow(clippy::cast_possible_truncation)]
            self.values.push(v.map_or(f32::NAN, |x| x as f32));
            count += 1;
        }
        Ok(count)
    }
}

/// Makes room in `values` for one more row of `n` entries: doubling, so that reading
/// costs linear time, but never past the whole table of `n`² entries, nor before a row
/// has come (the first row of 4096 entries of a 30 KB file once reserved the 268 MB of
/// a whole table, when entries took 16 bytes).
fn grow_for_row(values: &mut Vec<f32>, n: usize) {
    if values.capacity() - values.len() < n {
        let want = values
            .len()
            .saturating_mul(2)
            .max(values.len() + n)
            .min(n.saturating_mul(n));
        values.reserve_exact(want.saturating_sub(values.len()));
    }
}

/// The rows of a matrix, read into one flat vector.
struct Rows;

impl<'de> Visitor<'de> for Rows {
    type Value = LatencyMatrix;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a square matrix of at most {MAX_CONTEXTS} rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LatencyMatrix, A::Error> {
        let mut values: Vec<f32> = Vec::new();
        // The first row sets the size; the others must match it.
        let mut n: Option<usize> = None;
        let mut rows = 0_usize;
        loop {
            if let Some(n) = n {
                grow_for_row(&mut values, n);
            }
            let limit = n.unwrap_or(MAX_CONTEXTS);
            if rows == limit {
                // One more row than columns: the matrix is not square.
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom(format!(
                        "more than {limit} rows in a matrix of {limit} columns (it must be square)"
                    )));
                }
                break;
            }
            let Some(found) = seq.next_element_seed(Row {
                values: &mut values,
                limit,
                index: rows,
            })?
            else {
                break;
            };
            match n {
                None => n = Some(found),
                Some(n) if found != n => {
                    return Err(de::Error::custom(format!(
                        "row {rows} has {found} entries, expected {n} (the matrix must be square)"
                    )));
                }
                Some(_) => {}
            }
            rows += 1;
        }
        let n = n.unwrap_or(0);
        if rows != n {
            return Err(de::Error::custom(format!(
                "{rows} rows in a matrix of {n} columns (it must be square)"
            )));
        }
        LatencyMatrix::from_stored(n, values).map_err(de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for LatencyMatrix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(Rows)
    }
}
