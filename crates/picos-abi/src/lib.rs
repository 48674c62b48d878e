//! Types shared by the `picos` CLI and the runtime inside the picoprocess.
//!
//! The CLI hands the runtime its launch configuration in one environment
//! variable, [`CONFIG_ENV`], whose value is produced by [`LaunchConfig::encode`]
//! and read back by [`LaunchConfig::decode`]. The runtime removes the variable
//! before the program sees its environment, and puts it back (with the new
//! program's path) when the program calls `execve`, so that every program in the
//! picoprocess tree runs under the same policy.
//!
//! The format is deliberately tiny (no serde in the runtime): `v1;` followed by
//! `key=value` pairs separated by `;`. Byte strings are hex-encoded so that no
//! path can break the framing.
#![no_std]
#![deny(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Name of the environment variable that carries the launch configuration.
pub const CONFIG_ENV: &str = "PICOS_RT";

/// How much the runtime logs. Names and order follow Gramine's
/// `loader.log_level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
#[repr(u8)]
pub enum LogLevel {
    None = 0,
    Error = 1,
    #[default]
    Warning = 2,
    Debug = 3,
    Trace = 4,
}

impl LogLevel {
    /// All levels, in increasing verbosity.
    pub const ALL: [LogLevel; 5] = [
        LogLevel::None,
        LogLevel::Error,
        LogLevel::Warning,
        LogLevel::Debug,
        LogLevel::Trace,
    ];

    /// The manifest spelling of this level.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::None => "none",
            LogLevel::Error => "error",
            LogLevel::Warning => "warning",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }

    /// Parses the manifest spelling (`all` is accepted as Gramine's alias of `trace`).
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "all" => Some(LogLevel::Trace),
            _ => Self::ALL.iter().copied().find(|l| l.name() == s),
        }
    }

    fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.get(v as usize).copied()
    }
}

/// Everything the runtime needs to know that is not the program's own argv/envp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Path of the program to load (absolute, or relative to the working directory).
    pub exe: Vec<u8>,
    /// The name the program was started by, when it differs from `exe`
    /// (execve's path as the caller gave it, such as `./script`): what a
    /// `#!` interpreter gets as the script's path, as Linux passes it.
    /// Empty: `exe`.
    pub exe_name: Vec<u8>,
    /// How much the runtime logs.
    pub log_level: LogLevel,
    /// Main-thread stack size in bytes (applied as `RLIMIT_STACK`); 0 keeps the host's.
    pub stack_size_bytes: u64,
    /// Patch syscall sites to enter the runtime directly (the fast path).
    pub patch_syscalls: bool,
    /// execve(2) replaces the program in place where it can (the runtime
    /// stays; `kernel::exec::in_place`), rather than through the kernel's
    /// execve of a fresh runtime. False: always the kernel's
    /// (`picos run --kernel-exec`).
    pub exec_in_place: bool,
    /// Print per-thread and per-process statistics at exit.
    pub stats: bool,
    /// Also append them as JSON lines to this file (empty: no file).
    pub stats_json: Vec<u8>,
    /// `--profile`: count and time the system calls, and print where their
    /// time went when each process exits. 0: off; 1: on; more: on, and the
    /// time-stamp counter's cycles per millisecond, as the process that
    /// called execve measured them (a short-lived program need not measure).
    pub profile: u64,
    /// The pid of the root of the picoprocess tree: the process `picos run`
    /// became. When it ends, every picoprocess left in the tree ends too.
    /// 0: no root known.
    pub root_pid: u32,
    /// What `/proc/PID/exe` reads for every process of this tree (the
    /// runtime's file as the CLI exec'd it: a per-tree link to the cached
    /// image, or the per-tree memfd, each with its unique name and
    /// ` (deleted)`): how a process tells the tree's processes from the
    /// rest. Empty: not known (the runtime reads its own).
    pub tree_exe: Vec<u8>,
    /// The signals the program that called execve ignored (bit N-1 for
    /// signal N), which the next program inherits ignored, as on Linux.
    /// None: not known (the tree's first process): the runtime asks the
    /// host for each signal's disposition.
    pub ignored: Option<u64>,
    /// The CPU features the runtime uses, as the runtime that called
    /// execve probed them with CPUID (its `arch::probe_cpu` bits, the
    /// "probed" bit set), so that the next runtime on the same machine
    /// need not: in a virtual machine each CPUID exits to the hypervisor
    /// (~4 µs here). 0: not known (the runtime probes).
    pub cpu: u8,
    /// The tid of the parent's thread that created this process (its end
    /// is what Linux's parent-death signal reports), passed on through
    /// execve. 0: unknown.
    pub parent_thread: u32,
    /// The program's seccomp filters, passed on through execve (the
    /// runtime's encoding, `kernel::seccomp::encode`). Empty: none.
    pub seccomp: Vec<u8>,
    /// The picoprocess tree's shared ptrace board (`kernel::ptrace` in the
    /// runtime): its SysV shared-memory id plus one, passed on through
    /// execve. 0: none yet (the runtime makes one).
    pub board: u32,
    /// The manifest's mounts, in the order the manifest gives them (a
    /// later mount at the same guest path is refused by the CLI). Empty:
    /// the program sees the host's tree unchanged (the embedded default).
    pub mounts: Vec<MountSpec>,
    /// `picos run --perf-map`: the file holding the runtime's functions
    /// (`OFFSET SIZE NAME` lines) from which each process writes
    /// `/tmp/perf-PID.map`. Empty: no perf map.
    pub perf_map: Vec<u8>,
    /// The user's known-sites file (the syscall sites earlier programs
    /// trapped at, kept across runs: [`KNOWN_SITES_FILE`], the runtime's
    /// `patch::known`), which every runtime of the tree maps shared. Empty:
    /// none (the sandbox, containers, no cache: the tree keeps what it
    /// learns on its own board).
    pub sites: Vec<u8>,
}

