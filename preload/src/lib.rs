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
//!
//! `pthread_create` is interposed: the real one is found with `dlsym(RTLD_NEXT)` and the
//! new thread pins itself before running the program's start routine. Without
//! `TOPOPROBE_PIN_CPUS` the library does nothing.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use topoprobe_sys::affinity;
use topoprobe_sys::pin_env::{PIN_CPUS_VAR, PIN_SKIP_VAR};
use topoprobe_sys::CpuSet;

/// The start routine of a thread.
type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
/// `pthread_create`'s signature.
type CreateFn = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    StartRoutine,
    *mut c_void,
) -> c_int;

/// What the environment asks for.
struct Config {
    cpus: Vec<u32>,
    skip: u128,
}

static CONFIG: OnceLock<Option<Config>> = OnceLock::new();
/// Threads created so far (skipped ones included).
static CREATED: AtomicUsize = AtomicUsize::new(0);
/// Slots of the CPU list given out so far (the main thread has slot 0).
static PINNED: AtomicUsize = AtomicUsize::new(1);

fn parse_cpus(s: &str) -> Option<Vec<u32>> {
    let v: Option<Vec<u32>> = s.split(',').map(|x| x.trim().parse().ok()).collect();
    v.filter(|v| !v.is_empty())
}

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

fn warn(msg: &str) {
    let line = format!("topoprobe-preload: {msg}\n");
    // SAFETY: writes a live buffer of the given length to standard error.
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
    }
}

fn config() -> Option<&'static Config> {
    CONFIG
        .get_or_init(|| {
            let cpus = std::env::var(PIN_CPUS_VAR).ok()?;
            let Some(cpus) = parse_cpus(&cpus) else {
                warn(&format!(
                    "{PIN_CPUS_VAR}={cpus:?} is not a list of CPU numbers; not pinning"
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
            Some(Config { cpus, skip })
        })
        .as_ref()
}

/// Sets the calling thread's affinity to `cpus`.
fn set_affinity(cpus: &[u32]) {
    if let Err(e) = affinity::set_current_thread_affinity(&CpuSet::from(cpus)) {
        warn(&format!("cannot pin a thread to CPUs {cpus:?}: {e}"));
    }
}

/// Pins the main thread when the library is loaded.
extern "C" fn init() {
    if let Some(c) = config() {
        set_affinity(&c.cpus[..1]);
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

extern "C" fn trampoline(p: *mut c_void) -> *mut c_void {
    // SAFETY: `p` is the Box<Start> leaked by pthread_create below, given to this thread
    // only, and taken back exactly once.
    let start = unsafe { Box::from_raw(p.cast::<Start>()) };
    set_affinity(&start.cpus);
    (start.routine)(start.arg)
}

fn real_create() -> Option<CreateFn> {
    static REAL: OnceLock<usize> = OnceLock::new();
    let addr = *REAL.get_or_init(|| {
        let name = c"pthread_create".as_ptr();
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks a symbol up.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name) as usize }
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
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    let Some(real) = real_create() else {
        return libc::EAGAIN;
    };
    let Some(cfg) = config() else {
        // SAFETY: the caller's arguments are passed on unchanged.
        return unsafe { real(thread, attr, routine, arg) };
    };
    let index = CREATED.fetch_add(1, Ordering::SeqCst);
    let skipped = index < 128 && cfg.skip & (1 << index) != 0;
    let cpus = if skipped {
        cfg.cpus.clone()
    } else {
        let slot = PINNED.fetch_add(1, Ordering::SeqCst);
        cfg.cpus
            .get(slot)
            .map_or_else(|| cfg.cpus.clone(), |&c| vec![c])
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
    }
}
