//! The host-call layer: the only module that issues `syscall` instructions
//! on behalf of the runtime.
//!
//! # Safety
//!
//! Raw system calls can do anything to the process. Every function here is a
//! thin, typed wrapper; callers pass pointers that must be valid for what the
//! kernel does with them. The raw `syscallN` functions are `unsafe`; the typed
//! wrappers that only pass integers or Rust references are safe.
#![allow(unsafe_code)]

pub mod abi;
pub mod errno;
pub mod fds;
pub mod nr;
pub mod own;
pub mod vdso;

use alloc::vec::Vec;

use crate::host::errno::Errno;
use core::arch::asm;
use core::sync::atomic::AtomicU8;

/// Result of a host call: the kernel's non-negative return value, or an errno.
pub type HostResult = Result<usize, Errno>;

#[inline(always)]
fn check(ret: isize) -> HostResult {
    Errno::from_ret(ret)
}

/// Issues system call `nr` with six arguments and returns the raw kernel result.
///
/// # Safety
/// The arguments must be valid for the call (pointers to live memory, etc.).
#[inline(always)]
pub unsafe fn raw6(
    nr: usize,
    a0: usize,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
) -> isize {
    let ret: isize;
    // SAFETY: the caller guarantees the arguments are valid; rcx and r11 are
    // clobbered by `syscall`, which we declare.
    unsafe {
        asm!("syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a0, in("rsi") a1, in("rdx") a2,
            in("r10") a3, in("r8") a4, in("r9") a5,
            lateout("rcx") _, lateout("r11") _,
            options(nostack, preserves_flags));
    }
    ret
}

/// Issues a system call and converts the result.
///
/// # Safety
/// As for [`raw6`].
#[inline(always)]
pub unsafe fn call(nr: usize, a: [usize; 6]) -> HostResult {
    // SAFETY: forwarded to the caller.
    check(unsafe { raw6(nr, a[0], a[1], a[2], a[3], a[4], a[5]) })
}

macro_rules! sc {
    ($nr:expr) => { call($nr, [0; 6]) };
    ($nr:expr, $a:expr) => { call($nr, [$a as usize, 0, 0, 0, 0, 0]) };
    ($nr:expr, $a:expr, $b:expr) => { call($nr, [$a as usize, $b as usize, 0, 0, 0, 0]) };
    ($nr:expr, $a:expr, $b:expr, $c:expr) => { call($nr, [$a as usize, $b as usize, $c as usize, 0, 0, 0]) };
    ($nr:expr, $a:expr, $b:expr, $c:expr, $d:expr) => { call($nr, [$a as usize, $b as usize, $c as usize, $d as usize, 0, 0]) };
    ($nr:expr, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => { call($nr, [$a as usize, $b as usize, $c as usize, $d as usize, $e as usize, 0]) };
    ($nr:expr, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr) => { call($nr, [$a as usize, $b as usize, $c as usize, $d as usize, $e as usize, $f as usize]) };
}

/// clock_gettime(CLOCK_MONOTONIC) in nanoseconds, by a system call (not
/// the vDSO: callable from any layer and context).
pub fn monotonic_ns() -> u64 {
    let mut ts = [0i64; 2];
    // SAFETY: `ts` is a live timespec the kernel writes.
    let _ = unsafe { sc!(nr::CLOCK_GETTIME, 1, ts.as_mut_ptr()) };
    (ts[0] as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts[1] as u64)
}

pub const AT_FDCWD: isize = -100;
/// openat(2) flags.
pub const O_RDONLY: i32 = 0;
pub const O_RDWR: i32 = 0o2;
pub const O_WRONLY: i32 = 0o1;
pub const O_CREAT: i32 = 0o100;
pub const O_APPEND: i32 = 0o2000;
pub const O_CLOEXEC: i32 = 0o2000000;
pub const O_DIRECTORY: i32 = 0o200000;
pub const O_DIRECT: i32 = 0o40000;
/// O_DSYNC, which O_SYNC includes.
pub const O_DSYNC: i32 = 0o10000;
pub const O_NOFOLLOW: i32 = 0o400000;
pub const O_PATH: i32 = 0o10000000;
pub const O_TRUNC: i32 = 0o1000;
pub const O_EXCL: i32 = 0o200;
pub const O_ACCMODE: i32 = 0o3;
/// `O_TMPFILE` (with its `O_DIRECTORY` bit).
pub const O_TMPFILE: i32 = 0o20200000;
/// *at(2) flags.
pub const AT_SYMLINK_NOFOLLOW: i32 = 0x100;
pub const AT_REMOVEDIR: i32 = 0x200;
pub const AT_SYMLINK_FOLLOW: i32 = 0x400;
pub const AT_EACCESS: i32 = 0x200;
pub const AT_EMPTY_PATH: i32 = 0x1000;
/// openat2(2) `resolve` flags.
pub const RESOLVE_NO_XDEV: u64 = 0x01;
pub const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
pub const RESOLVE_NO_SYMLINKS: u64 = 0x04;
pub const RESOLVE_BENEATH: u64 = 0x08;
pub const RESOLVE_IN_ROOT: u64 = 0x10;

/// openat2(2)'s `struct open_how`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenHow {
    pub flags: u64,
    pub mode: u64,
    pub resolve: u64,
}

impl OpenHow {
    /// The structure's bytes, as the kernel reads them.
    pub fn as_bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&self.flags.to_ne_bytes());
        b[8..16].copy_from_slice(&self.mode.to_ne_bytes());
        b[16..].copy_from_slice(&self.resolve.to_ne_bytes());
        b
    }
}

/// openat2(2) with a NUL-terminated path.
pub fn openat2(dirfd: isize, path: &core::ffi::CStr, how: &OpenHow) -> HostResult {
    // SAFETY: `path` is NUL-terminated and live; `how` is a live `open_how`
    // of the size passed.
    unsafe {
        sc!(
            nr::OPENAT2,
            dirfd,
            path.as_ptr(),
            how as *const OpenHow,
            core::mem::size_of::<OpenHow>()
        )
    }
}

/// readlinkat(2) of NUL-terminated `path` relative to `dirfd` into `buf`;
/// returns the length.
pub fn readlinkat(dirfd: isize, path: &core::ffi::CStr, buf: &mut [u8]) -> HostResult {
    // SAFETY: `path` is NUL-terminated; `buf` is writable for its length.
    unsafe {
        sc!(
            nr::READLINKAT,
            dirfd,
            path.as_ptr(),
            buf.as_mut_ptr(),
            buf.len()
        )
    }
}

/// fcntl(2) with an integer argument (F_DUPFD_CLOEXEC, F_GETFD, ...).
pub fn fcntl(fd: i32, cmd: i32, arg: usize) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::FCNTL, fd, cmd, arg) }
}

/// lseek(2) of host fd `fd`: the new offset.
pub fn lseek(fd: i32, offset: i64, whence: i32) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::LSEEK, fd, offset, whence) }
}

pub const SEEK_SET: i32 = 0;
pub const SEEK_CUR: i32 = 1;

/// write(2) to a host fd.
pub fn write(fd: i32, buf: &[u8]) -> HostResult {
    // SAFETY: `buf` is a live slice.
    unsafe { sc!(nr::WRITE, fd, buf.as_ptr(), buf.len()) }
}

