//! The file systems the CLI makes for `type = "tmpfs"` and `type =
//! "overlay"` mounts: kernel file system instances attached nowhere in the
//! host's tree (the new mount API: `fsopen`, `fsconfig`, `fsmount`), each
//! reached only through one descriptor of its root. The picoprocess inherits
//! the descriptors, and so does every process of its tree (fork, and execve,
//! where each runtime passes them on to the next), so the whole tree sees the
//! same files; nothing outside the tree can reach them, and they are gone
//! when the last process of the tree ends.
//!
//! - tmpfs: a tmpfs instance (`size` caps it).
//! - overlay: an overlay whose lower layer is the host directory, never
//!   written, and whose upper and work directories are in a private tmpfs
//!   (so every change, deletions included, stays in memory: gVisor's rootfs
//!   overlay).
//! - dev: a tmpfs holding the harmless devices of the host's /dev (bind
//!   mounts of the host's nodes: `picos_abi::DEV_DEVICES`), a devpts
//!   instance of its own at `pts` (with `ptmx` a link into it), an empty
//!   `shm` and the usual symlinks (`fd`, `stdin`, ...).
//!
//! Making a file system needs `CAP_SYS_ADMIN` in the user namespace that
//! owns the mount namespace. As root, the CLI makes them itself. Otherwise
//! a child process makes them in a user namespace of its own (mapping the
//! caller's uid and gid to themselves only) and sends the descriptors back
//! over a socket; the picoprocess itself stays in the caller's namespaces.
//! Files there belong to the caller; other owners cannot be set (as a user
//! could not natively).

use picos_abi::{DEV_DEVICES as DEVICES, DEV_LINKS};
use rustix::fd::{AsFd, OwnedFd};
use rustix::mount::{
    fsconfig_create, fsconfig_set_flag, fsconfig_set_string, fsmount, fsopen, FsMountFlags,
    FsOpenFlags, MountAttrFlags,
};
use std::io;
use std::path::{Path, PathBuf};

/// One file system to make.
#[derive(Debug, Clone)]
pub enum Request {
    /// A tmpfs of at most `size` bytes (the kernel's default: half the RAM).
    Tmpfs { size: Option<u64> },
    /// An overlay of host directory `lower` (canonical), its changes in a
    /// tmpfs of at most `size` bytes.
    Overlay { lower: PathBuf, size: Option<u64> },
    /// A /dev of the library OS: a tmpfs of at most `size` bytes holding
    /// the harmless devices of the host's /dev (`DEV_DEVICES`, each a bind
    /// mount of the host's node), a devpts of its own, `shm` and the usual
    /// symlinks.
    Dev { size: Option<u64> },
}

/// Makes every file system of `reqs`, in order; returns their roots'
/// descriptors (close-on-exec: the caller clears it on those it passes on).
pub fn make(reqs: &[Request]) -> io::Result<Vec<OwnedFd>> {
    if reqs.is_empty() {
        return Ok(Vec::new());
    }
    // The lower directories' owners and modes, as this process sees them
    // (in a user namespace another owner would read as the overflow id).
    let owners: Vec<Option<Owner>> = reqs
        .iter()
        .map(|r| match r {
            Request::Overlay { lower, .. } => rustix::fs::stat(lower).ok().map(|st| Owner {
                uid: st.st_uid,
                gid: st.st_gid,
                mode: st.st_mode & 0o7777,
            }),
            _ => None,
        })
        .collect();
    match make_here(reqs, false, &owners) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => make_in_user_namespace(reqs, &owners),
        r => r,
    }
}

