//! Cache sizes and latencies by measurement (Servet §III-A) and shared caches (§III-B).
//!
//! [`measure_caches`] walks arrays of growing size with the mcalibrator traversal
//! ([`traverse`]) on one pinned context, finds the levels in the curve ([`curve`]: L1 from
//! the first rise, physically indexed levels with the probabilistic algorithm of
//! [`probabilistic`]) and sets them beside what the OS reports. [`shared`] finds which
//! contexts share each level by concurrent traversals.

pub mod check;
pub mod curve;
pub mod probabilistic;
pub mod shared;
pub mod tlb;
pub mod traverse;

use std::time::Instant;

use topoprobe_model::{CacheSection, OsView};

pub use curve::{FoundLevel, Method, Sample};
pub use tlb::TlbReach;
use topoprobe_sys::affinity::{pin_current_thread, AffinityError};
use topoprobe_sys::buffer::{Buffer, BufferError, PagePlacement};
use traverse::STRIDE_BYTES;

/// Which pages the arrays are walked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pages {
    /// Transparent huge pages where the kernel gives them (the cache levels, without TLB
    /// misses until far beyond the last level), then 4 KiB pages (the same walk plus the
    /// TLB misses: where the two curves part is the TLB's reach).
    #[default]
    Both,
    /// Transparent huge pages only (falls back to 4 KiB pages when they are refused).
    Huge,
    /// 4 KiB pages only: TLB reach and cache capacity are then not told apart.
    Small,
}

/// What [`measure_caches`] does.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheOptions {
    /// The context to measure on.
    pub cpu: u32,
    /// Largest array walked, bytes (`None`: [`default_max`]).
    pub max_bytes: Option<u64>,
    /// Which pages to walk on.
    pub pages: Pages,
    /// Timed rounds per size (the fastest counts; two more up to 4 MiB, where they are
    /// cheap).
    pub rounds: usize,
    /// Accesses per timed round at most (at least [`MIN_STEPS`], at most a lap of the
    /// cycle): a round shorter than a lap samples the cycle's steady state as well.
    pub max_steps: usize,
    /// Cycles per ns of the timer, to give each level's latency in cycles too.
    pub ghz: Option<f64>,
}

/// Fewest accesses of a timed round (about 20 µs in an L1).
pub const MIN_STEPS: usize = 1 << 14;

impl Default for CacheOptions {
    /// Huge pages then 4 KiB pages, arrays up to [`default_max`], three rounds of up to
    /// 65536 accesses per size: `topoprobe cache`, 4 to 10 s.
    fn default() -> Self {
        Self {
            cpu: 0,
            max_bytes: None,
            pages: Pages::Both,
            rounds: 3,
            max_steps: 1 << 16,
            ghz: None,
        }
    }
}

