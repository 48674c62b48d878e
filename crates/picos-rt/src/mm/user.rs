//! Typed access to the program's memory.
//!
//! Every read or write of program memory goes through here: an address that
//! is unmapped (or the runtime's own) yields `EFAULT` instead of crashing the
//! runtime, because the copy runs inside an assembly stub whose faults the
//! signal handler redirects (see `arch::fault_fixup`).
//!
//! # Safety
//! This module turns program addresses into copies; it never hands out
//! references into program memory.
#![allow(unsafe_code)]

use crate::arch;
use crate::host::errno::Errno;
use crate::mm::runtime;
use alloc::vec::Vec;
use core::marker::PhantomData;
use core::mem::{size_of, MaybeUninit};

/// Marker for plain-old-data types that may be copied from and to program
/// memory byte for byte (every bit pattern is a valid value).
///
/// # Safety
/// Implementors must be `repr(C)` (or primitive) with no padding-sensitive
/// invariants and valid for any bit pattern.
pub unsafe trait Pod: Copy {}
// SAFETY: integers and arrays of them are valid for any bit pattern.
unsafe impl Pod for u8 {}
// SAFETY: as above.
unsafe impl Pod for i32 {}
// SAFETY: as above.
unsafe impl Pod for u32 {}
// SAFETY: as above.
unsafe impl Pod for u64 {}
// SAFETY: as above.
unsafe impl Pod for i64 {}
// SAFETY: as above.
unsafe impl Pod for usize {}
// SAFETY: as above.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}
// SAFETY: repr(C) structs of integers.
unsafe impl Pod for crate::host::KSigaction {}
// SAFETY: repr(C) structs of integers.
unsafe impl Pod for crate::host::abi::StackT {}
// SAFETY: repr(C) structs of integers.
unsafe impl Pod for arch::UContext {}
// SAFETY: repr(C) structs of integers.
unsafe impl Pod for arch::RtSigFrame {}
// SAFETY: a byte array.
unsafe impl Pod for arch::SigInfo {}
// SAFETY: repr(C) struct of integers, its padding an explicit field.
unsafe impl Pod for crate::host::Stat {}
// SAFETY: repr(C) structs of integers.
unsafe impl Pod for arch::FastFrame {}
// SAFETY: repr(C) structs of integers.
unsafe impl Pod for arch::SigContext {}

/// The bytes of a slice of plain-old-data values.
pub fn slice_bytes<T: Pod>(v: &[T]) -> &[u8] {
    // SAFETY: Pod values are `size_of::<T>()` initialised bytes each.
    unsafe { core::slice::from_raw_parts(v.as_ptr() as *const u8, core::mem::size_of_val(v)) }
}

/// Reserves `len` bytes of inaccessible (PROT_NONE) address space for the
/// program, near `hint` (0: anywhere); the kernel picks free space, so the
/// reservation never touches the runtime's memory.
pub fn reserve(hint: usize, len: usize) -> Result<usize, Errno> {
    let flags = runtime::MAP_PRIVATE | runtime::MAP_ANONYMOUS;
    // SAFETY: a mapping without MAP_FIXED replaces nothing.
    unsafe { crate::host::mmap(hint, len, runtime::PROT_NONE, flags, -1, 0) }
}

/// Maps `[addr, addr + len)` of the program's address space at exactly
/// `addr` (`flags` has MAP_FIXED or MAP_FIXED_NOREPLACE), from `fd` at
/// `off` or anonymous (`fd` -1). ENOMEM for a range that touches the
/// runtime's memory, which is never replaced.
pub fn map_fixed(
    addr: usize,
    len: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    off: u64,
) -> Result<usize, Errno> {
    if runtime::owns(addr, len) {
        return Err(Errno::ENOMEM);
    }
    // SAFETY: the range is the program's (checked above), so replacing
    // what is mapped there cannot touch the runtime's memory.
    unsafe { crate::host::mmap(addr, len, prot, flags, fd, off) }
}

/// Unmaps `[addr, addr + len)` of the program's memory (an execve in
/// place clearing the old program's). ENOMEM, and nothing unmapped, for a
/// range that touches the runtime's memory.
pub fn unmap(addr: usize, len: usize) -> Result<(), Errno> {
    if runtime::owns(addr, len) {
        return Err(Errno::ENOMEM);
    }
    // SAFETY: the range is the program's (checked above); the runtime
    // holds no reference into program memory (copies go through here).
    unsafe { crate::host::munmap(addr, len) }.map(|_| ())
}

