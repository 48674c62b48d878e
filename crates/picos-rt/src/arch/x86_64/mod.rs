//! x86-64 specifics: the assembly stubs the runtime needs and the layout of
//! the kernel's signal frame.
//!
//! # Safety
//! The stubs switch stacks, return into the program with `rt_sigreturn`, and
//! recover from faults on program memory. Their contracts are written on each.
#![allow(unsafe_code)]

pub mod fpu;
mod mem;

use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::host::abi::StackT;
use core::arch::{asm, global_asm};

/// Kernel `struct sigcontext` (x86-64), the register part of a ucontext.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SigContext {
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rbp: u64,
    pub rbx: u64,
    pub rdx: u64,
    pub rax: u64,
    pub rcx: u64,
    pub rsp: u64,
    pub rip: u64,
    pub eflags: u64,
    pub cs: u16,
    pub gs: u16,
    pub fs: u16,
    pub ss: u16,
    pub err: u64,
    pub trapno: u64,
    pub oldmask: u64,
    pub cr2: u64,
    pub fpstate: u64,
    pub reserved1: [u64; 8],
}

/// Linux's user code and stack segment selectors on x86-64 (`__USER_CS`,
/// `__USER_DS`), which a frame for the kernel's `rt_sigreturn` must hold.
pub const USER_CS: u16 = 0x33;
pub const USER_DS: u16 = 0x2b;
/// `UContext::flags`: the frame's FPU image is XSAVE's (`UC_FP_XSTATE`);
/// its `ss` is to be restored (`UC_SIGCONTEXT_SS`), as the kernel's frames
/// say.
pub const UC_FP_XSTATE: u64 = 1;
pub const UC_SIGCONTEXT_SS: u64 = 2;

/// Kernel `struct ucontext` (x86-64): 304 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UContext {
    pub flags: u64,
    pub link: u64,
    pub stack: StackT,
    pub mcontext: SigContext,
    pub sigmask: u64,
}

/// A 128-byte `siginfo_t`, kept as raw words.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct SigInfo(pub [u8; 128]);

impl Default for SigInfo {
    fn default() -> Self {
        SigInfo([0; 128])
    }
}

impl SigInfo {
    /// All zero.
    pub const ZERO: SigInfo = SigInfo([0; 128]);
    pub fn signo(&self) -> i32 {
        i32::from_ne_bytes(self.0[0..4].try_into().unwrap())
    }
    pub fn code(&self) -> i32 {
        i32::from_ne_bytes(self.0[8..12].try_into().unwrap())
    }
    /// A minimal siginfo for a signal the runtime raises itself.
    pub fn kernel(signo: i32, code: i32) -> Self {
        let mut s = SigInfo::default();
        s.0[0..4].copy_from_slice(&signo.to_ne_bytes());
        s.0[8..12].copy_from_slice(&code.to_ne_bytes());
        s
    }
    /// A signal sent by a process (kill, tkill, tgkill layout): `si_pid`
    /// and `si_uid` the sender's.
    pub fn sent(signo: i32, code: i32, pid: i32, uid: u32) -> Self {
        let mut s = SigInfo::kernel(signo, code);
        s.0[16..20].copy_from_slice(&pid.to_ne_bytes());
        s.0[20..24].copy_from_slice(&uid.to_ne_bytes());
        s
    }
    /// `si_pid` of a signal a process sent (see [`SigInfo::sent`]).
    pub fn pid(&self) -> i32 {
        i32::from_ne_bytes(self.0[16..20].try_into().unwrap())
    }
    /// The fault address (`si_addr`; other layouts keep other fields there).
    pub fn addr(&self) -> u64 {
        u64::from_ne_bytes(self.0[16..24].try_into().unwrap())
    }
    /// `si_syscall` of a SIGSYS: the trapped call's number.
    pub fn syscall(&self) -> i32 {
        i32::from_ne_bytes(self.0[24..28].try_into().unwrap())
    }
    pub fn set_addr(&mut self, addr: u64) {
        self.0[16..24].copy_from_slice(&addr.to_ne_bytes());
    }
}

/// Kernel `struct rt_sigframe` (x86-64): return address, ucontext, siginfo;
/// the FPU state follows separately, 64-byte aligned.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RtSigFrame {
    pub pretcode: u64,
    pub uc: UContext,
    pub info: SigInfo,
}

const _: () = assert!(core::mem::size_of::<SigContext>() == 256);
const _: () = assert!(core::mem::size_of::<UContext>() == 304);
const _: () = assert!(core::mem::size_of::<RtSigFrame>() == 440);

// ---------------------------------------------------------------------------
// Assembly stubs.

global_asm!(
    // rt_sigreturn restorer for every host handler the runtime installs: it
    // lies inside the runtime image, where Syscall User Dispatch allows syscalls.
    ".globl picos_restorer",
    ".type picos_restorer,@function",
    "picos_restorer:",
    "    mov $15, %eax",
    "    syscall",
    "    ud2",
    // picos_sigreturn_to(uc): return into a context described by a ucontext
    // that sits at `uc` inside an rt_sigframe (so `uc - 8` is the frame).
    ".globl picos_sigreturn_to",
    ".type picos_sigreturn_to,@function",
    "picos_sigreturn_to:",
    "    mov %rdi, %rsp",
    "    mov $15, %eax",
    "    syscall",
    "    ud2",
    // picos_enter(entry, sp): start a program at `entry` with stack `sp`,
    // all general registers zero (as after execve).
    ".globl picos_enter",
    ".type picos_enter,@function",
    "picos_enter:",
    "    mov %rsi, %rsp",
    "    push %rdi",
    "    xor %eax, %eax", "xor %ebx, %ebx", "xor %ecx, %ecx", "xor %edx, %edx",
    "    xor %esi, %esi", "xor %edi, %edi", "xor %ebp, %ebp",
    "    xor %r8d, %r8d", "xor %r9d, %r9d", "xor %r10d, %r10d", "xor %r11d, %r11d",
    "    xor %r12d, %r12d", "xor %r13d, %r13d", "xor %r14d, %r14d", "xor %r15d, %r15d",
    "    cld",
    "    ret",
    // picos_switch_stack(arg, fn, sp): call fn(arg) on stack sp; fn must not return.
    ".globl picos_switch_stack",
    ".type picos_switch_stack,@function",
    "picos_switch_stack:",
    "    mov %rdx, %rsp",
    "    xor %ebp, %ebp",
    "    call *%rsi",
    "    ud2",
    // picos_clone(flags, stack, ptid, ctid, tls): clone(2) whose child, on
    // `stack`, calls picos_clone_child(stack) and never returns.
    ".globl picos_clone",
    ".type picos_clone,@function",
    "picos_clone:",
    "    mov %rcx, %r10",
    "    mov $56, %eax",
    "    syscall",
    "    test %rax, %rax",
    "    jz 1f",
    "    ret",
    "1:  xor %ebp, %ebp",
    "    mov %rsp, %rdi",
    "    call *{up_picos_clone_child}(%rip)",
    "    ud2",
    // picos_blocking_syscall(args: *const [usize; 7]) -> isize
    // A syscall that may block with signals unblocked. A signal that arrives
    // before the syscall starts is seen by the check of the thread's pending
    // flag (%gs:PENDING) or, if it lands between that check and the
    // `syscall`, by the signal handler moving RIP to picos_block_eintr;
    // either way the call returns Errno::NOT_STARTED (-512) and is run again
    // after the signal's handler. Host handlers have no SA_RESTART, so a
    // call the signal interrupts returns -EINTR after its `syscall`.
    ".globl picos_blocking_syscall",
    ".type picos_blocking_syscall,@function",
    "picos_blocking_syscall:",
    "    mov 0(%rdi), %rax",
    "    mov 16(%rdi), %rsi",
    "    mov 24(%rdi), %rdx",
    "    mov 32(%rdi), %r10",
    "    mov 40(%rdi), %r8",
    "    mov 48(%rdi), %r9",
    "    mov 8(%rdi), %rdi",
    ".globl picos_block_start",
    "picos_block_start:",
    "    cmpl $0, %gs:{pending}",
    "    jne picos_block_eintr",
    ".globl picos_block_syscall_insn",
    "picos_block_syscall_insn:",
    "    syscall",
    "    ret",
    ".globl picos_block_eintr",
    "picos_block_eintr:",
    "    mov $-512, %rax", // Errno::NOT_STARTED
    "    ret",
    // picos_copy_user(dst, src, len) -> 0 or -EFAULT. A fault inside
    // [picos_copy_start, picos_copy_end) resumes at picos_copy_fault.
    ".globl picos_copy_user",
    ".type picos_copy_user,@function",
    "picos_copy_user:",
    "    mov %rdx, %rcx",
    ".globl picos_copy_start",
    "picos_copy_start:",
    // Small copies (signal sets, sigactions, timespecs): 8 bytes at a
    // time; `rep movsb` has a start-up cost that dominates them.
    "    cmp $64, %rcx",
    "    jae 5f",
    "4:  cmp $8, %rcx",
    "    jb 6f",
    "    mov (%rsi), %rax",
    "    mov %rax, (%rdi)",
    "    add $8, %rsi",
    "    add $8, %rdi",
    "    sub $8, %rcx",
    "    jmp 4b",
    "5:  rep movsb",
    "    jmp 7f",
    "6:  test %rcx, %rcx",
    "    jz 7f",
    "    rep movsb",
    "7:",
    ".globl picos_copy_end",
    "picos_copy_end:",
    "    xor %eax, %eax",
    "    ret",
    ".globl picos_copy_fault",
    "picos_copy_fault:",
    "    mov $-14, %rax",
    "    ret",
    // picos_strnlen_user(s, max) -> length, or -EFAULT; faults inside
    // [picos_strlen_start, picos_strlen_end) resume at picos_copy_fault.
    ".globl picos_strnlen_user",
    ".type picos_strnlen_user,@function",
    "picos_strnlen_user:",
    "    xor %eax, %eax",
    ".globl picos_strlen_start",
    "picos_strlen_start:",
    "2:  cmp %rsi, %rax",
    "    jae 3f",
    "    cmpb $0, (%rdi,%rax)",
    "    je 3f",
    "    inc %rax",
    "    jmp 2b",
    ".globl picos_strlen_end",
    "picos_strlen_end:",
    "3:  ret",
    pending = const PENDING_OFFSET,
    up_picos_clone_child = sym UP_CLONE_CHILD,
    options(att_syntax)
);

