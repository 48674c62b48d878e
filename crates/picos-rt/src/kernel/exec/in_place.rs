//! execve(2) in place: the runtime stays, and loads the new program into
//! the process itself, leaving it as the kernel's execve would.
//!
//! The kernel's way (`exec_runtime`) replaces the whole process with a
//! fresh runtime, which then loads the program: a second execve, a new
//! address space whose runtime pages all fault in again, the runtime's
//! start-up (relocation, its first looks at /proc). In place, the runtime
//! does what execve does to a process itself:
//!
//! - the old program's memory is unmapped (everything but the runtime's
//!   image and reservation, the vDSO, and the stack mapping, which the new
//!   program's stack reuses, emptied);
//! - descriptors marked close-on-exec are closed;
//! - signal handlers go back to SIG_DFL (ignored signals stay ignored;
//!   the mask and pending signals stay), the alternate signal stack is
//!   gone, the thread's rseq registration is undone;
//! - the patcher forgets the old program's sites and trampolines;
//! - the new program is loaded and its stack built as at start-up, with
//!   the memory map's argument and environment ranges set to the new
//!   strings (/proc/PID/cmdline), its name set (comm), and the thread
//!   enters it with fresh registers and FPU state.
//!
//! Only where that is all execve would do: one thread, memory and
//! descriptor table shared with no other task, not traced, no set-user-ID,
//! set-group-ID or file-capability binary to run, and no process state
//! that only the kernel's execve resets (POSIX timers, AIO contexts,
//! personality, capability changes, membarrier registrations, `mlockall`
//! of future mappings, protection keys, sealed mappings, some prctl and
//! arch_prctl settings:
//! [`needs_kernel`]). Otherwise, or if the preparation fails (a full
//! descriptor table), the kernel's way.
//!
//! The checks and the failures before the point of no return are
//! `sys::process::exec_common`'s, shared with the kernel's way (the host's
//! AT_EXECVE_CHECK included), so a failing execve returns the same error
//! either way. After it, as with the kernel's, a failure ends the process.
#![deny(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use crate::kernel::exec::loader;
use crate::kernel::process::{config, fatal, set_config, set_exe_path};
use crate::kernel::thread::{self, Thread};
use crate::mm::user;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Has the program made a process state that only the kernel's execve
/// resets ([`needs_kernel`])? Inherited by fork children (conservatively:
/// some of those states are not), cleared by the kernel's execve (a new
/// runtime).
static KERNEL_ONLY: AtomicBool = AtomicBool::new(false);

/// From now on, execve goes through the kernel: the program made a process
/// state (`why`) that an execve resets and the runtime could not.
pub fn needs_kernel(why: &'static str) {
    if !KERNEL_ONLY.swap(true, Ordering::Relaxed) {
        crate::log!(
            Debug,
            "execve goes through the kernel from now on ({} made a state only it resets)",
            why
        );
    }
}

/// May this process set its memory map's argument ranges (PR_SET_MM_MAP)?
/// 0: not asked yet, 1: yes, 2: no (a seccomp filter: the sandbox's).
static MM_MAP: AtomicU8 = AtomicU8::new(0);

fn mm_map_allowed() -> bool {
    match MM_MAP.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let ok = host::mm_map_allowed();
            MM_MAP.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
            ok
        }
    }
}

/// Why an execve of this thread cannot replace the program in place, if it
/// cannot (before the file is looked at).
fn obstacle(t: &Thread) -> Option<&'static str> {
    if !config().exec_in_place {
        return Some("--kernel-exec");
    }
    if KERNEL_ONLY.load(Ordering::Relaxed) {
        return Some("a process state only the kernel's execve resets");
    }
    if crate::patch::memory_shared() {
        return Some("another task shares (or shared) the memory");
    }
    if t.fd_table.get().is_shared() {
        return Some("another task shares the descriptor table");
    }
    if crate::kernel::ptrace::traced(t) || t.ptrace.get() != 0 || t.ptrace_doorbell.get() {
        return Some("ptrace");
    }
    let mut threads = 0;
    thread::for_each_live(|_| threads += 1);
    if threads != 1 {
        return Some("other threads");
    }
    if !mm_map_allowed() {
        return Some("PR_SET_MM refused (/proc/PID/cmdline could not follow)");
    }
    None
}

/// What the point of no return needs, gathered before it (each step may
/// fail, and the kernel's way is then taken).
struct Prepared {
    /// The program's mappings to unmap: `(start, end)`.
    unmap: Vec<(usize, usize)>,
    /// The stack mapping: `(start, end)`.
    stack: (usize, usize),
    /// The program's descriptors marked close-on-exec.
    cloexec: Vec<i32>,
}

