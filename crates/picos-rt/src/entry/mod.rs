//! Entry from the program and exit back to it: the trap entry (`trap`:
//! the host's signal handlers, SIGSYS first), the fast entries of patched
//! sites (`fast`), the dispatcher both use (`dispatch`), 32-bit `int $0x80`
//! calls (`int80`), and the first return of a new thread.
#![deny(unsafe_code)]

pub mod dispatch;
pub mod fast;
pub mod int80;
pub mod trap;

use crate::host;
use crate::kernel::thread;

/// Makes the assembly stubs call into this layer (before any can run).
pub fn install() {
    crate::arch::set_upcalls(&crate::arch::Upcalls {
        fast_syscall: fast::picos_fast_syscall,
        direct_finish: fast::picos_direct_finish,
        fast_defer: fast::picos_fast_defer,
        resume_deliver: fast::picos_resume_deliver,
        clone_child,
    });
}

/// First code a `CLONE_VM` child runs (called by the `picos_clone` stub
/// with the stack `kernel::thread::prepare_child` made).
extern "C" fn clone_child(sp: usize) -> ! {
    let Some((t, uc)) = thread::child_frame(sp) else {
        crate::log!(Error, "a new thread found no runtime state on its stack");
        host::exit_group(127);
    };
    thread::install(t, false);
    if let Err(e) = thread::arm_dispatch() {
        crate::log!(
            Error,
            "cannot arm Syscall User Dispatch in a new thread: {}",
            e
        );
        host::exit_group(127);
    }
    crate::arch::sigreturn_to(uc)
}
