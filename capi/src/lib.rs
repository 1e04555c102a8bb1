//! The C API of topoprobe (`libtopoprobe.so`, `libtopoprobe.a`, header `topoprobe.h`):
//! measure this machine or load a topology description, query it, place and pin threads
//! by policy, and switch the policy of a pool between parallel regions; spin locks with
//! educated backoff ([`locks`]).
//!
//! Conventions: functions returning a pointer return NULL on failure and functions
//! returning an `int` a negative value; [`tp_last_error`] then says why (per thread).
//! Objects are freed with their `_free` function; strings with [`tp_string_free`].

mod heartbeat;

pub use heartbeat::{tp_heartbeat, tp_heartbeat_enabled, tp_heartbeat_phase};

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::path::Path;

use topoprobe_machine::{measure_and_save, plugins, MachineError, MeasureOptions};
use topoprobe_model::{ContextId, Topology};
use topoprobe_place::{Placement, Policy, Pool, Request, ThreadInfo};
use topoprobe_sys::CpuSet;

pub mod locks;
pub mod omp;

/// NONE: threads are not pinned.
pub const TP_POLICY_NONE: c_int = 0;
/// SEQUENTIAL: the OS's CPU numbering.
pub const TP_POLICY_SEQUENTIAL: c_int = 1;
/// CON_HWC: all contexts of a core, core after core, socket after socket.
pub const TP_POLICY_CON_HWC: c_int = 2;
/// CON_CORE_HWC: one context per core of a socket, then the second contexts.
pub const TP_POLICY_CON_CORE_HWC: c_int = 3;
/// CON_CORE: one context per core of all sockets needed, then the second contexts.
pub const TP_POLICY_CON_CORE: c_int = 4;
/// BALANCE_HWC: CON_HWC balanced across sockets.
pub const TP_POLICY_BALANCE_HWC: c_int = 5;
/// BALANCE_CORE_HWC: CON_CORE_HWC balanced across sockets.
pub const TP_POLICY_BALANCE_CORE_HWC: c_int = 6;
/// BALANCE_CORE: CON_CORE balanced across sockets.
pub const TP_POLICY_BALANCE_CORE: c_int = 7;
/// RR_HWC: round robin over sockets, each filled as CON_HWC.
pub const TP_POLICY_RR_HWC: c_int = 8;
/// RR_CORE: round robin over sockets, each filled as CON_CORE_HWC.
pub const TP_POLICY_RR_CORE: c_int = 9;
/// POWER: least estimated power (needs power measurements).
pub const TP_POLICY_POWER: c_int = 10;
/// RR_SCALE: RR_CORE up to bandwidth saturation per socket (needs bandwidth measurements).
pub const TP_POLICY_RR_SCALE: c_int = 11;
/// SCATTER: one context per core, as far apart as the tree allows (sockets, then groups
/// at every level, then cores); the second contexts last.
pub const TP_POLICY_SCATTER: c_int = 12;

/// Major version of the library (of the header's copy: compare with [`tp_version`] at run
/// time). The shared library's SONAME carries it: `libtopoprobe.so.0`.
pub const TOPOPROBE_VERSION_MAJOR: c_int = 0;
/// Minor version.
pub const TOPOPROBE_VERSION_MINOR: c_int = 1;
/// Patch version.
pub const TOPOPROBE_VERSION_PATCH: c_int = 0;
/// The version as one number, `MAJOR * 10000 + MINOR * 100 + PATCH` (0.1.0: 100), for
/// `#if TOPOPROBE_VERSION >= ...`.
pub const TOPOPROBE_VERSION: c_int = 100;

/// The version of the library loaded, `"MAJOR.MINOR.PATCH"` (static: not to be freed):
/// the header's `TOPOPROBE_VERSION_MAJOR.MINOR.PATCH` when the program runs with the
/// library it was built for.
#[no_mangle]
pub extern "C" fn tp_version() -> *const c_char {
    clear_error();
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// A level of the topology, for [`tp_topology_count`].
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpLevel {
    /// Hardware contexts (the CPUs of the operating system).
    Context = 0,
    /// Cores.
    Core = 1,
    /// Sockets (packages).
    Socket = 2,
    /// Memory (NUMA) nodes.
    Node = 3,
}

impl TpLevel {
    /// Every level, in the order of their numbers.
    #[must_use]
    pub const fn all() -> [Self; 4] {
        [Self::Context, Self::Core, Self::Socket, Self::Node]
    }

    /// The level numbered `code`.
    #[must_use]
    pub fn from_code(code: c_int) -> Option<Self> {
        Self::all().into_iter().find(|l| *l as c_int == code)
    }
}

/// A loaded topology.
pub struct TpTopology(Topology);

impl std::fmt::Debug for TpTopology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpTopology").finish_non_exhaustive()
    }
}
/// A placement (one policy).
pub struct TpPlacement(Placement);

