//! Conformance tests: C programs in `tests/conformance/*.c` run natively and
//! under `picos run`, and must produce identical stdout and exit status.
//!
//! Each program is compiled (on demand, into `target/conformance/<variant>/`)
//! as a glibc dynamic PIE, a glibc static non-PIE executable, and a musl
//! static executable (when `musl-gcc` is available).
//!
//! Environment knobs:
//! * `PICOS_CONFORMANCE_NATIVE_ONLY=1`: only run natively. Each program is run
//!   twice and the two runs must agree (determinism check).
//!
//! Native runs must also meet the expectation written here (exit status, no
//! `: FAIL` line on stdout), so a broken test program is caught even without
//! picos.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const SRC_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/conformance");
const BUILD_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/conformance");
const PICOS: &str = env!("CARGO_BIN_EXE_picos");
const TIMEOUT: Duration = Duration::from_secs(60);

/// The environment every program (and picos itself) runs with.
const TEST_ENV: &[(&str, &str)] = &[
    ("PATH", "/usr/bin:/bin"),
    ("PICOS_TEST_VAR", "hello"),
    ("LC_ALL", "C"),
    // So that picos runs the runtime from its cache, as it does for a user
    // (with no HOME and no XDG_CACHE_HOME it runs it from a memfd).
    ("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR")),
];

// ---------------------------------------------------------------------------
// Variants and building
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Variant {
    GlibcDynamic,
    GlibcStatic,
    MuslStatic,
}

const VARIANTS: [Variant; 3] = [
    Variant::GlibcDynamic,
    Variant::GlibcStatic,
    Variant::MuslStatic,
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::GlibcDynamic => "glibc-dynamic",
            Variant::GlibcStatic => "glibc-static",
            Variant::MuslStatic => "musl-static",
        }
    }

    fn compiler(self) -> &'static str {
        match self {
            Variant::GlibcDynamic | Variant::GlibcStatic => "gcc",
            Variant::MuslStatic => "musl-gcc",
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Variant::GlibcDynamic => &["-O1", "-pthread", "-Wall", "-fPIE", "-pie"],
            Variant::GlibcStatic => &["-O1", "-pthread", "-Wall", "-static", "-no-pie", "-fno-pie"],
            Variant::MuslStatic => &["-O1", "-pthread", "-Wall", "-static"],
        }
    }
}

fn find_in_path(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// Why a variant can't be built on this machine, if it can't.
fn unavailable(variant: Variant) -> Option<String> {
    static CACHE: OnceLock<HashMap<&'static str, bool>> = OnceLock::new();
    let found = CACHE.get_or_init(|| {
        ["gcc", "musl-gcc"]
            .into_iter()
            .map(|c| (c, find_in_path(c).is_some()))
            .collect()
    });
    if found[variant.compiler()] {
        None
    } else {
        Some(format!("{} not found in PATH", variant.compiler()))
    }
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Newest modification time of the program's source and the shared headers.
fn source_mtime(src: &Path) -> SystemTime {
    let mut newest = mtime(src).unwrap_or_else(|| panic!("missing source {}", src.display()));
    if let Ok(rd) = std::fs::read_dir(SRC_DIR) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension() == Some(OsStr::new("h")) {
                if let Some(t) = mtime(&p) {
                    newest = newest.max(t);
                }
            }
        }
    }
    newest
}

/// Serialises builds of the same output inside this test process.
fn build_lock() -> &'static Mutex<()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(()))
}

