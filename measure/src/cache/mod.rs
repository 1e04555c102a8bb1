//! Cache sizes and latencies by measurement (Servet §III-A) and shared caches (§III-B).
//!
//! [`measure_caches`] walks arrays of growing size with the mcalibrator traversal
//! ([`traverse`]) on one pinned context, finds the levels in the curve ([`curve`]: L1 from
//! the first rise, physically indexed levels with the probabilistic algorithm of
//! [`probabilistic`]) and sets them beside what the OS reports. [`shared`] finds which
//! contexts share each level by concurrent traversals.

pub mod curve;
pub mod probabilistic;
pub mod shared;
pub mod traverse;

use std::time::Instant;

use topoprobe_model::{CacheLevel, CacheSection, CacheType, OsView};

pub use curve::{FoundLevel, Method, Sample};
use topoprobe_sys::affinity::{pin_current_thread, AffinityError};
use topoprobe_sys::buffer::{Buffer, BufferError, PagePlacement};

/// What [`measure_caches`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheOptions {
    /// The context to measure on.
    pub cpu: u32,
    /// Largest array walked, bytes (`None`: four times the largest cache the OS reports,
    /// at least 64 MiB and at most 1 GiB).
    pub max_bytes: Option<u64>,
    /// Back the arrays with transparent huge pages (physically indexed levels then show a
    /// step, as with page colouring).
    pub huge_pages: bool,
    /// Timed rounds per size (the fastest counts).
    pub rounds: usize,
}

impl Default for CacheOptions {
    fn default() -> Self {
        Self {
            cpu: 0,
            max_bytes: None,
            huge_pages: false,
            rounds: 3,
        }
    }
}

/// Why caches could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The thread could not be pinned.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
    /// The arrays could not be allocated.
    #[error(transparent)]
    Buffer(#[from] BufferError),
}

/// The measured curve, the levels found in it and the cache section they make.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheReport {
    /// Every size walked and its access time.
    pub samples: Vec<Sample>,
    /// The levels the curve shows, innermost first.
    pub found: Vec<FoundLevel>,
    /// The section for the description: measured levels beside the OS's (latencies in ns).
    pub section: CacheSection,
    /// Remarks for the user (levels the OS has but the curve does not show, and so on).
    pub notes: Vec<String>,
    /// Wall time of the measurement, seconds.
    pub seconds: f64,
}

