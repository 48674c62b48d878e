//! The program's files as the runtime sees them: paths made absolute,
//! `/proc/self/exe`, and descriptors the runtime opens for itself where the
//! program never sees them. (The library-OS file system, issue 11, lands
//! here.)
#![deny(unsafe_code)]

use crate::host;
use crate::host::abi::{bit, SIGSYS};
use crate::host::errno::Errno;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

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

/// Makes `path` absolute against the working directory.
pub fn absolute(path: &[u8]) -> Vec<u8> {
    if path.first() == Some(&b'/') {
        return path.to_vec();
    }
    let mut cwd = alloc::vec![0u8; 4096];
    let n = match host::getcwd(&mut cwd) {
        Ok(n) if n > 0 => n - 1,
        _ => return path.to_vec(),
    };
    cwd.truncate(n);
    join(&cwd, path)
}

pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut v = dir.to_vec();
    if v.last() != Some(&b'/') {
        v.push(b'/');
    }
    let name = name.strip_prefix(b"./").unwrap_or(name);
    v.extend_from_slice(name);
    v
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

/// Runs `f` on a transient thread with a descriptor table of its own
/// ([`host::with_own_fds`]), with the runtime's signals blocked there.
pub fn with_own_fds<F: FnOnce() -> R, R>(f: F) -> Result<R, Errno> {
    host::with_own_fds(crate::kernel::signal::RUNTIME_MASK | bit(SIGSYS), f)
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

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn joins() {
        assert_eq!(join(b"/a", b"b"), b"/a/b");
        assert_eq!(join(b"/a/", b"./b"), b"/a/b");
        assert_eq!(absolute(b"/x/y"), b"/x/y");
    }

    #[test]
    fn self_exe_names() {
        assert!(crate::kernel::fs::is_self_exe(b"/proc/self/exe", 5));
        assert!(crate::kernel::fs::is_self_exe(b"/proc/thread-self/exe", 5));
        assert!(crate::kernel::fs::is_self_exe(b"/proc/5/exe", 5));
        assert!(!crate::kernel::fs::is_self_exe(b"/proc/6/exe", 5));
        assert!(!crate::kernel::fs::is_self_exe(b"/proc//exe", 5));
        assert!(!crate::kernel::fs::is_self_exe(b"/proc/self/cwd", 5));
        assert!(!crate::kernel::fs::is_self_exe(b"/proc/99999999999/exe", 5));
    }
}