impl std::fmt::Debug for TpPlacement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpPlacement").finish_non_exhaustive()
    }
}
/// A pool of placements with a current policy.
pub struct TpPool(Pool);

impl std::fmt::Debug for TpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TpPool").finish_non_exhaustive()
    }
}

/// Where a pinned thread is.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TpThreadInfo {
    /// Position in the placement order.
    pub thread: u32,
    /// Operating-system CPU number.
    pub context: u32,
    /// Core id in the topology.
    pub core: u32,
    /// Socket id.
    pub socket: u32,
    /// Local memory node (OS number when known), -1 when unknown.
    pub node: i32,
    /// Threads of the placement before it on its socket.
    pub index_in_socket: u32,
    /// Threads of the placement before it on its core.
    pub index_in_core: u32,
    /// 1 when it is the placement's first thread on its node, else 0.
    pub leads_node: u8,
}

fn to_u32(x: usize) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

impl From<ThreadInfo> for TpThreadInfo {
    fn from(i: ThreadInfo) -> Self {
        Self {
            thread: to_u32(i.thread),
            context: i.context,
            core: to_u32(i.core),
            socket: to_u32(i.socket),
            node: i.node.and_then(|n| i32::try_from(n).ok()).unwrap_or(-1),
            index_in_socket: to_u32(i.index_in_socket),
            index_in_core: to_u32(i.index_in_core),
            leads_node: u8::from(i.leads_node),
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Empties the calling thread's last error: every call starts with it, so that
/// [`tp_last_error`] is empty after a call that succeeds.
pub(crate) fn clear_error() {
    LAST_ERROR.with(|e| *e.borrow_mut() = CString::default());
}

pub(crate) fn set_error(msg: impl std::fmt::Display) {
    let text = msg.to_string().replace('\0', " ");
    LAST_ERROR.with(|e| *e.borrow_mut() = CString::new(text).unwrap_or_default());
}

/// An error and its causes, `what: why: because`.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let part = c.to_string();
        // Wrappers that only repeat their cause (or show an empty file name) add nothing.
        let part = part.trim();
        if !part.is_empty() && !text.contains(part) {
            text = format!("{}: {part}", text.trim_end());
        }
        cause = c.source();
    }
    text
}

/// A C string argument as text (`None` for NULL).
///
/// # Safety
///
/// `s` is NULL or a NUL-terminated string.
unsafe fn text_arg(s: *const c_char) -> Option<String> {
    if s.is_null() {
        return None;
    }
    // SAFETY: the caller passes a NUL-terminated string.
    Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// The value of `r`, or `None` with its error kept for `tp_last_error`.
fn recorded<T, E: std::fmt::Display>(r: Result<T, E>) -> Option<T> {
    r.map_err(set_error).ok()
}

/// The last error of the calling thread: empty when its last call (other than this one)
/// succeeded; valid until its next call.
#[no_mangle]
pub extern "C" fn tp_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Loads a topology: a JSON description, a libmctop `.mct` file or a latency matrix; with
/// `path` NULL, this machine's description (`topoprobe infer` or [`tp_topology_measure`]
/// makes it). NULL on failure.
///
/// # Safety
///
/// `path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tp_topology_load(path: *const c_char) -> *mut TpTopology {
    clear_error();
    // SAFETY: the caller passes NULL or a NUL-terminated string.
    let path = unsafe { text_arg(path) };
    if path.as_deref() == Some("") {
        set_error(format!(
            "loading the topology: the path is empty: {}",
            std::io::Error::from_raw_os_error(2) // ENOENT
        ));
        return std::ptr::null_mut();
    }
    let topo = topoprobe_machine::load::topology(path.as_deref().map(Path::new))
        .map_err(|e| with_causes(&e));
    recorded(topo).map_or(std::ptr::null_mut(), |t| {
        Box::into_raw(Box::new(TpTopology(t)))
    })
}

/// How [`tp_topology_measure`] measures this machine; [`tp_measure_options_default`]
/// gives the defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TpMeasureOptions {
    /// CPUs to measure in Linux list syntax (`"0-7,16-23"`); NULL: every CPU this process
    /// may run on.
    pub cpus: *const c_char,
    /// Plugins whose sections are added (`"cache,mem,power"`, `"all"`, `"none"`); NULL:
    /// the default set.
    pub plugins: *const c_char,
    /// Where the description is saved; NULL: the default place (`$TOPOPROBE_FILE`, else
    /// `$XDG_DATA_HOME/topoprobe/<host>.json`).
    pub save_to: *const c_char,
    /// Nonzero: measure every pair of CPUs (otherwise the pairs the structure needs).
    pub full: c_int,
}

