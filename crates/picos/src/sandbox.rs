//! The sandbox (`picos run --sandbox`, `[sandbox] enable = true`): the
//! seeds' **+SC +RM** configuration. Everything here is enforced by the
//! kernel and installed by the CLI in the process that becomes the
//! picoprocess, just before it execs the runtime, so it holds from the
//! program's first instruction, on every thread, in every child, and after
//! every `execve`, even when the program takes the runtime over and makes
//! system calls the runtime never sees (docs/SECURITY.md):
//!
//! - **rlimits**: no core dumps (a core handler runs outside the sandbox);
//!   `sandbox.max_open_files` as RLIMIT_NOFILE.
//! - **capabilities**: all dropped (bounding, ambient, effective,
//!   permitted, inheritable sets), so root inside is an ordinary user.
//! - **no_new_privs**: set-user-ID and file capabilities give nothing.
//! - **+RM, Landlock**: file access only beneath the mounts (read-only ones
//!   read and execute only), `/proc` read-only for the runtime; TCP bind
//!   and connect only to the ports the manifest names; no signals to, and
//!   no abstract UNIX sockets of, processes outside the picoprocess tree.
//! - **+SC, seccomp**: a filter derived from the syscall table
//!   (`picos_rt::sys::table`, column `sandbox`), with argument checks where
//!   a call is dangerous ([`CHECKS`]). Calls it refuses fail with EPERM.
//!
//! Landlock through the landlock crate (the Landlock project's own). The
//! filter's BPF is built here ([`bpf`]: a tree, not seccompiler's chain,
//! which cost 1.3 ms of start-up); seccompiler builds the same policy in
//! the tests, as the reference it is checked against.

pub(crate) mod bpf;

use crate::manifest::{Mount, SandboxSettings};
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use picos_abi::{MountKind, MountSpec};
use picos_rt::sys::def::{Sandbox, SyscallDef};
use picos_rt::sys::table::TABLE;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The Landlock ABI the sandbox is built for: 4 (TCP ports), 5 (device
/// ioctls), 6 (signal and abstract-socket scoping).
pub const LANDLOCK_ABI: ABI = ABI::V6;
const LANDLOCK_ABI_NUMBER: i32 = 6;

/// Why the sandbox could not be set up. The program never starts then.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "--sandbox: this kernel's Landlock is {0}; the sandbox needs ABI {LANDLOCK_ABI_NUMBER} \
         (Linux 6.12+: TCP port rules, device ioctls, signal and abstract-socket scoping). \
         Set `sandbox.allow_weaker = true` in the manifest to run with what the kernel has"
    )]
    LandlockTooOld(String),
    #[error(
        "--sandbox: the working directory is /, and the default policy makes it writable; \
         run from a project directory, or give a manifest that says what to mount"
    )]
    CwdIsRoot,
    #[error("--sandbox: {0}")]
    Setup(String),
}

fn setup(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Setup(format!("{what}: {e}"))
}

/// The directories the default policy shows read-only, where the host
/// has them (`/bin`, `/lib*` are symlinks into `/usr` on a merged-/usr
/// system: the mount shows what they lead to).
const DEFAULT_READONLY: &[&str] = &[
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// The mounts of `--sandbox` without a manifest that mounts anything: an
/// empty in-memory `/`, the host's `/usr`, `/etc`, `/bin`, `/sbin` and
/// `/lib*` read-only, the working directory `cwd` read-write at its own
/// path, a private tmpfs `/tmp`, a `/dev` of harmless devices and the
/// host's `/proc` read-only.
pub fn default_mounts(cwd: &Path) -> Result<Vec<Mount>, SandboxError> {
    let chroot = |path: &str, uri: &str, readonly: bool| Mount {
        kind: "chroot".into(),
        size: None,
        path: path.into(),
        uri: format!("file:{uri}"),
        readonly,
        exclusive: false,
        writeback: false,
    };
    let memory = |kind: &str, path: &str| Mount {
        kind: kind.into(),
        size: None,
        path: path.into(),
        uri: String::new(),
        readonly: false,
        exclusive: false,
        writeback: false,
    };
    let cwd = std::fs::canonicalize(cwd).map_err(|e| setup("the working directory", e))?;
    if cwd == Path::new("/") {
        return Err(SandboxError::CwdIsRoot);
    }
    let cwd = cwd.to_str().ok_or_else(|| {
        SandboxError::Setup(format!(
            "the working directory {} is not UTF-8; give a manifest",
            cwd.display()
        ))
    })?;
    let mut mounts = vec![memory("tmpfs", "/")];
    for d in DEFAULT_READONLY {
        if Path::new(d).is_dir() && *d != cwd {
            mounts.push(chroot(d, d, true));
        }
    }
    if cwd != "/tmp" {
        mounts.push(memory("tmpfs", "/tmp"));
    }
    mounts.push(memory("dev", "/dev"));
    mounts.push(chroot("/proc", "/proc", true));
    if !mounts.iter().any(|m| m.path == cwd) {
        mounts.push(chroot(cwd, cwd, false));
    } else {
        // The working directory is one of the read-only ones (`/usr`):
        // it stays read-only; the policy never widens a system directory.
    }
    // A mount must come after the one that holds its mount point.
    mounts.sort_by_key(|m| m.path.matches('/').count() - usize::from(m.path == "/"));
    Ok(mounts)
}

/// What the sandbox allows: the mounts as the runtime gets them, the
/// manifest's settings, and files the CLI itself names (`--stats-json`).
pub struct Policy<'a> {
    pub mounts: &'a [MountSpec],
    pub settings: &'a SandboxSettings,
    pub extra_files: Vec<PathBuf>,
    /// The runtime's file when it runs from the runtime cache (a
    /// descriptor the CLI holds until it execs it): the tree's processes
    /// may read and execute it, as every execve of the tree re-executes it.
    pub runtime_image: Option<std::os::fd::RawFd>,
    /// A container's process (`picos create`): the OCI engine's spec has
    /// set its capabilities and rlimits, which stay as the spec says (the
    /// filter and Landlock hold whatever the capabilities are).
    pub container: Option<Container>,
}

/// What an OCI engine's spec settles for a container's process
/// (`crate::oci`), which the sandbox then need not.
#[derive(Clone, Copy, Debug, Default)]
pub struct Container {
    /// The container has a pid namespace of its own (not the host's):
    /// its processes can signal only each other, so Landlock's signal
    /// scope is left off (it would also keep a process `exec`'d into the
    /// container, a picoprocess tree of its own, from signalling the
    /// container's first process, as `podman exec C kill -HUP 1` does).
    pub own_pids: bool,
    /// The container has a network namespace of its own: abstract Unix
    /// sockets are per network namespace, so their scope is left off too.
    pub own_net: bool,
}

/// A rule of the Landlock ruleset, as `explain` shows it.
struct FsRule {
    /// The host directory (or the mount's kind and guest path).
    what: String,
    fd: Option<i32>,
    path: Option<PathBuf>,
    access: BitFlags<AccessFs>,
}

