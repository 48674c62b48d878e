//! The machine code of library copies: the thread's current libset (a TLS
//! word the stubs read), the stubs that the program's GOT entries point to,
//! and the shared-call wrapper with its return hook.
//!
//! # The current libset
//!
//! `__preempt_libset_cur` is an initial-exec TLS word: the byte offset of
//! the current libset's dispatch table from libset 0's (so 0, the value every
//! new thread starts with, means the original libraries). Its offset from
//! `%fs` is fixed for every thread, and the generated stubs embed it.
//!
//! # A stub (20 bytes, one per library function the program calls)
//!
//! ```text
//! mov  %fs:CUR, %r11          ; 64 4c 8b 1c 25 <CUR>
//! lea  TABLE0_i(%rip), %r10   ; 4c 8d 15 <rel32>
//! jmp  *(%r10,%r11)           ; 43 ff 24 1a
//! ```
//!
//! r10 and r11 are scratch at a call in the System V ABI (a PLT stub uses
//! r11 too); nothing else is touched, so arguments, `%al` (the vector
//! register count of a variadic call) and the stack reach the target as the
//! caller left them.
//!
//! # A shared call
//!
//! The functions of `SHARED` take no arguments on the stack, and their
//! wrapper (`__preempt_shared_call_direct`) simply calls them between
//! `preempt_np_enter()` and `preempt_np_exit()` in a frame of its own. The
//! functions a program adds may take stack arguments, so theirs uses a
//! return hook instead:
//!
//! A copy's calls to a shared function (the malloc family, thread and
//! process creation, the loader, exit: `SHARED` in mod.rs) go to a
//! per-function wrapper, `movabs $target, %r11; movabs
//! $__preempt_shared_call, %r10; jmp *%r10`. `__preempt_shared_call` saves
//! the argument registers, calls `preempt_shared_enter(return address)`
//! (which enters a non-preemptible region and keeps the return address),
//! replaces the return address with `__preempt_shared_ret`, restores the
//! arguments and jumps to the target with the stack exactly as the caller
//! left it (so stack arguments are where the target expects them). When the
//! target returns into `__preempt_shared_ret`, that saves the return value
//! registers, calls `preempt_shared_leave()` (which leaves the region, takes
//! a preemption deferred meanwhile, and gives back the real return address)
//! and returns there.

use core::arch::{asm, global_asm};

