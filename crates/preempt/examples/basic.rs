//! The Rust API in a few lines: a budgeted computation, a generator built on
//! `pause`, a runaway function that gets cancelled, and a panic.
//!
//! Run: `cargo run --release -p preempt --example basic`

use preempt::{launch, nonpreemptible, pause, Outcome, Reason, NO_TIMEOUT};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

fn main() {
    // 1. A computation in 1 ms slices; the caller is free between slices.
    let count_primes = || {
        (2..3_000_000u64)
            .filter(|n| (2..).take_while(|d| d * d <= *n).all(|d| n % d != 0))
            .count()
    };
    let t = Instant::now();
    let mut slices = 1;
    let primes = match launch(count_primes, 1_000).unwrap() {
        Outcome::Done(v) => v,
        Outcome::Pending(mut cont) => loop {
            slices += 1;
            if let Some(v) = cont.resume(1_000).unwrap() {
                break v;
            }
        },
    };
    println!(
        "{primes} primes below 3,000,000 in {slices} slices of 1 ms ({:?})",
        t.elapsed()
    );

    // 2. A generator: pause() hands each value to the caller.
    let out = Rc::new(Cell::new(0u64));
    let o = out.clone();
    let fib = move || {
        let (mut a, mut b) = (0u64, 1u64);
        loop {
            o.set(a);
            pause().unwrap();
            (a, b) = (b, a + b);
        }
    };
    let Outcome::Pending(mut cont) = launch(fib, NO_TIMEOUT).unwrap() else {
        unreachable!()
    };
    let mut values = Vec::new();
    while values.len() < 10 {
        assert_eq!(cont.reason(), Some(Reason::Paused));
        values.push(out.get());
        cont.resume(NO_TIMEOUT).unwrap();
    }
    println!("fibonacci: {values:?}");
    // SAFETY: the generator only touches `out`, which outlives it and is not
    // borrowed across the pause.
    unsafe { cont.cancel() };

    // 3. A runaway function: 10 ms in all, then cancelled. What it allocated
    // is freed by cancel.
    let runaway = || {
        let mut v = Vec::new();
        loop {
            v.push(nonpreemptible(|| format!("{}", v.len())));
            if v.len() > 100_000 {
                v.clear();
            }
        }
    };
    let Outcome::Pending(cont) = launch(runaway, 10_000).unwrap() else {
        unreachable!()
    };
    let t = Instant::now();
    // SAFETY: the runaway's vector never leaves it.
    let freed = unsafe { cont.cancel() };
    println!(
        "runaway cancelled in {:?}, {freed} blocks freed",
        t.elapsed()
    );

    // 4. A panic comes back as an error (with panic = "unwind").
    #[cfg(panic = "unwind")]
    {
        std::panic::set_hook(Box::new(|_| {}));
        match launch(|| -> u32 { panic!("bad input") }, 1_000) {
            Err(e) => println!("error: {e}"),
            Ok(_) => unreachable!(),
        }
        let _ = std::panic::take_hook();
    }

    println!("{:?}", preempt::stats());
}
