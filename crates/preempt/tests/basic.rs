//! Launch, resume, pause, cancel, panics, errors, threads, register state.

use preempt::{launch, pause, resume, Error, Outcome, Reason, NO_TIMEOUT};
use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn spin_forever() {
    let mut x = 0u64;
    loop {
        x = black_box(x.wrapping_add(1));
    }
}

#[test]
fn result_comes_back() {
    match launch(|| 6 * 7, 1_000_000).unwrap() {
        Outcome::Done(v) => assert_eq!(v, 42),
        Outcome::Pending(_) => panic!("should have finished"),
    }
    let s = String::from("hello");
    match launch(move || s + " world", NO_TIMEOUT).unwrap() {
        Outcome::Done(v) => assert_eq!(v, "hello world"),
        Outcome::Pending(_) => panic!("should have finished"),
    }
}

#[test]
fn infinite_loop_is_preempted_resumed_and_cancelled() {
    let lead_before = preempt::timer_lead_ns();
    let t = Instant::now();
    let Outcome::Pending(mut c) = launch(spin_forever, 2_000).unwrap() else {
        panic!("loop finished")
    };
    let first = t.elapsed();
    // A slice arms its timer early by the lead (the timer latency learnt
    // from every expiry in the process, which other tests' expiries raise
    // meanwhile), and by design the latency is below it now and then.
    let lead = Duration::from_nanos(lead_before.max(preempt::timer_lead_ns()));
    assert!(
        first + lead >= Duration::from_micros(2_000),
        "returned early: {first:?} (timer lead {lead:?})"
    );
    // Generous: other tests' threads compete for the two CPUs. Precision is
    // measured by the benchmark and the server test.
    assert!(
        first < Duration::from_millis(500),
        "budget overshoot: {first:?}"
    );
    assert_eq!(c.reason(), Some(Reason::Timeout));
    for _ in 0..5 {
        let t = Instant::now();
        assert!(resume(&mut c, 1_000).unwrap().is_none());
        assert!(t.elapsed() < Duration::from_millis(500));
        assert_eq!(c.reason(), Some(Reason::Timeout));
    }
    let t = Instant::now();
    // SAFETY: the loop shares nothing.
    unsafe { c.cancel() };
    assert!(t.elapsed() < Duration::from_millis(50));
}

#[test]
fn long_function_finishes_over_several_slices() {
    let f = || {
        let t = Instant::now();
        let mut n = 0u64;
        while t.elapsed() < Duration::from_millis(50) {
            n = black_box(n + 1);
        }
        n
    };
    let Outcome::Pending(mut c) = launch(f, 1_000).unwrap() else {
        panic!("finished too soon")
    };
    let mut slices = 1;
    let n = loop {
        if let Some(n) = c.resume(1_000).unwrap() {
            break n;
        }
        slices += 1;
        assert!(slices < 10_000);
    };
    assert!(n > 0);
    // Other tests compete for the CPU, so a 1 ms slice may see more than 1 ms
    // of wall-clock time go by; still, 50 ms hardly fit in one slice.
    assert!(slices >= 2, "only {slices} slices");
    assert!(c.is_finished());
    assert!(matches!(c.resume(1_000), Err(Error::Finished)));
}

#[test]
fn pause_yields_to_the_caller() {
    let log = Rc::new(Cell::new(0u32));
    let l = log.clone();
    let f = move || {
        for i in 1..=3 {
            l.set(i);
            pause().unwrap();
        }
        "done"
    };
    let Outcome::Pending(mut c) = launch(f, NO_TIMEOUT).unwrap() else {
        panic!()
    };
    assert_eq!(c.reason(), Some(Reason::Paused));
    assert_eq!(log.get(), 1);
    assert_eq!(c.resume(NO_TIMEOUT).unwrap(), None);
    assert_eq!(log.get(), 2);
    assert_eq!(c.resume(NO_TIMEOUT).unwrap(), None);
    assert_eq!(log.get(), 3);
    assert_eq!(c.resume(NO_TIMEOUT).unwrap(), Some("done"));
}

