//! Memory latency: a dependent pointer chase through a buffer in a random cyclic order, so
//! that neither caches nor prefetchers can help.
//!
//! - **Page-local windows** ([`ChaseOrder::PageLocal`]). The idle latency is chased window
//!   by window: 256 KiB (64 pages of 4 KiB) in a random order, then the next window, the
//!   windows themselves in a random order. The TLB holds a window's pages, so the figure
//!   is the memory's own latency, as google's multichase and Intel's MLC report it (on an
//!   AMD EPYC Zen 4 guest, multichase gave 124 ns with its 256 KiB windows and 149-157 ns
//!   chasing its whole 64-256 MiB buffer at random, as topoprobe did before it kept to
//!   windows). The order scattered over the whole buffer ([`ChaseOrder::Scattered`]) is
//!   measured beside it on 4 KiB pages: what a program that jumps across a large buffer
//!   pays in TLB misses, page walks and DRAM page changes on top.
//! - **Slots of 128 bytes.** The chase visits one 64-byte line in every aligned pair of
//!   lines. Adjacent-line prefetchers fetch a missed line's partner with it; had the partner
//!   been in the cycle, the chase would later find it in a cache (on an AMD EPYC Zen 4 guest
//!   a flushed 64 MiB chase read 132 ns with 64-byte slots and 148 ns with 128-byte ones).
//! - **Either line of the pair.** Each slot's visited line is the first or the second of
//!   its pair at random (as multichase varies its element's offset within its stride). Had
//!   it always been the first, address bit 6 would never change, the memory controller's
//!   channel and bank hash would spread the loads over fewer banks, and more loads would
//!   find another row open in their bank: on the AMD EPYC Zen 4 guest the page-local chase
//!   read 143-153 ns on first lines only and 130-136 ns on either line.
//! - **Evicted, not outsized.** Where lines can be evicted by instruction
//!   ([`topoprobe_sys::counter::can_flush`]), the buffer is evicted from every cache once,
//!   then chased for less than one lap: every load of the lap goes to memory however large
//!   the last-level cache is (a 1 GiB L3 needs no 6 GiB buffer). Elsewhere the chase runs in
//!   its steady state over a buffer several times the last-level cache.

use std::hint::black_box;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use topoprobe_sys::buffer::Buffer;
use topoprobe_sys::counter::flush_lines;

/// Bytes between two visited positions: one line of every aligned pair of lines.
pub const SLOT_BYTES: usize = 128;
/// Words per slot.
const SLOT_WORDS: usize = SLOT_BYTES / 8;
/// Words per 64-byte line.
const LINE_WORDS: usize = 8;

/// Bytes of a page-local window: 64 pages of 4 KiB, the reach of a first-level TLB (the
/// window of google's multichase and of the idle latency that memory-latency tools quote).
pub const WINDOW_BYTES: usize = 64 * 4096;

/// Timed rounds of a latency measurement.
pub const LATENCY_ROUNDS: usize = 4;
/// Loads per timed latency round at most.
pub const LATENCY_MAX_STEPS: usize = 1 << 17;
/// Loads of a steady-state chase (no eviction), per round.
pub const STEADY_CHASE_STEPS: usize = 1 << 18;

/// The order in which a chase visits its slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChaseOrder {
    /// Windows of [`WINDOW_BYTES`] in a random order, the slots of each window in a random
    /// order before the next window: the prefetchers cannot follow it, and the TLB and the
    /// open DRAM pages serve it as they serve most programs. This is the memory's idle
    /// latency.
    PageLocal,
    /// Every slot of the buffer in one random order: each load also misses the TLB and the
    /// open DRAM page (a hash table over a large buffer pays this).
    Scattered,
}

impl ChaseOrder {
    /// Bytes of the windows whose slots are visited together.
    #[must_use]
    pub fn window_bytes(self, buffer_bytes: usize) -> usize {
        match self {
            Self::PageLocal => WINDOW_BYTES.min(buffer_bytes),
            Self::Scattered => buffer_bytes,
        }
    }
}

