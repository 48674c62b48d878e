//! Stacks for preemptible functions: mmap'd, with a PROT_NONE guard page at
//! the bottom, kept in a process-wide pool (LIFO, so the pages a finished or
//! cancelled function touched are reused while still resident). Each stack
//! carries a [`Tracker`] for its function's allocations; trackers are never
//! freed (see `alloc`).

use crate::alloc::Tracker;
use crate::sys;
use crate::Error;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

/// Bytes per stack, guard page included.
pub const STACK_SIZE: usize = 256 * 1024;
/// Stacks the pool keeps; more are unmapped when returned.
const POOL_MAX: usize = 1024;

pub(crate) struct Stack {
    pub(crate) base: *mut u8,
    pub(crate) tracker: &'static Tracker,
}

impl Stack {
    /// One past the highest usable byte.
    pub(crate) fn top(&self) -> *mut u8 {
        self.base.wrapping_add(STACK_SIZE)
    }
    /// The lowest usable byte (above the guard page).
    pub(crate) fn bottom(&self) -> *mut u8 {
        self.base.wrapping_add(sys::PAGE)
    }
}

struct Pool {
    stacks: Vec<(usize, &'static Tracker)>,
    spare_trackers: Vec<&'static Tracker>,
}

/// A spin lock rather than a `Mutex`, so that `fork` can hold it across the
/// fork (see [`atfork_prepare`]) and the child can release it.
struct PoolLock {
    locked: AtomicBool,
    pool: UnsafeCell<Pool>,
}

// SAFETY: `pool` is only reached through `PoolGuard`, which holds `locked`.
unsafe impl Sync for PoolLock {}

static POOL: PoolLock = PoolLock {
    locked: AtomicBool::new(false),
    pool: UnsafeCell::new(Pool {
        stacks: Vec::new(),
        spare_trackers: Vec::new(),
    }),
};

fn lock() {
    let mut spins = 0u32;
    while POOL
        .locked
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins > 100 {
            std::thread::yield_now();
        } else {
            core::hint::spin_loop();
        }
    }
}

fn unlock() {
    POOL.locked.store(false, Ordering::Release);
}

struct PoolGuard;

impl core::ops::Deref for PoolGuard {
    type Target = Pool;
    fn deref(&self) -> &Pool {
        // SAFETY: the guard holds the lock.
        unsafe { &*POOL.pool.get() }
    }
}

impl core::ops::DerefMut for PoolGuard {
    fn deref_mut(&mut self) -> &mut Pool {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *POOL.pool.get() }
    }
}

impl Drop for PoolGuard {
    fn drop(&mut self) {
        unlock();
    }
}

fn pool() -> PoolGuard {
    lock();
    PoolGuard
}

/// `fork` handlers: the pool lock is held across the fork, so the child
/// never inherits it locked by a thread that does not exist there.
pub(crate) extern "C" fn atfork_prepare() {
    lock();
}

pub(crate) extern "C" fn atfork_release() {
    unlock();
}

pub(crate) fn get() -> Result<Stack, Error> {
    let tracker = {
        let mut p = pool();
        if let Some((base, tracker)) = p.stacks.pop() {
            return Ok(Stack {
                base: base as *mut u8,
                tracker,
            });
        }
        p.spare_trackers.pop()
    };
    let base = sys::map_stack(STACK_SIZE).map_err(Error::Os)?;
    let tracker = tracker.unwrap_or_else(|| Box::leak(Box::new(Tracker::new())));
    Ok(Stack { base, tracker })
}

/// Returns a stack nobody runs on any more to the pool.
///
/// # Safety
/// No context may still be suspended on `s`, and nothing may point into it.
pub(crate) unsafe fn put(s: Stack) {
    let mut p = pool();
    if p.stacks.len() < POOL_MAX {
        p.stacks.push((s.base as usize, s.tracker));
    } else {
        p.spare_trackers.push(s.tracker);
        drop(p);
        // SAFETY: per the contract, the mapping is unused.
        unsafe { sys::unmap_stack(s.base, STACK_SIZE) };
    }
}

/// Stacks currently in the pool.
pub(crate) fn pooled() -> usize {
    pool().stacks.len()
}
