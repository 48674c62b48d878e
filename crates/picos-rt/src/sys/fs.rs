//! File-system calls. With no mounts in the manifest (the embedded
//! default) the program sees the host's tree and every call goes to the
//! host as it is, but for `/proc/self/exe`, which names the program.
//!
//! With mounts (`kernel::fs::mount`), every path the program gives is
//! resolved by the library OS (`kernel::fs::walk`): the host is asked only
//! about a path inside one mount's directory, from that directory's
//! descriptor, and then does the call on what was found (an `O_PATH`
//! descriptor with `AT_EMPTY_PATH`, or the directory and last name for
//! calls that make or remove a name). Read-only mounts refuse writes with
//! EROFS; names cannot move between mounts (EXDEV); mount points cannot be
//! removed or renamed (EBUSY); calls that would change the mount tree or
//! reach around it (mount, chroot, pivot_root, open_by_handle_at, ...) are
//! refused. docs/FILESYSTEM.md describes the design.
#![deny(unsafe_code)]

use super::{host_blocking_with, host_call, host_call_with, syscall, Ctx, SysResult};
use crate::host;
use crate::host::errno::Errno;
use crate::host::nr;
use crate::kernel::fs::dcache;
use crate::kernel::fs::file;
use crate::kernel::fs::mount::{self, active, root_fd, table};
use crate::kernel::fs::procview as kernel_procview;
use crate::kernel::fs::walk::{self, Entry, Found, HostFd, OpenPlan};
use crate::kernel::fs::FdTable;
use crate::mm::user;
use alloc::vec::Vec;

const AT_FDCWD: i32 = host::AT_FDCWD as i32;
/// The empty path, for `AT_EMPTY_PATH` calls on a descriptor the library OS
/// opened.
const EMPTY: &[u8] = b"\0";

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// Flags open(2) and openat(2) keep (Linux's VALID_OPEN_FLAGS; the rest
/// are ignored, as Linux ignores them there).
const VALID_OPEN_FLAGS: i32 = 0o3
    | 0o100
    | 0o200
    | 0o400
    | 0o1000
    | 0o2000
    | 0o4000
    | 0o10000
    | 0o20000
    | 0o40000
    | 0o100000
    | 0o200000
    | 0o400000
    | 0o1000000
    | 0o2000000
    | 0o4000000
    | 0o10000000
    | 0o20000000;

