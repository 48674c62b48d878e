//! The program's files as the runtime sees them: the mount table
//! (`mount`), path resolution through it (`walk`), paths made absolute,
//! `/proc/self/exe`, and the descriptor table's state.
#![deny(unsafe_code)]

pub mod dcache;
pub mod file;
pub mod mount;
pub mod procview;
pub mod walk;

use crate::host;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

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

/// The canonical path of an open descriptor of the calling thread's table,
/// from /proc/thread-self/fd (with mounts, its guest path).
pub fn fd_path(fd: i32) -> Option<Vec<u8>> {
    if mount::active() {
        return walk::fd_guest(fd).ok();
    }
    walk::fd_host_path(fd).ok()
}

/// Makes `path` absolute against the working directory (the guest's,
/// with mounts).
pub fn absolute(path: &[u8]) -> Vec<u8> {
    if path.first() == Some(&b'/') {
        return path.to_vec();
    }
    if mount::active() {
        return match walk::cwd_guest() {
            Ok(cwd) => join(&cwd, path),
            Err(_) => path.to_vec(),
        };
    }
    let mut cwd = alloc::vec![0u8; 4096];
    let n = match host::getcwd(&mut cwd) {
        Ok(n) if n > 0 => n - 1,
        _ => return path.to_vec(),
    };
    cwd.truncate(n);
    join(&cwd, path)
}

