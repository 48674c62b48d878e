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
//! `read`, `readv`, `preadv2` at offset -1 and `lseek` use the file
//! offset, which belongs to the open file description: shared with every
//! `dup` of the descriptor and every process it went to. The library OS
//! keeps it itself (**owns** it) for as long as only this descriptor, in
//! this process's memory, refers to the description: from the open until
//! something could share it (`OpenFile::share_offset`: a call on the
//! descriptor the library OS does not serve itself, such as `dup` or
//! `fcntl`; `fork`; `execve`; `sendmsg`, which may pass it; `sendfile` from
//! it). It then writes the offset back to the host (one `lseek`) and the
//! host keeps it from then on: a read claims its range by moving the host's
//! offset forward by its length with one `lseek(SEEK_CUR)`, atomic on the
//! description, and back to the end of the file if the read was short.
#![deny(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use crate::host::Statx;
use crate::kernel::thread::count_host_call;
use crate::mm::runtime::FileView;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

/// Has this process ever noted a file (`FdTable::note_file`)? Until then
/// the dispatcher skips the notes' checks (one load).
static ANY_NOTED: AtomicBool = AtomicBool::new(false);

/// Has this process ever noted a file?
#[inline]
pub fn any_noted() -> bool {
    ANY_NOTED.load(Ordering::Relaxed)
}

/// A file is being noted.
pub fn noted() {
    ANY_NOTED.store(true, Ordering::Relaxed);
}

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
    fds.share_offsets();
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
    /// The file offset while the library OS owns it, else [`HOST`] (or
    /// [`MOVING`] while it is being written back).
    pos: AtomicU64,
    /// For a file opened for writing on a write-back mount: its buffer
    /// (and then none of the above is used).
    wb: Option<WriteBack>,
}

/// Writes shorter than this are buffered (the seeds' "under 4 KiB").
pub const SMALL_WRITE: usize = 4096;
/// A write-back buffer's size: it is flushed when a write would not fit.
pub const WRITE_BUFFER: usize = 16 << 10;

/// How many write-back buffers of this process hold data (a flush point
/// with none costs one load).
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// Does any write-back buffer of this process hold data?
#[inline]
pub fn any_pending() -> bool {
    PENDING.load(Ordering::Relaxed) != 0
}

/// The write-back state of a file (docs/FILESYSTEM.md, "Write-back
/// mounts"). The host keeps the file offset throughout: a buffer holds the
/// data of consecutive `write`s made at the host's offset, which nothing
/// moves until the buffer is flushed (every other call on the descriptor
/// flushes first; anything that could share the description stops the
/// buffering), and the flush writes it there with one host `write`.
struct WriteBack {
    /// Writes go straight to the host: the descriptor is open for reading
    /// only, or the file may have another descriptor (an open of it by
    /// another, a dup, a fork: `FdTable::note_write_back`).
    direct: AtomicBool,
    /// The file's identity on the host (device, inode).
    id: (u64, u64),
    /// The errno of a flush that failed (the data it lost), for the next
    /// `write`, `fsync` or `close` to return; 0 for none.
    err: AtomicI32,
    buf: crate::sync::Lock<WriteBuf>,
}

struct WriteBuf {
    data: alloc::vec::Vec<u8>,
}

/// How many threads are in [`WriteBack::locked`] (fork waits for none:
/// `FORK_HOOK`).
static BUSY: AtomicUsize = AtomicUsize::new(0);

impl WriteBack {
    /// Runs `f` on the buffer under its lock, unless the file writes
    /// directly (None). Once direct, a file's buffer is empty and its lock
    /// is never taken again: a fork makes every buffering file of the
    /// forking table direct, then waits until no thread is in here, so the
    /// child never inherits a buffer's lock held.
    fn locked<R>(&self, f: impl FnOnce(&mut WriteBuf) -> R) -> Option<R> {
        BUSY.fetch_add(1, Ordering::SeqCst);
        let r = if self.direct.load(Ordering::SeqCst) {
            None
        } else {
            let mut b = self.buf.lock();
            (!self.direct.load(Ordering::SeqCst)).then(|| f(&mut b))
        };
        BUSY.fetch_sub(1, Ordering::SeqCst);
        r
    }