#[test]
fn panic_comes_back_as_error_and_poisons() {
    let r = launch(|| -> u32 { panic!("boom {}", 1) }, 1_000_000);
    match r {
        Err(e @ Error::Panicked(_)) => assert_eq!(e.panic_message(), Some("boom 1")),
        other => panic!("unexpected {other:?}"),
    }
    let f = || -> u32 {
        pause().unwrap();
        panic!("later");
    };
    let Outcome::Pending(mut c) = launch(f, NO_TIMEOUT).unwrap() else {
        panic!()
    };
    match c.resume(NO_TIMEOUT) {
        Err(e) => assert_eq!(e.panic_message(), Some("later")),
        Ok(v) => panic!("unexpected {v:?}"),
    }
    assert!(c.is_poisoned());
    assert!(matches!(c.resume(NO_TIMEOUT), Err(Error::Poisoned)));
    // The thread is fine afterwards.
    assert!(!std::thread::panicking());
    assert!(matches!(launch(|| 1, NO_TIMEOUT), Ok(Outcome::Done(1))));
}

#[test]
fn errors_for_misuse() {
    assert!(matches!(pause(), Err(Error::NotInFunction)));
    let r = launch(
        || matches!(launch(|| 1, NO_TIMEOUT), Err(Error::Nested)),
        NO_TIMEOUT,
    );
    assert!(matches!(r, Ok(Outcome::Done(true))));
    assert!(!preempt::in_preemptible());
    assert!(matches!(
        launch(preempt::in_preemptible, NO_TIMEOUT),
        Ok(Outcome::Done(true))
    ));
}

#[test]
fn zero_budget_still_makes_progress() {
    let n = Rc::new(Cell::new(0u64));
    let m = n.clone();
    let f = move || loop {
        m.set(m.get() + 1);
        if m.get() == 1_000_000 {
            return 7;
        }
    };
    let mut r = launch(f, 0).unwrap();
    let mut slices = 0;
    let v = loop {
        match r {
            Outcome::Done(v) => break v,
            Outcome::Pending(mut c) => {
                slices += 1;
                assert!(slices < 1_000_000);
                r = match c.resume(10).unwrap() {
                    Some(v) => Outcome::Done(v),
                    None => Outcome::Pending(c),
                };
            }
        }
    };
    assert_eq!(v, 7);
    assert_eq!(n.get(), 1_000_000);
}

/// The function's vector registers, flags and FPU control words survive a
/// preemption while the caller clobbers its own.
#[test]
fn register_state_survives_preemption() {
    use std::arch::asm;
    let f = || {
        let t = Instant::now();
        let mut bad = 0u64;
        let mut rounds = 0u64;
        while t.elapsed() < Duration::from_millis(30) {
            let a: u64 = 0x0123_4567_89ab_cdef ^ rounds;
            let out: u64;
            // SAFETY: only registers named here are touched.
            unsafe {
                asm!(
                    "movq xmm7, {a}",
                    "movq xmm15, {a}",
                    "mov {c:e}, 200000",
                    "2:",
                    "dec {c:e}",
                    "jnz 2b",
                    "movq {t}, xmm7",
                    "movq {o}, xmm15",
                    "xor {o}, {t}",
                    "movq {t}, xmm7",
                    "xor {t}, {a}",
                    "or {o}, {t}",
                    a = in(reg) a,
                    c = out(reg) _,
                    t = out(reg) _,
                    o = out(reg) out,
                    out("xmm7") _,
                    out("xmm15") _,
                );
            }
            bad += u64::from(out != 0);
            rounds += 1;
        }
        (bad, rounds)
    };
    let mut r = launch(f, 200).unwrap();
    let mut preemptions = 0;
    let (bad, rounds) = loop {
        match r {
            Outcome::Done(v) => break v,
            Outcome::Pending(mut c) => {
                preemptions += 1;
                // Clobber the caller's vector registers.
                // SAFETY: only clobbers registers declared as outputs.
                unsafe {
                    asm!("pxor xmm7, xmm7", "pcmpeqd xmm15, xmm15", out("xmm7") _, out("xmm15") _);
                }
                r = match c.resume(200).unwrap() {
                    Some(v) => Outcome::Done(v),
                    None => Outcome::Pending(c),
                };
            }
        }
    };
    assert!(rounds > 0);
    assert!(preemptions > 3, "only {preemptions} preemptions");
    assert_eq!(
        bad, 0,
        "vector registers corrupted in {bad} of {rounds} rounds"
    );
}

