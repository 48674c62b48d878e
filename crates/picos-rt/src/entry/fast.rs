//! The fast entries: a patched site's trampoline calls `picos_fast_entry`
//! (any call: dispatched here without a signal), `picos_direct_entry` or
//! `picos_direct_blocking_entry` (a call the host serves unchanged: issued
//! at once), or `picos_dynamic_entry` (a site whose number is in a
//! register). The stubs are in `arch`; this is their Rust side, and the
//! ways back to the program: straight return, resume through a full
//! context (signal delivery, sigreturn), or the trap path ("deferred").
//!
//! See `patch` for the sites and trampolines, docs/ARCHITECTURE.md for the
//! paths.
#![deny(unsafe_code)]

/// Syscalls that the fast entry hands to the trap path at once: they need
/// the complete signal context (FPU state) or replace the register state
/// (the table's `full_context`).
#[inline]
fn needs_trap(nr: u64) -> bool {
    let bits = &crate::sys::table::FULL_CONTEXT;
    bits.get(nr as usize / 64)
        .is_some_and(|w| w & (1 << (nr % 64)) != 0)
}

use crate::arch::{FastFrame, SigContext, UContext, FAST_FRAME_GAP};
use crate::entry::dispatch::Outcome;
use crate::host;
use crate::host::errno::Errno;
use crate::kernel::thread::Thread;
use crate::patch::{DEFERRED_NR, RET_TO_SLOW};
use core::sync::atomic::Ordering;

/// Where `picos_fast_entry` puts the FastFrame of thread `t`.
fn frame_addr(t: &Thread) -> usize {
    (t.stack_top() & !63) - FAST_FRAME_GAP - core::mem::size_of::<FastFrame>()
}

/// After a fast call that may have changed the program's signal mask (it
/// was `before`): on the fast path the host's mask is the program's, except
/// for the signals the runtime may leave open there
/// (`kernel::signal::set_mask_lazily`), so a change goes to the host now
/// only where it must. Signals this unblocks arrive during this host call
/// and wait in the thread's pending set (several of a real-time signal, in
/// order); the exit sequence then delivers them. True if the mask changed.
/// A synchronous fault's own bit, added while its handler runs, never
/// reaches the host, so returning from such a handler costs no host call.
fn sync_host_mask(t: &Thread, before: u64) -> bool {
    if t.sig_mask.get() == before {
        return false;
    }
    crate::kernel::signal::set_mask_lazily(t);
    true
}

/// The program context a fast call returns to, as the frame describes it:
/// registers from the frame, RFLAGS saved by the entry, RSP above the red
/// zone, RIP = the continuation in RCX (site+7, or the trampoline's slow path).
fn final_context(f: &FastFrame, base: &SigContext) -> SigContext {
    crate::arch::on_host_frame(fast_context(f), base)
}

/// The program's registers as the fast entry saved them, built in place
/// (no segment or FPU state: the fast path never needs them).
#[inline(always)]
fn fast_context(f: &FastFrame) -> SigContext {
    let flags = f.entry_flags();
    SigContext {
        r8: f.r8,
        r9: f.r9,
        r10: f.r10,
        r11: f.r11,
        r12: f.r12,
        r13: f.r13,
        r14: f.r14,
        r15: f.r15,
        rdi: f.rdi,
        rsi: f.rsi,
        rbp: f.rbp,
        rbx: f.rbx,
        rdx: f.rdx,
        rax: f.rax,
        rcx: f.rcx,
        rsp: f.guest_sp() + 16 + 128,
        rip: f.rcx,
        eflags: flags,
        cs: 0,
        gs: 0,
        fs: 0,
        ss: 0,
        err: 0,
        trapno: 0,
        oldmask: 0,
        cr2: 0,
        fpstate: 0,
        reserved1: [0; 8],
    }
}