/// The known-sites file's name in the runtime cache, with its format's
/// version: a header page ([`KNOWN_SITES_MAGIC`], then the creation time
/// in seconds since the epoch), then [`KNOWN_SITES_WORDS`] 64-bit words of
/// the runtime's table (`patch::known`), in the machine's byte order.
pub const KNOWN_SITES_FILE: &str = "known-sites-v1";
/// The header's first word.
pub const KNOWN_SITES_MAGIC: u64 = u64::from_le_bytes(*b"picosKS1");
/// The header's length (the table starts on the second page).
pub const KNOWN_SITES_HEADER: usize = 4096;
/// The table's words: 32,768 sites.
pub const KNOWN_SITES_WORDS: usize = 65536;
/// The file's length.
pub const KNOWN_SITES_LEN: usize = KNOWN_SITES_HEADER + KNOWN_SITES_WORDS * 8;

/// The most `[[fs.mounts]]` entries picos takes.
pub const MAX_MOUNTS: usize = 32;

/// What a mount shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MountKind {
    /// A host directory (`type = "chroot"`), at [`MountSpec::host`].
    #[default]
    Host,
    /// A file system of its own in memory (`type = "tmpfs"`): a kernel
    /// tmpfs instance the CLI made and attached nowhere in the host's
    /// tree, reached only through the descriptor [`MountSpec::fd`] that the
    /// picoprocess tree inherits. Starts empty; gone when the tree ends.
    Tmpfs,
    /// A host directory ([`MountSpec::host`], the lower layer, never
    /// written) under a writable layer in memory (`type = "overlay"`): a
    /// kernel overlay whose upper layer is a private tmpfs, attached
    /// nowhere, reached through [`MountSpec::fd`].
    Overlay,
    /// A /dev of the library OS (`type = "dev"`): a tmpfs the CLI made, as
    /// [`MountKind::Tmpfs`], holding bind mounts of the host's harmless
    /// devices ([`DEV_DEVICES`]), a `pts` of its own (a new devpts
    /// instance), an empty `shm` and the symlinks [`DEV_LINKS`].
    Dev,
}

/// The host's devices a `type = "dev"` mount shows (those the host has):
/// what programs expect of any /dev, none of which reaches a disk, the
/// kernel's memory or another process. Each is a bind mount of the host's
/// node.
pub const DEV_DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// The symlinks of a `type = "dev"` mount.
pub const DEV_LINKS: &[(&str, &str)] = &[
    ("ptmx", "pts/ptmx"),
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
];