/// Writes all of `buf`, retrying on short writes and EINTR; stops at the
/// first error, which it returns (or at a write of nothing).
pub fn write_all(fd: i32, mut buf: &[u8]) -> Result<(), Errno> {
    while !buf.is_empty() {
        match write(fd, buf) {
            Ok(0) => return Ok(()),
            Ok(n) => buf = &buf[n..],
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes the runtime's own output (warnings, traces, statistics) to `fd`,
/// which the program may have made anything: a file at its RLIMIT_FSIZE
/// (the kernel answers SIGXFSZ), a pipe nobody reads (SIGPIPE). The
/// program never made this write, so those signals must not reach it, nor
/// end it through a default action: both are blocked around the write, and
/// one the write raised is taken back (unless one was pending before, which
/// stays the program's).
pub fn write_diagnostic(fd: i32, buf: &[u8]) {
    const SIGPIPE: i32 = 13;
    const SIGXFSZ: i32 = 25;
    const SIG_BLOCK: i32 = 0;
    const SIG_SETMASK: i32 = 2;
    let ours = (1u64 << (SIGPIPE - 1)) | (1u64 << (SIGXFSZ - 1));
    let Ok(old) = rt_sigprocmask(SIG_BLOCK, Some(ours)) else {
        let _ = write_all(fd, buf);
        return;
    };
    let pending_before = rt_sigpending().unwrap_or(0);
    let raised = match write_all(fd, buf) {
        Err(Errno::EFBIG) => 1u64 << (SIGXFSZ - 1),
        Err(Errno::EPIPE) => 1u64 << (SIGPIPE - 1),
        _ => 0,
    };
    let take = raised & !pending_before;
    if take != 0 {
        let _ = rt_sigtake(take, &mut [0u8; 128]);
    }
    let _ = rt_sigprocmask(SIG_SETMASK, Some(old));
}

/// process_vm_readv(2) of the 8 bytes at `addr` in process `pid`.
pub fn read_remote_u64(pid: i32, addr: usize) -> Result<u64, Errno> {
    let mut v = [0u8; 8];
    match read_remote(pid, addr, &mut v)? {
        8 => Ok(u64::from_ne_bytes(v)),
        _ => Err(Errno::EFAULT),
    }
}

/// getdents64(2) into a slice.
pub fn getdents64(fd: i32, buf: &mut [u8]) -> HostResult {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    unsafe { sc!(nr::GETDENTS64, fd, buf.as_mut_ptr(), buf.len()) }
}

/// The entry at byte `off` of a getdents64 buffer `buf` (its filled
/// part): its length and its name (without the NUL), or None past the last
/// whole entry. (struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8
/// type, then the name.)
pub fn dirent_at(buf: &[u8], off: usize) -> Option<(usize, &[u8])> {
    const NAME: usize = 19;
    let head = buf.get(off..off.checked_add(NAME)?)?;
    let reclen = u16::from_ne_bytes([head[16], head[17]]) as usize;
    let name = buf.get(off + NAME..off.checked_add(reclen)?)?;
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Some((reclen, &name[..len]))
}

/// The names in a getdents64 buffer's filled part `buf`, in order
/// ([`dirent_at`]).
pub fn dirent_names(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut off = 0;
    core::iter::from_fn(move || {
        let (reclen, name) = dirent_at(buf, off)?;
        off += reclen;
        Some(name)
    })
}

/// The descriptor number a /proc/PID/fd entry's name is (decimal digits,
/// within i32; "." and ".." are not).
pub fn parse_fd_name(name: &[u8]) -> Option<i32> {
    if name.is_empty() || name.len() > 10 || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    name.iter()
        .try_fold(0i64, |n, d| Some(n * 10 + (d - b'0') as i64))
        .and_then(|n| i32::try_from(n).ok())
}

/// A hexadecimal number without prefix (as /proc's maps and the perf
/// tables write them): digits only, at least one, within usize.
pub fn parse_hex(s: &[u8]) -> Option<usize> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0usize, |v, &c| {
        let d = (c as char).to_digit(16)? as usize;
        v.checked_mul(16)?.checked_add(d)
    })
}

/// The whole of the file open at `fd` (a /proc file, a table), read with
/// pread from its start; EINTR retried.
pub fn read_to_end(fd: i32) -> Result<Vec<u8>, Errno> {
    let mut out = Vec::new();
    let mut chunk = alloc::vec![0u8; 16 << 10];
    loop {
        match pread(fd, &mut chunk, out.len() as u64) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// pread64(2) into a slice.
pub fn pread(fd: i32, buf: &mut [u8], off: u64) -> HostResult {
    // SAFETY: `buf` is a live, writable slice.
    unsafe { sc!(nr::PREAD64, fd, buf.as_mut_ptr(), buf.len(), off) }
}

/// Reads exactly `buf.len()` bytes at `off` or fails with EIO on a short file.
pub fn pread_exact(fd: i32, buf: &mut [u8], off: u64) -> Result<(), Errno> {
    let mut done = 0;
    while done < buf.len() {
        match pread(fd, &mut buf[done..], off + done as u64) {
            Ok(0) => return Err(Errno::EIO),
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// openat(2) with a NUL-terminated path.
pub fn openat(dirfd: isize, path: &core::ffi::CStr, flags: i32, mode: u32) -> HostResult {
    // SAFETY: `path` is NUL-terminated and live.
    unsafe { sc!(nr::OPENAT, dirfd, path.as_ptr(), flags, mode) }
}

/// openat(2) relative to the working directory of a path that is not
/// NUL-terminated (one from the launch configuration); EINVAL if it holds
/// a NUL.
pub fn open_path(path: &[u8], flags: i32, mode: u32) -> HostResult {
    let mut p = Vec::with_capacity(path.len() + 1);
    p.extend_from_slice(path);
    p.push(0);
    let c = core::ffi::CStr::from_bytes_with_nul(&p).map_err(|_| Errno::EINVAL)?;
    openat(AT_FDCWD, c, flags, mode)
}

/// faccessat(2).
pub fn faccessat(dirfd: isize, path: &core::ffi::CStr, mode: i32) -> HostResult {
    // SAFETY: `path` is NUL-terminated and live.
    unsafe { sc!(nr::FACCESSAT, dirfd, path.as_ptr(), mode) }
}

/// faccessat2(2) with a NUL-terminated path.
pub fn faccessat2(dirfd: isize, path: &core::ffi::CStr, mode: i32, flags: i32) -> HostResult {
    // SAFETY: `path` is NUL-terminated and live.
    unsafe { sc!(nr::FACCESSAT2, dirfd, path.as_ptr(), mode, flags) }
}

/// An `int` option of socket `fd` at level SOL_SOCKET (SO_TYPE, SO_DOMAIN).
pub fn getsockopt_int(fd: i32, opt: i32) -> Result<i32, Errno> {
    let mut v: i32 = 0;
    let mut len: u32 = 4;
    // SAFETY: `v` and `len` are live and of the sizes given.
    unsafe {
        sc!(
            nr::GETSOCKOPT,
            fd,
            1,
            opt,
            &mut v as *mut i32,
            &mut len as *mut u32
        )
    }?;
    Ok(v)
}

/// unshare(2).
pub fn unshare(flags: usize) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::UNSHARE, flags) }
}

/// close(2).
pub fn close(fd: i32) -> HostResult {
    // SAFETY: integer argument only.
    unsafe { sc!(nr::CLOSE, fd) }
}

/// The raw `struct stat` fields the runtime needs.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct Stat {
    pub st_dev: u64,
    pub st_ino: u64,
    pub st_nlink: u64,
    pub st_mode: u32,
    pub st_uid: u32,
    pub st_gid: u32,
    pub pad0: u32,
    pub st_rdev: u64,
    pub st_size: i64,
    pub st_blksize: i64,
    pub st_blocks: i64,
    pub times: [u64; 6],
    pub reserved: [i64; 3],
}

/// fstat(2).
/// stat(2) of `path` (following symlinks).
pub fn stat(path: &core::ffi::CStr) -> Result<Stat, Errno> {
    let mut st = Stat::default();
    // SAFETY: `path` is NUL-terminated; `st` is a live, correctly sized
    // `struct stat` the kernel writes.
    unsafe {
        sc!(
            nr::NEWFSTATAT,
            AT_FDCWD,
            path.as_ptr(),
            &mut st as *mut Stat,
            0
        )
    }?;
    Ok(st)
}

/// fstatat(2) (newfstatat) of NUL-terminated `path` relative to `dirfd`.
pub fn fstatat(dirfd: isize, path: &core::ffi::CStr, flags: i32) -> Result<Stat, Errno> {
    let mut st = Stat::default();
    // SAFETY: `path` is NUL-terminated; `st` is a live, correctly sized
    // `struct stat` the kernel writes.
    unsafe {
        sc!(
            nr::NEWFSTATAT,
            dirfd,
            path.as_ptr(),
            &mut st as *mut Stat,
            flags
        )
    }?;
    Ok(st)
}

/// A `struct statx` (statx(2)), kept as the kernel's 256 bytes.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct Statx(pub [u8; 256]);

impl Statx {
    fn u16_at(&self, o: usize) -> u16 {
        u16::from_ne_bytes([self.0[o], self.0[o + 1]])
    }
    fn u32_at(&self, o: usize) -> u32 {
        u32::from_ne_bytes(self.0[o..o + 4].try_into().unwrap())
    }
    fn u64_at(&self, o: usize) -> u64 {
        u64::from_ne_bytes(self.0[o..o + 8].try_into().unwrap())
    }
    /// `stx_mask`: the fields filled in.
    pub fn mask(&self) -> u32 {
        self.u32_at(0)
    }
    /// `stx_mode`.
    pub fn mode(&self) -> u32 {
        self.u16_at(28) as u32
    }
    /// `stx_mnt_id` (with `STATX_MNT_ID` in the mask).
    pub fn mnt_id(&self) -> u64 {
        u64::from_ne_bytes(self.0[0x90..0x98].try_into().unwrap_or([0; 8]))
    }
    /// `stx_size`.
    pub fn size(&self) -> u64 {
        self.u64_at(40)
    }
    /// Clears the birth time and its bit in `stx_mask` (what Linux gives
    /// when it was not asked for).
    pub fn clear_btime(&mut self) {
        const STATX_BTIME: u32 = 0x800;
        let m = self.mask() & !STATX_BTIME;
        self.0[0..4].copy_from_slice(&m.to_ne_bytes());
        self.0[80..96].fill(0);
    }
    /// `stx_dev_major`.
    pub fn dev_major(&self) -> u32 {
        self.u32_at(136)
    }
    /// `stx_dev_minor`.
    pub fn dev_minor(&self) -> u32 {
        self.u32_at(140)
    }
    /// The `struct stat` that newfstatat(2) gives for the same object: the
    /// kernel fills both from one `kstat`, and encodes the device numbers
    /// of `struct stat` with `new_encode_dev` (fs/stat.c, cp_new_stat).
    pub fn to_stat(&self) -> Stat {
        let enc = |major: u32, minor: u32| -> u64 {
            ((minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)) as u64
        };
        let ts = |o: usize| (self.u64_at(o), self.u32_at(o + 8) as u64);
        let (a, an) = ts(64);
        let (c, cn) = ts(96);
        let (m, mn) = ts(112);
        Stat {
            st_dev: enc(self.u32_at(136), self.u32_at(140)),
            st_ino: self.u64_at(32),
            st_nlink: self.u32_at(16) as u64,
            st_mode: self.mode(),
            st_uid: self.u32_at(20),
            st_gid: self.u32_at(24),
            pad0: 0,
            st_rdev: enc(self.u32_at(128), self.u32_at(132)),
            st_size: self.u64_at(40) as i64,
            st_blksize: self.u32_at(4) as i64,
            st_blocks: self.u64_at(48) as i64,
            times: [a, an, m, mn, c, cn],
            reserved: [0; 3],
        }
    }
}

/// statx(2) of NUL-terminated `path` relative to `dirfd`.
pub fn statx(dirfd: isize, path: &core::ffi::CStr, flags: i32, mask: u32) -> Result<Statx, Errno> {
    let mut st = Statx([0; 256]);
    // SAFETY: `path` is NUL-terminated; `st` is a live 256-byte `struct
    // statx` the kernel writes.
    unsafe {
        sc!(
            nr::STATX,
            dirfd,
            path.as_ptr(),
            flags,
            mask,
            st.0.as_mut_ptr()
        )
    }?;
    Ok(st)
}

/// fstat(2).
pub fn fstat(fd: i32) -> Result<Stat, Errno> {
    let mut st = Stat::default();
    // SAFETY: `st` is a live, correctly sized `struct stat`.
    unsafe { sc!(nr::FSTAT, fd, &mut st as *mut Stat) }?;
    Ok(st)
}

/// mmap(2). Returns the mapped address.
///
/// # Safety
/// A `MAP_FIXED` mapping replaces whatever was there; the caller must own the range.
pub unsafe fn mmap(
    addr: usize,
    len: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    off: u64,
) -> HostResult {
    // SAFETY: forwarded to the caller.
    unsafe { sc!(nr::MMAP, addr, len, prot, flags, fd, off) }
}

/// mprotect(2).
///
/// # Safety
/// The caller must own the range and not rely on the old protection.
pub unsafe fn mprotect(addr: usize, len: usize, prot: i32) -> HostResult {
    // SAFETY: forwarded to the caller.
    unsafe { sc!(nr::MPROTECT, addr, len, prot) }
}

/// munmap(2).
///
/// # Safety
/// The caller must own the range and hold no references into it.
pub unsafe fn munmap(addr: usize, len: usize) -> HostResult {
    // SAFETY: forwarded to the caller.
    unsafe { sc!(nr::MUNMAP, addr, len) }
}

/// madvise(2).
///
/// # Safety
/// `MADV_DONTNEED` discards contents; the caller must own the range.
pub unsafe fn madvise(addr: usize, len: usize, advice: i32) -> HostResult {
    // SAFETY: forwarded to the caller.
    unsafe { sc!(nr::MADVISE, addr, len, advice) }
}

/// getpid(2).
pub fn getpid() -> i32 {
    // SAFETY: no arguments.
    unsafe { sc!(nr::GETPID) }.unwrap_or(0) as i32
}

/// getppid(2).
pub fn getppid() -> i32 {
    // SAFETY: no arguments.
    unsafe { sc!(nr::GETPPID) }.unwrap_or(0) as i32
}

/// readlink(2) of NUL-terminated `path` into `buf`; returns the length.
pub fn readlink(path: &core::ffi::CStr, buf: &mut [u8]) -> HostResult {
    // SAFETY: `path` is NUL-terminated; `buf` is writable for its length.
    unsafe { sc!(nr::READLINK, path.as_ptr(), buf.as_mut_ptr(), buf.len()) }
}

/// kill(2).
pub fn kill(pid: i32, sig: i32) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::KILL, pid, sig) }
}