/// A signal interrupted the last instructions of a fast return to the
/// program (the fast entry's exit sequence, a direct entry's, or
/// picos_resume_full's): replaces the interrupted (runtime) context in `uc`
/// by the program context being returned to, so that the signal is
/// delivered there. False if `uc` is in none of them.
pub fn complete_exit(uc: &mut UContext) -> bool {
    let rip = uc.mcontext.rip;
    if crate::arch::in_fast_exit(rip) {
        let t = crate::kernel::thread::current();
        if t.entry.resume_on.swap(0, Ordering::Relaxed) != 0 {
            // It was about to return to a context of its own (signals just
            // delivered): that one.
            complete_resume(t, uc);
        } else {
            complete_fast(t, uc);
        }
    } else if crate::arch::in_resume(rip) {
        complete_resume(crate::kernel::thread::current(), uc);
    } else if let Some(at) = crate::arch::in_direct_exit(rip) {
        complete_direct(uc, at);
    } else {
        return false;
    }
    true
}

/// A signal interrupted the fast entry's exit sequence on thread `t`:
/// replace the interrupted (runtime) context in `uc` by the program context
/// the fast call is returning to, so the signal is delivered there.
fn complete_fast(t: &Thread, uc: &mut UContext) {
    // The frame lies in this thread's runtime stack, written by the fast
    // entry, and stays intact until the entry's final `ret`.
    let Some(f) = crate::mm::runtime::read_in_slot::<FastFrame>(t.slot, frame_addr(t)) else {
        return;
    };
    uc.mcontext = final_context(&f, &uc.mcontext);
}

/// Would call `nr` unmap (or map over) the two words of the program's stack
/// the fast entry still reads once the call is made: the RFLAGS it pushed
/// and the trampoline's return address? musl's thread exit does that: a
/// detached thread unmaps the stack it runs on and exits, with nothing
/// between the two `syscall`s that touches memory (`__unmapself`). Such a
/// call takes the trampoline's own `syscall` (the trap path, whose signal
/// frame is on the runtime's stack), which needs no program stack after
/// the call. (Until the 25th session the runtime faulted reading the
/// flags: a musl program whose third detached thread ended was killed.)
/// The ranges are the calls' own: munmap's and mremap's old range, a
/// MAP_FIXED mmap's; rounded out to pages.
#[inline]
fn unmaps_entry_words(nr: u64, f: &FastFrame) -> bool {
    use crate::host::nr::{MMAP, MREMAP, MUNMAP};
    let map_fixed = crate::mm::runtime::MAP_FIXED as u64;
    let (addr, len) = match nr as usize {
        MUNMAP | MREMAP => (f.rdi, f.rsi),
        MMAP if f.r10 & map_fixed != 0 => (f.rdi, f.rsi),
        _ => return false,
    };
    let page = crate::mm::runtime::PAGE_SIZE as u64;
    let start = addr & !(page - 1);
    let end = addr.saturating_add(len).saturating_add(page - 1) & !(page - 1);
    let sp = f.guest_sp();
    start < sp.saturating_add(16) && sp < end
}

/// A plain fork by clone(2) (no CLONE_VM, no stack of the child's own), a
/// `full_context` call that needs no context after all: the child is a
/// copy of this process, runtime stack included, and returns to the program
/// through its copy of this fast call, as the parent does (RAX 0, every
/// other register as the parent's). glibc's `fork` is such a call. It then
/// costs no SIGSYS and no rt_sigreturn, and its parent and child write
/// fewer pages after the fork (copy-on-write faults: the signal frame).
/// A traced thread keeps the trap path: the tracer's fork event shows the
/// registers.
fn fork_on_fast_path(t: &Thread, nr: u64, f: &FastFrame) -> bool {
    nr == crate::host::nr::CLONE as u64
        && f.rdi & crate::sys::process::CLONE_VM == 0
        && f.rsi == 0
        && t.ptrace.get() == 0
}

