//! /proc as the program's view: its own `/proc/self/maps` and
//! `/proc/self/smaps` (and the same under `/proc/PID`, `/proc/thread-self`,
//! `/proc/PID/task/TID`) opened under mounts list the program's mappings
//! only. The runtime's
//! (its image, its reservation with the heap, stacks and file views, the
//! patcher's trampoline regions: `mm::runtime::owns`) are left out.
//!
//! Linux makes the listing as it is read; this one is made at the open,
//! from the host's, and handed to the program as an anonymous file in the
//! same descriptor (a snapshot: mappings made after the open are not in
//! it; `fstat` shows a regular file with a size; the descriptor's /proc
//! link names a memfd). Other /proc files of the process (`smaps_rollup`,
//! `numa_maps`, `status`) are still the host's.
#![deny(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use alloc::vec::Vec;

/// Could a path the program opened name a maps file? (Only those are
/// checked further, by what the host opened.)
pub fn may_be_maps(path: &[u8]) -> bool {
    [&b"maps"[..], b"smaps"]
        .iter()
        .any(|n| path == *n || path.strip_suffix(*n).is_some_and(|p| p.ends_with(b"/")))
}

/// Might `path` (as the program gave it) name a file of a /proc
/// `fdinfo` directory (which shows descriptors' offsets), or the directory
/// (whose descriptor's `openat` would name one)?
pub fn may_be_fdinfo(path: &[u8]) -> bool {
    path.windows(6).any(|w| w == b"fdinfo")
}

/// The maps files a process has: `maps` and `smaps`.
fn maps_name(rest: &[u8]) -> Option<&[u8]> {
    rest.strip_suffix(b"/maps")
        .or_else(|| rest.strip_suffix(b"/smaps"))
}

/// Is the host object open at `fd` (the program's, just opened) this
/// process's maps or smaps file?
fn is_own_maps(fd: i32) -> bool {
    let Ok(link) = super::walk::fd_host_path(fd) else {
        return false;
    };
    let own = alloc::format!("/proc/{}", host::getpid());
    let Some(rest) = link.strip_prefix(own.as_bytes()) else {
        return false;
    };
    match maps_name(rest) {
        Some(b"") => true,
        // /proc/PID/task/TID/maps: a thread of this process.
        Some(dir) => dir
            .strip_prefix(b"/task/")
            .is_some_and(|tid| !tid.is_empty() && tid.iter().all(u8::is_ascii_digit)),
        None => false,
    }
}

/// The records of a maps or smaps listing for which `keep(start, end)`
/// holds: a record is a line that starts with an address range, and (in
/// smaps) the lines that follow it up to the next.
pub fn filter(listing: &[u8], keep: impl Fn(usize, usize) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(listing.len());
    let mut keeping = true;
    for line in listing.split_inclusive(|&c| c == b'\n') {
        let range = line.split(|&c| c == b' ').next().unwrap_or(b"");
        let mut ends = range.split(|&c| c == b'-');
        let parse = |h: Option<&[u8]>| {
            let h = h.filter(|h| !h.is_empty() && h.iter().all(u8::is_ascii_hexdigit))?;
            usize::from_str_radix(core::str::from_utf8(h).ok()?, 16).ok()
        };
        if let (Some(s), Some(e)) = (parse(ends.next()), parse(ends.next())) {
            keeping = keep(s, e);
        }
        if keeping {
            out.extend_from_slice(line);
        }
    }
    out
}

/// If `fd` (the program's, just opened for reading, close-on-exec as
/// `cloexec`) is this process's maps file, puts the program's view of it
/// in its place. Errors leave the host's file there.
pub fn replace_maps(fd: i32, cloexec: bool) {
    if !is_own_maps(fd) {
        return;
    }
    let r = (|| -> Result<(), Errno> {
        let mut listing = Vec::new();
        let mut chunk = alloc::vec![0u8; 16 << 10];
        loop {
            let n = host::pread(fd, &mut chunk, listing.len() as u64)?;
            if n == 0 {
                break;
            }
            listing.extend_from_slice(&chunk[..n]);
        }
        let view = filter(&listing, |s, e| {
            !crate::mm::runtime::owns(s, e.saturating_sub(s))
        });
        const MFD_CLOEXEC: u32 = 1;
        let m = host::memfd_create(c"maps", MFD_CLOEXEC)? as i32;
        let done = (|| -> Result<(), Errno> {
            // (pwrite: the descriptor's offset stays at the start.)
            let mut off = 0;
            while off < view.len() {
                match host::pwrite(m, &view[off..], off as u64)? {
                    0 => return Err(Errno::EIO),
                    n => off += n,
                }
            }
            let flags = if cloexec { host::O_CLOEXEC } else { 0 };
            host::dup3(m, fd, flags).map(|_| ())
        })();
        let _ = host::close(m);
        done
    })();
    if let Err(e) = r {
        crate::log!(Debug, "/proc maps view of descriptor {}: {}", fd, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_programs_lines() {
        let l = b"00400000-00401000 r-xp 00000000 08:01 12 /bin/x\n\
7f0000000000-7f0400000000 ---p 00000000 00:00 0 \n\
7ffd0000-7ffd1000 rw-p 00000000 00:00 0                          [stack]\n";
        let out = filter(l, |s, _| s != 0x7f00_0000_0000);
        assert_eq!(
            out,
            b"00400000-00401000 r-xp 00000000 08:01 12 /bin/x\n\
7ffd0000-7ffd1000 rw-p 00000000 00:00 0                          [stack]\n"
        );
        assert_eq!(filter(b"garbage\n", |_, _| false), b"garbage\n");
        // smaps: a record's lines go with it.
        let sm = b"00400000-00401000 r-xp 00000000 08:01 12 /bin/x\nSize: 4 kB\nRss: 4 kB\n\
7f0000000000-7f0400000000 ---p 00000000 00:00 0 \nSize: 16777216 kB\nVmFlags: mr mw\n\
7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\nSize: 4 kB\n";
        assert_eq!(
            filter(sm, |s, _| s != 0x7f00_0000_0000),
            b"00400000-00401000 r-xp 00000000 08:01 12 /bin/x\nSize: 4 kB\nRss: 4 kB\n\
7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\nSize: 4 kB\n"
        );
    }

    #[test]
    fn maps_names() {
        assert!(may_be_maps(b"/proc/self/maps"));
        assert!(may_be_maps(b"maps"));
        assert!(may_be_maps(b"/proc/self/smaps"));
        assert!(!may_be_maps(b"/proc/self/smaps_rollup"));
        assert!(!may_be_maps(b"/proc/self/numa_maps"));
        assert!(!may_be_maps(b"/proc/self/xmaps"));
    }
}
