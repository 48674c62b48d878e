//! Path resolution through the mount table, when the manifest mounts
//! directories (`mount::active`).
//!
//! A guest path is resolved from `/`, the working directory or a directory
//! descriptor, one mount at a time; the host only ever resolves a path
//! inside one mount's directory, with `openat2(RESOLVE_IN_ROOT |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` from the descriptor of that
//! directory. So `..`, absolute symlinks and /proc's magic links never lead
//! above a mount, and a symlink that leads into another mount is followed
//! into it, as in a real mount tree:
//!
//! - **Fast path**: a path without `..` is mapped lexically to the deepest
//!   mount that shows it and opened in one host call. `RESOLVE_NO_SYMLINKS`
//!   makes the host refuse (ELOOP) if any component is a symlink, since the
//!   lexical mapping would then be wrong.
//! - **Walk**: otherwise, component by component, keeping the canonical
//!   guest path of where it is (no symlinks in it, so `..` is its parent):
//!   each component is opened `O_PATH|O_NOFOLLOW` from its mount's root; a
//!   symlink's target is spliced into the rest of the path (absolute: from
//!   `/`), at most 40 times (ELOOP), as Linux does.
//!
//! /proc's magic links (`/proc/PID/{fd/N,cwd,root,exe}`, reached by a
//! mount of the host's /proc) are never followed by the host: `fd/N` of the
//! calling process names the program's own descriptor (`Found::ProgramFd`),
//! `cwd`, `root` and `exe` the guest's working directory, `/` and program.
#![deny(unsafe_code)]

use super::mount::{self, covering, is_mount_point, relative, root_fd, table};
use super::{join, pop, FdTable};
use crate::host;
use crate::host::errno::Errno;
use crate::host::{OpenHow, Stat};
use alloc::vec::Vec;

/// Linux's limit on symlinks followed in one resolution.
pub(super) const MAX_LINKS: u32 = 40;
/// PATH_MAX.
pub(super) const PATH_MAX: usize = 4096;

pub(super) const S_IFMT: u32 = 0o170000;
pub(super) const S_IFDIR: u32 = 0o040000;
pub(super) const S_IFREG: u32 = 0o100000;
pub(super) const S_IFLNK: u32 = 0o120000;

/// openat2 resolve flags a program may give (RESOLVE_CACHED is answered
/// EAGAIN: the library OS has no cache the host could answer from).
pub const RESOLVE_CACHED: u64 = 0x20;
const RESOLVE_KNOWN: u64 = host::RESOLVE_NO_XDEV
    | host::RESOLVE_NO_MAGICLINKS
    | host::RESOLVE_NO_SYMLINKS
    | host::RESOLVE_BENEATH
    | host::RESOLVE_IN_ROOT
    | RESOLVE_CACHED;

/// The resolution flags of every host lookup the library OS makes from a
/// mount's directory: no symlink and no /proc magic link followed, and, for
/// a path with a `..` in it, nothing above the directory.
const CONFINED: u64 =
    host::RESOLVE_IN_ROOT | host::RESOLVE_NO_SYMLINKS | host::RESOLVE_NO_MAGICLINKS;

/// [`CONFINED`] without `RESOLVE_IN_ROOT`, for a path without `..`: with no
/// symlink followed, such a path cannot leave the directory it starts
/// from, and Linux's scoped lookups (RESOLVE_IN_ROOT, RESOLVE_BENEATH) cost
/// about 10% more per open (they take references on the way and check the
/// result is under the root).
const UNSCOPED: u64 = host::RESOLVE_NO_SYMLINKS | host::RESOLVE_NO_MAGICLINKS;

/// The resolution flags of a host lookup of `rel` (NUL-terminated or not)
/// from a mount's directory.
pub fn confined_for(rel: &[u8]) -> u64 {
    if has_dotdot(rel) {
        CONFINED
    } else {
        UNSCOPED
    }
}

/// As [`confined_for`], for a lookup from a directory the program named
/// (RESOLVE_BENEATH for a path with `..`).
fn beneath_for(rel: &[u8]) -> u64 {
    if has_dotdot(rel) {
        BENEATH
    } else {
        UNSCOPED
    }
}

/// Has `rel` (its NUL, if any, ignored) a `..` component?
fn has_dotdot(rel: &[u8]) -> bool {
    let rel = rel.strip_suffix(b"\0").unwrap_or(rel);
    rel.split(|&c| c == b'/').any(|c| c == b"..")
}

/// A descriptor the runtime opened in the program's table for the length
/// of one call (close-on-exec); closed when dropped.
pub struct HostFd(pub i32);

impl Drop for HostFd {
    fn drop(&mut self) {
        let _ = host::close(self.0);
    }
}

/// What a path names.
pub enum Found {
    /// The object, as an `O_PATH` descriptor, the mount that shows it, and
    /// its canonical guest path.
    Object {
        fd: HostFd,
        mount: usize,
        guest: Vec<u8>,
    },
    /// The program's own descriptor N, named through /proc/self/fd/N (so
    /// also /dev/fd/N and /dev/stdin when /dev shows the host's links).
    ProgramFd(i32),
}

/// Where a new name goes (or an existing name is removed or renamed):
/// the directory, and the last component as the program wrote it.
pub struct Entry {
    /// `O_PATH` descriptor of the directory.
    pub dir: HostFd,
    /// The mount that shows the directory.
    pub mount: usize,
    /// The last component, NUL-terminated, with a `/` after it if the path
    /// ended with one (the host then applies Linux's rules for it).
    pub name: Vec<u8>,
    /// The canonical guest path of the name (None for `.` and `..`).
    pub guest: Option<Vec<u8>>,
}

impl Entry {
    /// Is the name a mount point (which cannot be removed, renamed or
    /// made)?
    pub fn is_mount_point(&self) -> bool {
        self.guest.as_deref().is_some_and(is_mount_point)
    }
}