/// Compile `tests/conformance/<prog>.c` for `variant` if it is out of date.
/// Returns the binary path, or the compiler's complaint.
fn build(prog: &str, variant: Variant) -> Result<PathBuf, String> {
    let src = Path::new(SRC_DIR).join(format!("{prog}.c"));
    let out_dir = Path::new(BUILD_DIR).join(variant.name());
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    let out = out_dir.join(prog);
    let out = std::fs::canonicalize(&out_dir)
        .map(|d| d.join(prog))
        .unwrap_or(out);

    let _guard = build_lock().lock().unwrap_or_else(|e| e.into_inner());
    let src_time = source_mtime(&src);
    if let Some(bin_time) = mtime(&out) {
        if bin_time >= src_time {
            return Ok(out);
        }
    }
    // Build to a unique name and rename, so concurrent test processes never
    // see (or run) a half-written binary.
    let tmp = out_dir.join(format!(".{prog}.{}.tmp", std::process::id()));
    let output = Command::new(variant.compiler())
        .args(variant.flags())
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .current_dir(ROOT)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {}: {e}", variant.compiler()))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "compiling {} for {} failed ({}):\n{} {} -o {} {}\n{}",
            src.display(),
            variant.name(),
            output.status,
            variant.compiler(),
            variant.flags().join(" "),
            tmp.display(),
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    std::fs::rename(&tmp, &out).map_err(|e| format!("renaming to {}: {e}", out.display()))?;
    Ok(out)
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

fn kill_process_group(pgid: u32) {
    // SAFETY: kill(2) with a negative pid only sends a signal to the process
    // group we created for the child (process_group(0) below); no memory is
    // involved.
    unsafe {
        kill(-(pgid as i32), 9);
    }
}

struct Outcome {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    timed_out: bool,
    elapsed: Duration,
}

impl Outcome {
    /// Exit status as a `picos run` exit code: killed by signal N => 128+N.
    fn code(&self) -> i32 {
        match (self.status.code(), self.status.signal()) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            _ => -1,
        }
    }

    fn status_str(&self) -> String {
        let mut s = match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(sig)) => format!("killed by signal {sig} (= code {})", 128 + sig),
            _ => format!("{:?}", self.status),
        };
        if self.timed_out {
            s.push_str(&format!(" [TIMED OUT after {:?}, killed]", TIMEOUT));
        }
        s
    }
}

fn spawn_reader<R: Read + Send + 'static>(
    mut r: R,
    tx: mpsc::Sender<(bool, Vec<u8>)>,
    is_out: bool,
) {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send((is_out, buf));
    });
}

/// Run `cmd` with the test environment, stdin null, its own process group and
/// a timeout. Stray processes still holding the output pipes after the main
/// process exited are killed.
fn run(mut cmd: Command, cwd: &Path) -> Result<Outcome, String> {
    cmd.env_clear()
        .envs(TEST_ENV.iter().copied())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let desc = format!("{cmd:?}");
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("spawning {desc}: {e}"))?;
    let pgid = child.id();
    let (tx, rx) = mpsc::channel();
    spawn_reader(child.stdout.take().expect("stdout"), tx.clone(), true);
    spawn_reader(child.stderr.take().expect("stderr"), tx, false);

    let deadline = start + TIMEOUT;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for {desc}: {e}")),
        }
        if Instant::now() >= deadline {
            timed_out = true;
            kill_process_group(pgid);
            let _ = child.kill();
            break child
                .wait()
                .map_err(|e| format!("waiting for {desc}: {e}"))?;
        }
        thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();

    let mut stdout = None;
    let mut stderr = None;
    let grace = Instant::now() + Duration::from_secs(5);
    let mut killed_stragglers = false;
    while stdout.is_none() || stderr.is_none() {
        let wait = grace.saturating_duration_since(Instant::now());
        match rx.recv_timeout(if killed_stragglers {
            Duration::from_secs(5)
        } else {
            wait
        }) {
            Ok((true, b)) => stdout = Some(b),
            Ok((false, b)) => stderr = Some(b),
            Err(mpsc::RecvTimeoutError::Timeout) if !killed_stragglers => {
                // Something in the process group still holds the pipes.
                kill_process_group(pgid);
                killed_stragglers = true;
            }
            Err(_) => break,
        }
    }
    let mut stderr = stderr.unwrap_or_default();
    if killed_stragglers {
        stderr.extend_from_slice(b"\n[harness: killed stray processes holding the output pipes]\n");
    }
    Ok(Outcome {
        status,
        stdout: stdout.unwrap_or_default(),
        stderr,
        timed_out,
        elapsed,
    })
}

fn native_cmd(bin: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.args(args);
    c
}

