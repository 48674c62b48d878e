//! The program's address space as the library OS keeps it: the program
//! break (brk(2) is emulated over anonymous mappings).
#![deny(unsafe_code)]

use crate::mm::runtime::{self, page_up};

/// The emulated program break.
pub struct Brk {
    /// Lowest break (end of the executable's data, page-aligned).
    pub start: usize,
    /// Current break as the program sees it.
    pub cur: usize,
    /// End of the memory mapped for the break so far (page-aligned).
    pub mapped_end: usize,
}

pub static BRK: crate::sync::Lock<Brk> = crate::sync::Lock::new(
    crate::sync::Rank::Brk,
    Brk {
        start: 0,
        cur: 0,
        mapped_end: 0,
    },
);

/// Sets the initial break (called by the loader) for an executable mapped
/// at `[low, end)`: after it, moved up by a random number of pages below
/// 1 GiB where Linux would randomize it (`arch_randomize_brk`:
/// `randomize_va_space` 2 and no ADDR_NO_RANDOMIZE personality), so the
/// heap is no easier to find under picos than natively.
///
/// The room kept above the break (`runtime::BRK_ROOM`) must not cover the
/// windows where punned trampolines of the executable's text go
/// (`patch::PUN_WINDOW_OFFSET`): a static program's cancellable `read`
/// would otherwise stay on the trap path whenever the random break fell
/// below its window. The break is drawn from the positions that leave them
/// out (about half of the range: one bit less entropy than Linux's).
pub fn init_brk(low: usize, end: usize) {
    let start = brk_position(page_up(end), low, brk_randomized().then(random_word));
    runtime::set_brk_start(start);
    *BRK.lock() = Brk {
        start,
        cur: start,
        mapped_end: start,
    };
}

fn random_word() -> usize {
    let mut r = [0u8; 8];
    crate::host::getrandom(&mut r);
    u64::from_ne_bytes(r) as usize
}

/// The initial break for an executable whose break would start at `start`
/// (page-aligned) and whose mapping starts at `low`: `start` itself without
/// randomness, else `start` plus a page count drawn with `random` from the
/// positions whose room stays clear of the executable's pun windows.
fn brk_position(start: usize, low: usize, random: Option<usize>) -> usize {
    use crate::patch::{PUN_WINDOW_OFFSET, PUN_WINDOW_SPAN};
    let Some(r) = random else {
        return start;
    };
    const RANGE: usize = 1 << 30;
    let page = runtime::PAGE_SIZE;
    // The windows of sites in [low, start): [w_lo, w_hi).
    let w_lo = low.saturating_add(PUN_WINDOW_OFFSET);
    let w_hi = start.saturating_add(PUN_WINDOW_OFFSET + PUN_WINDOW_SPAN);
    // Allowed: s + ROOM <= w_lo (below), or s >= w_hi (above).
    let below_end = w_lo.saturating_sub(runtime::BRK_ROOM).min(start + RANGE);
    let below = below_end.saturating_sub(start) / page; // s in [start, below_end]
    let above_start = page_up(w_hi.max(start));
    let above = (start + RANGE).saturating_sub(above_start) / page;
    let n = below + above;
    if n == 0 {
        return start;
    }
    let k = r % n;
    if k < below {
        start + k * page
    } else {
        above_start + (k - below) * page
    }
}

/// Does Linux randomize the break of this process?
fn brk_randomized() -> bool {
    const ADDR_NO_RANDOMIZE: usize = 0x0040000;
    if crate::host::personality(0xffff_ffff).is_ok_and(|p| p & ADDR_NO_RANDOMIZE != 0) {
        return false;
    }
    // The machine's setting, read once per runtime (an execve in place
    // asks again without reading it).
    static FULL: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);
    match FULL.load(core::sync::atomic::Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let full =
                crate::host::fds::read_small_file::<4>(c"/proc/sys/kernel/randomize_va_space")
                    .is_ok_and(|(b, n)| n >= 1 && b[0] == b'2');
            FULL.store(
                if full { 1 } else { 2 },
                core::sync::atomic::Ordering::Relaxed,
            );
            full
        }
    }
}

