//! Signals: the runtime owns every host signal disposition and delivers
//! signals to the program's handlers itself, building the same frame the
//! kernel builds (`struct rt_sigframe`, FPU state included).
//!
//! * SIGSYS is the runtime's (Syscall User Dispatch); the program's SIGSYS
//!   disposition is emulated and applies to SIGSYS sent by `kill`.
//! * While runtime code runs (inside the SIGSYS handler) async signals are
//!   blocked, except inside the blocking-syscall window, where a signal only
//!   marks itself pending; pending signals are delivered just before the
//!   runtime returns to the program.
//! * Synchronous faults inside runtime code are either a user-memory copy
//!   (recovered as EFAULT) or a runtime bug (reported, then fatal).
//!
//! # Safety
//! The handlers receive raw `siginfo`/`ucontext` pointers from the kernel.
#![deny(unsafe_code)]

use crate::arch::{self, RtSigFrame, SigInfo, UContext};
use crate::host::{self, KSigaction};
use crate::kernel::thread::NSIG;
use crate::kernel::thread::{self, Thread};
use crate::mm::user;
use core::mem::size_of;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::host::abi::*;

/// Signals no mask can block.
pub const UNBLOCKABLE: u64 = bit(SIGKILL) | bit(SIGSTOP);
/// Signals the host never blocks: SIGSYS (the trap path), SIGTRAP (a
/// thread may meet the patcher's transient `int3` at any time) and the
/// other fault types (a blocked fault would kill the process where the
/// runtime must recover its own accesses to bad program memory). When the
/// program blocks them, the runtime keeps them pending itself.
pub const NEVER_BLOCKED: u64 = UNBLOCKABLE | bit(SIGSYS) | SYNC_FAULTS;
/// Host mask while runtime code runs: every signal that can be blocked
/// without turning a synchronous fault into a kill.
pub const RUNTIME_MASK: u64 = !(SYNC_FAULTS | NEVER_BLOCKED);

/// The host mask that stands for program mask `m`.
pub const fn host_mask(m: u64) -> u64 {
    m & !NEVER_BLOCKED
}

/// Signals whose default action is to do nothing.
pub const fn default_ignored(sig: i32) -> bool {
    matches!(sig, SIGCHLD | SIGURG | SIGWINCH | SIGCONT)
}

/// Installs the host disposition that implements program disposition `act`.
pub fn sync_host_action(sig: i32, act: &KSigaction) {
    if sig == SIGSYS || sig == SIGKILL || sig == SIGSTOP {
        return;
    }
    let keep = act.flags & (SA_NOCLDSTOP | SA_NOCLDWAIT);
    if SYNC_FAULTS & bit(sig) != 0 {
        // The runtime always handles synchronous faults: to recover its own
        // accesses to program memory (EFAULT) and to report its own bugs.
        return;
    }
    let caught = handler_action(PROGRAM_HANDLER.load(Ordering::Relaxed), keep);
    let mut host_act = match act.handler {
        // A traced thread's signals all stop it first (Linux reports even
        // ignored ones to the tracer).
        SIG_DFL | SIG_IGN if CATCH_ALL.load(Ordering::Relaxed) => caught,
        SIG_DFL if CATCH_FATAL.load(Ordering::Relaxed) && fatal_by_default(sig) => caught,
        SIG_DFL | SIG_IGN => plain_action(act.handler, keep),
        _ => caught,
    };
    if host_act.handler == caught.handler {
        HOST_CAUGHT.fetch_or(bit(sig), Ordering::SeqCst);
    } else {
        // A thread may leave this signal open on the host while its
        // program blocks it (`set_mask_lazily`): then the runtime's handler
        // stays, and carries the default action or the ignoring out itself
        // (`deliver`), so that the signal still waits for the program's
        // unblocking as on Linux. (Both sides write their flag before they
        // read the other's: one of them sees the other.)
        HOST_CAUGHT.fetch_and(!bit(sig), Ordering::SeqCst);
        if LAZY_USED.load(Ordering::SeqCst) & bit(sig) != 0 {
            HOST_CAUGHT.fetch_or(bit(sig), Ordering::SeqCst);
            if act.handler == SIG_IGN || default_ignored(sig) {
                // Linux discards the signal where it is pending, in every
                // thread's queue: ignoring it on the host for a moment does.
                let _ = host::rt_sigaction(sig, Some(&plain_action(SIG_IGN, 0)), None);
            }
            host_act = caught;
        }
    }
    if let Err(e) = host::rt_sigaction(sig, Some(&host_act), None) {
        crate::log!(Debug, "host rt_sigaction({}) failed: {}", sig, e);
    }
}