global_asm!(
    // picos_remap_stub(addr, len, src): replaces the mapping at addr..+len
    // by anonymous memory holding a copy of src..+len, executable: mmap
    // MAP_FIXED, copy, mprotect(PROT_READ|PROT_EXEC). Position-independent
    // (no RIP-relative reference): `mm::runtime::text_as_anonymous` runs a
    // copy of it from a page of its own, since it replaces the runtime's
    // text. Returns mmap's error, or mprotect's result.
    ".globl picos_remap_stub",
    ".globl picos_remap_stub_end",
    "picos_remap_stub:",
    "    push %rdi",
    "    push %rsi",
    "    push %rdx",
    "    mov $9, %eax",     // mmap
    "    mov $3, %edx",     // PROT_READ | PROT_WRITE
    "    mov $0x32, %r10d", // MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED
    "    mov $-1, %r8",
    "    xor %r9d, %r9d",
    "    syscall",
    "    cmp %rdi, %rax",
    "    jne 1f",
    "    mov (%rsp), %rsi",
    "    mov 8(%rsp), %rcx",
    "    cld",
    "    rep movsb",
    "    mov 16(%rsp), %rdi",
    "    mov 8(%rsp), %rsi",
    "    mov $5, %edx",  // PROT_READ | PROT_EXEC
    "    mov $10, %eax", // mprotect
    "    syscall",
    "1:  add $24, %rsp",
    "    ret",
    "picos_remap_stub_end:",
    options(att_syntax)
);

extern "C" {
    static picos_remap_stub: u8;
    static picos_remap_stub_end: u8;
}

/// The bytes of `picos_remap_stub` (see there), to be copied and run
/// elsewhere.
pub fn remap_stub() -> &'static [u8] {
    // SAFETY: the two labels delimit the stub's instructions in the
    // runtime's text, which stays mapped and unchanged while it is read.
    unsafe {
        let (s, e) = (addr_of(&picos_remap_stub), addr_of(&picos_remap_stub_end));
        core::slice::from_raw_parts(s as *const u8, e as usize - s as usize)
    }
}

/// Calls a copy of `picos_remap_stub` at `stub` (an executable page
/// outside the range it replaces) with `addr`, `len`, `src`.
///
/// # Safety
/// `stub` must hold the stub's bytes, executable; `addr..+len` must be
/// page-aligned and hold nothing another thread may run or read meanwhile
/// but the bytes `src..+len` (a readable copy) will hold again.
pub unsafe fn run_remap_stub(stub: usize, addr: usize, len: usize, src: usize) -> isize {
    // SAFETY: as the caller promises; the stub follows the C ABI.
    let f: extern "C" fn(usize, usize, usize) -> isize = unsafe { core::mem::transmute(stub) };
    f(addr, len, src)
}

/// Distance below the top of a thread's runtime stack where the fast entry
/// keeps its register frame: signal frames the kernel pushes at the top of
/// the (alternate) stack never reach it.
pub const FAST_FRAME_GAP: usize = 64 << 10;

