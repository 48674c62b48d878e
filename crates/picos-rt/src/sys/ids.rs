//! Process and thread ids, process groups and sessions, credentials, and
//! the file-creation mask, answered inside the library OS without a host
//! call where it can.
//!
//! Values are cached per process (`IdCache`, shared by its threads; a fresh
//! one for a vfork child; fixed up after fork) and invalidated by the calls
//! that change them. The parent's pid changes when the parent dies: the
//! runtime asks the host for SIGSYS as its parent-death signal and forgets
//! the cached value when it arrives.
#![deny(unsafe_code)]

use super::{host_call, syscall, Ctx, SysResult};
use crate::host::errno::Errno;
use crate::host::{self, nr};
use crate::kernel::process::{Creds, IdCache, ZERO_PGID, ZERO_PPID, ZERO_SID};
use crate::mm::user::{self, UserPtr};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicI32, Ordering};

fn cache(c: &Ctx<'_>) -> &'static IdCache {
    c.t.ids()
}

/// The cached id `a`, or the host's answer (then cached). `zero` is its
/// bit in [`IdCache::zeros`], for the ids that can be 0 (0 for the pid).
fn cached_or(ids: &IdCache, a: &AtomicI32, zero: u32, nr: usize) -> SysResult {
    let v = a.load(Ordering::Relaxed);
    if v > 0 || (v == 0 && ids.zeros.load(Ordering::Relaxed) & zero != 0) {
        return Ok(v as usize);
    }
    let r = host_call(nr, [0; 6])?;
    a.store(r as i32, Ordering::Relaxed);
    if r == 0 {
        ids.zeros.fetch_or(zero, Ordering::Relaxed);
    }
    Ok(r)
}

/// Implements getpid(2).
pub fn getpid(c: &mut Ctx<'_>) -> SysResult {
    let ids = cache(c);
    cached_or(ids, &ids.pid, 0, nr::GETPID)
}

/// Implements getppid(2).
pub fn getppid(c: &mut Ctx<'_>) -> SysResult {
    let ids = cache(c);
    cached_or(ids, &ids.ppid, ZERO_PPID, nr::GETPPID)
}

fn pgid_cached(c: &Ctx<'_>) -> SysResult {
    let ids = cache(c);
    if ids.pgid_cacheable.load(Ordering::Relaxed) {
        cached_or(ids, &ids.pgid, ZERO_PGID, nr::GETPGRP)
    } else {
        host_call(nr::GETPGRP, [0; 6])
    }
}

/// Implements getpgrp(2).
pub fn getpgrp(c: &mut Ctx<'_>) -> SysResult {
    pgid_cached(c)
}

/// Implements getpgid(2): the caller's own from the cache.
#[syscall]
pub fn getpgid(c: &mut Ctx<'_>, pid: i32) -> SysResult {
    if pid == 0 || pid == getpid(c)? as i32 {
        return pgid_cached(c);
    }
    c.host()
}

/// Implements getsid(2): the caller's own from the cache (only the process
/// itself can change its session).
#[syscall]
pub fn getsid(c: &mut Ctx<'_>, pid: i32) -> SysResult {
    if pid == 0 || pid == getpid(c)? as i32 {
        let ids = cache(c);
        return cached_or(ids, &ids.sid, ZERO_SID, nr::GETSID);
    }
    c.host()
}

/// Implements setpgid(2): passed to the host (but for a child that
/// replaced its program in place: EACCES, as Linux answers for a child that
/// has exec'd); the cached group and session are forgotten.
pub fn setpgid(c: &mut Ctx<'_>) -> SysResult {
    let (pid, pgid) = (c.arg(0) as i32, c.arg(1) as i32);
    if pid > 0 && pgid >= 0 && pid != host::getpid() && exec_in_place(pid) {
        return Err(Errno::EACCES);
    }
    set_pgid(c)
}

/// Implements setsid(2) (and setpgid's host call): passed to the host;
/// the cached group and session are forgotten.
pub fn set_pgid(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host();
    let ids = cache(c);
    ids.pgid.store(0, Ordering::Relaxed);
    ids.sid.store(0, Ordering::Relaxed);
    ids.zeros
        .fetch_and(!(ZERO_PGID | ZERO_SID), Ordering::Relaxed);
    r
}

/// Has `pid`, a child of ours in our session, replaced its program in
/// place (`kernel::exec::in_place`)? The host still sees a child that has
/// not exec'd (Linux's PF_FORKNOEXEC), so setpgid(2) answers EACCES here,
/// as Linux would; a process that is not our child, or not in our session,
/// gets the host's answer (ESRCH, EPERM).
fn exec_in_place(pid: i32) -> bool {
    crate::kernel::ptrace::exec_marked(pid, host::getpid())
        && host::getsid(pid).ok() == host::getsid(0).ok()
        && host::is_child(pid)
}

/// Implements gettid(2).
pub fn gettid(c: &mut Ctx<'_>) -> SysResult {
    Ok(c.t.tid() as usize)
}

/// Runs `f` on the cached credentials (asking the host first if needed).
fn with_creds<R>(c: &Ctx<'_>, f: impl FnOnce(&Creds) -> R) -> Result<R, Errno> {
    let mut g = cache(c).creds.lock();
    if let Some(cr) = g.as_ref() {
        return Ok(f(cr));
    }
    // Real, effective and saved ids, and the groups, from the host.
    let (u, gi) = (host::getresuid()?, host::getresgid()?);
    let groups = host::getgroups()?;
    let cr = Creds {
        uid: u,
        gid: gi,
        groups,
    };
    let r = f(&cr);
    *g = Some(cr);
    Ok(r)
}

/// Implements getuid(2).
pub fn getuid(c: &mut Ctx<'_>) -> SysResult {
    with_creds(c, |cr| cr.uid[0] as usize)
}
/// Implements geteuid(2).
pub fn geteuid(c: &mut Ctx<'_>) -> SysResult {
    with_creds(c, |cr| cr.uid[1] as usize)
}
/// Implements getgid(2).
pub fn getgid(c: &mut Ctx<'_>) -> SysResult {
    with_creds(c, |cr| cr.gid[0] as usize)
}
/// Implements getegid(2).
pub fn getegid(c: &mut Ctx<'_>) -> SysResult {
    with_creds(c, |cr| cr.gid[1] as usize)
}

fn write_three(c: &Ctx<'_>, v: [u32; 3]) -> SysResult {
    for (i, x) in v.iter().enumerate() {
        UserPtr::<u32>::new(c.arg(i)).write(x)?;
    }
    Ok(0)
}

/// Implements getresuid(2).
pub fn getresuid(c: &mut Ctx<'_>) -> SysResult {
    let v = with_creds(c, |cr| cr.uid)?;
    write_three(c, v)
}
/// Implements getresgid(2).
pub fn getresgid(c: &mut Ctx<'_>) -> SysResult {
    let v = with_creds(c, |cr| cr.gid)?;
    write_three(c, v)
}

/// Implements getgroups(2).
#[syscall]
pub fn getgroups(c: &mut Ctx<'_>, size: i32, list: usize) -> SysResult {
    let groups = with_creds(c, |cr| cr.groups.clone())?;
    if size < 0 {
        return Err(Errno::EINVAL);
    }
    if size == 0 {
        return Ok(groups.len());
    }
    if (size as usize) < groups.len() {
        return Err(Errno::EINVAL);
    }
    let mut bytes = Vec::with_capacity(groups.len() * 4);
    for g in &groups {
        bytes.extend_from_slice(&g.to_ne_bytes());
    }
    user::copy_out(list, &bytes)?;
    Ok(groups.len())
}

/// Implements the set*id(2) family: passed to the host, then the cached
/// credentials are forgotten.
pub fn set_ids(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host();
    *cache(c).creds.lock() = None;
    // Lookups the old credentials were allowed may not be allowed now.
    crate::kernel::fs::dcache::clear();
    r
}

/// Implements setns(2): passed to the host; a namespace of another kind
/// may now answer differently, so every cached answer that depends on one
/// is forgotten: credentials (user), the uname (UTS: LTP setns02), the
/// directory cache and working directory (mount, user).
pub fn setns(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host()?;
    forget_namespaced(c);
    Ok(r)
}

/// What a change of namespaces (setns, unshare of a user namespace) makes
/// stale.
pub fn forget_namespaced(c: &Ctx<'_>) {
    *cache(c).creds.lock() = None;
    *cache(c).uname.lock() = None;
    crate::kernel::fs::dcache::clear();
    crate::kernel::fs::dcache::forget_cwd();
}

/// Implements capset(2): passed to the host, then the directory cache is
/// emptied (capabilities such as CAP_DAC_READ_SEARCH decide lookups).
#[syscall]
pub fn capset(c: &mut Ctx<'_>, _hdrp: usize, _datap: usize) -> SysResult {
    let r = c.host();
    if r.is_ok() {
        // The kernel's execve recomputes the capabilities (root's come
        // back); only it can.
        crate::kernel::exec::in_place::needs_kernel("capset");
    }
    crate::kernel::fs::dcache::clear();
    r
}

/// Implements umask(2): a host call only when the mask changes.
#[syscall]
pub fn umask(c: &mut Ctx<'_>, mask: usize) -> SysResult {
    let new = (mask & 0o777) as i32;
    let ids = cache(c);
    let cur = ids.umask.load(Ordering::Relaxed);
    if cur == new {
        return Ok(cur as usize);
    }
    let old = host::umask(new as u32)?;
    ids.umask.store(new, Ordering::Relaxed);
    Ok(old)
}
