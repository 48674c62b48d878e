//! The directory cache of exclusive mounts: what path lookups found on a
//! read-only mount that the manifest marks `exclusive = true`, kept so that
//! the next lookup of the same names asks the host nothing.
//!
//! **Why it stays right** (docs/FILESYSTEM.md, "The directory cache"):
//! nothing in the picoprocess tree can change such a mount (it is read-only:
//! every call that would is refused with EROFS before the host sees it),
//! and the manifest promises that nothing outside the tree does. So what a
//! lookup found there stays true for the rest of the run: in this process,
//! and in every child forked from it (which gets a copy). A program starts
//! with an empty cache after execve. What depends on the caller's
//! credentials is not kept across a change of them: the cache is emptied
//! by set*id, setgroups and capset, and a lookup the host refused for
//! another reason than "no such name" (EACCES, say) is never cached.
//!
//! **What it holds**: for a canonical guest path (no symlinks, no `.` or
//! `..`), either the object's `statx` (from which `struct stat` is derived,
//! as the kernel fills both from one `kstat`) and, for a symlink, its
//! target; or that the name does not exist. A lookup walks the path one
//! component at a time through the cache, splicing symlinks in as Linux's
//! own walk does, and fills a missing entry with one confined host lookup
//! (`openat2(RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`
//! from the mount's root, then `statx` on what it opened), so that even a
//! broken promise cannot lead the program above its mount.
//!
//! A lookup that leaves the exclusive mounts (a component on another mount,
//! /proc's magic links) is not answered here: the caller resolves it the
//! usual way (`walk`).
#![deny(unsafe_code)]

use super::mount::{covering, relative, root_fd, table};
use super::FdTable;
use crate::host;
use crate::host::errno::Errno;
use crate::host::{OpenHow, Statx};
use crate::sync::{Lock, Rank};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

/// Linux's limit on symlinks followed in one resolution.
const MAX_LINKS: u32 = 40;
/// PATH_MAX.
const PATH_MAX: usize = 4096;
/// The most entries kept; a full cache is emptied and filled again (a
/// program that looks up more names than this on exclusive mounts pays the
/// host's price for some of them, never a wrong answer).
pub const MAX_ENTRIES: usize = 16 * 1024;

const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;

/// The statx fields an entry holds (STATX_BASIC_STATS | STATX_BTIME |
/// STATX_MNT_ID): a program's statx asking for more goes to the host.
pub const STATX_CACHED: u32 = 0x7ff | 0x800 | 0x1000;

/// What the cache knows of one canonical guest path.
#[derive(Clone)]
enum Node {
    /// It exists: its status, and its target if it is a symlink.
    Present {
        stx: Box<Statx>,
        link: Option<Box<[u8]>>,
    },
    /// No such name (ENOENT; ENOTDIR for a name below a non-directory).
    Missing(Errno),
    /// On another host file system than its mount's directory: not cached.
    Foreign,
}

type Map = HashMap<Box<[u8]>, Node, FxBuildHasher>;

static CACHE: Lock<Option<Map>> = Lock::new(Rank::Dcache, None);

/// Each mount's host file system (`stx_dev_major << 32 | stx_dev_minor`,
/// plus one; 0: not known yet).
static ROOT_DEV: [AtomicU64; super::mount::MAX_MOUNTS] =
    [const { AtomicU64::new(0) }; super::mount::MAX_MOUNTS];

/// The host file system of an object, as [`ROOT_DEV`] keeps it.
fn dev_of(stx: &Statx) -> u64 {
    ((stx.dev_major() as u64) << 32 | stx.dev_minor() as u64) + 1
}

/// Mount `i`'s host file system.
fn root_dev(fds: &FdTable, i: usize) -> Option<u64> {
    let d = ROOT_DEV[i].load(Ordering::Relaxed);
    if d != 0 {
        return Some(d);
    }
    let stx = host::statx(
        root_fd(fds, i) as isize,
        c"",
        host::AT_EMPTY_PATH,
        STATX_CACHED,
    )
    .ok()?;
    let d = dev_of(&stx);
    ROOT_DEV[i].store(d, Ordering::Relaxed);
    Some(d)
}

/// Does the process keep a cached working directory (`Process::cwd`)?
/// Cleared for good by a clone that shares the working directory but not
/// the memory, or the memory and process but not the working directory:
/// a change the other side makes would not be seen here.
static CWD_CACHEABLE: AtomicBool = AtomicBool::new(true);

/// Is mount `i` one whose lookups are cached?
pub fn exclusive(i: usize) -> bool {
    table().get(i).is_some_and(|m| m.exclusive && m.readonly)
}