global_asm!(
    // PICOS_FAST_FRAME fn: with the program's RFLAGS just pushed on its
    // stack, switches to the thread's runtime stack (FAST_FRAME_GAP below
    // its top), saves the registers there as a FastFrame (R11, clobbered by
    // `syscall` anyway, carries the program's RSP) and calls fn(frame).
    ".macro PICOS_FAST_FRAME fn",
    "    mov %rsp, %r11",
    "    mov %gs:0, %rsp",
    "    and $-64, %rsp",
    "    sub ${gap}, %rsp",
    "    push %r11",
    "    push %r15; push %r14; push %r13; push %r12; push %r11; push %r10; push %r9; push %r8",
    "    push %rbp; push %rdi; push %rsi; push %rdx; push %rcx; push %rbx; push %rax",
    "    mov %rsp, %rdi",
    "    cld",
    "    call *\\fn(%rip)",
    ".endm",
    // picos_fast_entry: called from a patched site's trampoline with RAX =
    // syscall number and RSP below the program's red zone. Saves flags on
    // the program stack, switches to the thread's runtime stack, saves the
    // registers (a FastFrame), serves the call, and returns to the
    // trampoline, which continues at RCX.
    ".globl picos_fast_entry",
    ".type picos_fast_entry,@function",
    "picos_fast_entry:",
    "    pushfq",
    "picos_fast_entry_flags_saved:",
    "    PICOS_FAST_FRAME {up_picos_fast_syscall}",
    "    cmpl $0, %gs:{resume_on}",
    "    jne picos_resume_full",
    // From here to picos_fast_exit_end the result is final: a signal that
    // interrupts these instructions is delivered on the program context
    // the frame describes (signal::host_signal, patch::complete_fast).
    ".globl picos_fast_exit_start",
    "picos_fast_exit_start:",
    "    cmpl $0, %gs:{pending}",
    "    jne 2f",
    "1:  pop %rax", "pop %rbx", "pop %rcx", "pop %rdx", "pop %rsi", "pop %rdi", "pop %rbp",
    "    pop %r8", "pop %r9", "pop %r10", "pop %r11", "pop %r12", "pop %r13", "pop %r14", "pop %r15",
    "    pop %rsp",
    "    popfq",
    "    ret",
    "2:  mov %rsp, %rdi",
    "    call *{up_picos_fast_defer}(%rip)",
    "    cmpl $0, %gs:{resume_on}",
    "    jne picos_resume_full",
    "    jmp 1b",
    ".globl picos_fast_exit_end",
    "picos_fast_exit_end:",
    // The direct entries: a trampoline of a call the host serves unchanged
    // (with neither --stats nor --trace) calls one of these instead of
    // picos_fast_entry. The program's registers already hold the call's
    // arguments, and `syscall` clobbers only RAX, RCX and R11 (the program
    // expects that), so the call goes to the host from here, on the program
    // stack below its red zone, with no register frame. The common case
    // then returns at once; an EINTR (SA_RESTART may rewind the call) or a
    // signal that arrived meanwhile takes the full exit through a FastFrame.
    //
    // Each records the call's number (%gs:{direct_nr}) for
    // picos_direct_finish, which may have to run the call again.
    //
    // picos_dynamic_entry: a site whose number is known only at run time
    // (musl's __syscall_cp_asm, syscall(3)): the number's class in
    // DIRECT_CLASS (filled at start-up from the syscall table, all zero
    // under --stats or --trace) picks the direct entry or the fast one,
    // as `patch::entry_for` does for a fixed number. Only RCX and R11,
    // which `syscall` clobbers anyway, are used; RFLAGS are saved first.
    ".globl picos_dynamic_entry",
    ".type picos_dynamic_entry,@function",
    "picos_dynamic_entry:",
    "    pushfq",
    "    cmp ${nclass}, %eax",
    "    jae picos_fast_entry_flags_saved",
    "    mov %eax, %ecx",
    "    lea {class}(%rip), %r11",
    "    movzbl (%r11,%rcx), %ecx",
    "    cmp $1, %ecx",
    "    je picos_direct_entry_flags_saved",
    "    cmp $2, %ecx",
    "    je picos_direct_blocking_entry_flags_saved",
    "    cmp $3, %ecx",
    "    je picos_direct_fd_entry_flags_saved",
    "    cmp $4, %ecx",
    "    je picos_direct_fd_blocking_entry_flags_saved",
    "    jmp picos_fast_entry_flags_saved",
    // picos_direct_fd_entry, picos_direct_fd_blocking_entry: a call whose
    // first argument is a descriptor goes direct only if the host serves
    // that descriptor unchanged: its bit in the thread's PassThrough map
    // (%gs:{passthrough}) is set. Linux reads the descriptor as an int
    // (EDI); one at or above PASSTHROUGH_FDS (or negative) takes the fast
    // entry, as does one the library OS serves. RCX and R11 only.
    ".globl picos_direct_fd_entry",
    ".type picos_direct_fd_entry,@function",
    "picos_direct_fd_entry:",
    "    pushfq",
    "picos_direct_fd_entry_flags_saved:",
    "    cmp ${nfd}, %edi",
    "    jae picos_fast_entry_flags_saved",
    "    mov %gs:{passthrough}, %r11",
    "    mov %edi, %ecx",
    "    shr $6, %ecx",
    "    mov (%r11,%rcx,8), %rcx",
    "    bt %rdi, %rcx",
    "    jnc picos_fast_entry_flags_saved",
    "    jmp picos_direct_entry_flags_saved",
    ".globl picos_direct_fd_blocking_entry",
    ".type picos_direct_fd_blocking_entry,@function",
    "picos_direct_fd_blocking_entry:",
    "    pushfq",
    "picos_direct_fd_blocking_entry_flags_saved:",
    "    cmp ${nfd}, %edi",
    "    jae picos_fast_entry_flags_saved",
    "    mov %gs:{passthrough}, %r11",
    "    mov %edi, %ecx",
    "    shr $6, %ecx",
    "    mov (%r11,%rcx,8), %rcx",
    "    bt %rdi, %rcx",
    "    jnc picos_fast_entry_flags_saved",
    "    jmp picos_direct_blocking_entry_flags_saved",
    // picos_direct_entry: a call that never blocks indefinitely.
    ".globl picos_direct_entry",
    ".type picos_direct_entry,@function",
    "picos_direct_entry:",
    "    pushfq",
    "picos_direct_entry_flags_saved:",
    "    mov %eax, %gs:{direct_nr}",
    "    syscall",
    "    jmp 3f",
    // picos_direct_blocking_entry: a call that may block, in a window like
    // picos_blocking_syscall's: a signal that lands between the pending
    // check and the `syscall` resumes at picos_direct_eintr.
    ".globl picos_direct_blocking_entry",
    ".type picos_direct_blocking_entry,@function",
    "picos_direct_blocking_entry:",
    "    pushfq",
    "picos_direct_blocking_entry_flags_saved:",
    "    cmpl $0, %gs:{lazy_mask}",
    "    jne picos_fast_entry_flags_saved",
    "    mov %eax, %gs:{direct_nr}",
    ".globl picos_direct_block_start",
    "picos_direct_block_start:",
    "    cmpl $0, %gs:{pending}",
    "    jne picos_direct_eintr",
    ".globl picos_direct_block_insn",
    "picos_direct_block_insn:",
    "    syscall",
    "3:  cmp $-4, %rax",
    "    je 5f",
    // From here to picos_direct_exit_end the result is final; a signal that
    // lands here is delivered on the program context the call returns to
    // (patch::complete_direct).
    ".globl picos_direct_exit_start",
    "picos_direct_exit_start:",
    "    cmpl $0, %gs:{pending}",
    "    jne 5f",
    "    mov 8(%rsp), %rcx",
    "    mov {site_ret}(%rcx), %rcx",
    "    mov (%rsp), %r11",
    ".globl picos_direct_popf",
    "picos_direct_popf:",
    "    popfq",
    ".globl picos_direct_ret",
    "picos_direct_ret:",
    "    ret",
    ".globl picos_direct_exit_end",
    "picos_direct_exit_end:",
    ".globl picos_direct_eintr",
    "picos_direct_eintr:",
    "    mov $-512, %rax", // Errno::NOT_STARTED
    // The full exit: a FastFrame as picos_fast_entry builds it, RAX = the
    // result; picos_direct_finish fills in the continuation (or a rewind)
    // and the fast entry's exit sequence delivers what is pending.
    "5:",
    ".globl picos_direct_full_exit",
    "picos_direct_full_exit:",
    "    PICOS_FAST_FRAME {up_picos_direct_finish}",
    "    jmp picos_fast_exit_start",
    // The flag-free direct entries (`picos_nf_*`): the same calls as the
    // direct entries above, for a fixed number's trampoline, without
    // `pushfq`/`popfq` (popfq costs a few ns on every call). Nothing on
    // their way to the program changes RFLAGS: tests are `jrcxz` on RCX
    // (which `syscall` clobbers anyway), the descriptor's bit is found with
    // BMI2's flagless shifts, and the `syscall` itself leaves the
    // program's RFLAGS in R11 and restores them. The slot where the
    // classic entries keep RFLAGS is reserved (`lea`), and filled only on
    // the way to a slow path (the full exit, EINTR, the fast entry), which
    // then continues as the classic entries do.
    // PICOS_NF_PASSTHROUGH: RCX = non-zero iff EDI is a descriptor below
    // PASSTHROUGH_FDS whose bit is set in %gs:passthrough (Linux reads the
    // descriptor as an int: a negative one is out of range). RCX and R11
    // only, no flags.
    ".macro PICOS_NF_PASSTHROUGH",
    "    mov %edi, %ecx",
    "    mov ${fd_bits}, %r11d",
    "    shrx %r11d, %ecx, %ecx",
    "    jrcxz 11f",
    "    mov $0, %ecx",
    "    jmp 12f",
    "11: mov %edi, %ecx",
    "    mov $6, %r11d",
    "    shrx %r11d, %ecx, %ecx",
    "    mov %gs:{passthrough}, %r11",
    "    mov (%r11,%rcx,8), %r11",
    "    shrx %rdi, %r11, %rcx",
    "    mov $63, %r11d",
    "    shlx %r11, %rcx, %rcx",
    "12:",
    ".endm",
    ".globl picos_nf_direct_fd_entry",
    ".type picos_nf_direct_fd_entry,@function",
    "picos_nf_direct_fd_entry:",
    "    lea -8(%rsp), %rsp",
    "    PICOS_NF_PASSTHROUGH",
    "    jrcxz 8f",
    "    jmp picos_nf_direct_entry_slot",
    ".globl picos_nf_direct_fd_blocking_entry",
    ".type picos_nf_direct_fd_blocking_entry,@function",
    "picos_nf_direct_fd_blocking_entry:",
    "    lea -8(%rsp), %rsp",
    "    PICOS_NF_PASSTHROUGH",
    "    jrcxz 8f",
    "    jmp picos_nf_direct_blocking_entry_slot",
    // Not passed through (or out of the map's range): the fast entry, with
    // RFLAGS still the program's.
    "8:  lea 8(%rsp), %rsp",
    "    jmp picos_fast_entry",
    ".globl picos_nf_direct_entry",
    ".type picos_nf_direct_entry,@function",
    "picos_nf_direct_entry:",
    "    lea -8(%rsp), %rsp",
    "picos_nf_direct_entry_slot:",
    "    mov %eax, %gs:{direct_nr}",
    "    syscall",
    "    jmp 3f",
    ".globl picos_nf_direct_blocking_entry",
    ".type picos_nf_direct_blocking_entry,@function",
    "picos_nf_direct_blocking_entry:",
    "    lea -8(%rsp), %rsp",
    "picos_nf_direct_blocking_entry_slot:",
    "    mov %gs:{lazy_mask}, %ecx",
    "    jrcxz 9f",
    "    lea 8(%rsp), %rsp",
    "    jmp picos_fast_entry",
    "9:  mov %eax, %gs:{direct_nr}",
    ".globl picos_nf_direct_block_start",
    "picos_nf_direct_block_start:",
    "    mov %gs:{pending}, %ecx",
    "    jrcxz 2f",
    "    jmp picos_nf_direct_eintr",
    "2:",
    ".globl picos_nf_direct_block_insn",
    "picos_nf_direct_block_insn:",
    "    syscall",
    "3:  lea 4(%rax), %rcx", // -4: EINTR
    "    jrcxz 6f",
    // From here to picos_nf_direct_exit_end the result is final, as in
    // the classic exit; the slot does not hold RFLAGS (complete_direct
    // takes them from the interrupted context, where they are the
    // program's).
    ".globl picos_nf_direct_exit_start",
    "picos_nf_direct_exit_start:",
    "    mov %gs:{pending}, %ecx",
    "    jrcxz 7f",
    "    jmp 6f",
    "7:  mov 8(%rsp), %rcx",
    "    mov {site_ret}(%rcx), %rcx",
    "    lea 8(%rsp), %rsp",
    ".globl picos_nf_direct_ret",
    "picos_nf_direct_ret:",
    "    ret",
    ".globl picos_nf_direct_exit_end",
    "picos_nf_direct_exit_end:",
    // The full exit: the slot gets the program's RFLAGS (R11, from the
    // `syscall`), and the classic full exit takes over.
    "6:  mov %r11, (%rsp)",
    "    jmp picos_direct_full_exit",
    // A signal became pending before the blocking call started (the
    // check, or the host handler's rewind of the window): RFLAGS are still
    // the program's.
    ".globl picos_nf_direct_eintr",
    "picos_nf_direct_eintr:",
    "    lea 8(%rsp), %rsp",
    "    pushfq",
    "    jmp picos_direct_eintr",
    gap = const FAST_FRAME_GAP,
    fd_bits = const PASSTHROUGH_FDS.trailing_zeros(),
    nclass = const DIRECT_CLASSES,
    class = sym DIRECT_CLASS,
    direct_nr = const core::mem::offset_of!(EntryState, direct_nr),
    passthrough = const core::mem::offset_of!(EntryState, passthrough),
    lazy_mask = const core::mem::offset_of!(EntryState, lazy_mask),
    nfd = const PASSTHROUGH_FDS,
    site_ret = const RET_TO_SITE_RET,
    pending = const PENDING_OFFSET,
    resume_on = const core::mem::offset_of!(EntryState, resume_on),
    up_picos_fast_syscall = sym UP_FAST_SYSCALL,
    up_picos_fast_defer = sym UP_FAST_DEFER,
    up_picos_direct_finish = sym UP_DIRECT_FINISH,
    options(att_syntax)
);

