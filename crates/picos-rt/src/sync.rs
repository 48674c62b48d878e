//! The runtime's locks, each with a rank: a thread may only take a lock
//! that ranks above every lock it already holds (the order is written down
//! in docs/ARCHITECTURE.md, "Locks"). Taking one out of order is a possible
//! deadlock (two threads, each holding what the other wants; or a signal
//! handler wanting what the code it interrupted holds): the lock reports
//! it, once per pair of locks, as an error line on stderr
//! ("lock order violation"), which the stress tests look for.
//!
//! The held set lives in the thread's runtime state; this module, below
//! `thread`, reaches it through a hook `thread` installs.

use core::cell::Cell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU64, Ordering};

/// The ranks, in the order locks are taken. Every lock that can be held
/// while another thread forks is also held across the fork by its
/// subsystem's [`ForkHook`] (registry: `kernel::process::FORK_HOOKS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Rank {
    /// `kernel::signal::SigActions` (the dispositions' write lock).
    Actions = 1,
    /// `kernel::vm::BRK`.
    Brk = 2,
    /// `diag::stats::EXITED`.
    Exited = 3,
    /// `kernel::process::IdCache::creds`.
    Creds = 4,
    /// `kernel::process::IdCache::uname`.
    Uname = 5,
    /// `kernel::process::IdCache::rlimits`.
    Rlimits = 6,
    /// `kernel::process::Process::cwd` (the cached working directory).
    Cwd = 7,
    /// `kernel::process::SPARE` (process states to reuse).
    SpareProcesses = 8,
    /// `kernel::fs::SPARE` (descriptor-table states to reuse).
    SpareTables = 9,
    /// `kernel::fs::FdTable::files` (the files of exclusive mounts a
    /// descriptor table holds open).
    FdFiles = 10,
    /// `kernel::fs::file::WriteBack::buf` (a write-back file's buffer).
    WriteBuffer = 11,
    /// `kernel::fs::dcache::CACHE` (the directory cache).
    Dcache = 12,
    /// `patch::STATE`.
    Patch = 13,
    /// `mm::runtime::VIEWS` (the address space of the views of files).
    FileViews = 14,
    /// The runtime heap: always last (code under any other lock may allocate).
    Heap = 15,
}

impl Rank {
    const ALL: [Rank; 15] = [
        Rank::Actions,
        Rank::Brk,
        Rank::Exited,
        Rank::Creds,
        Rank::Uname,
        Rank::Rlimits,
        Rank::Cwd,
        Rank::SpareProcesses,
        Rank::SpareTables,
        Rank::FdFiles,
        Rank::WriteBuffer,
        Rank::Dcache,
        Rank::Patch,
        Rank::FileViews,
        Rank::Heap,
    ];
    fn name(self) -> &'static str {
        match self {
            Rank::Actions => "signal actions",
            Rank::Brk => "brk",
            Rank::Exited => "stats",
            Rank::Creds => "credentials",
            Rank::Uname => "uname",
            Rank::Rlimits => "rlimits",
            Rank::Cwd => "working directory",
            Rank::SpareProcesses => "spare process states",
            Rank::SpareTables => "spare descriptor tables",
            Rank::Dcache => "directory cache",
            Rank::FdFiles => "descriptor table's files",
            Rank::WriteBuffer => "write-back buffer",
            Rank::FileViews => "file views",
            Rank::Patch => "patcher state",
            Rank::Heap => "heap",
        }
    }
    fn bit(self) -> u32 {
        1 << self as u8
    }
}

/// One subsystem's part in fork(2). The registry of them is
/// `kernel::process::FORK_HOOKS`, in lock order: the host's fork runs with
/// every hook's locks held (so that the child never inherits a lock some
/// other thread held, half-way through a change), then each hook's `child`
/// step runs in the child, in the same order. A subsystem that adds a lock
/// or per-process state adds its hook there.
pub struct ForkHook {
    /// For messages and tests.
    pub name: &'static str,
    /// Runs `inner` (the fork, inside the hooks after this one) with this
    /// subsystem's locks held.
    pub hold: fn(inner: &mut dyn FnMut()),
    /// What `hold` does besides holding its locks, for a process whose
    /// memory no other task shares ([`fork_alone`]): no other thread can
    /// hold a lock or be half-way through a change, so the locks are not
    /// taken (writing a lock word in the parent and again in the child
    /// copies its page, a fault each: ~2.5 µs).
    pub alone: fn(),
    /// In the child, right after the fork (only the forking thread exists):
    /// makes the subsystem's state the child's. `parent` is the pid of the
    /// process that forked.
    pub child: fn(parent: i32),
}

impl ForkHook {
    /// A `hold` for a subsystem with no lock to hold.
    pub fn no_lock(inner: &mut dyn FnMut()) {
        inner()
    }
    /// A `child` for a subsystem with nothing to change in the child.
    pub fn no_change(_parent: i32) {}
    /// An `alone` for a subsystem whose `hold` only holds locks.
    pub fn nothing() {}
}

