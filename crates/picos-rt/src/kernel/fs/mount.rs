//! The mount table: the manifest's `[[fs.mounts]]` (host directories shown
//! at guest paths, read-write or read-only), fixed at start-up from the
//! launch configuration.
//!
//! Each mount's host directory is held open (`O_PATH`) in every descriptor
//! table of the process, at a number near the top of the usual descriptor
//! range that the program never opened (see [`FdTable`]): path resolution
//! (`walk`) starts there with `openat2(RESOLVE_IN_ROOT)`, so nothing the
//! program names leads above a mount's directory. The program cannot close
//! or replace these descriptors: `close`, `close_range`, `dup2` and `dup3`
//! step around them (`sys::fs`).
//!
//! With no mounts (the embedded default) the table is empty and the program
//! sees the host's tree unchanged: every path call goes to the host as it is.
#![deny(unsafe_code)]

use super::FdTable;
use crate::host;
use crate::host::errno::Errno;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicI32, Ordering};

/// The most mounts a manifest may have (the CLI checks it).
pub const MAX_MOUNTS: usize = picos_abi::MAX_MOUNTS;

/// One mount: where the program sees it (normalized), the host directory
/// (canonical), and whether writes are refused with EROFS.
pub use picos_abi::MountSpec as Mount;

static TABLE: spin::Once<Vec<Mount>> = spin::Once::new();

/// The mounts, root first then by depth in the manifest's order; empty when the
/// program sees the host's tree.
pub fn table() -> &'static [Mount] {
    TABLE.get().map_or(&[], |v| v.as_slice())
}

/// Does the manifest have a write-back mount? (Set with the table.)
static WRITE_BACK: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Does the manifest have a write-back mount?
#[inline]
pub fn any_write_back() -> bool {
    WRITE_BACK.load(Ordering::Relaxed)
}

/// Does the library OS resolve the program's paths (the manifest mounts
/// directories), rather than the host?
#[inline]
pub fn active() -> bool {
    TABLE.get().is_some_and(|v| !v.is_empty())
}

pub use picos_abi::covers;

/// The deepest mount that shows guest path `path` (canonical, absolute).
pub fn covering(path: &[u8]) -> usize {
    picos_abi::deepest_mount(table(), path, None).unwrap_or(0)
}

/// Is guest path `path` (canonical) a mount point (a mount's own root)?
pub fn is_mount_point(path: &[u8]) -> bool {
    table().iter().any(|m| m.guest == path)
}

/// `path` (canonical, shown by mount `i`) relative to that mount's root,
/// NUL-terminated: `.` for the root itself.
pub fn relative(i: usize, path: &[u8]) -> Vec<u8> {
    let m = &table()[i];
    let rest = if m.guest == b"/" {
        &path[1..]
    } else {
        &path[m.guest.len()..]
    };
    let rest = rest.strip_prefix(b"/").unwrap_or(rest);
    let mut v = Vec::with_capacity(rest.len() + 2);
    v.extend_from_slice(if rest.is_empty() { b"." } else { rest });
    v.push(0);
    v
}

/// The guest path of host path `host_path` (absolute, as the host's /proc
/// shows it), if a mount shows it (`picos_abi::host_to_guest`).
pub fn to_guest(host_path: &[u8]) -> Option<Vec<u8>> {
    picos_abi::host_to_guest(table(), host_path)
}

/// Sets the table from the launch configuration and opens the mounts'
/// directories in `fds` (at start-up, before the program runs). Returns
/// the index and the error of a mount whose directory cannot be opened.
pub fn init(specs: &[picos_abi::MountSpec], fds: &FdTable) -> Result<(), (usize, Errno)> {
    // Root first, so that index 0 always shows `/`; then by depth, in the
    // manifest's order (/proc's mounts list them so: a mount after the one
    // that holds its mount point, as Linux lists them).
    let mut v: Vec<Mount> = specs.to_vec();
    v.sort_by_key(|s| {
        s.guest.iter().filter(|&&c| c == b'/').count() - usize::from(s.guest == b"/")
    });
    v.truncate(MAX_MOUNTS);
    let t = TABLE.call_once(|| v);
    WRITE_BACK.store(t.iter().any(|m| m.writeback), Ordering::Relaxed);
    for (i, m) in t.iter().enumerate() {
        let path = [m.host.as_slice(), b"\0"].concat();
        let c = core::ffi::CStr::from_bytes_with_nul(&path).map_err(|_| (i, Errno::EINVAL))?;
        let fd = host::openat(
            host::AT_FDCWD,
            c,
            host::O_PATH | host::O_DIRECTORY | host::O_CLOEXEC,
            0,
        )
        .map_err(|e| (i, e))? as i32;
        let placed = place_high(fd, fds);
        let _ = host::close(fd);
        let placed = placed.map_err(|e| (i, e))?;
        fds.roots[i].store(placed, Ordering::Relaxed);
        fds.passthrough.set(placed, false);
    }
    Ok(())
}

/// The lowest number of the range the runtime's own descriptors take: just
/// below 1024 (the usual soft limit, and `select`'s), or below the soft
/// limit if that is lower. Programs open from 0 up, so these stay out of
/// their way; one that asks for these numbers (dup2) moves them.
fn high_base() -> usize {
    let soft = host::getrlimit(7 /* RLIMIT_NOFILE */).map_or(1024, |l| l[0]);
    (soft.min(1024) as usize)
        .saturating_sub(MAX_MOUNTS + 8)
        .max(3)
}

/// A close-on-exec duplicate of `fd` at a free number from [`high_base`]
/// up (or the lowest free one, if those are all taken).
fn place_high(fd: i32, fds: &FdTable) -> Result<i32, Errno> {
    const F_DUPFD_CLOEXEC: i32 = 1030;
    let mut base = high_base();
    loop {
        let n = host::fcntl(fd, F_DUPFD_CLOEXEC, base)
            .or_else(|_| host::fcntl(fd, F_DUPFD_CLOEXEC, 3))? as i32;
        // Never on top of another of ours (they are open, so F_DUPFD skips
        // them anyway; this only guards the fallback).
        if !fds.is_hidden(n) || base > 1 << 20 {
            return Ok(n);
        }
        base = n as usize + 1;
    }
}

/// The descriptor of mount `i`'s directory in table `fds`.
pub fn root_fd(fds: &FdTable, i: usize) -> i32 {
    fds.roots[i].load(Ordering::Relaxed)
}

/// Moves the runtime's descriptor at `fd` (if it is one) to another free
/// number of table `fds`, so that the program may use `fd` (dup2/dup3 onto
/// it).
pub fn relocate(fds: &FdTable, fd: i32) -> Result<(), Errno> {
    for r in fds.roots.iter() {
        if r.load(Ordering::Relaxed) == fd {
            let n = place_high(fd, fds)?;
            r.store(n, Ordering::Relaxed);
            fds.passthrough.set(n, false);
            let _ = host::close(fd);
            fds.passthrough.set(fd, true);
        }
    }
    Ok(())
}

/// Unused slots of [`FdTable::roots`].
pub const NO_FD: i32 = -1;

#[allow(clippy::declare_interior_mutable_const)]
pub const ROOTS_INIT: AtomicI32 = AtomicI32::new(NO_FD);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_by_component() {
        assert!(covers(b"/", b"/a"));
        assert!(covers(b"/a", b"/a"));
        assert!(covers(b"/a", b"/a/b"));
        assert!(!covers(b"/a", b"/ab"));
        assert!(!covers(b"/a/b", b"/a"));
    }
}