/// Does the manifest mark any mount exclusive?
pub fn enabled() -> bool {
    table().iter().any(|m| m.exclusive && m.readonly)
}

/// Forgets everything (the caller's credentials changed).
pub fn clear() {
    if enabled() {
        *CACHE.lock() = None;
    }
}

/// What a cached lookup found.
pub enum Resolved {
    /// The object: its canonical guest path, the mount that shows it, its
    /// status (not followed: a symlink if the last component is one and was
    /// not to be followed) and, for a symlink, its target.
    Exists {
        guest: Vec<u8>,
        mount: usize,
        stx: Statx,
        link: Option<Vec<u8>>,
    },
    /// The last component does not exist; its directory (canonical) does.
    Missing { parent: Vec<u8>, name: Vec<u8> },
}

/// What a lookup step learns of a canonical path: None when it is not on
/// an exclusive mount (the cache does not answer), else its status and
/// symlink target, or why it does not exist.
type Step<'a> = dyn FnMut(&[u8]) -> Option<Result<(Statx, Option<Vec<u8>>), Errno>> + 'a;

/// Resolves `path` from `start` (a canonical guest directory, `/` for an
/// absolute path) through the cache; `follow`: follow a symlink in the
/// last component (a trailing `/` always does). None: the path leaves the
/// exclusive mounts, resolve it the usual way.
pub fn resolve(
    fds: &FdTable,
    start: Vec<u8>,
    path: &[u8],
    follow: bool,
) -> Option<Result<Resolved, Errno>> {
    resolve_with(start, path, follow, &mut |p| step(fds, p))
}

/// The walk, with the cache (or, in tests, a tree) behind `node`.
fn resolve_with(
    start: Vec<u8>,
    path: &[u8],
    follow: bool,
    node: &mut Step<'_>,
) -> Option<Result<Resolved, Errno>> {
    let trailing = path.ends_with(b"/") && path.iter().any(|&c| c != b'/');
    let mut cur = if path.first() == Some(&b'/') {
        b"/".to_vec()
    } else {
        start
    };
    let mut todo = Components::new(path);
    let mut comp = Vec::new();
    let mut links = 0;
    // The status and target of `cur`, when the last step found it.
    let mut last: Option<(Statx, Option<Vec<u8>>)> = None;
    while todo.next_into(&mut comp) {
        let is_last = todo.is_empty();
        last = None;
        if comp == b"." {
            continue;
        }
        if comp == b".." {
            pop(&mut cur);
            continue;
        }
        let parent_len = cur.len();
        if cur != b"/" {
            cur.push(b'/');
        }
        cur.extend_from_slice(&comp);
        if cur.len() >= PATH_MAX {
            return Some(Err(Errno::ENAMETOOLONG));
        }
        let (stx, link) = match node(&cur)? {
            Ok(x) => x,
            Err(Errno::ENOENT) if is_last => {
                cur.truncate(parent_len);
                return Some(Ok(Resolved::Missing {
                    parent: cur,
                    name: comp,
                }));
            }
            Err(e) => return Some(Err(e)),
        };
        let mode = stx.mode() & S_IFMT;
        if mode == S_IFLNK && (!is_last || follow || trailing) {
            links += 1;
            if links > MAX_LINKS {
                return Some(Err(Errno::ELOOP));
            }
            let target = link.unwrap_or_default();
            if target.is_empty() {
                return Some(Err(Errno::ENOENT));
            }
            cur.truncate(parent_len);
            if target[0] == b'/' {
                cur.clear();
                cur.push(b'/');
            }
            todo.push(target);
            continue;
        }
        if !is_last && mode != S_IFDIR {
            return Some(Err(Errno::ENOTDIR));
        }
        last = Some((stx, link));
    }
    let (stx, link) = match last {
        Some(x) => x,
        // The path ended at `.` or `..` (or was `/`): `cur`, a directory.
        None => match node(&cur)? {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        },
    };
    if trailing && stx.mode() & S_IFMT != S_IFDIR {
        return Some(Err(Errno::ENOTDIR));
    }
    let mount = covering(&cur);
    Some(Ok(Resolved::Exists {
        guest: cur,
        mount,
        stx,
        link,
    }))
}

/// The parent of canonical path `p` (`/` stays `/`).
fn pop(p: &mut Vec<u8>) {
    match p.iter().rposition(|&c| c == b'/') {
        Some(0) | None => {
            p.clear();
            p.push(b'/');
        }
        Some(i) => p.truncate(i),
    }
}

