//! ptrace(2) and a tracer's waits: the requests of the library OS's ptrace
//! emulation (`kernel::ptrace`), between the picoprocesses of one tree.
#![deny(unsafe_code)]

use super::{syscall, Ctx, SysResult};
use crate::host;
use crate::host::errno::Errno;
use crate::kernel::ptrace::{self as pt, *};
use crate::mm::user::{self, UserPtr};

/// `NT_PRSTATUS`, `NT_PRFPREG` and `NT_X86_XSTATE` (PTRACE_GETREGSET).
const NT_PRSTATUS: usize = 1;
const NT_PRFPREG: usize = 2;
const NT_X86_XSTATE: usize = 0x202;
/// AUDIT_ARCH_X86_64.
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;

/// Implements ptrace(2), emulated between the picoprocesses of the tree
/// (`kernel::ptrace`): a tracee's registers and memory as its program
/// sees them, never its runtime's. A process outside the tree (the
/// host's, or another tree's) cannot be traced: EPERM, as under a Yama
/// policy that forbids it.
#[syscall]
pub fn ptrace(c: &mut Ctx<'_>, request: i64, pid: i32, addr: usize, data: usize) -> SysResult {
    match request {
        PTRACE_TRACEME => pt::traceme(c.t),
        PTRACE_ATTACH => pt::attach(pid, false, 0, 0),
        PTRACE_SEIZE => pt::attach(pid, true, addr, data as u64),
        PTRACE_INTERRUPT => pt::interrupt(pid),
        PTRACE_KILL => pt::kill(pid),
        PTRACE_CONT
        | PTRACE_SYSCALL
        | PTRACE_SINGLESTEP
        | PTRACE_SYSEMU
        | PTRACE_SYSEMU_SINGLESTEP
        | PTRACE_DETACH
        | PTRACE_LISTEN => pt::resume(pid, request, data),
        PTRACE_PEEKTEXT | PTRACE_PEEKDATA => {
            let v = pt::peek(pid, addr)?;
            UserPtr::<u64>::new(data).write(&v)?;
            Ok(0)
        }
        PTRACE_POKETEXT | PTRACE_POKEDATA => pt::poke(pid, addr, data as u64),
        PTRACE_PEEKUSER => {
            let v = pt::peek_user(pid, addr)?;
            UserPtr::<u64>::new(data).write(&v)?;
            Ok(0)
        }
        PTRACE_POKEUSER => pt::poke_user(pid, addr, data as u64),
        PTRACE_GETREGS => {
            let r = pt::get_regs(pid)?;
            UserPtr::<[u64; NREGS]>::new(data).write(&r)?;
            Ok(0)
        }
        PTRACE_SETREGS => {
            let r = UserPtr::<[u64; NREGS]>::new(data).read()?;
            pt::set_regs(pid, &r)
        }
        PTRACE_GETFPREGS => {
            let mut img = [0u8; 512];
            pt::get_fp(pid, &mut img)?;
            user::copy_out(data, &img)?;
            Ok(0)
        }
        PTRACE_SETFPREGS => {
            let mut img = [0u8; 512];
            user::copy_in(&mut img, data)?;
            pt::set_fp(pid, &img)
        }
        PTRACE_GETREGSET | PTRACE_SETREGSET => regset(pid, request, addr, data),
        PTRACE_GETSIGINFO => {
            let info = pt::get_siginfo(pid)?;
            UserPtr::<[u8; 128]>::new(data).write(&info.0)?;
            Ok(0)
        }
        PTRACE_SETSIGINFO => {
            let mut info = crate::arch::SigInfo::default();
            user::copy_in(&mut info.0, data)?;
            pt::set_siginfo(pid, &info)
        }
        PTRACE_GETEVENTMSG => {
            let v = pt::event_msg(pid)?;
            UserPtr::<u64>::new(data).write(&v)?;
            Ok(0)
        }
        PTRACE_SETOPTIONS => pt::set_options(pid, data as u64),
        PTRACE_GET_SYSCALL_INFO => syscall_info(pid, addr, data),
        // Requests Linux x86-64 knows that picos does not emulate
        // (PTRACE_GETFPXREGS, thread areas, seccomp filters, rseq, ...):
        // as Linux answers an unknown request for a traced thread.
        _ => {
            pt::get_regs(pid)?;
            Err(Errno::EIO)
        }
    }
}