/// The signals whose host disposition is the runtime's handler.
static HOST_CAUGHT: AtomicU64 = AtomicU64::new(0);
/// The signals some thread of the process has left open on the host while
/// its program blocked them (`set_mask_lazily`); once there, a signal keeps
/// the runtime's handler on the host until the next `execve`.
static LAZY_USED: AtomicU64 = AtomicU64::new(0);

/// [`crate::kernel::thread::Thread::host_sigmask`] when the runtime does not
/// know the host's mask (no real mask has SIGKILL in it).
pub const HOST_MASK_UNKNOWN: u64 = u64::MAX;

/// Notes `m` as the host's mask while the program runs on thread `t`, and
/// whether it leaves open a signal the program blocks.
pub fn note_host_mask(t: &Thread, m: u64) {
    t.host_sigmask.set(m);
    t.entry
        .lazy_mask
        .store((m != host_mask(t.sig_mask.get())) as u32, Ordering::Relaxed);
}

/// On the fast path (the host's mask is the program's, lazily), after the
/// program changed its mask: brings the host's mask up to date, but only
/// where it must. A signal the program now blocks may stay open on the host
/// if the runtime's handler catches it there: should it come, the handler
/// sends it back to the host's queue it came from and blocks it then
/// (`entry::trap::host_signal`, `deliver_pending`), and the host keeps it
/// pending as Linux would have; a blocking call first makes the host's mask
/// the program's (`sync_lazy`). So blocking and unblocking a signal the
/// program handles costs no host call (`sigprocmask` in `picos bench`).
/// Unblocking a signal the host blocks, or blocking one without a handler
/// (its default action would run), changes the host's mask at once.
pub fn set_mask_lazily(t: &Thread) {
    let want = host_mask(t.sig_mask.get());
    let now = t.host_sigmask.get();
    if now != HOST_MASK_UNKNOWN && now & !want == 0 {
        let open = want & !now;
        if open == 0 || (open & QUEUED_IN_ORDER == 0 && stays_caught(open)) {
            note_host_mask(t, now);
            return;
        }
    }
    set_exact_mask(t);
}

/// The real-time signals a program may queue in bursts and expect in their
/// order (SIGRTMIN, 34, and above; 32 and 33 are the C libraries' own).
/// Never left open lazily: one that came while the program blocks it could
/// only go back to the end of the host's queue, behind later instances
/// (`take_back_lazy`).
const QUEUED_IN_ORDER: u64 = !0 << 33;

/// After a call on the fast path changed the program's mask from `before`
/// to one the host now has too: did an instance of a real-time signal that
/// it blocks come to the runtime before that (the program did not block it
/// then)? Such an instance, pending in the runtime, is ahead of the ones
/// the host queues behind it; put back there it would come after them.
pub fn came_before_blocking(t: &Thread, before: u64) -> bool {
    t.pending_bits() & t.sig_mask.get() & !before & QUEUED_IN_ORDER != 0
}

/// Does the runtime's handler catch some real-time signal on the host (the
/// program handles one)? Their instances queue, in order.
pub fn realtime_caught() -> bool {
    HOST_CAUGHT.load(Ordering::Relaxed) & (!0 << 31) != 0
}

/// Makes the host's mask the program's (`host_mask` of it), now.
fn set_exact_mask(t: &Thread) {
    let want = host_mask(t.sig_mask.get());
    let _ = host::rt_sigprocmask(SIG_SETMASK, Some(want));
    note_host_mask(t, want);
}

/// May signals `set` stay open on the host while the program blocks them:
/// does the runtime's handler catch each there, and will it go on doing so
/// (`sync_host_action`)?
fn stays_caught(set: u64) -> bool {
    if HOST_CAUGHT.load(Ordering::Relaxed) & set != set {
        return false;
    }
    if LAZY_USED.load(Ordering::Relaxed) & set != set {
        LAZY_USED.fetch_or(set, Ordering::SeqCst);
    }
    HOST_CAUGHT.load(Ordering::SeqCst) & set == set
}

/// A signal the program blocks came to the runtime's handler in the
/// program's context, because the host's mask left it open
/// (`set_mask_lazily`): it joins the pending set, with the later instances
/// of the same real-time signal that queued on the host meanwhile (up to
/// the runtime's queue's room), so that `deliver_pending` puts them all
/// back there in the order they came.
pub fn take_back_lazy(t: &Thread, info: &SigInfo) {
    t.add_pending(info);
    let sig = info.signo();
    if sig >= 32 {
        for _ in 0..thread::EXTRA_QUEUED {
            let mut later = SigInfo::default();
            if host::rt_sigtake(bit(sig), &mut later.0).is_err() {
                break;
            }
            t.add_pending(&later);
        }
    }
}

