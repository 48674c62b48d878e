//! The Linux x86-64 ABI the runtime speaks on both sides (to the program
//! and to the host): signal numbers and flags, `stack_t`, and the flag bits
//! of the calls the runtime makes itself. One definition each.
#![deny(unsafe_code)]

pub const SIGHUP: i32 = 1;
pub const SIGILL: i32 = 4;
pub const SIGTRAP: i32 = 5;
pub const SIGABRT: i32 = 6;
pub const SIGBUS: i32 = 7;
pub const SIGFPE: i32 = 8;
pub const SIGKILL: i32 = 9;
pub const SIGSEGV: i32 = 11;
pub const SIGCHLD: i32 = 17;
pub const SIGCONT: i32 = 18;
pub const SIGSTOP: i32 = 19;
pub const SIGTSTP: i32 = 20;
pub const SIGTTIN: i32 = 21;
pub const SIGTTOU: i32 = 22;
pub const SIGURG: i32 = 23;
pub const SIGWINCH: i32 = 28;
pub const SIGSYS: i32 = 31;

pub const SA_NOCLDSTOP: u64 = 1;
pub const SA_NOCLDWAIT: u64 = 2;
pub const SA_SIGINFO: u64 = 4;
pub const SA_RESTORER: u64 = 0x0400_0000;
pub const SA_ONSTACK: u64 = 0x0800_0000;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;
pub const SIG_DFL: usize = 0;
pub const SIG_IGN: usize = 1;
pub const SS_ONSTACK: i32 = 1;
pub const SS_DISABLE: i32 = 2;
pub const SS_AUTODISARM: i32 = 1 << 31;
pub const SIG_BLOCK: i32 = 0;
pub const SIG_UNBLOCK: i32 = 1;
pub const SIG_SETMASK: i32 = 2;
/// si_code of a signal the kernel itself raised.
pub const SI_KERNEL: i32 = 0x80;
/// si_code of a signal sent by tkill or tgkill (thread-directed).
pub const SI_TKILL: i32 = -6;
/// si_code of a Syscall User Dispatch SIGSYS.
pub const SYS_USER_DISPATCH: i32 = 2;

/// The synchronous fault signals (the CPU raises them for an instruction).
pub const SYNC_FAULTS: u64 = bit(SIGSEGV) | bit(SIGBUS) | bit(SIGFPE) | bit(SIGILL) | bit(SIGTRAP);

/// Bit for signal `sig` in a mask.
pub const fn bit(sig: i32) -> u64 {
    1u64 << (sig - 1)
}

/// Kernel `stack_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct StackT {
    pub sp: u64,
    pub flags: i32,
    pub pad: i32,
    pub size: u64,
}

impl StackT {
    /// No alternate stack (SS_DISABLE).
    pub const DISABLED: StackT = StackT {
        sp: 0,
        flags: 2,
        pad: 0,
        size: 0,
    };
}

/// prctl(2) options and values the runtime uses or emulates.
pub mod prctl {
    pub const PR_SET_PDEATHSIG: usize = 1;
    pub const PR_GET_PDEATHSIG: usize = 2;
    pub const PR_SET_NAME: usize = 15;
    pub const PR_GET_TSC: usize = 25;
    pub const PR_SET_TSC: usize = 26;
    pub const PR_TSC_SIGSEGV: usize = 2;
    pub const PR_SET_SYSCALL_USER_DISPATCH: usize = 59;
    pub const PR_SYS_DISPATCH_OFF: usize = 0;
    pub const PR_SYS_DISPATCH_ON: usize = 1;
}
