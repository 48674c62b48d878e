//! A short, fixed-seed run of the system-call fuzzer (`tests/fuzz/sysfuzz.c`,
//! `docs/FUZZING.md`): the same 20 children x 1000 random calls natively and
//! under `picos run`. Fails if picos reports an internal error, or if a child
//! crashes (is killed by a signal, or panics) under picos where it did not
//! natively. Results that differ call by call are `tools/fuzz.py`'s business
//! (it knows which differences are expected); this test only prints how many
//! children ended differently.
//!
//! Nothing here depends on timing: a child that the fuzzer's watchdog stops
//! (no call finished for 10 s) is reported, not failed.
//!
//! Knobs: `PICOS_FUZZ_SEED` (default 1), `PICOS_FUZZ_CALLS` (default 20000),
//! `PICOS_FUZZ_AVOID` (sysfuzz -A: known picos bug classes to steer clear of;
//! default none: every class in docs/FUZZING.md that this test once had to
//! avoid, m, q, r and v, is fixed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fuzz/sysfuzz.c");
const BUILD_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/fuzz/ci");
const PICOS: &str = env!("CARGO_BIN_EXE_picos");
const PER_CHILD: u64 = 1000;

fn find_in_path(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Compiles the fuzzer (glibc, dynamic PIE) if it is out of date.
fn build() -> Result<PathBuf, String> {
    std::fs::create_dir_all(BUILD_DIR).map_err(|e| format!("creating {BUILD_DIR}: {e}"))?;
    let dir = std::fs::canonicalize(BUILD_DIR).map_err(|e| format!("{BUILD_DIR}: {e}"))?;
    let out = dir.join("sysfuzz");
    let src = Path::new(SRC);
    if let (Some(b), Some(s)) = (mtime(&out), mtime(src)) {
        if b >= s {
            return Ok(out);
        }
    }
    // Build to a unique name and rename: concurrent test processes never run
    // a half-written binary.
    let tmp = dir.join(format!(".sysfuzz.{}.tmp", std::process::id()));
    let output = Command::new("gcc")
        .args(["-O2", "-Wall", "-fPIE", "-pie", "-o"])
        .arg(&tmp)
        .arg(src)
        .current_dir(ROOT)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running gcc: {e}"))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "compiling {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    std::fs::rename(&tmp, &out).map_err(|e| format!("renaming to {}: {e}", out.display()))?;
    Ok(out)
}

struct Run {
    /// child -> (status, calls made, the call that was running when it ended)
    children: BTreeMap<u64, (String, u64, Option<String>)>,
    /// The fuzzer's last line ("E children=... calls=...") was written.
    complete: bool,
    /// "internal error" / "a bug in picos" lines, with the child they came from.
    internal: Vec<(Option<u64>, String)>,
    exit: Option<i32>,
    timed_out: bool,
}

fn run(cmd: &mut Command, log: &Path, timeout: Duration) -> Run {
    let err_path = log.with_extension("err");
    let err_file = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = cmd
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut children = BTreeMap::new();
    let mut complete = false;
    let mut last_line: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("S ") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() >= 3 {
                let k: u64 = f[0].parse().unwrap_or(u64::MAX);
                let calls = f[2].trim_start_matches("calls=").parse().unwrap_or(0);
                let pending = last_line.take().filter(|l| l.ends_with("=?"));
                children.insert(k, (f[1].to_string(), calls, pending));
            }
        } else if line.starts_with("E ") {
            complete = true;
        } else if !line.starts_with("C ") {
            last_line = Some(line.to_string());
        }
    }
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let mut internal = Vec::new();
    let mut current = None;
    for line in err.lines() {
        if let Some(rest) = line.strip_prefix("sysfuzz: child ") {
            let mut it = rest.split_whitespace();
            let k = it.next().and_then(|k| k.parse().ok());
            current = if it.next() == Some("begin") { k } else { None };
        } else if line.contains("internal error") || line.contains("a bug in picos") {
            internal.push((current, line.to_string()));
        }
    }
    Run {
        children,
        complete,
        internal,
        exit: status.code(),
        timed_out,
    }
}

fn is_crash(status: &str) -> bool {
    status.starts_with("signal:") || status == "exit:70"
}

