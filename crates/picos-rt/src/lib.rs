//! The picos runtime: the library OS that runs inside the picoprocess.
//!
//! It is built twice: for `x86_64-unknown-none` as the `picos-rt` binary that
//! the `picos` CLI embeds and starts, and for the host so that `cargo test`
//! exercises its pure logic and the CLI can print the syscall table.
//!
//! The modules are layers (docs/ARCHITECTURE.md, "Layers"); each may use
//! only the layers listed before it, which `tools/check_layers.py` checks:
//!
//! | layer | what it is |
//! |---|---|
//! | `host` | raw host system calls, errno, the Linux ABI's types and numbers |
//! | `arch` | x86-64: assembly stubs, CPU features, the signal-frame layout |
//! | `diag::log` | messages |
//! | `sync` | the runtime's ranked locks, fork hooks |
//! | `mm` | the runtime's own memory and the program's memory |
//! | `diag::stats` | `--stats` counters |
//! | `patch` | syscall-site decoding, trampolines, code writing |
//! | `kernel` | the library OS's state: threads, processes, signals, exec, files, time |
//! | `sys` | system call semantics: handlers (one file per family) and the syscall table |
//! | `diag::trace` | `--trace` lines |
//! | `entry` | entry from and exit to the program: trap, fast, direct, resume |
//! | `boot` | start-up |
//!
//! `unsafe` is denied here and allowed only in `host`, `arch` and `mm`
//! (each block with a `// SAFETY:` line).
#![no_std]
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod arch;
pub mod boot;
pub mod diag;
pub mod entry;
pub mod host;
pub mod kernel;
pub mod mm;
pub mod patch;
pub mod sync;
pub mod sys;