    /// Keeps the error of a flush for the next call that returns it.
    fn keep_error(&self, r: Result<(), Errno>) {
        if let Err(e) = r {
            self.err.store(e.0, Ordering::Release);
        }
    }

    fn take_error(&self) -> Option<Errno> {
        match self.err.swap(0, Ordering::AcqRel) {
            0 => None,
            e => Some(Errno(e)),
        }
    }
}

/// The write-back files' part in fork: `kernel::fs::FORK_HOOK` (before
/// this one, holding the forking thread's table) flushes every buffering
/// file of that table and makes it direct; this waits until no thread is
/// in a buffer's critical section, so none holds a buffer's lock across
/// the fork. (A file of another table, which the child does not have,
/// never matters to it.)
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "write-back buffers",
    hold: |inner| {
        while BUSY.load(Ordering::SeqCst) != 0 {
            core::hint::spin_loop();
        }
        inner()
    },
    alone: crate::sync::ForkHook::nothing,
    child: crate::sync::ForkHook::no_change,
};

/// [`OpenFile::pos`]: the host keeps the offset.
const HOST: u64 = u64::MAX;
/// [`OpenFile::pos`]: the offset is being written back to the host.
const MOVING: u64 = u64::MAX - 1;
/// The largest offset the library OS sets itself: beyond, the host (whose
/// file systems differ in their largest offset) says whether it may.
const MAX_OWN_OFFSET: u64 = 1 << 40;

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
            // Just opened (not O_APPEND: opened for reading only, and the
            // offset of a read is where it is): at 0, as the host's.
            pos: AtomicU64::new(0),
            wb: None,
        }
    }

    /// A regular file `id` (host device and inode) opened on write-back
    /// mount `mount`: its writes are buffered unless `direct`.
    pub fn write_back(mount: usize, id: (u64, u64), direct: bool) -> OpenFile {
        OpenFile {
            pos: AtomicU64::new(HOST),
            wb: Some(WriteBack {
                direct: AtomicBool::new(direct),
                id,
                err: AtomicI32::new(0),
                buf: crate::sync::Lock::new(
                    crate::sync::Rank::WriteBuffer,
                    WriteBuf {
                        data: alloc::vec::Vec::new(),
                    },
                ),
            }),
            ..OpenFile::new(mount)
        }
    }

    /// Is it a write-back file (rather than one of an exclusive mount)?
    #[inline]
    pub fn is_write_back(&self) -> bool {
        self.wb.is_some()
    }

    /// A write-back file's identity on the host (device, inode).
    pub fn id(&self) -> Option<(u64, u64)> {
        self.wb.as_ref().map(|w| w.id)
    }

    /// write(2) (writev) of `segs` through descriptor `fd` (this file's): a
    /// write shorter than [`SMALL_WRITE`] is copied into the buffer; None
    /// when the host should write (a larger write, after the buffer; a file
    /// whose writes go straight to the host; a buffer that faults).
    pub fn write(&self, fd: i32, segs: &Segments) -> Option<Result<usize, Errno>> {
        let wb = self.wb.as_ref()?;
        let total = segs.total();
        if total == 0 {
            return None;
        }
        wb.locked(|b| {
            if let Some(e) = wb.take_error() {
                return Some(Err(e));
            }
            if total >= SMALL_WRITE || b.data.len() + total > WRITE_BUFFER {
                if let Err(e) = flush_locked(b, fd) {
                    // This write returns it.
                    return Some(Err(e));
                }
                if total >= SMALL_WRITE {
                    // The host writes it, after what was buffered.
                    return None;
                }
            }
            let old = b.data.len();
            if old == 0 {
                b.data.reserve_exact(WRITE_BUFFER);
            }
            b.data.resize(old + total, 0);
            if segs.copy_into(&mut b.data[old..]).is_err() {
                // The host answers a buffer that faults (a partial write or
                // EFAULT), after what was buffered before.
                b.data.truncate(old);
                wb.keep_error(flush_locked(b, fd));
                return None;
            }
            if old == 0 {
                PENDING.fetch_add(1, Ordering::Relaxed);
            }
            Some(Ok(total))
        })?
    }

    /// Writes the buffer of a write-back file out (through descriptor
    /// `fd`): before any other call on the descriptor and at the flush
    /// points. An error is kept for the next `write`, `fsync` or `close`.
    pub fn flush(&self, fd: i32) {
        if let Some(wb) = self.wb.as_ref() {
            wb.locked(|b| wb.keep_error(flush_locked(b, fd)));
        }
    }

    /// The error the last flush met, if no call has returned it yet
    /// (`fsync`, `close`).
    pub fn take_error(&self) -> Option<Errno> {
        self.wb.as_ref()?.take_error()
    }

    /// The offset, if the library OS owns it (waits while another thread
    /// writes it back).
    fn owned_pos(&self) -> Option<u64> {
        // (A write-back file's offset is always the host's: HOST.)
        loop {
            match self.pos.load(Ordering::Acquire) {
                HOST => return None,
                MOVING => core::hint::spin_loop(),
                p => return Some(p),
            }
        }
    }

    /// The host is about to use the offset of descriptor `fd` (a read the
    /// library OS left to it): if the library OS owns the offset, the host
    /// gets it back. (A write-back file's offset is the host's already,
    /// and its buffer was flushed before the call.)
    pub fn offset_to_host(&self, fd: i32) {
        if self.wb.is_none() {
            self.share_offset(fd);
        }
    }

    /// Something may share the open file description open at `fd` (or
    /// use its offset behind the library OS): if the library OS owns the
    /// offset, it writes it back to the host, which keeps it from now on.
    pub fn share_offset(&self, fd: i32) {
        if let Some(wb) = self.wb.as_ref() {
            // A write-back file: flushed, and written directly from now on.
            wb.locked(|b| {
                wb.keep_error(flush_locked(b, fd));
                wb.direct.store(true, Ordering::SeqCst);
            });
            return;
        }
        loop {
            let p = match self.owned_pos() {
                None => return,
                Some(p) => p,
            };
            if self
                .pos
                .compare_exchange(p, MOVING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let _ = seek(fd, p as i64, host::SEEK_SET);
                self.pos.store(HOST, Ordering::Release);
                return;
            }
        }
    }

    /// lseek(2) of descriptor `fd` (this file's) while the library OS owns
    /// its offset: None when the host should answer (it then owns the
    /// offset).
    pub fn lseek(
        &self,
        fds: &super::FdTable,
        fd: i32,
        offset: i64,
        whence: i32,
    ) -> Option<Result<usize, Errno>> {
        const SEEK_END: i32 = 2;
        self.owned_pos()?;
        if !(host::SEEK_SET..=SEEK_END).contains(&whence) {
            // SEEK_DATA, SEEK_HOLE and the invalid ones.
            self.share_offset(fd);
            return None;
        }
        let size = self.statx(fds, fd)?.size();
        loop {
            let p = self.owned_pos()?;
            let base = match whence {
                host::SEEK_SET => 0,
                host::SEEK_CUR => p as i128,
                _ => size as i128,
            };
            let new = base + offset as i128;
            if new < 0 {
                return Some(Err(Errno::EINVAL));
            }
            if new > MAX_OWN_OFFSET as i128 {
                self.share_offset(fd);
                return None;
            }
            if self
                .pos
                .compare_exchange(p, new as u64, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some(Ok(new as usize));
            }
        }
    }

    /// Its attributes, open at `fd` in table `fds`: None when the host
    /// should answer (another thread is asking it; the file turned out to
    /// be on another host file system than its mount, such as /proc under
    /// a mount of `/`, and is then forgotten).
    pub fn statx(&self, fds: &super::FdTable, fd: i32) -> Option<&Statx> {
        if self.wb.is_some() {
            return None;
        }
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
        let segs = Segments::one(buf, count)?;
        // vfs_read checks the count before capping it (preadv checks the
        // capped total).
        if offset.checked_add(count as i64).is_none() {
            return Some(Err(Errno::EINVAL));
        }
        self.pread_segments(fds, fd, &segs, offset)
    }

    /// preadv (and pread64) of `segs` at `offset` (not negative), which
    /// Linux checks after the buffers, as [`Segments`] did.
    pub fn pread_segments(
        &self,
        fds: &super::FdTable,
        fd: i32,
        segs: &Segments,
        offset: i64,
    ) -> Option<Result<usize, Errno>> {
        let total = segs.total();
        if offset.checked_add(total as i64).is_none() {
            return Some(Err(Errno::EINVAL));
        }
        let size = self.statx(fds, fd)?.size();
        if total == 0 || offset as u64 >= size {
            return Some(Ok(0));
        }
        let n = total.min((size - offset as u64) as usize);
        let view = self.view(fd)?;
        segs.copy_from(view, offset as usize, n).ok()?;
        Some(Ok(n))
    }

    /// read (readv; preadv with offset -1) of `segs` at the descriptor's
    /// file offset, which it moves: None when the host should answer
    /// (then nothing was changed).
    pub fn read_segments(
        &self,
        fds: &super::FdTable,
        fd: i32,
        segs: &Segments,
    ) -> Option<Result<usize, Errno>> {
        let total = segs.total();
        if total == 0 {
            // Linux checks the offset (rw_verify_area), which for a
            // regular file is never negative, and reads nothing.
            return Some(Ok(0));
        }
        let size = self.statx(fds, fd)?.size();
        let view = self.view(fd)?;
        while let Some(p) = self.owned_pos() {
            let n = if p >= size {
                0
            } else {
                total.min((size - p) as usize)
            };
            if segs.copy_from(view, p as usize, n).is_err() {
                // The host answers a buffer that faults (a partial count
                // or EFAULT), from the offset it now owns.
                self.share_offset(fd);
                return None;
            }
            if self
                .pos
                .compare_exchange(p, p + n as u64, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some(Ok(n));
            }
        }
        // Claim [old, old + total) of the offset: one atomic move on the
        // open file description, whoever shares it. It fails (EINVAL) only
        // past the file system's largest offset; the host then answers.
        let new = seek(fd, total as i64, host::SEEK_CUR).ok()?;
        let old = (new - total) as u64;
        let n = if old >= size {
            0
        } else {
            total.min((size - old) as usize)
        };
        if segs.copy_from(view, old as usize, n).is_err() {
            // A buffer that faults: put the offset back; the host reads
            // (and returns what Linux returns: a partial count or EFAULT).
            let _ = seek(fd, old as i64, host::SEEK_SET);
            return None;
        }
        if n < total {
            // Short (the end of the file): the offset ends where the data
            // did, as Linux leaves it.
            let _ = seek(fd, (old + n as u64) as i64, host::SEEK_SET);
        }
        Some(Ok(n))
    }
}

