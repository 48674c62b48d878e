//! Memory: the runtime's own (`runtime`: image, heap, per-thread stack
//! slots) and the program's (`user`: fault-safe copies in and out).
pub mod runtime;
pub mod user;