/// A new thread (clone or clone3 with CLONE_VM and CLONE_THREAD, without
/// CLONE_VFORK), a `full_context` call whose context the fast path can
/// build: the program's registers are in the frame, its FPU registers
/// still hold its own state (the runtime uses none), saved with `xsave` in
/// the format the kernel's frames use ([`new_thread`]). Not for a traced
/// thread (the tracer's clone event), nor without XSAVE or a known image
/// format, nor under `--log-level trace`.
fn thread_on_fast_path(t: &Thread, nr: u64, f: &FastFrame) -> bool {
    use crate::sys::process::{CLONE_THREAD, CLONE_VFORK, CLONE_VM};
    if !crate::arch::fpu::format_known()
        || !crate::arch::has_xsave()
        || crate::diag::log::enabled(crate::diag::log::LogLevel::Trace)
        || t.ptrace_doorbell.get()
        || crate::kernel::ptrace::traced(t)
    {
        return false;
    }
    let flags = if nr == crate::host::nr::CLONE as u64 {
        f.rdi
    } else if nr == crate::host::nr::CLONE3 as u64 {
        // `struct clone_args` starts with the flags (the handler reads it
        // all again, and checks it).
        match crate::mm::user::read::<u64>(f.rdi as usize) {
            Ok(flags) => flags,
            Err(_) => return false,
        }
    } else {
        return false;
    };
    flags & (CLONE_VM | CLONE_THREAD) == CLONE_VM | CLONE_THREAD && flags & CLONE_VFORK == 0
}

/// Serves [`thread_on_fast_path`]'s call with the context a trap would
/// have given: the frame's registers (RIP where the call continues), the
/// user code and stack segments, the program's mask, and an image of the
/// FPU registers, from which the handler builds the new thread's first
/// frame (`kernel::thread::prepare_child`: the kernel's `rt_sigreturn`
/// starts the thread from it). Never inlined: the image's buffer (12 KiB)
/// would otherwise deepen the stack of every fast call, and a fork's parent
/// and child would each copy three more stack pages.
#[inline(never)]
fn new_thread(
    t: &'static Thread,
    nr: u64,
    args: [usize; 6],
    site_ret: u64,
    f: &FastFrame,
) -> Outcome {
    use crate::arch::{UC_FP_XSTATE, UC_SIGCONTEXT_SS, USER_CS, USER_DS};
    let mut buf = core::mem::MaybeUninit::uninit();
    let mut uc = UContext {
        flags: UC_FP_XSTATE | UC_SIGCONTEXT_SS,
        mcontext: fast_context(f),
        sigmask: crate::kernel::signal::host_mask(t.sig_mask.get()),
        ..UContext::default()
    };
    uc.mcontext.cs = USER_CS;
    uc.mcontext.ss = USER_DS;
    match crate::arch::fpu::xsave_image(&mut buf) {
        Some(fp) => uc.mcontext.fpstate = fp,
        // (Checked by thread_on_fast_path: not expected.)
        None => return Outcome::Return(Errno::EAGAIN.to_ret() as u64),
    }
    crate::entry::dispatch::dispatch_fast_full(t, nr as usize, args, site_ret, &mut uc)
}

