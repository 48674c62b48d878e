//! The thread area: the runtime's state for a thread lives at the top of
//! the thread's runtime stack slot (`runtime`), and the thread's GS base
//! points at it. This module places that state and hands out references to
//! it, checking addresses, so that no layer above needs a raw pointer: a GS
//! base the program changed (`wrgsbase`) finds no area instead of a bogus
//! one.
//!
//! One type lives in the areas of a process (the first [`place`] fixes it);
//! an area is readable from its `place` until its slot is freed.
//!
//! The type need not be `Sync`: other threads reach an area (`in_slot`) to
//! read its atomics (a thread's id, the pending flag, `--stats` counters
//! when the process ends). Its non-atomic fields (`Cell`s) are, by the
//! discipline of `kernel::thread`, only touched by the thread that owns the
//! area, with the signals that could interleave blocked.
#![allow(unsafe_code)]

use super::runtime::{self, STACK_SLOT, STACK_SLOTS};
use core::any::TypeId;
use core::sync::atomic::{AtomicBool, Ordering};

/// Bytes reserved at the top of a slot for the area of a `T`.
pub const fn area_size<T>() -> usize {
    (core::mem::size_of::<T>() + 4095) & !4095
}

/// The address of slot `slot`'s area for a `T` (page aligned).
pub fn area_addr<T>(slot: usize) -> usize {
    runtime::slot_base(slot) + STACK_SLOT - area_size::<T>()
}

/// The type the areas hold.
static TYPE: spin::Once<TypeId> = spin::Once::new();
/// Which slots hold an area (written by `place`, cleared when the slot is
/// freed).
static PLACED: [AtomicBool; STACK_SLOTS] = [const { AtomicBool::new(false) }; STACK_SLOTS];

/// Writes the value `make` returns as the area of slot `slot`, which the
/// caller has just taken (`runtime::alloc_stack_slot`) and so holds alone;
/// returns it. Panics if `T` is not the areas' type or does not fit.
/// Inlined, with every check made first, so that the value is built where
/// it goes: a Thread is 20 KiB, and built on the stack then copied it cost
/// five stack pages and a copy for every thread and process started.
#[inline(always)]
pub fn place<T: 'static>(slot: usize, make: impl FnOnce() -> T) -> &'static T {
    assert!(area_size::<T>() <= STACK_SLOT / 2 && core::mem::align_of::<T>() <= 4096);
    assert!(*TYPE.call_once(TypeId::of::<T>) == TypeId::of::<T>());
    assert!(runtime::slot_in_use(slot));
    let p = area_addr::<T>(slot) as *mut T;
    PLACED[slot].store(false, Ordering::Release);
    // SAFETY: the area lies inside the slot, which is mapped read-write
    // (slot_in_use), is aligned (page aligned, align ≤ 4096), and belongs
    // to the caller alone (just taken). Any old value there is forgotten,
    // not dropped (the areas' type needs no drop).
    unsafe { p.write(make()) };
    PLACED[slot].store(true, Ordering::Release);
    // SAFETY: initialised just above; it stays until the slot is freed.
    unsafe { &*p }
}

/// The area at `addr`, if `addr` is the address of a placed area of type `T`.
#[inline]
pub fn at<T: 'static>(addr: usize) -> Option<&'static T> {
    // (On every system call: the cheap tests first. Slots end at multiples
    // of STACK_SLOT: `runtime::heap_base` is one.)
    if !addr
        .wrapping_add(area_size::<T>())
        .is_multiple_of(STACK_SLOT)
    {
        return None;
    }
    placed(runtime::slot_of(addr)?)
}

/// The area of the slot whose stack holds `addr` (an address on a
/// thread's runtime stack), if placed.
#[inline]
pub fn of_stack<T: 'static>(addr: usize) -> Option<&'static T> {
    placed(runtime::slot_of(addr)?)
}

/// The area of slot `slot`, if placed.
pub fn in_slot<T: 'static>(slot: usize) -> Option<&'static T> {
    if slot >= STACK_SLOTS {
        return None;
    }
    placed(slot)
}

/// The area of slot `slot` (< STACK_SLOTS), if it is a placed `T`.
#[inline]
fn placed<T: 'static>(slot: usize) -> Option<&'static T> {
    if !PLACED[slot].load(Ordering::Acquire) || TYPE.get() != Some(&TypeId::of::<T>()) {
        return None;
    }
    // SAFETY: a placed area of type T (checked above) at its slot's area
    // address, initialised by `place` and mapped while the slot is not freed.
    Some(unsafe { &*(area_addr::<T>(slot) as *const T) })
}

/// Forgets slot `slot`'s area (its slot is being freed).
pub(super) fn forget(slot: usize) {
    PLACED[slot].store(false, Ordering::Release);
}
