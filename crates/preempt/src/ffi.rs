//! The C API (`include/preempt.h`). A `preempt_cont_t *` is the header at the
//! top of the function's stack.

use crate::engine::{self, Continuation, Outcome, RawCont, Reason};
use crate::{alloc, Error};
use core::ptr;
use libc::{c_char, c_int, c_void};

/// Opaque continuation handle (`preempt_cont_t`).
#[repr(C)]
pub struct PreemptCont {
    _opaque: [u8; 0],
}

fn to_raw(c: *mut PreemptCont) -> *mut RawCont {
    c.cast()
}

pub const PREEMPT_DONE: c_int = 0;
pub const PREEMPT_TIMEOUT: c_int = 1;
pub const PREEMPT_PAUSED: c_int = 2;
pub const PREEMPT_ENESTED: c_int = -1;
pub const PREEMPT_EINVAL: c_int = -2;
pub const PREEMPT_ENOMEM: c_int = -3;
pub const PREEMPT_ESYS: c_int = -4;
pub const PREEMPT_EPANIC: c_int = -5;
pub const PREEMPT_ENOTINFN: c_int = -6;
pub const PREEMPT_ETHREAD: c_int = -7;
pub const PREEMPT_ELIBSET: c_int = -8;

fn code_of(e: &Error) -> c_int {
    match e {
        Error::Nested => PREEMPT_ENESTED,
        Error::Panicked(_) => PREEMPT_EPANIC,
        Error::Poisoned | Error::Finished => PREEMPT_EINVAL,
        Error::NotInFunction => PREEMPT_ENOTINFN,
        Error::WrongThread => PREEMPT_ETHREAD,
        Error::Os(libc::ENOMEM) => PREEMPT_ENOMEM,
        Error::Os(_) | Error::AllocatorNotInstalled | Error::TooManyThreads => PREEMPT_ESYS,
        Error::Libset(_) => PREEMPT_ELIBSET,
    }
}

fn code_of_reason(r: Option<Reason>) -> c_int {
    match r {
        Some(Reason::Paused) => PREEMPT_PAUSED,
        _ => PREEMPT_TIMEOUT,
    }
}

/// Runs `f(arg)` for at most `timeout_us` µs (`PREEMPT_NO_TIMEOUT`: no
/// limit). Returns PREEMPT_DONE (and sets `*out` to NULL), PREEMPT_TIMEOUT or
/// PREEMPT_PAUSED (and sets `*out` to the continuation), or a negative error.
///
/// # Safety
/// `f` must be callable with `arg` on any thread-owned stack; `out` must be
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preempt_launch(
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
    timeout_us: u64,
    out: *mut *mut PreemptCont,
) -> c_int {
    let Some(f) = f else { return PREEMPT_EINVAL };
    if out.is_null() {
        return PREEMPT_EINVAL;
    }
    let arg = arg as usize;
    // SAFETY: the C caller vouches for f(arg). With libsets, a function that
    // lies in a copied library runs from the function's own copy of it.
    let r = engine::launch(
        move || unsafe {
            let f: unsafe extern "C" fn(*mut c_void) =
                core::mem::transmute(crate::libset::translate_current(f as usize));
            f(arg as *mut c_void)
        },
        timeout_us,
    );
    match r {
        Ok(Outcome::Done(())) => {
            // SAFETY: `out` is writable (checked non-null; contract).
            unsafe { *out = ptr::null_mut() };
            PREEMPT_DONE
        }
        Ok(Outcome::Pending(c)) => {
            let code = code_of_reason(c.reason());
            // SAFETY: as above.
            unsafe { *out = c.into_raw().cast() };
            code
        }
        Err(e) => {
            // SAFETY: as above.
            unsafe { *out = ptr::null_mut() };
            note_libset_error(&e);
            code_of(&e)
        }
    }
}

