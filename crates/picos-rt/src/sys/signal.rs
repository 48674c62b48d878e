//! Signal system calls, served from the runtime's per-process dispositions
//! and per-thread masks (see `crate::signal`).
#![deny(unsafe_code)]

use super::{Ctx, SysResult};
use crate::arch::StackT;
use crate::errno::Errno;
use crate::host::KSigaction;
use crate::signal::{self as sig, bit, SIGKILL, SIGSTOP};
use crate::thread::NSIG;
use crate::user::{self, UserPtr};

fn check_sigsetsize(n: usize) -> Result<(), Errno> {
    if n != 8 {
        Err(Errno::EINVAL)
    } else {
        Ok(())
    }
}

/// Implements rt_sigaction(2).
pub fn rt_sigaction(c: &mut Ctx<'_>) -> SysResult {
    let (signo, new, old, size) = (
        c.arg(0) as i32,
        UserPtr::<KSigaction>::new(c.arg(1)),
        UserPtr::<KSigaction>::new(c.arg(2)),
        c.arg(3),
    );
    check_sigsetsize(size)?;
    // Linux's order: the size, reading `act` (EFAULT), then the number.
    let new_act = if new.is_null() {
        None
    } else {
        Some(new.read()?)
    };
    if !(1..=NSIG as i32).contains(&signo) {
        return Err(Errno::EINVAL);
    }
    if new_act.is_some() && (signo == SIGKILL || signo == SIGSTOP) {
        return Err(Errno::EINVAL);
    }
    let acts = &c.t.sighand().actions;
    let mut prev = acts.get(signo);
    if let Some(mut a) = new_act {
        a.mask &= !(bit(SIGKILL) | bit(SIGSTOP));
        // Installing what is already there (a common loop) changes nothing
        // and needs no lock.
        if a != prev {
            let g = acts.lock();
            prev = acts.get(signo);
            acts.set_locked(&g, signo, &a);
            // Change the host disposition while holding the lock, so two
            // threads racing cannot leave host and runtime disagreeing.
            if a.handler != prev.handler || a.flags != prev.flags {
                sig::sync_host_action(signo, &a);
            }
        }
        // An ignored signal that is pending is discarded (POSIX; Linux's
        // do_sigaction): the host drops its own, the runtime the ones it
        // holds for this thread.
        if a.handler == sig::SIG_IGN || (a.handler == sig::SIG_DFL && sig::default_ignored(signo)) {
            while c.t.take_pending(!bit(signo)).is_some() {}
        }
    }
    if !old.is_null() {
        old.write(&prev)?;
    }
    Ok(0)
}

/// Implements rt_sigprocmask(2). The new mask takes effect on the host when
/// the runtime returns to the program.
pub fn rt_sigprocmask(c: &mut Ctx<'_>) -> SysResult {
    let (how, set, oldset, size) = (
        c.arg(0) as i32,
        UserPtr::<u64>::new(c.arg(1)),
        UserPtr::<u64>::new(c.arg(2)),
        c.arg(3),
    );
    check_sigsetsize(size)?;
    let cur = c.t.sig_mask.get();
    if !set.is_null() {
        let s = set.read()? & !(bit(SIGKILL) | bit(SIGSTOP));
        let new = match how {
            sig::SIG_BLOCK => cur | s,
            sig::SIG_UNBLOCK => cur & !s,
            sig::SIG_SETMASK => s,
            _ => return Err(Errno::EINVAL),
        };
        // As Linux: the mask changes even if `oldset` then faults.
        c.t.sig_mask.set(new);
        if !oldset.is_null() {
            oldset.write(&cur)?;
        }
    } else if !oldset.is_null() {
        oldset.write(&cur)?;
    }
    Ok(0)
}

/// Implements rt_sigtimedwait(2): a signal of the set that waits in the
/// runtime (one the host never blocks: SIGSYS and the fault types, or one
/// that arrived while the runtime ran) is taken first, as Linux would take
/// it from the thread's queue; otherwise the host waits.
pub fn rt_sigtimedwait(c: &mut Ctx<'_>) -> SysResult {
    check_sigsetsize(c.arg(3))?;
    let set = UserPtr::<u64>::new(c.arg(0)).read()? & !(bit(SIGKILL) | bit(SIGSTOP));
    if c.arg(2) != 0 {
        // As Linux: the timeout is read and checked before any signal is
        // taken.
        let ts = UserPtr::<[i64; 2]>::new(c.arg(2)).read()?;
        if ts[0] < 0 || !(0..1_000_000_000).contains(&ts[1]) {
            return Err(Errno::EINVAL);
        }
    }
    if let Some(info) = c.t.take_pending(!set) {
        // Taken even if the copy then fails (EFAULT), as on Linux.
        if c.arg(1) != 0 {
            user::write(c.arg(1), &info)?;
        }
        return Ok(info.signo() as usize);
    }
    c.host_blocking()
}

