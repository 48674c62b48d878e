//! Descriptors the runtime opens for itself, where the program never sees
//! them: briefly in the program's table when nothing of the program can run
//! meanwhile, otherwise in the table of a transient task of its own.
#![allow(unsafe_code)]

use super::errno::Errno;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Is a descriptor table of this address space shared with code of the
/// program that may run while the runtime works (another thread, or a
/// process made with CLONE_FILES)? Set before such a clone is made;
/// cleared only in a fork child made without CLONE_FILES
/// ([`note_private_fds`]).
static FDS_SHARED: AtomicBool = AtomicBool::new(false);

/// Called before a clone that shares the descriptor table (CLONE_FILES).
pub fn note_shared_fds() {
    FDS_SHARED.store(true, Ordering::Relaxed);
}

/// In a child made by fork without CLONE_FILES: its table is its own copy,
/// and the forking thread is its only one, so no program code shares it
/// any more (a multi-threaded program's fork child, which then execs, need
/// not run its exec check and code writes in transient tasks).
pub fn note_private_fds() {
    // (Written only if set: a fork child that writes a page it shares with
    // its parent copies it.)
    if FDS_SHARED.load(Ordering::Relaxed) {
        FDS_SHARED.store(false, Ordering::Relaxed);
    }
}

/// Is some descriptor table of this address space shared ([`FDS_SHARED`])?
/// Then a thread of it may write code by changing page protections
/// (`patch::protection_change`).
pub fn any_table_shared() -> bool {
    FDS_SHARED.load(Ordering::Relaxed)
}

/// Whether the calling thread's own descriptor table is shared with other
/// tasks (installed by `kernel::thread`, whose the tables are; None before
/// the thread has runtime state).
static TABLE_SHARED_HOOK: spin::Once<fn() -> Option<bool>> = spin::Once::new();

/// Installs the function that says whether the calling thread's table is
/// shared.
pub fn set_table_shared_hook(f: fn() -> Option<bool>) {
    TABLE_SHARED_HOOK.call_once(|| f);
}

/// May the runtime open a descriptor in the program's table for a moment?
/// Only while no code of the program can run until it is closed again (no
/// other thread or process shares the calling thread's table; this thread
/// is in the runtime with signals blocked): the program then never sees
/// it. Asked of the calling thread's table: a vfork child (posix_spawn)
/// of a multi-threaded program has a table of its own, though it shares
/// the memory, and so [`FDS_SHARED`], with threads that share theirs.
pub fn may_use_program_fds() -> bool {
    match TABLE_SHARED_HOOK.get().and_then(|f| f()) {
        Some(shared) => !shared,
        None => !FDS_SHARED.load(Ordering::Relaxed),
    }
}

/// Runs `f`, which opens descriptors and closes them before it returns
/// (its error is the open's), where the program never sees them: in the
/// program's table when [`may_use_program_fds`] and the table has room,
/// otherwise in a table of its own ([`with_own_fds`]).
pub fn with_transient_fds<R>(f: impl Fn() -> Result<R, Errno>) -> Result<R, Errno> {
    with_transient_fds_keeping(&[], f)
}

/// As [`with_transient_fds`], with the descriptors `keep` (the runtime's
/// own, held in the program's table) at the same numbers in a table of its
/// own ([`with_own_fds_keeping`]).
pub fn with_transient_fds_keeping<R>(
    keep: &[i32],
    f: impl Fn() -> Result<R, Errno>,
) -> Result<R, Errno> {
    if may_use_program_fds() {
        match f() {
            // The program's table is full: not a reason to give up.
            Err(Errno::EMFILE) => {}
            r => return r,
        }
    }
    with_own_fds_keeping(keep, &f).and_then(|r| r)
}

/// The first bytes (at most `N`) of a small file such as a /proc or /sys
/// one, and how many there are, read through a descriptor the program
/// never sees ([`with_transient_fds`]).
pub fn read_small_file<const N: usize>(path: &core::ffi::CStr) -> Result<([u8; N], usize), Errno> {
    with_transient_fds(|| {
        let fd =
            super::openat(super::AT_FDCWD, path, super::O_RDONLY | super::O_CLOEXEC, 0)? as i32;
        let mut buf = [0u8; N];
        let r = super::pread(fd, &mut buf, 0);
        let _ = super::close(fd);
        Ok((buf, r?.min(N)))
    })
}

/// Stack of the transient task of [`with_own_fds`].
const OWN_FDS_STACK: usize = 256 << 10;

/// Runs `f` on a transient task (a process of its own that shares our
/// memory, working directory and signal handlers: see `FLAGS` below) with
/// a descriptor table of its own, holding only 2 (for messages): what `f`
/// opens never enters the program's table (the program cannot reach it,
/// and a full table does not stop it). The calling thread waits until `f`
/// is done (CLONE_VFORK) and the task is reaped. `f` must not take a lock
/// the caller holds, and must only make host calls and touch runtime
/// memory (not ask the host for its pid); it runs with async signals
/// blocked, off the signal stack. The cost is a task's creation and exit
/// (~50 µs).
pub fn with_own_fds<F: FnOnce() -> R, R>(f: F) -> Result<R, Errno> {
    with_own_fds_keeping(&[], f)
}