fn cstr(v: &[u8]) -> Result<&core::ffi::CStr, Errno> {
    core::ffi::CStr::from_bytes_with_nul(v).map_err(|_| Errno::EINVAL)
}

fn with_nul(v: &[u8]) -> Vec<u8> {
    let mut w = Vec::with_capacity(v.len() + 1);
    w.extend_from_slice(v);
    w.push(0);
    w
}

fn is_dir(st: &Stat) -> bool {
    st.st_mode & S_IFMT == S_IFDIR
}

/// The guest's working directory (the host's, mapped back); ENOENT if no
/// mount shows it (it was removed, or is not the guest's).
pub fn cwd_guest() -> Result<Vec<u8>, Errno> {
    if let Some(cwd) = super::dcache::cwd() {
        return Ok(cwd);
    }
    let mut buf = alloc::vec![0u8; PATH_MAX];
    let n = host::getcwd(&mut buf)?;
    buf.truncate(n.saturating_sub(1));
    let guest = if buf.starts_with(b"(unreachable)/") {
        // In a tmpfs or an overlay, which the host's tree does not reach
        // (or a directory outside the tree: ENOENT).
        let i = mount::detached_holding(host::AT_FDCWD, c".", 0).ok_or(Errno::ENOENT)?;
        mount::detached_to_guest(i, &buf)
    } else if buf.first() != Some(&b'/') {
        return Err(Errno::ENOENT);
    } else {
        mount::to_guest(&buf).ok_or(Errno::ENOENT)?
    };
    super::dcache::set_cwd(&guest);
    Ok(guest)
}

/// `path` (from `dirfd`) resolved through the directory cache of exclusive
/// mounts (`dcache`); None when the cache does not answer (no exclusive
/// mount, or the path leaves them): resolve it the usual way.
pub fn cached(
    fds: &FdTable,
    dirfd: i32,
    path: &[u8],
    follow: bool,
) -> Option<Result<super::dcache::Resolved, Errno>> {
    from_start(fds, dirfd, path, |start| {
        super::dcache::resolve(fds, start, path, follow)
    })
}

/// As [`cached`], for the status alone (handed to `sink`): Ok(true) if the
/// object exists, Ok(false) if the last component does not.
pub fn cached_stat(
    fds: &FdTable,
    dirfd: i32,
    path: &[u8],
    follow: bool,
    sink: &mut dyn FnMut(&crate::host::Statx),
) -> Option<Result<bool, Errno>> {
    from_start(fds, dirfd, path, |start| {
        super::dcache::stat(fds, start, path, follow, sink)
    })
}

/// Runs `lookup` (a directory-cache lookup) with the canonical directory
/// `path` starts from: `/` for an absolute path, the working directory
/// (the cached one lent, not copied) or `dirfd`'s. None when the cache is
/// off or `path` is empty.
fn from_start<T>(
    fds: &FdTable,
    dirfd: i32,
    path: &[u8],
    lookup: impl FnOnce(&[u8]) -> Option<Result<T, Errno>>,
) -> Option<Result<T, Errno>> {
    use super::dcache;
    if path.is_empty() || !dcache::enabled() {
        return None;
    }
    if path[0] == b'/' {
        return lookup(b"/");
    }
    let mut lookup = Some(lookup);
    if dirfd == host::AT_FDCWD as i32 {
        if let Some(r) = dcache::with_cwd(|cwd| (lookup.take().unwrap())(cwd)) {
            return r;
        }
    }
    let base = match start(fds, dirfd, path) {
        Ok(b) => b,
        Err(e) => return Some(Err(e)),
    };
    (lookup.take().unwrap())(&base)
}

