//! The benchmark guest: C source embedded in `picos`, compiled on first use
//! with the system C compiler (`$CC`, else `cc`) into a cache directory,
//! and rebuilt when the source, the compiler or the flags change.
//!
//! Cache: `$XDG_CACHE_HOME/picos`, else `$HOME/.cache/picos`, else
//! `<tmp>/picos-cache-<uid>`. The binary is named after a hash of what
//! built it (`bench-guest-<hash>`), so builds of picos with different
//! guests never overwrite each other's binary.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The guest's source (crates/picos/bench-guest/guest.c).
pub const SOURCE: &str = include_str!("../../bench-guest/guest.c");

/// Compiler flags (the guest is a dynamic glibc program, as most are).
/// Functions and loops are aligned so that an edit elsewhere in the source
/// does not move the timed loops: the fastest rows (getppid, ~6 ns under
/// picos) moved by ~1.5 ns, beyond their intervals, when only `make_dirs`
/// changed (docs/BENCHMARKS.md, "The directory cache").
const FLAGS: &[&str] = &[
    "-O2",
    "-pthread",
    "-falign-functions=64",
    "-falign-loops=64",
];

/// 64-bit FNV-1a: stable across Rust versions (std's hasher is not).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(&[0u8]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn cache_dir() -> PathBuf {
    let nonempty = |v: Option<OsString>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
    if let Some(d) = nonempty(std::env::var_os("XDG_CACHE_HOME")) {
        return d.join("picos");
    }
    if let Some(h) = nonempty(std::env::var_os("HOME")) {
        return h.join(".cache").join("picos");
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("picos-cache-{uid}"))
}

/// Returns the path of the compiled guest, compiling it if needed.
pub fn ensure() -> Result<PathBuf, String> {
    let cc = std::env::var_os("CC")
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "cc".into());
    let mut parts: Vec<&[u8]> = vec![SOURCE.as_bytes(), cc.as_bytes()];
    parts.extend(FLAGS.iter().map(|f| f.as_bytes()));
    let hash = fnv1a(&parts);
    let dir = cache_dir();
    let exe = dir.join(format!("bench-guest-{hash:016x}"));
    if exe.is_file() {
        return Ok(exe);
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create the cache directory {}: {e}", dir.display()))?;
    let pid = std::process::id();
    let src = dir.join(format!("bench-guest-{hash:016x}.{pid}.c"));
    let tmp = dir.join(format!("bench-guest-{hash:016x}.{pid}.tmp"));
    std::fs::write(&src, SOURCE).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let out = Command::new(&cc)
        .args(FLAGS)
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .stdin(Stdio::null())
        .output();
    let _ = std::fs::remove_file(&src);
    let shown = Path::new(&cc).display();
    match out {
        Err(e) if e.kind() == ErrorKind::NotFound => Err(format!(
            "the benchmark guest is compiled on first use with a C compiler, and `{shown}` was \
             not found: install one (e.g. `apt-get install gcc`) or set CC"
        )),
        Err(e) => Err(format!("cannot run the C compiler `{shown}`: {e}")),
        Ok(o) if !o.status.success() => {
            let _ = std::fs::remove_file(&tmp);
            Err(format!(
                "the C compiler `{shown}` failed to build the benchmark guest ({}):\n{}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim_end()
            ))
        }
        Ok(_) => {
            std::fs::rename(&tmp, &exe)
                .map_err(|e| format!("cannot install {}: {e}", exe.display()))?;
            Ok(exe)
        }
    }
}

/// The guest's own list of rows: (name, unit) pairs from `guest --list`.
pub fn list(exe: &Path) -> Result<Vec<(String, String)>, String> {
    let out = Command::new(exe)
        .arg("--list")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!("{} --list failed: {}", exe.display(), out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, unit) = l.split_once(' ')?;
            Some((name.to_string(), unit.to_string()))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn hash_is_stable() {
        // No input: the FNV offset basis. Parts are separated, not just concatenated.
        assert_eq!(super::fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(super::fnv1a(&[b"ab", b"c"]), super::fnv1a(&[b"a", b"bc"]));
    }
}