global_asm!(
    // picos_resume_full: the fast entry returns to a whole program context
    // (Thread::resume), not to its trampoline: after a fast rt_sigreturn.
    // Signals pending first are delivered on that context (Rust builds
    // their frames and updates it); from picos_resume_start on, a signal is
    // delivered by the host handler on that context (patch::complete_resume).
    // Only `mov`s follow the `popfq`, so the program's flags reach it intact.
    ".globl picos_resume_full",
    ".type picos_resume_full,@function",
    "picos_resume_full:",
    "    movl $0, %gs:{resume_on}",
    // The context is final from here: a signal that lands on the pending
    // check itself (after the flag was read, before the jump) is delivered
    // on it too, rather than left pending behind a stale test.
    ".globl picos_resume_start",
    "picos_resume_start:",
    "1:  cmpl $0, %gs:{pending}",
    "    jne 3f",
    "    pushq %gs:{rflags}",
    "    popfq",
    "    mov %gs:{r8}, %r8", "mov %gs:{r9}, %r9", "mov %gs:{r10}, %r10", "mov %gs:{r11}, %r11",
    "    mov %gs:{r12}, %r12", "mov %gs:{r13}, %r13", "mov %gs:{r14}, %r14", "mov %gs:{r15}, %r15",
    "    mov %gs:{rdi}, %rdi", "mov %gs:{rsi}, %rsi", "mov %gs:{rbp}, %rbp", "mov %gs:{rbx}, %rbx",
    "    mov %gs:{rdx}, %rdx", "mov %gs:{rax}, %rax", "mov %gs:{rcx}, %rcx",
    "    mov %gs:{rsp}, %rsp",
    "    jmp *%gs:{rip}",
    ".globl picos_resume_end",
    "picos_resume_end:",
    "3:  call *{up_picos_resume_deliver}(%rip)",
    "    jmp 1b",
    // picos_xrstor(area, mask_lo, mask_hi) -> 0, or -EFAULT if the image
    // is refused (#GP) or unreadable.
    ".globl picos_xrstor",
    ".type picos_xrstor,@function",
    "picos_xrstor:",
    "    mov %esi, %eax",
    ".globl picos_xrstor_insn",
    "picos_xrstor_insn:",
    "    xrstor64 (%rdi)",
    ".globl picos_xrstor_end",
    "picos_xrstor_end:",
    "    xor %eax, %eax",
    "    ret",
    // picos_xsave(area, mask_lo, mask_hi): XSAVE (standard format) of the
    // registers, which hold the program's state (the runtime never uses them).
    ".globl picos_xsave",
    ".type picos_xsave,@function",
    "picos_xsave:",
    "    mov %esi, %eax",
    "    xsave64 (%rdi)",
    "    ret",
    pending = const PENDING_OFFSET,
    resume_on = const core::mem::offset_of!(EntryState, resume_on),
    rflags = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, eflags),
    r8 = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, r8),
    r9 = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, r9),
    r10 = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, r10),
    r11 = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, r11),
    r12 = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, r12),
    r13 = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, r13),
    r14 = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, r14),
    r15 = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, r15),
    rdi = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rdi),
    rsi = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rsi),
    rbp = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rbp),
    rbx = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rbx),
    rdx = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rdx),
    rax = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rax),
    rcx = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rcx),
    rsp = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rsp),
    rip = const core::mem::offset_of!(EntryState, resume) + core::mem::offset_of!(SigContext, rip),
    up_picos_resume_deliver = sym UP_RESUME_DELIVER,
    options(att_syntax)
);