/// gettid(2).
pub fn gettid() -> i32 {
    // SAFETY: no arguments.
    unsafe { sc!(nr::GETTID) }.unwrap_or(0) as i32
}

/// The path of this task's memory file in /proc: `/proc/self/mem` for a
/// thread-group leader (its first open in a new process costs ~23 µs on
/// our machines, `/proc/thread-self/mem`'s ~30 µs: one lookup fewer),
/// `/proc/thread-self/mem` for other threads (a leader that has exited
/// leaves `/proc/self/mem` unopenable).
pub fn own_mem_path() -> &'static core::ffi::CStr {
    if gettid() == getpid() {
        c"/proc/self/mem"
    } else {
        c"/proc/thread-self/mem"
    }
}

/// The mapping that covers `addr`, as `ioctl(PROCMAP_QUERY)` on `fd`, an
/// open `/proc/PID/maps`, reports it (Linux 6.11): its start, end and
/// `PROCMAP_QUERY_VMA_*` flags ([`VMA_EXECUTABLE`], ...). ENOENT where
/// nothing is mapped, ENOTTY on an older kernel.
pub fn procmap_query(fd: i32, addr: usize) -> Result<(usize, usize, u64), Errno> {
    procmap_vma(fd, addr, false, None).map(|v| (v.start, v.end, v.flags))
}