/// The host's name for descriptor `fd` of the calling thread's table.
pub fn fd_host_path(fd: i32) -> Result<Vec<u8>, Errno> {
    let link = with_nul(alloc::format!("/proc/thread-self/fd/{fd}").as_bytes());
    let mut buf = alloc::vec![0u8; PATH_MAX];
    let n = host::readlink(cstr(&link)?, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

/// The guest path of the program's descriptor `fd`, if it names a file
/// a mount shows (not a pipe or socket, not a deleted file).
pub fn fd_guest(fd: i32) -> Result<Vec<u8>, Errno> {
    let p = fd_host_path(fd).map_err(|_| Errno::EBADF)?;
    if p.first() != Some(&b'/') || p.ends_with(b" (deleted)") {
        return Err(Errno::ENOENT);
    }
    if let Some(i) = mount::detached_holding(fd as isize, c"", host::AT_EMPTY_PATH) {
        return Ok(mount::detached_to_guest(i, &p));
    }
    mount::to_guest(&p).ok_or(Errno::ENOENT)
}

/// What `readlink` of the program's `/proc/self/fd/N` gives: the host's
/// link of descriptor `fd` with its path made the guest's (a pipe's or a
/// socket's name, or a path no mount shows, as the host gives it; a
/// deleted file's with its ` (deleted)`).
pub fn fd_link_guest(fd: i32) -> Result<Vec<u8>, Errno> {
    const DELETED: &[u8] = b" (deleted)";
    let target = fd_host_path(fd)?;
    if target.first() != Some(&b'/') {
        return Ok(target);
    }
    let (path, deleted) = match target.strip_suffix(DELETED) {
        Some(p) => (p, true),
        None => (&target[..], false),
    };
    let mapped = match mount::detached_holding(fd as isize, c"", host::AT_EMPTY_PATH) {
        Some(i) => Some(mount::detached_to_guest(i, path)),
        None => mount::to_guest(path),
    };
    Ok(match mapped {
        Some(mut g) => {
            if deleted {
                g.extend_from_slice(DELETED);
            }
            g
        }
        None => target,
    })
}

/// Where a relative path starts: the working directory, or directory
/// descriptor `dirfd` (EBADF if the program has no such descriptor,
/// ENOTDIR if it is not a directory).
fn start(fds: &FdTable, dirfd: i32, path: &[u8]) -> Result<Vec<u8>, Errno> {
    if path.first() == Some(&b'/') {
        return Ok(b"/".to_vec());
    }
    if dirfd == host::AT_FDCWD as i32 {
        return cwd_guest();
    }
    if dirfd < 0 || fds.is_hidden(dirfd) {
        return Err(Errno::EBADF);
    }
    let st = host::fstat(dirfd).map_err(|_| Errno::EBADF)?;
    if !is_dir(&st) {
        return Err(Errno::ENOTDIR);
    }
    fd_guest(dirfd)
}

/// Opens canonical guest path `p` `O_PATH|O_NOFOLLOW` in the mount that
/// shows it; returns the descriptor, its status and the mount.
fn open_canonical(fds: &FdTable, p: &[u8]) -> Result<(HostFd, Stat, usize), Errno> {
    let i = covering(p);
    let rel = relative(i, p);
    if hides_process(i, &rel) {
        return Err(Errno::ENOENT);
    }
    let how = OpenHow {
        flags: (host::O_PATH | host::O_NOFOLLOW | host::O_CLOEXEC) as u64,
        mode: 0,
        resolve: confined_for(&rel),
    };
    let fd = HostFd(host::openat2(root_fd(fds, i) as isize, cstr(&rel)?, &how)? as i32);
    let st = host::fstat(fd.0)?;
    Ok((fd, st, i))
}

/// A /proc magic link (of the host's /proc, seen through a mount).
enum Magic {
    /// `fd/N` of the calling process.
    Fd(i32),
    Cwd,
    Root,
    Exe,
    /// Another process's link: followed by its target's guest path.
    Other,
}

/// The host path of `rel` (relative to mount `i`'s root, NUL-terminated,
/// perhaps with a trailing `/`).
fn host_path(i: usize, rel: &[u8]) -> Vec<u8> {
    let rel = &rel[..rel.len().saturating_sub(1)];
    let rel = rel.strip_suffix(b"/").unwrap_or(rel);
    let dir = &table()[i].host;
    if rel == b"." {
        dir.clone()
    } else {
        join(dir, rel)
    }
}

/// Is canonical guest path `p`, shown by mount `i`, one of the host's
/// /proc magic links?
fn magic(i: usize, p: &[u8]) -> Option<Magic> {
    if table()[i].detached() {
        // A tmpfs or an overlay has no /proc of the host in it.
        return None;
    }
    let host_path = host_path(i, &relative(i, p));
    let rest = host_path.strip_prefix(b"/proc/")?;
    let mut parts = rest.split(|&c| c == b'/');
    let pid = parts.next()?;
    let mut kind = parts.next()?;
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    if !digits(pid) {
        return None;
    }
    let own = parse(pid) == Some(host::getpid() as i64);
    if kind == b"task" {
        // A thread of ours shares our table unless it was made without
        // CLONE_FILES (rare): treated as its process.
        let tid = parts.next()?;
        if !digits(tid) {
            return None;
        }
        kind = parts.next()?;
    }
    let tail = parts.next();
    let r = match (kind, tail) {
        (b"fd", Some(n)) if digits(n) && parts.next().is_none() => {
            if own {
                Magic::Fd(parse(n)? as i32)
            } else {
                Magic::Other
            }
        }
        (b"cwd", None) if own => Magic::Cwd,
        (b"root", None) if own => Magic::Root,
        (b"exe", None) if own => Magic::Exe,
        (b"cwd" | b"root" | b"exe", None) => Magic::Other,
        _ => return None,
    };
    Some(r)
}

/// The number `s` spells (its callers check that it is all digits).
fn parse(s: &[u8]) -> Option<i64> {
    if s.len() > 10 {
        return None;
    }
    let mut n: i64 = 0;
    for d in s {
        n = n * 10 + (d - b'0') as i64;
    }
    Some(n)
}

/// The outcome of a walk.
enum Walked {
    /// The object exists: its descriptor, status, mount and canonical
    /// guest path.
    Exists(HostFd, Stat, usize, Vec<u8>),
    /// All but the last component exist; the last does not (for creation).
    /// `dir`: a `/` followed the name (in the path or a symlink's target).
    Missing {
        parent: Vec<u8>,
        name: Vec<u8>,
        dir: bool,
    },
    /// The program's descriptor N (/proc/self/fd/N).
    ProgramFd(i32),
}

struct Walker<'a> {
    fds: &'a FdTable,
    links: u32,
    /// The program's openat2 resolve flags (0 for every other call).
    resolve: u64,
    /// Where RESOLVE_BENEATH/RESOLVE_IN_ROOT confine the walk.
    scope: Vec<u8>,
}

fn components_rev(path: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = path
        .split(|&c| c == b'/')
        .filter(|c| !c.is_empty())
        .map(|c| c.to_vec())
        .collect();
    v.reverse();
    v
}

impl Walker<'_> {
    fn beneath(&self) -> bool {
        self.resolve & host::RESOLVE_BENEATH != 0
    }
    fn in_root(&self) -> bool {
        self.resolve & host::RESOLVE_IN_ROOT != 0
    }
    /// Where an absolute path or symlink starts.
    fn root(&self) -> Result<Vec<u8>, Errno> {
        if self.beneath() {
            return Err(Errno::EXDEV);
        }
        Ok(if self.in_root() {
            self.scope.clone()
        } else {
            b"/".to_vec()
        })
    }

    /// Walks `path` from canonical `cur`; `follow`: follow a symlink in
    /// the last component.
    fn walk(&mut self, mut cur: Vec<u8>, path: &[u8], follow: bool) -> Result<Walked, Errno> {
        let mut trailing = path.ends_with(b"/") && path.iter().any(|&c| c != b'/');
        let mut todo = components_rev(path);
        // The object `cur` names, when the last step opened it.
        let mut last_open: Option<(HostFd, Stat, usize)> = None;
        while let Some(c) = todo.pop() {
            let last = todo.is_empty();
            last_open = None;
            if c == b"." {
                continue;
            }
            if c == b".." {
                if cur == self.scope && (self.beneath() || self.in_root()) {
                    if self.beneath() {
                        return Err(Errno::EXDEV);
                    }
                    continue;
                }
                if self.resolve & host::RESOLVE_NO_XDEV != 0 && is_mount_point(&cur) {
                    return Err(Errno::EXDEV);
                }
                pop(&mut cur);
                continue;
            }
            let cand = join(&cur, &c);
            if cand.len() >= PATH_MAX {
                return Err(Errno::ENAMETOOLONG);
            }
            if self.resolve & host::RESOLVE_NO_XDEV != 0 && is_mount_point(&cand) {
                return Err(Errno::EXDEV);
            }
            let (fd, st, i) = match open_canonical(self.fds, &cand) {
                Err(Errno::ENOENT) if last => {
                    return Ok(Walked::Missing {
                        parent: cur,
                        name: c,
                        dir: trailing,
                    })
                }
                Err(e) => return Err(e),
                Ok(x) => x,
            };
            let is_link = st.st_mode & S_IFMT == S_IFLNK;
            if is_link && (!last || follow || trailing) {
                if let Some(mg) = magic(i, &cand) {
                    if self.resolve & (host::RESOLVE_NO_MAGICLINKS | host::RESOLVE_NO_SYMLINKS) != 0
                    {
                        return Err(Errno::ELOOP);
                    }
                    if self.beneath() {
                        return Err(Errno::EXDEV);
                    }
                    self.count_link()?;
                    let target = match mg {
                        Magic::Fd(n) if last => return Ok(Walked::ProgramFd(n)),
                        Magic::Fd(n) => fd_guest(n).map_err(|_| Errno::ENOTDIR)?,
                        Magic::Cwd => cwd_guest()?,
                        Magic::Root => b"/".to_vec(),
                        Magic::Exe => crate::kernel::process::exe_path().to_vec(),
                        Magic::Other => {
                            let mut buf = alloc::vec![0u8; PATH_MAX];
                            let n = host::readlinkat(fd.0 as isize, c"", &mut buf)?;
                            buf.truncate(n);
                            if buf.first() != Some(&b'/') {
                                return Err(Errno::ENOENT);
                            }
                            mount::to_guest(&buf).ok_or(Errno::ENOENT)?
                        }
                    };
                    cur = self.root()?;
                    todo.extend(components_rev(&target));
                    continue;
                }
                if self.resolve & host::RESOLVE_NO_SYMLINKS != 0 {
                    return Err(Errno::ELOOP);
                }
                self.count_link()?;
                let mut buf = alloc::vec![0u8; PATH_MAX];
                let n = host::readlinkat(fd.0 as isize, c"", &mut buf)?;
                buf.truncate(n);
                if buf.is_empty() {
                    return Err(Errno::ENOENT);
                }
                if buf[0] == b'/' {
                    cur = self.root()?;
                }
                // A `/` at the end of the target of the last component
                // wants a directory, as one at the end of the path does.
                if last && buf.ends_with(b"/") {
                    trailing = true;
                }
                todo.extend(components_rev(&buf));
                continue;
            }
            if !last && !is_dir(&st) {
                return Err(Errno::ENOTDIR);
            }
            cur = cand;
            last_open = Some((fd, st, i));
        }
        let (fd, st, i) = match last_open {
            Some(x) => x,
            None => open_canonical(self.fds, &cur)?,
        };
        if trailing && !is_dir(&st) {
            return Err(Errno::ENOTDIR);
        }
        Ok(Walked::Exists(fd, st, i, cur))
    }

    fn count_link(&mut self) -> Result<(), Errno> {
        self.links += 1;
        if self.links > MAX_LINKS {
            return Err(Errno::ELOOP);
        }
        Ok(())
    }
}