#[test]
fn eight_threads_at_once() {
    let handles: Vec<_> = (0..8u64)
        .map(|i| {
            std::thread::spawn(move || {
                let mut done = 0;
                for round in 0..20u64 {
                    // A looping function, preempted and cancelled.
                    let Outcome::Pending(mut c) = launch(spin_forever, 300).unwrap() else {
                        panic!()
                    };
                    assert!(c.resume(300).unwrap().is_none());
                    // SAFETY: the loop shares nothing.
                    unsafe { c.cancel() };
                    // A computing function, finished over several slices.
                    let f = move || {
                        (0..200_000u64)
                            .map(|x| black_box(x ^ i ^ round))
                            .sum::<u64>()
                    };
                    let expect = (0..200_000u64).map(|x| x ^ i ^ round).sum::<u64>();
                    let mut r = launch(f, 100).unwrap();
                    let v = loop {
                        match r {
                            Outcome::Done(v) => break v,
                            Outcome::Pending(mut c) => {
                                r = match c.resume(100).unwrap() {
                                    Some(v) => Outcome::Done(v),
                                    None => Outcome::Pending(c),
                                }
                            }
                        }
                    };
                    assert_eq!(v, expect);
                    done += 1;
                }
                done
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 20);
    }
}

#[test]
fn cancel_frees_tracked_allocations_and_reuses_stacks() {
    let f = || {
        let mut keep = Vec::new();
        for i in 0..100u32 {
            keep.push(vec![i; 100]);
        }
        black_box(&keep);
        pause().unwrap();
        unreachable!();
    };
    let before = preempt::stats();
    let Outcome::Pending(c) = launch(f, NO_TIMEOUT).unwrap() else {
        panic!()
    };
    let t = Instant::now();
    // SAFETY: the vectors never left the function.
    let freed = unsafe { c.cancel() };
    let took = t.elapsed();
    // 100 inner vectors + the outer one.
    assert_eq!(freed, 101);
    assert!(took < Duration::from_millis(50), "cancel took {took:?}");
    let after = preempt::stats();
    assert!(after.cancels > before.cancels);
    assert!(after.freed_on_cancel >= before.freed_on_cancel + 101);
    assert!(after.pooled_stacks >= 1);
}

#[test]
fn allocations_returned_by_a_finished_function_stay_alive() {
    let Outcome::Pending(mut c) = launch(
        || {
            let v: Vec<Box<u64>> = (0..1000).map(Box::new).collect();
            pause().unwrap();
            v
        },
        NO_TIMEOUT,
    )
    .unwrap() else {
        panic!()
    };
    let v = c.resume(NO_TIMEOUT).unwrap().unwrap();
    // Reuse the stack and its tracker for a function that gets cancelled.
    let Outcome::Pending(c2) = launch(pause, NO_TIMEOUT).unwrap() else {
        panic!()
    };
    // SAFETY: it allocated nothing anyone else sees.
    unsafe { c2.cancel() };
    assert_eq!(v.iter().map(|b| **b).sum::<u64>(), 999 * 1000 / 2);
}

#[test]
fn dropping_a_pending_continuation_leaks_it() {
    let before = preempt::stats().leaked;
    let Outcome::Pending(c) = launch(spin_forever, 100).unwrap() else {
        panic!()
    };
    drop(c);
    assert!(preempt::stats().leaked > before);
}

#[test]
fn big_closures_are_boxed() {
    let big = [7u8; 64 * 1024];
    match launch(
        move || big.iter().map(|&b| u64::from(b)).sum::<u64>(),
        NO_TIMEOUT,
    )
    .unwrap()
    {
        Outcome::Done(v) => assert_eq!(v, 7 * 64 * 1024),
        Outcome::Pending(_) => panic!(),
    }
}

#[test]
fn nonpreemptible_region_defers_the_timer() {
    let f = || {
        preempt::nonpreemptible(|| {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(5) {
                std::hint::spin_loop();
            }
        });
        spin_forever();
    };
    let before = preempt::stats();
    let t = Instant::now();
    let Outcome::Pending(c) = launch(f, 500).unwrap() else {
        panic!()
    };
    // The budget ran out inside the region; the preemption waited for its end.
    assert!(t.elapsed() >= Duration::from_millis(5));
    assert!(preempt::stats().deferred > before.deferred);
    // SAFETY: shares nothing.
    unsafe { c.cancel() };
}

fn mxcsr() -> u32 {
    let mut m = 0u32;
    // SAFETY: stores MXCSR into a local.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut m) };
    m
}

fn set_mxcsr(m: u32) {
    // SAFETY: loads a valid MXCSR value (only rounding bits changed).
    unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &m) };
}

