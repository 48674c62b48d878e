//! Real programs from Debian packages, run natively and under `picos run`:
//! stdout, stderr and the exit status must be the same.
//!
//! A test whose program is missing prints `SKIP <name>: <why>` and passes
//! (`.ci/run` installs the packages, so in CI they all run). Every run has a
//! timeout, stdin from /dev/null, and a cleared environment with a fixed,
//! small set of variables.
//!
//! Scripts and data live in `tests/programs/` at the top of the workspace.

mod common;

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest any one program may run (natively or under picos).
const TIMEOUT: Duration = Duration::from_secs(120);
/// How much of each output `assert_same` shows on a mismatch.
const SHOW_BYTES: usize = 4096;

const PICOS: &str = env!("CARGO_BIN_EXE_picos");

/// Tests hold this for reading while they run programs; `dynamic_ls` holds it
/// for writing, so that it runs while no other test here starts processes.
static QUIET: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    QUIET.read().unwrap_or_else(|e| e.into_inner())
}

/// The workspace root (for `tests/programs/...`).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// A script or data file in `tests/programs/`.
fn program_file(name: &str) -> PathBuf {
    let p = workspace().join("tests/programs").join(name);
    assert!(p.is_file(), "missing test file {}", p.display());
    p
}

/// A fresh temporary directory. It is made under cargo's per-target temporary
/// directory rather than /tmp, so that creating and removing it does not
/// change what `ls -la /` shows for /tmp.
fn tempdir() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).expect("create CARGO_TARGET_TMPDIR");
    tempfile::Builder::new()
        .prefix("picos-programs-")
        .tempdir_in(base)
        .expect("create temp dir")
}

/// Prints the skip line and returns true if `path` is not an executable file.
fn skip_unless_installed(test: &str, path: &str, package: &str) -> bool {
    let ok = std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false);
    if !ok {
        println!("SKIP {test}: {path} not installed: apt-get install {package}");
    }
    !ok
}

/// How one program is started: the same for the native and the picos run.
struct Spec {
    program: OsString,
    args: Vec<OsString>,
    cwd: PathBuf,
    /// `HOME` for the program.
    home: PathBuf,
    /// A file for standard input; /dev/null when `None`.
    stdin: Option<PathBuf>,
}

impl Spec {
    fn new(program: impl AsRef<OsStr>, args: &[&dyn AsRef<OsStr>], cwd: &Path) -> Spec {
        Spec {
            program: program.as_ref().to_owned(),
            args: args.iter().map(|a| a.as_ref().to_owned()).collect(),
            cwd: cwd.to_owned(),
            home: cwd.to_owned(),
            stdin: None,
        }
    }

    fn stdin(mut self, file: impl Into<PathBuf>) -> Spec {
        self.stdin = Some(file.into());
        self
    }

    fn describe(&self) -> String {
        let mut s = self.program.to_string_lossy().into_owned();
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        if let Some(f) = &self.stdin {
            s.push_str(&format!(" < {}", f.display()));
        }
        s
    }
}

/// A `Command` with the fixed environment, the working directory and stdin.
fn command(exe: impl AsRef<OsStr>, spec: &Spec) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .env("HOME", &spec.home)
        .env("TZ", "UTC")
        .current_dir(&spec.cwd);
    match &spec.stdin {
        Some(f) => cmd
            .stdin(std::fs::File::open(f).unwrap_or_else(|e| panic!("open {}: {e}", f.display()))),
        None => cmd.stdin(Stdio::null()),
    };
    cmd
}

/// Runs `cmd` to completion with the timeout, capturing stdout and stderr.
/// The child gets its own process group so that on a timeout everything it
/// started (the picoprocess and its children too) can be killed.
fn run_with_timeout(cmd: Command, what: &str) -> Output {
    run_with_timeout_of(cmd, what, TIMEOUT)
}

