//! /proc as the program's view: its own `/proc/self/maps` and
//! `/proc/self/smaps` (and the same under `/proc/PID`, `/proc/thread-self`,
//! `/proc/PID/task/TID`) opened under mounts list the program's mappings
//! only. The runtime's
//! (its image, its reservation with the heap, stacks and file views, the
//! patcher's trampoline regions: `mm::runtime::owns`) are left out. Its
//! `mounts` and `mountinfo` (`/proc/mounts` is a link to the former) list
//! the manifest's mounts at their guest paths, each as the bind mount of
//! its host directory that it is (the host's mount of that directory gives
//! the device, type and options), instead of the host's mount tree. Its
//! `status`, `stat` and `statm` give the memory figures less the runtime's
//! mappings.
//!
//! Linux makes the listing as it is read; this one is made at the open,
//! from the host's, and handed to the program as an anonymous file in the
//! same descriptor (a snapshot: mappings made after the open are not in
//! it; `fstat` shows a regular file with a size; the descriptor's /proc
//! link names a memfd). Other /proc files of the process (`smaps_rollup`,
//! `numa_maps`) are still the host's.
#![deny(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use alloc::vec::Vec;

/// The files of a process's /proc directory the library OS shows its own
/// view of.
const VIEWS: [&[u8]; 7] = [
    b"maps",
    b"smaps",
    b"mounts",
    b"mountinfo",
    b"status",
    b"stat",
    b"statm",
];

/// Could a path the program opened name one of the /proc files it sees its
/// own view of (maps, smaps, mounts, mountinfo)? (Only those are checked
/// further, by what the host opened.)
pub fn may_be_view(path: &[u8]) -> bool {
    VIEWS
        .iter()
        .any(|n| path == *n || path.strip_suffix(*n).is_some_and(|p| p.ends_with(b"/")))
}

/// Might `path` (as the program gave it) name a file of a /proc
/// `fdinfo` directory (which shows descriptors' offsets), or the directory
/// (whose descriptor's `openat` would name one)?
pub fn may_be_fdinfo(path: &[u8]) -> bool {
    path.windows(6).any(|w| w == b"fdinfo")
}

/// Which view a process's /proc file gets.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum View {
    /// maps or smaps: the program's mappings.
    Maps,
    /// mounts: the manifest's mounts.
    Mounts,
    /// mountinfo: the same, in that format.
    MountInfo,
    /// status: the memory figures without the runtime's mappings.
    Status,
    /// stat: the same for its `vsize` and `rss`.
    Stat,
    /// statm: the same for its sizes.
    Statm,
}

/// The view of `rest`, a path below this process's /proc directory (`""`
/// for the directory itself): `/maps`, `/task/TID/smaps`, ...
fn view_of(rest: &[u8]) -> Option<View> {
    let (dir, view) = [
        (&b"/maps"[..], View::Maps),
        (b"/smaps", View::Maps),
        (b"/mounts", View::Mounts),
        (b"/mountinfo", View::MountInfo),
        (b"/status", View::Status),
        (b"/statm", View::Statm),
        (b"/stat", View::Stat),
    ]
    .iter()
    .find_map(|(n, v)| rest.strip_suffix(*n).map(|d| (d, *v)))?;
    // /proc/PID/task/TID/...: a thread of this process.
    let thread = |d: &[u8]| {
        d.strip_prefix(b"/task/")
            .is_some_and(|tid| !tid.is_empty() && tid.iter().all(u8::is_ascii_digit))
    };
    (dir.is_empty() || thread(dir)).then_some(view)
}

/// Which view the host object open at `fd` (the program's, just opened)
/// gets, if it is one of this process's /proc files that have one.
fn own_view(fd: i32) -> Option<View> {
    let link = super::walk::fd_host_path(fd).ok()?;
    let own = alloc::format!("/proc/{}", host::getpid());
    view_of(link.strip_prefix(own.as_bytes())?)
}

/// The records of a maps or smaps listing for which `keep(start, end)`
/// holds: a record is a line that starts with an address range, and (in
/// smaps) the lines that follow it up to the next.
/// The `START-END` range (hexadecimal) that begins a /proc/PID/maps or
/// smaps line's first field `field`; None if it is not one.
pub fn parse_range(field: &[u8]) -> Option<(usize, usize)> {
    let dash = field.iter().position(|&b| b == b'-')?;
    Some((
        host::parse_hex(&field[..dash])?,
        host::parse_hex(&field[dash + 1..])?,
    ))
}