/// The parent of canonical path `p` (`/` stays `/`): its `..`.
pub fn pop(p: &mut Vec<u8>) {
    match p.iter().rposition(|&c| c == b'/') {
        Some(0) | None => {
            p.clear();
            p.push(b'/');
        }
        Some(i) => p.truncate(i),
    }
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

/// A descriptor table's state in the library OS: which of its descriptors
/// the host serves unchanged (today all of them; the library-OS file system
/// will serve descriptors of its own). Shared by the threads, and the
/// processes made with CLONE_FILES, that share the table.
pub struct FdTable {
    /// Read by the direct entries through each thread's `EntryState`.
    pub passthrough: crate::arch::PassThrough,
    /// The mounts' directories, held open in this table (`mount`); -1 for
    /// none. Their bits in `passthrough` are clear, so the program's calls
    /// on these numbers reach the dispatcher.
    pub roots: [core::sync::atomic::AtomicI32; mount::MAX_MOUNTS],
    /// The program's descriptors of /proc's descriptor directory of this
    /// process, whose listings leave out the runtime's descriptors, and of
    /// /proc itself (with [`PROC_ROOT`]), whose listings leave out the
    /// processes outside the picoprocess tree (`sys::fs::getdents64`); -1:
    /// none. Their `passthrough` bits are clear.
    pub proc_fd_dirs: [core::sync::atomic::AtomicI32; PROC_FD_DIRS],
    /// The program's descriptors of files of exclusive mounts (`file`),
    /// whose `fstat` and `pread64` the library OS answers; their
    /// `passthrough` bits are clear.
    files: crate::sync::Lock<Vec<(i32, Arc<file::OpenFile>)>>,
    /// How many `files` there are (a lookup in a table without any takes
    /// no lock).
    nfiles: AtomicUsize,
    /// Do several tasks use this table (a clone with CLONE_FILES was made
    /// from it)? Then the program may run while the runtime works in it
    /// (`host::fds::may_use_program_fds`).
    shared: core::sync::atomic::AtomicBool,
}

/// The number of the notes that only remember a write-back file that was
/// shared ([`FdTable::note_shared`]): no descriptor has it.
const SHARED: i32 = -1;

/// How many /proc directories (descriptor directories and /proc itself) a
/// table tracks at once (more stay unfiltered).
pub const PROC_FD_DIRS: usize = 8;

/// [`FdTable::proc_fd_dirs`]: the slot holds a descriptor of the host's
/// /proc itself (the number with this bit).
const PROC_ROOT: i32 = 1 << 30;

/// The table the program starts with.
static FIRST: FdTable = FdTable::new();

/// Tables of children that no longer run, for the next ones (see
/// [`FdTable::release`]).
static SPARE: crate::sync::Lock<Vec<&'static FdTable>> =
    crate::sync::Lock::new(crate::sync::Rank::SpareTables, Vec::new());

impl FdTable {
    const fn new() -> FdTable {
        FdTable {
            passthrough: crate::arch::PassThrough::all(),
            roots: [mount::ROOTS_INIT; mount::MAX_MOUNTS],
            proc_fd_dirs: [mount::ROOTS_INIT; PROC_FD_DIRS],
            files: crate::sync::Lock::new(crate::sync::Rank::FdFiles, Vec::new()),
            nfiles: AtomicUsize::new(0),
            shared: core::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Is the table used by several tasks (see `shared`)?
    pub fn is_shared(&self) -> bool {
        self.shared.load(Ordering::Relaxed)
    }

    /// Before a clone that shares the table (CLONE_FILES); `false` in a
    /// fork child, whose copy of the table is its own.
    pub fn set_shared(&self, shared: bool) {
        // (Written only if it changes: a fork child that writes a page it
        // shares with its parent copies it.)
        if self.shared.load(Ordering::Relaxed) != shared {
            self.shared.store(shared, Ordering::Relaxed);
        }
    }

    /// Descriptor `fd` (the program's, just opened) is file `f` of an
    /// exclusive mount.
    pub fn note_file(&self, fd: i32, f: file::OpenFile) {
        file::noted();
        let f = Arc::new(f);
        let mut files = self.files.lock();
        // Under the lock: `file::stop_noting` forgets every note after it
        // stops noting.
        if !file::noting() {
            return;
        }
        // (A note left at this number would be a bug: its close forgets
        // it. Replaced all the same.)
        match files.iter_mut().find(|(n, _)| *n == fd) {
            Some(slot) => slot.1 = f,
            None => files.push((fd, f)),
        }
        self.nfiles.store(files.len(), Ordering::Relaxed);
        self.passthrough.set(fd, false);
    }

    /// Descriptor `fd` (the program's, just opened on write-back mount
    /// `mount`; `writes`: for writing) is regular file `id` (host device
    /// and inode). Every descriptor of the same file the table notes (and
    /// this one, if there are any, or if the file was ever shared) writes
    /// directly from now on: two descriptors of one file must see each
    /// other's writes.
    pub fn note_write_back(&self, fd: i32, mount: usize, id: (u64, u64), writes: bool) {
        let same: Vec<(i32, Arc<file::OpenFile>)> = self
            .files
            .lock()
            .iter()
            .filter(|(_, f)| f.id() == Some(id))
            .cloned()
            .collect();
        for (n, f) in &same {
            f.share_offset(*n);
        }
        self.note_file(
            fd,
            file::OpenFile::write_back(mount, id, !writes || !same.is_empty()),
        );
    }

    /// The write-back file at `fd` may now have descriptors the table does
    /// not know (a dup): it writes directly, and so does every descriptor
    /// of the same file opened later (a note at no number remembers it).
    pub fn note_shared(&self, fd: i32) {
        let Some(f) = self.file(fd) else {
            return;
        };
        f.share_offset(fd);
        if let Some(id) = f.id() {
            let mut files = self.files.lock();
            if !files
                .iter()
                .any(|(n, g)| *n == SHARED && g.id() == Some(id))
                && file::noting()
            {
                files.push((SHARED, Arc::new(file::OpenFile::write_back(0, id, true))));
                self.nfiles.store(files.len(), Ordering::Relaxed);
            }
        }
    }

    /// Does the table note any file (one load)?
    #[inline]
    pub fn has_files(&self) -> bool {
        self.nfiles.load(Ordering::Relaxed) != 0
    }

    /// The file of an exclusive mount open at `fd`, if it is one.
    #[inline]
    pub fn file(&self, fd: i32) -> Option<Arc<file::OpenFile>> {
        if self.nfiles.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let files = self.files.lock();
        files.iter().find(|(n, _)| *n == fd).map(|(_, f)| f.clone())
    }

    /// Something may share (or use behind the library OS) the open file
    /// description at `fd`: if it is a noted file whose offset the library
    /// OS owns, the host gets it back (`file::OpenFile::share_offset`).
    #[inline]
    pub fn share_offset(&self, fd: i32) {
        if let Some(f) = self.file(fd) {
            f.share_offset(fd);
        }
    }

    /// Writes out the write-back buffer of the file at `fd`, if it is one.
    #[inline]
    pub fn flush_fd(&self, fd: i32) {
        if file::any_pending() {
            if let Some(f) = self.file(fd) {
                f.flush(fd);
            }
        }
    }

    /// Writes out every write-back buffer of descriptors `first` to `last`
    /// (before they are closed or replaced).
    pub fn flush_range(&self, first: u32, last: u32) {
        if !file::any_pending() {
            return;
        }
        let files = self.files.lock().clone();
        for (fd, f) in files {
            if (first..=last).contains(&(fd as u32)) {
                f.flush(fd);
            }
        }
    }

    /// Writes out every write-back buffer of this table (a flush point:
    /// docs/FILESYSTEM.md, "Write-back mounts").
    pub fn flush_writes(&self) {
        self.flush_range(0, u32::MAX);
    }

    /// As [`FdTable::share_offset`], for every noted file (before a fork,
    /// an execve, a message that may carry descriptors).
    pub fn share_offsets(&self) {
        if self.nfiles.load(Ordering::Relaxed) == 0 {
            return;
        }
        let files = self.files.lock().clone();
        for (fd, f) in files {
            f.share_offset(fd);
        }
    }

    /// Descriptors `first` to `last` were closed or replaced: none of them
    /// is a noted file any more. (Dropping the last reference to a file
    /// unmaps its view.)
    pub fn forget_files_in(&self, first: u32, last: u32) {
        if self.nfiles.load(Ordering::Relaxed) == 0 {
            return;
        }
        // (The notes of shared write-back files go with the table only.)
        let whole = first == 0 && last == u32::MAX;
        let in_range = |n: i32| (first..=last).contains(&(n as u32)) && (n != SHARED || whole);
        // The last references are dropped (views unmapped) outside the
        // table's lock; one close forgets at most one file, without
        // allocating.
        let mut one = None;
        let mut more = Vec::new();
        {
            let mut files = self.files.lock();
            let mut i = 0;
            while i < files.len() {
                if in_range(files[i].0) {
                    let (n, f) = files.swap_remove(i);
                    if n != SHARED {
                        self.passthrough.set(n, true);
                    }
                    match one {
                        None => one = Some(f),
                        Some(_) => more.push(f),
                    }
                } else {
                    i += 1;
                }
            }
            self.nfiles.store(files.len(), Ordering::Relaxed);
        }
        drop(one);
        drop(more);
    }

    /// Descriptor `fd` (the program's) is /proc's descriptor directory of
    /// this process: its listings leave out the runtime's descriptors.
    pub fn note_proc_fd_dir(&self, fd: i32) {
        self.note_proc_dir(fd, 0);
    }

    /// Descriptor `fd` (the program's) is the host's /proc directory: its
    /// listings leave out the processes outside the picoprocess tree.
    pub fn note_proc_root(&self, fd: i32) {
        self.note_proc_dir(fd, PROC_ROOT);
    }

    fn note_proc_dir(&self, fd: i32, kind: i32) {
        use core::sync::atomic::Ordering::Relaxed;
        for s in &self.proc_fd_dirs {
            if s.compare_exchange(-1, fd | kind, Relaxed, Relaxed).is_ok() {
                self.passthrough.set(fd, false);
                return;
            }
        }
    }

    /// Descriptors `first` to `last` were closed or replaced (close,
    /// close_range, dup2/dup3 onto them): every note of them goes (/proc
    /// directories, files of exclusive mounts), and their numbers pass
    /// through again.
    pub fn forget_closed(&self, first: u32, last: u32) {
        self.forget_proc_fd_dirs_in(first, last);
        self.forget_files_in(first, last);
    }

    /// Every noted /proc directory from `first` to `last` was closed.
    fn forget_proc_fd_dirs_in(&self, first: u32, last: u32) {
        use core::sync::atomic::Ordering::Relaxed;
        for s in &self.proc_fd_dirs {
            let v = s.load(Relaxed);
            let fd = v & !PROC_ROOT;
            if v >= 0 && (first..=last).contains(&(fd as u32)) {
                self.forget_proc_fd_dir(fd);
            }
        }
    }

    /// Is `fd` one [`FdTable::note_proc_fd_dir`] noted?
    pub fn is_proc_fd_dir(&self, fd: i32) -> bool {
        fd >= 0
            && self
                .proc_fd_dirs
                .iter()
                .any(|s| s.load(core::sync::atomic::Ordering::Relaxed) == fd)
    }

    /// Descriptor `new` is a copy of `old` (dup): if `old` is a /proc
    /// directory whose listings are filtered, so is `new`.
    pub fn copy_proc_note(&self, old: i32, new: i32) {
        if self.is_proc_root(old) {
            self.note_proc_root(new);
        } else if self.is_proc_fd_dir(old) {
            self.note_proc_fd_dir(new);
        }
    }

    /// Is `fd` one [`FdTable::note_proc_root`] noted?
    pub fn is_proc_root(&self, fd: i32) -> bool {
        fd >= 0
            && self
                .proc_fd_dirs
                .iter()
                .any(|s| s.load(core::sync::atomic::Ordering::Relaxed) == fd | PROC_ROOT)
    }

    /// Descriptor `fd` was closed or replaced: no longer a noted one.
    fn forget_proc_fd_dir(&self, fd: i32) {
        use core::sync::atomic::Ordering::Relaxed;
        // Loads first: a compare-exchange per slot on every close cost
        // ~50 ns.
        for s in &self.proc_fd_dirs {
            let v = s.load(Relaxed);
            if v >= 0 && v & !PROC_ROOT == fd && s.compare_exchange(v, -1, Relaxed, Relaxed).is_ok()
            {
                self.passthrough.set(fd, true);
            }
        }
    }

    /// Is `fd` one of the runtime's own descriptors in this table (which
    /// the program never opened)?
    pub fn is_hidden(&self, fd: i32) -> bool {
        fd >= 0
            && self
                .roots
                .iter()
                .any(|r| r.load(core::sync::atomic::Ordering::Relaxed) == fd)
    }

    /// The runtime's own descriptors in this table (for a transient table
    /// of the runtime's, `host::fds::with_own_fds_keeping`).
    pub fn held(&self) -> Vec<i32> {
        self.roots
            .iter()
            .map(|r| r.load(core::sync::atomic::Ordering::Relaxed))
            .filter(|&fd| fd >= 0)
            .collect()
    }

    /// The table the program starts with (after execve too: the table
    /// carries over, and the new runtime starts with every descriptor
    /// passed through).
    pub fn first() -> &'static FdTable {
        &FIRST
    }

    /// The state of a copy of this table (fork's copy is made by the host
    /// with the memory; this is for a clone without CLONE_FILES that shares
    /// memory: vfork, posix_spawn), from the spare ones when there is one.
    pub fn for_child(&self) -> &'static FdTable {
        let spare = SPARE.lock().pop();
        let c: &'static FdTable = match spare {
            Some(c) => c,
            None => alloc::boxed::Box::leak(alloc::boxed::Box::new(FdTable::new())),
        };
        c.passthrough.copy_from(&self.passthrough);
        c.set_shared(false);
        {
            let files = self.files.lock().clone();
            c.nfiles.store(files.len(), Ordering::Relaxed);
            *c.files.lock() = files;
        }
        for (d, s) in c
            .roots
            .iter()
            .zip(self.roots.iter())
            .chain(c.proc_fd_dirs.iter().zip(self.proc_fd_dirs.iter()))
        {
            d.store(
                s.load(core::sync::atomic::Ordering::Relaxed),
                core::sync::atomic::Ordering::Relaxed,
            );
        }
        c
    }

    /// Gives back a table [`FdTable::for_child`] made, once no thread that
    /// runs in this memory uses it.
    pub fn release(&'static self) {
        self.forget_files_in(0, u32::MAX);
        if !core::ptr::eq(self, &FIRST) {
            SPARE.lock().push(self);
        }
    }
}

/// The descriptor tables' part in fork: the spare ones are locked across
/// it, and the forking thread's table's files (the child's copy of that
/// table is the one it uses), whose offsets and buffers go to the host
/// first.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "descriptor tables",
    hold: |inner| {
        let _spare = SPARE.lock();
        // (Under the table's lock, so that no thread notes a file or
        // buffers a write until the fork is done.)
        let files = crate::kernel::thread::current().fd_table.get().files.lock();
        share_offsets(&files);
        inner()
    },
    alone: share_offsets_alone,
    child: crate::sync::ForkHook::no_change,
};

/// The file system's `alone` step in fork (`FORK_HOOK`): as `hold` does;
/// with no file noted there is nothing to do, and the table's lock is not
/// taken.
fn share_offsets_alone() {
    if crate::kernel::fs::file::any_noted() {
        share_offsets(&crate::kernel::thread::current().fd_table.get().files.lock());
    }
}

/// Before a fork: the child shares every open file description, not the
/// library OS's state of them, so the offsets the library OS owns go back
/// to the host, and write-back buffers are written out and stop.
fn share_offsets(files: &[(i32, Arc<file::OpenFile>)]) {
    for (n, f) in files.iter() {
        f.share_offset(*n);
    }
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