/// [`run_with_timeout`] with a timeout of `timeout` instead of `TIMEOUT`.
fn run_with_timeout_of(mut cmd: Command, what: &str, timeout: Duration) -> Output {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let reader = |mut r: Box<dyn Read + Send>| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            let _ = tx.send(buf);
        });
        rx
    };
    let out_rx = reader(Box::new(child.stdout.take().unwrap()));
    let err_rx = reader(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > timeout {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let out = out_rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_default();
            let err = err_rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_default();
            panic!(
                "TIMEOUT after {:?}: {what}\n--- stdout (partial) ---\n{}\n--- stderr (partial) ---\n{}",
                timeout,
                shown(&out),
                shown(&err)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The program has exited; something it left behind may still hold the
    // pipes open, so do not wait for them forever.
    let left = timeout
        .saturating_sub(start.elapsed())
        .max(Duration::from_secs(5));
    let stdout = out_rx.recv_timeout(left).unwrap_or_else(|_| {
        kill_group(child.id());
        panic!("{what}: exited ({status}) but its stdout stayed open (a leftover process?)")
    });
    let stderr = err_rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| {
            kill_group(child.id());
            panic!("{what}: exited ({status}) but its stderr stayed open (a leftover process?)")
        });
    Output {
        status,
        stdout,
        stderr,
    }
}

/// SIGKILLs process group `pgid` (std has no killpg; /bin/kill does it).
fn kill_group(pgid: u32) {
    let _ = Command::new("/bin/kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Runs the program natively.
fn run_native(spec: &Spec) -> Output {
    run_native_within(spec, TIMEOUT)
}

/// [`run_native`] with a timeout of `timeout` instead of `TIMEOUT`.
fn run_native_within(spec: &Spec, timeout: Duration) -> Output {
    let mut cmd = command(&spec.program, spec);
    cmd.args(&spec.args);
    run_with_timeout_of(cmd, &format!("native: {}", spec.describe()), timeout)
}

/// Runs the program under `picos run -- PROGRAM ARGS...`.
fn run_picos(spec: &Spec) -> Output {
    run_picos_within(spec, TIMEOUT)
}

/// [`run_picos`] with a timeout of `timeout` instead of `TIMEOUT`.
fn run_picos_within(spec: &Spec, timeout: Duration) -> Output {
    let mut cmd = command(PICOS, spec);
    cmd.arg("run").arg("--").arg(&spec.program).args(&spec.args);
    run_with_timeout_of(cmd, &format!("picos run -- {}", spec.describe()), timeout)
}

/// Runs `picos ARGS...` exactly as given (for the error-handling tests).
fn run_picos_raw(args: &[&dyn AsRef<OsStr>], cwd: &Path) -> Output {
    let spec = Spec::new(PICOS, args, cwd);
    let mut cmd = command(PICOS, &spec);
    cmd.args(&spec.args);
    run_with_timeout(cmd, &format!("picos {}", spec.describe()))
}

/// The exit status as a shell reports it: the code, or 128+N for signal N.
fn shell_status(st: &ExitStatus) -> i32 {
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => -1,
    }
}

/// Up to `SHOW_BYTES` of `b`, lossily, marked if truncated.
fn shown(b: &[u8]) -> String {
    let mut s = String::from_utf8_lossy(&b[..b.len().min(SHOW_BYTES)]).into_owned();
    if b.len() > SHOW_BYTES {
        s.push_str(&format!("\n[... {} more bytes]", b.len() - SHOW_BYTES));
    }
    s
}

/// The first line where `a` and `b` differ, for the mismatch report.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (al, bl): (Vec<&[u8]>, Vec<&[u8]>) = (
        a.split(|&c| c == b'\n').collect(),
        b.split(|&c| c == b'\n').collect(),
    );
    for i in 0..al.len().max(bl.len()) {
        let (x, y) = (al.get(i), bl.get(i));
        if x != y {
            let show = |l: Option<&&[u8]>| {
                l.map(|l| format!("{:?}", String::from_utf8_lossy(l)))
                    .unwrap_or_else(|| "(none)".into())
            };
            return format!("line {}: native {} / picos {}", i + 1, show(x), show(y));
        }
    }
    "(no difference)".into()
}

/// picos's stderr without its own diagnostic lines (`picos: warning: ...`),
/// which the native run cannot have. They are printed, not compared.
fn program_stderr(picos_stderr: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in picos_stderr.split_inclusive(|&c| c == b'\n') {
        if line.starts_with(b"picos: warning: ") {
            eprintln!(
                "NOTE picos diagnostic: {}",
                String::from_utf8_lossy(line).trim_end()
            );
        } else {
            out.extend_from_slice(line);
        }
    }
    out
}

/// Fails (showing both runs) unless stdout, stderr and the exit status match.
fn assert_same(what: &str, native: &Output, picos: &Output) {
    let (ns, ps) = (shell_status(&native.status), shell_status(&picos.status));
    let picos_err = program_stderr(&picos.stderr);
    let same_out = native.stdout == picos.stdout;
    let same_err = native.stderr == picos_err;
    if same_out && same_err && ns == ps {
        println!(
            "{what}: same ({} bytes of stdout, {} of stderr, status {ns})",
            native.stdout.len(),
            native.stderr.len()
        );
        return;
    }
    let mut report = format!("{what}: native and picos runs differ\n");
    report += &format!(
        "exit status: native {ns} ({}), picos {ps} ({})\n",
        native.status, picos.status
    );
    if !same_out {
        report += &format!(
            "stdout differs at {}\n",
            first_difference(&native.stdout, &picos.stdout)
        );
    }
    if !same_err {
        report += &format!(
            "stderr differs at {}\n",
            first_difference(&native.stderr, &picos_err)
        );
    }
    report += &format!(
        "--- native stdout ({} bytes) ---\n{}\n",
        native.stdout.len(),
        shown(&native.stdout)
    );
    report += &format!(
        "--- picos stdout ({} bytes) ---\n{}\n",
        picos.stdout.len(),
        shown(&picos.stdout)
    );
    report += &format!(
        "--- native stderr ({} bytes) ---\n{}\n",
        native.stderr.len(),
        shown(&native.stderr)
    );
    report += &format!(
        "--- picos stderr ({} bytes) ---\n{}\n",
        picos.stderr.len(),
        shown(&picos.stderr)
    );
    panic!("{report}");
}

// ---------------------------------------------------------------------------

#[test]
fn busybox_shell_script() {
    const T: &str = "busybox_shell_script";
    let _shared = shared();
    if skip_unless_installed(T, "/bin/busybox", "busybox-static") {
        return;
    }
    let script = program_file("busybox_script.sh");
    // The script builds its tree in its directory, and prints only relative
    // paths, so the outputs compare directly.
    compare_in_fresh_dirs(|dir| Spec::new("/bin/busybox", &[&"sh", &script, &dir], dir));
}