fn fds(c: &Ctx<'_>) -> &'static FdTable {
    c.t.fd_table.get()
}

fn path_arg(addr: usize) -> Result<Vec<u8>, Errno> {
    user::read_cstr(addr, user::PATH_MAX)
}

fn readonly(mount: usize) -> bool {
    table()[mount].readonly
}

/// Would a write to an object of this type change the file system (so a
/// read-only mount refuses it)? Not for devices, FIFOs and sockets, as in
/// Linux.
fn fs_object(mode: u32) -> bool {
    matches!(mode & S_IFMT, S_IFREG | S_IFDIR | S_IFLNK)
}

/// What a path names, ready for a call on it: a descriptor (the library
/// OS's `O_PATH` one, kept open by `_hold`, or the program's own) and
/// whether a read-only mount shows it.
struct Object {
    fd: i32,
    _hold: Option<HostFd>,
    ro: bool,
    /// The mount that shows it (None for the program's own descriptor).
    mount: Option<usize>,
}

impl Object {
    fn stat(&self) -> Result<host::Stat, Errno> {
        host::fstat(self.fd)
    }
    /// EROFS if a read-only mount shows it and it is a file-system object.
    fn check_writable(&self) -> Result<(), Errno> {
        if self.ro && fs_object(self.stat()?.st_mode) {
            return Err(Errno::EROFS);
        }
        Ok(())
    }
    /// The host path that names it through /proc (for calls that take only
    /// a path).
    fn proc_path(&self) -> Vec<u8> {
        walk::proc_fd_path(self.fd)
    }
}

/// Is the program's descriptor `fd` of a file on a read-only mount?
fn fd_readonly(fd: i32) -> bool {
    table().iter().any(|m| m.readonly)
        && walk::fd_guest(fd).is_ok_and(|g| readonly(mount::covering(&g)))
}

fn object(c: &Ctx<'_>, dirfd: i32, path: &[u8], follow: bool) -> Result<Object, Errno> {
    match walk::lookup(fds(c), dirfd, path, follow)? {
        Found::Object { fd, mount, .. } => Ok(Object {
            fd: fd.0,
            _hold: Some(fd),
            ro: readonly(mount),
            mount: Some(mount),
        }),
        Found::ProgramFd(n) => Ok(Object {
            fd: n,
            _hold: None,
            ro: fd_readonly(n),
            mount: None,
        }),
    }
}

/// The object of an `*at` call that may name its descriptor itself
/// (`AT_EMPTY_PATH` with an empty path): None when the call should go to
/// the host as it is (the program's own descriptor).
fn object_at(
    c: &Ctx<'_>,
    dirfd: i32,
    path_addr: usize,
    flags: i32,
    follow: bool,
) -> Result<Option<Object>, Errno> {
    let path = path_arg(path_addr)?;
    if path.is_empty() && flags & host::AT_EMPTY_PATH != 0 {
        if fds(c).is_hidden(dirfd) {
            return Err(Errno::EBADF);
        }
        return Ok(None);
    }
    object(c, dirfd, &path, follow).map(Some)
}

fn entry(c: &Ctx<'_>, dirfd: i32, path_addr: usize) -> Result<Entry, Errno> {
    let path = path_arg(path_addr)?;
    walk::entry(fds(c), dirfd, &path)
}

/// Linux checks a call's other arguments (flags, sizes, names, times)
/// before it looks up its path. To give the same errors in the same order,
/// the host is first asked the program's call with an empty path at the
/// path arguments `paths` (and no AT_EMPTY_PATH): that fails with ENOENT
/// once everything but the path is right, and changes nothing. For calls
/// whose other checks cost too much to write again; hot calls check by
/// hand.
fn probe(c: &Ctx<'_>, paths: &[usize]) -> Result<(), Errno> {
    let bufs: Vec<(usize, &[u8])> = paths.iter().map(|&i| (i, EMPTY)).collect();
    match host_call_with(c.nr, c.args, &bufs) {
        Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(e),
        // Cannot happen for an empty path; the call did nothing that needs
        // undoing either way.
        Ok(_) => Ok(()),
    }
}

/// Does entry `e` exist (without following a symlink)?
fn exists(e: &Entry) -> bool {
    let name = core::ffi::CStr::from_bytes_with_nul(&e.name).ok();
    name.is_some_and(|n| {
        host::openat(
            e.dir.0 as isize,
            n,
            host::O_PATH | host::O_NOFOLLOW | host::O_CLOEXEC,
            0,
        )
        .map(|fd| host::close(fd as i32))
        .is_ok()
    })
}

/// For a call that makes the name of entry `e`: EEXIST for a mount point
/// or, on a read-only mount, for a name that exists; EROFS for one that
/// does not.
fn check_create(e: &Entry) -> Result<(), Errno> {
    if e.is_mount_point() {
        return Err(Errno::EEXIST);
    }
    if readonly(e.mount) {
        return Err(if exists(e) {
            Errno::EEXIST
        } else {
            Errno::EROFS
        });
    }
    Ok(())
}

/// For a call that removes or renames the name of entry `e`: EBUSY for a
/// mount point; on a read-only mount, ENOENT for a name that does not
/// exist and EROFS for one that does.
fn check_remove(e: &Entry) -> Result<(), Errno> {
    if e.is_mount_point() {
        return Err(Errno::EBUSY);
    }
    if readonly(e.mount) {
        return Err(if exists(e) {
            Errno::EROFS
        } else {
            Errno::ENOENT
        });
    }
    Ok(())
}

// ---------------------------------------------------------------- open

/// Opens a path for the program (open, openat, creat, openat2).
fn open_path(
    c: &Ctx<'_>,
    dirfd: i32,
    path_addr: usize,
    mut flags: i32,
    mut mode: u32,
    resolve: u64,
    strict: bool,
) -> SysResult {
    if !strict {
        // open(2) ignores unknown flags, and the others when O_PATH is set
        // (openat2(2), which does the host's part, refuses them).
        flags &= VALID_OPEN_FLAGS;
        if flags & host::O_PATH != 0 {
            flags &= host::O_PATH | host::O_CLOEXEC | host::O_DIRECTORY | host::O_NOFOLLOW;
        }
        mode = if flags & host::O_CREAT != 0 || flags & host::O_TMPFILE == host::O_TMPFILE {
            mode & 0o7777
        } else {
            0
        };
    }
    // Linux's build_open_flags: checked before the path is read.
    if flags & (host::O_DIRECTORY | host::O_CREAT) == host::O_DIRECTORY | host::O_CREAT {
        return Err(Errno::EINVAL);
    }
    if flags & host::O_TMPFILE & !host::O_DIRECTORY != 0
        && (flags & (host::O_TMPFILE | host::O_CREAT) != host::O_TMPFILE
            || flags & host::O_ACCMODE == host::O_RDONLY)
    {
        return Err(Errno::EINVAL);
    }
    let path = path_arg(path_addr)?;
    let creat_excl = flags & (host::O_CREAT | host::O_EXCL) == host::O_CREAT | host::O_EXCL;
    let follow = flags & host::O_NOFOLLOW == 0 && !creat_excl;
    let tmpfile = flags & host::O_TMPFILE == host::O_TMPFILE;
    let writes = flags & host::O_PATH == 0
        && (flags & host::O_ACCMODE != host::O_RDONLY
            || flags & (host::O_TRUNC | host::O_CREAT) != 0
            || tmpfile);
    let fds = fds(c);
    if flags & host::O_PATH == 0 && kernel_procview::may_be_fdinfo(&path) {
        // It shows the offsets: the host's must be right.
        fds.share_offsets();
    }
    // From where the plan says: the mount's root, or (a relative path's
    // one-call open) its starting directory.
    let open = |(from, resolve): (isize, u64), rel: &[u8]| -> SysResult {
        let how = host::OpenHow {
            flags: flags as u32 as u64,
            mode: mode as u64,
            resolve,
        }
        .as_bytes();
        host_blocking_with(
            c.t,
            nr::OPENAT2,
            [from as usize, 0, 0, how.len(), 0, 0],
            &[(1, rel), (2, &how)],
        )
    };
    let root = |mount: usize, rel: &[u8]| (root_fd(fds, mount) as isize, walk::confined_for(rel));
    let mut plan = walk::open_plan(fds, dirfd, &path, follow, resolve, true)?;
    // A symlink appearing between the walk and the open makes the host
    // refuse (ELOOP): walk again, a few times.
    // A regular file of an exclusive mount opened for reading becomes the
    // library OS's to stat and read (`kernel::fs::file`). (A one-call open
    // learns its type at the first call that needs it.)
    // One opened for writing on a write-back mount gets a buffer for its
    // small writes (not with O_DIRECT or O_SYNC/O_DSYNC, whose writes must
    // reach the file at once).
    let reads_file = |mount: usize| {
        (flags & (host::O_PATH | host::O_DIRECT) == 0
            && flags & host::O_ACCMODE == host::O_RDONLY
            && dcache::exclusive(mount))
        .then(|| file::OpenFile::new(mount))
    };
    // Every descriptor of a file of a write-back mount is noted with the
    // file's identity (one host fstat): those open for writing buffer
    // their small writes while no other descriptor of the file is known.
    let write_back =
        |mount: usize| (table()[mount].writeback && flags & host::O_PATH == 0).then_some(mount);
    for _ in 0..4 {
        let mut file = None;
        let mut wb = None;
        let (proc_fd_dir, anchor, rel) = match plan {
            OpenPlan::Direct {
                mount,
                rel,
                from,
                resolve: how,
                guest,
            } => {
                if writes && readonly(mount) {
                    plan = walk::open_plan_walk(fds, dirfd, &path, follow, resolve)?;
                    continue;
                }
                file = reads_file(mount);
                wb = write_back(mount);
                let proc = if walk::is_proc_fd_dir_guest(&guest) {
                    ProcDir::Fds
                } else if walk::is_proc_root_guest(&guest) {
                    ProcDir::Root
                } else {
                    ProcDir::No
                };
                (proc, (from, how), rel)
            }
            OpenPlan::Exists { mount, rel, mode } => {
                if creat_excl {
                    return Err(Errno::EEXIST);
                }
                if writes && readonly(mount) {
                    let changes = flags & host::O_ACCMODE != host::O_RDONLY
                        || flags & host::O_TRUNC != 0
                        || tmpfile;
                    if changes && (fs_object(mode) || tmpfile) {
                        return Err(Errno::EROFS);
                    }
                }
                if mode & S_IFMT == S_IFLNK && flags & host::O_PATH == 0 {
                    // A symlink not followed (O_NOFOLLOW).
                    return Err(Errno::ELOOP);
                }
                if mode & S_IFMT == S_IFREG {
                    file = reads_file(mount);
                    wb = write_back(mount);
                }
                let proc = if walk::is_proc_fd_dir(mount, &rel) {
                    ProcDir::Fds
                } else if walk::is_proc_root(mount, &rel) {
                    ProcDir::Root
                } else {
                    ProcDir::No
                };
                (proc, root(mount, &rel), rel)
            }
            OpenPlan::Create { mount, rel } => {
                if flags & host::O_CREAT == 0 || tmpfile {
                    return Err(Errno::ENOENT);
                }
                if rel.ends_with(b"/\0") {
                    return Err(Errno::EISDIR);
                }
                if readonly(mount) {
                    return Err(Errno::EROFS);
                }
                wb = write_back(mount);
                (ProcDir::No, root(mount, &rel), rel)
            }
            OpenPlan::ProgramFd(n) => {
                if writes && fd_readonly(n) && fs_object(host::fstat(n)?.st_mode) {
                    return Err(Errno::EROFS);
                }
                let link = walk::proc_fd_path(n);
                return host_blocking_with(
                    c.t,
                    nr::OPENAT,
                    [
                        AT_FDCWD as isize as usize,
                        0,
                        flags as usize,
                        mode as usize,
                        0,
                        0,
                    ],
                    &[(1, &link)],
                );
            }
        };
        match open(anchor, &rel) {
            Err(Errno::ELOOP) => {
                plan = walk::open_plan_walk(fds, dirfd, &path, follow, resolve)?;
            }
            Ok(fd) => {
                match proc_fd_dir {
                    ProcDir::Fds => fds.note_proc_fd_dir(fd as i32),
                    ProcDir::Root => fds.note_proc_root(fd as i32),
                    ProcDir::No => {}
                }
                if let Some(f) = file {
                    fds.note_file(fd as i32, f);
                }
                if let Some(mount) = wb {
                    note_write_back(fds, fd as i32, mount, flags);
                }
                if flags & host::O_PATH == 0 && kernel_procview::may_be_view(&path) {
                    kernel_procview::replace_view(fd as i32, flags & host::O_CLOEXEC != 0);
                }
                return Ok(fd);
            }
            r => return r,
        }
    }
    Err(Errno::ELOOP)
}

/// Notes descriptor `fd`, just opened with `flags` on write-back mount
/// `mount`, if it is a regular file (`FdTable::note_write_back`): open for
/// writing (without O_DIRECT or O_SYNC/O_DSYNC, whose writes must reach
/// the file at once), its small writes are buffered.
fn note_write_back(fds: &FdTable, fd: i32, mount: usize, flags: i32) {
    super::count_host_call();
    let Ok(st) = host::fstat(fd) else {
        return;
    };
    if st.st_mode & S_IFMT != S_IFREG {
        return;
    }
    let writes =
        flags & host::O_ACCMODE != host::O_RDONLY && flags & (host::O_DIRECT | host::O_DSYNC) == 0;
    fds.note_write_back(fd, mount, (st.st_dev, st.st_ino), writes);
}

/// Implements open(2).
#[syscall]
pub fn open(c: &mut Ctx<'_>, pathname: usize, flags: i32, mode: u32) -> SysResult {
    if !active() {
        return c.host_blocking();
    }
    open_path(c, AT_FDCWD, pathname, flags, mode, 0, false)
}

/// Implements openat(2).
#[syscall]
pub fn openat(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, flags: i32, mode: u32) -> SysResult {
    if !active() {
        return c.host_blocking();
    }
    open_path(c, dirfd, pathname, flags, mode, 0, false)
}

/// Implements creat(2): open with O_CREAT|O_WRONLY|O_TRUNC.
#[syscall]
pub fn creat(c: &mut Ctx<'_>, pathname: usize, mode: u32) -> SysResult {
    if !active() {
        return c.host_blocking();
    }
    let flags = host::O_CREAT | host::O_WRONLY | host::O_TRUNC;
    open_path(c, AT_FDCWD, pathname, flags, mode, 0, false)
}

/// Implements openat2(2): the program's resolve flags confine the walk
/// as Linux's do (RESOLVE_BENEATH, RESOLVE_IN_ROOT, RESOLVE_NO_SYMLINKS,
/// RESOLVE_NO_MAGICLINKS, RESOLVE_NO_XDEV at mount points; RESOLVE_CACHED
/// is EAGAIN).
#[syscall]
pub fn openat2(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, how: usize, size: usize) -> SysResult {
    if !active() {
        return c.host_blocking();
    }
    const OPEN_HOW_SIZE_VER0: usize = 24;
    if size < OPEN_HOW_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    if size > 4096 {
        return Err(Errno::E2BIG);
    }
    let mut raw = alloc::vec![0u8; size];
    user::copy_in(&mut raw, how)?;
    if raw[OPEN_HOW_SIZE_VER0..].iter().any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let word = |i: usize| u64::from_ne_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap());
    let (flags, mode, resolve) = (word(0), word(1), word(2));
    if flags >> 32 != 0 || mode >> 32 != 0 {
        return Err(Errno::EINVAL);
    }
    // The rest of `how` is checked before the path (an empty path with the
    // program's `how`: EINVAL if it is wrong, else ENOENT).
    let probe_how = raw[..OPEN_HOW_SIZE_VER0].to_vec();
    match host_call_with(
        nr::OPENAT2,
        [dirfd as usize, 0, 0, OPEN_HOW_SIZE_VER0, 0, 0],
        &[(1, EMPTY), (2, &probe_how)],
    ) {
        Err(Errno::ENOENT) => {}
        Err(e) => return Err(e),
        Ok(fd) => {
            let _ = host::close(fd as i32);
        }
    }
    open_path(c, dirfd, pathname, flags as i32, mode as u32, resolve, true)
}

// ---------------------------------------------------------------- stat

/// What the directory cache of exclusive mounts says of an `*at` call's
/// path (`kernel::fs::dcache`): None when it does not answer (no exclusive
/// mount, the descriptor itself with `AT_EMPTY_PATH`, a path that leaves
/// them), and the call is resolved the usual way.
fn cached_at(
    c: &Ctx<'_>,
    dirfd: i32,
    path_addr: usize,
    flags: i32,
    follow: bool,
    sink: &mut dyn FnMut(&host::Statx) -> Result<(), Errno>,
) -> Result<bool, Errno> {
    if !dcache::enabled() {
        return Ok(false);
    }
    // A short path is read on the stack: a lookup the cache answers then
    // allocates nothing.
    let n = user::strnlen(path_addr, user::PATH_MAX)?;
    let mut small = [0u8; 256];
    let mut big = Vec::new();
    let buf: &mut [u8] = if n < small.len() {
        &mut small[..n]
    } else {
        big.resize(n, 0);
        &mut big
    };
    user::copy_in(buf, path_addr)?;
    let path: &[u8] = buf;
    if path.is_empty() && flags & host::AT_EMPTY_PATH != 0 {
        // The descriptor itself: a file of an exclusive mount has its
        // attributes (`kernel::fs::file`).
        let fds = fds(c);
        return match fds.file(dirfd).as_deref().and_then(|f| f.statx(fds, dirfd)) {
            Some(stx) => sink(stx).map(|_| true),
            None => Ok(false),
        };
    }
    let mut written = Ok(());
    match walk::cached_stat(fds(c), dirfd, path, follow, &mut |stx| written = sink(stx)) {
        None => Ok(false),
        Some(Ok(true)) => written.map(|_| true),
        Some(Ok(false)) => Err(Errno::ENOENT),
        Some(Err(e)) => Err(e),
    }
}

