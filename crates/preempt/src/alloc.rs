//! The crate's allocation hooks: [`PreemptAlloc`], a `GlobalAlloc` wrapper,
//! and the C functions `preempt_malloc` & co. built on it.
//!
//! Every call is a non-preemptible region (so a timer that fires inside the
//! underlying allocator is deferred to the region's end, and the caller can
//! never find the allocator's lock held by a suspended function), and every
//! block carries a 32-byte header that links it into the list of the
//! preemptible function that allocated it (a [`Tracker`]), so that `cancel`
//! can free what the function left behind. Blocks allocated outside any
//! preemptible function have no owner.
//!
//! When a function completes, the blocks it still owns are disowned (they
//! now belong to whoever holds them, e.g. the caller receiving the result);
//! when it is cancelled they are freed.

use crate::engine;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
// The allocator underneath: the C library's malloc, or (feature
// `dlmalloc`) the Rust port of Doug Lea's malloc, which takes memory from
// the kernel in 64 KiB and larger segments and keeps it: musl's malloc
// maps and unmaps small groups of pages as blocks come and go (a third of
// `picos run`'s own start-up, docs/BENCHMARKS.md).
#[cfg(feature = "dlmalloc")]
use dlmalloc::GlobalDlmalloc as System;
#[cfg(not(feature = "dlmalloc"))]
use std::alloc::System;

/// Header in front of every block. 32 bytes keeps 16-byte alignment.
#[repr(C)]
struct Hdr {
    next: *mut Hdr,
    prev: *mut Hdr,
    owner: AtomicPtr<Tracker>,
    /// Size in the low 56 bits, log2(align) in the top 8.
    size_align: usize,
}

const HDR: usize = core::mem::size_of::<Hdr>();
const _: () = assert!(HDR == 32);

/// The list of live blocks allocated by one preemptible function. Trackers
/// are never freed (a stale `owner` pointer read by a concurrent `dealloc` on
/// another thread must stay dereferenceable); the stack pool recycles them.
pub(crate) struct Tracker {
    lock: AtomicBool,
    head: UnsafeCell<*mut Hdr>,
    count: UnsafeCell<usize>,
}

// SAFETY: `head` and `count` are only touched with `lock` held.
unsafe impl Sync for Tracker {}

impl Tracker {
    pub(crate) const fn new() -> Self {
        Tracker {
            lock: AtomicBool::new(false),
            head: UnsafeCell::new(ptr::null_mut()),
            count: UnsafeCell::new(0),
        }
    }

    fn lock(&self) {
        let mut spins = 0u32;
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins > 100 {
                std::thread::yield_now();
            } else {
                core::hint::spin_loop();
            }
        }
    }

    fn unlock(&self) {
        self.lock.store(false, Ordering::Release);
    }

    /// Number of blocks on the list.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock();
        // SAFETY: lock held.
        let n = unsafe { *self.count.get() };
        self.unlock();
        n
    }

    /// # Safety
    /// `h` is a header not on any list; lock held.
    unsafe fn push_locked(&self, h: *mut Hdr) {
        // SAFETY: lock held, so head/count and the linked headers are ours.
        unsafe {
            let head = *self.head.get();
            (*h).prev = ptr::null_mut();
            (*h).next = head;
            if !head.is_null() {
                (*head).prev = h;
            }
            *self.head.get() = h;
            *self.count.get() += 1;
            (*h).owner
                .store(self as *const Tracker as *mut Tracker, Ordering::Relaxed);
        }
    }

    /// # Safety
    /// `h` is on this list; lock held.
    unsafe fn unlink_locked(&self, h: *mut Hdr) {
        // SAFETY: lock held; `h` and its neighbours are on this list.
        unsafe {
            let (p, n) = ((*h).prev, (*h).next);
            if p.is_null() {
                *self.head.get() = n;
            } else {
                (*p).next = n;
            }
            if !n.is_null() {
                (*n).prev = p;
            }
            *self.count.get() -= 1;
            (*h).owner.store(ptr::null_mut(), Ordering::Relaxed);
        }
    }

    /// The function completed: its blocks now belong to no function.
    pub(crate) fn disown_all(&self) {
        self.lock();
        // SAFETY: lock held; every header on the list is a live block.
        unsafe {
            let mut h = *self.head.get();
            while !h.is_null() {
                let next = (*h).next;
                (*h).owner.store(ptr::null_mut(), Ordering::Release);
                h = next;
            }
            *self.head.get() = ptr::null_mut();
            *self.count.get() = 0;
        }
        self.unlock();
    }

    /// The function was cancelled: free its blocks. Returns how many.
    ///
    /// # Safety
    /// Nothing may use (or free) the blocks any more.
    pub(crate) unsafe fn free_all(&self) -> usize {
        self.lock();
        let mut n = 0;
        // SAFETY: lock held; the blocks are live and, per the contract,
        // unused, so freeing them with the layout recorded in their headers
        // is what allocating them promised.
        unsafe {
            let mut h = *self.head.get();
            while !h.is_null() {
                let next = (*h).next;
                (*h).owner.store(ptr::null_mut(), Ordering::Relaxed);
                let (base, inner) = block_of(h);
                System.dealloc(base, inner);
                n += 1;
                h = next;
            }
            *self.head.get() = ptr::null_mut();
            *self.count.get() = 0;
        }
        self.unlock();
        n
    }
}