/// On the fast path, before a call that may block: the host's mask becomes
/// the program's (a signal the program blocks must not cut the call short).
pub fn sync_lazy(t: &Thread) {
    if t.in_fast.get() && t.entry.lazy_mask.load(Ordering::Relaxed) != 0 {
        set_exact_mask(t);
    }
}

/// Does the runtime see every signal (a thread of the process is traced:
/// `catch_all_signals`)?
static CATCH_ALL: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// From now on every signal comes to the runtime, ignored ones and those
/// whose default action is to do nothing included: a traced thread stops
/// for each (`kernel::ptrace::signal_stop`) before its disposition acts.
pub fn catch_all_signals(t: &Thread) {
    if CATCH_ALL.swap(true, Ordering::Relaxed) {
        return;
    }
    for sig in 1..=thread::NSIG as i32 {
        let act = t.process().get(sig);
        if act.handler == SIG_DFL || act.handler == SIG_IGN {
            sync_host_action(sig, &act);
        }
    }
}

/// Before execve: the signals the program ignores but the runtime catches
/// (a traced process catches every one, and a signal a thread left open on
/// the host while its program blocked it stays caught) are ignored on the host again, so
/// that the next program inherits them ignored, as Linux keeps SIG_IGN
/// across execve (the next runtime reads them back: `init_dispositions`).
/// `undo` (the execve failed) catches them again.
pub fn ignored_for_exec(t: &Thread, undo: bool) {
    let all = CATCH_ALL.load(Ordering::Relaxed);
    let lazy = LAZY_USED.load(Ordering::SeqCst);
    if !all && lazy == 0 {
        return;
    }
    for sig in 1..=thread::NSIG as i32 {
        if sig == SIGKILL || sig == SIGSTOP || sig == SIGSYS || !all && lazy & bit(sig) == 0 {
            continue;
        }
        let act = t.process().get(sig);
        if act.handler == SIG_IGN {
            if undo {
                sync_host_action(sig, &act);
            } else {
                let _ = host::rt_sigaction(sig, Some(&plain_action(SIG_IGN, 0)), None);
            }
        }
    }
}

/// Does the runtime see every signal whose default action ends the
/// process (`catch_fatal_defaults`)?
static CATCH_FATAL: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Does signal `sig`'s default action end the process (terminate or dump
/// core, rather than ignore or stop)?
pub const fn fatal_by_default(sig: i32) -> bool {
    !default_ignored(sig) && !matches!(sig, SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU)
}

/// From now on, signals whose default action ends the process come to the
/// runtime even while the program leaves them at SIG_DFL, so that it can
/// act before the process ends (write-back buffers: `kernel::fs::file`).
/// The runtime then carries the default action out itself
/// (`die_by_signal`).
pub fn catch_fatal_defaults(t: &Thread) {
    CATCH_FATAL.store(true, Ordering::Relaxed);
    for sig in 1..=thread::NSIG as i32 {
        let act = t.process().get(sig);
        if act.handler == SIG_DFL && fatal_by_default(sig) {
            sync_host_action(sig, &act);
        }
    }
}

/// The host handler for signals the program handles (`entry::trap`'s,
/// set once at start-up before the program runs).
static PROGRAM_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Sets the host handler that signals the program handles go to.
pub fn set_program_handler(addr: usize) {
    PROGRAM_HANDLER.store(addr, Ordering::Relaxed);
}

pub fn handler_action(handler: usize, extra: u64) -> KSigaction {
    KSigaction {
        handler,
        flags: SA_SIGINFO | SA_ONSTACK | SA_RESTORER | extra,
        restorer: arch::picos_restorer as *const () as usize,
        mask: RUNTIME_MASK,
    }
}

/// clone3's CLONE_CLEAR_SIGHAND, in the new process: every handler the
/// program set becomes SIG_DFL, ignored signals stay ignored; flags, mask
/// and restorer are cleared (Linux's `flush_signal_handlers`).
pub fn clear_handlers(t: &Thread) {
    let acts = t.process().actions();
    for sig in 1..=thread::NSIG as i32 {
        if sig == SIGKILL || sig == SIGSTOP {
            continue;
        }
        let old = acts.get(sig);
        let act = KSigaction {
            handler: if old.handler == SIG_IGN {
                SIG_IGN
            } else {
                SIG_DFL
            },
            ..KSigaction::default()
        };
        if old != act {
            acts.set(sig, &act);
            sync_host_action(sig, &act);
        }
    }
}

