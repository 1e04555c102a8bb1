//! Development aid: the time each stage of the inference takes (the `trace` feature).

/// Development aid: with the `trace` feature and `TOPOPROBE_TRACE` set, prints the
/// wall time and the calling thread's CPU time of a stage of the inference, and the
/// process's resident memory now and at its peak so far (Linux).
#[cfg(feature = "trace")]
#[allow(clippy::disallowed_methods)] // a development aid reading two small proc files
pub(crate) fn stage(name: &str, since: &mut std::time::Instant) {
    fn cpu_ns() -> f64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .next()
                    .and_then(|x| x.parse::<f64>().ok())
            })
            .unwrap_or(0.0)
    }
    fn status_mib(field: &str) -> f64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix(field))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            })
            .map_or(0.0, |kib| kib / 1024.0)
    }
    thread_local!(static LAST: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) });
    if std::env::var_os("TOPOPROBE_TRACE").is_some() {
        let now = cpu_ns();
        let last = LAST.with(|l| l.replace(now));
        eprintln!(
            "  {name}: {:.1} ms wall, {:.1} ms cpu, resident {:.0} MiB (peak {:.0})",
            since.elapsed().as_secs_f64() * 1e3,
            (now - last) / 1e6,
            status_mib("VmRSS:"),
            status_mib("VmHWM:")
        );
    }
    *since = std::time::Instant::now();
}

/// Development aid (see the `trace` feature): nothing without it.
#[cfg(not(feature = "trace"))]
#[inline]
pub(crate) fn stage(_name: &str, _since: &mut std::time::Instant) {}