/// PTRACE_GETREGSET/SETREGSET: register set `nt` through the `struct
/// iovec` at `iov` (its length becomes what was copied).
fn regset(pid: i32, request: i64, nt: usize, iov: usize) -> SysResult {
    let [base, len] = UserPtr::<[u64; 2]>::new(iov).read()?;
    let (base, len) = (base as usize, len as usize);
    let get = request == PTRACE_GETREGSET;
    let size = match nt {
        NT_PRSTATUS => NREGS * 8,
        NT_PRFPREG => 512,
        NT_X86_XSTATE => pt::fp_len(pid)?,
        _ => {
            pt::get_regs(pid)?;
            return Err(Errno::EINVAL);
        }
    };
    let n = len.min(size);
    if nt == NT_X86_XSTATE && size <= 512 {
        // No extended state known: as a CPU without XSAVE.
        return Err(Errno::ENODEV);
    }
    if get {
        let mut buf = alloc::vec![0u8; size];
        if nt == NT_PRSTATUS {
            for (b, r) in buf.chunks_exact_mut(8).zip(pt::get_regs(pid)?) {
                b.copy_from_slice(&r.to_ne_bytes());
            }
        } else {
            pt::get_fp(pid, &mut buf)?;
            if nt == NT_X86_XSTATE && buf.len() >= 480 {
                // Bytes 464..471 of the XSAVE area are XCR0 for ptrace
                // (USER_XSTATE_XCR0_WORD); the signal frame's image has
                // its software bytes there, the features at 472.
                let xfeatures: [u8; 8] = buf[472..480].try_into().unwrap();
                buf[464..472].copy_from_slice(&xfeatures);
            }
        }
        user::copy_out(base, &buf[..n])?;
        UserPtr::<u64>::new(iov + 8).write(&(n as u64))?;
        Ok(0)
    } else {
        let mut buf = alloc::vec![0u8; n];
        user::copy_in(&mut buf, base)?;
        if nt == NT_PRSTATUS {
            let mut r = pt::get_regs(pid)?;
            for (i, b) in buf.chunks_exact(8).enumerate() {
                r[i] = u64::from_ne_bytes(b.try_into().unwrap());
            }
            pt::set_regs(pid, &r)?;
        } else {
            pt::set_fp(pid, &buf)?;
        }
        UserPtr::<u64>::new(iov + 8).write(&(n as u64))?;
        Ok(0)
    }
}

/// PTRACE_GET_SYSCALL_INFO: `struct ptrace_syscall_info` (at most `size`
/// bytes of it at `buf`); returns its whole size for the stop.
fn syscall_info(pid: i32, size: usize, buf: usize) -> SysResult {
    let s = pt::syscall_info(pid)?;
    let mut out = [0u8; 88];
    let (op, len) = match s.kind {
        KIND_ENTRY => (1u8, 80),
        KIND_EXIT => (2u8, 33),
        _ => (0u8, 24),
    };
    out[0] = op;
    out[4..8].copy_from_slice(&AUDIT_ARCH_X86_64.to_ne_bytes());
    out[8..16].copy_from_slice(&s.ip.to_ne_bytes());
    out[16..24].copy_from_slice(&s.sp.to_ne_bytes());
    match op {
        1 => {
            out[24..32].copy_from_slice(&s.nr.to_ne_bytes());
            for (i, a) in s.args.iter().enumerate() {
                out[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_ne_bytes());
            }
        }
        2 => {
            out[24..32].copy_from_slice(&s.rax.to_ne_bytes());
            out[32] = ((s.rax as i64) < 0 && (s.rax as i64) >= -4095) as u8;
        }
        _ => {}
    }
    let n = size.min(len);
    user::copy_out(buf, &out[..n])?;
    Ok(len)
}