/// The signals the program ignores (SIG_IGN), bit N-1 for signal N: what
/// the next program inherits across execve (`LaunchConfig::ignored`).
pub fn ignored_mask(t: &Thread) -> u64 {
    let acts = t.process().actions();
    (1..=thread::NSIG as i32)
        .filter(|&sig| sig != SIGKILL && sig != SIGSTOP && sig != SIGSYS)
        .filter(|&sig| acts.get(sig).handler == SIG_IGN)
        .fold(0, |m, sig| m | bit(sig))
}

/// At start-up: the program inherits ignored dispositions across execve, as
/// on Linux; everything else starts as SIG_DFL. After an execve in the
/// tree the exec'ing runtime said which (`LaunchConfig::ignored`: no host
/// call, and a synchronous fault's SIG_IGN, which the host never sees,
/// carries over too); the tree's first process asks the host.
pub fn init_dispositions(t: &Thread) {
    let acts = t.process().actions();
    let inherited = crate::kernel::process::config().ignored;
    for sig in 1..=thread::NSIG as i32 {
        if sig == SIGKILL || sig == SIGSTOP || sig == SIGSYS {
            continue;
        }
        let ignored = match inherited {
            Some(m) => m & bit(sig) != 0,
            None => {
                let mut old = KSigaction::default();
                host::rt_sigaction(sig, None, Some(&mut old)).is_ok() && old.handler == SIG_IGN
            }
        };
        if ignored {
            acts.set(
                sig,
                &KSigaction {
                    handler: SIG_IGN,
                    ..KSigaction::default()
                },
            );
        }
    }
}

/// Delivers every pending signal the program does not block, on top of the
/// program context in `uc`; re-queues the rest on the host. True if `uc`
/// now enters a handler.
pub fn deliver_pending(t: &Thread, uc: &mut UContext) -> bool {
    if t.ptrace.get() != 0 || t.ptrace_doorbell.get() {
        // The stops the tracer asked for come first.
        crate::kernel::ptrace::pending_stops(t, uc, u64::MAX);
    }
    let mut frames = false;
    while let Some(info) = t.take_for_delivery(t.sig_mask.get()) {
        frames |= deliver(t, &info, uc);
    }
    if frames {
        // The program's FPU state is in the (first) frame: the handler
        // starts with the FPU in its initial state, as Linux starts it
        // (handle_signal's fpu__clear_user_states). The host's return to
        // the handler then loads no image (a `None` fpstate: the kernel
        // resets the registers instead), which saves restoring the whole
        // image there and again at the program's rt_sigreturn.
        uc.mcontext.fpstate = 0;
    }
    if let Some(saved) = t.saved_mask.take() {
        t.sig_mask.set(saved);
    }
    t.fault_probe.set(thread::FaultProbe::default());
    // What the program blocks goes back to the host, except the signals the
    // host never blocks: those wait here until the program unblocks them.
    requeue_blocked(t, NEVER_BLOCKED);
    uc.sigmask = host_mask(t.sig_mask.get());
    note_host_mask(t, uc.sigmask);
    t.update_pending_flag();
    frames
}

/// Notes a signal the thread has just sent itself (`self_target`: tkill or
/// tgkill aimed at this thread): if the host blocks it for the program, it
/// waits there until the program unblocks it (see `Thread::self_sent`).
pub fn note_self_sent(t: &Thread, self_target: bool, sig: i32) {
    if self_target && (1..=thread::NSIG as i32).contains(&sig) {
        let b = bit(sig);
        if host_mask(t.sig_mask.get()) & b != 0 {
            t.self_sent.set(t.self_sent.get() | b);
        }
    }
}

/// The program is unblocking `set`: the signals of it that this thread
/// sent itself while they were blocked are taken from the host's queue
/// (rt_sigtimedwait with no wait) into the runtime's, for delivery when
/// the call returns, as Linux delivers them on its return from
/// rt_sigprocmask. Without this the host would deliver each to the
/// runtime's handler first (a signal frame and an rt_sigreturn, ~1 µs).
/// One taken meanwhile (sigwaitinfo, signalfd) is simply not found.
#[cold]
#[inline(never)]
pub fn take_self_sent(t: &Thread, set: u64) {
    let set = set & t.self_sent.get();
    if set == 0 {
        return;
    }
    t.self_sent.set(t.self_sent.get() & !set);
    // A signal arriving while the queue is worked on goes back to the
    // host (as in the fast path's delivery), blocked until the program's
    // new mask reaches the host.
    let was = t.delivering.replace(true);
    let mut rest = host_mask(set);
    while rest != 0 {
        let sig = rest.trailing_zeros() as i32 + 1;
        rest &= rest - 1;
        // Real-time signals queue: take every instance.
        for _ in 0..=thread::EXTRA_QUEUED {
            let mut info = SigInfo::default();
            if host::rt_sigtake(bit(sig), &mut info.0).is_err() {
                break;
            }
            t.add_pending(&info);
            if sig < 32 {
                break; // a standard signal is pending once at most
            }
        }
    }
    t.delivering.set(was);
}

