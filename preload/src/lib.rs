//! `libtopoprobe_preload.so`: loaded with `LD_PRELOAD` by `topoprobe run`, it pins the
//! program's threads to the CPUs of a placement as the program creates them (as
//! `likwid-pin` does).
//!
//! - `TOPOPROBE_PIN_CPUS`: CPUs in placement order (`0,20,1,21`). The main thread is
//!   pinned to the first when the library loads; the `i`-th thread the program creates
//!   (and does not skip) to the `i+1`-th. Threads beyond the list may run on any CPU of
//!   the list.
//! - `TOPOPROBE_PIN_SKIP`: hexadecimal mask (`0x1`) of created threads not to pin, counted
//!   from 0 in creation order (`likwid-pin -s`): they may run on any CPU of the list, and
//!   take no CPU of it.
//! - `TOPOPROBE_PIN_MACHINE`: the machine the placement was made for, named in the
//!   warning below.
//!
//! The list is checked against the CPUs this machine has online when the library loads
//! (`/sys/devices/system/cpu/online`): CPUs it lacks (a placement of another machine) are
//! said once on standard error, with the machine the placement is of, and the threads
//! given them run on any usable CPU of the list instead; with no usable CPU, nothing is
//! pinned.
//!
//! `pthread_create` is interposed: the real one is found with `dlsym(RTLD_NEXT)` and the
//! new thread pins itself before running the program's start routine. Without
//! `TOPOPROBE_PIN_CPUS` the library does nothing.
//!
//! The library depends on nothing but the standard library (it declares the few C
//! functions it calls itself), so that it builds from this one file: the workspace builds
//! it as the crate `topoprobe-preload`, and `topoprobe-place`'s build script compiles the
//! same file with `rustc` and carries the result inside the `topoprobe` binary (see
//! `place/src/preload.rs`). The variable names come from the file that `topoprobe-sys`
//! includes too (`sys/src/pin_env_names.rs`).

use std::ffi::{c_int, c_void};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The environment variables shared with `topoprobe run` (`topoprobe_sys::pin_env`).
pub mod names {
    include!("../../sys/src/pin_env_names.rs");
}

use names::{PIN_CPUS_VAR, PIN_MACHINE_VAR, PIN_SKIP_VAR};

/// The C library's functions and constants used here (Linux; glibc and musl agree on
/// them).
mod c {
    use std::ffi::{c_char, c_int, c_ulong, c_void};

    /// `pthread_t`.
    pub type PthreadT = c_ulong;
    /// `RTLD_NEXT`: the next object after this one in the search order.
    pub const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;
    /// `EAGAIN`.
    pub const EAGAIN: c_int = 11;

    extern "C" {
        /// `dlsym(3)`.
        pub fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        /// `sched_setaffinity(2)` (`pid` 0: the calling thread).
        pub fn sched_setaffinity(pid: c_int, size: usize, mask: *const c_ulong) -> c_int;
    }
}

/// The largest CPU number accepted (the kernel's own limit, `NR_CPUS`, is at most 8192
/// today): it bounds the mask allocated.
const MAX_CPU: u32 = 65_535;
/// The longest `TOPOPROBE_PIN_CPUS` accepted, in bytes.
const MAX_LIST_LEN: usize = 1 << 20;

/// The start routine of a thread.
type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
/// `pthread_create`'s signature (the attributes are only passed on).
type CreateFn =
    unsafe extern "C" fn(*mut c::PthreadT, *const c_void, StartRoutine, *mut c_void) -> c_int;

/// What the environment asks for.
struct Config {
    cpus: Vec<u32>,
    skip: u128,
    /// The CPUs of the list the program may run on, ascending (all of them, normally).
    usable: Vec<u32>,
}

impl Config {
    /// The CPUs a thread given slot `slot` runs on: its CPU when usable, else (a slot
    /// past the list, or a CPU this machine does not have) any usable CPU of the list.
    fn for_slot(&self, slot: usize) -> Vec<u32> {
        match self.cpus.get(slot) {
            Some(&c) if self.usable.binary_search(&c).is_ok() => vec![c],
            _ => self.usable.clone(),
        }
    }
}

/// The CPUs this machine has online (`/sys/devices/system/cpu/online`), ascending;
/// `None` when the file cannot be read or parsed. The machine's CPUs, not this thread's
/// affinity: an OpenMP runtime may have bound the main thread to one CPU before this
/// library loads.
// This library depends on nothing but the standard library (see the crate's docs), so
// it cannot use topoprobe-files: it reads one small regular file of sysfs, bounded.
#[allow(clippy::disallowed_methods)]
fn online_cpus() -> Option<Vec<u32>> {
    use std::io::Read;
    let f = std::fs::File::open("/sys/devices/system/cpu/online").ok()?;
    let mut text = String::new();
    f.take(1 << 16).read_to_string(&mut text).ok()?;
    parse_ranges(text.trim())
}

