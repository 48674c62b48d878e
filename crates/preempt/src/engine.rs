//! The core: per-thread state, continuations, the slice loop, `pause`, the
//! non-preemptible-region counter and the timer signal handler.
//!
//! # Contexts and the protocol between them
//!
//! A thread runs one of two contexts at a time: the *caller* (the code that
//! called `launch`/`resume`) or the *function* (on its own stack). `in_fn` is
//! true from just before the caller switches into the function until just
//! after it is back. `np` counts nested non-preemptible regions of whatever
//! runs; every switch happens with `np >= 1`, so the handler never preempts
//! in the middle of bookkeeping:
//!
//! * caller → function (`run_slice`): np := 1, arm the timer, in_fn := true,
//!   switch. The function side then restores its own np (`after_switch_in`:
//!   0 for a fresh or preempted function, whatever it was for a paused one)
//!   and, if np is 0 and a timer expiry was deferred meanwhile (`pending`),
//!   yields again at once.
//! * function → caller (`suspend`): np := 1 first, then switch. The caller
//!   sets in_fn := false, disarms the timer, clears `pending`, and restores
//!   its own np.
//!
//! # Preemption
//!
//! The timer is a per-thread one-shot POSIX timer that sends one real-time
//! signal to this thread only (`SIGEV_THREAD_ID`). The handler runs on the
//! interrupted stack (no `SA_ONSTACK`) with the signal left unblocked
//! (`SA_NODEFER`). If the function is running (`in_fn`, `np == 0`, the
//! interrupted stack pointer is inside the function's stack, and no panic is
//! unwinding), the handler switches to the caller *from inside the handler*.
//! The kernel's signal frame, which holds the function's complete user state
//! (general registers, flags, and the whole XSAVE area: x87/SSE/AVX/AVX-512
//! and anything else the kernel enables), stays on the function's stack
//! below the handler frame. `resume` switches back into the handler, which
//! returns, and `rt_sigreturn` restores everything exactly. Otherwise the
//! handler only sets `pending`; the end of the region (`np_leave`) takes the
//! preemption.

use crate::alloc::{self, Tracker};
use crate::stack::{self, Stack};
use crate::{arch, libset, sys, Error};
use core::cell::Cell;
use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::{
    compiler_fence, AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering,
};
use libc::{c_int, c_void, siginfo_t};

/// Threads that may use preemptible functions at the same time.
pub(crate) const MAX_THREADS: usize = 2048;
/// Tag in the high half of the timer's `si_value`.
const MAGIC: u64 = 0x5052_4550;
/// Timeout value meaning "no timer".
pub const NO_TIMEOUT: u64 = u64::MAX;
/// Closures larger than this are boxed rather than copied onto the stack.
const MAX_INLINE_CLOSURE: usize = 16 * 1024;

const R_DONE: u8 = 0;
const R_PAUSED: u8 = 1;
const R_TIMEOUT: u8 = 2;

const RELAXED: Ordering = Ordering::Relaxed;

/// Per-thread state. Lives in a static array so the signal handler can find
/// it from the timer's `si_value` without touching TLS, and can tell a
/// foreign signal from ours without dereferencing foreign pointers.
#[repr(C, align(64))]
pub(crate) struct ThreadState {
    claimed: AtomicBool,
    in_fn: AtomicBool,
    pending: AtomicBool,
    reason: AtomicU8,
    np: AtomicU32,
    timer: AtomicI32,
    generation: AtomicU32,
    current: AtomicPtr<RawCont>,
    caller_sp: AtomicPtr<u8>,
    launches: AtomicU64,
    timeouts: AtomicU64,
    deferred: AtomicU64,
    expired_early: AtomicU64,
    cancels: AtomicU64,
    freed: AtomicU64,
    /// CLOCK_MONOTONIC time (ns) the timer was armed to expire at, or 0
    /// (not armed by a slice, or its expiry already measured).
    expiry_ns: AtomicU64,
}

/// How early (ns) slices arm their timer: an estimate of the platform's
/// timer delivery latency (its 10th percentile, tracked process-wide from
/// every expiry the handler sees), so that a budget ends close to when it
/// should rather than that latency late. Only for budgets at least twice
/// the lead; never more than [`MAX_LEAD_NS`].
static LEAD_NS: AtomicU64 = AtomicU64::new(0);
/// Upper bound of the lead.
const MAX_LEAD_NS: u64 = 200_000;
/// Step of the quantile tracker (ns): the estimate rises by this much after
/// an expiry later than it and falls by 9 times as much after one earlier,
/// which settles where 10% of the latencies are below it.
const LEAD_STEP_NS: u64 = 200;

/// Feeds one measured timer delivery latency to the lead estimate.
fn note_latency(latency_ns: u64) {
    let q = LEAD_NS.load(RELAXED);
    let next = if latency_ns > q {
        (q + LEAD_STEP_NS).min(MAX_LEAD_NS)
    } else {
        q.saturating_sub(9 * LEAD_STEP_NS)
    };
    LEAD_NS.store(next, RELAXED);
}

/// The current lead (ns): how much earlier than its budget a slice arms its
/// timer, to make up for the platform's timer delivery latency (see
/// docs/PREEMPT.md, "Timers").
pub fn timer_lead_ns() -> u64 {
    LEAD_NS.load(RELAXED)
}