/// The default measurement options: every CPU, the default plugins, the default place,
/// the pairs the structure needs.
#[no_mangle]
pub extern "C" fn tp_measure_options_default() -> TpMeasureOptions {
    clear_error();
    TpMeasureOptions {
        cpus: std::ptr::null(),
        plugins: std::ptr::null(),
        save_to: std::ptr::null(),
        full: 0,
    }
}

/// The library's measurement options from the C ones.
///
/// # Safety
///
/// The strings of `o` are NULL or NUL-terminated.
unsafe fn measure_options(o: &TpMeasureOptions) -> Result<MeasureOptions, MachineError> {
    let mut opts = MeasureOptions::default();
    // SAFETY: the caller's strings are NULL or NUL-terminated.
    let (cpus, list, save_to) =
        unsafe { (text_arg(o.cpus), text_arg(o.plugins), text_arg(o.save_to)) };
    if let Some(list) = cpus {
        let set = CpuSet::parse_list(&list)
            .map_err(|e| MachineError::Cpus(format!("--cpus {list}: {e}")))?;
        opts.cpus = Some(set);
    }
    if let Some(list) = list {
        opts.plugins = plugins::parse(&list)?;
    }
    opts.path = save_to.map(std::path::PathBuf::from);
    opts.sampling.full = o.full != 0;
    Ok(opts)
}

/// Measures this machine (core-to-core latencies, inference, the plugins' sections, the
/// comparison with the OS) and saves its description, as `topoprobe infer` does; with
/// `options` NULL, the defaults. Takes seconds. NULL on failure.
///
/// # Safety
///
/// `options` is NULL or points to a valid [`TpMeasureOptions`] whose strings are NULL or
/// NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn tp_topology_measure(options: *const TpMeasureOptions) -> *mut TpTopology {
    clear_error();
    let o = if options.is_null() {
        tp_measure_options_default()
    } else {
        // SAFETY: the caller passes a valid pointer.
        unsafe { *options }
    };
    // SAFETY: the caller's strings are NULL or NUL-terminated.
    let measured = unsafe { measure_options(&o) }
        .and_then(|opts| measure_and_save(&opts, &mut |_| {}))
        .map_err(|e| with_causes(&e));
    recorded(measured).map_or(std::ptr::null_mut(), |m| {
        Box::into_raw(Box::new(TpTopology(m.topology)))
    })
}

/// Frees a topology (NULL is ignored).
///
/// # Safety
///
/// `t` is NULL or was returned by [`tp_topology_load`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn tp_topology_free(t: *mut TpTopology) {
    clear_error();
    if !t.is_null() {
        // SAFETY: `t` came from Box::into_raw and is freed once.
        drop(unsafe { Box::from_raw(t) });
    }
}

/// The topology behind a pointer, or an error.
///
/// # Safety
///
/// `t` is NULL or a live object of this API.
unsafe fn deref<'a, T>(t: *const T, what: &str) -> Option<&'a T> {
    // SAFETY: the caller guarantees `t` is NULL or live.
    let r = unsafe { t.as_ref() };
    if r.is_none() {
        set_error(format!("{what} is NULL"));
    }
    r
}

