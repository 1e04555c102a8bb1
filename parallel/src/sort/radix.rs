//! Sequential radix sorts of integer keys: most significant byte first (MSD) while a
//! bucket is larger than the caches hold comfortably, least significant byte first (LSD)
//! below that, a comparison sort for a handful of keys. Bytes on which every key of a
//! bucket agrees cost one counting pass and no move.

use super::RadixKey;

/// Below this many keys, a comparison sort.
const SMALL: usize = 64;

/// Up to this many keys, LSD passes over the bucket (keys and scratch stay in the L1/L2
/// caches: 8 Ki keys of 8 bytes and their scratch are 128 KiB); above it, an MSD pass
/// splits the keys into 256 buckets first, so that memory is crossed once per level.
const LSD_MAX: usize = 1 << 13;

/// Sorts `data` with `scratch` (at least as long) as the second buffer.
///
/// # Panics
///
/// When `scratch` is shorter than `data`.
pub fn radix_sort<K: RadixKey>(data: &mut [K], scratch: &mut [K]) {
    let n = data.len();
    sort_low_bytes(data, &mut scratch[..n], K::BYTES, true);
}

/// Sorts the keys of `a` by their lowest `bytes` bytes (every key of `a` agrees on the
/// bytes above), with `b` (as long as `a`) as scratch; the result ends in `a` when
/// `into_a`, in `b` otherwise, and the other buffer is left clobbered.
pub(super) fn sort_low_bytes<K: RadixKey>(a: &mut [K], b: &mut [K], bytes: usize, into_a: bool) {
    let n = a.len();
    if n <= LSD_MAX || bytes <= 1 {
        if n < SMALL {
            a.sort_unstable();
        } else {
            lsd(a, b, bytes);
        }
        if !into_a {
            b.copy_from_slice(a);
        }
        return;
    }
    let Some((byte, counts)) = highest_varying_byte(a, bytes) else {
        // Every key is equal.
        if !into_a {
            b.copy_from_slice(a);
        }
        return;
    };
    let starts = exclusive_sums(&counts);
    scatter(a, b, byte, starts);
    for (d, &count) in counts.iter().enumerate() {
        let range = starts[d]..starts[d] + count;
        sort_low_bytes(&mut b[range.clone()], &mut a[range], byte, !into_a);
    }
}

/// The highest byte below `bytes` on which the keys differ, with its histogram; `None`
/// when they are all equal there.
fn highest_varying_byte<K: RadixKey>(keys: &[K], bytes: usize) -> Option<(usize, [usize; 256])> {
    (0..bytes).rev().find_map(|byte| {
        let counts = histogram(keys, byte);
        (!counts.contains(&keys.len())).then_some((byte, counts))
    })
}

/// How many keys have each value of byte `byte`.
pub(super) fn histogram<K: RadixKey>(keys: &[K], byte: usize) -> [usize; 256] {
    let mut counts = [0usize; 256];
    for &k in keys {
        counts[k.byte(byte)] += 1;
    }
    counts
}

/// Where each bucket starts when the buckets follow each other in order.
pub(super) fn exclusive_sums(counts: &[usize; 256]) -> [usize; 256] {
    let mut starts = [0usize; 256];
    let mut sum = 0;
    for (s, &c) in starts.iter_mut().zip(counts) {
        *s = sum;
        sum += c;
    }
    starts
}

/// Moves each key of `src` to the next free place of its bucket (by byte `byte`) in `dst`;
/// `next[d]` is where bucket `d` starts.
pub(super) fn scatter<K: RadixKey>(src: &[K], dst: &mut [K], byte: usize, mut next: [usize; 256]) {
    for &k in src {
        let d = k.byte(byte);
        dst[next[d]] = k;
        next[d] += 1;
    }
}

/// LSD radix sort of `a` by its lowest `bytes` bytes, skipping bytes on which every key
/// agrees; `b` (as long as `a`) is scratch and the result ends in `a`.
fn lsd<K: RadixKey>(a: &mut [K], b: &mut [K], bytes: usize) {
    let n = a.len();
    let mut counts = vec![[0usize; 256]; bytes];
    for &k in a.iter() {
        for (byte, c) in counts.iter_mut().enumerate() {
            c[k.byte(byte)] += 1;
        }
    }
    let mut in_b = false;
    for (byte, c) in counts.iter().enumerate() {
        if c.contains(&n) {
            continue;
        }
        let starts = exclusive_sums(c);
        if in_b {
            scatter(b, a, byte, starts);
        } else {
            scatter(a, b, byte, starts);
        }
        in_b = !in_b;
    }
    if in_b {
        a.copy_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize, mask: u64) -> Vec<u64> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x & mask
            })
            .collect()
    }

    #[test]
    fn every_size_class_sorts_through_msd_and_lsd() {
        for n in [0, 1, 63, 64, 1000, LSD_MAX, LSD_MAX + 1, 300_000] {
            for mask in [u64::MAX, 0xff, 0xff00_0000_0000, 0] {
                let mut v = keys(n, mask);
                let mut want = v.clone();
                want.sort_unstable();
                radix_sort(&mut v, &mut vec![0; n]);
                assert_eq!(v, want, "n {n} mask {mask:x}");
            }
        }
    }

    #[test]
    fn the_result_lands_in_the_buffer_asked_for() {
        let v = keys(50_000, u64::MAX);
        let mut want = v.clone();
        want.sort_unstable();
        let mut a = v.clone();
        let mut b = vec![0; v.len()];
        sort_low_bytes(&mut a, &mut b, 8, false);
        assert_eq!(b, want);
    }
}