/// Lets `*cont` run again for at most `timeout_us` µs. On PREEMPT_DONE (and
/// on PREEMPT_EPANIC) the continuation is released and `*cont` set to NULL.
///
/// # Safety
/// `cont` points at a handle from `preempt_launch`/`preempt_resume` that was
/// not cancelled.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preempt_resume(cont: *mut *mut PreemptCont, timeout_us: u64) -> c_int {
    // SAFETY: per the contract `cont`, if not null, is readable.
    if cont.is_null() || unsafe { (*cont).is_null() } {
        return PREEMPT_EINVAL;
    }
    // SAFETY: as above.
    let raw = to_raw(unsafe { *cont });
    if !engine::owned_here(raw) {
        return PREEMPT_ETHREAD;
    }
    // SAFETY: a live handle from into_raw.
    let mut c: Continuation<()> = unsafe { Continuation::from_raw(raw) };
    let r = c.resume(timeout_us);
    let code = match &r {
        Ok(Some(())) => PREEMPT_DONE,
        Ok(None) => code_of_reason(c.reason()),
        Err(e) => code_of(e),
    };
    let next = if c.reason().is_some() {
        c.into_raw().cast()
    } else {
        ptr::null_mut()
    };
    // SAFETY: `cont` is writable per the contract.
    unsafe { *cont = next };
    code
}

/// Discards a continuation: its stack returns to the pool and the blocks its
/// function got from `preempt_malloc` & co. and did not free are freed.
///
/// # Safety
/// `cont` is a live handle; nothing refers to the function's stack or to
/// those blocks any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preempt_cancel(cont: *mut PreemptCont) -> c_int {
    if cont.is_null() {
        return PREEMPT_EINVAL;
    }
    let raw = to_raw(cont);
    if !engine::owned_here(raw) {
        return PREEMPT_ETHREAD;
    }
    // SAFETY: a live handle, on its own thread; the contract is cancel's.
    unsafe { Continuation::<()>::from_raw(raw).cancel() };
    0
}

/// Yields from inside a preemptible function to its caller, which gets
/// PREEMPT_PAUSED. Returns 0 when resumed, PREEMPT_ENOTINFN outside one.
#[unsafe(no_mangle)]
pub extern "C" fn preempt_pause() -> c_int {
    match engine::pause() {
        Ok(()) => 0,
        Err(e) => code_of(&e),
    }
}

/// Whether the caller runs inside a preemptible function.
#[unsafe(no_mangle)]
pub extern "C" fn preempt_in_function() -> c_int {
    c_int::from(engine::in_preemptible())
}

/// Enters a non-preemptible region (nestable).
#[unsafe(no_mangle)]
pub extern "C" fn preempt_np_enter() {
    let _ = engine::np_enter();
}

/// Leaves a non-preemptible region; a deferred preemption happens here.
#[unsafe(no_mangle)]
pub extern "C" fn preempt_np_exit() {
    engine::np_exit_c();
}

/// `malloc`, non-preemptible and tracked (freed by `preempt_cancel`).
#[unsafe(no_mangle)]
pub extern "C" fn preempt_malloc(size: usize) -> *mut c_void {
    alloc::c_malloc(size).cast()
}

/// `calloc` through the hooks.
#[unsafe(no_mangle)]
pub extern "C" fn preempt_calloc(n: usize, size: usize) -> *mut c_void {
    alloc::c_calloc(n, size).cast()
}

/// `realloc` through the hooks.
///
/// # Safety
/// `p` is NULL or a live block from the hooks.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preempt_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { alloc::c_realloc(p.cast(), size).cast() }
}

/// `free` through the hooks.
///
/// # Safety
/// `p` is NULL or a live block from the hooks.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preempt_free(p: *mut c_void) {
    // SAFETY: forwarded contract.
    unsafe { alloc::c_free(p.cast()) }
}

/// Counters, as in `preempt::Stats`.
#[repr(C)]
pub struct PreemptStats {
    pub launches: u64,
    pub timeouts: u64,
    pub deferred: u64,
    pub expired_early: u64,
    pub cancels: u64,
    pub freed_on_cancel: u64,
    pub leaked: u64,
    pub pooled_stacks: u64,
}

/// Fills `*out` with the process-wide counters.
///
/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preempt_stats(out: *mut PreemptStats) {
    if out.is_null() {
        return;
    }
    let s = engine::stats();
    // SAFETY: writable per the contract.
    unsafe {
        *out = PreemptStats {
            launches: s.launches,
            timeouts: s.timeouts,
            deferred: s.deferred,
            expired_early: s.expired_early,
            cancels: s.cancels,
            freed_on_cancel: s.freed_on_cancel,
            leaked: s.leaked,
            pooled_stacks: s.pooled_stacks as u64,
        }
    }
}

