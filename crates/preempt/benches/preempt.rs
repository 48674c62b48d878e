//! Latency of launch / resume / cancel, next to fork and pthread_create
//! measured in the same run (interleaved round by round), plus the overshoot
//! of a 100 µs timeout, next to that of a bare POSIX timer (the platform's
//! own timer latency) measured interleaved. Mean ± 95% confidence interval
//! (Student's t over the per-round means).
//!
//! Run: `cargo bench -p preempt --bench preempt` (add `-- --quick` for a short
//! run). As in the paper's benchmark, each round launches hundreds of
//! preemptible functions, each with its own stack, all running a function
//! that immediately calls `pause()`.

use preempt::{launch, pause, Continuation, Outcome};
use std::hint::black_box;
use std::time::Instant;

mod common;
use common::stats::mean_ci;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn pauses() {
    pause().unwrap();
}

/// Budget given to the launch/resume benchmark's functions (µs). They pause
/// long before it runs out, but the timer is armed and disarmed as usual.
const BUDGET_US: u64 = 1_000_000;

fn launch_n(n: usize) -> Vec<Continuation<()>> {
    (0..n)
        .map(|_| match launch(pauses, BUDGET_US).unwrap() {
            Outcome::Pending(c) => c,
            Outcome::Done(()) => unreachable!(),
        })
        .collect()
}

fn fork_once() {
    // SAFETY: the child only calls _exit; the parent reaps it.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            libc::_exit(0);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
}

extern "C" fn empty_thread(_: *mut libc::c_void) -> *mut libc::c_void {
    std::ptr::null_mut()
}

fn pthread_once() {
    // SAFETY: a default-attribute thread running an empty function, joined.
    unsafe {
        let mut t: libc::pthread_t = std::mem::zeroed();
        assert_eq!(
            libc::pthread_create(&mut t, std::ptr::null(), empty_thread, std::ptr::null_mut()),
            0
        );
        libc::pthread_join(t, std::ptr::null_mut());
    }
}

static BARE_FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn bare_handler(_: libc::c_int) {
    BARE_FIRED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// A bare one-shot POSIX timer to this thread, for the baseline: how late
/// does the platform deliver a 100 µs timer at all?
struct BareTimer(libc::timer_t);

impl BareTimer {
    fn new() -> BareTimer {
        // SAFETY: installs a plain handler for an otherwise unused real-time
        // signal and creates a timer that sends it to this thread.
        unsafe {
            let sig = libc::SIGRTMIN() + 2;
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = bare_handler as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
            let mut ev: libc::sigevent = std::mem::zeroed();
            ev.sigev_notify = libc::SIGEV_THREAD_ID;
            ev.sigev_signo = sig;
            ev.sigev_notify_thread_id = libc::syscall(libc::SYS_gettid) as libc::c_int;
            let mut t: libc::timer_t = std::mem::zeroed();
            assert_eq!(
                libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut t),
                0
            );
            BareTimer(t)
        }
    }

    /// Arms it for `us` and spins until the handler ran; returns the elapsed µs.
    fn fire_after(&self, us: u64) -> f64 {
        BARE_FIRED.store(false, std::sync::atomic::Ordering::SeqCst);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: 0,
                tv_nsec: (us * 1000) as _,
            },
        };
        let t = Instant::now();
        // SAFETY: arming the timer created in `new`.
        unsafe { libc::timer_settime(self.0, 0, &spec, std::ptr::null_mut()) };
        while !BARE_FIRED.load(std::sync::atomic::Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        t.elapsed().as_secs_f64() * 1e6
    }
}

