//! Builds the C test program (tests/c/api_test.c) and the C example
//! (examples/c/example.c) against libpreempt.a with musl-gcc, and runs them.
//!
//! libpreempt.a is built by the test as docs/PREEMPT.md says (the crate's
//! `crate-type` includes "staticlib"); the link also needs the Rust
//! toolchain's libunwind.a for musl.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// libpreempt.a, built as docs/PREEMPT.md says (with the
/// `global-allocator` feature) into a target directory of its own, once per
/// test run. Not the libpreempt.a next to this test binary: a plain `cargo
/// build -p preempt` leaves one there without the feature (it is off by
/// default), whose `preempt_launch` fails.
fn staticlib() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("preempt-a");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(cargo)
            .current_dir(&root)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .args([
                "build",
                "--release",
                "-p",
                "preempt",
                "--lib",
                "--features",
                "global-allocator",
                "--target",
                "x86_64-unknown-linux-musl",
                "--target-dir",
            ])
            .arg(&target_dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "building libpreempt.a failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lib = target_dir.join("x86_64-unknown-linux-musl/release/libpreempt.a");
        assert!(lib.exists(), "{} missing", lib.display());
        lib
    })
    .clone()
}

/// The Rust toolchain's LLVM libunwind for musl: the staticlib refers to
/// `_Unwind_*` but does not bundle it (Rust's own musl link adds it).
fn libunwind() -> PathBuf {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc --print sysroot");
    let sysroot = String::from_utf8(out.stdout).unwrap();
    let p = Path::new(sysroot.trim())
        .join("lib/rustlib/x86_64-unknown-linux-musl/lib/self-contained/libunwind.a");
    assert!(
        p.exists(),
        "{} missing (rustup target add x86_64-unknown-linux-musl)",
        p.display()
    );
    p
}

fn build(src: &str, out: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(out);
    let cc = which("musl-gcc").expect("musl-gcc not found: install musl-tools (.ci/run does)");
    let status = Command::new(cc)
        .args(["-O2", "-static", "-Wall", "-Werror", "-I"])
        .arg(dir.join("include"))
        .arg(dir.join(src))
        .arg(staticlib())
        .arg(libunwind())
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "musl-gcc failed for {src}");
    out
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

#[test]
fn c_api_test_program() {
    let exe = build("tests/c/api_test.c", "preempt_c_api_test");
    let out = Command::new(&exe).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "C test failed: {:?}", out.status);
    assert!(stdout.contains("all ok"));
}

#[test]
fn c_example() {
    let exe = build("examples/c/example.c", "preempt_c_example");
    let out = Command::new(&exe).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "C example failed: {:?}", out.status);
    assert!(stdout.contains("1270607 primes below 20000000"));
    assert!(stdout.contains("fibonacci: 0 1 1 2 3 5 8 13 21 34"));
    assert!(stdout.contains("runaway cancelled"));
}

/// The shared library, built as docs/PREEMPT.md says (rustc makes no cdylib
/// for the workspace's musl target, so it is built for glibc in a target
/// directory of its own), and the C test program linked against it with
/// gcc and run with it found through LD_LIBRARY_PATH.
#[test]
fn c_api_shared_library() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("preempt-so");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&root)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .args([
            "rustc",
            "--release",
            "-p",
            "preempt",
            "--lib",
            "--features",
            "global-allocator",
            "--target",
            "x86_64-unknown-linux-gnu",
            "--crate-type",
            "cdylib",
            "--target-dir",
        ])
        .arg(&target_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "building libpreempt.so failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let libdir = target_dir.join("x86_64-unknown-linux-gnu/release");
    assert!(libdir.join("libpreempt.so").exists());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("preempt_c_api_test_shared");
    let status = Command::new("gcc")
        .args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(dir.join("include"))
        .arg(dir.join("tests/c/api_test.c"))
        .arg("-L")
        .arg(&libdir)
        .args(["-lpreempt", "-o"])
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success(), "gcc failed to link against libpreempt.so");
    let out = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &libdir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "C test (shared) failed: {:?}",
        out.status
    );
    assert!(stdout.contains("all ok"));
    // It really used the shared library.
    let ldd = Command::new("ldd")
        .arg(&exe)
        .env("LD_LIBRARY_PATH", &libdir)
        .output();
    if let Ok(ldd) = ldd {
        assert!(String::from_utf8_lossy(&ldd.stdout).contains("libpreempt.so"));
    }
}