/// The wait of a call that takes a temporary signal mask (ppoll, pselect6,
/// epoll_pwait, epoll_pwait2), as Linux's `set_user_sigmask` and
/// `restore_saved_sigmask_unless`: the mask at `mask_ptr` is the program's
/// while the call waits, signals pending in the runtime count too, and if a
/// signal ends the wait, its handler runs with that mask in force and its
/// frame restores the old one (as for rt_sigsuspend).
fn wait_with_mask(c: &mut Ctx<'_>, mask_ptr: usize, size: usize) -> SysResult {
    if mask_ptr == 0 {
        return c.host_blocking();
    }
    check_sigsetsize(size)?;
    let m = UserPtr::<u64>::new(mask_ptr).read()? & !(bit(SIGKILL) | bit(SIGSTOP));
    let old = c.t.sig_mask.get();
    c.t.sig_mask.set(m);
    c.t.update_pending_flag();
    let r = if c.t.has_pending() {
        Err(Errno::EINTR)
    } else {
        c.host_blocking()
    };
    // A signal the mask lets through ended the wait (or kept it from
    // starting): EINTR, as Linux (its handler runs first), never a rerun.
    let r = if r == Err(Errno::NOT_STARTED) {
        Err(Errno::EINTR)
    } else {
        r
    };
    if r == Err(Errno::EINTR) && c.t.has_pending() {
        c.t.saved_mask.set(Some(old));
    } else {
        c.t.sig_mask.set(old);
        c.t.update_pending_flag();
    }
    r
}

/// Implements ppoll(2) (see [`wait_with_mask`]).
pub fn ppoll(c: &mut Ctx<'_>) -> SysResult {
    wait_with_mask(c, c.arg(3), c.arg(4))
}

/// Implements epoll_pwait(2) (see [`wait_with_mask`]).
pub fn epoll_pwait(c: &mut Ctx<'_>) -> SysResult {
    wait_with_mask(c, c.arg(4), c.arg(5))
}

/// Implements epoll_pwait2(2) (see [`wait_with_mask`]).
pub fn epoll_pwait2(c: &mut Ctx<'_>) -> SysResult {
    wait_with_mask(c, c.arg(4), c.arg(5))
}

/// Implements pselect6(2): its sixth argument points at the mask and its
/// size (see [`wait_with_mask`]).
pub fn pselect6(c: &mut Ctx<'_>) -> SysResult {
    if c.arg(5) == 0 {
        return c.host_blocking();
    }
    let [ptr, size] = UserPtr::<[u64; 2]>::new(c.arg(5)).read()?;
    wait_with_mask(c, ptr as usize, size as usize)
}

/// Implements rt_sigreturn(2) for frames the runtime built.
pub fn rt_sigreturn(c: &mut Ctx<'_>) -> SysResult {
    match sig::sigreturn(c.t, c.uc) {
        Ok(()) => {
            c.keep_regs = true;
            Ok(0)
        }
        Err(_) => {
            // Linux sends SIGSEGV for a bad frame.
            crate::log!(Debug, "rt_sigreturn with a bad frame");
            sig::die_of(sig::SIGSEGV)
        }
    }
}

/// Implements sigaltstack(2).
pub fn sigaltstack(c: &mut Ctx<'_>) -> SysResult {
    let (new, old) = (
        UserPtr::<StackT>::new(c.arg(0)),
        UserPtr::<StackT>::new(c.arg(1)),
    );
    let sp = c.uc.mcontext.rsp;
    let prev = sig::altstack_view(c.t, sp);
    if !new.is_null() {
        let ss = new.read()?;
        sig::set_altstack(c.t, &ss, sp)?;
    }
    if !old.is_null() {
        old.write(&prev)?;
    }
    Ok(0)
}

/// Implements rt_sigsuspend(2): waits with the given mask in force; the
/// handler's frame restores the previous mask.
pub fn rt_sigsuspend(c: &mut Ctx<'_>) -> SysResult {
    check_sigsetsize(c.arg(1))?;
    let m = UserPtr::<u64>::new(c.arg(0)).read()? & !(bit(SIGKILL) | bit(SIGSTOP));
    let old = c.t.sig_mask.get();
    c.t.sig_mask.set(m);
    c.t.saved_mask.set(Some(old));
    loop {
        let mask = sig::host_mask(m);
        let r = super::host_blocking_with_mask(
            130, /* rt_sigsuspend */
            [&mask as *const u64 as usize, 8, 0, 0, 0, 0],
            mask,
        );
        if c.t.has_pending() || r != Err(Errno::EINTR) {
            break;
        }
    }
    Err(Errno::EINTR)
}

/// Implements rt_sigpending(2): the signals pending for the thread or the
/// process that the program blocks. The runtime holds those it caught while
/// it ran (and SIGSYS/SIGTRAP, which the host never blocks); the others the
/// program blocks stay pending on the host, where signalfd and sigwaitinfo
/// find them, so the host is asked only when the program blocks a signal
/// the host can hold.
pub fn rt_sigpending(c: &mut Ctx<'_>) -> SysResult {
    // Linux accepts any size up to its own and writes that many bytes.
    let size = c.arg(1);
    if size > 8 {
        return Err(Errno::EINVAL);
    }
    let blocked = c.t.sig_mask.get();
    let mut set = c.t.pending_set.load(core::sync::atomic::Ordering::Relaxed);
    if crate::signal::host_mask(blocked) != 0 {
        let mut host: u64 = 0;
        super::host_call(127, [&mut host as *mut u64 as usize, 8, 0, 0, 0, 0])?;
        set |= host;
    }
    user::copy_out(c.arg(0), &(set & blocked).to_ne_bytes()[..size])?;
    Ok(0)
}

/// Implements uretprobe(2): called from anywhere but the kernel's uretprobe
/// trampoline (which a picoprocess never has), Linux forces SIGILL
/// (`si_code` SI_KERNEL) and returns -1.
pub fn uretprobe(c: &mut Ctx<'_>) -> SysResult {
    const SI_KERNEL: i32 = 0x80;
    sig::force_sig(c.t, sig::SIGILL, SI_KERNEL);
    Err(Errno::EPERM)
}
