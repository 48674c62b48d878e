//! The dispatcher: serves a trapped or fast-path system call as the
//! syscall table says (`sys::table`), and writes its result back into the
//! program's registers.
#![deny(unsafe_code)]

use crate::arch::UContext;
use crate::diag::log::LogLevel;
use crate::diag::trace::Served;
use crate::host::errno::Errno;
use crate::host::nr::MAX_NR;
use crate::kernel::thread::Thread;
use crate::sys::def::{lookup, Support};
use crate::sys::{Ctx, SysResult};
use core::sync::atomic::{AtomicU64, Ordering};

static WARNED: [AtomicU64; MAX_NR / 64 + 1] = [const { AtomicU64::new(0) }; MAX_NR / 64 + 1];

/// Cold and never inlined, as the other message writers: the message's
/// line buffer would otherwise sit in the frame of every dispatch, whose
/// depth a fork's parent and child each copy page by page.
#[cold]
#[inline(never)]
fn warn_unsupported(nr: usize, name: &str) {
    let (w, b) = (nr / 64, 1u64 << (nr % 64));
    if w < WARNED.len() && WARNED[w].fetch_or(b, Ordering::Relaxed) & b == 0 {
        crate::log!(
            Warning,
            "unsupported system call {} ({}) returns ENOSYS",
            name,
            nr
        );
    }
}

#[cold]
#[inline(never)]
pub fn warn_unsupported_int80(nr: u32) {
    static WARNED_INT80: AtomicU64 = AtomicU64::new(0);
    if WARNED_INT80.swap(1, Ordering::Relaxed) == 0 {
        crate::log!(
            Warning,
            "unsupported 32-bit system call {} (int $0x80) returns ENOSYS (further ones are not reported)",
            nr
        );
    }
}

/// Is a call that failed with `err` run again after the signal's handler
/// (its `syscall` re-executed)? Yes for a blocking call a pending signal
/// kept from starting (as if the signal had arrived just before it), and,
/// as Linux does for -ERESTARTSYS with SA_RESTART, for a restartable call
/// (`restart`) it interrupted. Shared by the dispatcher and the direct
/// entries (`entry::fast::picos_direct_finish`).
pub fn rewinds(t: &Thread, err: Option<Errno>, restart: bool) -> bool {
    err == Some(Errno::NOT_STARTED)
        || err == Some(Errno::EINTR)
            && (restart && crate::kernel::signal::pending_wants_restart(t)
                // The runtime's own doorbell (ptrace: a stop its tracer
                // asked for, or a report for this tracer) cut the call
                // short, no signal of the program's: it restarts, as
                // Linux restarts a call that no handler interrupted.
                || !t.has_pending() && crate::kernel::ptrace::wants_stop(t))
}