#[test]
fn fuzz_short_fixed_seed() {
    if find_in_path("gcc").is_none() {
        println!("SKIP fuzz_short_fixed_seed: gcc not found in PATH (apt-get install gcc)");
        return;
    }
    let bin = match build() {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    };
    let seed: u64 = std::env::var("PICOS_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let calls: u64 = std::env::var("PICOS_FUZZ_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let avoid = match std::env::var("PICOS_FUZZ_AVOID") {
        Ok(v) if v == "none" => String::new(),
        Ok(v) => v,
        Err(_) => String::new(),
    };
    if !avoid.is_empty() {
        eprintln!("fuzz: avoiding known open bug classes {avoid:?} (docs/FUZZING.md)");
    }
    let nchildren = calls.div_ceil(PER_CHILD).max(1);
    let dir = tempfile::Builder::new()
        .prefix("picos-fuzz-test.")
        .tempdir()
        .expect("tempdir");
    let mut args: Vec<String> = vec![
        "-s".into(),
        seed.to_string(),
        "-c".into(),
        nchildren.to_string(),
        "-n".into(),
        PER_CHILD.to_string(),
    ];
    if !avoid.is_empty() {
        args.push("-A".into());
        args.push(avoid.clone());
    }
    // The fuzzer gives each child at most 30 s; this is only a backstop.
    let timeout = Duration::from_secs(120 + 35 * nchildren);

    let native_log = dir.path().join("native.log");
    let native = run(
        Command::new(&bin).args(&args).arg("-o").arg(&native_log),
        &native_log,
        timeout,
    );
    let picos_log = dir.path().join("picos.log");
    let picos = run(
        Command::new(PICOS)
            .arg("run")
            .arg("--")
            .arg(&bin)
            .args(&args)
            .arg("-o")
            .arg(&picos_log),
        &picos_log,
        timeout,
    );
    assert!(
        native.complete && !native.timed_out,
        "the native run did not finish (exit {:?}, timed out: {}): the fuzzer itself is broken",
        native.exit,
        native.timed_out
    );

    let repro = |k: u64| {
        let a = if avoid.is_empty() {
            String::new()
        } else {
            format!(" -A {avoid}")
        };
        format!(
            "picos run -- {} -s {seed} -f {k} -c 1 -n {PER_CHILD}{a}",
            bin.display()
        )
    };
    let mut problems = Vec::new();
    for (k, line) in &picos.internal {
        match k {
            Some(k) => {
                let pending = picos
                    .children
                    .get(k)
                    .and_then(|c| c.2.clone())
                    .unwrap_or_default();
                problems.push(format!(
                    "child {k}: {line}\n    call running: {pending}\n    reproduce: {}",
                    repro(*k)
                ));
            }
            None => problems.push(format!("(fuzzer parent): {line}")),
        }
    }
    let mut differ = 0;
    let mut hangs = Vec::new();
    for (k, (nstatus, ncalls, _)) in &native.children {
        let Some((pstatus, pcalls, pending)) = picos.children.get(k) else {
            problems.push(format!("child {k}: missing from the picos run"));
            continue;
        };
        if pstatus != nstatus || pcalls != ncalls {
            differ += 1;
        }
        if is_crash(pstatus) && pstatus != nstatus {
            problems.push(format!(
                "child {k}: {pstatus} under picos after {pcalls} calls, natively {nstatus} after {ncalls}\n    \
                 call running: {}\n    reproduce: {}",
                pending.clone().unwrap_or_default(),
                repro(*k)
            ));
        } else if pstatus.contains("timeout") && !nstatus.contains("timeout") {
            hangs.push(format!(
                "child {k}: {pstatus} under picos (natively {nstatus}); call running: {}",
                pending.clone().unwrap_or_default()
            ));
        }
    }
    if !picos.complete {
        problems.push(format!(
            "the picos run did not finish (exit {:?}, timed out: {}): the fuzzer's parent died under picos",
            picos.exit, picos.timed_out
        ));
    }
    let total: u64 = picos.children.values().map(|c| c.1).sum();
    println!(
        "fuzz: seed {seed}, {nchildren} children, {total} calls under picos; {differ} children ended \
         differently from native; {} hang(s), {} problem(s)",
        hangs.len(),
        problems.len()
    );
    for h in &hangs {
        println!("  not failed (timing): {h}");
    }
    assert!(
        problems.is_empty(),
        "picos failed the fuzz run (seed {seed}; tools/fuzz.py --seed {seed} --calls {calls} compares \
         call by call):\n  {}",
        problems.join("\n  ")
    );
}