/// The lexical form of a path without `..`: the mount that shows it and
/// the path relative to that mount's root (NUL-terminated), or None when
/// only a walk can resolve it. The components after the mount point are
/// kept as written (`.` and a trailing `/` included), so the host applies
/// Linux's rules for them (`dir/.` with O_CREAT|O_EXCL is EEXIST, `dir/`
/// with O_CREAT is EISDIR).
fn lexical(base: &[u8], path: &[u8], base_relative: bool) -> Option<Lexical> {
    // (Sized up front: this runs on every path call under mounts, and
    // growing these was a tenth of the runtime's time in an open.)
    let mut raw: Vec<&[u8]> = Vec::with_capacity(path.len() / 2 + 1);
    for c in path.split(|&c| c == b'/') {
        match c {
            b"" => {}
            b".." => return None,
            c => raw.push(c),
        }
    }
    let mut full = Vec::with_capacity(base.len() + path.len() + 2);
    full.extend_from_slice(base);
    for c in raw.iter().filter(|c| **c != b".") {
        if full.last() != Some(&b'/') {
            full.push(b'/');
        }
        full.extend_from_slice(c);
    }
    let i = covering(&full);
    // Skip the components up to the mount point: as many non-`.` ones as
    // the mount point has beyond `base`.
    let m = &table()[i].guest;
    let depth = |p: &[u8]| p.split(|&c| c == b'/').filter(|c| !c.is_empty()).count();
    let mut skip = depth(m).saturating_sub(depth(base));
    let mut rest: &[&[u8]] = &raw;
    while skip > 0 {
        let Some((first, tail)) = rest.split_first() else {
            break;
        };
        if *first != b"." {
            skip -= 1;
        }
        rest = tail;
    }
    let crosses = depth(m) > depth(base);
    let inside = if crosses || base_relative {
        Vec::new()
    } else {
        // The base itself lies inside the mount: start from its path there.
        let mut r = relative(i, base);
        r.pop();
        if r == b"." {
            Vec::new()
        } else {
            r
        }
    };
    let mut rel = inside;
    rel.reserve(path.len() + 3);
    let rest: &[&[u8]] = if base_relative && !crosses {
        &raw
    } else {
        rest
    };
    for c in rest {
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(c);
    }
    if rel.is_empty() {
        rel.push(b'.');
    }
    if path.ends_with(b"/") && rel != b"." {
        rel.push(b'/');
    }
    rel.push(0);
    Some(Lexical {
        mount: i,
        rel,
        guest: full,
        from_base: base_relative && !crosses,
    })
}

