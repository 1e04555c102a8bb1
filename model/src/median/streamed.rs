//! Exact medians of groups of values too many to hold as `f64`: the values are streamed
//! three times, and only one `f32` key per value is held at once (4 bytes where a list of
//! `f64` takes 8), the exact `f64` being recovered among the few values that share the
//! middle key.

use std::collections::BTreeMap;

/// The values of every group, streamed by a function that calls its argument with
/// `(group, value)` for each value, in the same order each time. Values are finite and
/// not negative.
pub trait ValueStream {
    /// Calls `f` with every `(group, value)`.
    fn each(&self, f: &mut dyn FnMut(usize, f64));
}

impl<F: Fn(&mut dyn FnMut(usize, f64))> ValueStream for F {
    fn each(&self, f: &mut dyn FnMut(usize, f64)) {
        self(f);
    }
}

/// A value as a key that orders as the value does (not strictly: nearby values share one).
#[inline]
#[allow(clippy::cast_possible_truncation)]
fn key(v: f64) -> u32 {
    (v as f32).to_bits()
}

/// The median of each of `groups` groups (the mean of the two middle values for an even
/// count, NaN for an empty group), exactly as [`median`](crate::median) gives it, with the
/// count of values of each group.
#[must_use]
pub fn streamed_medians(groups: usize, values: &dyn ValueStream) -> (Vec<f64>, Vec<usize>) {
    let (middles, count) = streamed_middles(groups, values);
    let medians = middles
        .into_iter()
        .map(|(low, high)| if low == high { low } else { (low + high) / 2.0 })
        .collect();
    (medians, count)
}

/// The two middle values of each of `groups` groups, lower first (the same value twice
/// for an odd count, NaN twice for an empty group), with the count of values of each
/// group: what a median is made of, for a caller that maps the values first (any mapping
/// that keeps their order maps the middle values to the mapped values' middle values).
#[must_use]
pub fn streamed_middles(groups: usize, values: &dyn ValueStream) -> (Vec<(f64, f64)>, Vec<usize>) {
    let mut count = vec![0_usize; groups];
    values.each(&mut |g, _| count[g] += 1);
    let mut start = Vec::with_capacity(groups + 1);
    start.push(0_usize);
    for &c in &count {
        start.push(start[start.len() - 1] + c);
    }
    let mut keys = vec![0_u32; start[groups]];
    let mut fill = start.clone();
    values.each(&mut |g, v| {
        keys[fill[g]] = key(v);
        fill[g] += 1;
    });
    drop(fill);
    // Per group, the ranks wanted: the middle one and, for an even count, the one below.
    // For each, its key and how many values of the group lie below that key.
    struct Target {
        group: usize,
        rank: usize,
        key: u32,
        below: usize,
    }
    let mut targets: Vec<Target> = Vec::new();
    for g in 0..groups {
        let m = count[g];
        if m == 0 {
            continue;
        }
        let slice = &mut keys[start[g]..start[g + 1]];
        let mut ranks = vec![m / 2];
        if m.is_multiple_of(2) {
            ranks.push(m / 2 - 1);
        }
        for rank in ranks {
            let (_, &mut k, _) = slice.select_nth_unstable(rank);
            let below = slice.iter().filter(|&&x| x < k).count();
            targets.push(Target {
                group: g,
                rank,
                key: k,
                below,
            });
        }
    }
    drop(keys);
    // The exact values behind each target's key, with their counts.
    let mut first = vec![usize::MAX; groups];
    for (i, t) in targets.iter().enumerate().rev() {
        first[t.group] = i;
    }
    let mut exact: Vec<BTreeMap<u64, usize>> = vec![BTreeMap::new(); targets.len()];
    values.each(&mut |g, v| {
        let k = key(v);
        let mut i = first[g];
        while i < targets.len() && targets[i].group == g {
            if targets[i].key == k {
                *exact[i].entry(v.to_bits()).or_insert(0) += 1;
            }
            i += 1;
        }
    });
    let value_at = |i: usize| -> f64 {
        let mut left = targets[i].rank - targets[i].below;
        for (&bits, &c) in &exact[i] {
            if left < c {
                return f64::from_bits(bits);
            }
            left -= c;
        }
        f64::NAN
    };
    let mut out = vec![(f64::NAN, f64::NAN); groups];
    let mut i = 0;
    while i < targets.len() {
        let g = targets[i].group;
        if !count[g].is_multiple_of(2) {
            let v = value_at(i);
            out[g] = (v, v);
            i += 1;
        } else {
            // The targets of an even count: the middle rank, then the one below.
            out[g] = (value_at(i + 1), value_at(i));
            i += 2;
        }
    }
    (out, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_are_exact() {
        // Values that share an f32 key but differ as f64, ties, odd and even counts.
        let data: Vec<(usize, f64)> = vec![
            (0, 1.0),
            (0, 1.0 + 1e-12),
            (0, 1.0 + 2e-12),
            (1, 5.0),
            (1, 3.0),
            (1, 3.0),
            (1, 4.0),
            (3, 7.5),
        ];
        let stream = |f: &mut dyn FnMut(usize, f64)| {
            for &(g, v) in &data {
                f(g, v);
            }
        };
        let (m, count) = streamed_medians(4, &stream);
        assert_eq!(m[0], 1.0 + 1e-12);
        assert_eq!(m[1], 3.5);
        assert!(m[2].is_nan());
        assert_eq!(m[3], 7.5);
        assert_eq!(count, vec![3, 4, 0, 1]);
        let (middles, _) = streamed_middles(4, &stream);
        assert_eq!(middles[1], (3.0, 4.0));
        assert_eq!(middles[3], (7.5, 7.5));
        for g in [0, 1] {
            let v: Vec<f64> = data.iter().filter(|x| x.0 == g).map(|x| x.1).collect();
            assert_eq!(Some(m[g]), crate::median(&v));
        }
    }
}