impl FsRule {
    /// The rights Landlock takes for this rule: a file's rights only where
    /// the path is a file (the --stats-json file; a container's
    /// /etc/hosts, a file bound over a file).
    fn landlock_access(&self) -> BitFlags<AccessFs> {
        match &self.path {
            Some(p) if !p.is_dir() => self.access & AccessFs::from_file(LANDLOCK_ABI),
            _ => self.access,
        }
    }
}

impl Policy<'_> {
    /// The mounts; none (the program sees the host's tree, passed through)
    /// is the host's `/` read-write.
    fn mounts(&self) -> std::borrow::Cow<'_, [MountSpec]> {
        if self.mounts.is_empty() {
            std::borrow::Cow::Owned(vec![MountSpec::host_dir(b"/", b"/")])
        } else {
            std::borrow::Cow::Borrowed(self.mounts)
        }
    }

    fn fs_rules(&self) -> Vec<FsRule> {
        let abi = LANDLOCK_ABI;
        let mut rules = Vec::new();
        for m in self.mounts().iter() {
            let access = if m.readonly {
                AccessFs::from_read(abi)
            } else {
                AccessFs::from_all(abi)
            };
            let guest = String::from_utf8_lossy(&m.guest);
            match m.kind {
                MountKind::Host => rules.push(FsRule {
                    what: format!("{} (host {})", guest, String::from_utf8_lossy(&m.host)),
                    fd: None,
                    path: Some(PathBuf::from(std::ffi::OsStr::from_bytes(&m.host))),
                    access,
                }),
                kind => rules.push(FsRule {
                    what: format!(
                        "{} ({})",
                        guest,
                        match kind {
                            MountKind::Tmpfs => "tmpfs, in memory",
                            MountKind::Overlay => "overlay: changes in memory",
                            _ => "dev: null, zero, full, random, urandom, tty, pts, shm",
                        }
                    ),
                    fd: Some(m.fd),
                    path: None,
                    access,
                }),
            }
        }
        // Landlock checks an open by walking from the file up to the
        // nearest rule that grants what the open asks (~0.25 µs a level
        // here): a rule at the working directory, with the rights of the
        // mount that holds it (so it changes nothing that is allowed),
        // makes the opens of files there cheap.
        if let Ok(cwd) = std::env::current_dir() {
            let holder = rules
                .iter()
                .filter_map(|r| Some((r.path.as_ref()?, r.access)))
                .filter(|(p, _)| cwd.starts_with(p))
                .max_by_key(|(p, _)| p.components().count());
            if let Some((p, access)) = holder {
                if *p != cwd {
                    rules.push(FsRule {
                        what: format!("{} (the working directory)", cwd.display()),
                        fd: None,
                        path: Some(cwd.clone()),
                        access,
                    });
                }
            }
        }
        // The runtime reads its own /proc files (maps, smaps, fd, exe);
        // the kernel's ptrace checks (which Landlock extends to processes
        // outside the domain) guard other processes' mem, environ and fd.
        rules.push(FsRule {
            what: "/proc (host; for the runtime's own files)".into(),
            fd: None,
            path: Some(PathBuf::from("/proc")),
            access: AccessFs::ReadFile | AccessFs::ReadDir,
        });
        if let Some(fd) = self.runtime_image {
            rules.push(FsRule {
                what: "the runtime's image (in the runtime cache)".into(),
                fd: Some(fd),
                path: None,
                access: AccessFs::ReadFile | AccessFs::Execute,
            });
        }
        for f in &self.extra_files {
            rules.push(FsRule {
                what: format!("{} (the --stats-json file)", f.display()),
                fd: None,
                path: Some(f.clone()),
                access: AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
            });
        }
        rules
    }
}

/// Landlock checks an open by walking from the file up to the nearest rule
/// that grants what the open asks, ~0.25 µs a level on this machine, and a
/// level more where the walk crosses a mount. A container's tree, or the
/// host's passed through, has one rule at its root, so every open of a
/// file four directories down paid ~1.2 µs (docs/BENCHMARKS.md). These are
/// rules at the mount points beneath a directory rule, each with the rights
/// of that rule (read and execute only, where the mount is read-only): they
/// stop the walk at the nearest mount and allow nothing the rule above did
/// not (a rule grants beneath an inode; every path to these inodes in this
/// mount namespace passes through the rule above). Mounts under `/proc`
/// and `/sys` get none (nothing is opened there often enough to matter).
///
/// `mountinfo` is `/proc/self/mountinfo` of the mount namespace the program
/// will run in.
fn mount_shortcuts(rules: &[FsRule], mountinfo: &str) -> Vec<FsRule> {
    let abi = LANDLOCK_ABI;
    let mut out: Vec<FsRule> = Vec::new();
    for m in picos_rt::kernel::fs::procview::parse_mountinfo(mountinfo.as_bytes()) {
        let point = PathBuf::from(std::ffi::OsStr::from_bytes(&m.point));
        if point.starts_with("/proc") || point.starts_with("/sys") {
            continue;
        }
        // The directory rule nearest above, not the mount point itself.
        let Some(holder) = rules
            .iter()
            .filter(|r| r.fd.is_none() && r.access.contains(AccessFs::ReadDir))
            .filter_map(|r| Some((r.path.as_ref()?, r.access)))
            .filter(|(p, _)| point.starts_with(p) && **p != point)
            .max_by_key(|(p, _)| p.components().count())
        else {
            continue;
        };
        let readonly = m.opts.split(|&c| c == b',').any(|o| o == b"ro");
        let access = if readonly {
            holder.1 & AccessFs::from_read(abi)
        } else {
            holder.1
        };
        let known = |p: &PathBuf| rules.iter().chain(&out).any(|r| r.path.as_ref() == Some(p));
        if access.is_empty() || known(&point) {
            continue;
        }
        out.push(FsRule {
            what: format!(
                "{} (a mount point: shortens Landlock's walk)",
                point.display()
            ),
            fd: None,
            path: Some(point),
            access,
        });
    }
    out
}

/// The Landlock ABI version of this kernel (0: none).
pub fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns the
    // ABI version; no memory is passed.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        0
    } else {
        v as i32
    }
}

// --- seccomp -----------------------------------------------------------------------------

const NS_FLAGS: u64 = 0x7E02_0000; // CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
const CLONE_NEWTIME: u64 = 0x80;
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
const MSG_FASTOPEN: u64 = 0x2000_0000;
const ADDR_NO_RANDOMIZE: u64 = 0x0040000;
const AF_UNIX: u64 = 1;
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;
const AF_NETLINK: u64 = 16;
const SOCK_STREAM: u64 = 1;
const IPPROTO_TCP: u64 = 6;

/// prctl's PR_SET_MM.
const PR_SET_MM: u64 = 35;

/// The PR_SET_MM forms a sandboxed process may use: the whole map at once
/// (the runtime's execve in place sets the new program's argument and
/// environment ranges with it) and its size query. They change what
/// /proc shows of the process itself, checked by the kernel; replacing
/// the executable's link (`exe_fd`) needs CAP_CHECKPOINT_RESTORE or
/// CAP_SYS_ADMIN, which the sandbox drops. The single-field forms stay
/// refused.
pub const PR_SET_MM_ALLOWED: &[(u64, &str)] = &[(14, "PR_SET_MM_MAP"), (15, "PR_SET_MM_MAP_SIZE")];

