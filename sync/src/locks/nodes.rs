//! Queue nodes of the MCS and CLH locks and the per-thread pools that recycle them.
//!
//! A node is a heap allocation whose ownership moves between a thread's pool and a lock's
//! queue: `take` hands out a raw pointer to a node no lock refers to, `give` takes back a
//! node no lock refers to any more. A node returned to a pool while another thread can
//! still reach it would be a use after free; the lock modules say why that cannot happen.

use std::cell::RefCell;

use crate::prim::{AtomicBool, AtomicPtr, AtomicU32};

/// The largest number of spare nodes a thread keeps per kind.
const KEEP: usize = 16;

/// A node of the MCS queue, on its own cache line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct McsNode {
    /// True while the owner must wait; set false by the predecessor at hand-over.
    pub(crate) locked: AtomicBool,
    /// The successor, linked by the successor itself.
    pub(crate) next: AtomicPtr<McsNode>,
    /// The owner's CPU (for the successor's educated backoff).
    pub(crate) cpu: AtomicU32,
}

/// A node of the CLH queue, on its own cache line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct ClhNode {
    /// True while the node's owner holds or waits for the lock.
    pub(crate) locked: AtomicBool,
    /// The owner's CPU (for the successor's educated backoff).
    pub(crate) cpu: AtomicU32,
}

impl McsNode {
    fn fresh() -> Self {
        Self {
            locked: AtomicBool::new(false),
            next: AtomicPtr::new(std::ptr::null_mut()),
            cpu: AtomicU32::new(u32::MAX),
        }
    }
}

impl ClhNode {
    fn fresh() -> Self {
        Self {
            locked: AtomicBool::new(false),
            cpu: AtomicU32::new(u32::MAX),
        }
    }
}

macro_rules! pools {
    ($($vis:vis static $name:ident: $t:ty;)*) => {
        #[cfg(loom)]
        loom::thread_local! { $($vis static $name: RefCell<Vec<Box<$t>>> = RefCell::new(Vec::new());)* }
        #[cfg(not(loom))]
        std::thread_local! { $($vis static $name: RefCell<Vec<Box<$t>>> = const { RefCell::new(Vec::new()) };)* }
    };
}

pools! {
    static MCS: McsNode;
    static CLH: ClhNode;
}

/// A node no lock refers to, from the calling thread's pool or newly allocated.
pub(crate) fn take_mcs() -> *mut McsNode {
    let b = MCS
        .try_with(|p| p.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| Box::new(McsNode::fresh()));
    Box::into_raw(b)
}

/// Takes back a node that `take_mcs` handed out (or a lock passed on) and that no lock
/// refers to any more.
///
/// # Safety
///
/// `node` came from `Box::into_raw` and nothing else will use it.
pub(crate) unsafe fn give_mcs(node: *mut McsNode) {
    // SAFETY: the caller passes a node of Box::into_raw that nothing else uses.
    let b = unsafe { Box::from_raw(node) };
    let _ = MCS.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < KEEP {
            p.push(b);
        }
    });
}

/// A node no lock refers to, from the calling thread's pool or newly allocated.
pub(crate) fn take_clh() -> *mut ClhNode {
    let b = CLH
        .try_with(|p| p.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| Box::new(ClhNode::fresh()));
    Box::into_raw(b)
}

/// Takes back a node that no lock refers to any more.
///
/// # Safety
///
/// `node` came from `Box::into_raw` and nothing else will use it.
pub(crate) unsafe fn give_clh(node: *mut ClhNode) {
    // SAFETY: the caller passes a node of Box::into_raw that nothing else uses.
    let b = unsafe { Box::from_raw(node) };
    let _ = CLH.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < KEEP {
            p.push(b);
        }
    });
}
