//! The manifest's `[[fs.mounts]]` as the runtime gets them: host paths made
//! canonical and checked, and the guest/host mapping the CLI needs before the
//! runtime runs (the program's path, the working directory).
//!
//! The runtime resolves every path the program gives through the same table
//! (crates/picos-rt/src/kernel/fs/mount.rs; docs/FILESYSTEM.md). The CLI only
//! maps paths lexically (no symlinks followed across mounts): enough to find
//! the program and the start directory, which the runtime then opens through
//! its own resolution.

use crate::detached::Request;
use crate::manifest::Mount;
use picos_abi::{MountKind, MountSpec};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why the manifest's mounts cannot be used on this host.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// Mounts are given but none at `/`.
    #[error(
        "fs.mounts: no mount at \"/\": a manifest that lists mounts must say what the \
         program sees at \"/\" (e.g. path = \"/\", uri = \"file:/srv/rootfs\")"
    )]
    NoRoot,
    /// More mounts than the runtime takes.
    #[error("fs.mounts: {0} mounts; picos takes at most {max}", max = picos_abi::MAX_MOUNTS)]
    TooMany(usize),
    /// A mount's host directory cannot be used.
    #[error("fs.mounts[{index}] ({guest}): host directory {host}: {reason}")]
    Host {
        index: usize,
        guest: String,
        host: String,
        reason: String,
    },
    /// A tmpfs or an overlay could not be made.
    #[error("fs.mounts[{index}] ({guest}): cannot make the {kind} file system: {reason}")]
    Make {
        index: usize,
        guest: String,
        kind: String,
        reason: String,
    },
    /// A mount point does not exist in the mount that holds it.
    #[error(
        "fs.mounts[{index}] ({guest}): the mount point does not exist in the mount of {parent} \
         (no directory {host}); create it"
    )]
    NoMountPoint {
        index: usize,
        guest: String,
        parent: String,
        host: String,
    },
    /// A writable mount reaches an exclusive mount's host directory through
    /// another guest path: changes made there would break the exclusive
    /// mount's promise (docs/FILESYSTEM.md, "The coherence rule").
    #[error(
        "fs.mounts[{index}] ({guest}) is exclusive, but the writable fs.mounts[{writable}] \
         ({writable_guest}) can change what it shows at {shown}, through {through}: mount one \
         at the other's place, make fs.mounts[{writable}] read-only, or drop `exclusive`"
    )]
    ExclusiveOverlap {
        index: usize,
        guest: String,
        writable: usize,
        writable_guest: String,
        through: String,
        shown: String,
    },
}

/// The coherence rule of exclusive mounts, as far as the manifest can
/// break it: no writable mount may change what an exclusive mount shows.
/// That is, where one's host directory lies in the other's, the guest path
/// at which the one shows the other's directory must be held by another
/// mount (which hides it there). Compared by canonical host paths; host
/// bind mounts and hard links are beyond it.
fn check_exclusive(out: &[MountSpec]) -> Result<(), MountError> {
    use picos_abi::{deepest_mount, join_rest, rest_after};
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for (i, x) in out.iter().enumerate().filter(|(_, m)| m.exclusive) {
        // (A tmpfs changes no host directory, and an overlay never writes
        // its lower one.)
        for (j, w) in out
            .iter()
            .enumerate()
            .filter(|(_, m)| !m.readonly && !m.detached())
        {
            // The writable directory inside the exclusive one, which shows
            // it at `shown`: another mount must hold that path. Or the
            // exclusive directory inside the writable one, which shows it
            // at `through`: the exclusive mount must be mounted there.
            let overlap = rest_after(&x.host, &w.host)
                .and_then(|rest| {
                    let shown = join_rest(&x.guest, rest);
                    (deepest_mount(out, &shown, None) == Some(i)).then(|| (w.guest.clone(), shown))
                })
                .or_else(|| {
                    let through = join_rest(&w.guest, rest_after(&w.host, &x.host)?);
                    (deepest_mount(out, &through, None) == Some(j))
                        .then(|| (through, x.guest.clone()))
                });
            if let Some((through, shown)) = overlap {
                return Err(MountError::ExclusiveOverlap {
                    index: i,
                    guest: lossy(&x.guest),
                    writable: j,
                    writable_guest: lossy(&w.guest),
                    through: lossy(&through),
                    shown: lossy(&shown),
                });
            }
        }
    }
    Ok(())
}