/// Drops the contents of `[addr, addr + len)` of the program's memory
/// (MADV_DONTNEED: private pages read back as zeros). ENOMEM for a range
/// that touches the runtime's memory.
pub fn discard(addr: usize, len: usize) -> Result<(), Errno> {
    const MADV_DONTNEED: i32 = 4;
    if runtime::owns(addr, len) {
        return Err(Errno::ENOMEM);
    }
    // SAFETY: as for `unmap`.
    unsafe { crate::host::madvise(addr, len, MADV_DONTNEED) }.map(|_| ())
}

/// Changes the protection of `[addr, addr + len)` of the program's memory
/// (ENOMEM for a range that touches the runtime's).
pub fn protect(addr: usize, len: usize, prot: i32) -> Result<(), Errno> {
    if runtime::owns(addr, len) {
        return Err(Errno::ENOMEM);
    }
    // SAFETY: the range is the program's (checked above).
    unsafe { crate::host::mprotect(addr, len, prot) }.map(|_| ())
}

/// The bytes of a plain-old-data value.
pub fn bytes_of<T: Pod>(v: &T) -> &[u8] {
    // SAFETY: a Pod value is `size_of::<T>()` initialised bytes.
    unsafe { core::slice::from_raw_parts(v as *const T as *const u8, size_of::<T>()) }
}

fn check_range(addr: usize, len: usize) -> Result<(), Errno> {
    if len == 0 {
        return Ok(());
    }
    let end = addr.checked_add(len).ok_or(Errno::EFAULT)?;
    if addr < runtime::PAGE_SIZE || end > 0x0000_8000_0000_0000 || runtime::owns_writable(addr, len)
    {
        return Err(Errno::EFAULT);
    }
    Ok(())
}

