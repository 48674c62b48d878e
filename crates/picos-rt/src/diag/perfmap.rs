//! `picos run --perf-map`: a perf map file, `/tmp/perf-PID.map`, naming the
//! runtime's functions where this process's runtime image lies. It is the
//! format perf reads for code it finds no symbols for (JIT compilers write
//! it): the runtime runs from a sealed memfd, which perf cannot open, so
//! without it every sample in the runtime is an unknown address.
//!
//! The CLI writes the table once (`OFFSET SIZE NAME` lines, hexadecimal,
//! offsets from the image's first byte: `picos`'s build.rs reads them from
//! the runtime's own build) and names it in the launch configuration. Each
//! process of the tree writes its own map: at start-up (`boot`), in a
//! forked child (same addresses, another pid: `kernel::process::fork`), and
//! after execve (a new runtime at a new address, same pid: the map is
//! written again).
#![deny(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use alloc::vec::Vec;
use core::fmt::Write as _;

/// At start-up, if `table` (the launch configuration's `perf_map`) names
/// the runtime's symbol table: the runtime's text becomes anonymous memory
/// (`mm::runtime::text_as_anonymous`: perf reads a perf map for nothing
/// else), then the map is written.
pub fn at_start(table: &[u8]) {
    if table.is_empty() {
        return;
    }
    if let Err(e) = crate::mm::runtime::text_as_anonymous() {
        crate::log!(
            Warning,
            "--perf-map: cannot move the runtime's text to anonymous memory ({}): perf will not name its functions",
            e
        );
    }
    write(table);
}

/// Writes this process's perf map from the symbol table at `table`, if
/// any (empty: none asked for); a failure is reported and changes nothing
/// else.
pub fn write(table: &[u8]) {
    if table.is_empty() {
        return;
    }
    if let Err(e) = try_write(table) {
        crate::log!(
            Warning,
            "cannot write the perf map /tmp/perf-{}.map: {}",
            host::getpid(),
            e
        );
    }
}

fn try_write(table: &[u8]) -> Result<(), Errno> {
    let text = read_file(table)?;
    let (base, _) = crate::mm::runtime::image_range();
    let map = map_lines(&text, base);
    let mut path = alloc::string::String::new();
    let _ = write!(path, "/tmp/perf-{}.map\0", host::getpid());
    let path = core::ffi::CStr::from_bytes_with_nul(path.as_bytes()).map_err(|_| Errno::EINVAL)?;
    let fd = host::openat(
        host::AT_FDCWD,
        path,
        host::O_WRONLY | host::O_CREAT | host::O_TRUNC | host::O_CLOEXEC,
        0o644,
    )? as i32;
    let r = host::write_all(fd, &map);
    let _ = host::close(fd);
    r
}

/// The table at `path` (not NUL-terminated), whole.
fn read_file(path: &[u8]) -> Result<Vec<u8>, Errno> {
    let fd = host::open_path(path, host::O_RDONLY | host::O_CLOEXEC, 0)? as i32;
    let r = host::read_to_end(fd);
    let _ = host::close(fd);
    r
}

/// The perf map's lines for the table `text` with the image at `base`:
/// `START SIZE NAME`, the offset turned into an address. Lines that do not
/// parse are left out.
fn map_lines(text: &[u8], base: usize) -> Vec<u8> {
    let mut out = alloc::string::String::with_capacity(text.len() + text.len() / 4);
    for line in text.split(|&c| c == b'\n') {
        let mut parts = line.splitn(2, |&c| c == b' ');
        let (Some(off), Some(rest)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (Some(off), Ok(rest)) = (host::parse_hex(off), core::str::from_utf8(rest)) else {
            continue;
        };
        // `SIZE NAME`: a hexadecimal size and a name.
        let well_formed = rest.split_once(' ').is_some_and(|(size, name)| {
            host::parse_hex(size.as_bytes()).is_some() && !name.is_empty()
        });
        if !well_formed {
            continue;
        }
        let _ = writeln!(out, "{:x} {}", base + off, rest);
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_addresses() {
        let table = b"18650 3e __rustc::rust_begin_unwind\n18a90 88 picos_rt_start\nbad line\nbad 3e\nzz 3e name\n\n";
        let map = map_lines(table, 0x7f00_0000_0000);
        assert_eq!(
            core::str::from_utf8(&map).unwrap(),
            "7f0000018650 3e __rustc::rust_begin_unwind\n7f0000018a90 88 picos_rt_start\n"
        );
    }

    #[test]
    fn hex() {
        assert_eq!(host::parse_hex(b"ff"), Some(255));
        assert_eq!(host::parse_hex(b""), None);
        assert_eq!(host::parse_hex(b"xyz"), None);
        assert_eq!(host::parse_hex(b"11111111111111111"), None);
    }
}