/// The prctl options a sandboxed program may use: those that read or set
/// the calling process's own state. Refused: PR_SET_MM (rewrites the
/// process's memory map fields; but see [`PR_SET_MM_ALLOWED`]),
/// PR_SET_PTRACER (lets others trace it),
/// PR_SET_SECUREBITS and PR_CAP_AMBIENT's raise (capabilities are gone
/// anyway), PR_SET_IO_FLUSHER and anything newer the table has not vetted.
pub const PRCTL_ALLOWED: &[(u64, &str)] = &[
    (1, "PR_SET_PDEATHSIG"),
    (2, "PR_GET_PDEATHSIG"),
    (3, "PR_GET_DUMPABLE"),
    (4, "PR_SET_DUMPABLE"),
    (5, "PR_GET_UNALIGN"),
    (7, "PR_GET_KEEPCAPS"),
    (8, "PR_SET_KEEPCAPS"),
    (9, "PR_GET_FPEMU"),
    (11, "PR_GET_FPEXC"),
    (13, "PR_GET_TIMING"),
    (15, "PR_SET_NAME"),
    (16, "PR_GET_NAME"),
    (19, "PR_GET_ENDIAN"),
    (21, "PR_GET_SECCOMP"),
    (22, "PR_SET_SECCOMP"),
    (23, "PR_CAPBSET_READ"),
    (24, "PR_CAPBSET_DROP"),
    (25, "PR_GET_TSC"),
    (26, "PR_SET_TSC"),
    (27, "PR_GET_SECUREBITS"),
    (29, "PR_SET_TIMERSLACK"),
    (30, "PR_GET_TIMERSLACK"),
    (33, "PR_MCE_KILL"),
    (34, "PR_MCE_KILL_GET"),
    (36, "PR_SET_CHILD_SUBREAPER"),
    (37, "PR_GET_CHILD_SUBREAPER"),
    (38, "PR_SET_NO_NEW_PRIVS"),
    (39, "PR_GET_NO_NEW_PRIVS"),
    (40, "PR_GET_TID_ADDRESS"),
    (41, "PR_SET_THP_DISABLE"),
    (42, "PR_GET_THP_DISABLE"),
    (45, "PR_SET_FP_MODE"),
    (46, "PR_GET_FP_MODE"),
    (52, "PR_GET_SPECULATION_CTRL"),
    (53, "PR_SET_SPECULATION_CTRL"),
    (59, "PR_SET_SYSCALL_USER_DISPATCH"),
    (62, "PR_SCHED_CORE"),
    (65, "PR_SET_MDWE"),
    (66, "PR_GET_MDWE"),
    (0x4155_5856, "PR_GET_AUXV"),
    (0x5356_4d41, "PR_SET_VMA"),
];

/// One argument check of the filter, as `picos sandbox explain` prints it.
pub struct Check {
    pub call: &'static str,
    pub allows: &'static str,
    pub why: &'static str,
}

/// The calls the filter allows only with some arguments, and why.
pub const CHECKS: &[Check] = &[
    Check {
        call: "clone",
        allows: "without a CLONE_NEW* flag",
        why: "a new namespace (user, mount, net, ...) is a new kernel attack surface",
    },
    Check {
        call: "unshare",
        allows: "without a CLONE_NEW* flag (CLONE_FILES, CLONE_FS, CLONE_SYSVSEM)",
        why: "as clone; the runtime itself unshares its descriptor table",
    },
    Check {
        call: "clone3",
        allows: "never (the runtime serves the program's clone3 with clone)",
        why: "its flags are in memory, which a filter cannot read",
    },
    Check {
        call: "ioctl",
        allows: "any request but TIOCSTI and TIOCLINUX (low 32 bits compared)",
        why: "they push input into the terminal the sandbox shares with its caller",
    },
    Check {
        call: "prctl",
        allows: "the options of sandbox::PRCTL_ALLOWED (the process's own state), and PR_SET_MM's \
                 PR_SET_MM_MAP (whole-map) form, whose executable link needs a dropped capability",
        why: "PR_SET_MM's single fields, PR_SET_PTRACER and the like change what others may do",
    },
    Check {
        call: "personality",
        allows: "a query (0xffffffff), PER_LINUX, PER_LINUX|ADDR_NO_RANDOMIZE",
        why: "MMAP_PAGE_ZERO and READ_IMPLIES_EXEC weaken the kernel's own defences",
    },
    Check {
        call: "socket",
        allows: "AF_UNIX; AF_NETLINK route; AF_INET/AF_INET6 TCP (any type with sandbox.net.udp)",
        why: "Landlock restricts TCP ports only; raw, packet and other families reach the host",
    },
    Check {
        call: "socketpair",
        allows: "AF_UNIX",
        why: "as socket",
    },
    Check {
        call: "sendto, sendmsg, sendmmsg",
        allows: "without MSG_FASTOPEN",
        why: "a TCP Fast Open send connects without connect(2), where Landlock checks ports",
    },
];

/// The argument check of call `name`, if the filter has one.
fn check_of(name: &str) -> Option<&'static Check> {
    CHECKS
        .iter()
        .find(|c| c.call.split(", ").any(|n| n == name))
}

/// What the filter does with a call of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filtered {
    Allowed,
    /// Allowed with some arguments only ([`CHECKS`]).
    Checked,
    /// Refused with EPERM: what the table denies (but `unshare`, which the
    /// runtime needs and the filter checks) and `clone3`.
    Refused,
}

/// What the filter does with `d`: the one place that decides it, for the
/// filter, `explain` and `explain --syscalls`.
pub fn filtered(d: &SyscallDef) -> Filtered {
    if d.name == "clone3" || d.sandbox == Sandbox::Deny && d.name != "unshare" {
        Filtered::Refused
    } else if check_of(d.name).is_some() {
        Filtered::Checked
    } else {
        Filtered::Allowed
    }
}

/// Why the filter allows a call the table marks `allow` or `check`.
pub fn reason(name: &str, class: Sandbox) -> &'static str {
    if let Some(c) = check_of(name) {
        return c.allows;
    }
    match name {
        "kill" | "tkill" | "tgkill" | "rt_sigqueueinfo" | "rt_tgsigqueueinfo"
        | "pidfd_send_signal" | "pidfd_open" => {
            "its target: Landlock's signal scoping (the tree's own processes only)"
        }
        "connect" | "bind" | "listen" | "accept" | "accept4" => {
            "TCP ports: Landlock's network rules; abstract sockets: its scoping"
        }
        "execve" | "execveat" => "what it runs: Landlock (execute right, beneath the mounts)",
        n if n.starts_with("set") && n.contains("id") || n == "setgroups" || n == "capset" => {
            "capabilities are dropped: only what an unprivileged process may do"
        }
        _ => match class {
            Sandbox::Allow => "touches nothing outside the process",
            Sandbox::Check => "its paths, files or targets: Landlock and the dropped capabilities",
            Sandbox::Deny => "refused",
        },
    }
}