/// Serves a system call from a patched site (called by picos_fast_entry).
pub(super) extern "C" fn picos_fast_syscall(f: &mut FastFrame) {
    let t = crate::kernel::thread::of_frame(f as *const FastFrame as usize);
    let ret = f.trampoline_ret();
    let site_ret = f.continuation();
    let slow = (ret + RET_TO_SLOW) as u64;
    // Linux takes the call number from EAX (see `entry::dispatch`).
    let nr = f.rax as u32 as u64;
    if nr == 15 && fast_sigreturn(t, f) {
        return; // the entry continues at picos_resume_full
    }
    let full = needs_trap(nr) && !fork_on_fast_path(t, nr, f);
    let thread = full && thread_on_fast_path(t, nr, f);
    if full && !thread || unmaps_entry_words(nr, f) {
        f.rcx = slow;
        return;
    }
    f.rcx = site_ret;
    let mask_before = t.sig_mask.get();
    let args = [f.rdi, f.rsi, f.rdx, f.r10, f.r8, f.r9].map(|a| a as usize);
    t.in_fast.set(true);
    let mut out = if thread {
        new_thread(t, nr, args, site_ret, f)
    } else {
        crate::entry::dispatch::dispatch_fast(t, nr as usize, args, site_ret)
    };
    t.in_fast.set(false);
    if sync_host_mask(t, mask_before) {
        if nr == crate::host::nr::RT_SIGPROCMASK as u64
            && crate::kernel::signal::came_before_blocking(t, mask_before)
        {
            // An instance of a real-time signal the call blocks came while
            // it ran (the host's signals are open on the fast path): as if
            // it had come just before the call, it is delivered first and
            // the call runs again. Kept pending, it could only go back to
            // the end of the host's queue, behind later instances.
            t.sig_mask.set(mask_before);
            out = Outcome::Rewind;
        }
        t.update_pending_flag();
    }
    match out {
        Outcome::Return(v) => {
            // As `syscall` leaves them: RCX = where it continues (set
            // above), R11 = RFLAGS.
            f.rax = v;
            f.r11 = f.entry_flags();
        }
        Outcome::Rewind => {
            // Run the `syscall` again after the signal's handler: finish
            // through the trap path, at the site's `syscall` with the
            // number back in RAX.
            let mut m = fast_context(f);
            m.rip = site_ret - 2;
            t.deferred.set(Some(m));
            f.rax = DEFERRED_NR;
            f.rcx = slow;
        }
        Outcome::KeepRegs => {
            unreachable!("only full-context calls replace the registers")
        }
    }
}

/// The FPU image of a signal frame at `fp`, if it is one `xrstor` may load:
/// 64-byte aligned, with the kernel's extended-state markers. Returns the
/// feature mask to restore (the image's own, as the kernel uses).
fn fp_image(fp: usize) -> Option<(u32, u32)> {
    use crate::arch::fpu::{FP_SW_RESERVED, FP_XSTATE_MAGIC1, FP_XSTATE_MAGIC2, MAX_FP_IMAGE};
    if fp == 0 || fp % 64 != 0 {
        return None;
    }
    let mut sw = [0u8; 20];
    crate::mm::user::copy_in(&mut sw, fp + FP_SW_RESERVED).ok()?;
    let word = |i: usize| u32::from_ne_bytes(sw[i..i + 4].try_into().unwrap());
    let (magic1, xfeatures, size) = (
        word(0),
        u64::from_ne_bytes(sw[8..16].try_into().unwrap()),
        word(16),
    );
    if magic1 != FP_XSTATE_MAGIC1 || !(576..=MAX_FP_IMAGE as u32).contains(&size) {
        return None;
    }
    let mut m2 = [0u8; 4];
    crate::mm::user::copy_in(&mut m2, fp + size as usize).ok()?;
    (u32::from_ne_bytes(m2) == FP_XSTATE_MAGIC2)
        .then_some((xfeatures as u32, (xfeatures >> 32) as u32))
}

