//! The runtime's own memory: one reservation that holds the runtime heap and
//! every thread's runtime stack, so that "is this the runtime's memory?" is a
//! range check (see [`owns`]).
//!
//! Layout of the reservation (all `PROT_NONE` until used):
//!
//! ```text
//! [base, base + VIEW_SPAN)                     views of files (`FileView`)
//! [base + VIEW_SPAN, heap_base())              thread stacks, STACK_SLOT bytes
//!                                              each; slot 0 the highest
//! [heap_base(), heap_base() + HEAP_LIMIT)      heap, grown by `mprotect`; the
//!                                              board and the known-sites file
//!                                              at its top (`mm::shared`)
//! ```
//!
//! The first thread's slot (its runtime state at the slot's top, its stack
//! below) ends where the heap starts, and `heap_base()` lies 1 MiB into a
//! 2 MiB frame: the pages the runtime writes in every process are one
//! mapping, under one page table. A fork copies page tables by mapping
//! and by page-table page; with the heap and the stacks 16 GiB apart,
//! each fork + exit took ~5% longer (docs/BENCHMARKS.md, thirty-fourth
//! session).
//!
//! # Safety
//! This module hands out raw memory to the global allocator and to thread
//! creation; it is one of the runtime's few `unsafe` modules.
#![allow(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

pub const PAGE_SIZE: usize = 4096;
pub const PROT_NONE: i32 = 0;
pub const PROT_READ: i32 = 1;
pub const PROT_WRITE: i32 = 2;
pub const PROT_EXEC: i32 = 4;
pub const MAP_SHARED: i32 = 0x01;
pub const MAP_PRIVATE: i32 = 0x02;
pub const MAP_FIXED: i32 = 0x10;
pub const MAP_ANONYMOUS: i32 = 0x20;
pub const MAP_NORESERVE: i32 = 0x4000;
pub const MAP_FIXED_NOREPLACE: i32 = 0x100000;

/// The views of files ([`FileView`]), at the bottom of the reservation.
pub const VIEW_SPAN: usize = 4 << 30;
/// How far the heap may grow.
pub const HEAP_LIMIT: usize = 12 << 30;
/// Size of one thread's runtime stack slot (the lowest page is a guard).
pub const STACK_SLOT: usize = 512 << 10;
/// Number of thread stack slots.
pub const STACK_SLOTS: usize = 32768;
/// The thread stacks' part of the reservation.
pub const STACKS_SPAN: usize = STACK_SLOT * STACK_SLOTS;
/// Total size of the reservation.
pub const RESERVE_SPAN: usize = VIEW_SPAN + STACKS_SPAN + HEAP_LIMIT;
/// The heap's start lies this far into a [`FRAME`].
const HEAP_PHASE: usize = 1 << 20;
/// What one page table maps.
const FRAME: usize = 2 << 20;
// The heap's start, and so every slot's end, is a multiple of STACK_SLOT
// (`mm::area::at` relies on it).
const _: () = assert!(HEAP_PHASE.is_multiple_of(STACK_SLOT) && FRAME.is_multiple_of(STACK_SLOT));

static BASE: AtomicUsize = AtomicUsize::new(0);
static IMAGE: AtomicUsize = AtomicUsize::new(0);
static IMAGE_LEN: AtomicUsize = AtomicUsize::new(0);

/// Rounds `x` up to a page boundary (saturating).
pub const fn page_up(x: usize) -> usize {
    x.saturating_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1)
}

/// Rounds `x` down to a page boundary.
pub const fn page_down(x: usize) -> usize {
    x & !(PAGE_SIZE - 1)
}

/// Reserves the runtime's address space. Called once at start-up.
pub fn init(image: usize, image_len: usize) -> Result<(), Errno> {
    IMAGE.store(image, Ordering::Relaxed);
    IMAGE_LEN.store(image_len, Ordering::Relaxed);
    fill_image_holes(image, image_len);
    // Below the top of the mmap area, with a gap: the libraries the program
    // loads next are placed top-down above the reservation, so the address
    // space beyond them stays free for trampolines that must lie at a given
    // distance above a library (patch: the threaded `read` shape's pun).
    let hint = probe_mmap_top()
        .and_then(|top| top.checked_sub(LIBRARY_GAP + RESERVE_SPAN + FRAME))
        .filter(|&h| h >= 1 << 32)
        .map_or(0, in_phase);
    let reserve = |addr: usize, len: usize, flags: i32| {
        // SAFETY: a fresh PROT_NONE mapping; MAP_FIXED_NOREPLACE never
        // replaces an existing one.
        unsafe {
            host::mmap(
                addr,
                len,
                PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | flags,
                -1,
                0,
            )
        }
    };
    let base = match hint {
        0 => None,
        h => match reserve(h, RESERVE_SPAN, MAP_FIXED_NOREPLACE) {
            Ok(b) if b == h => Some(b),
            _ => None,
        },
    };
    let base = match base {
        Some(b) => b,
        None => {
            // Anywhere: a frame more, and the ends around the base in
            // phase given back.
            let got = reserve(0, RESERVE_SPAN + FRAME, 0)?;
            let base = in_phase(got + FRAME);
            // SAFETY: both ends lie in the mapping just made, outside
            // `[base, base + RESERVE_SPAN)`, and nothing uses them.
            unsafe {
                if base > got {
                    let _ = host::munmap(got, base - got);
                }
                let _ = host::munmap(base + RESERVE_SPAN, got + FRAME - base);
            }
            base
        }
    };
    BASE.store(base, Ordering::Relaxed);
    Ok(())
}

