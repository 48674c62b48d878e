//! execve(2): loading programs (`loader`).
pub mod loader;
