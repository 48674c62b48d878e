//! Start-up of the picoprocess and the process-wide state of the runtime:
//! the launch configuration, the program's path, re-execution on execve.
//!
//! Start-up order: relocate (in `main.rs`), reserve memory, read the launch
//! configuration, set up the main thread's runtime state and stack, install
//! the SIGSYS handler, load the program, build its stack, arm Syscall User
//! Dispatch (every syscall outside the runtime image now traps), and jump.
//!
//! # Safety
//! `start` reads the kernel-built initial stack through a raw pointer.
#![allow(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use crate::kernel::exec::loader;
use crate::kernel::thread::{self, SigHand};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};
use picos_abi::{LaunchConfig, CONFIG_ENV};

static FSGSBASE: AtomicBool = AtomicBool::new(false);
static CONFIG: spin::Once<LaunchConfig> = spin::Once::new();
/// Absolute path of the running program (what /proc/self/exe shows it).
static EXE: spin::Once<Vec<u8>> = spin::Once::new();

const PR_SET_NAME: i32 = 15;
const PR_SET_SYSCALL_USER_DISPATCH: i32 = 59;
const PR_SYS_DISPATCH_ON: usize = 1;
const HWCAP2_FSGSBASE: u64 = 1 << 1;
const RLIMIT_STACK: i32 = 3;

#[inline(always)]
pub fn has_fsgsbase() -> bool {
    FSGSBASE.load(Ordering::Relaxed)
}

/// The launch configuration.
pub fn config() -> &'static LaunchConfig {
    CONFIG.get().expect("config set at start-up")
}

/// Absolute path of the running program.
pub fn exe_path() -> &'static [u8] {
    EXE.get().map_or(&[], |v| v.as_slice())
}

struct StartInfo {
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
    auxv: Vec<(u64, u64)>,
    stack_top: usize,
    thread: &'static thread::Thread,
}

unsafe fn cstr_at(p: *const u8) -> Vec<u8> {
    let mut n = 0;
    // SAFETY: the kernel NUL-terminates every argv/envp string.
    unsafe {
        while *p.add(n) != 0 {
            n += 1;
        }
        core::slice::from_raw_parts(p, n).to_vec()
    }
}

fn fatal(code: i32, args: core::fmt::Arguments<'_>) -> ! {
    crate::diag::log::log_line(crate::diag::log::LogLevel::Error, args);
    host::exit_group(code)
}