extern "C" {
    static picos_resume_start: u8;
    static picos_resume_end: u8;
    static picos_xrstor_insn: u8;
    static picos_xrstor_end: u8;
    pub fn picos_xrstor(area: *const u8, mask_lo: u32, mask_hi: u32) -> isize;
    pub fn picos_xsave(area: *mut u8, mask_lo: u32, mask_hi: u32);
}

/// Is `rip` inside picos_resume_full's final sequence?
pub fn in_resume(rip: u64) -> bool {
    // SAFETY: only the addresses of the labels are taken.
    let (s, e) = unsafe { (addr_of(&picos_resume_start), addr_of(&picos_resume_end)) };
    rip >= s && rip < e
}

/// What CPUID said, read once by [`probe_cpu`] at start-up: a program may
/// make CPUID fault later (arch_prctl(ARCH_SET_CPUID, 0)), and the runtime
/// must not execute it then.
static CPU_FEATURES: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);
const CPU_PROBED: u8 = 1;
const CPU_XSAVE: u8 = 2;
const CPU_RDPID: u8 = 4;
const CPU_RDTSCP: u8 = 8;
const CPU_BMI2: u8 = 16;

/// Reads the CPU features the runtime uses (XSAVE, RDPID, RDTSCP, BMI2) with
/// CPUID. Called at start-up, before the program runs: execve re-enables
/// CPUID, and nothing the program does can have disabled it yet.
pub fn probe_cpu() -> u8 {
    use core::sync::atomic::Ordering;
    let f = CPU_FEATURES.load(Ordering::Relaxed);
    if f & CPU_PROBED != 0 {
        return f;
    }
    let (l1, l7, ext) = (
        core::arch::x86_64::__cpuid(1),
        core::arch::x86_64::__cpuid_count(7, 0),
        core::arch::x86_64::__cpuid(0x8000_0001),
    );
    let mut f = CPU_PROBED;
    // XSAVE (bit 26) and OSXSAVE (bit 27): the CPU and the kernel.
    if l1.ecx & (3 << 26) == 3 << 26 {
        f |= CPU_XSAVE;
    }
    if l7.ecx & (1 << 22) != 0 {
        f |= CPU_RDPID;
    }
    if ext.edx & (1 << 27) != 0 {
        f |= CPU_RDTSCP;
    }
    if l7.ebx & (1 << 8) != 0 {
        f |= CPU_BMI2;
    }
    CPU_FEATURES.store(f, Ordering::Relaxed);
    f
}

/// Takes the CPU features as [`probe_cpu`] gave them in the runtime that
/// called execve (the launch configuration's `cpu`), so that this one
/// need not run CPUID (in a virtual machine, an exit to the hypervisor:
/// ~4 µs each, three of them). Ignored unless they carry the "probed" bit.
pub fn adopt_cpu_features(f: u8) {
    use core::sync::atomic::Ordering;
    if let Some(f) = adoptable(f) {
        CPU_FEATURES.store(f, Ordering::Relaxed);
    }
}

/// The features [`adopt_cpu_features`] takes from `f`, if any.
fn adoptable(f: u8) -> Option<u8> {
    (f & CPU_PROBED != 0).then_some(f)
}

/// Does the CPU (and the kernel) support XSAVE?
pub fn has_xsave() -> bool {
    probe_cpu() & CPU_XSAVE != 0
}

/// The entries a fixed number's trampoline calls for the direct classes:
/// direct, direct blocking, direct for pass-through descriptors, and its
/// blocking form. The flag-free ones (`picos_nf_*`, no `pushfq`/`popfq`)
/// where the CPU has BMI2 (their descriptor check needs its flagless
/// shifts), else the classic ones.
pub fn direct_entries() -> [usize; 4] {
    let a = |f: unsafe extern "C" fn()| f as *const () as usize;
    if probe_cpu() & CPU_BMI2 != 0 {
        [
            a(picos_nf_direct_entry),
            a(picos_nf_direct_blocking_entry),
            a(picos_nf_direct_fd_entry),
            a(picos_nf_direct_fd_blocking_entry),
        ]
    } else {
        [
            a(picos_direct_entry),
            a(picos_direct_blocking_entry),
            a(picos_direct_fd_entry),
            a(picos_direct_fd_blocking_entry),
        ]
    }
}

extern "C" {
    fn picos_nf_direct_entry();
    fn picos_nf_direct_blocking_entry();
    fn picos_nf_direct_fd_entry();
    fn picos_nf_direct_fd_blocking_entry();
    static picos_nf_direct_block_start: u8;
    static picos_nf_direct_block_insn: u8;
    static picos_nf_direct_eintr: u8;
    static picos_nf_direct_exit_start: u8;
    static picos_nf_direct_ret: u8;
    static picos_nf_direct_exit_end: u8;
}

extern "C" {
    pub fn picos_fast_entry();
    pub fn picos_direct_entry();
    pub fn picos_direct_fd_entry();
    pub fn picos_direct_fd_blocking_entry();
    pub fn picos_dynamic_entry();
    pub fn picos_direct_blocking_entry();
    static picos_fast_exit_start: u8;
    static picos_fast_exit_end: u8;
    static picos_direct_block_start: u8;
    static picos_direct_block_insn: u8;
    static picos_direct_eintr: u8;
    static picos_direct_exit_start: u8;
    static picos_direct_ret: u8;
    static picos_direct_exit_end: u8;
}

/// Where a signal interrupted a direct entry's exit sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectExit {
    /// Before its `popfq`: the program stack holds RFLAGS, then the
    /// trampoline's return address.
    BeforePopf,
    /// At its `ret`: RFLAGS are restored; the stack holds the return address.
    AtRet,
    /// Before a flag-free entry's `ret` (`picos_nf_*`): RFLAGS are the
    /// program's (nothing changed them); the stack holds the unused RFLAGS
    /// slot, then the trampoline's return address.
    FlagsInPlace,
}

/// Is `rip` inside a direct entry's exit sequence, and where?
pub fn in_direct_exit(rip: u64) -> Option<DirectExit> {
    // SAFETY: only the addresses of the labels are taken.
    let (s, r, e) = unsafe {
        (
            addr_of(&picos_direct_exit_start),
            addr_of(&picos_direct_ret),
            addr_of(&picos_direct_exit_end),
        )
    };
    // SAFETY: as above.
    let (nf_s, nf_r, nf_e) = unsafe {
        (
            addr_of(&picos_nf_direct_exit_start),
            addr_of(&picos_nf_direct_ret),
            addr_of(&picos_nf_direct_exit_end),
        )
    };
    match rip {
        _ if rip == r || rip == nf_r => Some(DirectExit::AtRet),
        _ if rip >= s && rip < e => Some(DirectExit::BeforePopf),
        _ if rip >= nf_s && rip < nf_e => Some(DirectExit::FlagsInPlace),
        _ => None,
    }
}

