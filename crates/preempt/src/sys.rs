//! Thin wrappers over the system calls the crate makes: per-thread one-shot
//! timers (raw `timer_create` with `SIGEV_THREAD_ID`, so the same code works
//! on musl and glibc), stack mappings, the signal handler installation and
//! `errno`.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use libc::{c_int, c_void, siginfo_t};

/// The signal handler's type (`SA_SIGINFO`).
pub(crate) type Handler = extern "C" fn(c_int, *mut siginfo_t, *mut c_void);

pub(crate) fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

pub(crate) fn set_errno(v: c_int) {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = v }
}

pub(crate) fn gettid() -> c_int {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as c_int }
}

/// The kernel's `struct sigevent` (64 bytes).
#[repr(C)]
struct KernelSigevent {
    value: u64,
    signo: c_int,
    notify: c_int,
    tid: c_int,
    _pad: [c_int; 11],
}

const SIGEV_THREAD_ID: c_int = 4;

/// Creates a CLOCK_MONOTONIC timer that sends `signo` with `si_value =
/// value` to thread `tid` when it expires. Returns the kernel timer id.
pub(crate) fn timer_create(tid: c_int, signo: c_int, value: u64) -> Result<c_int, c_int> {
    let ev = KernelSigevent {
        value,
        signo,
        notify: SIGEV_THREAD_ID,
        tid,
        _pad: [0; 11],
    };
    let mut id: c_int = -1;
    // SAFETY: `ev` and `id` are valid for the duration of the call; the
    // kernel reads 64 bytes of `ev` and writes one int to `id`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_timer_create,
            libc::CLOCK_MONOTONIC,
            &ev as *const KernelSigevent,
            &mut id as *mut c_int,
        )
    };
    if r < 0 {
        Err(errno())
    } else {
        Ok(id)
    }
}

fn timer_set(id: c_int, ns: u64) -> Result<(), c_int> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (ns / 1_000_000_000).min(i64::MAX as u64) as _,
            tv_nsec: (ns % 1_000_000_000) as _,
        },
    };
    // SAFETY: `spec` is a valid itimerspec for the duration of the call; a
    // null old-value pointer is allowed. A raw syscall is async-signal-safe.
    let r = unsafe {
        libc::syscall(
            libc::SYS_timer_settime,
            id,
            0,
            &spec as *const libc::itimerspec,
            ptr::null_mut::<libc::itimerspec>(),
        )
    };
    if r < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// CLOCK_MONOTONIC in nanoseconds (vDSO; async-signal-safe).
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Arms the one-shot timer to expire `ns` nanoseconds from now (at least 1).
pub(crate) fn timer_arm(id: c_int, ns: u64) -> Result<(), c_int> {
    timer_set(id, ns.max(1))
}

pub(crate) fn timer_disarm(id: c_int) {
    let _ = timer_set(id, 0);
}

pub(crate) fn timer_delete(id: c_int) {
    // SAFETY: deleting a timer id this thread created; errors are ignored.
    unsafe {
        libc::syscall(libc::SYS_timer_delete, id);
    }
}

pub(crate) const PAGE: usize = 4096;

/// Maps `len` bytes (a multiple of PAGE) for a stack whose lowest page is a
/// PROT_NONE guard page. Returns the base of the mapping.
pub(crate) fn map_stack(len: usize) -> Result<*mut u8, c_int> {
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing touches no existing memory.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(errno());
    }
    // SAFETY: the first page of the mapping just made.
    if unsafe { libc::mprotect(p, PAGE, libc::PROT_NONE) } != 0 {
        let e = errno();
        // SAFETY: unmapping the mapping just made.
        unsafe { libc::munmap(p, len) };
        return Err(e);
    }
    Ok(p.cast())
}

/// # Safety
/// `base, len` must be a mapping made by [`map_stack`] that nothing uses.
pub(crate) unsafe fn unmap_stack(base: *mut u8, len: usize) {
    // SAFETY: per the contract.
    unsafe { libc::munmap(base.cast(), len) };
}

/// The disposition the signal had before [`install`], for chaining.
struct OldAction(UnsafeCell<MaybeUninit<libc::sigaction>>);
// SAFETY: written once, before OLD_READY is set (Release); read only after
// OLD_READY is seen set (Acquire).
unsafe impl Sync for OldAction {}

static OLD: OldAction = OldAction(UnsafeCell::new(MaybeUninit::uninit()));
static OLD_READY: AtomicBool = AtomicBool::new(false);
static INSTALLED: std::sync::Once = std::sync::Once::new();
static INSTALL_ERR: AtomicI32 = AtomicI32::new(0);

/// Installs `handler` for `signo` once per process (SA_SIGINFO | SA_RESTART |
/// SA_NODEFER, empty mask, no SA_ONSTACK), remembering the previous action.
pub(crate) fn install(signo: c_int, handler: Handler) -> Result<(), c_int> {
    INSTALLED.call_once(|| {
        // SAFETY: sigaction with a null new action only reads the old one
        // into OLD, which nobody reads before OLD_READY is set.
        let r = unsafe { libc::sigaction(signo, ptr::null(), (*OLD.0.get()).as_mut_ptr()) };
        if r != 0 {
            INSTALL_ERR.store(errno(), Ordering::Relaxed);
            return;
        }
        OLD_READY.store(true, Ordering::Release);
        // SAFETY: an all-zero sigaction is a valid value to fill in.
        let mut sa: libc::sigaction = unsafe { core::mem::zeroed() };
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_NODEFER;
        // SAFETY: sa_mask is a valid sigset_t inside `sa`.
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        // SAFETY: `sa` is a fully initialised sigaction.
        if unsafe { libc::sigaction(signo, &sa, ptr::null_mut()) } != 0 {
            INSTALL_ERR.store(errno(), Ordering::Relaxed);
        }
    });
    match INSTALL_ERR.load(Ordering::Relaxed) {
        0 => Ok(()),
        e => Err(e),
    }
}

/// Hands a signal that is not ours to the action that was installed before
/// ours, as the kernel would have.
///
/// # Safety
/// Must be called from the signal handler with the kernel's arguments.
pub(crate) unsafe fn chain(signo: c_int, info: *mut siginfo_t, uc: *mut c_void) {
    if !OLD_READY.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: OLD is initialised once OLD_READY is set and never written again.
    let old = unsafe { (*OLD.0.get()).assume_init_ref() };
    match old.sa_sigaction {
        libc::SIG_IGN => {}
        libc::SIG_DFL => {
            // The default action of a real-time signal is to terminate the
            // process: restore it and send the signal again.
            // SAFETY: plain system calls on this process/thread.
            unsafe {
                libc::signal(signo, libc::SIG_DFL);
                libc::syscall(libc::SYS_tgkill, libc::getpid(), gettid(), signo);
            }
        }
        f if old.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the previous owner installed this as an SA_SIGINFO
            // handler; it receives the kernel's own arguments.
            let h: Handler = unsafe { core::mem::transmute::<usize, Handler>(f) };
            h(signo, info, uc);
        }
        f => {
            // SAFETY: the previous owner installed this as a plain handler.
            let h: extern "C" fn(c_int) =
                unsafe { core::mem::transmute::<usize, extern "C" fn(c_int)>(f) };
            h(signo);
        }
    }
}
