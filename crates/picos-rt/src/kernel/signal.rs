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
#![allow(unsafe_code)]

use crate::arch::{self, RtSigFrame, SigInfo, UContext};
use crate::host::{self, KSigaction};
use crate::kernel::thread::{self, Thread};
use crate::mm::user;
use core::mem::size_of;

use crate::host::abi::*;

const SYNC_FAULTS: u64 = bit(SIGSEGV) | bit(SIGBUS) | bit(SIGFPE) | bit(SIGILL) | bit(SIGTRAP);
/// Signals no mask can block.
const UNBLOCKABLE: u64 = bit(SIGKILL) | bit(SIGSTOP);
/// Signals the host never blocks: SIGSYS (the trap path), SIGTRAP (a
/// thread may meet the patcher's transient `int3` at any time) and the
/// other fault types (a blocked fault would kill the process where the
/// runtime must recover its own accesses to bad program memory). When the
/// program blocks them, the runtime keeps them pending itself.
const NEVER_BLOCKED: u64 = UNBLOCKABLE | bit(SIGSYS) | SYNC_FAULTS;
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

fn in_runtime(rip: u64) -> bool {
    let (b, l) = crate::mm::runtime::image_range();
    (rip as usize) >= b && (rip as usize) < b + l
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
    let host_act = match act.handler {
        SIG_DFL | SIG_IGN => KSigaction {
            handler: act.handler,
            flags: keep | SA_RESTORER,
            restorer: arch::picos_restorer as *const () as usize,
            mask: 0,
        },
        _ => handler_action(host_signal as *const () as usize, keep),
    };
    if let Err(e) = host::rt_sigaction(sig, Some(&host_act), None) {
        crate::log!(Debug, "host rt_sigaction({}) failed: {}", sig, e);
    }
}

fn handler_action(handler: usize, extra: u64) -> KSigaction {
    KSigaction {
        handler,
        flags: SA_SIGINFO | SA_ONSTACK | SA_RESTORER | extra,
        restorer: arch::picos_restorer as *const () as usize,
        mask: RUNTIME_MASK,
    }
}

/// Installs the SIGSYS handler (the syscall trap path) and the handlers for
/// synchronous faults, which the runtime keeps whatever the program asks.
pub fn install_runtime_handlers() -> Result<(), crate::host::errno::Errno> {
    let h = |f: usize| handler_action(f, 0);
    host::rt_sigaction(SIGSYS, Some(&h(sigsys_handler as *const () as usize)), None)?;
    for sig in [SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP] {
        host::rt_sigaction(sig, Some(&h(host_signal as *const () as usize)), None)?;
    }
    Ok(())
}