/// Runs the program `spec_in` describes natively, then under picos, each in
/// a fresh directory; it must succeed natively, and the outputs must agree.
fn compare_in_fresh_dirs(spec_in: impl Fn(&Path) -> Spec) {
    let run = |picos: bool| {
        let dir = tempdir();
        let spec = spec_in(dir.path());
        let out = if picos {
            run_picos(&spec)
        } else {
            run_native(&spec)
        };
        (spec.describe(), out)
    };
    let (what, native) = run(false);
    assert!(
        native.status.success(),
        "the script fails natively: {}\n{}",
        native.status,
        shown(&native.stderr)
    );
    let (_, picos) = run(true);
    assert_same(&what, &native, &picos);
}

#[test]
fn dynamic_ls() {
    const T: &str = "dynamic_ls";
    if skip_unless_installed(T, "/bin/ls", "coreutils") {
        return;
    }
    // Run alone: the other tests start processes, which changes the link
    // count `ls -la /` shows for /proc (and can widen that column).
    let _alone = QUIET.write().unwrap_or_else(|e| e.into_inner());
    let dir = tempdir();
    let spec = Spec::new("/bin/ls", &[&"-la", &"/"], dir.path());
    // Other processes on the machine can still change a few entries between
    // the two runs: the link count of /proc (one per process), /tmp's and
    // /run's links and times, and the column widths with them. If only those
    // differ, run both again (up to 3 retries).
    const ATTEMPTS: usize = 4;
    for attempt in 1..=ATTEMPTS {
        // /proc's link count is 2 + the number of processes. Under picos
        // there is one more: the `picos` CLI, parent of the picoprocess. An
        // idle stand-in for it during the native run evens that out.
        let mut stand_in = Command::new("/bin/sleep")
            .arg("60")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start /bin/sleep");
        let native = run_native(&spec);
        let _ = stand_in.kill();
        let _ = stand_in.wait();
        let picos = run_picos(&spec);
        assert!(
            native.status.success(),
            "ls fails natively: {}",
            shown(&native.stderr)
        );
        if native.stdout == picos.stdout
            || !only_volatile_ls_differences(&native.stdout, &picos.stdout)
        {
            assert_same(&spec.describe(), &native, &picos);
            return;
        }
        let diff = first_difference(&native.stdout, &picos.stdout);
        if attempt < ATTEMPTS {
            println!("attempt {attempt}: only volatile entries differ ({diff}); retrying");
        } else {
            // Still only the entries that other processes keep changing:
            // everything else is the same, so this is not picos's doing.
            assert_eq!(
                shell_status(&native.status),
                shell_status(&picos.status),
                "exit status"
            );
            assert_eq!(native.stderr, program_stderr(&picos.stderr), "stderr");
            println!("NOTE {T}: after {ATTEMPTS} attempts /proc, /tmp, /run or /dev still changed between the runs ({diff}); all other entries are identical");
        }
    }
}