/// A path mapped lexically (see [`lexical`]).
struct Lexical {
    /// The mount that shows it.
    mount: usize,
    /// The path relative to the mount's root, as written, NUL-terminated.
    rel: Vec<u8>,
    /// Its guest path with `.` components left out (canonical when no
    /// component is a symlink).
    guest: Vec<u8>,
    /// `rel` is relative to the starting directory (the caller's `dirfd`
    /// or working directory) rather than to the mount's root: a relative
    /// path that stays in the starting directory's mount. The host then
    /// resolves it from there (`RESOLVE_BENEATH`), checking permissions
    /// from there as natively.
    from_base: bool,
}

impl Lexical {
    /// The descriptor and resolve flags of the one host call: from `dirfd`
    /// (the program's, or AT_FDCWD) beneath it, or from the mount's root.
    fn anchor(&self, fds: &FdTable, dirfd: i32) -> (isize, u64) {
        if self.from_base {
            (dirfd as isize, beneath_for(&self.rel))
        } else {
            (root_fd(fds, self.mount) as isize, confined_for(&self.rel))
        }
    }
}

/// The resolution flags of a relative path's one host call from its
/// starting directory.
const BENEATH: u64 =
    host::RESOLVE_BENEATH | host::RESOLVE_NO_SYMLINKS | host::RESOLVE_NO_MAGICLINKS;

/// The mount and relative path of a one-call open of `path` from `dirfd`,
/// if a walk is not needed (see the module's fast path).
fn fast_target(fds: &FdTable, dirfd: i32, path: &[u8]) -> Result<Option<Lexical>, Errno> {
    if path.split(|&c| c == b'/').any(|c| c == b"..") {
        return Ok(None);
    }
    let relative = path.first() != Some(&b'/');
    // A relative path from the working directory: its last known name
    // picks the mount (no host call); the host resolves the path from the
    // directory itself.
    let known = (relative && dirfd == host::AT_FDCWD as i32)
        .then(|| super::dcache::with_lookup_cwd(|cwd| lexical(cwd, path, true)))
        .flatten();
    let l = match known {
        Some(l) => l,
        None => {
            let base = start(fds, dirfd, path)?;
            lexical(&base, path, relative)
        }
    };
    if l.as_ref()
        .is_some_and(|l| hides_process_guest(l.mount, &l.guest))
    {
        return Err(Errno::ENOENT);
    }
    Ok(l)
}

/// The object `path` (relative to `dirfd`) names, following a symlink in
/// its last component if `follow` (a trailing `/` always does).
pub fn lookup(fds: &FdTable, dirfd: i32, path: &[u8], follow: bool) -> Result<Found, Errno> {
    lookup_with(fds, dirfd, path, follow, 0)
}

/// As [`lookup`], for a directory (ENOTDIR otherwise).
pub fn lookup_dir(fds: &FdTable, dirfd: i32, path: &[u8]) -> Result<Found, Errno> {
    lookup_with(fds, dirfd, path, true, host::O_DIRECTORY)
}

fn lookup_with(
    fds: &FdTable,
    dirfd: i32,
    path: &[u8],
    follow: bool,
    flags: i32,
) -> Result<Found, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if let Some(l) = fast_target(fds, dirfd, path)? {
        match open_rel(l.anchor(fds, dirfd), &l.rel, follow, flags) {
            Ok(fd) => {
                return Ok(Found::Object {
                    fd,
                    mount: l.mount,
                    guest: l.guest,
                })
            }
            Err(Errno::ELOOP) => {}
            Err(e) => return Err(e),
        }
    }
    match walk_from(fds, dirfd, path, follow, 0)? {
        Walked::Exists(_, st, _, _) if flags & host::O_DIRECTORY != 0 && !is_dir(&st) => {
            Err(Errno::ENOTDIR)
        }
        Walked::Exists(fd, _, i, guest) => Ok(Found::Object {
            fd,
            mount: i,
            guest,
        }),
        Walked::Missing { .. } => Err(Errno::ENOENT),
        Walked::ProgramFd(n) => Ok(Found::ProgramFd(n)),
    }
}

/// Opens `rel` (NUL-terminated) `O_PATH` in mount `i`, in one host call
/// that refuses (ELOOP) any symlink on the way.
fn open_rel(
    (from, resolve): (isize, u64),
    rel: &[u8],
    follow: bool,
    flags: i32,
) -> Result<HostFd, Errno> {
    let how = OpenHow {
        flags: (host::O_PATH | host::O_CLOEXEC | flags | if follow { 0 } else { host::O_NOFOLLOW })
            as u64,
        mode: 0,
        resolve,
    };
    Ok(HostFd(host::openat2(from, cstr(rel)?, &how)? as i32))
}