/// The signal number the timers use.
#[unsafe(no_mangle)]
pub extern "C" fn preempt_signal() -> c_int {
    engine::signal_number()
}

/// A static string describing a return code.
#[unsafe(no_mangle)]
pub extern "C" fn preempt_strerror(code: c_int) -> *const c_char {
    let s: &'static [u8] = match code {
        PREEMPT_DONE => b"done\0",
        PREEMPT_TIMEOUT => b"timed out\0",
        PREEMPT_PAUSED => b"paused\0",
        PREEMPT_ENESTED => b"cannot launch or resume inside a preemptible function\0",
        PREEMPT_EINVAL => b"invalid argument\0",
        PREEMPT_ENOMEM => b"out of memory\0",
        PREEMPT_ESYS => b"system call failed\0",
        PREEMPT_EPANIC => b"the function panicked\0",
        PREEMPT_ENOTINFN => b"not inside a preemptible function\0",
        PREEMPT_ETHREAD => b"continuation belongs to another thread\0",
        PREEMPT_ELIBSET => b"library copies (libsets) could not be made or used\0",
        _ => b"unknown code\0",
    };
    s.as_ptr().cast()
}

/// `struct preempt_libsets_info`.
#[repr(C)]
pub struct PreemptLibsetsInfo {
    pub libraries: u64,
    pub stubs: u64,
    pub shared: u64,
    pub created: u64,
    pub in_use: u64,
    pub bytes_per_libset: u64,
}

thread_local! {
    static LIBSET_ERROR: core::cell::RefCell<std::ffi::CString> =
        core::cell::RefCell::new(std::ffi::CString::default());
}

/// Turns libsets on (see `preempt::libset::enable`). `shared`: NULL or a
/// NULL-terminated array of more function names to keep shared. Returns 0
/// or PREEMPT_ELIBSET / PREEMPT_ESYS (`preempt_libsets_error` says why).
///
/// # Safety
/// `shared` is NULL or a NULL-terminated array of C strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preempt_libsets_enable(shared: *const *const c_char) -> c_int {
    let mut names: Vec<String> = Vec::new();
    if !shared.is_null() {
        let mut p = shared;
        // SAFETY: per the contract.
        unsafe {
            while !(*p).is_null() {
                names.push(std::ffi::CStr::from_ptr(*p).to_string_lossy().into_owned());
                p = p.add(1);
            }
        }
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    match crate::libset::enable(&refs) {
        Ok(_) => 0,
        Err(e) => {
            note_libset_error(&e);
            code_of(&e)
        }
    }
}

fn note_libset_error(e: &Error) {
    if let Error::Libset(m) = e {
        let msg = std::ffi::CString::new(m.replace('\0', " ")).unwrap_or_default();
        LIBSET_ERROR.with(|m| *m.borrow_mut() = msg);
    }
}

/// Why this thread's last `preempt_libsets_enable`, or `preempt_launch`
/// that returned PREEMPT_ELIBSET, failed ("" if none). Valid until the next
/// such failure on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn preempt_libsets_error() -> *const c_char {
    LIBSET_ERROR.with(|m| m.borrow().as_ptr())
}

/// Fills `*out` (0 if libsets are not enabled). Returns 1 if they are.
///
/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn preempt_libsets_info(out: *mut PreemptLibsetsInfo) -> c_int {
    let i = crate::libset::info();
    if !out.is_null() {
        let v = match &i {
            Some(i) => PreemptLibsetsInfo {
                libraries: i.libraries.len() as u64,
                stubs: i.stubs as u64,
                shared: i.shared as u64,
                created: i.created as u64,
                in_use: i.in_use as u64,
                bytes_per_libset: i.bytes_per_libset as u64,
            },
            None => PreemptLibsetsInfo {
                libraries: 0,
                stubs: 0,
                shared: 0,
                created: 0,
                in_use: 0,
                bytes_per_libset: 0,
            },
        };
        // SAFETY: writable per the contract.
        unsafe { *out = v };
    }
    i.is_some() as c_int
}

/// The libset the calling thread runs in (0: the original libraries).
#[unsafe(no_mangle)]
pub extern "C" fn preempt_libset_current() -> c_int {
    crate::libset::current() as c_int
}