/// Number of hardware contexts, cores, sockets or nodes: `what` is a [`TpLevel`]
/// (`TP_LEVEL_CONTEXT`, `TP_LEVEL_CORE`, `TP_LEVEL_SOCKET`, `TP_LEVEL_NODE`); -1 on error
/// (an unknown level).
///
/// # Safety
///
/// `t` is NULL or a live topology.
#[no_mangle]
pub unsafe extern "C" fn tp_topology_count(t: *const TpTopology, what: c_int) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(t) = (unsafe { deref(t, "topology") }) else {
        return -1;
    };
    // An int, not the enum, crosses the boundary: C may pass any number.
    let n = match TpLevel::from_code(what) {
        Some(TpLevel::Context) => t.0.num_contexts(),
        Some(TpLevel::Core) => t.0.num_cores(),
        Some(TpLevel::Socket) => t.0.num_sockets(),
        Some(TpLevel::Node) => t.0.num_nodes(),
        None => {
            set_error(format!(
                "tp_topology_count: unknown level {what} (TP_LEVEL_CONTEXT 0, TP_LEVEL_CORE 1, \
                 TP_LEVEL_SOCKET 2, TP_LEVEL_NODE 3)"
            ));
            return -1;
        }
    };
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// The socket of CPU `cpu` (OS number); -1 when it is not in the topology.
///
/// # Safety
///
/// `t` is NULL or a live topology.
#[no_mangle]
pub unsafe extern "C" fn tp_topology_socket_of(t: *const TpTopology, cpu: u32) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(t) = (unsafe { deref(t, "topology") }) else {
        return -1;
    };
    match t.0.context_by_os_id(cpu).and_then(|c| t.0.socket_of(c)) {
        Some(s) => c_int::try_from(s.index()).unwrap_or(-1),
        None => {
            set_error(format!("CPU {cpu} is not in the topology"));
            -1
        }
    }
}

/// Latency between CPUs `a` and `b` (OS numbers) in the topology's unit; negative when
/// unknown.
///
/// # Safety
///
/// `t` is NULL or a live topology.
#[no_mangle]
pub unsafe extern "C" fn tp_topology_latency(t: *const TpTopology, a: u32, b: u32) -> f64 {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(t) = (unsafe { deref(t, "topology") }) else {
        return -1.0;
    };
    let ctx = |c: u32| t.0.context_by_os_id(c);
    match (ctx(a), ctx(b)) {
        (Some(x), Some(y)) => t.0.context_latency(ContextId(x.index()), y).unwrap_or(-1.0),
        _ => {
            set_error(format!("CPU {a} or {b} is not in the topology"));
            -1.0
        }
    }
}

/// The policy number of a name (`"rr_core"`, `"CON_HWC"`...); -1 when unknown.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn tp_policy_from_name(name: *const c_char) -> c_int {
    clear_error();
    if name.is_null() {
        set_error("policy name is NULL");
        return -1;
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    recorded(s.parse::<Policy>()).map_or(-1, |p| c_int::try_from(p.code()).unwrap_or(-1))
}

/// Whether `topo` is of this machine (`topoprobe_sys::here`, the check `topoprobe run`
/// makes): a placement pins threads of this process, and a description of another
/// machine would pin them to CPUs this one lacks. When it is not, the error naming its
/// machine is recorded for `tp_last_error`.
fn of_this_machine(topo: &Topology) -> bool {
    match topoprobe_sys::here::check_this_machine(topo) {
        Ok(()) => true,
        Err(e) => {
            set_error(format!(
                "{e}: a placement pins this process's threads to this machine's CPUs; load \
                 this machine's description (tp_topology_load(NULL)) or measure it"
            ));
            false
        }
    }
}

fn policy_of(code: c_int) -> Option<Policy> {
    let p = u32::try_from(code).ok().and_then(Policy::from_code);
    if p.is_none() {
        set_error(format!("unknown policy number {code} (0 to 11)"));
    }
    p
}

fn request(policy: Policy, threads: c_int, sockets: c_int) -> Request {
    let mut r = Request::new(policy);
    r.threads = usize::try_from(threads).ok().filter(|&n| n > 0);
    r.sockets = usize::try_from(sockets).ok().filter(|&n| n > 0);
    r
}