/// Is `rip` inside the fast entry's exit sequence?
pub fn in_fast_exit(rip: u64) -> bool {
    // SAFETY: only the addresses of the labels are taken.
    let (s, e) = unsafe {
        (
            addr_of(&picos_fast_exit_start),
            addr_of(&picos_fast_exit_end),
        )
    };
    rip >= s && rip < e
}

/// Registers saved by `picos_fast_entry`, lowest address first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FastFrame {
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    /// The program's RSP at entry: it points at the saved RFLAGS, then the
    /// trampoline's return address, then the 128-byte red zone. Private:
    /// only the stubs make frames, so the accessors may trust it.
    guest_sp: u64,
}

extern "C" {
    pub fn picos_restorer();
    pub fn picos_sigreturn_to(uc: *mut UContext) -> !;
    pub fn picos_enter(entry: usize, sp: usize) -> !;
    pub fn picos_switch_stack(arg: usize, f: extern "C" fn(usize) -> !, sp: usize) -> !;
    pub fn picos_clone(flags: u64, stack: usize, ptid: usize, ctid: usize, tls: usize) -> isize;
    pub fn picos_blocking_syscall(args: *const [usize; 7]) -> isize;
    pub fn picos_copy_user(dst: *mut u8, src: *const u8, len: usize) -> isize;
    pub fn picos_strnlen_user(s: *const u8, max: usize) -> isize;
    static picos_block_start: u8;
    static picos_block_syscall_insn: u8;
    static picos_block_eintr: u8;
    static picos_copy_start: u8;
    static picos_copy_end: u8;
    static picos_copy_fault: u8;
    static picos_strlen_start: u8;
    static picos_strlen_end: u8;
}

fn addr_of(s: &'static u8) -> u64 {
    s as *const u8 as u64
}

/// If a signal interrupted the blocking-syscall stub before its `syscall`
/// instruction ran, where to resume instead (the `Errno::NOT_STARTED` exit).
pub fn blocking_rewind(rip: u64) -> Option<u64> {
    // SAFETY: only the addresses of the labels are taken.
    let (start, insn, eintr) = unsafe {
        (
            addr_of(&picos_block_start),
            addr_of(&picos_block_syscall_insn),
            addr_of(&picos_block_eintr),
        )
    };
    if rip >= start && rip <= insn {
        return Some(eintr);
    }
    // SAFETY: as above.
    let (start, insn, eintr) = unsafe {
        (
            addr_of(&picos_direct_block_start),
            addr_of(&picos_direct_block_insn),
            addr_of(&picos_direct_eintr),
        )
    };
    if rip >= start && rip <= insn {
        return Some(eintr);
    }
    // SAFETY: as above.
    let (start, insn, eintr) = unsafe {
        (
            addr_of(&picos_nf_direct_block_start),
            addr_of(&picos_nf_direct_block_insn),
            addr_of(&picos_nf_direct_eintr),
        )
    };
    (rip >= start && rip <= insn).then_some(eintr)
}

/// If a fault happened inside a user-memory copy, where to resume (the
/// `-EFAULT` exit).
pub fn fault_fixup(rip: u64) -> Option<u64> {
    // SAFETY: only the addresses of the labels are taken.
    let (cs, ce, ss, se, fix) = unsafe {
        (
            addr_of(&picos_copy_start),
            addr_of(&picos_copy_end),
            addr_of(&picos_strlen_start),
            addr_of(&picos_strlen_end),
            addr_of(&picos_copy_fault),
        )
    };
    // SAFETY: as above.
    let (xs, xe) = unsafe { (addr_of(&picos_xrstor_insn), addr_of(&picos_xrstor_end)) };
    ((rip >= cs && rip < ce) || (rip >= ss && rip < se) || (rip >= xs && rip < xe)).then_some(fix)
}

/// A fault-type signal at a fix-up site (`fault_fixup(rip)` is some): was
/// it this instruction's own fault? Page faults report the address the
/// copy was at (RSI, RDI or RDI+RAX, within the 8 bytes one instruction
/// touches; anywhere in the image for `xrstor`); a general-protection fault
/// (SI_KERNEL) comes from a non-canonical pointer (or, for `xrstor`, an
/// image it refuses). A signal sent with a fault's code does not match.
pub fn fixup_fault_is_real(m: &SigContext, code: i32, addr: u64) -> bool {
    // SAFETY: only the addresses of the labels are taken.
    let (xs, xe) = unsafe { (addr_of(&picos_xrstor_insn), addr_of(&picos_xrstor_end)) };
    let xrstor = m.rip >= xs && m.rip < xe;
    let ptrs = [m.rsi, m.rdi, m.rdi.wrapping_add(m.rax)];
    if code == crate::host::abi::SI_KERNEL {
        return xrstor
            || ptrs
                .iter()
                .any(|&p| !is_canonical(p) || !is_canonical(p.wrapping_add(7)));
    }
    if xrstor {
        return addr.wrapping_sub(m.rdi) < 64 << 10;
    }
    ptrs.iter().any(|&p| addr.wrapping_sub(p) < 8)
}

/// Is `addr` canonical (48-bit virtual addresses: bits 63..47 all equal)?
pub fn is_canonical(addr: u64) -> bool {
    ((addr as i64) << 16 >> 16) as u64 == addr
}

/// The time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc only reads the counter (user mode may run it on Linux).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Reads the GS base (the runtime's per-thread pointer).
#[inline(always)]
pub fn gs_base() -> usize {
    if crate::arch::has_fsgsbase() {
        let v: usize;
        // SAFETY: rdgsbase is enabled (checked via AT_HWCAP2) and only reads.
        unsafe { asm!("rdgsbase {}", out(reg) v, options(nomem, nostack, preserves_flags)) };
        v
    } else {
        crate::host::get_gs_base().unwrap_or(0)
    }
}

/// Sets the GS base of the calling thread.
pub fn set_gs_base(v: usize) {
    if crate::arch::has_fsgsbase() {
        // SAFETY: wrgsbase is enabled; GS is reserved for the runtime.
        unsafe { asm!("wrgsbase {}", in(reg) v, options(nostack, preserves_flags)) };
    } else {
        let _ = crate::host::set_gs_base(v);
    }
}

/// TSC_AUX (Linux: `node << 12 | cpu`) via `rdpid`, or `rdtscp` if the
/// CPU lacks `rdpid` and `rdtscp_allowed` (it faults like `rdtsc` after
/// prctl(PR_SET_TSC, PR_TSC_SIGSEGV); `rdpid` does not).
pub fn tsc_aux(rdtscp_allowed: bool) -> Option<u32> {
    let f = probe_cpu();
    if f & CPU_RDPID != 0 {
        let v: u64;
        // SAFETY: rdpid is supported (CPUID.7.0:ECX[22]); it only reads.
        unsafe { asm!("rdpid {}", out(reg) v, options(nomem, nostack, preserves_flags)) };
        Some(v as u32)
    } else if f & CPU_RDTSCP != 0 && rdtscp_allowed {
        let aux: u32;
        // SAFETY: rdtscp is supported (CPUID.80000001H:EDX[27]) and the
        // program has not made it fault; it only reads.
        unsafe {
            asm!("rdtscp", out("eax") _, out("edx") _, out("ecx") aux, options(nomem, nostack, preserves_flags))
        };
        Some(aux)
    } else {
        None
    }
}

static FSGSBASE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
const HWCAP2_FSGSBASE: u64 = 1 << 1;