global_asm!(
    ".section .tbss,\"awT\",@nobits",
    ".p2align 3",
    ".globl __preempt_libset_cur",
    ".hidden __preempt_libset_cur",
    ".type __preempt_libset_cur, @tls_object",
    ".size __preempt_libset_cur, 8",
    "__preempt_libset_cur:",
    ".zero 8",
    ".text",
    ".p2align 4",
    ".globl __preempt_libset_tpoff",
    ".hidden __preempt_libset_tpoff",
    ".type __preempt_libset_tpoff, @function",
    "__preempt_libset_tpoff:",
    "mov rax, qword ptr [rip + __preempt_libset_cur@GOTTPOFF]",
    "ret",
    ".size __preempt_libset_tpoff, . - __preempt_libset_tpoff",
    //
    ".p2align 4",
    ".globl __preempt_shared_call",
    ".hidden __preempt_shared_call",
    ".type __preempt_shared_call, @function",
    "__preempt_shared_call:",
    // [rsp] = return address into the copy; r11 = target. rsp = 8 mod 16.
    "push rdi",
    "push rsi",
    "push rdx",
    "push rcx",
    "push r8",
    "push r9",
    "push rax",
    "push r11",
    // 8 pushes: rsp = 8 mod 16; 136 more makes it 0 mod 16.
    "sub rsp, 136",
    "movdqu [rsp], xmm0",
    "movdqu [rsp + 16], xmm1",
    "movdqu [rsp + 32], xmm2",
    "movdqu [rsp + 48], xmm3",
    "movdqu [rsp + 64], xmm4",
    "movdqu [rsp + 80], xmm5",
    "movdqu [rsp + 96], xmm6",
    "movdqu [rsp + 112], xmm7",
    "mov rdi, [rsp + 200]",
    "call {enter}",
    "mov [rsp + 200], rax",
    "movdqu xmm0, [rsp]",
    "movdqu xmm1, [rsp + 16]",
    "movdqu xmm2, [rsp + 32]",
    "movdqu xmm3, [rsp + 48]",
    "movdqu xmm4, [rsp + 64]",
    "movdqu xmm5, [rsp + 80]",
    "movdqu xmm6, [rsp + 96]",
    "movdqu xmm7, [rsp + 112]",
    "add rsp, 136",
    "pop r11",
    "pop rax",
    "pop r9",
    "pop r8",
    "pop rcx",
    "pop rdx",
    "pop rsi",
    "pop rdi",
    "jmp r11",
    ".size __preempt_shared_call, . - __preempt_shared_call",
    //
    ".p2align 4",
    ".globl __preempt_shared_ret",
    ".hidden __preempt_shared_ret",
    ".type __preempt_shared_ret, @function",
    "__preempt_shared_ret:",
    // Returned into from the target: rsp = 0 mod 16.
    "push rax",
    "push rdx",
    "sub rsp, 32",
    "movdqu [rsp], xmm0",
    "movdqu [rsp + 16], xmm1",
    "call {leave}",
    "mov r11, rax",
    "movdqu xmm0, [rsp]",
    "movdqu xmm1, [rsp + 16]",
    "add rsp, 32",
    "pop rdx",
    "pop rax",
    "jmp r11",
    ".size __preempt_shared_ret, . - __preempt_shared_ret",
    //
    // The direct form, for shared functions that take no arguments on the
    // stack (all of `SHARED`): a frame of its own and a real call, so the
    // return-address predictor stays right.
    ".p2align 4",
    ".globl __preempt_shared_call_direct",
    ".hidden __preempt_shared_call_direct",
    ".type __preempt_shared_call_direct, @function",
    "__preempt_shared_call_direct:",
    // rsp = 8 mod 16; r11 = target.
    "push rbp",
    "mov rbp, rsp",
    "push r11",
    "push rdi",
    "push rsi",
    "push rdx",
    "push rcx",
    "push r8",
    "push r9",
    "push rax",
    // rsp = 0 mod 16.
    "sub rsp, 128",
    "movdqu [rsp], xmm0",
    "movdqu [rsp + 16], xmm1",
    "movdqu [rsp + 32], xmm2",
    "movdqu [rsp + 48], xmm3",
    "movdqu [rsp + 64], xmm4",
    "movdqu [rsp + 80], xmm5",
    "movdqu [rsp + 96], xmm6",
    "movdqu [rsp + 112], xmm7",
    "call {np_enter}",
    "movdqu xmm0, [rsp]",
    "movdqu xmm1, [rsp + 16]",
    "movdqu xmm2, [rsp + 32]",
    "movdqu xmm3, [rsp + 48]",
    "movdqu xmm4, [rsp + 64]",
    "movdqu xmm5, [rsp + 80]",
    "movdqu xmm6, [rsp + 96]",
    "movdqu xmm7, [rsp + 112]",
    "add rsp, 128",
    "pop rax",
    "pop r9",
    "pop r8",
    "pop rcx",
    "pop rdx",
    "pop rsi",
    "pop rdi",
    // rsp = rbp - 8 = 8 mod 16: realign for the call.
    "sub rsp, 8",
    "call qword ptr [rbp - 8]",
    "push rax",
    "push rdx",
    "sub rsp, 32",
    "movdqu [rsp], xmm0",
    "movdqu [rsp + 16], xmm1",
    "call {np_exit}",
    "movdqu xmm0, [rsp]",
    "movdqu xmm1, [rsp + 16]",
    "add rsp, 32",
    "pop rdx",
    "pop rax",
    "mov rsp, rbp",
    "pop rbp",
    "ret",
    ".size __preempt_shared_call_direct, . - __preempt_shared_call_direct",
    enter = sym super::preempt_shared_enter,
    leave = sym super::preempt_shared_leave,
    np_enter = sym crate::ffi::preempt_np_enter,
    np_exit = sym crate::ffi::preempt_np_exit,
);

unsafe extern "C" {
    fn __preempt_libset_tpoff() -> isize;
    fn __preempt_shared_call();
    fn __preempt_shared_call_direct();
    fn __preempt_shared_ret();
}

/// The offset of the current-libset word from `%fs`.
pub(crate) fn cur_tpoff() -> isize {
    // SAFETY: reads the linker-provided TLS offset; no other effect.
    unsafe { __preempt_libset_tpoff() }
}

pub(crate) fn shared_call_addr() -> usize {
    __preempt_shared_call as *const () as usize
}

pub(crate) fn shared_ret_addr() -> usize {
    __preempt_shared_ret as *const () as usize
}

/// Sets this thread's current libset (its table offset).
#[inline]
pub(crate) fn set_cur(off: usize) {
    // SAFETY: writes this thread's own TLS word at its fixed offset.
    unsafe {
        asm!(
            "mov rax, qword ptr [rip + __preempt_libset_cur@GOTTPOFF]",
            "mov qword ptr fs:[rax], {v}",
            v = in(reg) off,
            out("rax") _,
            options(nostack, preserves_flags),
        );
    }
}

