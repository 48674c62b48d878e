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
        let placed = if m.detached() {
            // A tmpfs or an overlay the CLI made: its root is at `m.fd`,
            // passed on by the CLI or by the runtime before execve. It
            // moves to the runtime's range and stays open across execve.
            match host::statx(m.fd as isize, c"", host::AT_EMPTY_PATH, STATX_MNT_ID) {
                Ok(s) if s.mode() & 0o170000 == 0o040000 && s.mask() & STATX_MNT_ID != 0 => {
                    MNT_IDS[i].store(s.mnt_id(), Ordering::Relaxed);
                }
                Ok(_) => return Err((i, Errno::ENOTDIR)),
                Err(e) => return Err((i, e)),
            }
            ANY_DETACHED.store(true, Ordering::Relaxed);
            if m.kind == picos_abi::MountKind::Dev {
                note_dev_binds(i, m.fd);
            }
            keep_or_place(m.fd, fds, true).map_err(|e| (i, e))?
        } else if m.fd >= 0 && host::fstat(m.fd).is_ok_and(|s| s.st_mode & 0o170000 == 0o040000) {
            // Passed on by the runtime before execve.
            const F_SETFD: i32 = 2;
            let placed = keep_or_place(m.fd, fds, false).map_err(|e| (i, e))?;
            let _ = host::fcntl(placed, F_SETFD, 1 /* FD_CLOEXEC */);
            placed
        } else {
            let path = [m.host.as_slice(), b"\0"].concat();
            let c = core::ffi::CStr::from_bytes_with_nul(&path).map_err(|_| (i, Errno::EINVAL))?;
            let fd = host::openat(
                host::AT_FDCWD,
                c,
                host::O_PATH | host::O_DIRECTORY | host::O_CLOEXEC,
                0,
            )
            .map_err(|e| (i, e))? as i32;
            let placed = place_high(fd, fds, false);
            let _ = host::close(fd);
            placed.map_err(|e| (i, e))?
        };
        fds.roots[i].store(placed, Ordering::Relaxed);
        fds.passthrough.set(placed, false);
    }
    Ok(())
}

/// statx(2)'s `STATX_MNT_ID`.
const STATX_MNT_ID: u32 = 0x1000;

/// The host's mount ids of the tmpfs and overlay mounts (0 for the
/// others), from their roots at start-up: a descriptor or a directory
/// there has no host path (its /proc link reads as a path from the mount's
/// root), so its mount id says which mount shows it.
static MNT_IDS: [core::sync::atomic::AtomicU64; MAX_MOUNTS] =
    [const { core::sync::atomic::AtomicU64::new(0) }; MAX_MOUNTS];

/// The host's mount ids of the bind mounts inside `type = "dev"` mounts
/// (its devices and `pts`), with the mount that holds each; 0: none.
static BINDS: [(
    core::sync::atomic::AtomicU64,
    core::sync::atomic::AtomicUsize,
); 16] = [const {
    (
        core::sync::atomic::AtomicU64::new(0),
        core::sync::atomic::AtomicUsize::new(0),
    )
}; 16];

/// Notes the mount ids of the bind mounts of dev mount `i`, whose root is
/// at `root` (their /proc links read as paths from `i`'s root too).
fn note_dev_binds(i: usize, root: i32) {
    const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
    let names = picos_abi::DEV_DEVICES.iter().copied().chain(["pts"]);
    for name in names {
        let Ok(c) = alloc::ffi::CString::new(name) else {
            continue;
        };
        let Ok(s) = host::statx(root as isize, &c, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID) else {
            continue;
        };
        if s.mask() & STATX_MNT_ID == 0 || s.mnt_id() == MNT_IDS[i].load(Ordering::Relaxed) {
            continue;
        }
        if let Some(slot) = BINDS.iter().find(|b| b.0.load(Ordering::Relaxed) == 0) {
            slot.1.store(i, Ordering::Relaxed);
            slot.0.store(s.mnt_id(), Ordering::Relaxed);
        }
    }
}

/// Is there a tmpfs or an overlay mount?
static ANY_DETACHED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Is there a tmpfs or an overlay mount?
#[inline]
pub fn any_detached() -> bool {
    ANY_DETACHED.load(Ordering::Relaxed)
}

/// The tmpfs or overlay mount that holds `path` from `dirfd` (the object
/// itself, not followed if a symlink), if one does.
pub fn detached_holding(dirfd: isize, path: &core::ffi::CStr, flags: i32) -> Option<usize> {
    if !any_detached() {
        return None;
    }
    let s = host::statx(dirfd, path, flags, STATX_MNT_ID).ok()?;
    if s.mask() & STATX_MNT_ID == 0 {
        return None;
    }
    let id = s.mnt_id();
    MNT_IDS
        .iter()
        .position(|m| m.load(Ordering::Relaxed) == id)
        .or_else(|| {
            BINDS
                .iter()
                .find(|b| b.0.load(Ordering::Relaxed) == id)
                .map(|b| b.1.load(Ordering::Relaxed))
        })
}

/// The guest path of `link`, the host's name of an object that tmpfs or
/// overlay mount `i` holds (a /proc link or `getcwd`: a path from the
/// mount's root, perhaps after `(unreachable)`).
pub fn detached_to_guest(i: usize, link: &[u8]) -> Vec<u8> {
    let link = link.strip_prefix(b"(unreachable)").unwrap_or(link);
    let rest = if link == b"/" { &b""[..] } else { link };
    picos_abi::join_rest(&table()[i].guest, rest)
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

/// A duplicate of `fd` at a free number from [`high_base`] up (or the
/// lowest free one, if those are all taken): close-on-exec unless
/// `keep_on_exec` (the root of a tmpfs or an overlay, which the next
/// runtime takes over).
fn place_high(fd: i32, fds: &FdTable, keep_on_exec: bool) -> Result<i32, Errno> {
    const F_DUPFD: i32 = 0;
    const F_DUPFD_CLOEXEC: i32 = 1030;
    let cmd = if keep_on_exec {
        F_DUPFD
    } else {
        F_DUPFD_CLOEXEC
    };
    let mut base = high_base();
    loop {
        let n = host::fcntl(fd, cmd, base).or_else(|_| host::fcntl(fd, cmd, 3))? as i32;
        // Never on top of another of ours (they are open, so F_DUPFD skips
        // them anyway; this only guards the fallback).
        if !fds.is_hidden(n) || base > 1 << 20 {
            return Ok(n);
        }
        base = n as usize + 1;
    }
}

/// `fd` itself if it is in the runtime's range already (as one the
/// runtime before execve placed there: the program's table may be full
/// now, and its limit lowered), else a duplicate placed there ([`place_high`]),
/// `fd` closed.
fn keep_or_place(fd: i32, fds: &FdTable, keep_on_exec: bool) -> Result<i32, Errno> {
    if fd as usize >= high_base() {
        return Ok(fd);
    }
    let placed = place_high(fd, fds, keep_on_exec)?;
    let _ = host::close(fd);
    Ok(placed)
}

/// The descriptor of mount `i`'s directory in table `fds`.
pub fn root_fd(fds: &FdTable, i: usize) -> i32 {
    fds.roots[i].load(Ordering::Relaxed)
}

/// Moves the runtime's descriptor at `fd` (if it is one) to another free
/// number of table `fds`, so that the program may use `fd` (dup2/dup3 onto
/// it).
pub fn relocate(fds: &FdTable, fd: i32) -> Result<(), Errno> {
    for (i, r) in fds.roots.iter().enumerate() {
        if r.load(Ordering::Relaxed) == fd {
            let n = place_high(fd, fds, table()[i].detached())?;
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
