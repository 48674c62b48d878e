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
use super::walk::{MAX_LINKS, PATH_MAX, S_IFDIR, S_IFLNK, S_IFMT};
use super::{pop, FdTable};
use crate::host;
use crate::host::errno::Errno;
use crate::host::{OpenHow, Statx};
use crate::sync::{Lock, Rank};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

/// The most entries kept; a full cache is emptied and filled again (a
/// program that looks up more names than this on exclusive mounts pays the
/// host's price for some of them, never a wrong answer).
pub const MAX_ENTRIES: usize = 16 * 1024;

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

/// Where a whole lookup led, by the path as the program gave it (made
/// absolute, with whether a last symlink is followed): one hash instead of
/// one per component for a path looked up again. It holds only outcomes
/// that depend on nothing but the tree (never an EACCES), and goes when
/// the entries it leads to go.
#[derive(Clone)]
enum Alias {
    Exists {
        guest: Box<[u8]>,
        mount: usize,
    },
    Missing {
        parent: Box<[u8]>,
        name: Box<[u8]>,
        dir: bool,
    },
    Failed(Errno),
}

/// Keyed by the absolute path followed by one byte: 1 if a last symlink is
/// followed, else 0.
type AliasMap = HashMap<Box<[u8]>, Alias, FxBuildHasher>;

/// The longest alias key kept (a longer path is walked each time).
const MAX_KEY: usize = 1024;
/// Keys up to this long are built on the stack.
const SMALL_KEY: usize = 256;

#[derive(Default)]
struct Cache {
    nodes: Map,
    aliases: AliasMap,
}

static CACHE: Lock<Option<Cache>> = Lock::new(Rank::Dcache, None);

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

/// Is the object whose status is `stx` on mount `i`'s host file system
/// (not on another one reached through it, such as /proc under `/`)?
pub fn on_mount_fs(fds: &FdTable, i: usize, stx: &Statx) -> bool {
    root_dev(fds, i).is_some_and(|d| d == dev_of(stx))
}

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

/// What a cached lookup found. (Returned once per lookup and taken apart at
/// once: the large variant is not worth a heap allocation.)
#[allow(clippy::large_enum_variant)]
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
    /// `dir`: a `/` followed it (in the path or in a symlink's target), so
    /// only a directory may be made there.
    Missing {
        parent: Vec<u8>,
        name: Vec<u8>,
        dir: bool,
    },
}

/// An object's type (`S_IFMT` bits of its mode) and, for a symlink, its
/// target.
type Object = (u32, Option<Vec<u8>>);

/// What a lookup step learns of a canonical path: None when the cache does
/// not answer (not on an exclusive mount, another file system), else the
/// object, or why there is none.
type Answer = Option<Result<Object, Errno>>;

/// A lookup step: what the cache (or, in tests, a tree) says of a
/// canonical path; when given a place for it, the object's status too (a
/// 256-byte copy made only for the last component).
type Step<'a> = dyn FnMut(&[u8], Option<&mut Statx>) -> Answer + 'a;

/// Resolves `path` from `start` (a canonical guest directory; ignored for
/// an absolute path) through the cache; `follow`: follow a symlink in the
/// last component (a trailing `/` always does). None: the path leaves the
/// exclusive mounts, resolve it the usual way.
pub fn resolve(
    fds: &FdTable,
    start: &[u8],
    path: &[u8],
    follow: bool,
) -> Option<Result<Resolved, Errno>> {
    with_lookup(
        fds,
        start,
        path,
        follow,
        &mut (),
        |nodes, a, _| from_alias(nodes, a),
        |r, _| r,
    )
}

/// As [`resolve`], for the status alone, which is handed to `sink` (under
/// the cache's lock, without a copy): Ok(true) if the object exists, Ok(false)
/// if its last component does not. No allocation when the path was looked
/// up before.
pub fn stat(
    fds: &FdTable,
    start: &[u8],
    path: &[u8],
    follow: bool,
    sink: &mut dyn FnMut(&Statx),
) -> Option<Result<bool, Errno>> {
    with_lookup(
        fds,
        start,
        path,
        follow,
        sink,
        |nodes, a, sink| match a {
            Alias::Exists { guest, .. } => match nodes.get(guest)? {
                Node::Present { stx, .. } => {
                    sink(stx);
                    Some(Ok(true))
                }
                _ => None,
            },
            Alias::Missing { .. } => Some(Ok(false)),
            Alias::Failed(e) => Some(Err(*e)),
        },
        |r, sink| match r {
            Ok(Resolved::Exists { stx, .. }) => {
                sink(&stx);
                Ok(true)
            }
            Ok(Resolved::Missing { .. }) => Ok(false),
            Err(e) => Err(e),
        },
    )
}

