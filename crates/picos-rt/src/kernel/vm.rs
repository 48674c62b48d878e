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

/// Sets the initial break (called by the loader): after the executable,
/// moved up by a random number of pages below 1 GiB where Linux would
/// randomize it (`arch_randomize_brk`: `randomize_va_space` 2 and no
/// ADDR_NO_RANDOMIZE personality), so the heap is no easier to find
/// under picos than natively.
pub fn init_brk(start: usize) {
    let mut start = page_up(start);
    if brk_randomized() {
        let mut r = [0u8; 8];
        crate::host::getrandom(&mut r);
        let pages = (1usize << 30) / runtime::PAGE_SIZE;
        start += (u64::from_ne_bytes(r) as usize % pages) * runtime::PAGE_SIZE;
    }
    runtime::set_brk_start(start);
    *BRK.lock() = Brk {
        start,
        cur: start,
        mapped_end: start,
    };
}

/// Does Linux randomize the break of this process?
fn brk_randomized() -> bool {
    const ADDR_NO_RANDOMIZE: usize = 0x0040000;
    if crate::host::personality(0xffff_ffff).is_ok_and(|p| p & ADDR_NO_RANDOMIZE != 0) {
        return false;
    }
    crate::host::fds::read_small_file::<4>(c"/proc/sys/kernel/randomize_va_space")
        .is_ok_and(|(b, n)| n >= 1 && b[0] == b'2')
}

/// The address space's part in fork: the break is locked across it.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "brk",
    hold: |inner| {
        let _brk = BRK.lock();
        inner()
    },
    child: crate::sync::ForkHook::no_change,
};