/// Links one line of every 128-byte slot of `buf` (the first or the second at random; the
/// first in slot 0, where the chase starts at word 0) into one cycle in `order` (every slot
/// is visited once before the chase comes back); each visited line's first word holds the
/// word index of the next one. Returns the number of slots.
pub fn link_cycle(buf: &mut Buffer, order: ChaseOrder, seed: u64) -> usize {
    let per_window = (order.window_bytes(buf.len_bytes()) / SLOT_BYTES).max(1);
    let words = buf.words_mut();
    let slots = (words.len() / SLOT_WORDS).min(u32::MAX as usize);
    if slots == 0 {
        return 0;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut windows: Vec<u32> = (0..slots.div_ceil(per_window) as u32).collect();
    windows.shuffle(&mut rng);
    let mut visits: Vec<u32> = Vec::with_capacity(slots);
    for w in windows {
        let first = w as usize * per_window;
        let start = visits.len();
        visits.extend(first as u32..(first + per_window).min(slots) as u32);
        visits[start..].shuffle(&mut rng);
    }
    // The visited line of each slot: bit k of `second` says the second line of slot k.
    let mut second: Vec<u64> = (0..slots.div_ceil(64)).map(|_| rng.random()).collect();
    second[0] &= !1;
    let word = |slot: usize| {
        slot * SLOT_WORDS + usize::from(second[slot / 64] >> (slot % 64) & 1 == 1) * LINE_WORDS
    };
    for i in 0..slots {
        let to = word(visits[(i + 1) % slots] as usize);
        words[word(visits[i] as usize)] = to as u64;
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
/// [`link_cycle`]).
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
        let n = link_cycle(&mut b, ChaseOrder::Scattered, 7);
        assert_eq!(n, 512);
        let mut seen = vec![false; n];
        let mut seconds = 0;
        let mut j = 0usize;
        for _ in 0..n {
            assert_eq!(
                j % LINE_WORDS,
                0,
                "only the first word of a line is visited"
            );
            seconds += usize::from(!j.is_multiple_of(SLOT_WORDS));
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
        assert!(
            (n / 4..3 * n / 4).contains(&seconds),
            "{seconds} of {n} slots visit their second line"
        );
    }

    #[test]
    fn the_page_local_order_finishes_a_window_before_the_next() {
        let mut b = Buffer::new(4 * WINDOW_BYTES, PagePlacement::default()).unwrap();
        let n = link_cycle(&mut b, ChaseOrder::PageLocal, 11);
        let per_window = WINDOW_BYTES / SLOT_BYTES;
        assert_eq!(n, 4 * per_window);
        // Around the cycle, the chase changes window once per window: each is visited whole.
        let mut j = 0usize;
        let mut changes = 0;
        let mut seen = vec![false; n];
        for _ in 0..n {
            let slot = j / SLOT_WORDS;
            assert!(!seen[slot], "slot {slot} visited twice");
            seen[slot] = true;
            let next = b.words()[j] as usize;
            if next / SLOT_WORDS / per_window != slot / per_window {
                changes += 1;
            }
            j = next;
        }
        assert_eq!(j, 0);
        assert_eq!(changes, 4);
        // Within a window the order is not the address order (the prefetchers would follow it).
        let mut k = 0usize;
        let ascending = (0..per_window)
            .filter(|_| {
                let next = b.words()[k] as usize;
                let up = next / SLOT_WORDS == k / SLOT_WORDS + 1;
                k = next;
                up
            })
            .count();
        assert!(
            ascending < per_window / 8,
            "{ascending} of {per_window} steps go to the next slot"
        );
    }

    #[test]
    fn rounds_within_one_lap_never_visit_a_slot_twice() {
        let how = ChaseRounds::within_one_lap(1 << 19, 4, 1 << 17);
        assert!(how.loads() <= 1 << 19, "{how:?}");
        assert_eq!(how.rounds, 4);
        let tiny = ChaseRounds::within_one_lap(10, 4, 1 << 17);
        assert!(tiny.loads() <= 10 && tiny.steps >= 1, "{tiny:?}");
        let mut b = Buffer::new(64 * 1024, PagePlacement::default()).unwrap();
        let slots = link_cycle(&mut b, ChaseOrder::PageLocal, 3);
        let ns = timed_rounds(&b, ChaseRounds::within_one_lap(slots, 3, 1000));
        assert_eq!(ns.len(), 3);
        assert!(ns.iter().all(|&x| x > 0.0));
    }
}