/// Writes buffer `b` out through descriptor `fd` at the host's offset and
/// empties it; on an error the data is lost.
fn flush_locked(b: &mut WriteBuf, fd: i32) -> Result<(), Errno> {
    if b.data.is_empty() {
        return Ok(());
    }
    let mut done = 0;
    let r = loop {
        if done == b.data.len() {
            break Ok(());
        }
        count_host_call();
        match host::write(fd, &b.data[done..]) {
            Ok(0) => break Err(Errno::EIO),
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(e) => break Err(e),
        }
    };
    b.data.clear();
    PENDING.fetch_sub(1, Ordering::Relaxed);
    r
}

/// lseek of the program's descriptor `fd` by the runtime, counted as a
/// host call made on the program's behalf (`--stats`).
fn seek(fd: i32, offset: i64, whence: i32) -> Result<usize, Errno> {
    count_host_call();
    host::lseek(fd, offset, whence)
}

/// The most buffers of a `readv`/`preadv` the library OS serves itself
/// (more go to the host).
pub const MAX_SEGMENTS: usize = 16;

/// The program's buffers of one read, checked as Linux's `import_iovec`
/// checks them (each length at most `SSIZE_MAX`, each buffer inside the
/// address space; the total capped at `MAX_RW_COUNT`, the last buffers
/// shortened to fit).
pub struct Segments {
    segs: Buffers,
}

