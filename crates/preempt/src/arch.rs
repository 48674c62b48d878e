//! The x86-64 context switch: the only assembly in the crate.
//!
//! `__preempt_switch(save, to, arg)` pushes the callee-saved registers (rbx,
//! rbp, r12-r15) and the two FPU control words (MXCSR and the x87 control
//! word) on the current stack, stores the stack pointer in `*save`, loads `to`
//! as the new stack pointer, pops the same frame from there and returns into
//! whatever called `__preempt_switch` on that stack, with `arg` in rax.
//! Everything else (caller-saved registers, vector registers, flags) is dead
//! across a call by the System V ABI, so a switch made by a *call* needs to
//! keep nothing more. A switch made from the timer signal handler does not
//! rely on this: the interrupted code's full register state is in the kernel's
//! signal frame, which stays on the function's stack until the handler
//! returns (see `engine` and docs/PREEMPT.md).
//!
//! A new stack is given a frame (see [`init_frame`]) whose "return address" is
//! `__preempt_entry`, which calls `r12(rbx)`, i.e. `entry::<F, T>(raw)`.

use core::arch::{asm, global_asm};

global_asm!(
    ".pushsection .text.__preempt_switch,\"ax\",@progbits",
    ".globl __preempt_switch",
    ".hidden __preempt_switch",
    ".type __preempt_switch,@function",
    ".p2align 4",
    "__preempt_switch:",
    ".cfi_startproc",
    "push rbp",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset rbp, 0",
    "push rbx",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset rbx, 0",
    "push r12",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset r12, 0",
    "push r13",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset r13, 0",
    "push r14",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset r14, 0",
    "push r15",
    ".cfi_adjust_cfa_offset 8",
    ".cfi_rel_offset r15, 0",
    "sub rsp, 8",
    ".cfi_adjust_cfa_offset 8",
    "stmxcsr [rsp]",
    "fnstcw [rsp + 4]",
    // Both stacks hold the same frame layout, so the CFI above stays right
    // after the stack pointer changes.
    "mov [rdi], rsp",
    "mov rsp, rsi",
    "ldmxcsr [rsp]",
    "fldcw [rsp + 4]",
    "add rsp, 8",
    ".cfi_adjust_cfa_offset -8",
    "pop r15",
    ".cfi_adjust_cfa_offset -8",
    "pop r14",
    ".cfi_adjust_cfa_offset -8",
    "pop r13",
    ".cfi_adjust_cfa_offset -8",
    "pop r12",
    ".cfi_adjust_cfa_offset -8",
    "pop rbx",
    ".cfi_adjust_cfa_offset -8",
    "pop rbp",
    ".cfi_adjust_cfa_offset -8",
    "mov rax, rdx",
    "ret",
    ".cfi_endproc",
    ".size __preempt_switch, . - __preempt_switch",
    "",
    // First code run on a new stack. rip is marked undefined so that
    // unwinders and backtraces stop here.
    ".globl __preempt_entry",
    ".hidden __preempt_entry",
    ".type __preempt_entry,@function",
    ".p2align 4",
    "__preempt_entry:",
    ".cfi_startproc",
    ".cfi_undefined rip",
    "mov rdi, rbx",
    "call r12",
    "ud2",
    ".cfi_endproc",
    ".size __preempt_entry, . - __preempt_entry",
    ".popsection",
    "",
    // The end of a timer handler that was resumed into (`engine::on_timer`):
    // clear `*np` and `*tail` (ending the handler tail's non-preemptible
    // region) and rt_sigreturn from the frame whose ucontext is at rdx. An
    // expiry between the stores and the syscall finds its rip here and
    // defers (`in_sigreturn`).
    ".globl __preempt_sigreturn",
    ".hidden __preempt_sigreturn",
    ".type __preempt_sigreturn,@function",
    ".p2align 4",
    "__preempt_sigreturn:",
    "mov dword ptr [rdi], 0",
    "mov byte ptr [rsi], 0",
    "mov rsp, rdx",
    "mov eax, 15",
    "syscall",
    "ud2",
    ".globl __preempt_sigreturn_end",
    ".hidden __preempt_sigreturn_end",
    "__preempt_sigreturn_end:",
    ".size __preempt_sigreturn, . - __preempt_sigreturn",
);

