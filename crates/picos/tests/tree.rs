//! The picoprocess tree and job control: `picos run` becomes the program's
//! first process (the root of the tree), so signals sent to the pid of
//! `picos` (STOP, CONT, KILL) act on the program as they would natively;
//! and the tree never outlives its root: when the root ends, however it
//! ends, every picoprocess below it ends too (docs/ARCHITECTURE.md, "The
//! picoprocess tree"). That last part has no native counterpart (natively
//! the children run on, reparented): the native runs below check the
//! program and show the check would fail there. STOP/CONT and the
//! thread-fork-exec check run natively first with the same expectations.

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PICOS: &str = env!("CARGO_BIN_EXE_picos");

/// How long a tree may take to end after its root: generous, for a busy
/// 2-core machine (it takes milliseconds).
const END_DEADLINE: Duration = Duration::from_secs(30);

fn compile(name: &str) -> PathBuf {
    let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let src = ws.join("tests/picoprocess").join(format!("{name}.c"));
    let out_dir = ws.join("target/picoprocess");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join(name);
    // Private name, then rename: tests running in parallel never run a
    // half-written file.
    let tmp = out_dir.join(format!(
        "{name}.{}.{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    let st = Command::new("gcc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&tmp)
        .arg(&src)
        .status()
        .expect("gcc");
    assert!(st.success(), "compiling {}", src.display());
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// A started program in its own process group (killed as a group when
/// dropped, whatever the test's outcome), its stdout read line by line.
struct Job {
    child: Child,
    lines: Receiver<String>,
}

impl Job {
    fn start(mut cmd: Command) -> Job {
        let mut child = cmd.process_group(0).stdout(Stdio::piped()).spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Job { child, lines }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: kill(2) of our own child's process group.
        unsafe { libc::kill(-self.pid(), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

fn native(prog: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(prog);
    c.args(args);
    c
}

fn picos(prog: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(PICOS);
    c.arg("run").arg(prog).args(args);
    c
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) of a process (or group) this test started.
    let r = unsafe { libc::kill(pid, sig) };
    assert_eq!(
        r,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

/// State letter and start time of process `pid` (fields 3 and 22 of
/// `/proc/PID/stat`), if it exists.
fn proc_stat(pid: i32) -> Option<(u8, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces: count from the last `)`.
    let mut f = s[s.rfind(')')? + 1..].split_whitespace();
    let state = *f.next()?.as_bytes().first()?;
    Some((state, f.nth(18)?.parse().ok()?))
}

/// Is the process that was `pid`, started at `start`, still running? A
/// zombie is not (picos's tree ends with SIGKILL; whoever adopted the
/// process may not have reaped it yet).
fn running(pid: i32, start: u64) -> bool {
    matches!(proc_stat(pid), Some((s, t)) if t == start && s != b'Z' && s != b'X')
}

/// Reads the `pid P` lines of a tree of `n` processes.
fn tree_pids(job: &Job, n: usize) -> Vec<(i32, u64)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut pids = Vec::new();
    while pids.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = job.lines.recv_timeout(left).unwrap_or_else(|_| {
            panic!(
                "only {} of {n} processes reported: {pids:?}; the group:\n{}",
                pids.len(),
                group(job.pid())
            )
        });
        let pid: i32 = line
            .strip_prefix("pid ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line {line:?}"));
        let (_, start) = proc_stat(pid).expect("a reported process exists");
        pids.push((pid, start));
    }
    pids
}

/// The processes of group `pgid`, one line each: pid, parent, state,
/// name, where it waits (for failure messages).
fn group(pgid: i32) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let f: Vec<&str> = stat[close + 2..].split(' ').collect();
        if f.get(2) != Some(&pgid.to_string().as_str()) {
            continue;
        }
        let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
        out += &format!(
            "  {pid} ppid {} state {} threads {threads} wchan {wchan} {}\n",
            f[1],
            f[0],
            &stat[..=close]
        );
    }
    out
}

/// Waits until none of `pids` runs; returns those still running at the
/// deadline.
fn wait_all_ended(pids: &[(i32, u64)], deadline: Duration) -> Vec<i32> {
    let end = Instant::now() + deadline;
    loop {
        let left: Vec<i32> = pids
            .iter()
            .filter(|&&(p, s)| running(p, s))
            .map(|&(p, _)| p)
            .collect();
        if left.is_empty() || Instant::now() > end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 1 + 2 + 4 + 8 processes: three levels of children, the last exec'd.
const DEPTH: &str = "3";
const WIDTH: &str = "2";
const TREE: usize = 15;

#[test]
fn kill_9_of_picos_ends_the_whole_tree() {
    let prog = compile("tree");
    let args = ["build", DEPTH, WIDTH];

    // Natively: the tree builds, and killing its first process leaves the
    // others running (what this test would catch under picos).
    let job = Job::start(native(&prog, &args));
    let pids = tree_pids(&job, TREE);
    signal(job.pid(), libc::SIGKILL);
    std::thread::sleep(Duration::from_millis(500));
    let left = wait_all_ended(&pids, Duration::ZERO);
    assert_eq!(left.len(), TREE - 1, "natively, the children run on");
    drop(job);

    let mut job = Job::start(picos(&prog, &args));
    let pids = tree_pids(&job, TREE);
    assert!(
        pids.iter().any(|&(p, _)| p == job.pid()),
        "the pid of picos is the program's first process: {pids:?}"
    );
    signal(job.pid(), libc::SIGKILL);
    let st = job.child.wait().unwrap();
    assert_eq!(st.signal(), Some(libc::SIGKILL), "{st:?}");
    let left = wait_all_ended(&pids, END_DEADLINE);
    assert!(
        left.is_empty(),
        "{} of {TREE} processes still running {END_DEADLINE:?} after kill -9 of picos: {left:?}",
        left.len()
    );
}

/// The same when the root exits normally (on SIGUSR1 sent to picos's pid,
/// which reaches the program's handler): its exit status is picos's, and
/// the tree ends with it.
#[test]
fn tree_ends_when_its_root_exits() {
    let prog = compile("tree");
    let mut job = Job::start(picos(&prog, &["build", DEPTH, WIDTH]));
    let pids = tree_pids(&job, TREE);
    signal(job.pid(), libc::SIGUSR1);
    let st = job.child.wait().unwrap();
    assert_eq!(st.code(), Some(0), "{st:?}");
    let left = wait_all_ended(&pids, END_DEADLINE);
    assert!(
        left.is_empty(),
        "{} of {TREE} processes still running {END_DEADLINE:?} after the root exited: {left:?}",
        left.len()
    );
}

/// Latest `root N` and `child N` seen.
type Ticks = Arc<Mutex<(i64, i64)>>;

fn follow_ticks(job: &mut Job) -> Ticks {
    let ticks: Ticks = Arc::new(Mutex::new((-1, -1)));
    let (tx, rx) = channel();
    let lines = std::mem::replace(&mut job.lines, rx);
    drop(tx);
    let t = ticks.clone();
    std::thread::spawn(move || {
        for l in lines {
            let (who, n) = l.split_once(' ').expect("`who N`");
            let n: i64 = n.parse().unwrap();
            let mut g = t.lock().unwrap();
            match who {
                "root" => g.0 = n,
                "child" => g.1 = n,
                _ => panic!("unexpected line {l:?}"),
            }
        }
    });
    ticks
}

fn now(t: &Ticks) -> (i64, i64) {
    *t.lock().unwrap()
}

/// Waits until `cond` holds of the ticks (or fails after a minute).
fn until(t: &Ticks, what: &str, cond: impl Fn((i64, i64)) -> bool) {
    let end = Instant::now() + Duration::from_secs(60);
    while !cond(now(t)) {
        assert!(Instant::now() < end, "{what}: ticks stay at {:?}", now(t));
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until process `pid` is stopped (state T).
fn until_stopped(pid: i32) {
    let end = Instant::now() + Duration::from_secs(60);
    while proc_stat(pid).map(|s| s.0) != Some(b'T') {
        assert!(Instant::now() < end, "process {pid} never stopped");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Stopped means no progress: none for a second, once lines already in
/// the pipe have been read.
fn assert_no_progress(t: &Ticks, which: fn((i64, i64)) -> i64, what: &str) {
    // Ticks written before the stop may still be on their way (the pipe,
    // the reading thread, which a busy machine may hold back): wait until
    // the count has stood still for 500 ms (at most 20 s), then watch it
    // for a second.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut before = which(now(t));
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let n = which(now(t));
        if n == before || std::time::Instant::now() > deadline {
            break;
        }
        before = n;
    }
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(which(now(t)), before, "{what} made progress while stopped");
}

/// kill -STOP / -CONT of a job's first process, then of its whole group.
fn check_stop_cont(cmd: Command, label: &str) {
    let mut job = Job::start(cmd);
    let (pid, pgid) = (job.pid(), job.pid());
    let t = follow_ticks(&mut job);
    until(&t, "start", |(r, c)| r > 5 && c > 5);

    // The first process alone stops, as natively; its child runs on.
    signal(pid, libc::SIGSTOP);
    until_stopped(pid);
    assert_no_progress(&t, |x| x.0, &format!("{label}: root after kill -STOP PID"));
    let c = now(&t).1;
    until(&t, &format!("{label}: child while root stopped"), |x| {
        x.1 > c + 5
    });
    let r = now(&t).0;
    signal(pid, libc::SIGCONT);
    until(&t, &format!("{label}: root after kill -CONT PID"), |x| {
        x.0 > r + 5
    });

    // The whole job, as a shell's job control does it.
    signal(-pgid, libc::SIGSTOP);
    until_stopped(pid);
    assert_no_progress(
        &t,
        |x| x.0,
        &format!("{label}: root after kill -STOP -PGID"),
    );
    assert_no_progress(
        &t,
        |x| x.1,
        &format!("{label}: child after kill -STOP -PGID"),
    );
    let (r, c) = now(&t);
    signal(-pgid, libc::SIGCONT);
    until(&t, &format!("{label}: job after kill -CONT -PGID"), |x| {
        x.0 > r + 5 && x.1 > c + 5
    });
}

#[test]
fn stop_and_cont_of_picos_act_on_the_program() {
    let prog = compile("tree");
    check_stop_cont(native(&prog, &["tick"]), "native");
    check_stop_cont(picos(&prog, &["tick"]), "picos");
}

/// The host's parent-death signal (SIGSYS) of a child comes when the
/// *thread* that forked it ends, as one often does right after the fork.
/// If that is while the child execs, the signal must wait for the new
/// runtime's handler: the host's default action once killed 1 to 3 % of
/// such children (exit status 0x1f).
#[test]
fn thread_that_forked_ends_while_the_child_execs() {
    let prog = compile("tree");
    let out = native(&prog, &["thread-exec", "300"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "bad: 0\n");
    let out = picos(&prog, &["thread-exec", "300"]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "bad: 0\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{:?}", out.status);
}
