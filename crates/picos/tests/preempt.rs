//! Preemptible functions (the preempt crate, docs/PREEMPT.md) in programs
//! run under picos: the preempt crate's C test programs, built with gcc
//! against glibc and libpreempt.a, run natively and under `picos run`, with
//! the same output.
//!
//! A preemptible function's timer is a one-shot POSIX timer whose signal
//! the runtime receives first and hands on: each slice depends on that one
//! signal. These once found a signal kept pending by the runtime and never
//! delivered (the function then ran for ever: docs/ARCHITECTURE.md).

mod common;
#[path = "../../preempt/tests/common/glibc.rs"]
mod glibc;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const PICOS: &str = env!("CARGO_BIN_EXE_picos");
/// Longest one run may take (natively each takes a few seconds; a lost
/// timer is caught by the programs' own watchdogs well before this).
const LIMIT: Duration = Duration::from_secs(300);

fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

fn show(what: &str, o: &Output) {
    eprintln!(
        "--- {what}: {:?}\n{}{}",
        o.status,
        common::text(o),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The output with the counts that depend on timing masked: how often a
/// caller's loop went round while its function was preempted ("2069067
/// rounds", "1820653 + 100000 lines").
fn masked(out: &str) -> String {
    let mut lines = Vec::new();
    for line in out.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        let masked: Vec<&str> = words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let timing = matches!(words.get(i + 1), Some(&"rounds,") | Some(&"+"));
                if timing && w.bytes().all(|b| b.is_ascii_digit()) {
                    "N"
                } else {
                    w
                }
            })
            .collect();
        lines.push(masked.join(" "));
    }
    lines.join("\n")
}

#[test]
fn masking_keeps_what_must_match() {
    assert_eq!(
        masked("strtok: 100000 preemptions, 2069067 rounds, 0 corrupted\nx 5 + 100000 lines"),
        "strtok: 100000 preemptions, N rounds, 0 corrupted\nx N + 100000 lines"
    );
}

/// Runs `exe` natively and under picos; both must succeed. Their outputs.
fn natively_and_under_picos(exe: &Path) -> (Output, Output) {
    let native = common::output_within(&mut Command::new(exe), LIMIT);
    show("native", &native);
    assert!(native.status.success(), "{} failed natively", exe.display());
    let picos = common::output_within(Command::new(PICOS).arg("run").arg(exe), LIMIT);
    show("picos", &picos);
    assert!(
        picos.status.success(),
        "{} failed under picos",
        exe.display()
    );
    (native, picos)
}

/// Runs `exe` natively and under picos; both must succeed with the same
/// standard output (timing-dependent counts aside), whose last line is
/// `last`.
fn same_natively_and_under_picos(exe: &Path, last: &str) {
    let (native, picos) = natively_and_under_picos(exe);
    assert_eq!(
        masked(&common::text(&picos)),
        masked(&common::text(&native))
    );
    assert_eq!(common::text(&native).lines().last(), Some(last));
}

/// Functions that write, read, ask getppid and read the clock in loops,
/// 50,000 slices of 10 µs each: every slice's timer fires.
#[test]
fn functions_making_system_calls() {
    let exe = glibc::program(tmp(), "tests/c/syscalls_test.c", "syscalls_test");
    same_natively_and_under_picos(&exe, "syscalls_test: all ok");
}

/// The C API's own test program: launch, resume, pause, cancel, nesting,
/// threads, the allocator.
#[test]
fn c_api_test_program() {
    let exe = glibc::program(tmp(), "tests/c/api_test.c", "api_test");
    // (Its output holds timings: only its verdict is compared.)
    let (_, picos) = natively_and_under_picos(&exe);
    assert!(common::text(&picos).contains("all ok"));
}

/// Libsets: strtok and printf preempted 100,000 times each, a library's
/// globals and thread-locals per function, 64 functions alive, 8 threads.
#[test]
fn libsets_test_program() {
    let exe = glibc::program(tmp(), "tests/c/libsets_test.c", "libsets_test");
    same_natively_and_under_picos(&exe, "printed by a suspended function");
}