/// Offset from the block's base to the user pointer for alignment `align`.
#[inline]
fn offset(align: usize) -> usize {
    align.max(HDR)
}

/// The layout asked of the inner allocator for a user layout.
#[inline]
fn inner_layout(l: Layout) -> Option<Layout> {
    let size = l.size().checked_add(offset(l.align()))?;
    if size >> 56 != 0 {
        return None;
    }
    Layout::from_size_align(size, l.align().max(16)).ok()
}

/// # Safety
/// `h` is the header of a live block.
#[inline]
unsafe fn block_of(h: *mut Hdr) -> (*mut u8, Layout) {
    // SAFETY: the header was written by `finish_alloc`; its fields describe
    // the block.
    unsafe {
        let sa = (*h).size_align;
        let size = sa & ((1 << 56) - 1);
        let align = 1usize << (sa >> 56);
        let user = (h as *mut u8).add(HDR);
        let off = offset(align);
        let base = user.sub(off);
        (
            base,
            Layout::from_size_align_unchecked(size + off, align.max(16)),
        )
    }
}

#[inline]
fn hdr_of(user: *mut u8) -> *mut Hdr {
    user.wrapping_sub(HDR).cast()
}

static SEEN: AtomicBool = AtomicBool::new(false);

/// Whether any allocation has gone through a `PreemptAlloc` (i.e. whether it
/// is the global allocator).
pub(crate) fn wrapper_seen() -> bool {
    SEEN.load(Ordering::Relaxed)
}

/// A `GlobalAlloc` that makes every call non-preemptible and tracks blocks
/// per preemptible function. It must be the global allocator of a program
/// that launches preemptible functions: the crate installs it with its
/// `global-allocator` feature (off by default), or install one yourself:
///
/// ```text
/// #[global_allocator]
/// static A: preempt::PreemptAlloc = preempt::PreemptAlloc::system();
/// ```
///
/// Blocks are freed by `cancel` through the allocator underneath (the
/// system's `malloc`, or dlmalloc with the `dlmalloc` feature), so only it
/// can be wrapped.
pub struct PreemptAlloc {
    _private: (),
}

impl PreemptAlloc {
    /// The wrapper around the system allocator (`malloc`).
    pub const fn system() -> Self {
        PreemptAlloc { _private: () }
    }
}

impl Default for PreemptAlloc {
    fn default() -> Self {
        Self::system()
    }
}

/// Writes the header of block `base` (of `l`'s user layout), with no owner.
/// Returns the user pointer.
///
/// # Safety
/// `base` is a live block of `inner_layout(l)`.
#[inline]
unsafe fn write_hdr(base: *mut u8, l: Layout) -> *mut u8 {
    // SAFETY: the block is at least offset + size bytes, so the header lies
    // inside it, just below the user pointer.
    unsafe {
        let user = base.add(offset(l.align()));
        ptr::write(
            hdr_of(user),
            Hdr {
                next: ptr::null_mut(),
                prev: ptr::null_mut(),
                owner: AtomicPtr::new(ptr::null_mut()),
                size_align: l.size() | ((l.align().trailing_zeros() as usize) << 56),
            },
        );
        user
    }
}