/// Makes a placement of `threads` threads (<= 0: every context) on `sockets` sockets (<= 0:
/// as many as needed). NULL on failure (too many threads, missing data for POWER or
/// RR_SCALE..., a topology of another machine: one naming CPUs this machine does not
/// have online).
///
/// # Safety
///
/// `t` is NULL or a live topology.
#[no_mangle]
pub unsafe extern "C" fn tp_placement_create(
    t: *const TpTopology,
    policy: c_int,
    threads: c_int,
    sockets: c_int,
) -> *mut TpPlacement {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(t) = (unsafe { deref(t, "topology") }) else {
        return std::ptr::null_mut();
    };
    let Some(policy) = policy_of(policy) else {
        return std::ptr::null_mut();
    };
    if !of_this_machine(&t.0) {
        return std::ptr::null_mut();
    }
    recorded(Placement::new(&t.0, &request(policy, threads, sockets)))
        .map_or(std::ptr::null_mut(), |p| {
            Box::into_raw(Box::new(TpPlacement(p)))
        })
}

/// Frees a placement (NULL is ignored).
///
/// # Safety
///
/// `p` is NULL or was returned by [`tp_placement_create`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn tp_placement_free(p: *mut TpPlacement) {
    clear_error();
    if !p.is_null() {
        // SAFETY: `p` came from Box::into_raw and is freed once.
        drop(unsafe { Box::from_raw(p) });
    }
}

fn pin_result(
    r: Result<Option<ThreadInfo>, topoprobe_place::PlaceError>,
    info: *mut TpThreadInfo,
) -> c_int {
    match recorded(r) {
        Some(Some(i)) => {
            if !info.is_null() {
                // SAFETY: the caller passes NULL or a writable TpThreadInfo.
                unsafe { *info = i.into() };
            }
            c_int::try_from(i.context).unwrap_or(c_int::MAX)
        }
        Some(None) => -1,
        None => -2,
    }
}

/// Pins the calling thread to the next free context; fills `info` (may be NULL) and
/// returns the CPU, -1 when no context is free or the policy does not pin, -2 on error.
///
/// # Safety
///
/// `p` is NULL or a live placement; `info` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tp_placement_pin(p: *const TpPlacement, info: *mut TpThreadInfo) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "placement") }) else {
        return -2;
    };
    pin_result(p.0.pin(), info)
}

/// Why [`tp_placement_pin_slot`] or [`tp_pool_pin_slot`] gave no context, for
/// `tp_last_error`.
fn slot_refused(placement: &Placement, slot: u32) {
    let n = placement.threads().len();
    if n == 0 {
        set_error(format!(
            "no slot {slot}: the policy does not pin (the placement has no slots)"
        ));
    } else if slot as usize >= n {
        set_error(format!(
            "no slot {slot}: the placement has {n} (slots 0 to {})",
            n.saturating_sub(1)
        ));
    } else {
        set_error(format!(
            "slot {slot} is held by another thread (or its CPU was refused before)"
        ));
    }
}

/// The result of pinning to a named slot: as [`pin_result`], with the reason for -1 kept.
fn slot_result(
    r: Result<Option<ThreadInfo>, topoprobe_place::PlaceError>,
    placement: &Placement,
    slot: u32,
    info: *mut TpThreadInfo,
) -> c_int {
    if matches!(r, Ok(None)) {
        slot_refused(placement, slot);
    }
    pin_result(r, info)
}

/// Pins the calling thread to slot `slot` of the placement (the `slot`-th context in the
/// policy's order): thread `i` of a team (`omp_get_thread_num()`) on the `i`-th context,
/// whatever order the threads arrive in. A thread holding another slot of the placement
/// moves. Fills `info` (may be NULL) and returns the CPU; -1 when there is no such slot or
/// another thread holds it, -2 on error.
///
/// # Safety
///
/// `p` is NULL or a live placement; `info` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tp_placement_pin_slot(
    p: *const TpPlacement,
    slot: u32,
    info: *mut TpThreadInfo,
) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "placement") }) else {
        return -2;
    };
    slot_result(p.0.pin_slot(slot as usize), &p.0, slot, info)
}

/// Unpins the calling thread (its context becomes free): 1 when it held one, 0 when not,
/// -2 on error.
///
/// # Safety
///
/// `p` is NULL or a live placement.
#[no_mangle]
pub unsafe extern "C" fn tp_placement_unpin(p: *const TpPlacement) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "placement") }) else {
        return -2;
    };
    recorded(p.0.unpin()).map_or(-2, c_int::from)
}

