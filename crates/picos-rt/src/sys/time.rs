//! The time calls a program makes as system calls (not through its own
//! vDSO), answered through the host's vDSO (`kernel::time`).
#![deny(unsafe_code)]

use super::{syscall, Ctx, SysResult};
use crate::host::errno::Errno;
use crate::mm::user;

/// Implements clock_gettime(2) through the vDSO.
#[syscall]
pub fn clock_gettime(c: &mut Ctx<'_>, clockid: i32, tp: usize) -> SysResult {
    let mut ts = [0i64; 2];
    match crate::kernel::time::clock_gettime(clockid, &mut ts) {
        Some(0) => {
            user::write(tp, &ts)?;
            Ok(0)
        }
        Some(e) if e < 0 => Err(Errno(-e)),
        _ => c.host(),
    }
}

/// Implements gettimeofday(2) through the vDSO.
#[syscall]
pub fn gettimeofday(c: &mut Ctx<'_>, tv_addr: usize, tz: usize) -> SysResult {
    if tz != 0 {
        return c.host(); // the obsolete timezone argument
    }
    let mut tv = [0i64; 2];
    match crate::kernel::time::gettimeofday(&mut tv) {
        Some(0) => {
            if tv_addr != 0 {
                user::write(tv_addr, &tv)?;
            }
            Ok(0)
        }
        _ => c.host(),
    }
}

/// Implements time(2) through the vDSO.
#[syscall]
pub fn time(c: &mut Ctx<'_>, tloc: usize) -> SysResult {
    match crate::kernel::time::time() {
        Some(t) => {
            if tloc != 0 {
                user::write(tloc, &t)?;
            }
            Ok(t as usize)
        }
        None => c.host(),
    }
}