fn picos_cmd(bin: &Path, args: &[&str], extra: &[&str]) -> Command {
    let mut c = Command::new(PICOS);
    c.arg("run").args(extra).arg("--").arg(bin).args(args);
    c
}

fn native_only() -> bool {
    std::env::var("PICOS_CONFORMANCE_NATIVE_ONLY").is_ok_and(|v| !v.is_empty() && v != "0")
}

// ---------------------------------------------------------------------------
// Cases and checking
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Expect {
    Code(i32),
    Signal(i32),
}

struct Case {
    args: &'static [&'static str],
    expect: Expect,
}

const fn ok(args: &'static [&'static str]) -> Case {
    Case {
        args,
        expect: Expect::Code(0),
    }
}

const fn code(args: &'static [&'static str], c: i32) -> Case {
    Case {
        args,
        expect: Expect::Code(c),
    }
}

const fn signal(args: &'static [&'static str], s: i32) -> Case {
    Case {
        args,
        expect: Expect::Signal(s),
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Last `max` bytes of `b`, lossily decoded.
fn tail(b: &[u8], max: usize) -> String {
    if b.len() <= max {
        lossy(b)
    } else {
        format!(
            "[... {} bytes elided ...]\n{}",
            b.len() - max,
            lossy(&b[b.len() - max..])
        )
    }
}

fn first_difference(a: &[u8], b: &[u8], b_name: &str) -> String {
    let (a, b) = (lossy(a), lossy(b));
    let (al, bl): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    for i in 0..al.len().max(bl.len()) {
        let (x, y) = (al.get(i), bl.get(i));
        if x != y {
            return format!(
                "first difference at line {}:\n  native: {}\n  {b_name}: {}",
                i + 1,
                x.map_or("<missing>".to_string(), |s| format!("{s:?}")),
                y.map_or("<missing>".to_string(), |s| format!("{s:?}")),
            );
        }
    }
    "outputs differ only in trailing bytes".to_string()
}

/// Problems with a native run against the expectation, if any.
fn check_native(label: &str, case: &Case, out: &Outcome) -> Option<String> {
    let status_ok = match case.expect {
        Expect::Code(c) => out.status.code() == Some(c),
        Expect::Signal(s) => out.status.signal() == Some(s),
    };
    let stdout = lossy(&out.stdout);
    let fails: Vec<&str> = stdout.lines().filter(|l| l.contains(": FAIL")).collect();
    if status_ok && fails.is_empty() && !out.timed_out {
        return None;
    }
    Some(format!(
        "{label}: NATIVE run is wrong (the test program or the host is broken)\n\
         expected {:?}, got {}\nfailing checks: {:?}\n--- native stdout ---\n{}\n--- native stderr ---\n{}",
        case.expect,
        out.status_str(),
        fails,
        tail(&out.stdout, 16 * 1024),
        tail(&out.stderr, 8 * 1024),
    ))
}

fn compare(label: &str, what: &str, a: &Outcome, b: &Outcome, b_name: &str) -> Option<String> {
    if a.stdout == b.stdout && a.code() == b.code() && !b.timed_out {
        return None;
    }
    Some(format!(
        "{label}: {what} MISMATCH\n\
         status: native {} | {b_name} {}\nstdout {}\n{}\n\
         --- native stdout ---\n{}\n--- {b_name} stdout ---\n{}\n--- {b_name} stderr ---\n{}",
        a.status_str(),
        b.status_str(),
        if a.stdout == b.stdout {
            "identical"
        } else {
            "differs"
        },
        if a.stdout == b.stdout {
            String::new()
        } else {
            first_difference(&a.stdout, &b.stdout, b_name)
        },
        tail(&a.stdout, 16 * 1024),
        tail(&b.stdout, 16 * 1024),
        tail(&b.stderr, 16 * 1024),
    ))
}

/// Run every case of `prog` in every variant; panic with all problems found.
fn conformance(prog: &str, cases: &[Case]) {
    conformance_with(prog, cases, &[]);
}

/// [`conformance`] of `prog`'s `cases` on both of the runtime's paths:
/// with patched sites, and with every call trapped (`--no-patch`).
fn conformance_patched_and_trapped(prog: &str, cases: &[Case]) {
    conformance(prog, cases);
    conformance_with(prog, cases, &["--no-patch"]);
}

/// As [`conformance`], with `extra` arguments to `picos run` (such as
/// `--no-patch`: every call trapped, through the handlers).
fn conformance_with(prog: &str, cases: &[Case], extra: &[&str]) {
    let cwd = tempfile::Builder::new()
        .prefix(&format!("picos-conformance-{prog}-"))
        .tempdir()
        .expect("tempdir");
    let native_only = native_only();
    let mut failures = Vec::new();
    let mut summary = String::new();

    for variant in VARIANTS {
        if let Some(why) = unavailable(variant) {
            eprintln!("SKIP: {prog} [{}]: {why}", variant.name());
            let _ = writeln!(summary, "SKIP {prog} [{}]: {why}", variant.name());
            continue;
        }
        let bin = match build(prog, variant) {
            Ok(b) => b,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        for case in cases {
            let label = format!("{prog} [{}] {:?}", variant.name(), case.args);
            let native = match run(native_cmd(&bin, case.args), cwd.path()) {
                Ok(o) => o,
                Err(e) => {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            if let Some(f) = check_native(&label, case, &native) {
                failures.push(f);
                continue;
            }
            let second = if native_only {
                run(native_cmd(&bin, case.args), cwd.path())
            } else {
                run(picos_cmd(&bin, case.args, extra), cwd.path())
            };
            let second = match second {
                Ok(o) => o,
                Err(e) => {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            let (what, name) = if native_only {
                ("native determinism (two native runs)", "native#2")
            } else {
                ("native vs picos", "picos")
            };
            match compare(&label, what, &native, &second, name) {
                Some(f) => failures.push(f),
                None => {
                    let _ = writeln!(
                        summary,
                        "ok   {label}: {} (native {:?}, {name} {:?})",
                        native.status_str(),
                        native.elapsed,
                        second.elapsed
                    );
                }
            }
        }
    }
    eprint!("{summary}");
    if !failures.is_empty() {
        panic!(
            "{} conformance failure(s) in {prog}{}:\n\n{}",
            failures.len(),
            if native_only { " (native only)" } else { "" },
            failures.join("\n\n==========\n\n")
        );
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn args_env() {
    conformance(
        "args_env",
        &[
            ok(&[]),
            ok(&[
                "one",
                "two words",
                "",
                "--flag=x",
                "\u{fc}n\u{ef}c\u{f6}d\u{e9}",
                "-",
            ]),
        ],
    );
}

#[test]
fn auxv() {
    conformance("auxv", &[ok(&[])]);
}

#[test]
fn files() {
    // Default: a fresh mkdtemp directory; ".": relative paths under the cwd.
    conformance("files", &[ok(&[]), ok(&["."])]);
}

#[test]
fn threads() {
    conformance("threads", &[ok(&[])]);
}

/// The program's own seccomp filters, run by the library OS: every action,
/// strict mode, arguments, stacking, fork, execve, TSYNC, what is refused.
#[test]
fn seccomp() {
    conformance("seccomp", &[ok(&[])]);
}

/// process_vm_readv/writev within the tree (the target runtime's memory
/// refused). Not sandboxed: the sandbox refuses both calls.
#[test]
fn process_vm() {
    conformance("process_vm", &[ok(&[])]);
}

/// ptrace between processes of the tree, emulated by the library OS:
/// syscall stops (arguments, results, a call changed and one skipped),
/// memory, signal-delivery stops, SEIZE and INTERRUPT, the exec, fork
/// and exit events, and Linux's refusals. Not sandboxed: the sandbox
/// refuses ptrace.
#[test]
fn ptrace() {
    conformance("ptrace", &[ok(&[])]);
}

/// POSIX message queues: a notice survives a site patched with threads
/// (not sandboxed: Landlock refuses the queue's open).
#[test]
fn mqueue() {
    conformance("mqueue", &[ok(&[])]);
}

#[test]
fn signals() {
    conformance("signals", &[ok(&[])]);
}

/// Blocked signals the program handles: pending however they come, in
/// order, and as sigaction, signalfd, sigwaitinfo, fork and execve see them
/// (the host's mask may leave them open: `kernel::signal::set_mask_lazily`).
#[test]
fn sigmask() {
    conformance("sigmask", &[ok(&[])]);
}

/// Faults delivered to the program's handlers (entered without the host's
/// rt_sigreturn): registers, FPU state, masks, altstacks, nesting, a storm.
#[test]
fn faults() {
    conformance("faults", &[ok(&[])]);
}

/// Signals a thread sends itself: delivered by the runtime when the
/// program handles them (raise), taken back from the host when sent while
/// blocked; siginfo, order, sigwaitinfo and signalfd, a storm.
#[test]
fn raise() {
    conformance("raise", &[ok(&[])]);
}

/// A program that rewrites its argv in place (setproctitle) is seen renamed
/// in /proc/self/cmdline.
#[test]
fn proctitle() {
    conformance("proctitle", &[ok(&[]), ok(&["a", "bb"])]);
}

#[test]
fn ids() {
    conformance("ids", &[ok(&[])]);
}

#[test]
fn memory() {
    conformance("memory", &[ok(&[])]);
}

#[test]
fn jit_syscall() {
    conformance("jit_syscall", &[ok(&[])]);
}

#[test]
fn exec() {
    conformance("exec", &[ok(&[]), ok(&["as-nobody"])]);
    conformance_with("exec", &[ok(&[])], &["--kernel-exec"]);
}

/// What execve resets and what it keeps, over a chain of three execs
/// (tests/conformance/exec_state.c): handlers, the alternate signal stack,
/// the old program's mappings, close-on-exec descriptors, the FPU's control
/// words, rseq, /proc's cmdline, environ, maps and comm. Under picos each
/// is an execve in place (`kernel::exec::in_place`), then, with
/// `--kernel-exec`, the kernel's execve of a fresh runtime.
#[test]
fn exec_state() {
    conformance_patched_and_trapped("exec_state", &[ok(&[])]);
    conformance_with("exec_state", &[ok(&[])], &["--kernel-exec"]);
}

/// /proc/self/stat's code, data and stack addresses, cmdline and environ
/// describe the program (tests/conformance/proc_stat.c), at start-up and
/// after an execve in place or through the kernel.
#[test]
fn proc_stat() {
    conformance_patched_and_trapped("proc_stat", &[ok(&[]), ok(&["exec"])]);
    conformance_with("proc_stat", &[ok(&["exec"])], &["--kernel-exec"]);
}

/// The descriptor table is the program's alone (RLIMIT_NOFILE 64: as many
/// files as natively, no foreign number valid while the runtime patches,
/// execve after a full table).
#[test]
fn fd_table() {
    conformance("fd_table", &[ok(&[])]);
}

/// shmat SHM_REMAP, mremap, madvise, remap_file_pages, mmap MAP_FIXED over
/// the runtime's memory fail cleanly (natively: the same calls on the
/// program's own mappings, the foreign part skipped), with Linux's own
/// errors first.
#[test]
fn map_replace() {
    conformance("map_replace", &[ok(&[])]);
}

#[test]
fn exit_codes() {
    conformance(
        "exit_codes",
        &[
            ok(&[]),
            ok(&["exit", "0"]),
            code(&["exit", "1"], 1),
            code(&["exit", "42"], 42),
            code(&["exit", "255"], 255),
            code(&["exit", "256"], 0),
            code(&["_exit", "3"], 3),
            code(&["return", "9"], 9),
            signal(&["signal", "15"], 15),
            signal(&["signal", "9"], 9),
            signal(&["signal", "2"], 2),
            signal(&["kill", "10"], 10),
            ok(&["ignored", "15"]),
            signal(&["abort"], 6),
            signal(&["segv"], 11),
            signal(&["int3"], 5),
            signal(&["int3-ignored"], 5),
            signal(&["uretprobe"], 4),
            ok(&["uretprobe-handler"]),
            code(&["thread-exit"], 3),
            ok(&["thread-last"]),
            code(&["group"], 5),
            signal(&["thread-signal", "15"], 15),
            code(&["atexit"], 4),
            code(&["no-such-mode"], 2),
        ],
    );
}

#[test]
fn fork_wait() {
    conformance("fork_wait", &[ok(&[])]);
}

/// The processes of a tree: signals between them and to process groups,
/// waits on any child and on groups, zombies, SA_NOCLDSTOP/SA_NOCLDWAIT, an
/// orphaned group's SIGHUP and SIGCONT, setpgid across exec
/// (tests/conformance/tree.c).
#[test]
fn tree() {
    conformance("tree", &[ok(&[])]);
}

/// clone3 for a new process: cleared handlers, a chosen pid, a cgroup to
/// start in (tests/conformance/clone3.c).
#[test]
fn clone3() {
    conformance("clone3", &[ok(&[])]);
}

/// setns, unshare(CLONE_NEWUSER) and SA_RESETHAND against what the library
/// OS caches (tests/conformance/namespaces.c).
#[test]
fn namespaces() {
    conformance("namespaces", &[ok(&[])]);
}

/// File locks that wait (tests/conformance/locks.c), with patched sites and
/// with every call trapped.
#[test]
fn locks() {
    conformance_patched_and_trapped("locks", &[ok(&[])]);
}

#[test]
fn syscall_signals() {
    conformance("syscall_signals", &[ok(&[])]);
}

/// A one-shot timer re-armed from its handler every few microseconds (a
/// preemptible function's timer): an expiry that lands while the runtime
/// works on its pending set must not be lost. Also on the trap path.
#[test]
fn timer_rearm() {
    conformance_patched_and_trapped("timer_rearm", &[ok(&[])]);
}

/// Real-time signals: every queued instance delivered, in order: 500
/// queued while blocked, 40 across masked waits that deliver none, bursts
/// of 50,000 from another thread while this one runs or masks and unmasks
/// the signal; and (`queue-full`) the bursts with the host's queue full
/// (RLIMIT_SIGPENDING of 64, in a user namespace of its own).
#[test]
fn rt_queue() {
    conformance_patched_and_trapped("rt_queue", &[ok(&[]), ok(&["queue-full"])]);
}

/// A thread that unmaps its own stack and exits (musl's detached threads
/// do): the patched `munmap` must not need that stack after the call.
#[test]
fn unmap_own_stack() {
    conformance_patched_and_trapped("unmap_own_stack", &[ok(&[])]);
}

/// Issue 9's probes: fault-type signals that are not faults, blocked fault
/// signals, unbuildable frames, clone on a new stack, clone3's checks, the
/// `int $0x80` entry, call numbers with high bits, a faulting rdtsc, a
/// handler at a non-canonical address.
#[test]
fn hostile() {
    conformance("hostile", &[ok(&[]), signal(&["noncanonical-handler"], 11)]);
}

#[test]
fn signal_pc() {
    conformance("signal_pc", &[ok(&[])]);
}

/// `jit_syscall` under `picos run --trace`: the raw `syscall` instructions in
/// run-time generated code must show up in the trace.
#[test]
fn jit_syscall_is_trapped() {
    if native_only() {
        eprintln!(
            "SKIP: jit_syscall_is_trapped needs picos (PICOS_CONFORMANCE_NATIVE_ONLY is set)"
        );
        return;
    }
    let cwd = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for variant in VARIANTS {
        if let Some(why) = unavailable(variant) {
            eprintln!("SKIP: jit_syscall_is_trapped [{}]: {why}", variant.name());
            continue;
        }
        let label = format!("jit_syscall --trace [{}]", variant.name());
        let bin = match build("jit_syscall", variant) {
            Ok(b) => b,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let native = match run(native_cmd(&bin, &[]), cwd.path()) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{label}: {e}"));
                continue;
            }
        };
        let traced = match run(picos_cmd(&bin, &[], &["--trace"]), cwd.path()) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{label}: {e}"));
                continue;
            }
        };
        if let Some(f) = compare(&label, "native vs picos --trace", &native, &traced, "picos") {
            failures.push(f);
        }
        let stderr = lossy(&traced.stderr);
        let getpids = stderr.lines().filter(|l| l.contains("getpid(")).count();
        // 1 libc getpid() + 5 raw `syscall` getpids (4 from generated code,
        // 1 inline asm). Require at least the raw ones.
        if getpids < 5 {
            failures.push(format!(
                "{label}: expected >= 5 trace lines containing `getpid(` (raw syscalls from \
                 generated code), found {getpids}\n--- picos stderr ---\n{}",
                tail(&traced.stderr, 16 * 1024)
            ));
        }
    }
    if !failures.is_empty() {
        panic!("{}", failures.join("\n\n==========\n\n"));
    }
}

/// A manifest for the conformance programs under `--sandbox`: the system
/// read-only, the programs' build directory read-only, the host's /tmp
/// (where each run's working directory is) read-write, a /dev of harmless
/// devices, /proc read-only; the command line's arguments and the
/// caller's environment, as natively.
fn sandbox_manifest(dir: &Path) -> PathBuf {
    let build = std::fs::canonicalize(BUILD_DIR).expect("the conformance build directory");
    let mut m = String::from(
        "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\
         [sandbox]\nenable = true\n\
         [[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/\"\n",
    );
    for d in ["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64"] {
        if Path::new(d).is_dir() {
            m += &format!("[[fs.mounts]]\npath = \"{d}\"\nuri = \"file:{d}\"\nreadonly = true\n");
        }
    }
    m += &format!(
        "[[fs.mounts]]\npath = \"/tmp\"\nuri = \"file:/tmp\"\n\
         [[fs.mounts]]\npath = \"{b}\"\nuri = \"file:{b}\"\nreadonly = true\n\
         [[fs.mounts]]\ntype = \"dev\"\npath = \"/dev\"\n\
         [[fs.mounts]]\npath = \"/proc\"\nuri = \"file:/proc\"\nreadonly = true\n",
        b = build.display()
    );
    let p = dir.join("sandbox.toml");
    std::fs::write(&p, m).expect("writing the sandbox manifest");
    p
}

/// The conformance programs under the sandbox (+SC +RM), same output as
/// natively. Left out: `ids` (the sandbox drops every capability: root's
/// set*id calls that natively succeed fail) and `hostile` (it takes the
/// runtime on; tests/sandbox/escape.c is its sandboxed counterpart).
#[test]
fn sandboxed() {
    // The manifest names the build directory, which the first build makes.
    std::fs::create_dir_all(BUILD_DIR).expect("the conformance build directory");
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = sandbox_manifest(dir.path());
    let m = manifest.to_str().expect("a UTF-8 path");
    let extra = ["-m", m];
    for (prog, cases) in [
        ("args_env", &[ok(&[]), ok(&["one", "two words", ""])][..]),
        ("auxv", &[ok(&[])][..]),
        ("files", &[ok(&[]), ok(&["."])][..]),
        ("threads", &[ok(&[])][..]),
        ("signals", &[ok(&[])][..]),
        ("sigmask", &[ok(&[])][..]),
        ("faults", &[ok(&[])][..]),
        ("raise", &[ok(&[])][..]),
        ("memory", &[ok(&[])][..]),
        ("jit_syscall", &[ok(&[])][..]),
        ("exec", &[ok(&[])][..]),
        ("exec_state", &[ok(&[])][..]),
        ("proc_stat", &[ok(&["exec"])][..]),
        ("fd_table", &[ok(&[])][..]),
        ("map_replace", &[ok(&[])][..]),
        ("fork_wait", &[ok(&[])][..]),
        ("tree", &[ok(&[])][..]),
        ("locks", &[ok(&[])][..]),
        ("seccomp", &[ok(&[])][..]),
        ("syscall_signals", &[ok(&[])][..]),
        ("timer_rearm", &[ok(&[])][..]),
        ("rt_queue", &[ok(&[])][..]),
        ("unmap_own_stack", &[ok(&[])][..]),
        (
            "exit_codes",
            &[ok(&[]), code(&["exit", "42"], 42), signal(&["segv"], 11)][..],
        ),
    ] {
        conformance_with(prog, cases, &extra);
    }
}
