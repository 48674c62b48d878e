//! The process: its launch configuration, its program, its identity and
//! place in the picoprocess tree (the parent-death watch), and what happens
//! when it ends.
#![deny(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use crate::host::KSigaction;
use crate::kernel::thread::{self, NSIG};
use crate::mm::runtime::Replaceable;
use crate::sync::ForkHook;
use alloc::vec::Vec;
use core::sync::atomic::AtomicI32;
use core::sync::atomic::Ordering;
use picos_abi::LaunchConfig;

/// A process's state, shared by its threads (copied for a clone without
/// CLONE_SIGHAND, as for vfork): signal dispositions, and the cached
/// answers of `sys::ids` and its neighbours. A process made with
/// CLONE_SIGHAND but not CLONE_THREAD has a state of its own (its pid and
/// parent are not ours) whose dispositions are those of the state it
/// shares them with ([`Process::actions`]).
pub struct Process {
    own_actions: crate::kernel::signal::SigActions,
    /// The process whose dispositions this one shares (CLONE_SIGHAND
    /// without CLONE_THREAD); None: its own.
    shares_actions_of: Option<&'static Process>,
    pub ids: IdCache,
    /// The working directory's guest path under mounts, as the host last
    /// gave it, and whether it is exact: on an exclusive mount nothing can
    /// rename it (`kernel::fs::dcache`); elsewhere another process may
    /// have renamed a directory above it since, so it only picks the mount
    /// of a relative path's one host call. None: ask the host.
    pub cwd: crate::sync::Lock<Option<(Vec<u8>, bool)>>,
}

impl Process {
    pub fn new() -> Self {
        Process {
            own_actions: crate::kernel::signal::SigActions::new(),
            shares_actions_of: None,
            ids: IdCache::new(),
            cwd: crate::sync::Lock::new(crate::sync::Rank::Cwd, None),
        }
    }
    /// The program's dispositions (shared with other processes after a
    /// clone with CLONE_SIGHAND).
    pub fn actions(&self) -> &crate::kernel::signal::SigActions {
        match self.shares_actions_of {
            Some(p) => &p.own_actions,
            None => &self.own_actions,
        }
    }
    /// The program's disposition for `sig` (1-based).
    pub fn get(&self, sig: i32) -> KSigaction {
        self.actions().get(sig)
    }
    /// The state of a child that shares our memory but not our process (a
    /// clone without CLONE_SIGHAND: vfork, posix_spawn): a copy of ours,
    /// in a spare state when there is one (see [`release`]).
    pub fn for_child(&self) -> &'static Process {
        let spare = SPARE.lock().pop();
        let c: &'static Process = match spare {
            Some(c) => c,
            None => alloc::boxed::Box::leak(alloc::boxed::Box::new(Process::new())),
        };
        {
            let actions = self.actions();
            let _g = actions.lock();
            for sig in 1..=NSIG as i32 {
                // The copy is not shared yet: no lock of its own needed.
                c.own_actions.store(sig, &actions.get(sig));
            }
        }
        self.inherit_into(c);
        c
    }

    /// What any child's state takes from ours besides dispositions: the
    /// ids (its own pid, us as its parent) and the working directory.
    fn inherit_into(&self, c: &Process) {
        c.ids.reset_for_child(&self.ids);
        let cwd = self.cwd.lock().clone();
        *c.cwd.lock() = cwd;
    }

    /// The state of a child that shares our memory and our dispositions
    /// but is a process of its own (CLONE_VM | CLONE_SIGHAND without
    /// CLONE_THREAD): its own ids (its pid, and us as its parent), our
    /// dispositions. Never reused (rare: LinuxThreads-era programs).
    pub fn for_child_sharing_actions(&'static self) -> &'static Process {
        let c = alloc::boxed::Box::leak(alloc::boxed::Box::new(Process {
            shares_actions_of: Some(self.shares_actions_of.unwrap_or(self)),
            ..Process::new()
        }));
        self.inherit_into(c);
        c
    }
}

/// States of children that no longer run (a vfork child that has exec'd or
/// exited), for the next ones: a shell that spawns in a loop reuses one.
static SPARE: crate::sync::Lock<Vec<&'static Process>> =
    crate::sync::Lock::new(crate::sync::Rank::SpareProcesses, Vec::new());