/// The components still to walk: the path, with the targets of the
/// symlinks met spliced in front of what remains.
struct Components<'a> {
    path: &'a [u8],
    at: usize,
    /// Spliced targets, innermost last, each with its position.
    stack: Vec<(Vec<u8>, usize)>,
}

impl<'a> Components<'a> {
    fn new(path: &'a [u8]) -> Self {
        Components {
            path,
            at: 0,
            stack: Vec::new(),
        }
    }
    fn push(&mut self, target: Vec<u8>) {
        self.stack.push((target, 0));
    }
    /// The next component into `out`; false when none is left.
    fn next_into(&mut self, out: &mut Vec<u8>) -> bool {
        loop {
            let (buf, at): (&[u8], &mut usize) = match self.stack.last_mut() {
                Some((b, a)) => (b.as_slice(), a),
                None => (self.path, &mut self.at),
            };
            while *at < buf.len() && buf[*at] == b'/' {
                *at += 1;
            }
            if *at < buf.len() {
                let end = buf[*at..]
                    .iter()
                    .position(|&c| c == b'/')
                    .map_or(buf.len(), |i| *at + i);
                out.clear();
                out.extend_from_slice(&buf[*at..end]);
                *at = end;
                return true;
            }
            if self.stack.pop().is_none() {
                return false;
            }
        }
    }
    /// No component left?
    fn is_empty(&self) -> bool {
        let rest = |b: &[u8], at: usize| b[at..].iter().all(|&c| c == b'/');
        rest(self.path, self.at) && self.stack.iter().all(|(b, a)| rest(b, *a))
    }
}

/// The cache's answer for canonical guest path `p`, filling it from the
/// host on a miss; None if no exclusive mount shows `p`.
fn step(fds: &FdTable, p: &[u8]) -> Option<Result<(Statx, Option<Vec<u8>>), Errno>> {
    let i = covering(p);
    if !exclusive(i) {
        return None;
    }
    if let Some(map) = CACHE.lock().as_ref() {
        if let Some(n) = map.get(p) {
            return answer(n);
        }
    }
    let n = match fill(fds, i, p)? {
        Ok(Node::Present { stx, .. }) if Some(dev_of(&stx)) != root_dev(fds, i) => {
            Ok(Node::Foreign)
        }
        n => n,
    };
    match n {
        Ok(n) => {
            let a = answer(&n);
            let mut g = CACHE.lock();
            let map = g.get_or_insert_with(Map::default);
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            map.insert(p.into(), n);
            a
        }
        Err(e) => Some(Err(e)),
    }
}

/// A node's answer; None for a foreign one (the cache does not answer).
fn answer(n: &Node) -> Option<Result<(Statx, Option<Vec<u8>>), Errno>> {
    match n {
        Node::Present { stx, link } => Some(Ok((**stx, link.as_ref().map(|l| l.to_vec())))),
        Node::Missing(e) => Some(Err(*e)),
        Node::Foreign => None,
    }
}

/// Looks up canonical path `p` on mount `i` on the host: Ok(node) to
/// cache, Err(e) for an answer not to cache (it depends on more than the
/// tree); None if the host found a symlink on the way (the tree is not what
/// the cache says: the caller walks).
fn fill(fds: &FdTable, i: usize, p: &[u8]) -> Option<Result<Node, Errno>> {
    let rel = relative(i, p);
    let rel = core::ffi::CStr::from_bytes_with_nul(&rel).ok()?;
    let how = OpenHow {
        flags: (host::O_PATH | host::O_NOFOLLOW | host::O_CLOEXEC) as u64,
        mode: 0,
        resolve: host::RESOLVE_IN_ROOT | host::RESOLVE_NO_SYMLINKS | host::RESOLVE_NO_MAGICLINKS,
    };
    let fd = match host::openat2(root_fd(fds, i) as isize, rel, &how) {
        Ok(fd) => fd as i32,
        Err(e @ (Errno::ENOENT | Errno::ENOTDIR)) => return Some(Ok(Node::Missing(e))),
        Err(Errno::ELOOP) => return None,
        Err(e) => return Some(Err(e)),
    };
    let r = (|| {
        let stx = host::statx(fd as isize, c"", host::AT_EMPTY_PATH, STATX_CACHED)?;
        let link = if stx.mode() & S_IFMT == S_IFLNK {
            let mut buf = alloc::vec![0u8; PATH_MAX];
            let n = host::readlinkat(fd as isize, c"", &mut buf)?;
            buf.truncate(n);
            Some(buf.into_boxed_slice())
        } else {
            None
        };
        Ok(Node::Present {
            stx: Box::new(stx),
            link,
        })
    })();
    let _ = host::close(fd);
    Some(r)
}