/// The highest address at or below `addr` whose heap would start in phase
/// ([`HEAP_PHASE`] into a frame).
const fn in_phase(addr: usize) -> usize {
    let start = addr + VIEW_SPAN + STACKS_SPAN;
    let heap = (start & !(FRAME - 1)) + HEAP_PHASE;
    let heap = if heap > start { heap - FRAME } else { heap };
    heap - VIEW_SPAN - STACKS_SPAN
}

/// Room left above the reservation for the libraries and the first
/// mappings of the program.
const LIBRARY_GAP: usize = 1 << 30;

/// Where the kernel would place a new mapping now (the top of the free
/// mmap area).
fn probe_mmap_top() -> Option<usize> {
    // SAFETY: a fresh one-page PROT_NONE mapping, unmapped at once.
    unsafe {
        let p = host::mmap(0, PAGE_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0).ok()?;
        let _ = host::munmap(p, PAGE_SIZE);
        Some(p + PAGE_SIZE)
    }
}

/// The program headers of the runtime image at `image` (`image_len`
/// bytes), as mapped; None if they cannot be read.
fn image_program_headers(
    image: usize,
    image_len: usize,
) -> Option<&'static [object::elf::ProgramHeader64<object::LittleEndian>]> {
    use object::elf::FileHeader64;
    use object::read::elf::FileHeader;
    use object::LittleEndian as LE;
    // SAFETY: the image starts with its ELF header and program headers, in
    // its first segment (read-only, mapped for the process's life, at least
    // a page), as lld lays them out; the slice covers that page only.
    let head: &'static [u8] =
        unsafe { core::slice::from_raw_parts(image as *const u8, PAGE_SIZE.min(image_len)) };
    FileHeader64::<LE>::parse(head)
        .and_then(|h| h.program_headers(LE, head))
        .ok()
}

/// `picos run --perf-map`: the runtime's executable segment becomes
/// anonymous memory with the same bytes at the same addresses. perf finds
/// no symbols in a mapping of the sealed memfd the runtime runs from, and
/// reads a perf map (`diag::perfmap`) only for anonymous memory; the
/// mapping's new `mmap` is what tells it. Called once at start-up, before
/// anything else runs (no other thread, every signal blocked); a failure
/// leaves the image as it was.
pub fn text_as_anonymous() -> Result<(), Errno> {
    use object::elf::{PF_X, PT_LOAD};
    use object::read::elf::ProgramHeader;
    use object::LittleEndian as LE;
    let (image, image_len) = image_range();
    let phdrs = image_program_headers(image, image_len).ok_or(Errno::ENOEXEC)?;
    let Some(text) = phdrs
        .iter()
        .find(|p| p.p_type(LE) == PT_LOAD && p.p_flags(LE) & PF_X != 0)
    else {
        return Err(Errno::ENOEXEC);
    };
    let start = page_down(image + text.p_vaddr(LE) as usize);
    let len = page_up(image + (text.p_vaddr(LE) + text.p_memsz(LE)) as usize) - start;
    let stub = crate::arch::remap_stub();
    let all = host::rt_sigprocmask(crate::host::abi::SIG_BLOCK, Some(!0))?;
    // SAFETY: two fresh private anonymous mappings of ours: a copy of the
    // text, and a page for the stub (written, then made executable); the
    // stub replaces the text with its copy (same bytes, same addresses)
    // while nothing else runs: one thread, every signal blocked.
    let r = unsafe {
        let copy = host::mmap(
            0,
            len,
            PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS,
            -1,
            0,
        )?;
        core::ptr::copy_nonoverlapping(start as *const u8, copy as *mut u8, len);
        let page = match host::mmap(
            0,
            PAGE_SIZE,
            PROT_READ | PROT_WRITE,
            MAP_PRIVATE | MAP_ANONYMOUS,
            -1,
            0,
        ) {
            Ok(p) => p,
            Err(e) => {
                let _ = host::munmap(copy, len);
                return Err(e);
            }
        };
        core::ptr::copy_nonoverlapping(stub.as_ptr(), page as *mut u8, stub.len());
        let r = match host::mprotect(page, PAGE_SIZE, PROT_READ | PROT_EXEC) {
            Ok(_) => {
                Errno::from_ret(crate::arch::run_remap_stub(page, start, len, copy)).map(|_| ())
            }
            Err(e) => Err(e),
        };
        let _ = host::munmap(page, PAGE_SIZE);
        let _ = host::munmap(copy, len);
        r
    };
    let _ = host::rt_sigprocmask(crate::host::abi::SIG_SETMASK, Some(all));
    r
}

