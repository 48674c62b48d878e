//! System call semantics: the dispatcher and the handlers, one module per
//! family. Handlers are named after the Linux call and take a [`Ctx`].
//!
//! Nothing here uses `unsafe`: program memory goes through `user`, host calls
//! through `host`.
#![deny(unsafe_code)]

pub mod def;
pub mod fs;
pub mod ids;
pub mod memory;
pub mod process;
pub mod ptrace;
pub mod resource;
pub mod sched;
pub mod signal;
pub mod socket;
pub mod table;
pub mod time;
pub mod uts;

use crate::arch::UContext;
use crate::host;
use crate::host::errno::Errno;
use crate::kernel::thread::Thread;

pub use picos_macros::syscall;

/// A system call argument as a handler declares it (see `#[syscall]`),
/// made from its register as Linux reads it: a C `int` or `unsigned int`
/// is the low 32 bits (the upper half is ignored, as in the kernel's
/// `SYSCALL_DEFINE` wrappers); `long`, `size_t` and pointers are the whole
/// register.
pub trait Arg {
    fn from_reg(v: usize) -> Self;
}

impl Arg for usize {
    fn from_reg(v: usize) -> Self {
        v
    }
}

impl Arg for u64 {
    fn from_reg(v: usize) -> Self {
        v as u64
    }
}

impl Arg for isize {
    fn from_reg(v: usize) -> Self {
        v as isize
    }
}

impl Arg for i64 {
    fn from_reg(v: usize) -> Self {
        v as i64
    }
}

impl Arg for i32 {
    fn from_reg(v: usize) -> Self {
        v as i32
    }
}

impl Arg for u32 {
    fn from_reg(v: usize) -> Self {
        v as u32
    }
}

/// What a handler returns: the call's result or an errno.
pub type SysResult = Result<usize, Errno>;

/// The context of one system call.
pub struct Ctx<'a> {
    pub t: &'static Thread,
    /// The program's registers at the `syscall` instruction (RIP after it):
    /// only on the trap path. The fast entry builds no register context
    /// (`entry::fast`): the calls whose handlers read or replace it are the
    /// table's `full_context` ones, which it hands to the trap path. Read it
    /// with `regs`.
    pub uc: Option<&'a mut UContext>,
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
    /// The program's registers, for a handler of a `full_context` call
    /// (always served on the trap path, which has them).
    pub fn regs(&mut self) -> &mut UContext {
        match self.uc.as_deref_mut() {
            Some(uc) => uc,
            None => panic!(
                "system call {} needs the full context but came by the fast entry",
                self.nr
            ),
        }
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

pub(crate) use crate::kernel::thread::count_host_call;

/// The program's call `nr` with `args` (values the program gave, perhaps
/// checked or rewritten) passed to the host (`host::program_call`: never
/// with the runtime's own buffers).
pub fn host_call(nr: usize, args: [usize; 6]) -> SysResult {
    count_host_call();
    timed(|| host::program_call(nr, args))
}

/// Runs the host call `f`, timed under `--profile` (`diag::stats`).
#[inline(always)]
fn timed<R>(f: impl FnOnce() -> R) -> R {
    if !crate::diag::stats::profiling() {
        return f();
    }
    let t0 = crate::arch::rdtsc();
    let r = f();
    if let Some(t) = crate::kernel::thread::current_checked() {
        crate::diag::stats::host_time(&t.stats, crate::arch::rdtsc() - t0);
    }
    r
}

/// As [`host_call`], where the arguments at the positions `bufs` names are
/// the runtime's own buffers that the kernel only reads (a path the
/// library OS resolved, an `open_how`): each is borrowed, so live, for the
/// call. The other arguments are the program's values.
pub fn host_call_with(nr: usize, mut args: [usize; 6], bufs: &[(usize, &[u8])]) -> SysResult {
    for (i, b) in bufs {
        args[*i] = b.as_ptr() as usize;
    }
    host_call(nr, args)
}

/// As [`host_blocking`], with runtime buffers as in [`host_call_with`].
pub fn host_blocking_with(
    t: &Thread,
    nr: usize,
    mut args: [usize; 6],
    bufs: &[(usize, &[u8])],
) -> SysResult {
    for (i, b) in bufs {
        args[*i] = b.as_ptr() as usize;
    }
    host_blocking(t, nr, args)
}

/// As [`host_blocking_with`], with one more runtime buffer, at argument
/// `out.0`, that the kernel may write (sendmmsg's message lengths).
pub fn host_blocking_with_out(
    t: &Thread,
    nr: usize,
    mut args: [usize; 6],
    bufs: &[(usize, &[u8])],
    out: (usize, &mut [u8]),
) -> SysResult {
    for (i, b) in bufs {
        args[*i] = b.as_ptr() as usize;
    }
    args[out.0] = out.1.as_mut_ptr() as usize;
    host_blocking(t, nr, args)
}

/// A host call that may block, with the program's signal mask in force so
/// that signals interrupt it (see `arch::picos_blocking_syscall`).
pub fn host_blocking(t: &Thread, nr: usize, args: [usize; 6]) -> SysResult {
    if t.in_fast.get() {
        // Entered from a patched site: the program's mask is the host's,
        // once any signal it leaves open is blocked there too.
        crate::kernel::signal::sync_lazy(t);
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
    count_host_call();
    timed(|| crate::arch::blocking_program_call(nr, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_read_as_linux_reads_them() {
        // An `int` is the low half of its register: (1 << 32) | 5 is 5,
        // and 0xffff_ffff is -1.
        assert_eq!(<i32 as Arg>::from_reg((1 << 32) | 5), 5);
        assert_eq!(<i32 as Arg>::from_reg(0xffff_ffff), -1);
        assert_eq!(<u32 as Arg>::from_reg(usize::MAX), u32::MAX);
        // `long`, `size_t` and pointers are the whole register.
        assert_eq!(<usize as Arg>::from_reg(usize::MAX), usize::MAX);
        assert_eq!(<isize as Arg>::from_reg(usize::MAX), -1);
    }
}
