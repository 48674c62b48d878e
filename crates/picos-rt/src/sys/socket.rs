//! Socket calls that name a file: a Unix-domain socket's path (`sun_path`)
//! is a path like any other. With mounts (`kernel::fs::mount`), the path
//! is resolved by the library OS (`kernel::fs::walk`) and the host is given
//! a path through /proc that names what was found: for `connect` and the
//! destination of `sendto`/`sendmsg`/`sendmmsg`, the socket file itself
//! (`/proc/self/fd/N`); for `bind`, the new name in its directory
//! (`/proc/self/fd/N/NAME`). So a program cannot reach a socket outside its
//! mounts. Abstract and unnamed addresses, and other families, go to the
//! host unchanged; so does everything without mounts.
//!
//! Known difference: `getsockname` of a socket bound this way shows the
//! /proc path the host was given, not the program's.
#![deny(unsafe_code)]

use super::{host_blocking_with, host_blocking_with_out, host_call_with, syscall, Ctx, SysResult};
use crate::host;
use crate::host::errno::Errno;
use crate::host::nr;
use crate::kernel::fs::mount::{active, table};
use crate::kernel::fs::walk::{self, Found, HostFd};
use crate::mm::user;
use alloc::vec::Vec;

const AF_UNIX: u16 = 1;
/// `struct sockaddr_un`: family and 108 bytes of path.
const SUN_PATH: usize = 108;
const SOCKADDR_UN: usize = 2 + SUN_PATH;

/// The path of a Unix-domain address at `addr` (`len` bytes), if it is one
/// with a path (not abstract, not unnamed). None too when `fd` is not a
/// socket or `len` is out of range: the host then gives Linux's error, in
/// Linux's order (the descriptor, the length, then the address).
fn unix_path_for(fd: i32, addr: usize, len: usize) -> Result<Option<Vec<u8>>, Errno> {
    if !is_unix_socket(fd) {
        return Ok(None);
    }
    // unix_validate_addr: more than the family, at most a sockaddr_un.
    if (len as i32) < 0 || len as i32 as usize > SOCKADDR_UN {
        return Ok(None);
    }
    unix_path(addr, len as i32 as usize)
}

fn unix_path(addr: usize, len: usize) -> Result<Option<Vec<u8>>, Errno> {
    if addr == 0 || len <= 2 {
        return Ok(None);
    }
    let mut raw = alloc::vec![0u8; len.min(SOCKADDR_UN)];
    user::copy_in(&mut raw, addr)?;
    if u16::from_ne_bytes([raw[0], raw[1]]) != AF_UNIX || raw[2] == 0 {
        return Ok(None);
    }
    let p = &raw[2..];
    let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
    Ok(Some(p[..end].to_vec()))
}

/// Is `fd` a Unix-domain socket (else the host gives EBADF, ENOTSOCK, or
/// what the socket's own family says)?
fn is_unix_socket(fd: i32) -> bool {
    const SO_DOMAIN: i32 = 39;
    host::fstat(fd).is_ok_and(|st| st.st_mode & 0o170000 == 0o140000)
        && host::getsockopt_int(fd, SO_DOMAIN) == Ok(AF_UNIX as i32)
}

/// Does a destination address given to `sendto`/`sendmsg` on `fd` name a
/// file? Only for a Unix datagram socket: stream and seqpacket sockets
/// refuse or ignore it without looking it up (EISCONN, EOPNOTSUPP).
fn sends_to_paths(fd: i32) -> bool {
    const SOCK_DGRAM: i32 = 2;
    const SO_TYPE: i32 = 3;
    is_unix_socket(fd) && host::getsockopt_int(fd, SO_TYPE) == Ok(SOCK_DGRAM)
}