/// The runtime's view of `mounts`: empty when the program sees the host's
/// tree unchanged (no mounts, or only `/` from `file:/` read-write), so the
/// runtime passes paths through as it always has.
pub fn specs(mounts: &[Mount]) -> Result<Vec<MountSpec>, MountError> {
    if mounts.is_empty() {
        return Ok(Vec::new());
    }
    if mounts.len() > picos_abi::MAX_MOUNTS {
        return Err(MountError::TooMany(mounts.len()));
    }
    let mut out = Vec::with_capacity(mounts.len());
    let mut requests = Vec::new();
    for (index, m) in mounts.iter().enumerate() {
        let err = |reason: String| MountError::Host {
            index,
            guest: m.path.clone(),
            host: m.host_path().to_string(),
            reason,
        };
        let kind = match m.kind.as_str() {
            "tmpfs" => MountKind::Tmpfs,
            "dev" => MountKind::Dev,
            "overlay" => MountKind::Overlay,
            _ => MountKind::Host,
        };
        let host = if matches!(kind, MountKind::Tmpfs | MountKind::Dev) {
            PathBuf::new()
        } else {
            let host = std::fs::canonicalize(m.host_path()).map_err(|e| err(e.to_string()))?;
            let md = std::fs::metadata(&host).map_err(|e| err(e.to_string()))?;
            if !md.is_dir() {
                return Err(err("not a directory (picos mounts directories only)".into()));
            }
            host
        };
        match kind {
            MountKind::Host => {}
            MountKind::Dev => requests.push((index, Request::Dev { size: m.size })),
            MountKind::Tmpfs => requests.push((index, Request::Tmpfs { size: m.size })),
            MountKind::Overlay => requests.push((
                index,
                Request::Overlay {
                    lower: host.clone(),
                    size: m.size,
                },
            )),
        }
        out.push(MountSpec {
            guest: m.path.as_bytes().to_vec(),
            host: host.as_os_str().as_bytes().to_vec(),
            kind,
            fd: -1,
            readonly: m.readonly,
            exclusive: m.exclusive,
            writeback: m.writeback,
        });
    }
    if !out.iter().any(|s| s.guest == b"/") {
        return Err(MountError::NoRoot);
    }
    if !requests.is_empty() {
        let reqs: Vec<Request> = requests.iter().map(|(_, r)| r.clone()).collect();
        let fds = crate::detached::make(&reqs).map_err(|e| {
            // The first one names the failure (they are made together).
            let (index, _) = requests[0];
            MountError::Make {
                index,
                guest: mounts[index].path.clone(),
                kind: mounts[index].kind.clone(),
                reason: e.to_string(),
            }
        })?;
        for ((index, _), fd) in requests.iter().zip(fds) {
            // Passed on to the runtime through execve (not close-on-exec),
            // which keeps it for the tree.
            let _ = rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty());
            out[*index].fd = std::os::fd::IntoRawFd::into_raw_fd(fd);
        }
    }
    for (index, s) in out.iter().enumerate() {
        if s.guest == b"/" {
            continue;
        }
        let parent = parent_mount(&out, &s.guest, Some(index));
        let host = to_host(parent, &s.guest);
        if parent.detached() && !host.is_dir() {
            // A tmpfs starts empty, and an overlay may lack the directory:
            // the mount point is made there, in memory.
            std::fs::create_dir_all(&host).map_err(|e| MountError::Make {
                index,
                guest: String::from_utf8_lossy(&s.guest).into_owned(),
                kind: "mount point".into(),
                reason: format!(
                    "cannot make the mount point in {}: {e}",
                    String::from_utf8_lossy(&parent.guest)
                ),
            })?;
        }
        if !host.is_dir() {
            return Err(MountError::NoMountPoint {
                index,
                guest: String::from_utf8_lossy(&s.guest).into_owned(),
                parent: String::from_utf8_lossy(&parent.guest).into_owned(),
                host: host.display().to_string(),
            });
        }
    }
    check_exclusive(&out)?;
    if out.len() == 1 && out[0].host == b"/" && !out[0].readonly && !out[0].detached() {
        return Ok(Vec::new());
    }
    Ok(out)
}