/// Copies `dst.len()` bytes from program address `src`.
pub fn copy_in(dst: &mut [u8], src: usize) -> Result<(), Errno> {
    check_range(src, dst.len())?;
    // SAFETY: `dst` is a live buffer; faults on `src` are recovered by the stub.
    match unsafe { arch::picos_copy_user(dst.as_mut_ptr(), src as *const u8, dst.len()) } {
        0 => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// Copies `src` to program address `dst`.
pub fn copy_out(dst: usize, src: &[u8]) -> Result<(), Errno> {
    check_range(dst, src.len())?;
    // SAFETY: `src` is a live buffer; faults on `dst` are recovered by the stub.
    match unsafe { arch::picos_copy_user(dst as *mut u8, src.as_ptr(), src.len()) } {
        0 => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// Makes the program's code pages under `addr..addr + len` a mapping of
/// their own before the patcher writes them through `/proc/self/mem`, with
/// `madvise(MADV_NOHUGEPAGE)`: a flag no neighbour has, so the kernel
/// neither merges them back nor lets their private copies make the whole
/// mapping private. Without it, the first patched page of libc's text gives
/// that whole mapping an anonymous part, and every `fork` copies all its
/// page-table entries and the child's exit drops them again: +22 µs per
/// fork natively for one written page of libc (a C loop of fork + _exit +
/// wait, 110 → 135 µs; with the page apart, 112). Pages written through
/// mprotect are apart already (the write permission leaves them
/// `VM_ACCOUNT`). Best effort: a failure only leaves the mapping whole.
pub fn keep_code_page_apart(addr: usize, len: usize) {
    use runtime::PAGE_SIZE;
    const MADV_NOHUGEPAGE: i32 = 15;
    if len == 0 || runtime::owns(addr, len) || check_range(addr, len).is_err() {
        return;
    }
    let lo = addr & !(PAGE_SIZE - 1);
    let hi = (addr + len + PAGE_SIZE - 1) & !(PAGE_SIZE - 1);
    // SAFETY: MADV_NOHUGEPAGE changes a flag of the program's mapping, none
    // of its contents or protections; the range is the program's (not the
    // runtime's, checked above).
    let _ = unsafe { crate::host::madvise(lo, hi - lo, MADV_NOHUGEPAGE) };
}

/// Writes `bytes` at `addr`, in code that is readable and executable but
/// not writable (the program's, or a code region of the runtime's, as the
/// patcher's caller has checked), by making its pages writable for the
/// write: mprotect(2) to read, write and execute, the copy, then back to
/// read and execute. The way to write code where `/proc/self/mem` cannot
/// be opened for writing (the sandbox: a read-only /proc, Landlock). A
/// program page that is writable already (a JIT's) takes the write as it
/// is, and keeps its protection. The caller keeps the program's own
/// mprotect calls out meanwhile (`patch::protection_change`), so none is
/// undone by the restore.
pub fn write_code_by_protection(addr: usize, bytes: &[u8]) -> Result<(), Errno> {
    use runtime::{PAGE_SIZE, PROT_EXEC, PROT_READ, PROT_WRITE};
    if bytes.is_empty() {
        return Ok(());
    }
    check_range(addr, bytes.len())?;
    if !runtime::owns(addr, bytes.len()) && copy_out(addr, bytes).is_ok() {
        return Ok(());
    }
    let lo = addr & !(PAGE_SIZE - 1);
    let end = addr.checked_add(bytes.len()).ok_or(Errno::EFAULT)?;
    let hi = end.checked_add(PAGE_SIZE - 1).ok_or(Errno::EFAULT)? & !(PAGE_SIZE - 1);
    // SAFETY: adding PROT_WRITE to code pages changes none of their bytes
    // and no mapping the runtime relies on; execution stays allowed, so
    // threads running this code go on meanwhile.
    unsafe { crate::host::mprotect(lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) }?;
    let r = copy_out(addr, bytes);
    // SAFETY: the pages get back the protection they had (read and
    // execute: a writable program page took the write above).
    let back = unsafe { crate::host::mprotect(lo, hi - lo, PROT_READ | PROT_EXEC) };
    r.and(back.map(drop))
}

/// Reads a `T` from program address `addr`.
pub fn read<T: Pod>(addr: usize) -> Result<T, Errno> {
    let mut v = MaybeUninit::<T>::uninit();
    // SAFETY: the slice covers exactly the storage of `v`.
    let bytes =
        unsafe { core::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, size_of::<T>()) };
    copy_in(bytes, addr)?;
    // SAFETY: fully initialised by the copy; `T: Pod` accepts any bytes.
    Ok(unsafe { v.assume_init() })
}

/// Writes `v` to program address `addr`.
pub fn write<T: Pod>(addr: usize, v: &T) -> Result<(), Errno> {
    // SAFETY: `T: Pod` has no padding invariants; the slice covers `*v`.
    let bytes = unsafe { core::slice::from_raw_parts(v as *const T as *const u8, size_of::<T>()) };
    copy_out(addr, bytes)
}

/// Length of the NUL-terminated string at `addr`, at most `max`
/// (`ENAMETOOLONG` if no NUL within `max`).
pub fn strnlen(addr: usize, max: usize) -> Result<usize, Errno> {
    if addr < runtime::PAGE_SIZE || runtime::owns(addr, 1) {
        return Err(Errno::EFAULT);
    }
    // SAFETY: faults are recovered by the stub.
    let n = unsafe { arch::picos_strnlen_user(addr as *const u8, max) };
    if n < 0 {
        return Err(Errno::EFAULT);
    }
    let n = n as usize;
    if n >= max {
        return Err(Errno::ENAMETOOLONG);
    }
    check_range(addr, n + 1)?;
    Ok(n)
}

/// Maximum path length, including the NUL (PATH_MAX).
pub const PATH_MAX: usize = 4096;

/// Reads a NUL-terminated string (without its NUL).
pub fn read_cstr(addr: usize, max: usize) -> Result<Vec<u8>, Errno> {
    let n = strnlen(addr, max)?;
    let mut v = alloc::vec![0u8; n];
    copy_in(&mut v, addr)?;
    Ok(v)
}

/// Reads a NULL-terminated array of string pointers (argv/envp), as the
/// kernel does for execve (E2BIG past its limits).
pub fn read_cstr_array(addr: usize) -> Result<Vec<Vec<u8>>, Errno> {
    let mut out = Vec::new();
    if addr == 0 {
        return Ok(out);
    }
    let mut total = 0usize;
    for i in 0.. {
        let p: usize = read(addr + i * 8)?;
        if p == 0 {
            break;
        }
        if i >= 0x7FFF_FFFF {
            return Err(Errno::E2BIG);
        }
        let s = read_cstr(p, 32 * runtime::PAGE_SIZE).map_err(|e| {
            if e == Errno::ENAMETOOLONG {
                Errno::E2BIG
            } else {
                e
            }
        })?;
        total += s.len() + 1 + 8;
        if total > 2 * 1024 * 1024 {
            return Err(Errno::E2BIG);
        }
        out.push(s);
    }
    Ok(out)
}

/// A typed program pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserPtr<T: Pod> {
    addr: usize,
    _t: PhantomData<T>,
}

impl<T: Pod> UserPtr<T> {
    pub fn new(addr: usize) -> Self {
        UserPtr {
            addr,
            _t: PhantomData,
        }
    }
    pub fn is_null(&self) -> bool {
        self.addr == 0
    }
    pub fn addr(&self) -> usize {
        self.addr
    }
    pub fn read(&self) -> Result<T, Errno> {
        read(self.addr)
    }
    pub fn write(&self, v: &T) -> Result<(), Errno> {
        write(self.addr, v)
    }
}