/// A `sockaddr_un` naming `path`; ENAMETOOLONG if it does not fit.
fn sockaddr(path: &[u8]) -> Result<Vec<u8>, Errno> {
    if path.len() >= SUN_PATH {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut v = alloc::vec![0u8; SOCKADDR_UN];
    v[..2].copy_from_slice(&AF_UNIX.to_ne_bytes());
    v[2..2 + path.len()].copy_from_slice(path);
    Ok(v)
}

/// The address the host is given for a connection to (or datagram for)
/// the socket file `path` names, and the descriptor that keeps it valid.
fn peer(c: &Ctx<'_>, path: &[u8]) -> Result<(Vec<u8>, Option<HostFd>), Errno> {
    match walk::lookup(c.t.fd_table.get(), host::AT_FDCWD as i32, path, true)? {
        Found::Object { fd, .. } => {
            let a = sockaddr(alloc::format!("/proc/self/fd/{}", fd.0).as_bytes())?;
            Ok((a, Some(fd)))
        }
        Found::ProgramFd(n) => Ok((
            sockaddr(alloc::format!("/proc/self/fd/{n}").as_bytes())?,
            None,
        )),
    }
}

/// Implements connect(2).
#[syscall]
pub fn connect(c: &mut Ctx<'_>, sockfd: i32, addr: usize, addrlen: u32) -> SysResult {
    if !active() {
        return c.host_blocking();
    }
    let Some(path) = unix_path_for(sockfd, addr, addrlen as usize)? else {
        return c.host_blocking();
    };
    let (a, _hold) = peer(c, &path)?;
    host_blocking_with(
        c.t,
        nr::CONNECT,
        [sockfd as usize, 0, a.len(), 0, 0, 0],
        &[(1, &a)],
    )
}

/// Implements bind(2): the socket file is made where the path says, in its
/// mount (EROFS on a read-only one).
#[syscall]
pub fn bind(c: &mut Ctx<'_>, sockfd: i32, addr: usize, addrlen: u32) -> SysResult {
    if !active() {
        return c.host();
    }
    let Some(path) = unix_path_for(sockfd, addr, addrlen as usize)? else {
        return c.host();
    };
    let e = walk::entry(c.t.fd_table.get(), host::AT_FDCWD as i32, &path)?;
    if e.is_mount_point() {
        return Err(Errno::EADDRINUSE);
    }
    if table()[e.mount].readonly {
        return Err(Errno::EROFS);
    }
    let name = &e.name[..e.name.len() - 1];
    let a = sockaddr(
        &[
            alloc::format!("/proc/self/fd/{}/", e.dir.0).as_bytes(),
            name,
        ]
        .concat(),
    )?;
    host_call_with(nr::BIND, [sockfd as usize, 0, a.len(), 0, 0, 0], &[(1, &a)])
}

/// Implements sendto(2).
#[syscall]
pub fn sendto(
    c: &mut Ctx<'_>,
    sockfd: i32,
    buf: usize,
    len: usize,
    flags: i32,
    dest_addr: usize,
    addrlen: u32,
) -> SysResult {
    if !active() {
        return c.host_blocking();
    }
    if !sends_to_paths(sockfd) {
        return c.host_blocking();
    }
    let Some(path) = unix_path_for(sockfd, dest_addr, addrlen as usize)? else {
        return c.host_blocking();
    };
    let (a, _hold) = peer(c, &path)?;
    host_blocking_with(
        c.t,
        nr::SENDTO,
        [sockfd as usize, buf, len, flags as usize, 0, a.len()],
        &[(4, &a)],
    )
}

/// `struct msghdr`'s size and the offsets of `msg_name` and `msg_namelen`.
const MSGHDR: usize = 56;

/// A copy of the program's `msghdr` at `msg` whose `msg_name` is
/// `name` (a runtime buffer, alive as long as the copy is used).
fn msghdr_with_name(msg: usize, name: &[u8]) -> Result<Vec<u8>, Errno> {
    let mut h = alloc::vec![0u8; MSGHDR];
    user::copy_in(&mut h, msg)?;
    h[0..8].copy_from_slice(&(name.as_ptr() as u64).to_ne_bytes());
    h[8..12].copy_from_slice(&(name.len() as u32).to_ne_bytes());
    Ok(h)
}

/// The Unix path `msg_name` of the program's `msghdr` at `msg` names (None
/// for a header the program may not read, or with more than UIO_MAXIOV
/// buffers: the host says EFAULT or EINVAL, before any address is looked
/// up).
fn msg_path(msg: usize) -> Result<Option<Vec<u8>>, Errno> {
    let mut h = [0u8; MSGHDR];
    if user::copy_in(&mut h, msg).is_err() {
        return Ok(None);
    }
    if u64::from_ne_bytes(h[24..32].try_into().unwrap()) > UIO_MAXIOV as u64 {
        return Ok(None);
    }
    let name = u64::from_ne_bytes(h[0..8].try_into().unwrap()) as usize;
    let len = u32::from_ne_bytes(h[8..12].try_into().unwrap()) as usize;
    unix_path(name, len)
}

/// Implements sendmsg(2).
#[syscall]
pub fn sendmsg(c: &mut Ctx<'_>, sockfd: i32, msg: usize, flags: i32) -> SysResult {
    // It may pass descriptors (SCM_RIGHTS): their offsets become the
    // host's (`kernel::fs::file`).
    c.t.fd_table.get().share_offsets();
    if !active() || !sends_to_paths(sockfd) {
        return c.host_blocking();
    }
    let Some(path) = msg_path(msg)? else {
        return c.host_blocking();
    };
    let (a, _hold) = peer(c, &path)?;
    let h = msghdr_with_name(msg, &a)?;
    host_blocking_with(
        c.t,
        nr::SENDMSG,
        [sockfd as usize, 0, flags as usize, 0, 0, 0],
        &[(1, &h)],
    )
}

/// `struct mmsghdr`: a `msghdr` and the length sent.
const MMSGHDR: usize = 64;
/// Linux's UIO_MAXIOV, the most messages one sendmmsg sends.
const UIO_MAXIOV: usize = 1024;

/// Implements sendmmsg(2).
#[syscall]
pub fn sendmmsg(c: &mut Ctx<'_>, sockfd: i32, msgvec: usize, vlen: u32, flags: i32) -> SysResult {
    c.t.fd_table.get().share_offsets();
    if !active() || !sends_to_paths(sockfd) {
        return c.host_blocking();
    }
    let n = (vlen as usize).min(UIO_MAXIOV);
    let mut paths = Vec::with_capacity(n);
    let mut any = false;
    for i in 0..n {
        let p = msg_path(msgvec + i * MMSGHDR)?;
        any |= p.is_some();
        paths.push(p);
    }
    if !any {
        return c.host_blocking();
    }
    let mut names: Vec<(Vec<u8>, Option<HostFd>)> = Vec::with_capacity(n);
    for p in &paths {
        names.push(match p {
            Some(p) => peer(c, p)?,
            None => (Vec::new(), None),
        });
    }
    let mut vec = alloc::vec![0u8; n * MMSGHDR];
    user::copy_in(&mut vec, msgvec)?;
    for (i, (a, _)) in names.iter().enumerate() {
        if !a.is_empty() {
            let h = &mut vec[i * MMSGHDR..];
            h[0..8].copy_from_slice(&(a.as_ptr() as u64).to_ne_bytes());
            h[8..12].copy_from_slice(&(a.len() as u32).to_ne_bytes());
        }
    }
    let r = host_blocking_with_out(
        c.t,
        nr::SENDMMSG,
        [sockfd as usize, 0, n, flags as usize, 0, 0],
        &[],
        (1, &mut vec),
    );
    // The lengths sent go back into the program's vector.
    if let Ok(sent) = r {
        for i in 0..sent.min(n) {
            let off = i * MMSGHDR + MSGHDR;
            user::copy_out(msgvec + off, &vec[off..off + 4])?;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let a = sockaddr(b"/proc/self/fd/9").unwrap();
        assert_eq!(a.len(), SOCKADDR_UN);
        assert_eq!(&a[2..17], b"/proc/self/fd/9");
        assert_eq!(a[17], 0);
        assert_eq!(sockaddr(&[b'a'; 108]), Err(Errno::ENAMETOOLONG));
    }
}