/// The deepest mount that holds guest path `path` (normalized), leaving out
/// mount `skip`.
fn parent_mount<'a>(specs: &'a [MountSpec], path: &[u8], skip: Option<usize>) -> &'a MountSpec {
    let i = picos_abi::deepest_mount(specs, path, skip).expect("the root mount holds every path");
    &specs[i]
}

/// The host path of guest path `path` (normalized) under mount `m`, which
/// holds it: for a tmpfs or an overlay, through this process's descriptor
/// of its root (`/proc/self/fd/N/...`).
fn to_host(m: &MountSpec, path: &[u8]) -> PathBuf {
    let rest = picos_abi::rest_after(&m.guest, path).expect("the mount holds the path");
    let root = if m.detached() {
        format!("/proc/self/fd/{}", m.fd).into_bytes()
    } else {
        m.host.clone()
    };
    PathBuf::from(std::ffi::OsStr::from_bytes(&picos_abi::join_rest(
        &root, rest,
    )))
}

/// `path` made absolute against `cwd` (a guest path) and normalized
/// lexically (`.` and `..` components, doubled slashes).
pub fn normalize(cwd: &[u8], path: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    let joined;
    let full: &[u8] = if path.first() == Some(&b'/') {
        path
    } else {
        joined = [cwd, b"/", path].concat();
        &joined
    };
    for c in full.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut v = Vec::new();
    for p in parts {
        v.push(b'/');
        v.extend_from_slice(p);
    }
    if v.is_empty() {
        v.push(b'/');
    }
    v
}

/// The host path of guest path `path` (absolute, or relative to guest `cwd`),
/// mapped lexically.
pub fn guest_to_host(specs: &[MountSpec], cwd: &[u8], path: &[u8]) -> PathBuf {
    let p = normalize(cwd, path);
    to_host(parent_mount(specs, &p, None), &p)
}