/// Entry from `_start` (after self-relocation) with the kernel's stack pointer.
///
/// # Safety
/// `sp` must be the initial stack pointer the kernel gave the process.
pub unsafe fn start(sp: *const usize, image_base: usize, image_len: usize) -> ! {
    // Memory first: everything after this may allocate.
    if let Err(e) = crate::mm::runtime::init(image_base, image_len) {
        fatal(127, format_args!("cannot reserve runtime memory: {}", e));
    }
    // SAFETY: the initial stack layout is argc, argv[], NULL, envp[], NULL, auxv.
    let (argv, envp, auxv) = unsafe {
        let argc = *sp;
        let argvp = sp.add(1);
        let argv: Vec<Vec<u8>> = (0..argc)
            .map(|i| cstr_at(*argvp.add(i) as *const u8))
            .collect();
        let mut e = argvp.add(argc + 1);
        let mut envp = Vec::new();
        while *e != 0 {
            envp.push(cstr_at(*e as *const u8));
            e = e.add(1);
        }
        let mut a = e.add(1) as *const u64;
        let mut auxv = Vec::new();
        loop {
            let (k, v) = (*a, *a.add(1));
            auxv.push((k, v));
            if k == 0 {
                break;
            }
            a = a.add(2);
        }
        (argv, envp, auxv)
    };
    let hwcap2 = auxv
        .iter()
        .find(|a| a.0 == loader::AT_HWCAP2)
        .map_or(0, |a| a.1);
    FSGSBASE.store(hwcap2 & HWCAP2_FSGSBASE != 0, Ordering::Relaxed);
    let prefix = [CONFIG_ENV.as_bytes(), b"="].concat();
    let Some(cfg_raw) = envp.iter().find(|e| e.starts_with(&prefix)) else {
        fatal(
            2,
            format_args!("this is the picos runtime; start programs with `picos run PROGRAM`"),
        );
    };
    let cfg = match LaunchConfig::decode(&cfg_raw[prefix.len()..]) {
        Ok(c) => c,
        Err(e) => fatal(2, format_args!("bad launch configuration: {}", e)),
    };
    crate::diag::log::set_level(cfg.log_level);
    if cfg.stats {
        crate::diag::stats::enable();
    }
    let envp: Vec<Vec<u8>> = envp
        .into_iter()
        .filter(|e| !e.starts_with(&prefix))
        .collect();
    CONFIG.call_once(|| cfg);

    // SIGSYS is blocked across our execve (see `exec_runtime`), not by the program.
    let mask = host::rt_sigprocmask(crate::kernel::signal::SIG_BLOCK, None).unwrap_or(0)
        & !crate::kernel::signal::bit(crate::kernel::signal::SIGSYS);
    let sighand: &'static SigHand = Box::leak(Box::new(SigHand::new()));
    let t = match thread::alloc(sighand, mask) {
        Ok(t) => t,
        Err(e) => fatal(
            127,
            format_args!("cannot allocate the main thread's runtime stack: {}", e),
        ),
    };
    let info = Box::new(StartInfo {
        argv,
        envp,
        auxv,
        stack_top: sp as usize,
        thread: t,
    });
    let top = t.stack_top();
    // SAFETY: `top` is the top of the fresh runtime stack; main_on_runtime_stack never returns.
    unsafe {
        crate::arch::picos_switch_stack(Box::into_raw(info) as usize, main_on_runtime_stack, top)
    }
}

/// Makes `path` absolute against the working directory.
pub fn absolute(path: &[u8]) -> Vec<u8> {
    if path.first() == Some(&b'/') {
        return path.to_vec();
    }
    let mut cwd = alloc::vec![0u8; 4096];
    // SAFETY: `cwd` is a live writable buffer of the length passed.
    let n = match unsafe {
        host::call(
            host::nr::GETCWD,
            [cwd.as_mut_ptr() as usize, cwd.len(), 0, 0, 0, 0],
        )
    } {
        Ok(n) if n > 0 => n - 1,
        _ => return path.to_vec(),
    };
    cwd.truncate(n);
    join(&cwd, path)
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut v = dir.to_vec();
    if v.last() != Some(&b'/') {
        v.push(b'/');
    }
    let name = name.strip_prefix(b"./").unwrap_or(name);
    v.extend_from_slice(name);
    v
}