/// Gives back the state [`Process::for_child`] made, once its process no
/// longer runs in this memory.
pub fn release(p: &'static Process) {
    if p.shares_actions_of.is_none() {
        SPARE.lock().push(p);
    }
}

impl Default for Process {
    fn default() -> Self {
        Self::new()
    }
}

/// Every subsystem's part in fork(2) ([`ForkHook`]), in the runtime's lock
/// order (docs/ARCHITECTURE.md, "Locks"): [`fork`] runs the host's fork
/// with all their locks held, then, in the child, their `child` steps in
/// this order. A subsystem that adds a lock, or state a forked child must
/// change, adds its hook here.
pub static FORK_HOOKS: &[ForkHook] = &[
    crate::kernel::thread::FORK_HOOK,
    crate::kernel::signal::FORK_HOOK,
    crate::kernel::vm::FORK_HOOK,
    crate::diag::stats::FORK_HOOK,
    FORK_HOOK,
    crate::kernel::fs::FORK_HOOK,
    crate::kernel::fs::file::FORK_HOOK,
    crate::kernel::fs::dcache::FORK_HOOK,
    crate::patch::FORK_HOOK,
    crate::mm::runtime::FORK_HOOK,
    crate::kernel::ptrace::FORK_HOOK,
];

/// Forks with `fork`, a host clone(2) without CLONE_VM, under every
/// hook's locks; in the child (`fork` returned 0) runs the hooks' `child`
/// steps. Returns what `fork` returned.
pub fn fork(mut fork: impl FnMut() -> Result<usize, Errno>) -> Result<usize, Errno> {
    // The tree's ptrace board, shared with the child from its start.
    crate::kernel::ptrace::ensure();
    crate::patch::use_known_sites(crate::kernel::ptrace::known_site_words());
    // Sites earlier children trapped at, patched here first; the page of
    // hints shared with the child.
    crate::patch::before_fork(
        thread::current().process() as *const _ as usize,
        crate::kernel::ptrace::hint_words(),
    );
    crate::mm::runtime::keep_image_mapped_across_fork();
    let parent = host::getpid();
    let parent_thread = host::gettid();
    // Every signal blocked until the child's hooks are done, the fault
    // types too (the runtime never blocks those otherwise): one sent to
    // the child right away (kill(child, SIGTRAP) after fork) would be
    // queued by the runtime in the pending set that the thread's hook then
    // clears, and be lost (LTP kill11). Held by the host, it is handled
    // once the set is the child's own. A real fault meanwhile is still
    // delivered (Linux unblocks a forced fault).
    let old = host::rt_sigprocmask(crate::host::abi::SIG_BLOCK, Some(!0));
    let mut r = Err(Errno::EAGAIN);
    if crate::patch::memory_shared() {
        crate::sync::with_hooks_held(FORK_HOOKS, &mut || r = fork());
    } else {
        crate::sync::fork_alone(FORK_HOOKS, &mut || r = fork());
    }
    if r == Ok(0) {
        let ids = thread::current().ids();
        ids.parent_thread.store(parent_thread, Ordering::Relaxed);
        for h in FORK_HOOKS {
            (h.child)(parent);
        }
    }
    if let Ok(old) = old {
        let _ = host::rt_sigprocmask(crate::host::abi::SIG_SETMASK, Some(old));
    }
    if r == Ok(0) {
        // (Outside the hooks' locks: it allocates.)
        crate::diag::perfmap::write(&config().perf_map);
    }
    r
}

/// The process's part in fork: its cached ids and the spare states are
/// locked across it (one lock at a time is the rule elsewhere; here they
/// are taken in rank order); in the child, the parent-death watch is armed
/// again (not inherited) and the process group forgotten (its parent may
/// still move it to another, until it execs).
pub const FORK_HOOK: ForkHook = ForkHook {
    name: "process",
    hold: |inner| {
        let ids = &thread::current().process().ids;
        let _creds = ids.creds.lock();
        let _uname = ids.uname.lock();
        let _rlimits = ids.rlimits.lock();
        let _cwd = thread::current().process().cwd.lock();
        let _spare = SPARE.lock();
        inner()
    },
    alone: crate::sync::ForkHook::nothing,
    child: |parent| {
        let t = thread::current();
        watch_parent(t, Some(parent));
        t.ids().pgid_cacheable.store(false, Ordering::Relaxed);
        t.ids().pgid.store(0, Ordering::Relaxed);
        t.ids().zeros.fetch_and(!ZERO_PGID, Ordering::Relaxed);
    },
};

