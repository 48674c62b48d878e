//! The committed syscall table (`src/sys/table.rs`) and syscall numbers
//! (`src/host/nr.rs`) are exactly what `tools/gen_table.py` writes: a change
//! made by hand to either, or to the script without re-running it, fails
//! here.

use std::path::Path;
use std::process::Command;

#[test]
fn generated_files_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("tools/gen_table.py");
    let python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
        .expect("python3 is needed to check the generated syscall table (apt-get install python3)");
    let out = Command::new(python)
        .arg(&script)
        .arg("--check")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
