//! The host's vDSO: its time functions, found in its ELF image
//! (AT_SYSINFO_EHDR) and called as C functions.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicUsize, Ordering};
use object::elf::{FileHeader64, Sym64, SHT_DYNSYM};
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian as LE;

static CLOCK_GETTIME: AtomicUsize = AtomicUsize::new(0);
static GETTIMEOFDAY: AtomicUsize = AtomicUsize::new(0);
static TIME: AtomicUsize = AtomicUsize::new(0);

/// Finds the vDSO's functions (AT_SYSINFO_EHDR). Missing ones stay unused.
pub fn init(base: usize) {
    if base == 0 {
        return;
    }
    // SAFETY: the kernel maps the whole vDSO image at `base`; 2 pages cover
    // its headers and tables on x86-64 (we bound every access by that).
    let image = unsafe { core::slice::from_raw_parts(base as *const u8, 2 * 4096) };
    let Ok(h) = FileHeader64::<LE>::parse(image) else {
        return;
    };
    let Ok(sections) = h.sections(LE, image) else {
        return;
    };
    for s in sections.iter() {
        if s.sh_type(LE) != SHT_DYNSYM {
            continue;
        }
        let Ok(syms) = s.data_as_array::<Sym64<LE>, _>(LE, image) else {
            continue;
        };
        let Ok(strtab) = sections.strings(LE, image, object::SectionIndex(s.sh_link(LE) as usize))
        else {
            continue;
        };
        for sym in syms {
            let Ok(name) = sym.name(LE, strtab) else {
                continue;
            };
            let addr = base + sym.st_value(LE) as usize;
            match name {
                b"__vdso_clock_gettime" => CLOCK_GETTIME.store(addr, Ordering::Relaxed),
                b"__vdso_gettimeofday" => GETTIMEOFDAY.store(addr, Ordering::Relaxed),
                b"__vdso_time" => TIME.store(addr, Ordering::Relaxed),
                _ => {}
            }
        }
    }
}

/// The vDSO's clock_gettime: `Some(ret)` if the vDSO has it. A fallback
/// to a system call inside it traps unless the caller allows it (Syscall
/// User Dispatch: `kernel::time`).
pub fn clock_gettime(clock: i32, ts: &mut [i64; 2]) -> Option<i32> {
    let f = CLOCK_GETTIME.load(Ordering::Relaxed);
    if f == 0 {
        return None;
    }
    // SAFETY: `f` is the vDSO's clock_gettime (found by `init`; C ABI);
    // `ts` is a live timespec.
    let f: extern "C" fn(i32, *mut [i64; 2]) -> i32 = unsafe { core::mem::transmute(f) };
    Some(f(clock, ts))
}

/// The vDSO's gettimeofday.
pub fn gettimeofday(tv: &mut [i64; 2]) -> Option<i32> {
    let f = GETTIMEOFDAY.load(Ordering::Relaxed);
    if f == 0 {
        return None;
    }
    // SAFETY: the vDSO's gettimeofday (C ABI); `tv` is a live timeval.
    let f: extern "C" fn(*mut [i64; 2], usize) -> i32 = unsafe { core::mem::transmute(f) };
    Some(f(tv, 0))
}

/// The vDSO's time.
pub fn time() -> Option<i64> {
    let f = TIME.load(Ordering::Relaxed);
    if f == 0 {
        return None;
    }
    // SAFETY: the vDSO's time (C ABI), called with a null pointer.
    let f: extern "C" fn(usize) -> i64 = unsafe { core::mem::transmute(f) };
    Some(f(0))
}