/// Credentials as the host reported them.
#[derive(Clone, Debug)]
pub struct Creds {
    pub uid: [u32; 3],
    pub gid: [u32; 3],
    pub groups: Vec<u32>,
}

/// [`IdCache::zeros`]: the parent's pid is 0.
pub const ZERO_PPID: u32 = 1;
/// [`IdCache::zeros`]: the process group's id is 0.
pub const ZERO_PGID: u32 = 2;
/// [`IdCache::zeros`]: the session's id is 0.
pub const ZERO_SID: u32 = 4;

/// Per-process cached answers (0, -1 or None: unknown, ask the host). The
/// pids use 0 for "unknown" because patched sites read them directly (see
/// `patch`), and a zero test there needs no flags.
pub struct IdCache {
    pub pid: AtomicI32,
    pub ppid: AtomicI32,
    /// Process group and session (0: unknown). Only cached in a process that
    /// has exec'd since it was forked: until then its parent may move it to
    /// another group (setpgid on a child is allowed until the child execs).
    pub pgid: AtomicI32,
    pub sid: AtomicI32,
    pub pgid_cacheable: core::sync::atomic::AtomicBool,
    pub umask: AtomicI32,
    /// The program's own parent-death signal (prctl), emulated.
    pub guest_pdeathsig: AtomicI32,
    /// The tid of the parent's thread that created this process, whose end
    /// Linux reports with the parent-death signal (see `is_parent_death`);
    /// 0: unknown.
    pub parent_thread: AtomicI32,
    /// Which of `ppid`, `pgid` and `sid` are known to be 0 ([`ZERO_PPID`]
    /// ...): the answer for a process outside our pid namespace (a
    /// container's first process has no parent in it), which the zero that
    /// means "unknown" cannot say. Without it, every getppid of such a
    /// process went to the host. Cleared wherever the field is forgotten.
    pub zeros: core::sync::atomic::AtomicU32,
    pub creds: crate::sync::Lock<Option<Creds>>,
    pub uname: crate::sync::Lock<Option<[u8; 390]>>,
    pub rlimits: crate::sync::Lock<[Option<[u64; 2]>; 16]>,
}

impl IdCache {
    pub const fn new() -> Self {
        IdCache {
            pid: AtomicI32::new(0),
            ppid: AtomicI32::new(0),
            pgid: AtomicI32::new(0),
            sid: AtomicI32::new(0),
            pgid_cacheable: core::sync::atomic::AtomicBool::new(false),
            umask: AtomicI32::new(-1),
            guest_pdeathsig: AtomicI32::new(0),
            parent_thread: AtomicI32::new(0),
            zeros: core::sync::atomic::AtomicU32::new(0),
            creds: crate::sync::Lock::new(crate::sync::Rank::Creds, None),
            uname: crate::sync::Lock::new(crate::sync::Rank::Uname, None),
            rlimits: crate::sync::Lock::new(crate::sync::Rank::Rlimits, [None; 16]),
        }
    }

    /// Makes this cache (not shared yet) a copy for a child sharing our
    /// memory but not our process (vfork): everything but its own and its
    /// parent's pid carries over from `parent`.
    pub fn reset_for_child(&self, parent: &IdCache) {
        // One lock at a time (each guard dropped at the end of its own
        // statement).
        let creds = parent.creds.lock().clone();
        *self.creds.lock() = creds;
        let uname = *parent.uname.lock();
        *self.uname.lock() = uname;
        let rlimits = *parent.rlimits.lock();
        *self.rlimits.lock() = rlimits;
        let r = Ordering::Relaxed;
        self.pid.store(0, r);
        self.ppid.store(parent.pid.load(r), r);
        self.pgid.store(0, r);
        self.sid.store(0, r);
        self.zeros.store(0, r);
        self.pgid_cacheable.store(false, r);
        self.umask.store(parent.umask.load(r), r);
        self.guest_pdeathsig.store(0, r);
        self.parent_thread.store(host::gettid(), r);
    }
}

