//! The picos runtime: the library OS that runs inside the picoprocess.
//!
//! It is built twice: for `x86_64-unknown-none` as the `picos-rt` binary that
//! the `picos` CLI embeds and starts, and for the host so that `cargo test`
//! exercises its pure logic and the CLI can print the syscall table.
//!
//! `unsafe` code lives only in `host` (raw syscalls), `arch` (assembly and the
//! signal-frame layout), `user` (program memory), `mem` (the runtime's
//! memory), `thread` (per-thread state), `signal` (kernel signal frames),
//! `loader` (mapping programs) and `rt` (start-up). The syscall semantics in
//! `sys` deny it.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod log;

pub mod arch;
pub mod errno;
pub mod host;
pub mod loader;
pub mod lock;
pub mod mem;
pub mod patch;
pub mod rt;
pub mod signal;
pub mod stats;
pub mod sys;
pub mod table;
pub mod table_types;
pub mod thread;
pub mod user;
pub mod vdso;
