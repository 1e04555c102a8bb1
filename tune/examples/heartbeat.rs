//! A program that reports its progress with heartbeats, for `topoprobe autopin --metric
//! heartbeat` (or the default metric, which prefers heartbeats when a program sends them).
//!
//! `heartbeat [THREADS] [SECONDS] [compute|memory] [PHASE_AT]`: THREADS threads (the main
//! thread and THREADS-1 created ones, default 2) do units of work for SECONDS (default 5)
//! and call `beat(1)` after each; `memory` units walk a 32 MiB buffer per thread instead
//! of computing. With PHASE_AT, the program declares phase 2 after that many seconds.
//! At the end each thread prints the CPUs it may run on (`thread<i> <list>`).
//!
//! ```text
//! topoprobe autopin --schedule 0:0 --schedule 0:1 -- target/debug/examples/heartbeat 2 10
//! ```

use std::time::{Duration, Instant};

use topoprobe_tune::heartbeat;

// An example program reading its own status in /proc, a small regular file.
#[allow(clippy::disallowed_methods)]
fn cpus_allowed() -> String {
    std::fs::read_to_string("/proc/thread-self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Cpus_allowed_list:")
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_default()
}

fn work(i: usize, until: Instant, memory: bool) -> String {
    let mut buf = if memory {
        vec![1_u64; 4 << 20]
    } else {
        Vec::new()
    };
    let mut x = 0_u64;
    let mut k = 0_usize;
    while Instant::now() < until {
        if memory {
            for _ in 0..4096 {
                k = (k + 4099) % buf.len();
                buf[k] = buf[k].wrapping_add(x);
                x = x.wrapping_add(buf[k]);
            }
        } else {
            for j in 0..20_000_u64 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(j);
            }
        }
        heartbeat::beat(1);
    }
    std::hint::black_box(x);
    format!("thread{i} {}", cpus_allowed())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2)
        .clamp(1, 256);
    let secs: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5.0);
    let memory = args.get(3).is_some_and(|m| m == "memory");
    let phase_at: Option<f64> = args.get(4).and_then(|a| a.parse().ok());
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(secs.max(0.0));
    heartbeat::phase(1);
    let handles: Vec<_> = (1..threads)
        .map(|i| std::thread::spawn(move || work(i, until, memory)))
        .collect();
    println!("started heartbeats={}", heartbeat::enabled());
    if let Some(p) = phase_at {
        let switch = start + Duration::from_secs_f64(p);
        let main_until = switch.min(until);
        let first = work(0, main_until, memory);
        drop(first);
        heartbeat::phase(2);
    }
    let mine = work(0, until, memory);
    println!("{mine}");
    for h in handles {
        if let Ok(line) = h.join() {
            println!("{line}");
        }
    }
}
