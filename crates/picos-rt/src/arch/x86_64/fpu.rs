//! The FPU state in signal frames: its size in a kernel-built frame, the
//! kernel's format learnt from the first one, and XSAVE/XRSTOR of images in
//! that format (the fast path builds and loads frames without the kernel).
//!
//! Invariant the safe functions rely on: the `fpstate` pointer of every
//! `UContext` the runtime handles is 0 or points at a complete image that
//! lives as long as the context: the host's own frame (a signal handler's
//! context) or an [`FpImage`] of the runtime. A pointer the program
//! supplies (a sigreturn frame's) is only ever read through `mm::user`.
#![allow(unsafe_code)]

use super::UContext;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Offset of the software-reserved bytes in an FXSAVE/XSAVE area.
pub const FP_SW_RESERVED: usize = 464;
pub const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;
pub const FP_XSTATE_MAGIC2: u32 = 0x4650_5845;
/// Size of the legacy FXSAVE area.
pub const FXSAVE_SIZE: usize = 512;
/// Largest FPU image the fast path handles (AVX-512 needs ~2.7 KB).
pub const MAX_FP_IMAGE: usize = 12 << 10;

/// Size in bytes of the FPU state at `fpstate` in a kernel-built frame,
/// including the trailing magic word.
///
/// # Safety
/// `fpstate` must point at a readable kernel-built FPU frame.
unsafe fn image_size(fpstate: *const u8) -> usize {
    // SAFETY: the caller guarantees at least the FXSAVE area is readable.
    unsafe {
        let magic1 = (fpstate.add(FP_SW_RESERVED) as *const u32).read_unaligned();
        if magic1 == FP_XSTATE_MAGIC1 {
            (fpstate.add(FP_SW_RESERVED + 4) as *const u32).read_unaligned() as usize
        } else {
            FXSAVE_SIZE
        }
    }
}

/// The FPU image of context `uc` (see the module's invariant), if it has one.
pub fn image(uc: &UContext) -> Option<&[u8]> {
    let fp = uc.mcontext.fpstate as *const u8;
    if fp.is_null() {
        return None;
    }
    // SAFETY: by the module's invariant `fp` is a complete image living as
    // long as `uc`.
    unsafe { Some(core::slice::from_raw_parts(fp, image_size(fp))) }
}

/// As [`image`], writable (to load a sigreturn frame's image into it).
pub fn image_mut(uc: &mut UContext) -> Option<&mut [u8]> {
    let fp = uc.mcontext.fpstate as *mut u8;
    if fp.is_null() {
        return None;
    }
    // SAFETY: as in `image`; `uc` is borrowed mutably, so is its image.
    unsafe { Some(core::slice::from_raw_parts_mut(fp, image_size(fp))) }
}