/// A CPU list in Linux's syntax (`0-3,8`), ascending; `None` when it is not one or names
/// a CPU above [`MAX_CPU`].
fn parse_ranges(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let c: u32 = part.trim().parse().ok()?;
                (c, c)
            }
        };
        if a > b || b > MAX_CPU {
            return None;
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The CPUs of `cpus` in `allowed` (this machine's online CPUs), ascending and once
/// each; says once which are not, naming the machine the placement is of.
fn usable_of(cpus: &[u32], allowed: Option<&[u32]>) -> Vec<u32> {
    let mut listed = cpus.to_vec();
    listed.sort_unstable();
    listed.dedup();
    let Some(allowed) = allowed else {
        return listed;
    };
    let (usable, missing): (Vec<u32>, Vec<u32>) = listed
        .iter()
        .partition(|c| allowed.binary_search(c).is_ok());
    if !missing.is_empty() {
        let machine = std::env::var(PIN_MACHINE_VAR)
            .map(|m| m.chars().take(200).collect::<String>())
            .unwrap_or_else(|_| format!("{PIN_MACHINE_VAR} does not say"));
        let shown: Vec<String> = missing.iter().take(16).map(u32::to_string).collect();
        let more = if missing.len() > 16 { ",..." } else { "" };
        warn(&format!(
            "{PIN_CPUS_VAR} names CPUs this machine does not have ({}{more}): the placement \
             is of another machine ({machine}); {}",
            shown.join(","),
            if usable.is_empty() {
                "not pinning"
            } else {
                "the threads given them run on the list's other CPUs"
            }
        ));
    }
    usable
}

static CONFIG: OnceLock<Option<Config>> = OnceLock::new();
/// Threads created so far (skipped ones included).
static CREATED: AtomicUsize = AtomicUsize::new(0);
/// Slots of the CPU list given out so far (the main thread has slot 0).
static PINNED: AtomicUsize = AtomicUsize::new(1);

/// A comma-separated list of CPU numbers (none above [`MAX_CPU`]); `None` when it is not
/// one, is empty or is longer than [`MAX_LIST_LEN`].
fn parse_cpus(s: &str) -> Option<Vec<u32>> {
    if s.len() > MAX_LIST_LEN {
        return None;
    }
    let v: Option<Vec<u32>> = s
        .split(',')
        .map(|x| x.trim().parse().ok().filter(|&c| c <= MAX_CPU))
        .collect();
    v.filter(|v| !v.is_empty())
}

/// A hexadecimal mask (`0x5`, `5`; empty: none).
fn parse_mask(s: &str) -> Option<u128> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if t.is_empty() {
        return Some(0);
    }
    u128::from_str_radix(t, 16).ok()
}

/// Says something on standard error (nothing else: the program's output is its own).
fn warn(msg: &str) {
    let line = format!("topoprobe-preload: {msg}\n");
    // Nothing can be done when standard error is closed.
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The configuration from the environment, read once.
fn config() -> Option<&'static Config> {
    CONFIG
        .get_or_init(|| {
            let cpus = std::env::var(PIN_CPUS_VAR).ok()?;
            let Some(cpus) = parse_cpus(&cpus) else {
                let shown: String = cpus.chars().take(80).collect();
                warn(&format!(
                    "{PIN_CPUS_VAR}={shown:?} is not a list of CPU numbers (0 to {MAX_CPU}); \
                     not pinning"
                ));
                return None;
            };
            let skip = match std::env::var(PIN_SKIP_VAR) {
                Ok(s) => parse_mask(&s).unwrap_or_else(|| {
                    warn(&format!(
                        "{PIN_SKIP_VAR}={s:?} is not a hexadecimal mask; skipping none"
                    ));
                    0
                }),
                Err(_) => 0,
            };
            let usable = usable_of(&cpus, online_cpus().as_deref());
            if usable.is_empty() {
                return None;
            }
            Some(Config { cpus, skip, usable })
        })
        .as_ref()
}

/// The kernel's mask of `cpus` (bit `c` of word `c / bits`), as `sched_setaffinity`
/// takes it.
fn mask_of(cpus: &[u32]) -> Vec<std::ffi::c_ulong> {
    let bits = std::ffi::c_ulong::BITS;
    let words = cpus.iter().max().map_or(1, |&m| m / bits + 1);
    let mut mask = vec![0; words as usize];
    for &c in cpus {
        mask[(c / bits) as usize] |= 1 << (c % bits);
    }
    mask
}

/// Sets the calling thread's affinity to `cpus`.
fn set_affinity(cpus: &[u32]) {
    let mask = mask_of(cpus);
    // SAFETY: the mask is a live buffer of the size given; pid 0 is the calling thread.
    let rc = unsafe { c::sched_setaffinity(0, std::mem::size_of_val(&mask[..]), mask.as_ptr()) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        warn(&format!("cannot pin a thread to CPUs {cpus:?}: {e}"));
    }
}

/// Pins the main thread when the library is loaded.
extern "C" fn init() {
    if let Some(c) = config() {
        set_affinity(&c.for_slot(0));
    }
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

/// What a new thread does before the program's start routine.
struct Start {
    routine: StartRoutine,
    arg: *mut c_void,
    cpus: Vec<u32>,
}

/// The start routine given to the real `pthread_create`: pins, then runs the program's.
extern "C" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the Box<Start> leaked by pthread_create below, given to this thread
    // only, and taken back exactly once.
    let start = unsafe { Box::from_raw(p.cast::<Start>()) };
    set_affinity(&start.cpus);
    (start.routine)(start.arg)
}

/// The `pthread_create` this one stands in front of.
fn real_create() -> Option<CreateFn> {
    static REAL: OnceLock<usize> = OnceLock::new();
    let addr = *REAL.get_or_init(|| {
        let name = c"pthread_create".as_ptr();
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks a symbol up.
        unsafe { c::dlsym(c::RTLD_NEXT, name) as usize }
    });
    if addr == 0 {
        return None;
    }
    // SAFETY: the symbol found is the next `pthread_create`, which has this signature.
    Some(unsafe { std::mem::transmute::<usize, CreateFn>(addr) })
}

/// The interposed `pthread_create`.
///
/// # Safety
///
/// The arguments are those of `pthread_create(3)`.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut c::PthreadT,
    attr: *const c_void,
    routine: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    let Some(real) = real_create() else {
        return c::EAGAIN;
    };
    let Some(cfg) = config() else {
        // SAFETY: the caller's arguments are passed on unchanged.
        return unsafe { real(thread, attr, routine, arg) };
    };
    let index = CREATED.fetch_add(1, Ordering::SeqCst);
    let skipped = index < 128 && cfg.skip & (1 << index) != 0;
    let cpus = if skipped {
        cfg.usable.clone()
    } else {
        cfg.for_slot(PINNED.fetch_add(1, Ordering::SeqCst))
    };
    let start = Box::into_raw(Box::new(Start { routine, arg, cpus }));
    // SAFETY: the caller's thread and attributes are passed on; the start routine and its
    // argument are the trampoline and the Box it takes back.
    let rc = unsafe { real(thread, attr, trampoline, start.cast()) };
    if rc != 0 {
        // SAFETY: the thread was not created, so the Box is still ours.
        drop(unsafe { Box::from_raw(start) });
    }
    rc
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_masks() {
        assert_eq!(parse_cpus("0,20, 1"), Some(vec![0, 20, 1]));
        assert_eq!(parse_cpus("0-3"), None);
        assert_eq!(parse_cpus(""), None);
        assert_eq!(parse_mask("0x5"), Some(5));
        assert_eq!(parse_mask("3"), Some(3));
        assert_eq!(parse_mask("0xg"), None);
        assert_eq!(parse_cpus("65535"), Some(vec![65_535]));
        assert_eq!(parse_cpus("65536"), None);
    }

    #[test]
    fn masks_set_one_bit_per_cpu() {
        let bits = std::ffi::c_ulong::BITS;
        assert_eq!(mask_of(&[0, 2]), vec![0b101]);
        let m = mask_of(&[1, bits + 3]);
        assert_eq!(m, vec![0b10, 0b1000]);
    }

    /// The `Cpus_allowed_list` of a `/proc` status file.
    fn allowed(status: &str) -> String {
        let status = std::fs::read_to_string(status).expect("status");
        let line = status
            .lines()
            .find(|l| l.starts_with("Cpus_allowed_list:"))
            .expect("Cpus_allowed_list");
        line.split_whitespace().nth(1).unwrap_or("").to_string()
    }

    #[test]
    fn pins_the_calling_thread() {
        // The first CPU this process may run on, alone, read back from the kernel (in a
        // thread of its own: the test's thread keeps its affinity).
        let list = allowed("/proc/self/status");
        let first: String = list.chars().take_while(char::is_ascii_digit).collect();
        let cpu: u32 = first.parse().expect("a CPU number");
        std::thread::spawn(move || {
            set_affinity(&[cpu]);
            assert_eq!(allowed("/proc/thread-self/status"), cpu.to_string());
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn cpus_the_program_may_not_run_on_are_left_out_with_a_warning() {
        let allowed = online_cpus().expect("this machine's online CPUs");
        assert!(!allowed.is_empty());
        let here = allowed[0];
        let cfg = Config {
            cpus: vec![here, 65_535],
            skip: 0,
            usable: usable_of(&[here, 65_535], Some(&allowed)),
        };
        assert_eq!(cfg.usable, [here]);
        assert_eq!(cfg.for_slot(0), [here]);
        // The CPU this machine lacks, and a slot past the list: any usable CPU.
        assert_eq!(cfg.for_slot(1), [here]);
        assert_eq!(cfg.for_slot(7), [here]);
        assert!(usable_of(&[65_535], Some(&allowed)).is_empty());
        assert_eq!(parse_ranges("0-2,5"), Some(vec![0, 1, 2, 5]));
        assert_eq!(parse_ranges("3-1"), None);
    }

    #[test]
    fn names_are_those_of_topoprobe_run() {
        assert_eq!(PIN_CPUS_VAR, "TOPOPROBE_PIN_CPUS");
        assert_eq!(PIN_SKIP_VAR, "TOPOPROBE_PIN_SKIP");
        assert_eq!(names::PRELOAD_LIBRARY, "libtopoprobe_preload.so");
    }
}