/// Would Linux refuse buffer `base` of `len` bytes (a length above
/// `SSIZE_MAX`: EINVAL; past the address space: EFAULT)?
fn refused(base: usize, len: usize) -> bool {
    len > isize::MAX as usize || base.checked_add(len).is_none_or(|end| end > USER_END)
}

/// A read's or write's buffers: one (read, write, pread) without the room
/// for an `iovec` array (these are made on every call; on the stack, so
/// the size difference costs nothing but stack).
#[allow(clippy::large_enum_variant)]
enum Buffers {
    One((usize, usize)),
    Many([(usize, usize); MAX_SEGMENTS], usize),
}

impl Segments {
    /// One buffer: None when Linux would refuse it (EFAULT: the host
    /// says so).
    #[inline]
    pub fn one(buf: usize, count: usize) -> Option<Segments> {
        if refused(buf, count) {
            return None;
        }
        Some(Segments {
            segs: Buffers::One((buf, count.min(MAX_RW_COUNT))),
        })
    }

    /// Buffers (base, length) as an `iovec` array gives them: None when
    /// there are more than [`MAX_SEGMENTS`] or Linux would refuse one
    /// (EINVAL, EFAULT: the host answers).
    pub fn from_buffers(it: impl IntoIterator<Item = (usize, usize)>) -> Option<Segments> {
        let mut segs = [(0, 0); MAX_SEGMENTS];
        let mut n = 0;
        let mut left = MAX_RW_COUNT;
        for (base, len) in it {
            if n == MAX_SEGMENTS || refused(base, len) {
                return None;
            }
            let len = len.min(left);
            left -= len;
            segs[n] = (base, len);
            n += 1;
        }
        Some(Segments {
            segs: Buffers::Many(segs, n),
        })
    }