/// Runs the call's handler as the table says; returns the result, how it
/// was served, and whether SA_RESTART may restart it.
#[inline(always)]
fn serve(
    ctx: &mut Ctx<'_>,
    def: Option<&'static crate::sys::def::SyscallDef>,
) -> (SysResult, Served, bool) {
    if let Some(d) = def.filter(|_| crate::kernel::fs::file::any_noted()) {
        if d.args.as_bytes().first() == Some(&b'f') {
            // A file whose offset the library OS owns gives it back to the
            // host before a call that may use or share it; a write-back
            // file is flushed (`sys::fs::before_fd_call`).
            if let Err(e) = crate::sys::fs::before_fd_call(ctx) {
                return (Err(e), Served::Mediated, false);
            }
        }
        if crate::kernel::fs::file::any_pending() && crate::sys::fs::flushes_writes(ctx, d) {
            ctx.t.fd_table.get().flush_writes();
        }
    }
    // `--profile`: the call's cycles, and how many of them the host took.
    let profiling = crate::diag::stats::profiling();
    let (host0, t0) = if profiling {
        // (The thread's first timed call makes its counters first.)
        (
            crate::diag::stats::host_so_far(&ctx.t.stats),
            crate::arch::rdtsc(),
        )
    } else {
        (0, 0)
    };
    // exit and exit_group never return here: they count before they run
    // (their thread's or process's counts are reported as they end).
    let ends = ctx.nr == crate::host::nr::EXIT || ctx.nr == crate::host::nr::EXIT_GROUP;
    if ends {
        crate::diag::stats::syscall(&ctx.t.stats, ctx.nr, ctx.t.in_fast.get(), true);
    }
    let (res, served, restart) = match def.map(|d| d.support) {
        Some(Support::Emulated(h)) => (h(ctx), Served::Emulated, false),
        Some(Support::Mediated(h)) => (h(ctx), Served::Mediated, false),
        Some(Support::MediatedBlocking { handler, restart }) => {
            (handler(ctx), Served::Mediated, restart)
        }
        Some(Support::Host) => (ctx.host(), Served::Host, false),
        Some(Support::HostBlocking { restart }) => (ctx.host_blocking(), Served::Host, restart),
        Some(Support::Unsupported) | None => {
            warn_unsupported(ctx.nr, def.map_or("unknown", |d| d.name));
            (Err(Errno::ENOSYS), Served::Unsupported, false)
        }
    };
    // An execve that replaced the program in place is not counted: the new
    // program's counts start at zero, as after the kernel's execve.
    let replaced =
        ctx.keep_regs && (ctx.nr == crate::host::nr::EXECVE || ctx.nr == crate::host::nr::EXECVEAT);
    if replaced {
        return (res, served, restart);
    }
    if !ends {
        crate::diag::stats::syscall(
            &ctx.t.stats,
            ctx.nr,
            ctx.t.in_fast.get(),
            served == Served::Emulated,
        );
    }
    if profiling {
        let host = crate::diag::stats::host_so_far(&ctx.t.stats) - host0;
        crate::diag::stats::timed(&ctx.t.stats, ctx.nr, crate::arch::rdtsc() - t0, host);
    }
    (res, served, restart)
}

/// As `serve`, printing the `--trace` line (kept out of the hot path: its
/// line buffer is large).
#[cold]
#[inline(never)]
fn serve_traced(
    ctx: &mut Ctx<'_>,
    def: Option<&'static crate::sys::def::SyscallDef>,
) -> (SysResult, Served, bool) {
    let pre = crate::diag::trace::Pre::capture(ctx.t, ctx.nr, def, &ctx.args);
    let (res, served, restart) = serve(ctx, def);
    pre.finish(&res, served, ctx.keep_regs);
    (res, served, restart)
}

/// What became of a served call.
pub enum Outcome {
    /// It returns this value in RAX.
    Return(u64),
    /// Its `syscall` runs again after the signal handler (see `rewinds`).
    Rewind,
    /// Its handler replaced the whole register state (rt_sigreturn).
    KeepRegs,
}

/// Serves call `nr` with `args` as the table says. `uc` is the program's
/// register context, which only the trap path has (see `Ctx::uc`).
#[inline(always)]
fn run(
    t: &'static Thread,
    nr: usize,
    args: [usize; 6],
    uc: Option<&mut UContext>,
    ip: u64,
) -> Outcome {
    if uc.is_none() && crate::kernel::ptrace::traced(t) {
        if let Some(out) = traced_fast(ip) {
            return out;
        }
    }
    let mode = t.seccomp.load(Ordering::Relaxed);
    if mode != 0 && !crate::kernel::seccomp::allows_always(mode, nr) {
        if let Some(out) = filtered(t, mode, nr, args, ip) {
            return out;
        }
    }
    let def = lookup(nr);
    let mut ctx = Ctx {
        t,
        uc,
        nr,
        args,
        keep_regs: false,
    };
    let (res, _, restart) = if crate::diag::log::enabled(LogLevel::Trace) {
        serve_traced(&mut ctx, def)
    } else {
        serve(&mut ctx, def)
    };
    if ctx.keep_regs {
        Outcome::KeepRegs
    } else if rewinds(t, res.err(), restart) {
        Outcome::Rewind
    } else {
        Outcome::Return(match res {
            Ok(v) => v as u64,
            Err(e) => e.to_ret() as u64,
        })
    }
}

