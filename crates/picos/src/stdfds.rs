//! The standard descriptors (0, 1 and 2) as the CLI was started with them.
//!
//! Rust's runtime opens `/dev/null` on each of them that is closed when the
//! process starts (so that its own output cannot land in a file opened
//! later), before `main` runs. `picos run` must hand the program the
//! descriptors it was given: natively a program started with its standard
//! input closed finds it closed (`<&-` in a shell, a daemon's check), and
//! the first file it opens gets descriptor 0. So a constructor records which
//! of them were closed before Rust's runtime reopens them (musl and glibc run
//! `.init_array` functions before `main`, and Rust's start-up runs from
//! `main`), and [`close_reopened`] closes Rust's `/dev/null` copies again
//! just before the execve of the runtime.

use std::sync::atomic::{AtomicU8, Ordering};

/// Bit N set: descriptor N was closed when the process started.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Records which standard descriptors are closed; runs before `main`.
extern "C" fn record_closed() {
    let mut closed = 0u8;
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads a descriptor's flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
        {
            closed |= 1 << fd;
        }
    }
    CLOSED_AT_START.store(closed, Ordering::Relaxed);
}

#[used]
#[link_section = ".init_array"]
static RECORD_CLOSED: extern "C" fn() = record_closed;

/// The standard descriptors that were closed when the process started.
pub fn closed_at_start() -> impl Iterator<Item = i32> {
    let closed = CLOSED_AT_START.load(Ordering::Relaxed);
    (0..3).filter(move |fd| closed & (1 << fd) != 0)
}

/// Closes the standard descriptors Rust's runtime opened on `/dev/null`
/// because they were closed at start, so that an execve passes them on
/// closed. Nothing may be written to them after this (Rust's standard
/// streams then meet EBADF, which they take as a sink).
pub fn close_reopened() {
    for fd in closed_at_start() {
        // SAFETY: the descriptor is Rust's runtime's `/dev/null`, which no
        // code of the CLI holds; closing it only makes its number free.
        unsafe { libc::close(fd) };
    }
}

/// Undoes [`close_reopened`] after a failed execve: `/dev/null` on those
/// descriptors again, so that what the CLI opens next cannot take their
/// numbers (its messages would land in that file).
pub fn reopen_closed() {
    for fd in closed_at_start() {
        // SAFETY: open(2) of a constant path, dup2 onto a standard
        // descriptor that no code of the CLI holds (it was closed by
        // `close_reopened`), and close of the spare copy.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            if null >= 0 && null != fd {
                libc::dup2(null, fd);
                libc::close(null);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// The constructor ran in this test process (the harness has its
    /// standard descriptors open: none recorded closed).
    #[test]
    fn the_standard_descriptors_of_a_test_run_were_open() {
        assert_eq!(super::closed_at_start().count(), 0);
    }
}