/// At start-up: the program inherits ignored dispositions across execve, as
/// on Linux; everything else starts as SIG_DFL.
pub fn init_dispositions(t: &Thread) {
    let acts = &t.sighand().actions;
    for sig in 1..=thread::NSIG as i32 {
        if sig == SIGKILL || sig == SIGSTOP || sig == SIGSYS {
            continue;
        }
        let mut old = KSigaction::default();
        if host::rt_sigaction(sig, None, Some(&mut old)).is_ok() && old.handler == SIG_IGN {
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

/// Host handler for SIGSYS: a trapped system call, or a SIGSYS sent by `kill`.
extern "C" fn sigsys_handler(sig: i32, info: *mut SigInfo, uc: *mut UContext) {
    // SAFETY: the kernel passes valid, exclusive siginfo and ucontext pointers.
    let (info, uc) = unsafe { (&*info, &mut *uc) };
    // A trap describes the call it stopped (Linux's SUD: si_call_addr is
    // the address after the `syscall`, si_syscall its number, as in the
    // context); a SIGSYS the program sent itself with that si_code
    // (rt_tgsigqueueinfo allows any code for the own thread) does not,
    // and is a signal like any other.
    let trap = info.code() == SYS_USER_DISPATCH
        && info.addr() == uc.mcontext.rip
        && info.syscall() == uc.mcontext.rax as i32;
    if !trap {
        if info.code() == 0 && crate::kernel::process::is_parent_death(info) {
            return;
        }
        return host_signal(sig, info as *const SigInfo as *mut SigInfo, uc);
    }
    let Some(t) = thread::current_checked() else {
        runtime_crash(sig, info, uc);
    };
    crate::patch::note_fpstate(uc.mcontext.fpstate);
    if crate::sys::int80::arch_of(info) == crate::sys::int80::AUDIT_ARCH_I386 {
        crate::sys::int80::dispatch(t, uc);
        deliver_pending(t, uc);
        return;
    }
    let (nr, after) = (uc.mcontext.rax, uc.mcontext.rip as usize);
    if nr == crate::patch::DEFERRED_NR && crate::patch::finish_deferred(t, uc) {
        deliver_pending(t, uc);
        return;
    }
    let regs = uc.mcontext;
    crate::sys::dispatch(t, uc);
    if let Some(cont) = crate::patch::maybe_patch(after, nr, &regs) {
        // The patch covered this call's return address: continue in the
        // trampoline's copy (its `syscall` sits 2 bytes before `cont`, for
        // an SA_RESTART rewind).
        let rip = uc.mcontext.rip as usize;
        if rip == after || rip == after - 2 {
            uc.mcontext.rip = (cont - (after - rip)) as u64;
            if rip == after {
                uc.mcontext.rcx = cont as u64;
            }
        }
    }
    deliver_pending(t, uc);
}

/// A synchronous fault in runtime code that no fix-up covers. The runtime's
/// state lives in memory the program can write, and its per-thread pointer
/// in a register the program can change (`wrgsbase`): such a fault means
/// the program corrupted it (or picos has a bug). Reported, then the program
/// ends as Linux ends a program that faults: SIGSEGV.
fn runtime_crash(sig: i32, info: &SigInfo, uc: &UContext) -> ! {
    let addr = info.addr();
    let (base, _) = crate::mm::runtime::image_range();
    let rip = uc.mcontext.rip;
    let why = if thread::current_checked().is_none() {
        "the runtime's thread pointer (the GS base) no longer points at its state: \
         the program changed GS (wrgsbase) or overwrote the runtime's memory"
    } else {
        "the program corrupted the runtime's memory, or picos has a bug"
    };
    if in_runtime(rip) {
        crate::log!(
            Error,
            "signal {} in the runtime at rip={:#x} (image+{:#x}), fault address {:#x}: {}; ending the program with SIGSEGV",
            sig,
            rip,
            rip - base as u64,
            addr,
            why
        );
    } else {
        crate::log!(
            Error,
            "signal {} for the program at rip={:#x}: {}; ending the program with SIGSEGV",
            sig,
            rip,
            why
        );
    }
    die_of(SIGSEGV)
}

/// A signal of a fault type with a positive si_code is either a real fault
/// of the instruction at `rip` or one someone sent (`rt_sigqueueinfo` to
/// itself, a child's exit signal, rseq): the siginfo cannot tell them
/// apart. The first sighting is taken as sent; a real fault comes back at
/// once from the same instruction (nothing else runs in between: async
/// signals are blocked or only queue). Returns true for the second sighting,
/// after taking back the pending signal the first one queued.
fn fault_recurs(t: &Thread, sig: i32, rip: u64) -> bool {
    let p = t.fault_probe.get();
    if p.rip == rip && p.sig == sig {
        t.fault_probe.set(thread::FaultProbe::default());
        if p.queued {
            let _ = t.take_pending(!bit(sig));
        }
        return true;
    }
    t.fault_probe.set(thread::FaultProbe {
        rip,
        sig,
        queued: !t.is_pending(sig),
    });
    false
}

/// A SIGTRAP reports the instruction after the trap, so it never recurs:
/// `int3` is known by its code (SI_KERNEL) and the 0xCC byte before RIP, a
/// single step (TRAP_TRACE) by the trap flag. Other signals: false.
fn is_real_trap(sig: i32, info: &SigInfo, uc: &UContext) -> bool {
    const TRAP_TRACE: i32 = 2;
    if sig != SIGTRAP {
        return false;
    }
    let rip = uc.mcontext.rip;
    match info.code() {
        SI_KERNEL => user::read::<u8>(rip.wrapping_sub(1) as usize) == Ok(0xcc),
        TRAP_TRACE => uc.mcontext.eflags & 0x100 != 0,
        _ => false,
    }
}

/// Host handler for every signal the program handles.
extern "C" fn host_signal(sig: i32, info: *mut SigInfo, uc: *mut UContext) {
    // SAFETY: the kernel passes valid, exclusive siginfo and ucontext pointers.
    let (info, uc) = unsafe { (&*info, &mut *uc) };
    let rip = uc.mcontext.rip;
    // A fault type with a kernel si_code: a real fault, or one sent with
    // such a code (see `fault_recurs`).
    let maybe_fault = SYNC_FAULTS & bit(sig) != 0 && info.code() > 0;
    if maybe_fault && arch::in_resume(rip) {
        // The resume jump faulted: its target (a handler, a sigreturn
        // frame's RIP) is not a canonical address. Put the program's
        // context in place: the host's return to it faults as Linux's own
        // return would, in the program.
        crate::patch::complete_exit(uc);
        if !arch::is_canonical(uc.mcontext.rip) {
            return;
        }
    } else if !maybe_fault && crate::patch::complete_exit(uc) {
        // A fast return to the program was under way, its result final:
        // deliver on the program context it returns to.
        let t = thread::current();
        t.add_pending(info);
        deliver_pending(t, uc);
        return;
    }
    if sig == SIGTRAP
        && maybe_fault
        && !in_runtime(rip)
        && crate::patch::is_patch_trap(rip as usize)
    {
        // Another thread is patching this site: run it again.
        uc.mcontext.rip = rip - 1;
        return;
    }
    let rip = uc.mcontext.rip;
    let current = thread::current_checked();
    // Runtime code, or code the runtime called on its own stack (the
    // vDSO's clocks): a signal there is the runtime's business, never
    // delivered on that context.
    let runtime_ctx =
        in_runtime(rip) || current.is_some_and(|t| t.on_runtime_stack(uc.mcontext.rsp));
    if runtime_ctx {
        let Some(t) = current else {
            if maybe_fault {
                runtime_crash(sig, info, uc);
            }
            return;
        };
        let rewind = arch::blocking_rewind(rip);
        if maybe_fault {
            if let Some(fix) = arch::fault_fixup(rip) {
                // A copy from or to program memory: its own fault (-EFAULT)
                // if the fault address matches. (Another thread may change
                // that memory meanwhile: the fault need not recur.)
                let addr = info.addr();
                if arch::fixup_fault_is_real(&uc.mcontext, info.code(), addr) {
                    uc.mcontext.rip = fix;
                    return;
                }
            } else if rewind.is_none() && fault_recurs(t, sig, rip) {
                // (A fault cannot happen in the blocking window: a `syscall`.)
                runtime_crash(sig, info, uc);
            }
        }
        if t.delivering.get() && !maybe_fault {
            // The fast path is delivering with signals open (see
            // `patch::deliver_on`): back to the host, blocked until that
            // delivery sets the program's mask.
            let _ = host::rt_tgsigqueueinfo(host::getpid(), t.tid(), sig, &info.0);
            uc.sigmask |= bit(sig);
            return;
        }
        t.add_pending(info);
        if let Some(r) = rewind {
            uc.mcontext.rip = r;
        }
        return;
    }
    let Some(t) = current else {
        runtime_crash(sig, info, uc);
    };
    if maybe_fault {
        let handler = t.sighand().get(sig).handler;
        let blocked = t.sig_mask.get() & bit(sig) != 0;
        if handler == SIG_DFL && !blocked {
            crate::log!(
                Debug,
                "program fault: signal {} at rip={:#x} addr={:#x} rsp={:#x}",
                sig,
                uc.mcontext.rip,
                info.addr(),
                uc.mcontext.rsp
            );
            // Real or sent, the default action: raise the signal again with
            // the host's default disposition. It stays pending (blocked in
            // this handler) until the program's context is back, so the
            // process dies there (core dump and all), before the faulting
            // instruction could run again, as natively.
            let dfl = host_default();
            let _ = host::rt_sigaction(sig, Some(&dfl), None);
            let _ = host::tgkill(host::getpid(), host::gettid(), sig);
            uc.sigmask = host_mask(t.sig_mask.get()) & !bit(sig);
            return;
        }
        if handler == SIG_IGN || blocked {
            // A real fault the program blocks or ignores kills it (Linux's
            // force_sig); a sent one is ignored or stays pending.
            if is_real_trap(sig, info, uc) || fault_recurs(t, sig, rip) {
                die_of(sig);
            }
            if blocked {
                t.add_pending(info);
            }
            return;
        }
    } else if t.sig_mask.get() & bit(sig) != 0 {
        // A signal the host does not block for the program (SIGSYS and the
        // fault types): it waits here until the program unblocks it.
        t.add_pending(info);
        return;
    }
    // Through the pending set: an instance of the same standard signal that
    // is already pending (queued while the runtime ran) merges with this
    // one, signals go out in order, and the pending flag is brought up to
    // date with the handler's mask. A fault goes first (the thread's own
    // queue); a sent fault type with a handler is delivered at once anyway.
    if maybe_fault {
        t.add_fault(info);
    } else {
        t.add_pending(info);
    }
    deliver_pending(t, uc);
}

/// Delivers every pending signal the program does not block, on top of the
/// program context in `uc`; re-queues the rest on the host.
pub fn deliver_pending(t: &Thread, uc: &mut UContext) {
    while let Some(info) = t.take_for_delivery(t.sig_mask.get()) {
        deliver(t, &info, uc);
    }
    if let Some(saved) = t.saved_mask.take() {
        t.sig_mask.set(saved);
    }
    t.fault_probe.set(thread::FaultProbe::default());
    // What the program blocks goes back to the host, except the signals the
    // host never blocks: those wait here until the program unblocks them.
    while let Some((info, private)) = t.take_pending_queued(NEVER_BLOCKED) {
        requeue_on_host(t, &info, private);
    }
    uc.sigmask = host_mask(t.sig_mask.get());
    t.update_pending_flag();
}

/// Queues a signal the runtime holds on the host again, in the queue it
/// was in: the thread's (`rt_tgsigqueueinfo`) or the process's
/// (`rt_sigqueueinfo`; either takes any `si_code` for the own process).
pub fn requeue_on_host(t: &Thread, info: &SigInfo, private: bool) {
    let pid = host::getpid();
    let _ = if private {
        host::rt_tgsigqueueinfo(pid, t.tid(), info.signo(), &info.0)
    } else {
        host::rt_sigqueueinfo(pid, info.signo(), &info.0)
    };
}

/// Does the first signal that would be delivered now have SA_RESTART?
pub fn pending_wants_restart(t: &Thread) -> bool {
    let Some(sig) = t.peek_pending(t.sig_mask.get()) else {
        return false;
    };
    let act = t.sighand().get(sig);
    act.handler > SIG_IGN && act.flags & SA_RESTART != 0
}

/// A synchronous signal the kernel would force on the thread (Linux's
/// `force_sig`): queued for delivery when the call returns, or, if the
/// program blocks or ignores it, its default action at once.
pub fn force_sig(t: &Thread, sig: i32, code: i32) {
    if t.sig_mask.get() & bit(sig) != 0 || t.sighand().get(sig).handler == SIG_IGN {
        die_of(sig);
    }
    t.add_fault(&SigInfo::kernel(sig, code));
}

/// Ends the process of signal `sig` (its default action on the host; the
/// exit status a shell would give if that action does not end it).
pub fn die_of(sig: i32) -> ! {
    die_by_signal(sig);
    host::exit_group(128 + sig)
}

/// The host disposition for a signal's default action.
fn host_default() -> KSigaction {
    KSigaction {
        handler: SIG_DFL,
        flags: SA_RESTORER,
        restorer: arch::picos_restorer as *const () as usize,
        mask: 0,
    }
}

/// Runs signal `sig`'s default action on the host (terminate, core, stop),
/// returning only if the action does not end the process.
pub fn die_by_signal(sig: i32) {
    let dfl = host_default();
    let mut old = KSigaction::default();
    let _ = host::rt_sigaction(sig, Some(&dfl), Some(&mut old));
    let old_mask = host::rt_sigprocmask(SIG_UNBLOCK, Some(bit(sig))).unwrap_or(RUNTIME_MASK);
    let _ = host::tgkill(host::getpid(), host::gettid(), sig);
    // A stop signal returns here after SIGCONT.
    let _ = host::rt_sigprocmask(SIG_SETMASK, Some(old_mask));
    let _ = host::rt_sigaction(sig, Some(&old), None);
}

/// Delivers one signal to the program according to its disposition.
pub fn deliver(t: &Thread, info: &SigInfo, uc: &mut UContext) {
    let sig = info.signo();
    crate::diag::stats::signal(t, SYNC_FAULTS & bit(sig) != 0 && info.code() > 0);
    let act = t.sighand().get(sig);
    match act.handler {
        SIG_IGN => {}
        SIG_DFL => {
            if !default_ignored(sig) {
                die_by_signal(sig);
            }
        }
        _ => {
            if act.flags & SA_RESETHAND != 0 {
                // As Linux: reset when the signal is taken, before its
                // frame is built (it stays reset if that fails).
                let dfl = KSigaction::default();
                t.sighand().actions.set(sig, &dfl);
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
            }
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
    crate::patch::finish_deferred(t, uc);
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
    let fp_src = ctx.fpstate as usize;
    let mut fp_dst = 0u64;
    if fp_src != 0 {
        // SAFETY: the kernel-built frame's fpstate is readable runtime memory.
        let size = unsafe { arch::fpstate_size(fp_src as *const u8) };
        sp = (sp - size as u64) & !63;
        // SAFETY: reading `size` bytes of the kernel-built FPU frame.
        let bytes = unsafe { core::slice::from_raw_parts(fp_src as *const u8, size) };
        user::copy_out(sp as usize, bytes)?;
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
    if saved.mcontext.fpstate != 0 && host_fp != 0 {
        // SAFETY: host_fp is the kernel-built FPU frame of this SIGSYS.
        let size = unsafe { arch::fpstate_size(host_fp as *const u8) };
        // SAFETY: writing within that frame.
        let dst = unsafe { core::slice::from_raw_parts_mut(host_fp as *mut u8, size) };
        user::copy_in(dst, saved.mcontext.fpstate as usize)?;
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