impl ThreadState {
    const fn new() -> Self {
        ThreadState {
            claimed: AtomicBool::new(false),
            in_fn: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            reason: AtomicU8::new(0),
            np: AtomicU32::new(0),
            timer: AtomicI32::new(-1),
            generation: AtomicU32::new(0),
            current: AtomicPtr::new(ptr::null_mut()),
            caller_sp: AtomicPtr::new(ptr::null_mut()),
            launches: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            deferred: AtomicU64::new(0),
            expired_early: AtomicU64::new(0),
            cancels: AtomicU64::new(0),
            freed: AtomicU64::new(0),
            expiry_ns: AtomicU64::new(0),
        }
    }
}

static SLOTS: [ThreadState; MAX_THREADS] = [const { ThreadState::new() }; MAX_THREADS];
static LEAKED: AtomicU64 = AtomicU64::new(0);
static SIGNO: AtomicI32 = AtomicI32::new(0);

/// Counter bump for counters only this thread (and its own signal handler,
/// under the np protocol) writes.
#[inline]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(RELAXED) + n, RELAXED);
}

thread_local! {
    /// Index + 1 of this thread's slot in SLOTS, 0 if none.
    static STATE: Cell<usize> = const { Cell::new(0) };
    /// Releases the slot (and deletes the timer) when the thread exits.
    static RELEASE: Release = const { Release };
}

struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        let i = STATE.replace(0);
        if i != 0 {
            let st = &SLOTS[i - 1];
            let t = st.timer.swap(-1, RELAXED);
            if t >= 0 {
                sys::timer_delete(t);
            }
            st.claimed.store(false, Ordering::Release);
        }
    }
}

/// The real-time signal the timers send: `SIGRTMAX - 1`.
pub fn signal_number() -> c_int {
    let s = SIGNO.load(RELAXED);
    if s != 0 {
        return s;
    }
    let s = libc::SIGRTMAX() - 1;
    SIGNO.store(s, RELAXED);
    s
}

#[inline]
pub(crate) fn state_opt() -> Option<&'static ThreadState> {
    match STATE.get() {
        0 => None,
        i => Some(&SLOTS[i - 1]),
    }
}

/// This thread's state, created (slot, timer, signal handler) on first use.
pub(crate) fn thread_state() -> Result<&'static ThreadState, Error> {
    match state_opt() {
        Some(st) => Ok(st),
        None => init_thread(),
    }
}

#[cold]
fn init_thread() -> Result<&'static ThreadState, Error> {
    let signo = signal_number();
    sys::install(signo, on_signal).map_err(Error::Os)?;
    static ATFORK: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers fork handlers that only take/release the stack
    // pool's lock, make system calls and touch atomics.
    ATFORK.call_once(|| unsafe {
        libc::pthread_atfork(
            Some(stack::atfork_prepare),
            Some(stack::atfork_release),
            Some(atfork_child),
        );
    });
    let idx = SLOTS
        .iter()
        .position(|s| {
            !s.claimed.load(RELAXED)
                && s.claimed
                    .compare_exchange(false, true, Ordering::Acquire, RELAXED)
                    .is_ok()
        })
        .ok_or(Error::TooManyThreads)?;
    let st = &SLOTS[idx];
    st.in_fn.store(false, RELAXED);
    st.pending.store(false, RELAXED);
    st.np.store(0, RELAXED);
    st.current.store(ptr::null_mut(), RELAXED);
    match sys::timer_create(sys::gettid(), signo, (MAGIC << 32) | idx as u64) {
        Ok(t) => st.timer.store(t, RELAXED),
        Err(e) => {
            st.claimed.store(false, Ordering::Release);
            return Err(Error::Os(e));
        }
    }
    st.generation.fetch_add(1, RELAXED);
    STATE.set(idx + 1);
    RELEASE.with(|_| {});
    Ok(st)
}

/// In a forked child only the forking thread exists, and no timer: give
/// that thread a new timer and free the other threads' slots.
extern "C" fn atfork_child() {
    stack::atfork_release();
    let mine = STATE.get();
    let signo = signal_number();
    for (i, st) in SLOTS.iter().enumerate() {
        if i + 1 == mine {
            let t = sys::timer_create(sys::gettid(), signo, (MAGIC << 32) | i as u64).unwrap_or(-1);
            st.timer.store(t, RELAXED);
        } else if st.claimed.load(RELAXED) {
            st.timer.store(-1, RELAXED);
            st.generation.fetch_add(1, RELAXED);
            st.claimed.store(false, Ordering::Release);
        }
    }
}

// ---------------------------------------------------------------------------
// Non-preemptible regions

/// Enters a non-preemptible region. Returns the state to pass to
/// [`np_leave`] (None on a thread that never launched: nothing to defer).
#[inline]
pub(crate) fn np_enter() -> Option<&'static ThreadState> {
    let st = state_opt()?;
    st.np.store(st.np.load(RELAXED) + 1, RELAXED);
    compiler_fence(Ordering::SeqCst);
    Some(st)
}

/// Leaves a region; takes a preemption deferred during it, if the region
/// was the outermost one in a running preemptible function.
#[inline]
pub(crate) fn np_leave(st: Option<&'static ThreadState>) {
    let Some(st) = st else { return };
    compiler_fence(Ordering::SeqCst);
    let n = st.np.load(RELAXED).saturating_sub(1);
    st.np.store(n, RELAXED);
    compiler_fence(Ordering::SeqCst);
    if n == 0 && st.pending.load(RELAXED) && st.in_fn.load(RELAXED) {
        let raw = st.current.load(RELAXED);
        // SAFETY: in_fn with np == 0 means the function is what runs, and
        // `current` is its continuation.
        unsafe { take_pending(st, raw, true) };
    }
}

