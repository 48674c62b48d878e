//! Signal system calls, served from the runtime's per-process dispositions
//! and per-thread masks (see `crate::kernel::signal`).
#![deny(unsafe_code)]

use super::{syscall, Ctx, SysResult};
use crate::host::abi::{self, bit, StackT, SIGKILL, SIGSTOP};
use crate::host::errno::Errno;
use crate::host::KSigaction;
use crate::kernel::signal as sig;
use crate::kernel::thread::{Sending, NSIG};
use crate::mm::user::{self, UserPtr};
use alloc::vec;
use alloc::vec::Vec;

fn check_sigsetsize(n: usize) -> Result<(), Errno> {
    if n != 8 {
        Err(Errno::EINVAL)
    } else {
        Ok(())
    }
}

/// Implements rt_sigaction(2).
#[syscall]
pub fn rt_sigaction(
    c: &mut Ctx<'_>,
    signum: i32,
    act: usize,
    oldact: usize,
    sigsetsize: usize,
) -> SysResult {
    let (signo, new, old, size) = (
        signum,
        UserPtr::<KSigaction>::new(act),
        UserPtr::<KSigaction>::new(oldact),
        sigsetsize,
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
    let acts = c.t.process().actions();
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
        if a.handler == abi::SIG_IGN || (a.handler == abi::SIG_DFL && sig::default_ignored(signo)) {
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
#[syscall]
pub fn rt_sigprocmask(
    c: &mut Ctx<'_>,
    how: i32,
    set: usize,
    oldset: usize,
    sigsetsize: usize,
) -> SysResult {
    let (how, set, oldset, size) = (
        how,
        UserPtr::<u64>::new(set),
        UserPtr::<u64>::new(oldset),
        sigsetsize,
    );
    check_sigsetsize(size)?;
    let cur = c.t.sig_mask.get();
    if !set.is_null() {
        let s = set.read()? & !(bit(SIGKILL) | bit(SIGSTOP));
        let new = match how {
            abi::SIG_BLOCK => cur | s,
            abi::SIG_UNBLOCK => cur & !s,
            abi::SIG_SETMASK => s,
            _ => return Err(Errno::EINVAL),
        };
        // As Linux: the mask changes even if `oldset` then faults.
        c.t.sig_mask.set(new);
        // What this thread sent itself while blocking it is delivered on
        // this call's return (raise(): block, tgkill, restore).
        if cur & !new & c.t.self_sent.get() != 0 {
            sig::take_self_sent(c.t, cur & !new);
        }
        if !oldset.is_null() {
            oldset.write(&cur)?;
        }
    } else if !oldset.is_null() {
        oldset.write(&cur)?;
    }
    Ok(0)
}

/// Implements tgkill(2) on the host, but for a signal the thread sends
/// itself that the program neither blocks nor leaves to its default
/// disposition (glibc's raise() is exactly this): that one never goes to
/// the host. It is queued in the runtime with the siginfo Linux gives it
/// (SI_TKILL, the sender's pid and real uid) and delivered on this call's
/// return, as Linux delivers it on the return from tgkill. One the thread
/// sends itself while blocking it is noted for `rt_sigprocmask`
/// (`kernel::signal::note_self_sent`).
#[syscall]
pub fn tgkill(c: &mut Ctx<'_>, tgid: i32, tid: i32, signo: i32) -> SysResult {
    let own = tid == c.t.tid() && tgid == super::ids::getpid(c)? as i32;
    if signo == abi::SIGSTOP && traced_sigstop(c, own, tid) {
        return Ok(0);
    }
    send_to_thread(c, own, signo)
}

/// Implements tkill(2), as [`tgkill`].
#[syscall]
pub fn tkill(c: &mut Ctx<'_>, tid: i32, signo: i32) -> SysResult {
    let own = tid == c.t.tid();
    if signo == abi::SIGSTOP && tid > 0 && traced_sigstop(c, own, tid) {
        return Ok(0);
    }
    send_to_thread(c, own, signo)
}

/// tgkill and tkill once the target is known: the calling thread (`own`)
/// or another.
fn send_to_thread(c: &mut Ctx<'_>, own: bool, signo: i32) -> SysResult {
    if own && raise_here(c, signo)? {
        return Ok(0);
    }
    if own {
        // One the program blocks waits on the host, blocked there too.
        sig::sync_lazy(c.t);
    }
    let r = c.host()?;
    sig::note_self_sent(c.t, own, signo);
    Ok(r)
}

/// Queues `signo`, sent by this thread to itself, in the runtime if the
/// program has a handler for it and does not block it; false leaves the
/// call to the host (other signals, dispositions, or masks).
fn raise_here(c: &mut Ctx<'_>, signo: i32) -> Result<bool, Errno> {
    // Sending SIGCONT or a stop signal also discards pending ones of the
    // other kind (Linux's prepare_signal): the host does that.
    use abi::{SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU};
    if !(1..=NSIG as i32).contains(&signo)
        || matches!(
            signo,
            SIGKILL | SIGSTOP | SIGCONT | SIGTSTP | SIGTTIN | SIGTTOU
        )
        || c.t.sig_mask.get() & bit(signo) != 0
        || c.t.process().get(signo).handler <= abi::SIG_IGN
    {
        return Ok(false);
    }
    let pid = super::ids::getpid(c)? as i32;
    let uid = super::ids::getuid(c)? as u32;
    let info = crate::arch::SigInfo::sent(signo, abi::SI_TKILL, pid, uid);
    // (A signal that arrives meanwhile goes back to the host, blocked
    // until the delivery on this call's return sets the mask.)
    let was = c.t.delivering.replace(true);
    c.t.add_pending(&info);
    c.t.delivering.set(was);
    c.t.update_pending_flag();
    Ok(true)
}

/// Implements kill(2) on the host. A signal that arrives while it runs
/// (the one sent, when the program signals its own process) is queued as
/// sent to the process (see [`crate::kernel::thread::Sending`]).
pub fn kill(c: &mut Ctx<'_>) -> SysResult {
    let (pid, signo) = (c.args[0] as i32, c.args[1] as i32);
    if signo == abi::SIGSTOP && pid > 0 {
        let own = pid == super::ids::getpid(c)? as i32;
        if traced_sigstop(c, own, pid) {
            return Ok(0);
        }
    }
    sending(c, Sending::ToProcess)
}

/// A SIGSTOP for a traced thread (the caller itself when `own`, else
/// `tid`): a signal-delivery stop its tracer sees (`kernel::ptrace`), not
/// a stop of the host's, which would stop its runtime behind the tracer's
/// back. False: not traced, the host sends it.
fn traced_sigstop(c: &mut Ctx<'_>, own: bool, tid: i32) -> bool {
    if own {
        crate::kernel::ptrace::sigstop_self(c.t)
    } else {
        crate::kernel::ptrace::sigstop_to(tid)
    }
}

/// Implements rt_sigqueueinfo(2) on the host, as [`kill`].
pub fn rt_sigqueueinfo(c: &mut Ctx<'_>) -> SysResult {
    sending(c, Sending::ToProcess)
}

/// Implements rt_tgsigqueueinfo(2) on the host: what arrives meanwhile is
/// queued as sent to the thread, whatever `si_code` the program chose.
pub fn rt_tgsigqueueinfo(c: &mut Ctx<'_>) -> SysResult {
    sending(c, Sending::ToThread)
}

fn sending(c: &mut Ctx<'_>, what: Sending) -> SysResult {
    c.t.sending.set(what);
    let r = c.host();
    c.t.sending.set(Sending::Nothing);
    r
}

/// Implements rt_sigtimedwait(2): a signal of the set that waits in the
/// runtime (one the host never blocks: SIGSYS and the fault types, or one
/// that arrived while the runtime ran) is taken first, as Linux would take
/// it from the thread's queue; otherwise the host waits.
#[syscall]
pub fn rt_sigtimedwait(
    c: &mut Ctx<'_>,
    set_addr: usize,
    info_addr: usize,
    timeout: usize,
    sigsetsize: usize,
) -> SysResult {
    check_sigsetsize(sigsetsize)?;
    let set = UserPtr::<u64>::new(set_addr).read()? & !(bit(SIGKILL) | bit(SIGSTOP));
    if timeout != 0 {
        // As Linux: the timeout is read and checked before any signal is
        // taken.
        let ts = UserPtr::<[i64; 2]>::new(timeout).read()?;
        if ts[0] < 0 || !(0..1_000_000_000).contains(&ts[1]) {
            return Err(Errno::EINVAL);
        }
    }
    // Linux takes the thread's own signals before the process's: if the
    // runtime has only one of the process's, one the host holds for the
    // thread comes first (the host's own call then takes it, in order).
    let host_set = crate::kernel::signal::host_mask(set);
    if host_set != 0
        && c.t.next_is_shared(!set)
        && host_thread_pending(c.t.tid()).is_some_and(|p| p & host_set != 0)
    {
        return c.host_blocking();
    }
    if let Some(info) = c.t.take_pending(!set) {
        // Taken even if the copy then fails (EFAULT), as on Linux.
        if info_addr != 0 {
            user::write(info_addr, &info)?;
        }
        return Ok(info.signo() as usize);
    }
    c.host_blocking()
}

/// The signals pending on the host for thread `tid` alone (Linux's
/// private queue, `SigPnd` in /proc/PID/task/TID/status); None if that
/// cannot be read.
fn host_thread_pending(tid: i32) -> Option<u64> {
    use core::fmt::Write;
    let mut path = crate::diag::log::LineBuf::new();
    let _ = write!(
        path,
        "/proc/{}/task/{}/status\0",
        crate::host::getpid(),
        tid
    );
    let path = core::ffi::CStr::from_bytes_with_nul(path.as_bytes()).ok()?;
    let (buf, n) = crate::host::fds::read_small_file::<2048>(path).ok()?;
    parse_sigpnd(&buf[..n])
}

/// The `SigPnd:` field of a /proc status file.
fn parse_sigpnd(text: &[u8]) -> Option<u64> {
    let at = text.windows(7).position(|w| w == b"SigPnd:")? + 7;
    let mut v: u64 = 0;
    let mut digits = 0;
    for &b in text[at..].iter().skip_while(|b| b.is_ascii_whitespace()) {
        let Some(d) = (b as char).to_digit(16) else {
            break;
        };
        v = v << 4 | d as u64;
        digits += 1;
    }
    (digits > 0).then_some(v)
}

/// The calls that take a temporary signal mask, and how each one's
/// arguments name its timeout (see [`wait_with_mask`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum MaskedWait {
    /// ppoll(fds, nfds, tsp, sigmask, size)
    Ppoll,
    /// pselect6(n, in, out, ex, tsp, {sigmask, size})
    Pselect6,
    /// epoll_pwait(epfd, events, maxevents, timeout_ms, sigmask, size)
    EpollPwait,
    /// epoll_pwait2(epfd, events, maxevents, tsp, sigmask, size)
    EpollPwait2,
}

impl MaskedWait {
    /// The argument that points at a timespec timeout, if the call has one.
    fn timespec_arg(self) -> Option<usize> {
        match self {
            MaskedWait::Ppoll => Some(2),
            MaskedWait::Pselect6 => Some(4),
            MaskedWait::EpollPwait => None,
            MaskedWait::EpollPwait2 => Some(3),
        }
    }

    /// Does a wait that finds nothing ready end with EINTR when a signal is
    /// pending? poll and select check for signals even with a zero timeout;
    /// epoll returns 0 at once when its timeout is zero.
    fn interrupted_when_idle(self, args: &[usize; 6]) -> Result<bool, Errno> {
        Ok(match self {
            MaskedWait::Ppoll | MaskedWait::Pselect6 => true,
            MaskedWait::EpollPwait => args[3] as i32 != 0,
            MaskedWait::EpollPwait2 => {
                args[3] == 0 || UserPtr::<[i64; 2]>::new(args[3]).read()? != [0, 0]
            }
        })
    }
}

/// Checks a timespec timeout as Linux's `poll_select_set_timeout` does,
/// before the temporary mask is read.
fn check_timeout(ptr: usize) -> Result<(), Errno> {
    if ptr != 0 {
        let ts = UserPtr::<[i64; 2]>::new(ptr).read()?;
        if ts[0] < 0 || !(0..1_000_000_000).contains(&ts[1]) {
            return Err(Errno::EINVAL);
        }
    }
    Ok(())
}

/// The wait of a call that takes a temporary signal mask (ppoll, pselect6,
/// epoll_pwait, epoll_pwait2), as Linux's `set_user_sigmask` and
/// `restore_saved_sigmask_unless`: the mask is the program's while the call
/// waits, signals pending in the runtime count too, and if a signal ends
/// the wait (EINTR), its handler runs with that mask in force and its frame
/// restores the old one (as for rt_sigsuspend). Any other outcome (an
/// argument error, descriptors ready, epoll's zero timeout) restores the
/// old mask at once, and pending signals it blocks stay pending.
///
/// The host sees only the signals it holds itself. When the runtime holds
/// one the temporary mask lets through, the host makes the call with a
/// zero timeout and no mask (a probe: the same argument checks and ready
/// descriptors), and a probe that finds nothing ready stands for the wait
/// a pending signal interrupts.
fn wait_with_mask(c: &mut Ctx<'_>, kind: MaskedWait, mask_ptr: usize, size: usize) -> SysResult {
    if let Some(i) = kind.timespec_arg() {
        check_timeout(c.arg(i))?;
    }
    if mask_ptr == 0 {
        return c.host_blocking();
    }
    check_sigsetsize(size)?;
    let m = UserPtr::<u64>::new(mask_ptr).read()? & !(bit(SIGKILL) | bit(SIGSTOP));
    let old = c.t.sig_mask.get();
    // Signals the host holds pending that the temporary mask lets through
    // stay there until the call has checked its arguments and found
    // nothing ready (the probe): the host must not see them unblocked
    // before that (with SIG_DFL it would end the process where Linux fails
    // the call and never delivers), and one the call does not deliver
    // stays where it was in its queue. (Until the 26th session they moved
    // to the runtime first and went back to the end of the host's queue:
    // an instance of a real-time signal then came after later ones.)
    let through = crate::kernel::signal::host_mask(old & !m);
    let on_host = if through != 0 {
        crate::host::rt_sigpending().unwrap_or(0) & through
    } else {
        0
    };
    c.t.sig_mask.set(m);
    c.t.update_pending_flag();
    let mut r = if c.t.has_pending() || on_host != 0 {
        Err(Errno::NOT_STARTED)
    } else {
        c.host_blocking()
    };
    if r == Err(Errno::NOT_STARTED) {
        // A pending signal is let through: probe. Nothing ready, the call
        // ends with EINTR and delivers (one instance of each signal the
        // host holds moves to the runtime for that).
        r = probe_masked_wait(c, kind);
        if r == Err(Errno::EINTR) && on_host != 0 {
            take_host_pending(c.t, on_host);
            if !c.t.has_pending() {
                // Another thread took it meanwhile: the call waits after all.
                r = c.host_blocking();
            }
        }
    }
    if r == Err(Errno::EINTR) && c.t.has_pending() {
        c.t.saved_mask.set(Some(old));
    } else {
        c.t.sig_mask.set(old);
        c.t.update_pending_flag();
    }
    r
}

/// Moves one instance of each signal of `set` that waits on the host (for
/// the thread or the process) to the runtime's pending queues, with its
/// siginfo: a zero-timeout `rt_sigtimedwait` for each.
fn take_host_pending(t: &crate::kernel::thread::Thread, set: u64) {
    // On the fast path the host's signals are open: one arriving in the
    // middle of `add_pending` could overwrite an instance queued behind a
    // pending one of its signal (the runtime's queue is not atomic). They
    // wait meanwhile (a rare path: a signal was pending and let through).
    let old = if t.in_fast.get() {
        crate::host::rt_sigprocmask(abi::SIG_BLOCK, Some(sig::RUNTIME_MASK)).ok()
    } else {
        None
    };
    let mut want = set;
    while want != 0 {
        let mut info = crate::arch::SigInfo::default();
        match crate::host::rt_sigtake(want, &mut info.0) {
            Ok(sig) if (1..=64).contains(&sig) => {
                t.add_pending(&info);
                // One instance each: further queued real-time instances stay
                // on the host (the runtime's queue for them is short).
                want &= !(1u64 << (sig - 1));
            }
            _ => break,
        }
    }
    if let Some(old) = old {
        let _ = crate::host::rt_sigprocmask(abi::SIG_SETMASK, Some(old));
    }
}

/// The probe of [`wait_with_mask`]: the call with a zero timeout and no
/// mask. Nothing ready means the wait would have been interrupted (EINTR),
/// unless the call returns at once anyway (epoll with a zero timeout).
fn probe_masked_wait(c: &mut Ctx<'_>, kind: MaskedWait) -> SysResult {
    let mut args = c.args;
    // Where the zero timeout goes (epoll_pwait's is an int, set here).
    let zero_timeout = match kind {
        MaskedWait::Ppoll => {
            args[3] = 0;
            args[4] = 0;
            Some(2)
        }
        MaskedWait::Pselect6 => {
            args[5] = 0;
            Some(4)
        }
        MaskedWait::EpollPwait => {
            args[3] = 0;
            args[4] = 0;
            args[5] = 0;
            None
        }
        MaskedWait::EpollPwait2 => {
            args[4] = 0;
            args[5] = 0;
            Some(3)
        }
    };
    // select writes its (cleared) descriptor sets back when nothing is
    // ready; an interrupted select leaves them as they were (and so never
    // faults on sets it may read but not write). When every set can be
    // read whole, the probe works on copies, and the program's sets get
    // the result only if something is ready.
    let mut sets = if kind == MaskedWait::Pselect6 {
        fd_set_snapshot(&args)
    } else {
        Vec::new()
    };
    let whole = fd_set_len(&args);
    let on_copies = !sets.is_empty() && sets.iter().all(|(_, b)| b.len() == whole);
    let mut copies: [Option<&mut [u8]>; 3] = [None, None, None];
    if on_copies {
        // The snapshot holds the non-null sets in argument order.
        let mut it = sets.iter_mut();
        for (i, copy) in copies.iter_mut().enumerate() {
            if args[1 + i] != 0 {
                *copy = it.next().map(|(_, b)| b.as_mut_slice());
            }
        }
    }
    super::count_host_call();
    let r = crate::host::wait_probe(c.nr, args, zero_timeout, copies);
    if r == Ok(0) && kind.interrupted_when_idle(&c.args)? {
        if !on_copies {
            for (addr, bytes) in &sets {
                let _ = user::copy_out(*addr, bytes);
            }
        }
        return Err(Errno::EINTR);
    }
    if on_copies && r.is_ok() {
        for (addr, bytes) in &sets {
            user::copy_out(*addr, bytes)?;
        }
    }
    r
}

/// The bytes of each of pselect6's descriptor sets for its `n`, at most
/// Linux's own limit on descriptors.
fn fd_set_len(args: &[usize; 6]) -> usize {
    const MAX_FDS: usize = 1 << 20; // fs.nr_open's default, the usual bound
    let n = args[0] as i32;
    if n <= 0 {
        return 0;
    }
    (n as usize).min(MAX_FDS).div_ceil(64) * 8
}

/// The readable part of pselect6's descriptor sets (for `n` descriptors,
/// at most Linux's own limit on descriptors), by address.
fn fd_set_snapshot(args: &[usize; 6]) -> Vec<(usize, Vec<u8>)> {
    let len = fd_set_len(args);
    if len == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for &addr in &args[1..4] {
        if addr == 0 {
            continue;
        }
        // Page by page: the kernel reads only as far as the process's
        // descriptor table reaches, which may be less than `n`.
        let mut bytes = Vec::new();
        let mut at = 0;
        while at < len {
            let chunk = (len - at)
                .min(crate::mm::runtime::PAGE_SIZE - (addr + at) % crate::mm::runtime::PAGE_SIZE);
            let mut buf = vec![0u8; chunk];
            if user::copy_in(&mut buf, addr + at).is_err() {
                break;
            }
            bytes.extend_from_slice(&buf);
            at += chunk;
        }
        out.push((addr, bytes));
    }
    out
}

/// Implements ppoll(2) (see [`wait_with_mask`]).
#[syscall]
pub fn ppoll(
    c: &mut Ctx<'_>,
    _fds: usize,
    _nfds: usize,
    _tmo_p: usize,
    sigmask: usize,
    sigsetsize: usize,
) -> SysResult {
    wait_with_mask(c, MaskedWait::Ppoll, sigmask, sigsetsize)
}

/// Implements epoll_pwait(2) (see [`wait_with_mask`]).
#[syscall]
pub fn epoll_pwait(
    c: &mut Ctx<'_>,
    _epfd: usize,
    _events: usize,
    _maxevents: usize,
    _timeout: usize,
    sigmask: usize,
    sigsetsize: usize,
) -> SysResult {
    wait_with_mask(c, MaskedWait::EpollPwait, sigmask, sigsetsize)
}

/// Implements epoll_pwait2(2) (see [`wait_with_mask`]).
#[syscall]
pub fn epoll_pwait2(
    c: &mut Ctx<'_>,
    _epfd: usize,
    _events: usize,
    _maxevents: usize,
    _timeout: usize,
    sigmask: usize,
    sigsetsize: usize,
) -> SysResult {
    wait_with_mask(c, MaskedWait::EpollPwait2, sigmask, sigsetsize)
}

/// Implements pselect6(2): its sixth argument points at the mask and its
/// size (see [`wait_with_mask`]).
#[syscall]
pub fn pselect6(
    c: &mut Ctx<'_>,
    _nfds: usize,
    _readfds: usize,
    _writefds: usize,
    _exceptfds: usize,
    _timeout: usize,
    sigmask: usize,
) -> SysResult {
    if sigmask == 0 {
        return c.host_blocking();
    }
    let [ptr, size] = UserPtr::<[u64; 2]>::new(sigmask).read()?;
    wait_with_mask(c, MaskedWait::Pselect6, ptr as usize, size as usize)
}

/// Implements rt_sigreturn(2) for frames the runtime built.
pub fn rt_sigreturn(c: &mut Ctx<'_>) -> SysResult {
    match sig::sigreturn(c.t, c.regs()) {
        Ok(()) => {
            c.keep_regs = true;
            Ok(0)
        }
        Err(_) => {
            // Linux sends SIGSEGV for a bad frame.
            crate::log!(Debug, "rt_sigreturn with a bad frame");
            sig::die_of(abi::SIGSEGV)
        }
    }
}

/// Implements sigaltstack(2).
#[syscall]
pub fn sigaltstack(c: &mut Ctx<'_>, ss: usize, old_ss: usize) -> SysResult {
    let (new, old) = (UserPtr::<StackT>::new(ss), UserPtr::<StackT>::new(old_ss));
    let sp = c.regs().mcontext.rsp;
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
#[syscall]
pub fn rt_sigsuspend(c: &mut Ctx<'_>, mask: usize, sigsetsize: usize) -> SysResult {
    check_sigsetsize(sigsetsize)?;
    let m = UserPtr::<u64>::new(mask).read()? & !(bit(SIGKILL) | bit(SIGSTOP));
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
#[syscall]
pub fn rt_sigpending(c: &mut Ctx<'_>, set_addr: usize, sigsetsize: usize) -> SysResult {
    // Linux accepts any size up to its own and writes that many bytes.
    let size = sigsetsize;
    if size > 8 {
        return Err(Errno::EINVAL);
    }
    let blocked = c.t.sig_mask.get();
    let mut set = c.t.pending_bits();
    if crate::kernel::signal::host_mask(blocked) != 0 {
        set |= crate::host::rt_sigpending()?;
    }
    user::copy_out(set_addr, &(set & blocked).to_ne_bytes()[..size])?;
    Ok(0)
}

/// Implements uretprobe(2): called from anywhere but the kernel's uretprobe
/// trampoline (which a picoprocess never has), Linux forces SIGILL
/// (`si_code` SI_KERNEL) and returns -1.
pub fn uretprobe(c: &mut Ctx<'_>) -> SysResult {
    sig::force_sig(c.t, abi::SIGILL, abi::SI_KERNEL);
    Err(Errno::EPERM)
}

#[cfg(test)]
mod tests {
    use super::parse_sigpnd;

    #[test]
    fn sigpnd_field() {
        let status =
            b"Name:\tx\nShdPnd:\t0000000000000100\nSigPnd:\t0000000400000080\nSigBlk:\t0\n";
        // ShdPnd comes first in some kernels' order; SigPnd is the thread's.
        assert_eq!(parse_sigpnd(status), Some(0x4_0000_0080));
        assert_eq!(parse_sigpnd(b"SigPnd:\t\n"), None);
        assert_eq!(parse_sigpnd(b"Name:\tx\n"), None);
    }
}