/// [`procmap_query`]'s flag of an executable mapping.
pub const VMA_EXECUTABLE: u64 = 4;

/// exit(2): ends the calling thread.
pub fn exit_thread(status: i32) -> ! {
    // SAFETY: exit never returns and takes an integer.
    unsafe {
        let _ = sc!(nr::EXIT, status);
    }
    unreachable_loop()
}

/// exit_group(2): ends the process.
pub fn exit_group(status: i32) -> ! {
    // SAFETY: exit_group never returns and takes an integer.
    unsafe {
        let _ = sc!(nr::EXIT_GROUP, status);
    }
    unreachable_loop()
}

fn unreachable_loop() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

/// tgkill(2).
pub fn tgkill(tgid: i32, tid: i32, sig: i32) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::TGKILL, tgid, tid, sig) }
}

/// tkill(2); with signal 0 it tells whether thread `tid` exists.
pub fn tkill(tid: i32, sig: i32) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::TKILL, tid, sig) }
}

/// rt_tgsigqueueinfo(2) to re-queue a signal with its original siginfo.
pub fn rt_tgsigqueueinfo(tgid: i32, tid: i32, sig: i32, info: &[u8; 128]) -> HostResult {
    // SAFETY: `info` is a live 128-byte siginfo.
    unsafe { sc!(nr::RT_TGSIGQUEUEINFO, tgid, tid, sig, info.as_ptr()) }
}

/// rt_sigqueueinfo(2): queues `info` for the process `tgid`.
pub fn rt_sigqueueinfo(tgid: i32, sig: i32, info: &[u8; 128]) -> HostResult {
    // SAFETY: `info` is a live 128-byte siginfo.
    unsafe { sc!(nr::RT_SIGQUEUEINFO, tgid, sig, info.as_ptr()) }
}

/// rt_sigpending(2) on the host: the signals pending for the thread or the
/// process (blocked ones, since others would have been delivered).
pub fn rt_sigpending() -> Result<u64, Errno> {
    let mut set: u64 = 0;
    // SAFETY: the pointer references a live local.
    unsafe { sc!(nr::RT_SIGPENDING, &mut set as *mut u64, 8) }?;
    Ok(set)
}

/// rt_sigtimedwait(2) with a zero timeout: takes a pending signal of `set`
/// (blocked), writing its siginfo into `info`; EAGAIN if none is pending.
pub fn rt_sigtake(set: u64, info: &mut [u8; 128]) -> HostResult {
    let timeout = [0u64; 2];
    // SAFETY: `set`, `info` and `timeout` are live for the call.
    unsafe {
        sc!(
            nr::RT_SIGTIMEDWAIT,
            &set as *const u64,
            info.as_mut_ptr(),
            timeout.as_ptr(),
            8
        )
    }
}

/// Kernel `struct sigaction` for x86-64.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct KSigaction {
    pub handler: usize,
    pub flags: u64,
    pub restorer: usize,
    pub mask: u64,
}

/// rt_sigaction(2) on the host.
pub fn rt_sigaction(
    sig: i32,
    new: Option<&KSigaction>,
    old: Option<&mut KSigaction>,
) -> HostResult {
    let np = new.map_or(0, |n| n as *const _ as usize);
    let op = old.map_or(0, |o| o as *mut _ as usize);
    // SAFETY: both pointers are null or point at live `KSigaction`s; the
    // handler installed is the caller's responsibility (it is data here).
    unsafe { sc!(nr::RT_SIGACTION, sig, np, op, 8) }
}

/// rt_sigprocmask(2) on the host; returns the old mask.
pub fn rt_sigprocmask(how: i32, set: Option<u64>) -> Result<u64, Errno> {
    let mut old: u64 = 0;
    let set_val = set.unwrap_or(0);
    let sp = if set.is_some() {
        &set_val as *const u64 as usize
    } else {
        0
    };
    // SAFETY: pointers reference live locals.
    unsafe { sc!(nr::RT_SIGPROCMASK, how, sp, &mut old as *mut u64, 8) }?;
    Ok(old)
}

/// sigaltstack(2) on the host.
pub fn sigaltstack(new: Option<&abi::StackT>, old: Option<&mut abi::StackT>) -> HostResult {
    let np = new.map_or(0, |n| n as *const _ as usize);
    let op = old.map_or(0, |o| o as *mut _ as usize);
    // SAFETY: null or live `stack_t`s.
    unsafe { sc!(nr::SIGALTSTACK, np, op) }
}

/// prctl(PR_SET_PDEATHSIG): the signal the calling thread gets when its
/// parent thread ends.
pub fn set_pdeathsig(sig: i32) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::PRCTL, abi::prctl::PR_SET_PDEATHSIG, sig) }
}

/// prctl(PR_GET_NO_NEW_PRIVS): is the calling thread's no_new_privs set?
pub fn no_new_privs() -> bool {
    // SAFETY: integer arguments only.
    let r = unsafe { sc!(nr::PRCTL, 39usize, 0usize, 0usize, 0usize, 0usize) };
    r == Ok(1)
}