/// The tracker a block allocated now belongs to: the running preemptible
/// function's, unless none runs or the allocation is inside a
/// non-preemptible region of the function (np > 1: the allocator's own
/// region is the 1).
#[inline]
pub(crate) fn tracker_for_fresh_block(st: &'static ThreadState) -> Option<&'static Tracker> {
    if !st.in_fn.load(RELAXED) || st.np.load(RELAXED) != 1 {
        return None;
    }
    let raw = st.current.load(RELAXED);
    if raw.is_null() {
        return None;
    }
    // SAFETY: `current` points at the running function's RawCont, which
    // lives until the function is finished or cancelled by this thread.
    Some(unsafe { (*raw).stack.tracker })
}

// ---------------------------------------------------------------------------
// Continuations

/// The header at the top of a function's stack.
#[repr(C)]
pub(crate) struct RawCont {
    /// Saved stack pointer while suspended.
    sp: *mut u8,
    stack: Stack,
    owner: &'static ThreadState,
    generation: u32,
    /// The function's np depth while suspended.
    np_saved: u32,
    /// Why it is suspended (R_PAUSED / R_TIMEOUT).
    reason: u8,
    /// Where `entry` writes `Option<thread::Result<T>>`.
    out: *mut u8,
    closure: *mut u8,
    /// Its libset (0: none, libsets not enabled).
    libset: u32,
    /// Return addresses of the shared calls it is inside (libset::dispatch).
    shared_depth: u32,
    shared_ret: [usize; SHARED_DEPTH],
    /// Whether the timer handler runs its tail on this stack (resumed into,
    /// not yet returned): see `on_timer`.
    tail: AtomicBool,
}

/// Shared calls (libsets) nested inside one another, at most.
const SHARED_DEPTH: usize = 32;

/// Why a function is not running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its time budget ran out.
    Timeout,
    /// It called [`pause`](crate::pause).
    Paused,
}

fn reason_of(r: u8) -> Reason {
    if r == R_PAUSED {
        Reason::Paused
    } else {
        Reason::Timeout
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ContState {
    Pending(Reason),
    Finished,
    Poisoned,
}

/// A preemptible function that has not finished: resume it with
/// [`resume`](crate::resume), discard it with [`cancel`](crate::cancel).
///
/// It is neither `Send` nor `Sync`: the suspended function may hold
/// references into this thread's thread-local storage, so it must go on
/// running on this thread. Dropping a continuation that has not finished
/// does *not* free its stack (that would be `cancel`, which is `unsafe`): the
/// stack and what the function allocated are leaked, and counted in
/// [`Stats::leaked`].
pub struct Continuation<T> {
    raw: *mut RawCont,
    state: ContState,
    _t: PhantomData<*mut T>,
}

impl<T> core::fmt::Debug for Continuation<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Continuation")
            .field("state", &self.state)
            .finish()
    }
}

/// What `launch` gives back.
#[derive(Debug)]
pub enum Outcome<T> {
    /// The function returned this within its budget.
    Done(T),
    /// It timed out or paused; its continuation.
    Pending(Continuation<T>),
}

enum Step<T> {
    Done(T),
    Pending(Reason),
}

/// Starts `f` on a stack of its own and lets it run for at most
/// `timeout_us` microseconds ([`NO_TIMEOUT`]: no limit). Returns its result
/// if it finished, or its continuation if it timed out or paused. A panic in
/// `f` comes back as [`Error::Panicked`] (when built with `panic = "unwind"`;
/// with `panic = "abort"` it aborts the process, as any panic does).
pub fn launch<F, T>(f: F, timeout_us: u64) -> Result<Outcome<T>, Error>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    if core::mem::size_of::<F>() > MAX_INLINE_CLOSURE || core::mem::align_of::<F>() > 1024 {
        launch_inline(Box::new(f), timeout_us)
    } else {
        launch_inline(f, timeout_us)
    }
}

fn launch_inline<F, T>(f: F, timeout_us: u64) -> Result<Outcome<T>, Error>
where
    F: FnOnce() -> T + 'static,
    T: 'static,
{
    let st = thread_state()?;
    if st.in_fn.load(RELAXED) {
        return Err(Error::Nested);
    }
    if !alloc::wrapper_seen() {
        drop(core::hint::black_box(Box::new(0u8)));
        if !alloc::wrapper_seen() {
            return Err(Error::AllocatorNotInstalled);
        }
    }
    let libset = if libset::enabled() {
        libset::acquire()?
    } else {
        0
    };
    let stack = match stack::get() {
        Ok(s) => s,
        Err(e) => {
            libset::release(libset, false);
            return Err(e);
        }
    };
    bump(&st.launches, 1);
    // SAFETY: `stack` is unused; new_cont lays out the closure, the header
    // and the first frame at its top.
    let raw = unsafe { new_cont::<F, T>(st, stack, f) };
    // SAFETY: `raw` is the fresh header.
    unsafe { (*raw).libset = libset };
    // SAFETY: `raw` is a fresh continuation of this thread.
    match unsafe { drive::<T>(st, raw, timeout_us) } {
        Ok(Step::Done(v)) => Ok(Outcome::Done(v)),
        Ok(Step::Pending(r)) => Ok(Outcome::Pending(Continuation {
            raw,
            state: ContState::Pending(r),
            _t: PhantomData,
        })),
        Err(Error::Os(e)) => {
            // The timer could not be armed: the function never ran.
            // SAFETY: the closure is still in place, unread, and nothing runs
            // on the stack.
            unsafe {
                ptr::drop_in_place((*raw).closure.cast::<F>());
                stack::put(ptr::read(&(*raw).stack));
            }
            libset::release(libset, false);
            Err(Error::Os(e))
        }
        Err(e) => Err(e),
    }
}