// ------------------------------------------------------------ working directory

/// The working directory's guest path, if cached (see [`set_cwd`]).
pub fn cwd() -> Option<Vec<u8>> {
    if !enabled() || !CWD_CACHEABLE.load(Ordering::Relaxed) {
        return None;
    }
    crate::kernel::thread::current()
        .process()
        .cwd
        .lock()
        .clone()
}

/// The host gave `guest` as the working directory: kept if an exclusive
/// mount shows it (no one can rename it there), until the next chdir.
pub fn set_cwd(guest: &[u8]) {
    if enabled() && CWD_CACHEABLE.load(Ordering::Relaxed) && exclusive(covering(guest)) {
        *crate::kernel::thread::current().process().cwd.lock() = Some(guest.to_vec());
    }
}

/// The working directory changed (chdir, fchdir).
pub fn forget_cwd() {
    if enabled() {
        *crate::kernel::thread::current().process().cwd.lock() = None;
    }
}

/// A clone with these flags is being made: stop caching the working
/// directory if the child shares it without sharing this memory's record
/// of it (CLONE_FS without CLONE_VM, or CLONE_VM without CLONE_FS in a
/// thread or process that shares our state).
pub fn note_clone(flags: u64) {
    if !keeps_cwd(flags) {
        CWD_CACHEABLE.store(false, Ordering::Relaxed);
        forget_cwd();
    }
}

/// May the cached working directory stay after a clone with `flags`? Yes
/// when the child shares both the working directory and the record of it
/// (a thread: CLONE_FS, CLONE_VM, CLONE_THREAD), or shares neither the
/// working directory nor the process state that holds the record (fork,
/// vfork, posix_spawn: the child's state is a copy).
fn keeps_cwd(flags: u64) -> bool {
    const CLONE_VM: u64 = 0x100;
    const CLONE_FS: u64 = 0x200;
    const CLONE_THREAD: u64 = 0x10000;
    let fs = flags & CLONE_FS != 0;
    let vm = flags & CLONE_VM != 0;
    let thread = flags & CLONE_THREAD != 0;
    (fs && vm && thread) || (!fs && !thread)
}

