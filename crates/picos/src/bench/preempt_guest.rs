//! The preemptible-function rows of `picos bench` (crates/preempt), run by
//! the picos binary itself as a guest: `picos bench-guest ROW ITERS DIR`,
//! natively or as `picos run -- picos bench-guest ...`. It prints the same
//! result line as the C guest: `ROW VALUE UNIT ELAPSED_NS`.
//!
//! As in the seed paper's benchmark, the functions launched pause at once
//! (each on a stack of its own, its timer armed and disarmed), in batches so
//! that memory stays bounded; only the operation of the row is timed (the
//! elapsed time reported, which sizes the loop, is the whole run's).

use preempt::{launch, pause, Continuation, Outcome};
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The rows this guest serves, with their units (checked against ROWS).
pub const ROWS: &[(&str, &str)] = &[
    ("preempt_launch", "ns"),
    ("preempt_resume", "ns"),
    ("preempt_cancel", "ns"),
    ("preempt_overshoot", "ns"),
    ("timer_overshoot", "ns"),
];

/// Functions launched per batch.
const BATCH: u64 = 500;
/// Budget of the functions that pause at once (µs): never reached.
const LONG_BUDGET_US: u64 = 1_000_000;
/// Budget whose overshoot is measured (µs).
const BUDGET_US: u64 = 100;
/// Fewest timeouts behind one overshoot percentile.
const MIN_TIMEOUTS: u64 = 1000;

fn pauses() {
    // The continuation is resumed (the function then returns) or cancelled.
    let _ = pause();
}

fn launch_paused() -> Continuation<()> {
    match launch(pauses, LONG_BUDGET_US) {
        Ok(Outcome::Pending(c)) => c,
        Ok(Outcome::Done(())) => panic!("a function that pauses finished"),
        Err(e) => panic!("launch: {e}"),
    }
}

fn cancel_all(conts: Vec<Continuation<()>>) {
    for c in conts {
        // SAFETY: `pauses` holds no locks and owns nothing.
        unsafe { c.cancel() };
    }
}

/// Nanoseconds per operation over `iters` operations, timing only `op` on
/// batches of paused functions; and the whole run's time, set-up included
/// (what the harness sizes the loop by: a cancel is ~30 times cheaper than
/// the launch it needs).
fn batched(iters: u64, op: &str) -> (f64, f64) {
    let start = Instant::now();
    let mut timed = 0f64;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        left -= n;
        match op {
            "launch" => {
                let t = Instant::now();
                let conts: Vec<_> = (0..n).map(|_| launch_paused()).collect();
                timed += t.elapsed().as_nanos() as f64;
                cancel_all(conts);
            }
            "resume" => {
                let mut conts: Vec<_> = (0..n).map(|_| launch_paused()).collect();
                let t = Instant::now();
                for c in conts.iter_mut() {
                    match c.resume(LONG_BUDGET_US) {
                        Ok(Some(())) => {}
                        other => panic!("resume: {other:?}"),
                    }
                }
                timed += t.elapsed().as_nanos() as f64;
            }
            _ => {
                let conts: Vec<_> = (0..n).map(|_| launch_paused()).collect();
                let t = Instant::now();
                cancel_all(conts);
                timed += t.elapsed().as_nanos() as f64;
            }
        }
    }
    (timed / iters as f64, start.elapsed().as_nanos() as f64)
}

fn spin() {
    let mut x = 0u64;
    loop {
        x = black_box(x.wrapping_add(1));
    }
}

/// The 99th percentile of how late a 100 µs budget ends (from calling
/// launch to getting the continuation back, minus the budget), in ns.
fn preempt_overshoot(iters: u64) -> (f64, f64) {
    let n = iters.max(MIN_TIMEOUTS);
    let start = Instant::now();
    let mut over = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let t = Instant::now();
        let c = match launch(spin, BUDGET_US) {
            Ok(Outcome::Pending(c)) => c,
            other => panic!("launch(spin): {:?}", other.map(|_| ())),
        };
        over.push(t.elapsed().as_nanos() as f64 - BUDGET_US as f64 * 1e3);
        // SAFETY: `spin` holds no locks and owns nothing.
        unsafe { c.cancel() };
    }
    (p99(over), start.elapsed().as_nanos() as f64)
}