impl Default for IdCache {
    fn default() -> Self {
        Self::new()
    }
}

/// The launch configuration: set at start-up, replaced by an execve in
/// place (`kernel::exec::in_place`); a reference taken before a
/// replacement stays valid (see `Replaceable`).
static CONFIG: Replaceable<LaunchConfig> = Replaceable::new();

/// Absolute path of the running program (what /proc/self/exe shows it).
static EXE: Replaceable<Vec<u8>> = Replaceable::new();

/// The launch configuration.
pub fn config() -> &'static LaunchConfig {
    CONFIG.get().expect("config set at start-up")
}

/// Absolute path of the running program.
pub fn exe_path() -> &'static [u8] {
    EXE.get().map_or(&[], |v| v.as_slice())
}

/// Sets the launch configuration (at start-up, and at an execve in place).
pub fn set_config(cfg: LaunchConfig) {
    CONFIG.set(cfg);
}

/// Sets the program's absolute path (at start-up, and at an execve in place).
pub fn set_exe_path(path: Vec<u8>) {
    EXE.set(path);
}

/// Ends the process with status `code` after an error line: a program
/// that cannot be started or run (127: not found, 126: cannot run, as a
/// shell reports them), or a runtime that cannot go on.
pub fn fatal(code: i32, args: core::fmt::Arguments<'_>) -> ! {
    crate::diag::log::log_line(crate::diag::log::LogLevel::Error, args);
    host::exit_group(code)
}

/// The auxiliary vector the kernel gave the runtime: the template of every
/// program's (`loader::build_stack`), kept for an execve in place.
static HOST_AUXV: Replaceable<Vec<(u64, u64)>> = Replaceable::new();

/// The stack pointer the kernel started the runtime with: an address in
/// the process's stack mapping, which an execve in place reuses.
static START_SP: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Keeps what the kernel gave the runtime at its start (its auxiliary
/// vector, its stack pointer) for an execve in place.
pub fn set_start_state(auxv: Vec<(u64, u64)>, sp: usize) {
    HOST_AUXV.set(auxv);
    START_SP.store(sp, Ordering::Relaxed);
}

/// The auxiliary vector the kernel gave the runtime.
pub fn host_auxv() -> &'static [(u64, u64)] {
    HOST_AUXV.get().map_or(&[], |v| v.as_slice())
}

/// An address in the process's stack mapping (0: not known).
pub fn stack_address() -> usize {
    START_SP.load(Ordering::Relaxed)
}

/// Names the process after the program `exe` (its base name, as the
/// kernel's execve sets `comm`).
pub fn set_name(exe: &[u8]) {
    let base = exe.rsplit(|&c| c == b'/').next().unwrap_or(exe);
    let mut name = [0u8; 16];
    let n = base.len().min(15);
    name[..n].copy_from_slice(&base[..n]);
    let _ = host::set_name(&name);
}

/// Asks the host for SIGSYS when our parent dies (so the cached parent pid
/// can be updated, and so that the tree ends with its root: see
/// [`parent_gone`]), then caches our pid and our parent's. `parent` is the
/// process that created us, if known (a forked child knows it): if our
/// parent is already another process, it died before the signal was armed,
/// and that is handled now as the signal would have been.
pub fn watch_parent(t: &thread::Thread, parent: Option<i32>) {
    let ids = t.ids();
    if parent.is_none() {
        // Started by execve (or by the CLI): the thread that created us,
        // as the runtime before the execve knew it.
        ids.parent_thread
            .store(config().parent_thread as i32, Ordering::Relaxed);
    }
    let _ = host::set_pdeathsig(crate::host::abi::SIGSYS);
    ids.pid.store(host::getpid(), Ordering::Relaxed);
    // After the prctl: a parent that dies from now on sends the signal.
    let ppid = host::getppid();
    ids.ppid.store(ppid, Ordering::Relaxed);
    ids.zeros.fetch_and(!ZERO_PPID, Ordering::Relaxed);
    if let Some(parent) = parent.filter(|&p| p > 0 && p != ppid) {
        parent_gone(parent);
    }
}