extern "C" fn main_on_runtime_stack(info: usize) -> ! {
    // SAFETY: `info` is the Box leaked by `start`.
    let info = unsafe { Box::from_raw(info as *mut StartInfo) };
    let t = info.thread;
    thread::install(t);
    crate::kernel::signal::init_dispositions(t);
    watch_parent(t, None);
    check_root_at_exec();
    // Freshly exec'd: no one else can change our process group any more.
    t.ids().pgid_cacheable.store(true, Ordering::Relaxed);
    if let Err(e) = crate::kernel::signal::install_runtime_handlers() {
        fatal(
            127,
            format_args!("cannot install the SIGSYS handler: {}", e),
        );
    }
    take_notices_from_exec(t);
    let cfg = config();
    if cfg.stack_size_bytes != 0 {
        if let Err(e) = host::setrlimit(RLIMIT_STACK, cfg.stack_size_bytes, u64::MAX) {
            // Keep the hard limit if we may not raise it.
            let _ = e;
            let _ = host::setrlimit(RLIMIT_STACK, cfg.stack_size_bytes, cfg.stack_size_bytes);
        }
    }
    let exe = &absolute(&cfg.exe);
    let argv = info.argv.clone();
    // Loaded with descriptors of a table of its own: the program's
    // (inherited through execve) may be full, which must not stop an
    // exec that needs no descriptor natively.
    let loaded = with_own_fds(|| loader::load(exe, argv.clone()))
        .unwrap_or_else(|_| loader::load(exe, argv));
    let loaded = match loaded {
        Ok(l) => l,
        Err(e) => {
            let code = if matches!(e, loader::ExecError::Open(Errno::ENOENT)) {
                127
            } else {
                126
            };
            fatal(
                code,
                format_args!(
                    "cannot run {}: {}",
                    crate::diag::log::Bytes(exe),
                    e.reason()
                ),
            );
        }
    };
    EXE.call_once(|| loaded.real_path.clone());
    crate::sys::memory::init_brk(loaded.main.end);
    let execfn = &cfg.exe;
    let sp = match loader::build_stack(
        info.stack_top - 256,
        &loaded,
        &info.envp,
        execfn,
        &info.auxv,
    ) {
        Ok(sp) => sp,
        Err(e) => fatal(126, format_args!("cannot build the program's stack: {}", e)),
    };
    set_name(exe);
    let vdso = info
        .auxv
        .iter()
        .find(|a| a.0 == loader::AT_SYSINFO_EHDR)
        .map_or(0, |a| a.1 as usize);
    crate::kernel::time::init(vdso);
    // CPUID while it surely works (execve re-enables it); the program may
    // disable it with arch_prctl(ARCH_SET_CPUID, 0).
    crate::arch::probe_cpu();
    // PR_SET_TSC survives execve: a program started with `rdtsc` faulting
    // keeps the runtime off the TSC from the start.
    const PR_GET_TSC: i32 = 25;
    const PR_TSC_SIGSEGV: i32 = 2;
    let mut tsc_mode: i32 = 0;
    if crate::host::prctl(PR_GET_TSC, &raw mut tsc_mode as usize, 0, 0, 0).is_ok()
        && tsc_mode == PR_TSC_SIGSEGV
    {
        crate::kernel::time::disable_tsc();
    }
    if cfg.patch_syscalls {
        crate::patch::init(vdso);
    }
    if let Err(e) = arm_dispatch() {
        fatal(
            126,
            format_args!(
                "cannot enable Syscall User Dispatch (needs Linux 5.11+): {}",
                e
            ),
        );
    }
    let entry = loaded.start;
    drop(info);
    crate::log!(
        Debug,
        "starting {} at {:#x}",
        crate::diag::log::Bytes(exe),
        entry
    );
    // SAFETY: `entry` and `sp` come from the loader; nothing of ours is
    // referenced by the program.
    unsafe { crate::arch::picos_enter(entry, sp) }
}

fn set_name(exe: &[u8]) {
    let base = exe.rsplit(|&c| c == b'/').next().unwrap_or(exe);
    let mut name = [0u8; 16];
    let n = base.len().min(15);
    name[..n].copy_from_slice(&base[..n]);
    let _ = host::prctl(PR_SET_NAME, name.as_ptr() as usize, 0, 0, 0);
}