unsafe extern "C" {
    fn __preempt_switch(save: *mut *mut u8, to: *mut u8, arg: usize) -> usize;
    fn __preempt_entry();
    fn __preempt_sigreturn(np: *mut u32, tail: *mut bool, uc: *mut core::ffi::c_void) -> !;
    fn __preempt_sigreturn_end();
}

/// Ends a signal handler: stores 0 in `*np` and false in `*tail`, then
/// rt_sigreturn with the frame whose ucontext is `uc` (the kernel's, as the
/// handler got it), as the handler's return through the restorer would.
///
/// # Safety
/// `uc` is the ucontext of the innermost signal frame of this thread, and
/// nothing of the handler's is needed any more; `np` and `tail` are
/// writable.
pub(crate) unsafe fn sigreturn(np: *mut u32, tail: *mut bool, uc: *mut core::ffi::c_void) -> ! {
    // SAFETY: per the contract.
    unsafe { __preempt_sigreturn(np, tail, uc) }
}

/// Whether `rip` is inside [`sigreturn`]'s code (after its stores, before
/// its system call completes).
pub(crate) fn in_sigreturn(rip: usize) -> bool {
    let start = __preempt_sigreturn as *const () as usize;
    let end = __preempt_sigreturn_end as *const () as usize;
    (start..end).contains(&rip)
}

/// Saves the current context's stack pointer in `*save` and continues the
/// context whose stack pointer is `to`. Returns when some other context
/// switches back to the one saved here.
///
/// # Safety
/// `save` must be writable; `to` must be a stack pointer saved by `switch` (or
/// made by [`init_frame`]) whose context has not been resumed since, on a
/// stack that is still mapped.
#[inline(always)]
pub(crate) unsafe fn switch(save: *mut *mut u8, to: *mut u8) {
    // SAFETY: the caller upholds the contract above; the assembly follows the
    // C ABI for the registers it does not save.
    unsafe {
        __preempt_switch(save, to, 0);
    }
}

/// The current MXCSR (low 32 bits) and x87 control word (bits 32..48), in the
/// layout `__preempt_switch` keeps them on the stack.
pub(crate) fn fpu_control() -> u64 {
    let mut mxcsr: u32 = 0;
    let mut cw: u16 = 0;
    // SAFETY: stmxcsr/fnstcw only store to the two locals given.
    unsafe {
        asm!(
            "stmxcsr [{m}]",
            "fnstcw [{c}]",
            m = in(reg) &mut mxcsr,
            c = in(reg) &mut cw,
            options(nostack, preserves_flags)
        );
    }
    u64::from(mxcsr) | (u64::from(cw) << 32)
}

/// Size of the frame [`init_frame`] writes below `top`.
pub(crate) const INIT_FRAME: usize = 80;

/// Writes, just below `top` (16-byte aligned), the frame `__preempt_switch`
/// pops, so that switching to the returned stack pointer calls
/// `entry(arg)` with a correctly aligned stack and the given FPU control
/// words. `entry` must never return.
///
/// # Safety
/// `top - INIT_FRAME .. top` must be writable memory of a stack nobody uses.
pub(crate) unsafe fn init_frame(
    top: *mut u8,
    entry: unsafe extern "C" fn(*mut u8) -> !,
    arg: *mut u8,
    fpu: u64,
) -> *mut u8 {
    debug_assert_eq!(top as usize % 16, 0);
    // After `ret` pops the return address the stack pointer is sp + 64, which
    // is 16-byte aligned, as the `call r12` in `__preempt_entry` requires.
    let sp = (top as usize - INIT_FRAME) as *mut u64;
    let words: [u64; 8] = [
        fpu,                                 // MXCSR | x87 CW << 32
        0,                                   // r15
        0,                                   // r14
        0,                                   // r13
        entry as *const () as u64,           // r12: the function to call
        arg as u64,                          // rbx: its argument
        0,                                   // rbp: end of the frame-pointer chain
        __preempt_entry as *const () as u64, // return address
    ];
    // SAFETY: `sp .. sp + 64` lies inside `top - INIT_FRAME .. top`, which
    // the caller guarantees is writable; `sp` is 16-byte aligned.
    unsafe {
        core::ptr::copy_nonoverlapping(words.as_ptr(), sp, words.len());
    }
    sp.cast()
}