/// Is this SIGSYS the parent-death notice asked for by `watch_parent`? If
/// so, note the new parent, end this process if the tree's root is gone,
/// and raise the program's own parent-death signal, if it asked for one.
///
/// Linux sends the notice as `kill` would (SI_USER, the parent's pid), when
/// the parent *thread* that created us ends, after it has given us to our
/// new parent. If our parent is another process now, this is the notice.
/// If it is not (another thread of the same process adopted us), it is the
/// notice if the thread that created us has ended or is ending; if that
/// thread runs on, the parent sent the SIGSYS with `kill`, and it is the
/// program's (LTP kill11, sigrelse01). When that thread is unknown (after
/// an earlier notice; a process not forked by a picoprocess), it is taken
/// for the notice, as a program's SIGSYS default action would kill it.
/// A SIGSYS from outside our pid namespace, when our parent is outside it
/// too, is taken for the notice (the two cannot be told apart).
pub fn is_parent_death(info: &crate::arch::SigInfo) -> bool {
    let Some(t) = thread::current_checked() else {
        return false;
    };
    let ids = t.ids();
    let from = info.pid();
    if from < 0 || from != ids.ppid.load(Ordering::Relaxed) {
        return false;
    }
    // The host moves us to our new parent before it sends the notice.
    let now = host::getppid();
    ids.ppid.store(now, Ordering::Relaxed);
    ids.zeros.fetch_and(!ZERO_PPID, Ordering::Relaxed);
    if from == 0 {
        // Our parent is outside our pid namespace (a container's first
        // process, or one that `picos exec` entered into a container's
        // namespaces), where every process shows as pid 0 to us, the
        // notice's sender too: taken for the notice. Such a process is
        // the root of its tree.
    } else if now != from {
        parent_gone(from);
    } else {
        let creator = ids.parent_thread.load(Ordering::Relaxed);
        if creator > 0 && thread_ending(from, creator) == Some(false) {
            return false;
        }
    }
    // Another thread of the parent has us now; which one is unknown.
    ids.parent_thread.store(0, Ordering::Relaxed);
    let sig = ids.guest_pdeathsig.load(Ordering::Relaxed);
    if sig > 0 {
        let _ = host::tgkill(host::getpid(), t.tid(), sig);
    }
    true
}

/// Has thread `tid` of process `pid` ended, or is it ending (its stat
/// file's flags have PF_EXITING, or it is a zombie)? None if /proc cannot
/// tell. Called from the SIGSYS handler: allocates nothing.
fn thread_ending(pid: i32, tid: i32) -> Option<bool> {
    const PF_EXITING: u64 = 0x4;
    let mut path = [0u8; 32];
    let dir = proc_path(&mut path, pid as u32, b"/task")?;
    let look = || -> Result<bool, Errno> {
        let flags = host::O_RDONLY | host::O_DIRECTORY | host::O_CLOEXEC;
        let fd = host::openat(host::AT_FDCWD, dir, flags, 0)? as i32;
        let r = stat_flags_state(fd, tid as u32);
        let _ = host::close(fd);
        match r {
            Ok((flags, state)) => Ok(flags & PF_EXITING != 0 || state == b'Z' || state == b'X'),
            Err(Errno::ENOENT) | Err(Errno::ESRCH) => Ok(true),
            Err(e) => Err(e),
        }
    };
    crate::host::fds::with_transient_fds_in_handler(look).ok()
}

/// The flags and state of thread `tid` in the task directory `dirfd`,
/// from its stat file (the flags are its ninth field, the state its third;
/// the command name in parentheses may hold anything).
fn stat_flags_state(dirfd: i32, tid: u32) -> Result<(u64, u8), Errno> {
    let mut path = [0u8; 32];
    let mut digits = [0u8; 10];
    let mut n = 0;
    for &b in decimal(tid, &mut digits).iter().chain(b"/stat\0") {
        path[n] = b;
        n += 1;
    }
    let name = core::ffi::CStr::from_bytes_with_nul(&path[..n]).map_err(|_| Errno::EINVAL)?;
    let fd = host::openat(dirfd as isize, name, host::O_RDONLY | host::O_CLOEXEC, 0)? as i32;
    let mut buf = [0u8; 512];
    let r = host::pread(fd, &mut buf, 0);
    let _ = host::close(fd);
    let text = &buf[..r?];
    parse_stat_flags_state(text).ok_or(Errno::EIO)
}