/// rt_sigreturn without the trap: restores the FPU state with `xrstor`
/// from the frame, the rest as the trap path does (`kernel::signal::sigreturn`),
/// and has the fast entry return to the restored context itself
/// (`arch::picos_resume_full`). False leaves everything to the trap path:
/// tracing, no XSAVE, a frame it does not recognise, single-stepping.
fn fast_sigreturn(t: &'static Thread, f: &FastFrame) -> bool {
    if crate::diag::log::enabled(crate::diag::log::LogLevel::Trace) || !crate::arch::has_xsave() {
        return false;
    }
    let mut uc = UContext {
        mcontext: fast_context(f),
        ..UContext::default()
    };
    let Ok(saved) = crate::mm::user::read::<UContext>(uc.mcontext.rsp as usize) else {
        return false;
    };
    if saved.mcontext.eflags & 0x100 != 0 {
        return false; // TF: let the kernel start the single-stepping
    }
    let fp = saved.mcontext.fpstate as usize;
    let Some((lo, hi)) = fp_image(fp) else {
        return false;
    };
    if !crate::arch::fpu::xrstor(fp, lo, hi) {
        return false;
    }
    let before = t.sig_mask.get();
    if crate::kernel::signal::sigreturn_from(t, &mut uc, &saved).is_err() {
        return false; // the trap path reads the frame again and sends SIGSEGV
    }
    t.in_fast.set(true);
    crate::diag::stats::syscall(&t.stats, 15, true, true);
    t.in_fast.set(false);
    sync_host_mask(t, before);
    t.update_pending_flag();
    uc.mcontext.fpstate = 0;
    t.entry.resume.set(uc.mcontext);
    t.entry.resume_on.store(1, Ordering::Relaxed);
    true
}

/// Signals are pending as the fast entry is about to return to
/// `Thread::resume`: deliver them on it (called by picos_resume_full).
pub(super) extern "C" fn picos_resume_deliver() {
    let t = crate::kernel::thread::current();
    let mut m = t.entry.resume.get();
    deliver_on(t, &mut m, &mut core::mem::MaybeUninit::uninit());
    t.entry.resume.set(m);
}

/// Delivers the pending signals the program does not block on context
/// `m`, building their frames with an image of the FPU registers (which
/// hold the program's state) saved into `buf`, as a host signal handler
/// would. Without an image format learnt from the kernel (`note_fpstate`),
/// frames get no FPU state (the trap path is used instead where it can be).
fn deliver_on(
    t: &Thread,
    m: &mut SigContext,
    buf: &mut core::mem::MaybeUninit<crate::arch::fpu::FpImage>,
) {
    let mut uc = UContext {
        mcontext: *m,
        sigmask: crate::kernel::signal::host_mask(t.sig_mask.get()),
        ..UContext::default()
    };
    uc.mcontext.fpstate = crate::arch::fpu::xsave_image(buf).unwrap_or(0);
    // A signal that comes while the pending set is worked on goes back to
    // the host, blocked until the final mask below is in force
    // (`entry::trap::host_signal`, `Thread::delivering`), as do the ones
    // deliver_pending re-queues because the program blocks them. That puts
    // it at the end of its queue: right for a standard signal (one pending
    // at most), not for an instance of a real-time signal with later ones
    // queued behind it. So where the program handles a real-time signal,
    // the host's signals wait instead (a host call per delivery, ~0.2 µs:
    // until the 25th session they came out of order).
    if crate::kernel::signal::realtime_caught() {
        let _ = host::rt_sigprocmask(
            crate::host::abi::SIG_BLOCK,
            Some(crate::kernel::signal::RUNTIME_MASK),
        );
    }
    t.delivering.set(true);
    crate::kernel::signal::deliver_pending(t, &mut uc);
    t.delivering.set(false);
    let _ = host::rt_sigprocmask(crate::host::abi::SIG_SETMASK, Some(uc.sigmask));
    *m = uc.mcontext;
    m.fpstate = 0;
}

/// A signal interrupted picos_resume_full's final sequence: the context in
/// `uc` becomes the one it is returning to (the FPU state, already restored,
/// is in `uc`'s own image).
fn complete_resume(t: &Thread, uc: &mut UContext) {
    uc.mcontext = crate::arch::on_host_frame(t.entry.resume.get(), &uc.mcontext);
}

