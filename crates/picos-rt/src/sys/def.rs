//! Types of the syscall table (see `table`).
#![deny(unsafe_code)]

use crate::sys::{Ctx, SysResult};

/// A system call handler inside the runtime.
pub type Handler = fn(&mut Ctx<'_>) -> SysResult;

/// A system call's support level (`picos syscalls` prints it), with the
/// handler where the runtime has one.
#[derive(Clone, Copy)]
pub enum Support {
    /// Answered inside the library OS; may use host calls internally.
    Emulated(Handler),
    /// Checked or rewritten by the runtime, then passed to the host.
    Mediated(Handler),
    /// As `Mediated`, for a call that may block (its host calls run in the
    /// interruptible window); `restart` says whether SA_RESTART restarts it.
    MediatedBlocking { handler: Handler, restart: bool },
    /// Passed to the host unchanged.
    Host,
    /// Passed to the host unchanged, in the window where signals can
    /// interrupt it; `restart` says whether SA_RESTART restarts it.
    HostBlocking { restart: bool },
    /// Fails with ENOSYS (a warning names it the first time).
    Unsupported,
}

impl Support {
    /// Short name of the support level, as `picos syscalls` prints it.
    pub fn level(&self) -> &'static str {
        match self {
            Support::Emulated(_) => "emulated",
            Support::Mediated(_) | Support::MediatedBlocking { .. } => "mediated",
            Support::Host | Support::HostBlocking { .. } => "host",
            Support::Unsupported => "unsupported",
        }
    }
}

/// What a sandbox may do with a system call (see `tools/gen_table.py`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sandbox {
    /// Touches nothing outside the process: always allowed.
    Allow,
    /// Allowed once the sandbox has checked its arguments (a path, an
    /// address, another process, credentials).
    Check,
    /// Never allowed under a sandbox (host administration, or a way around
    /// the runtime).
    Deny,
}

impl Sandbox {
    /// As `picos syscalls` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Sandbox::Allow => "allow",
            Sandbox::Check => "check",
            Sandbox::Deny => "deny",
        }
    }
}

/// One row of the syscall table.
#[derive(Clone, Copy)]
pub struct SyscallDef {
    pub nr: u32,
    pub name: &'static str,
    pub support: Support,
    /// Argument formats for `--trace`, one letter per argument: d int,
    /// u unsigned, x hex, f fd, s string, p pointer, o octal, g signal,
    /// a string array.
    pub args: &'static str,
    /// Needs the trap path's full signal context (FPU state), or replaces
    /// the register state: the fast entry hands it to the trap at once.
    pub full_context: bool,
    /// A mediated call whose first argument is a descriptor: for a
    /// descriptor the host serves unchanged (`arch::PassThrough`) a patched
    /// site calls the host directly; the handler sees the others.
    pub fd_passthrough: bool,
    /// A mediated call the host serves unchanged when the manifest mounts
    /// nothing (`kernel::fs::mount::active`): patched sites then call the
    /// host directly.
    pub host_unmounted: bool,
    /// What a sandbox may do with it.
    pub sandbox: Sandbox,
    pub note: &'static str,
}

/// The route of call `nr` from a patched site (`arch::class`): calls the
/// host serves unchanged go direct, through the pass-through check when
/// their first argument is a descriptor (the library OS may serve that
/// descriptor itself); everything else through the fast entry. A call
/// that also takes a path (`openat`'s directory descriptor) is routed on
/// its number alone: what a library-OS file system does with paths is
/// decided when it comes (issue 11), and AT_FDCWD (negative) would send
/// every such call to the dispatcher.
pub fn route(nr: u32) -> u8 {
    use crate::arch::class;
    let Some(d) = lookup(nr as usize) else {
        return class::FAST;
    };
    let fd = d.args.starts_with('f') && !d.args.contains('s');
    let support = match d.support {
        _ if !d.host_unmounted || crate::kernel::fs::mount::active() => d.support,
        Support::Mediated(_) => Support::Host,
        Support::MediatedBlocking { restart, .. } => Support::HostBlocking { restart },
        s => s,
    };
    match (support, fd) {
        (Support::Host, false) => class::DIRECT,
        (Support::Host, true) => class::DIRECT_FD,
        (Support::HostBlocking { .. }, false) => class::DIRECT_BLOCKING,
        (Support::HostBlocking { .. }, true) => class::DIRECT_FD_BLOCKING,
        (Support::Mediated(_), true) if d.fd_passthrough => class::DIRECT_FD,
        (Support::MediatedBlocking { .. }, true) if d.fd_passthrough => class::DIRECT_FD_BLOCKING,
        _ => class::FAST,
    }
}

/// Looks up a syscall by number.
#[inline]
pub fn lookup(nr: usize) -> Option<&'static SyscallDef> {
    let i = *crate::sys::table::INDEX.get(nr)?;
    crate::sys::table::TABLE.get(i as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::nr::MAX_NR;
    use crate::sys::table::TABLE;

    #[test]
    fn table_is_sorted_and_unique() {
        assert!(TABLE.windows(2).all(|w| w[0].nr < w[1].nr));
        assert!(TABLE.len() > 360);
        assert!(TABLE.iter().all(|d| (d.nr as usize) < MAX_NR));
    }

    #[test]
    fn known_rows() {
        assert_eq!(lookup(0).unwrap().name, "read");
        assert_eq!(lookup(39).unwrap().name, "getpid");
        assert_eq!(lookup(59).unwrap().name, "execve");
        assert_eq!(lookup(15).unwrap().support.level(), "emulated");
        assert_eq!(lookup(425).unwrap().support.level(), "unsupported"); // io_uring_setup
        assert!(lookup(1000).is_none());
    }

    #[test]
    fn arg_formats_are_valid() {
        for d in TABLE {
            assert!(d.args.len() <= 6, "{}", d.name);
            assert!(
                d.args.bytes().all(|c| b"duxfspoga".contains(&c)),
                "{}",
                d.name
            );
        }
    }
}

/// Turns patching on (at start-up, and after an execve in place). Under
/// --stats and --trace every call must reach the dispatcher: no direct
/// entry, no inline answer. With seccomp filters (`filters`, the thread's mode),
/// a call they may refuse is routed to the runtime's entry, which runs
/// them (`entry::dispatch`); only the calls they allow whatever the
/// arguments keep their direct entries, and the inline answers (getpid,
/// getppid, gettid) stay only if all three are such calls.
pub fn init_patching(t: &'static crate::kernel::thread::Thread, vdso: usize, filters: u32) {
    use crate::kernel::seccomp::allows_always;
    let every_call =
        crate::diag::stats::on() || crate::diag::log::enabled(crate::diag::log::LogLevel::Trace);
    let inline_ok = filters == 0 || [39, 110, 186].iter().all(|&nr| allows_always(filters, nr));
    crate::patch::init(&crate::patch::Config {
        vdso,
        owner: t.process() as *const _ as usize,
        route: if every_call {
            |_| crate::arch::class::FAST
        } else {
            route
        },
        inline: (!every_call && inline_ok).then(crate::kernel::thread::inline_answers),
    });
    // The sites earlier processes of the tree trapped at (`patch::known`).
    crate::patch::use_known_sites(crate::kernel::ptrace::known_site_words());
    if filters != 0 {
        for (nr, class) in crate::arch::DIRECT_CLASS.iter().enumerate() {
            if !allows_always(filters, nr) {
                class.store(
                    crate::arch::class::FAST,
                    core::sync::atomic::Ordering::Relaxed,
                );
            }
        }
    }
}