/// The target of the symlink `path` names (not followed), as readlink(2)
/// gives it: /proc's magic links give guest paths (a descriptor's file,
/// the working directory, `/`, the program), or their own text for what is
/// not a file (`pipe:[...]`). EINVAL if it is not a symlink.
pub fn readlink(fds: &FdTable, dirfd: i32, path: &[u8]) -> Result<Vec<u8>, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    match cached(fds, dirfd, path, false) {
        Some(Ok(super::dcache::Resolved::Exists { link, .. })) => {
            // Magic links are never cached (/proc is another file system).
            return link.ok_or(Errno::EINVAL);
        }
        Some(Ok(super::dcache::Resolved::Missing { .. })) => return Err(Errno::ENOENT),
        Some(Err(e)) => return Err(e),
        None => {}
    }
    let mut found = None;
    if let Some(l) = fast_target(fds, dirfd, path)? {
        match open_rel(l.anchor(fds, dirfd), &l.rel, false, 0) {
            Ok(fd) => {
                let st = host::fstat(fd.0)?;
                found = Some((fd, st, l.mount, l.guest));
            }
            Err(Errno::ELOOP) => {}
            Err(e) => return Err(e),
        }
    }
    let (fd, st, i, guest) = match found {
        Some(f) => f,
        None => match walk_from(fds, dirfd, path, false, 0)? {
            Walked::Exists(fd, st, i, guest) => (fd, st, i, guest),
            Walked::Missing { .. } => return Err(Errno::ENOENT),
            Walked::ProgramFd(_) => return Err(Errno::EINVAL),
        },
    };
    if st.st_mode & S_IFMT != S_IFLNK {
        return Err(Errno::EINVAL);
    }
    let raw = || -> Result<Vec<u8>, Errno> {
        let mut buf = alloc::vec![0u8; PATH_MAX];
        let n = host::readlinkat(fd.0 as isize, c"", &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    };
    let mapped = |target: Vec<u8>| -> Vec<u8> {
        const DELETED: &[u8] = b" (deleted)";
        if target.first() != Some(&b'/') {
            return target;
        }
        let (path, deleted) = match target.strip_suffix(DELETED) {
            Some(p) => (p, true),
            None => (&target[..], false),
        };
        match mount::to_guest(path) {
            Some(mut g) => {
                if deleted {
                    g.extend_from_slice(DELETED);
                }
                g
            }
            None => target,
        }
    };
    Ok(match magic(i, &guest) {
        None => raw()?,
        Some(Magic::Fd(n)) => fd_link_guest(n)?,
        Some(Magic::Cwd) => cwd_guest()?,
        Some(Magic::Root) => b"/".to_vec(),
        Some(Magic::Exe) => crate::kernel::process::exe_path().to_vec(),
        Some(Magic::Other) => mapped(raw()?),
    })
}

/// Splits `path` into its directory part and last component (trailing
/// slashes removed, and reported); `/` and the empty path give `.`.
fn split_last(path: &[u8]) -> (&[u8], &[u8], bool) {
    let end = path.iter().rposition(|&c| c != b'/').map_or(0, |i| i + 1);
    let trailing = end < path.len() && end > 0;
    let p = &path[..end];
    match p.iter().rposition(|&c| c == b'/') {
        Some(i) => (&path[..i + 1], &p[i + 1..], trailing),
        None if end == 0 && !path.is_empty() => (b"/", b".", false),
        None => (b".", p, trailing),
    }
}

/// The directory and name where `path` (relative to `dirfd`) puts, or
/// finds, its last component (for mkdir, unlink, rename, link, symlink,
/// mknod); the directory must exist.
pub fn entry(fds: &FdTable, dirfd: i32, path: &[u8]) -> Result<Entry, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let (dir, name, trailing) = split_last(path);
    let (dfd, mount, dir_guest) = match lookup_dir(fds, dirfd, dir)? {
        Found::Object { fd, mount, guest } => (fd, mount, Some(guest)),
        Found::ProgramFd(n) => {
            let fd = reopen_program_fd(n, host::O_PATH | host::O_DIRECTORY)?;
            let g = fd_guest(fd.0)?;
            let m = covering(&g);
            (fd, m, Some(g))
        }
    };
    let guest = match name {
        b"." | b".." => None,
        n => dir_guest.map(|d| join(&d, n)),
    };
    let mut nm = name.to_vec();
    if trailing {
        nm.push(b'/');
    }
    nm.push(0);
    Ok(Entry {
        dir: dfd,
        mount,
        name: nm,
        guest,
    })
}

/// Opens the program's descriptor `n` again with `flags`, through the
/// host's /proc (as /proc/self/fd/N does natively).
pub fn reopen_program_fd(n: i32, flags: i32) -> Result<HostFd, Errno> {
    let link = with_nul(alloc::format!("/proc/thread-self/fd/{n}").as_bytes());
    Ok(HostFd(
        host::openat(host::AT_FDCWD, cstr(&link)?, flags | host::O_CLOEXEC, 0)? as i32,
    ))
}

/// The host path that names descriptor `fd` of the calling thread (the
/// magic link), NUL-terminated: for calls that take only a path.
pub fn proc_fd_path(fd: i32) -> Vec<u8> {
    with_nul(alloc::format!("/proc/thread-self/fd/{fd}").as_bytes())
}

/// How `open` resolves: the mount and relative path of a one-call open,
/// or a walk's outcome.
pub enum OpenPlan {
    /// Open `rel` from mount `mount`'s root in one host call (ELOOP from
    /// the host: fall back to [`open_plan_walk`]).
    Direct {
        mount: usize,
        rel: Vec<u8>,
        /// The descriptor and resolve flags of the open (see `Lexical`).
        from: isize,
        resolve: u64,
        /// The guest path (`.` left out).
        guest: Vec<u8>,
    },
    /// The object exists: open it (again) through its canonical path.
    Exists {
        mount: usize,
        rel: Vec<u8>,
        /// Its type and permissions (`st_mode`).
        mode: u32,
    },
    /// It does not exist; its directory does: create `rel` there.
    Create { mount: usize, rel: Vec<u8> },
    /// The program's own descriptor.
    ProgramFd(i32),
}