/// One `[[fs.mounts]]` entry as the runtime needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountSpec {
    /// Where the program sees it: absolute, normalized (no `.`, `..`,
    /// doubled or trailing `/`), e.g. `/data`.
    pub guest: Vec<u8>,
    /// The host directory: absolute and canonical (no symlinks), e.g.
    /// `/srv/data`; an overlay's lower layer; empty for a tmpfs.
    pub host: Vec<u8>,
    /// What the mount shows: a host directory, a tmpfs, an overlay.
    pub kind: MountKind,
    /// For a tmpfs or an overlay, the descriptor of its root in this
    /// process (not close-on-exec: each runtime passes its own on to the
    /// next through execve); for a host directory, -1, or its root as a
    /// runtime passes it on through execve (so that the next one needs no
    /// free descriptor for it: the program's table may be full).
    pub fd: i32,
    /// Writes are refused with EROFS.
    pub readonly: bool,
    /// The manifest promises that nothing outside the picoprocess tree
    /// changes this directory while the program runs (`exclusive = true`,
    /// read-only mounts only): the library OS then caches what it looks up
    /// there (`kernel::fs::dcache`, docs/FILESYSTEM.md "The directory
    /// cache").
    pub exclusive: bool,
    /// Small writes to the mount's regular files are buffered by the
    /// library OS (`writeback = true`, writable mounts only;
    /// `kernel::fs::file`, docs/FILESYSTEM.md "Write-back mounts").
    pub writeback: bool,
}

impl MountSpec {
    /// A mount of host directory `host` at `guest`, read-write.
    pub fn host_dir(guest: &[u8], host: &[u8]) -> MountSpec {
        MountSpec {
            guest: guest.to_vec(),
            host: host.to_vec(),
            kind: MountKind::Host,
            fd: -1,
            readonly: false,
            exclusive: false,
            writeback: false,
        }
    }

    /// Is it a file system the CLI made (a tmpfs, an overlay), reached
    /// through [`MountSpec::fd`] rather than a host path?
    pub fn detached(&self) -> bool {
        self.kind != MountKind::Host
    }
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            exe: Vec::new(),
            exe_name: Vec::new(),
            log_level: LogLevel::default(),
            stack_size_bytes: 0,
            patch_syscalls: true,
            exec_in_place: true,
            stats: false,
            stats_json: Vec::new(),
            profile: 0,
            root_pid: 0,
            tree_exe: Vec::new(),
            ignored: None,
            cpu: 0,
            parent_thread: 0,
            board: 0,
            seccomp: Vec::new(),
            mounts: Vec::new(),
            perf_map: Vec::new(),
            sites: Vec::new(),
        }
    }
}

/// Why a configuration string could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The string does not start with a version this runtime understands.
    BadVersion,
    /// A field is not `key=value`, has a bad value, or is unknown.
    BadField,
    /// The program path is missing.
    MissingExe,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DecodeError::BadVersion => "launch config has an unknown version",
            DecodeError::BadField => "launch config has a malformed field",
            DecodeError::MissingExe => "launch config names no program",
        })
    }
}

const VERSION_PREFIX: &str = "v1;";

fn hex_encode(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
}

fn hex_decode(s: &[u8]) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect()
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

/// Appends `n` in decimal (without alloc::format: keeps the runtime small).
fn push_u64(s: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[i..] {
        s.push(d as char);
    }
}

/// Is `prefix` (a normalized absolute path) `path` itself or a directory
/// above it, component by component (`/a` holds `/a/b`, not `/ab`)?
pub fn covers(prefix: &[u8], path: &[u8]) -> bool {
    prefix == b"/"
        || path.starts_with(prefix) && (path.len() == prefix.len() || path[prefix.len()] == b'/')
}