/// The guest path of host path `host` (absolute, canonical), if a mount
/// shows it (`picos_abi::host_to_guest`).
pub fn host_to_guest(specs: &[MountSpec], host: &Path) -> Option<Vec<u8>> {
    picos_abi::host_to_guest(specs, host.as_os_str().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(guest: &str, host: &str) -> MountSpec {
        MountSpec::host_dir(guest.as_bytes(), host.as_bytes())
    }

    #[test]
    fn maps_both_ways() {
        let s = [
            spec("/", "/srv/root"),
            spec("/data", "/srv/d"),
            spec("/usr", "/usr"),
        ];
        assert_eq!(
            guest_to_host(&s, b"/", b"/etc/x"),
            Path::new("/srv/root/etc/x")
        );
        assert_eq!(
            guest_to_host(&s, b"/data", b"a/../b"),
            Path::new("/srv/d/b")
        );
        assert_eq!(
            guest_to_host(&s, b"/", b"/datax"),
            Path::new("/srv/root/datax")
        );
        assert_eq!(guest_to_host(&s, b"/", b"/"), Path::new("/srv/root"));
        assert_eq!(
            guest_to_host(&s, b"/", b"/usr/bin/x"),
            Path::new("/usr/bin/x")
        );
        assert_eq!(
            guest_to_host(&s, b"/", b"/../../etc"),
            Path::new("/srv/root/etc")
        );
        assert_eq!(
            host_to_guest(&s, Path::new("/srv/d/q")),
            Some(b"/data/q".to_vec())
        );
        assert_eq!(
            host_to_guest(&s, Path::new("/srv/root")),
            Some(b"/".to_vec())
        );
        assert_eq!(host_to_guest(&s, Path::new("/srv/rootx")), None);
        assert_eq!(
            host_to_guest(&s, Path::new("/usr/lib")),
            Some(b"/usr/lib".to_vec())
        );
        let r = [spec("/", "/")];
        assert_eq!(guest_to_host(&r, b"/", b"/a/b"), Path::new("/a/b"));
        assert_eq!(host_to_guest(&r, Path::new("/a")), Some(b"/a".to_vec()));
    }

    #[test]
    fn writable_mounts_must_not_reach_exclusive_ones() {
        let ro_x = |g: &str, h: &str| MountSpec {
            readonly: true,
            exclusive: true,
            writeback: false,
            ..spec(g, h)
        };
        let ok = |s: &[MountSpec]| check_exclusive(s).is_ok();
        let err = |s: &[MountSpec]| check_exclusive(s).unwrap_err().to_string();
        // A writable /tmp of the host over an exclusive host tree hides
        // the host's /tmp there: fine.
        assert!(ok(&[ro_x("/", "/"), spec("/tmp", "/tmp")]));
        assert!(ok(&[
            ro_x("/", "/srv/root"),
            spec("/data", "/srv/root/data")
        ]));
        // ... or a directory below it, which the exclusive mount would show
        // under /tmp: the writable mount holds that path.
        assert!(ok(&[ro_x("/", "/"), spec("/tmp", "/tmp/x")]));
        // A mount between them hides it too.
        assert!(ok(&[
            ro_x("/", "/"),
            spec("/data", "/srv/a"),
            spec("/srv", "/srv/b")
        ]));
        // Disjoint host directories.
        assert!(ok(&[
            spec("/", "/"),
            ro_x("/usr", "/usr"),
            spec("/srv", "/srv")
        ]));
        // The exclusive mount also shows the writable directory elsewhere.
        assert_eq!(
            err(&[ro_x("/", "/"), spec("/data", "/srv")]),
            "fs.mounts[0] (/) is exclusive, but the writable fs.mounts[1] (/data) can change \
             what it shows at /srv, through /data: mount one at the other's place, make \
             fs.mounts[1] read-only, or drop `exclusive`"
        );
        // The writable mount shows the exclusive directory elsewhere.
        assert_eq!(
            err(&[spec("/", "/"), ro_x("/opt/x", "/usr")]),
            "fs.mounts[1] (/opt/x) is exclusive, but the writable fs.mounts[0] (/) can change \
             what it shows at /opt/x, through /usr: mount one at the other's place, make \
             fs.mounts[0] read-only, or drop `exclusive`"
        );
        // The same host directory twice.
        assert!(!ok(&[
            spec("/", "/"),
            ro_x("/a", "/srv"),
            spec("/b", "/srv")
        ]));
        // A read-only mount changes nothing.
        let ro = MountSpec {
            readonly: true,
            ..spec("/data", "/srv")
        };
        assert!(ok(&[ro_x("/", "/"), ro]));
        // Prefixes are whole components.
        assert!(ok(&[ro_x("/", "/srv/a"), spec("/b", "/srv/ab")]));
    }

    #[test]
    fn normalizes() {
        assert_eq!(normalize(b"/a/b", b"../c/./d//"), b"/a/c/d");
        assert_eq!(normalize(b"/", b".."), b"/");
        assert_eq!(normalize(b"/x", b"/y/"), b"/y");
    }
}
