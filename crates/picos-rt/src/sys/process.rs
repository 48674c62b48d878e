//! Process and thread calls: clone/fork/vfork, execve, exit, and the
//! per-thread registers the runtime owns (FS via the host, GS emulated).
#![deny(unsafe_code)]

use super::{host_call, syscall, Ctx, SysResult};
use crate::host;
use crate::host::errno::Errno;
use crate::kernel::thread;
use crate::mm::user::{self, UserPtr};

pub const CLONE_VM: u64 = 0x100;
pub const CLONE_FS: u64 = 0x200;
pub const CLONE_FILES: u64 = 0x400;
pub const CLONE_SIGHAND: u64 = 0x800;
pub const CLONE_PIDFD: u64 = 0x1000;
pub const CLONE_VFORK: u64 = 0x4000;
pub const CLONE_THREAD: u64 = 0x10000;
pub const CLONE_SETTLS: u64 = 0x80000;
pub const CLONE_PARENT_SETTID: u64 = 0x100000;
pub const CLONE_CHILD_CLEARTID: u64 = 0x200000;
pub const CLONE_CHILD_SETTID: u64 = 0x1000000;
pub const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
pub const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;
pub const CLONE_NEWTIME: u64 = 0x80;
const CLONE_NEWUSER: u64 = 0x1000_0000;
const CLONE_NEWUTS: u64 = 0x0400_0000;
const CLONE_NEWNS: u64 = 0x0002_0000;

/// The arguments of any clone-family call, normalised.
#[derive(Clone, Copy, Debug, Default)]
pub struct CloneArgs {
    pub flags: u64,
    pub exit_signal: u64,
    /// The child's stack pointer (0: same as the parent's).
    pub stack: usize,
    pub ptid: usize,
    pub ctid: usize,
    pub tls: usize,
    /// clone3's chosen pids (`set_tid`, `set_tid_size`) and cgroup
    /// descriptor (with CLONE_INTO_CGROUP): a new process only.
    pub set_tid: u64,
    pub set_tid_size: u64,
    pub cgroup: u64,
}

/// Implements clone(2).
#[syscall]
pub fn clone(
    c: &mut Ctx<'_>,
    flags: u64,
    stack: usize,
    parent_tid: usize,
    child_tid: usize,
    tls: usize,
) -> SysResult {
    let f = flags;
    let a = CloneArgs {
        flags: f & !0xff,
        exit_signal: f & 0xff,
        stack,
        ptid: parent_tid,
        ctid: child_tid,
        tls,
        ..Default::default()
    };
    do_clone(c, a)
}

/// Reads `struct clone_args` of `size` bytes at `cl_args` as Linux's
/// copy_struct_from_user does: at least the first version's 64 bytes, at
/// most a page; the fields picos knows (88 bytes) and, from a newer ABI,
/// extra bytes that must all be zero.
fn read_clone_args(cl_args: usize, size: usize) -> Result<[u64; 11], Errno> {
    if size < 64 {
        return Err(Errno::EINVAL);
    }
    if size > 4096 {
        return Err(Errno::E2BIG);
    }
    let mut raw = [0u64; 11];
    let n = size.min(88);
    let mut bytes = [0u8; 88];
    user::copy_in(&mut bytes[..n], cl_args)?;
    if size > 88 {
        // A larger struct from a newer ABI: its extra bytes must be zero.
        // Read up to each page's end as Linux's check_zeroed_user does: a
        // non-zero byte is E2BIG before a later page can fault.
        let (mut at, end) = (cl_args + 88, cl_args + size);
        while at < end {
            let n =
                (end - at).min(crate::mm::runtime::PAGE_SIZE - at % crate::mm::runtime::PAGE_SIZE);
            let mut chunk = [0u8; 4096];
            user::copy_in(&mut chunk[..n], at)?;
            if chunk[..n].iter().any(|&b| b != 0) {
                return Err(Errno::E2BIG);
            }
            at += n;
        }
    }
    for (i, w) in raw.iter_mut().enumerate() {
        *w = u64::from_ne_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
    }
    Ok(raw)
}