/// Queues a signal the runtime holds on the host again, in the queue it
/// was in: the thread's (`rt_tgsigqueueinfo`) or the process's
/// (`rt_sigqueueinfo`; either takes any `si_code` for the own process).
/// False if the host's queue has no room for it (EAGAIN: an instance of a
/// real-time signal over the user's RLIMIT_SIGPENDING, which a thread that
/// sends in a loop keeps full); Linux always finds room for a standard
/// signal.
pub fn requeue_on_host(t: &Thread, info: &SigInfo, private: bool) -> bool {
    let pid = host::getpid();
    let r = if private {
        host::rt_tgsigqueueinfo(pid, t.tid(), info.signo(), &info.0)
    } else {
        host::rt_sigqueueinfo(pid, info.signo(), &info.0)
    };
    r != Err(crate::host::errno::Errno::EAGAIN)
}

/// Puts the pending signals not in `keep` (which the program blocks) back
/// on the host's queues, where signalfd, sigwaitinfo and the other threads
/// find them. An instance the host has no room for stays in the runtime's
/// queue rather than be lost, with the later instances of its signal, in
/// order (`Thread::held`): the program gets them when it unblocks the
/// signal or waits for it.
pub fn requeue_blocked(t: &Thread, keep: u64) {
    while let Some((info, private)) = t.peek_pending_queued(keep | t.held.get()) {
        let sig = info.signo();
        if requeue_on_host(t, &info, private) {
            let _ = t.take_from(sig, private);
        } else {
            crate::log!(
                Debug,
                "signal {}: no room on the host's queue (RLIMIT_SIGPENDING); the runtime holds it",
                sig
            );
            t.held.set(t.held.get() | bit(sig));
        }
    }
    t.update_pending_flag();
}

/// Does the first signal that would be delivered now have SA_RESTART?
pub fn pending_wants_restart(t: &Thread) -> bool {
    let Some(sig) = t.peek_pending(t.sig_mask.get()) else {
        return false;
    };
    let act = t.process().get(sig);
    act.handler > SIG_IGN && act.flags & SA_RESTART != 0
}

/// A synchronous signal the kernel would force on the thread (Linux's
/// `force_sig`): queued for delivery when the call returns, or, if the
/// program blocks or ignores it, its default action at once.
pub fn force_sig(t: &Thread, sig: i32, code: i32) {
    force_sig_info(t, &SigInfo::kernel(sig, code));
}

/// [`force_sig`] with the whole `siginfo` given.
pub fn force_sig_info(t: &Thread, info: &SigInfo) {
    let sig = info.signo();
    if t.sig_mask.get() & bit(sig) != 0 || t.process().get(sig).handler == SIG_IGN {
        die_of(sig);
    }
    t.add_fault(info);
}

/// Ends the process of signal `sig` (its default action on the host; the
/// exit status a shell would give if that action does not end it).
pub fn die_of(sig: i32) -> ! {
    die_by_signal(sig);
    host::exit_group(128 + sig)
}

/// The host disposition for a signal's default action.
pub fn host_default() -> KSigaction {
    plain_action(SIG_DFL, 0)
}

/// A host disposition without a handler (`handler` SIG_DFL or SIG_IGN),
/// with flags `extra`: the runtime's restorer, as for every disposition
/// it installs.
fn plain_action(handler: usize, extra: u64) -> KSigaction {
    KSigaction {
        handler,
        flags: SA_RESTORER | extra,
        restorer: arch::picos_restorer as *const () as usize,
        mask: 0,
    }
}

/// Runs signal `sig`'s default action on the host (terminate, core, stop),
/// returning only if the action does not end the process.
pub fn die_by_signal(sig: i32) {
    if fatal_by_default(sig) {
        if let Some(t) = crate::kernel::thread::current_checked() {
            crate::kernel::ptrace::exiting(t, None, sig);
        }
    }
    if crate::kernel::fs::file::any_pending() {
        // What write-back files hold reaches them first (only SIGKILL,
        // which the runtime never sees, loses it).
        if let Some(t) = crate::kernel::thread::current_checked() {
            t.fd_table.get().flush_writes();
        }
    }
    let dfl = host_default();
    let mut old = KSigaction::default();
    let _ = host::rt_sigaction(sig, Some(&dfl), Some(&mut old));
    let old_mask = host::rt_sigprocmask(SIG_UNBLOCK, Some(bit(sig))).unwrap_or(RUNTIME_MASK);
    let _ = host::tgkill(host::getpid(), host::gettid(), sig);
    // A stop signal returns here after SIGCONT.
    let _ = host::rt_sigprocmask(SIG_SETMASK, Some(old_mask));
    let _ = host::rt_sigaction(sig, Some(&old), None);
}