/// Is capability `cap` (below 64) in the calling thread's effective set
/// (capget, version 3)?
pub fn has_effective_cap(cap: u32) -> bool {
    let header: [u32; 2] = [0x2008_0522, 0];
    let mut data = [0u32; 6];
    // SAFETY: the header and the two data structures (3 words each) are
    // live locals of the sizes version 3 uses.
    let r = unsafe { sc!(nr::CAPGET, header.as_ptr(), data.as_mut_ptr()) };
    r.is_ok() && cap < 64 && data[(cap / 32) as usize * 3] & (1 << (cap % 32)) != 0
}

/// prctl(PR_SET_NAME): the calling thread's name (at most 15 bytes and a NUL).
pub fn set_name(name: &[u8; 16]) -> HostResult {
    // SAFETY: the kernel reads at most 16 bytes of `name`.
    unsafe { sc!(nr::PRCTL, abi::prctl::PR_SET_NAME, name.as_ptr()) }
}

/// prctl(PR_SET_SYSCALL_USER_DISPATCH, ON): every system call of the
/// calling thread outside `[base, base + len)` traps (SIGSYS) while
/// `selector` holds 1 (BLOCK). The kernel reads `selector` on every call
/// from then on: it must live as long as the thread (`'static`).
pub fn set_syscall_user_dispatch(
    base: usize,
    len: usize,
    selector: &'static AtomicU8,
) -> HostResult {
    let on = abi::prctl::PR_SYS_DISPATCH_ON;
    let s = selector as *const AtomicU8;
    // SAFETY: the selector outlives the thread (a `'static` borrow), and the
    // kernel only reads it.
    unsafe {
        sc!(
            nr::PRCTL,
            abi::prctl::PR_SET_SYSCALL_USER_DISPATCH,
            on,
            base,
            len,
            s
        )
    }
}

/// arch_prctl(ARCH_GET_GS): the calling thread's GS base.
pub fn get_gs_base() -> Result<usize, Errno> {
    const ARCH_GET_GS: usize = 0x1004;
    let mut v: u64 = 0;
    // SAFETY: the kernel writes one u64 at the address of `v`.
    unsafe { sc!(nr::ARCH_PRCTL, ARCH_GET_GS, &mut v as *mut u64) }?;
    Ok(v as usize)
}

/// arch_prctl(ARCH_SET_GS): sets the calling thread's GS base.
pub fn set_gs_base(v: usize) -> HostResult {
    const ARCH_SET_GS: usize = 0x1001;
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::ARCH_PRCTL, ARCH_SET_GS, v) }
}

/// getrandom(2), filling the whole buffer.
pub fn getrandom(buf: &mut [u8]) {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: writes within the live slice.
        match unsafe { sc!(nr::GETRANDOM, buf[done..].as_mut_ptr(), buf.len() - done, 0) } {
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

/// setrlimit(2).
pub fn setrlimit(resource: i32, cur: u64, max: u64) -> HostResult {
    let lim = [cur, max];
    // SAFETY: `lim` is a live `struct rlimit`.
    unsafe { sc!(nr::SETRLIMIT, resource, lim.as_ptr()) }
}

/// futex(2) wake.
///
/// # Safety
/// `addr` must be a valid address (the kernel only hashes it).
pub unsafe fn futex_wake(addr: usize, n: i32) -> HostResult {
    // SAFETY: forwarded.
    unsafe {
        sc!(nr::FUTEX, addr, 1 /* FUTEX_WAKE */, n, 0, 0, 0)
    }
}

/// futex(2) wait while `*addr == val`.
///
/// # Safety
/// `addr` must point at a live aligned i32.
pub unsafe fn futex_wait(addr: usize, val: i32) -> HostResult {
    // SAFETY: forwarded.
    unsafe {
        sc!(nr::FUTEX, addr, 0 /* FUTEX_WAIT */, val, 0, 0, 0)
    }
}

/// clone(2) of a thread that starts by calling `entry(arg)` on the stack
/// ending at `stack_top` (16-byte aligned); `entry` must never return.
/// Returns the child's tid in the caller.
///
/// # Safety
/// `flags` must include CLONE_VM, the stack must stay valid and unused by
/// anything else while the child runs, and `entry` must be safe to call
/// with `arg` on it.
pub unsafe fn clone_thread(
    flags: usize,
    stack_top: usize,
    entry: extern "C" fn(usize) -> !,
    arg: usize,
) -> HostResult {
    let ret: isize;
    // SAFETY: in the caller this is a plain syscall (RCX, R11 clobbered);
    // the child, on its own stack with the caller's other registers, calls
    // `entry`, which never returns, so it never reaches code that expects
    // the caller's stack.
    unsafe {
        asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov rdi, r12",
            "call r13",
            "ud2",
            "2:",
            inlateout("rax") nr::CLONE as isize => ret,
            in("rdi") flags, in("rsi") stack_top, in("rdx") 0usize,
            in("r10") 0usize, in("r8") 0usize,
            in("r12") arg, in("r13") entry as usize,
            lateout("rcx") _, lateout("r11") _,
        );
    }
    check(ret)
}

/// close_range(2).
pub fn close_range(first: u32, last: u32, flags: u32) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::CLOSE_RANGE, first, last, flags) }
}

/// sched_yield(2).
pub fn sched_yield() {
    // SAFETY: no arguments.
    let _ = unsafe { sc!(nr::SCHED_YIELD) };
}

/// sched_getaffinity(2) of thread `pid` (0: the caller) into `mask`.
pub fn sched_getaffinity(pid: i32, mask: &mut [u64]) -> HostResult {
    // SAFETY: the kernel writes at most `size_of_val(mask)` bytes.
    unsafe {
        sc!(
            nr::SCHED_GETAFFINITY,
            pid,
            core::mem::size_of_val(mask),
            mask.as_mut_ptr()
        )
    }
}

/// prctl(PR_GET_TSC): whether `rdtsc` works (1) or faults (2).
pub fn get_tsc_mode() -> Result<i32, Errno> {
    let mut mode: i32 = 0;
    // SAFETY: the kernel writes one int at the address of `mode`.
    unsafe { sc!(nr::PRCTL, abi::prctl::PR_GET_TSC, &mut mode as *mut i32) }?;
    Ok(mode)
}

/// personality(2): sets the execution domain `persona` (0xffffffff only
/// reads it); returns the previous one.
pub fn personality(persona: u32) -> HostResult {
    // SAFETY: an integer argument only.
    unsafe { sc!(nr::PERSONALITY, persona) }
}

/// The program's own system call, passed to the host: `nr` and `args` are
/// values the program gave (possibly checked or rewritten by the runtime),
/// so any address among them is the program's, and the kernel checks it as
/// it would for the program (EFAULT). The runtime's own buffers never go
/// through here: each call the runtime makes for itself has a typed
/// function in this module. (The program and the runtime share one address
/// space: what the program's calls may write is the program's business,
/// as it is natively; keeping the runtime's memory out of reach of the
/// program is the sandbox's part, issue 12.)
pub fn program_call(nr: usize, args: [usize; 6]) -> HostResult {
    // SAFETY: the program's own arguments (see above): the runtime's
    // memory is not named by the runtime here.
    unsafe { call(nr, args) }
}

/// getresuid(2): the real, effective and saved user ids.
pub fn getresuid() -> Result<[u32; 3], Errno> {
    getres(nr::GETRESUID)
}

