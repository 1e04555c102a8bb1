//! Threads in ping-pong pairs, a program whose speed depends on where its threads run:
//! a test program for `topoprobe autopin` (and `run`) on machines with many CPUs.
//!
//! `thread_pairs [THREADS] [SECONDS]`: THREADS threads (the main thread and THREADS-1
//! created ones, in that order; default 2, rounded up to an even number, at most 1024) form
//! pairs 0–1, 2–3, …; the two threads of a pair hand one cache line (its own, 128-byte
//! aligned) back and forth for SECONDS (default 5). Every 1000 round trips the first thread
//! of a pair calls `beat(1)` ([`topoprobe_tune::heartbeat`]): under autopin, which sets
//! `TOPOPROBE_HEARTBEAT`, the heartbeat rate is the program's progress. A pair whose two
//! threads share a core or a cache hands the line over faster than one split across sockets.
//!
//! With `PAIRS_CPUS=a,b,…` (CPU numbers or ranges `a-b`, in thread order) thread i pins
//! itself to the i-th CPU of the list (threads past its end are not pinned), to measure one
//! pinning without autopin.
//!
//! At the end it prints one line: `thread_pairs: T threads (P pairs), S s, R round trips/s`
//! (R: round trips of all pairs together per second of the run).
//!
//! ```text
//! topoprobe autopin --json -- target/release/examples/thread_pairs 16 20
//! PAIRS_CPUS=0,1,2,3 target/release/examples/thread_pairs 4 3
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use topoprobe_model::{parse_cpu_list, CpuListError};
use topoprobe_sys::affinity::pin_current_thread;
use topoprobe_tune::heartbeat;

/// Environment variable with the CPU of each thread, in thread order.
const PIN_VAR: &str = "PAIRS_CPUS";

/// Round trips between two heartbeats (and between two looks at the clock).
const TRIPS_PER_BEAT: u64 = 1000;

/// Failed looks at the line after which a waiting thread yields its CPU (a pair sharing
/// one CPU still makes progress).
const SPINS_BEFORE_YIELD: u32 = 1 << 10;

/// One pair's cache line: an even value is the first thread's turn, an odd one the second's.
#[repr(align(128))]
struct Line(AtomicU64);

/// Parses `a,b,c-d` into CPUs in the order given (each item read by
/// [`parse_cpu_list`], so a range expands upwards and strides `a-b:u/g` work too).
///
/// # Errors
///
/// [`CpuListError`] for the first item that is not a CPU list item.
fn parse_cpus(text: &str) -> Result<Vec<u32>, CpuListError> {
    let mut cpus = Vec::new();
    for item in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        cpus.extend(parse_cpu_list(item)?);
    }
    Ok(cpus)
}

/// Thread `i`'s side of its pair until `stop` is set: returns the round trips it made
/// (counted by the first thread of the pair; the second returns 0).
fn play(i: usize, line: &Line, stop: &AtomicBool, until: Instant, pin: Option<u32>) -> u64 {
    if let Some(cpu) = pin {
        if let Err(e) = pin_current_thread(cpu) {
            eprintln!("thread_pairs: thread {i} not pinned to CPU {cpu}: {e}");
        }
    }
    let side = (i % 2) as u64;
    let mut trips = 0_u64;
    'run: loop {
        for _ in 0..TRIPS_PER_BEAT {
            let mut spins = 0_u32;
            let mut v = line.0.load(Ordering::Acquire);
            while v % 2 != side {
                if stop.load(Ordering::Relaxed) {
                    break 'run;
                }
                spins += 1;
                if spins == SPINS_BEFORE_YIELD {
                    spins = 0;
                    std::thread::yield_now();
                }
                v = line.0.load(Ordering::Acquire);
            }
            line.0.store(v + 1, Ordering::Release);
            trips += 1;
        }
        if side == 0 {
            heartbeat::beat(1);
        }
        if i == 0 && Instant::now() >= until {
            stop.store(true, Ordering::Relaxed);
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    if side == 0 {
        trips
    } else {
        0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let requested: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let threads = (requested.clamp(2, 1024) + 1) & !1;
    let secs: f64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5.0_f64)
        .max(0.0);
    let pins = match std::env::var(PIN_VAR) {
        Ok(list) => parse_cpus(&list).unwrap_or_else(|e| {
            eprintln!(
                "thread_pairs: {PIN_VAR}={list:?} is not a CPU list (a,b,c-d): {e}; not pinning"
            );
            Vec::new()
        }),
        Err(_) => Vec::new(),
    };
    let lines: Vec<Line> = (0..threads / 2).map(|_| Line(AtomicU64::new(0))).collect();
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(secs);
    let trips: u64 = std::thread::scope(|s| {
        let (lines, stop, pins) = (&lines, &stop, &pins);
        let others: Vec<_> = (1..threads)
            .map(|i| s.spawn(move || play(i, &lines[i / 2], stop, until, pins.get(i).copied())))
            .collect();
        let mine = play(0, &lines[0], stop, until, pins.first().copied());
        mine + others
            .into_iter()
            .map(|h| h.join().unwrap_or(0))
            .sum::<u64>()
    });
    let elapsed = start.elapsed().as_secs_f64().max(1e-9);
    let pairs = threads / 2;
    println!(
        "thread_pairs: {threads} threads ({pairs} pair{}), {elapsed:.1} s, {:.0} round trips/s",
        if pairs == 1 { "" } else { "s" },
        trips as f64 / elapsed
    );
}