/// What follows `prefix` in `path` ("" or "/a/b") if `prefix` holds it
/// ([`covers`]).
pub fn rest_after<'a>(prefix: &[u8], path: &'a [u8]) -> Option<&'a [u8]> {
    if !covers(prefix, path) {
        return None;
    }
    Some(match (prefix, path) {
        (b"/", b"/") => &b""[..],
        (b"/", p) => p,
        (d, p) => &p[d.len()..],
    })
}

/// Directory `dir` followed by `rest` (what [`rest_after`] gives): the
/// inverse of that split.
pub fn join_rest(dir: &[u8], rest: &[u8]) -> Vec<u8> {
    match (dir, rest) {
        (d, b"") => d.to_vec(),
        (b"/", r) => r.to_vec(),
        (d, r) => [d, r].concat(),
    }
}

/// The index of the deepest of `mounts` whose guest path holds guest path
/// `path` (normalized, absolute), leaving out mount `skip`.
pub fn deepest_mount(mounts: &[MountSpec], path: &[u8], skip: Option<usize>) -> Option<usize> {
    mounts
        .iter()
        .enumerate()
        .filter(|(i, m)| Some(*i) != skip && covers(&m.guest, path))
        .max_by_key(|(_, m)| m.guest.len())
        .map(|(i, _)| i)
}

/// The guest path of host path `host` (absolute, canonical), if `mounts`
/// show it: through the mount whose host directory is the deepest that
/// holds it, unless another mount hides that guest path (the host's
/// `/tmp/x` under `/` from `file:/` is not shown when `/tmp` is mounted
/// from elsewhere).
pub fn host_to_guest(mounts: &[MountSpec], host: &[u8]) -> Option<Vec<u8>> {
    let (i, m) = mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| !m.detached() && covers(&m.host, host))
        .max_by_key(|(_, m)| m.host.len())?;
    let v = join_rest(&m.guest, rest_after(&m.host, host)?);
    (deepest_mount(mounts, &v, None) == Some(i)).then_some(v)
}

/// `ro,GUEST,HOST`, `rox,GUEST,HOST` (read-only, exclusive),
/// `rw,GUEST,HOST` or `rwb,GUEST,HOST` (read-write, write-back) (paths
/// hex-encoded, both absolute), then `,tmpfs,FD`, `,overlay,FD` or
/// `,dev,FD` for the file systems the CLI made (a tmpfs's HOST is empty),
/// or `,host,FD` for a host directory's root a runtime passes on.
fn decode_mount(value: &[u8]) -> Option<MountSpec> {
    let mut parts = value.split(|&c| c == b',');
    let (readonly, exclusive, writeback) = match parts.next()? {
        b"ro" => (true, false, false),
        b"rox" => (true, true, false),
        b"rw" => (false, false, false),
        b"rwb" => (false, false, true),
        _ => return None,
    };
    let guest = hex_decode(parts.next()?)?;
    let host = hex_decode(parts.next()?)?;
    let (kind, fd) = match parts.next() {
        None => (MountKind::Host, -1),
        Some(k) => {
            let kind = match k {
                b"host" => MountKind::Host,
                b"tmpfs" => MountKind::Tmpfs,
                b"overlay" => MountKind::Overlay,
                b"dev" => MountKind::Dev,
                _ => return None,
            };
            let fd = i32::try_from(parse_u64(parts.next()?)?).ok()?;
            (kind, fd)
        }
    };
    let host_ok = match kind {
        MountKind::Tmpfs | MountKind::Dev => host.is_empty(),
        _ => host.first() == Some(&b'/'),
    };
    if parts.next().is_some() || guest.first() != Some(&b'/') || !host_ok {
        return None;
    }
    if guest.contains(&0) || host.contains(&0) {
        return None;
    }
    Some(MountSpec {
        guest,
        host,
        kind,
        fd,
        readonly,
        exclusive,
        writeback,
    })
}

