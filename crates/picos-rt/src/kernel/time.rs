//! Time: the host vDSO's clocks (`host::vdso`) answer the time queries a
//! program makes as system calls (not through its own vDSO calls).
//!
//! While the runtime calls into the vDSO, the thread's Syscall User Dispatch
//! selector is set to ALLOW, so a vDSO fallback to a real system call goes
//! to the kernel instead of trapping.
#![deny(unsafe_code)]

use crate::host::vdso;
use core::sync::atomic::Ordering;

/// Set once a thread has made `rdtsc` fault (prctl(PR_SET_TSC,
/// PR_TSC_SIGSEGV)): the vDSO's clocks read the TSC, so the runtime stops
/// calling them (the callers fall back to the host), and stops reading the
/// TSC itself.
static TSC_OFF: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// `rdtsc` faults in some thread of this process from now on.
pub fn disable_tsc() {
    TSC_OFF.store(true, Ordering::Relaxed);
}

/// Has a thread made `rdtsc` fault?
pub fn tsc_disabled() -> bool {
    TSC_OFF.load(Ordering::Relaxed)
}

fn with_syscalls_allowed<R>(f: impl FnOnce() -> R) -> R {
    let t = crate::kernel::thread::current();
    t.sud_selector.store(0, Ordering::Relaxed); // SYSCALL_DISPATCH_FILTER_ALLOW
    let r = f();
    t.sud_selector.store(1, Ordering::Relaxed); // SYSCALL_DISPATCH_FILTER_BLOCK
    r
}

/// clock_gettime through the vDSO: `Some(ret)` if the vDSO has it.
pub fn clock_gettime(clock: i32, ts: &mut [i64; 2]) -> Option<i32> {
    if tsc_disabled() {
        return None;
    }
    with_syscalls_allowed(|| vdso::clock_gettime(clock, ts))
}

/// gettimeofday through the vDSO.
pub fn gettimeofday(tv: &mut [i64; 2]) -> Option<i32> {
    if tsc_disabled() {
        return None;
    }
    with_syscalls_allowed(|| vdso::gettimeofday(tv))
}

/// time through the vDSO.
pub fn time() -> Option<i64> {
    if tsc_disabled() {
        return None;
    }
    with_syscalls_allowed(vdso::time)
}