/// `(start, end, name)` of a /proc/PID/maps line (the name, which may
/// hold spaces, empty when there is none); None for anything else.
pub fn parse_maps_line(line: &[u8]) -> Option<(usize, usize, &[u8])> {
    let sp = line.iter().position(|&b| b == b' ')?;
    let (start, end) = parse_range(&line[..sp])?;
    if end <= start {
        return None;
    }
    // Five fields (range, perms, offset, device, inode), then the name
    // after spaces, if any.
    let mut rest = line;
    for field in 0..5 {
        let Some(i) = rest.iter().position(|&b| b == b' ') else {
            // The inode ends the line: no name.
            return (field == 4).then_some((start, end, &[][..]));
        };
        rest = &rest[i + 1..];
        while rest.first() == Some(&b' ') {
            rest = &rest[1..];
        }
    }
    Some((start, end, rest))
}

pub fn filter(listing: &[u8], keep: impl Fn(usize, usize) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(listing.len());
    let mut keeping = true;
    for line in listing.split_inclusive(|&c| c == b'\n') {
        let range = line.split(|&c| c == b' ').next().unwrap_or(b"");
        if let Some((s, e)) = parse_range(range) {
            keeping = keep(s, e);
        }
        if keeping {
            out.extend_from_slice(line);
        }
    }
    out
}

/// What some mappings of a process take, in kB (from its smaps).
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Their sizes.
    size: u64,
    /// Their resident pages.
    rss: u64,
    /// ... of which anonymous.
    anon: u64,
    /// ... of which of shared memory files (tmpfs, memfd).
    shmem: u64,
    /// The sizes of the private writable ones (VmData's).
    data: u64,
}

/// What the mappings of `smaps` (a /proc smaps listing) for which
/// `pick(start, end)` holds take.
pub fn usage(smaps: &[u8], pick: impl Fn(usize, usize) -> bool) -> Usage {
    let mut u = Usage::default();
    let mut picked = false;
    let mut shmem_file = false;
    let mut rss = 0;
    let mut anon = 0;
    let kb = |line: &[u8]| -> u64 {
        line.split(|&c| c == b' ')
            .filter(|w| !w.is_empty())
            .nth(1)
            .and_then(|w| core::str::from_utf8(w).ok()?.parse().ok())
            .unwrap_or(0)
    };
    let end_record = |u: &mut Usage, picked: bool, shmem_file: bool, rss: u64, anon: u64| {
        if picked {
            u.rss += rss;
            u.anon += anon;
            if shmem_file {
                u.shmem += rss - anon.min(rss);
            }
        }
    };
    for line in smaps.split(|&c| c == b'\n') {
        let mut words = line.split(|&c| c == b' ').filter(|w| !w.is_empty());
        let first = words.next().unwrap_or(b"");
        if let Some((s, e)) = parse_range(first) {
            end_record(&mut u, picked, shmem_file, rss, anon);
            (rss, anon) = (0, 0);
            picked = pick(s, e);
            let perms = words.next().unwrap_or(b"");
            let name = words.nth(3).unwrap_or(b"");
            shmem_file = name.starts_with(b"/memfd:") || name.starts_with(b"/dev/shm/");
            if picked {
                u.size += ((e - s) >> 10) as u64;
                if perms.get(1) == Some(&b'w') && perms.get(3) == Some(&b'p') {
                    u.data += ((e - s) >> 10) as u64;
                }
            }
        } else if first == b"Rss:" {
            rss = kb(line);
        } else if first == b"Anonymous:" {
            anon = kb(line);
        }
    }
    end_record(&mut u, picked, shmem_file, rss, anon);
    u
}

