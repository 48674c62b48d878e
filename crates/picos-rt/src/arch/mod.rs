//! The machine: only x86-64 today.
pub mod x86_64;
pub use x86_64::*;
