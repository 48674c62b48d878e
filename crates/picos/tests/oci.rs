//! picos as an OCI runtime (src/oci.rs): podman runs containers with
//! `--runtime <picos>` exactly as with runc, and each container's process
//! is a picoprocess. Every podman command runs with runc first (what it
//! does natively) and then with picos; outputs and exit codes must match.
//!
//! Skipped (saying why) when not root or when podman or runc is missing:
//! `.ci/run` installs both.

mod common;

use common::{is_root, output_within, text, workspace};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const PICOS: &str = env!("CARGO_BIN_EXE_picos");
const LIMIT: Duration = Duration::from_secs(120);
/// runc and podman as Debian ships them, for these hosts (cgroup v1,
/// where crun fails): the limits podman would otherwise take from the
/// caller, which its runc refuses here.
const ULIMITS: &[&str] = &[
    "--ulimit",
    "nofile=1024:20000",
    "--ulimit",
    "nproc=1024:1024",
];

fn which(prog: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(prog))
            .find(|c| c.is_file())
    })
}

/// A podman with storage of its own (in a temporary directory), so the
/// tests neither see nor leave the machine's images and containers.
struct Podman {
    dir: tempfile::TempDir,
    runc: PathBuf,
}

impl Podman {
    fn new() -> Option<Podman> {
        if !is_root() {
            eprintln!("skipped: podman's rootful mode (namespaces, cgroups) needs root");
            return None;
        }
        if which("podman").is_none() {
            eprintln!("skipped: podman is not installed (apt-get install podman)");
            return None;
        }
        let Some(runc) = which("runc") else {
            eprintln!("skipped: runc is not installed (apt-get install runc)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("picos-oci-")
            .tempdir()
            .unwrap();
        Some(Podman { dir, runc })
    }

    /// podman's global options for this storage and the given runtime.
    fn global_args(&self, runtime: &Path) -> Vec<String> {
        let d = self.dir.path().display();
        vec![
            "--root".into(),
            format!("{d}/storage"),
            "--runroot".into(),
            format!("{d}/run"),
            "--tmpdir".into(),
            format!("{d}/tmp"),
            "--cgroup-manager".into(),
            "cgroupfs".into(),
            "--events-backend".into(),
            "file".into(),
            "--runtime".into(),
            runtime.display().to_string(),
        ]
    }

    /// `podman` with this storage and the given runtime.
    fn cmd(&self, runtime: &Path) -> Command {
        let mut c = Command::new("podman");
        c.args(self.global_args(runtime)).stdin(Stdio::null());
        c
    }

    /// `podman ARGS` with runtime `runtime`, to its end.
    fn run(&self, runtime: &Path, args: &[&str]) -> Output {
        output_within(self.cmd(runtime).args(args), LIMIT)
    }

    /// `podman run --rm` of `image` with `args`: with runc, then with
    /// picos; both outputs (stdout, exit code) must match. Returns picos's.
    fn same(&self, opts: &[&str], image: &str, args: &[&str]) -> Output {
        let mut all = vec!["run", "--rm", "--network", "none"];
        all.extend_from_slice(ULIMITS);
        all.extend_from_slice(opts);
        all.push(image);
        all.extend_from_slice(args);
        let native = self.run(&self.runc, &all);
        let picos = self.run(Path::new(PICOS), &all);
        assert_eq!(
            (text(&picos), picos.status.code()),
            (text(&native), native.status.code()),
            "podman {all:?}: picos (left) vs runc (right); stderr under picos: {}",
            String::from_utf8_lossy(&picos.stderr)
        );
        picos
    }

    /// `podman run -d --name NAME` of the busybox image with `args`,
    /// under picos; the container must start.
    fn detached(&self, name: &str, args: &[&str]) {
        let mut image_args = vec!["localhost/picos-bb"];
        image_args.extend_from_slice(args);
        self.detached_with(Path::new(PICOS), name, &image_args);
    }

    /// `podman run -d --name NAME ARGS` (options, image, command) with
    /// runtime `runtime`; the container must start.
    fn detached_with(&self, runtime: &Path, name: &str, args: &[&str]) {
        let mut all = vec!["run", "-d", "--name", name, "--network", "none"];
        all.extend_from_slice(ULIMITS);
        all.extend_from_slice(args);
        let out = self.run(runtime, &all);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Imports the directory `root` as image `name`.
    fn import(&self, root: &Path, name: &str) {
        let tar = self
            .dir
            .path()
            .join(format!("{}.tar", name.replace('/', "_")));
        let st = Command::new("tar")
            .arg("-C")
            .arg(root)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status()
            .unwrap();
        assert!(st.success(), "tar of {}", root.display());
        let out = self.run(&self.runc, &["import", tar.to_str().unwrap(), name]);
        assert!(
            out.status.success(),
            "podman import: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Podman {
    /// Removes every container and image of this storage and unmounts it
    /// (also when a test fails half-way), before the directory goes.
    fn drop(&mut self) {
        let _ = output_within(
            self.cmd(Path::new(PICOS))
                .args(["rm", "--all", "--force", "--time", "0"]),
            LIMIT,
        );
        let _ = output_within(
            self.cmd(&self.runc).args(["system", "reset", "--force"]),
            LIMIT,
        );
    }
}

/// A root file system of busybox (static) and its applets.
fn busybox_root(dir: &Path) -> PathBuf {
    let root = dir.join("bb-root");
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for d in ["tmp", "etc", "proc", "sys", "dev"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::copy("/bin/busybox", bin.join("busybox")).unwrap();
    for a in [
        "sh", "echo", "cat", "ls", "true", "false", "sleep", "id", "env", "ps", "touch", "grep",
        "wc", "kill", "test", "rm", "mkdir", "hostname", "pwd", "head",
    ] {
        std::os::unix::fs::symlink("busybox", bin.join(a)).unwrap();
    }
    root
}

/// Copies `file` (followed through symlinks) to the same path under `root`.
fn copy_in(root: &Path, file: &Path) {
    let dest = root.join(file.strip_prefix("/").unwrap());
    if dest.exists() {
        return;
    }
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(file, &dest).unwrap();
}

/// The shared libraries `elf` needs, as `ldd` lists them.
fn libraries(elf: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd").arg(elf).output().unwrap();
    text(&out)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let p = match l.split_once("=> ") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            p.starts_with('/').then(|| PathBuf::from(p))
        })
        .collect()
}

/// A root file system with Debian's python3 and its libraries copied in
/// (the interpreter, its standard library and the extension modules'
/// libraries).
fn python_root(dir: &Path) -> Option<PathBuf> {
    let exe = std::fs::canonicalize("/usr/bin/python3").ok()?;
    let version = exe.file_name()?.to_str()?.to_string(); // python3.11
    let stdlib = Path::new("/usr/lib").join(&version);
    if !stdlib.is_dir() {
        return None;
    }
    let root = dir.join("py-root");
    for d in ["tmp", "etc", "proc", "sys", "dev", "usr/bin", "usr/lib"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    copy_in(&root, &exe);
    std::os::unix::fs::symlink(&version, root.join("usr/bin/python3")).unwrap();
    std::os::unix::fs::symlink("usr/bin", root.join("bin")).unwrap();
    let mut elves = vec![exe.clone()];
    let st = Command::new("cp")
        .arg("-a")
        .arg(&stdlib)
        .arg(root.join("usr/lib"))
        .status()
        .unwrap();
    assert!(st.success());
    for e in std::fs::read_dir(stdlib.join("lib-dynload"))
        .unwrap()
        .flatten()
    {
        elves.push(e.path());
    }
    for elf in &elves {
        for lib in libraries(elf) {
            copy_in(&root, &lib);
        }
    }
    Some(root)
}

/// Everything in one test: podman's commands share the images and the
/// storage, and each container must be gone before the next step.
#[test]
fn podman_runs_containers_as_picoprocesses() {
    let Some(p) = Podman::new() else { return };
    let bb = busybox_root(p.dir.path());
    p.import(&bb, "localhost/picos-bb");
    let picos = Path::new(PICOS);

    // Exit codes and output, with the program's arguments passed through.
    let out = p.same(
        &[],
        "localhost/picos-bb",
        &[
            "sh",
            "-c",
            "echo hello \"$0\"; id; pwd; hostname | wc -c; exit 3",
            "x y",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out).starts_with("hello x y\nuid=0 gid=0"),
        "{}",
        text(&out)
    );
    // The environment, the working directory and the user of the spec.
    p.same(
        &[
            "-e",
            "GREETING=hi there",
            "-w",
            "/tmp",
            "--user",
            "1234:5678",
        ],
        "localhost/picos-bb",
        &["sh", "-c", "echo \"$GREETING\"; pwd; id"],
    );
    // A program that does not exist: 127; one that cannot run: 126.
    let out = p.same(&[], "localhost/picos-bb", &["/no/such/program"]);
    assert_eq!(out.status.code(), Some(127));
    let out = p.same(&[], "localhost/picos-bb", &["nosuchprogram"]);
    assert_eq!(out.status.code(), Some(127));
    let out = p.same(&[], "localhost/picos-bb", &["/etc"]);
    assert_eq!(out.status.code(), Some(126));
    // Killed by a signal: 128 + the signal, as natively.
    p.same(&[], "localhost/picos-bb", &["sh", "-c", "kill -9 $$"]);

    // It is a picoprocess: the runtime's image is what the host executes
    // (the program's own /proc/self/exe is the program), and the sandbox
    // is on (no_new_privs: Landlock's; runc leaves it off here).
    let name = "picos-oci-probe";
    p.detached(name, &["sleep", "60"]);
    let out = p.run(
        picos,
        &[
            "inspect",
            "--format",
            "{{.State.Pid}} {{.State.Status}}",
            name,
        ],
    );
    let inspect = text(&out);
    let mut it = inspect.split_whitespace();
    let pid: i32 = it.next().unwrap().parse().unwrap();
    assert_eq!(it.next(), Some("running"), "{inspect}");
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert!(
        exe.to_string_lossy().contains("picos-rt"),
        "the container's process runs {} (not the runtime)",
        exe.display()
    );
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    assert!(status.contains("Seccomp:\t2"), "{status}");
    // exec into it: a second picoprocess in the container's namespaces.
    let out = p.run(picos, &["exec", name, "sh", "-c", "echo in $(hostname); cat /proc/1/cmdline | wc -c; ls /proc/self/exe -l | grep -c busybox"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = text(&out);
    assert!(t.starts_with("in "), "{t}");
    assert!(t.ends_with("9\n1\n"), "{t}"); // "sleep\060\0"; exe is busybox
    let out = p.run(picos, &["exec", name, "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7));
    // ps sees it running; stop ends it (sleep as pid 1 ignores SIGTERM,
    // as natively: podman then kills it).
    let out = p.run(picos, &["ps", "--format", "{{.Names}} {{.Status}}"]);
    assert!(text(&out).contains(&format!("{name} Up")), "{}", text(&out));
    let out = p.run(picos, &["stop", "-t", "1", name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = p.run(
        picos,
        &[
            "inspect",
            "--format",
            "{{.State.Status}} {{.State.ExitCode}}",
            name,
        ],
    );
    assert_eq!(text(&out).trim(), "exited 137");
    let out = p.run(picos, &["rm", name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Signals the program handles: the handlers run.
    let name = "picos-oci-kill";
    p.detached(name, &[
        "sh",
        "-c",
        "trap 'echo got USR1' USR1; trap 'exit 5' USR2; echo ready; while true; do sleep 0.1; done",
    ]);
    // From a process exec'd into the container (as `kill -HUP 1` to make
    // a server reload), once the traps are set...
    let deadline = std::time::Instant::now() + LIMIT;
    while text(&p.run(picos, &["logs", name])) != "ready\n" {
        assert!(
            std::time::Instant::now() < deadline,
            "the shell did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = p.run(picos, &["exec", name, "sh", "-c", "kill -USR1 1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    while text(&p.run(picos, &["logs", name])) != "ready\ngot USR1\n" {
        assert!(std::time::Instant::now() < deadline, "USR1 did not arrive");
        std::thread::sleep(Duration::from_millis(50));
    }
    // ...and from the engine.
    let out = p.run(picos, &["kill", "--signal", "USR2", name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = p.run(picos, &["wait", name]);
    assert_eq!(text(&out).trim(), "5");
    let out = p.run(picos, &["logs", name]);
    assert_eq!(text(&out), "ready\ngot USR1\n");
    p.run(picos, &["rm", "-f", name]);

    // pause and unpause (the cgroup freezer): a paused ticker prints
    // nothing, and goes on once unpaused.
    let name = "picos-oci-pause";
    p.detached(
        name,
        &["sh", "-c", "while true; do echo tick; sleep 0.05; done"],
    );
    let ticks = || text(&p.run(picos, &["logs", name])).lines().count();
    let deadline = std::time::Instant::now() + LIMIT;
    while ticks() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the ticker did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = p.run(picos, &["pause", name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = p.run(picos, &["inspect", "--format", "{{.State.Status}}", name]);
    assert_eq!(text(&out).trim(), "paused");
    // Lines printed just before the freeze may still be on their way to
    // the log: wait until it has been still for a second...
    let mut before = ticks();
    let mut still = std::time::Instant::now();
    while still.elapsed() < Duration::from_secs(1) {
        assert!(
            std::time::Instant::now() < deadline,
            "the log did not settle"
        );
        std::thread::sleep(Duration::from_millis(100));
        let now = ticks();
        if now != before {
            before = now;
            still = std::time::Instant::now();
        }
    }
    // ...then it stays so.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(ticks(), before, "a paused container ran");
    let out = p.run(picos, &["unpause", name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    while ticks() == before {
        assert!(
            std::time::Instant::now() < deadline,
            "the ticker did not resume"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    p.run(picos, &["rm", "-f", "-t", "0", name]);

    // `podman update` (the runtime's `update`): new limits in the running
    // container's cgroup, the same as with runc.
    let mut seen = Vec::new();
    for runtime in [p.runc.as_path(), picos] {
        let name = "picos-test-update";
        p.detached_with(runtime, name, &["localhost/picos-bb", "sleep", "60"]);
        let out = p.run(
            runtime,
            &[
                "update",
                "--memory",
                "64m",
                "--cpu-shares",
                "512",
                "--cpu-quota",
                "50000",
                "--cpu-period",
                "100000",
                name,
            ],
        );
        assert!(
            out.status.success(),
            "update: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = p.run(
            runtime,
            &[
                "exec",
                name,
                "cat",
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "/sys/fs/cgroup/cpu/cpu.shares",
                "/sys/fs/cgroup/cpu/cpu.cfs_quota_us",
            ],
        );
        seen.push(text(&out));
        p.run(runtime, &["rm", "-f", "-t", "0", name]);
    }
    // cgroup v2 names the files otherwise; this host's podman uses v1.
    if !seen[0].is_empty() {
        assert_eq!(seen[0], "67108864\n512\n50000\n", "runc");
    }
    assert_eq!(seen[1], seen[0], "picos (right: runc)");

    // stdin and stdout without a terminal (-i).
    for runtime in [p.runc.as_path(), picos] {
        let mut c = p.cmd(runtime);
        c.args(["run", "--rm", "-i", "--network", "none"])
            .args(ULIMITS)
            .args(["localhost/picos-bb", "sh", "-c", "wc -l; cat /dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"one\ntwo\nthree\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(text(&out).trim(), "3", "{runtime:?}");
    }

    // A terminal (-t): podman gives the runtime a console socket, over
    // which the runtime sends the master of the pty it made for the
    // container (process.terminal). script(1) gives podman a terminal.
    if which("script").is_some() {
        let mut outs = Vec::new();
        for runtime in [p.runc.as_path(), picos] {
            // (The test's paths have no characters the shell would split.)
            let line = format!(
                "podman {} run --rm -t --network none {} localhost/picos-bb \
                 sh -c 'tty; test -t 0 && test -t 1 && echo terminal; exit 6'",
                p.global_args(runtime).join(" "),
                ULIMITS.join(" ")
            );
            let out = output_within(
                Command::new("script")
                    .args(["-qec", &line, "/dev/null"])
                    .stdin(Stdio::null()),
                LIMIT,
            );
            outs.push((text(&out).replace('\r', ""), out.status.code()));
        }
        assert_eq!(outs[1], outs[0], "-t: picos (left) vs runc (right)");
        assert_eq!(outs[1].1, Some(6), "{:?}", outs[1]);
        assert!(outs[1].0.contains("/dev/pts/0\nterminal"), "{:?}", outs[1]);
    } else {
        eprintln!("-t skipped: script(1) (util-linux) is not installed");
    }

    // A bind mount (-v): the container writes there, the host sees it.
    let vol = p.dir.path().join("vol");
    std::fs::create_dir_all(&vol).unwrap();
    std::fs::write(vol.join("in"), "from the host\n").unwrap();
    let v = format!("{}:/data", vol.display());
    let out = p.same(
        &["-v", &v],
        "localhost/picos-bb",
        &[
            "sh",
            "-c",
            "cat /data/in; echo from the container > /data/out; ls /data",
        ],
    );
    assert_eq!(text(&out), "from the host\nin\nout\n");
    assert_eq!(
        std::fs::read_to_string(vol.join("out")).unwrap(),
        "from the container\n"
    );
    // ...read-only (:ro): refused, as natively.
    let v = format!("{}:/data:ro", vol.display());
    p.same(
        &["-v", &v],
        "localhost/picos-bb",
        &[
            "sh",
            "-c",
            "echo x > /data/in 2>/dev/null || echo refused; cat /data/in",
        ],
    );
    // --read-only: the root cannot be written, /tmp (podman's tmpfs) can.
    let out = p.same(
        &["--read-only"],
        "localhost/picos-bb",
        &[
            "sh",
            "-c",
            "touch /x 2>/dev/null || echo root read-only; touch /tmp/y && echo tmp ok",
        ],
    );
    assert_eq!(text(&out), "root read-only\ntmp ok\n");

    // --tmpfs: a tmpfs of the container's (podman's tmpcopyup), writable.
    let out = p.same(
        &["--tmpfs", "/scratch"],
        "localhost/picos-bb",
        &[
            "sh",
            "-c",
            "echo x > /scratch/f && cat /scratch/f; grep -c ' /scratch tmpfs ' /proc/mounts",
        ],
    );
    assert_eq!(text(&out), "x\n1\n");

    // python3 (Debian's, with its libraries copied into the image).
    if let Some(py) = python_root(p.dir.path()) {
        p.import(&py, "localhost/picos-py");
        let script = "import json, hashlib, os, sqlite3, subprocess, tempfile\n\
             d = tempfile.mkdtemp()\n\
             db = sqlite3.connect(os.path.join(d, 'x.db'))\n\
             db.execute('create table t(a)'); db.executemany('insert into t values (?)', [(i,) for i in range(100)])\n\
             print(db.execute('select sum(a) from t').fetchone()[0])\n\
             print(hashlib.sha256(b'picos').hexdigest()[:16], json.dumps({'a': [1, 2]}))\n\
             print(subprocess.run(['python3', '-c', 'print(6*7)'], capture_output=True, text=True).stdout.strip())\n";
        let out = p.same(&[], "localhost/picos-py", &["python3", "-c", script]);
        assert!(
            text(&out).starts_with("4950\n"),
            "{}{}",
            text(&out),
            String::from_utf8_lossy(&out.stderr)
        );

        // The spec's seccomp profile: podman's default one, and one given
        // with --security-opt (an errno for uname, one for getpriority
        // with its second argument at least 5000), applied as runc
        // applies them, after an execve too. (Calls that picos's own
        // filter refuses and the default profile allows, such as
        // unshare(CLONE_NEWUSER), are not asked: docs/OCI.md.)
        let profile = p.dir.path().join("profile.json");
        std::fs::write(
            &profile,
            r#"{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
                 {"names": ["uname", "sysinfo"], "action": "SCMP_ACT_ERRNO", "errnoRet": 18},
                 {"names": ["getpriority"], "action": "SCMP_ACT_ERRNO", "errnoRet": 22,
                  "args": [{"index": 1, "value": 5000, "op": "SCMP_CMP_GE"}]}]}"#,
        )
        .unwrap();
        let script = "import ctypes, os, subprocess, sys\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             def call(nr, *a):\n    ctypes.set_errno(0); r = libc.syscall(nr, *a)\n    \
             return r if r != -1 else -ctypes.get_errno()\n\
             u = 'import os\\ntry: os.uname(); print(\"ok\")\\nexcept OSError as e: print(e.errno)'\n\
             exec(u)\n\
             print(call(140, 0, 0) >= 0, call(140, 0, 4999) , call(140, 0, 5000))\n\
             if sys.argv[1:] == ['default']: print(call(248, 0, 0, 0, 0, 0), call(135, 0x0400000))\n\
             print(subprocess.run([sys.executable, '-c', u], capture_output=True, text=True).stdout.strip())\n";
        // add_key and a personality that podman's default profile refuses
        // (ENOSYS), which the custom one would leave to picos's filter.
        let out = p.same(
            &[],
            "localhost/picos-py",
            &["python3", "-c", script, "default"],
        );
        assert_eq!(
            text(&out),
            "ok\nTrue -3 -3\n-38 -38\nok\n",
            "default profile"
        );
        let opt = format!("seccomp={}", profile.display());
        let out = p.same(
            &["--security-opt", &opt],
            "localhost/picos-py",
            &["python3", "-c", script],
        );
        assert_eq!(text(&out), "18\nTrue -3 -22\n18\n", "custom profile");
        // A process `exec`'d into the container is held by the profile too.
        let mut seen = Vec::new();
        for runtime in [p.runc.as_path(), Path::new(PICOS)] {
            let name = "picos-test-seccomp-exec";
            p.detached_with(
                runtime,
                name,
                &[
                    "--security-opt",
                    &opt,
                    "localhost/picos-py",
                    "python3",
                    "-c",
                    "import time; time.sleep(60)",
                ],
            );
            let out = p.run(runtime, &["exec", name, "python3", "-c", script]);
            seen.push(text(&out));
            p.run(runtime, &["rm", "-f", "-t", "0", name]);
        }
        assert_eq!(seen[0], "18\nTrue -3 -22\n18\n", "exec, runc");
        assert_eq!(seen[1], seen[0], "exec, picos (right: runc)");
        profile_holds_around_the_runtime(&p, &opt);
    } else {
        eprintln!("python3 image skipped: Debian's python3 is not installed");
    }
}

/// The custom profile (`opt`) of `podman_runs_containers_as_picoprocesses`
/// is enforced by the kernel too: a call it refuses, made through a
/// `syscall; ret` gadget in the runtime's text (tests/oci/bypass.c), as a
/// program that has taken the runtime over would, gets the profile's
/// answer, as under runc, where the same program calls directly. Without
/// the profile the same call succeeds (getpriority: ESRCH for a process
/// that is not there, sysinfo: 0), so an escape would show.
fn profile_holds_around_the_runtime(p: &Podman, opt: &str) {
    let dir = p.dir.path().join("bypass");
    std::fs::create_dir_all(&dir).unwrap();
    let src = workspace().join("tests/oci/bypass.c");
    let out = Command::new("gcc")
        .args(["-static", "-mno-red-zone", "-O1", "-o"])
        .arg(dir.join("bypass"))
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let vol = format!("{}:/t:ro", dir.display());
    let calls: [(&[&str], &str, &str); 2] = [
        // getpriority(PRIO_PROCESS, 5000): the profile's errno 22 for a
        // second argument of at least 5000.
        (&["/t/bypass", "140", "0", "5000"], "-22\n", "-3\n"),
        // sysinfo: refused outright (errno 18).
        (&["/t/bypass", "99", "buf"], "-18\n", "0\n"),
    ];
    for (args, refused, allowed) in calls {
        let out = p.same(
            &["--security-opt", opt, "-v", &vol],
            "localhost/picos-bb",
            args,
        );
        assert_eq!(text(&out), refused, "{args:?} around the runtime");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.lines().last(),
            Some("bypass"),
            "{args:?}: the call went around the runtime"
        );
        let out = p.same(
            &["--security-opt", "seccomp=unconfined", "-v", &vol],
            "localhost/picos-bb",
            args,
        );
        assert_eq!(text(&out), allowed, "{args:?} without a profile");
    }
}

/// The paths of the keys of a JSON value (objects only, down to `depth`
/// levels).
fn key_paths(v: &serde_json::Value, prefix: &str, depth: usize, out: &mut Vec<String>) {
    if let (Some(m), true) = (v.as_object(), depth > 0) {
        for (k, v) in m {
            let p = format!("{prefix}/{k}");
            out.push(p.clone());
            key_paths(v, &p, depth - 1, out);
        }
    }
}

/// `events`, as runc's: `--stats` prints one "stats" event with runc's
/// fields (compared with runc's own for a container of each), a stream
/// ends when its container stops, and an OOM kill in the container is an
/// "oom" event.
#[test]
fn events_report_usage_as_runc_does() {
    let Some(p) = Podman::new() else { return };
    let bb = busybox_root(p.dir.path());
    p.import(&bb, "localhost/picos-bb");
    let runtimes = [
        (p.runc.as_path(), "/run/runc"),
        (Path::new(PICOS), "/run/picos"),
    ];
    // The state directory of each runtime: its default (podman passes
    // no --root).
    let events = |runtime: &Path, root: &str, args: &[&str]| {
        let mut c = Command::new(runtime);
        c.args(["--root", root, "events"]).args(args);
        output_within(&mut c, LIMIT)
    };
    let mut shapes = Vec::new();
    for (i, (runtime, root)) in runtimes.iter().enumerate() {
        let name = format!("picos-test-events-{i}");
        p.detached_with(runtime, &name, &["localhost/picos-bb", "sleep", "60"]);
        let id = text(&p.run(runtime, &["inspect", "--format", "{{.Id}}", &name]));
        let out = events(runtime, root, &["--stats", id.trim()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["type"], "stats");
        assert_eq!(v["id"], id.trim());
        assert_eq!(v["data"]["pids"]["current"], 1, "{v}");
        assert!(v["data"]["cpu"]["usage"]["total"].as_u64() > Some(0), "{v}");
        assert!(
            v["data"]["memory"]["usage"]["usage"].as_u64() > Some(0),
            "{v}"
        );
        let mut keys = Vec::new();
        key_paths(&v["data"], "", 3, &mut keys);
        // memory.cache is left out when zero (runc's omitempty).
        keys.retain(|k| k != "/memory/cache" && !k.starts_with("/memory/raw/"));
        keys.sort();
        shapes.push(keys);
        // A stream ends when its container stops.
        let mut stream = EventStream::start(runtime, root, id.trim());
        assert!(stream
            .next()
            .is_some_and(|l| l.contains("\"type\":\"stats\"")));
        p.run(runtime, &["stop", "-t", "0", &name]);
        let rest = stream.rest();
        assert!(
            rest.iter().all(|l| l.contains("\"type\":\"stats\"")),
            "{runtime:?}: {rest:?}"
        );
        p.run(runtime, &["rm", "-f", "-t", "0", &name]);
    }
    assert_eq!(
        shapes[1], shapes[0],
        "picos's fields (left), runc's (right)"
    );

    // An OOM kill: a container of 32 MiB whose tail(1) holds a line of
    // 200 MB once the stream has started (its first line) and said so
    // (the file /tmp/go); the stream has an "oom" event, with runc as with
    // picos, and ends with the container.
    for (i, (runtime, root)) in runtimes.iter().enumerate() {
        let name = format!("picos-test-events-oom-{i}");
        p.detached_with(
            runtime,
            &name,
            &[
                "--memory",
                "32m",
                "--memory-swap",
                "32m",
                "localhost/picos-bb",
                "sh",
                "-c",
                "until [ -e /tmp/go ]; do sleep 0.1; done; \
                 head -c 200000000 /dev/zero | busybox tail -n 1 | wc -c",
            ],
        );
        let id = text(&p.run(runtime, &["inspect", "--format", "{{.Id}}", &name]));
        let mut stream = EventStream::start(runtime, root, id.trim());
        assert!(stream.next().is_some());
        let out = p.run(runtime, &["exec", &name, "touch", "/tmp/go"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines = stream.rest();
        let oom: serde_json::Value = serde_json::json!({"type": "oom", "id": id.trim()});
        assert!(
            lines
                .iter()
                .any(|l| serde_json::from_str::<serde_json::Value>(l).ok() == Some(oom.clone())),
            "{runtime:?}: {lines:?}"
        );
        p.run(runtime, &["rm", "-f", "-t", "0", &name]);
    }
}

/// `RUNTIME --root ROOT events --interval 200ms ID`, read line by line;
/// killed if it is still running after [`LIMIT`] (a hang).
struct EventStream {
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    child: std::process::Child,
    done: std::sync::mpsc::Sender<()>,
}

impl EventStream {
    fn start(runtime: &Path, root: &str, id: &str) -> EventStream {
        use std::io::BufRead;
        let mut child = Command::new(runtime)
            .args(["--root", root, "events", "--interval", "200ms", id])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let (done, rx) = std::sync::mpsc::channel::<()>();
        let pid = child.id() as i32;
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(LIMIT) {
                // SAFETY: kill(2) has no memory effects; the child is not
                // reaped until `rest` has read the stream to its end,
                // which this kill brings about.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        });
        EventStream { lines, child, done }
    }

    /// The next line, None at the end.
    fn next(&mut self) -> Option<String> {
        self.lines.next().map(|l| l.unwrap())
    }

    /// The lines to the end of the stream; it must exit with 0.
    fn rest(mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(l) = self.next() {
            out.push(l);
        }
        let st = self.child.wait().unwrap();
        let _ = self.done.send(());
        assert!(st.success(), "events ended with {st} (killed: a hang)");
        out
    }
}

/// The runtime's own command line: errors are clear, and the state of a
/// container that is not there is an error, not an empty answer.
#[test]
fn oci_commands_report_errors_clearly() {
    let root = tempfile::Builder::new()
        .prefix("picos-oci-root-")
        .tempdir()
        .unwrap();
    let r = root.path().to_str().unwrap();
    let out = Command::new(PICOS)
        .args(["--root", r, "state", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "picos: container nosuch does not exist\n"
    );
    // delete --force of a container that is gone succeeds (as runc's).
    let out = Command::new(PICOS)
        .args(["--root", r, "delete", "--force", "nosuch"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // The error also goes to --log, as JSON with --log-format json.
    let log = root.path().join("log.json");
    let out = Command::new(PICOS)
        .args([
            "--root",
            r,
            "--log",
            log.to_str().unwrap(),
            "--log-format",
            "json",
        ])
        .args(["kill", "nosuch", "TERM"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = std::fs::read_to_string(&log).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(v["level"], "error");
    assert_eq!(v["msg"], "container nosuch does not exist");
    // An id that is no file name.
    let out = Command::new(PICOS)
        .args(["--root", r, "create", "--bundle", r, "../c1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("picos: invalid container id \"../c1\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A bundle without config.json.
    let out = Command::new(PICOS)
        .args(["--root", r, "create", "--bundle", r, "c1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("config.json"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The systemd cgroup driver is refused with what to use instead.
    let out = Command::new(PICOS)
        .args(["--systemd-cgroup", "--root", r, "state", "c1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cgroupfs"));
    // A seccomp profile that asks for a seccomp agent: refused at create,
    // with the reason.
    let bundles = tempfile::tempdir().unwrap();
    let b = bundles.path().join("agent");
    std::fs::create_dir_all(b.join("rootfs")).unwrap();
    std::fs::write(
        b.join("config.json"),
        r#"{"ociVersion": "1.0.2", "process": {"args": ["/bin/true"], "cwd": "/", "user": {"uid": 0, "gid": 0}},
            "root": {"path": "rootfs"},
            "linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
              {"names": ["read"], "action": "SCMP_ACT_NOTIFY"}]}}}"#,
    )
    .unwrap();
    let out = Command::new(PICOS)
        .args(["--root", r, "create", "--bundle"])
        .arg(&b)
        .arg("agent")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SCMP_ACT_NOTIFY"), "{err}");
    // update: a bad value, and a container that is not there.
    let out = Command::new(PICOS)
        .args(["--root", r, "update", "--memory", "12x", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "picos: update: --memory 12x\n"
    );
    let out = Command::new(PICOS)
        .args(["--root", r, "update", "--pids-limit", "10", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "picos: container nosuch does not exist\n"
    );
    // features: JSON naming what it supports.
    let out = Command::new(PICOS).arg("features").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["linux"]["cgroup"]["v1"], true);
    assert!(v["linux"]["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == "CAP_CHOWN"));
    assert_eq!(v["linux"]["seccomp"]["enabled"], true);
    assert!(v["linux"]["seccomp"]["operators"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == "SCMP_CMP_MASKED_EQ"));
    // `picos run PROGRAM` is still picos's own run.
    let out = Command::new(PICOS)
        .args(["run", "/bin/echo", "-d", "--bundle"])
        .output()
        .unwrap();
    assert_eq!(text(&out), "-d --bundle\n");
}

/// A containerd of the test's own (its root, state and socket in a
/// temporary directory), stopped when dropped.
struct Containerd {
    dir: tempfile::TempDir,
    daemon: std::process::Child,
    namespace: String,
}

impl Containerd {
    fn start() -> Option<Containerd> {
        for prog in ["containerd", "ctr", "containerd-shim-runc-v2"] {
            if which(prog).is_none() {
                eprintln!("skipped: {prog} is not installed (apt-get install containerd)");
                return None;
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("picos-ctd-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        let config = d.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "version = 2\nroot = \"{0}/root\"\nstate = \"{0}/state\"\n\
                 disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
                 [grpc]\n  address = \"{0}/c.sock\"\n",
                d.display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(d.join("containerd.log")).unwrap();
        let daemon = Command::new("containerd")
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let c = Containerd {
            dir,
            daemon,
            namespace: format!("picos-test-{}", std::process::id()),
        };
        // Up when it answers (a busy machine may take a while).
        let deadline = std::time::Instant::now() + LIMIT;
        while !c.ctr(&["version"]).status.success() {
            assert!(
                std::time::Instant::now() < deadline,
                "containerd did not start: {}",
                std::fs::read_to_string(c.dir.path().join("containerd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(c)
    }

    fn ctr(&self, args: &[&str]) -> Output {
        let sock = self.dir.path().join("c.sock");
        output_within(
            Command::new("ctr")
                .arg("--address")
                .arg(&sock)
                .args(["--namespace", &self.namespace])
                .args(args)
                .stdin(Stdio::null()),
            LIMIT,
        )
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        // The runc shim's state directory for the namespace (empty now).
        let _ = std::fs::remove_dir(format!("/run/containerd/runc/{}", self.namespace));
    }
}

/// containerd's runc shim with picos as its runc (`ctr run --runc-binary`,
/// as containerd's `BinaryName` option does: docs/OCI.md): the shim's
/// global options (`--root`, `--log`, `--log-format json`), `create`,
/// `start`, `exec`, `ps --format json`, `kill`, `delete`.
#[test]
fn containerd_runs_containers_with_picos() {
    let Some(p) = Podman::new() else { return };
    let Some(c) = Containerd::start() else { return };
    // The image: busybox, made by podman and saved as an OCI archive.
    let bb = busybox_root(p.dir.path());
    p.import(&bb, "localhost/picos-bb");
    let archive = c.dir.path().join("bb.tar");
    let out = p.run(
        &p.runc,
        &[
            "save",
            "--format",
            "oci-archive",
            "-o",
            archive.to_str().unwrap(),
            "localhost/picos-bb",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = c.ctr(&["images", "import", archive.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let image = "localhost/picos-bb:latest";
    let picos = PICOS;
    let runc = p.runc.to_str().unwrap();

    // The same output and exit code as with runc, with containerd's
    // default seccomp profile (`--seccomp`: applied by the library OS and,
    // but for the runtime's own calls, by the kernel).
    let script = "echo hi \"$0\"; id; pwd; exit 3";
    let native = c.ctr(&[
        "run",
        "--rm",
        "--seccomp",
        "--runc-binary",
        runc,
        image,
        "n1",
        "sh",
        "-c",
        script,
        "x",
    ]);
    let under = c.ctr(&[
        "run",
        "--rm",
        "--seccomp",
        "--runc-binary",
        picos,
        image,
        "p1",
        "sh",
        "-c",
        script,
        "x",
    ]);
    assert_eq!(
        (text(&under), under.status.code()),
        (text(&native), native.status.code()),
        "picos (left) vs runc (right): {}",
        String::from_utf8_lossy(&under.stderr)
    );
    assert_eq!(under.status.code(), Some(3));
    let out = c.ctr(&[
        "run",
        "--rm",
        "--runc-binary",
        picos,
        image,
        "p2",
        "grep",
        "NoNewPrivs",
        "/proc/self/status",
    ]);
    assert_eq!(text(&out), "NoNewPrivs:\t1\n");

    // A running task: exec, ps, kill.
    let out = c.ctr(&[
        "run",
        "-d",
        "--runc-binary",
        picos,
        image,
        "p3",
        "sleep",
        "60",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = c.ctr(&[
        "task",
        "exec",
        "--exec-id",
        "e1",
        "p3",
        "sh",
        "-c",
        "echo in exec; exit 4",
    ]);
    assert_eq!(
        (text(&out).as_str(), out.status.code()),
        ("in exec\n", Some(4))
    );
    let out = c.ctr(&["task", "ps", "p3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = text(&out);
    let tasks = c.ctr(&["task", "ls"]);
    let pid = text(&tasks)
        .lines()
        .find(|l| l.starts_with("p3 "))
        .and_then(|l| l.split_whitespace().nth(1).map(String::from))
        .unwrap();
    assert!(listed.lines().any(|l| l.starts_with(&pid)), "{listed}");
    // Its metrics, which the shim reads from the container's cgroup.
    let out = c.ctr(&["task", "metrics", "p3"]);
    assert!(
        out.status.success()
            && text(&out)
                .lines()
                .any(|l| l.split_whitespace().eq(["pids.current", "1"])),
        "{}{}",
        text(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = c.ctr(&["task", "kill", "--signal", "KILL", "p3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The task stops, then goes.
    let deadline = std::time::Instant::now() + LIMIT;
    while !text(&c.ctr(&["task", "ls"])).contains("STOPPED") {
        assert!(std::time::Instant::now() < deadline, "p3 did not stop");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = c.ctr(&["task", "rm", "p3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = c.ctr(&["container", "rm", "p3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    c.ctr(&["images", "rm", image]);
}

/// runc's `run` (create, start, wait, delete) of a bundle made by
/// `runc spec`, without an engine: the exit status passes through and
/// nothing is left under `--root`.
#[test]
fn runc_style_run_of_a_bundle() {
    let Some(p) = Podman::new() else { return };
    let bundle = p.dir.path().join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::rename(busybox_root(p.dir.path()), bundle.join("rootfs")).unwrap();
    let st = Command::new(&p.runc)
        .arg("spec")
        .current_dir(&bundle)
        .status()
        .unwrap();
    assert!(st.success(), "runc spec");
    let config = bundle.join("config.json");
    let mut spec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    spec["process"]["terminal"] = false.into();
    spec["process"]["args"] = serde_json::json!(["sh", "-c", "echo in $(hostname); exit 9"]);
    std::fs::write(&config, spec.to_string()).unwrap();
    let root = p.dir.path().join("state");
    let out = output_within(
        Command::new(PICOS)
            .arg("--root")
            .arg(&root)
            .args(["run", "--bundle"])
            .arg(&bundle)
            .arg("picos-run-test")
            .stdin(Stdio::null()),
        LIMIT,
    );
    assert_eq!(
        (text(&out).as_str(), out.status.code()),
        ("in runc\n", Some(9)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}
