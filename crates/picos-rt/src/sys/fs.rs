//! File-system calls the runtime must adjust. Everything else in the file
//! system is passed to the host (the default manifest shows the host's).
#![deny(unsafe_code)]

use super::{Ctx, SysResult};
use crate::mm::user;

/// Is `path` a name for the calling process's executable link?
pub fn is_self_exe(path: &[u8], pid: i32) -> bool {
    if path == b"/proc/self/exe" || path == b"/proc/thread-self/exe" {
        return true;
    }
    let Some(rest) = path.strip_prefix(b"/proc/") else {
        return false;
    };
    let Some(num) = rest.strip_suffix(b"/exe") else {
        return false;
    };
    let mut n: i64 = 0;
    if num.is_empty() || num.len() > 10 || !num.iter().all(u8::is_ascii_digit) {
        return false;
    }
    for d in num {
        n = n * 10 + (d - b'0') as i64;
    }
    n == pid as i64
}

fn self_exe_link(path_addr: usize, buf: usize, size: usize) -> Option<SysResult> {
    let path = user::read_cstr(path_addr, user::PATH_MAX).ok()?;
    if !is_self_exe(&path, crate::host::getpid()) {
        return None;
    }
    let exe = crate::boot::exe_path();
    if (size as isize) <= 0 {
        return Some(Err(crate::host::errno::Errno::EINVAL));
    }
    let n = exe.len().min(size);
    Some(user::copy_out(buf, &exe[..n]).map(|_| n))
}

/// Implements readlink(2): `/proc/self/exe` names the program, not the runtime.
pub fn readlink(c: &mut Ctx<'_>) -> SysResult {
    self_exe_link(c.arg(0), c.arg(1), c.arg(2)).unwrap_or_else(|| c.host())
}

/// Implements readlinkat(2): as readlink for absolute paths.
pub fn readlinkat(c: &mut Ctx<'_>) -> SysResult {
    self_exe_link(c.arg(1), c.arg(2), c.arg(3)).unwrap_or_else(|| c.host())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn self_exe_names() {
        assert!(is_self_exe(b"/proc/self/exe", 5));
        assert!(is_self_exe(b"/proc/thread-self/exe", 5));
        assert!(is_self_exe(b"/proc/5/exe", 5));
        assert!(!is_self_exe(b"/proc/6/exe", 5));
        assert!(!is_self_exe(b"/proc//exe", 5));
        assert!(!is_self_exe(b"/proc/self/cwd", 5));
        assert!(!is_self_exe(b"/proc/99999999999/exe", 5));
    }
}