/// A lookup under the cache's lock: the alias of the path if there is one
/// (`hit`; None from it: its entry is gone), else the walk (`walked`),
/// whose outcome becomes an alias when it depends on the tree alone.
fn with_lookup<T, C: ?Sized>(
    fds: &FdTable,
    start: &[u8],
    path: &[u8],
    follow: bool,
    ctx: &mut C,
    hit: impl FnOnce(&Map, &Alias, &mut C) -> Option<T>,
    walked: impl FnOnce(Result<Resolved, Errno>, &mut C) -> T,
) -> Option<T> {
    // The alias key, built on the stack (a lookup that hits allocates
    // nothing).
    let relative = path.first() != Some(&b'/');
    let head = if relative { start.len() + 1 } else { 0 };
    let key_len = head + path.len() + 1;
    let mut small = [0u8; SMALL_KEY];
    let mut big = Vec::new();
    let buf: &mut [u8] = if key_len <= SMALL_KEY {
        &mut small
    } else {
        big.resize(key_len.min(MAX_KEY), 0);
        &mut big
    };
    let key = (key_len <= MAX_KEY).then(|| {
        if relative {
            buf[..start.len()].copy_from_slice(start);
            buf[start.len()] = b'/';
        }
        buf[head..head + path.len()].copy_from_slice(path);
        buf[key_len - 1] = follow as u8;
        &buf[..key_len]
    });
    // One lock for the whole lookup (the host's lookups of missing names
    // included: other threads' lookups wait for them, which is rare).
    let mut g = CACHE.lock();
    let Cache { nodes, aliases } = g.get_or_insert_with(Cache::default);
    if let Some(a) = key.and_then(|k| aliases.get(k)) {
        if let Some(r) = hit(nodes, a, ctx) {
            return Some(r);
        }
    }
    let base = if relative {
        start.to_vec()
    } else {
        b"/".to_vec()
    };
    let r = resolve_with(base, path, follow, &mut |p, out| step(nodes, fds, p, out))?;
    let alias = match &r {
        Ok(Resolved::Exists { guest, mount, .. }) => Some(Alias::Exists {
            guest: guest.as_slice().into(),
            mount: *mount,
        }),
        Ok(Resolved::Missing { parent, name, dir }) => Some(Alias::Missing {
            parent: parent.as_slice().into(),
            name: name.as_slice().into(),
            dir: *dir,
        }),
        Err(e @ (Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP | Errno::ENAMETOOLONG)) => {
            Some(Alias::Failed(*e))
        }
        Err(_) => None,
    };
    if let (Some(a), Some(k)) = (alias, key) {
        if aliases.len() >= MAX_ENTRIES {
            aliases.clear();
        }
        aliases.insert(k.into(), a);
    }
    Some(walked(r, ctx))
}