fn spin() {
    let mut x = 0u64;
    loop {
        x = black_box(x.wrapping_add(1));
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, n_fn, n_fork, n_thread, n_over) = if quick {
        (10, 200, 5, 20, 300)
    } else {
        (40, 500, 20, 100, 3000)
    };

    // Warm up: map the stacks, fault in the pages, create the timer.
    for c in launch_n(n_fn) {
        // SAFETY: `pauses` shares nothing.
        unsafe { c.cancel() };
    }

    let mut launch_us = Vec::new();
    let mut resume_us = Vec::new();
    let mut cancel_us = Vec::new();
    let mut fork_us = Vec::new();
    let mut thread_us = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        let mut conts = launch_n(n_fn);
        launch_us.push(t.elapsed().as_secs_f64() * 1e6 / n_fn as f64);

        let t = Instant::now();
        for c in conts.iter_mut() {
            assert!(c.resume(BUDGET_US).unwrap().is_some());
        }
        resume_us.push(t.elapsed().as_secs_f64() * 1e6 / n_fn as f64);
        drop(conts);

        let t = Instant::now();
        for _ in 0..n_fork {
            fork_once();
        }
        fork_us.push(t.elapsed().as_secs_f64() * 1e6 / n_fork as f64);

        let conts = launch_n(n_fn);
        let t = Instant::now();
        for c in conts {
            // SAFETY: `pauses` shares nothing.
            unsafe { c.cancel() };
        }
        cancel_us.push(t.elapsed().as_secs_f64() * 1e6 / n_fn as f64);

        let t = Instant::now();
        for _ in 0..n_thread {
            pthread_once();
        }
        thread_us.push(t.elapsed().as_secs_f64() * 1e6 / n_thread as f64);
    }

    // Overshoot of a 100 µs budget: time from calling launch to getting the
    // continuation back, minus 100 µs; cancel is timed too.
    // Interleaved with a bare POSIX timer of the same length, the baseline.
    let bare = BareTimer::new();
    let mut bare_over = Vec::with_capacity(n_over);
    let mut over = Vec::with_capacity(n_over);
    let mut cancel_spin_us = Vec::with_capacity(n_over);
    for _ in 0..n_over {
        bare_over.push(bare.fire_after(100) - 100.0);
        let t = Instant::now();
        let Outcome::Pending(c) = launch(spin, 100).unwrap() else {
            unreachable!()
        };
        over.push(t.elapsed().as_secs_f64() * 1e6 - 100.0);
        let t = Instant::now();
        // SAFETY: `spin` shares nothing.
        unsafe { c.cancel() };
        cancel_spin_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    over.sort_by(f64::total_cmp);
    bare_over.sort_by(f64::total_cmp);

    println!("preempt benchmark: {rounds} rounds, {n_fn} functions per round, mean ± 95% CI");
    println!();
    println!("| operation | µs |");
    println!("|---|---|");
    for (name, xs) in [
        (
            "launch() (function pauses at once; timer armed and disarmed)",
            &launch_us,
        ),
        ("resume() (function returns)", &resume_us),
        ("cancel() (paused function)", &cancel_us),
        ("fork() + _exit + waitpid", &fork_us),
        ("pthread_create() + join", &thread_us),
    ] {
        let (m, ci) = mean_ci(xs);
        println!("| {name} | {m:.2} ± {ci:.2} |");
    }
    let (m, ci) = mean_ci(&cancel_spin_us);
    println!("| cancel() (preempted spinning function) | {m:.2} ± {ci:.2} |");
    println!();
    let (m, ci) = mean_ci(&over);
    println!(
        "timeout overshoot at a 100 µs budget ({} samples; timer armed {:.1} µs early at the end): mean {m:.1} ± {ci:.1} µs, min {:.1}, p1 {:.1}, p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1} µs",
        over.len(),
        preempt::timer_lead_ns() as f64 / 1e3,
        over[0],
        percentile(&over, 0.01),
        percentile(&over, 0.50),
        percentile(&over, 0.90),
        percentile(&over, 0.99),
        over[over.len() - 1]
    );
    let (m, ci) = mean_ci(&bare_over);
    println!(
        "bare POSIX timer of 100 µs, interleaved (baseline): mean {m:.1} ± {ci:.1} µs, p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1} µs",
        percentile(&bare_over, 0.50),
        percentile(&bare_over, 0.90),
        percentile(&bare_over, 0.99),
        bare_over[bare_over.len() - 1]
    );
    println!("{:?}", preempt::stats());
}