/// Number of threads of the placement; -1 on error.
///
/// # Safety
///
/// `p` is NULL or a live placement.
#[no_mangle]
pub unsafe extern "C" fn tp_placement_threads(p: *const TpPlacement) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "placement") }) else {
        return -1;
    };
    c_int::try_from(p.0.plan().threads).unwrap_or(c_int::MAX)
}

/// Information on slot `i` of the placement, written to `info`: 0, or -1 when there is no
/// such slot.
///
/// # Safety
///
/// `p` is NULL or a live placement; `info` is writable.
#[no_mangle]
pub unsafe extern "C" fn tp_placement_slot(
    p: *const TpPlacement,
    i: u32,
    info: *mut TpThreadInfo,
) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "placement") }) else {
        return -1;
    };
    match p.0.threads().get(i as usize) {
        Some(s) if !info.is_null() => {
            // SAFETY: the caller passes a writable TpThreadInfo.
            unsafe { *info = (*s).into() };
            0
        }
        _ => {
            set_error(format!("no slot {i} (or info is NULL)"));
            -1
        }
    }
}

/// The placement's summary (paper Figure 7) as text, or as JSON when `json` is non-zero;
/// free it with [`tp_string_free`]. NULL on error.
///
/// # Safety
///
/// `p` is NULL or a live placement.
#[no_mangle]
pub unsafe extern "C" fn tp_placement_summary(p: *const TpPlacement, json: c_int) -> *mut c_char {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "placement") }) else {
        return std::ptr::null_mut();
    };
    let text = if json != 0 {
        // The JSON `topoprobe place --json` writes, figures rounded the same way.
        match topoprobe_view::results::json(p.0.result()) {
            Ok(text) => text,
            Err(e) => {
                set_error(format!("the placement as JSON: {e}"));
                return std::ptr::null_mut();
            }
        }
    } else {
        topoprobe_view::results::placement::summary_text(p.0.summary())
    };
    CString::new(text).map_or(std::ptr::null_mut(), CString::into_raw)
}

/// Frees a string returned by this API (NULL is ignored).
///
/// # Safety
///
/// `s` is NULL or a string from this API, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn tp_string_free(s: *mut c_char) {
    clear_error();
    if !s.is_null() {
        // SAFETY: `s` came from CString::into_raw and is freed once.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// Makes a pool whose placements have `threads` threads on `sockets` sockets (<= 0:
/// defaults), with `policy` current. NULL on failure (as [`tp_placement_create`]).
///
/// # Safety
///
/// `t` is NULL or a live topology.
#[no_mangle]
pub unsafe extern "C" fn tp_pool_create(
    t: *const TpTopology,
    policy: c_int,
    threads: c_int,
    sockets: c_int,
) -> *mut TpPool {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(t) = (unsafe { deref(t, "topology") }) else {
        return std::ptr::null_mut();
    };
    let Some(policy) = policy_of(policy) else {
        return std::ptr::null_mut();
    };
    if !of_this_machine(&t.0) {
        return std::ptr::null_mut();
    }
    recorded(Pool::new(t.0.clone(), request(policy, threads, sockets)))
        .map_or(std::ptr::null_mut(), |p| Box::into_raw(Box::new(TpPool(p))))
}

/// Makes `policy` the pool's current policy (threads move at their next
/// [`tp_pool_pin`]): 0, or -2 on error.
///
/// # Safety
///
/// `p` is NULL or a live pool.
#[no_mangle]
pub unsafe extern "C" fn tp_pool_set_policy(p: *const TpPool, policy: c_int) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "pool") }) else {
        return -2;
    };
    let Some(policy) = policy_of(policy) else {
        return -2;
    };
    recorded(p.0.set_policy(policy)).map_or(-2, |()| 0)
}

/// A pin point: pins the calling thread by the pool's current policy (as
/// [`tp_placement_pin`]: to the next free context, in the order threads arrive; for thread
/// `i` of a team on the `i`-th context, [`tp_pool_pin_slot`]).
///
/// # Safety
///
/// `p` is NULL or a live pool; `info` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tp_pool_pin(p: *const TpPool, info: *mut TpThreadInfo) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "pool") }) else {
        return -2;
    };
    pin_result(p.0.pin(), info)
}

