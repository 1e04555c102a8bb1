//! The cache walk: Servet's address set (every 1 KiB position of an array, Fig. 1) visited
//! in a random cyclic order.
//!
//! mcalibrator walks the positions in address order. Modern cores' stride prefetchers follow
//! that walk and hide every level behind it (on Zen 3 the curve rises from 1.4 ns to only
//! 2.6 ns past the L1 and drifts to ~30 ns at 256 MiB; `tests/data/cache-curves/`). Visiting
//! the same positions in a random cycle keeps what the address set decides (how many lines
//! fall in each page set, hence the page-set model of [`super::probabilistic`]) and leaves
//! the prefetchers nothing to follow: each position holds the word index of the next one, so
//! every load depends on the one before and its address is unknown until it completes.
//!
//! The cycle grows with the array ([`Cycle::grow`]): a new position is inserted after a
//! uniformly chosen position of the cycle, which keeps the order a uniformly random cycle at
//! every size and makes a sweep over growing sizes cost one write per position.

use std::hint::black_box;
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Distance between two visited positions, bytes: a divisor of every cache size and of the
/// 4 KiB page, so that each page holds four positions in four different sets of its page
/// set.
pub const STRIDE_BYTES: usize = 1024;
const STRIDE_WORDS: usize = STRIDE_BYTES / 8;

/// A random cycle through the first positions of an array (each position's first word
/// holds the word index of the next position).
#[derive(Debug, Clone)]
pub struct Cycle {
    positions: usize,
    rng: ChaCha8Rng,
}

impl Cycle {
    /// A cycle of one position (position 0 pointing to itself) in `words`, with the random
    /// choices of `seed`; an empty `words` gives a cycle of no position, which
    /// [`Cycle::grow`] leaves empty.
    pub fn new(words: &mut [u64], seed: u64) -> Self {
        let positions = usize::from(!words.is_empty());
        if let Some(w) = words.first_mut() {
            *w = 0;
        }
        Self {
            positions,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Positions in the cycle.
    #[must_use]
    pub fn positions(&self) -> usize {
        self.positions
    }

    /// Adds positions until the cycle covers the first `bytes` bytes of `words` (at most
    /// the whole array; a cycle never shrinks). Returns the number of positions.
    pub fn grow(&mut self, words: &mut [u64], bytes: usize) -> usize {
        let capacity = words.len().div_ceil(STRIDE_WORDS);
        let want = (bytes / STRIDE_BYTES)
            .clamp(1, capacity.max(1))
            .min(capacity);
        while self.positions < want {
            let p = self.positions * STRIDE_WORDS;
            let q = self.rng.random_range(0..self.positions) * STRIDE_WORDS;
            // Insert p right after q.
            words[p] = words[q];
            words[q] = p as u64;
            self.positions += 1;
        }
        self.positions
    }
}

/// Links the first `bytes` bytes of `words` into one random cycle (seed fixed) and returns
/// the number of positions (at least one, for a non-empty array).
pub fn prepare(words: &mut [u64], bytes: usize) -> usize {
    let mut c = Cycle::new(words, 0x05e1_27e7);
    c.grow(words, bytes)
}

/// Performs `steps` dependent accesses starting at word 0 and returns where it stopped.
pub fn walk(words: &[u64], steps: usize) -> usize {
    let mut j = 0usize;
    for _ in 0..steps {
        // Each index is the value just loaded: a chain of dependent loads.
        j = words[j] as usize;
    }
    black_box(j)
}

/// Average time of one access over a cycle of `positions` positions: one untimed lap
/// (it brings in every line that fits and leaves the caches in the cycle's steady state),
/// then `rounds` timed walks of `steps` accesses; the fastest round counts (interrupts and
/// neighbours only ever add time). A timed walk shorter than a lap samples the steady state
/// as well as a whole lap does.
#[must_use]
pub fn ns_per_access(words: &[u64], positions: usize, rounds: usize, steps: usize) -> f64 {
    let positions = positions.max(1);
    let steps = steps.max(1);
    walk(words, positions.max(steps / 4));
    let mut best = f64::INFINITY;
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        walk(black_box(words), steps);
        let ns = start.elapsed().as_nanos() as f64 / steps as f64;
        best = best.min(ns);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The positions a walk visits from word 0, in order, until it comes back.
    fn lap(words: &[u64], limit: usize) -> Vec<usize> {
        let mut seen = vec![0usize];
        let mut j = words[0] as usize;
        while j != 0 && seen.len() <= limit {
            seen.push(j / STRIDE_WORDS);
            j = words[j] as usize;
        }
        seen
    }

    #[test]
    fn the_cycle_visits_every_position_once_at_every_size() {
        let mut w = vec![0u64; 64 * STRIDE_WORDS];
        let mut c = Cycle::new(&mut w, 3);
        for bytes in [
            STRIDE_BYTES,
            5 * STRIDE_BYTES,
            17 * STRIDE_BYTES,
            64 * STRIDE_BYTES,
        ] {
            let n = c.grow(&mut w, bytes);
            assert_eq!(n, bytes / STRIDE_BYTES);
            let mut l = lap(&w, n);
            assert_eq!(l.len(), n, "one lap visits every position");
            l.sort_unstable();
            assert_eq!(l, (0..n).collect::<Vec<_>>());
        }
        // Beyond the array, the cycle stays the whole array.
        assert_eq!(c.grow(&mut w, 1 << 30), 64);
        assert_eq!(walk(&w, 64), 0, "64 steps come back to the start");
        assert!(ns_per_access(&w, 64, 2, 1000) > 0.0);
    }

    #[test]
    fn the_order_is_not_the_address_order() {
        let mut w = vec![0u64; 256 * STRIDE_WORDS];
        let n = prepare(&mut w, 256 * STRIDE_BYTES);
        let l = lap(&w, n);
        // Consecutive positions in address order are rare in a random cycle.
        let ascending = l.windows(2).filter(|p| p[1] == p[0] + 1).count();
        assert!(ascending < 10, "{ascending} ascending steps of {n}");
    }

    #[test]
    fn tiny_arrays_make_a_cycle_of_one() {
        let mut w = vec![0u64; 8];
        assert_eq!(prepare(&mut w, 10), 1);
        assert_eq!(walk(&w, 7), 0);
        let mut empty: Vec<u64> = Vec::new();
        assert_eq!(prepare(&mut empty, 4096), 0);
    }
}