/// # Safety
/// `stack` must be unused.
unsafe fn new_cont<F, T>(st: &'static ThreadState, stack: Stack, f: F) -> *mut RawCont
where
    F: FnOnce() -> T,
{
    let top = stack.top() as usize;
    let raw_addr = (top - core::mem::size_of::<RawCont>()) & !63;
    let clo_align = core::mem::align_of::<F>().max(16);
    let clo_addr = (raw_addr - core::mem::size_of::<F>()) & !(clo_align - 1);
    let frame_top = clo_addr & !15;
    let raw = raw_addr as *mut RawCont;
    // SAFETY: all three regions lie in the top MAX_INLINE_CLOSURE + 2 KiB of
    // an unused, writable stack, and do not overlap.
    unsafe {
        let sp = arch::init_frame(
            frame_top as *mut u8,
            entry::<F, T>,
            raw.cast(),
            arch::fpu_control(),
        );
        ptr::write(clo_addr as *mut F, f);
        ptr::write(
            raw,
            RawCont {
                sp,
                stack,
                owner: st,
                generation: st.generation.load(RELAXED),
                np_saved: 0,
                reason: R_PAUSED,
                out: ptr::null_mut(),
                closure: clo_addr as *mut u8,
                libset: 0,
                shared_depth: 0,
                shared_ret: [0; SHARED_DEPTH],
                tail: AtomicBool::new(false),
            },
        );
    }
    raw
}

/// The first function run on a new stack.
///
/// # Safety
/// Only entered through the frame made by `new_cont`.
unsafe extern "C" fn entry<F, T>(raw: *mut u8) -> !
where
    F: FnOnce() -> T,
{
    let raw = raw.cast::<RawCont>();
    // SAFETY: `raw` is this function's header; the closure was written by
    // new_cont and is read exactly once; `out` was set by run_slice to a live
    // `Option<thread::Result<T>>` in the caller's frame.
    unsafe {
        let st = (*raw).owner;
        after_switch_in(st, raw);
        let f = ptr::read((*raw).closure.cast::<F>());
        #[cfg(panic = "unwind")]
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        #[cfg(not(panic = "unwind"))]
        let r: std::thread::Result<T> = Ok(f());
        st.np.store(1, RELAXED);
        compiler_fence(Ordering::SeqCst);
        ptr::write((*raw).out.cast::<Option<std::thread::Result<T>>>(), Some(r));
        suspend(st, raw, R_DONE);
    }
    // A finished function is never switched to again.
    std::process::abort()
}

/// Runs the function once and turns the slice's end into a Step.
///
/// # Safety
/// `raw` is a live, suspended continuation of `st`'s thread, and this is that
/// thread, not inside a preemptible function.
unsafe fn drive<T>(
    st: &'static ThreadState,
    raw: *mut RawCont,
    timeout_us: u64,
) -> Result<Step<T>, Error> {
    let mut slot: Option<std::thread::Result<T>> = None;
    // SAFETY: per the contract; `slot` outlives the slice.
    let reason = unsafe {
        run_slice(
            st,
            raw,
            (&mut slot as *mut Option<std::thread::Result<T>>).cast(),
            timeout_us,
        )?
    };
    if reason != R_DONE {
        return Ok(Step::Pending(reason_of(reason)));
    }
    // SAFETY: the function has returned to `entry`, which wrote `slot` and
    // left nothing on the stack that needs dropping.
    unsafe { finish(raw) };
    match slot {
        Some(Ok(v)) => Ok(Step::Done(v)),
        Some(Err(p)) => Err(Error::Panicked(p)),
        None => std::process::abort(),
    }
}

/// Caller side of one slice: switch into the function with the timer armed
/// and come back when it finishes, pauses or times out. Returns the reason.
///
/// # Safety
/// As for [`drive`]; `out` points at the `Option<thread::Result<T>>` the
/// function's `entry` expects.
unsafe fn run_slice(
    st: &'static ThreadState,
    raw: *mut RawCont,
    out: *mut u8,
    timeout_us: u64,
) -> Result<u8, Error> {
    let saved_np = st.np.load(RELAXED);
    st.np.store(1, RELAXED);
    compiler_fence(Ordering::SeqCst);
    st.pending.store(false, RELAXED);
    let timer = st.timer.load(RELAXED);
    let armed = timeout_us != NO_TIMEOUT;
    if armed {
        let budget = timeout_us.saturating_mul(1000);
        // Budgets shorter than twice the lead are armed as they are: they
        // end about that latency late either way, and arming them earlier
        // only makes them expire before the function gets to run.
        let lead = LEAD_NS.load(RELAXED);
        let ns = if lead <= budget / 2 {
            budget - lead
        } else {
            budget
        };
        st.expiry_ns
            .store(sys::monotonic_ns().saturating_add(ns), RELAXED);
        if let Err(e) = sys::timer_arm(timer, ns) {
            st.expiry_ns.store(0, RELAXED);
            st.np.store(saved_np, RELAXED);
            return Err(Error::Os(e));
        }
    }
    // SAFETY: `raw` is live and suspended (contract); nothing else runs on
    // its stack, and `sp` is where its context was saved.
    unsafe {
        (*raw).out = out;
        st.current.store(raw, RELAXED);
        if (*raw).libset != 0 {
            libset::enter((*raw).libset);
        }
        compiler_fence(Ordering::SeqCst);
        st.in_fn.store(true, RELAXED);
        arch::switch(st.caller_sp.as_ptr(), (*raw).sp);
    }
    compiler_fence(Ordering::SeqCst);
    // SAFETY: `raw` is still live (a finished function's header is read
    // before its stack is recycled, in `finish`).
    let k = unsafe { (*raw).libset };
    if k != 0 {
        libset::leave(k);
    }
    st.in_fn.store(false, RELAXED);
    let reason = st.reason.load(RELAXED);
    if armed {
        // Any expiry that happened before this call is delivered (and found
        // `in_fn` false) by the time it returns.
        sys::timer_disarm(timer);
        st.expiry_ns.store(0, RELAXED);
    }
    st.pending.store(false, RELAXED);
    st.current.store(ptr::null_mut(), RELAXED);
    compiler_fence(Ordering::SeqCst);
    st.np.store(saved_np, RELAXED);
    Ok(reason)
}

/// Function side: switch to the caller with np already raised.
///
/// # Safety
/// Called on `raw`'s stack, by the function, with `st.np >= 1`.
#[inline]
unsafe fn suspend(st: &'static ThreadState, raw: *mut RawCont, reason: u8) {
    // SAFETY: per the contract; the caller's context was saved in
    // `caller_sp` by run_slice and has not been resumed since.
    unsafe {
        (*raw).reason = reason;
        st.reason.store(reason, RELAXED);
        compiler_fence(Ordering::SeqCst);
        arch::switch(ptr::addr_of_mut!((*raw).sp), st.caller_sp.load(RELAXED));
    }
}

/// Function side, after a switch into it: restore the function's np and
/// take a preemption deferred meanwhile.
///
/// # Safety
/// Called on `raw`'s stack by the function.
#[inline]
unsafe fn after_switch_in(st: &'static ThreadState, raw: *mut RawCont) {
    compiler_fence(Ordering::SeqCst);
    // SAFETY: `raw` is the running function's header.
    let np = unsafe { (*raw).np_saved };
    st.np.store(np, RELAXED);
    compiler_fence(Ordering::SeqCst);
    if np == 0 {
        // SAFETY: as above.
        unsafe { take_pending(st, raw, false) };
    }
}

/// Yields as timed out while a deferred expiry is pending: at the end of a
/// non-preemptible region (`region`), or when the function is switched to
/// and its budget already ran out (the timer fired during the caller's
/// bookkeeping, e.g. a budget shorter than arming the timer takes).
///
/// # Safety
/// Called on `raw`'s stack by the function, with np == 0.
unsafe fn take_pending(st: &'static ThreadState, raw: *mut RawCont, mut region: bool) {
    while st.pending.load(RELAXED) {
        st.np.store(1, RELAXED);
        compiler_fence(Ordering::SeqCst);
        st.pending.store(false, RELAXED);
        bump(
            if region {
                &st.deferred
            } else {
                &st.expired_early
            },
            1,
        );
        region = false;
        // SAFETY: per the contract; np is now 1.
        unsafe {
            (*raw).np_saved = 0;
            suspend(st, raw, R_TIMEOUT);
        }
        compiler_fence(Ordering::SeqCst);
        st.np.store(0, RELAXED);
        compiler_fence(Ordering::SeqCst);
    }
}

/// Recycles the stack of a function that has finished (returned or
/// panicked); what it allocated and did not free is handed to its caller.
///
/// # Safety
/// The function has finished; `raw` is not used afterwards.
unsafe fn finish(raw: *mut RawCont) {
    // SAFETY: the header is read before the stack it lives on is recycled.
    unsafe {
        let stack = ptr::read(&(*raw).stack);
        let k = (*raw).libset;
        stack.tracker.disown_all();
        stack::put(stack);
        libset::release(k, false);
    }
}

/// `pause()`: yield to the caller from inside a preemptible function.
pub fn pause() -> Result<(), Error> {
    let Some(st) = state_opt() else {
        return Err(Error::NotInFunction);
    };
    if !st.in_fn.load(RELAXED) {
        return Err(Error::NotInFunction);
    }
    let old = st.np.load(RELAXED);
    st.np.store(old + 1, RELAXED);
    compiler_fence(Ordering::SeqCst);
    let raw = st.current.load(RELAXED);
    // Only the function itself may pause, not, say, a signal handler that
    // interrupted the caller while `in_fn` is already set: check that we
    // are on the function's stack.
    let here = ptr::addr_of!(old) as usize;
    // SAFETY: with in_fn set, `current` is the header of the function
    // being run, which lives at the top of its stack.
    let on_stack = !raw.is_null()
        && unsafe { (*raw).stack.bottom() as usize <= here && here < (*raw).stack.top() as usize };
    if !on_stack {
        st.np.store(old, RELAXED);
        return Err(Error::NotInFunction);
    }
    // SAFETY: in_fn, and we are on the function's stack, so the function
    // runs and `current` is its header.
    unsafe {
        (*raw).np_saved = old;
        suspend(st, raw, R_PAUSED);
        after_switch_in(st, raw);
    }
    Ok(())
}

/// Whether the calling code runs inside a preemptible function.
pub fn in_preemptible() -> bool {
    state_opt().is_some_and(|st| st.in_fn.load(RELAXED))
}

impl<T> Continuation<T> {
    /// Why it is not running, or None once it finished or panicked.
    pub fn reason(&self) -> Option<Reason> {
        match self.state {
            ContState::Pending(r) => Some(r),
            _ => None,
        }
    }

    /// Whether the function panicked (the continuation cannot be resumed).
    pub fn is_poisoned(&self) -> bool {
        self.state == ContState::Poisoned
    }

    /// Whether the function has returned.
    pub fn is_finished(&self) -> bool {
        self.state == ContState::Finished
    }

    /// Lets the function run again for at most `timeout_us` microseconds.
    /// `Ok(Some(v))`: it returned `v`; `Ok(None)`: it timed out or paused
    /// again (see [`reason`](Self::reason)). A panic comes back as
    /// [`Error::Panicked`] and poisons the continuation.
    pub fn resume(&mut self, timeout_us: u64) -> Result<Option<T>, Error> {
        match self.state {
            ContState::Pending(_) => {}
            ContState::Finished => return Err(Error::Finished),
            ContState::Poisoned => return Err(Error::Poisoned),
        }
        let st = thread_state()?;
        if st.in_fn.load(RELAXED) {
            return Err(Error::Nested);
        }
        // SAFETY: a pending continuation's header is live.
        let (owner, generation) = unsafe { ((*self.raw).owner, (*self.raw).generation) };
        if !ptr::eq(owner, st) || generation != st.generation.load(RELAXED) {
            return Err(Error::WrongThread);
        }
        // SAFETY: pending, suspended, of this thread, which is not inside a
        // preemptible function.
        match unsafe { drive::<T>(st, self.raw, timeout_us) } {
            Ok(Step::Done(v)) => {
                self.state = ContState::Finished;
                self.raw = ptr::null_mut();
                Ok(Some(v))
            }
            Ok(Step::Pending(r)) => {
                self.state = ContState::Pending(r);
                Ok(None)
            }
            Err(Error::Panicked(p)) => {
                self.state = ContState::Poisoned;
                self.raw = ptr::null_mut();
                Err(Error::Panicked(p))
            }
            Err(e) => Err(e),
        }
    }

    /// Discards the function without running it any more: its stack goes
    /// back to the pool and the blocks it allocated through the crate's hooks
    /// (the global allocator, `preempt_malloc`) and did not free are freed.
    /// Returns how many blocks were freed. Nothing on its stack is dropped.
    /// Cancelling a finished or poisoned continuation does nothing.
    ///
    /// # Safety
    /// Nothing may refer to the function's stack or to memory it allocated
    /// and did not free: no value it handed out (through a channel, a shared
    /// collection, a raw pointer...), no reference to its locals (e.g. it
    /// must not be blocked inside `std::thread::scope` or a rendezvous
    /// channel operation, which lend stack memory to other threads). Locks it
    /// holds stay locked.
    pub unsafe fn cancel(mut self) -> usize {
        let ContState::Pending(_) = self.state else {
            return 0;
        };
        let raw = core::mem::replace(&mut self.raw, ptr::null_mut());
        self.state = ContState::Finished;
        // SAFETY: Continuation is !Send, so this is the owning thread; the
        // function is suspended (not running), and per the contract nothing
        // refers to its stack or its blocks.
        unsafe { cancel_raw(raw, true) }
    }

    /// Like [`cancel`](Self::cancel), but the blocks the function allocated
    /// are not freed, only disowned: whoever holds them may go on using and
    /// freeing them, and the rest leak. Use it when you cannot vouch for
    /// where the function's allocations went.
    ///
    /// # Safety
    /// Nothing may refer to the function's stack (see `cancel`).
    pub unsafe fn cancel_keep_heap(mut self) {
        let ContState::Pending(_) = self.state else {
            return;
        };
        let raw = core::mem::replace(&mut self.raw, ptr::null_mut());
        self.state = ContState::Finished;
        // SAFETY: as in `cancel`, with only the stack's contract.
        unsafe { cancel_raw(raw, false) };
    }

    /// The raw handle, for the C API.
    pub(crate) fn into_raw(mut self) -> *mut RawCont {
        let raw = core::mem::replace(&mut self.raw, ptr::null_mut());
        self.state = ContState::Finished;
        raw
    }

    /// # Safety
    /// `raw` came from `into_raw` and has not been turned back since.
    pub(crate) unsafe fn from_raw(raw: *mut RawCont) -> Self {
        // SAFETY: a raw handle is a live, pending continuation.
        let r = unsafe { (*raw).reason };
        Continuation {
            raw,
            state: ContState::Pending(reason_of(r)),
            _t: PhantomData,
        }
    }
}

/// # Safety
/// `raw` is a live, suspended continuation of this thread that nothing will
/// use again; see `Continuation::cancel`.
unsafe fn cancel_raw(raw: *mut RawCont, free: bool) -> usize {
    // SAFETY: the header is read before the stack it lives on is recycled.
    unsafe {
        let stack = ptr::read(&(*raw).stack);
        let owner = (*raw).owner;
        libset::release((*raw).libset, true);
        let n = if free {
            stack.tracker.free_all()
        } else {
            stack.tracker.disown_all();
            0
        };
        bump(&owner.cancels, 1);
        bump(&owner.freed, n as u64);
        stack::put(stack);
        n
    }
}

impl<T> Drop for Continuation<T> {
    fn drop(&mut self) {
        if let ContState::Pending(_) = self.state {
            // Freeing the stack of a suspended function is `cancel`'s unsafe
            // business; a plain drop leaks it.
            LEAKED.fetch_add(1, RELAXED);
        }
    }
}

/// Whether `raw`'s owner is this thread (for the C API's checks).
pub(crate) fn owned_here(raw: *mut RawCont) -> bool {
    let Some(st) = state_opt() else { return false };
    // SAFETY: the C API only passes handles it gave out, which are live.
    let (owner, generation) = unsafe { ((*raw).owner, (*raw).generation) };
    ptr::eq(owner, st) && generation == st.generation.load(RELAXED)
}

// ---------------------------------------------------------------------------
// The signal handler

extern "C" fn on_signal(signo: c_int, info: *mut siginfo_t, uc: *mut c_void) {
    let saved_errno = sys::errno();
    // SAFETY: the kernel passes a valid siginfo and ucontext.
    let tail = unsafe {
        match classify(info) {
            Some(st) => on_timer(st, uc).map(|raw| (st, raw)),
            None => {
                sys::chain(signo, info, uc);
                None
            }
        }
    };
    sys::set_errno(saved_errno);
    if let Some((st, raw)) = tail {
        // SAFETY: `uc` is this handler's frame, on `raw`'s stack; the
        // handler has nothing left to do.
        unsafe { arch::sigreturn(st.np.as_ptr(), (*raw).tail.as_ptr(), uc) }
    }
}

/// Our timer's expiry, or None for any other instance of the signal.
///
/// # Safety
/// `info` is the kernel's siginfo.
unsafe fn classify(info: *const siginfo_t) -> Option<&'static ThreadState> {
    if info.is_null() {
        return None;
    }
    // SAFETY: a kernel siginfo is 128 bytes; for SI_TIMER the timer id is
    // at offset 16 and the sigval at offset 24 (x86-64 layout).
    unsafe {
        if (*info).si_code != libc::SI_TIMER {
            return None;
        }
        let p = info.cast::<u8>();
        let timer_id = ptr::read_unaligned(p.add(16).cast::<i32>());
        let value = ptr::read_unaligned(p.add(24).cast::<u64>());
        if value >> 32 != MAGIC {
            return None;
        }
        let st = SLOTS.get((value & 0xffff_ffff) as usize)?;
        (st.claimed.load(RELAXED) && st.timer.load(RELAXED) == timer_id).then_some(st)
    }
}