/// Linux's checks of clone3's arguments (`clone3_args_valid`), then those
/// picos refuses: what clone(2), which it is served by, has no room for.
fn check_clone3_args(raw: &[u64; 11], size: usize) -> Result<(), Errno> {
    let [flags, _, _, _, exit_signal, stack, stack_size, _, set_tid, set_tid_size, cgroup] = *raw;
    const CLONE_PARENT: u64 = 0x8000;
    const MAX_PID_NS_LEVEL: u64 = 32;
    if (set_tid != 0) != (set_tid_size != 0) || set_tid_size > MAX_PID_NS_LEVEL {
        return Err(Errno::EINVAL);
    }
    if exit_signal & !0xff != 0 || exit_signal > 64 {
        return Err(Errno::EINVAL);
    }
    if flags & CLONE_INTO_CGROUP != 0 && (cgroup > i32::MAX as u64 || size < 88) {
        return Err(Errno::EINVAL);
    }
    // clone3_args_valid: no CLONE_DETACHED (clone(2) ignores it) and no
    // signal in the flags (CLONE_NEWTIME shares that byte).
    const CLONE_DETACHED: u64 = 0x40_0000;
    if flags & !(0xffff_ffff | CLONE_CLEAR_SIGHAND | CLONE_INTO_CGROUP) != 0
        || flags & (CLONE_DETACHED | (0xff & !CLONE_NEWTIME)) != 0
        || flags & (CLONE_SIGHAND | CLONE_CLEAR_SIGHAND) == CLONE_SIGHAND | CLONE_CLEAR_SIGHAND
        || flags & (CLONE_THREAD | CLONE_PARENT) != 0 && exit_signal != 0
        || (stack == 0) != (stack_size == 0)
        || stack
            .checked_add(stack_size)
            .is_none_or(|end| end > USER_END)
    {
        return Err(Errno::EINVAL);
    }
    // A new process is made by the host's clone3 when it needs a chosen
    // pid or a cgroup (`fork_process`), its handlers cleared by the runtime.
    // Not served for a child sharing this memory (a thread, vfork): the
    // runtime makes those with clone(2), which has no room for them.
    if flags & CLONE_VM != 0
        && (set_tid_size != 0 || flags & (CLONE_INTO_CGROUP | CLONE_CLEAR_SIGHAND) != 0)
    {
        return Err(Errno::EINVAL);
    }
    if flags & CLONE_NEWTIME != 0 && flags & CLONE_VM != 0 {
        // A new time namespace for a child sharing this memory: clone(2)
        // reads that bit as the exit signal.
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// Implements clone3(2) by translation to the clone path, with Linux's
/// argument checks (`copy_clone_args_from_user`, `clone3_args_valid`).
#[syscall]
pub fn clone3(c: &mut Ctx<'_>, cl_args: usize, size: usize) -> SysResult {
    let raw = read_clone_args(cl_args, size)?;
    let [flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup] =
        raw;
    check_clone3_args(&raw, size)?;
    // clone(2) has one pointer for the pidfd and the parent's copy of the
    // tid; clone3 has two. With both, the host writes the pidfd and the
    // runtime stores the tid in the parent when the call returns (Linux
    // stores it after making the child too, and ignores a fault).
    let settid_after = flags & CLONE_PIDFD != 0 && flags & CLONE_PARENT_SETTID != 0;
    let (flags, ptid) = if settid_after {
        (flags & !CLONE_PARENT_SETTID, pidfd)
    } else if flags & CLONE_PIDFD != 0 {
        (flags, pidfd)
    } else {
        (flags, parent_tid)
    };
    let sp = if stack != 0 { stack + stack_size } else { 0 };
    let a = CloneArgs {
        flags,
        exit_signal,
        stack: sp as usize,
        ptid: ptid as usize,
        ctid: child_tid as usize,
        tls: tls as usize,
        set_tid,
        set_tid_size,
        cgroup: if flags & CLONE_INTO_CGROUP != 0 {
            cgroup
        } else {
            0
        },
    };
    let r = do_clone(c, a);
    if let Ok(tid) = r {
        if settid_after && tid != 0 {
            let _ = UserPtr::<i32>::new(parent_tid as usize).write(&(tid as i32));
        }
    }
    r
}

/// The end of the user address space (`access_ok`'s limit, 47-bit).
const USER_END: u64 = 0x7fff_ffff_f000;

/// Implements fork(2).
pub fn fork(c: &mut Ctx<'_>) -> SysResult {
    do_clone(
        c,
        CloneArgs {
            exit_signal: crate::host::abi::SIGCHLD as u64,
            ..Default::default()
        },
    )
}

/// Implements unshare(2): passed to the host; a thread that takes a
/// working directory of its own (CLONE_FS) ends the cached one
/// (`kernel::fs::dcache`), which its process's threads share.
#[syscall]
pub fn unshare(c: &mut Ctx<'_>, flags: u64) -> SysResult {
    if flags & CLONE_FS != 0 {
        crate::kernel::fs::dcache::stop_caching_cwd();
    }
    if flags & CLONE_FILES != 0 {
        // The two tables' descriptors will share open file descriptions:
        // offsets go back to the host, write-back buffers stop.
        c.t.fd_table.get().share_offsets();
    }
    let r = c.host()?;
    if flags & (CLONE_NEWUSER | CLONE_NEWUTS | CLONE_NEWNS) != 0 {
        // A user namespace changes the credentials the host reports (and
        // what lookups are allowed); a new UTS or mount namespace starts as
        // a copy, its cached answers forgotten all the same, as after setns.
        crate::sys::ids::forget_namespaced(c);
    }
    if flags & CLONE_FILES != 0 {
        // The thread now has a descriptor table of its own: so does its
        // state in the library OS (which descriptors pass through, which
        // are files of exclusive mounts), a copy of the shared one's.
        c.t.use_fd_table(c.t.fd_table.get().for_child());
    }
    Ok(r)
}

/// Implements vfork(2).
pub fn vfork(c: &mut Ctx<'_>) -> SysResult {
    do_clone(
        c,
        CloneArgs {
            flags: CLONE_VM | CLONE_VFORK,
            exit_signal: crate::host::abi::SIGCHLD as u64,
            ..Default::default()
        },
    )
}

fn do_clone(c: &mut Ctx<'_>, a: CloneArgs) -> SysResult {
    if a.flags & CLONE_THREAD != 0 && a.flags & CLONE_SIGHAND == 0
        || a.flags & CLONE_SIGHAND != 0 && a.flags & CLONE_VM == 0
    {
        return Err(Errno::EINVAL);
    }
    if a.flags & CLONE_FILES != 0 {
        // Program code may now run while the runtime works in this table.
        c.t.fd_table.get().set_shared(true);
        crate::host::fds::note_shared_fds();
    }
    crate::kernel::fs::dcache::note_clone(a.flags);
    // A traced thread's child is traced too when its tracer asked
    // (PTRACE_O_TRACEFORK, ...): its slot is reserved now; the parent
    // stops with the event once the child exists.
    let traced_child = crate::kernel::ptrace::before_clone(c.t, a.flags, a.exit_signal);
    let r = do_clone_traced(c, a, traced_child.map(|(_, i)| i));
    // (In the fork child, `r` is 0: its slot is its own now.)
    if let Some((event, i)) = traced_child.filter(|_| r != Ok(0)) {
        let nr = c.nr as u64;
        match c.uc.as_deref_mut() {
            Some(uc) => crate::kernel::ptrace::after_clone(c.t, uc, nr, event, i, r),
            None => {
                let mut uc = crate::arch::UContext::default();
                crate::kernel::ptrace::after_clone(c.t, &mut uc, nr, event, i, r)
            }
        }
    }
    r
}

fn do_clone_traced(c: &mut Ctx<'_>, a: CloneArgs, traced_child: Option<usize>) -> SysResult {
    if a.flags & (CLONE_FILES | CLONE_VM) == CLONE_FILES {
        // Two processes will share one descriptor table, each with its own
        // copy of the library OS's state of it: a close in one would not
        // reach the other's notes of files.
        crate::kernel::fs::file::stop_noting(c.t.fd_table.get());
    }
    if a.flags & CLONE_VM == 0 {
        // (The child shares the open file descriptions, not the library
        // OS's offsets and buffers of them: `kernel::fs::FORK_HOOK`.)
        // A traced child claims its slot in its fork hook. (Written only
        // for one: a write after the fork copies the page in the parent.)
        if let Some(i) = traced_child {
            c.t.ptrace_child.set(i + 1);
        }
        let r = fork_process(c, a);
        if traced_child.is_some() {
            c.t.ptrace_child.set(0);
        }
        r
    } else {
        clone_vm(c, a, traced_child)
    }
}

/// A child with its own copy of memory: the host's copy-on-write fork. The
/// child continues right here, on its copy of this runtime stack.
fn fork_process(c: &mut Ctx<'_>, a: CloneArgs) -> SysResult {
    // Every subsystem's locks are held across the fork, and its state put
    // right in the child (`kernel::process::FORK_HOOKS`).
    // The program's handlers are the runtime's to clear; the host's are
    // the runtime's own.
    let clear_handlers = a.flags & CLONE_CLEAR_SIGHAND != 0;
    let flags = a.flags & !CLONE_CLEAR_SIGHAND;
    let r = crate::kernel::process::fork(|| {
        if a.set_tid_size != 0 || flags & (CLONE_INTO_CGROUP | CLONE_NEWTIME) != 0 {
            // What clone(2) cannot say (clone3's pids, cgroup, and
            // CLONE_NEWTIME, whose bit clone(2) reads as the exit signal;
            // only clone3 sets it in `a.flags`): the host's clone3, the child on
            // this stack as after fork (no stack of its own); the kernel
            // checks the pids (EPERM without CAP_SYS_ADMIN in their pid
            // namespaces, EEXIST) and the cgroup.
            let args: [u64; 11] = [
                flags,
                if flags & CLONE_PIDFD != 0 {
                    a.ptid as u64
                } else {
                    0
                },
                a.ctid as u64,
                if flags & CLONE_PARENT_SETTID != 0 && flags & CLONE_PIDFD == 0 {
                    a.ptid as u64
                } else {
                    0
                },
                a.exit_signal,
                0,
                0,
                a.tls as u64,
                a.set_tid,
                a.set_tid_size,
                a.cgroup,
            ];
            host_call(
                host::nr::CLONE3,
                [
                    args.as_ptr() as usize,
                    core::mem::size_of_val(&args),
                    0,
                    0,
                    0,
                    0,
                ],
            )
        } else {
            host_call(
                host::nr::CLONE,
                [
                    (flags | a.exit_signal) as usize,
                    0,
                    a.ptid,
                    a.ctid,
                    a.tls,
                    0,
                ],
            )
        }
    })?;
    if r == 0 && flags & CLONE_FILES == 0 {
        crate::kernel::thread::current()
            .fd_table
            .get()
            .set_shared(false);
        crate::host::fds::note_private_fds();
    }
    if r == 0 {
        // The child's memory is its own copy, and it has one thread.
        crate::patch::note_private_memory();
    }
    if r == 0 && clear_handlers {
        crate::kernel::signal::clear_handlers(crate::kernel::thread::current());
    }
    if r == 0 && a.stack != 0 {
        // The child returns to the program on the stack it was given.
        c.regs().mcontext.rsp = a.stack as u64;
    }
    Ok(r)
}

/// A child sharing this memory (thread, vfork, posix_spawn): it gets its own
/// runtime stack and state, and starts by returning into the program with
/// the parent's registers (RAX = 0, RSP = the new stack).
fn clone_vm(c: &mut Ctx<'_>, a: CloneArgs, traced_child: Option<usize>) -> SysResult {
    let parent = c.t;
    let was_shared = crate::patch::memory_shared();
    crate::patch::note_shared_memory();
    // A process of its own (no CLONE_SIGHAND) gets a copy of our process
    // state, a table of its own (no CLONE_FILES) a copy of our table's.
    let own_process = a.flags & CLONE_SIGHAND == 0;
    let own_table = a.flags & CLONE_FILES == 0;
    let process = if own_process {
        parent.process().for_child()
    } else if a.flags & CLONE_THREAD == 0 {
        // Another process sharing our dispositions: its pid and parent are
        // its own.
        parent.process().for_child_sharing_actions()
    } else {
        parent.process()
    };
    let fd_table = if own_table {
        parent.fd_table.get().for_child()
    } else {
        parent.fd_table.get()
    };
    let release = || {
        if own_process {
            crate::kernel::process::release(process);
        }
        if own_table {
            fd_table.release();
        }
    };
    let child = match thread::alloc(process, fd_table, parent.sig_mask.get()) {
        Ok(t) => t,
        Err(e) => {
            release();
            return Err(e);
        }
    };
    if a.flags & CLONE_VFORK != 0 {
        child.altstack.set(parent.altstack.get());
    }
    // The program's seccomp filters go to every thread or process it makes.
    child.seccomp.store(
        parent.seccomp.load(core::sync::atomic::Ordering::Relaxed),
        core::sync::atomic::Ordering::Relaxed,
    );
    let mut uc = *c.regs();
    uc.mcontext.rax = 0;
    if a.stack != 0 {
        uc.mcontext.rsp = a.stack as u64;
    }
    uc.mcontext.rcx = uc.mcontext.rip;
    uc.mcontext.r11 = uc.mcontext.eflags;
    uc.sigmask = crate::kernel::signal::host_mask(parent.sig_mask.get());
    let sp = thread::prepare_child(child, &uc);
    if let Some(i) = traced_child {
        crate::kernel::ptrace::child_traced(child, i, 0);
    }
    // CLONE_CHILD_SETTID/CLEARTID go to the host as asked: the kernel must
    // clear the tid only once the thread is really gone (glibc frees the
    // thread's memory, rseq area included, as soon as it sees the clear).
    let r = thread::spawn(child, a.flags | a.exit_signal, sp, a.ptid, a.ctid, a.tls);
    if r < 0 {
        thread::free_unused(child);
        release();
        return Err(Errno(-r as i32));
    }
    child
        .tid
        .store(r as i32, core::sync::atomic::Ordering::Release);
    if a.flags & CLONE_VFORK != 0 {
        // The child has exec'd or exited: its runtime state is ours to free,
        // and, if nothing shared our memory before it, nothing does now
        // (the fork children and execs in place that follow need not
        // count with it). Its execve's argument block is ours to unmap.
        host::ExecArgs::release(child.exec_args.get());
        thread::free_unused(child);
        release();
        if !was_shared {
            crate::patch::note_private_memory();
        }
    } else if a.flags & CLONE_THREAD == 0 {
        // A process sharing our memory: its stack slot is freed once it is
        // gone; its process state and table stay (they are small, and we
        // cannot tell when it stops using them).
        thread::retire(child);
    }
    Ok(r as usize)
}

/// Implements execve(2).
#[syscall]
pub fn execve(c: &mut Ctx<'_>, pathname: usize, argv: usize, envp: usize) -> SysResult {
    exec_common(c, host::AT_FDCWD, pathname, argv, envp, 0)
}

/// Implements execveat(2).
#[syscall]
pub fn execveat(
    c: &mut Ctx<'_>,
    dirfd: i32,
    pathname: usize,
    argv: usize,
    envp: usize,
    flags: i32,
) -> SysResult {
    exec_common(c, dirfd as isize, pathname, argv, envp, flags)
}

const AT_EMPTY_PATH: i32 = 0x1000;
const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
/// execveat(2): check that the file may be executed, without executing it.
const AT_EXECVE_CHECK: i32 = 0x10000;

fn exec_common(
    c: &mut Ctx<'_>,
    dirfd: isize,
    path: usize,
    argv: usize,
    envp: usize,
    flags: i32,
) -> SysResult {
    // Linux's order: the path (EFAULT, ENAMETOOLONG), the flags, opening
    // the file (ENOENT, EACCES, ...), then argv and envp (EFAULT, E2BIG),
    // and only then the binary's format and its interpreters (ENOEXEC).
    let path_ptr = path;
    let path = user::read_cstr(path, user::PATH_MAX)?;
    if path.is_empty() && flags & AT_EMPTY_PATH == 0 {
        return Err(Errno::ENOENT); // getname's own check, before the flags
    }
    if flags & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_EXECVE_CHECK) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & AT_EXECVE_CHECK != 0 {
        // Only the checks (Linux 6.14+): the host makes them and never
        // executes anything, so the runtime stays.
        return c.host();
    }
    // The kernel's own checks, in its order, where it has them (Linux
    // 6.14+): opening the file (ENOENT, EACCES, ETXTBSY for a file open
    // for writing), then argv and envp (EFAULT, E2BIG), executing nothing.
    // An older kernel refuses the flag (EINVAL): the runtime's checks below
    // then stand alone.
    // Under mounts the path is the guest's: the runtime finds the file and
    // the host checks it by its descriptor.
    // A full descriptor table (the lookup's EMFILE) skips this check: the
    // kernel's execve needs no descriptor, and the runtime's own checks
    // below run in a table of their own.
    let mut found = None;
    let target = if crate::kernel::fs::mount::active() && !path.is_empty() {
        use crate::kernel::fs::walk::{lookup, Found};
        let follow = flags & AT_SYMLINK_NOFOLLOW == 0;
        match lookup(c.t.fd_table.get(), dirfd as i32, &path, follow) {
            Ok(Found::Object { fd, .. }) => {
                let n = fd.0;
                found = Some(fd);
                Some((n as usize, c"".as_ptr() as usize, flags | AT_EMPTY_PATH))
            }
            Ok(Found::ProgramFd(n)) => {
                Some((n as usize, c"".as_ptr() as usize, flags | AT_EMPTY_PATH))
            }
            Err(Errno::EMFILE) => None,
            Err(e) => return Err(e),
        }
    } else {
        Some((dirfd as usize, path_ptr, flags))
    };
    let check = match target {
        Some((check_dir, check_path, check_flags)) => host_call(
            host::nr::EXECVEAT,
            [
                check_dir,
                check_path,
                argv,
                envp,
                (check_flags | AT_EXECVE_CHECK) as usize,
                0,
            ],
        ),
        None => Ok(0),
    };
    drop(found);
    if let Err(e) = check {
        if e != Errno::EINVAL {
            return Err(e);
        }
    }
    let full = crate::kernel::exec::exec_path(dirfd, &path, flags & AT_EMPTY_PATH != 0)?;
    // The filename Linux gives a script's interpreter: the path as given
    // (from the working directory or absolute), else /dev/fd/N[/PATH].
    let name = if crate::kernel::fs::is_self_exe(&path, host::getpid()) {
        alloc::vec::Vec::new()
    } else if path.first() == Some(&b'/') || dirfd == host::AT_FDCWD && !path.is_empty() {
        path.clone()
    } else if path.is_empty() {
        alloc::format!("/dev/fd/{dirfd}").into_bytes()
    } else {
        let mut v = alloc::format!("/dev/fd/{dirfd}/").into_bytes();
        v.extend_from_slice(&path);
        v
    };
    // The new program's descriptors keep the host's offsets only.
    c.t.fd_table.get().share_offsets();
    // The check opens the files of the chain. In the program's table when
    // no code of the program can run meanwhile; otherwise, or when that
    // table is full, in a table of its own, so that a full table does not
    // fail the exec (the kernel's execve needs no descriptor) and other
    // threads never see the descriptors (`with_transient_fds_keeping`).
    // A full table in the table of its own is the check's answer
    // (`table_full` keeps it); if no such table can be made, the check runs
    // here.
    use crate::kernel::exec::loader::{check_executable_chain, ExecError::Open};
    let held = c.t.fd_table.get().held();
    let table_full = core::cell::Cell::new(None);
    let check = || match check_executable_chain(&full) {
        Err(f) if matches!(f.error, Open(Errno::EMFILE) | Open(Errno::ENFILE)) => {
            table_full.set(Some(f));
            Err(Errno::EMFILE)
        }
        r => Ok(r),
    };
    crate::log!(
        Debug,
        "execve: the check runs in {}",
        if crate::host::fds::may_use_program_fds() {
            "the program's table"
        } else {
            "a task of its own (the table is shared)"
        }
    );
    let checked = match crate::host::fds::with_transient_fds_keeping(&held, check) {
        Ok(r) => r,
        Err(Errno::EMFILE) if let Some(f) = table_full.take() => Err(f),
        Err(_) => check_executable_chain(&full),
    };
    if let Err(f) = &checked {
        use crate::kernel::exec::loader::ExecError::{NotExecutable, Open};
        if f.via.is_none() && matches!(f.error, Open(_) | NotExecutable(_)) {
            return Err(f.error.errno());
        }
    }
    let argv = user::read_cstr_array(argv)?;
    let envp = user::read_cstr_array(envp)?;
    checked.map_err(|f| f.error.errno())?;
    if name.starts_with(b"/dev/fd/") && crate::kernel::exec::loader::is_script(&full) {
        // Linux: a script named through a close-on-exec descriptor could
        // not be opened by its interpreter after the exec (ENOENT).
        const F_GETFD: i32 = 1;
        const FD_CLOEXEC: usize = 1;
        if host::fcntl(dirfd as i32, F_GETFD, 0).is_ok_and(|f| f & FD_CLOEXEC != 0) {
            return Err(Errno::ENOENT);
        }
    }
    // (Nothing of the call's own left in the heap for the kernel's way:
    // `exec_runtime`.)
    drop((path, held, table_full));
    let t = c.t;
    if crate::kernel::exec::in_place::try_exec(t, c.regs(), &full, &name, &argv, &envp) {
        if crate::kernel::process::config().patch_syscalls {
            let vdso = crate::kernel::process::host_auxv()
                .iter()
                .find(|a| a.0 == crate::kernel::exec::loader::AT_SYSINFO_EHDR)
                .map_or(0, |a| a.1 as usize);
            crate::sys::def::init_patching(
                t,
                vdso,
                t.seccomp.load(core::sync::atomic::Ordering::Relaxed),
            );
        }
        c.keep_regs = true;
        return Ok(0);
    }
    crate::kernel::exec::exec_runtime(c.t, full, name, argv, envp)
}

/// Implements exit(2): ends the calling thread (the host clears and wakes
/// its clear_child_tid word when the thread is gone, as natively).
#[syscall]
pub fn exit(c: &mut Ctx<'_>, status: i32) -> SysResult {
    let t = c.t;
    crate::kernel::ptrace::exiting(t, c.uc.as_deref_mut(), (status & 0xff) << 8);
    crate::kernel::process::thread_exiting(t);
    thread::retire(t);
    host::exit_thread(status)
}

/// Implements exit_group(2).
#[syscall]
pub fn exit_group(c: &mut Ctx<'_>, status: i32) -> SysResult {
    crate::kernel::ptrace::exiting(c.t, c.uc.as_deref_mut(), (status & 0xff) << 8);
    crate::kernel::process::process_exiting();
    host::exit_group(status)
}

const ARCH_SET_GS: usize = 0x1001;
const ARCH_GET_GS: usize = 0x1004;

/// Implements arch_prctl(2): FS goes to the host; GS is emulated because
/// the runtime keeps its per-thread pointer there.
#[syscall]
pub fn arch_prctl(c: &mut Ctx<'_>, code: usize, addr: usize) -> SysResult {
    match code {
        ARCH_SET_GS => {
            // TASK_SIZE_MAX: the last user page is never a valid base.
            if addr >= 0x7fff_ffff_f000 {
                return Err(Errno::EPERM);
            }
            c.t.guest_gs.set(addr);
            Ok(0)
        }
        ARCH_GET_GS => {
            UserPtr::<usize>::new(addr).write(&c.t.guest_gs.get())?;
            Ok(0)
        }
        ARCH_GET_FS | ARCH_SET_FS | ARCH_GET_CPUID => c.host(),
        _ => {
            // CPUID faulting, shadow stacks, extended-state permissions:
            // states the kernel's execve resets.
            let r = c.host()?;
            crate::kernel::exec::in_place::needs_kernel("arch_prctl");
            Ok(r)
        }
    }
}

const ARCH_SET_FS: usize = 0x1002;
const ARCH_GET_FS: usize = 0x1003;
const ARCH_GET_CPUID: usize = 0x1011;

/// Implements rseq(2): a host call; the thread's registration is noted,
/// so that an execve in place can undo it (`kernel::exec::in_place`).
#[syscall]
pub fn rseq(c: &mut Ctx<'_>, rseq: usize, rseq_len: u32, flags: i32, sig: u32) -> SysResult {
    const RSEQ_FLAG_UNREGISTER: i32 = 1;
    let r = c.host()?;
    if flags == 0 {
        c.t.rseq.set((rseq, rseq_len, sig));
    } else if flags == RSEQ_FLAG_UNREGISTER {
        c.t.rseq.set((0, 0, 0));
    }
    Ok(r)
}

/// Implements timer_create(2): a host call. The kernel's execve deletes a
/// process's POSIX timers; an execve in place could not, so the next one
/// goes through the kernel.
#[syscall]
pub fn timer_create(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host()?;
    crate::kernel::exec::in_place::needs_kernel("timer_create");
    Ok(r)
}

/// Implements io_setup(2): a host call. The kernel's execve destroys the
/// process's AIO contexts; the next execve goes through the kernel.
#[syscall]
pub fn io_setup(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host()?;
    crate::kernel::exec::in_place::needs_kernel("io_setup");
    Ok(r)
}

/// Implements personality(2): a host call. A change of the execution
/// domain's flags is the kernel's execve's to apply and clear, so the next
/// execve goes through the kernel.
#[syscall]
pub fn personality(c: &mut Ctx<'_>, persona: usize) -> SysResult {
    const QUERY: usize = 0xffff_ffff;
    let r = c.host()?;
    if persona as u32 as usize != QUERY {
        crate::kernel::exec::in_place::needs_kernel("personality");
    }
    Ok(r)
}

use crate::host::abi::prctl::{
    PR_GET_PDEATHSIG, PR_SET_PDEATHSIG, PR_SET_SYSCALL_USER_DISPATCH, PR_SET_TSC,
    PR_SYS_DISPATCH_OFF, PR_TSC_SIGSEGV,
};

/// Implements prctl(2): Syscall User Dispatch belongs to the runtime; the
/// parent-death signal is the runtime's on the host and emulated for the
/// program; a faulting `rdtsc` (PR_SET_TSC) makes the runtime stop using it.
#[syscall]
pub fn prctl(
    c: &mut Ctx<'_>,
    option: usize,
    arg2: usize,
    arg3: usize,
    arg4: usize,
    arg5: usize,
) -> SysResult {
    // PR_SET_DUMPABLE, PR_SET_KEEPCAPS, PR_SET_SECUREBITS,
    // PR_SET_TIMERSLACK, PR_SET_MM, PR_CAP_AMBIENT, PR_SET_SPECULATION_CTRL,
    // PR_SET_IO_FLUSHER, PR_SCHED_CORE, PR_SET_MDWE, PR_SET_MEMORY_MERGE,
    // PR_SET_SHADOW_STACK_STATUS, PR_LOCK_SHADOW_STACK_STATUS: process
    // states that the kernel's execve resets or acts on; the next execve
    // goes through it.
    if matches!(
        option,
        4 | 8 | 28 | 29 | 35 | 47 | 53 | 57 | 62 | 65 | 67 | 75 | 76
    ) {
        crate::kernel::exec::in_place::needs_kernel("prctl");
    }
    match option {
        PR_SET_SYSCALL_USER_DISPATCH => {
            // The program's dispatch is always off: turning it off is
            // accepted with Linux's checks (offset, length and selector 0);
            // turning it on is refused (the runtime's own dispatch).
            if arg2 == PR_SYS_DISPATCH_OFF && arg3 == 0 && arg4 == 0 && arg5 == 0 {
                Ok(0)
            } else {
                Err(Errno::EINVAL)
            }
        }
        PR_SET_PDEATHSIG => {
            let sig = arg2;
            if sig > 64 {
                return Err(Errno::EINVAL);
            }
            c.t.ids()
                .guest_pdeathsig
                .store(sig as i32, core::sync::atomic::Ordering::Relaxed);
            Ok(0)
        }
        PR_SET_TSC => {
            let r = c.host()?;
            if arg2 == PR_TSC_SIGSEGV {
                crate::kernel::time::disable_tsc();
            }
            Ok(r)
        }
        PR_GET_PDEATHSIG => {
            let sig =
                c.t.ids()
                    .guest_pdeathsig
                    .load(core::sync::atomic::Ordering::Relaxed);
            UserPtr::<i32>::new(arg2).write(&sig)?;
            Ok(0)
        }
        PR_GET_SECCOMP => {
            // (In strict mode the filter has ended the thread already.)
            let mode = c.t.seccomp.load(core::sync::atomic::Ordering::Relaxed);
            Ok(if mode == 0 { 0 } else { 2 })
        }
        PR_SET_SECCOMP => match arg2 {
            1 => seccomp::install_strict(c.t),
            2 => set_filter(c, 0, arg3),
            _ => Err(Errno::EINVAL),
        },
        _ => c.host(),
    }
}

const PR_GET_SECCOMP: usize = 21;
const PR_SET_SECCOMP: usize = 22;

use crate::kernel::seccomp;

/// Implements seccomp(2): the program's filters are the library OS's
/// (`kernel::seccomp`): run on each of its calls, never installed on the
/// host, where they would filter the runtime's own calls.
#[syscall]
pub fn seccomp(c: &mut Ctx<'_>, op: u32, flags: u32, args: usize) -> SysResult {
    match op {
        // SECCOMP_SET_MODE_STRICT
        0 if flags == 0 && args == 0 => seccomp::install_strict(c.t),
        // SECCOMP_SET_MODE_FILTER
        1 => set_filter(c, flags, args),
        // SECCOMP_GET_ACTION_AVAIL
        2 if flags == 0 => {
            let action = UserPtr::<u32>::new(args).read()?;
            if seccomp::action_available(action) {
                Ok(0)
            } else {
                Err(Errno::EOPNOTSUPP)
            }
        }
        // SECCOMP_GET_NOTIF_SIZES: struct seccomp_notif, seccomp_notif_resp
        // and seccomp_data.
        3 if flags == 0 => {
            let mut sizes = [0u8; 6];
            for (b, v) in sizes.chunks_exact_mut(2).zip([80u16, 24, 64]) {
                b.copy_from_slice(&v.to_ne_bytes());
            }
            UserPtr::<[u8; 6]>::new(args).write(&sizes)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// SECCOMP_SET_MODE_FILTER with the `struct sock_fprog` at `fprog`, in
/// Linux's order of checks: flags, the program's header, its length, the
/// right to install, its instructions, the mode.
fn set_filter(c: &mut Ctx<'_>, flags: u32, fprog: usize) -> SysResult {
    seccomp::check_flags(flags)?;
    let [len, filter] = UserPtr::<[u64; 2]>::new(fprog).read()?;
    let len = (len & 0xffff) as usize;
    if len == 0 || len > seccomp::MAX_INSNS {
        return Err(Errno::EINVAL);
    }
    seccomp::may_install()?;
    let mut bytes = alloc::vec![0u8; len * 8];
    user::copy_in(&mut bytes, filter as usize)?;
    let prog: alloc::vec::Vec<seccomp::Insn> = bytes
        .chunks_exact(8)
        .map(|b| seccomp::Insn::from_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .collect();
    seccomp::check(&prog)?;
    seccomp::install_filter(c.t, flags, prog)
}

/// __WALL and __WCLONE: a wait that may report clone children (exit signal
/// other than SIGCHLD), such as the runtime's transient tasks.
const WALL_OR_WCLONE: u32 = 0xc000_0000;
const WNOWAIT: u32 = 0x0100_0000;

/// Implements wait4(2): the host's, never reporting one of the runtime's
/// transient tasks (`host::fds::with_own_fds`: a clone child of ours for a
/// few microseconds, which a wait with __WALL or __WCLONE could reap; it
/// is waited for again, as if it never was).
#[syscall]
pub fn wait4(c: &mut Ctx<'_>, pid: i32, status: usize, options: u32, rusage: usize) -> SysResult {
    if crate::kernel::ptrace::is_tracer() {
        use super::ptrace::{report_wait4, traced_wait, Waited};
        let w = traced_wait(c, pid, options, |c, extra| {
            let mut args = c.args;
            args[2] |= extra as usize;
            let r = host_call(host::nr::WAIT4, args)?;
            if r != 0 && host::fds::is_transient(r as i32) {
                return Ok((0, 0));
            }
            Ok((r, r as i32))
        })?;
        return match w {
            Waited::Report(r) => report_wait4(&r, status, rusage),
            Waited::Host(v) => Ok(v),
        };
    }
    wait_hiding_transients(c, options, |r| Ok(r as i32))
}

/// Implements waitid(2): as [`wait4`], the runtime's transient tasks never
/// reported (with WNOWAIT, waited for until the runtime has reaped them).
#[syscall]
pub fn waitid(
    c: &mut Ctx<'_>,
    idtype: i32,
    id: i32,
    infop: usize,
    options: u32,
    _rusage: usize,
) -> SysResult {
    if infop != 0 && crate::kernel::ptrace::is_tracer() {
        use super::ptrace::{report_waitid, traced_wait, Waited};
        const P_PID: i32 = 1;
        let pid = if idtype == P_PID { id } else { -1 };
        let w = traced_wait(c, pid, options, |c, extra| {
            let mut args = c.args;
            args[3] |= extra as usize;
            let r = host_call(host::nr::WAITID, args)?;
            let reaped = UserPtr::<i32>::new(infop + 16).read()?;
            if reaped != 0 && host::fds::is_transient(reaped) {
                UserPtr::<i32>::new(infop + 16).write(&0)?;
                return Ok((0, 0));
            }
            Ok((r, reaped))
        })?;
        return match w {
            Waited::Report(r) => report_waitid(&r, infop),
            Waited::Host(v) => Ok(v),
        };
    }
    if infop == 0 {
        return c.host_blocking();
    }
    // siginfo_t's si_pid (0 when WNOHANG found nothing).
    wait_hiding_transients(c, options, |_| UserPtr::<i32>::new(infop + 16).read())
}

/// The wait `c` (wait4 or waitid) on the host, again until what it
/// reports (the pid `reported` reads from its result: 0 when WNOHANG found
/// nothing ended) is none of the runtime's transient tasks. Only with
/// __WALL or __WCLONE: other waits never see them.
fn wait_hiding_transients(
    c: &mut Ctx<'_>,
    options: u32,
    reported: impl Fn(usize) -> Result<i32, Errno>,
) -> SysResult {
    loop {
        let mark = host::fds::transient_mark();
        let r = c.host_blocking()?;
        if options & WALL_OR_WCLONE == 0 {
            return Ok(r);
        }
        let pid = reported(r)?;
        if pid == 0 && host::fds::transient_since(mark) {
            // WNOHANG and nothing ended: perhaps only because a transient
            // task lives (natively: ECHILD). Ask again once it is gone.
            host::sched_yield();
            continue;
        }
        host::fds::settle_transients();
        if options & WNOWAIT != 0 {
            // (waitid only: wait4 refuses it.)
            if !host::fds::transient_pending(pid) {
                return Ok(r);
            }
            host::sched_yield();
        } else if !host::fds::is_transient(pid) {
            return Ok(r);
        }
    }
}
