//! Memory-map calls. The program may map, unmap and protect anything except
//! the runtime's own memory (`mem::owns`); there it gets the error Linux gives
//! for a range that is not the program's to change.
#![deny(unsafe_code)]

use super::{host_call, Ctx, SysResult};
use crate::errno::Errno;
use crate::mem::{
    self, page_up, MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_PRIVATE, PROT_READ,
    PROT_WRITE,
};

/// The emulated program break.
pub struct Brk {
    /// Lowest break (end of the executable's data, page-aligned).
    pub start: usize,
    /// Current break as the program sees it.
    pub cur: usize,
    /// End of the memory mapped for the break so far (page-aligned).
    pub mapped_end: usize,
}

pub static BRK: crate::lock::Lock<Brk> = crate::lock::Lock::new(
    crate::lock::Rank::Brk,
    Brk {
        start: 0,
        cur: 0,
        mapped_end: 0,
    },
);

/// Sets the initial break (called by the loader).
pub fn init_brk(start: usize) {
    let start = page_up(start);
    *BRK.lock() = Brk {
        start,
        cur: start,
        mapped_end: start,
    };
}

/// Implements brk(2): returns the new break, or the old one on failure.
pub fn brk(c: &mut Ctx<'_>) -> SysResult {
    let want = c.arg(0);
    let mut b = BRK.lock();
    if want < b.start {
        return Ok(b.cur);
    }
    let want_end = page_up(want);
    if want_end > b.mapped_end {
        let len = want_end - b.mapped_end;
        if mem::owns(b.mapped_end, len) {
            return Ok(b.cur);
        }
        let r = host_call(
            crate::host::nr::MMAP,
            [
                b.mapped_end,
                len,
                (PROT_READ | PROT_WRITE) as usize,
                (MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE) as usize,
                usize::MAX,
                0,
            ],
        );
        match r {
            Ok(addr) if addr == b.mapped_end => b.mapped_end = want_end,
            _ => return Ok(b.cur),
        }
    } else if want_end < b.mapped_end
        && host_call(
            crate::host::nr::MUNMAP,
            [want_end, b.mapped_end - want_end, 0, 0, 0, 0],
        )
        .is_ok()
    {
        b.mapped_end = want_end;
    }
    b.cur = want;
    Ok(b.cur)
}

/// Implements mmap(2): MAP_FIXED over runtime memory fails with ENOMEM
/// (EEXIST for MAP_FIXED_NOREPLACE, as for any occupied range).
pub fn mmap(c: &mut Ctx<'_>) -> SysResult {
    let (addr, len, flags) = (c.arg(0), c.arg(1), c.arg(3) as i32);
    if flags & MAP_FIXED_NOREPLACE != 0 && mem::owns(addr, len) {
        return Err(Errno::EEXIST);
    }
    if flags & MAP_FIXED != 0 && mem::owns(addr, len) {
        return Err(Errno::ENOMEM);
    }
    let r = c.host()?;
    if flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0 {
        crate::patch::forget_range(r, len);
    }
    if flags & crate::mem::MAP_SHARED != 0 {
        crate::patch::note_shared_mapping(r, len);
    }
    Ok(r)
}

/// Implements munmap(2): runtime memory gives EINVAL.
pub fn munmap(c: &mut Ctx<'_>) -> SysResult {
    if mem::owns(c.arg(0), c.arg(1)) {
        return Err(Errno::EINVAL);
    }
    let r = c.host()?;
    crate::patch::forget_range(c.arg(0), c.arg(1));
    Ok(r)
}

/// Implements mprotect(2): runtime memory gives ENOMEM, as unmapped memory does.
pub fn mprotect(c: &mut Ctx<'_>) -> SysResult {
    if mem::owns(c.arg(0), c.arg(1)) {
        return Err(Errno::ENOMEM);
    }
    c.host()
}

/// Implements pkey_mprotect(2), as mprotect.
pub fn pkey_mprotect(c: &mut Ctx<'_>) -> SysResult {
    mprotect(c)
}

/// Implements mseal(2): runtime memory gives ENOMEM.
pub fn mseal(c: &mut Ctx<'_>) -> SysResult {
    mprotect(c)
}

/// Implements madvise(2): runtime memory gives ENOMEM. Advice that drops
/// page contents (private file pages revert to the file) also drops the
/// patcher's record of sites there.
pub fn madvise(c: &mut Ctx<'_>) -> SysResult {
    const MADV_DONTNEED: usize = 4;
    const MADV_FREE: usize = 8;
    const MADV_REMOVE: usize = 9;
    let r = mprotect(c)?;
    if matches!(c.arg(2), MADV_DONTNEED | MADV_FREE | MADV_REMOVE) {
        crate::patch::forget_range(c.arg(0), c.arg(1));
    }
    Ok(r)
}

/// Implements remap_file_pages(2): runtime memory gives EINVAL.
pub fn remap_file_pages(c: &mut Ctx<'_>) -> SysResult {
    munmap(c)
}

const MREMAP_FIXED: i32 = 2;

/// Implements mremap(2): an old range in runtime memory gives EFAULT, a new
/// fixed range there gives EINVAL.
pub fn mremap(c: &mut Ctx<'_>) -> SysResult {
    let (old, old_len, new_len, flags, new) =
        (c.arg(0), c.arg(1), c.arg(2), c.arg(3) as i32, c.arg(4));
    if mem::owns(old, old_len.max(1)) {
        return Err(Errno::EFAULT);
    }
    if flags & MREMAP_FIXED != 0 && mem::owns(new, new_len) {
        return Err(Errno::EINVAL);
    }
    let r = c.host()?;
    crate::patch::forget_range(old, old_len);
    crate::patch::forget_range(r, new_len);
    Ok(r)
}
