//! Builds the runtime (`picos-rt`, a `no_std` static PIE for
//! x86_64-unknown-none) and embeds it in the `picos` binary, so installing
//! picos is one file.
//!
//! The runtime is built by a nested `cargo build` into its own target
//! directory (so it never waits on the outer build's lock), always with the
//! release profile: it runs inside every picoprocess and must be fast even in
//! a debug build of the CLI.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const TARGET: &str = "x86_64-unknown-none";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.join("../..").canonicalize().unwrap();
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let target_dir = workspace.join("target").join("picos-rt");
    for p in [
        "crates/picos-rt/src",
        "crates/picos-rt/Cargo.toml",
        "crates/picos-abi/src",
        "crates/picos-abi/Cargo.toml",
        "crates/picos-macros/src",
        "crates/picos-macros/Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(p).display());
    }
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&workspace)
        .args([
            "build",
            "--locked",
            "-p",
            "picos-rt",
            "--bin",
            "picos-rt",
            "--release",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&target_dir);
    // Flags meant for the host build must not leak into the runtime's.
    // A lean embedded image: it is copied into a memfd on every `picos run`.
    // Crash reports name offsets in the image; the panic messages carry
    // their own file and line.
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "0");
    cmd.env("CARGO_PROFILE_RELEASE_STRIP", "symbols");
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .expect("failed to run cargo to build the picos runtime");
    if !status.success() {
        panic!(
            "building the picos runtime (picos-rt for {TARGET}) failed.\n\
             If the error above says the target is missing, install it with:\n    \
             rustup target add {TARGET}"
        );
    }
    let built = target_dir.join(TARGET).join("release").join("picos-rt");
    let dest = out_dir.join("picos-rt");
    std::fs::copy(&built, &dest).unwrap_or_else(|e| panic!("cannot copy {}: {e}", built.display()));
}