/// The filter: [`bpf::program`] over the syscall table's `sandbox` column,
/// with the argument checks of [`CHECKS`]. A refused call fails with EPERM.
pub fn seccomp_program(udp: bool) -> Vec<bpf::Insn> {
    use bpf::{arg, Block, To, Verdict};
    let check = |f: &dyn Fn(&mut Block)| {
        let mut b = Block::default();
        f(&mut b);
        Verdict::Check(b)
    };
    let max = TABLE.iter().map(|d| d.nr).max().unwrap_or(0);
    bpf::program(max, |nr| {
        let Some(d) = TABLE.iter().find(|d| d.nr == nr) else {
            return Verdict::Deny;
        };
        match filtered(d) {
            Filtered::Allowed => return Verdict::Allow,
            Filtered::Refused => return Verdict::Deny,
            Filtered::Checked => {}
        }
        match d.name {
            "unshare" => check(&|b| {
                b.load(arg(0))
                    .jset((NS_FLAGS | CLONE_NEWTIME) as u32, To::Deny, To::Allow);
            }),
            "clone" => check(&|b| {
                b.load(arg(0)).jset(NS_FLAGS as u32, To::Deny, To::Allow);
            }),
            "ioctl" => check(&|b| {
                b.load(arg(1)).jeq(TIOCSTI as u32, To::Deny, To::Next).jeq(
                    TIOCLINUX as u32,
                    To::Deny,
                    To::Allow,
                );
            }),
            "prctl" => check(&|b| {
                b.load(arg(0));
                for &(o, _) in PRCTL_ALLOWED {
                    b.jeq(o as u32, To::Allow, To::Next);
                }
                // PR_SET_MM: its whole-map form only (see PR_SET_MM_ALLOWED).
                b.jeq(PR_SET_MM as u32, To::Next, To::Deny).load(arg(1));
                for &(o, _) in PR_SET_MM_ALLOWED {
                    b.jeq(o as u32, To::Allow, To::Next);
                }
                b.ret(false);
            }),
            "personality" => check(&|b| {
                b.load(arg(0)).jeq(0xffff_ffff, To::Allow, To::Next).jset(
                    !(ADDR_NO_RANDOMIZE as u32),
                    To::Deny,
                    To::Allow,
                );
            }),
            "socket" => check(&|b| {
                const NETLINK: u8 = 0;
                const INET: u8 = 1;
                b.load(arg(0))
                    .jeq(AF_UNIX as u32, To::Allow, To::Next)
                    .jeq(AF_NETLINK as u32, To::Label(NETLINK), To::Next)
                    .jeq(AF_INET as u32, To::Label(INET), To::Next)
                    .jeq(AF_INET6 as u32, To::Label(INET), To::Deny)
                    .label(NETLINK)
                    .load(arg(2))
                    .jeq(0, To::Allow, To::Deny)
                    .label(INET);
                if udp {
                    b.ret(true);
                } else {
                    b.load(arg(1))
                        .and(0xf)
                        .jeq(SOCK_STREAM as u32, To::Next, To::Deny)
                        .load(arg(2))
                        .jeq(0, To::Allow, To::Next)
                        .jeq(IPPROTO_TCP as u32, To::Allow, To::Deny);
                }
            }),
            "socketpair" => check(&|b| {
                b.load(arg(0)).jeq(AF_UNIX as u32, To::Allow, To::Deny);
            }),
            "sendto" | "sendmmsg" => check(&|b| {
                b.load(arg(3))
                    .jset(MSG_FASTOPEN as u32, To::Deny, To::Allow);
            }),
            "sendmsg" => check(&|b| {
                b.load(arg(2))
                    .jset(MSG_FASTOPEN as u32, To::Deny, To::Allow);
            }),
            n => unreachable!("{n} is in CHECKS but the filter has no check for it"),
        }
    })
}

// --- applying it -------------------------------------------------------------------------

/// What `apply` could not enforce (with `allow_weaker`), to say at start-up.
pub struct Applied {
    pub weaker: Option<String>,
}

fn setrlimit(resource: rustix::process::Resource, limit: u64) -> std::io::Result<()> {
    let lim = rustix::process::Rlimit {
        current: Some(limit),
        maximum: Some(limit),
    };
    rustix::process::setrlimit(resource, lim).map_err(std::io::Error::from)
}

/// Drops every capability: the bounding set (so that an execve as root
/// gains none back), the ambient set, then the effective, permitted and
/// inheritable sets. Without CAP_SETPCAP (not root) the bounding set
/// cannot be changed; no_new_privs keeps an exec from gaining anything.
fn drop_capabilities() -> std::io::Result<()> {
    const PR_CAPBSET_DROP: libc::c_int = 24;
    const PR_CAP_AMBIENT: libc::c_int = 47;
    const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments.
        let r = unsafe { libc::prctl(PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if r != 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINVAL) => break, // past the last capability
                Some(libc::EPERM) => break,  // no CAP_SETPCAP: nothing to drop
                _ => return Err(std::io::Error::last_os_error()),
            }
        }
    }
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset(2) with a live header and two data words, as version
    // 3 requires.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// mount_setattr(2) on a detached tree (rustix has no wrapper): `attrs`
/// set on every mount of it.
fn set_mount_attrs(tree: &std::os::fd::OwnedFd, attrs: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let a = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    // SAFETY: mount_setattr with a live descriptor, an empty C string and
    // a pointer to a live struct of the size passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &a as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// A host file or directory the private tree shows, at its own path.
struct Bind {
    host: PathBuf,
    readonly: bool,
    noexec: bool,
}

impl Policy<'_> {
    /// What the private tree holds: the host directories of the mounts
    /// (an overlay's lower one read-only: the runtime names it), the
    /// host's /proc read-only, and the extra files.
    fn binds(&self) -> Vec<Bind> {
        let mut v: Vec<Bind> = self
            .mounts()
            .iter()
            .filter(|m| matches!(m.kind, MountKind::Host | MountKind::Overlay))
            .map(|m| Bind {
                host: PathBuf::from(std::ffi::OsStr::from_bytes(&m.host)),
                readonly: m.readonly || m.kind == MountKind::Overlay,
                noexec: false,
            })
            .collect();
        if !v.iter().any(|b| b.host == Path::new("/proc")) {
            v.push(Bind {
                host: "/proc".into(),
                readonly: true,
                noexec: true,
            });
        }
        for f in &self.extra_files {
            v.push(Bind {
                host: f.clone(),
                readonly: false,
                noexec: true,
            });
        }
        // Parents before what they hold.
        v.sort_by_key(|b| b.host.components().count());
        // A directory inside one shown already with the same attributes is
        // shown by it (the trees are taken whole): `/usr/bin` for `/bin`
        // on a merged-/usr system, inside `/usr`. Each mount left out is a
        // few mount calls less at start-up.
        let mut kept: Vec<Bind> = Vec::new();
        for b in v {
            let holder = kept
                .iter()
                .filter(|k| b.host.starts_with(&k.host))
                .max_by_key(|k| k.host.components().count());
            match holder {
                Some(k) if k.readonly == b.readonly && k.noexec == b.noexec => {}
                _ => kept.push(b),
            }
        }
        kept
    }
}