/// Returns the function whose handler tail this is if the handler
/// preempted it and was resumed: the handler must then end through
/// [`arch::sigreturn`], which ends the tail's non-preemptible region.
///
/// # Safety
/// Called from the signal handler on the thread `st` belongs to.
unsafe fn on_timer(st: &'static ThreadState, uc: *mut c_void) -> Option<*mut RawCont> {
    let expiry = st.expiry_ns.swap(0, RELAXED);
    if expiry != 0 {
        note_latency(sys::monotonic_ns().saturating_sub(expiry));
    }
    let raw = st.current.load(RELAXED);
    // SAFETY: `uc` is the kernel's ucontext.
    let (rsp, rip) = unsafe {
        let g = &(*uc.cast::<libc::ucontext_t>()).uc_mcontext.gregs;
        (
            g[libc::REG_RSP as usize] as usize,
            g[libc::REG_RIP as usize] as usize,
        )
    };
    // SAFETY: while in_fn, `raw` is the running function's header.
    let in_tail = st.in_fn.load(RELAXED)
        && !raw.is_null()
        && (unsafe { (*raw).tail.load(RELAXED) } || arch::in_sigreturn(rip));
    if in_tail {
        // The tail of an earlier run of this handler, resumed into: no
        // region end will take the expiry, so poll again shortly (after
        // its rt_sigreturn).
        st.pending.store(true, RELAXED);
        let _ = sys::timer_arm(st.timer.load(RELAXED), 20_000);
        return None;
    }
    if !st.in_fn.load(RELAXED) || st.np.load(RELAXED) != 0 {
        // The caller's bookkeeping or a non-preemptible region: defer.
        st.pending.store(true, RELAXED);
        return None;
    }
    // SAFETY: `raw` is the running function's header (in_fn, np == 0).
    let on_stack = !raw.is_null()
        && unsafe { (*raw).stack.bottom() as usize <= rsp && rsp < (*raw).stack.top() as usize };
    if !on_stack || std::thread::panicking() {
        // Not on its own stack (it switched stacks itself), or unwinding a
        // panic (the unwinder takes locks and the panic count is
        // thread-wide): defer, and poll again shortly since no region end
        // will take it.
        st.pending.store(true, RELAXED);
        let _ = sys::timer_arm(st.timer.load(RELAXED), 20_000);
        return None;
    }
    st.np.store(1, RELAXED);
    compiler_fence(Ordering::SeqCst);
    st.pending.store(false, RELAXED);
    bump(&st.timeouts, 1);
    // SAFETY: the function runs on `raw`'s stack and was interrupted outside
    // any region; its full state is in the signal frame below us, which stays
    // put until resume switches back here and the handler returns.
    unsafe {
        (*raw).np_saved = 0;
        suspend(st, raw, R_TIMEOUT);
        // Resumed (np is 1, as every switch leaves it). The rest of the
        // handler runs on the function's stack, just below the kernel's
        // frame: an expiry preempting it here would put one more frame
        // (~3.5 KiB with AVX-512 state) on that stack, and a loaded
        // machine, whose timers expire late and then at once, does that
        // time after time until the stack overflows. So the tail stays a
        // non-preemptible region, marked as such (`tail`) for the handler,
        // up to the rt_sigreturn that ends it.
        (*raw).tail.store(true, RELAXED);
        compiler_fence(Ordering::SeqCst);
        tail_delay();
        while st.pending.load(RELAXED) {
            st.pending.store(false, RELAXED);
            bump(&st.expired_early, 1);
            (*raw).np_saved = 0;
            suspend(st, raw, R_TIMEOUT);
            compiler_fence(Ordering::SeqCst);
        }
    }
    Some(raw)
}

