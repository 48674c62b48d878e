//! A function that allocates and frees in a loop is preempted 100,000 times
//! while the caller allocates too: no deadlock (a watchdog aborts after 60 s)
//! and no corruption (every block's contents are checked).

use preempt::{launch, Outcome, Reason, NO_TIMEOUT};
use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::hint::black_box;
use std::rc::Rc;
use std::time::Duration;

fn watchdog(secs: u64) {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(secs));
        eprintln!("watchdog: test still running after {secs} s (deadlock?)");
        std::process::abort();
    });
}

fn pattern(seed: u64, len: usize) -> Vec<u64> {
    (0..len as u64)
        .map(|i| seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i)
        .collect()
}

#[test]
fn allocating_function_preempted_100k_times() {
    watchdog(60);
    const PREEMPTIONS: u64 = 100_000;
    const BUDGET_US: u64 = 10;
    let stop = Rc::new(Cell::new(false));
    let s = stop.clone();
    let f = move || {
        let mut live: VecDeque<(u64, Vec<u64>)> = VecDeque::new();
        let mut map: BTreeMap<u64, String> = BTreeMap::new();
        let mut round = 0u64;
        while !s.get() {
            let len = (round % 97) as usize + 1;
            live.push_back((round, pattern(round, len)));
            if live.len() > 64 {
                let (seed, v) = live.pop_front().unwrap();
                assert_eq!(v, pattern(seed, v.len()), "function's block corrupted");
            }
            map.insert(round % 512, format!("value {round}"));
            if round.is_multiple_of(3) {
                let _ = map.remove(&((round / 3) % 512));
            }
            let mut b = Box::new([round; 8]);
            b[3] ^= 1;
            black_box(&b);
            round += 1;
        }
        for (seed, v) in &live {
            assert_eq!(*v, pattern(*seed, v.len()), "function's block corrupted");
        }
        for (k, v) in &map {
            let n: u64 = v.strip_prefix("value ").unwrap().parse().unwrap();
            assert_eq!(n % 512, *k);
        }
        round
    };

    let before = preempt::stats();
    let Outcome::Pending(mut c) = launch(f, BUDGET_US).unwrap() else {
        panic!("finished early")
    };
    let mut preemptions = 1u64;
    let mut mine: VecDeque<(u64, Vec<u64>)> = VecDeque::new();
    let mut i = 0u64;
    while preemptions < PREEMPTIONS {
        // The caller allocates while the function is suspended, possibly
        // right after a preemption deferred out of the allocator.
        mine.push_back((i, pattern(i + 1_000_000, (i % 31) as usize + 1)));
        if mine.len() > 16 {
            let (seed, v) = mine.pop_front().unwrap();
            assert_eq!(
                v,
                pattern(seed + 1_000_000, v.len()),
                "caller's block corrupted"
            );
        }
        let s = format!("{i}");
        assert_eq!(s.parse::<u64>().unwrap(), i);
        i += 1;
        assert!(
            c.resume(BUDGET_US).unwrap().is_none(),
            "function finished early"
        );
        assert_eq!(c.reason(), Some(Reason::Timeout));
        preemptions += 1;
    }
    stop.set(true);
    let rounds = c
        .resume(NO_TIMEOUT)
        .unwrap()
        .expect("function should finish");
    let after = preempt::stats();
    let taken = (after.timeouts - before.timeouts)
        + (after.deferred - before.deferred)
        + (after.expired_early - before.expired_early);
    eprintln!(
        "{preemptions} preemptions ({} in the handler, {} deferred to a region's end, {} expired before the function ran), {rounds} function rounds",
        after.timeouts - before.timeouts,
        after.deferred - before.deferred,
        after.expired_early - before.expired_early,
    );
    // Under load most 10 µs budgets may expire before the function runs;
    // it must still make progress.
    assert!(rounds > 100, "only {rounds} rounds");
    assert!(taken >= PREEMPTIONS - 1, "only {taken} preemptions counted");
    assert!(
        after.deferred > before.deferred,
        "no preemption was ever deferred out of the allocator"
    );
}
