//! Files of exclusive mounts that the program holds open for reading.
//!
//! An exclusive mount is read-only and nothing outside the picoprocess tree
//! changes it (docs/FILESYSTEM.md, "The directory cache"), so a regular
//! file opened there keeps its attributes and its content while it is
//! open. The library OS then answers `fstat` (and `statx`/`newfstatat` with
//! `AT_EMPTY_PATH`) from the attributes (asked of the host once), and
//! `pread64` from a read-only
//! view of the whole file in the runtime's memory (`mm::runtime::FileView`),
//! mapped at the first read: a copy instead of a host call. The
//! descriptor's table notes the file (`FdTable::note_file`) and clears its
//! pass-through bit, so that the direct entries send these calls to the
//! handlers; every other call on it still goes to the host.
//!
//! `read`, `readv` and `preadv` go to the host: `read` moves the file
//! offset, which the host keeps, shared with every `dup` and every process
//! the descriptor was passed to.
#![deny(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use crate::host::Statx;
use crate::mm::runtime::FileView;
use core::sync::atomic::{AtomicBool, Ordering};

/// Are files noted at all? Not once two processes share a descriptor
/// table (`CLONE_FILES` without `CLONE_VM`), each with its own copy of the
/// table's state in the library OS: one's close would not reach the
/// other's notes, and a number reused there would read the old file.
static NOTING: AtomicBool = AtomicBool::new(true);

/// Should a file just opened be noted (`FdTable::note_file`)?
pub fn noting() -> bool {
    NOTING.load(Ordering::Relaxed)
}

/// Notes no more files, and forgets those of `fds` (called before a clone
/// that shares the table with a new process, which inherits this).
pub fn stop_noting(fds: &super::FdTable) {
    NOTING.store(false, Ordering::Relaxed);
    fds.forget_files_in(0, u32::MAX);
}

/// Linux caps one read at this many bytes (`MAX_RW_COUNT`).
const MAX_RW_COUNT: usize = 0x7fff_f000;
/// The end of the program's address space (`TASK_SIZE_MAX`).
const USER_END: usize = 0x7fff_ffff_f000;
/// Files larger than this are read by the host (their view would take too
/// much of the view area, `mm::runtime::VIEW_SPAN`).
pub const MAX_VIEW: usize = 256 << 20;

/// A regular file of an exclusive mount, open for reading.
pub struct OpenFile {
    /// The mount it was opened on.
    mount: usize,
    /// Its attributes: the host's, at the first call that needs them.
    stx: spin::Once<Statx>,
    /// A thread is asking the host for `stx` (or has asked): others do not
    /// wait (in a fork child, the thread that was asking is gone).
    stx_started: AtomicBool,
    /// Its view, once a read made it (None inside: mapping failed).
    view: spin::Once<Option<FileView>>,
    /// As `stx_started`, for the view.
    started: AtomicBool,
}

impl OpenFile {
    /// A file opened on mount `mount`. Its attributes are asked of the host
    /// at the first call that needs them (an open that is only closed
    /// again, the commonest, then costs no copy of them).
    pub fn new(mount: usize) -> OpenFile {
        OpenFile {
            mount,
            stx: spin::Once::new(),
            stx_started: AtomicBool::new(false),
            view: spin::Once::new(),
            started: AtomicBool::new(false),
        }
    }

    /// Its attributes, open at `fd` in table `fds`: None when the host
    /// should answer (another thread is asking it; the file turned out to
    /// be on another host file system than its mount, such as /proc under
    /// a mount of `/`, and is then forgotten).
    pub fn statx(&self, fds: &super::FdTable, fd: i32) -> Option<&Statx> {
        if let Some(s) = self.stx.get() {
            return Some(s);
        }
        if self.stx_started.swap(true, Ordering::Acquire) {
            return None;
        }
        use super::walk::{S_IFMT, S_IFREG};
        match host::statx(
            fd as isize,
            c"",
            host::AT_EMPTY_PATH,
            super::dcache::STATX_CACHED,
        ) {
            Ok(s)
                if s.mode() & S_IFMT == S_IFREG
                    && super::dcache::on_mount_fs(fds, self.mount, &s) =>
            {
                Some(self.stx.call_once(|| s))
            }
            _ => {
                fds.forget_files_in(fd as u32, fd as u32);
                None
            }
        }
    }

    /// The file's view: made at the first call (from descriptor `fd`), None
    /// when it cannot be had (too large, no room, being made by another
    /// thread at this moment).
    fn view(&self, fd: i32) -> Option<&FileView> {
        if let Some(v) = self.view.get() {
            return v.as_ref();
        }
        if self.started.swap(true, Ordering::Acquire) {
            return None;
        }
        let size = self.stx.get()?.size() as usize;
        self.view
            .call_once(|| {
                (size <= MAX_VIEW)
                    .then(|| FileView::map(fd, size).ok())
                    .flatten()
            })
            .as_ref()
    }

    /// pread64 of `count` bytes at `offset` into program address `buf`,
    /// through descriptor `fd` (this file's): None when the host should
    /// answer instead (no view, a buffer Linux would check first, a copy
    /// that faulted: the host then gives Linux's partial result or EFAULT).
    pub fn pread(
        &self,
        fds: &super::FdTable,
        fd: i32,
        buf: usize,
        count: usize,
        offset: i64,
    ) -> Option<Result<usize, Errno>> {
        // As ksys_pread64 and vfs_read check, in their order: the offset,
        // the buffer (left to the host), then the offset's overflow
        // (rw_verify_area); the count is capped only after.
        if offset < 0 {
            return Some(Err(Errno::EINVAL));
        }
        if buf.checked_add(count).is_none_or(|end| end > USER_END) {
            return None;
        }
        if offset.checked_add(count as i64).is_none() {
            return Some(Err(Errno::EINVAL));
        }
        let count = count.min(MAX_RW_COUNT);
        let size = self.statx(fds, fd)?.size();
        if count == 0 || offset as u64 >= size {
            return Some(Ok(0));
        }
        let n = count.min((size - offset as u64) as usize);
        let view = self.view(fd)?;
        view.copy_to_user(offset as usize, n, buf).ok()?;
        Some(Ok(n))
    }
}
