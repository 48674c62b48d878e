//! Preemptible functions: call a function under a time budget; if it does not
//! return in time it is paused, and the caller gets a continuation it can
//! resume (with a new budget) or cancel.
//!
//! ```no_run
//! use preempt::{launch, Outcome};
//!
//! // Runs for at most 1 ms.
//! match launch(|| (0..u64::MAX).sum::<u64>(), 1_000).unwrap() {
//!     Outcome::Done(sum) => println!("{sum}"),
//!     Outcome::Pending(mut cont) => {
//!         // Give it another 1 ms ...
//!         let _ = cont.resume(1_000);
//!         // ... then give up. SAFETY: the sum shares nothing with anyone.
//!         unsafe { cont.cancel() };
//!     }
//! }
//! ```
//!
//! Design, guarantees and limits: docs/PREEMPT.md in the repository. In
//! short:
//!
//! * each function runs on its own mmap'd stack (guard page, pooled), entered
//!   by a hand-written context switch (`arch`);
//! * the budget is a per-thread one-shot POSIX timer delivering one real-time
//!   signal ([`signal_number`]) to that thread; the handler switches to the
//!   caller from inside the handler, so the kernel's signal frame keeps the
//!   function's full register state (`engine`);
//! * code that must not be interrupted (the allocator, and anything you wrap
//!   in [`nonpreemptible`]) defers a preemption to its end;
//! * [`Continuation::cancel`] returns the stack to the pool and frees the
//!   blocks the function allocated through the crate's hooks (`alloc`).
//!
//! The C API is in `include/preempt.h` (module `ffi`).

#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
compile_error!("preempt supports x86-64 Linux only");

mod alloc;
mod arch;
mod engine;
pub mod ffi;
pub mod libset;
mod stack;
mod sys;

pub use alloc::PreemptAlloc;
pub use engine::{
    delay_handler_tail_for_tests, in_preemptible, launch, pause, signal_number, stats,
    timer_lead_ns, Continuation, NonPreemptible, Outcome, Reason, Stats, NO_TIMEOUT,
};
pub use stack::STACK_SIZE;

/// Installed only with the `global-allocator` feature (off by default: the
/// final program chooses; see [`PreemptAlloc`]).
#[cfg(feature = "global-allocator")]
#[global_allocator]
static GLOBAL: PreemptAlloc = PreemptAlloc::system();

use std::any::Any;
use std::fmt;

/// Errors of the preemptible-function calls.
#[derive(Debug)]
pub enum Error {
    /// The function panicked; the payload. Its continuation is poisoned.
    Panicked(Box<dyn Any + Send + 'static>),
    /// `resume` on a continuation whose function panicked.
    Poisoned,
    /// `resume` on a continuation whose function already returned.
    Finished,
    /// `launch` or `resume` from inside a preemptible function (nesting is
    /// not supported).
    Nested,
    /// `pause` outside a preemptible function.
    NotInFunction,
    /// A continuation used on a thread other than the one that launched it.
    WrongThread,
    /// The global allocator is not a [`PreemptAlloc`], so an allocation
    /// inside a function could be preempted with the allocator's lock held.
    AllocatorNotInstalled,
    /// More threads than the crate has slots for use preemptible functions.
    TooManyThreads,
    /// A system call failed (errno).
    Os(i32),
    /// Library copies could not be made or used ([`libset`]); what went
    /// wrong.
    Libset(String),
}

impl Error {
    /// The panic message, if the error is a panic with a string payload.
    pub fn panic_message(&self) -> Option<&str> {
        match self {
            Error::Panicked(p) => p
                .downcast_ref::<&'static str>()
                .copied()
                .or_else(|| p.downcast_ref::<String>().map(String::as_str)),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Panicked(_) => match self.panic_message() {
                Some(m) => write!(f, "preemptible function panicked: {m}"),
                None => write!(f, "preemptible function panicked"),
            },
            Error::Poisoned => write!(f, "continuation is poisoned (its function panicked)"),
            Error::Finished => write!(f, "continuation already finished"),
            Error::Nested => write!(
                f,
                "cannot launch or resume from inside a preemptible function"
            ),
            Error::NotInFunction => write!(f, "not inside a preemptible function"),
            Error::WrongThread => write!(f, "continuation belongs to another thread"),
            Error::AllocatorNotInstalled => {
                write!(f, "the global allocator is not preempt::PreemptAlloc (enable preempt's `global-allocator` feature, or install it with #[global_allocator])")
            }
            Error::TooManyThreads => write!(f, "too many threads use preemptible functions"),
            Error::Libset(m) => write!(f, "libsets: {m}"),
            Error::Os(e) => write!(
                f,
                "system call failed: {}",
                std::io::Error::from_raw_os_error(*e)
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Lets `cont`'s function run again for at most `timeout_us` microseconds;
/// see [`Continuation::resume`].
pub fn resume<T>(cont: &mut Continuation<T>, timeout_us: u64) -> Result<Option<T>, Error> {
    cont.resume(timeout_us)
}

/// Discards `cont`'s function; see [`Continuation::cancel`].
///
/// # Safety
/// As for [`Continuation::cancel`].
pub unsafe fn cancel<T>(cont: Continuation<T>) -> usize {
    // SAFETY: forwarded contract.
    unsafe { cont.cancel() }
}

/// Runs `f` as a non-preemptible region: a timer expiry during it is
/// deferred to its end. Wrap calls into code that is not reentrant and that
/// the caller might also use while the function is suspended: `println!` and
/// other locked I/O, C libraries with global state, and so on. (Allocation
/// needs no wrapping: the allocator hooks do it.)
pub fn nonpreemptible<R>(f: impl FnOnce() -> R) -> R {
    let _g = NonPreemptible::enter();
    f()
}
