//! Helpers shared by the integration tests (`mod common;` in each).

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Runs `cmd` to its end in a process group of its own and returns its
/// output; if it is still running after `limit`, kills the whole group
/// (the program and anything it started) and fails the test.
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