/// The plan of an open of `path` from `dirfd`: `Direct` when no walk is
/// needed and `direct_ok`, else a walk's.
pub fn open_plan(
    fds: &FdTable,
    dirfd: i32,
    path: &[u8],
    follow: bool,
    resolve: u64,
    direct_ok: bool,
) -> Result<OpenPlan, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if resolve & !RESOLVE_KNOWN != 0 {
        return Err(Errno::EINVAL);
    }
    if resolve & RESOLVE_CACHED != 0 {
        return Err(Errno::EAGAIN);
    }
    if resolve == 0 {
        match cached(fds, dirfd, path, follow) {
            Some(Ok(super::dcache::Resolved::Exists {
                guest, mount, stx, ..
            })) => {
                return Ok(OpenPlan::Exists {
                    mount,
                    rel: relative(mount, &guest),
                    mode: stx.mode(),
                });
            }
            Some(Ok(super::dcache::Resolved::Missing { parent, name, dir })) => {
                return Ok(create_plan(parent, name, dir));
            }
            Some(Err(e)) => return Err(e),
            None => {}
        }
    }
    if resolve == 0 && direct_ok {
        if let Some(l) = fast_target(fds, dirfd, path)? {
            let (from, resolve) = l.anchor(fds, dirfd);
            return Ok(OpenPlan::Direct {
                mount: l.mount,
                rel: l.rel,
                from,
                resolve,
                guest: l.guest,
            });
        }
    }
    open_plan_walk(fds, dirfd, path, follow, resolve)
}

/// [`open_plan`] by a walk.
pub fn open_plan_walk(
    fds: &FdTable,
    dirfd: i32,
    path: &[u8],
    follow: bool,
    resolve: u64,
) -> Result<OpenPlan, Errno> {
    match walk_from(fds, dirfd, path, follow, resolve)? {
        Walked::Exists(fd, st, i, guest) => {
            drop(fd);
            Ok(OpenPlan::Exists {
                mount: i,
                rel: relative(i, &guest),
                mode: st.st_mode,
            })
        }
        Walked::Missing { parent, name, dir } => Ok(create_plan(parent, name, dir)),
        Walked::ProgramFd(n) => Ok(OpenPlan::ProgramFd(n)),
    }
}

/// The plan of an open whose last component `name` does not exist in
/// directory `parent` (`dir`: a `/` followed the name).
fn create_plan(parent: Vec<u8>, name: Vec<u8>, dir: bool) -> OpenPlan {
    let g = join(&parent, &name);
    let i = covering(&g);
    let mut rel = relative(i, &g);
    if dir {
        rel.pop();
        rel.extend_from_slice(b"/\0");
    }
    OpenPlan::Create { mount: i, rel }
}

/// Walks `path` from `dirfd` with the program's openat2 resolve flags
/// (RESOLVE_IN_ROOT and RESOLVE_BENEATH confine it to `dirfd`).
fn walk_from(
    fds: &FdTable,
    dirfd: i32,
    path: &[u8],
    follow: bool,
    resolve: u64,
) -> Result<Walked, Errno> {
    let absolute = path.first() == Some(&b'/');
    let scoped = resolve & (host::RESOLVE_IN_ROOT | host::RESOLVE_BENEATH) != 0;
    if absolute && resolve & host::RESOLVE_BENEATH != 0 {
        return Err(Errno::EXDEV);
    }
    // Where the walk starts; under RESOLVE_IN_ROOT an absolute path starts
    // at dirfd too.
    let base = if scoped {
        start(fds, dirfd, b"")?
    } else {
        start(fds, dirfd, path)?
    };
    let scope = if scoped { base.clone() } else { b"/".to_vec() };
    let mut w = Walker {
        fds,
        links: 0,
        resolve,
        scope,
    };
    w.walk(base, path, follow)
}

/// Opens guest path `path` to execute it, as Linux's `open_exec`: a
/// regular file (else EACCES, before it is opened, so a FIFO cannot block)
/// with execute permission, opened for reading (close-on-exec, non-blocking).
/// Returns the descriptor and its status; an error says whether the file
/// could not be opened (false) or is not executable (true).
pub fn open_exec(path: &[u8]) -> Result<(i32, Stat), (Errno, bool)> {
    let fds = crate::kernel::thread::current().fd_table.get();
    let fd = match lookup(fds, host::AT_FDCWD as i32, path, true).map_err(|e| (e, false))? {
        Found::Object { fd, .. } => fd,
        Found::ProgramFd(n) => reopen_program_fd(n, host::O_PATH).map_err(|e| (e, false))?,
    };
    let st = host::fstat(fd.0).map_err(|e| (e, false))?;
    if st.st_mode & S_IFMT != 0o100000 {
        return Err((Errno::EACCES, true));
    }
    access_empty(fd.0, 1 /* X_OK */).map_err(|e| (e, true))?;
    let file = reopen_program_fd(fd.0, host::O_RDONLY | 0o4000 /* O_NONBLOCK */)
        .map_err(|e| (e, false))?;
    let st = host::fstat(file.0).map_err(|e| (e, false))?;
    let n = file.0;
    core::mem::forget(file);
    Ok((n, st))
}

/// faccessat2(fd, "", mode, AT_EMPTY_PATH): may the caller access the file
/// `fd` names?
fn access_empty(fd: i32, mode: i32) -> Result<(), Errno> {
    host::faccessat2(fd as isize, c"", mode, host::AT_EMPTY_PATH).map(|_| ())
}