/// /proc's `status` without what `rt` takes: VmPeak and VmSize less its
/// size, VmHWM and VmRSS less its resident pages (split into RssAnon,
/// RssFile, RssShmem), VmData less its private writable mappings.
pub fn status_without(status: &[u8], rt: &Usage) -> Vec<u8> {
    let mut out = Vec::with_capacity(status.len());
    for line in status.split_inclusive(|&c| c == b'\n') {
        let key = line.split(|&c| c == b':').next().unwrap_or(b"");
        let less = match key {
            b"VmPeak" | b"VmSize" => rt.size,
            b"VmHWM" | b"VmRSS" => rt.rss,
            b"RssAnon" => rt.anon,
            b"RssShmem" => rt.shmem,
            b"RssFile" => rt.rss - rt.anon.min(rt.rss) - rt.shmem.min(rt.rss - rt.anon.min(rt.rss)),
            b"VmData" => rt.data,
            _ => {
                out.extend_from_slice(line);
                continue;
            }
        };
        let value: u64 = line[key.len() + 1..]
            .split(|&c| c == b' ' || c == b'\t' || c == b'\n')
            .find(|w| !w.is_empty())
            .and_then(|w| core::str::from_utf8(w).ok()?.parse().ok())
            .unwrap_or(0);
        out.extend_from_slice(
            alloc::format!(
                "{}:\t{:8} kB\n",
                core::str::from_utf8(key).unwrap_or(""),
                value.saturating_sub(less)
            )
            .as_bytes(),
        );
    }
    out
}

/// /proc's `stat` without what `rt` takes: its `vsize` (field 23, bytes)
/// and `rss` (field 24, pages).
pub fn stat_without(stat: &[u8], rt: &Usage) -> Vec<u8> {
    // The fields after the command's name, which is in parentheses and may
    // hold anything.
    let Some(close) = stat.iter().rposition(|&c| c == b')') else {
        return stat.to_vec();
    };
    let (head, tail) = stat.split_at(close + 1);
    let mut out = head.to_vec();
    // tail: " S ppid ..." : field 3 is its first word.
    for (i, w) in tail.split(|&c| c == b' ').enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        let field = i + 2;
        let less = match field {
            23 => rt.size << 10,
            24 => rt.rss >> 2,
            _ => {
                out.extend_from_slice(w);
                continue;
            }
        };
        push_less(&mut out, w, less);
    }
    out
}

/// Appends field `w` of a /proc listing to `out` with its leading number
/// less `less` (not below 0); a field without one is copied as it is.
fn push_less(out: &mut Vec<u8>, w: &[u8], less: u64) {
    let (digits, rest) = w.split_at(w.iter().take_while(|c| c.is_ascii_digit()).count());
    match core::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
    {
        Some(v) => out.extend_from_slice(alloc::format!("{}", v.saturating_sub(less)).as_bytes()),
        None => out.extend_from_slice(digits),
    }
    out.extend_from_slice(rest);
}

/// /proc's `statm` (pages: size resident shared text lib data dt) without
/// what `rt` takes.
pub fn statm_without(statm: &[u8], rt: &Usage) -> Vec<u8> {
    let less = [
        rt.size >> 2,
        rt.rss >> 2,
        (rt.rss - rt.anon.min(rt.rss)) >> 2,
        0,
        0,
        rt.data >> 2,
        0,
    ];
    let mut out = Vec::with_capacity(statm.len());
    for (i, w) in statm.split(|&c| c == b' ').enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        push_less(&mut out, w, less.get(i).copied().unwrap_or(0));
    }
    out
}

/// The whole content of this process's host /proc file `name`.
fn read_own(name: &str) -> Result<Vec<u8>, Errno> {
    let path = alloc::format!("/proc/{}/{name}\0", host::getpid());
    let c = core::ffi::CStr::from_bytes_with_nul(path.as_bytes()).map_err(|_| Errno::EINVAL)?;
    let m = host::openat(host::AT_FDCWD, c, host::O_RDONLY | host::O_CLOEXEC, 0)?;
    let r = host::read_to_end(m as i32);
    let _ = host::close(m as i32);
    r
}