/// Gathers what the execve in place will do, or says why it cannot.
fn prepare(t: &Thread, path: &[u8]) -> Result<Prepared, &'static str> {
    if let Some(why) = obstacle(t) {
        return Err(why);
    }
    if loader::raises_privileges(path) {
        return Err("a set-user-ID, set-group-ID or capability binary");
    }
    let (unmap, stack) = program_mappings()?;
    let cloexec = close_on_exec(t).map_err(|_| "cannot list the descriptors")?;
    Ok(Prepared {
        unmap,
        stack,
        cloexec,
    })
}

/// An address range, `(start, end)`.
type Range = (usize, usize);

/// Ranges (to unmap, or to keep), and the stack mapping.
type Kept = (Vec<Range>, Range);

/// The end of the program's address space (`TASK_SIZE_MAX`).
const USER_END: usize = 0x7fff_ffff_f000;

/// The program's memory to unmap (as `(start, end)` ranges, which may
/// hold unmapped holes) and the stack mapping, from /proc/self/maps:
/// everything but the runtime's ranges, the vDSO and its data pages, and
/// the stack.
fn program_mappings() -> Result<Kept, &'static str> {
    let fd = host::openat(
        host::AT_FDCWD,
        c"/proc/self/maps",
        host::O_RDONLY | host::O_CLOEXEC,
        0,
    )
    .map_err(|_| "cannot open /proc/self/maps")? as i32;
    let r = match kept_by_query(fd) {
        Ok(r) => Ok(r),
        Err(Errno::ENOTTY) | Err(Errno::EINVAL) => kept_by_text(fd),
        Err(_) => Err("PROCMAP_QUERY failed"),
    };
    let _ = host::close(fd);
    let (mut keep, stack) = r?;
    keep.extend_from_slice(&crate::mm::runtime::own_ranges());
    keep.push(stack);
    Ok((gaps(&mut keep, USER_END), stack))
}

/// The ranges of `[0, end)` outside `keep` (sorted and merged first).
fn gaps(keep: &mut [(usize, usize)], end: usize) -> Vec<(usize, usize)> {
    keep.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for &(s, e) in keep.iter() {
        if s > at {
            out.push((at, s.min(end)));
        }
        at = at.max(e);
    }
    if at < end {
        out.push((at, end));
    }
    out.retain(|&(s, e)| s < e);
    out
}

/// The kernel's mappings to keep (the vDSO and its data pages) and the
/// stack mapping, asked with PROCMAP_QUERY (a few calls instead of the
/// whole maps text).
fn kept_by_query(fd: i32) -> Result<Kept, Errno> {
    let sp = crate::kernel::process::stack_address();
    let stack = host::procmap_vma(fd, sp, false, None)?;
    if !(stack.start <= sp && sp < stack.end) {
        return Err(Errno::ENOENT);
    }
    let mut keep = Vec::new();
    let vdso = crate::kernel::process::host_auxv()
        .iter()
        .find(|a| a.0 == loader::AT_SYSINFO_EHDR)
        .map_or(0, |a| a.1 as usize);
    if vdso != 0 {
        let v = host::procmap_vma(fd, vdso, false, None)?;
        let mut lo = v.start;
        // Its data pages lie just below it: [vvar], [vvar_vclock].
        for _ in 0..4 {
            let mut name = [0u8; 16];
            match host::procmap_vma(fd, lo - 1, false, Some(&mut name)) {
                Ok(b) if b.end == lo && b.inode == 0 && name.starts_with(b"[vvar") => lo = b.start,
                _ => break,
            }
        }
        keep.push((lo, v.end));
    }
    Ok((keep, (stack.start, stack.end)))
}

/// As [`kept_by_query`], from the maps text (a kernel before 6.11).
fn kept_by_text(fd: i32) -> Result<Kept, &'static str> {
    let maps = host::read_to_end(fd).map_err(|_| "cannot read /proc/self/maps")?;
    let mut keep = Vec::new();
    let mut stack = None;
    for line in maps.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Some((start, end, name)) = crate::kernel::fs::procview::parse_maps_line(line) else {
            return Err("an unexpected /proc/self/maps line");
        };
        if name == b"[stack]" {
            stack = Some((start, end));
        } else if name.starts_with(b"[vdso]") || name.starts_with(b"[vvar") {
            keep.push((start, end));
        }
    }
    Ok((keep, stack.ok_or("no [stack] mapping")?))
}

/// The program's descriptors marked close-on-exec (the runtime's own stay
/// open: they are not).
fn close_on_exec(t: &Thread) -> Result<Vec<i32>, Errno> {
    const F_GETFD: i32 = 1;
    const FD_CLOEXEC: usize = 1;
    let dir = host::openat(
        host::AT_FDCWD,
        c"/proc/thread-self/fd",
        host::O_RDONLY | host::O_CLOEXEC | host::O_DIRECTORY,
        0,
    )? as i32;
    let mut fds = Vec::new();
    let mut buf = [0u8; 4096];
    let r = loop {
        match host::getdents64(dir, &mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => fds.extend(host::dirent_names(&buf[..n]).filter_map(host::parse_fd_name)),
            Err(e) => break Err(e),
        }
    };
    let _ = host::close(dir);
    r?;
    let table = t.fd_table.get();
    Ok(fds
        .into_iter()
        .filter(|&fd| fd != dir && !table.is_hidden(fd))
        .filter(|&fd| host::fcntl(fd, F_GETFD, 0).is_ok_and(|f| f & FD_CLOEXEC != 0))
        .collect())
}

