//! The trap entry: the host's signal handlers. SIGSYS from Syscall User
//! Dispatch is a system call to serve (`sigsys_handler`); every other
//! signal the runtime handles (the program's, and faults, which may be the
//! runtime's own) comes to `host_signal`.
//!
//! Nothing here dereferences a raw pointer: `arch` turns the kernel's
//! `siginfo`/`ucontext` pointers into references before these run.
#![deny(unsafe_code)]

use crate::arch::{self, SigInfo, UContext};
use crate::host::abi::*;
use crate::host::{self};
use crate::kernel::signal::*;
use crate::kernel::thread::{self, Thread};
use crate::mm::user;

fn in_runtime(rip: u64) -> bool {
    let (b, l) = crate::mm::runtime::image_range();
    (rip as usize) >= b && (rip as usize) < b + l
}

/// Installs the SIGSYS handler (the syscall trap path) and the handlers for
/// synchronous faults, which the runtime keeps whatever the program asks.
/// Signals the program handles go to `host_signal` too (see
/// `kernel::signal::sync_host_action`).
pub fn install_runtime_handlers() -> Result<(), crate::host::errno::Errno> {
    let program = arch::handler_address::<HostSignal>();
    set_program_handler(program);
    let h = |f: usize| handler_action(f, 0);
    host::rt_sigaction(SIGSYS, Some(&h(arch::handler_address::<Sigsys>())), None)?;
    for sig in [SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP] {
        host::rt_sigaction(sig, Some(&h(program)), None)?;
    }
    Ok(())
}

struct Sigsys;
impl arch::SignalHandler for Sigsys {
    fn handle(sig: i32, info: &SigInfo, uc: &mut UContext) {
        sigsys_handler(sig, info, uc)
    }
}

struct HostSignal;
impl arch::SignalHandler for HostSignal {
    fn handle(sig: i32, info: &SigInfo, uc: &mut UContext) {
        host_signal(sig, info, uc)
    }
}

/// Host handler for SIGSYS: a trapped system call, or a SIGSYS sent by
/// `kill`; timed under `--profile`.
fn sigsys_handler(sig: i32, info: &SigInfo, uc: &mut UContext) {
    if !crate::diag::stats::profiling() {
        return sigsys(sig, info, uc);
    }
    let t0 = crate::arch::rdtsc();
    sigsys(sig, info, uc);
    if let Some(t) = thread::current_checked() {
        crate::diag::stats::trap_time(&t.stats, crate::arch::rdtsc() - t0);
    }
}