/// Test hook: how long (ns) the handler spins in its tail after a resume
/// (0: not at all). See [`delay_handler_tail_for_tests`].
static TAIL_DELAY_NS: AtomicU64 = AtomicU64::new(0);

#[inline]
fn tail_delay() {
    let ns = TAIL_DELAY_NS.load(RELAXED);
    if ns != 0 {
        let end = sys::monotonic_ns().saturating_add(ns);
        while sys::monotonic_ns() < end {
            core::hint::spin_loop();
        }
    }
}

/// For tests only: makes the timer signal's handler spin `ns` nanoseconds
/// after a preempted function is resumed into it, before it returns, so
/// that a test can make timer expiries land there (as a loaded machine
/// does now and then).
#[doc(hidden)]
pub fn delay_handler_tail_for_tests(ns: u64) {
    TAIL_DELAY_NS.store(ns, RELAXED);
}

// ---------------------------------------------------------------------------
// Statistics

/// Process-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Functions launched.
    pub launches: u64,
    /// Preemptions taken in the signal handler.
    pub timeouts: u64,
    /// Preemptions deferred to the end of a non-preemptible region and taken
    /// there.
    pub deferred: u64,
    /// Preemptions taken as soon as the function was switched to, because
    /// its budget ran out before it got to run (budgets shorter than the
    /// host's timer latency).
    pub expired_early: u64,
    /// Continuations cancelled.
    pub cancels: u64,
    /// Blocks freed by cancel.
    pub freed_on_cancel: u64,
    /// Pending continuations dropped without cancel (their stacks leaked).
    pub leaked: u64,
    /// Stacks in the pool now.
    pub pooled_stacks: usize,
}