/// Before this process's first fork: the runtime's read-only segments
/// (its text, its read-only data) are a private mapping of the runtime's
/// file, and the kernel leaves a file mapping with no private page out of
/// a fork child's page tables; the child then faulted in again, page by
/// page, each part of the runtime it ran (about ten faults, ~25 µs, in
/// every fork child). One private copy of one page in each segment (the
/// same byte written back through /proc/self/mem, as a debugger writes
/// code) gives the mapping anonymous memory, and the kernel copies its
/// whole page table at fork instead. Done once per process (a fork child
/// inherits it; a new program starts over); a failure changes nothing.
pub fn keep_image_mapped_across_fork() {
    use object::elf::{PF_W, PT_LOAD};
    use object::read::elf::ProgramHeader;
    use object::LittleEndian as LE;
    static DONE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    // (Read first: a swap writes the flag's page at every fork, a page the
    // child and the parent would each copy.)
    if DONE.load(Ordering::Relaxed) || DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    let (image, image_len) = image_range();
    let Some(phdrs) = image_program_headers(image, image_len) else {
        return;
    };
    let mut pages = [0usize; 4];
    let mut n = 0;
    for p in phdrs
        .iter()
        .filter(|p| p.p_type(LE) == PT_LOAD && p.p_flags(LE) & PF_W == 0 && p.p_memsz(LE) > 0)
    {
        if n < pages.len() {
            pages[n] = page_down(image + p.p_vaddr(LE) as usize);
            n += 1;
        }
    }
    let _ = host::fds::with_transient_fds(|| {
        let flags = host::O_RDWR | host::O_CLOEXEC;
        let fd = host::openat(host::AT_FDCWD, host::own_mem_path(), flags, 0)? as i32;
        for &page in &pages[..n] {
            // The byte there, written back unchanged: only the page's
            // private copy is new.
            let mut b = [0u8; 1];
            if host::pread(fd, &mut b, page as u64) == Ok(1) {
                let _ = host::pwrite(fd, &b, page as u64);
            }
        }
        let _ = host::close(fd);
        Ok(())
    });
}