/// Notes the kernel's AT_HWCAP2 (whether `rdgsbase`/`wrgsbase` may be used).
pub fn note_hwcap2(hwcap2: u64) {
    FSGSBASE.store(
        hwcap2 & HWCAP2_FSGSBASE != 0,
        core::sync::atomic::Ordering::Relaxed,
    );
}

/// May the runtime use the FSGSBASE instructions?
#[inline(always)]
pub fn has_fsgsbase() -> bool {
    FSGSBASE.load(core::sync::atomic::Ordering::Relaxed)
}

/// Puts in `uc` (a host signal frame's context) the registers a program
/// starts with after execve (Linux's `start_thread`): RIP `entry`, RSP
/// `sp`, every other general register 0, RFLAGS with IF only, the FPU in
/// its initial state. The segment fields stay the host frame's.
pub fn fresh_registers(uc: &mut UContext, entry: usize, sp: usize) {
    let m = uc.mcontext;
    uc.mcontext = on_host_frame(
        SigContext {
            rsp: sp as u64,
            rip: entry as u64,
            eflags: 0x202,
            ..SigContext::default()
        },
        &m,
    );
    fpu::reset_image(uc);
}

/// Program registers `m` on a host signal frame's context `host`: the
/// segment and FPU fields stay the host frame's.
pub fn on_host_frame(m: SigContext, host: &SigContext) -> SigContext {
    SigContext {
        cs: host.cs,
        gs: host.gs,
        fs: host.fs,
        ss: host.ss,
        fpstate: host.fpstate,
        ..m
    }
}

/// A host signal handler written in safe code: `arch` receives the
/// kernel's raw `siginfo` and `ucontext` pointers and passes references.
pub trait SignalHandler {
    fn handle(sig: i32, info: &SigInfo, uc: &mut UContext);
}

extern "C" fn signal_shim<H: SignalHandler>(sig: i32, info: *mut SigInfo, uc: *mut UContext) {
    // SAFETY: installed with SA_SIGINFO (see `handler_address`), so the
    // kernel passes valid siginfo and ucontext pointers into the signal
    // frame, which only this handler uses while it runs.
    let (info, uc) = unsafe { (&*info, &mut *uc) };
    fpu::note_format(uc);
    H::handle(sig, info, uc)
}

/// The address to install (with SA_SIGINFO) for handler `H`.
pub fn handler_address<H: SignalHandler>() -> usize {
    signal_shim::<H> as *const () as usize
}

// ---------------------------------------------------------------------------
// What the stubs read through %gs, and the Rust functions they call.

/// The per-thread words the entry stubs use through %gs: the first field of
/// the runtime's per-thread state (the GS base points at it).
#[repr(C)]
pub struct EntryState {
    /// Points at itself (offset 0): `mov %gs:0` gives the runtime stack's
    /// top, and a mismatch tells that GS was changed behind the runtime.
    pub self_ptr: usize,
    /// Non-zero while a signal the program does not block waits in the
    /// runtime's queues (offset 8).
    pub pending: AtomicU32,
    /// The number of the call a direct entry is making (written by the
    /// entry, read by `entry::fast`'s finish).
    pub direct_nr: AtomicU32,
    /// Non-zero when the fast entry must return to `resume` rather than to
    /// its trampoline (a fast rt_sigreturn, a delivery on the fast path).
    pub resume_on: AtomicU32,
    /// Non-zero while the host's mask may leave open a signal the program
    /// blocks (`kernel::signal::set_mask_lazily`): the blocking direct
    /// entries then take the fast entry, which makes the host's mask the
    /// program's before the call can block (offset 20).
    pub lazy_mask: AtomicU32,
    /// The descriptors of this thread's descriptor table that the host
    /// serves unchanged ([`PassThrough`]): the direct entries check the
    /// descriptor of an fd-taking call here.
    pub passthrough: AtomicPtr<PassThrough>,
    /// The full program context the fast entry returns to (`resume_on`);
    /// its `fpstate` field is unused: FPU state is already in the registers.
    pub resume: core::cell::Cell<SigContext>,
}

/// Offset of [`EntryState::pending`] (the blocking stubs check it).
pub const PENDING_OFFSET: usize = core::mem::offset_of!(EntryState, pending);
const _: () = assert!(PENDING_OFFSET == 8);

impl EntryState {
    /// The state of a thread whose area is at `addr`, with descriptor
    /// table view `passthrough`.
    pub fn new(addr: usize, passthrough: &'static PassThrough) -> Self {
        EntryState {
            self_ptr: addr,
            pending: AtomicU32::new(0),
            direct_nr: AtomicU32::new(0),
            resume_on: AtomicU32::new(0),
            lazy_mask: AtomicU32::new(1),
            passthrough: AtomicPtr::new(passthrough as *const PassThrough as *mut PassThrough),
            resume: core::cell::Cell::new(SigContext::default()),
        }
    }
}

/// Descriptors below this are looked up in a [`PassThrough`] map; a call on
/// a higher one takes the fast entry (the dispatcher decides).
pub const PASSTHROUGH_FDS: usize = 4096;

/// Which descriptors of a descriptor table the host serves unchanged (a
/// bit per descriptor): a direct entry of an fd-taking call issues the call
/// at once only when its descriptor's bit is set; otherwise the call goes
/// to the dispatcher, where the library OS serves descriptors of its own.
pub struct PassThrough(pub [AtomicU64; PASSTHROUGH_FDS / 64]);

