//! The library OS's state: threads, processes, signals, exec, files, time.
pub mod exec;
pub mod fs;
pub mod process;
pub mod ptrace;
pub mod seccomp;
pub mod signal;
pub mod thread;
pub mod time;
pub mod vm;
