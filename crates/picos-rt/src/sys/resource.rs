//! Resource limits: reads of the calling process's from a cache, changes
//! passed to the host (then forgotten).
#![deny(unsafe_code)]

use super::{syscall, Ctx, SysResult};
use crate::host;
use crate::host::errno::Errno;
use crate::mm::user;

fn cache(c: &Ctx<'_>) -> &'static crate::kernel::process::IdCache {
    c.t.ids()
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
    let me = pid == 0 || pid == super::ids::getpid(c)? as i32;
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