/// Sums the per-thread counters.
pub fn stats() -> Stats {
    let mut s = Stats {
        leaked: LEAKED.load(RELAXED),
        pooled_stacks: stack::pooled(),
        ..Stats::default()
    };
    for t in SLOTS.iter() {
        s.launches += t.launches.load(RELAXED);
        s.timeouts += t.timeouts.load(RELAXED);
        s.deferred += t.deferred.load(RELAXED);
        s.expired_early += t.expired_early.load(RELAXED);
        s.cancels += t.cancels.load(RELAXED);
        s.freed_on_cancel += t.freed.load(RELAXED);
    }
    s
}

/// RAII guard for a non-preemptible region (see
/// [`nonpreemptible`](crate::nonpreemptible)).
pub struct NonPreemptible {
    st: Option<&'static ThreadState>,
    _not_send: PhantomData<*mut ()>,
}

impl NonPreemptible {
    /// Enters a region: until the guard drops, a timer expiry is deferred.
    pub fn enter() -> Self {
        NonPreemptible {
            st: np_enter(),
            _not_send: PhantomData,
        }
    }
}

impl Drop for NonPreemptible {
    fn drop(&mut self) {
        np_leave(self.st);
    }
}

/// C API helper: leave a region entered with `np_enter` on this thread.
pub(crate) fn np_exit_c() {
    if let Some(st) = state_opt() {
        if st.np.load(RELAXED) > 0 {
            np_leave(Some(st));
        }
    }
}