/// A call of a traced thread that came the fast way (a patched site, from
/// before the thread was traced): it goes again the trap path, where the
/// tracer sees it (`dispatch_traced`), once the site is the program's own
/// `syscall` again (`patch::stop_for_seccomp`). None: the site is still
/// patched (it could not be written back); the call is served untraced.
#[cold]
#[inline(never)]
fn traced_fast(ip: u64) -> Option<Outcome> {
    let site = crate::mm::user::read::<[u8; 2]>(ip.wrapping_sub(2) as usize).ok()?;
    (site == [0x0f, 0x05]).then_some(Outcome::Rewind)
}

/// Serves the system call in `uc` (trapped by Syscall User Dispatch) and
/// writes its result into `uc`.
pub fn dispatch(t: &'static Thread, uc: &mut UContext) {
    if crate::kernel::ptrace::traced(t) || t.ptrace_doorbell.get() {
        return dispatch_traced(t, uc);
    }
    dispatch_untraced(t, uc)
}

/// [`dispatch`] for a traced thread: the stops its tracer asked for
/// first, then the syscall-entry stop, the call (as the tracer left its
/// number and arguments: -1 skips it; PTRACE_SYSEMU never makes it), and
/// the syscall-exit stop (`kernel::ptrace`).
#[cold]
#[inline(never)]
fn dispatch_traced(t: &'static Thread, uc: &mut UContext) {
    use crate::kernel::ptrace as pt;
    let nr = uc.mcontext.rax;
    pt::pending_stops(t, uc, nr);
    let cmd = pt::last_cmd(t);
    if t.ptrace.get() == 0 || !pt::wants_syscall_stops(cmd) {
        uc.mcontext.rax = nr;
        return dispatch_untraced(t, uc);
    }
    let r = pt::syscall_entry_stop(t, uc, nr);
    let finish = |uc: &mut UContext| {
        let m = &mut uc.mcontext;
        m.rcx = m.rip;
        m.r11 = m.eflags;
    };
    if matches!(cmd, pt::PTRACE_SYSEMU | pt::PTRACE_SYSEMU_SINGLESTEP) {
        // Never made; RAX is what the tracer left (-ENOSYS by default).
        finish(uc);
        return;
    }
    let new_nr = r.orig_rax;
    let at = uc.mcontext.rip;
    let slot = t.ptrace.get();
    if new_nr as i64 == -1 {
        finish(uc);
    } else {
        uc.mcontext.rax = new_nr;
        dispatch_untraced(t, uc);
    }
    // (A fork child, traced in a slot of its own, reports no exit of the
    // fork: its first stop is its own.)
    if t.ptrace.get() != slot || !pt::wants_syscall_stops(r.cmd) {
        return;
    }
    if uc.mcontext.rip == at.wrapping_sub(2) && uc.mcontext.rax == new_nr {
        // Restarted after a signal: the tracer sees the exit with
        // -ERESTARTSYS, then the call's entry again.
        const ERESTARTSYS: u64 = (-512i64) as u64;
        uc.mcontext.rip = at;
        uc.mcontext.rax = ERESTARTSYS;
        let _ = pt::syscall_exit_stop(t, uc, new_nr);
        uc.mcontext.rip = at.wrapping_sub(2);
        uc.mcontext.rax = new_nr;
        return;
    }
    let _ = pt::syscall_exit_stop(t, uc, new_nr);
}