const WNOHANG: u32 = 1;
const WNOWAIT: u32 = 0x0100_0000;

/// What a tracer's wait gives back.
pub enum Waited {
    /// A tracee's stop or end (from the board).
    Report(pt::Report),
    /// The host's own wait's result (a child's end, or nothing).
    Host(usize),
}

/// A wait by a process that traces (`pt::is_tracer`): the tracees' stops
/// and ends from the board, the children's ends from the host (`host`:
/// the wait on the host with `extra` options added), whichever comes
/// first. `pid` and `options` as wait4 takes them.
pub fn traced_wait(
    c: &mut Ctx<'_>,
    pid: i32,
    options: u32,
    mut host_wait: impl FnMut(&mut Ctx<'_>, u32) -> Result<(usize, i32), Errno>,
) -> Result<Waited, Errno> {
    loop {
        // (A doorbell that rang for this wait has done its work.)
        c.t.ptrace_doorbell.set(false);
        c.t.update_pending_flag();
        let mark = pt::report_mark();
        pt::reap_vanished();
        if let Some(r) = pt::take_report(pid, options) {
            return Ok(Waited::Report(r));
        }
        match host_wait(c, WNOHANG) {
            Ok((r, reaped)) if reaped > 0 => {
                if options & WNOWAIT == 0 {
                    pt::child_reaped(reaped);
                }
                return Ok(Waited::Host(r));
            }
            Ok((r, _)) => {
                if options & WNOHANG != 0 {
                    return Ok(Waited::Host(r));
                }
            }
            Err(Errno::ECHILD) if pt::has_waitable(pid, options) => {
                if options & WNOHANG != 0 {
                    return Ok(Waited::Host(0));
                }
            }
            Err(e) => return Err(e),
        }
        // Nothing yet: a tracee's report wakes us; a child's end is seen
        // within the timeout (or at once, by its SIGCHLD's EINTR).
        // Slept in the interruptible window: a signal for the program
        // cuts the wait short (EINTR, restarted as the dispatcher decides).
        let ts: [i64; 2] = [0, 20_000_000];
        let r = super::host_blocking(
            c.t,
            host::nr::FUTEX,
            [
                pt::report_word(),
                0, /* FUTEX_WAIT, shared */
                mark as u32 as usize,
                ts.as_ptr() as usize,
                0,
                0,
            ],
        );
        if r == Err(Errno::EINTR) && c.t.has_pending() {
            return Err(Errno::EINTR);
        }
    }
}

/// A wait's report of tracee `r` written as wait4 writes it (`status`,
/// and a zero `rusage`).
pub fn report_wait4(r: &pt::Report, status: usize, rusage: usize) -> Result<usize, Errno> {
    if status != 0 {
        UserPtr::<i32>::new(status).write(&r.status)?;
    }
    if rusage != 0 {
        user::copy_out(rusage, &[0u8; 144])?;
    }
    Ok(r.tid as usize)
}

/// A wait's report of tracee `r` written as waitid writes it.
pub fn report_waitid(r: &pt::Report, infop: usize) -> Result<usize, Errno> {
    const CLD_EXITED: i32 = 1;
    const CLD_KILLED: i32 = 2;
    const CLD_TRAPPED: i32 = 4;
    let (code, st) = if !r.exited {
        (CLD_TRAPPED, (r.status >> 8) & 0xffff)
    } else if r.status & 0x7f == 0 {
        (CLD_EXITED, (r.status >> 8) & 0xff)
    } else {
        (CLD_KILLED, r.status & 0x7f)
    };
    let mut info = crate::arch::SigInfo::kernel(crate::host::abi::SIGCHLD, code);
    info.0[16..20].copy_from_slice(&r.tid.to_ne_bytes());
    let uid = host::getresuid().map_or(0, |u| u[0]);
    info.0[20..24].copy_from_slice(&uid.to_ne_bytes());
    info.0[24..28].copy_from_slice(&st.to_ne_bytes());
    UserPtr::<[u8; 128]>::new(infop).write(&info.0)?;
    Ok(0)
}
