//! File-system calls the runtime must adjust. Everything else in the file
//! system is passed to the host (the default manifest shows the host's).
#![deny(unsafe_code)]

use super::{syscall, Ctx, SysResult};
use crate::mm::user;

fn self_exe_link(path_addr: usize, buf: usize, size: usize) -> Option<SysResult> {
    let path = user::read_cstr(path_addr, user::PATH_MAX).ok()?;
    if !crate::kernel::fs::is_self_exe(&path, crate::host::getpid()) {
        return None;
    }
    let exe = crate::kernel::process::exe_path();
    if (size as isize) <= 0 {
        return Some(Err(crate::host::errno::Errno::EINVAL));
    }
    let n = exe.len().min(size);
    Some(user::copy_out(buf, &exe[..n]).map(|_| n))
}

/// Implements readlink(2): `/proc/self/exe` names the program, not the runtime.
#[syscall]
pub fn readlink(c: &mut Ctx<'_>, pathname: usize, buf: usize, bufsiz: usize) -> SysResult {
    self_exe_link(pathname, buf, bufsiz).unwrap_or_else(|| c.host())
}

/// Implements readlinkat(2): as readlink for absolute paths.
#[syscall]
pub fn readlinkat(
    c: &mut Ctx<'_>,
    _dirfd: usize,
    pathname: usize,
    buf: usize,
    bufsiz: usize,
) -> SysResult {
    self_exe_link(pathname, buf, bufsiz).unwrap_or_else(|| c.host())
}