/// The address space's part in fork: the break is locked across it.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "brk",
    hold: |inner| {
        let _brk = BRK.lock();
        inner()
    },
    alone: crate::sync::ForkHook::nothing,
    child: crate::sync::ForkHook::no_change,
};

#[cfg(test)]
mod tests {
    use super::brk_position;
    use crate::mm::runtime::BRK_ROOM;
    use crate::patch::{PUN_WINDOW_OFFSET, PUN_WINDOW_SPAN};

    #[test]
    fn break_room_avoids_pun_windows() {
        // A static executable at 4 MiB whose data ends at 5 MiB.
        let (low, start) = (0x40_0000, 0x50_0000);
        let (w_lo, w_hi) = (
            low + PUN_WINDOW_OFFSET,
            start + PUN_WINDOW_OFFSET + PUN_WINDOW_SPAN,
        );
        assert_eq!(brk_position(start, low, None), start);
        let mut seen_below = false;
        let mut seen_above = false;
        for i in 0..4096usize {
            let r = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let s = brk_position(start, low, Some(r));
            assert!(
                s >= start && s < start + (1 << 30) && s % 4096 == 0,
                "{s:#x}"
            );
            assert!(
                s + BRK_ROOM <= w_lo || s >= w_hi,
                "room of {s:#x} covers a window"
            );
            seen_below |= s + BRK_ROOM <= w_lo;
            seen_above |= s >= w_hi;
        }
        assert!(seen_below && seen_above);
    }
}

/// The memory the runtime of process `pid` owns, when `pid` is another
/// picoprocess of this tree: its image (the mappings of the runtime's
/// memfd in `/proc/PID/maps`) and its reservation (whose base it keeps at
/// the same offset from its image as we do, read with
/// process_vm_readv). None if `pid` runs no runtime (a host process, or
/// no such process: the host answers for it); EPERM for a picoprocess of
/// another tree, whose runtime may differ from ours.
pub fn runtime_of(pid: i32) -> Result<Option<[(usize, usize); 2]>, crate::host::errno::Errno> {
    use crate::host::{self, errno::Errno};
    let mut own = [0u8; 512];
    let runtime = crate::kernel::process::tree_exe(&mut own).ok_or(Errno::EPERM)?;
    let exe = alloc::format!("/proc/{pid}/exe\0");
    let exe = core::ffi::CStr::from_bytes_with_nul(exe.as_bytes()).map_err(|_| Errno::EINVAL)?;
    let mut link = [0u8; 512];
    let Ok(len) = host::readlink(exe, &mut link) else {
        return Ok(None);
    };
    if !crate::kernel::process::is_runtime_exe(&link[..len]) {
        return Ok(None);
    }
    if link[..len] != *runtime {
        return Err(Errno::EPERM);
    }
    let path = alloc::format!("/proc/{pid}/maps\0");
    let path = core::ffi::CStr::from_bytes_with_nul(path.as_bytes()).map_err(|_| Errno::EINVAL)?;
    let maps = crate::host::fds::with_transient_fds(|| {
        let fd = host::openat(host::AT_FDCWD, path, host::O_RDONLY | host::O_CLOEXEC, 0)? as i32;
        let r = host::read_to_end(fd);
        let _ = host::close(fd);
        r
    })
    .map_err(|_| Errno::ESRCH)?;
    // The runtime file's name, as the maps show it (without " (deleted)").
    let name = runtime.strip_suffix(b" (deleted)").unwrap_or(runtime);
    let (mut lo, mut hi) = (usize::MAX, 0);
    for line in maps.split(|&b| b == b'\n') {
        let Some((a, b, file)) = crate::kernel::fs::procview::parse_maps_line(line) else {
            continue;
        };
        if file.starts_with(name) {
            lo = lo.min(a);
            hi = hi.max(b);
        }
    }
    if lo >= hi {
        return Err(Errno::ESRCH);
    }
    let base = host::read_remote_u64(pid, lo + runtime::base_var_offset())? as usize;
    if base == 0 || base % runtime::PAGE_SIZE != 0 {
        return Err(Errno::EPERM);
    }
    Ok(Some([
        (lo, hi),
        (base, base.saturating_add(runtime::RESERVE_SPAN)),
    ]))
}