fn sigsys(sig: i32, info: &SigInfo, uc: &mut UContext) {
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
        if crate::kernel::ptrace::is_doorbell(info) {
            return doorbell(uc);
        }
        return host_signal(sig, info, uc);
    }
    let Some(t) = thread::current_checked() else {
        runtime_crash(sig, info, uc);
    };
    if crate::entry::int80::arch_of(info) == crate::entry::int80::AUDIT_ARCH_I386 {
        crate::entry::int80::dispatch(t, uc);
        deliver_pending(t, uc);
        return;
    }
    let (nr, after) = (uc.mcontext.rax, uc.mcontext.rip as usize);
    if nr == crate::patch::DEFERRED_NR && crate::kernel::signal::finish_deferred(t, uc) {
        deliver_pending(t, uc);
        return;
    }
    let regs = uc.mcontext;
    let owner = t.process() as *const _ as usize;
    if nr == crate::host::nr::EXIT_GROUP as u64 {
        // The call does not return: a fork child's `_exit` leaves its hint
        // now (`patch::hint_exit`).
        crate::patch::hint_exit(after, nr, &regs, owner);
    } else if nr == crate::host::nr::EXIT as u64 {
        // Nor does a thread's exit: its site (glibc's thread exit) is seen,
        // and patched at its `patch::PATCH_AT_TRAP`th trap, before the call.
        let _ = crate::patch::maybe_patch(after, nr, &regs, owner);
    }
    crate::entry::dispatch::dispatch(t, uc);
    // An execve that replaced the program in place: the site is gone with
    // the old program.
    let replaced = (nr == crate::host::nr::EXECVE as u64 || nr == crate::host::nr::EXECVEAT as u64)
        && uc.mcontext.rip as usize != after;
    if replaced {
        deliver_pending(t, uc);
        return;
    }
    if let Some(cont) = crate::patch::maybe_patch(after, nr, &regs, owner) {
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

/// The ptrace doorbell (`kernel::ptrace`): the tracer asks this thread to
/// stop. In the program, it stops here; in the runtime (a call under way,
/// perhaps blocked: it ends with EINTR and restarts), it stops before the
/// program goes on.
fn doorbell(uc: &mut UContext) {
    let Some(t) = thread::current_checked() else {
        return;
    };
    t.ptrace_doorbell.set(true);
    // As a pending signal: a blocking call about to start does not start
    // (the stubs check the flag), and the fast path's return delivers.
    t.update_pending_flag();
    let rip = uc.mcontext.rip as usize;
    if !crate::mm::runtime::owns(rip, 1)
        && !t.on_runtime_stack(uc.mcontext.rsp)
        && !arch::in_resume(uc.mcontext.rip)
    {
        deliver_pending(t, uc);
    } else if let Some(r) = arch::blocking_rewind(uc.mcontext.rip) {
        // Between the stub's check of the flag and its `syscall`.
        uc.mcontext.rip = r;
    }
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
fn host_signal(sig: i32, info: &SigInfo, uc: &mut UContext) {
    let rip = uc.mcontext.rip;
    // A fault type with a kernel si_code: a real fault, or one sent with
    // such a code (see `fault_recurs`).
    let maybe_fault = SYNC_FAULTS & bit(sig) != 0 && info.code() > 0;
    if maybe_fault
        && (sig == SIGSEGV || sig == SIGBUS)
        && crate::patch::stack_fault_fallback(&mut uc.mcontext, info.addr())
    {
        // A trampoline's push on a read-only program stack: the call goes
        // the trap path instead.
        return;
    }
    if maybe_fault && arch::in_resume(rip) {
        // The resume jump faulted: its target (a handler, a sigreturn
        // frame's RIP) is not a canonical address. Put the program's
        // context in place: the host's return to it faults as Linux's own
        // return would, in the program.
        crate::entry::fast::complete_exit(uc);
        if !arch::is_canonical(uc.mcontext.rip) {
            return;
        }
    } else if !maybe_fault && crate::entry::fast::complete_exit(uc) {
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
        return in_runtime_context(sig, info, uc, current, maybe_fault);
    }
    let Some(t) = current else {
        runtime_crash(sig, info, uc);
    };
    if maybe_fault {
        if !fault_for_a_handler(t, sig, info, uc) {
            return;
        }
    } else if t.sig_mask.get() & bit(sig) & NEVER_BLOCKED != 0 {
        // A signal the host does not block for the program (SIGSYS and the
        // fault types): it waits here until the program unblocks it.
        t.add_pending(info);
        return;
    }
    // (One the program blocks that the host's mask left open,
    // `set_mask_lazily`, goes back to the host's queue through the pending
    // set below, and the host's mask becomes the program's.)
    // Through the pending set: an instance of the same standard signal that
    // is already pending (queued while the runtime ran) merges with this
    // one, signals go out in order, and the pending flag is brought up to
    // date with the handler's mask. A fault goes first (the thread's own
    // queue); a sent fault type with a handler is delivered at once anyway.
    if maybe_fault {
        t.add_fault(info);
    } else if t.sig_mask.get() & bit(sig) != 0 {
        take_back_lazy(t, info);
    } else {
        t.add_pending(info);
    }
    if deliver_pending(t, uc) && maybe_fault {
        // A fault for the program's handler: enter the handler from here
        // rather than through the host's rt_sigreturn. That return would
        // load registers and reset the FPU, which the handler does not need
        // (its FPU starts in the initial state the kernel gave this
        // handler, as Linux starts a handler): setting the mask and jumping
        // costs about half (`picos bench`, "protection fault handled").
        // Signals that arrive once the mask is in force are runtime-context
        // signals, kept pending and delivered by picos_resume_full first.
        let _ = host::rt_sigprocmask(SIG_SETMASK, Some(uc.sigmask));
        arch::resume_from_handler(&t.entry, &uc.mcontext);
    }
}

/// A signal that arrived while runtime code ran (or code the runtime called
/// on its own stack): recovered if it is a user-copy fault, fatal if it is
/// a fault of the runtime's own, otherwise kept pending for delivery when
/// the runtime returns to the program (a blocking call it interrupted is
/// rewound to report it).
fn in_runtime_context(
    sig: i32,
    info: &SigInfo,
    uc: &mut UContext,
    current: Option<&'static Thread>,
    maybe_fault: bool,
) {
    let rip = uc.mcontext.rip;
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
        // `entry::fast::deliver_on`): back to the host, blocked until that
        // delivery sets the program's mask (kept here if the host has no
        // room for it).
        uc.sigmask |= bit(sig);
        if requeue_on_host(t, info, true) {
            return;
        }
    }
    t.add_pending(info);
    if sig >= 32 {
        // A real-time signal queues: further instances wait on the host,
        // in their order, until this one is delivered (the delivery sets
        // the host's mask again). Left open, a burst would come to this
        // handler one after another while the runtime runs, and overflow
        // the runtime's short queue of instances.
        uc.sigmask |= bit(sig);
    }
    if let Some(r) = rewind {
        uc.mcontext.rip = r;
    }
}

/// A fault-type signal (a real fault, or one sent with a kernel si_code)
/// for the program. Its default action, or a fault the program blocks or
/// ignores, is dealt with here; true if it is for the program's handler.
fn fault_for_a_handler(t: &Thread, sig: i32, info: &SigInfo, uc: &mut UContext) -> bool {
    let rip = uc.mcontext.rip;
    let handler = t.process().get(sig).handler;
    let blocked = t.sig_mask.get() & bit(sig) != 0;
    if handler == SIG_DFL && !blocked && t.ptrace.get() != 0 {
        // A traced thread: its tracer sees the signal first (a
        // signal-delivery stop, `kernel::ptrace::signal_stop`), and may
        // suppress it (a real fault then happens again).
        return true;
    }
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
        return false;
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
        return false;
    }
    true
}