/// The kernel maps the runtime image segment by segment and leaves the
/// pages between segments unmapped; the program's `mmap` could be given one
/// of them, inside the range the runtime calls its own. Reserve them.
fn fill_image_holes(image: usize, image_len: usize) {
    use object::elf::PT_LOAD;
    use object::read::elf::ProgramHeader;
    use object::LittleEndian as LE;
    let mut loads = [(0usize, 0usize); 16];
    let mut n = 0;
    let phdrs = image_program_headers(image, image_len).unwrap_or_else(|| {
        crate::log!(Warning, "cannot read the runtime image's program headers");
        &[]
    });
    for ph in phdrs {
        if ph.p_type(LE) == PT_LOAD && n < loads.len() {
            let (vaddr, memsz) = (ph.p_vaddr(LE) as usize, ph.p_memsz(LE) as usize);
            loads[n] = (page_down(image + vaddr), page_up(image + vaddr + memsz));
            n += 1;
        }
    }
    let mut holes = [(0usize, 0usize); 17];
    let count = image_holes(
        &mut loads[..n],
        image,
        page_up(image + image_len),
        &mut holes,
    );
    for &(start, len) in &holes[..count] {
        // SAFETY: MAP_FIXED_NOREPLACE never replaces a mapping.
        let _ = unsafe {
            host::mmap(
                start,
                len,
                PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
    }
}

/// The unmapped gaps `(start, len)` of `[image, image_end)` given the
/// page-aligned segment ranges `loads`; returns how many were written.
fn image_holes(
    loads: &mut [(usize, usize)],
    image: usize,
    image_end: usize,
    out: &mut [(usize, usize)],
) -> usize {
    loads.sort_unstable();
    let mut n = 0;
    let mut prev_end = image;
    for &(start, end) in loads
        .iter()
        .chain(core::iter::once(&(image_end, image_end)))
    {
        if start > prev_end && n < out.len() {
            out[n] = (prev_end, start - prev_end);
            n += 1;
        }
        prev_end = prev_end.max(end);
    }
    n
}

/// Does `[addr, addr + len)` overlap memory the runtime owns (its image or
/// its reservation)? Guest requests that touch such ranges are refused.
pub fn owns(addr: usize, len: usize) -> bool {
    let end = addr.saturating_add(len.max(1));
    owns_writable(addr, len) || code_regions().any(|b| addr < b + CODE_REGION_SIZE && b < end)
}

/// Size of a region of code the runtime maps among the program's memory
/// (the patcher's trampolines, which must lie within ±2 GiB of the sites).
pub const CODE_REGION_SIZE: usize = 64 << 10;
/// How many such regions there may be.
pub const MAX_CODE_REGIONS: usize = 64;
static CODE_REGION: [AtomicUsize; MAX_CODE_REGIONS] =
    [const { AtomicUsize::new(0) }; MAX_CODE_REGIONS];
static CODE_REGIONS: AtomicUsize = AtomicUsize::new(0);

/// The bases of the code regions mapped so far, in mapping order.
pub fn code_regions() -> impl Iterator<Item = usize> {
    let n = CODE_REGIONS.load(Ordering::Acquire);
    (0..n).map(|i| CODE_REGION[i].load(Ordering::Relaxed))
}

/// Maps a code region of [`CODE_REGION_SIZE`] bytes at exactly `at` (never
/// over an existing mapping), starting with `header` (the rest zero), then
/// read-and-execute only. Returns its index in [`code_regions`]. ENOMEM
/// when there may be no more regions; another error when `at` is taken.
/// Callers serialise (the patcher maps under its state lock).
pub fn map_code_region(at: usize, header: &[u8]) -> Result<usize, Errno> {
    let n = CODE_REGIONS.load(Ordering::Acquire);
    if n >= MAX_CODE_REGIONS || header.len() > PAGE_SIZE {
        return Err(Errno::ENOMEM);
    }
    if owns(at, CODE_REGION_SIZE) {
        return Err(Errno::EEXIST);
    }
    let flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE;
    // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping, and
    // `at` is not the runtime's.
    let b = unsafe { host::mmap(at, CODE_REGION_SIZE, PROT_READ | PROT_WRITE, flags, -1, 0) }?;
    if b != at {
        // SAFETY: the mapping just made, which nothing uses.
        let _ = unsafe { host::munmap(b, CODE_REGION_SIZE) };
        return Err(Errno::EEXIST);
    }
    // SAFETY: `b` is the start of the fresh writable mapping above, which
    // holds at least a page.
    unsafe { core::ptr::copy_nonoverlapping(header.as_ptr(), b as *mut u8, header.len()) };
    // SAFETY: our own fresh mapping, which no code uses yet.
    if let Err(e) = unsafe { host::mprotect(b, CODE_REGION_SIZE, PROT_READ | PROT_EXEC) } {
        // SAFETY: as above.
        let _ = unsafe { host::munmap(b, CODE_REGION_SIZE) };
        return Err(e);
    }
    CODE_REGION[n].store(b, Ordering::Relaxed);
    CODE_REGIONS.store(n + 1, Ordering::Release);
    Ok(n)
}

/// Unmaps every code region (an execve in place: the old program's
/// trampolines go with it). The caller holds the patcher's state lock and
/// is the process's only thread, which runs no code there.
pub fn unmap_code_regions() {
    let n = CODE_REGIONS.load(Ordering::Acquire);
    CODE_REGIONS.store(0, Ordering::Release);
    for r in &CODE_REGION[..n] {
        let b = r.swap(0, Ordering::Relaxed);
        // SAFETY: a region mapped by `map_code_region`, which only the old
        // program's trampolines use; no thread runs there (see above).
        let _ = unsafe { host::munmap(b, CODE_REGION_SIZE) };
    }
}

/// For unit tests of the patcher: region 0 at `base` (nothing is mapped).
#[cfg(test)]
pub fn set_code_region_for_test(base: usize) {
    CODE_REGION[0].store(base, Ordering::Relaxed);
    CODE_REGIONS.store(
        CODE_REGIONS.load(Ordering::Relaxed).max(1),
        Ordering::Release,
    );
}

/// As [`owns`], leaving out the trampoline regions: the check for copies to
/// and from program memory (trampolines are never writable, so a copy into
/// one faults to EFAULT anyway, and reading one is harmless).
#[inline]
pub fn owns_writable(addr: usize, len: usize) -> bool {
    let end = addr.saturating_add(len.max(1));
    let overlaps = |b: usize, l: usize| l != 0 && addr < b + l && b < end;
    overlaps(BASE.load(Ordering::Relaxed), RESERVE_SPAN)
        || overlaps(
            IMAGE.load(Ordering::Relaxed),
            IMAGE_LEN.load(Ordering::Relaxed),
        )
}

/// The runtime's own address ranges outside the code regions: its image
/// (holes included) and its reservation, as `(start, end)`.
pub fn own_ranges() -> [(usize, usize); 2] {
    let (image, len) = image_range();
    let base = BASE.load(Ordering::Relaxed);
    [(image, page_up(image + len)), (base, base + RESERVE_SPAN)]
}

/// Where the reservation's base is kept: the same offset from the image's
/// start in every process that runs this runtime (another picoprocess of
/// the tree reads it there: `kernel::vm::runtime_of`).
pub fn base_var_offset() -> usize {
    (&BASE as *const AtomicUsize as usize).wrapping_sub(IMAGE.load(Ordering::Relaxed))
}

/// The base of the runtime's reservation (0 before `init`).
pub fn reservation_base() -> usize {
    BASE.load(Ordering::Relaxed)
}

/// The runtime image's address range (where syscalls are allowed).
pub fn image_range() -> (usize, usize) {
    (
        IMAGE.load(Ordering::Relaxed),
        IMAGE_LEN.load(Ordering::Relaxed),
    )
}

// ---------------------------------------------------------------------------
// Values replaced now and then, never freed.

/// A value set at start-up and replaced now and then (the launch
/// configuration, by an execve in place), read without a lock: each `set`
/// leaks its box, so a reference `get` gave stays valid for ever (a few
/// hundred bytes per replacement).
pub struct Replaceable<T: 'static>(core::sync::atomic::AtomicPtr<T>);

impl<T: 'static> Replaceable<T> {
    pub const fn new() -> Self {
        Replaceable(core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()))
    }

    /// Publishes `v` (the previous value is leaked, not dropped).
    pub fn set(&self, v: T) {
        self.0.store(
            alloc::boxed::Box::leak(alloc::boxed::Box::new(v)),
            Ordering::Release,
        );
    }

    /// The value last published, if any.
    pub fn get(&self) -> Option<&'static T> {
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: `p` is null or came from `Box::leak` in `set`: a valid,
        // initialised value that is never freed nor written again.
        unsafe { p.as_ref() }
    }
}

impl<T: 'static> Default for Replaceable<T> {
    fn default() -> Self {
        Self::new()
    }
}

// ---------------------------------------------------------------------------
// Thread stack slots.

/// Slot states.
const SLOT_FREE: u8 = 0;
const SLOT_USED: u8 = 1;
/// The thread has exited (or is exiting); the slot is free once the kernel
/// reports the thread gone (see `thread::reclaimable`).
const SLOT_EXITING: u8 = 2;
/// Taken by `alloc_stack_slot`, not yet readable: `slot_in_use` must not
/// count it (`thread::for_each_live` reads the Thread at its top).
const SLOT_CLAIMED: u8 = 3;

