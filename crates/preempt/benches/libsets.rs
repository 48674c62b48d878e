//! The libset rows (issue 14; docs/PREEMPT.md, "Libsets"), beside the seed's
//! libgotcha table: tests/c/libsets_bench.c, built with gcc against glibc,
//! run alternately without (`off`) and with (`on`) libsets, round after
//! round; mean ± 95% confidence interval over the rounds.
//!
//! Run: `cargo bench -p preempt --bench libsets` (`-- --quick`: 4 rounds
//! instead of 12). Needs gcc and the x86_64-unknown-linux-gnu Rust target.

mod common;
#[path = "../tests/common/glibc.rs"]
mod glibc;

use common::stats::mean_ci;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

type Sample = BTreeMap<String, f64>;

fn run(exe: &Path, mode: &str) -> Sample {
    let out = Command::new(exe)
        .arg(mode)
        .output()
        .expect("run libsets_bench");
    assert!(
        out.status.success(),
        "libsets_bench {mode} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn fmt(m: f64, ci: f64) -> String {
    if m >= 100.0 {
        format!("{m:.0} ± {ci:.0}")
    } else {
        format!("{m:.2} ± {ci:.2}")
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 4 } else { 12 };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let exe = glibc::program(tmp, "tests/c/libsets_bench.c", "libsets_bench");
    let mut off: Vec<Sample> = Vec::new();
    let mut on: Vec<Sample> = Vec::new();
    for r in 0..rounds {
        // Alternate which goes first, so that drift hits both alike.
        if r % 2 == 0 {
            off.push(run(&exe, "off"));
            on.push(run(&exe, "on"));
        } else {
            on.push(run(&exe, "on"));
            off.push(run(&exe, "off"));
        }
    }
    let col = |s: &[Sample], k: &str| -> Vec<f64> {
        s.iter().filter_map(|m| m.get(k).copied()).collect()
    };
    println!("libsets: {rounds} rounds, each a process without and one with libsets (ns)\n");
    println!("| row | without libsets | with libsets | difference | seed (libgotcha) | goal |");
    println!("|---|---|---|---|---|---|");
    let rows: &[(&str, &str, &str, &str)] = &[
        (
            "call_caller",
            "call to a library function from the program (eager binding)",
            "2 → 14",
            "≤ +5",
        ),
        (
            "call_in_fn",
            "the same, inside a preemptible function (its libset)",
            "",
            "≤ +5",
        ),
        (
            "first_call",
            "first call of a function (lazy binding / bound at enable)",
            "100 → 125",
            "≤ +20",
        ),
        (
            "second_call",
            "second call of the same 256 functions",
            "",
            "",
        ),
        (
            "global_in_fn",
            "global variable access, in a function (per access)",
            "0 → 3,438",
            "≤ 5",
        ),
        (
            "shared_in_fn",
            "call of a shared function from a copy (its wrapper defers preemption)",
            "21 / 25",
            "≤ 15 (total)",
        ),
        (
            "cancel_nonreentrant",
            "cancel of a function paused after strtok, rand, a library's globals",
            "4.8 ms",
            "≤ 50 µs",
        ),
        ("launch", "launch (timer armed) + return", "4.6 µs", ""),
        (
            "launch_new_libset",
            "launch that makes a new libset",
            "",
            "",
        ),
    ];
    for (k, what, seed, goal) in rows {
        let (a, aci) = mean_ci(&col(&off, k));
        let (b, bci) = mean_ci(&col(&on, k));
        println!(
            "| {what} | {} | {} | {:+.2} | {seed} | {goal} |",
            fmt(a, aci),
            fmt(b, bci),
            b - a
        );
    }
    let (e, eci) = mean_ci(&col(&on, "enable"));
    let bytes = col(&on, "bytes_per_libset");
    let libs = col(&on, "libraries");
    println!(
        "\nenable: {} µs; libraries copied: {}; private memory per libset: {:.0} KiB",
        fmt(e / 1000.0, eci / 1000.0),
        libs.first().copied().unwrap_or(0.0),
        bytes.first().copied().unwrap_or(0.0) / 1024.0
    );
}