/// The fields of a /proc stat file's text from the third (the state) on:
/// those after the command name in parentheses, which may hold anything.
fn stat_fields(text: &[u8]) -> Option<impl Iterator<Item = &[u8]>> {
    let close = text.iter().rposition(|&b| b == b')')?;
    Some(
        text[close + 1..]
            .split(|&b| b == b' ')
            .filter(|f| !f.is_empty()),
    )
}

/// The flags (ninth field) and state (third) of a /proc stat file's text.
pub fn parse_stat_flags_state(text: &[u8]) -> Option<(u64, u8)> {
    let mut fields = stat_fields(text)?;
    let state = *fields.next()?.first()?;
    // Fields 4 to 8 (ppid, pgrp, session, tty, tpgid), then the flags.
    let flags = fields.nth(5)?;
    let mut v = 0u64;
    for &d in flags {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some((v, state))
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
    let _ = host::kill(host::getpid(), crate::host::abi::SIGKILL);
    host::exit_group(128 + crate::host::abi::SIGKILL)
}

/// At start-up after execve, in a process that is not the root: a parent
/// that ended while we exec'd (or while a vfork child ran before its
/// exec, with no parent-death signal armed) notified nobody, so look at the
/// root itself.
pub fn check_root_at_exec() {
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
pub fn take_notices_from_exec(t: &thread::Thread) {
    let sys = crate::host::abi::bit(crate::host::abi::SIGSYS);
    let mut other = None;
    // One SIGSYS at most waits in each of the process's and thread's queues.
    for _ in 0..2 {
        let mut info = crate::arch::SigInfo::default();
        if host::rt_sigtake(sys, &mut info.0).is_err() {
            break;
        }
        let from = info.pid();
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
            crate::host::abi::SIGSYS,
            &info.0,
        );
    }
    let _ = host::rt_sigprocmask(crate::host::abi::SIG_UNBLOCK, Some(sys));
}

/// Has the root of the tree ended? See [`gone`].
fn root_gone() -> bool {
    gone(config().root_pid, true)
}

/// The start of what `/proc/PID/exe` reads for a picoprocess run from the
/// CLI's memfd (`runtime_image.rs` in the CLI).
const RUNTIME_MEMFD: &[u8] = b"/memfd:picos-rt-";

/// The start of the last part of what `/proc/PID/exe` reads for a
/// picoprocess run from the runtime cache.
const RUNTIME_CACHED: &[u8] = b"picos-rt-";

/// Is `link` (what `/proc/PID/exe` reads) the runtime of some picoprocess
/// tree, this one or another?
pub fn is_runtime_exe(link: &[u8]) -> bool {
    let last = link.rsplit(|&b| b == b'/').next().unwrap_or(link);
    link.starts_with(RUNTIME_MEMFD) || (last.starts_with(RUNTIME_CACHED) && last.contains(&b'.'))
}

/// Is `link` (what `/proc/PID/exe` reads) the runtime of this very tree?
/// The name the tree's runtime was exec'd by is unique to the tree (a
/// per-tree link to the cached image, or a per-tree memfd: the CLI's
/// `runtime_image.rs`), and the CLI passes it on (`tree_exe`), so a pid
/// reused by a process of another tree (or anything else) reads
/// differently. No allocation.
fn same_tree(link: &[u8]) -> bool {
    let mut own = [0u8; 512];
    match tree_exe(&mut own) {
        Some(tree) if is_runtime_exe(tree) => link == tree,
        _ => is_runtime_exe(link),
    }
}

/// What `/proc/PID/exe` reads for this tree's processes: the name the CLI
/// passed on (`tree_exe`), else (not started by the CLI) what our own exe
/// reads, read into `own`. None if that cannot be read. No allocation.
pub fn tree_exe(own: &mut [u8; 512]) -> Option<&[u8]> {
    let tree = &config().tree_exe;
    if !tree.is_empty() {
        return Some(tree.as_slice());
    }
    let len = host::readlink(c"/proc/self/exe", own).ok()?;
    Some(&own[..len])
}

/// readlink of `/proc/PID/exe` into `link` (no descriptor, no
/// allocation: also called from the SIGSYS handler).
fn read_exe(pid: u32, link: &mut [u8]) -> Result<usize, Errno> {
    let mut path = [0u8; 32];
    let path = proc_path(&mut path, pid, b"/exe").ok_or(Errno::EINVAL)?;
    host::readlink(path, link)
}

/// `v` in decimal, written at the end of `digits` (no allocation).
fn decimal(mut v: u32, digits: &mut [u8; 10]) -> &[u8] {
    let mut d = digits.len();
    loop {
        d -= 1;
        digits[d] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &digits[d..]
}

/// `/proc/PID` + `rest`, NUL-terminated, in `buf` (no allocation: for the
/// SIGSYS handler). None if it does not fit.
fn proc_path<'a>(buf: &'a mut [u8; 32], pid: u32, rest: &[u8]) -> Option<&'a core::ffi::CStr> {
    let mut digits = [0u8; 10];
    let mut n = 0;
    for &b in b"/proc/"
        .iter()
        .chain(decimal(pid, &mut digits))
        .chain(rest)
        .chain(b"\0")
    {
        *buf.get_mut(n)? = b;
        n += 1;
    }
    core::ffi::CStr::from_bytes_with_nul(&buf[..n]).ok()
}

