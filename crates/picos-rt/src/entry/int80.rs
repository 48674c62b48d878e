//! The 32-bit system call entry (`int $0x80`) used by a 64-bit program.
//!
//! Linux serves it from the i386 call table: the number in EAX, arguments in
//! EBX, ECX, EDX, ESI, EDI, EBP (32 bits each), the result in RAX, every
//! other register kept (RCX and R11 too, unlike `syscall`). Syscall User
//! Dispatch traps it like `syscall`, with `si_arch` = AUDIT_ARCH_I386.
//!
//! picos serves the i386 calls whose arguments mean the same as those of an
//! x86-64 call (integers, descriptors, strings, flat buffers, structures
//! with the same layout), by running that x86-64 call through the ordinary
//! dispatcher, so they are emulated or mediated exactly as the 64-bit call
//! is. The others (32-bit structure layouts: `stat`, `sigaction`, `iovec`,
//! `timespec`, ...; `mmap`, `clone`, `execve`, the 16-bit id calls) return
//! ENOSYS with a warning, as on a kernel built without IA32 emulation.
#![deny(unsafe_code)]

use crate::arch::{SigInfo, UContext};
use crate::kernel::thread::Thread;

/// `si_arch` of a trapped `int $0x80`.
pub const AUDIT_ARCH_I386: u32 = 0x4000_0003;

/// The architecture field of a Syscall User Dispatch SIGSYS.
pub fn arch_of(info: &SigInfo) -> u32 {
    u32::from_ne_bytes(info.0[28..32].try_into().unwrap())
}

/// Argument `i` is sign-extended from 32 bits (a signed offset).
const SIGNED1: u8 = 1 << 1;

/// i386 number, x86-64 number, sign-extended arguments.
const CALLS: &[(u32, u32, u8)] = &[
    (1, 60, 0),       // exit
    (3, 0, 0),        // read
    (4, 1, 0),        // write
    (5, 2, 0),        // open
    (6, 3, 0),        // close
    (8, 85, 0),       // creat
    (9, 86, 0),       // link
    (10, 87, 0),      // unlink
    (12, 80, 0),      // chdir
    (15, 90, 0),      // chmod
    (19, 8, SIGNED1), // lseek (compat_off_t)
    (20, 39, 0),      // getpid
    (29, 34, 0),      // pause
    (33, 21, 0),      // access
    (36, 162, 0),     // sync
    (37, 62, 0),      // kill
    (38, 82, 0),      // rename
    (39, 83, 0),      // mkdir
    (40, 84, 0),      // rmdir
    (41, 32, 0),      // dup
    (42, 22, 0),      // pipe
    (45, 12, 0),      // brk
    (57, 109, 0),     // setpgid
    (60, 95, 0),      // umask
    (63, 33, 0),      // dup2
    (64, 110, 0),     // getppid
    (65, 111, 0),     // getpgrp
    (66, 112, 0),     // setsid
    (83, 88, 0),      // symlink
    (85, 89, 0),      // readlink
    (91, 11, 0),      // munmap
    (94, 91, 0),      // fchmod
    (133, 81, 0),     // fchdir
    (158, 24, 0),     // sched_yield
    (183, 79, 0),     // getcwd
    (199, 102, 0),    // getuid32
    (200, 104, 0),    // getgid32
    (201, 107, 0),    // geteuid32
    (202, 108, 0),    // getegid32
    (213, 105, 0),    // setuid32
    (214, 106, 0),    // setgid32
    (224, 186, 0),    // gettid
    (238, 200, 0),    // tkill
    (252, 231, 0),    // exit_group
    (270, 234, 0),    // tgkill
    (295, 257, 0),    // openat
    (296, 258, 0),    // mkdirat
    (301, 263, 0),    // unlinkat
    (302, 264, 0),    // renameat
    (304, 266, 0),    // symlinkat
    (305, 267, 0),    // readlinkat
    (306, 268, 0),    // fchmodat
    (307, 269, 0),    // faccessat
    (330, 292, 0),    // dup3
    (331, 293, 0),    // pipe2
    (355, 318, 0),    // getrandom
    (356, 319, 0),    // memfd_create
    (359, 41, 0),     // socket
    (361, 49, 0),     // bind
    (362, 42, 0),     // connect
    (363, 50, 0),     // listen
    (364, 288, 0),    // accept4
    (373, 48, 0),     // shutdown
    (403, 228, 0),    // clock_gettime64 (a 64-bit timespec)
    (434, 434, 0),    // pidfd_open
    (436, 436, 0),    // close_range
    (437, 437, 0),    // openat2
    (439, 439, 0),    // faccessat2
];

/// The x86-64 call serving i386 call `nr`, and its sign-extended arguments.
pub fn translate(nr: u32) -> Option<(u32, u8)> {
    CALLS
        .binary_search_by_key(&nr, |&(n, _, _)| n)
        .ok()
        .map(|i| (CALLS[i].1, CALLS[i].2))
}

/// Serves the `int $0x80` call trapped in `uc`.
pub fn dispatch(t: &'static Thread, uc: &mut UContext) {
    let orig = uc.mcontext;
    let nr = orig.rax as u32;
    let Some((nr64, signed)) = translate(nr) else {
        crate::entry::dispatch::warn_unsupported_int80(nr);
        uc.mcontext.rax = crate::host::errno::Errno::ENOSYS.to_ret() as u64;
        return;
    };
    let regs = [orig.rbx, orig.rcx, orig.rdx, orig.rsi, orig.rdi, orig.rbp];
    let arg = |i: usize| {
        if signed & (1 << i) != 0 {
            regs[i] as u32 as i32 as i64 as u64
        } else {
            regs[i] as u32 as u64
        }
    };
    let m = &mut uc.mcontext;
    m.rax = nr64 as u64;
    (m.rdi, m.rsi, m.rdx, m.r10, m.r8, m.r9) = (arg(0), arg(1), arg(2), arg(3), arg(4), arg(5));
    crate::entry::dispatch::dispatch(t, uc);
    // Only RAX changes (and RIP, if the call is to run again: then with
    // the i386 number, for `int $0x80` to repeat it).
    let (rax, rip) = (uc.mcontext.rax, uc.mcontext.rip);
    uc.mcontext = orig;
    uc.mcontext.rip = rip;
    uc.mcontext.rax = if rip == orig.rip { rax } else { orig.rax };
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn table_sorted_and_known() {
        assert!(CALLS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(translate(20), Some((39, 0)));
        assert_eq!(translate(4), Some((1, 0)));
        assert_eq!(translate(11), None); // execve: 32-bit argv
        assert_eq!(translate(19), Some((8, SIGNED1)));
    }
}