static SLOTS: [AtomicU8; STACK_SLOTS] = [const { AtomicU8::new(SLOT_FREE) }; STACK_SLOTS];
static SLOT_HINT: AtomicUsize = AtomicUsize::new(0);
/// One past the highest slot ever claimed: the slots above it have always
/// been free, so a walk over the slots in use stops here (a fork child's
/// reset walked all 32,768, 40 µs of every fork).
static SLOTS_SEEN: AtomicUsize = AtomicUsize::new(0);

/// One past the highest slot that has ever been in use.
pub fn slots_seen() -> usize {
    SLOTS_SEEN.load(Ordering::Acquire).min(STACK_SLOTS)
}

/// Base address of stack slot `i` (slot 0 ends where the heap starts).
pub fn slot_base(i: usize) -> usize {
    slot_base_below(heap_base(), i)
}

/// Index of the slot holding `addr`, if any.
#[inline]
pub fn slot_of(addr: usize) -> Option<usize> {
    slot_below(heap_base(), addr)
}

/// [`slot_base`] for a heap at `heap`.
const fn slot_base_below(heap: usize, i: usize) -> usize {
    heap - (i + 1) * STACK_SLOT
}

/// [`slot_of`] for a heap at `heap` (none for a heap at 0).
#[inline]
const fn slot_below(heap: usize, addr: usize) -> Option<usize> {
    let below = heap.wrapping_sub(addr).wrapping_sub(1);
    if heap != 0 && below < STACKS_SPAN {
        Some(below / STACK_SLOT)
    } else {
        None
    }
}

/// Where the heap starts (0 before `init`: then no address is in a slot).
#[inline]
pub fn heap_base() -> usize {
    match BASE.load(Ordering::Relaxed) {
        0 => 0,
        b => b + VIEW_SPAN + STACKS_SPAN,
    }
}

/// Allocates a stack slot, made readable and writable except for its guard
/// page. `reclaimable(i)` says whether an exiting slot's thread is gone.
pub fn alloc_stack_slot(reclaimable: impl Fn(usize) -> bool) -> Result<usize, Errno> {
    // Recently retired slots first: their pages are mapped and warm, so a
    // program that creates and joins threads in a loop reuses one slot.
    for r in &RECENT {
        let i = r.load(Ordering::Relaxed);
        if i < STACK_SLOTS
            && SLOTS[i].load(Ordering::Acquire) == SLOT_EXITING
            && reclaimable(i)
            && SLOTS[i]
                .compare_exchange(SLOT_EXITING, SLOT_USED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            // Its pages stay mapped: in use at once.
            r.store(usize::MAX, Ordering::Relaxed);
            return Ok(i);
        }
    }
    let hint = SLOT_HINT.load(Ordering::Relaxed);
    for k in 0..STACK_SLOTS {
        let i = (hint + k) % STACK_SLOTS;
        let state = SLOTS[i].load(Ordering::Acquire);
        let take = match state {
            SLOT_FREE => SLOTS[i]
                .compare_exchange(SLOT_FREE, SLOT_CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok(),
            SLOT_EXITING if reclaimable(i) => SLOTS[i]
                .compare_exchange(
                    SLOT_EXITING,
                    SLOT_CLAIMED,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok(),
            _ => false,
        };
        if take {
            SLOT_HINT.store(i + 1, Ordering::Relaxed);
            SLOTS_SEEN.fetch_max(i + 1, Ordering::AcqRel);
            let base = slot_base(i);
            // SAFETY: the slot lies in our reservation and was just claimed.
            let r = unsafe {
                host::mprotect(
                    base + PAGE_SIZE,
                    STACK_SLOT - PAGE_SIZE,
                    PROT_READ | PROT_WRITE,
                )
            };
            if let Err(e) = r {
                SLOTS[i].store(SLOT_FREE, Ordering::Release);
                return Err(e);
            }
            // Readable now: counted as in use from here on.
            SLOTS[i].store(SLOT_USED, Ordering::Release);
            return Ok(i);
        }
    }
    Err(Errno::EAGAIN)
}

/// Is slot `i` held by a live thread?
pub fn slot_in_use(i: usize) -> bool {
    SLOTS[i].load(Ordering::Acquire) == SLOT_USED
}

/// Marks a slot as belonging to a thread that is exiting.
pub fn mark_slot_exiting(i: usize) {
    SLOTS[i].store(SLOT_EXITING, Ordering::Release);
    let k = RECENT_NEXT.fetch_add(1, Ordering::Relaxed) % RECENT.len();
    RECENT[k].store(i, Ordering::Relaxed);
}

/// The last few slots marked exiting (usize::MAX: empty).
static RECENT: [AtomicUsize; 8] = [const { AtomicUsize::new(usize::MAX) }; 8];
static RECENT_NEXT: AtomicUsize = AtomicUsize::new(0);

/// Marks a slot free at once (its thread never ran, or never will again),
/// and the next one to take: its pages are mapped and warm. (Taken in
/// turn instead, each vfork child's slot was a new one, whose stack pages
/// the process then kept: ~40 KiB more memory per vfork + exec in a shell
/// loop, and forks slower with every page to copy.)
pub fn free_slot(i: usize) {
    super::area::forget(i);
    SLOTS[i].store(SLOT_FREE, Ordering::Release);
    SLOT_HINT.fetch_min(i, Ordering::Relaxed);
}

/// Is `[addr, addr + len)` inside slot `slot`'s stack (above its guard page)?
fn in_slot(slot: usize, addr: usize, len: usize) -> bool {
    slot < STACK_SLOTS
        && addr >= slot_base(slot) + PAGE_SIZE
        && addr
            .checked_add(len)
            .is_some_and(|e| e <= slot_base(slot) + STACK_SLOT)
}

/// Reads a `T` at `addr` in slot `slot`'s stack (None if it does not lie
/// there, or the slot is free).
pub fn read_in_slot<T: super::user::Pod>(slot: usize, addr: usize) -> Option<T> {
    if !in_slot(slot, addr, core::mem::size_of::<T>())
        || SLOTS[slot].load(Ordering::Acquire) == SLOT_FREE
    {
        return None;
    }
    // SAFETY: inside the slot's mapped, read-write stack (checked); any
    // bit pattern is a T (Pod); an unaligned address is read as such.
    Some(unsafe { (addr as *const T).read_unaligned() })
}

/// Writes `bytes` at `addr` in slot `slot`'s stack, which the caller owns
/// (a child's, not running yet). Panics if they do not lie there.
pub fn write_in_slot(slot: usize, addr: usize, bytes: &[u8]) {
    assert!(in_slot(slot, addr, bytes.len()) && slot_in_use(slot));
    // SAFETY: inside the slot's mapped, read-write stack (checked above),
    // which nothing else uses (the caller's contract).
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), addr as *mut u8, bytes.len()) };
}