fn stat_common(c: &Ctx<'_>, dirfd: i32, path: usize, buf: usize, flags: i32) -> SysResult {
    // The descriptor itself (glibc's fstat): no path to read or resolve.
    // Linux 6.11+ takes a NULL path as empty here.
    if flags & host::AT_EMPTY_PATH != 0 && (path == 0 || user::read::<u8>(path)? == 0) {
        let fds = fds(c);
        if fds.is_hidden(dirfd) {
            return Err(Errno::EBADF);
        }
        if let Some(r) = noted_file_stat(fds, dirfd, buf) {
            return r;
        }
        return host_call(
            nr::NEWFSTATAT,
            [dirfd as usize, path, buf, flags as usize, 0, 0],
        );
    }
    let follow = flags & host::AT_SYMLINK_NOFOLLOW == 0;
    if cached_at(c, dirfd, path, flags, follow, &mut |stx| {
        user::write(buf, &stx.to_stat())
    })? {
        return Ok(0);
    }
    match object_at(c, dirfd, path, flags, follow)? {
        None => host_call(
            nr::NEWFSTATAT,
            [dirfd as usize, path, buf, flags as usize, 0, 0],
        ),
        Some(o) => host_call_with(
            nr::NEWFSTATAT,
            [o.fd as usize, 0, buf, host::AT_EMPTY_PATH as usize, 0, 0],
            &[(1, EMPTY)],
        ),
    }
}

/// Implements stat(2).
#[syscall]
pub fn stat(c: &mut Ctx<'_>, pathname: usize, statbuf: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    stat_common(c, AT_FDCWD, pathname, statbuf, 0)
}

/// Implements lstat(2).
#[syscall]
pub fn lstat(c: &mut Ctx<'_>, pathname: usize, statbuf: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    stat_common(c, AT_FDCWD, pathname, statbuf, host::AT_SYMLINK_NOFOLLOW)
}

/// Implements newfstatat(2).
#[syscall]
pub fn newfstatat(
    c: &mut Ctx<'_>,
    dirfd: i32,
    pathname: usize,
    statbuf: usize,
    flags: i32,
) -> SysResult {
    if !active() {
        return c.host();
    }
    // As vfs_statx: the flags first (then the path).
    const AT_STATX_SYNC_TYPE: i32 = 0x6000;
    if flags & !(host::AT_SYMLINK_NOFOLLOW | host::AT_EMPTY_PATH | 0x800 | AT_STATX_SYNC_TYPE) != 0
        || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
    {
        return Err(Errno::EINVAL);
    }
    stat_common(c, dirfd, pathname, statbuf, flags)
}

/// Implements statx(2).
#[syscall]
pub fn statx(
    c: &mut Ctx<'_>,
    dirfd: i32,
    pathname: usize,
    flags: i32,
    mask: u32,
    statxbuf: usize,
) -> SysResult {
    if !active() || pathname == 0 {
        // A NULL path names dirfd itself (Linux 6.11+).
        return c.host();
    }
    const AT_STATX_SYNC_TYPE: i32 = 0x6000;
    const STATX_RESERVED: u32 = 0x8000_0000;
    if flags & !(host::AT_SYMLINK_NOFOLLOW | 0x800 | host::AT_EMPTY_PATH | AT_STATX_SYNC_TYPE) != 0
        || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
        || mask & STATX_RESERVED != 0
    {
        return Err(Errno::EINVAL);
    }
    let follow = flags & host::AT_SYMLINK_NOFOLLOW == 0;
    // Linux fills the change and modification times only when asked for
    // them on file systems with fine-grained timestamps, and the birth time
    // only when asked for: the cache answers requests that ask for the
    // first two (as every `stat`-like request does), and leaves the birth
    // time out unless asked. The rest of what it holds, Linux gives
    // whatever the mask.
    const STATX_MTIME_CTIME: u32 = 0x40 | 0x80;
    if mask & !dcache::STATX_CACHED == 0 && mask & STATX_MTIME_CTIME == STATX_MTIME_CTIME {
        const STATX_BTIME: u32 = 0x800;
        if cached_at(c, dirfd, pathname, flags, follow, &mut |stx| {
            let mut stx = *stx;
            if mask & STATX_BTIME == 0 {
                stx.clear_btime();
            }
            user::copy_out(statxbuf, &stx.0)
        })? {
            return Ok(0);
        }
    }
    match object_at(c, dirfd, pathname, flags, follow)? {
        None => c.host(),
        Some(o) => {
            let f = (flags & !(host::AT_SYMLINK_NOFOLLOW | 0x800)) | host::AT_EMPTY_PATH;
            host_call_with(
                nr::STATX,
                [o.fd as usize, 0, f as usize, mask as usize, statxbuf, 0],
                &[(1, EMPTY)],
            )
        }
    }
}

/// Implements fstat(2): a file of an exclusive mount has the attributes
/// its open found (`kernel::fs::file`); every other descriptor is the
/// host's.
#[syscall]
pub fn fstat(c: &mut Ctx<'_>, fd: i32, statbuf: usize) -> SysResult {
    noted_file_stat(fds(c), fd, statbuf).unwrap_or_else(|| c.host())
}

/// Writes the `struct stat` of descriptor `fd` to `buf` if it is a file of
/// an exclusive mount (`kernel::fs::file`); None for any other.
fn noted_file_stat(fds: &FdTable, fd: i32, buf: usize) -> Option<SysResult> {
    let f = fds.file(fd)?;
    let stx = f.statx(fds, fd)?;
    Some(user::write(buf, &stx.to_stat()).map(|_| 0))
}

/// Implements pread64(2): a file of an exclusive mount is copied from its
/// view in the runtime's memory (`kernel::fs::file`); every other
/// descriptor is the host's.
#[syscall]
pub fn pread64(c: &mut Ctx<'_>, fd: i32, buf: usize, count: usize, offset: i64) -> SysResult {
    noted_answer(c, fd, false, |fds, f| f.pread(fds, fd, buf, count, offset))
        .unwrap_or_else(|| c.host_blocking())
}

/// The library OS's answer to a call on descriptor `fd`: `serve`'s, if
/// `fd` is a noted file (`kernel::fs::file`) and `serve` answers. Else
/// None, for the host to answer; a call that uses the file offset
/// (`at_offset`) gives the host the offset first, if the library OS owned
/// it.
fn noted_answer(
    c: &Ctx<'_>,
    fd: i32,
    at_offset: bool,
    serve: impl FnOnce(&FdTable, &file::OpenFile) -> Option<SysResult>,
) -> Option<SysResult> {
    let fds = fds(c);
    let f = fds.file(fd)?;
    let r = serve(fds, &f);
    if r.is_none() && at_offset {
        f.offset_to_host(fd);
    }
    r
}

/// Implements read(2): a file of an exclusive mount is copied from its
/// view (`kernel::fs::file`), moving the host's file offset; every other
/// descriptor is the host's.
#[syscall]
pub fn read(c: &mut Ctx<'_>, fd: i32, buf: usize, count: usize) -> SysResult {
    noted_answer(c, fd, true, |fds, f| {
        file::Segments::one(buf, count).and_then(|s| f.read_segments(fds, fd, &s))
    })
    .unwrap_or_else(|| c.host_blocking())
}

/// Implements lseek(2): the offset of a file of an exclusive mount while
/// the library OS owns it (`kernel::fs::file`); every other descriptor's
/// is the host's.
#[syscall]
pub fn lseek(c: &mut Ctx<'_>, fd: i32, offset: i64, whence: i32) -> SysResult {
    noted_answer(c, fd, true, |fds, f| f.lseek(fds, fd, offset, whence)).unwrap_or_else(|| c.host())
}

/// Implements sendfile(2): a file of an exclusive mount read from its
/// offset gives that offset back to the host first, a write-back file is
/// flushed first (`kernel::fs::file`).
#[syscall]
pub fn sendfile(c: &mut Ctx<'_>, _out_fd: i32, in_fd: i32) -> SysResult {
    let fds = fds(c);
    if let Some(f) = fds.file(in_fd) {
        f.flush(in_fd);
        f.offset_to_host(in_fd);
    }
    c.host_blocking()
}

/// Is call `d` a flush point of write-back buffers (docs/FILESYSTEM.md,
/// "Write-back mounts")? Every call that takes a path or a socket address
/// (the table's `host_unmounted` calls: open, stat, rename, unlink,
/// connect, sendmsg, ...), those that map, sync or copy between files
/// (whose other descriptor the dispatcher's hook does not see: splice,
/// copy_file_range), and those that end, copy or replace the process
/// (exit, exit_group, fork, clone, vfork, execve).
pub fn flushes_writes(c: &Ctx<'_>, d: &crate::sys::def::SyscallDef) -> bool {
    // glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH): a call on the
    // descriptor (`before_fd_call`), not on a path.
    const AT_EMPTY_PATH: usize = 0x1000;
    let empty_path = |flags: usize| {
        flags & AT_EMPTY_PATH != 0 && user::read::<u8>(c.args[1]).is_ok_and(|b| b == 0)
    };
    match d.nr as usize {
        nr::NEWFSTATAT if empty_path(c.args[3]) => return false,
        nr::STATX if empty_path(c.args[2]) => return false,
        _ => {}
    }
    d.host_unmounted
        || matches!(
            d.nr as usize,
            nr::MMAP
                | nr::MREMAP
                | nr::MSYNC
                | nr::SYNC
                | nr::SPLICE
                | nr::TEE
                | nr::VMSPLICE
                | nr::COPY_FILE_RANGE
                | nr::EXIT
                | nr::EXIT_GROUP
                | nr::FORK
                | nr::VFORK
                | nr::CLONE
                | nr::CLONE3
                | nr::EXECVE
                | nr::EXECVEAT
        )
}