static FIRED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_timer(_: libc::c_int) {
    FIRED.store(true, Ordering::SeqCst);
}

/// The same for a bare one-shot POSIX timer signalling this thread: how
/// late the platform itself delivers a 100 µs timer.
fn timer_overshoot(iters: u64) -> (f64, f64) {
    let n = iters.max(MIN_TIMEOUTS);
    // SAFETY: installs a plain handler for an otherwise unused real-time
    // signal and creates a timer that sends it to this thread; all structs
    // are zero-initialised C structs filled in before use.
    let timer = unsafe {
        let sig = libc::SIGRTMIN() + 2;
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_timer as *const () as usize;
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
        t
    };
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: 0,
            tv_nsec: (BUDGET_US * 1000) as _,
        },
    };
    let start = Instant::now();
    let mut over = Vec::with_capacity(n as usize);
    for _ in 0..n {
        FIRED.store(false, Ordering::SeqCst);
        let t = Instant::now();
        // SAFETY: arming the timer created above.
        unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) };
        while !FIRED.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        over.push(t.elapsed().as_nanos() as f64 - BUDGET_US as f64 * 1e3);
    }
    (p99(over), start.elapsed().as_nanos() as f64)
}

fn p99(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let i = ((xs.len() - 1) as f64 * 0.99).round() as usize;
    // A percentile is reported as at least 1 ns (the harness wants > 0).
    xs[i].max(1.0)
}

/// `picos bench-guest ROW ITERS [DIR]`, or `picos bench-guest --list`.
pub fn main(args: &[String]) -> ExitCode {
    if args.first().map(String::as_str) == Some("--list") {
        for (k, u) in ROWS {
            println!("{k} {u}");
        }
        return ExitCode::SUCCESS;
    }
    let (Some(row), Some(iters)) = (
        args.first(),
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: picos bench-guest ROW ITERS [DIR] | --list");
        return ExitCode::from(2);
    };
    let iters = iters.max(1);
    if std::env::var_os("PICOS_BENCH_SUD").is_some_and(|v| v == "1") {
        if let Err(e) = sud_everywhere() {
            eprintln!("picos bench-guest: Syscall User Dispatch: {e}");
            return ExitCode::from(1);
        }
    }
    // Warm-up, untimed: the stacks are mapped and cached, the timer created.
    if row.starts_with("preempt_") {
        cancel_all((0..BATCH).map(|_| launch_paused()).collect());
    }
    let (value, elapsed) = match row.as_str() {
        "preempt_launch" => batched(iters, "launch"),
        "preempt_resume" => batched(iters, "resume"),
        "preempt_cancel" => batched(iters, "cancel"),
        "preempt_overshoot" => preempt_overshoot(iters),
        "timer_overshoot" => timer_overshoot(iters),
        _ => {
            eprintln!(
                "picos bench-guest: unknown row `{row}` (rows: {})",
                ROWS.iter().map(|r| r.0).collect::<Vec<_>>().join(", ")
            );
            return ExitCode::from(2);
        }
    };
    println!("{row} {value:.3} ns {elapsed:.0}");
    ExitCode::SUCCESS
}

/// The `native+SUD` column: Syscall User Dispatch on for this thread with
/// the whole address space as the allowed region, so that no call is
/// dispatched but each takes the kernel's slow path, as under picos.
/// (Linux does not pass it on to new threads or processes; the C guest
/// does the same.)
fn sud_everywhere() -> std::io::Result<()> {
    const PR_SET_SYSCALL_USER_DISPATCH: libc::c_int = 59;
    const PR_SYS_DISPATCH_ON: libc::c_ulong = 1;
    // SAFETY: integer arguments only; with no selector the kernel reads no
    // memory of ours.
    let r = unsafe {
        libc::prctl(
            PR_SET_SYSCALL_USER_DISPATCH,
            PR_SYS_DISPATCH_ON,
            0 as libc::c_ulong,
            (1 as libc::c_ulong) << 47,
            0 as libc::c_ulong,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