/// Delivers one signal to the program according to its disposition; true
/// if `uc` now enters a handler (a frame was built).
pub fn deliver(t: &Thread, info: &SigInfo, uc: &mut UContext) -> bool {
    let traced_info;
    let info = if t.ptrace.get() != 0 && info.signo() != SIGKILL {
        // A signal-delivery stop: the tracer may change or suppress it.
        match crate::kernel::ptrace::signal_stop(t, info, uc) {
            Some(i) => {
                traced_info = i;
                &traced_info
            }
            None => return false,
        }
    } else {
        info
    };
    let sig = info.signo();
    crate::diag::stats::signal(&t.stats, SYNC_FAULTS & bit(sig) != 0 && info.code() > 0);
    let act = t.process().get(sig);
    match act.handler {
        SIG_IGN => false,
        SIG_DFL => {
            if !default_ignored(sig) {
                die_by_signal(sig);
            }
            false
        }
        _ => {
            if act.flags & SA_RESETHAND != 0 {
                // As Linux: reset when the signal is taken, before its
                // frame is built (it stays reset if that fails); only the
                // handler changes (flags, mask and restorer stay, so a
                // later sigaction still shows SA_SIGINFO: LTP sigaction01).
                let dfl = KSigaction {
                    handler: SIG_DFL,
                    ..act
                };
                t.process().actions().set(sig, &dfl);
                sync_host_action(sig, &dfl);
            }
            if setup_frame(t, sig, &act, info, uc).is_err() {
                // As Linux's force_sigsegv: the frame could not be written.
                // SIGSEGV itself is then fatal; any other signal turns into
                // a SIGSEGV for the program (delivered next by the caller's
                // loop), fatal in turn if it is blocked or ignored.
                crate::log!(
                    Debug,
                    "cannot build signal frame for signal {} (rsp {:#x}, altstack {:#x}+{:#x} flags {:#x}, handler flags {:#x})",
                    sig,
                    uc.mcontext.rsp,
                    t.altstack.get().sp,
                    t.altstack.get().size,
                    t.altstack.get().flags,
                    act.flags
                );
                if sig == SIGSEGV {
                    die_of(SIGSEGV);
                }
                force_sig(t, SIGSEGV, SI_KERNEL);
                return false;
            }
            true
        }
    }
}

fn on_altstack(ss: &StackT, sp: u64) -> bool {
    ss.flags & SS_DISABLE == 0 && ss.size != 0 && sp > ss.sp && sp - ss.sp <= ss.size
}

/// The program's view of its sigaltstack at stack pointer `sp`.
pub fn altstack_view(t: &Thread, sp: u64) -> StackT {
    let mut ss = t.altstack.get();
    if ss.flags & SS_DISABLE == 0 && ss.size != 0 {
        // As Linux: SS_ONSTACK while on it (never with SS_AUTODISARM), and
        // the SS_AUTODISARM bit as set.
        let auto = ss.flags & SS_AUTODISARM;
        ss.flags = auto
            | if auto == 0 && on_altstack(&ss, sp) {
                SS_ONSTACK
            } else {
                0
            };
    } else {
        ss = StackT::DISABLED;
    }
    ss
}