/// getresgid(2): the real, effective and saved group ids.
pub fn getresgid() -> Result<[u32; 3], Errno> {
    getres(nr::GETRESGID)
}

/// getresuid(2) or getresgid(2) (`nr`): three ids.
fn getres(nr: usize) -> Result<[u32; 3], Errno> {
    let mut v = [0u32; 3];
    let p = v.as_mut_ptr();
    // SAFETY: both calls write one u32 at each of the three addresses.
    unsafe { sc!(nr, p, p.wrapping_add(1), p.wrapping_add(2)) }?;
    Ok(v)
}

/// getgroups(2): the supplementary groups.
pub fn getgroups() -> Result<Vec<u32>, Errno> {
    // SAFETY: a size of 0 only asks for the count.
    let n = unsafe { sc!(nr::GETGROUPS, 0, 0) }?;
    let mut groups = alloc::vec![0u32; n];
    // SAFETY: the kernel writes at most `n` ids into `groups`.
    let n = unsafe { sc!(nr::GETGROUPS, n, groups.as_mut_ptr()) }?;
    groups.truncate(n);
    Ok(groups)
}

/// uname(2): the raw `struct utsname` (6 fields of 65 bytes).
pub fn uname() -> Result<[u8; 390], Errno> {
    let mut u = [0u8; 390];
    // SAFETY: the kernel writes one `struct utsname` (390 bytes) into `u`.
    unsafe { sc!(nr::UNAME, u.as_mut_ptr()) }?;
    Ok(u)
}

/// umask(2): sets the mask, returns the old one.
pub fn umask(mask: u32) -> HostResult {
    // SAFETY: an integer argument only.
    unsafe { sc!(nr::UMASK, mask) }
}

/// prlimit64(2) reading resource `res` of the calling process: [soft, hard].
pub fn getrlimit(res: usize) -> Result<[u64; 2], Errno> {
    let mut v = [0u64; 2];
    // SAFETY: the kernel writes one `struct rlimit64` into `v`.
    unsafe { sc!(nr::PRLIMIT64, 0, res, 0, v.as_mut_ptr()) }?;
    Ok(v)
}

/// shmctl(2) IPC_STAT of segment `id`: its `struct shmid64_ds` as words.
pub fn shmctl_stat(id: usize) -> Result<[u64; 14], Errno> {
    const IPC_STAT: usize = 2;
    let mut ds = [0u64; 14];
    // SAFETY: the kernel writes one `struct shmid64_ds` (112 bytes) into `ds`.
    unsafe { sc!(nr::SHMCTL, id, IPC_STAT, ds.as_mut_ptr()) }?;
    Ok(ds)
}

/// A zero `struct timespec`, for probes.
static ZERO_TIMESPEC: [i64; 2] = [0, 0];

/// A probe of one of the program's waits (ppoll, pselect6, epoll_pwait,
/// epoll_pwait2): the program's call `nr` with `args` (the program's
/// values), except that argument `zero_timeout` (if any) becomes the
/// address of a zero timeout of the runtime's, and the descriptor sets of
/// pselect6 (arguments 1 to 3) that `sets` gives are the runtime's copies
/// (None keeps the argument as it is).
pub fn wait_probe(
    nr: usize,
    mut args: [usize; 6],
    zero_timeout: Option<usize>,
    sets: [Option<&mut [u8]>; 3],
) -> HostResult {
    if let Some(i) = zero_timeout {
        args[i] = ZERO_TIMESPEC.as_ptr() as usize;
    }
    for (i, set) in sets.into_iter().enumerate() {
        if let Some(b) = set {
            args[1 + i] = b.as_mut_ptr() as usize;
        }
    }
    // SAFETY: the program's arguments, but for the runtime's zero timeout
    // (read by the kernel; never written back for a zero timeout) and
    // descriptor-set copies (live buffers the caller sized for the call).
    unsafe { call(nr, args) }
}

/// membarrier(2) with command `cmd` and no flags.
pub fn membarrier(cmd: i32) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::MEMBARRIER, cmd, 0, 0) }
}

/// pwrite64(2) of `buf` at offset `off` of descriptor `fd`. (As with
/// `std::fs::File::write_at`, writing `/proc/self/mem` is outside what the
/// type system guards: its callers check where they write.)
pub fn pwrite(fd: i32, buf: &[u8], off: u64) -> HostResult {
    // SAFETY: the kernel reads `buf` for its length.
    unsafe { sc!(nr::PWRITE64, fd, buf.as_ptr(), buf.len(), off) }
}

/// memfd_create(2): an anonymous file named `name`.
pub fn memfd_create(name: &core::ffi::CStr, flags: u32) -> HostResult {
    // SAFETY: `name` is NUL-terminated.
    unsafe { sc!(nr::MEMFD_CREATE, name.as_ptr(), flags) }
}

/// dup3(2).
pub fn dup3(oldfd: i32, newfd: i32, flags: i32) -> HostResult {
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::DUP3, oldfd, newfd, flags) }
}

/// getcwd(2): the working directory into `buf`; its length with the NUL.
pub fn getcwd(buf: &mut [u8]) -> HostResult {
    // SAFETY: `buf` is writable for its length.
    unsafe { sc!(nr::GETCWD, buf.as_mut_ptr() as usize, buf.len()) }
}

/// execve(2)'s argument and environment vectors, strings and pointers, in
/// an anonymous mapping of their own rather than in the runtime's heap.
/// A vfork child shares its parent's memory: what it allocated from the
/// heap and still held when its execve succeeded stayed allocated in the
/// parent for ever (~50 KiB per vfork + exec with a small environment, a
/// shell's whole environment each time). With the vectors here, the
/// caller frees everything else before the call, and the parent unmaps the
/// block ([`ExecArgs::release`]) once the child has exec'd.
pub struct ExecArgs {
    addr: usize,
    len: usize,
    argv: usize,
    envp: usize,
}

impl ExecArgs {
    /// Lays `argv` and `envp` out in a fresh mapping.
    pub fn new(argv: &[Vec<u8>], envp: &[Vec<u8>]) -> Result<ExecArgs, Errno> {
        const PROT_RW: i32 = 3;
        const MAP_PRIVATE_ANON: i32 = 0x22;
        let ptr_bytes = (argv.len() + envp.len() + 2) * 8;
        let str_bytes: usize = argv.iter().chain(envp).map(|s| s.len() + 1).sum();
        let len = (ptr_bytes + str_bytes + 4095) & !4095;
        // SAFETY: a fresh private anonymous mapping (no MAP_FIXED): it
        // replaces nothing.
        let addr = unsafe { mmap(0, len, PROT_RW, MAP_PRIVATE_ANON, -1, 0) }?;
        // SAFETY: `addr` is the start of the `len` bytes just mapped
        // read-write, which nothing else uses.
        let mem = unsafe { core::slice::from_raw_parts_mut(addr as *mut u8, len) };
        let (ptrs, strs) = mem.split_at_mut(ptr_bytes);
        let mut at = 0;
        let mut slot = 0;
        for list in [argv, envp] {
            for s in list {
                strs[at..at + s.len()].copy_from_slice(s);
                strs[at + s.len()] = 0;
                let p = (addr + ptr_bytes + at) as u64;
                ptrs[slot * 8..slot * 8 + 8].copy_from_slice(&p.to_ne_bytes());
                at += s.len() + 1;
                slot += 1;
            }
            // (The mapping is zeroed: the NULL that ends the vector.)
            slot += 1;
        }
        Ok(ExecArgs {
            addr,
            len,
            argv: addr,
            envp: addr + (argv.len() + 1) * 8,
        })
    }