/// Is `rel` (NUL-terminated or not, in mount `i`) under the host's /proc
/// (the cheap test: only the path)? Returns the rest after `/proc`.
fn host_proc_rest(i: usize, rel: &[u8]) -> Option<Vec<u8>> {
    if table()[i].detached() {
        return None;
    }
    let host = &table()[i].host;
    let under_proc = if host == b"/" {
        rel.starts_with(b"proc/") || rel.starts_with(b"proc\0") || rel == b"proc"
    } else {
        host.starts_with(b"/proc")
    };
    if !under_proc {
        return None;
    }
    let rel = rel.strip_suffix(b"\0").unwrap_or(rel);
    let mut with_nul = rel.to_vec();
    with_nul.push(0);
    let host_path = host_path(i, &with_nul);
    let rest = host_path.strip_prefix(b"/proc")?;
    (rest.is_empty() || rest[0] == b'/').then(|| rest.to_vec())
}

/// Does `rel` (in mount `i`) name, in the host's /proc, a process outside
/// the picoprocess tree (`/proc/PID` or below)? Those are not the
/// program's to see: ENOENT, as for a process that does not exist.
pub fn hides_process(i: usize, rel: &[u8]) -> bool {
    let Some(rest) = host_proc_rest(i, rel) else {
        return false;
    };
    let pid = rest
        .strip_prefix(b"/")
        .unwrap_or(&rest)
        .split(|&c| c == b'/')
        .next()
        .filter(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit))
        .and_then(parse);
    match pid {
        Some(p) if p > 0 && p <= u32::MAX as i64 => !crate::kernel::process::in_tree(p as u32),
        _ => false,
    }
}

/// Might guest path `guest`, shown by mount `i`, be in the host's /proc?
/// (The cheap test, without allocating: it runs on every lookup and open
/// under mounts.)
fn may_be_in_proc(i: usize, guest: &[u8]) -> bool {
    let m = &table()[i];
    !m.detached()
        && (m.host.starts_with(b"/proc")
            || m.host == b"/"
                && picos_abi::rest_after(&m.guest, guest)
                    .is_some_and(|r| r == b"/proc" || r.starts_with(b"/proc/")))
}

/// As [`hides_process`], for guest path `guest` shown by mount `i`.
fn hides_process_guest(i: usize, guest: &[u8]) -> bool {
    may_be_in_proc(i, guest) && hides_process(i, &relative(i, guest))
}

/// Is `rel` (NUL-terminated, in mount `i`) the host's /proc itself?
pub fn is_proc_root(i: usize, rel: &[u8]) -> bool {
    host_proc_rest(i, rel).is_some_and(|r| r.is_empty() || r == b"/")
}

/// As [`is_proc_root`], for canonical guest path `guest`.
pub fn is_proc_root_guest(guest: &[u8]) -> bool {
    let i = covering(guest);
    may_be_in_proc(i, guest) && is_proc_root(i, &relative(i, guest))
}

/// Is guest path `guest` (canonical) the host's /proc descriptor directory
/// of this process?
pub fn is_proc_fd_dir_guest(guest: &[u8]) -> bool {
    let i = covering(guest);
    may_be_in_proc(i, guest) && is_proc_fd_dir(i, &relative(i, guest))
}

/// Is `rel` (NUL-terminated, in mount `i`) the host's /proc descriptor
/// directory of this process (`/proc/PID/fd` or `/proc/PID/task/TID/fd`)?
pub fn is_proc_fd_dir(i: usize, rel: &[u8]) -> bool {
    // (host_proc_rest makes the cheap test first: it runs on every open.)
    let Some(rest) = host_proc_rest(i, rel) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(b"/") else {
        return false;
    };
    let parts: Vec<&[u8]> = rest.split(|&c| c == b'/').collect();
    let own = parts
        .first()
        .is_some_and(|p| parse(p).is_some() && parse(p) == Some(host::getpid() as i64));
    own && match parts.len() {
        2 => parts[1] == b"fd",
        4 => parts[1] == b"task" && parse(parts[2]).is_some() && parts[3] == b"fd",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_only_with_dotdot() {
        assert_eq!(confined_for(b"a/b\0"), UNSCOPED);
        assert_eq!(confined_for(b".\0"), UNSCOPED);
        assert_eq!(confined_for(b"a/..b/c..\0"), UNSCOPED);
        assert_eq!(confined_for(b"a/../b\0"), CONFINED);
        assert_eq!(confined_for(b"..\0"), CONFINED);
        assert_eq!(confined_for(b"a/.."), CONFINED);
        assert_eq!(beneath_for(b"x/\0"), UNSCOPED);
        assert_eq!(beneath_for(b"x/../y\0"), BENEATH);
    }

    #[test]
    fn splits_the_last_component() {
        assert_eq!(split_last(b"a/b"), (&b"a/"[..], &b"b"[..], false));
        assert_eq!(split_last(b"a/b//"), (&b"a/"[..], &b"b"[..], true));
        assert_eq!(split_last(b"b"), (&b"."[..], &b"b"[..], false));
        assert_eq!(split_last(b"/b"), (&b"/"[..], &b"b"[..], false));
        assert_eq!(split_last(b"/"), (&b"/"[..], &b"."[..], false));
        assert_eq!(split_last(b"b/"), (&b"."[..], &b"b"[..], true));
    }

    #[test]
    fn pops_to_the_parent() {
        let mut p = b"/a/b".to_vec();
        pop(&mut p);
        assert_eq!(p, b"/a");
        pop(&mut p);
        assert_eq!(p, b"/");
        pop(&mut p);
        assert_eq!(p, b"/");
    }

    #[test]
    fn components_in_reverse() {
        assert_eq!(components_rev(b"/a//b/"), [b"b".to_vec(), b"a".to_vec()]);
    }
}