/// As [`with_own_fds`], with the descriptors `keep` (the runtime's own,
/// held in the program's table: the mounts' directories) copied into the
/// new table at the same numbers.
pub fn with_own_fds_keeping<F: FnOnce() -> R, R>(keep: &[i32], f: F) -> Result<R, Errno> {
    let mut stack: Vec<u8> = Vec::with_capacity(OWN_FDS_STACK);
    let top = (stack.as_mut_ptr() as usize + OWN_FDS_STACK) & !15;
    // SAFETY: `stack` is ours, unused by anything else, and outlives the
    // call.
    let r = unsafe { own_fds_on(top, keep, f) };
    drop(stack);
    r
}

/// Stack of [`with_own_fds_in_handler`]'s task.
const HANDLER_STACK: usize = 64 << 10;

/// The stack [`with_own_fds_in_handler`] lends its task (one at a time).
struct HandlerStack(core::cell::UnsafeCell<[u8; HANDLER_STACK]>);
// SAFETY: only used by the holder of `HANDLER_STACK_BUSY`.
unsafe impl Sync for HandlerStack {}
static HANDLER_STACK_MEM: HandlerStack =
    HandlerStack(core::cell::UnsafeCell::new([0; HANDLER_STACK]));
static HANDLER_STACK_BUSY: AtomicBool = AtomicBool::new(false);

/// As [`with_transient_fds`], for a host signal handler: allocates
/// nothing. In the program's table when [`may_use_program_fds`] (the
/// handler interrupted the only code of the program that could run),
/// otherwise on a task of its own ([`with_own_fds`]) that runs on a static
/// stack; EAGAIN while another thread uses that stack.
pub fn with_transient_fds_in_handler<R>(f: impl Fn() -> Result<R, Errno>) -> Result<R, Errno> {
    if may_use_program_fds() {
        match f() {
            Err(Errno::EMFILE) => {}
            r => return r,
        }
    }
    if HANDLER_STACK_BUSY.swap(true, Ordering::Acquire) {
        return Err(Errno::EAGAIN);
    }
    let top = (HANDLER_STACK_MEM.0.get() as usize + HANDLER_STACK) & !15;
    // SAFETY: holding HANDLER_STACK_BUSY, the static stack is ours until
    // the task has exited (own_fds_on waits for that).
    let r = unsafe { own_fds_on(top, &[], &f) };
    HANDLER_STACK_BUSY.store(false, Ordering::Release);
    r.and_then(|r| r)
}