/// The directory cache's part in fork: its lock is held across it (the
/// child gets the parent's entries, which stay true there too).
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "directory cache",
    hold: |inner| {
        let _g = CACHE.lock();
        inner()
    },
    child: crate::sync::ForkHook::no_change,
};

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;

    /// A tree of canonical paths: directories, files and symlinks.
    fn tree() -> Vec<(&'static str, u32, &'static str)> {
        vec![
            ("/", S_IFDIR, ""),
            ("/usr", S_IFDIR, ""),
            ("/usr/lib", S_IFDIR, ""),
            ("/usr/lib/f", 0o100000, ""),
            ("/usr/lib64", S_IFLNK, "lib"),
            ("/lib", S_IFLNK, "usr/lib"),
            ("/abs", S_IFLNK, "/usr/lib/f"),
            ("/loop", S_IFLNK, "loop"),
            ("/dangling", S_IFLNK, "nowhere"),
            ("/empty", S_IFLNK, ""),
            ("/other", S_IFDIR, ""),
        ]
    }

    fn run(start: &str, path: &str, follow: bool) -> Result<String, Errno> {
        let t = tree();
        let mut node = |p: &[u8]| -> Option<Result<(Statx, Option<Vec<u8>>), Errno>> {
            if p.starts_with(b"/other") {
                return None;
            }
            if p.starts_with(b"/deep") {
                // Directories all the way down.
                let mut stx = Statx([0; 256]);
                stx.0[28..30].copy_from_slice(&(S_IFDIR as u16).to_ne_bytes());
                return Some(Ok((stx, None)));
            }
            match t.iter().find(|(q, _, _)| q.as_bytes() == p) {
                None => Some(Err(Errno::ENOENT)),
                Some((_, mode, link)) => {
                    let mut stx = Statx([0; 256]);
                    stx.0[28..30].copy_from_slice(&(*mode as u16).to_ne_bytes());
                    let link = (*mode == S_IFLNK).then(|| link.as_bytes().to_vec());
                    Some(Ok((stx, link)))
                }
            }
        };
        match resolve_with(
            start.as_bytes().to_vec(),
            path.as_bytes(),
            follow,
            &mut node,
        ) {
            None => Ok("uncached".into()),
            Some(Err(e)) => Err(e),
            Some(Ok(Resolved::Missing { parent, name })) => Ok(alloc::format!(
                "missing {} {}",
                String::from_utf8_lossy(&parent),
                String::from_utf8_lossy(&name)
            )),
            Some(Ok(Resolved::Exists { guest, stx, .. })) => Ok(alloc::format!(
                "{} {:o}",
                String::from_utf8_lossy(&guest),
                stx.mode()
            )),
        }
    }

    #[test]
    fn walks_like_linux() {
        assert_eq!(run("/", "/usr/lib/f", true), Ok("/usr/lib/f 100000".into()));
        assert_eq!(run("/usr", "lib/f", true), Ok("/usr/lib/f 100000".into()));
        assert_eq!(
            run("/usr/lib", "../lib/./f", true),
            Ok("/usr/lib/f 100000".into())
        );
        assert_eq!(run("/", "/../../usr", true), Ok("/usr 40000".into()));
        assert_eq!(run("/", "/", true), Ok("/ 40000".into()));
        assert_eq!(run("/usr", ".", true), Ok("/usr 40000".into()));
        assert_eq!(run("/usr", "..", true), Ok("/ 40000".into()));
        // Symlinks: relative, absolute, in the middle, last (followed or not).
        assert_eq!(run("/", "/lib/f", false), Ok("/usr/lib/f 100000".into()));
        assert_eq!(
            run("/", "/usr/lib64/f", false),
            Ok("/usr/lib/f 100000".into())
        );
        assert_eq!(run("/", "/abs", true), Ok("/usr/lib/f 100000".into()));
        assert_eq!(run("/", "/abs", false), Ok("/abs 120000".into()));
        assert_eq!(run("/", "/lib", false), Ok("/lib 120000".into()));
        assert_eq!(run("/", "/lib/", false), Ok("/usr/lib 40000".into()));
        assert_eq!(run("/", "/lib/..", false), Ok("/usr 40000".into()));
        // Errors.
        assert_eq!(run("/", "/loop", true), Err(Errno::ELOOP));
        assert_eq!(run("/", "/loop", false), Ok("/loop 120000".into()));
        assert_eq!(run("/", "/dangling", true), Ok("missing / nowhere".into()));
        assert_eq!(run("/", "/dangling/x", true), Err(Errno::ENOENT));
        assert_eq!(run("/", "/empty", true), Err(Errno::ENOENT));
        assert_eq!(run("/", "/usr/lib/f/", true), Err(Errno::ENOTDIR));
        assert_eq!(run("/", "/usr/lib/f/.", true), Err(Errno::ENOTDIR));
        assert_eq!(run("/", "/usr/lib/f/x", true), Err(Errno::ENOTDIR));
        assert_eq!(run("/", "/usr/nope/x", true), Err(Errno::ENOENT));
        assert_eq!(run("/", "/usr/nope", true), Ok("missing /usr nope".into()));
        assert_eq!(run("/usr", "nope/", true), Ok("missing /usr nope".into()));
        // Leaving the cached tree.
        assert_eq!(run("/", "/other/x", true), Ok("uncached".into()));
        assert_eq!(run("/other", "..", true), Ok("/ 40000".into()));
        let long = alloc::format!("/deep/{}", "a/".repeat(2100));
        assert_eq!(run("/", &long, true), Err(Errno::ENAMETOOLONG));
    }

    #[test]
    fn components_splice_targets() {
        let mut c = Components::new(b"//a/b/");
        let mut out = Vec::new();
        assert!(c.next_into(&mut out) && out == b"a");
        assert!(!c.is_empty());
        c.push(b"/x//y".to_vec());
        assert!(c.next_into(&mut out) && out == b"x");
        assert!(c.next_into(&mut out) && out == b"y");
        assert!(!c.is_empty());
        assert!(c.next_into(&mut out) && out == b"b");
        assert!(c.is_empty());
        assert!(!c.next_into(&mut out));
    }

    #[test]
    fn clone_flags() {
        // fork (SIGCHLD), vfork (CLONE_VM|CLONE_VFORK|SIGCHLD), a glibc
        // pthread (CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|
        // CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID).
        for f in [0x11u64, 0x4111, 0x3d0f00] {
            assert!(keeps_cwd(f), "{f:#x}");
        }
        // CLONE_FS alone; a thread without CLONE_FS; CLONE_VM|CLONE_FS
        // without CLONE_THREAD.
        for f in [0x211u64, 0x10d00, 0x311] {
            assert!(!keeps_cwd(f), "{f:#x}");
        }
    }
}
