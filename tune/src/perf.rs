//! Hardware counters through `perf_event_open` (the `perf-event2` crate): one counter per
//! thread, detected, with the reason when the machine or the kernel has none.

use std::collections::HashMap;
use std::io;

use perf_event::events::Hardware;
use perf_event::{Builder, Counter};

/// A hardware event the tuners count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Instructions retired.
    Instructions,
    /// Last-level cache misses.
    CacheMisses,
}

impl Event {
    fn hardware(self) -> Hardware {
        match self {
            Self::Instructions => Hardware::INSTRUCTIONS,
            Self::CacheMisses => Hardware::CACHE_MISSES,
        }
    }

    /// The event's name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Instructions => "instructions",
            Self::CacheMisses => "LLC misses",
        }
    }
}

/// Why a counter cannot be opened, in words (`EACCES`: `perf_event_paranoid`; `ENOENT`
/// or `EOPNOTSUPP`: no PMU, as in most virtual machines).
fn reason(e: &io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV) => {
            " (no hardware counters: no PMU, as in most virtual machines)"
        }
        Some(libc::EACCES | libc::EPERM) => {
            " (not permitted: see /proc/sys/kernel/perf_event_paranoid)"
        }
        Some(libc::ENOSYS) => " (the kernel has no perf events)",
        _ => "",
    };
    format!("perf_event_open failed: {e}{hint}")
}

/// Opens an enabled counter of `event` on thread `tid` (0: the calling thread).
fn open(event: Event, tid: i32) -> io::Result<Counter> {
    let mut b = Builder::new(event.hardware());
    if tid != 0 {
        b.observe_pid(tid);
    }
    b.any_cpu().exclude_kernel(true).exclude_hv(true);
    let mut c = b.build()?;
    c.enable()?;
    Ok(c)
}

/// Whether `event` can be counted on this machine: `Err` says why not.
///
/// # Errors
///
/// The reason, in words, when a counter cannot be opened on the calling thread.
pub fn available(event: Event) -> Result<(), String> {
    open(event, 0).map(drop).map_err(|e| reason(&e))
}

/// Counters of one event on a set of threads; totals survive threads that exit.
#[derive(Debug)]
pub struct ThreadCounters {
    event: Event,
    counters: HashMap<i32, (Counter, u64)>,
    /// Counts of threads whose counter was dropped (exited).
    retired: u64,
}

impl ThreadCounters {
    /// No counters yet for `event`.
    #[must_use]
    pub fn new(event: Event) -> Self {
        Self {
            event,
            counters: HashMap::new(),
            retired: 0,
        }
    }

    /// Opens counters on the threads of `tids` that have none, drops those of threads not
    /// in `tids` (keeping their counts), and returns the count of every thread ever
    /// followed, summed (scaled when the kernel multiplexed the counter).
    ///
    /// # Errors
    ///
    /// The reason, in words, when a counter cannot be opened on a live thread.
    pub fn total(&mut self, tids: &[i32]) -> Result<u64, String> {
        let each = self.per_thread(tids)?;
        Ok(each
            .values()
            .fold(self.retired, |a, &b| a.saturating_add(b)))
    }

    /// As [`ThreadCounters::total`], the count of each live thread of `tids`.
    ///
    /// # Errors
    ///
    /// The reason, in words, when a counter cannot be opened on a live thread.
    pub fn per_thread(&mut self, tids: &[i32]) -> Result<HashMap<i32, u64>, String> {
        let gone: Vec<i32> = self
            .counters
            .keys()
            .filter(|t| !tids.contains(t))
            .copied()
            .collect();
        for t in gone {
            if let Some((_, last)) = self.counters.remove(&t) {
                self.retired = self.retired.saturating_add(last);
            }
        }
        for &t in tids {
            if let std::collections::hash_map::Entry::Vacant(v) = self.counters.entry(t) {
                match open(self.event, t) {
                    Ok(c) => {
                        v.insert((c, 0));
                    }
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                    Err(e) => return Err(reason(&e)),
                }
            }
        }
        let mut out = HashMap::new();
        for (&tid, (c, last)) in &mut self.counters {
            if let Ok(d) = c.read_full() {
                let raw = d.count();
                let scaled = match (d.time_enabled(), d.time_running()) {
                    (Some(en), Some(run)) if !run.is_zero() && run < en => {
                        (raw as f64 * en.as_secs_f64() / run.as_secs_f64()) as u64
                    }
                    _ => raw,
                };
                *last = (*last).max(scaled);
            }
            out.insert(tid, *last);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_detected_or_say_why_not() {
        match available(Event::Instructions) {
            Ok(()) => {
                let me = i32::try_from(std::process::id()).expect("pid");
                let mut c = ThreadCounters::new(Event::Instructions);
                let a = c.total(&[me]).expect("opens");
                let mut x = 0_u64;
                for i in 0..1_000_000_u64 {
                    x = x.wrapping_add(i * i);
                }
                std::hint::black_box(x);
                assert!(c.total(&[me]).expect("reads") >= a);
            }
            Err(why) => assert!(why.starts_with("perf_event_open failed"), "{why}"),
        }
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert!(reason(&e).contains("no PMU"));
        let e = io::Error::from_raw_os_error(libc::EACCES);
        assert!(reason(&e).contains("perf_event_paranoid"));
    }
}