/// Runs `f` on slot `slot`'s stack, below `top` (the slot's own thread
/// area), leaving the caller's stack for good.
pub fn switch_stack(slot: usize, top: usize, f: extern "C" fn() -> !) -> ! {
    assert!(in_slot(slot, top - 64, 64) && slot_in_use(slot) && top % 16 == 0);
    extern "C" fn call(f: usize) -> ! {
        // SAFETY: `f` is the `extern "C" fn() -> !` passed to switch_stack.
        let f: extern "C" fn() -> ! = unsafe { core::mem::transmute(f) };
        f()
    }
    // SAFETY: `top` lies in a slot of ours that nothing else runs on (a
    // fresh thread's), checked above; `call` never returns.
    unsafe { crate::arch::picos_switch_stack(f as usize, call, top) }
}

/// Starts a thread or process (clone(2) with `flags`, `ptid`, `ctid` and
/// `tls`) on stack `sp` in slot `slot`, prepared by the caller: the child
/// runs the `clone_child` upcall with `sp` and never returns. Returns the
/// host result (the child's tid or -errno) in the parent.
pub fn spawn_in_slot(
    slot: usize,
    flags: u64,
    sp: usize,
    ptid: usize,
    ctid: usize,
    tls: usize,
) -> isize {
    assert!(in_slot(slot, sp, 64) && slot_in_use(slot) && sp % 16 == 0);
    // SAFETY: `sp` lies in a slot of ours, with room above it; the child
    // runs picos_clone_child on it and never returns into this frame.
    unsafe { crate::arch::picos_clone(flags, sp, ptid, ctid, tls) }
}

/// In a fork child only the forking thread exists: every other slot is free.
pub fn reset_slots_after_fork(keep: usize) {
    for (i, s) in SLOTS[..slots_seen()].iter().enumerate() {
        if i != keep && s.load(Ordering::Relaxed) != SLOT_FREE {
            super::area::forget(i);
            s.store(SLOT_FREE, Ordering::Relaxed);
        }
    }
}

// ---------------------------------------------------------------------------
// The heap: dlmalloc over the heap part of the reservation.

static HEAP_TOP: AtomicUsize = AtomicUsize::new(0);

struct ReservationSystem;

// SAFETY: `alloc` returns fresh, page-aligned, zeroed (never-used) memory
// from our reservation; we never release or remap it, which dlmalloc allows.
unsafe impl dlmalloc::Allocator for ReservationSystem {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let size = page_up(size);
        let base = heap_base();
        if base == 0 {
            return (core::ptr::null_mut(), 0, 0);
        }
        let off = HEAP_TOP.fetch_add(size, Ordering::Relaxed);
        if off + size > HEAP_LIMIT - super::shared::SHARED_SPAN {
            HEAP_TOP.fetch_sub(size, Ordering::Relaxed);
            return (core::ptr::null_mut(), 0, 0);
        }
        // SAFETY: the range is inside our reservation and not yet in use.
        match unsafe { host::mprotect(base + off, size, PROT_READ | PROT_WRITE) } {
            Ok(_) => ((base + off) as *mut u8, size, 0),
            Err(_) => (core::ptr::null_mut(), 0, 0),
        }
    }
    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        core::ptr::null_mut()
    }
    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }
    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }
    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }
    fn allocates_zeros(&self) -> bool {
        true
    }
    fn page_size(&self) -> usize {
        PAGE_SIZE
    }
}

/// The program's initial break, and the room above it kept free of the
/// runtime's own mappings (trampoline regions), so that brk(2) can grow the
/// heap as far as Linux would let it in practice.
///
/// 512 MiB: a static program's text lies just below its break, and the
/// trampoline of glibc's cancellable `read` (`mov 0x8(%rsp),%edi; xor
/// %eax,%eax; syscall`) must sit where the jump's last byte repeats the
/// `xor` opcode, 0x31 << 24 = 784 MiB above the site (`patch`'s pun). A
/// larger room hid that window, and every `read` of a threaded static
/// glibc program trapped. (A heap that outgrows this room on brk alone is
/// rare: glibc's malloc moves to mmap when brk fails.)
static BRK_START: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
pub const BRK_ROOM: usize = 512 << 20;