impl PassThrough {
    /// Every descriptor passed through.
    pub const fn all() -> Self {
        PassThrough([const { AtomicU64::new(u64::MAX) }; PASSTHROUGH_FDS / 64])
    }
    /// Makes this map a copy of `other` (for a new descriptor table).
    pub fn copy_from(&self, other: &PassThrough) {
        for (d, s) in self.0.iter().zip(other.0.iter()) {
            d.store(s.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
    /// Does the host serve descriptor `fd` unchanged?
    pub fn get(&self, fd: i32) -> bool {
        let fd = fd as u32 as usize;
        fd >= PASSTHROUGH_FDS || self.0[fd / 64].load(Ordering::Relaxed) & (1 << (fd % 64)) != 0
    }
    /// Sets whether the host serves descriptor `fd` unchanged (a
    /// descriptor at or above [`PASSTHROUGH_FDS`] always goes to the
    /// dispatcher, whatever is set).
    pub fn set(&self, fd: i32, on: bool) {
        let fd = fd as u32 as usize;
        if fd < PASSTHROUGH_FDS {
            let b = 1u64 << (fd % 64);
            if on {
                self.0[fd / 64].fetch_or(b, Ordering::Relaxed);
            } else {
                self.0[fd / 64].fetch_and(!b, Ordering::Relaxed);
            }
        }
    }
}

/// How the dynamic entry routes a call by number (`DIRECT_CLASS`): see
/// `picos_dynamic_entry`.
pub mod class {
    /// Through the fast entry (the dispatcher).
    pub const FAST: u8 = 0;
    /// Issued at once.
    pub const DIRECT: u8 = 1;
    /// Issued at once in the blocking window.
    pub const DIRECT_BLOCKING: u8 = 2;
    /// As DIRECT if the host serves the descriptor in the first argument
    /// unchanged (`PassThrough`), else FAST.
    pub const DIRECT_FD: u8 = 3;
    /// As DIRECT_BLOCKING if the descriptor is passed through, else FAST.
    pub const DIRECT_FD_BLOCKING: u8 = 4;
}

/// Numbers the dynamic entry routes: calls at or above go through the fast entry.
pub const DIRECT_CLASSES: usize = 512;

/// The dynamic entry's route per syscall number ([`class`]), set once at
/// start-up (`patch::init`).
pub static DIRECT_CLASS: [AtomicU8; DIRECT_CLASSES] = [const { AtomicU8::new(0) }; DIRECT_CLASSES];

/// Offset from a trampoline's return address of the `.quad` holding where
/// the fast path continues (`patch`'s trampoline layout).
pub const RET_TO_SITE_RET: usize = 24;

/// The Rust functions the stubs call, set once at start-up before any of
/// them can run ([`set_upcalls`]).
pub struct Upcalls {
    /// `picos_fast_entry`: serve the call in the frame.
    pub fast_syscall: extern "C" fn(&mut FastFrame),
    /// The direct entries' full exit (EINTR, or a signal during the call).
    pub direct_finish: extern "C" fn(&mut FastFrame),
    /// The fast exit found a pending signal.
    pub fast_defer: extern "C" fn(&mut FastFrame),
    /// `picos_resume_full` found a pending signal.
    pub resume_deliver: extern "C" fn(),
    /// First code of a child made by [`picos_clone`], with its stack.
    pub clone_child: extern "C" fn(usize) -> !,
}

static UP_FAST_SYSCALL: AtomicUsize = AtomicUsize::new(0);
static UP_DIRECT_FINISH: AtomicUsize = AtomicUsize::new(0);
static UP_FAST_DEFER: AtomicUsize = AtomicUsize::new(0);
static UP_RESUME_DELIVER: AtomicUsize = AtomicUsize::new(0);
static UP_CLONE_CHILD: AtomicUsize = AtomicUsize::new(0);

/// Sets the functions the stubs call (an indirect `call` through these
/// words: the layers above `arch` are not named here).
pub fn set_upcalls(u: &Upcalls) {
    UP_FAST_SYSCALL.store(u.fast_syscall as usize, Ordering::Relaxed);
    UP_DIRECT_FINISH.store(u.direct_finish as usize, Ordering::Relaxed);
    UP_FAST_DEFER.store(u.fast_defer as usize, Ordering::Relaxed);
    UP_RESUME_DELIVER.store(u.resume_deliver as usize, Ordering::Relaxed);
    UP_CLONE_CHILD.store(u.clone_child as usize, Ordering::Release);
}

impl FastFrame {
    /// The program's RFLAGS, which the entry's `pushfq` put at `guest_sp`.
    #[inline(always)]
    pub fn entry_flags(&self) -> u64 {
        // SAFETY: a FastFrame is only built by the entry stubs (its
        // `guest_sp` is private to `arch`), which pushed RFLAGS at guest_sp
        // on the program stack, under the trampoline's return address.
        unsafe { *(self.guest_sp as *const u64) }
    }
    /// The trampoline's return address, just above the saved RFLAGS.
    #[inline(always)]
    pub fn trampoline_ret(&self) -> usize {
        // SAFETY: as in `entry_flags`.
        unsafe { *((self.guest_sp + 8) as *const u64) as usize }
    }
    /// Where the fast path continues: the trampoline stores it (site+7, or
    /// its own copy of the `syscall` + 2) at a fixed offset from its return
    /// address.
    #[inline(always)]
    pub fn continuation(&self) -> u64 {
        // SAFETY: the return address is a trampoline's (only trampolines
        // call the entries), which holds the `.quad` at RET_TO_SITE_RET.
        unsafe { *((self.trampoline_ret() + RET_TO_SITE_RET) as *const u64) }
    }
    /// The program's RSP at the entry.
    pub fn guest_sp(&self) -> u64 {
        self.guest_sp
    }
}

/// Returns to the program through the kernel-format signal frame whose
/// ucontext is at `uc` (rt_sigreturn): the kernel checks the frame (a bad
/// one ends the thread with SIGSEGV), and this thread's runtime code is
/// done (nothing of its stack is used after).
pub fn sigreturn_to(uc: usize) -> ! {
    // SAFETY: rt_sigreturn replaces every register of this thread; the
    // runtime keeps no reference into this stack frame.
    unsafe { picos_sigreturn_to(uc as *mut UContext) }
}

/// Continues the program at context `m` from a host signal handler,
/// without the host's rt_sigreturn: `m` goes into `entry.resume` and
/// picos_resume_full loads it (delivering what became pending first, as
/// after a fast rt_sigreturn). The caller has put the host's signal mask in
/// force; the handler's frame is abandoned (the kernel keeps no state for
/// it: its signal stack is free again once RSP leaves it). The FPU
/// registers are left as they are. `entry` must be the calling thread's
/// (the one its GS base points at): checked.
pub fn resume_from_handler(entry: &EntryState, m: &SigContext) -> ! {
    let gs_self: usize;
    // SAFETY: reads the first word of the thread area GS points at (the
    // entry stubs read it the same way); no other effect.
    unsafe {
        asm!("mov %gs:0, {}", out(reg) gs_self, options(att_syntax, nostack, readonly, preserves_flags))
    };
    assert!(
        gs_self == entry as *const EntryState as usize,
        "resume_from_handler: not this thread's state"
    );
    entry.resume.set(*m);
    // SAFETY: picos_resume_full reads only the calling thread's EntryState
    // (just written) through GS and jumps to the program; nothing of this
    // stack is used after the jump but its own calls into the runtime
    // (below the aligned stack pointer).
    unsafe {
        asm!(
            "and $-16, %rsp",
            "jmp picos_resume_full",
            options(att_syntax, noreturn)
        )
    }
}

/// Starts the program at `entry` with stack pointer `sp` (the loader's),
/// leaving the runtime for good on this thread.
pub fn enter_program(entry: usize, sp: usize) -> ! {
    // SAFETY: the jump leaves runtime code; nothing of this stack is used
    // after it.
    unsafe { picos_enter(entry, sp) }
}

/// The program's call `nr` with `args` (the program's values: see
/// `host::program_call`) through the blocking-syscall stub: a signal that
/// becomes pending before the `syscall` starts makes it return
/// `Errno::NOT_STARTED`, one during the call EINTR.
pub fn blocking_program_call(nr: usize, args: [usize; 6]) -> crate::host::HostResult {
    let a = [nr, args[0], args[1], args[2], args[3], args[4], args[5]];
    // SAFETY: the program's own arguments (as for `host::program_call`);
    // the stub only reads `a`.
    let r = unsafe { picos_blocking_syscall(&a) };
    crate::host::errno::Errno::from_ret(r)
}

#[cfg(test)]
mod passthrough_tests {
    use super::*;

    #[test]
    fn passthrough_map() {
        let m = PassThrough::all();
        assert!(m.get(0) && m.get(4095) && m.get(4096) && m.get(-1));
        m.set(7, false);
        assert!(!m.get(7) && m.get(6) && m.get(8));
        // Beyond the map (and negative, as an unsigned int): always "to the
        // dispatcher" in the stub, whatever is set; `get` answers true.
        m.set(5000, false);
        assert!(m.get(5000));
        let c = PassThrough::all();
        c.copy_from(&m);
        assert!(!c.get(7));
        m.set(7, true);
        assert!(m.get(7) && !c.get(7));
    }
}

#[cfg(test)]
mod cpu_tests {
    use super::*;

    #[test]
    fn only_probed_features_are_adopted() {
        // 0 (not known) and bits without "probed" leave the probe to run.
        assert_eq!(adoptable(0), None);
        assert_eq!(adoptable(CPU_XSAVE | CPU_BMI2), None);
        // What the runtime before the execve found is taken as it is.
        let f = CPU_PROBED | CPU_RDTSCP;
        assert_eq!(adoptable(f), Some(f));
        let real = probe_cpu();
        assert!(real & CPU_PROBED != 0);
        assert_eq!(adoptable(real), Some(real));
    }
}