fn setup_frame(
    t: &Thread,
    sig: i32,
    act: &KSigaction,
    info: &SigInfo,
    uc: &mut UContext,
) -> Result<(), crate::host::errno::Errno> {
    // A signal that lands while a fast call finishes through the trap path
    // (the program is between the trampoline's return and its slow
    // `syscall`, RAX = DEFERRED_NR): the handler must return to where that
    // call continues, and the deferral must not outlive this context (a
    // deferred call inside the handler would take it for its own).
    crate::kernel::signal::finish_deferred(t, uc);
    if act.flags & SA_RESTORER == 0 {
        // x86-64 Linux has no default restorer: the frame cannot be built.
        return Err(crate::host::errno::Errno::EFAULT);
    }
    // A context in a trampoline (the trap path's rewinds and continuations
    // land there too): the handler sees, and returns to, the program's code.
    crate::patch::untrampoline(&mut uc.mcontext);
    let ctx = &uc.mcontext;
    let alt = t.altstack.get();
    let mut sp = ctx.rsp;
    if act.flags & SA_ONSTACK != 0
        && alt.flags & SS_DISABLE == 0
        && alt.size != 0
        && !on_altstack(&alt, sp)
    {
        sp = alt.sp + alt.size;
    } else {
        sp -= 128; // red zone
    }
    let mut fp_dst = 0u64;
    if let Some(img) = arch::fpu::image(uc) {
        sp = (sp - img.len() as u64) & !63;
        user::copy_out(sp as usize, img)?;
        fp_dst = sp;
    }
    let frame_addr = ((sp - size_of::<RtSigFrame>() as u64) & !15) - 8;
    let saved_mask = t.saved_mask.take().unwrap_or(t.sig_mask.get());
    let mut frame = RtSigFrame {
        pretcode: act.restorer as u64,
        uc: *uc,
        info: *info,
    };
    frame.uc.link = 0;
    let autodisarm = alt.flags & SS_AUTODISARM != 0;
    frame.uc.stack = if autodisarm {
        // As Linux's __save_altstack: the stack as set, to be restored by
        // rt_sigreturn.
        alt
    } else {
        altstack_view(t, ctx.rsp)
    };
    frame.uc.mcontext.fpstate = fp_dst;
    frame.uc.sigmask = saved_mask;
    user::write(frame_addr as usize, &frame)?;
    if autodisarm {
        // SS_AUTODISARM: every delivery disarms the stack until the
        // handler's rt_sigreturn restores it from the frame.
        t.altstack.set(StackT::DISABLED);
    }

    let m = &mut uc.mcontext;
    m.rip = act.handler as u64;
    m.rsp = frame_addr;
    m.rdi = sig as u64;
    m.rsi = frame_addr + 8 + size_of::<UContext>() as u64;
    m.rdx = frame_addr + 8;
    m.rax = 0;
    m.eflags &= !(0x400 | 0x100 | 0x10000); // DF, TF, RF
    let mut new_mask = t.sig_mask.get() | act.mask;
    if act.flags & SA_NODEFER == 0 {
        new_mask |= bit(sig);
    }
    t.sig_mask.set(new_mask & !UNBLOCKABLE);
    Ok(())
}

/// Emulates rt_sigreturn(2): restores the program context saved in the frame
/// whose ucontext sits at the program's stack pointer.
pub fn sigreturn(t: &Thread, uc: &mut UContext) -> Result<(), crate::host::errno::Errno> {
    let saved: UContext = user::read(uc.mcontext.rsp as usize)?;
    sigreturn_from(t, uc, &saved)
}

/// As [`sigreturn`], with the frame's ucontext already read (`saved`).
pub fn sigreturn_from(
    t: &Thread,
    uc: &mut UContext,
    saved: &UContext,
) -> Result<(), crate::host::errno::Errno> {
    let host_fp = uc.mcontext.fpstate;
    let old_flags = uc.mcontext.eflags;
    let (cs, ss) = (uc.mcontext.cs, uc.mcontext.ss);
    let mut m = saved.mcontext;
    // Only the user-changeable flags come from the frame (as FIX_EFLAGS).
    const FIX_EFLAGS: u64 =
        0x40000 | 0x800 | 0x400 | 0x100 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x10000;
    m.eflags = (old_flags & !FIX_EFLAGS) | (m.eflags & FIX_EFLAGS);
    m.cs = cs;
    m.ss = ss;
    m.fpstate = host_fp;
    if saved.mcontext.fpstate != 0 {
        if let Some(dst) = arch::fpu::image_mut(uc) {
            user::copy_in(dst, saved.mcontext.fpstate as usize)?;
        }
    }
    uc.mcontext = m;
    t.sig_mask.set(saved.sigmask & !UNBLOCKABLE);
    // restore_altstack(): errors are ignored, as in Linux.
    let _ = set_altstack(t, &saved.stack, m.rsp);
    Ok(())
}

/// The program's sigaltstack(2) update, with Linux's checks.
pub fn set_altstack(t: &Thread, ss: &StackT, cur_sp: u64) -> Result<(), crate::host::errno::Errno> {
    use crate::host::errno::Errno;
    let cur = t.altstack.get();
    // Linux's on_sig_stack(): a stack with SS_AUTODISARM never counts.
    if cur.flags & SS_AUTODISARM == 0 && on_altstack(&cur, cur_sp) {
        return Err(Errno::EPERM);
    }
    let mode = ss.flags & !SS_AUTODISARM;
    if mode != 0 && mode != SS_DISABLE && mode != SS_ONSTACK {
        return Err(Errno::EINVAL);
    }
    if mode == SS_DISABLE {
        t.altstack.set(StackT::DISABLED);
    } else {
        if ss.size < 2048 {
            return Err(Errno::ENOMEM);
        }
        t.altstack.set(StackT {
            sp: ss.sp,
            flags: ss.flags & SS_AUTODISARM,
            pad: 0,
            size: ss.size,
        });
    }
    Ok(())
}