    /// The buffers, in order.
    #[inline]
    fn list(&self) -> &[(usize, usize)] {
        match &self.segs {
            Buffers::One(b) => core::slice::from_ref(b),
            Buffers::Many(segs, n) => &segs[..*n],
        }
    }

    /// Their total length (at most `MAX_RW_COUNT`).
    pub fn total(&self) -> usize {
        self.list().iter().map(|s| s.1).sum()
    }

    /// Copies the buffers' bytes, in order, into `out` (their total long).
    fn copy_into(&self, out: &mut [u8]) -> Result<(), Errno> {
        let mut done = 0;
        for &(base, len) in self.list() {
            if len > 0 {
                crate::mm::user::copy_in(&mut out[done..done + len], base)?;
            }
            done += len;
        }
        Ok(())
    }

    /// Copies `n` bytes of `view` from `off` into the buffers in order.
    fn copy_from(&self, view: &FileView, off: usize, n: usize) -> Result<(), Errno> {
        let mut done = 0;
        for &(base, len) in self.list() {
            if done == n {
                break;
            }
            let k = len.min(n - done);
            if k > 0 {
                view.copy_to_user(off + done, k, base)?;
            }
            done += k;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_checked_as_linux_imports_them() {
        // A length above SSIZE_MAX, a buffer past the address space, too
        // many: the host answers.
        assert!(Segments::one(0x1000, usize::MAX).is_none());
        assert!(Segments::one(USER_END - 10, 11).is_none());
        assert!(Segments::one(USER_END - 10, 10).is_some());
        assert!(Segments::from_buffers((0..MAX_SEGMENTS + 1).map(|i| (0x1000 * i, 1))).is_none());
        // The total is capped at MAX_RW_COUNT, the last buffers shortened.
        let s = Segments::from_buffers([(0x1000, MAX_RW_COUNT - 5), (0x2000, 100), (0x3000, 7)])
            .unwrap();
        assert_eq!(s.total(), MAX_RW_COUNT);
        assert_eq!(s.list()[1], (0x2000, 5));
        assert_eq!(s.list()[2], (0x3000, 0));
        assert_eq!(
            Segments::one(0x1000, MAX_RW_COUNT + 100).unwrap().total(),
            MAX_RW_COUNT
        );
        assert_eq!(Segments::from_buffers([]).unwrap().total(), 0);
    }
}
