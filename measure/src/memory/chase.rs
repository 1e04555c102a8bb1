//! Memory latency: a dependent pointer chase through a buffer in a random cyclic order, so
//! that neither caches nor prefetchers can help.
//!
//! - **Slots of 128 bytes.** The chase visits one 64-byte line in every aligned pair of
//!   lines. Adjacent-line prefetchers fetch a missed line's partner with it; had the partner
//!   been in the cycle, the chase would later find it in a cache (on an AMD EPYC Zen 4 guest
//!   a flushed 64 MiB chase read 132 ns with 64-byte slots and 148 ns with 128-byte ones).
//! - **Evicted, not outsized.** Where lines can be evicted by instruction
//!   ([`topoprobe_sys::counter::can_flush`]), the buffer is evicted from every cache once,
//!   then chased for less than one lap: every load of the lap goes to memory however large
//!   the last-level cache is (a 1 GiB L3 needs no 6 GiB buffer). Elsewhere the chase runs in
//!   its steady state over a buffer several times the last-level cache.

use std::hint::black_box;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use topoprobe_sys::buffer::Buffer;
use topoprobe_sys::counter::flush_lines;

/// Bytes between two visited positions: one line of every aligned pair of lines.
pub const SLOT_BYTES: usize = 128;
/// Words per slot.
const SLOT_WORDS: usize = SLOT_BYTES / 8;

/// Links one line of every 128-byte slot of `buf` into one random cycle (a shuffled order
/// closed into a ring: every slot is visited once before the chase comes back); each
/// visited line's first word holds the word index of the next one. Returns the number of
/// slots.
pub fn link_random_cycle(buf: &mut Buffer, seed: u64) -> usize {
    let words = buf.words_mut();
    let slots = words.len() / SLOT_WORDS;
    if slots == 0 {
        return 0;
    }
    let mut order: Vec<u32> = (0..u32::try_from(slots).unwrap_or(u32::MAX)).collect();
    let slots = order.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    order.shuffle(&mut rng);
    for i in 0..slots {
        let from = order[i] as usize;
        let to = order[(i + 1) % slots] as usize;
        words[from * SLOT_WORDS] = (to * SLOT_WORDS) as u64;
    }
    slots
}

/// Follows the chain for `steps` loads from word `from`; returns where it stopped.
pub fn chase(words: &[u64], from: usize, steps: usize) -> usize {
    let mut j = from;
    for _ in 0..steps {
        j = words[j] as usize;
    }
    black_box(j)
}

/// How a linked buffer is chased.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChaseRounds {
    /// Timed rounds.
    pub rounds: usize,
    /// Loads per timed round.
    pub steps: usize,
    /// Untimed loads before the first round (they bring the page-walk caches to their
    /// steady state).
    pub warm_up: usize,
    /// Evict the buffer before the warm-up, and keep warm-up and rounds within one lap.
    pub evict: bool,
}

impl ChaseRounds {
    /// Rounds that fit one lap of `slots` after an eviction: a warm-up of a sixteenth of
    /// the lap, then `rounds` rounds of at most `max_steps` loads sharing the rest.
    #[must_use]
    pub fn within_one_lap(slots: usize, rounds: usize, max_steps: usize) -> Self {
        let rounds = rounds.max(1);
        let warm_up = slots / 16;
        let steps = (slots.saturating_sub(warm_up) / rounds).clamp(1, max_steps.max(1));
        Self {
            rounds,
            steps,
            warm_up,
            evict: true,
        }
    }

    /// Loads in all, warm-up included.
    #[must_use]
    pub fn loads(&self) -> usize {
        self.warm_up + self.rounds * self.steps
    }
}

/// The ns per load of each timed round of a chase through `buf` (linked by
/// [`link_random_cycle`]).
#[must_use]
pub fn timed_rounds(buf: &Buffer, how: ChaseRounds) -> Vec<f64> {
    if how.evict {
        flush_lines(buf.words());
    }
    let words = buf.words();
    let mut j = chase(words, 0, how.warm_up);
    (0..how.rounds)
        .map(|_| {
            let t = Instant::now();
            j = chase(black_box(words), j, how.steps);
            t.elapsed().as_nanos() as f64 / how.steps.max(1) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use topoprobe_sys::buffer::PagePlacement;

    #[test]
    fn the_cycle_visits_every_slot_once() {
        let mut b = Buffer::new(64 * 1024, PagePlacement::default()).unwrap();
        let n = link_random_cycle(&mut b, 7);
        assert_eq!(n, 512);
        let mut seen = vec![false; n];
        let mut j = 0usize;
        for _ in 0..n {
            assert_eq!(
                j % SLOT_WORDS,
                0,
                "only the first line of a slot is visited"
            );
            assert!(
                !seen[j / SLOT_WORDS],
                "slot {} visited twice",
                j / SLOT_WORDS
            );
            seen[j / SLOT_WORDS] = true;
            j = b.words()[j] as usize;
        }
        assert_eq!(j, 0, "the chase comes back to the start after every slot");
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn rounds_within_one_lap_never_visit_a_slot_twice() {
        let how = ChaseRounds::within_one_lap(1 << 19, 4, 1 << 17);
        assert!(how.loads() <= 1 << 19, "{how:?}");
        assert_eq!(how.rounds, 4);
        let tiny = ChaseRounds::within_one_lap(10, 4, 1 << 17);
        assert!(tiny.loads() <= 10 && tiny.steps >= 1, "{tiny:?}");
        let mut b = Buffer::new(64 * 1024, PagePlacement::default()).unwrap();
        let slots = link_random_cycle(&mut b, 3);
        let ns = timed_rounds(&b, ChaseRounds::within_one_lap(slots, 3, 1000));
        assert_eq!(ns.len(), 3);
        assert!(ns.iter().all(|&x| x > 0.0));
    }
}