/// This thread's current libset (its table offset).
#[inline]
pub(crate) fn cur() -> usize {
    let v: usize;
    // SAFETY: reads this thread's own TLS word.
    unsafe {
        asm!(
            "mov rax, qword ptr [rip + __preempt_libset_cur@GOTTPOFF]",
            "mov {v}, qword ptr fs:[rax]",
            v = out(reg) v,
            out("rax") _,
            options(nostack, readonly, preserves_flags),
        );
    }
    v
}

pub(crate) const STUB_SIZE: usize = 32;
pub(crate) const WRAPPER_SIZE: usize = 32;

/// Writes the stub for table slot `table0_slot` (absolute address of its
/// libset-0 entry) at `at`.
pub(crate) fn write_stub(at: &mut [u8], at_addr: usize, tpoff: i32, table0_slot: usize) {
    let mut code = [0xccu8; STUB_SIZE];
    code[..5].copy_from_slice(&[0x64, 0x4c, 0x8b, 0x1c, 0x25]);
    code[5..9].copy_from_slice(&tpoff.to_le_bytes());
    code[9..12].copy_from_slice(&[0x4c, 0x8d, 0x15]);
    let rel = table0_slot as i64 - (at_addr as i64 + 16);
    code[12..16].copy_from_slice(&(rel as i32).to_le_bytes());
    code[16..20].copy_from_slice(&[0x43, 0xff, 0x24, 0x1a]);
    at[..STUB_SIZE].copy_from_slice(&code);
}

/// Writes the wrapper of shared function `target` at `at`: the direct form
/// (`direct`: the function takes no arguments on the stack) or the one with
/// a return hook (any function).
pub(crate) fn write_wrapper(at: &mut [u8], target: usize, direct: bool) {
    let via = if direct {
        __preempt_shared_call_direct as *const () as usize
    } else {
        shared_call_addr()
    };
    let mut code = [0xccu8; WRAPPER_SIZE];
    code[..2].copy_from_slice(&[0x49, 0xbb]);
    code[2..10].copy_from_slice(&(target as u64).to_le_bytes());
    code[10..12].copy_from_slice(&[0x49, 0xba]);
    code[12..20].copy_from_slice(&(via as u64).to_le_bytes());
    code[20..23].copy_from_slice(&[0x41, 0xff, 0xe2]);
    at[..WRAPPER_SIZE].copy_from_slice(&code);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_encoding() {
        let mut b = [0u8; STUB_SIZE];
        write_stub(&mut b, 0x1000, -0x10, 0x3000);
        // mov %fs:-0x10,%r11 ; lea 0x3000(%rip),%r10 ; jmp *(%r10,%r11)
        let rel = (0x3000i64 - (0x1000 + 16)) as i32;
        let mut want = vec![0x64, 0x4c, 0x8b, 0x1c, 0x25];
        want.extend_from_slice(&(-0x10i32).to_le_bytes());
        want.extend_from_slice(&[0x4c, 0x8d, 0x15]);
        want.extend_from_slice(&rel.to_le_bytes());
        want.extend_from_slice(&[0x43, 0xff, 0x24, 0x1a]);
        assert_eq!(&b[..20], &want[..]);
        assert!(b[20..].iter().all(|&x| x == 0xcc));
    }

    #[test]
    fn wrapper_encoding() {
        let mut b = [0u8; WRAPPER_SIZE];
        write_wrapper(&mut b, 0x1122_3344_5566_7788, false);
        assert_eq!(&b[..2], &[0x49, 0xbb]); // movabs $target, %r11
        assert_eq!(&b[2..10], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&b[10..12], &[0x49, 0xba]); // movabs $via, %r10
        assert_eq!(&b[12..20], &(shared_call_addr() as u64).to_le_bytes());
        assert_eq!(&b[20..23], &[0x41, 0xff, 0xe2]); // jmp *%r10
        write_wrapper(&mut b, 1, true);
        assert_ne!(&b[12..20], &(shared_call_addr() as u64).to_le_bytes());
    }

    #[test]
    fn current_libset_word_is_per_thread() {
        set_cur(0x40);
        assert_eq!(cur(), 0x40);
        std::thread::spawn(|| assert_eq!(cur(), 0)).join().unwrap();
        set_cur(0);
        assert_eq!(cur(), 0);
        // The stubs read it at %fs:tpoff.
        let tpoff = cur_tpoff();
        set_cur(0x1234);
        let tp: usize;
        // SAFETY: %fs:0 is the thread pointer.
        unsafe { asm!("mov {}, qword ptr fs:[0]", out(reg) tp) };
        // SAFETY: the word the stubs read, in this thread's static TLS.
        let v = unsafe { *((tp as isize + tpoff) as *const usize) };
        set_cur(0);
        assert_eq!(v, 0x1234);
    }
}
