//! When this process started, as the kernel counts it: its start time in clock ticks after
//! boot (`/proc/self/stat`, field 22) against the time since boot (`/proc/uptime`). A
//! command's budget counts from there, so that what runs before `main` (loading the
//! program) and before measuring (reading the OS view, planning) is counted too.

use std::time::{Duration, Instant};

/// The start time (field 22, `starttime`) of a `/proc/<pid>/stat` line, in clock ticks
/// after boot. The process's name (field 2) may hold spaces and parentheses: the fields
/// are counted after its last `)`.
#[must_use]
pub fn start_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 3 (the state) is the first after the name.
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// The seconds since boot of a `/proc/uptime` line (its first number).
#[must_use]
pub fn uptime_seconds(uptime: &str) -> Option<f64> {
    let s: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    s.is_finite().then_some(s)
}

/// How long ago a process started: `uptime` seconds since boot less its start `ticks` at
/// `ticks_per_second` (never negative: both are rounded, to 10 ms typically).
#[must_use]
pub fn age_from(ticks: u64, ticks_per_second: u64, uptime: f64) -> Option<Duration> {
    if ticks_per_second == 0 {
        return None;
    }
    let started = ticks as f64 / ticks_per_second as f64;
    Some(Duration::from_secs_f64((uptime - started).max(0.0)))
}

/// How long ago this process started (to the kernel's clock tick, 10 ms typically);
/// `None` when `/proc` cannot be read.
#[must_use]
pub fn age() -> Option<Duration> {
    let stat = crate::proc::read_small(std::path::Path::new("/proc/self/stat")).ok()?;
    let uptime = crate::proc::read_small(std::path::Path::new("/proc/uptime")).ok()?;
    let ticks = start_ticks(&stat)?;
    age_from(
        ticks,
        crate::proc::clock_ticks_per_second(),
        uptime_seconds(&uptime)?,
    )
}

/// The instant this process started: now less its [`age`]. `None` when `/proc` cannot be
/// read (the caller then counts from now).
#[must_use]
pub fn instant() -> Option<Instant> {
    let now = Instant::now();
    now.checked_sub(age()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_field_22_whatever_the_name() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 \
                    987654 12345678 300 18446744073709551615";
        assert_eq!(start_ticks(stat), Some(987_654));
        assert_eq!(start_ticks("4242 (x) S 1 2"), None);
        assert_eq!(start_ticks("no name"), None);
        assert_eq!(uptime_seconds("12345.67 2345.12\n"), Some(12345.67));
        assert_eq!(uptime_seconds(""), None);
        let age = age_from(987_654, 100, 9_877.04).unwrap();
        assert!((age.as_secs_f64() - 0.5).abs() < 1e-6, "{age:?}");
        // Rounding may put the start after the uptime read: no age, not a negative one.
        assert_eq!(age_from(100, 100, 0.5), Some(Duration::ZERO));
        assert_eq!(age_from(1, 0, 1.0), None);
    }

    #[test]
    fn this_process_started_before_now() {
        let Some(age) = age() else { return };
        // A test process is seconds old, not days.
        assert!(age < Duration::from_secs(3600), "{age:?}");
        assert!(instant().is_some_and(|i| i <= Instant::now()));
    }
}
