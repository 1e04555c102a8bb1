//! Memory latency: a dependent pointer chase through every cache line of a buffer in a
//! random cyclic order, so that neither caches nor prefetchers can help.

use std::hint::black_box;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use topoprobe_sys::buffer::Buffer;

/// Words per 64-byte cache line.
const LINE_WORDS: usize = 8;

/// Links every line of `buf` into one random cycle (a shuffled order, closed into a ring: every line is
/// visited once before the chase comes back); each line's first word holds the word index
/// of the next line. Returns the number of lines.
pub fn link_random_cycle(buf: &mut Buffer, seed: u64) -> usize {
    let words = buf.words_mut();
    let lines = words.len() / LINE_WORDS;
    if lines == 0 {
        return 0;
    }
    let mut order: Vec<u32> = (0..u32::try_from(lines).unwrap_or(u32::MAX)).collect();
    let lines = order.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    order.shuffle(&mut rng);
    for i in 0..lines {
        let from = order[i] as usize;
        let to = order[(i + 1) % lines] as usize;
        words[from * LINE_WORDS] = (to * LINE_WORDS) as u64;
    }
    lines
}

/// Follows the chain for `steps` loads from word 0; returns where it stopped.
pub fn chase(words: &[u64], steps: usize) -> usize {
    let mut j = 0usize;
    for _ in 0..steps {
        j = words[j] as usize;
    }
    black_box(j)
}

/// Average time of one dependent load over `steps` loads after a warm-up of `steps / 8`
/// (which also brings the page-table walk caches to their steady state).
#[must_use]
pub fn ns_per_load(words: &[u64], steps: usize) -> f64 {
    chase(words, steps / 8);
    let t = Instant::now();
    chase(black_box(words), steps);
    t.elapsed().as_nanos() as f64 / steps.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_sys::buffer::PagePlacement;

    #[test]
    fn the_cycle_visits_every_line_once() {
        let mut b = Buffer::new(64 * 1024, PagePlacement::default()).unwrap();
        let n = link_random_cycle(&mut b, 7);
        assert_eq!(n, 1024);
        let mut seen = vec![false; n];
        let mut j = 0usize;
        for _ in 0..n {
            assert!(
                !seen[j / LINE_WORDS],
                "line {} visited twice",
                j / LINE_WORDS
            );
            seen[j / LINE_WORDS] = true;
            j = b.words()[j] as usize;
        }
        assert_eq!(j, 0, "the chase comes back to the start after every line");
        assert!(seen.iter().all(|&s| s));
        assert!(ns_per_load(b.words(), 1000) > 0.0);
    }
}