/// Writes the header of a fresh block and registers it with the running
/// function's tracker, if a preemptible function runs and the allocation is
/// not inside one of its non-preemptible regions (blocks allocated there are
/// presumed to belong to shared state, e.g. a buffer of `println!`).
/// Returns the user pointer.
///
/// # Safety
/// `base` is a live block of `inner_layout(l)`; called inside the
/// allocator's own non-preemptible region, entered with `st`.
#[inline]
unsafe fn finish_alloc(
    base: *mut u8,
    l: Layout,
    st: Option<&'static engine::ThreadState>,
) -> *mut u8 {
    // SAFETY: per the contract.
    unsafe {
        let user = write_hdr(base, l);
        if let Some(t) = st.and_then(engine::tracker_for_fresh_block) {
            t.lock();
            t.push_locked(hdr_of(user));
            t.unlock();
        }
        user
    }
}

/// Takes a block off its owner's list, if it has one.
///
/// # Safety
/// `h` is the header of a live block.
#[inline]
unsafe fn release_owner(h: *mut Hdr) {
    // SAFETY: `h` is live; trackers are never freed, so `t` stays valid even
    // if its function finished meanwhile, and ownership is rechecked under
    // the lock (it only ever changes from a tracker to null).
    unsafe {
        let t = (*h).owner.load(Ordering::Acquire);
        if !t.is_null() {
            let t = &*t;
            t.lock();
            if ptr::eq((*h).owner.load(Ordering::Relaxed), t) {
                t.unlink_locked(h);
            }
            t.unlock();
        }
    }
}

/// `alloc` and `alloc_zeroed`: a block of layout `l` whose base comes from
/// `sys` (given the inner layout, of non-zero size), inside a
/// non-preemptible region and tracked by `finish_alloc`.
#[inline]
fn alloc_with(l: Layout, sys: impl FnOnce(Layout) -> *mut u8) -> *mut u8 {
    if !SEEN.load(Ordering::Relaxed) {
        SEEN.store(true, Ordering::Relaxed);
    }
    let Some(inner) = inner_layout(l) else {
        return ptr::null_mut();
    };
    let st = engine::np_enter();
    let base = sys(inner);
    let user = if base.is_null() {
        base
    } else {
        // SAFETY: `base` is a live block of `inner`; region entered.
        unsafe { finish_alloc(base, l, st) }
    };
    engine::np_leave(st);
    user
}

// SAFETY: every method returns blocks from `System` of a layout at least as
// large and as aligned as asked for (see `inner_layout`/`offset`), and frees
// them with the layout they were allocated with (recomputed from `Layout`,
// which the caller must pass unchanged, or from the header).
unsafe impl GlobalAlloc for PreemptAlloc {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: `System.alloc` is called with the non-zero-sized layout.
        alloc_with(l, |inner| unsafe { System.alloc(inner) })
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        alloc_with(l, |inner| unsafe { System.alloc_zeroed(inner) })
    }

    #[inline]
    unsafe fn dealloc(&self, user: *mut u8, l: Layout) {
        let st = engine::np_enter();
        // SAFETY: `user` came from `alloc` with layout `l`, so its header and
        // base are where `offset` says.
        unsafe {
            release_owner(hdr_of(user));
            System.dealloc(
                user.sub(offset(l.align())),
                inner_layout(l).unwrap_unchecked(),
            );
        }
        engine::np_leave(st);
    }

    /// A reallocated block keeps its owner (so a structure created outside a
    /// preemptible function and grown inside it is never freed by `cancel`).
    #[inline]
    unsafe fn realloc(&self, user: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: GlobalAlloc's contract makes (new_size, l.align()) valid.
        let nl = unsafe { Layout::from_size_align_unchecked(new_size, l.align()) };
        let Some(new_inner) = inner_layout(nl) else {
            return ptr::null_mut();
        };
        let st = engine::np_enter();
        // SAFETY: `user` came from `alloc` with layout `l`, so its header and
        // base are where `offset` says. An owned block is moved with its
        // owner's lock held, so the owner cannot finish (disown) or be
        // cancelled (free) half-way; the header, copied by realloc, is then
        // rewritten and re-linked.
        let out = unsafe {
            let h = hdr_of(user);
            let off = offset(l.align());
            let old_inner = inner_layout(l).unwrap_unchecked();
            let mut owner = None;
            let t = (*h).owner.load(Ordering::Acquire);
            if !t.is_null() {
                let t = &*t;
                t.lock();
                if ptr::eq((*h).owner.load(Ordering::Relaxed), t) {
                    t.unlink_locked(h);
                    owner = Some(t); // stays locked until re-linked below
                } else {
                    t.unlock(); // disowned meanwhile
                }
            }
            let base = System.realloc(user.sub(off), old_inner, new_inner.size());
            let (user2, ret) = if base.is_null() {
                (write_hdr(user.sub(off), l), ptr::null_mut())
            } else {
                let u = write_hdr(base, nl);
                (u, u)
            };
            if let Some(t) = owner {
                t.push_locked(hdr_of(user2));
                t.unlock();
            }
            ret
        };
        engine::np_leave(st);
        out
    }
}