/// Replaces the program with `path` in place, if this process allows it;
/// false if it does not (the caller then takes the kernel's way). On
/// success `uc`, the thread's trapped context, enters the new program;
/// the caller turns the patcher on again (`sys::def::init_patching`).
/// `name` is execve's filename (what a script's interpreter gets).
pub fn try_exec(
    t: &'static Thread,
    uc: &mut crate::arch::UContext,
    path: &[u8],
    name: &[u8],
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
) -> bool {
    let name = if name.is_empty() { path } else { name };
    let prep = match prepare(t, path) {
        Ok(p) => p,
        Err(why) => {
            crate::log!(Debug, "execve through the kernel: {}", why);
            return false;
        }
    };
    crate::log!(Debug, "execve in place: {}", crate::diag::log::Bytes(path));
    // The point of no return.
    //
    // The kernel still sees a child that has not exec'd: its parent's
    // setpgid asks the board (`sys::ids::setpgid`).
    crate::kernel::ptrace::mark_exec_in_place(host::getpid(), host::getppid());
    // The old program's counts (`--stats`): reported as the kernel's way
    // reports them; the new program's start at zero.
    crate::kernel::process::process_exiting();
    t.stats.reset();
    // Descriptors: write-back buffers out, then those closed on exec.
    let table = t.fd_table.get();
    table.flush_writes();
    for &fd in &prep.cloexec {
        let _ = host::close(fd);
        table.forget_closed(fd as u32, fd as u32);
    }
    // The new program's standard error is where the runtime's messages go.
    crate::diag::log::note_stderr();
    // Signals: handlers to SIG_DFL (ignored ones stay), no alternate stack.
    crate::kernel::signal::clear_handlers(t);
    t.altstack.set(crate::host::abi::StackT::DISABLED);
    let (area, len, sig) = t.rseq.get();
    if area != 0 {
        let _ = host::rseq_unregister(area, len, sig);
        t.rseq.set((0, 0, 0));
    }
    host::forget_thread_words();
    // Memory: the patcher's sites and trampolines, then the program's
    // mappings; the stack emptied for the new one.
    crate::patch::reset_for_exec();
    for &(start, end) in &prep.unmap {
        if let Err(e) = user::unmap(start, end - start) {
            fatal(
                126,
                format_args!("execve: cannot unmap {:#x}-{:#x}: {}", start, end, e),
            );
        }
    }
    let (stack_lo, stack_hi) = prep.stack;
    let _ = user::discard(stack_lo, stack_hi - stack_lo);
    let _ = host::set_fs_base(0);
    t.guest_gs.set(0);
    // The new program.
    let mut cfg = config().clone();
    cfg.exe = path.to_vec();
    cfg.exe_name = if name == path {
        Vec::new()
    } else {
        name.to_vec()
    };
    set_config(cfg);
    // (After the point of no return, as the kernel's execve does.)
    // As Linux since 5.18: a program started with no arguments at all gets
    // one, the empty string (its argc is never 0: CVE-2021-4034).
    let empty = [Vec::new()];
    let argv = if argv.is_empty() { &empty[..] } else { argv };
    let loaded = loader::load_in_any_table(path, name, argv, &table.held()).unwrap_or_else(|e| {
        fatal(
            e.exit_status(),
            format_args!(
                "cannot run {}: {}",
                crate::diag::log::Bytes(path),
                e.reason()
            ),
        )
    });
    set_exe_path(loaded.real_path.clone());
    crate::kernel::vm::init_brk(loaded.main.low, loaded.main.end);
    let auxv = crate::kernel::process::host_auxv();
    let sp = match loader::build_stack(stack_hi - 16, &loaded, envp, path, auxv, None, true) {
        Ok(sp) => sp,
        Err(e) => fatal(126, format_args!("cannot build the program's stack: {}", e)),
    };
    crate::kernel::process::set_name(path);
    crate::arch::fresh_registers(uc, loaded.start, sp);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_between_kept_ranges() {
        let mut keep = [
            (0x5000, 0x6000),
            (0x1000, 0x2000),
            (0x1800, 0x3000),
            (0x9000, 0xa000),
        ];
        assert_eq!(
            gaps(&mut keep, 0x9800),
            [(0, 0x1000), (0x3000, 0x5000), (0x6000, 0x9000)]
        );
        assert_eq!(gaps(&mut [], 0x1000), [(0, 0x1000)]);
        assert_eq!(gaps(&mut [(0, 0x1000)], 0x1000), []);
    }
}