/// True if two `ls -la /` listings differ only where other processes on the
/// machine can change them between two runs: the "total" line, the link
/// count and time of /proc, /tmp, /run, /dev, / itself, and the column
/// alignment (a link count gaining a digit widens the column).
fn only_volatile_ls_differences(a: &[u8], b: &[u8]) -> bool {
    let lines = |x: &[u8]| -> Vec<Vec<String>> {
        String::from_utf8_lossy(x)
            .lines()
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    let (la, lb) = (lines(a), lines(b));
    if la.len() != lb.len() {
        return false;
    }
    la.iter().zip(&lb).all(|(x, y)| {
        if x == y {
            return true;
        }
        if x.len() != y.len() || x.is_empty() {
            return false;
        }
        if x[0] == "total" && y[0] == "total" {
            return x.len() == 2;
        }
        // mode links owner group size month day time-or-year name
        let name = x.last().unwrap();
        let volatile = ["proc", "tmp", "run", "dev", ".", ".."].contains(&name.as_str());
        volatile && x.len() == 9 && x[0] == y[0] && x[2..5] == y[2..5] && x[8] == y[8]
    })
}

#[test]
fn python_script() {
    const T: &str = "python_script";
    let _shared = shared();
    // Debian's python, not a pyenv build that may come first in PATH.
    if skip_unless_installed(T, "/usr/bin/python3", "python3") {
        return;
    }
    let script = program_file("py_workload.py");
    let dir = tempdir();
    let spec = Spec::new("/usr/bin/python3", &[&script], dir.path());
    let native = run_native(&spec);
    // The script ends with sys.exit(3), so the exit status is checked too.
    assert_eq!(
        shell_status(&native.status),
        3,
        "the script fails natively:\n{}",
        shown(&native.stderr)
    );
    let picos = run_picos(&spec);
    assert_same(&spec.describe(), &native, &picos);
}

#[test]
fn sqlite_script() {
    const T: &str = "sqlite_script";
    let _shared = shared();
    if skip_unless_installed(T, "/usr/bin/sqlite3", "sqlite3") {
        return;
    }
    let script = program_file("sqlite_script.sql");
    // A fresh database for each run.
    compare_in_fresh_dirs(|dir| {
        Spec::new("/usr/bin/sqlite3", &[&dir.join("test.db")], dir).stdin(&script)
    });
}

#[test]
fn exit_status_and_errors() {
    let _shared = shared();
    let dir = tempdir();
    let cwd = dir.path();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut failures = Vec::new();
    let mut check = |what: &str, out: &Output, code: i32, stderr_has: &[&str]| {
        let got = shell_status(&out.status);
        let err = text(&out.stderr);
        let missing: Vec<_> = stderr_has.iter().filter(|s| !err.contains(*s)).collect();
        if got != code || !missing.is_empty() {
            failures.push(format!(
                "{what}: expected status {code} and stderr containing {stderr_has:?}; got status {got} ({}), stderr:\n{}\n",
                out.status,
                shown(&out.stderr)
            ));
        } else {
            println!("{what}: status {got}, stderr {:?}", err.trim_end());
        }
    };

    // A program that does not exist: 127, naming it.
    let out = run_picos_raw(&[&"run", &"/nonexistent/prog"], cwd);
    check(
        "picos run /nonexistent/prog",
        &out,
        127,
        &["/nonexistent/prog"],
    );

    // A file that is not a program: 126, naming it. (Whether or not
    // /etc/hostname has x bits, execve refuses it: EACCES or ENOEXEC.)
    if Path::new("/etc/hostname").is_file() {
        let out = run_picos_raw(&[&"run", &"/etc/hostname"], cwd);
        check("picos run /etc/hostname", &out, 126, &["/etc/hostname"]);
    }
    // A text file without x bits: 126.
    let plain = cwd.join("plain.txt");
    std::fs::write(&plain, "just text\n").unwrap();
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run_picos_raw(&[&"run", &plain], cwd);
    check("picos run <non-executable file>", &out, 126, &["plain.txt"]);

    // Random bytes marked executable: 126, saying it is not an ELF file.
    let junk = cwd.join("junk.bin");
    let mut bytes = Vec::with_capacity(4096);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.push((x >> 24) as u8);
    }
    bytes[0] = 0x01; // never "\x7fELF" nor "#!"
    common::write_executable(&junk, &bytes);
    let out = run_picos_raw(&[&"run", &junk], cwd);
    check(
        "picos run <random bytes, executable>",
        &out,
        126,
        &["junk.bin", "not an ELF"],
    );

    // The program's own exit status.
    let out = run_picos_raw(&[&"run", &"/bin/sh", &"-c", &"exit 42"], cwd);
    check("picos run /bin/sh -c 'exit 42'", &out, 42, &[]);
    let out = run_picos_raw(&[&"run", &"--", &"/bin/sh", &"-c", &"exit 0"], cwd);
    check("picos run -- /bin/sh -c 'exit 0'", &out, 0, &[]);

    // Killed by a signal: 128+N.
    let out = run_picos_raw(&[&"run", &"/bin/sh", &"-c", &"kill -TERM $$"], cwd);
    check("picos run /bin/sh -c 'kill -TERM $$'", &out, 143, &[]);
    let out = run_picos_raw(&[&"run", &"/bin/sh", &"-c", &"kill -KILL $$"], cwd);
    check("picos run /bin/sh -c 'kill -KILL $$'", &out, 137, &[]);

    // No program at all: fails, saying what is missing.
    let out = run_picos_raw(&[&"run"], cwd);
    let got = shell_status(&out.status);
    let err = text(&out.stderr).to_lowercase();
    if got == 0 || !(err.contains("program") || err.contains("usage")) {
        failures.push(format!("picos run (no program): expected a non-zero status and a message about the missing program; got status {got}, stderr:\n{}\n", shown(&out.stderr)));
    } else {
        println!(
            "picos run (no program): status {got}, stderr {:?}",
            text(&out.stderr).trim_end()
        );
    }

    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A signal sent to `picos` itself (as a service manager or `kill` would)
/// reaches the program, whose handler runs; picos then exits with the
/// program's status.
#[test]
fn signals_sent_to_picos_reach_the_program() {
    use std::io::{BufRead, BufReader};
    let _g = shared();
    let script = "trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done";
    let mut child = Command::new(PICOS)
        .args(["run", "/bin/sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn picos");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let st = Command::new("/bin/kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("picos did not exit after SIGTERM was forwarded");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "got TERM\n");
    assert_eq!(status.code(), Some(7), "status {status:?}");
}

/// Runs `program args` natively and under picos and compares everything.
fn compare_program(test: &str, program: &str, package: &str, args: &[&dyn AsRef<OsStr>]) {
    let _shared = shared();
    if skip_unless_installed(test, program, package) {
        return;
    }
    let dir = tempdir();
    let spec = Spec::new(program, args, dir.path());
    let native = run_native(&spec);
    let picos = run_picos(&spec);
    assert_same(&spec.describe(), &native, &picos);
}

/// Java: a JIT, many threads, SIGSEGV-based null checks, a child process.
#[test]
fn java_workload() {
    let src = program_file("Workload.java");
    compare_program(
        "java_workload",
        "/usr/bin/java",
        "default-jre-headless",
        &[&"-Xshare:auto", &src],
    );
}

/// Node.js: worker threads, libuv's thread pool, timers, a child process.
#[test]
fn node_workload() {
    let src = program_file("node_workload.js");
    compare_program("node_workload", "/usr/bin/node", "nodejs", &[&src]);
}

/// A program's own seccomp filter built by libseccomp (Debian's
/// python3-seccomp): its BPF (architecture checks, argument comparisons,
/// ERRNO and KILL_PROCESS actions, inherited by a fork) run natively by the
/// kernel and under picos by the library OS (`kernel::seccomp`).
#[test]
fn python_libseccomp_filter() {
    const T: &str = "python_libseccomp_filter";
    let _shared = shared();
    if skip_unless_installed(T, "/usr/bin/python3", "python3") {
        return;
    }
    let have = Command::new("/usr/bin/python3")
        .args(["-c", "import seccomp"])
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !have {
        println!(
            "SKIP {T}: Python's seccomp module not installed: apt-get install python3-seccomp"
        );
        return;
    }
    let script = program_file("py_seccomp.py");
    let dir = tempdir();
    let spec = Spec::new("/usr/bin/python3", &[&script], dir.path());
    let native = run_native(&spec);
    assert!(
        native.status.success(),
        "natively:\n{}",
        shown(&native.stderr)
    );
    let picos = run_picos(&spec);
    assert_same(&spec.describe(), &native, &picos);
}

/// Perl: fork, pipes, signals, backticks.
#[test]
fn perl_workload() {
    let src = program_file("perl_workload.pl");
    compare_program("perl_workload", "/usr/bin/perl", "perl-base", &[&src]);
}

/// bash: job control off, pipelines, traps, subshells, process substitution.
#[test]
fn bash_workload() {
    let script = "set -e; f() { echo \"f:$1\"; }; f one; for i in 3 1 2; do echo $i; done | sort; \
                  trap 'echo trapped' USR1; kill -USR1 $$; x=$( (echo sub; exit 0) ); echo $x; \
                  cat <(echo procsub); (sleep 0.05; echo bg) & wait; echo ${#BASH_VERSION} >/dev/null; exit 5";
    compare_program("bash_workload", "/bin/bash", "bash", &[&"-c", &script]);
}

/// Go: a static binary with its own system call wrappers (no libc),
/// goroutines on several threads, asynchronous preemption by SIGURG, timers.
/// Built from tests/programs/go_workload.go with the machine's Go toolchain.
#[test]
fn go_workload() {
    let _shared = shared();
    let go = ["/usr/local/go/bin/go", "/usr/lib/go/bin/go", "/usr/bin/go"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    let Some(go) = go else {
        println!("SKIP go_workload: no Go toolchain (apt-get install golang-go)");
        return;
    };
    let dir = tempdir();
    std::fs::copy(program_file("go_workload.go"), dir.path().join("main.go")).unwrap();
    std::fs::write(dir.path().join("go.mod"), "module goworkload\n\ngo 1.21\n").unwrap();
    let exe = dir.path().join("go_workload");
    let mut build = Command::new(go);
    if std::env::var_os("HOME").is_none() && std::env::var_os("XDG_CACHE_HOME").is_none() {
        // Go needs a build cache directory.
        build.env("GOCACHE", workspace().join("target/go-cache"));
    }
    let out = build
        .args(["build", "-o"])
        .arg(&exe)
        .arg(".")
        .current_dir(dir.path())
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "go build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spec = Spec::new(&exe, &[], dir.path());
    let native = run_native(&spec);
    let picos = run_picos(&spec);
    assert_same(&spec.describe(), &native, &picos);
    assert!(String::from_utf8_lossy(&picos.stdout).ends_with("preempted ok\n"));
}

/// A free TCP port on loopback (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// redis-server on loopback port `port` (natively or under picos), in its
/// own process group, logging to `redis.log` in `dir`, with its standard
/// error piped.
fn start_redis(picos: bool, port: &str, dir: &std::path::Path) -> std::process::Child {
    let server_args = [
        "--port",
        port,
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--logfile",
        "redis.log",
    ];
    let mut server = if picos {
        let mut c = Command::new(PICOS);
        c.args(["run", "--", "/usr/bin/redis-server"]);
        c
    } else {
        Command::new("/usr/bin/redis-server")
    };
    use std::os::unix::process::CommandExt;
    server
        .args(server_args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// redis-cli against the server on `port`: `args`, with `input` on its
/// standard input.
fn redis_cli(port: &str, args: &[&str], input: Option<&str>) -> std::process::Output {
    let mut c = Command::new("/usr/bin/redis-cli");
    c.args(["-p", port]).args(args);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        if let Some(i) = input {
            stdin.write_all(i.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

/// Waits (up to 20 s) until the server answers PING; if it exits first,
/// its log (in `dir`) and standard error.
fn wait_for_redis(
    server: &mut std::process::Child,
    port: &str,
    dir: &std::path::Path,
) -> Result<(), String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while String::from_utf8_lossy(&redis_cli(port, &["ping"], None).stdout).trim() != "PONG" {
        if let Some(status) = server.try_wait().unwrap() {
            // (Its log, where a failed bind is reported, then its errors.)
            let mut err = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
            use std::io::Read;
            let _ = server.stderr.take().unwrap().read_to_string(&mut err);
            return Err(format!("it exited ({status}): {err}"));
        }
        if std::time::Instant::now() >= deadline {
            return Err("no answer in 20 s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

/// redis-server under picos (threads, epoll, glibc's threaded read) serving
/// redis-cli and redis-benchmark on loopback: the same commands against a
/// native server give the same answers.
#[test]
fn redis_server() {
    let _shared = shared();
    if skip_unless_installed("redis_server", "/usr/bin/redis-server", "redis-server")
        || skip_unless_installed("redis_server", "/usr/bin/redis-cli", "redis-tools")
        || skip_unless_installed("redis_server", "/usr/bin/redis-benchmark", "redis-tools")
    {
        return;
    }
    let script = "SET k v\nGET k\nINCR n\nINCR n\nINCR n\nLPUSH l a b c\nLRANGE l 0 -1\n\
                  HSET h f 1 g 2\nHGETALL h\nDEL k\nEXISTS k\nDBSIZE\n";
    let mut answers = Vec::new();
    let mut titles: Vec<String> = Vec::new();
    for picos in [false, true] {
        let dir = tempdir();
        // The port is free when `free_port` closes it, but a parallel
        // test's connection may take it before the server binds it: then
        // the server exits (EADDRINUSE), and the test tries another port.
        let mut attempt = 0;
        let (mut server, port) = loop {
            attempt += 1;
            let port = free_port().to_string();
            let mut server = start_redis(picos, &port, dir.path());
            match wait_for_redis(&mut server, &port, dir.path()) {
                Ok(()) => break (server, port),
                Err(err) if attempt < 3 && err.contains("Address already in use") => continue,
                Err(err) => {
                    let _ = server.kill();
                    panic!("redis-server (picos: {picos}) did not answer: {err}")
                }
            }
        };
        let cli = |args: &[&str], input: Option<&str>| redis_cli(&port, args, input);
        // redis renames itself (setproctitle): `ps` must see the new title.
        let title = std::fs::read(format!("/proc/{}/cmdline", server.id())).unwrap_or_default();
        titles.push(
            String::from_utf8_lossy(&title)
                .replace('\0', " ")
                .trim()
                .replace(&port, "PORT"),
        );
        let out = cli(&[], Some(script));
        answers.push(String::from_utf8_lossy(&out.stdout).into_owned());
        let bench = Command::new("/usr/bin/redis-benchmark")
            .args([
                "-p",
                port.as_str(),
                "-q",
                "-n",
                "20000",
                "-t",
                "set,get,lpush",
                "-P",
                "8",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&bench.stdout);
        assert!(
            bench.status.success() && text.matches("requests per second").count() == 3,
            "redis-benchmark (picos: {picos}): {text}"
        );
        let _ = cli(&["shutdown", "nosave"], None);
        let status = server.wait().unwrap();
        let mut err = String::new();
        use std::io::Read;
        let _ = server.stderr.take().unwrap().read_to_string(&mut err);
        assert!(
            status.success(),
            "redis-server (picos: {picos}) {status:?}: {err}"
        );
    }
    assert!(
        answers[0].contains("\"v\"") || answers[0].contains("v\n"),
        "{}",
        answers[0]
    );
    eprintln!("{}", answers[1]);
    assert_eq!(answers[0], answers[1], "redis-cli answers, native vs picos");
    assert!(titles[0].contains("PORT"), "native title: {}", titles[0]);
    assert_eq!(titles[0], titles[1], "process title, native vs picos");
}

/// strace's output with what differs between any two runs made uniform:
/// addresses, the random bytes getrandom returns, sysinfo's figures, ids.
fn strace_normalised(stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let mut out = Vec::new();
    for line in text.lines() {
        let mut l = String::with_capacity(line.len());
        // Hex numbers (addresses, brk) become one token.
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'0' && b.get(i + 1) == Some(&b'x') {
                let mut j = i + 2;
                while j < b.len() && b[j].is_ascii_hexdigit() {
                    j += 1;
                }
                l.push_str("0xADDR");
                i = j;
            } else {
                l.push(b[i] as char);
                i += 1;
            }
        }
        // (strace pads results to a column: addresses of other lengths
        // move it.)
        let l = l
            .split(' ')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let l = if l.starts_with("getrandom(\"") {
            // The bytes differ every run; their count does not.
            let end = l.rfind("\", ").unwrap_or(l.len());
            format!("getrandom(BYTES{}", &l[end..])
        } else if l.starts_with("sysinfo(") {
            "sysinfo(...) = 0".to_string()
        } else if ["getpid(", "gettid(", "getppid(", "set_tid_address("]
            .iter()
            .any(|p| l.starts_with(p))
        {
            // Process ids.
            l.rsplit_once("= ")
                .map_or(l.clone(), |(a, _)| format!("{a}= ID"))
        } else {
            l
        };
        out.push(l);
    }
    out
}

/// strace run under picos traces a program under picos (the library OS's
/// ptrace: `kernel::ptrace`): `strace -f python3 -c 'print(1)'` prints the
/// calls it prints natively, modulo addresses, random bytes and ids.
#[test]
fn strace_follows_python() {
    const T: &str = "strace_follows_python";
    let _shared = shared();
    if skip_unless_installed(T, "/usr/bin/strace", "strace")
        || skip_unless_installed(T, "/usr/bin/python3", "python3")
    {
        return;
    }
    let dir = tempdir();
    let spec = Spec::new(
        "/usr/bin/strace",
        &[&"-f", &"/usr/bin/python3", &"-c", &"print(1)"],
        dir.path(),
    );
    let native = run_native(&spec);
    let picos = run_picos(&spec);
    assert_eq!(native.stdout, b"1\n", "natively: {}", shown(&native.stderr));
    assert_eq!(picos.stdout, native.stdout, "{}", shown(&picos.stderr));
    assert_eq!(
        shell_status(&picos.status),
        shell_status(&native.status),
        "{}",
        shown(&picos.stderr)
    );
    let (n, p) = (
        strace_normalised(&native.stderr),
        strace_normalised(&program_stderr(&picos.stderr)),
    );
    assert!(
        n.len() > 100 && n[0].starts_with("execve(\"/usr/bin/python3\""),
        "natively, strace printed:\n{}",
        shown(&native.stderr)
    );
    if n != p {
        let at = n
            .iter()
            .zip(&p)
            .position(|(a, b)| a != b)
            .unwrap_or(n.len().min(p.len()));
        panic!(
            "strace's lines differ from line {} (native {} lines, picos {}):\nnative: {:?}\npicos:  {:?}\n--- picos stderr ---\n{}",
            at + 1,
            n.len(),
            p.len(),
            n.get(at),
            p.get(at),
            shown(&picos.stderr)
        );
    }
    println!("{T}: {} lines, the same", n.len());
}

/// gdb run under picos debugs a program under picos: `gdb -batch -ex run
/// -ex bt` of a program that dies of SIGSEGV three calls deep prints the
/// same, the backtrace's addresses included (the program's base follows
/// gdb's ADDR_NO_RANDOMIZE, as natively).
#[test]
fn gdb_backtrace_of_a_crash() {
    const T: &str = "gdb_backtrace_of_a_crash";
    let _shared = shared();
    if skip_unless_installed(T, "/usr/bin/gdb", "gdb")
        || skip_unless_installed(T, "/usr/bin/gcc", "gcc")
    {
        return;
    }
    let dir = tempdir();
    let prog = dir.path().join("crash");
    let st = Command::new("/usr/bin/gcc")
        .args(["-g", "-O0", "-o"])
        .arg(&prog)
        .arg(program_file("crash.c"))
        .status()
        .expect("gcc");
    assert!(st.success(), "compiling crash.c");
    let spec = Spec::new(
        "/usr/bin/gdb",
        &[&"-nx", &"-batch", &"-ex", &"run", &"-ex", &"bt", &"./crash"],
        dir.path(),
    );
    let native = run_native(&spec);
    let out = String::from_utf8_lossy(&native.stdout);
    assert!(
        out.contains("SIGSEGV") && out.contains("in middle") && out.contains("in main"),
        "natively, gdb printed:\n{out}\n{}",
        shown(&native.stderr)
    );
    let picos = run_picos(&spec);
    assert_same(&spec.describe(), &native, &picos);
}

/// `perf record` of `picos run --perf-map`: `perf report` names the
/// runtime's functions (from the perf map each process writes) and the
/// program's own (python3's ELF: its mappings are this process's, where
/// perf sees them). The same run without `--perf-map` shows no runtime
/// function, so the names come from the map. Skips with the reason where
/// perf cannot record here.
#[test]
fn perf_report_names_the_runtime() {
    const T: &str = "perf_report_names_the_runtime";
    let _shared = shared();
    if skip_unless_installed(T, "/usr/bin/perf", "linux-perf")
        || skip_unless_installed(T, "/usr/bin/python3", "python3")
    {
        return;
    }
    let dir = tempdir();
    let started = std::time::SystemTime::now();
    // Many calls the runtime serves itself (the signal mask) in a loop.
    let script = "import signal\ns={signal.SIGUSR1}\nfor i in range(150000):\n    \
                  signal.pthread_sigmask(signal.SIG_BLOCK, s)\n    \
                  signal.pthread_sigmask(signal.SIG_UNBLOCK, s)\nprint('done')\n";
    let report = |perf_map: bool| -> Option<String> {
        let data = dir
            .path()
            .join(if perf_map { "map.data" } else { "plain.data" });
        let mut cmd = Command::new("/usr/bin/perf");
        cmd.args(["record", "-q", "-e", "cpu-clock", "-F", "4000", "-o"])
            .arg(&data)
            .args(["--", PICOS, "run"]);
        if perf_map {
            cmd.arg("--perf-map");
        }
        let out = cmd
            .args(["/usr/bin/python3", "-c", script])
            .output()
            .expect("perf record");
        if !out.status.success() || out.stdout != b"done\n" {
            println!(
                "SKIP {T}: perf record cannot record here ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        let rep = Command::new("/usr/bin/perf")
            .args(["report", "--stdio", "--sort", "dso,sym", "-i"])
            .arg(&data)
            .output()
            .expect("perf report");
        assert!(rep.status.success(), "perf report: {}", shown(&rep.stderr));
        Some(String::from_utf8_lossy(&rep.stdout).into_owned())
    };
    // A perf map left in /tmp by an earlier process that had the pid of
    // this run's (perf reads /tmp/perf-PID.map for any pid) would name
    // runtime functions without --perf-map: such a run is made again, with
    // another pid.
    // The run's pid is in the runtime's file name: `memfd:picos-rt-PID-TIME`
    // from a memfd, `picos-rt-ID.tree-PID-TIME` from the runtime cache.
    let stale_map = |r: &str| {
        let pid: String = ["memfd:picos-rt-", ".tree-"]
            .iter()
            .find_map(|p| r.split(p).nth(1))
            .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect())
            .unwrap_or_default();
        !pid.is_empty()
            && std::fs::metadata(format!("/tmp/perf-{pid}.map"))
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < started)
    };
    let mut plain = None;
    for _ in 0..5 {
        let Some(r) = report(false) else {
            return;
        };
        let stale = stale_map(&r);
        plain = Some(r);
        if !stale {
            break;
        }
    }
    let plain = plain.expect("a report");
    let mapped = report(true).expect("perf recorded without --perf-map but not with it");
    // The maps this test made (perf reads them at report time).
    for e in std::fs::read_dir("/tmp").into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let new = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= started);
        if name.starts_with("perf-") && name.ends_with(".map") && new {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let runtime_lines = |r: &str| r.lines().filter(|l| l.contains("picos_rt::")).count();
    assert_eq!(
        runtime_lines(&plain),
        0,
        "without --perf-map perf named runtime functions:\n{plain}"
    );
    assert!(
        runtime_lines(&mapped) > 0 && mapped.contains("picos_fast_entry"),
        "perf report names no runtime function with --perf-map:\n{mapped}"
    );
    assert!(
        mapped
            .lines()
            .any(|l| l.contains("python3") && !l.contains("[.] 0x")),
        "perf report names none of python3's functions:\n{mapped}"
    );
    println!(
        "{T}: {} report lines name runtime functions",
        runtime_lines(&mapped)
    );
}

/// The modules of python3's own test suite (Debian's
/// libpython3.11-testsuite) that `python_stdlib_tests` runs: processes and
/// signals (subprocess, threading, posix, os, pty, resource, sched), files
/// and directories (shutil, pathlib, tempfile, glob, stat, fileio, ...),
/// descriptors and polling (select, epoll, fcntl, mmap), and
/// pure-computation ones as controls. Left out: test_socket (hangs natively
/// here: it needs a network beyond loopback), and the slowest ones
/// (test_signal 48 s, test_io 31 s, test_selectors 15 s natively), to keep
/// the run within a few minutes on a busy machine.
const PYTHON_TEST_MODULES: &[&str] = &[
    "test_os",
    "test_posix",
    "test_subprocess",
    "test_threading",
    "test_select",
    "test_fcntl",
    "test_mmap",
    "test_shutil",
    "test_pathlib",
    "test_tempfile",
    "test_fileio",
    "test_time",
    "test_pty",
    "test_resource",
    "test_epoll",
    "test_file",
    "test_pwd",
    "test_grp",
    "test_genericpath",
    "test_posixpath",
    "test_glob",
    "test_fnmatch",
    "test_stat",
    "test_getopt",
    "test_sched",
    "test_thread",
    "test_threading_local",
    "test_syslog",
    "test_zlib",
    "test_struct",
    "test_json",
];

/// python3's standard test suite, module by module, natively then under
/// picos: every module that passes natively must pass under picos (one
/// that fails natively is reported and left out, with the reason). Skips
/// with the reason where the test suite is not installed.
#[test]
fn python_stdlib_tests() {
    const T: &str = "python_stdlib_tests";
    let _shared = shared();
    if skip_unless_installed(T, "/usr/bin/python3", "python3") {
        return;
    }
    if !Path::new("/usr/lib/python3.11/test/libregrtest").is_dir() {
        println!(
            "SKIP {T}: python3's test suite is not installed: apt-get install libpython3.11-testsuite"
        );
        return;
    }
    // regrtest's own per-test timeout (faulthandler) ends a hung test with
    // a traceback well before ours kills the module's run.
    let limit = Duration::from_secs(600);
    let mut failures = Vec::new();
    let mut summary = String::new();
    for module in PYTHON_TEST_MODULES {
        let dir = tempdir();
        let spec = Spec::new(
            "/usr/bin/python3",
            &[&"-m", &"test", &"--timeout", &"300", module],
            dir.path(),
        );
        let started = Instant::now();
        let native = run_native_within(&spec, limit);
        let native_time = started.elapsed();
        if !native.status.success() {
            summary += &format!("SKIP {module}: fails natively ({})\n", native.status);
            continue;
        }
        let started = Instant::now();
        let picos = run_picos_within(&spec, limit);
        let picos_time = started.elapsed();
        if picos.status.success() {
            summary += &format!(
                "ok   {module}: native {:.1} s, picos {:.1} s\n",
                native_time.as_secs_f64(),
                picos_time.as_secs_f64()
            );
        } else {
            summary += &format!("FAIL {module}: {}\n", picos.status);
            failures.push(format!(
                "{module} passes natively but not under picos ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
                picos.status,
                tail(&picos.stdout),
                tail(&picos.stderr)
            ));
        }
    }
    println!("{summary}");
    assert!(
        failures.is_empty(),
        "{summary}\n{}",
        failures.join("\n==========\n")
    );
}

/// The last `SHOW_BYTES` of `b`, lossily (a test run's verdict is at its
/// end).
fn tail(b: &[u8]) -> String {
    let from = b.len().saturating_sub(SHOW_BYTES);
    String::from_utf8_lossy(&b[from..]).into_owned()
}
