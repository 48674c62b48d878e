//! Builds the C test program (tests/c/api_test.c) and the C example
//! (examples/c/example.c) against libpreempt.a with musl-gcc, and runs them.
//!
//! libpreempt.a is built by the test as docs/PREEMPT.md says (the crate's
//! `crate-type` includes "staticlib"); the link also needs the Rust
//! toolchain's libunwind.a for musl.
//!
//! And the C libraries as cargo-c installs them (shared and static, the
//! header, preempt.pc), used through pkg-config with gcc.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::glibc::cargo_in_root;

/// Runs C test program `cmd` to its end, shows its output, checks that it
/// succeeded (`what` names it); its standard output.
fn run_c(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed: {:?}", out.status);
    stdout
}

/// libpreempt.a for musl, built as docs/PREEMPT.md says (with the
/// `global-allocator` feature) into a target directory of its own, once per
/// test run. Not the libpreempt.a next to this test binary: a plain `cargo
/// build -p preempt` leaves one there without the feature (it is off by
/// default), whose `preempt_launch` fails.
fn staticlib() -> PathBuf {
    common::glibc::staticlib_for(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "preempt-a",
        "x86_64-unknown-linux-musl",
    )
}

use common::glibc::libunwind;

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
    let stdout = run_c(&mut Command::new(&exe), "C test");
    assert!(stdout.contains("all ok"));
}

/// Preemptible functions making system calls under 10 µs budgets: no
/// slice's timer is lost (the picos crate's tests/preempt.rs runs the same
/// program under picos).
#[test]
fn c_syscalls_test_program() {
    let exe = build("tests/c/syscalls_test.c", "preempt_c_syscalls_test");
    let stdout = run_c(&mut Command::new(&exe), "C syscalls test");
    assert!(stdout.ends_with("syscalls_test: all ok\n"));
}

#[test]
fn c_example() {
    let exe = build("examples/c/example.c", "preempt_c_example");
    let stdout = run_c(&mut Command::new(&exe), "C example");
    assert!(stdout.contains("1270607 primes below 20000000"));
    assert!(stdout.contains("fibonacci: 0 1 1 2 3 5 8 13 21 34"));
    assert!(stdout.contains("runaway cancelled"));
}

/// cargo-c's `cargo cinstall`, as docs/PREEMPT.md says: None (with the
/// reason printed) when cargo-c is not installed, except under CI, which
/// installs it (.ci/run), where that is a failure.
fn cargo_c() -> Option<std::ffi::OsString> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let found = Command::new(&cargo)
        .args(["cinstall", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(cargo);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "cargo-c is not installed (.ci/run installs it: cargo install --locked cargo-c)"
    );
    eprintln!("SKIP: cargo-c is not installed (cargo install --locked cargo-c)");
    None
}

fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(args)
        .arg("preempt")
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .env_remove("PKG_CONFIG_LIBDIR")
        .output()
        .expect("pkg-config (Debian: pkg-config) not found");
    assert!(
        out.status.success(),
        "pkg-config {args:?} preempt failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// `cargo cinstall -p preempt` for glibc into `tmp/name` (a prefix),
/// with `extra` arguments; the prefix.
fn cinstall(tmp: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let prefix = tmp.join(name);
    let _ = std::fs::remove_dir_all(&prefix);
    let out = cargo_in_root()
        .args([
            "cinstall",
            "--release",
            "-p",
            "preempt",
            "--target",
            "x86_64-unknown-linux-gnu",
            "--target-dir",
        ])
        .arg(tmp.join("preempt-capi"))
        .arg("--prefix")
        .arg(&prefix)
        .arg("--libdir")
        .arg(prefix.join("lib"))
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo cinstall {extra:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    prefix
}

/// `gcc src $(pkg-config PC_ARGS preempt)` with the package installed
/// under `prefix`, into `exe`.
fn gcc_with_pkg_config(src: &Path, exe: &Path, prefix: &Path, pc_args: &[&str]) {
    let status = Command::new("gcc")
        .args(["-O2", "-Wall", "-Werror"])
        .arg(src)
        .args(pkg_config(prefix, pc_args))
        .arg("-o")
        .arg(exe)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "gcc $(pkg-config {} preempt) failed",
        pc_args.join(" ")
    );
}

/// The C libraries as a C user gets them: `cargo cinstall` (cargo-c)
/// installs libpreempt.so, libpreempt.a, preempt.h and preempt.pc under a
/// prefix, and the C test program is built with nothing but
/// `gcc prog.c $(pkg-config --cflags --libs preempt)`: linked against the
/// shared library (and run with it), and with `--static`, against the
/// static one installed alone.
#[test]
fn c_api_through_pkg_config() {
    if cargo_c().is_none() {
        return;
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let prefix = cinstall(tmp, "preempt-prefix", &[]);
    for f in [
        "include/preempt.h",
        "lib/pkgconfig/preempt.pc",
        "lib/libpreempt.a",
        "lib/libpreempt.so",
    ] {
        assert!(prefix.join(f).exists(), "cargo cinstall made no {f}");
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/api_test.c");

    // Shared: the default link.
    let exe = tmp.join("preempt_c_api_test_pkgconfig");
    gcc_with_pkg_config(&src, &exe, &prefix, &["--cflags", "--libs"]);
    let libdir = prefix.join("lib");
    let stdout = run_c(
        Command::new(&exe).env("LD_LIBRARY_PATH", &libdir),
        "C test (shared)",
    );
    assert!(stdout.contains("all ok"));
    // It really used the installed shared library.
    let ldd = Command::new("ldd")
        .arg(&exe)
        .env("LD_LIBRARY_PATH", &libdir)
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(
        ldd.contains(&*libdir.join("libpreempt.so").to_string_lossy()),
        "not linked against the installed libpreempt.so:\n{ldd}"
    );

    // Libsets with the shared library (its TLS word is initial-exec TLS in
    // a shared object; the object itself is never copied).
    let so = common::glibc::counter_lib(tmp);
    let exe = tmp.join("preempt_libsets_test_pkgconfig");
    let rpath = format!("-Wl,-rpath,{}", so.parent().unwrap().display());
    let status = Command::new("gcc")
        .args(["-O2", "-Wall", "-Werror"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/libsets_test.c"))
        .args(pkg_config(&prefix, &["--cflags", "--libs"]))
        .arg(&so)
        .arg(rpath)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "gcc libsets_test.c with libpreempt.so failed"
    );
    let stdout = run_c(
        Command::new(&exe).env("LD_LIBRARY_PATH", &libdir),
        "libsets test (shared libpreempt)",
    );
    assert!(stdout.contains("all ok"));

    // The C example of libsets, built as its comment says.
    let exe = tmp.join("preempt_libsets_example");
    gcc_with_pkg_config(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/c/libsets.c"),
        &exe,
        &prefix,
        &["--cflags", "--libs"],
    );
    let stdout = run_c(
        Command::new(&exe).env("LD_LIBRARY_PATH", &libdir),
        "libsets example",
    );
    assert!(stdout.contains("report in "));
    assert!(stdout.contains("ada:90 brian:75 carla:82 dmitri:67 eve:99 (5 rows)"));

    // Static: installed alone (`--library-type staticlib`, as a
    // distribution's -dev package of a static library would be), so that
    // -lpreempt is libpreempt.a; pkg-config --static adds the libraries the
    // Rust code needs (Libs.private).
    let prefix = cinstall(
        tmp,
        "preempt-prefix-static",
        &["--library-type", "staticlib"],
    );
    assert!(!prefix.join("lib/libpreempt.so").exists());
    let exe = tmp.join("preempt_c_api_test_pkgconfig_static");
    gcc_with_pkg_config(&src, &exe, &prefix, &["--static", "--cflags", "--libs"]);
    let ldd = Command::new("ldd").arg(&exe).output().unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(
        !ldd.contains("libpreempt"),
        "linked against a shared libpreempt:\n{ldd}"
    );
    let stdout = run_c(
        Command::new(&exe).env_remove("LD_LIBRARY_PATH"),
        "C test (static)",
    );
    assert!(stdout.contains("all ok"));
}