/// Is call `nr` one the handlers serve from a noted file's state (and so
/// keeps an owned offset): the reads, `lseek`, the `fstat`s, `close`?
const fn served_from_notes(nr: usize) -> bool {
    matches!(
        nr,
        nr::READ
            | nr::READV
            | nr::PREAD64
            | nr::PREADV
            | nr::PREADV2
            | nr::LSEEK
            | nr::FSTAT
            | nr::NEWFSTATAT
            | nr::STATX
            | nr::CLOSE
    )
}

/// Before a call on descriptor `fd` that the library OS does not serve
/// itself (`dup`, `fcntl`, `ioctl`, `splice`, ...; the dispatcher's hook,
/// for calls whose first argument is a descriptor): if it is a file whose
/// offset the library OS owns, the host gets the offset back, as the call
/// may use or share it. The calls that keep it are those served from the
/// offset the library OS keeps, and those that do not use it.
///
/// A write-back file (docs/FILESYSTEM.md, "Write-back mounts") is flushed
/// before every call on it but `write`/`writev` (and `close`, which
/// flushes itself); one that may be shared (`dup`, `F_DUPFD`) stops
/// buffering. `fsync` and `fdatasync` return a flush's error.
#[inline]
pub fn before_fd_call(c: &Ctx<'_>) -> Result<(), Errno> {
    let fds = fds(c);
    if !fds.has_files() {
        return Ok(());
    }
    const FIONREAD: usize = 0x541b;
    const F_SETFL: usize = 4;
    const F_DUPFD: usize = 0;
    const F_DUPFD_CLOEXEC: usize = 1030;
    // The calls served from the notes themselves need no look here (the
    // handler looks), unless a write-back file may be among them.
    let served = served_from_notes(c.nr);
    if served && !mount::any_write_back() {
        return Ok(());
    }
    let fd = c.args[0] as i32;
    if let Some(f) = fds.file(fd).filter(|f| f.is_write_back()) {
        match c.nr {
            nr::WRITE | nr::WRITEV | nr::CLOSE => {}
            nr::FCNTL if !matches!(c.args[1] as u32 as usize, F_DUPFD | F_DUPFD_CLOEXEC) => {
                f.flush(fd)
            }
            nr::DUP | nr::DUP2 | nr::DUP3 | nr::FCNTL => fds.note_shared(fd),
            nr::FSYNC | nr::FDATASYNC | nr::SYNC_FILE_RANGE | nr::SYNCFS => {
                f.flush(fd);
                if let Some(e) = f.take_error() {
                    return Err(e);
                }
            }
            _ => f.flush(fd),
        }
        return Ok(());
    }
    match c.nr {
        _ if served => {}
        nr::SENDFILE
        | nr::FSYNC
        | nr::FDATASYNC
        | nr::FADVISE64
        | nr::FLOCK
        | nr::FSTATFS
        | nr::FGETXATTR
        | nr::FLISTXATTR => {}
        // isatty's TCGETS (Python's open asks it of every file); FIONREAD
        // is the size less the offset.
        nr::IOCTL if c.args[1] as u32 as usize != FIONREAD => {}
        // The descriptor's and the description's flags; not F_DUPFD, nor
        // the locks (whose SEEK_CUR is the offset).
        nr::FCNTL if (1..=F_SETFL).contains(&(c.args[1] as u32 as usize)) => {}
        _ => fds.share_offset(fd),
    }
    Ok(())
}

/// Implements write(2): a write shorter than 4 KiB to a file of a
/// write-back mount goes into its buffer (`kernel::fs::file`); every other
/// write is the host's.
#[syscall]
pub fn write(c: &mut Ctx<'_>, fd: i32, buf: usize, count: usize) -> SysResult {
    noted_answer(c, fd, false, |_, f| {
        file::Segments::one(buf, count).and_then(|s| f.write(fd, &s))
    })
    .unwrap_or_else(|| c.host_blocking())
}

/// Implements writev(2): as `write`, from each buffer in turn.
#[syscall]
pub fn writev(c: &mut Ctx<'_>, fd: i32, iov: usize, iovcnt: i32) -> SysResult {
    noted_answer(c, fd, false, |_, f| {
        segments(iov, iovcnt).and_then(|s| f.write(fd, &s))
    })
    .unwrap_or_else(|| c.host_blocking())
}

/// The program's `iovec` array at `iov` with `iovcnt` entries, for the
/// library OS to read into; None when the host should take the call
/// (more than `file::MAX_SEGMENTS`, a count Linux refuses, an array or a
/// buffer it cannot read or would refuse).
fn segments(iov: usize, iovcnt: i32) -> Option<file::Segments> {
    let n = usize::try_from(iovcnt)
        .ok()
        .filter(|&n| n <= file::MAX_SEGMENTS)?;
    let mut raw = [0u8; 16 * file::MAX_SEGMENTS];
    user::copy_in(&mut raw[..16 * n], iov).ok()?;
    file::Segments::from_buffers(raw[..16 * n].chunks_exact(16).map(|e| {
        let word = |i: usize| u64::from_ne_bytes(e[i..i + 8].try_into().unwrap()) as usize;
        (word(0), word(8))
    }))
}

/// Implements readv(2): as `read`, into each buffer in turn.
#[syscall]
pub fn readv(c: &mut Ctx<'_>, fd: i32, iov: usize, iovcnt: i32) -> SysResult {
    noted_answer(c, fd, true, |fds, f| {
        segments(iov, iovcnt).and_then(|s| f.read_segments(fds, fd, &s))
    })
    .unwrap_or_else(|| c.host_blocking())
}

/// Implements preadv(2): as `pread64`, into each buffer in turn.
#[syscall]
pub fn preadv(c: &mut Ctx<'_>, fd: i32, iov: usize, iovcnt: i32, pos_l: i64) -> SysResult {
    preadv_common(c, fd, iov, iovcnt, pos_l, 0)
}

/// Implements preadv2(2): `preadv`, or with offset -1 `readv`; with flags
/// (`RWF_*`) the host's.
#[syscall]
pub fn preadv2(
    c: &mut Ctx<'_>,
    fd: i32,
    iov: usize,
    iovcnt: i32,
    pos_l: i64,
    _pos_h: i64,
    flags: i32,
) -> SysResult {
    preadv_common(c, fd, iov, iovcnt, pos_l, flags)
}

/// preadv and preadv2 (on x86-64 the offset is its low word whole).
fn preadv_common(c: &Ctx<'_>, fd: i32, iov: usize, iovcnt: i32, pos: i64, flags: i32) -> SysResult {
    // With flags (RWF_*) the host's, at offset -1 from its offset.
    noted_answer(c, fd, true, |fds, f| {
        if flags != 0 {
            None
        } else if pos == -1 && c.nr == nr::PREADV2 {
            // do_preadv refuses a negative offset first; preadv2 reads at
            // the file offset for -1.
            segments(iov, iovcnt).and_then(|s| f.read_segments(fds, fd, &s))
        } else if pos < 0 {
            Some(Err(Errno::EINVAL))
        } else {
            segments(iov, iovcnt).and_then(|s| f.pread_segments(fds, fd, &s, pos))
        }
    })
    .unwrap_or_else(|| c.host_blocking())
}

/// Implements statfs(2).
#[syscall]
pub fn statfs(c: &mut Ctx<'_>, pathname: usize, buf: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    let o = object(c, AT_FDCWD, &path_arg(pathname)?, true)?;
    host_call_with(nr::STATFS, [0, buf, 0, 0, 0, 0], &[(0, &o.proc_path())])
}

// ---------------------------------------------------------------- access