/// The outcome an alias records (None if its entry is gone).
fn from_alias(nodes: &Map, a: &Alias) -> Option<Result<Resolved, Errno>> {
    Some(match a {
        Alias::Exists { guest, mount } => match nodes.get(guest)? {
            Node::Present { stx, link } => Ok(Resolved::Exists {
                guest: guest.to_vec(),
                mount: *mount,
                stx: **stx,
                link: link.as_ref().map(|l| l.to_vec()),
            }),
            _ => return None,
        },
        Alias::Missing { parent, name, dir } => Ok(Resolved::Missing {
            parent: parent.to_vec(),
            name: name.to_vec(),
            dir: *dir,
        }),
        Alias::Failed(e) => Err(*e),
    })
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
    let mut stx = Statx([0; 256]);
    let mut last: Option<Option<Vec<u8>>> = None;
    // Did a `/` follow the last component resolved (in the path, or in the
    // target of a symlink spliced in: Linux's walk then wants a directory)?
    let mut last_slash = false;
    while let Some(slash) = todo.next_into(&mut comp) {
        let is_last = todo.is_empty();
        last_slash = slash;
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
        let (mode, link) = match node(&cur, is_last.then_some(&mut stx))? {
            Ok(x) => x,
            Err(Errno::ENOENT) if is_last => {
                cur.truncate(parent_len);
                return Some(Ok(Resolved::Missing {
                    parent: cur,
                    name: comp,
                    dir: trailing || slash,
                }));
            }
            Err(e) => return Some(Err(e)),
        };
        if mode == S_IFLNK && (!is_last || follow || trailing || slash) {
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
        last = Some(link);
    }
    let link = match last {
        Some(l) => l,
        // The path ended at `.` or `..` (or was `/`): `cur`, a directory.
        None => match node(&cur, Some(&mut stx))? {
            Ok((_, l)) => l,
            Err(e) => return Some(Err(e)),
        },
    };
    if (trailing || last_slash) && stx.mode() & S_IFMT != S_IFDIR {
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
    /// The next component into `out`, and whether a `/` follows it in its
    /// buffer (the path or a symlink's target); None when none is left.
    fn next_into(&mut self, out: &mut Vec<u8>) -> Option<bool> {
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
                return Some(end < buf.len());
            }
            self.stack.pop()?;
        }
    }
    /// No component left?
    fn is_empty(&self) -> bool {
        let rest = |b: &[u8], at: usize| b[at..].iter().all(|&c| c == b'/');
        rest(self.path, self.at) && self.stack.iter().all(|(b, a)| rest(b, *a))
    }
}

/// The cache's answer for canonical guest path `p` (its status into
/// `out`, if given), filling it from the host on a miss; None if no
/// exclusive mount shows `p`.
fn step(map: &mut Map, fds: &FdTable, p: &[u8], out: Option<&mut Statx>) -> Answer {
    let i = covering(p);
    if !exclusive(i) {
        return None;
    }
    if let Some(n) = map.get(p) {
        return answer(n, out);
    }
    let n = match fill(fds, i, p)? {
        Ok(Node::Present { stx, .. }) if Some(dev_of(&stx)) != root_dev(fds, i) => {
            Ok(Node::Foreign)
        }
        n => n,
    };
    match n {
        Ok(n) => {
            let a = answer(&n, out);
            if map.len() >= MAX_ENTRIES {
                // The aliases that lead here go too (`from_alias`).
                map.clear();
            }
            map.insert(p.into(), n);
            a
        }
        Err(e) => Some(Err(e)),
    }
}

