//! Answers served inside the library OS without a host call: process and
//! thread ids, credentials, umask, uname, resource limits, and the time
//! calls a program makes as system calls.
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
use crate::kernel::process::Creds;
use crate::kernel::thread::{AFFINITY_GEN, AFFINITY_TTL, AFFINITY_WORDS};
use crate::mm::user::{self, UserPtr};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicI32, Ordering};

fn cache(c: &Ctx<'_>) -> &'static crate::kernel::process::IdCache {
    c.t.ids()
}

fn cached_or(a: &AtomicI32, nr: usize) -> SysResult {
    let v = a.load(Ordering::Relaxed);
    if v > 0 {
        return Ok(v as usize);
    }
    let r = host_call(nr, [0; 6])?;
    a.store(r as i32, Ordering::Relaxed);
    Ok(r)
}

/// Implements getpid(2).
pub fn getpid(c: &mut Ctx<'_>) -> SysResult {
    cached_or(&cache(c).pid, nr::GETPID)
}

/// Implements getppid(2).
pub fn getppid(c: &mut Ctx<'_>) -> SysResult {
    cached_or(&cache(c).ppid, nr::GETPPID)
}

fn pgid_cached(c: &Ctx<'_>) -> SysResult {
    let ids = cache(c);
    if ids.pgid_cacheable.load(Ordering::Relaxed) {
        cached_or(&ids.pgid, nr::GETPGRP)
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
        return cached_or(&cache(c).sid, nr::GETSID);
    }
    c.host()
}

/// Implements setpgid(2) and setsid(2): passed to the host; the cached
/// group and session are forgotten.
pub fn set_pgid(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host();
    let ids = cache(c);
    ids.pgid.store(0, Ordering::Relaxed);
    ids.sid.store(0, Ordering::Relaxed);
    r
}

/// Implements getcpu(2) with `rdtscp`/`rdpid`: Linux keeps
/// `node << 12 | cpu` in the TSC_AUX register of each CPU.
#[syscall]
pub fn getcpu(c: &mut Ctx<'_>, cpu_addr: usize, node_addr: usize) -> SysResult {
    let Some(aux) = crate::arch::tsc_aux(!crate::kernel::time::tsc_disabled()) else {
        return c.host();
    };
    let (cpu, node) = (aux & 0xfff, aux >> 12);
    if cpu_addr != 0 {
        UserPtr::<u32>::new(cpu_addr).write(&cpu)?;
    }
    if node_addr != 0 {
        UserPtr::<u32>::new(node_addr).write(&node)?;
    }
    Ok(0)
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

/// Implements uname(2) from a cached answer.
#[syscall]
pub fn uname(c: &mut Ctx<'_>, buf: usize) -> SysResult {
    let mut g = cache(c).uname.lock();
    let u = match *g {
        Some(u) => u,
        None => {
            let u = host::uname()?;
            *g = Some(u);
            u
        }
    };
    user::copy_out(buf, &u)?;
    Ok(0)
}

/// Implements sethostname(2) and setdomainname(2): passed to the host; the
/// cached uname is forgotten.
pub fn set_uts(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host();
    *cache(c).uname.lock() = None;
    r
}

fn rlimit(c: &Ctx<'_>, res: usize) -> Result<[u64; 2], Errno> {
    let mut g = cache(c).rlimits.lock();
    if let Some(Some(v)) = g.get(res) {
        return Ok(*v);
    }
    let v = host::getrlimit(res)?;
    if let Some(slot) = g.get_mut(res) {
        *slot = Some(v);
    }
    Ok(v)
}

fn forget_rlimit(c: &Ctx<'_>, res: usize) {
    if let Some(slot) = cache(c).rlimits.lock().get_mut(res) {
        *slot = None;
    }
}

/// Implements getrlimit(2) from the cache.
#[syscall]
pub fn getrlimit(c: &mut Ctx<'_>, resource: usize, rlim: usize) -> SysResult {
    let v = rlimit(c, resource)?;
    user::write(rlim, &v)?;
    Ok(0)
}

/// Implements setrlimit(2): passed to the host; the cached value is forgotten.
#[syscall]
pub fn setrlimit(c: &mut Ctx<'_>, resource: usize) -> SysResult {
    let r = c.host();
    forget_rlimit(c, resource);
    r
}

/// Implements prlimit64(2): reads of the calling process from the cache.
#[syscall]
pub fn prlimit64(
    c: &mut Ctx<'_>,
    pid: i32,
    resource: usize,
    new_limit: usize,
    old_limit: usize,
) -> SysResult {
    let (res, new, old) = (resource, new_limit, old_limit);
    let me = pid == 0 || pid == getpid(c)? as i32;
    if !me || new != 0 {
        let r = c.host();
        if me {
            forget_rlimit(c, res);
        }
        return r;
    }
    let v = rlimit(c, res)?;
    if old != 0 {
        user::write(old, &v)?;
    }
    Ok(0)
}

/// Implements clock_gettime(2) through the vDSO.
#[syscall]
pub fn clock_gettime(c: &mut Ctx<'_>, clockid: i32, tp: usize) -> SysResult {
    let mut ts = [0i64; 2];
    match crate::kernel::time::clock_gettime(clockid, &mut ts) {
        Some(0) => {
            user::write(tp, &ts)?;
            Ok(0)
        }
        Some(e) if e < 0 => Err(Errno(-e)),
        _ => c.host(),
    }
}

/// Implements gettimeofday(2) through the vDSO.
#[syscall]
pub fn gettimeofday(c: &mut Ctx<'_>, tv_addr: usize, tz: usize) -> SysResult {
    if tz != 0 {
        return c.host(); // the obsolete timezone argument
    }
    let mut tv = [0i64; 2];
    match crate::kernel::time::gettimeofday(&mut tv) {
        Some(0) => {
            if tv_addr != 0 {
                user::write(tv_addr, &tv)?;
            }
            Ok(0)
        }
        _ => c.host(),
    }
}

/// Implements time(2) through the vDSO.
#[syscall]
pub fn time(c: &mut Ctx<'_>, tloc: usize) -> SysResult {
    match crate::kernel::time::time() {
        Some(t) => {
            if tloc != 0 {
                user::write(tloc, &t)?;
            }
            Ok(t as usize)
        }
        None => c.host(),
    }
}

/// Implements sched_getaffinity(2): the calling thread's own mask from its
/// cache (see [`AffinityCache`]); other threads' masks, and sizes the cache
/// cannot answer exactly, from the host.
#[syscall]
pub fn sched_getaffinity(c: &mut Ctx<'_>, pid: i32, cpusetsize: u32, mask: usize) -> SysResult {
    // `len` is an unsigned int for Linux: the upper half is ignored.
    let (len, ptr) = (cpusetsize as usize, mask);
    // Linux checks `len * 8 < nr_cpu_ids` in 32 bits: a length whose
    // product wraps is the host's to judge (EINVAL unless it wraps high).
    if (pid != 0 && pid != c.t.tid()) || len % 8 != 0 || (len as u32).checked_mul(8).is_none() {
        return c.host(); // the host's own errors (ESRCH, EINVAL) and answers
    }
    if crate::kernel::time::tsc_disabled() {
        // rdtsc would fault (the cache's clock): no cache.
        return c.host();
    }
    let a = &c.t.affinity;
    let (gen, now) = (AFFINITY_GEN.load(Ordering::Acquire), crate::arch::rdtsc());
    if (a.gen.get() != gen || now.wrapping_sub(a.stamp.get()) > AFFINITY_TTL)
        && !a.refresh(gen, now)?
    {
        return c.host();
    }
    let n = a.len.get();
    if len < n {
        return c.host(); // EINVAL unless the kernel's CPU count still fits
    }
    let mut bytes = [0u8; AFFINITY_WORDS * 8];
    for (i, w) in a.mask.iter().enumerate() {
        bytes[i * 8..i * 8 + 8].copy_from_slice(&w.get().to_ne_bytes());
    }
    user::copy_out(ptr, &bytes[..n])?;
    Ok(n)
}

/// Implements sched_setaffinity(2): passed to the host; every thread's
/// cached mask is then forgotten.
pub fn sched_setaffinity(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host();
    AFFINITY_GEN.fetch_add(1, Ordering::AcqRel);
    r
}