/// A /proc of the tree's own: a new instance of the host's (same pids)
/// with `hidepid=ptraceable`, which lists and opens only the processes the
/// reader may trace (`invisible` would exempt the members of its `gid`,
/// root's group by default). Landlock lets a process of the domain trace none
/// outside it, so the host's other processes are not there at all, even for
/// a program that goes around the runtime. Needs the right to mount a proc
/// (root; a user namespace does not own the host's pid namespace: the
/// caller then binds the host's /proc).
fn own_proc(attrs: u64) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::mount::{fsconfig_set_string, fsopen, FsOpenFlags, MountAttrFlags};
    let fs = fsopen("proc", FsOpenFlags::FSOPEN_CLOEXEC)?;
    fsconfig_set_string(&fs, "hidepid", "ptraceable")?;
    crate::detached::create(&fs, MountAttrFlags::from_bits_retain(attrs as u32))
}

/// Opens (making the directories, or the file, where missing) `rel` in
/// the tree of `root`; returns a descriptor of it to mount on.
fn make_target(
    root: &std::os::fd::OwnedFd,
    rel: &Path,
    dir: bool,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{mkdirat, openat, Mode, OFlags};
    let mut cur = rustix::io::dup(root)?;
    let comps: Vec<_> = rel.components().collect();
    for (i, c) in comps.iter().enumerate() {
        let name = c.as_os_str();
        let last = i + 1 == comps.len();
        let path_only = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let next = match openat(&cur, name, path_only, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) if last && !dir => {
                drop(openat(
                    &cur,
                    name,
                    OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o600),
                )?);
                openat(&cur, name, path_only, Mode::empty())?
            }
            Err(rustix::io::Errno::NOENT) => {
                mkdirat(&cur, name, Mode::from_raw_mode(0o755))?;
                openat(&cur, name, path_only | OFlags::DIRECTORY, Mode::empty())?
            }
            Err(e) => return Err(e.into()),
        };
        cur = next;
    }
    Ok(cur)
}

