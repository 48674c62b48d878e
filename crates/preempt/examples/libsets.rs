//! Libsets from Rust: preemptible functions that use non-reentrant C library
//! functions (`strtok`, `rand`) while their caller uses them too.
//!
//! Libsets copy the program's shared libraries, so the program must be
//! dynamically linked: build it for glibc (the workspace's default target
//! is static musl, where `enable` says there is nothing to copy):
//!
//! ```sh
//! cargo run --release -p preempt --example libsets --target x86_64-unknown-linux-gnu
//! ```

use preempt::{launch, libset, pause, Outcome, NO_TIMEOUT};
use std::ffi::CStr;

/// Splits `s` with the C library's `strtok` (its position is a global of
/// the C library); pauses after each token if `pausing`.
fn strtok_all(s: &str, sep: &CStr, pausing: bool) -> Vec<String> {
    let mut buf: Vec<u8> = s.bytes().chain([0]).collect();
    let mut out = Vec::new();
    // SAFETY: `buf` is a NUL-terminated writable string that outlives the
    // calls; strtok returns pointers into it.
    let mut t = unsafe { libc::strtok(buf.as_mut_ptr().cast(), sep.as_ptr()) };
    while !t.is_null() {
        // SAFETY: a token of `buf`.
        out.push(unsafe { CStr::from_ptr(t) }.to_string_lossy().into_owned());
        if pausing {
            pause().unwrap();
        }
        // SAFETY: continues the same string.
        t = unsafe { libc::strtok(std::ptr::null_mut(), sep.as_ptr()) };
    }
    out
}

fn rand3() -> [i32; 3] {
    // SAFETY: rand has no preconditions (its state is a C library global).
    unsafe { [libc::rand(), libc::rand(), libc::rand()] }
}

fn main() {
    let info = match libset::enable(&[]) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("{e}");
            eprintln!("(build for glibc: --target x86_64-unknown-linux-gnu)");
            std::process::exit(1);
        }
    };
    println!(
        "libsets on: {} libraries copied per libset ({}), {} calls dispatched",
        info.libraries.len(),
        info.libraries.join(", "),
        info.stubs
    );

    // strtok: the function is suspended in the middle of its string; the
    // caller tokenizes its own string meanwhile.
    let mut cont = match launch(|| strtok_all("alpha,beta,gamma", c",", true), NO_TIMEOUT) {
        Ok(Outcome::Pending(c)) => c,
        _ => unreachable!("the function pauses"),
    };
    let fn_tokens = loop {
        let mine = strtok_all("1 2 3", c" ", false);
        assert_eq!(mine, ["1", "2", "3"]);
        if let Some(v) = cont.resume(NO_TIMEOUT).unwrap() {
            break v;
        }
    };
    println!("function's tokens: {fn_tokens:?} (the caller tokenized \"1 2 3\" between each)");
    assert_eq!(fn_tokens, ["alpha", "beta", "gamma"]);

    // rand: each libset has its own generator state; cancel puts it back.
    let caller_first = rand3();
    let (k, seq) = match launch(
        || {
            // SAFETY: as in rand3.
            unsafe { libc::srand(7) };
            let s = rand3();
            pause().unwrap();
            (libset::current(), s)
        },
        NO_TIMEOUT,
    ) {
        Ok(Outcome::Pending(mut c)) => {
            let caller_next = rand3();
            println!("caller's rand(): {caller_first:?} then {caller_next:?} (its own sequence)");
            c.resume(NO_TIMEOUT).unwrap().unwrap()
        }
        _ => unreachable!(),
    };
    println!("libset {k}: srand(7) gave {seq:?}");
    let fresh = |cancel: bool| -> [i32; 3] {
        match launch(
            || {
                let s = rand3();
                pause().unwrap();
                s
            },
            NO_TIMEOUT,
        ) {
            Ok(Outcome::Pending(mut c)) => {
                if cancel {
                    // SAFETY: the function holds nothing the caller uses.
                    unsafe { c.cancel() };
                    [0; 3]
                } else {
                    c.resume(NO_TIMEOUT).unwrap().unwrap()
                }
            }
            _ => unreachable!(),
        }
    };
    // The libset that ran srand(7) is reused: its generator goes on from there.
    let went_on = fresh(false);
    println!("next function in that libset: {went_on:?} (state kept after a return)");
    // Cancel a function in it, and the libset's globals are back to their
    // state at load: rand() starts over as after srand(1).
    fresh(true);
    let after_cancel = fresh(false);
    // SAFETY: as in rand3.
    unsafe { libc::srand(1) };
    let from_seed_1 = rand3();
    println!("after a cancel: {after_cancel:?} (= the sequence of srand(1): {from_seed_1:?})");
    assert_eq!(after_cancel, from_seed_1);
    println!("ok");
}
