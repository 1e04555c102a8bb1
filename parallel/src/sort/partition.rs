//! The parallel radix path: one partition pass by the most significant byte on which the
//! keys differ, then each worker sorts a contiguous run of buckets in its caches.
//!
//! 1. Each worker counts its chunk's keys per bucket (256 buckets of that byte), then
//!    moves its chunk into the same range of the scratch buffer, bucket by bucket.
//! 2. The buckets are dealt in order to the workers in the reduction tree's layout (so
//!    that the workers of a group, then of a socket, own adjacent parts of the output);
//!    each worker gathers every worker's piece of each of its buckets into the bucket's
//!    final place and sorts it there by the remaining bytes ([`sort_low_bytes`]).
//! 3. A bucket holding more than a worker's share (skewed keys) is sorted afterwards by
//!    all the workers, by the same two steps on the next byte.
//!
//! Memory is crossed about five times (count, move, gather, write-back), against twice
//! per byte for LSD passes and once more per merge level for sort-then-merge; this is the
//! partitioning order of IPS⁴o and of the paper's §7.2 "sort per socket, then combine",
//! without a merge.

use super::radix::{exclusive_sums, histogram, scatter, sort_low_bytes};
use super::{split, RadixKey, Sorter};

impl Sorter {
    /// Sorts `data` by its lowest `bytes` bytes (every key agrees on the higher ones), in
    /// parallel from the radix threshold; `scratch` is as long as `data`.
    pub(super) fn partition_sort<K: RadixKey>(
        &self,
        data: &mut [K],
        scratch: &mut [K],
        bytes: usize,
    ) {
        let n = data.len();
        if n < self.radix_threshold.max(2) || self.threads() == 1 {
            sort_low_bytes(data, scratch, bytes, true);
            return;
        }
        let movers = self.memory_phase_workers();
        let p = movers.len();
        let chunk = |k: usize| k * n / p..(k + 1) * n / p;
        // Counting: the highest byte on which the keys differ, per worker's chunk.
        let mut byte = bytes;
        let counts: Vec<[usize; 256]> = loop {
            if byte == 0 {
                return; // every key is equal
            }
            byte -= 1;
            let parts: Vec<(usize, &[K])> = movers
                .iter()
                .enumerate()
                .map(|(k, &w)| (w, &data[chunk(k)]))
                .collect();
            let counts = self.on_workers(parts, |keys| histogram(keys, byte));
            if !total(&counts).contains(&n) {
                break counts;
            }
        };
        // Moving: each chunk into its own range of the scratch, bucket by bucket.
        let jobs: Vec<(usize, usize, usize)> = movers
            .iter()
            .enumerate()
            .map(|(k, &w)| (w, chunk(k).start, chunk(k).end))
            .collect();
        let parts: Vec<_> = split(scratch, &jobs)
            .into_iter()
            .zip(&counts)
            .enumerate()
            .map(|(k, ((w, out), c))| (w, (&data[chunk(k)], out, exclusive_sums(c))))
            .collect();
        self.on_workers(parts, |(src, dst, starts)| scatter(src, dst, byte, starts));
        // Gathering and sorting: buckets dealt in order to the workers of the layout.
        let sizes = total(&counts);
        let starts = exclusive_sums(&sizes);
        let workers = &self.layout;
        let q = workers.len();
        let share = n / q;
        let owner = |d: usize| ((starts[d] + sizes[d] / 2) * q / n).min(q - 1);
        let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // worker position, first bucket, end bucket
        for d in 0..256 {
            match runs.last_mut() {
                Some(r) if r.0 == owner(d) => r.2 = d + 1,
                _ => runs.push((owner(d), d, d + 1)),
            }
        }
        let jobs: Vec<(usize, usize, usize)> = runs
            .iter()
            .map(|&(k, b0, b1)| (workers[k], starts[b0], starts[b1 - 1] + sizes[b1 - 1]))
            .collect();
        let buckets: Vec<(usize, usize)> = runs.iter().map(|&(_, b0, b1)| (b0, b1)).collect();
        let piece_starts: Vec<[usize; 256]> = counts.iter().map(exclusive_sums).collect();
        let moved: &[K] = scratch;
        let parts: Vec<_> = split(data, &jobs)
            .into_iter()
            .zip(buckets)
            .map(|((w, out), b)| (w, (out, b)))
            .collect();
        self.on_workers(parts, |(out, (b0, b1))| {
            let base = starts[b0];
            let mut buffer: Vec<K> = Vec::new();
            for d in b0..b1 {
                let dst = &mut out[starts[d] - base..starts[d] - base + sizes[d]];
                let mut at = 0;
                for (k, c) in counts.iter().enumerate() {
                    let from = chunk(k).start + piece_starts[k][d];
                    dst[at..at + c[d]].copy_from_slice(&moved[from..from + c[d]]);
                    at += c[d];
                }
                if sizes[d] <= share {
                    buffer.resize(sizes[d].max(buffer.len()), K::default());
                    sort_low_bytes(dst, &mut buffer[..sizes[d]], byte, true);
                }
            }
        });
        // Buckets above a worker's share: all workers on each, by the next byte.
        for d in (0..256).filter(|&d| sizes[d] > share) {
            let range = starts[d]..starts[d] + sizes[d];
            self.partition_sort(&mut data[range.clone()], &mut scratch[range], byte);
        }
    }

    /// The workers of memory-bound passes, in layout order: every worker, or only the first
    /// context of each core when the calibration found SMT siblings slow those passes.
    fn memory_phase_workers(&self) -> Vec<usize> {
        let primaries: Vec<usize> = self
            .layout
            .iter()
            .copied()
            .filter(|&w| !self.secondary[w])
            .collect();
        if self.smt_merge || primaries.is_empty() {
            self.layout.clone()
        } else {
            primaries
        }
    }
}

/// The sum of the workers' histograms.
fn total(counts: &[[usize; 256]]) -> [usize; 256] {
    let mut sum = [0usize; 256];
    for c in counts {
        for (s, x) in sum.iter_mut().zip(c) {
            *s += x;
        }
    }
    sum
}