/// Moves this process into a mount namespace of its own (and a user
/// namespace, mapping only the caller's ids to themselves, where it may
/// not make a mount namespace otherwise), whose root is an empty tmpfs
/// holding only what the policy shows: each host directory of the mounts
/// at its own host path (so the runtime's names stay right), read-only
/// ones read-only in the kernel, nothing set-user-ID or device-special.
/// Nothing else of the host's tree can be named, by any call: this is
/// what keeps a program that went around the runtime from a Unix socket
/// outside, or from changing the mode or times of a file outside, which
/// Landlock does not cover. Skipped when a mount shows the host's `/`.
fn private_tree(policy: &Policy<'_>) -> Result<(), SandboxError> {
    use rustix::fs::{Mode, OFlags};
    use rustix::mount::{move_mount, open_tree, MountAttrFlags, MoveMountFlags, OpenTreeFlags};
    use rustix::thread::{unshare_unsafe, UnshareFlags};
    let binds = policy.binds();
    if binds.iter().any(|b| b.host == Path::new("/")) {
        return Ok(());
    }
    let cwd = std::env::current_dir().map_err(|e| setup("the working directory", e))?;
    let maps = crate::detached::OwnIdMaps::of_caller();
    // SAFETY: the CLI has one thread; nothing it holds depends on the
    // namespaces it leaves.
    match unsafe { unshare_unsafe(UnshareFlags::NEWNS) } {
        Ok(()) => {}
        Err(rustix::io::Errno::PERM) => {
            // SAFETY: as above.
            unsafe { unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }
                .map_err(|e| setup("a user and mount namespace", e))?;
            maps.write()
                .map_err(|e| setup("a user namespace's id maps", e))?;
        }
        Err(e) => return Err(setup("a mount namespace", e)),
    }
    fn step(what: &'static str) -> impl Fn(rustix::io::Errno) -> SandboxError {
        move |e| setup(what, e)
    }
    rustix::mount::mount_change(
        "/",
        rustix::mount::MountPropagationFlags::PRIVATE | rustix::mount::MountPropagationFlags::REC,
    )
    .map_err(step("making the mount namespace private"))?;
    // Every tree to show, taken before anything is covered.
    let mut trees = Vec::new();
    for b in &binds {
        let what = b.host.display().to_string();
        let mut attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        if b.readonly {
            attrs |= MOUNT_ATTR_RDONLY;
        }
        if b.noexec {
            attrs |= MOUNT_ATTR_NOEXEC;
        }
        if b.host == Path::new("/proc") {
            if let Ok(proc) = own_proc(attrs) {
                trees.push(proc);
                continue;
            }
        }
        let tree = open_tree(
            rustix::fs::CWD,
            &b.host,
            OpenTreeFlags::OPEN_TREE_CLONE
                | OpenTreeFlags::OPEN_TREE_CLOEXEC
                | OpenTreeFlags::AT_RECURSIVE,
        )
        .map_err(|e| setup(&what, e))?;
        set_mount_attrs(&tree, attrs).map_err(|e| setup(&what, e))?;
        trees.push(tree);
    }
    let root = crate::detached::tmpfs_with(
        Some(1 << 20),
        Some("0755"),
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
    )
    .map_err(|e| setup("the root tmpfs", e))?;
    for (b, tree) in binds.iter().zip(&trees) {
        let what = b.host.display().to_string();
        let rel = b.host.strip_prefix("/").unwrap_or(&b.host);
        let target = make_target(&root, rel, b.host.is_dir()).map_err(|e| setup(&what, e))?;
        move_mount(
            tree,
            "",
            &target,
            "",
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
        )
        .map_err(|e| setup(&what, e))?;
    }
    // The new root, attached (over /proc, already taken: this namespace's
    // own), becomes the root; the old one is let go.
    move_mount(
        &root,
        "",
        rustix::fs::CWD,
        "/proc",
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .map_err(step("attaching the new root"))?;
    let top = rustix::fs::open(
        "/proc",
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(step("the new root"))?;
    rustix::process::fchdir(&top).map_err(step("the new root"))?;
    rustix::process::pivot_root(".", ".").map_err(step("pivot_root"))?;
    rustix::mount::unmount(".", rustix::mount::UnmountFlags::DETACH)
        .map_err(step("letting the host's tree go"))?;
    std::env::set_current_dir("/").map_err(|e| setup("the new root", e))?;
    // The caller's directory, if the tree shows it (else `/`).
    let _ = std::env::set_current_dir(&cwd);
    Ok(())
}

/// Confines this process (single-threaded, about to exec the runtime):
/// rlimits, capabilities, no_new_privs, Landlock, then seccomp (last: the
/// calls before it are ones the filter refuses).
pub fn apply(policy: &Policy<'_>) -> Result<Applied, SandboxError> {
    let settings = policy.settings;
    let abi = landlock_abi();
    let mut weaker = None;
    if abi < LANDLOCK_ABI_NUMBER {
        let have = if abi == 0 {
            "not available".to_string()
        } else {
            format!("ABI {abi}")
        };
        if !settings.allow_weaker {
            return Err(SandboxError::LandlockTooOld(have));
        }
        weaker = Some(format!(
            "Landlock is {have} here (the sandbox needs ABI {LANDLOCK_ABI_NUMBER}): what it \
             lacks is not enforced (sandbox.allow_weaker)"
        ));
    }
    if policy.container.is_none() {
        setrlimit(rustix::process::Resource::Core, 0).map_err(|e| setup("RLIMIT_CORE", e))?;
    }
    if let Some(n) = settings.max_open_files {
        setrlimit(rustix::process::Resource::Nofile, n)
            .map_err(|e| setup("sandbox.max_open_files", e))?;
    }
    private_tree(policy)?;
    if policy.container.is_none() {
        drop_capabilities().map_err(|e| setup("dropping capabilities", e))?;
    }

    let level = if settings.allow_weaker {
        CompatLevel::BestEffort
    } else {
        CompatLevel::HardRequirement
    };
    let ll = |e: landlock::RulesetError| setup("Landlock", e);
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(AccessFs::from_all(LANDLOCK_ABI))
        .map_err(ll)?;
    if !settings.net_tcp {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(ll)?;
    }
    let container = policy.container.unwrap_or_default();
    if !container.own_pids {
        ruleset = ruleset.scope(Scope::Signal).map_err(ll)?;
    }
    if !container.own_net {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(ll)?;
    }
    let mut ruleset = ruleset.create().map_err(ll)?;
    let rules = policy.fs_rules();
    let shortcuts = match std::fs::read_to_string("/proc/self/mountinfo") {
        Ok(info) => mount_shortcuts(&rules, &info),
        // Only a cost: the walks stay long.
        Err(_) => Vec::new(),
    };
    for r in &shortcuts {
        let Some(path) = &r.path else { continue };
        // A mount point that cannot be opened (shadowed, or not ours to
        // open) keeps the walk as long as before: nothing more.
        if let Ok(pfd) = PathFd::new(path) {
            ruleset = ruleset
                .add_rule(PathBeneath::new(pfd, r.landlock_access()))
                .map_err(|e| setup(&r.what, e))?;
        }
    }
    for r in rules {
        let access = r.landlock_access();
        ruleset = match (r.fd, &r.path) {
            (Some(fd), _) => {
                // SAFETY: `fd` is the root of a mount the CLI made, or the
                // runtime's image, each held open (MountSpec.fd,
                // runtime_image::Image) until the CLI execs the runtime.
                let fd = unsafe { BorrowedFd::borrow_raw(fd) };
                ruleset.add_rule(PathBeneath::new(fd, access))
            }
            (None, Some(p)) => {
                let pfd = PathFd::new(p).map_err(|e| setup(&r.what, e))?;
                ruleset.add_rule(PathBeneath::new(pfd, access))
            }
            (None, None) => continue,
        }
        .map_err(|e| setup(&r.what, e))?;
    }
    for &p in &settings.net_bind {
        ruleset = ruleset
            .add_rule(NetPort::new(p, AccessNet::BindTcp))
            .map_err(|e| setup("sandbox.net.bind", e))?;
    }
    for &p in &settings.net_connect {
        ruleset = ruleset
            .add_rule(NetPort::new(p, AccessNet::ConnectTcp))
            .map_err(|e| setup("sandbox.net.connect", e))?;
    }
    // restrict_self sets no_new_privs first.
    let status = ruleset.restrict_self().map_err(ll)?;
    if status.ruleset == landlock::RulesetStatus::NotEnforced {
        weaker.get_or_insert_with(|| "Landlock is not enforced".into());
    }
    let prog = seccomp_program(settings.net_udp);
    bpf::install(&prog, false).map_err(|e| setup("seccomp", e))?;
    Ok(Applied { weaker })
}

/// `picos sandbox explain`: the policy in words.
pub fn explain(policy: &Policy<'_>) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "The program may reach files only here (Landlock, kernel-enforced; and nothing else of \
         the host's file system exists in its mount namespace):"
    );
    let rw = AccessFs::from_all(LANDLOCK_ABI);
    for r in policy.fs_rules() {
        let how = if r.access == rw {
            "read, write, execute"
        } else if r.access.contains(AccessFs::Execute) {
            "read, execute"
        } else if r.access.contains(AccessFs::WriteFile) {
            "read, write"
        } else {
            "read"
        };
        let _ = writeln!(s, "  {:<22} {}", how, r.what);
    }
    for m in policy.mounts().iter() {
        if m.kind == MountKind::Host && !m.readonly {
            let host = String::from_utf8_lossy(&m.host);
            if host == "/" || host == "/dev" {
                let _ = writeln!(
                    s,
                    "  warning: the host's {host} is writable: its devices and files are reachable"
                );
            }
        }
    }
    let st = policy.settings;
    let ports = |v: &[u16]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
        }
    };
    let _ = writeln!(s, "\nNetwork (Landlock TCP rules; seccomp for the rest):");
    if st.net_tcp {
        let _ = writeln!(s, "  TCP bind and connect: any port (sandbox.net.tcp)");
    } else {
        let _ = writeln!(s, "  TCP bind:    ports {}", ports(&st.net_bind));
        let _ = writeln!(s, "  TCP connect: ports {}", ports(&st.net_connect));
    }
    let _ = writeln!(
        s,
        "  UDP, raw and other sockets: {}",
        if st.net_udp {
            "UDP allowed (any address and port)"
        } else {
            "refused (EPERM); UNIX sockets and netlink route queries allowed"
        }
    );
    let _ = writeln!(
        s,
        "\nOther processes: signals and abstract UNIX sockets reach the picoprocess tree only \
         (Landlock scoping); ptrace and /proc/PID/{{mem,environ,fd}} of other processes are \
         refused."
    );
    let _ = writeln!(
        s,
        "Privileges: every capability dropped; no_new_privs (set-user-ID gives nothing); \
         no core dumps{}.",
        match st.max_open_files {
            Some(n) => format!("; at most {n} open files"),
            None => String::new(),
        }
    );
    // The table's denied calls first, then those the filter refuses besides.
    let mut refused: Vec<_> = TABLE
        .iter()
        .filter(|d| filtered(d) == Filtered::Refused)
        .collect();
    refused.sort_by_key(|d| d.sandbox != Sandbox::Deny);
    let denied: Vec<&str> = refused.iter().map(|d| d.name).collect();
    let _ = writeln!(
        s,
        "\nSystem calls (seccomp): {} allowed ({} of them with argument checks), {} refused \
         with EPERM ('picos sandbox explain --syscalls' lists them all, with the reasons).",
        TABLE.len() - denied.len(),
        TABLE
            .iter()
            .filter(|d| filtered(d) == Filtered::Checked)
            .count(),
        denied.len()
    );
    for c in CHECKS {
        let _ = writeln!(s, "  {}: {}\n      ({})", c.call, c.allows, c.why);
    }
    let _ = writeln!(s, "  refused: {}", denied.join(" "));
    let _ = writeln!(
        s,
        "\nEvery rule is installed before the program's first instruction and holds for every \
         thread and child, even if the program takes over picos's runtime (docs/SECURITY.md)."
    );
    s
}