impl CacheOptions {
    /// The quick measurement of a description's default plugins: huge pages only (no TLB
    /// curve), arrays up to twice the largest cache the OS reports (at least 32 MiB, at
    /// most 1 GiB), two rounds of up to 32768 accesses per size.
    #[must_use]
    pub fn quick(cpu: u32, os: Option<&OsView>) -> Self {
        Self {
            cpu,
            max_bytes: Some(
                largest_os_cache(os, None)
                    .unwrap_or(0)
                    .saturating_mul(2)
                    .clamp(32 << 20, 1 << 30),
            ),
            pages: Pages::Huge,
            rounds: 2,
            max_steps: 1 << 15,
            ghz: None,
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

/// How the walk's pages came out.
#[derive(Debug, Clone, PartialEq)]
pub enum HugePages {
    /// Huge pages were asked for; `fraction` of the array had them.
    Granted {
        /// Share of the array on huge pages, 0 to 1.
        fraction: f64,
    },
    /// Huge pages were not used, and why.
    Unavailable(String),
}

/// The measured curves, the levels found in them and the cache section they make.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheReport {
    /// The curve the levels come from (on huge pages when they were granted): every size
    /// walked and its access time.
    pub samples: Vec<Sample>,
    /// The same sizes walked on 4 KiB pages, when measured beside huge pages (it shows
    /// the TLB's reach).
    pub small_pages: Option<Vec<Sample>>,
    /// Whether [`CacheReport::samples`] is on huge pages.
    pub huge_pages: HugePages,
    /// The levels the curve shows, innermost first.
    pub found: Vec<FoundLevel>,
    /// Where the 4 KiB-page walk parts from the huge-page walk: the TLB's reach.
    pub tlb: Vec<TlbReach>,
    /// The section for the description: measured levels beside the OS's (latencies in ns).
    pub section: CacheSection,
    /// How each level of the section compares with the OS, in its order.
    pub checks: Vec<check::LevelCheck>,
    /// Remarks for the user: where the curve and the OS disagree, and why it may be.
    pub notes: Vec<String>,
    /// Largest array walked, bytes.
    pub max_bytes: u64,
    /// Wall time of the measurement, seconds.
    pub seconds: f64,
}

/// The largest cache the OS reports for `cpu` (any CPU when `cpu` is `None`), bytes.
#[must_use]
pub fn largest_os_cache(os: Option<&OsView>, cpu: Option<u32>) -> Option<u64> {
    os?.caches
        .iter()
        .filter(|c| cpu.is_none_or(|cpu| c.cpus.contains(&cpu)))
        .filter_map(|c| c.size_bytes)
        .max()
}

/// Largest array walked when not given: four times the largest cache the OS reports, at
/// least 64 MiB and at most 1 GiB (64 MiB when the OS reports none).
#[must_use]
pub fn default_max(os: Option<&OsView>) -> u64 {
    largest_os_cache(os, None)
        .unwrap_or(0)
        .saturating_mul(4)
        .clamp(64 << 20, 1 << 30)
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

/// Walks every size on `cpu` (one array of the largest size, its cycle grown size by
/// size); returns the curve and, when huge pages were asked for, the share of the array
/// the kernel backed with them.
fn sweep(
    cpu: u32,
    sizes: &[u64],
    huge: bool,
    rounds: usize,
    max_steps: usize,
) -> Result<(Vec<Sample>, Option<f64>), CacheError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<(Vec<Sample>, Option<f64>), CacheError> {
            pin_current_thread(cpu)?;
            let max = sizes.last().copied().unwrap_or(STRIDE_BYTES as u64);
            let mut buf = Buffer::new(
                max as usize,
                PagePlacement {
                    node: None,
                    huge_pages: Some(huge),
                },
            )?;
            buf.touch();
            let fraction = huge.then(|| {
                buf.huge_page_bytes()
                    .map_or(0.0, |b| b as f64 / buf.len_bytes() as f64)
            });
            let mut cycle = traverse::Cycle::new(buf.words_mut(), 0x5eed ^ u64::from(cpu));
            let mut out = Vec::with_capacity(sizes.len());
            for &bytes in sizes {
                let positions = cycle.grow(buf.words_mut(), bytes as usize);
                // Arrays up to 4 MiB are cheap to walk: two more rounds steady the rises
                // of the inner levels.
                let r = if bytes <= 4 << 20 { rounds + 2 } else { rounds };
                let steps = positions.clamp(MIN_STEPS, max_steps.max(MIN_STEPS));
                let ns = traverse::ns_per_access(buf.words(), positions, r, steps);
                out.push(Sample { bytes, ns });
            }
            Ok((out, fraction))
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
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
    let want_huge = opts.pages != Pages::Small;
    let mut huge_pages = HugePages::Unavailable(if want_huge {
        "transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled)".into()
    } else {
        "4 KiB pages were asked for".into()
    });
    let mut huge_curve = None;
    if want_huge && crate::memory::thp_available() {
        let (curve, fraction) = sweep(opts.cpu, &sizes, true, opts.rounds, opts.max_steps)?;
        let fraction = fraction.unwrap_or(0.0);
        if fraction >= 0.5 {
            huge_pages = HugePages::Granted { fraction };
            huge_curve = Some(curve);
        } else {
            huge_pages = HugePages::Unavailable(format!(
                "the kernel backed only {:.0}% of the array with huge pages",
                fraction * 100.0
            ));
        }
    }
    let small = if huge_curve.is_none() || opts.pages == Pages::Both {
        Some(sweep(opts.cpu, &sizes, false, opts.rounds, opts.max_steps)?.0)
    } else {
        None
    };
    let (samples, small_pages) = match (huge_curve, small) {
        (Some(h), s) => (h, s),
        (None, Some(s)) => (s, None),
        (None, None) => (Vec::new(), None),
    };
    let a = analyse(
        os,
        opts.cpu,
        &samples,
        small_pages.as_deref(),
        &huge_pages,
        opts.ghz,
    );
    Ok(CacheReport {
        samples,
        small_pages,
        huge_pages,
        found: a.found,
        tlb: a.tlb,
        section: a.checked.section,
        checks: a.checked.checks,
        notes: a.checked.notes,
        max_bytes: max,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// What the curves of one context show.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// The rises of the main curve, innermost first.
    pub found: Vec<FoundLevel>,
    /// Where the 4 KiB-page curve parts from the main one.
    pub tlb: Vec<TlbReach>,
    /// The levels set beside the OS's, with the notes.
    pub checked: check::Checked,
}

/// Finds the levels of `curve` (on huge pages when `huge` says so), the TLB's reach from
/// `small` (the same sizes on 4 KiB pages), and sets them beside the OS's caches of `cpu`
/// (`ghz`: the timer's cycles per ns, for latencies in cycles). Pure: the tests feed it
/// curves measured elsewhere.
#[must_use]
pub fn analyse(
    os: Option<&OsView>,
    cpu: u32,
    curve: &[Sample],
    small: Option<&[Sample]>,
    huge: &HugePages,
    ghz: Option<f64>,
) -> Analysis {
    let found = curve::levels(curve);
    let tlb = if matches!(huge, HugePages::Granted { .. }) {
        tlb::reach(curve, small)
    } else {
        Vec::new()
    };
    let checked = check::section(os, cpu, curve, &found, &tlb, huge, ghz);
    Analysis {
        found,
        tlb,
        checked,
    }
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
}