/// If `fd` (the program's, just opened for reading, close-on-exec as
/// `cloexec`) is one of this process's /proc files that have a view (maps,
/// smaps, mounts, mountinfo), puts the program's view of it in its place.
/// Errors leave the host's file there.
pub fn replace_view(fd: i32, cloexec: bool) {
    let Some(kind) = own_view(fd) else {
        return;
    };
    let r = (|| -> Result<(), Errno> {
        let listing = host::read_to_end(fd)?;
        let view = match kind {
            View::Maps => filter(&listing, |s, e| {
                !crate::mm::runtime::owns(s, e.saturating_sub(s))
            }),
            View::Status | View::Stat | View::Statm => {
                let rt = usage(&read_own("smaps")?, |s, e| {
                    crate::mm::runtime::owns(s, e.saturating_sub(s))
                });
                match kind {
                    View::Status => status_without(&listing, &rt),
                    View::Stat => stat_without(&listing, &rt),
                    _ => statm_without(&listing, &rt),
                }
            }
            View::Mounts | View::MountInfo => {
                // The host's mountinfo, whichever of the two was opened.
                let info = read_own("mountinfo");
                let fds = crate::kernel::thread::current().fd_table.get();
                let dev = |i: usize| {
                    let root = super::mount::root_fd(fds, i);
                    host::statx(root as isize, c"", host::AT_EMPTY_PATH, 0)
                        .ok()
                        .map(|s| alloc::format!("{}:{}", s.dev_major(), s.dev_minor()).into_bytes())
                };
                mounts_listing(&info?, super::mount::table(), &dev, kind == View::MountInfo)
            }
        };
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
            // Reopened with the program's access mode and status flags
            // (O_RDONLY, O_NONBLOCK, ...: what F_GETFL shows), not the
            // memfd's O_RDWR.
            const F_GETFL: i32 = 3;
            const KEEP: usize = !(host::O_CREAT
                | host::O_EXCL
                | host::O_TRUNC
                | host::O_NOFOLLOW
                | host::O_DIRECTORY
                | host::O_CLOEXEC) as usize;
            let fl = host::fcntl(fd, F_GETFL, 0)? & KEEP;
            let path = alloc::format!("/proc/self/fd/{m}\0");
            let c =
                core::ffi::CStr::from_bytes_with_nul(path.as_bytes()).map_err(|_| Errno::EINVAL)?;
            let r = host::openat(host::AT_FDCWD, c, fl as i32 | host::O_CLOEXEC, 0)? as i32;
            let flags = if cloexec { host::O_CLOEXEC } else { 0 };
            let done = host::dup3(r, fd, flags).map(|_| ());
            let _ = host::close(r);
            done
        })();
        let _ = host::close(m);
        done
    })();
    if let Err(e) = r {
        crate::log!(Debug, "/proc maps view of descriptor {}: {}", fd, e);
    }
}

/// One line of the host's mountinfo.
pub struct HostMount {
    /// `MAJ:MIN`.
    pub dev: Vec<u8>,
    /// The mounted directory within its file system (unescaped).
    pub root: Vec<u8>,
    /// Where it is mounted (unescaped).
    pub point: Vec<u8>,
    /// The mount's options (`rw,relatime`).
    pub opts: Vec<u8>,
    /// The file system's type, source and options (escaped, as given).
    pub fstype: Vec<u8>,
    pub source: Vec<u8>,
    pub super_opts: Vec<u8>,
}

/// Parses the host's mountinfo (lines it cannot read are skipped). Also
/// the CLI's (`sandbox::mount_shortcuts`).
pub fn parse_mountinfo(info: &[u8]) -> Vec<HostMount> {
    let mut out = Vec::new();
    for line in info.split(|&c| c == b'\n') {
        let fields: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == b"-") else {
            continue;
        };
        if dash < 6 || fields.len() < dash + 4 {
            continue;
        }
        out.push(HostMount {
            dev: fields[2].to_vec(),
            root: unescape(fields[3]),
            point: unescape(fields[4]),
            opts: fields[5].to_vec(),
            fstype: fields[dash + 1].to_vec(),
            source: fields[dash + 2].to_vec(),
            super_opts: fields[dash + 3].to_vec(),
        });
    }
    out
}