/// Is process `pid` one of this picoprocess tree (its `/proc/PID/exe` is
/// this tree's runtime)? This process is; one that cannot be inspected
/// (another user's, a kernel thread, a zombie) is not.
pub fn in_tree(pid: u32) -> bool {
    if pid == host::getpid() as u32 {
        return true;
    }
    let mut link = [0u8; 512];
    let runs_tree_runtime = |len: usize, link: &[u8; 512]| same_tree(&link[..len]);
    match read_exe(pid, &mut link) {
        Ok(len) => runs_tree_runtime(len, &link),
        // A zombie (ended, not yet reaped) has let go of its memory and
        // reads no exe: it is of the tree if the process that will reap it,
        // its parent (alive: a process's children go to another before it
        // becomes a zombie itself), is.
        Err(Errno::ENOENT) => zombie_parent(pid).is_some_and(|parent| {
            parent == host::getpid() as u32
                || read_exe(parent, &mut link).is_ok_and(|len| runs_tree_runtime(len, &link))
        }),
        Err(_) => false,
    }
}

/// The parent of process `pid` if it is a zombie (its /proc stat file
/// says state Z), else None.
fn zombie_parent(pid: u32) -> Option<u32> {
    let mut path = [0u8; 32];
    let path = proc_path(&mut path, pid, b"/stat")?;
    let (buf, len) = host::fds::read_small_file::<512>(path).ok()?;
    parse_stat_zombie_parent(&buf[..len])
}

/// The parent (fourth field) of a /proc stat file's text whose state
/// (third field) is Z; None for any other state.
fn parse_stat_zombie_parent(text: &[u8]) -> Option<u32> {
    let mut fields = stat_fields(text)?;
    if fields.next()? != b"Z" {
        return None;
    }
    core::str::from_utf8(fields.next()?).ok()?.parse().ok()
}

/// Has process `pid` ended? Asks `/proc/PID/exe`, which reads ENOENT from
/// the moment a process has let go of its memory on its way out: for a
/// zombie (killed but not yet reaped, which `kill(pid, 0)` still finds) as
/// for a pid nobody has. With `picoprocess`, a process with that pid that
/// is not a picoprocess (the pid was reused) counts as ended too. When in
/// doubt (`/proc` unreadable, a process we may not inspect), no. No
/// descriptor, no allocation (called from the SIGSYS handler).
fn gone(pid: u32, picoprocess: bool) -> bool {
    let mut link = [0u8; 512];
    match read_exe(pid, &mut link) {
        Ok(len) => picoprocess && !same_tree(&link[..len]),
        // No such process (or one without memory any more), if /proc is there.
        Err(Errno::ENOENT) => host::readlink(c"/proc/self/exe", &mut link).is_ok(),
        Err(_) => false,
    }
}

