//! The mcalibrator traversal (Servet Fig. 1): an array walked with a 1 KiB stride whose
//! values are the strides, so that each load depends on the previous one and no compiler
//! can shorten the walk.

use std::hint::black_box;
use std::time::Instant;

/// Distance between two accessed words, bytes: larger than any line, beyond what
/// prefetchers follow, and a divisor of every cache size.
pub const STRIDE_BYTES: usize = 1024;
const STRIDE_WORDS: usize = STRIDE_BYTES / 8;

/// Writes the strides for a walk over the first `bytes` bytes of `words`: every 1 KiB
/// position holds the distance to the next one, the last holds the way back to the start.
/// Returns the number of positions (at least one).
pub fn prepare(words: &mut [u64], bytes: usize) -> usize {
    let positions = (bytes / STRIDE_BYTES).clamp(1, words.len() / STRIDE_WORDS);
    for j in 0..positions {
        words[j * STRIDE_WORDS] = STRIDE_WORDS as u64;
    }
    let last = (positions - 1) * STRIDE_WORDS;
    words[last] = (last as u64).wrapping_neg();
    positions
}

/// Performs `steps` dependent accesses starting at word 0 and returns where it stopped.
pub fn walk(words: &[u64], steps: usize) -> usize {
    let mut j = 0usize;
    for _ in 0..steps {
        // Each index comes from the value just loaded: a chain of dependent loads.
        j = j.wrapping_add(words[j] as usize);
    }
    black_box(j)
}

/// Average time of one access over `positions` prepared positions: one warm-up walk,
/// then `rounds` timed walks of at least `min_steps` accesses; the fastest round counts
/// (interrupts and neighbours only ever add time).
#[must_use]
pub fn ns_per_access(words: &[u64], positions: usize, rounds: usize, min_steps: usize) -> f64 {
    let steps = positions.max(min_steps).div_ceil(positions) * positions;
    walk(words, positions);
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

    #[test]
    fn the_walk_visits_every_position_and_returns_to_the_start() {
        let mut w = vec![0u64; 8 * STRIDE_WORDS];
        let n = prepare(&mut w, 5 * STRIDE_BYTES);
        assert_eq!(n, 5);
        assert_eq!(walk(&w, 5), 0);
        assert_eq!(walk(&w, 3), 3 * STRIDE_WORDS);
        // Sizes below one stride still make a walk of one position.
        assert_eq!(prepare(&mut w, 10), 1);
        assert_eq!(walk(&w, 7), 0);
        assert!(ns_per_access(&w, 1, 2, 1000) > 0.0);
    }
}