// ---------------------------------------------------------------------------
// Shared calls from a library copy (libset::dispatch)

thread_local! {
    /// Return addresses of shared calls made outside a preemptible function
    /// (a copy's code run by the caller: exit handlers, the final flush).
    static SHARED_TL: [Cell<usize>; SHARED_DEPTH] = const { [const { Cell::new(0) }; SHARED_DEPTH] };
    static SHARED_TL_DEPTH: Cell<usize> = const { Cell::new(0) };
}

#[cold]
fn shared_overflow() -> ! {
    let msg = b"preempt: shared calls nested too deep in a libset\n";
    // SAFETY: writes a static message to standard error.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    std::process::abort()
}

/// The running function's header, if a preemptible function is what runs.
fn running(st: Option<&'static ThreadState>) -> Option<*mut RawCont> {
    let st = st?;
    st.in_fn.load(RELAXED).then(|| st.current.load(RELAXED))
}

/// A copy calls a shared function: enter a non-preemptible region and keep
/// the return address (depth first, then the slot, so that a signal
/// handler's shared call in between uses the next slot).
pub(crate) fn shared_enter(ret: usize) {
    let st = np_enter();
    if let Some(raw) = running(st) {
        // SAFETY: the running function's header, used by this thread only.
        unsafe {
            let d = (*raw).shared_depth as usize;
            if d >= SHARED_DEPTH {
                shared_overflow();
            }
            (*raw).shared_depth = d as u32 + 1;
            compiler_fence(Ordering::SeqCst);
            (*raw).shared_ret[d] = ret;
        }
        return;
    }
    let d = SHARED_TL_DEPTH.get();
    if d >= SHARED_DEPTH {
        shared_overflow();
    }
    SHARED_TL_DEPTH.set(d + 1);
    compiler_fence(Ordering::SeqCst);
    SHARED_TL.with(|s| s[d].set(ret));
}

/// The shared function returned: the return address, after leaving the
/// region (which takes a preemption deferred meanwhile).
pub(crate) fn shared_leave() -> usize {
    let st = state_opt();
    let ret = if let Some(raw) = running(st) {
        // SAFETY: as in shared_enter.
        unsafe {
            let d = (*raw).shared_depth as usize - 1;
            let r = (*raw).shared_ret[d];
            compiler_fence(Ordering::SeqCst);
            (*raw).shared_depth = d as u32;
            r
        }
    } else {
        let d = SHARED_TL_DEPTH.get() - 1;
        let r = SHARED_TL.with(|s| s[d].get());
        compiler_fence(Ordering::SeqCst);
        SHARED_TL_DEPTH.set(d);
        r
    };
    np_leave(st);
    ret
}