fn dispatch_untraced(t: &'static Thread, uc: &mut UContext) {
    let m = &uc.mcontext;
    // Linux reads the number as an int: the upper half of RAX is ignored
    // ((1 << 32) | 39 is getpid).
    let raw_nr = m.rax;
    let args = [m.rdi, m.rsi, m.rdx, m.r10, m.r8, m.r9].map(|a| a as usize);
    let ip = m.rip;
    let out = run(t, raw_nr as u32 as usize, args, Some(&mut *uc), ip);
    let m = &mut uc.mcontext;
    match out {
        Outcome::KeepRegs => {}
        Outcome::Rewind => {
            m.rip -= 2;
            m.rax = raw_nr;
        }
        Outcome::Return(v) => {
            m.rax = v;
            // The `syscall` instruction leaves RIP in RCX and RFLAGS in R11.
            m.rcx = m.rip;
            m.r11 = m.eflags;
        }
    }
}

/// Serves a call of the fast entry (not a `full_context` one): the
/// arguments only, no register context to build or write back.
pub fn dispatch_fast(t: &'static Thread, nr: usize, args: [usize; 6], ip: u64) -> Outcome {
    run(t, nr, args, None, ip)
}

/// As [`dispatch_fast`], for a `full_context` call whose context the fast
/// path built (`entry::fast::new_thread`).
pub fn dispatch_fast_full(
    t: &'static Thread,
    nr: usize,
    args: [usize; 6],
    ip: u64,
    uc: &mut UContext,
) -> Outcome {
    run(t, nr, args, Some(uc), ip)
}

/// Runs call `nr` through the program's seccomp filters (mode `mode`, see
/// `kernel::seccomp`), made at `ip` (the address after its `syscall`).
/// None if the call goes on; otherwise what becomes of it, as Linux's
/// `__seccomp_filter` does.
#[cold]
#[inline(never)]
fn filtered(
    t: &'static Thread,
    mode: u32,
    nr: usize,
    args: [usize; 6],
    ip: u64,
) -> Option<Outcome> {
    use crate::host::abi::{SIGKILL, SIGSYS};
    use crate::kernel::seccomp::{evaluate, Data, Verdict, ARCH_X86_64};
    let d = Data {
        nr: nr as i32,
        arch: ARCH_X86_64,
        ip,
        args: args.map(|a| a as u64),
    };
    let end_thread = |sig: i32| -> ! {
        // The thread ends; the process too, of `sig`, if it is its last.
        let mut others = 0;
        crate::kernel::thread::for_each_live(|o| {
            if !core::ptr::eq(o, t) && core::ptr::eq(o.process(), t.process()) {
                others += 1;
            }
        });
        if others == 0 {
            crate::kernel::process::process_exiting();
            crate::kernel::signal::die_of(sig);
        }
        crate::kernel::process::thread_exiting(t);
        crate::kernel::thread::retire(t);
        crate::host::exit_thread(sig)
    };
    match evaluate(mode, &d) {
        Verdict::Allow => None,
        Verdict::Errno(e) => Some(Outcome::Return(Errno(e).to_ret() as u64)),
        Verdict::Trap(data) => {
            // SIGSYS with the call described (si_errno the filter's data,
            // si_call_addr, si_syscall, si_arch), forced as Linux forces
            // it; the call is not made and RAX keeps its number.
            let mut info = crate::arch::SigInfo::kernel(SIGSYS, 1 /* SYS_SECCOMP */);
            info.0[4..8].copy_from_slice(&data.to_ne_bytes());
            info.set_addr(ip);
            info.0[24..28].copy_from_slice(&(nr as i32).to_ne_bytes());
            info.0[28..32].copy_from_slice(&ARCH_X86_64.to_ne_bytes());
            crate::kernel::signal::force_sig_info(t, &info);
            Some(Outcome::Return(nr as u64))
        }
        Verdict::KillThread => end_thread(SIGSYS),
        Verdict::KillProcess => {
            crate::kernel::process::process_exiting();
            crate::kernel::signal::die_of(SIGSYS)
        }
        Verdict::StrictKill => end_thread(SIGKILL),
    }
}