impl LaunchConfig {
    /// Encodes the configuration as the value of [`CONFIG_ENV`].
    pub fn encode(&self) -> String {
        let mut s = String::from(VERSION_PREFIX);
        s.push_str("log=");
        s.push((b'0' + self.log_level as u8) as char);
        s.push_str(";stack=");
        push_u64(&mut s, self.stack_size_bytes);
        s.push_str(if self.patch_syscalls {
            ";patch=1"
        } else {
            ";patch=0"
        });
        if !self.exec_in_place {
            s.push_str(";inplace=0");
        }
        if self.stats {
            s.push_str(";stats=1");
        }
        if self.profile != 0 {
            s.push_str(";profile=");
            push_u64(&mut s, self.profile);
        }
        if !self.stats_json.is_empty() {
            s.push_str(";statsjson=");
            hex_encode(&mut s, &self.stats_json);
        }
        if !self.perf_map.is_empty() {
            s.push_str(";perfmap=");
            hex_encode(&mut s, &self.perf_map);
        }
        if !self.sites.is_empty() {
            s.push_str(";sites=");
            hex_encode(&mut s, &self.sites);
        }
        if self.root_pid != 0 {
            s.push_str(";root=");
            push_u64(&mut s, self.root_pid.into());
        }
        if !self.tree_exe.is_empty() {
            s.push_str(";treeexe=");
            hex_encode(&mut s, &self.tree_exe);
        }
        if let Some(m) = self.ignored {
            s.push_str(";ignored=");
            push_u64(&mut s, m);
        }
        if self.cpu != 0 {
            s.push_str(";cpu=");
            push_u64(&mut s, self.cpu.into());
        }
        if self.parent_thread != 0 {
            s.push_str(";pthread=");
            push_u64(&mut s, self.parent_thread.into());
        }
        if self.board != 0 {
            s.push_str(";board=");
            push_u64(&mut s, self.board.into());
        }
        if !self.seccomp.is_empty() {
            s.push_str(";seccomp=");
            hex_encode(&mut s, &self.seccomp);
        }
        for m in &self.mounts {
            s.push_str(match (m.readonly, m.exclusive, m.writeback) {
                (true, true, _) => ";mount=rox,",
                (true, false, _) => ";mount=ro,",
                (false, _, true) => ";mount=rwb,",
                // Not made by the CLI (it refuses exclusive writable
                // mounts); encoded as plain read-write.
                (false, _, false) => ";mount=rw,",
            });
            hex_encode(&mut s, &m.guest);
            s.push(',');
            hex_encode(&mut s, &m.host);
            match m.kind {
                // A host directory's root passed on by a runtime to the
                // next through execve (the CLI opens none).
                MountKind::Host if m.fd >= 0 => s.push_str(",host,"),
                MountKind::Host => {}
                MountKind::Tmpfs => s.push_str(",tmpfs,"),
                MountKind::Overlay => s.push_str(",overlay,"),
                MountKind::Dev => s.push_str(",dev,"),
            }
            if m.detached() || m.fd >= 0 {
                push_u64(&mut s, m.fd.max(0) as u64);
            }
        }
        if !self.exe_name.is_empty() {
            s.push_str(";name=");
            hex_encode(&mut s, &self.exe_name);
        }
        s.push_str(";exe=");
        hex_encode(&mut s, &self.exe);
        s
    }