/// Largest array walked when not given.
fn default_max(os: Option<&OsView>) -> u64 {
    let largest = os
        .map(|v| {
            v.caches
                .iter()
                .filter_map(|c| c.size_bytes)
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0);
    (largest.saturating_mul(4)).clamp(64 << 20, 1 << 30)
}

/// The sizes walked: 4 KiB steps offset by 2 KiB up to 256 KiB (the L1 size falls between
/// two of them), then 1/16-octave steps to 16 MiB and 1/8-octave steps beyond.
#[must_use]
pub fn sizes(max: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (1..64).map(|k| k * 4096 + 2048).collect();
    let mut s = 256.0 * 1024.0;
    while s <= max as f64 {
        v.push(s as u64 / 1024 * 1024);
        let step = if s < 16.0 * 1024.0 * 1024.0 {
            16.0
        } else {
            8.0
        };
        s *= 2f64.powf(1.0 / step);
    }
    v
}

/// Measures the cache levels on `opts.cpu` and sets them beside the OS's view of that CPU.
///
/// # Errors
///
/// [`CacheError::Affinity`] when the thread cannot be pinned to the context,
/// [`CacheError::Buffer`] when the array cannot be allocated.
pub fn measure_caches(os: Option<&OsView>, opts: &CacheOptions) -> Result<CacheReport, CacheError> {
    let started = Instant::now();
    let max = opts.max_bytes.unwrap_or_else(|| default_max(os));
    let sizes = sizes(max);
    let samples = std::thread::scope(|s| {
        s.spawn(|| -> Result<Vec<Sample>, CacheError> {
            pin_current_thread(opts.cpu)?;
            let mut buf = Buffer::new(
                sizes.last().copied().unwrap_or(max) as usize,
                PagePlacement {
                    node: None,
                    huge_pages: Some(opts.huge_pages),
                },
            )?;
            buf.touch();
            let mut out = Vec::with_capacity(sizes.len());
            for &bytes in &sizes {
                let positions = traverse::prepare(buf.words_mut(), bytes as usize);
                // Small arrays: many walks per round so that a round lasts ~0.1 ms.
                // Arrays up to 16 MiB are cheap to walk: two more rounds steady the
                // rises of the inner levels.
                let rounds = if bytes <= 16 << 20 {
                    opts.rounds + 2
                } else {
                    opts.rounds
                };
                let ns = traverse::ns_per_access(buf.words(), positions, rounds, 65_536);
                out.push(Sample { bytes, ns });
            }
            Ok(out)
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })?;
    let found = curve::levels(&samples);
    let (section, notes) = section(os, opts.cpu, &found);
    Ok(CacheReport {
        samples,
        found,
        section,
        notes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Sets the found levels beside the OS's caches of `cpu`: the n-th level found is the n-th
/// data or unified level the OS lists; instruction caches come from the OS alone.
#[must_use]
pub fn section(os: Option<&OsView>, cpu: u32, found: &[FoundLevel]) -> (CacheSection, Vec<String>) {
    let mut notes = Vec::new();
    let mut os_caches: Vec<_> = os
        .map(|v| {
            v.caches
                .iter()
                .filter(|c| c.cpus.contains(&cpu))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    os_caches.sort_by_key(|c| (c.level, c.kind != CacheType::Instruction));
    let mut levels = Vec::new();
    let mut data_levels = os_caches
        .iter()
        .filter(|c| c.kind != CacheType::Instruction);
    for c in &os_caches {
        let mut level = CacheLevel::new(u32::from(c.level), Some(c.kind));
        level.os_size_kib = c.size_bytes.map(|b| b / 1024);
        level.line_bytes = c.line_size;
        levels.push(level);
    }
    for (i, f) in found.iter().enumerate() {
        let measured = |l: &mut CacheLevel| {
            l.measured_size_kib = Some(f.bytes / 1024);
            l.latency = Some(f.hit_ns);
        };
        match data_levels.next() {
            Some(c) => {
                if let Some(l) = levels
                    .iter_mut()
                    .find(|l| l.level == u32::from(c.level) && l.kind == Some(c.kind))
                {
                    measured(l);
                }
            }
            None => {
                let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
                notes.push(format!(
                    "the curve shows a level the OS does not list (L{number}, {} KiB)",
                    f.bytes / 1024
                ));
                let mut l = CacheLevel::new(number, Some(CacheType::Unified));
                measured(&mut l);
                levels.push(l);
            }
        }
    }
    for c in data_levels {
        notes.push(format!(
            "L{} ({}) is listed by the OS but shows no rise in the curve",
            c.level,
            c.kind.as_str()
        ));
    }
    if os.is_none() {
        notes.push("the OS view is unavailable: levels are numbered in the order found".into());
    }
    (CacheSection { levels }, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_cover_l1_finely_then_geometrically() {
        let s = sizes(1 << 30);
        assert_eq!(&s[..3], &[6144, 10240, 14336]);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(*s.last().unwrap() <= 1 << 30);
        assert!(s.len() < 260, "{}", s.len());
    }

    #[test]
    fn found_levels_are_set_beside_the_os_caches() {
        let cache = |level, kind, size: u64, cpus: Vec<u32>| topoprobe_model::OsCache {
            level,
            kind,
            size_bytes: Some(size),
            line_size: Some(64),
            ways: None,
            cpus,
        };
        let os = OsView {
            caches: vec![
                cache(1, CacheType::Data, 49152, vec![0]),
                cache(1, CacheType::Instruction, 32768, vec![0]),
                cache(2, CacheType::Unified, 2 << 20, vec![0]),
                cache(3, CacheType::Unified, 32 << 20, vec![0, 1]),
            ],
            ..OsView::default()
        };
        let f = |bytes, hit_ns| FoundLevel {
            bytes,
            hit_ns,
            miss_ns: 100.0,
            method: Method::Step,
        };
        let (sec, notes) = section(Some(&os), 0, &[f(49152, 1.6), f(2 << 20, 4.0)]);
        let names: Vec<String> = sec.levels.iter().map(CacheLevel::name).collect();
        assert_eq!(names, ["L1i", "L1d", "L2", "L3"]);
        assert_eq!(sec.levels[1].measured_size_kib, Some(48));
        assert_eq!(sec.levels[1].line_bytes, Some(64));
        assert_eq!(sec.levels[0].measured_size_kib, None);
        assert_eq!(sec.levels[3].measured_size_kib, None);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("L3"));
    }
}