/// The hooks' instance for the C API (same allocator as the global one).
static HOOKS: PreemptAlloc = PreemptAlloc::system();

/// `malloc` through the hooks: 16-byte aligned, tracked.
pub(crate) fn c_malloc(size: usize) -> *mut u8 {
    match Layout::from_size_align(size.max(1), 16) {
        // SAFETY: non-zero size.
        Ok(l) => unsafe { HOOKS.alloc(l) },
        Err(_) => ptr::null_mut(),
    }
}

pub(crate) fn c_calloc(n: usize, size: usize) -> *mut u8 {
    match n
        .checked_mul(size)
        .map(|s| Layout::from_size_align(s.max(1), 16))
    {
        // SAFETY: non-zero size.
        Some(Ok(l)) => unsafe { HOOKS.alloc_zeroed(l) },
        _ => ptr::null_mut(),
    }
}

/// # Safety
/// `p` is null or a live block from `c_malloc`/`c_calloc`/`c_realloc`.
pub(crate) unsafe fn c_free(p: *mut u8) {
    if p.is_null() {
        return;
    }
    // SAFETY: the header of a live C block records its layout.
    unsafe {
        let h = hdr_of(p);
        let sa = (*h).size_align;
        let l = Layout::from_size_align_unchecked(sa & ((1 << 56) - 1), 1 << (sa >> 56));
        HOOKS.dealloc(p, l);
    }
}

/// # Safety
/// As for [`c_free`].
pub(crate) unsafe fn c_realloc(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        return c_malloc(size);
    }
    // SAFETY: as in c_free; the new size is non-zero.
    unsafe {
        let h = hdr_of(p);
        let sa = (*h).size_align;
        let l = Layout::from_size_align_unchecked(sa & ((1 << 56) - 1), 1 << (sa >> 56));
        HOOKS.realloc(p, l, size.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_round_trips() {
        for align in [1usize, 8, 16, 32, 64, 4096] {
            for size in [1usize, 7, 100, 5000] {
                let l = Layout::from_size_align(size, align).unwrap();
                let inner = inner_layout(l).unwrap();
                assert!(inner.size() >= size + HDR);
                // SAFETY: test-only allocation, freed below.
                unsafe {
                    let base = System.alloc(inner);
                    let user = finish_alloc(base, l, None);
                    assert_eq!(user as usize % align, 0);
                    let (b, il) = block_of(hdr_of(user));
                    assert_eq!(b, base);
                    assert_eq!(il, inner);
                    System.dealloc(b, il);
                }
            }
        }
    }

    #[test]
    fn tracker_list_ops() {
        let t: &'static Tracker = Box::leak(Box::new(Tracker::new()));
        let l = Layout::from_size_align(24, 8).unwrap();
        let mut blocks = Vec::new();
        for _ in 0..5 {
            // SAFETY: test-only blocks, registered then released below.
            unsafe {
                let base = System.alloc(inner_layout(l).unwrap());
                let user = finish_alloc(base, l, None);
                t.lock();
                t.push_locked(hdr_of(user));
                t.unlock();
                blocks.push(user);
            }
        }
        assert_eq!(t.len(), 5);
        // SAFETY: blocks[2] is on t's list.
        unsafe { release_owner(hdr_of(blocks[2])) };
        assert_eq!(t.len(), 4);
        // SAFETY: blocks[2] is off the list and live; free it directly.
        unsafe {
            let (b, il) = block_of(hdr_of(blocks[2]));
            System.dealloc(b, il);
        }
        // SAFETY: nothing uses the other four blocks any more.
        assert_eq!(unsafe { t.free_all() }, 4);
        assert_eq!(t.len(), 0);
    }
}