/// What maps only the caller's ids to themselves in a user namespace it
/// makes (setgroups denied first, as an unprivileged map must). Taken
/// before the namespace: inside it, until the maps are written, the ids
/// read as the overflow ones.
pub(crate) struct OwnIdMaps([(&'static str, String); 3]);

impl OwnIdMaps {
    pub(crate) fn of_caller() -> OwnIdMaps {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        OwnIdMaps([
            ("/proc/self/setgroups", "deny".to_string()),
            ("/proc/self/uid_map", format!("{uid} {uid} 1")),
            ("/proc/self/gid_map", format!("{gid} {gid} 1")),
        ])
    }

    /// Writes them, from inside the new user namespace.
    pub(crate) fn write(&self) -> io::Result<()> {
        for (path, value) in &self.0 {
            std::fs::write(path, value)
                .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
        }
        Ok(())
    }
}

/// A lower directory's owner and mode.
#[derive(Clone, Copy, Debug)]
struct Owner {
    uid: u32,
    gid: u32,
    mode: u32,
}

/// Makes them in this process. `userns`: the process is in a user namespace
/// of its own (overlay then keeps its attributes in `user.` extended
/// attributes, as it must there). `owners`: each overlay's lower
/// directory's owner and mode, as the caller sees them.
fn make_here(reqs: &[Request], userns: bool, owners: &[Option<Owner>]) -> io::Result<Vec<OwnedFd>> {
    reqs.iter()
        .enumerate()
        .map(|(i, r)| make_one(r, userns, owners.get(i).copied().flatten()))
        .collect()
}

fn tmpfs(size: Option<u64>) -> io::Result<OwnedFd> {
    tmpfs_with(size, None, MountAttrFlags::empty())
}

/// A tmpfs of at most `size` bytes, its root of `mode`, mounted with
/// `attrs`, attached nowhere: its root's descriptor (close-on-exec).
pub(crate) fn tmpfs_with(
    size: Option<u64>,
    mode: Option<&str>,
    attrs: MountAttrFlags,
) -> io::Result<OwnedFd> {
    let fs = fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)?;
    if let Some(m) = mode {
        fsconfig_set_string(fs.as_fd(), "mode", m)?;
    }
    if let Some(s) = size {
        fsconfig_set_string(fs.as_fd(), "size", s.to_string().as_str())?;
    }
    create(&fs, attrs)
}

/// Creates the file system configured in `fs` and mounts it, attached
/// nowhere, with `attrs`: its root's descriptor (close-on-exec).
pub(crate) fn create(fs: &OwnedFd, attrs: MountAttrFlags) -> io::Result<OwnedFd> {
    fsconfig_create(fs.as_fd())?;
    Ok(fsmount(fs.as_fd(), FsMountFlags::FSMOUNT_CLOEXEC, attrs)?)
}

/// Makes the /dev of a `type = "dev"` mount.
fn make_dev(size: Option<u64>) -> io::Result<OwnedFd> {
    use rustix::fs::{mkdirat, openat, symlinkat, FileType, Mode, OFlags};
    use rustix::mount::{move_mount, open_tree, MoveMountFlags, OpenTreeFlags};
    let root = tmpfs_with(size, Some("0755"), MountAttrFlags::empty())?;
    let bind = |host: &str, name: &str| -> io::Result<()> {
        let tree = open_tree(
            rustix::fs::CWD,
            host,
            OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
        )?;
        Ok(move_mount(
            tree.as_fd(),
            "",
            root.as_fd(),
            name,
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?)
    };
    for name in DEVICES {
        let host = format!("/dev/{name}");
        match rustix::fs::stat(host.as_str()) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice => {}
            // Not on this host (or not a device): left out.
            _ => continue,
        }
        drop(openat(
            root.as_fd(),
            *name,
            OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        )?);
        bind(&host, name)?;
    }
    // A devpts of its own (as a container's): the tree's terminals, which
    // no other process's are among; /dev/ptmx is its ptmx (a link).
    mkdirat(root.as_fd(), "pts", Mode::from_raw_mode(0o755))?;
    let pts = fsopen("devpts", FsOpenFlags::FSOPEN_CLOEXEC)?;
    fsconfig_set_string(pts.as_fd(), "ptmxmode", "0666")?;
    fsconfig_set_string(pts.as_fd(), "mode", "0620")?;
    let pts = create(
        &pts,
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )?;
    move_mount(
        pts.as_fd(),
        "",
        root.as_fd(),
        "pts",
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )?;
    mkdirat(root.as_fd(), "shm", Mode::from_raw_mode(0o1777))?;
    // (mkdir's mode is masked by the umask.)
    let shm = openat(
        root.as_fd(),
        "shm",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::fchmod(&shm, Mode::from_raw_mode(0o1777))?;
    for (name, target) in DEV_LINKS {
        symlinkat(*target, root.as_fd(), *name)?;
    }
    Ok(root)
}

fn make_one(r: &Request, userns: bool, owner: Option<Owner>) -> io::Result<OwnedFd> {
    match r {
        Request::Tmpfs { size } => tmpfs(*size),
        Request::Dev { size } => make_dev(*size),
        Request::Overlay { lower, size } => {
            use rustix::fs::{mkdirat, Mode};
            let upper = tmpfs(*size)?;
            mkdirat(upper.as_fd(), "upper", Mode::from_raw_mode(0o755))?;
            // The overlay's root takes its owner and mode from the upper
            // directory: the lower one's (as root; in a user namespace the
            // owner stays the caller, with the caller's native access).
            let st =
                owner.ok_or_else(|| io::Error::other("the lower directory's owner is unknown"))?;
            let up = rustix::fs::openat(
                upper.as_fd(),
                "upper",
                rustix::fs::OFlags::RDONLY
                    | rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            if !userns {
                rustix::fs::fchown(
                    &up,
                    Some(rustix::fs::Uid::from_raw(st.uid)),
                    Some(rustix::fs::Gid::from_raw(st.gid)),
                )?;
            }
            let mut mode = st.mode;
            if userns && st.uid != rustix::process::getuid().as_raw() {
                // In a user namespace the root belongs to the caller, not to
                // the lower directory's owner: give the owner the access
                // the caller has natively (its group's or everyone's), so
                // that it cannot write there where natively it could not.
                let theirs = if st.gid == rustix::process::getgid().as_raw() {
                    (mode >> 3) & 0o7
                } else {
                    mode & 0o7
                };
                mode = (mode & !0o700) | (theirs << 6);
            }
            rustix::fs::fchmod(&up, Mode::from_raw_mode(mode))?;
            mkdirat(upper.as_fd(), "work", Mode::from_raw_mode(0o755))?;
            let fs = fsopen("overlay", FsOpenFlags::FSOPEN_CLOEXEC)?;
            set_lower(&fs, lower)?;
            let at = |d: &str| {
                format!(
                    "/proc/self/fd/{}/{d}",
                    rustix::fd::AsRawFd::as_raw_fd(&upper)
                )
            };
            fsconfig_set_string(fs.as_fd(), "upperdir", at("upper").as_str())?;
            fsconfig_set_string(fs.as_fd(), "workdir", at("work").as_str())?;
            if userns {
                fsconfig_set_flag(fs.as_fd(), "userxattr")?;
            }
            // The overlay holds its upper layer; this descriptor of the
            // tmpfs can go.
            create(&fs, MountAttrFlags::empty())
        }
    }
}

/// Sets the overlay's lower layer to `lower`: `lowerdir+` (Linux 6.8+),
/// which takes the path as it is, else `lowerdir` with overlay's escapes
/// (`:` separates layers, `\` escapes).
fn set_lower(fs: &OwnedFd, lower: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = lower.as_os_str().as_bytes();
    match fsconfig_set_string(fs.as_fd(), "lowerdir+", lower) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::INVAL) => {
            let mut v = Vec::with_capacity(bytes.len());
            for &c in bytes {
                if c == b':' || c == b'\\' || c == b',' {
                    v.push(b'\\');
                }
                v.push(c);
            }
            let s = std::ffi::OsStr::from_bytes(&v);
            Ok(fsconfig_set_string(fs.as_fd(), "lowerdir", s)?)
        }
        Err(e) => Err(e.into()),
    }
}

/// Makes them in a child process in a user namespace of its own, which
/// sends the descriptors back.
fn make_in_user_namespace(reqs: &[Request], owners: &[Option<Owner>]) -> io::Result<Vec<OwnedFd>> {
    use rustix::net::{
        recvmsg, sendmsg, socketpair, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage,
        RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
    };
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let maps = OwnIdMaps::of_caller();
    // SAFETY: fork(2); the CLI has one thread, so the child may go on
    // (allocating included) until its _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        drop(ours);
        let result = (|| -> io::Result<Vec<OwnedFd>> {
            use rustix::thread::{unshare_unsafe, UnshareFlags};
            // SAFETY: the child has one thread and shares nothing with the
            // parent that a new user and mount namespace would break.
            unsafe { unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }?;
            maps.write()?;
            make_here(reqs, true, owners)
        })();
        let mut iov_byte = [0u8; 4];
        let code = match &result {
            Ok(_) => 0,
            Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
        };
        iov_byte.copy_from_slice(&(code as u32).to_le_bytes());
        let fds: Vec<rustix::fd::BorrowedFd<'_>> = match &result {
            Ok(v) => v.iter().map(|f| f.as_fd()).collect(),
            Err(_) => Vec::new(),
        };
        let mut space =
            vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(fds.len().max(1)))];
        let mut anc = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() {
            anc.push(SendAncillaryMessage::ScmRights(&fds));
        }
        let ok = sendmsg(
            &theirs,
            &[io::IoSlice::new(&iov_byte)],
            &mut anc,
            SendFlags::empty(),
        )
        .is_ok();
        // SAFETY: _exit(2) ends the child without running the parent's
        // exit handlers or flushing its buffers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) }
    }
    drop(theirs);
    let mut code = [0u8; 4];
    let mut space =
        vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(reqs.len()))];
    let mut anc = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        &ours,
        &mut [io::IoSliceMut::new(&mut code)],
        &mut anc,
        RecvFlags::CMSG_CLOEXEC,
    );
    let mut fds = Vec::new();
    for m in anc.drain() {
        if let RecvAncillaryMessage::ScmRights(r) = m {
            fds.extend(r);
        }
    }
    let mut status = 0;
    // SAFETY: waitpid(2) of the child forked above, into a live int.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let got = got?;
    if got.bytes != 4 {
        return Err(io::Error::other(
            "the process that makes the file systems ended without an answer",
        ));
    }
    match u32::from_le_bytes(code) {
        0 if fds.len() == reqs.len() => Ok(fds),
        0 => Err(io::Error::other(
            "the process that makes the file systems sent too few",
        )),
        e => Err(io::Error::from_raw_os_error(e as i32)),
    }
}