/// A node's answer; None for a foreign one (the cache does not answer).
fn answer(n: &Node, out: Option<&mut Statx>) -> Answer {
    match n {
        Node::Present { stx, link } => {
            if let Some(o) = out {
                *o = **stx;
            }
            Some(Ok((stx.mode() & S_IFMT, link.as_ref().map(|l| l.to_vec()))))
        }
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
        resolve: super::walk::confined_for(rel.to_bytes()),
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

/// The working directory's guest path, if cached exactly (see
/// [`set_cwd`]).
pub fn cwd() -> Option<Vec<u8>> {
    with_cwd(|c| c.to_vec())
}

/// `f` of the working directory's guest path, if it is cached exactly (no
/// copy of it made).
pub fn with_cwd<R>(f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    with_record(true, f)
}

/// `f` of the working directory's guest path as last known, if there is
/// one: exact on an exclusive mount; elsewhere perhaps a name a directory
/// above it had before another process renamed it, which still picks the
/// right mount (a rename stays within its mount) for a relative path that
/// the host resolves from the working directory itself.
pub fn with_lookup_cwd<R>(f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    with_record(false, f)
}

fn with_record<R>(exact: bool, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    if !super::mount::active() || !CWD_CACHEABLE.load(Ordering::Relaxed) {
        return None;
    }
    let t = crate::kernel::thread::current();
    let g = t.process().cwd.lock();
    match g.as_ref() {
        Some((p, e)) if *e || !exact => Some(f(p)),
        _ => None,
    }
}

/// The host gave `guest` as the working directory: kept until the next
/// chdir, exact if an exclusive mount shows it (no one can rename it
/// there).
pub fn set_cwd(guest: &[u8]) {
    if super::mount::active() && CWD_CACHEABLE.load(Ordering::Relaxed) {
        let exact = enabled() && exclusive(covering(guest));
        *crate::kernel::thread::current().process().cwd.lock() = Some((guest.to_vec(), exact));
    }
}

/// The working directory changed (chdir, fchdir).
pub fn forget_cwd() {
    if super::mount::active() {
        *crate::kernel::thread::current().process().cwd.lock() = None;
    }
}

/// A clone with these flags is being made: stop caching the working
/// directory if the child shares it without sharing this memory's record
/// of it (CLONE_FS without CLONE_VM, or CLONE_VM without CLONE_FS in a
/// thread or process that shares our state).
pub fn note_clone(flags: u64) {
    if !keeps_cwd(flags) {
        stop_caching_cwd();
    }
}

/// Never cache the working directory again in this process (a thread took
/// a working directory of its own: unshare(CLONE_FS), or a clone that
/// shares it with a process that cannot see our record of it).
pub fn stop_caching_cwd() {
    CWD_CACHEABLE.store(false, Ordering::Relaxed);
    forget_cwd();
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
    alone: crate::sync::ForkHook::nothing,
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
            ("/fslash", S_IFLNK, "usr/lib/f/"),
            ("/dslash", S_IFLNK, "usr/"),
            ("/nslash", S_IFLNK, "nowhere/"),
        ]
    }

    fn run(start: &str, path: &str, follow: bool) -> Result<String, Errno> {
        let t = tree();
        let mut node = |p: &[u8], out: Option<&mut Statx>| -> Answer {
            if p.starts_with(b"/other") {
                return None;
            }
            let (mode, link) = if p.starts_with(b"/deep") {
                // Directories all the way down.
                (S_IFDIR, None)
            } else {
                match t.iter().find(|(q, _, _)| q.as_bytes() == p) {
                    None => return Some(Err(Errno::ENOENT)),
                    Some((_, mode, link)) => {
                        (*mode, (*mode == S_IFLNK).then(|| link.as_bytes().to_vec()))
                    }
                }
            };
            if let Some(o) = out {
                o.0[28..30].copy_from_slice(&(mode as u16).to_ne_bytes());
            }
            Some(Ok((mode, link)))
        };
        match resolve_with(
            start.as_bytes().to_vec(),
            path.as_bytes(),
            follow,
            &mut node,
        ) {
            None => Ok("uncached".into()),
            Some(Err(e)) => Err(e),
            Some(Ok(Resolved::Missing { parent, name, dir })) => Ok(alloc::format!(
                "missing {} {}{}",
                String::from_utf8_lossy(&parent),
                String::from_utf8_lossy(&name),
                if dir { "/" } else { "" }
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
        assert_eq!(run("/usr", "nope/", true), Ok("missing /usr nope/".into()));
        // A `/` at the end of a symlink's target wants a directory, as one
        // at the end of the path does.
        assert_eq!(run("/", "/fslash", true), Err(Errno::ENOTDIR));
        assert_eq!(run("/", "/fslash", false), Ok("/fslash 120000".into()));
        assert_eq!(run("/", "/fslash/", false), Err(Errno::ENOTDIR));
        assert_eq!(run("/", "/dslash", true), Ok("/usr 40000".into()));
        assert_eq!(
            run("/", "/dslash/lib/f", true),
            Ok("/usr/lib/f 100000".into())
        );
        assert_eq!(run("/", "/nslash", true), Ok("missing / nowhere/".into()));
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
        assert_eq!(c.next_into(&mut out), Some(true));
        assert_eq!(out, b"a");
        assert!(!c.is_empty());
        c.push(b"/x//y".to_vec());
        assert_eq!(c.next_into(&mut out), Some(true));
        assert_eq!(out, b"x");
        assert_eq!(c.next_into(&mut out), Some(false));
        assert_eq!(out, b"y");
        assert!(!c.is_empty());
        assert_eq!(c.next_into(&mut out), Some(true));
        assert_eq!(out, b"b");
        assert!(c.is_empty());
        assert_eq!(c.next_into(&mut out), None);
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
