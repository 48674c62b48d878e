//! A timer expiry that lands in the signal handler's tail (after a resume
//! switched back into the handler, before its rt_sigreturn) must not
//! preempt there: that would put one more kernel signal frame (~3.5 KiB
//! with AVX-512 state) on the function's stack each time. A loaded machine
//! does this now and then, and time after time once timers run late: the
//! libsets test program crashed natively with SIGSEGV (a signal frame that
//! no longer fit) in 2 of 12 runs under load. The test hook makes the
//! handler spin in its tail so that every slice's expiry lands there.

use preempt::{launch, Outcome, Reason, NO_TIMEOUT};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Without the fix the test does not end: once the stack is full, the
/// kernel cannot deliver an expiry (SIGSEGV, which the test harness's
/// handler returns from), and the function runs on with no timer armed.
fn watchdog(secs: u64) {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(secs));
        eprintln!("watchdog: test still running after {secs} s (a lost expiry?)");
        std::process::abort();
    });
}

#[test]
fn expiries_in_the_handlers_tail_do_not_nest() {
    watchdog(60);
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let f = move || {
        let mut n = 0u64;
        while !s.load(Ordering::Relaxed) {
            n = std::hint::black_box(n + 1);
        }
        n
    };
    let Outcome::Pending(mut c) = launch(f, 20).unwrap() else {
        panic!("finished early")
    };
    let before = preempt::stats();
    // 50 µs in the tail, 20 µs budgets: the expiries land there. Nested
    // frames would overflow the 256 KiB stack after ~70 resumes.
    preempt::delay_handler_tail_for_tests(50_000);
    for _ in 0..1_000 {
        assert!(c.resume(20).unwrap().is_none(), "function finished early");
        assert_eq!(c.reason(), Some(Reason::Timeout));
    }
    preempt::delay_handler_tail_for_tests(0);
    let mid = preempt::stats();
    // The function still runs, and is preempted in its own code.
    for _ in 0..100 {
        assert!(c.resume(20).unwrap().is_none(), "function finished early");
    }
    stop.store(true, Ordering::Relaxed);
    let n = c
        .resume(NO_TIMEOUT)
        .unwrap()
        .expect("function should finish");
    let after = preempt::stats();
    let in_tail = mid.expired_early - before.expired_early;
    let in_handler = after.timeouts - mid.timeouts;
    eprintln!("{in_tail} expiries deferred out of the handler's tail, then {in_handler} preemptions in the handler; {n} rounds");
    // Every other resume lands in the tail (the next goes on from there).
    assert!(
        in_tail >= 400,
        "only {in_tail} of 1,000 resumes met an expiry in the tail"
    );
    assert!(
        in_handler >= 90,
        "only {in_handler} preemptions after the tail test"
    );
    assert!(n > 0);
}
