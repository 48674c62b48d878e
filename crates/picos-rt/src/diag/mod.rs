//! Diagnostics: messages (`log`), `--stats` counters (`stats`) and
//! `--trace` lines (`trace`). `log` and `stats` sit low (everything may
//! report); `trace` sits above `sys`, whose table it prints from.
pub mod log;
pub mod stats;
pub mod trace;