/// Records the program's initial break (the loader, through `kernel::vm`).
pub fn set_brk_start(start: usize) {
    BRK_START.store(start, core::sync::atomic::Ordering::Relaxed);
}

/// The program's initial break ([`set_brk_start`]; 0 before a program
/// is loaded).
pub fn brk_start() -> usize {
    BRK_START.load(core::sync::atomic::Ordering::Relaxed)
}

/// Does `[addr, addr + len)` overlap the room kept for the program's heap?
pub fn in_brk_room(addr: usize, len: usize) -> bool {
    let s = BRK_START.load(core::sync::atomic::Ordering::Relaxed);
    s != 0 && addr < s + BRK_ROOM && addr + len > s
}

/// The runtime's global allocator (a locked dlmalloc).
pub struct RuntimeHeap(crate::sync::Lock<dlmalloc::Dlmalloc<ReservationSystem>>);

impl RuntimeHeap {
    pub const fn new() -> Self {
        RuntimeHeap(crate::sync::Lock::new(
            crate::sync::Rank::Heap,
            dlmalloc::Dlmalloc::new_with_allocator(ReservationSystem),
        ))
    }
}

impl Default for RuntimeHeap {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: dlmalloc's contract (valid layouts, pointers from this allocator) is
// upheld by the GlobalAlloc caller; the mutex serialises access.
unsafe impl core::alloc::GlobalAlloc for RuntimeHeap {
    unsafe fn alloc(&self, layout: core::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.0.lock().malloc(layout.size(), layout.align()) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: core::alloc::Layout) {
        // SAFETY: forwarded contract.
        unsafe { self.0.lock().free(ptr, layout.size(), layout.align()) }
    }
    unsafe fn alloc_zeroed(&self, layout: core::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { self.0.lock().calloc(layout.size(), layout.align()) }
    }
    unsafe fn realloc(
        &self,
        ptr: *mut u8,
        layout: core::alloc::Layout,
        new_size: usize,
    ) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe {
            self.0
                .lock()
                .realloc(ptr, layout.size(), layout.align(), new_size)
        }
    }
}

/// The runtime's global allocator (only in the picoprocess; host builds use std's).
#[cfg(target_os = "none")]
#[global_allocator]
pub static HEAP: RuntimeHeap = RuntimeHeap::new();

// ---------------------------------------------------------------------------
// Views of files: read-only mappings of files in the reservation, so that
// the program can neither unmap nor replace them (`owns`).

/// The free parts of the view area, as (offset from the reservation's base,
/// length), sorted and never adjacent; empty until the first view is made
/// (`ViewSpace::init`).
struct ViewSpace {
    free: alloc::vec::Vec<(usize, usize)>,
    init: bool,
}

static VIEWS: crate::sync::Lock<ViewSpace> = crate::sync::Lock::new(
    crate::sync::Rank::FileViews,
    ViewSpace {
        free: alloc::vec::Vec::new(),
        init: false,
    },
);

impl ViewSpace {
    /// First fit: the offset of `len` free bytes, taken.
    fn take(&mut self, len: usize) -> Option<usize> {
        if !self.init {
            self.free.push((0, VIEW_SPAN));
            self.init = true;
        }
        let i = self.free.iter().position(|&(_, l)| l >= len)?;
        let (off, l) = self.free[i];
        if l == len {
            self.free.remove(i);
        } else {
            self.free[i] = (off + len, l - len);
        }
        Some(off)
    }

    /// Gives back `[off, off + len)`, merged with its free neighbours.
    fn give(&mut self, off: usize, len: usize) {
        let i = self.free.partition_point(|&(o, _)| o < off);
        self.free.insert(i, (off, len));
        if i + 1 < self.free.len() && off + len == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == off {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
    }
}

/// A read-only, private mapping of a whole file in the runtime's
/// reservation, unmapped (its range given back) when dropped.
pub struct FileView {
    addr: usize,
    len: usize,
    size: usize,
}

impl FileView {
    /// Maps the first `size` bytes of the file open at `fd` (which stays
    /// the caller's). ENOMEM if the view area has no room.
    pub fn map(fd: i32, size: usize) -> Result<FileView, Errno> {
        let len = page_up(size);
        let base = BASE.load(Ordering::Relaxed);
        if len == 0 || len > VIEW_SPAN || base == 0 {
            return Err(Errno::ENOMEM);
        }
        let off = VIEWS.lock().take(len).ok_or(Errno::ENOMEM)?;
        // SAFETY: `[base + off, + len)` is a part of the reservation's view
        // area that `take` handed to us alone; MAP_FIXED replaces its
        // PROT_NONE reservation and nothing else.
        match unsafe { host::mmap(base + off, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) } {
            Ok(_) => Ok(FileView {
                addr: base + off,
                len,
                size,
            }),
            Err(e) => {
                VIEWS.lock().give(off, len);
                Err(e)
            }
        }
    }