fn access_common(c: &Ctx<'_>, dirfd: i32, path: usize, mode: i32, flags: i32) -> SysResult {
    if mode & !7 != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & !(host::AT_EACCESS | host::AT_SYMLINK_NOFOLLOW | host::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let follow = flags & host::AT_SYMLINK_NOFOLLOW == 0;
    // Existence (F_OK) from the directory cache; permissions from the host.
    if mode == 0 && cached_at(c, dirfd, path, flags, follow, &mut |_| Ok(()))? {
        return Ok(0);
    }
    match object_at(c, dirfd, path, flags, follow)? {
        None => host_call(
            nr::FACCESSAT2,
            [dirfd as usize, path, mode as usize, flags as usize, 0, 0],
        ),
        Some(o) => {
            if mode & 2 != 0 {
                o.check_writable()?;
            }
            let f = host::AT_EMPTY_PATH | (flags & host::AT_EACCESS);
            host_call_with(
                nr::FACCESSAT2,
                [o.fd as usize, 0, mode as usize, f as usize, 0, 0],
                &[(1, EMPTY)],
            )
        }
    }
}

/// Implements access(2).
#[syscall]
pub fn access(c: &mut Ctx<'_>, pathname: usize, mode: i32) -> SysResult {
    if !active() {
        return c.host();
    }
    access_common(c, AT_FDCWD, pathname, mode, 0)
}

/// Implements faccessat(2) (the system call has no flags).
#[syscall]
pub fn faccessat(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, mode: i32) -> SysResult {
    if !active() {
        return c.host();
    }
    access_common(c, dirfd, pathname, mode, 0)
}

/// Implements faccessat2(2).
#[syscall]
pub fn faccessat2(
    c: &mut Ctx<'_>,
    dirfd: i32,
    pathname: usize,
    mode: i32,
    flags: i32,
) -> SysResult {
    if !active() {
        return c.host();
    }
    access_common(c, dirfd, pathname, mode, flags)
}

// ---------------------------------------------------------------- links

fn self_exe_link(path: &[u8], buf: usize, size: usize) -> Option<SysResult> {
    if !crate::kernel::fs::is_self_exe(path, crate::host::getpid()) {
        return None;
    }
    Some(copy_link(crate::kernel::process::exe_path(), buf, size))
}

/// Writes a link's target as readlink(2) does: truncated to `size`, no NUL.
fn copy_link(target: &[u8], buf: usize, size: usize) -> SysResult {
    let n = target.len().min(size);
    user::copy_out(buf, &target[..n]).map(|_| n)
}

fn readlink_common(
    c: &Ctx<'_>,
    dirfd: i32,
    path_addr: usize,
    buf: usize,
    size: usize,
) -> SysResult {
    // Linux checks the size (an int) before it reads the path.
    if (size as i32) <= 0 {
        return Err(Errno::EINVAL);
    }
    let size = size as i32 as usize;
    let Ok(path) = path_arg(path_addr) else {
        // A bad path: the host says which error.
        return c.host();
    };
    if let Some(r) = self_exe_link(&path, buf, size) {
        return r;
    }
    if !active() || path.is_empty() {
        // readlinkat(fd, "") reads the symlink fd names.
        return c.host();
    }
    let target = walk::readlink(fds(c), dirfd, &path)?;
    copy_link(&target, buf, size)
}

/// Implements readlink(2): `/proc/self/exe` names the program, not the
/// runtime; with mounts, /proc's links name guest paths.
#[syscall]
pub fn readlink(c: &mut Ctx<'_>, pathname: usize, buf: usize, bufsiz: usize) -> SysResult {
    readlink_common(c, AT_FDCWD, pathname, buf, bufsiz)
}

/// Implements readlinkat(2): as readlink.
#[syscall]
pub fn readlinkat(
    c: &mut Ctx<'_>,
    dirfd: i32,
    pathname: usize,
    buf: usize,
    bufsiz: usize,
) -> SysResult {
    readlink_common(c, dirfd, pathname, buf, bufsiz)
}

/// Implements symlink(2).
#[syscall]
pub fn symlink(c: &mut Ctx<'_>, target: usize, linkpath: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    symlink_common(c, target, AT_FDCWD, linkpath)
}

/// Implements symlinkat(2).
#[syscall]
pub fn symlinkat(c: &mut Ctx<'_>, target: usize, newdirfd: i32, linkpath: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    symlink_common(c, target, newdirfd, linkpath)
}

fn symlink_common(c: &Ctx<'_>, target: usize, dirfd: i32, linkpath: usize) -> SysResult {
    // The target is any string: checked (and copied) by the host.
    let t = path_arg(target)?;
    if t.is_empty() {
        return Err(Errno::ENOENT);
    }
    let e = entry(c, dirfd, linkpath)?;
    check_create(&e)?;
    host_call_with(
        nr::SYMLINKAT,
        [target, e.dir.0 as usize, 0, 0, 0, 0],
        &[(2, &e.name)],
    )
}

/// Implements link(2).
#[syscall]
pub fn link(c: &mut Ctx<'_>, oldpath: usize, newpath: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    link_common(c, AT_FDCWD, oldpath, AT_FDCWD, newpath, 0)
}

/// Implements linkat(2).
#[syscall]
pub fn linkat(
    c: &mut Ctx<'_>,
    olddirfd: i32,
    oldpath: usize,
    newdirfd: i32,
    newpath: usize,
    flags: i32,
) -> SysResult {
    if !active() {
        return c.host();
    }
    link_common(c, olddirfd, oldpath, newdirfd, newpath, flags)
}

fn link_common(
    c: &Ctx<'_>,
    olddirfd: i32,
    oldpath: usize,
    newdirfd: i32,
    newpath: usize,
    flags: i32,
) -> SysResult {
    if flags & !(host::AT_SYMLINK_FOLLOW | host::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let follow = flags & host::AT_SYMLINK_FOLLOW != 0;
    let old = object_at(c, olddirfd, oldpath, flags, follow)?;
    let e = entry(c, newdirfd, newpath)?;
    // The old name's mount (a descriptor's: by its guest path).
    let src_mount = match &old {
        Some(Object { mount: Some(m), .. }) => Some(*m),
        o => {
            let fd = o.as_ref().map_or(olddirfd, |o| o.fd);
            walk::fd_guest(fd).ok().map(|g| mount::covering(&g))
        }
    };
    if src_mount.is_some_and(|m| m != e.mount) {
        return Err(Errno::EXDEV);
    }
    check_create(&e)?;
    match old {
        None => host_call_with(
            nr::LINKAT,
            [
                olddirfd as usize,
                0,
                e.dir.0 as usize,
                0,
                host::AT_EMPTY_PATH as usize,
                0,
            ],
            &[(1, EMPTY), (3, &e.name)],
        ),
        Some(o) => host_call_with(
            nr::LINKAT,
            [
                AT_FDCWD as isize as usize,
                0,
                e.dir.0 as usize,
                0,
                host::AT_SYMLINK_FOLLOW as usize,
                0,
            ],
            &[(1, &o.proc_path()), (3, &e.name)],
        ),
    }
}

// ---------------------------------------------------------------- names

/// Implements mkdir(2).
#[syscall]
pub fn mkdir(c: &mut Ctx<'_>, pathname: usize, mode: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    mknod_common(c, AT_FDCWD, pathname, mode, None)
}

/// Implements mkdirat(2).
#[syscall]
pub fn mkdirat(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, mode: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    mknod_common(c, dirfd, pathname, mode, None)
}

/// Implements mknod(2).
#[syscall]
pub fn mknod(c: &mut Ctx<'_>, pathname: usize, mode: u32, dev: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    mknod_common(c, AT_FDCWD, pathname, mode, Some(dev))
}

/// Implements mknodat(2).
#[syscall]
pub fn mknodat(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, mode: u32, dev: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    mknod_common(c, dirfd, pathname, mode, Some(dev))
}

/// mkdirat (`dev` None) or mknodat in the directory the path names.
fn mknod_common(c: &Ctx<'_>, dirfd: i32, path: usize, mode: u32, dev: Option<u32>) -> SysResult {
    if dev.is_some() {
        // The mode's type is checked before the path.
        probe(c, &[if c.nr == nr::MKNOD { 0 } else { 1 }])?;
    }
    let e = entry(c, dirfd, path)?;
    check_create(&e)?;
    match dev {
        None => host_call_with(
            nr::MKDIRAT,
            [e.dir.0 as usize, 0, mode as usize, 0, 0, 0],
            &[(1, &e.name)],
        ),
        Some(d) => host_call_with(
            nr::MKNODAT,
            [e.dir.0 as usize, 0, mode as usize, d as usize, 0, 0],
            &[(1, &e.name)],
        ),
    }
}

/// Implements unlink(2).
#[syscall]
pub fn unlink(c: &mut Ctx<'_>, pathname: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    unlink_common(c, AT_FDCWD, pathname, 0)
}

/// Implements rmdir(2).
#[syscall]
pub fn rmdir(c: &mut Ctx<'_>, pathname: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    unlink_common(c, AT_FDCWD, pathname, host::AT_REMOVEDIR)
}

/// Implements unlinkat(2).
#[syscall]
pub fn unlinkat(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, flags: i32) -> SysResult {
    if !active() {
        return c.host();
    }
    if flags & !host::AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    unlink_common(c, dirfd, pathname, flags)
}

fn unlink_common(c: &Ctx<'_>, dirfd: i32, path_addr: usize, flags: i32) -> SysResult {
    let path = path_arg(path_addr)?;
    if flags & host::AT_REMOVEDIR != 0 && !path.is_empty() && path.iter().all(|&b| b == b'/') {
        // rmdir("/"): the root is busy.
        return Err(Errno::EBUSY);
    }
    let e = walk::entry(fds(c), dirfd, &path)?;
    check_remove(&e)?;
    host_call_with(
        nr::UNLINKAT,
        [e.dir.0 as usize, 0, flags as usize, 0, 0, 0],
        &[(1, &e.name)],
    )
}

/// Implements rename(2).
#[syscall]
pub fn rename(c: &mut Ctx<'_>, oldpath: usize, newpath: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    rename_common(c, AT_FDCWD, oldpath, AT_FDCWD, newpath, 0)
}

/// Implements renameat(2).
#[syscall]
pub fn renameat(
    c: &mut Ctx<'_>,
    olddirfd: i32,
    oldpath: usize,
    newdirfd: i32,
    newpath: usize,
) -> SysResult {
    if !active() {
        return c.host();
    }
    rename_common(c, olddirfd, oldpath, newdirfd, newpath, 0)
}

/// Implements renameat2(2).
#[syscall]
pub fn renameat2(
    c: &mut Ctx<'_>,
    olddirfd: i32,
    oldpath: usize,
    newdirfd: i32,
    newpath: usize,
    flags: u32,
) -> SysResult {
    if !active() {
        return c.host();
    }
    rename_common(c, olddirfd, oldpath, newdirfd, newpath, flags)
}

fn rename_common(
    c: &Ctx<'_>,
    olddirfd: i32,
    oldpath: usize,
    newdirfd: i32,
    newpath: usize,
    flags: u32,
) -> SysResult {
    if flags != 0 {
        // The flags are checked before the paths.
        probe(c, &[1, 3])?;
    }
    let o = entry(c, olddirfd, oldpath)?;
    let n = entry(c, newdirfd, newpath)?;
    if o.mount != n.mount {
        return Err(Errno::EXDEV);
    }
    if o.is_mount_point() || n.is_mount_point() {
        return Err(Errno::EBUSY);
    }
    check_remove(&o)?;
    if readonly(n.mount) {
        return Err(Errno::EROFS);
    }
    host_call_with(
        nr::RENAMEAT2,
        [o.dir.0 as usize, 0, n.dir.0 as usize, 0, flags as usize, 0],
        &[(1, &o.name), (3, &n.name)],
    )
}

// ---------------------------------------------------------------- attributes

/// Implements chmod(2).
#[syscall]
pub fn chmod(c: &mut Ctx<'_>, pathname: usize, mode: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    chmod_common(c, AT_FDCWD, pathname, mode, 0)
}

/// Implements fchmodat(2) (the system call has no flags).
#[syscall]
pub fn fchmodat(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, mode: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    chmod_common(c, dirfd, pathname, mode, 0)
}

/// Implements fchmodat2(2).
#[syscall]
pub fn fchmodat2(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, mode: u32, flags: i32) -> SysResult {
    if !active() {
        return c.host();
    }
    if flags & !(host::AT_SYMLINK_NOFOLLOW | host::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    chmod_common(c, dirfd, pathname, mode, flags)
}

fn chmod_common(c: &Ctx<'_>, dirfd: i32, path: usize, mode: u32, flags: i32) -> SysResult {
    let follow = flags & host::AT_SYMLINK_NOFOLLOW == 0;
    match object_at(c, dirfd, path, flags, follow)? {
        None => {
            if fd_readonly(dirfd) {
                return Err(Errno::EROFS);
            }
            host_call(
                nr::FCHMODAT2,
                [dirfd as usize, path, mode as usize, flags as usize, 0, 0],
            )
        }
        Some(o) => {
            o.check_writable()?;
            let f = host::AT_EMPTY_PATH | (flags & host::AT_SYMLINK_NOFOLLOW);
            host_call_with(
                nr::FCHMODAT2,
                [o.fd as usize, 0, mode as usize, f as usize, 0, 0],
                &[(1, EMPTY)],
            )
        }
    }
}

/// Implements chown(2).
#[syscall]
pub fn chown(c: &mut Ctx<'_>, pathname: usize, owner: u32, group: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    chown_common(c, AT_FDCWD, pathname, owner, group, 0)
}

/// Implements lchown(2).
#[syscall]
pub fn lchown(c: &mut Ctx<'_>, pathname: usize, owner: u32, group: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    chown_common(
        c,
        AT_FDCWD,
        pathname,
        owner,
        group,
        host::AT_SYMLINK_NOFOLLOW,
    )
}

/// Implements fchownat(2).
#[syscall]
pub fn fchownat(
    c: &mut Ctx<'_>,
    dirfd: i32,
    pathname: usize,
    owner: u32,
    group: u32,
    flags: i32,
) -> SysResult {
    if !active() {
        return c.host();
    }
    if flags & !(host::AT_SYMLINK_NOFOLLOW | host::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    chown_common(c, dirfd, pathname, owner, group, flags)
}

fn chown_common(
    c: &Ctx<'_>,
    dirfd: i32,
    path: usize,
    owner: u32,
    group: u32,
    flags: i32,
) -> SysResult {
    let follow = flags & host::AT_SYMLINK_NOFOLLOW == 0;
    match object_at(c, dirfd, path, flags, follow)? {
        None => {
            if fd_readonly(dirfd) {
                return Err(Errno::EROFS);
            }
            c.host()
        }
        Some(o) => {
            o.check_writable()?;
            host_call_with(
                nr::FCHOWNAT,
                [
                    o.fd as usize,
                    0,
                    owner as usize,
                    group as usize,
                    host::AT_EMPTY_PATH as usize,
                    0,
                ],
                &[(1, EMPTY)],
            )
        }
    }
}

/// Implements fchmod(2): EROFS for a file of a read-only mount.
#[syscall]
pub fn fchmod(c: &mut Ctx<'_>, fd: i32) -> SysResult {
    fd_write_check(c, fd)
}

/// Implements fchown(2): EROFS for a file of a read-only mount.
#[syscall]
pub fn fchown(c: &mut Ctx<'_>, fd: i32) -> SysResult {
    fd_write_check(c, fd)
}

/// Implements fsetxattr(2): EROFS for a file of a read-only mount.
#[syscall]
pub fn fsetxattr(c: &mut Ctx<'_>, fd: i32) -> SysResult {
    fd_write_check(c, fd)
}

/// Implements fremovexattr(2): EROFS for a file of a read-only mount.
#[syscall]
pub fn fremovexattr(c: &mut Ctx<'_>, fd: i32) -> SysResult {
    fd_write_check(c, fd)
}

/// A call that changes the file descriptor `fd` names: refused with EROFS
/// on a read-only mount, else the host's.
fn fd_write_check(c: &Ctx<'_>, fd: i32) -> SysResult {
    if active() {
        if fds(c).is_hidden(fd) {
            return Err(Errno::EBADF);
        }
        if fd_readonly(fd) && host::fstat(fd).is_ok_and(|st| fs_object(st.st_mode)) {
            return Err(Errno::EROFS);
        }
    }
    c.host()
}

/// Implements utime(2).
#[syscall]
pub fn utime(c: &mut Ctx<'_>, filename: usize, times: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    probe(c, &[0])?;
    let o = object(c, AT_FDCWD, &path_arg(filename)?, true)?;
    o.check_writable()?;
    host_call_with(nr::UTIME, [0, times, 0, 0, 0, 0], &[(0, &o.proc_path())])
}

/// Implements utimes(2).
#[syscall]
pub fn utimes(c: &mut Ctx<'_>, filename: usize, times: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    probe(c, &[0])?;
    let o = object(c, AT_FDCWD, &path_arg(filename)?, true)?;
    o.check_writable()?;
    host_call_with(nr::UTIMES, [0, times, 0, 0, 0, 0], &[(0, &o.proc_path())])
}

/// Implements futimesat(2).
#[syscall]
pub fn futimesat(c: &mut Ctx<'_>, dirfd: i32, pathname: usize, times: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    if pathname == 0 {
        return fd_write_check(c, dirfd);
    }
    probe(c, &[1])?;
    let o = object(c, dirfd, &path_arg(pathname)?, true)?;
    o.check_writable()?;
    host_call_with(
        nr::FUTIMESAT,
        [AT_FDCWD as isize as usize, 0, times, 0, 0, 0],
        &[(1, &o.proc_path())],
    )
}

/// Implements utimensat(2) (a NULL path names `dirfd` itself: futimens).
#[syscall]
pub fn utimensat(
    c: &mut Ctx<'_>,
    dirfd: i32,
    pathname: usize,
    times: usize,
    flags: i32,
) -> SysResult {
    if !active() {
        return c.host();
    }
    if pathname == 0 {
        return fd_write_check(c, dirfd);
    }
    // As Linux: the times are read first (both UTIME_OMIT: done, nothing
    // looked up), then the flags are checked, then the path looked up,
    // and only then the times' nanoseconds (vfs_utimes), before the
    // file system's checks (EROFS, permissions).
    let mut bad_nsec = false;
    if times != 0 {
        const UTIME_NOW: i64 = (1 << 30) - 1;
        const UTIME_OMIT: i64 = (1 << 30) - 2;
        let mut ts = [0u8; 32];
        user::copy_in(&mut ts, times)?;
        let nsec = |i: usize| i64::from_ne_bytes(ts[i * 16 + 8..i * 16 + 16].try_into().unwrap());
        if nsec(0) == UTIME_OMIT && nsec(1) == UTIME_OMIT {
            return Ok(0);
        }
        bad_nsec = (0..2).any(|i| {
            let n = nsec(i);
            n != UTIME_NOW && n != UTIME_OMIT && !(0..1_000_000_000).contains(&n)
        });
    }
    if flags & !(host::AT_SYMLINK_NOFOLLOW | host::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let follow = flags & host::AT_SYMLINK_NOFOLLOW == 0;
    let object = object_at(c, dirfd, pathname, flags, follow)?;
    if bad_nsec {
        if object.is_none() {
            // The descriptor itself: looked up (EBADF) before the times.
            host::fcntl(dirfd, 1 /* F_GETFD */, 0)?;
        }
        return Err(Errno::EINVAL);
    }
    match object {
        None => fd_write_check(c, dirfd),
        Some(o) => {
            o.check_writable()?;
            let f = host::AT_EMPTY_PATH | (flags & host::AT_SYMLINK_NOFOLLOW);
            host_call_with(
                nr::UTIMENSAT,
                [o.fd as usize, 0, times, f as usize, 0, 0],
                &[(1, EMPTY)],
            )
        }
    }
}

/// Implements truncate(2).
#[syscall]
pub fn truncate(c: &mut Ctx<'_>, path: usize, length: isize) -> SysResult {
    if !active() {
        return c.host();
    }
    if length < 0 {
        return Err(Errno::EINVAL);
    }
    let o = object(c, AT_FDCWD, &path_arg(path)?, true)?;
    let st = o.stat()?;
    if st.st_mode & S_IFMT == S_IFDIR {
        return Err(Errno::EISDIR);
    }
    o.check_writable()?;
    host_call_with(
        nr::TRUNCATE,
        [0, length as usize, 0, 0, 0, 0],
        &[(0, &o.proc_path())],
    )
}

// ---------------------------------------------------------------- xattrs

/// The extended-attribute calls that take a path: (follows symlinks,
/// changes the file).
fn xattr_kind(nr: usize) -> (bool, bool) {
    match nr {
        nr::GETXATTR | nr::LISTXATTR => (true, false),
        nr::LGETXATTR | nr::LLISTXATTR => (false, false),
        nr::SETXATTR | nr::REMOVEXATTR => (true, true),
        _ => (false, true), // lsetxattr, lremovexattr
    }
}

/// Implements getxattr(2), lgetxattr, setxattr, lsetxattr, listxattr,
/// llistxattr, removexattr and lremovexattr. The call is made as its
/// `*xattrat` form (Linux 6.13) on the object's name in its directory,
/// never following it: the object found (a symlink itself for the `l`
/// forms). On an older host, through the object's /proc name, where the
/// `l` forms on a symlink behave as for a symlink without attributes.
pub fn xattr(c: &mut Ctx<'_>) -> SysResult {
    if !active() {
        return c.host();
    }
    let (follow, changes) = xattr_kind(c.nr);
    // The name, value and flags are checked before the path.
    probe(c, &[0])?;
    let path = path_arg(c.arg(0))?;
    let t = fds(c);
    let (o, guest) = match walk::lookup(t, AT_FDCWD, &path, follow)? {
        Found::Object { fd, mount, guest } => (
            Object {
                fd: fd.0,
                _hold: Some(fd),
                ro: readonly(mount),
                mount: Some(mount),
            },
            Some(guest),
        ),
        Found::ProgramFd(n) => (
            Object {
                fd: n,
                _hold: None,
                ro: fd_readonly(n),
                mount: None,
            },
            None,
        ),
    };
    if changes {
        o.check_writable()?;
    }
    if let Some(r) = guest.and_then(|g| xattr_in_dir(c, t, &g)) {
        return r;
    }
    if !follow && o.stat()?.st_mode & S_IFMT == S_IFLNK {
        return match c.nr {
            nr::LLISTXATTR => Ok(0),
            nr::LSETXATTR => Err(Errno::EPERM),
            _ => Err(Errno::ENODATA),
        };
    }
    let follow_nr = match c.nr {
        nr::LGETXATTR => nr::GETXATTR,
        nr::LLISTXATTR => nr::LISTXATTR,
        nr::LSETXATTR => nr::SETXATTR,
        nr::LREMOVEXATTR => nr::REMOVEXATTR,
        n => n,
    };
    host_call_with(follow_nr, c.args, &[(0, &o.proc_path())])
}

/// The program's xattr call `c.nr` as its `*xattrat` form on the object at
/// canonical guest path `guest`: its name in its directory, not followed.
/// None when that cannot be done (a mount's root, a host without the
/// calls): the caller goes through /proc.
fn xattr_in_dir(c: &Ctx<'_>, t: &FdTable, guest: &[u8]) -> Option<SysResult> {
    if crate::kernel::fs::mount::is_mount_point(guest) {
        return None;
    }
    let cut = guest.iter().rposition(|&b| b == b'/')?;
    let (parent, name) = (&guest[..cut.max(1)], &guest[cut + 1..]);
    let dir = match walk::lookup_dir(t, AT_FDCWD, parent) {
        Ok(Found::Object { fd, .. }) => fd,
        Ok(Found::ProgramFd(_)) => return None,
        Err(e) => return Some(Err(e)),
    };
    let mut name_c = name.to_vec();
    name_c.push(0);
    let nofollow = host::AT_SYMLINK_NOFOLLOW as usize;
    // struct xattr_args { u64 value; u32 size; u32 flags; }
    let args = |value: usize, size: usize, flags: usize| {
        let mut a = [0u8; 16];
        a[..8].copy_from_slice(&(value as u64).to_ne_bytes());
        a[8..12].copy_from_slice(&(size.min(65536) as u32).to_ne_bytes());
        a[12..].copy_from_slice(&(flags as u32).to_ne_bytes());
        a
    };
    let d = dir.0 as usize;
    let r = match c.nr {
        nr::GETXATTR | nr::LGETXATTR => {
            let a = args(c.arg(2), c.arg(3), 0);
            host_call_with(
                nr::GETXATTRAT,
                [d, 0, nofollow, c.arg(1), 0, a.len()],
                &[(1, &name_c), (4, &a)],
            )
        }
        nr::SETXATTR | nr::LSETXATTR => {
            let a = args(c.arg(2), c.arg(3), c.arg(4));
            host_call_with(
                nr::SETXATTRAT,
                [d, 0, nofollow, c.arg(1), 0, a.len()],
                &[(1, &name_c), (4, &a)],
            )
        }
        nr::LISTXATTR | nr::LLISTXATTR => host_call_with(
            nr::LISTXATTRAT,
            [d, 0, nofollow, c.arg(1), c.arg(2), 0],
            &[(1, &name_c)],
        ),
        _ => host_call_with(
            nr::REMOVEXATTRAT,
            [d, 0, nofollow, c.arg(1), 0, 0],
            &[(1, &name_c)],
        ),
    };
    (r != Err(Errno::ENOSYS)).then_some(r)
}

/// Implements getxattrat(2), setxattrat, listxattrat and removexattrat
/// (Linux 6.13): on the object through /proc, as [`xattr`].
pub fn xattrat(c: &mut Ctx<'_>) -> SysResult {
    if !active() {
        return c.host();
    }
    let (dirfd, path, at_flags) = (c.arg(0) as i32, c.arg(1), c.arg(2) as u32 as i32);
    let follow = at_flags & host::AT_SYMLINK_NOFOLLOW == 0;
    if path == 0 {
        return c.host();
    }
    // Linux checks the size of the arguments' structure and the flags
    // before the path.
    let usize_arg = c.arg(if matches!(c.nr, nr::GETXATTRAT | nr::SETXATTRAT) {
        5
    } else {
        0
    });
    if matches!(c.nr, nr::GETXATTRAT | nr::SETXATTRAT) {
        if usize_arg > 4096 {
            return Err(Errno::E2BIG);
        }
        if usize_arg < 16 {
            return Err(Errno::EINVAL);
        }
        // copy_struct_from_user: readable, and zero past what Linux knows.
        let mut args = alloc::vec![0u8; usize_arg];
        user::copy_in(&mut args, c.arg(4))?;
        if args[16..].iter().any(|&b| b != 0) {
            return Err(Errno::E2BIG);
        }
    }
    if at_flags & !(host::AT_SYMLINK_NOFOLLOW | host::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    if at_flags & host::AT_EMPTY_PATH == 0 {
        // The flags, name and value are checked before the path.
        probe(c, &[1])?;
    }
    let Some(o) = object_at(c, dirfd, path, at_flags, follow)? else {
        if matches!(c.nr, nr::SETXATTRAT | nr::REMOVEXATTRAT) && fd_readonly(dirfd) {
            return Err(Errno::EROFS);
        }
        return c.host();
    };
    if matches!(c.nr, nr::SETXATTRAT | nr::REMOVEXATTRAT) {
        o.check_writable()?;
    }
    let mut args = c.args;
    args[0] = AT_FDCWD as isize as usize;
    args[2] = (at_flags & !(host::AT_SYMLINK_NOFOLLOW | host::AT_EMPTY_PATH)) as usize;
    host_call_with(c.nr, args, &[(1, &o.proc_path())])
}

/// Implements inotify_add_watch(2): the watch is put on the object found.
#[syscall]
pub fn inotify_add_watch(c: &mut Ctx<'_>, fd: i32, pathname: usize, mask: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    const IN_DONT_FOLLOW: u32 = 0x0200_0000;
    // The descriptor and the mask are checked before the path.
    probe(c, &[1])?;
    let o = object(
        c,
        AT_FDCWD,
        &path_arg(pathname)?,
        mask & IN_DONT_FOLLOW == 0,
    )?;
    host_call_with(
        nr::INOTIFY_ADD_WATCH,
        [fd as usize, 0, mask as usize, 0, 0, 0],
        &[(1, &o.proc_path())],
    )
}

// ---------------------------------------------------------------- directories

/// Implements chdir(2).
#[syscall]
pub fn chdir(c: &mut Ctx<'_>, path: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    let o = object(c, AT_FDCWD, &path_arg(path)?, true)?;
    if o.stat()?.st_mode & S_IFMT != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    let r = host_call(nr::FCHDIR, [o.fd as usize, 0, 0, 0, 0, 0]);
    dcache::forget_cwd();
    r
}

/// Implements fchdir(2): with mounts, not to the runtime's own descriptors
/// (EBADF), and the cached working directory is forgotten.
#[syscall]
pub fn fchdir(c: &mut Ctx<'_>, fd: i32) -> SysResult {
    if !active() {
        return c.host();
    }
    if fds(c).is_hidden(fd) {
        return Err(Errno::EBADF);
    }
    let r = c.host();
    dcache::forget_cwd();
    r
}

/// Implements getcwd(2): with mounts, the guest path of the working
/// directory (ENOENT if no mount shows it).
#[syscall]
pub fn getcwd(c: &mut Ctx<'_>, buf: usize, size: usize) -> SysResult {
    if !active() {
        return c.host();
    }
    let mut cwd = walk::cwd_guest()?;
    cwd.push(0);
    if cwd.len() > size {
        return Err(Errno::ERANGE);
    }
    user::copy_out(buf, &cwd)?;
    Ok(cwd.len())
}

/// Calls that would change the mount tree, or reach files around it
/// (chroot, pivot_root, mount, umount2, the new mount API,
/// open_by_handle_at, fanotify_mark, acct, quotactl): with mounts, EPERM
/// (name_to_handle_at: EOPNOTSUPP, as for a file system without handles).
/// Without, the host's.
pub fn mount_tree(c: &mut Ctx<'_>) -> SysResult {
    if !active() {
        return c.host();
    }
    if c.nr == nr::NAME_TO_HANDLE_AT {
        // Its flags are checked, and its path looked up, before the file
        // system says it has no handles. The flags as
        // do_sys_name_to_handle_at checks them, first.
        let flags = c.arg(4) as u32 as i32;
        const AT_HANDLE_MNT_ID_UNIQUE: i32 = 0x1;
        const AT_HANDLE_CONNECTABLE: i32 = 0x2;
        const AT_HANDLE_FID: i32 = 0x200;
        let known = host::AT_SYMLINK_FOLLOW
            | host::AT_EMPTY_PATH
            | AT_HANDLE_FID
            | AT_HANDLE_MNT_ID_UNIQUE
            | AT_HANDLE_CONNECTABLE;
        if flags & !known != 0
            || flags & AT_HANDLE_CONNECTABLE != 0
                && flags & (AT_HANDLE_FID | host::AT_EMPTY_PATH) != 0
        {
            return Err(Errno::EINVAL);
        }
        if flags & host::AT_EMPTY_PATH == 0 {
            probe(c, &[1])?;
        }
        let follow = flags & host::AT_SYMLINK_FOLLOW != 0;
        object_at(c, c.arg(0) as i32, c.arg(1), flags, follow)?;
        // Then the handle's header: readable, and a size Linux takes.
        const MAX_HANDLE_SZ: u32 = 128;
        let mut head = [0u8; 8];
        user::copy_in(&mut head, c.arg(2))?;
        if u32::from_ne_bytes(head[..4].try_into().unwrap()) > MAX_HANDLE_SZ {
            return Err(Errno::EINVAL);
        }
        return Err(Errno::EOPNOTSUPP);
    }
    Err(Errno::EPERM)
}

// ---------------------------------------------------------------- descriptors

/// Implements close(2): a descriptor of the runtime's own (a mount's
/// directory) is not the program's: EBADF. Others are the host's (a
/// patched site sends a passed-through descriptor to the host directly).
#[syscall]
pub fn close(c: &mut Ctx<'_>, fd: i32) -> SysResult {
    let t = fds(c);
    if t.is_hidden(fd) {
        return Err(Errno::EBADF);
    }
    // A write-back file's buffer is written out first; an error of that
    // (or of an earlier flush) is close's, as on a network file system.
    let lost = t.file(fd).and_then(|f| {
        f.flush(fd);
        f.take_error()
    });
    let r = c.host();
    if r.is_ok() {
        t.forget_closed(fd as u32, fd as u32);
    }
    match lost {
        Some(e) if r.is_ok() => Err(e),
        _ => r,
    }
}

/// Implements close_range(2): the runtime's own descriptors in the range
/// stay open (the calls are made for the ranges between them).
#[syscall]
pub fn close_range(c: &mut Ctx<'_>, first: u32, last: u32, flags: u32) -> SysResult {
    let t = fds(c);
    // Noted /proc descriptor directories in the range stop being noted
    // (unless the call only marks them close-on-exec). A loop over the
    // notes, not over the range: `close_range(3, ~0U, 0)`, the usual "close
    // everything" (Python's subprocess, systemd), spans 2^32 numbers.
    const CLOSE_RANGE_CLOEXEC: u32 = 4;
    if flags & CLOSE_RANGE_CLOEXEC == 0 && first <= last {
        t.flush_range(first, last);
        t.forget_closed(first, last);
    }
    let mut hidden: Vec<u32> = t
        .roots
        .iter()
        .map(|r| r.load(core::sync::atomic::Ordering::Relaxed))
        .filter(|&fd| fd >= 0 && (fd as u32) >= first && (fd as u32) <= last)
        .map(|fd| fd as u32)
        .collect();
    if hidden.is_empty() || first > last {
        return c.host();
    }
    hidden.sort_unstable();
    let mut from = first;
    for h in hidden {
        if h > from {
            host_call(
                nr::CLOSE_RANGE,
                [from as usize, (h - 1) as usize, flags as usize, 0, 0, 0],
            )?;
        }
        from = h + 1;
    }
    if from <= last && from != 0 {
        host_call(
            nr::CLOSE_RANGE,
            [from as usize, last as usize, flags as usize, 0, 0, 0],
        )?;
    }
    Ok(0)
}

/// Implements dup2(2): a runtime descriptor at `newfd` moves out of the way
/// first; one at `oldfd` is not the program's (EBADF).
#[syscall]
pub fn dup2(c: &mut Ctx<'_>, oldfd: i32, newfd: i32) -> SysResult {
    dup_to(c, oldfd, newfd)
}

/// Implements dup3(2): as dup2.
#[syscall]
pub fn dup3(c: &mut Ctx<'_>, oldfd: i32, newfd: i32) -> SysResult {
    dup_to(c, oldfd, newfd)
}

/// Implements dup(2): the runtime's descriptors are not the program's
/// (EBADF); a copy of a /proc directory whose listings the library OS
/// filters is filtered too.
#[syscall]
pub fn dup(c: &mut Ctx<'_>, oldfd: i32) -> SysResult {
    let t = fds(c);
    if t.is_hidden(oldfd) {
        return Err(Errno::EBADF);
    }
    let r = c.host()?;
    t.copy_proc_note(oldfd, r as i32);
    Ok(r)
}

/// Implements fcntl(2): as dup for `F_DUPFD` and `F_DUPFD_CLOEXEC`; every
/// other command on the runtime's descriptors is EBADF.
#[syscall]
pub fn fcntl(c: &mut Ctx<'_>, fd: i32, cmd: i32, arg: usize) -> SysResult {
    const F_DUPFD: i32 = 0;
    const F_DUPFD_CLOEXEC: i32 = 1030;
    let _ = arg;
    let t = fds(c);
    if t.is_hidden(fd) {
        return Err(Errno::EBADF);
    }
    // (F_SETLKW, F_OFD_SETLKW wait: in the interruptible window.)
    let r = c.host_blocking()?;
    if cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC {
        t.copy_proc_note(fd, r as i32);
    }
    Ok(r)
}

fn dup_to(c: &Ctx<'_>, oldfd: i32, newfd: i32) -> SysResult {
    let t = fds(c);
    if t.is_hidden(oldfd) {
        return Err(Errno::EBADF);
    }
    if t.is_hidden(newfd) {
        // Only if oldfd is the program's: otherwise the call fails and
        // nothing moves.
        host::fcntl(oldfd, 1 /* F_GETFD */, 0).map_err(|_| Errno::EBADF)?;
        mount::relocate(t, newfd)?;
    }
    if oldfd != newfd {
        // (Replaced: its buffer goes to the file it was for.)
        t.flush_fd(newfd);
    }
    let r = c.host();
    if r.is_ok() && oldfd != newfd {
        t.forget_closed(newfd as u32, newfd as u32);
        t.copy_proc_note(oldfd, newfd);
    }
    r
}

/// Implements getdents64(2): a listing of /proc's descriptor directory of
/// this process (opened under mounts) leaves out the runtime's own
/// descriptors; every other directory is the host's.
#[syscall]
pub fn getdents64(c: &mut Ctx<'_>, fd: i32, dirp: usize, count: u32) -> SysResult {
    let t = fds(c);
    let root = t.is_proc_root(fd);
    if !root && !t.is_proc_fd_dir(fd) {
        return c.host();
    }
    let count = (count as usize).min(1 << 20);
    loop {
        let n = host_call(nr::GETDENTS64, [fd as usize, dirp, count, 0, 0, 0])?;
        if n == 0 {
            return Ok(0);
        }
        let mut buf = alloc::vec![0u8; n];
        user::copy_in(&mut buf, dirp)?;
        let kept = if root {
            // /proc: the processes of the tree only.
            drop_entries(&mut buf, |name| {
                host::parse_fd_name(name)
                    .is_some_and(|pid| pid > 0 && !crate::kernel::process::in_tree(pid as u32))
            })
        } else {
            drop_entries(&mut buf, |name| {
                host::parse_fd_name(name).is_some_and(|fd| t.is_hidden(fd))
            })
        };
        if kept > 0 {
            user::copy_out(dirp, &buf[..kept])?;
            return Ok(kept);
        }
        // Only runtime descriptors in this batch: read on, as an empty
        // batch would mean the end.
    }
}

/// What kind of /proc directory an open made.
enum ProcDir {
    No,
    /// This process's descriptor directory.
    Fds,
    /// /proc itself.
    Root,
}

/// Removes from a getdents64 buffer the entries whose name `drop` accepts,
/// moving the others up; returns the length left.
fn drop_entries(buf: &mut [u8], drop: impl Fn(&[u8]) -> bool) -> usize {
    let mut read = 0;
    let mut write = 0;
    while let Some((reclen, name)) = host::dirent_at(buf, read) {
        let dropped = drop(name);
        if !dropped {
            buf.copy_within(read..read + reclen, write);
            write += reclen;
        }
        read += reclen;
    }
    write
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_dirents() {
        let mut buf = Vec::new();
        for name in ["0", "1", "984", "3"] {
            let reclen = (19 + name.len() + 1 + 7) & !7;
            let mut e = alloc::vec![0u8; reclen];
            e[16..18].copy_from_slice(&(reclen as u16).to_ne_bytes());
            e[19..19 + name.len()].copy_from_slice(name.as_bytes());
            buf.extend_from_slice(&e);
        }
        let n = drop_entries(&mut buf, |n| n == b"984");
        let mut names = Vec::new();
        let mut i = 0;
        while i < n {
            let reclen = u16::from_ne_bytes([buf[i + 16], buf[i + 17]]) as usize;
            let name = &buf[i + 19..i + reclen];
            names.push(name[..name.iter().position(|&b| b == 0).unwrap()].to_vec());
            i += reclen;
        }
        assert_eq!(names, [b"0".to_vec(), b"1".to_vec(), b"3".to_vec()]);
        assert_eq!(host::parse_fd_name(b"984"), Some(984));
        assert_eq!(host::parse_fd_name(b"x"), None);
        assert_eq!(host::parse_fd_name(b"99999999999"), None);
    }

    #[test]
    fn file_system_objects() {
        assert!(fs_object(S_IFREG | 0o644));
        assert!(fs_object(S_IFDIR));
        assert!(fs_object(S_IFLNK));
        assert!(!fs_object(0o020000)); // character device
        assert!(!fs_object(0o010000)); // FIFO
    }
}
