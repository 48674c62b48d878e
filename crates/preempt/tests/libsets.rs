//! Libsets (docs/PREEMPT.md, "Libsets"): tests/c/libsets_test.c, built with
//! gcc against glibc, run with and without libsets; and what `enable` says
//! in a static program (this test binary, on the workspace's musl target).

mod common;
use common::glibc;

use std::path::Path;
use std::process::Command;

fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

fn run(exe: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(exe).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), stdout)
}

/// strtok preempted 100,000 times while the caller uses it, printf to a
/// FILE preempted 100,000 times, a library's globals separate per libset
/// and restored by cancel, 64 functions alive in the middle of strtok,
/// launches from 8 threads: all in the C program.
#[test]
fn c_program_with_libsets() {
    let exe = glibc::program(tmp(), "tests/c/libsets_test.c", "libsets_test");
    let (code, out) = run(&exe, &[]);
    assert_eq!(code, Some(0), "libsets_test failed");
    assert!(out.contains("all ok"));
    assert!(out.contains("globals: separate per libset, restored by cancel"));
    // A libset's stdout is flushed when its function returns (before the
    // caller's next line), and at exit for a function still suspended.
    let first = out.lines().position(|l| l == "printed by a function");
    let globals = out.lines().position(|l| l.starts_with("globals:"));
    assert!(first.is_some() && first < globals, "not flushed at return");
    assert_eq!(
        out.lines().last(),
        Some("printed by a suspended function"),
        "not flushed at exit"
    );
}

/// C++ (built with g++): exceptions thrown and unwound inside a function's
/// own copies of libstdc++ and libgcc_s while it is preempted every 20 µs
/// and the caller throws too; iostreams and std::string.
#[test]
fn cxx_program_with_libsets() {
    let exe = tmp().join("libsets_cxx");
    let src = glibc::crate_dir().join("tests/c/libsets_cxx.cc");
    let include = glibc::crate_dir().join("include");
    let lib = glibc::staticlib(tmp());
    let mut args: Vec<std::ffi::OsString> = vec![
        "-O2".into(),
        "-Wall".into(),
        "-Werror".into(),
        "-I".into(),
        include.into(),
        src.into(),
        "-o".into(),
        exe.clone().into(),
        lib.into(),
    ];
    args.extend(glibc::NATIVE_LIBS.iter().map(|s| s.into()));
    let out = match Command::new("g++").args(&args).output() {
        Ok(o) => o,
        Err(_) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIP: g++ is not installed (Debian: g++; .ci/run installs it)");
            return;
        }
        Err(e) => panic!("g++ not found ({e}): .ci/run installs it"),
    };
    assert!(
        out.status.success(),
        "g++ failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, out) = run(&exe, &[]);
    assert_eq!(code, Some(0), "libsets_cxx failed");
    assert!(out.contains("all ok"));
}

/// A dynamically linked musl program (musl-gcc, without -static): its own
/// library is copied, preempted while it counts, restored by cancel; musl's
/// C library is the dynamic loader and is not copied.
#[test]
fn musl_program_with_libsets() {
    let dir = tmp().join("musl");
    std::fs::create_dir_all(&dir).unwrap();
    let so = dir.join("libcounter.so");
    let cc = "musl-gcc";
    let src = glibc::crate_dir().join("tests/c/counter.c");
    let status = Command::new(cc)
        .args(["-O2", "-shared", "-fPIC"])
        .arg(&src)
        .arg("-o")
        .arg(&so)
        .status()
        .expect("musl-gcc not found: install musl-tools (.ci/run does)");
    assert!(status.success(), "musl-gcc -shared failed");
    let exe = dir.join("libsets_musl");
    let lib = glibc::staticlib_for(tmp(), "preempt-a", "x86_64-unknown-linux-musl");
    // -no-pie: the workspace builds its musl code with the static
    // relocation model (.cargo/config.toml).
    let status = Command::new(cc)
        .args(["-no-pie", "-O2", "-Wall", "-Werror", "-I"])
        .arg(glibc::crate_dir().join("include"))
        .arg(glibc::crate_dir().join("tests/c/libsets_musl.c"))
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", dir.display()))
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-lcounter")
        .arg(lib)
        .arg(glibc::libunwind())
        .status()
        .unwrap();
    assert!(status.success(), "musl-gcc libsets_musl.c failed");
    let (code, out) = run(&exe, &[]);
    assert_eq!(code, Some(0), "libsets_musl failed");
    assert!(out.contains("all ok"));
}