    /// The mapping, `(address, length)`.
    pub fn range(&self) -> (usize, usize) {
        (self.addr, self.len)
    }

    /// execve(2) of `path` with these vectors. Returns only on failure.
    pub fn execve(&self, path: &core::ffi::CStr) -> HostResult {
        // SAFETY: the vectors are NULL-terminated arrays of pointers to
        // NUL-terminated strings, all in the live mapping `self` owns.
        unsafe { sc!(nr::EXECVE, path.as_ptr() as usize, self.argv, self.envp) }
    }

    /// Unmaps the block a vfork child left behind when its execve
    /// succeeded (its `range`), in the parent that shares the memory.
    pub fn release(range: (usize, usize)) {
        if range.0 != 0 {
            // SAFETY: the block of an `ExecArgs` whose owner (the child,
            // now another program) never returns to use it; nothing else
            // refers to it.
            let _ = unsafe { munmap(range.0, range.1) };
        }
    }
}

impl Drop for ExecArgs {
    fn drop(&mut self) {
        // SAFETY: our own mapping; the pointers into it die with `self`.
        let _ = unsafe { munmap(self.addr, self.len) };
    }
}

/// shmget(2) of a new private segment of `size` bytes (mode 0600).
pub fn shmget_private(size: usize) -> HostResult {
    const IPC_PRIVATE: usize = 0;
    const IPC_CREAT: usize = 0o1000;
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::SHMGET, IPC_PRIVATE, size, IPC_CREAT | 0o600) }
}

/// shmctl(2) IPC_RMID of segment `id`: it goes once no process has it
/// attached (Linux still lets a process attach it until then).
pub fn shmctl_rmid(id: usize) -> HostResult {
    const IPC_RMID: usize = 0;
    // SAFETY: integer arguments only.
    unsafe { sc!(nr::SHMCTL, id, IPC_RMID, 0) }
}

/// shmat(2) of segment `id` at `addr`, replacing what is mapped there
/// (SHM_REMAP).
///
/// # Safety
/// `addr` must be a range of the runtime's own that nothing uses.
pub unsafe fn shmat_remap(id: usize, addr: usize) -> HostResult {
    const SHM_REMAP: usize = 0o40000;
    // SAFETY: forwarded to the caller.
    unsafe { sc!(nr::SHMAT, id, addr, SHM_REMAP) }
}

/// futex(2) wait (shared, not FUTEX_PRIVATE: the word may be in memory
/// other processes map) while `*addr == val`, at most `ns` nanoseconds.
///
/// # Safety
/// `addr` must point at a live aligned 32-bit word.
pub unsafe fn futex_wait_for(addr: usize, val: i32, ns: u64) -> HostResult {
    let ts = [(ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64];
    // SAFETY: forwarded; `ts` is a live timespec.
    unsafe {
        sc!(
            nr::FUTEX,
            addr,
            0, /* FUTEX_WAIT */
            val,
            ts.as_ptr(),
            0,
            0
        )
    }
}

/// The calling thread's FS base (arch_prctl ARCH_GET_FS).
pub fn fs_base() -> usize {
    let mut v = 0usize;
    // SAFETY: the kernel writes one word into `v`.
    let _ = unsafe { sc!(nr::ARCH_PRCTL, 0x1003, &mut v as *mut usize) };
    v
}

/// Sets the calling thread's FS base (arch_prctl ARCH_SET_FS).
pub fn set_fs_base(v: usize) -> HostResult {
    // SAFETY: an integer argument only (the kernel checks it).
    unsafe { sc!(nr::ARCH_PRCTL, 0x1002, v) }
}

/// rseq(2) with RSEQ_FLAG_UNREGISTER: undoes the calling thread's
/// registration of `area` (`len` bytes, signature `sig`), as the thread
/// made it.
pub fn rseq_unregister(area: usize, len: u32, sig: u32) -> HostResult {
    const RSEQ_FLAG_UNREGISTER: usize = 1;
    // SAFETY: the kernel only compares `area` with the registration (it
    // writes nothing there on unregistering).
    unsafe { sc!(nr::RSEQ, area, len, RSEQ_FLAG_UNREGISTER, sig) }
}

/// One mapping of the process, as PROCMAP_QUERY describes it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Vma {
    pub start: usize,
    pub end: usize,
    /// `PROCMAP_QUERY_VMA_*` flags.
    pub flags: u64,
    /// The backing file's inode (0: none).
    pub inode: u64,
    /// Its device (major in the low 32 bits, minor in the high ones).
    pub dev: u64,
    /// The file offset the mapping starts at.
    pub offset: u64,
    /// Its name's length in the buffer given, NUL included (0: no name).
    pub name_len: usize,
}

/// ioctl(PROCMAP_QUERY) on `maps_fd` (a /proc/PID/maps descriptor, Linux
/// 6.11+): the mapping covering `addr` (or, with `next`, the first one
/// at or above it), with its name in `name` if one is given (special
/// mappings' names, such as `[stack]`, cost no path lookup). ENOENT: none.
pub fn procmap_vma(
    maps_fd: i32,
    addr: usize,
    next: bool,
    name: Option<&mut [u8]>,
) -> Result<Vma, Errno> {
    const PROCMAP_QUERY: usize = 0xC068_6611;
    const COVERING_OR_NEXT_VMA: u64 = 0x10;
    // struct procmap_query: 104 bytes; words 0-8, then four u32 (dev
    // major, minor, name size, build id size), then the two addresses.
    let mut q = [0u64; 13];
    q[0] = 104;
    q[1] = if next { COVERING_OR_NEXT_VMA } else { 0 };
    q[2] = addr as u64;
    if let Some(n) = name {
        q[10] = n.len() as u64 & 0xffff_ffff;
        q[11] = n.as_mut_ptr() as u64;
    }
    // SAFETY: the kernel reads and writes `q` (104 bytes) and writes at
    // most its given size into the name buffer, which is borrowed mutably.
    unsafe { sc!(nr::IOCTL, maps_fd, PROCMAP_QUERY, q.as_mut_ptr()) }?;
    Ok(Vma {
        start: q[3] as usize,
        end: q[4] as usize,
        flags: q[5],
        inode: q[8],
        dev: q[9],
        offset: q[7],
        name_len: (q[10] & 0xffff_ffff) as usize,
    })
}

/// set_robust_list(NULL) and set_tid_address(NULL): the calling thread
/// forgets the robust futex list and the word to clear at its exit, as the
/// kernel's execve makes it forget them (they point into the old program).
pub fn forget_thread_words() {
    const ROBUST_LIST_HEAD_SIZE: usize = 24;
    // SAFETY: null pointers: the kernel stores them and touches nothing.
    unsafe {
        let _ = sc!(nr::SET_ROBUST_LIST, 0usize, ROBUST_LIST_HEAD_SIZE);
        let _ = sc!(nr::SET_TID_ADDRESS, 0usize);
    }
}