/// The path execve(2) should run, made absolute so the new runtime finds it.
pub fn exec_path(dirfd: isize, path: &[u8], empty_path: bool) -> Result<Vec<u8>, Errno> {
    if path.is_empty() && !empty_path {
        return Err(Errno::ENOENT);
    }
    if crate::sys::fs::is_self_exe(path, host::getpid()) {
        // /proc/self/exe is the runtime on the host; for the program it is itself.
        return Ok(exe_path().to_vec());
    }
    if path.first() == Some(&b'/') {
        return Ok(path.to_vec());
    }
    if dirfd == host::AT_FDCWD {
        return Ok(absolute(path));
    }
    // Relative to a directory fd (or the fd itself): resolve through /proc.
    // As Linux: a bad descriptor is EBADF, a relative path from one that
    // is not a directory ENOTDIR.
    let st = host::fstat(dirfd as i32).map_err(|_| Errno::EBADF)?;
    if !path.is_empty() && st.st_mode & 0o170000 != 0o040000 {
        return Err(Errno::ENOTDIR);
    }
    let mut link = alloc::vec![0u8; 4096];
    let mut p: Vec<u8> = alloc::format!("/proc/thread-self/fd/{}", dirfd as i32).into_bytes();
    p.push(0);
    // SAFETY: `p` is NUL-terminated; `link` is writable for its length.
    let n = unsafe {
        host::call(
            89, /* readlink */
            [
                p.as_ptr() as usize,
                link.as_mut_ptr() as usize,
                link.len(),
                0,
                0,
                0,
            ],
        )
    }
    .map_err(|_| Errno::EBADF)?;
    link.truncate(n);
    if path.is_empty() {
        return Ok(link);
    }
    Ok(join(&link, path))
}

