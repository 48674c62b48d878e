//! Memory: the runtime's own (`runtime`: image, heap, per-thread stack
//! slots, code regions; `area`: the per-thread state at the top of each
//! slot; `shared`: the tree's shared board) and the program's (`user`: fault-safe copies in and out).
pub mod area;
pub mod runtime;
pub mod shared;
pub mod user;