/// The full exit of a direct entry (see `arch`): the host returned EINTR,
/// or a signal arrived during the call. `f.rax` holds the host's result.
pub(super) extern "C" fn picos_direct_finish(f: &mut FastFrame) {
    let t = crate::kernel::thread::current();
    let ret = f.trampoline_ret();
    let site_ret = f.continuation();
    // The entry recorded the number (a trampoline of a dynamic site has no
    // `mov $NR, %eax` to read it from).
    let nr = t.entry.direct_nr.load(Ordering::Relaxed);
    f.rcx = site_ret;
    f.r11 = f.entry_flags();
    // (A blocking call with a handler comes here too when its descriptor
    // passes through: read, write, readv, writev.)
    let restart = matches!(
        crate::sys::def::lookup(nr as usize).map(|d| d.support),
        Some(
            crate::sys::def::Support::HostBlocking { restart: true }
                | crate::sys::def::Support::MediatedBlocking { restart: true, .. }
        )
    );
    let res = f.rax as i64;
    let err = Errno::from_ret(res as isize).err();
    if crate::entry::dispatch::rewinds(t, err, restart) {
        // As the dispatcher does: run the `syscall` again after the handler.
        let mut m = fast_context(f);
        m.rip = site_ret - 2;
        m.rax = nr as u64;
        t.deferred.set(Some(m));
        f.rax = DEFERRED_NR;
        f.rcx = (ret + RET_TO_SLOW) as u64;
    }
}

/// A signal interrupted a direct entry's exit sequence (`where_`): replace
/// the interrupted context in `uc` by the program context the call returns
/// to (RAX, the result, is already in place).
fn complete_direct(uc: &mut UContext, where_: crate::arch::DirectExit) {
    let m = &mut uc.mcontext;
    let sp = m.rsp;
    // The direct entry pushed RFLAGS below the trampoline's return address
    // on the program stack; both stay until its final `ret`, and the
    // trampoline stores the continuation at a fixed offset. (Read as
    // program memory: they are in the program's stack and code.)
    let word = |a: u64| crate::mm::user::read::<u64>(a as usize);
    let words = match where_ {
        crate::arch::DirectExit::BeforePopf => {
            word(sp).and_then(|f| Ok((f, word(sp + 8)?, sp + 16 + 128)))
        }
        crate::arch::DirectExit::AtRet => word(sp).map(|r| (m.eflags, r, sp + 8 + 128)),
        crate::arch::DirectExit::FlagsInPlace => word(sp + 8).map(|r| (m.eflags, r, sp + 16 + 128)),
    };
    let Ok((flags, ret, prog_sp)) = words else {
        return;
    };
    let Ok(cont) = word(ret + crate::arch::RET_TO_SITE_RET as u64) else {
        return;
    };
    m.rip = cont;
    m.rcx = cont;
    m.r11 = flags;
    m.eflags = flags;
    m.rsp = prog_sp;
}

/// The exit sequence found a pending signal: finish through the trap path,
/// which delivers it with the full signal context.
pub(super) extern "C" fn picos_fast_defer(f: &mut FastFrame) {
    let t = crate::kernel::thread::current();
    let ret = f.trampoline_ret();
    if crate::arch::fpu::format_known()
        && crate::arch::has_xsave()
        && !crate::diag::log::enabled(crate::diag::log::LogLevel::Trace)
    {
        // Deliver here and return to the handler through picos_resume_full:
        // no trap. The context is where the call continues (a rewind or a
        // sigreturn's, if the call changed it).
        let mut m = t
            .deferred
            .take()
            .unwrap_or_else(|| final_context(f, &SigContext::default()));
        deliver_on(t, &mut m, &mut core::mem::MaybeUninit::uninit());
        t.entry.resume.set(m);
        t.entry.resume_on.store(1, Ordering::Relaxed);
        return;
    }
    if t.deferred.get().is_none() {
        t.deferred
            .set(Some(final_context(f, &SigContext::default())));
    }
    f.rax = DEFERRED_NR;
    f.rcx = (ret + RET_TO_SLOW) as u64;
}