/// A dlopen'ed library with thread-locals: `enable` refuses it, saying
/// why. A library replaced on disk since it was loaded: the launch that
/// needs a new libset fails with PREEMPT_ELIBSET saying why, and nothing is
/// lost (the next launch, with the file back, works).
#[test]
fn unusable_libraries_are_refused() {
    let exe = glibc::program(tmp(), "tests/c/libsets_errors.c", "libsets_errors");
    let dir = tmp().join("errors");
    std::fs::create_dir_all(&dir).unwrap();
    let tls_lib = dir.join("libcounter2.so");
    std::fs::copy(glibc::counter_lib(tmp()), &tls_lib).unwrap();
    // Two different libraries without thread-locals.
    let mut libs = Vec::new();
    for (name, body) in [
        ("lib1", "int one(void) { return 1; }"),
        ("lib2", "int two(void) { return 2; }"),
    ] {
        let src = dir.join(format!("{name}.c"));
        let so = dir.join(format!("{name}.so"));
        std::fs::write(&src, format!("{body}\n")).unwrap();
        glibc::gcc(&[
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            src.as_os_str(),
            "-o".as_ref(),
            so.as_os_str(),
        ]);
        libs.push(so);
    }
    let (code, out) = run(
        &exe,
        &[
            tls_lib.to_str().unwrap(),
            libs[0].to_str().unwrap(),
            libs[1].to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "libsets_errors failed");
    assert!(out.contains("not in static TLS"));
    assert!(out.contains("differs from the library loaded"));
    assert!(out.contains("all ok"));
}

/// The same strtok check without libsets sees the corruption libsets
/// prevent, so the check above can fail.
#[test]
fn c_program_without_libsets_is_corrupted() {
    let exe = glibc::program(tmp(), "tests/c/libsets_test.c", "libsets_test_control");
    let (code, out) = run(&exe, &["control"]);
    assert_eq!(code, Some(3), "expected the corruption to be seen");
    assert!(out.contains("corrupted without libsets"));
}

/// The Rust example (examples/libsets.rs), built for glibc as its
/// documentation says: strtok and rand per libset, cancel restores rand's
/// state (it asserts each, and prints "ok").
#[test]
fn rust_example_with_libsets() {
    let out = glibc::cargo_in_root()
        .args([
            "run",
            "--release",
            "-p",
            "preempt",
            "--example",
            "libsets",
            "--target",
            "x86_64-unknown-linux-gnu",
            "--target-dir",
        ])
        .arg(tmp().join("preempt-gnu"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the example failed");
    assert!(stdout.contains("function's tokens: [\"alpha\", \"beta\", \"gamma\"]"));
    assert!(stdout.ends_with("ok\n"));
}

/// A static program has no shared libraries to copy: `enable` says so and
/// changes nothing.
#[cfg(target_env = "musl")]
#[test]
fn static_program_cannot_enable() {
    let e = preempt::libset::enable(&[]).unwrap_err();
    assert!(
        e.to_string().contains("statically linked"),
        "unexpected error: {e}"
    );
    assert!(preempt::libset::info().is_none());
    assert_eq!(preempt::libset::current(), 0);
    match preempt::launch(|| 7, preempt::NO_TIMEOUT) {
        Ok(preempt::Outcome::Done(7)) => {}
        _ => panic!("launch without libsets"),
    }
}