    /// Decodes a value produced by [`LaunchConfig::encode`].
    pub fn decode(s: &[u8]) -> Result<Self, DecodeError> {
        let rest = s
            .strip_prefix(VERSION_PREFIX.as_bytes())
            .ok_or(DecodeError::BadVersion)?;
        let mut cfg = LaunchConfig::default();
        let mut have_exe = false;
        for field in rest.split(|&c| c == b';') {
            let eq = field
                .iter()
                .position(|&c| c == b'=')
                .ok_or(DecodeError::BadField)?;
            let (key, value) = (&field[..eq], &field[eq + 1..]);
            match key {
                b"log" => {
                    let v = parse_u64(value).ok_or(DecodeError::BadField)?;
                    cfg.log_level = u8::try_from(v)
                        .ok()
                        .and_then(LogLevel::from_u8)
                        .ok_or(DecodeError::BadField)?;
                }
                b"stack" => cfg.stack_size_bytes = parse_u64(value).ok_or(DecodeError::BadField)?,
                b"patch" => {
                    cfg.patch_syscalls = match value {
                        b"0" => false,
                        b"1" => true,
                        _ => return Err(DecodeError::BadField),
                    }
                }
                b"inplace" => {
                    cfg.exec_in_place = match value {
                        b"0" => false,
                        b"1" => true,
                        _ => return Err(DecodeError::BadField),
                    }
                }
                b"stats" => {
                    cfg.stats = match value {
                        b"0" => false,
                        b"1" => true,
                        _ => return Err(DecodeError::BadField),
                    }
                }
                b"profile" => cfg.profile = parse_u64(value).ok_or(DecodeError::BadField)?,
                b"statsjson" => cfg.stats_json = hex_decode(value).ok_or(DecodeError::BadField)?,
                b"perfmap" => cfg.perf_map = hex_decode(value).ok_or(DecodeError::BadField)?,
                b"sites" => cfg.sites = hex_decode(value).ok_or(DecodeError::BadField)?,
                b"root" => {
                    cfg.root_pid = parse_u64(value)
                        .and_then(|v| u32::try_from(v).ok())
                        .filter(|&v| v != 0)
                        .ok_or(DecodeError::BadField)?;
                }
                b"treeexe" => cfg.tree_exe = hex_decode(value).ok_or(DecodeError::BadField)?,
                b"ignored" => cfg.ignored = Some(parse_u64(value).ok_or(DecodeError::BadField)?),
                b"cpu" => {
                    cfg.cpu = parse_u64(value)
                        .and_then(|v| u8::try_from(v).ok())
                        .filter(|&v| v != 0)
                        .ok_or(DecodeError::BadField)?;
                }
                b"seccomp" => cfg.seccomp = hex_decode(value).ok_or(DecodeError::BadField)?,
                b"pthread" => {
                    cfg.parent_thread = parse_u64(value)
                        .and_then(|v| u32::try_from(v).ok())
                        .filter(|&v| v != 0)
                        .ok_or(DecodeError::BadField)?;
                }
                b"board" => {
                    cfg.board = parse_u64(value)
                        .and_then(|v| u32::try_from(v).ok())
                        .filter(|&v| v != 0)
                        .ok_or(DecodeError::BadField)?;
                }
                b"mount" => cfg
                    .mounts
                    .push(decode_mount(value).ok_or(DecodeError::BadField)?),
                b"name" => cfg.exe_name = hex_decode(value).ok_or(DecodeError::BadField)?,
                b"exe" => {
                    cfg.exe = hex_decode(value).ok_or(DecodeError::BadField)?;
                    have_exe = true;
                }
                _ => return Err(DecodeError::BadField),
            }
        }
        if !have_exe || cfg.exe.is_empty() {
            return Err(DecodeError::MissingExe);
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn splits_and_joins_below_a_directory() {
        assert_eq!(rest_after(b"/", b"/"), Some(&b""[..]));
        assert_eq!(rest_after(b"/", b"/a/b"), Some(&b"/a/b"[..]));
        assert_eq!(rest_after(b"/a", b"/a"), Some(&b""[..]));
        assert_eq!(rest_after(b"/a", b"/a/b"), Some(&b"/b"[..]));
        assert_eq!(rest_after(b"/a", b"/ab"), None);
        for (dir, path) in [
            (&b"/"[..], &b"/"[..]),
            (b"/", b"/x"),
            (b"/a", b"/a"),
            (b"/a", b"/a/x/y"),
        ] {
            assert_eq!(join_rest(dir, rest_after(dir, path).unwrap()), path);
        }
        assert_eq!(join_rest(b"/srv", b"/x"), b"/srv/x");
        assert_eq!(join_rest(b"/", b"/x"), b"/x");
    }

    #[test]
    fn round_trip() {
        let cfg = LaunchConfig {
            exe: b"/usr/bin/py;th=on 3\xff".to_vec(),
            exe_name: b"./py;th".to_vec(),
            log_level: LogLevel::Trace,
            stack_size_bytes: 8 << 20,
            patch_syscalls: false,
            exec_in_place: false,
            stats: true,
            stats_json: b"/tmp/s;t=1.json".to_vec(),
            profile: 2_800_000,
            perf_map: b"/tmp/picos-rt;1.syms".to_vec(),
            sites: b"/root/.cache/picos/runtime/known-sites-v1".to_vec(),
            root_pid: 4_194_304,
            tree_exe: b"/root/.cache/picos/picos-rt-0123.t-9 (deleted)".to_vec(),
            ignored: Some(u64::MAX),
            cpu: 0x9f,
            parent_thread: 4_194_303,
            board: 7,
            seccomp: vec![1, 2, 0, 6, 0, 0, 0, 0, 0xff, 0x7f, 0],
            mounts: vec![
                MountSpec {
                    guest: b"/".to_vec(),
                    host: b"/srv/r,o;ot".to_vec(),
                    kind: MountKind::Host,
                    fd: -1,
                    readonly: true,
                    exclusive: false,
                    writeback: false,
                },
                MountSpec {
                    guest: b"/usr".to_vec(),
                    host: b"/usr".to_vec(),
                    kind: MountKind::Host,
                    fd: 987,
                    readonly: true,
                    exclusive: true,
                    writeback: false,
                },
                MountSpec {
                    guest: b"/data".to_vec(),
                    host: b"/srv/data".to_vec(),
                    kind: MountKind::Host,
                    fd: -1,
                    readonly: false,
                    exclusive: false,
                    writeback: false,
                },
                MountSpec {
                    guest: b"/tmp".to_vec(),
                    host: Vec::new(),
                    kind: MountKind::Tmpfs,
                    fd: 7,
                    readonly: false,
                    exclusive: false,
                    writeback: true,
                },
                MountSpec {
                    guest: b"/dev".to_vec(),
                    host: Vec::new(),
                    kind: MountKind::Dev,
                    fd: 1020,
                    readonly: false,
                    exclusive: false,
                    writeback: false,
                },
                MountSpec {
                    guest: b"/usr/lib".to_vec(),
                    host: b"/usr/lib".to_vec(),
                    kind: MountKind::Overlay,
                    fd: 1021,
                    readonly: false,
                    exclusive: false,
                    writeback: false,
                },
                MountSpec {
                    guest: b"/out".to_vec(),
                    host: b"/srv/out".to_vec(),
                    kind: MountKind::Host,
                    fd: -1,
                    readonly: false,
                    exclusive: false,
                    writeback: true,
                },
            ],
        };
        let s = cfg.encode();
        assert!(s.starts_with("v1;"));
        assert_eq!(LaunchConfig::decode(s.as_bytes()), Ok(cfg));
    }

    #[test]
    fn zero_and_max_stack() {
        for n in [0, u64::MAX] {
            let cfg = LaunchConfig {
                exe: vec![b'x'],
                exe_name: Vec::new(),
                log_level: LogLevel::None,
                stack_size_bytes: n,
                patch_syscalls: true,
                exec_in_place: true,
                stats: false,
                stats_json: Vec::new(),
                profile: 0,
                root_pid: 0,
                tree_exe: Vec::new(),
                ignored: None,
                cpu: 0,
                parent_thread: 0,
                board: 0,
                seccomp: Vec::new(),
                mounts: Vec::new(),
                perf_map: Vec::new(),
                sites: Vec::new(),
            };
            assert_eq!(LaunchConfig::decode(cfg.encode().as_bytes()).unwrap(), cfg);
        }
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            LaunchConfig::decode(b"v2;exe=00"),
            Err(DecodeError::BadVersion)
        );
        assert_eq!(
            LaunchConfig::decode(b"v1;log=9;exe=41"),
            Err(DecodeError::BadField)
        );
        assert_eq!(
            LaunchConfig::decode(b"v1;exe=4"),
            Err(DecodeError::BadField)
        );
        assert_eq!(
            LaunchConfig::decode(b"v1;exe=zz"),
            Err(DecodeError::BadField)
        );
        assert_eq!(
            LaunchConfig::decode(b"v1;bogus=1;exe=41"),
            Err(DecodeError::BadField)
        );
        assert_eq!(
            LaunchConfig::decode(b"v1;log=1"),
            Err(DecodeError::MissingExe)
        );
        assert_eq!(
            LaunchConfig::decode(b"v1;stack=99999999999999999999;exe=41"),
            Err(DecodeError::BadField)
        );
        // CPU features: a byte, never 0 (0 is "not known", left out).
        for bad in [
            &b"v1;cpu=256;exe=41"[..],
            b"v1;cpu=0;exe=41",
            b"v1;cpu=;exe=41",
        ] {
            assert_eq!(LaunchConfig::decode(bad), Err(DecodeError::BadField));
        }
    }

    #[test]
    fn maps_host_paths_to_guest_paths() {
        let m = |guest: &str, host: &str| MountSpec {
            guest: guest.into(),
            host: host.into(),
            kind: MountKind::Host,
            fd: -1,
            readonly: false,
            exclusive: false,
            writeback: false,
        };
        let mounts = [m("/", "/srv/root"), m("/data", "/"), m("/tmp", "/srv/t")];
        let g = |h: &str| host_to_guest(&mounts, h.as_bytes());
        assert_eq!(g("/srv/root"), Some(b"/".to_vec()));
        assert_eq!(g("/srv/root/etc"), Some(b"/etc".to_vec()));
        assert_eq!(g("/srv/t/x"), Some(b"/tmp/x".to_vec()));
        // The host's root under a mount at /data: no trailing slash.
        assert_eq!(g("/"), Some(b"/data".to_vec()));
        assert_eq!(g("/usr"), Some(b"/data/usr".to_vec()));
        // /srv/root/tmp is hidden by the mount at /tmp.
        assert_eq!(g("/srv/root/tmp/y"), None);
        assert!(covers(b"/a", b"/a/b") && !covers(b"/a", b"/ab") && covers(b"/", b"/x"));
        assert_eq!(deepest_mount(&mounts, b"/tmp/z", None), Some(2));
        assert_eq!(deepest_mount(&mounts, b"/tmp/z", Some(2)), Some(0));
        // A tmpfs or an overlay has no host path: no host path maps
        // through it (the runtime asks for the mount of a descriptor).
        let ovl = MountSpec {
            kind: MountKind::Overlay,
            fd: 5,
            ..m("/srv/root/o", "/srv/root")
        };
        let tmp = MountSpec {
            kind: MountKind::Tmpfs,
            fd: 6,
            ..m("/q", "")
        };
        let more = [m("/", "/srv/root"), ovl, tmp];
        assert_eq!(host_to_guest(&more, b"/srv/root/x"), Some(b"/x".to_vec()));
        assert_eq!(host_to_guest(&more, b"/"), None);
    }

    #[test]
    fn rejects_bad_mounts() {
        for bad in [
            "v1;mount=xx,2f,2f;exe=41",
            "v1;mount=ro,2f;exe=41",
            "v1;mount=ro,2f,2f,2f;exe=41",
            "v1;mount=ro,61,2f;exe=41",
            "v1;mount=rw,2f,61;exe=41",
            "v1;mount=rw,2f00,2f;exe=41",
            "v1;mount=rw,2f,zz;exe=41",
            "v1;mount=rw,2f,2f,tmpfs,3;exe=41",
            "v1;mount=rw,2f,,overlay,3;exe=41",
            "v1;mount=rw,2f,,tmpfs;exe=41",
            "v1;mount=rw,2f,,tmpfs,x;exe=41",
            "v1;mount=rw,2f,,zfs,3;exe=41",
            "v1;mount=rw,2f,,tmpfs,3,4;exe=41",
        ] {
            assert_eq!(
                LaunchConfig::decode(bad.as_bytes()),
                Err(DecodeError::BadField),
                "{bad}"
            );
        }
    }

    #[test]
    fn rejects_bad_root() {
        for bad in ["v1;root=0;exe=41", "v1;root=;exe=41", "v1;root=1,5;exe=41"] {
            assert_eq!(
                LaunchConfig::decode(bad.as_bytes()),
                Err(DecodeError::BadField),
                "{bad}"
            );
        }
    }

    #[test]
    fn log_level_names() {
        for l in LogLevel::ALL {
            assert_eq!(LogLevel::from_name(l.name()), Some(l));
        }
        assert_eq!(LogLevel::from_name("all"), Some(LogLevel::Trace));
        assert_eq!(LogLevel::from_name("verbose"), None);
    }
}