/// Puts the FPU image of `uc` (a host signal frame's, which the host's
/// `rt_sigreturn` loads) in the state a new program starts with, as after
/// execve: x87 and SSE registers zero, the control words at their defaults
/// (FCW 0x37f, MXCSR 0x1f80), every extended component (AVX and above) in
/// its initial state. The frame's software-reserved bytes (its format) and
/// the protection-key rights stay. Nothing without an image.
pub fn reset_image(uc: &mut UContext) {
    let Some(img) = image_mut(uc) else {
        return;
    };
    if img.len() < FXSAVE_SIZE {
        return;
    }
    // The legacy area up to MXCSR_MASK, and from ST0 to the reserved bytes.
    img[..24].fill(0);
    img[32..FP_SW_RESERVED].fill(0);
    img[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
    img[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
    if img.len() >= XSTATE_BV + 8 {
        // XSTATE_BV: x87 and SSE loaded from the zeroed area above, PKRU
        // kept; every other component's bit clear (its initial state).
        let mut bv = [0u8; 8];
        bv.copy_from_slice(&img[XSTATE_BV..XSTATE_BV + 8]);
        let bv = u64::from_le_bytes(bv) & (0b11 | XFEATURE_PKRU);
        img[XSTATE_BV..XSTATE_BV + 8].copy_from_slice(&bv.to_le_bytes());
    }
}

/// XSAVE state component 9: PKRU, the protection-key rights register.
const XFEATURE_PKRU: u64 = 1 << 9;
/// Offset of XSTATE_BV in the XSAVE header.
const XSTATE_BV: usize = 512;

/// Puts protection key `key`'s rights as PKRU holds them now into the FPU
/// image of `uc`, a host signal frame that the host's `rt_sigreturn` will
/// load: a system call made from that handler that set them (pkey_alloc
/// sets the new key's rights) must not be undone by the return. The other
/// keys' rights stay as the frame has them (the program's: the handler
/// runs with a PKRU of the kernel's choosing). Nothing without OSPKE or
/// without PKRU in the image.
pub fn keep_pkru(uc: &mut UContext, key: u32) {
    use core::arch::x86_64::__cpuid_count;
    if key >= 16 {
        return;
    }
    // CPUID.(7,0):ECX bit 4: OSPKE (the kernel enabled protection keys).
    if __cpuid_count(7, 0).ecx & (1 << 4) == 0 {
        return;
    }
    // Where PKRU lies in the standard (non-compacted) format of frames.
    let off = __cpuid_count(0xd, 9).ebx as usize;
    let Some(img) = image_mut(uc) else {
        return;
    };
    if img.len() < (off + 4).max(XSTATE_BV + 8).max(FP_SW_RESERVED + 16) {
        return;
    }
    let xfeatures = u64::from_ne_bytes(
        img[FP_SW_RESERVED + 8..FP_SW_RESERVED + 16]
            .try_into()
            .unwrap(),
    );
    if xfeatures & XFEATURE_PKRU == 0 {
        return;
    }
    let pkru: u32;
    // SAFETY: RDPKRU (ECX = 0) reads PKRU into EAX and zeroes EDX; OSPKE
    // is set, so it does not fault.
    unsafe {
        core::arch::asm!("rdpkru", in("ecx") 0u32, out("eax") pkru, out("edx") _, options(nomem, nostack));
    }
    let bits = 3u32 << (2 * key);
    let bv = u64::from_ne_bytes(img[XSTATE_BV..XSTATE_BV + 8].try_into().unwrap());
    // Without PKRU in XSTATE_BV the frame holds PKRU's initial value, 0.
    let saved = if bv & XFEATURE_PKRU != 0 {
        u32::from_ne_bytes(img[off..off + 4].try_into().unwrap())
    } else {
        0
    };
    let pkru = (saved & !bits) | (pkru & bits);
    img[off..off + 4].copy_from_slice(&pkru.to_ne_bytes());
    img[XSTATE_BV..XSTATE_BV + 8].copy_from_slice(&(bv | XFEATURE_PKRU).to_ne_bytes());
}

/// The kernel's signal-frame FPU format for this process, learnt from the
/// first host signal frame: its feature mask and size.
static FP_XFEATURES: AtomicU64 = AtomicU64::new(0);
static FP_XSIZE: AtomicUsize = AtomicUsize::new(0);

/// Learns the kernel's FPU frame format from a host frame (called for every
/// host signal until it knows; a load once it does).
pub(super) fn note_format(uc: &UContext) {
    if FP_XSIZE.load(Ordering::Relaxed) != 0 {
        return;
    }
    let Some(img) = image(uc) else {
        return;
    };
    if img.len() < FP_SW_RESERVED + 20 {
        return;
    }
    let sw = &img[FP_SW_RESERVED..];
    let magic1 = u32::from_ne_bytes(sw[0..4].try_into().unwrap());
    let xfeatures = u64::from_ne_bytes(sw[8..16].try_into().unwrap());
    let size = u32::from_ne_bytes(sw[16..20].try_into().unwrap()) as usize;
    if magic1 == FP_XSTATE_MAGIC1 && (576..=MAX_FP_IMAGE).contains(&size) {
        FP_XFEATURES.store(xfeatures, Ordering::Relaxed);
        FP_XSIZE.store(size, Ordering::Relaxed);
    }
}

/// Is the kernel's format known (a host signal frame has been seen)?
pub fn format_known() -> bool {
    FP_XSIZE.load(Ordering::Relaxed) != 0
}

/// Room for an FPU image, 64-byte aligned as XSAVE requires. Left
/// uninitialised: `xsave_image` writes only the image's own bytes.
#[repr(C, align(64))]
pub struct FpImage([u8; MAX_FP_IMAGE + 64]);

/// Saves the FPU registers into `img` in the kernel's signal-frame format:
/// XSAVE of the kernel's features, its software bytes, and the trailing
/// magic. Returns the image's address, or None if the format is not known
/// yet (or the CPU has no XSAVE).
pub fn xsave_image(img: &mut core::mem::MaybeUninit<FpImage>) -> Option<u64> {
    let size = FP_XSIZE.load(Ordering::Relaxed);
    let xf = FP_XFEATURES.load(Ordering::Relaxed);
    if size == 0 || size + 4 > core::mem::size_of::<FpImage>() || !super::has_xsave() {
        return None;
    }
    let p = img.as_mut_ptr() as *mut u8;
    // SAFETY: the image's `size + 4` bytes lie inside `img`; they are
    // zeroed first (XRSTOR wants the header's unused bytes zero), so the
    // slice over them is initialised.
    let buf = unsafe {
        core::ptr::write_bytes(p, 0, size + 4);
        core::slice::from_raw_parts_mut(p, size + 4)
    };
    // SAFETY: `buf` is 64-byte aligned (FpImage) and holds `size` bytes, the
    // XSAVE area size of the kernel's feature mask `xf`.
    unsafe { super::picos_xsave(buf.as_mut_ptr(), xf as u32, (xf >> 32) as u32) };
    // As the kernel: FP and SSE are always marked present.
    buf[512] |= 3;
    let sw = FP_SW_RESERVED;
    buf[sw..sw + 4].copy_from_slice(&FP_XSTATE_MAGIC1.to_ne_bytes());
    buf[sw + 4..sw + 8].copy_from_slice(&((size + 4) as u32).to_ne_bytes());
    buf[sw + 8..sw + 16].copy_from_slice(&xf.to_ne_bytes());
    buf[sw + 16..sw + 20].copy_from_slice(&(size as u32).to_ne_bytes());
    buf[size..size + 4].copy_from_slice(&FP_XSTATE_MAGIC2.to_ne_bytes());
    Some(buf.as_ptr() as u64)
}

/// XRSTOR of the image at program address `fp` with feature mask
/// `(lo, hi)`. False if the CPU refused the image or could not read it.
/// Only reads memory, and its faults are recovered (`fault_fixup`); the
/// caller checks that `fp` is program memory (`mm::user`).
pub fn xrstor(fp: usize, lo: u32, hi: u32) -> bool {
    // SAFETY: XRSTOR only reads `fp`; a fault or a refused image comes back
    // as -EFAULT through the stub's fault fixup.
    unsafe { super::picos_xrstor(fp as *const u8, lo, hi) == 0 }
}