/// The body of [`with_own_fds_keeping`], on the stack whose (16-aligned)
/// top is `top`.
///
/// # Safety
/// The stack below `top` must be valid, ours and unused by anything else
/// until this returns.
unsafe fn own_fds_on<F: FnOnce() -> R, R>(top: usize, keep: &[i32], f: F) -> Result<R, Errno> {
    struct Job<'a, F, R> {
        f: Option<F>,
        r: Option<R>,
        keep: &'a [i32],
    }
    extern "C" fn run<F: FnOnce() -> R, R>(job: usize) -> ! {
        // SAFETY: `job` points at the caller's `Job`, which the caller does
        // not touch until this thread has exited (CLONE_VFORK).
        let job = unsafe { &mut *(job as *mut Job<'_, F, R>) };
        // CLONE_VFORK kept the caller's signal stack, which the caller's
        // frames may be using: a signal here must use the current stack.
        let off = super::abi::StackT {
            flags: super::abi::SS_DISABLE,
            ..Default::default()
        };
        let _ = super::sigaltstack(Some(&off), None);
        // CLOSE_RANGE_UNSHARE from 3 up: a new table without the program's
        // descriptors from 3 up (Linux copies the first 64 numbers at least
        // and closes those in the range, cheap whatever the program's table
        // holds); 0 and 1 are closed, 2 stays for the runtime's messages
        // (the loader's warnings).
        let unshared = if job.keep.is_empty() {
            super::close_range(3, u32::MAX, 2).is_ok()
        } else {
            // A copy of the whole table, then everything from 3 up closed
            // but `keep`.
            let mut keep = [0u32; 64];
            let n = job.keep.len().min(keep.len());
            for (k, &fd) in keep.iter_mut().zip(job.keep.iter()) {
                *k = fd as u32;
            }
            keep[..n].sort_unstable();
            let ok = super::unshare(0x400 /* CLONE_FILES */).is_ok();
            let mut from = 3u32;
            for &k in &keep[..n] {
                if k > from {
                    let _ = super::close_range(from, k - 1, 0);
                }
                from = from.max(k + 1);
            }
            let _ = super::close_range(from, u32::MAX, 0);
            ok
        };
        if unshared {
            let _ = super::close(0);
            let _ = super::close(1);
            job.r = job.f.take().map(|f| f());
        }
        super::exit_thread(0)
    }
    // CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_SYSVSEM |
    // CLONE_VFORK, exit signal 0: the child unshares the table itself. Not
    // CLONE_THREAD: the child is a process of its own (sharing our memory),
    // so that
    // - the copies of the program's descriptors that the unsharing makes
    //   (Linux copies at least the first 64 numbers, whatever the range)
    //   are closed by another process: closing a message queue in the
    //   process that registered for its notice drops the registration
    //   (mq_notify), as a close by any of our threads would;
    // - the program never sees an extra thread in /proc/PID/task.
    // With exit signal 0 it is a "clone" child: a program's wait without
    // __WALL or __WCLONE never reports it; we reap it right after.
    const FLAGS: usize = 0x100 | 0x200 | 0x400 | 0x800 | 0x40000 | 0x4000;
    let mut job = Job {
        f: Some(f),
        r: None,
        keep,
    };
    // The child starts with this mask: every signal but the synchronous
    // faults blocked, so that the process's signals go to its other threads.
    let old = super::rt_sigprocmask(super::abi::SIG_SETMASK, Some(!super::abi::SYNC_FAULTS))?;
    CLONING.fetch_add(1, Ordering::Acquire);
    MADE.fetch_add(1, Ordering::AcqRel);
    // SAFETY: CLONE_VM; the stack is ours and unused until the child exits
    // (the caller's promise), which CLONE_VFORK waits for; `run` never
    // returns and reads `job` as the `Job` it is.
    let r = unsafe {
        super::clone_thread(
            FLAGS,
            top,
            run::<F, R>,
            &mut job as *mut Job<'_, F, R> as usize,
        )
    };
    if r.is_err() {
        CLONING.fetch_sub(1, Ordering::Release);
    }
    if let Ok(pid) = r {
        // A free slot: one is freed when we reap its task, or when the
        // program's wait that reaped it has been told (`is_transient`).
        let slot = TRANSIENT
            .iter()
            .find(|s| {
                s.compare_exchange(0, pid as i32, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            })
            .unwrap_or_else(|| {
                TRANSIENT[0].store(pid as i32, Ordering::Relaxed);
                &TRANSIENT[0]
            });
        CLONING.fetch_sub(1, Ordering::Release);
        if reap_clone_child(pid as i32) {
            let _ = slot.compare_exchange(pid as i32, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
    let _ = super::rt_sigprocmask(super::abi::SIG_SETMASK, Some(old));
    r?;
    job.r.ok_or(Errno::ENOSYS)
}

/// Waits for the clone child `pid` (exit signal 0) of [`with_own_fds`] to
/// end and reaps it; true if it did. CLONE_VFORK returned when it released
/// our memory, which is before it has fully exited: this waits the rest.
/// ECHILD (a program thread waiting with __WALL reaped it first: see
/// [`is_transient`]) ends the wait too.
fn reap_clone_child(pid: i32) -> bool {
    const WCLONE: usize = 0x8000_0000;
    loop {
        // SAFETY: no pointer: the status and rusage are not asked for.
        let r = unsafe { super::call(super::nr::WAIT4, [pid as usize, 0, WCLONE, 0, 0, 0]) };
        if r != Err(Errno::EINTR) {
            return r.is_ok();
        }
    }
}

/// The pids of the latest transient tasks not reaped by us yet (0: free).
static TRANSIENT: [core::sync::atomic::AtomicI32; 16] =
    [const { core::sync::atomic::AtomicI32::new(0) }; 16];

/// Is `pid` a transient task of [`with_own_fds`] that a program's wait
/// with __WALL or __WCLONE may have reported (it is a clone child of
/// ours)? If so it is forgotten: the caller waits again, and the program
/// never learns of it.
pub fn is_transient(pid: i32) -> bool {
    pid > 0
        && TRANSIENT.iter().any(|s| {
            s.compare_exchange(pid, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        })
}

/// Transient tasks being made or running whose pid is not in
/// [`TRANSIENT`] yet (CLONE_VFORK returns once the task is done).
static CLONING: AtomicUsize = AtomicUsize::new(0);

/// How many transient tasks have been started.
static MADE: AtomicUsize = AtomicUsize::new(0);

/// A mark to give [`transient_since`].
pub fn transient_mark() -> usize {
    MADE.load(Ordering::Acquire)
}

/// Has a transient task lived since `mark` was taken, or is one alive or
/// not reaped yet? (A wait's "no child" or "none ended" may then be
/// untrue: it is asked again.)
pub fn transient_since(mark: usize) -> bool {
    MADE.load(Ordering::Acquire) != mark
        || CLONING.load(Ordering::Acquire) != 0
        || TRANSIENT.iter().any(|s| s.load(Ordering::Relaxed) != 0)
}

/// Waits until every transient task made so far has its pid in
/// [`TRANSIENT`] (so that [`is_transient`] can tell one a wait reported).
pub fn settle_transients() {
    while CLONING.load(Ordering::Acquire) != 0 {
        super::sched_yield();
    }
}

/// Is `pid` a transient task still waiting to be reaped (not forgotten)?
pub fn transient_pending(pid: i32) -> bool {
    pid > 0 && TRANSIENT.iter().any(|s| s.load(Ordering::Relaxed) == pid)
}