/// A pin point that pins the calling thread to slot `slot` of the pool's current policy
/// (as [`tp_placement_pin_slot`]): in an OpenMP region, `tp_pool_pin_slot(pool,
/// omp_get_thread_num(), &info)` puts thread `i` on the `i`-th context of the policy, where
/// [`tp_pool_pin`] gives contexts in the order the threads arrive.
///
/// # Safety
///
/// `p` is NULL or a live pool; `info` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tp_pool_pin_slot(
    p: *const TpPool,
    slot: u32,
    info: *mut TpThreadInfo,
) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "pool") }) else {
        return -2;
    };
    let r = p.0.pin_slot(slot as usize);
    slot_result(r, &p.0.current(), slot, info)
}

/// Unpins the calling thread from the pool: 1 when it held a context, 0 when not, -2 on
/// error.
///
/// # Safety
///
/// `p` is NULL or a live pool.
#[no_mangle]
pub unsafe extern "C" fn tp_pool_unpin(p: *const TpPool) -> c_int {
    clear_error();
    // SAFETY: forwarded from the caller.
    let Some(p) = (unsafe { deref(p, "pool") }) else {
        return -2;
    };
    recorded(p.0.unpin()).map_or(-2, c_int::from)
}

/// Frees a pool (NULL is ignored).
///
/// # Safety
///
/// `p` is NULL or was returned by [`tp_pool_create`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn tp_pool_free(p: *mut TpPool) {
    clear_error();
    if !p.is_null() {
        // SAFETY: `p` came from Box::into_raw and is freed once.
        drop(unsafe { Box::from_raw(p) });
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their own fixtures
mod tests {
    use super::*;

    #[test]
    fn policy_numbers_match_the_library() {
        let consts = [
            TP_POLICY_NONE,
            TP_POLICY_SEQUENTIAL,
            TP_POLICY_CON_HWC,
            TP_POLICY_CON_CORE_HWC,
            TP_POLICY_CON_CORE,
            TP_POLICY_BALANCE_HWC,
            TP_POLICY_BALANCE_CORE_HWC,
            TP_POLICY_BALANCE_CORE,
            TP_POLICY_RR_HWC,
            TP_POLICY_RR_CORE,
            TP_POLICY_POWER,
            TP_POLICY_RR_SCALE,
            TP_POLICY_SCATTER,
        ];
        for (c, p) in consts.into_iter().zip(Policy::ALL) {
            assert_eq!(c as u32, p.code(), "{p}");
        }
    }

    #[test]
    fn version_macros_are_cargos_version() {
        let parts = [
            TOPOPROBE_VERSION_MAJOR,
            TOPOPROBE_VERSION_MINOR,
            TOPOPROBE_VERSION_PATCH,
        ];
        let cargo = [
            env!("CARGO_PKG_VERSION_MAJOR"),
            env!("CARGO_PKG_VERSION_MINOR"),
            env!("CARGO_PKG_VERSION_PATCH"),
        ];
        for (have, want) in parts.into_iter().zip(cargo) {
            assert_eq!(have.to_string(), want);
        }
        assert_eq!(
            TOPOPROBE_VERSION,
            parts[0] * 10_000 + parts[1] * 100 + parts[2]
        );
        // SAFETY: tp_version returns a static NUL-terminated string.
        let loaded = unsafe { CStr::from_ptr(tp_version()) };
        assert_eq!(loaded.to_str(), Ok(env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn levels_keep_their_numbers() {
        let m = ",50\n50,\n";
        let dir = std::env::temp_dir().join(format!("tp-levels-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("m2.csv");
        std::fs::write(&path, m).expect("matrix");
        let c = CString::new(path.to_str().expect("utf-8")).expect("path");
        // SAFETY: a NUL-terminated path; the topology is freed once.
        unsafe {
            let t = tp_topology_load(c.as_ptr());
            assert!(!t.is_null());
            let counts: Vec<c_int> = TpLevel::all()
                .into_iter()
                .map(|l| tp_topology_count(t, l as c_int))
                .collect();
            // A latency matrix says nothing of memory nodes.
            assert_eq!(counts, [2, 2, 1, 0]);
            assert_eq!(tp_topology_count(t, 4), -1);
            let e = CStr::from_ptr(tp_last_error()).to_string_lossy();
            assert!(e.contains("unknown level 4"), "{e}");
            tp_topology_free(t);
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
