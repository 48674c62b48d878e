//! Diagnostics: messages (`log`), `--stats` counters (`stats`),
//! `--trace` lines (`trace`) and `--perf-map` files (`perfmap`). `log` and `stats` sit low (everything may
//! report); `trace` sits above `sys`, whose table it prints from.
pub mod log;
pub mod perfmap;
pub mod stats;
pub mod trace;