#[test]
fn fpu_control_words_are_per_context() {
    const RC_ZERO: u32 = 0x6000; // round toward zero
    let caller = mxcsr();
    let f = move || {
        set_mxcsr(caller | RC_ZERO);
        pause().unwrap();
        let after_pause = mxcsr();
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(50) {
            std::hint::spin_loop();
        }
        let after_preemption = mxcsr();
        set_mxcsr(caller);
        (after_pause, after_preemption)
    };
    let Outcome::Pending(mut c) = launch(f, NO_TIMEOUT).unwrap() else {
        panic!()
    };
    assert_eq!(mxcsr(), caller, "function's MXCSR leaked into the caller");
    assert_eq!(c.resume(1_000).unwrap(), None);
    assert_eq!(c.reason(), Some(Reason::Timeout));
    assert_eq!(mxcsr(), caller, "function's MXCSR leaked into the caller");
    let (a, b) = loop {
        if let Some(v) = c.resume(1_000).unwrap() {
            break v;
        }
    };
    assert_eq!(a, caller | RC_ZERO);
    assert_eq!(b, caller | RC_ZERO);
}

#[test]
fn works_in_a_forked_child() {
    // SAFETY: fork in a multi-threaded test process: the child only uses
    // the crate (whose stack-pool lock is held across fork by its atfork
    // handler) and musl's malloc (likewise), then leaves with _exit.
    unsafe {
        // Make sure this thread has its timer before forking.
        let _ = launch(|| 0, NO_TIMEOUT).unwrap();
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            let ok = match launch(spin_forever, 1_000) {
                Ok(Outcome::Pending(c)) => {
                    c.cancel();
                    true
                }
                _ => false,
            };
            libc::_exit(if ok { 0 } else { 1 });
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child failed: {status:#x}"
        );
    }
}

#[test]
fn blocks_from_regions_and_grown_blocks_are_not_freed_by_cancel() {
    // A structure created outside the function and grown inside it, and one
    // created inside a non-preemptible region, survive the cancel.
    let outside: Rc<std::cell::RefCell<Vec<u64>>> =
        Rc::new(std::cell::RefCell::new(Vec::with_capacity(1)));
    let shared: Rc<std::cell::RefCell<Option<Box<[u64; 64]>>>> = Rc::default();
    let (o, sh) = (outside.clone(), shared.clone());
    let f = move || {
        o.borrow_mut().extend(0..10_000u64); // realloc: keeps "no owner"
        let b = preempt::nonpreemptible(|| Box::new([5u64; 64])); // no owner
        *sh.borrow_mut() = Some(b);
        let mine = vec![1u8; 100]; // owned by the function
        black_box(&mine);
        pause().unwrap();
        unreachable!();
    };
    let Outcome::Pending(c) = launch(f, NO_TIMEOUT).unwrap() else {
        panic!()
    };
    // SAFETY: only `mine` (and the closure's own state) is freed; the
    // function published nothing else it owns.
    let freed = unsafe { c.cancel() };
    assert_eq!(freed, 1);
    assert_eq!(outside.borrow().iter().sum::<u64>(), 9_999 * 10_000 / 2);
    assert_eq!(shared.borrow().as_ref().unwrap()[63], 5);

    // cancel_keep_heap frees nothing: a published block stays valid.
    let sh = shared.clone();
    let Outcome::Pending(c) = launch(
        move || {
            *sh.borrow_mut() = Some(Box::new([9u64; 64]));
            pause().unwrap();
        },
        NO_TIMEOUT,
    )
    .unwrap() else {
        panic!()
    };
    // SAFETY: nothing refers to the function's stack.
    unsafe { c.cancel_keep_heap() };
    assert_eq!(shared.borrow().as_ref().unwrap()[0], 9);
}