/// getsid(2).
pub fn getsid(pid: i32) -> HostResult {
    // SAFETY: an integer argument only.
    unsafe { sc!(nr::GETSID, pid) }
}

/// Is process `pid` a child of the caller (alive or a zombie)? Asked with
/// waitid(P_PID, WEXITED | WNOHANG | WNOWAIT), which reaps nothing; ECHILD
/// when it is not.
pub fn is_child(pid: i32) -> bool {
    const P_PID: usize = 1;
    const WNOHANG: usize = 1;
    const WEXITED: usize = 4;
    const WNOWAIT: usize = 0x0100_0000;
    let mut info = [0u64; 16];
    // SAFETY: the kernel writes one siginfo (128 bytes) into `info`.
    let r = unsafe {
        sc!(
            nr::WAITID,
            P_PID,
            pid,
            info.as_mut_ptr(),
            WEXITED | WNOHANG | WNOWAIT,
            0usize
        )
    };
    r.is_ok()
}

/// fgetxattr(2) of `name` (NUL-terminated) with no buffer: the value's
/// size, or ENODATA if the file has no such attribute.
pub fn fgetxattr_size(fd: i32, name: &core::ffi::CStr) -> HostResult {
    // SAFETY: the kernel reads the name; a zero size writes nothing.
    unsafe { sc!(nr::FGETXATTR, fd, name.as_ptr(), 0usize, 0usize) }
}

/// process_vm_readv(2) of `buf.len()` bytes at `addr` in process `pid`;
/// returns how many were read.
pub fn read_remote(pid: i32, addr: usize, buf: &mut [u8]) -> HostResult {
    let local = [buf.as_mut_ptr() as usize, buf.len()];
    let remote = [addr, buf.len()];
    // SAFETY: one local iovec covering `buf`; the remote one is only read.
    unsafe {
        sc!(
            nr::PROCESS_VM_READV,
            pid,
            local.as_ptr(),
            1,
            remote.as_ptr(),
            1,
            0
        )
    }
}

/// prctl(PR_SET_MM, PR_SET_MM_AUXV): the auxiliary vector /proc/PID/auxv
/// shows (needs CAP_SYS_RESOURCE).
pub fn set_mm_auxv(words: &[u64]) -> HostResult {
    const PR_SET_MM: usize = 35;
    const PR_SET_MM_AUXV: usize = 12;
    // SAFETY: the kernel reads `words` for its length in bytes.
    unsafe {
        sc!(
            nr::PRCTL,
            PR_SET_MM,
            PR_SET_MM_AUXV,
            words.as_ptr(),
            core::mem::size_of_val(words),
            0
        )
    }
}

/// prctl(PR_SET_MM, PR_SET_MM_MAP) with the memory map's addresses
/// `fields` (struct prctl_mm_map's first 11 words, in its order) and the
/// auxiliary vector `auxv`, the executable left as it is (so no
/// capability is needed; the kernel must have CONFIG_CHECKPOINT_RESTORE).
pub fn set_mm_map(fields: &[u64; 11], auxv: &[u64]) -> HostResult {
    const PR_SET_MM: usize = 35;
    const PR_SET_MM_MAP: usize = 14;
    let mut map = [0u64; 13];
    map[..11].copy_from_slice(fields);
    map[11] = auxv.as_ptr() as u64;
    // auxv_size, then exe_fd -1 (keep the executable).
    map[12] = (core::mem::size_of_val(auxv) as u64) | (0xffff_ffffu64 << 32);
    // SAFETY: the kernel reads `map` (struct prctl_mm_map, 104 bytes) and
    // the `auxv` it points at.
    unsafe {
        sc!(
            nr::PRCTL,
            PR_SET_MM,
            PR_SET_MM_MAP,
            map.as_ptr(),
            core::mem::size_of_val(&map),
            0
        )
    }
}

/// prctl(PR_SET_MM, PR_SET_MM_MAP_SIZE): may this process set its memory
/// map's addresses (`set_mm_map`)? Only a seccomp filter refuses this
/// query; it refuses the setting just as well.
pub fn mm_map_allowed() -> bool {
    const PR_SET_MM: usize = 35;
    const PR_SET_MM_MAP_SIZE: usize = 15;
    let mut size = 0u32;
    // SAFETY: the kernel writes one u32 into `size`.
    unsafe {
        sc!(
            nr::PRCTL,
            PR_SET_MM,
            PR_SET_MM_MAP_SIZE,
            &mut size as *mut u32,
            0,
            0
        )
    }
    .is_ok()
}

/// brk(2) of 0: the current break.
pub fn current_brk() -> usize {
    // SAFETY: brk(0) changes nothing.
    unsafe { sc!(nr::BRK, 0) }.unwrap_or(0)
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    /// A getdents64 record for `name`, of length `reclen` (0: the real one).
    fn dirent(name: &str, reclen: usize) -> Vec<u8> {
        let real = (19 + name.len() + 1 + 7) & !7;
        let mut e = alloc::vec![0u8; real];
        let len = if reclen == 0 { real } else { reclen };
        e[16..18].copy_from_slice(&(len as u16).to_ne_bytes());
        e[19..19 + name.len()].copy_from_slice(name.as_bytes());
        e
    }

    #[test]
    fn dirents_are_read_within_their_buffer() {
        let mut buf = Vec::new();
        for n in [".", "..", "0", "17", "255"] {
            buf.extend_from_slice(&dirent(n, 0));
        }
        let names: Vec<&[u8]> = dirent_names(&buf).collect();
        assert_eq!(names, [&b"."[..], b"..", b"0", b"17", b"255"]);
        let fds: Vec<i32> = dirent_names(&buf).filter_map(parse_fd_name).collect();
        assert_eq!(fds, [0, 17, 255]);
        // A record cut short, a length of 0 or shorter than the header, a
        // length past the buffer: the walk stops there, nothing is read
        // outside the buffer.
        let whole = buf.len();
        assert_eq!(dirent_names(&buf[..whole - 3]).count(), 4);
        for bad in [0xffff, 5] {
            let mut b = dirent("1", 0);
            b.extend_from_slice(&dirent("2", bad));
            b.extend_from_slice(&dirent("3", 0));
            assert_eq!(dirent_names(&b).collect::<Vec<_>>(), [&b"1"[..]]);
        }
        let mut zero = dirent("1", 0);
        zero[16..18].copy_from_slice(&0u16.to_ne_bytes());
        assert_eq!(dirent_names(&zero).count(), 0);
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_fd_name(b"984"), Some(984));
        assert_eq!(parse_fd_name(b"2147483647"), Some(i32::MAX));
        for bad in [&b""[..], b"x", b"-1", b"2147483648", b"99999999999", b"1 "] {
            assert_eq!(parse_fd_name(bad), None);
        }
        assert_eq!(parse_hex(b"7ffd1c2a0000"), Some(0x7ffd1c2a0000));
        assert_eq!(parse_hex(b"FF"), Some(255));
        assert_eq!(parse_hex(b"ffffffffffffffff"), Some(usize::MAX));
        for bad in [&b""[..], b"xyz", b"1-2", b"10000000000000000"] {
            assert_eq!(parse_hex(bad), None);
        }
    }
}
