//! uname(2) from a cached answer; the calls that change it.
#![deny(unsafe_code)]

use super::{syscall, Ctx, SysResult};
use crate::host;
use crate::mm::user;

fn cache(c: &Ctx<'_>) -> &'static crate::kernel::process::IdCache {
    c.t.ids()
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
