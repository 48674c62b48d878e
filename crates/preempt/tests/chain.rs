//! The timer signal coexists with the program's own handlers: instances of
//! the signal that are not our timer's go to the handler installed before
//! ours, and other signals are untouched. (Own test binary: it installs a
//! handler before the crate installs its own.)

use preempt::{launch, Outcome, NO_TIMEOUT};
use std::sync::atomic::{AtomicU64, Ordering};

static PREV_CALLS: AtomicU64 = AtomicU64::new(0);
static PREV_LAST_VALUE: AtomicU64 = AtomicU64::new(0);
static USR1_CALLS: AtomicU64 = AtomicU64::new(0);

extern "C" fn prev_handler(_sig: libc::c_int, info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    PREV_CALLS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the kernel's siginfo; for SI_QUEUE/SI_TIMER the value is at
    // offset 24 on x86-64.
    let v = unsafe { std::ptr::read_unaligned((info as *const u8).add(24).cast::<u64>()) };
    PREV_LAST_VALUE.store(v, Ordering::SeqCst);
}

extern "C" fn usr1_handler(_sig: libc::c_int) {
    USR1_CALLS.fetch_add(1, Ordering::SeqCst);
}

fn install(sig: libc::c_int, handler: usize, siginfo: bool) {
    // SAFETY: plain sigaction with a zeroed, then filled-in, struct.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        sa.sa_flags = if siginfo { libc::SA_SIGINFO } else { 0 } | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
    }
}

fn sigqueue_self(sig: libc::c_int, value: u64) {
    // SAFETY: rt_tgsigqueueinfo to this thread with a filled-in siginfo.
    unsafe {
        let mut si: libc::siginfo_t = std::mem::zeroed();
        let p = &mut si as *mut libc::siginfo_t as *mut u8;
        *(p as *mut i32) = sig; // si_signo
        *(p.add(8) as *mut i32) = libc::SI_QUEUE; // si_code
        *(p.add(16) as *mut i32) = libc::getpid(); // si_pid
        *(p.add(20) as *mut u32) = libc::getuid(); // si_uid
        *(p.add(24) as *mut u64) = value; // si_value
        let r = libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::getpid(),
            libc::syscall(libc::SYS_gettid),
            sig,
            &mut si as *mut libc::siginfo_t,
        );
        assert_eq!(r, 0);
    }
}

#[test]
fn foreign_signals_are_chained_and_other_handlers_work() {
    let sig = preempt::signal_number();
    install(sig, prev_handler as *const () as usize, true);
    install(libc::SIGUSR1, usr1_handler as *const () as usize, false);

    // First launch installs the crate's handler on top of ours.
    let Outcome::Pending(mut c) = launch(
        || loop {
            std::hint::spin_loop()
        },
        1_000,
    )
    .unwrap() else {
        panic!()
    };

    // A queued instance of the same signal, from "someone else": chained.
    sigqueue_self(sig, 0xfeed);
    assert_eq!(PREV_CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(PREV_LAST_VALUE.load(Ordering::SeqCst), 0xfeed);

    // Even one that looks like ours (our tag in the value) but is not from
    // our timer: chained.
    sigqueue_self(sig, 0x5052_4550_0000_0000);
    assert_eq!(PREV_CALLS.load(Ordering::SeqCst), 2);

    // A foreign POSIX timer on the same signal: chained, and preemption
    // keeps working next to it.
    // SAFETY: a timer of our own, deleted below.
    let timer = unsafe {
        let mut ev: libc::sigevent = std::mem::zeroed();
        ev.sigev_notify = libc::SIGEV_SIGNAL;
        ev.sigev_signo = sig;
        ev.sigev_value = libc::sigval {
            sival_ptr: 0x1234 as *mut libc::c_void,
        };
        let mut t: libc::timer_t = std::mem::zeroed();
        assert_eq!(
            libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut t),
            0
        );
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            },
        };
        assert_eq!(libc::timer_settime(t, 0, &spec, std::ptr::null_mut()), 0);
        t
    };
    // Resume a few times (the function is preempted each time) while the
    // foreign timer fires.
    for _ in 0..5 {
        assert!(c.resume(1_000).unwrap().is_none());
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while PREV_CALLS.load(Ordering::SeqCst) < 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(PREV_CALLS.load(Ordering::SeqCst), 3);
    assert_eq!(PREV_LAST_VALUE.load(Ordering::SeqCst), 0x1234);
    // SAFETY: deleting the timer created above.
    unsafe { libc::timer_delete(timer) };

    // SIGUSR1 raised inside a preemptible function reaches its handler, and
    // the function goes on.
    let r = launch(
        || {
            // SAFETY: raise is async-signal-safe and has no preconditions.
            unsafe { libc::raise(libc::SIGUSR1) };
            USR1_CALLS.load(Ordering::SeqCst)
        },
        NO_TIMEOUT,
    )
    .unwrap();
    assert!(matches!(r, Outcome::Done(1)));

    // SAFETY: the loop shares nothing.
    unsafe { c.cancel() };
}
