//! Runtime diagnostics on the host's standard error, filtered by the
//! manifest's `loader.log_level`.
#![deny(unsafe_code)]

use crate::host;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};
pub use picos_abi::LogLevel;

static LEVEL: AtomicU8 = AtomicU8::new(LogLevel::Warning as u8);

pub fn set_level(l: LogLevel) {
    LEVEL.store(l as u8, Ordering::Relaxed);
}

#[inline(always)]
pub fn enabled(l: LogLevel) -> bool {
    (l as u8) <= LEVEL.load(Ordering::Relaxed) && l != LogLevel::None
}

/// What descriptor 2 was when the program started ([`note_stderr`]):
/// 0 not noted yet (the runtime's own start-up), 1 the file of
/// [`STDERR_FILE`], 2 closed.
static STDERR_STATE: AtomicU8 = AtomicU8::new(0);
/// The device and inode of that file.
static STDERR_FILE: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Notes what descriptor 2 is as the program starts (at start-up, and at
/// an execve in place): the runtime's messages go there, and only while
/// descriptor 2 is still that file. A program that closes its standard
/// error and opens a file, which then takes number 2 (a daemon's log or
/// database), must not find the runtime's warnings in it; one started
/// with its standard error closed gets none at all. (Natively nothing but
/// the program writes there.)
pub fn note_stderr() {
    match host::fstat(2) {
        Ok(st) => {
            STDERR_FILE[0].store(st.st_dev, Ordering::Relaxed);
            STDERR_FILE[1].store(st.st_ino, Ordering::Relaxed);
            STDERR_STATE.store(1, Ordering::Relaxed);
        }
        Err(_) => STDERR_STATE.store(2, Ordering::Relaxed),
    }
}

/// Is descriptor 2 still the standard error [`note_stderr`] saw? (One
/// fstat per message.)
fn stderr_unchanged() -> bool {
    match STDERR_STATE.load(Ordering::Relaxed) {
        0 => true,
        1 => host::fstat(2).is_ok_and(|st| {
            st.st_dev == STDERR_FILE[0].load(Ordering::Relaxed)
                && st.st_ino == STDERR_FILE[1].load(Ordering::Relaxed)
        }),
        _ => false,
    }
}

/// A fixed-size line buffer: formatting never allocates, so logging works in
/// any context (signal handlers, after a failed allocation).
pub struct LineBuf {
    buf: [u8; 1024],
    len: usize,
}

impl LineBuf {
    pub const fn new() -> Self {
        LineBuf {
            buf: [0; 1024],
            len: 0,
        }
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    /// Appends raw bytes, escaping non-printable ones, truncating with "...".
    pub fn push_escaped(&mut self, s: &[u8], max: usize) {
        for &b in s.iter().take(max) {
            let _ = match b {
                b'"' => self.write_str("\\\""),
                b'\\' => self.write_str("\\\\"),
                b'\n' => self.write_str("\\n"),
                b'\t' => self.write_str("\\t"),
                0x20..=0x7e => self.write_char(b as char),
                _ => write!(self, "\\x{:02x}", b),
            };
        }
        if s.len() > max {
            let _ = self.write_str("...");
        }
    }
    pub fn flush(&mut self) {
        if self.len == self.buf.len() {
            self.buf[self.len - 1] = b'\n';
        }
        if stderr_unchanged() {
            host::write_diagnostic(2, &self.buf[..self.len]);
        }
        self.len = 0;
    }
}

impl Default for LineBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl Write for LineBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Writes one log line (used by the `log!` macro).
pub fn log_line(level: LogLevel, args: fmt::Arguments<'_>) {
    let mut b = LineBuf::new();
    let tag = match level {
        LogLevel::Error => "error: ",
        LogLevel::Warning => "warning: ",
        _ => "",
    };
    let _ = writeln!(b, "picos: {}{}", tag, args);
    b.flush();
}

/// `log!(Warning, "fmt", args...)`.
#[macro_export]
macro_rules! log {
    ($lvl:ident, $($arg:tt)*) => {
        if $crate::diag::log::enabled($crate::diag::log::LogLevel::$lvl) {
            $crate::diag::log::log_line($crate::diag::log::LogLevel::$lvl, format_args!($($arg)*));
        }
    };
}

/// Displays a byte string (a path) lossily.
pub struct Bytes<'a>(pub &'a [u8]);

impl fmt::Display for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{fffd}")?;
            }
        }
        Ok(())
    }
}