/// A path as /proc writes it (`\ooo` for space, tab, newline, backslash).
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let oct = s
            .get(i + 1..i + 4)
            .filter(|o| o.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (s[i], oct) {
            (b'\\', Some(o)) => {
                v.push((o[0] - b'0') * 64 + (o[1] - b'0') * 8 + (o[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                v.push(c);
                i += 1;
            }
        }
    }
    v
}

/// `unescape`'s inverse, as Linux's `seq_path` escapes.
fn escape(s: &[u8], out: &mut Vec<u8>) {
    for &c in s {
        if matches!(c, b' ' | b'\t' | b'\n' | b'\\') {
            out.extend_from_slice(&[
                b'\\',
                b'0' + (c >> 6),
                b'0' + ((c >> 3) & 7),
                b'0' + (c & 7),
            ]);
        } else {
            out.push(c);
        }
    }
}

/// `opts` (a mount's options, `rw,...` or `ro,...`) with its first option
/// `ro` if `readonly`.
fn with_access(opts: &[u8], readonly: bool) -> Vec<u8> {
    let rest = opts
        .strip_prefix(b"rw")
        .or_else(|| opts.strip_prefix(b"ro"))
        .filter(|r| r.is_empty() || r[0] == b',')
        .unwrap_or(opts);
    let ro = readonly || opts.starts_with(b"ro") && (opts.len() == 2 || opts[2] == b',');
    [if ro { &b"ro"[..] } else { b"rw" }, rest].concat()
}

/// The program's mounts (`table`: root first) as /proc's `mounts`
/// (`info` false) or `mountinfo` lists them: each as a bind mount of its
/// host directory, whose host mount (from the host's mountinfo `host`)
/// gives its device, type, source and options; a tmpfs or an overlay as
/// itself (`dev` gives its device number, `MAJ:MIN`; an overlay's options
/// name its lower directory). Mount ids count from 1 in table order; the
/// root's parent is 0 (outside the listing, as Linux shows a namespace's
/// root).
pub fn mounts_listing(
    host: &[u8],
    table: &[super::mount::Mount],
    dev: &dyn Fn(usize) -> Option<Vec<u8>>,
    info: bool,
) -> Vec<u8> {
    let hosts = parse_mountinfo(host);
    let mut out = Vec::new();
    for (i, m) in table.iter().enumerate() {
        let own;
        let h = if m.detached() {
            let Some(dev) = dev(i) else { continue };
            let (name, super_opts): (&[u8], Vec<u8>) = match m.kind {
                picos_abi::MountKind::Overlay => {
                    let mut o = b"rw,lowerdir=".to_vec();
                    escape(&m.host, &mut o);
                    (b"overlay", o)
                }
                _ => (b"tmpfs", b"rw".to_vec()),
            };
            own = HostMount {
                dev,
                root: b"/".to_vec(),
                point: Vec::new(),
                opts: b"rw,relatime".to_vec(),
                fstype: name.to_vec(),
                source: name.to_vec(),
                super_opts,
            };
            &own
        } else {
            // The topmost host mount that shows the directory.
            let Some(h) = hosts
                .iter()
                .filter(|h| super::mount::covers(&h.point, &m.host))
                .max_by_key(|h| h.point.len())
            else {
                continue;
            };
            h
        };
        let opts = with_access(&h.opts, m.readonly);
        if info {
            let parent = if m.guest == b"/" {
                0
            } else {
                let mut up = m.guest.clone();
                super::pop(&mut up);
                picos_abi::deepest_mount(table, &up, None).map_or(0, |p| p + 1)
            };
            let mut root = h.root.clone();
            if let Some(rest) = picos_abi::rest_after(&h.point, &m.host).filter(|_| !m.detached()) {
                root = picos_abi::join_rest(&root, rest);
            }
            out.extend_from_slice(alloc::format!("{} {} ", i + 1, parent).as_bytes());
            out.extend_from_slice(&h.dev);
            out.push(b' ');
            escape(&root, &mut out);
            out.push(b' ');
            escape(&m.guest, &mut out);
            out.push(b' ');
            out.extend_from_slice(&opts);
            out.extend_from_slice(b" - ");
            out.extend_from_slice(&[&h.fstype[..], b" ", &h.source, b" ", &h.super_opts].concat());
        } else {
            // /proc/mounts: the source, the type, and the mount's options
            // then the file system's, without its own rw/ro.
            out.extend_from_slice(&h.source);
            out.push(b' ');
            escape(&m.guest, &mut out);
            out.push(b' ');
            out.extend_from_slice(&h.fstype);
            out.push(b' ');
            out.extend_from_slice(&opts);
            let sup = with_access(&h.super_opts, false);
            let sup = &sup[2..];
            out.extend_from_slice(sup);
            out.extend_from_slice(b" 0 0");
        }
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let cases: [(&[u8], Option<(usize, usize, &[u8])>); 7] = [
            (
                b"7ffd1c2a0000-7ffd1c2c1000 rw-p 00000000 00:00 0                          [stack]",
                Some((0x7ffd1c2a0000, 0x7ffd1c2c1000, b"[stack]")),
            ),
            (
                b"55d0c0a00000-55d0c0a02000 r--p 00000000 fe:01 1054891                    /usr/bin/a b",
                Some((0x55d0c0a00000, 0x55d0c0a02000, b"/usr/bin/a b")),
            ),
            // No name: a space after the inode, or none.
            (
                b"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ",
                Some((0x7f0000000000, 0x7f0000001000, b"")),
            ),
            (
                b"7f0000000000-7f0000001000 rw-p 00000000 00:00 0",
                Some((0x7f0000000000, 0x7f0000001000, b"")),
            ),
            (b"1000-2000 r--p 0", None),
            (b"zz-10 r--p", None),
            (b"2000-1000 r--p 0 0:0 0", None),
        ];
        for (line, want) in cases {
            assert_eq!(
                parse_maps_line(line),
                want,
                "{:?}",
                core::str::from_utf8(line)
            );
        }
    }

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
    fn view_names() {
        assert!(may_be_view(b"/proc/self/maps"));
        assert!(may_be_view(b"maps"));
        assert!(may_be_view(b"/proc/self/smaps"));
        assert!(may_be_view(b"/proc/mounts"));
        assert!(may_be_view(b"/proc/self/mountinfo"));
        assert!(!may_be_view(b"/proc/self/smaps_rollup"));
        assert!(!may_be_view(b"/proc/self/numa_maps"));
        assert!(!may_be_view(b"/proc/self/xmaps"));
        assert!(!may_be_view(b"/proc/self/mountstats"));
        assert_eq!(view_of(b"/maps"), Some(View::Maps));
        assert_eq!(view_of(b"/task/12/smaps"), Some(View::Maps));
        assert_eq!(view_of(b"/mounts"), Some(View::Mounts));
        assert_eq!(view_of(b"/task/12/mountinfo"), Some(View::MountInfo));
        assert_eq!(view_of(b"/task//maps"), None);
        assert_eq!(view_of(b"/fd/maps"), None);
        assert_eq!(view_of(b"/status"), Some(View::Status));
        assert_eq!(view_of(b"/task/3/stat"), Some(View::Stat));
        assert_eq!(view_of(b"/statm"), Some(View::Statm));
        assert_eq!(view_of(b"/fd/status"), None);
        assert_eq!(view_of(b"/limits"), None);
    }

    #[test]
    fn memory_figures_leave_the_runtime_out() {
        let smaps = b"00400000-00401000 r-xp 00000000 08:01 12 /bin/x\nSize: 4 kB\nRss: 4 kB\nAnonymous: 0 kB\n\
7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \nSize: 1024 kB\nRss: 200 kB\nAnonymous: 200 kB\n\
7f0000100000-7f0000180000 r-xp 00000000 00:01 5 /memfd:picos-rt (deleted)\nSize: 512 kB\nRss: 300 kB\nAnonymous: 20 kB\n\
7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\nSize: 4 kB\nRss: 4 kB\nAnonymous: 4 kB\n";
        let rt = usage(smaps, |s, _| s >= 0x7f00_0000_0000);
        assert_eq!(
            rt,
            Usage {
                size: 1536,
                rss: 500,
                anon: 220,
                shmem: 280,
                data: 1024
            }
        );
        let status = b"Name:\tx\nVmPeak:\t    2000 kB\nVmSize:\t    1800 kB\nVmHWM:\t     600 kB\n\
VmRSS:\t     508 kB\nRssAnon:\t     224 kB\nRssFile:\t       4 kB\nRssShmem:\t     280 kB\n\
VmData:\t    1100 kB\nThreads:\t1\n";
        assert_eq!(
            core::str::from_utf8(&status_without(status, &rt)).unwrap(),
            "Name:\tx\nVmPeak:\t     464 kB\nVmSize:\t     264 kB\nVmHWM:\t     100 kB\n\
VmRSS:\t       8 kB\nRssAnon:\t       4 kB\nRssFile:\t       4 kB\nRssShmem:\t       0 kB\n\
VmData:\t      76 kB\nThreads:\t1\n"
        );
        let stat = b"42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 99 1843200 127 18446744073709551615 1 2 3\n";
        assert_eq!(
            core::str::from_utf8(&stat_without(stat, &rt)).unwrap(),
            "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 99 270336 2 18446744073709551615 1 2 3\n"
        );
        assert_eq!(
            core::str::from_utf8(&statm_without(b"450 127 75 36 0 275 0\n", &rt)).unwrap(),
            "66 2 5 36 0 19 0\n"
        );
    }

    #[test]
    fn mounts_are_bind_mounts_of_the_host_directories() {
        let info = b"22 27 0:21 / /proc rw,relatime - proc proc rw\n\
27 1 253:1 / / rw,relatime - ext4 /dev/vda1 rw,errors=remount-ro\n\
30 27 0:25 / /srv/my\\040data rw,nosuid - tmpfs tmpfs rw,size=100k\n\
31 30 0:26 /sub /srv/my\\040data/in ro,relatime - xfs /dev/vdb rw\n";
        let spec = |guest: &str, host: &str, readonly: bool| crate::kernel::fs::mount::Mount {
            readonly,
            ..picos_abi::MountSpec::host_dir(guest.as_bytes(), host.as_bytes())
        };
        let dev = |i: usize| Some(alloc::format!("0:{}", 90 + i).into_bytes());
        let table = [
            spec("/", "/srv/root", true),
            spec("/data", "/srv/my data/x", false),
            spec("/data/in", "/srv/my data/in/y", false),
            spec("/proc", "/proc", false),
        ];
        assert_eq!(
            core::str::from_utf8(&mounts_listing(info, &table, &dev, false)).unwrap(),
            "/dev/vda1 / ext4 ro,relatime,errors=remount-ro 0 0\n\
tmpfs /data tmpfs rw,nosuid,size=100k 0 0\n\
/dev/vdb /data/in xfs ro,relatime 0 0\n\
proc /proc proc rw,relatime 0 0\n"
        );
        assert_eq!(
            core::str::from_utf8(&mounts_listing(info, &table, &dev, true)).unwrap(),
            "1 0 253:1 /srv/root / ro,relatime - ext4 /dev/vda1 rw,errors=remount-ro\n\
2 1 0:25 /x /data rw,nosuid - tmpfs tmpfs rw,size=100k\n\
3 2 0:26 /sub/y /data/in ro,relatime - xfs /dev/vdb rw\n\
4 1 0:21 / /proc rw,relatime - proc proc rw\n"
        );
        // A guest path with a space is escaped as Linux escapes it.
        let odd = [spec("/", "/srv/root", false), spec("/a b", "/proc", false)];
        let l = mounts_listing(info, &odd, &dev, false);
        assert!(core::str::from_utf8(&l)
            .unwrap()
            .contains("proc /a\\040b proc rw,relatime 0 0\n"));
        // A tmpfs and an overlay are shown as themselves.
        let mem = [
            spec("/", "/srv/root", false),
            picos_abi::MountSpec {
                kind: picos_abi::MountKind::Tmpfs,
                fd: 3,
                ..spec("/tmp", "", false)
            },
            picos_abi::MountSpec {
                kind: picos_abi::MountKind::Overlay,
                fd: 4,
                ..spec("/usr", "/srv/u s", false)
            },
        ];
        assert_eq!(
            core::str::from_utf8(&mounts_listing(info, &mem, &dev, false)).unwrap(),
            "/dev/vda1 / ext4 rw,relatime,errors=remount-ro 0 0\n\
tmpfs /tmp tmpfs rw,relatime 0 0\n\
overlay /usr overlay rw,relatime,lowerdir=/srv/u\\040s 0 0\n"
        );
        assert_eq!(
            core::str::from_utf8(&mounts_listing(info, &mem, &dev, true)).unwrap(),
            "1 0 253:1 /srv/root / rw,relatime - ext4 /dev/vda1 rw,errors=remount-ro\n\
2 1 0:91 / /tmp rw,relatime - tmpfs tmpfs rw\n\
3 1 0:92 / /usr rw,relatime - overlay overlay rw,lowerdir=/srv/u\\040s\n"
        );
    }
}
