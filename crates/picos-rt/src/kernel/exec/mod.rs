//! execve(2): which program to run, and the fresh runtime that runs it
//! (`loader` maps it).
#![deny(unsafe_code)]

pub mod in_place;
pub mod loader;

use crate::host;
use crate::host::errno::Errno;
use crate::kernel::fs::{absolute, join};
use crate::kernel::process::{config, exe_path};
use crate::kernel::thread;
use alloc::vec::Vec;
use picos_abi::CONFIG_ENV;

/// The path execve(2) should run, as the new runtime will open it. A path
/// relative to the working directory stays relative (the working directory
/// is the same after execve): opened from there, as the kernel opens it, it
/// needs no search permission on the directory's ancestors (a program run
/// as another user, in a directory it may enter below one it may not, still
/// runs `./prog`). Under mounts, and relative to another descriptor, it is
/// made absolute.
pub fn exec_path(dirfd: isize, path: &[u8], empty_path: bool) -> Result<Vec<u8>, Errno> {
    if path.is_empty() && !empty_path {
        return Err(Errno::ENOENT);
    }
    if crate::kernel::fs::is_self_exe(path, host::getpid()) {
        // /proc/self/exe is the runtime on the host; for the program it is itself.
        return Ok(exe_path().to_vec());
    }
    if path.first() == Some(&b'/') {
        return Ok(path.to_vec());
    }
    if dirfd == host::AT_FDCWD {
        if crate::kernel::fs::mount::active() {
            return Ok(absolute(path));
        }
        return Ok(path.to_vec());
    }
    // Relative to a directory fd (or the fd itself): resolve through /proc.
    // As Linux: a bad descriptor is EBADF, a relative path from one that
    // is not a directory ENOTDIR.
    let st = host::fstat(dirfd as i32).map_err(|_| Errno::EBADF)?;
    if !path.is_empty() && st.st_mode & 0o170000 != 0o040000 {
        return Err(Errno::ENOTDIR);
    }
    let link = crate::kernel::fs::fd_path(dirfd as i32).ok_or(Errno::EBADF)?;
    if path.is_empty() {
        return Ok(link);
    }
    Ok(join(&link, path))
}

/// Replaces the process with a fresh runtime running `path` (execve).
/// Returns only on failure. Takes its arguments by value: nothing of them
/// is left in the heap when the execve succeeds (a vfork child's heap is
/// its parent's: see `host::ExecArgs`).
pub fn exec_runtime(
    t: &thread::Thread,
    path: Vec<u8>,
    name: Vec<u8>,
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
) -> Result<usize, Errno> {
    let mut cfg = config().clone();
    cfg.exe = path.clone();
    if cfg.profile != 0 {
        // `--profile`: the next program need not measure the counter's rate.
        cfg.profile = crate::diag::stats::tsc_per_ms().unwrap_or(1).max(1);
    }
    // The tree's board goes on (made now if there is none: the next
    // runtime finds the syscall sites earlier programs trapped at there,
    // `patch::known`).
    crate::kernel::ptrace::ensure();
    cfg.board = crate::kernel::ptrace::config_value();
    cfg.ignored = Some(crate::kernel::signal::ignored_mask(t));
    // The next runtime runs on this machine: it need not ask CPUID again.
    cfg.cpu = crate::arch::probe_cpu();
    cfg.parent_thread = t
        .ids()
        .parent_thread
        .load(core::sync::atomic::Ordering::Relaxed) as u32;
    // The calling thread's seccomp filters go on (strict mode cannot exec).
    cfg.seccomp =
        crate::kernel::seccomp::encode(t.seccomp.load(core::sync::atomic::Ordering::Relaxed));
    cfg.exe_name = if name == path {
        Vec::new()
    } else {
        name.to_vec()
    };
    // The mounts' roots stay open across execve; the next runtime finds
    // them at their numbers in this table (which a dup2 may have moved).
    // Those of the tmpfs and overlay mounts are never close-on-exec; those
    // of host directories are only for the execve (the next runtime needs
    // no free descriptor for them: the program's table may be full).
    const F_SETFD: i32 = 2;
    const FD_CLOEXEC: usize = 1;
    let mut opened = [-1i32; crate::kernel::fs::mount::MAX_MOUNTS];
    let mut n_opened = 0;
    for m in cfg.mounts.iter_mut() {
        if let Some(i) = crate::kernel::fs::mount::table()
            .iter()
            .position(|x| x.guest == m.guest)
        {
            m.fd = crate::kernel::fs::mount::root_fd(t.fd_table.get(), i);
            if !m.detached()
                && m.fd >= 0
                && n_opened < opened.len()
                && host::fcntl(m.fd, F_SETFD, 0).is_ok()
            {
                opened[n_opened] = m.fd;
                n_opened += 1;
            }
        }
    }
    let prefix = [CONFIG_ENV.as_bytes(), b"="].concat();
    let mut env: Vec<Vec<u8>> = envp
        .iter()
        .filter(|e| !e.starts_with(&prefix))
        .cloned()
        .collect();
    env.push([prefix.as_slice(), cfg.encode().as_bytes()].concat());
    // Everything the execve needs, out of the heap; the rest freed.
    let args = host::ExecArgs::new(&argv, &env)?;
    drop((env, envp, argv, cfg, prefix, path, name));
    // Instances the runtime held because the host's queue had no room
    // (`Thread::held`) go back to the host, which keeps pending signals
    // across execve as Linux does (still no room: they are lost).
    if t.held.get() != 0 {
        t.held.set(0);
        let keep = crate::kernel::signal::NEVER_BLOCKED | !t.sig_mask.get();
        crate::kernel::signal::requeue_blocked(t, keep);
    }
    // Stats of the program being replaced.
    crate::kernel::process::process_exiting();
    // The new program starts with the program's mask, not the runtime's;
    // SIGSYS stays blocked until the new runtime's handler is in place
    // (`take_notices_from_exec`): the host's default action would kill us if
    // a parent-death notice came meanwhile.
    let _ = host::rt_sigprocmask(
        crate::host::abi::SIG_SETMASK,
        Some(
            crate::kernel::signal::host_mask(t.sig_mask.get())
                | crate::host::abi::bit(crate::host::abi::SIGSYS),
        ),
    );
    crate::kernel::signal::ignored_for_exec(t, false);
    // (A vfork child's parent unmaps the block once the execve succeeded.)
    t.exec_args.set(args.range());
    let r = args.execve(c"/proc/self/exe");
    t.exec_args.set((0, 0));
    drop(args);
    crate::kernel::signal::ignored_for_exec(t, true);
    for &fd in &opened[..n_opened] {
        let _ = host::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    let _ = host::rt_sigprocmask(
        crate::host::abi::SIG_SETMASK,
        Some(crate::kernel::signal::RUNTIME_MASK),
    );
    match r {
        Err(Errno::ENOENT) => {
            crate::log!(
                Error,
                "execve: cannot re-execute the runtime through /proc/self/exe (is /proc mounted?)"
            );
            Err(Errno::ENOENT)
        }
        Err(e) => Err(e),
        Ok(_) => Err(Errno::EIO),
    }
}
