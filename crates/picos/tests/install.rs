//! `cargo install --locked --path crates/picos` (the README's install
//! command) gives a `picos` that works on its own: installed into a root of
//! the test's, run from elsewhere, with an empty cache, it runs the README's
//! main job, writes its runtime image to the cache it is given, and
//! `cargo uninstall` removes it again.
//!
//! The install builds into the workspace's target directory (`--target-dir`):
//! the test run has just built the same crates with the same profile there,
//! so the install only links what differs instead of building all of picos
//! (libcontainer included) a second time. Cargo does not hold that
//! directory's lock while the tests run.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The target directory this test binary was built in (CARGO_TARGET_TMPDIR
/// is its `tmp` subdirectory).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    // What the outer `cargo test` was given is not the user's install.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_INSTALL_ROOT",
    ] {
        c.env_remove(var);
    }
    c.current_dir(workspace());
    c
}

#[test]
fn cargo_install_gives_a_working_picos() {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIP: /usr/bin/python3 (the README's main job) is not installed");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let out = cargo()
        .args(["install", "--locked", "--path", "crates/picos", "--root"])
        .arg(root.path())
        .arg("--target-dir")
        .arg(target_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo install failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let picos = root.path().join("bin/picos");
    assert!(picos.is_file(), "{} was not installed", picos.display());

    // Run from a directory that has nothing of the workspace, with a cache
    // of its own: the installed binary carries the library OS.
    let elsewhere = tempfile::tempdir().unwrap();
    let cache = elsewhere.path().join("cache");
    let python = |code: &str| {
        Command::new(&picos)
            .args(["run", "/usr/bin/python3", "-c", code])
            .current_dir(elsewhere.path())
            .env("XDG_CACHE_HOME", &cache)
            .output()
            .unwrap()
    };
    let out = python("print(42)");
    assert!(
        out.status.success(),
        "installed picos failed: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
    let runtime = cache.join("picos/runtime");
    let images: Vec<_> = std::fs::read_dir(&runtime)
        .unwrap_or_else(|e| panic!("{}: {e}", runtime.display()))
        .collect();
    assert!(
        !images.is_empty(),
        "no runtime image in {}",
        runtime.display()
    );
    // The second run starts from the cached image, with the same result.
    let out = python("print(6 * 7)");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");

    let out = cargo()
        .args(["uninstall", "--root"])
        .arg(root.path())
        .arg("picos")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo uninstall failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!picos.exists(), "cargo uninstall left {}", picos.display());
}
