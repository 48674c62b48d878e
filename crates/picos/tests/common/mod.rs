//! Helpers shared by the integration tests (`mod common;` in each).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

// (Each test binary uses some of these: the others are dead there.)

/// The workspace's root (where `tests/` and `tools/` are).
#[allow(dead_code)]
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A command's standard output, as text.
#[allow(dead_code)]
pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Writes a small C project into directory `p` (made if need be): two
/// sources, a header and a Makefile whose `prog` prints 42.
#[allow(dead_code)]
pub fn write_c_project(p: &std::path::Path) {
    std::fs::create_dir_all(p).unwrap();
    std::fs::write(
        p.join("main.c"),
        "#include <stdio.h>\n#include \"h.h\"\nint main(void) { printf(\"%d\\n\", f()); return 0; }\n",
    )
    .unwrap();
    std::fs::write(p.join("h.h"), "int f(void);\n").unwrap();
    std::fs::write(
        p.join("f.c"),
        "#include \"h.h\"\nint f(void) { return 42; }\n",
    )
    .unwrap();
    std::fs::write(
        p.join("Makefile"),
        "prog: main.o f.o\n\tcc -o $@ $^\n%.o: %.c h.h\n\tcc -O1 -c $<\n",
    )
    .unwrap();
}

/// Does the test run as root?
#[allow(dead_code)]
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `cmd` to its end in a process group of its own and returns its
/// output; if it is still running after `limit`, kills the whole group
/// (the program and anything it started) and fails the test.
#[allow(dead_code)]
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    let child = cmd
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) has no memory effects; the group is the
            // child's own, and the child is not reaped yet (its waiter is
            // still blocked).
            unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
            panic!("{cmd:?} still running after {limit:?}: killed (a hang)");
        }
    }
}

/// Writes `contents` to the executable file `path` (mode 0755) without
/// ever holding a descriptor of it open for writing in this process: a
/// test thread's child forked meanwhile (the tests of a binary run in
/// parallel threads) would inherit that descriptor until its exec, and an
/// exec of `path` then fails with ETXTBSY. The bytes go to a scratch file
/// beside it, which `cp` copies.
#[allow(dead_code)]
pub fn write_executable(path: &std::path::Path, contents: &[u8]) {
    use std::os::unix::fs::PermissionsExt;
    let scratch = path.with_extension("scratch-for-cp");
    std::fs::write(&scratch, contents).unwrap();
    let _ = std::fs::remove_file(path);
    let st = Command::new("cp").arg(&scratch).arg(path).status().unwrap();
    assert!(st.success(), "cp {} {}", scratch.display(), path.display());
    std::fs::remove_file(&scratch).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