/// Runs `fork` in a process whose memory no other task shares: each hook's
/// `alone` step first, no lock taken.
pub fn fork_alone(hooks: &[ForkHook], fork: &mut dyn FnMut()) {
    for h in hooks {
        (h.alone)();
    }
    fork()
}

/// Runs `fork` with the locks of every hook in `hooks` held, the first
/// hook's outermost (taken first, released last).
pub fn with_hooks_held(hooks: &[ForkHook], fork: &mut dyn FnMut()) {
    match hooks.split_first() {
        None => fork(),
        Some((h, rest)) => (h.hold)(&mut || with_hooks_held(rest, fork)),
    }
}

/// Where the calling thread's held set lives (installed by `thread`).
static HOOK: spin::Once<fn() -> Option<&'static Cell<u32>>> = spin::Once::new();

/// Installs the function that finds the calling thread's held set (None
/// before the thread has runtime state).
pub fn set_held_hook(f: fn() -> Option<&'static Cell<u32>>) {
    HOOK.call_once(|| f);
}

#[cfg(test)]
std::thread_local! {
    static TEST_HELD: &'static Cell<u32> = std::boxed::Box::leak(std::boxed::Box::new(Cell::new(0)));
}

fn held() -> Option<&'static Cell<u32>> {
    #[cfg(test)]
    {
        Some(TEST_HELD.with(|c| *c))
    }
    #[cfg(not(test))]
    {
        HOOK.get().and_then(|f| f())
    }
}

/// Pairs (held, wanted) already reported, a bit each (16 x 16).
static REPORTED: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
/// Violations seen (for tests).
static VIOLATIONS: AtomicU64 = AtomicU64::new(0);

fn acquire(rank: Rank) {
    let Some(h) = held() else { return };
    let set = h.get();
    let bad = set & !(rank.bit() - 1) & !1; // held ranks >= this one
    if bad != 0 {
        VIOLATIONS.fetch_add(1, Ordering::Relaxed);
        let worst = Rank::ALL
            .iter()
            .rev()
            .find(|r| bad & r.bit() != 0)
            .copied()
            .unwrap_or(rank);
        let pair = (worst as u8 as usize) * 16 + rank as u8 as usize;
        let bit = 1u64 << (pair % 64);
        if REPORTED[pair / 64].fetch_or(bit, Ordering::Relaxed) & bit == 0 {
            crate::log!(
                Error,
                "lock order violation: taking the {} lock while holding the {} lock (a possible deadlock; docs/ARCHITECTURE.md, \"Locks\")",
                rank.name(),
                worst.name()
            );
        }
    }
    h.set(set | rank.bit());
}

fn release(rank: Rank) {
    if let Some(h) = held() {
        h.set(h.get() & !rank.bit());
    }
}

/// How many violations this process has seen.
pub fn violations() -> u64 {
    VIOLATIONS.load(Ordering::Relaxed)
}

/// A spin lock with a rank.
pub struct Lock<T> {
    rank: Rank,
    inner: spin::Mutex<T>,
}

impl<T> Lock<T> {
    pub const fn new(rank: Rank, value: T) -> Self {
        Lock {
            rank,
            inner: spin::Mutex::new(value),
        }
    }

    /// Takes the lock (checking the order first). Spins a little, then
    /// yields the CPU between tries: a holder that was preempted (or that
    /// waits for a helper thread, as the patcher does) gets to run even
    /// when every CPU has a waiter spinning on it (2 cores, 32 threads).
    pub fn lock(&self) -> Guard<'_, T> {
        acquire(self.rank);
        loop {
            for _ in 0..128 {
                if let Some(inner) = self.inner.try_lock() {
                    return Guard {
                        rank: self.rank,
                        inner,
                    };
                }
                core::hint::spin_loop();
            }
            crate::host::sched_yield();
        }
    }
}

/// A held [`Lock`].
pub struct Guard<'a, T> {
    rank: Rank,
    inner: spin::MutexGuard<'a, T>,
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        release(self.rank);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_is_quiet_out_of_order_is_caught() {
        static A: Lock<u32> = Lock::new(Rank::Brk, 0);
        static B: Lock<u32> = Lock::new(Rank::Patch, 0);
        static C: Lock<u32> = Lock::new(Rank::Heap, 0);
        let before = violations();
        {
            let _a = A.lock();
            let _b = B.lock();
            let _c = C.lock();
        }
        {
            let _b = B.lock();
        }
        assert_eq!(violations(), before, "in-order locking flagged");
        {
            let _c = C.lock();
            let _b = B.lock(); // the fork deadlock's shape: heap, then patcher
        }
        assert_eq!(violations(), before + 1);
        {
            let _b = B.lock();
            let _b2 = A.lock();
        }
        assert_eq!(violations(), before + 2);
        // Released locks no longer count.
        {
            let _a = A.lock();
        }
        assert_eq!(violations(), before + 2);
    }
}