/// Replaces the process with a fresh runtime running `path` (execve).
/// Returns only on failure.
pub fn exec_runtime(
    t: &thread::Thread,
    path: &[u8],
    argv: &[Vec<u8>],
    envp: &[Vec<u8>],
) -> Result<usize, Errno> {
    let mut cfg = config().clone();
    cfg.exe = path.to_vec();
    let prefix = [CONFIG_ENV.as_bytes(), b"="].concat();
    let mut env: Vec<Vec<u8>> = envp
        .iter()
        .filter(|e| !e.starts_with(&prefix))
        .cloned()
        .collect();
    env.push([prefix.as_slice(), cfg.encode().as_bytes()].concat());
    let (mut astore, mut estore) = (Vec::new(), Vec::new());
    let argv_p = crate::sys::process::c_vector(argv, &mut astore);
    let envp_p = crate::sys::process::c_vector(&env, &mut estore);
    // Stats of the program being replaced.
    process_exiting();
    // The new program starts with the program's mask, not the runtime's;
    // SIGSYS stays blocked until the new runtime's handler is in place
    // (`take_notices_from_exec`): the host's default action would kill us if
    // a parent-death notice came meanwhile.
    let _ = host::rt_sigprocmask(
        crate::kernel::signal::SIG_SETMASK,
        Some(
            crate::kernel::signal::host_mask(t.sig_mask.get())
                | crate::kernel::signal::bit(crate::kernel::signal::SIGSYS),
        ),
    );
    // SAFETY: all pointers reference live NUL-terminated vectors above.
    let r = unsafe {
        host::call(
            host::nr::EXECVE,
            [
                c"/proc/self/exe".as_ptr() as usize,
                argv_p.as_ptr() as usize,
                envp_p.as_ptr() as usize,
                0,
                0,
                0,
            ],
        )
    };
    let _ = host::rt_sigprocmask(
        crate::kernel::signal::SIG_SETMASK,
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

/// Arms Syscall User Dispatch for the calling thread: from now on every
/// syscall issued outside the runtime image traps to the SIGSYS handler.
/// Linux does not pass this setting to new threads or processes, so every
/// thread the runtime creates calls this before running program code.
pub fn arm_dispatch() -> Result<(), Errno> {
    let (base, len) = crate::mm::runtime::image_range();
    // The thread's selector byte lets the runtime open the gate around vDSO
    // calls (see `vdso`); it stays at BLOCK otherwise.
    let selector = &thread::current().sud_selector as *const core::sync::atomic::AtomicU8 as usize;
    host::prctl(
        PR_SET_SYSCALL_USER_DISPATCH,
        PR_SYS_DISPATCH_ON,
        base,
        len,
        selector,
    )
    .map(|_| ())
}

const PR_SET_PDEATHSIG: i32 = 1;

/// Asks the host for SIGSYS when our parent dies (so the cached parent pid
/// can be updated, and so that the tree ends with its root: see
/// [`parent_gone`]), then caches our pid and our parent's. `parent` is the
/// process that created us, if known (a forked child knows it): if our
/// parent is already another process, it died before the signal was armed,
/// and that is handled now as the signal would have been.
pub fn watch_parent(t: &thread::Thread, parent: Option<i32>) {
    let ids = t.ids();
    let _ = host::prctl(
        PR_SET_PDEATHSIG,
        crate::kernel::signal::SIGSYS as usize,
        0,
        0,
        0,
    );
    ids.pid.store(host::getpid(), Ordering::Relaxed);
    // After the prctl: a parent that dies from now on sends the signal.
    let ppid = host::getppid();
    ids.ppid.store(ppid, Ordering::Relaxed);
    if let Some(parent) = parent.filter(|&p| p > 0 && p != ppid) {
        parent_gone(parent);
    }
}

/// Is this SIGSYS the parent-death notice asked for by `watch_parent`? If
/// so, note the new parent, end this process if the tree's root is gone,
/// and raise the program's own parent-death signal, if it asked for one.
///
/// The host sends the notice when the *thread* that created us ends, with
/// the pid of its process: if that process lives on (another of its
/// threads adopts us), our parent has not changed.
pub fn is_parent_death(info: &crate::arch::SigInfo) -> bool {
    let Some(t) = thread::current_checked() else {
        return false;
    };
    let ids = t.ids();
    let from = i32::from_ne_bytes(info.0[16..20].try_into().unwrap());
    if from <= 0 || from != ids.ppid.load(Ordering::Relaxed) {
        return false;
    }
    // The host moves us to our new parent before it sends the notice.
    let now = host::getppid();
    ids.ppid.store(now, Ordering::Relaxed);
    if now != from {
        parent_gone(from);
    }
    let sig = ids.guest_pdeathsig.load(Ordering::Relaxed);
    if sig > 0 {
        let _ = host::tgkill(host::getpid(), t.tid(), sig);
    }
    true
}

/// Our parent process `parent` has ended (we have been given to another).
/// A picoprocess tree never outlives its root (the process `picos run`
/// became): if `parent` was the root, or the root is gone too, this process
/// ends with SIGKILL, and its own children learn it the same way, down the
/// tree. An orphan whose parent ended while the root lives runs on, as it
/// would natively. Called from the SIGSYS handler: it must not allocate.
fn parent_gone(parent: i32) {
    let root = config().root_pid as i32;
    if root <= 0 || host::getpid() == root {
        return;
    }
    if parent == root || root_gone() {
        end_with_root();
    }
}

/// Ends this process because the root of its tree is gone.
fn end_with_root() -> ! {
    crate::log!(
        Debug,
        "the root of the picoprocess tree ({}) has ended: ending",
        config().root_pid
    );
    let _ = host::kill(host::getpid(), crate::kernel::signal::SIGKILL);
    host::exit_group(128 + crate::kernel::signal::SIGKILL)
}

/// At start-up after execve, in a process that is not the root: a parent
/// that ended while we exec'd (or while a vfork child ran before its
/// exec, with no parent-death signal armed) notified nobody, so look at the
/// root itself.
fn check_root_at_exec() {
    let root = config().root_pid as i32;
    if root > 0 && host::getpid() != root && root_gone() {
        end_with_root();
    }
}

/// SIGSYS is blocked across execve (`exec_runtime`), so that a
/// parent-death notice sent while we exec'd (the thread that forked us
/// ending, as a program's threads often do right after a fork, or our
/// parent's death) waits for our handler instead of meeting the host's
/// default action, which kills. Takes such a notice now, then unblocks
/// SIGSYS. Anything else pending (a SIGSYS someone sent with kill) is
/// queued again, for the program.
fn take_notices_from_exec(t: &thread::Thread) {
    let sys = crate::kernel::signal::bit(crate::kernel::signal::SIGSYS);
    let mut other = None;
    // One SIGSYS at most waits in each of the process's and thread's queues.
    for _ in 0..2 {
        let mut info = crate::arch::SigInfo::default();
        if host::rt_sigtake(sys, &mut info.0).is_err() {
            break;
        }
        let from = i32::from_ne_bytes(info.0[16..20].try_into().unwrap());
        let ppid = t.ids().ppid.load(Ordering::Relaxed);
        if info.code() == 0 && from > 0 && from == ppid {
            // A thread of our parent ended: nothing to do.
        } else if info.code() == 0 && from > 0 && gone(from as u32, false) {
            // Our parent ended (we have another one already).
            parent_gone(from);
        } else {
            other = Some(info);
        }
    }
    if let Some(info) = other {
        let _ = host::rt_tgsigqueueinfo(
            host::getpid(),
            host::gettid(),
            crate::kernel::signal::SIGSYS,
            &info.0,
        );
    }
    let _ = host::rt_sigprocmask(crate::kernel::signal::SIG_UNBLOCK, Some(sys));
}

/// Has the root of the tree ended? See [`gone`].
fn root_gone() -> bool {
    gone(config().root_pid, true)
}

/// The start of what `/proc/PID/exe` reads for every picoprocess: the
/// runtime, run from the CLI's memfd (`run.rs`, `runtime_fd`), whose name
/// goes on with the root's pid and the time it started.
const RUNTIME_EXE: &[u8] = b"/memfd:picos-rt";

/// Is `link` (what `/proc/PID/exe` reads) the runtime of this very tree?
/// The memfd's name is unique to the tree, so a pid reused by a process of
/// another tree (or anything else) reads differently. No allocation.
fn same_tree(link: &[u8]) -> bool {
    let mut own = [0u8; 128];
    match host::readlink(c"/proc/self/exe", &mut own) {
        Ok(len) if own[..len].starts_with(RUNTIME_EXE) => link == &own[..len],
        // Not run from the CLI's memfd: fall back to the prefix.
        _ => link.starts_with(RUNTIME_EXE),
    }
}

/// Has process `pid` ended? Asks `/proc/PID/exe`, which reads ENOENT from
/// the moment a process has let go of its memory on its way out: for a
/// zombie (killed but not yet reaped, which `kill(pid, 0)` still finds) as
/// for a pid nobody has. With `picoprocess`, a process with that pid that
/// is not a picoprocess (the pid was reused) counts as ended too. When in
/// doubt (`/proc` unreadable, a process we may not inspect), no. No
/// descriptor, no allocation (called from the SIGSYS handler).
fn gone(pid: u32, picoprocess: bool) -> bool {
    // "/proc/" + at most 10 digits + "/exe" + NUL.
    let mut path = [0u8; 24];
    let mut n = 0;
    for &b in b"/proc/" {
        path[n] = b;
        n += 1;
    }
    let mut digits = [0u8; 10];
    let (mut v, mut d) = (pid, digits.len());
    loop {
        d -= 1;
        digits[d] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &b in digits[d..].iter().chain(b"/exe\0") {
        path[n] = b;
        n += 1;
    }
    let Ok(path) = core::ffi::CStr::from_bytes_with_nul(&path[..n]) else {
        return false;
    };
    let mut link = [0u8; 128];
    match host::readlink(path, &mut link) {
        Ok(len) => picoprocess && !same_tree(&link[..len]),
        // No such process (or one without memory any more), if /proc is there.
        Err(Errno::ENOENT) => host::readlink(c"/proc/self/exe", &mut link).is_ok(),
        Err(_) => false,
    }
}

/// Fix-ups in a forked child: only the forking thread exists. `parent` is
/// the pid of the process that forked it.
pub fn after_fork_child(t: &thread::Thread, parent: i32) {
    // Signals pending for the parent (held by its runtime) are not the
    // child's; forget them before anything below can queue one of its own.
    t.clear_pending();
    if let Err(e) = arm_dispatch() {
        crate::log!(
            Error,
            "cannot arm Syscall User Dispatch in a forked child: {}",
            e
        );
        host::exit_group(127);
    }
    crate::mm::runtime::reset_slots_after_fork(t.slot);
    crate::diag::stats::after_fork_child(t);
    // A forked child does not inherit the parent-death signal.
    watch_parent(t, Some(parent));
    // Until it execs, its parent may still move it to another group.
    t.ids().pgid_cacheable.store(false, Ordering::Relaxed);
    t.ids().pgid.store(0, Ordering::Relaxed);
    t.tid.store(host::gettid(), Ordering::Release);
}

/// Is the descriptor table shared with code of the program that may run
/// while the runtime works (another thread, or a process made with
/// CLONE_FILES)? Set before such a clone is made, never cleared.
static FDS_SHARED: AtomicBool = AtomicBool::new(false);

/// Called before a clone that shares the descriptor table (CLONE_FILES).
pub fn note_shared_fds() {
    FDS_SHARED.store(true, Ordering::Relaxed);
}

/// May the runtime open a descriptor in the program's table for a moment?
/// Only while no code of the program can run until it is closed again (no
/// other thread or process shares the table; this thread is in the runtime
/// with signals blocked): the program then never sees it.
pub fn may_use_program_fds() -> bool {
    !FDS_SHARED.load(Ordering::Relaxed)
}

/// Runs `f`, which opens descriptors and closes them before it returns
/// (its error is the open's), where the program never sees them: in the
/// program's table when [`may_use_program_fds`] and the table has room,
/// otherwise in a table of its own ([`with_own_fds`]).
pub fn with_transient_fds<R>(f: impl Fn() -> Result<R, Errno>) -> Result<R, Errno> {
    if may_use_program_fds() {
        match f() {
            // The program's table is full: not a reason to give up.
            Err(Errno::EMFILE) => {}
            r => return r,
        }
    }
    with_own_fds(&f).and_then(|r| r)
}

/// The first bytes (at most `N`) of a small file such as a /proc or /sys
/// one, and how many there are, read through a descriptor the program
/// never sees ([`with_transient_fds`]).
pub fn read_small_file<const N: usize>(path: &core::ffi::CStr) -> Result<([u8; N], usize), Errno> {
    with_transient_fds(|| {
        let fd = host::openat(host::AT_FDCWD, path, host::O_RDONLY | host::O_CLOEXEC, 0)? as i32;
        let mut buf = [0u8; N];
        let r = host::pread(fd, &mut buf, 0);
        let _ = host::close(fd);
        Ok((buf, r?.min(N)))
    })
}

/// Stack of the transient thread of [`with_own_fds`].
const OWN_FDS_STACK: usize = 256 << 10;

/// Runs `f` on a transient thread of this process that has a descriptor
/// table of its own (holding only a copy of 2, for messages): what `f` opens never enters the
/// program's table (the program cannot reach it, and a full table does not
/// stop it), while memory, the working directory and credentials are the
/// process's. The calling thread waits until `f` is done (CLONE_VFORK).
/// `f` must not take a lock the caller holds, and must only make host calls
/// and touch runtime memory; it runs with async signals blocked, off the
/// signal stack. The cost is a thread's creation and exit (~50 µs).
pub fn with_own_fds<F: FnOnce() -> R, R>(f: F) -> Result<R, Errno> {
    struct Job<F, R> {
        f: Option<F>,
        r: Option<R>,
    }
    extern "C" fn run<F: FnOnce() -> R, R>(job: usize) -> ! {
        // SAFETY: `job` points at the caller's `Job`, which the caller does
        // not touch until this thread has exited (CLONE_VFORK).
        let job = unsafe { &mut *(job as *mut Job<F, R>) };
        // CLONE_VFORK kept the caller's signal stack, which the caller's
        // frames may be using: a signal here must use the current stack.
        let off = host::StackT {
            flags: crate::kernel::signal::SS_DISABLE,
            ..Default::default()
        };
        let _ = host::sigaltstack(Some(&off), None);
        // CLOSE_RANGE_UNSHARE from 3 up: a new table holding copies of 0,
        // 1 and 2 only (Linux copies just the numbers below the range,
        // cheap whatever the program's table holds); 0 and 1 are closed,
        // 2 stays for the runtime's messages (the loader's warnings).
        if host::close_range(3, u32::MAX, 2).is_ok() {
            let _ = host::close(0);
            let _ = host::close(1);
            job.r = job.f.take().map(|f| f());
        }
        host::exit_thread(0)
    }
    // CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
    // CLONE_SYSVSEM | CLONE_VFORK: the child unshares the table itself.
    const FLAGS: usize = 0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000 | 0x4000;
    let mut job = Job {
        f: Some(f),
        r: None,
    };
    let mut stack: Vec<u8> = Vec::with_capacity(OWN_FDS_STACK);
    let top = (stack.as_mut_ptr() as usize + OWN_FDS_STACK) & !15;
    // The child starts with this mask: async signals (SIGSYS too) blocked,
    // so the process's signals go to its other threads; faults deliverable.
    let old = host::rt_sigprocmask(
        crate::kernel::signal::SIG_SETMASK,
        Some(
            crate::kernel::signal::RUNTIME_MASK
                | crate::kernel::signal::bit(crate::kernel::signal::SIGSYS),
        ),
    )?;
    // SAFETY: CLONE_VM; `stack` is ours and unused until the child exits,
    // which CLONE_VFORK waits for; `run` never returns and reads `job` as
    // the `Job` it is.
    let r =
        unsafe { host::clone_thread(FLAGS, top, run::<F, R>, &mut job as *mut Job<F, R> as usize) };
    let _ = host::rt_sigprocmask(crate::kernel::signal::SIG_SETMASK, Some(old));
    drop(stack);
    r?;
    job.r.ok_or(Errno::ENOSYS)
}

/// Called when a program thread exits (exit(2)).
pub fn thread_exiting(t: &thread::Thread) {
    crate::diag::stats::thread_exit(t);
}

/// Called when the program exits the process (exit_group(2)) or replaces
/// itself (execve(2)).
pub fn process_exiting() {
    crate::diag::stats::process_exit();
}

/// Appends one line to the `--stats-json` file, if one was asked for.
pub fn stats_json_line(f: impl FnOnce(&mut crate::diag::log::LineBuf)) {
    let path = &config().stats_json;
    if path.is_empty() {
        return;
    }
    let mut p = path.clone();
    p.push(0);
    let mut b = crate::diag::log::LineBuf::new();
    f(&mut b);
    let append = || -> Result<(), Errno> {
        const FLAGS: usize = 0o1 | 0o100 | 0o2000 | 0o2000000; // O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC
                                                               // SAFETY: `p` is NUL-terminated.
        let fd = unsafe {
            host::call(
                host::nr::OPENAT,
                [
                    host::AT_FDCWD as usize,
                    p.as_ptr() as usize,
                    FLAGS,
                    0o644,
                    0,
                    0,
                ],
            )
        }? as i32;
        host::write_diagnostic(fd, b.as_bytes());
        let _ = host::close(fd);
        Ok(())
    };
    let _ = with_transient_fds(append);
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn joins() {
        assert_eq!(join(b"/a", b"b"), b"/a/b");
        assert_eq!(join(b"/a/", b"./b"), b"/a/b");
        assert_eq!(absolute(b"/x/y"), b"/x/y");
    }
}
