//! This process's own resource use, for recording what a measurement really spent.

/// Peak resident memory of this process so far (`VmHWM` of `/proc/self/status`), bytes;
/// `None` where the OS does not report it.
#[must_use]
pub fn peak_resident_bytes() -> Option<u64> {
    let status = crate::proc::read_small(std::path::Path::new("/proc/self/status")).ok()?;
    kib_field(&status, "VmHWM:").map(|k| k.saturating_mul(1024))
}

/// Resident memory of this process now (`VmRSS` of `/proc/self/status`), bytes; `None`
/// where the OS does not report it.
#[must_use]
pub fn resident_bytes() -> Option<u64> {
    let status = crate::proc::read_small(std::path::Path::new("/proc/self/status")).ok()?;
    kib_field(&status, "VmRSS:").map(|k| k.saturating_mul(1024))
}

/// Nanoseconds the calling thread has spent runnable but waiting for a CPU so far (the
/// second field of `/proc/thread-self/schedstat`): time other programs or threads held its
/// CPU. `None` where the kernel does not report it.
#[must_use]
pub fn run_delay_ns() -> Option<u64> {
    let text = crate::proc::read_small(std::path::Path::new("/proc/thread-self/schedstat")).ok()?;
    second_field(&text)
}

/// How long the calling thread waited for its CPU since a moment: started with
/// [`WaitClock::start`] on the thread to watch, read with [`WaitClock::share`] on the same
/// thread. A measurement timed by the wall clock counts the time other programs held its
/// CPU as its own; this says how much of it that was.
#[derive(Debug, Clone, Copy)]
pub struct WaitClock {
    delay_ns: Option<u64>,
    started: std::time::Instant,
}

impl WaitClock {
    /// Starts watching the calling thread.
    #[must_use]
    pub fn start() -> Self {
        Self {
            delay_ns: run_delay_ns(),
            started: std::time::Instant::now(),
        }
    }

    /// The share of the time since [`WaitClock::start`] the calling thread (the one that
    /// started the clock) spent runnable but waiting for a CPU, 0 to 1; `None` where the
    /// kernel does not report run delays.
    #[must_use]
    pub fn share(&self) -> Option<f64> {
        let waited = run_delay_ns()?.saturating_sub(self.delay_ns?);
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-9);
        Some((waited as f64 / 1e9 / elapsed).min(1.0))
    }
}

/// The second whitespace-separated number of `text`.
fn second_field(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The number of KiB of the line of `status` that starts with `field` (`VmHWM:   1234 kB`).
fn kib_field(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_in_kib() {
        let s = "Name:\ttp\nVmHWM:\t  2048 kB\nVmRSS:\t    12 kB\n";
        assert_eq!(kib_field(s, "VmHWM:"), Some(2048));
        assert_eq!(kib_field(s, "VmRSS:"), Some(12));
        assert_eq!(kib_field(s, "VmSwap:"), None);
        assert_eq!(kib_field("VmHWM: x kB", "VmHWM:"), None);
        assert_eq!(second_field("244933210 54802474 1557\n"), Some(54_802_474));
        assert_eq!(second_field("12\n"), None);
    }

    #[test]
    fn a_thread_sharing_its_cpu_with_a_spinning_one_waits() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::{Duration, Instant};
        let Some(cpu) = crate::affinity::first_allowed_cpu() else {
            return;
        };
        let stop = AtomicBool::new(false);
        let share = std::thread::scope(|s| {
            let spinner = s.spawn(|| {
                let pinned = crate::affinity::pin_current_thread(cpu).is_ok();
                while pinned && !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
                pinned
            });
            let watched = s.spawn(|| {
                crate::affinity::pin_current_thread(cpu).ok()?;
                let clock = WaitClock::start();
                let until = Instant::now() + Duration::from_millis(200);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                clock.share()
            });
            let share = watched.join().ok().flatten();
            // Stopped before anything can fail, so that the scope never waits on it.
            stop.store(true, Ordering::Relaxed);
            share.filter(|_| spinner.join().unwrap_or(false))
        });
        // `None`: no run delays from this kernel, or no CPU to pin to.
        if let Some(share) = share {
            // Two runnable threads on one CPU: each waits about half of the time.
            assert!((0.1..=1.0).contains(&share), "{share}");
        }
    }

    #[test]
    fn this_process_has_a_peak_at_least_as_large_as_its_resident_memory() {
        // Resident memory first: the peak read after it is at least as large, even while
        // other tests' threads allocate in between.
        let now = resident_bytes();
        let (Some(peak), Some(now)) = (peak_resident_bytes(), now) else {
            return;
        };
        assert!(peak >= now && now > 0, "{peak} {now}");
    }
}