/// Called when a program thread exits (exit(2)).
pub fn thread_exiting(t: &thread::Thread) {
    use crate::diag::stats;
    if !stats::on() {
        return;
    }
    if stats::lines() {
        let mut mine = stats::Totals::default();
        mine.add(&t.stats);
        report_stats("thread", t.tid(), &mine);
    }
    stats::add_exited(&t.stats);
    // The last thread leaving with exit(2) ends the process.
    let mut live = 0;
    thread::for_each_live(|_| live += 1);
    if live <= 1 {
        process_exiting();
    }
}

/// Called when the program exits the process (exit_group(2)) or replaces
/// itself (execve(2)).
pub fn process_exiting() {
    use crate::diag::stats;
    if !stats::on() {
        return;
    }
    let mut total = stats::exited();
    // This process's threads only: a child that shares its parent's memory
    // (vfork, posix_spawn) sees its parent's threads' states too.
    let me = thread::current_checked().map(|t| t.process() as *const Process);
    thread::for_each_live(|t| {
        if me.is_none_or(|p| core::ptr::eq(t.process(), p)) {
            total.add(&t.stats);
        }
    });
    if stats::lines() {
        report_stats("process", host::getpid(), &total);
    }
    if stats::profiling() {
        stats::profile_report(host::getpid(), &total);
    }
}

/// Prints a `--stats` report, and appends its JSON line to the
/// `--stats-json` file if one was asked for.
fn report_stats(kind: &str, id: i32, t: &crate::diag::stats::Totals) {
    let mut json = crate::diag::log::LineBuf::new();
    crate::diag::stats::report(kind, id, t, &mut json);
    stats_json_line(json.as_bytes());
}

/// Appends one line to the `--stats-json` file, if one was asked for.
fn stats_json_line(line: &[u8]) {
    let path = &config().stats_json;
    if path.is_empty() {
        return;
    }
    let append = || -> Result<(), Errno> {
        let flags = host::O_WRONLY | host::O_CREAT | host::O_APPEND | host::O_CLOEXEC;
        let fd = host::open_path(path, flags, 0o644)? as i32;
        host::write_diagnostic(fd, line);
        let _ = host::close(fd);
        Ok(())
    };
    let _ = crate::host::fds::with_transient_fds(append);
}

#[cfg(test)]
mod tests {
    #[test]
    fn zombie_parent_from_stat() {
        let z = b"4242 (a) b) c) Z 17 4242 31929 0 -1 4227148 17 0 0 0";
        assert_eq!(super::parse_stat_zombie_parent(z), Some(17));
        let r = b"4242 (sleep) S 17 4242 31929 0 -1 4227148 17 0 0 0";
        assert_eq!(super::parse_stat_zombie_parent(r), None);
        assert_eq!(super::parse_stat_zombie_parent(b"4242 (x"), None);
    }

    use super::{parse_stat_flags_state, proc_path};

    #[test]
    fn stat_flags_and_state() {
        // A command name with spaces and parentheses; PF_EXITING set.
        let line = b"4242 (a) b (c) R 1 4242 4242 0 -1 4194564 83 0 0 0 0 0 0 0 20 0 1 0\n";
        assert_eq!(parse_stat_flags_state(line), Some((4194564, b'R')));
        let zombie = b"7 (x) Z 1 7 7 0 -1 4 0 0\n";
        assert_eq!(parse_stat_flags_state(zombie), Some((4, b'Z')));
        assert_eq!(parse_stat_flags_state(b"7 (x) S 1 7"), None);
        assert_eq!(parse_stat_flags_state(b"7 (x) S 1 7 7 0 -1 4x"), None);
        assert_eq!(parse_stat_flags_state(b""), None);
    }

    #[test]
    fn proc_paths() {
        let mut buf = [0u8; 32];
        assert_eq!(
            proc_path(&mut buf, 0, b"/task").unwrap().to_bytes(),
            b"/proc/0/task"
        );
        let mut buf = [0u8; 32];
        assert_eq!(
            proc_path(&mut buf, u32::MAX, b"/exe").unwrap().to_bytes(),
            b"/proc/4294967295/exe"
        );
        let mut buf = [0u8; 32];
        assert!(proc_path(&mut buf, u32::MAX, b"/a-suffix-too-long-for-it").is_none());
    }
}
