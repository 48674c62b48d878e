//! System call semantics: the dispatcher and the handlers, one module per
//! family. Handlers are named after the Linux call and take a [`Ctx`].
//!
//! Nothing here uses `unsafe`: program memory goes through `user`, host calls
//! through `host`.
#![deny(unsafe_code)]

pub mod def;
pub mod fs;
pub mod ids;
pub mod int80;
pub mod memory;
pub mod process;
pub mod signal;
pub mod table;

use crate::arch::UContext;
use crate::diag::log::LogLevel;
use crate::host;
use crate::host::errno::Errno;
use crate::kernel::thread::Thread;
use crate::sys::def::{lookup, Serve, MAX_NR};
use core::sync::atomic::{AtomicU64, Ordering};

/// What a handler returns: the call's result or an errno.
pub type SysResult = Result<usize, Errno>;

/// The context of one trapped system call.
pub struct Ctx<'a> {
    pub t: &'static Thread,
    /// The program's registers at the `syscall` instruction (RIP after it).
    pub uc: &'a mut UContext,
    pub nr: usize,
    pub args: [usize; 6],
    /// Set by handlers that replaced the whole register state (rt_sigreturn,
    /// execve): the dispatcher then writes no return value.
    pub keep_regs: bool,
}

impl Ctx<'_> {
    pub fn arg(&self, i: usize) -> usize {
        self.args[i]
    }
    /// Passes the call to the host unchanged.
    pub fn host(&self) -> SysResult {
        host_call(self.nr, self.args)
    }
    /// Passes the call to the host in the interruptible window.
    pub fn host_blocking(&self) -> SysResult {
        host_blocking(self.t, self.nr, self.args)
    }
}

/// A host call with the program's arguments.
pub fn host_call(nr: usize, args: [usize; 6]) -> SysResult {
    crate::diag::stats::host_call();
    #[allow(unsafe_code)]
    // SAFETY: the arguments are the program's own; the kernel validates
    // program pointers (EFAULT) exactly as it would for the program.
    unsafe {
        host::call(nr, args)
    }
}

/// A host call that may block, with the program's signal mask in force so
/// that signals interrupt it (see `arch::picos_blocking_syscall`).
pub fn host_blocking(t: &Thread, nr: usize, args: [usize; 6]) -> SysResult {
    if t.in_fast.get() {
        // Entered from a patched site: the program's mask is already the host's.
        return blocking_raw(nr, args);
    }
    let mask = crate::kernel::signal::host_mask(t.sig_mask.get());
    host_blocking_with_mask(nr, args, mask)
}

/// As [`host_blocking`], with an explicit host mask during the call.
pub fn host_blocking_with_mask(nr: usize, args: [usize; 6], mask: u64) -> SysResult {
    let old = host::rt_sigprocmask(crate::host::abi::SIG_SETMASK, Some(mask))
        .unwrap_or(crate::kernel::signal::RUNTIME_MASK);
    let r = blocking_raw(nr, args);
    let _ = host::rt_sigprocmask(crate::host::abi::SIG_SETMASK, Some(old));
    r
}

/// The blocking-syscall stub with whatever host mask is in force (the
/// program's own on the fast path).
fn blocking_raw(nr: usize, args: [usize; 6]) -> SysResult {
    crate::diag::stats::host_call();
    let a = [nr, args[0], args[1], args[2], args[3], args[4], args[5]];
    #[allow(unsafe_code)]
    // SAFETY: as for host_call; the stub only reads `a`.
    let r = unsafe { crate::arch::picos_blocking_syscall(&a) };
    if (-4095..0).contains(&r) {
        Err(Errno(-r as i32))
    } else {
        Ok(r as usize)
    }
}

static WARNED: [AtomicU64; MAX_NR / 64 + 1] = [const { AtomicU64::new(0) }; MAX_NR / 64 + 1];

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

fn warn_unsupported_int80(nr: u32) {
    static WARNED_INT80: AtomicU64 = AtomicU64::new(0);
    if WARNED_INT80.swap(1, Ordering::Relaxed) == 0 {
        crate::log!(
            Warning,
            "unsupported 32-bit system call {} (int $0x80) returns ENOSYS (further ones are not reported)",
            nr
        );
    }
}

/// How a call was served, for `--trace`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Served {
    Emulated,
    Mediated,
    Host,
    Unsupported,
}

impl Served {
    pub fn name(self) -> &'static str {
        match self {
            Served::Emulated => "emulated",
            Served::Mediated => "mediated",
            Served::Host => "host",
            Served::Unsupported => "enosys",
        }
    }
}

/// Is a call that failed with `err` run again after the signal's handler
/// (its `syscall` re-executed)? Yes for a blocking call a pending signal
/// kept from starting (as if the signal had arrived just before it), and,
/// as Linux does for -ERESTARTSYS with SA_RESTART, for a restartable call
/// (`restart`) it interrupted. Shared by the dispatcher and the direct
/// entries (`patch::picos_direct_finish`).
pub fn rewinds(t: &Thread, err: Option<Errno>, restart: bool) -> bool {
    err == Some(Errno::NOT_STARTED)
        || err == Some(Errno::EINTR) && restart && crate::kernel::signal::pending_wants_restart(t)
}

/// Runs the call's handler as the table says; returns the result, how it
/// was served, and whether SA_RESTART may restart it.
#[inline(always)]
fn serve(
    ctx: &mut Ctx<'_>,
    def: Option<&'static crate::sys::def::SyscallDef>,
) -> (SysResult, Served, bool) {
    let (res, served, restart) = match def.map(|d| d.serve) {
        Some(Serve::Emulated(h)) => (h(ctx), Served::Emulated, false),
        Some(Serve::Mediated(h)) => (h(ctx), Served::Mediated, false),
        Some(Serve::Host) => (ctx.host(), Served::Host, false),
        Some(Serve::HostBlocking { restart }) => (ctx.host_blocking(), Served::Host, restart),
        Some(Serve::Unsupported) | None => {
            warn_unsupported(ctx.nr, def.map_or("unknown", |d| d.name));
            (Err(Errno::ENOSYS), Served::Unsupported, false)
        }
    };
    crate::diag::stats::syscall(ctx.t, ctx.nr, served == Served::Emulated);
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

/// Serves the system call in `uc` (trapped by Syscall User Dispatch) and
/// writes its result into `uc`.
pub fn dispatch(t: &'static Thread, uc: &mut UContext) {
    let m = &uc.mcontext;
    // Linux reads the number as an int: the upper half of RAX is ignored
    // ((1 << 32) | 39 is getpid).
    let raw_nr = m.rax;
    let nr = raw_nr as u32 as usize;
    let args = [m.rdi, m.rsi, m.rdx, m.r10, m.r8, m.r9].map(|a| a as usize);
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
        return;
    }
    let m = &mut ctx.uc.mcontext;
    if rewinds(t, res.err(), restart) {
        m.rip -= 2;
        m.rax = raw_nr;
        return;
    }
    m.rax = match res {
        Ok(v) => v as u64,
        Err(e) => e.to_ret() as u64,
    };
    // The `syscall` instruction leaves RIP in RCX and RFLAGS in R11.
    m.rcx = m.rip;
    m.r11 = m.eflags;
}