/// The trap path's half of a deferred fast call: continue at the context the
/// fast path computed, delivering pending signals on it.
pub fn finish_deferred(t: &Thread, uc: &mut UContext) -> bool {
    let Some(m) = t.deferred.take() else {
        return false;
    };
    crate::log!(
        Debug,
        "deferred fast call continues at {:#x} rax={:#x}",
        m.rip,
        m.rax
    );
    uc.mcontext = crate::arch::on_host_frame(m, &uc.mcontext);
    true
}

/// The program's signal dispositions behind a sequence lock: readers (every
/// signal delivery, every query) never write shared memory; writers
/// serialise on `write` and make `seq` odd while they change a slot.
///
/// Lock order: `write` is taken before any other runtime lock. A thread never
/// reads while it is itself writing (writes happen in syscall handlers, and
/// the signal handlers that interrupt them do not read dispositions).
pub struct SigActions {
    seq: AtomicU64,
    write: crate::sync::Lock<()>,
    slots: [[AtomicU64; 4]; NSIG],
}

impl Default for SigActions {
    fn default() -> Self {
        Self::new()
    }
}

impl SigActions {
    pub const fn new() -> Self {
        SigActions {
            seq: AtomicU64::new(0),
            write: crate::sync::Lock::new(crate::sync::Rank::Actions, ()),
            slots: [const { [const { AtomicU64::new(0) }; 4] }; NSIG],
        }
    }

    /// The disposition of `sig` (1-based), a consistent snapshot.
    pub fn get(&self, sig: i32) -> KSigaction {
        let s = &self.slots[(sig - 1) as usize];
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 0 {
                let a = KSigaction {
                    handler: s[0].load(Ordering::Relaxed) as usize,
                    flags: s[1].load(Ordering::Relaxed),
                    restorer: s[2].load(Ordering::Relaxed) as usize,
                    mask: s[3].load(Ordering::Relaxed),
                };
                core::sync::atomic::fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == s1 {
                    return a;
                }
            }
            core::hint::spin_loop();
        }
    }

    /// Serialises writers (also held across fork, so the child never
    /// inherits a half-written table).
    pub fn lock(&self) -> crate::sync::Guard<'_, ()> {
        self.write.lock()
    }

    /// Sets the disposition of `sig`; the caller holds [`SigActions::lock`].
    pub fn set_locked(&self, _held: &crate::sync::Guard<'_, ()>, sig: i32, a: &KSigaction) {
        self.store(sig, a);
    }

    /// Writes the slot of `sig`; the caller holds the lock or has the only
    /// reference.
    pub fn store(&self, sig: i32, a: &KSigaction) {
        let s = &self.slots[(sig - 1) as usize];
        self.seq.fetch_add(1, Ordering::Relaxed);
        core::sync::atomic::fence(Ordering::Release);
        s[0].store(a.handler as u64, Ordering::Relaxed);
        s[1].store(a.flags, Ordering::Relaxed);
        s[2].store(a.restorer as u64, Ordering::Relaxed);
        s[3].store(a.mask, Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
    }

    /// Sets the disposition of `sig`.
    pub fn set(&self, sig: i32, a: &KSigaction) {
        let g = self.lock();
        self.set_locked(&g, sig, a);
    }
}

/// The dispositions' part in fork: the process's are locked across it,
/// so that the child never inherits a half-written table.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "signal actions",
    hold: |inner| {
        let _acts = crate::kernel::thread::current().process().actions().lock();
        inner()
    },
    alone: crate::sync::ForkHook::nothing,
    child: crate::sync::ForkHook::no_change,
};

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn masks() {
        assert_eq!(bit(1), 1);
        assert_eq!(bit(64), 1 << 63);
        assert_eq!(host_mask(!0) & bit(SIGSYS), 0);
        assert_eq!(host_mask(!0) & bit(SIGKILL), 0);
        // Fault types are never blocked on the host (the runtime keeps
        // them pending itself), so its own EFAULT recovery keeps working.
        assert_eq!(host_mask(!0) & bit(SIGSEGV), 0);
        assert_eq!(host_mask(!0) & bit(SIGBUS), 0);
        assert_eq!(RUNTIME_MASK & bit(SIGSEGV), 0);
        assert_ne!(RUNTIME_MASK & bit(SIGINT_), 0);
    }
    const SIGINT_: i32 = 2;
    #[test]
    fn altstack_bounds() {
        let ss = StackT {
            sp: 0x1000,
            flags: 0,
            pad: 0,
            size: 0x1000,
        };
        assert!(on_altstack(&ss, 0x2000));
        assert!(on_altstack(&ss, 0x1001));
        assert!(!on_altstack(&ss, 0x1000));
        assert!(!on_altstack(&ss, 0x2001));
    }
}