    /// Copies `n` bytes at offset `off` of the file to program address
    /// `dst`. EFAULT for a bad `dst`, or a page of the file that cannot be
    /// read (the file shrank: SIGBUS, recovered by the copy).
    pub fn copy_to_user(&self, off: usize, n: usize, dst: usize) -> Result<(), Errno> {
        if off.checked_add(n).is_none_or(|end| end > self.size) {
            return Err(Errno::EFAULT);
        }
        // SAFETY: `[addr + off, + n)` lies in the view, mapped readable for
        // as long as `self` lives; the runtime never writes it (a change of
        // the file underneath is a fault the copy recovers, not a write
        // through this slice).
        let src = unsafe { core::slice::from_raw_parts((self.addr + off) as *const u8, n) };
        super::user::copy_out(dst, src)
    }
}

impl Drop for FileView {
    fn drop(&mut self) {
        let flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE;
        // SAFETY: the view's own range, which no reference outlives (copies
        // borrow `self`); it goes back to an inaccessible reservation.
        if unsafe { host::mmap(self.addr, self.len, PROT_NONE, flags, -1, 0) }.is_ok() {
            VIEWS
                .lock()
                .give(self.addr - BASE.load(Ordering::Relaxed), self.len);
        }
    }
}

/// The runtime memory's part in fork: the view area and the heap are
/// locked across it (the heap last: code holding any other lock may
/// allocate), and in the child only the forking thread's stack slot stays
/// in use.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "runtime memory",
    hold: |inner| {
        let _views = VIEWS.lock();
        #[cfg(target_os = "none")]
        let _heap = HEAP.0.lock();
        inner()
    },
    alone: crate::sync::ForkHook::nothing,
    child: |_| {
        if let Some(slot) = slot_of(crate::arch::gs_base()) {
            reset_slots_after_fork(slot);
        }
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn view_space_takes_first_fit_and_merges() {
        let mut v = ViewSpace {
            free: alloc::vec::Vec::new(),
            init: false,
        };
        let a = v.take(8192).unwrap();
        assert_eq!(a, 0);
        let b = v.take(4096).unwrap();
        let c = v.take(4096).unwrap();
        assert_eq!((b, c), (a + 8192, a + 12288));
        v.give(b, 4096);
        // The hole is reused by a request that fits, not by a larger one.
        assert_eq!(v.take(8192).unwrap(), a + 16384);
        assert_eq!(v.take(4096).unwrap(), b);
        v.give(a, 8192);
        v.give(c, 4096);
        v.give(b, 4096);
        // a..c merged: 16 KiB free at the start again.
        assert_eq!(v.free[0], (a, 16384));
        assert!(v.take(VIEW_SPAN).is_none());
        v.give(a + 16384, 8192);
        assert_eq!(v.free, [(0, VIEW_SPAN)]);
    }
    #[test]
    fn holes_between_segments() {
        // text ends at 0x36000, data starts at 0x37000: one hole page.
        let mut loads = [
            (0x37000, 0x40000),
            (0x0, 0xe000),
            (0xe000, 0x36000),
            (0x40000, 0x4a000),
        ];
        let mut out = [(0, 0); 8];
        let n = image_holes(&mut loads, 0, 0x4a000, &mut out);
        assert_eq!(&out[..n], &[(0x36000, 0x1000)]);
        // No holes, and a tail past the last segment.
        let mut loads = [(0x1000, 0x3000), (0x3000, 0x5000)];
        let n = image_holes(&mut loads, 0x1000, 0x7000, &mut out);
        assert_eq!(&out[..n], &[(0x5000, 0x2000)]);
        let mut loads = [(0x1000, 0x3000)];
        assert_eq!(image_holes(&mut loads, 0x1000, 0x3000, &mut out), 0);
    }

    #[test]
    fn heap_starts_in_phase_below_the_given_base() {
        for addr in [
            0x7f00_0000_0000usize,
            0x7f00_0000_1000,
            0x7f00_0010_0000,
            0x7f00_0010_1000,
            0x7f00_001f_f000,
        ] {
            let base = in_phase(addr);
            assert!(
                base <= addr && addr - base < FRAME,
                "{addr:#x} -> {base:#x}"
            );
            assert_eq!((base + VIEW_SPAN + STACKS_SPAN) % FRAME, HEAP_PHASE);
        }
    }

    #[test]
    fn slots_end_at_the_heap() {
        let base = in_phase(0x7f00_0000_0000);
        let heap = base + VIEW_SPAN + STACKS_SPAN;
        let slot = |i| slot_base_below(heap, i);
        let of = |a| slot_below(heap, a);
        assert_eq!(slot(0) + STACK_SLOT, heap);
        assert_eq!(heap % STACK_SLOT, 0);
        assert_eq!(of(heap), None);
        assert_eq!(of(heap - 1), Some(0));
        assert_eq!(of(slot(0)), Some(0));
        assert_eq!(of(slot(0) - 1), Some(1));
        assert_eq!(of(slot(STACK_SLOTS - 1)), Some(STACK_SLOTS - 1));
        assert_eq!(of(slot(STACK_SLOTS - 1) - 1), None);
        assert_eq!(slot(STACK_SLOTS - 1), base + VIEW_SPAN);
        // Before `init` (no heap) no address is in a slot.
        assert_eq!(slot_below(0, 0x7f00_0000_0000), None);
        assert_eq!(slot_below(0, usize::MAX), None);
    }

    #[test]
    fn rounding() {
        assert_eq!(page_up(0), 0);
        assert_eq!(page_up(1), 4096);
        assert_eq!(page_up(4096), 4096);
        assert_eq!(page_down(8191), 4096);
        assert_eq!(page_up(usize::MAX), usize::MAX & !4095);
    }
}
