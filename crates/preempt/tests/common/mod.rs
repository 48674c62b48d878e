pub mod glibc;
