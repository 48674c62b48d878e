//! Builds the crate's static library for a target, and C programs against
//! glibc with gcc (libsets need a dynamically linked program: a static one
//! has no shared libraries to copy). Shared by tests/libsets.rs,
//! tests/c_api.rs and benches/libsets.rs, and by the picos crate's
//! tests/preempt.rs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The libraries the Rust staticlib needs on glibc
/// (`cargo rustc -- --print native-static-libs`).
pub const NATIVE_LIBS: &[&str] = &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

/// The preempt crate's directory (this file is also compiled into the
/// picos crate's tests, which run these programs under picos).
pub fn crate_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../preempt"))
}

/// `cargo` in the workspace's root, without the outer build's flags.
pub fn cargo_in_root() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(crate_dir().join("../.."))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR");
    c
}

/// libpreempt.a for `target`, with the allocator installed (without it
/// `preempt_launch` fails), built once per test binary into a target
/// directory of its own under `dir` (`dir/<name>`).
pub fn staticlib_for(dir: &Path, name: &str, target: &str) -> PathBuf {
    static LIBS: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut libs = LIBS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = libs.iter().find(|(t, _)| t == target) {
        return p.clone();
    }
    let target_dir = dir.join(name);
    let out = cargo_in_root()
        .args([
            "build",
            "--release",
            "-p",
            "preempt",
            "--lib",
            "--features",
            "global-allocator",
            "--target",
            target,
            "--target-dir",
        ])
        .arg(&target_dir)
        .output()
        .expect("cargo");
    assert!(
        out.status.success(),
        "building libpreempt.a for {target} failed (rustup target add {target}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lib = target_dir.join(target).join("release/libpreempt.a");
    assert!(lib.exists(), "{} missing", lib.display());
    libs.push((target.to_string(), lib.clone()));
    lib
}

/// libpreempt.a for glibc, in `dir/preempt-gnu`.
pub fn staticlib(dir: &Path) -> PathBuf {
    staticlib_for(dir, "preempt-gnu", "x86_64-unknown-linux-gnu")
}

/// The Rust toolchain's LLVM libunwind for musl: the staticlib refers to
/// `_Unwind_*` but does not bundle it (Rust's own musl link adds it).
pub fn libunwind() -> PathBuf {
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

/// gcc with the given arguments; panics with its output if it fails.
pub fn gcc(args: &[&std::ffi::OsStr]) {
    let out = Command::new("gcc")
        .args(args)
        .output()
        .expect("gcc not found (Debian: gcc; .ci/run installs it)");
    assert!(
        out.status.success(),
        "gcc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// tests/c/counter.c as `dir/libcounter.so`.
pub fn counter_lib(dir: &Path) -> PathBuf {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| build_counter_lib(dir)).clone()
}

fn build_counter_lib(dir: &Path) -> PathBuf {
    let so = dir.join("libcounter.so");
    let src = crate_dir().join("tests/c/counter.c");
    gcc(&[
        "-O2".as_ref(),
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        src.as_os_str(),
        "-o".as_ref(),
        so.as_os_str(),
    ]);
    so
}

/// Builds C program `src` (relative to the crate) into `dir/out`, linked
/// with libcounter.so (found at run time through an rpath) and
/// libpreempt.a for glibc.
pub fn program(dir: &Path, src: &str, out: &str) -> PathBuf {
    counter_lib(dir);
    let exe = dir.join(out);
    let src = crate_dir().join(src);
    let include = crate_dir().join("include");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let libdir = format!("-L{}", dir.display());
    let lib = staticlib(dir);
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "-O2".as_ref(),
        "-Wall".as_ref(),
        "-Werror".as_ref(),
        "-I".as_ref(),
        include.as_os_str(),
        src.as_os_str(),
        "-o".as_ref(),
        exe.as_os_str(),
        libdir.as_ref(),
        rpath.as_ref(),
        "-lcounter".as_ref(),
        lib.as_os_str(),
    ];
    args.extend(NATIVE_LIBS.iter().map(|s| std::ffi::OsStr::new(*s)));
    gcc(&args);
    exe
}