/// `picos sandbox explain --syscalls`: every system call, what the filter
/// does with it and why.
pub fn explain_syscalls() -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "{:>4}  {:<24} {:<9} WHY", "NR", "NAME", "FILTER");
    for d in TABLE {
        let (verdict, why) = match filtered(d) {
            // clone3 is refused for a reason of its own (CHECKS).
            Filtered::Refused => (
                "refused",
                check_of(d.name).map_or(
                    "host administration, or a way around the runtime (syscall table: deny)",
                    |c| c.why,
                ),
            ),
            Filtered::Checked => ("checked", reason(d.name, d.sandbox)),
            Filtered::Allowed => ("allowed", reason(d.name, d.sandbox)),
        };
        let _ = writeln!(s, "{:>4}  {:<24} {:<9} {}", d.nr, d.name, verdict, why);
    }
    s
}

/// The same policy through seccompiler (one comparison per call, in a
/// chain): the reference [`seccomp_program`] is checked against.
#[cfg(test)]
mod reference {
    use super::*;
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
        SeccompFilter, SeccompRule, TargetArch,
    };
    use std::collections::BTreeMap;

    fn rule(conds: Vec<Cond>) -> SeccompRule {
        SeccompRule::new(conds).expect("the sandbox's seccomp rules are well formed")
    }

    fn cond(arg: u8, len: Len, op: Op, value: u64) -> Cond {
        Cond::new(arg, len, op, value).expect("the sandbox's seccomp conditions are well formed")
    }

    /// The seccomp rules: syscall number → conditions (empty: always allowed).
    /// A call missing from the map fails with EPERM.
    pub fn seccomp_rules(udp: bool) -> BTreeMap<i64, Vec<SeccompRule>> {
        let mut map = BTreeMap::new();
        for d in TABLE {
            let nr = d.nr as i64;
            let rules = match (d.name, d.sandbox) {
                ("unshare", _) => vec![rule(vec![cond(
                    0,
                    Len::Qword,
                    Op::MaskedEq(NS_FLAGS | CLONE_NEWTIME),
                    0,
                )])],
                (_, Sandbox::Deny) | ("clone3", _) => continue,
                ("clone", _) => vec![rule(vec![cond(0, Len::Qword, Op::MaskedEq(NS_FLAGS), 0)])],
                ("ioctl", _) => vec![rule(vec![
                    cond(1, Len::Dword, Op::Ne, TIOCSTI),
                    cond(1, Len::Dword, Op::Ne, TIOCLINUX),
                ])],
                ("prctl", _) => PRCTL_ALLOWED
                    .iter()
                    .map(|&(o, _)| rule(vec![cond(0, Len::Dword, Op::Eq, o)]))
                    .chain(PR_SET_MM_ALLOWED.iter().map(|&(o, _)| {
                        rule(vec![
                            cond(0, Len::Dword, Op::Eq, PR_SET_MM),
                            cond(1, Len::Dword, Op::Eq, o),
                        ])
                    }))
                    .collect(),
                ("personality", _) => vec![
                    rule(vec![cond(0, Len::Dword, Op::Eq, 0xffff_ffff)]),
                    rule(vec![cond(
                        0,
                        Len::Dword,
                        Op::MaskedEq(0xffff_ffff & !ADDR_NO_RANDOMIZE),
                        0,
                    )]),
                ],
                ("socket", _) => {
                    let mut r = vec![
                        rule(vec![cond(0, Len::Dword, Op::Eq, AF_UNIX)]),
                        rule(vec![
                            cond(0, Len::Dword, Op::Eq, AF_NETLINK),
                            cond(2, Len::Dword, Op::Eq, 0),
                        ]),
                    ];
                    for fam in [AF_INET, AF_INET6] {
                        if udp {
                            r.push(rule(vec![cond(0, Len::Dword, Op::Eq, fam)]));
                        } else {
                            for proto in [0, IPPROTO_TCP] {
                                r.push(rule(vec![
                                    cond(0, Len::Dword, Op::Eq, fam),
                                    cond(1, Len::Dword, Op::MaskedEq(0xf), SOCK_STREAM),
                                    cond(2, Len::Dword, Op::Eq, proto),
                                ]));
                            }
                        }
                    }
                    r
                }
                ("socketpair", _) => vec![rule(vec![cond(0, Len::Dword, Op::Eq, AF_UNIX)])],
                ("sendto" | "sendmmsg", _) => {
                    vec![rule(vec![cond(
                        3,
                        Len::Dword,
                        Op::MaskedEq(MSG_FASTOPEN),
                        0,
                    )])]
                }
                ("sendmsg", _) => vec![rule(vec![cond(
                    2,
                    Len::Dword,
                    Op::MaskedEq(MSG_FASTOPEN),
                    0,
                )])],
                _ => Vec::new(),
            };
            map.insert(nr, rules);
        }
        map
    }

    /// The compiled filter.
    pub fn seccomp_program(udp: bool) -> seccompiler::BpfProgram {
        let filter = SeccompFilter::new(
            seccomp_rules(udp),
            SeccompAction::Errno(libc::EPERM as u32),
            SeccompAction::Allow,
            TargetArch::x86_64,
        )
        .expect("the sandbox's seccomp filter is well formed");
        filter
            .try_into()
            .expect("the sandbox's seccomp filter compiles")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_rule(path: &str, access: BitFlags<AccessFs>) -> FsRule {
        FsRule {
            what: path.into(),
            fd: None,
            path: Some(path.into()),
            access,
        }
    }

    #[test]
    fn mount_shortcuts_carry_the_rights_above_and_no_more() {
        let all = AccessFs::from_all(LANDLOCK_ABI);
        let read = AccessFs::from_read(LANDLOCK_ABI);
        let rules = vec![
            dir_rule("/", all),
            dir_rule("/srv", read),
            dir_rule("/proc", AccessFs::ReadFile | AccessFs::ReadDir),
            // A file rule (--stats-json) is no directory above anything.
            dir_rule("/tmp/s.json", AccessFs::ReadFile | AccessFs::WriteFile),
        ];
        let info = "\
22 1 0:21 / / rw,relatime - ext4 /dev/sda rw
23 22 0:22 / /proc rw,nosuid - proc proc rw
24 23 0:23 / /proc/sys ro,nosuid - proc proc ro
25 22 0:24 / /sys ro - sysfs sysfs ro
26 22 0:25 /w /work rw,relatime - ext4 /dev/sda rw
27 22 0:26 /u /usr ro,nosuid - ext4 /dev/sda rw
28 22 0:27 / /srv/data rw - tmpfs tmpfs rw
29 22 0:28 / /my\\040dir rw - tmpfs tmpfs rw
30 22 0:29 /h /etc/hosts ro,nosuid - ext4 /dev/sda rw
31 22 0:30 / /srv rw - tmpfs tmpfs rw
32 22 0:31 / /tmp/s.json/x rw - tmpfs tmpfs rw
33 22 0:32 / /a\\040b\\134c\\011\\0 rw - tmpfs tmpfs rw
bad line
";
        let got: Vec<(String, BitFlags<AccessFs>)> = mount_shortcuts(&rules, info)
            .into_iter()
            .map(|r| (r.path.unwrap().display().to_string(), r.access))
            .collect();
        assert_eq!(
            got,
            vec![
                // rw beneath `/`: all of `/`'s rights.
                ("/work".to_string(), all),
                // A read-only mount: read and execute only.
                ("/usr".to_string(), read),
                // rw, but beneath the read-only rule at /srv: its rights.
                ("/srv/data".to_string(), read),
                ("/my dir".to_string(), all),
                ("/etc/hosts".to_string(), read),
                // /, /proc..., /sys and /srv (a rule already) get none;
                // /tmp/s.json/x is beneath `/` (not the file rule).
                ("/tmp/s.json/x".to_string(), all),
                // Octal escapes undone; a backslash without three octal
                // digits after it kept.
                ("/a b\\c\t\\0".to_string(), all),
            ]
        );
    }

    #[test]
    fn the_filter_refuses_what_the_table_denies() {
        for udp in [false, true] {
            let rules = reference::seccomp_rules(udp);
            for d in TABLE {
                let present = rules.contains_key(&(d.nr as i64));
                let expected =
                    d.name == "unshare" || (d.sandbox != Sandbox::Deny && d.name != "clone3");
                assert_eq!(present, expected, "{}", d.name);
            }
        }
    }

    /// The tree answers every call as seccompiler's chain does: every
    /// number with its arguments 0, each argument of the checked calls set
    /// to each interesting value, and random mixes of them.
    #[test]
    fn the_tree_agrees_with_seccompiler() {
        const X86_64: u32 = 0xC000_003E;
        let mut values: Vec<u64> = vec![
            0,
            1,
            2,
            3,
            6,
            10,
            16,
            17,
            132,
            0xf,
            0x801,
            0x80001,
            TIOCSTI,
            TIOCLINUX,
            TIOCSTI | 1 << 32,
            0x5413,
            0xffff_ffff,
            0xffff_ffff_ffff_ffff,
            ADDR_NO_RANDOMIZE,
            ADDR_NO_RANDOMIZE | 0x0400000,
            0x0100000,
            MSG_FASTOPEN,
            MSG_FASTOPEN | 0x40,
            0x40,
            NS_FLAGS,
            0x80,
            0x400,
            0x1_0000_0000,
            0x11,
            0x3d0f00,
        ];
        values.extend(PRCTL_ALLOWED.iter().map(|&(o, _)| o));
        values.extend(PR_SET_MM_ALLOWED.iter().map(|&(o, _)| o));
        values.extend([28, 35, 0x59616d61, 44, 47]);
        values.extend((0..31).map(|b| 1u64 << b).filter(|b| b & NS_FLAGS != 0));
        let max = TABLE.iter().map(|d| d.nr).max().unwrap();
        let checked: Vec<u32> = TABLE
            .iter()
            .filter(|d| check_of(d.name).is_some())
            .map(|d| d.nr)
            .collect();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for udp in [false, true] {
            let tree = seccomp_program(udp);
            assert!(tree.len() < 400, "{} instructions", tree.len());
            let chain: Vec<bpf::Insn> = reference::seccomp_program(udp)
                .iter()
                .map(|i| bpf::Insn {
                    code: i.code,
                    jt: i.jt,
                    jf: i.jf,
                    k: i.k,
                })
                .collect();
            let same = |nr: u32, args: [u64; 6]| {
                let (a, b) = (
                    bpf::run(&tree, X86_64, nr, args),
                    bpf::run(&chain, X86_64, nr, args),
                );
                assert_eq!(a, b, "nr {nr} args {args:x?} (udp {udp})");
            };
            for nr in (0..=max + 8).chain([0x4000_0000, 0x4000_0001, 0x4000_0000 + 16]) {
                same(nr, [0; 6]);
            }
            for &nr in &checked {
                for pos in 0..4 {
                    for &v in &values {
                        let mut args = [0; 6];
                        args[pos] = v;
                        same(nr, args);
                    }
                }
                for _ in 0..3000 {
                    let mut args = [0; 6];
                    for a in args.iter_mut().take(4) {
                        *a = values[(rnd() % values.len() as u64) as usize];
                    }
                    same(nr, args);
                }
            }
            // Another architecture: killed, not served.
            assert_eq!(bpf::run(&tree, 0x4000_0003, 1, [0; 6]), bpf::RET_KILL);
            assert_eq!(
                bpf::run(&tree, X86_64, 16, [0, TIOCSTI, 0, 0, 0, 0]),
                bpf::RET_EPERM
            );
            assert_eq!(bpf::run(&tree, X86_64, 0, [0; 6]), bpf::RET_ALLOW);
            // prctl(PR_SET_MM, PR_SET_MM_MAP): allowed; another field: not.
            let prctl = |a0, a1| bpf::run(&tree, X86_64, 157, [a0, a1, 0, 0, 0, 0]);
            assert_eq!(prctl(PR_SET_MM, 14), bpf::RET_ALLOW);
            assert_eq!(prctl(PR_SET_MM, 15), bpf::RET_ALLOW);
            assert_eq!(prctl(PR_SET_MM, 1), bpf::RET_EPERM);
            assert_eq!(prctl(PR_SET_MM, 13), bpf::RET_EPERM);
        }
    }

    #[test]
    fn every_call_has_a_verdict_and_a_reason() {
        let text = explain_syscalls();
        assert_eq!(text.lines().count(), TABLE.len() + 1);
        for l in text.lines().skip(1) {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert!(["allowed", "checked", "refused"].contains(&f[2]), "{l}");
            assert!(f.len() > 3, "no reason: {l}");
        }
        assert!(text.contains(" ptrace                   refused"));
        assert!(text.contains(" ioctl                    checked   any request but TIOCSTI"));
    }

    #[test]
    fn default_mounts_refuse_the_root_as_working_directory() {
        assert!(matches!(
            default_mounts(Path::new("/")),
            Err(SandboxError::CwdIsRoot)
        ));
        let m = default_mounts(Path::new("/usr/share")).unwrap();
        assert_eq!(m[0].path, "/");
        let cwd = m.iter().find(|m| m.path == "/usr/share").unwrap();
        assert!(!cwd.readonly);
        assert!(m.iter().any(|m| m.path == "/usr" && m.readonly));
        assert!(m.iter().any(|m| m.path == "/tmp" && m.kind == "tmpfs"));
        // Every mount point's parent is mounted before it.
        for (i, x) in m.iter().enumerate().skip(1) {
            assert!(m[..i]
                .iter()
                .any(|p| p.path == "/" || x.path.starts_with(&format!("{}/", p.path))));
        }
    }
}
