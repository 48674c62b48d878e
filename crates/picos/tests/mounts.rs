//! Chroot mounts from the manifest (`[[fs.mounts]]`, docs/FILESYSTEM.md):
//!
//! - attacks that reach a file outside the mounts natively must fail under
//!   picos (tests/fs/escape.c);
//! - a busybox shell script gives the same output under picos as natively
//!   in a real mount namespace and chroot with the same mounts (needs root
//!   and `unshare`; skipped, saying why, otherwise);
//! - python3 and sqlite3 with `/` read-only and a writable mount give the
//!   same output as natively, and cannot write elsewhere;
//! - the CLI's errors for mounts it cannot use.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{is_root, text, workspace};

const PICOS: &str = env!("CARGO_BIN_EXE_picos");

/// A guest tree: `root` shown at `/`, with `data` at /data (read-write),
/// `rodir` at /ro (read-only, holding `f`), `other` at /other, and the
/// host's /proc and /dev; `secret` and a listening Unix socket outside all
/// of them.
struct Tree {
    dir: tempfile::TempDir,
    _listener: std::os::unix::net::UnixListener,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for sub in [
            "root/bin",
            "root/data",
            "root/ro",
            "root/other",
            "root/proc",
            "root/dev",
            "root/etc",
            "data",
            "rodir",
            "other",
        ] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::write(d.join("root/etc/hostname"), "guest\n").unwrap();
        std::fs::write(d.join("rodir/f"), "read-only\n").unwrap();
        std::fs::write(d.join("secret"), "SECRET\n").unwrap();
        let listener = std::os::unix::net::UnixListener::bind(d.join("outside.sock")).unwrap();
        Tree {
            dir,
            _listener: listener,
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn manifest(&self) -> PathBuf {
        let m = self.path("manifest.toml");
        let p = |s: &str| self.path(s).display().to_string();
        std::fs::write(
            &m,
            format!(
                "[loader]\ninsecure__use_cmdline_argv = true\n\n\
                 [[fs.mounts]]\npath = \"/\"\nuri = \"file:{}\"\n\n\
                 [[fs.mounts]]\npath = \"/data\"\nuri = \"file:{}\"\n\n\
                 [[fs.mounts]]\npath = \"/ro\"\nuri = \"file:{}\"\nreadonly = true\n\n\
                 [[fs.mounts]]\npath = \"/other\"\nuri = \"file:{}\"\n\n\
                 [[fs.mounts]]\npath = \"/proc\"\nuri = \"file:/proc\"\n\n\
                 [[fs.mounts]]\npath = \"/dev\"\nuri = \"file:/dev\"\n",
                p("root"),
                p("data"),
                p("rodir"),
                p("other")
            ),
        )
        .unwrap();
        m
    }

    /// Puts a copy of host file `src` at `/bin/NAME` in the guest tree.
    fn install(&self, src: &Path, name: &str) {
        let dst = self.path("root/bin").join(name);
        std::fs::copy(src, &dst).unwrap();
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Compiles C program `src` (relative to the workspace) to `out` with
/// `-O1` and `flags`.
fn compile(src: &str, out: &Path, flags: &[&str]) {
    let st = Command::new("gcc")
        .arg("-O1")
        .args(flags)
        .arg("-o")
        .arg(out)
        .arg(workspace().join(src))
        .status()
        .expect("gcc");
    assert!(st.success(), "compiling {src}");
}

fn compile_static(src: &str, out: &Path) {
    compile(src, out, &["-static"]);
}

/// Asserts that a run under picos (`out`) succeeded and printed what the
/// native run printed; otherwise names the first line that differs.
fn assert_same_output(name: &str, out: &Output, native: &Output) {
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (a, b) = (text(out), text(native));
    if a != b {
        let first = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .unwrap_or_else(|| a.lines().count().min(b.lines().count()));
        panic!(
            "{name}: picos and native differ from line {}:\npicos:  {:?}\nnative: {:?}",
            first + 1,
            a.lines().nth(first),
            b.lines().nth(first)
        );
    }
}

/// What each attack of tests/fs/escape.c gives under picos.
const BLOCKED: &[(&str, &str)] = &[
    ("absolute path", "ENOENT"),
    ("dot-dot from /", "ENOENT"),
    ("dot-dot from a directory descriptor", "ENOENT"),
    ("symlink to /", "ENOENT"),
    ("relative symlink upwards", "ENOENT"),
    ("symlink to the file", "ENOENT"),
    ("/proc/self/root", "ENOENT"),
    ("/proc/self/cwd", "ENOENT"),
    ("/proc/self/fd/N", "ENOENT"),
    ("hard link to the file", "ENOENT"),
    ("connect to a socket outside", "ENOENT"),
    ("create on a read-only mount", "EROFS"),
    ("write to a read-only mount", "EROFS"),
    ("chmod on a read-only mount", "EROFS"),
    ("fchmod of a read-only mount's file", "EROFS"),
    ("unlink on a read-only mount", "EROFS"),
    ("rename between mounts", "EXDEV"),
    ("descriptors the program did not open", "ENOENT"),
    // name_to_handle_at looks the path up first: not in the guest.
    ("open_by_handle_at", "ENOENT"),
    ("mount", "EPERM"),
    ("chroot", "EPERM"),
];

/// Attacks that need privileges natively (root).
const PRIVILEGED: &[&str] = &["open_by_handle_at", "mount", "chroot"];

/// Every attack that reaches outside natively fails under picos.
#[test]
fn escapes_from_chroot_mounts_fail() {
    let t = Tree::new();
    let prog = t.path("root/bin/escape");
    compile_static("tests/fs/escape.c", &prog);
    let secret = t.path("secret");
    let sock = t.path("outside.sock");
    // Natively (in a mount namespace of its own when root, so that the
    // mount and chroot attacks change nothing outside the test).
    let mut native = if is_root() {
        let mut c = Command::new("unshare");
        c.arg("-m").arg(&prog);
        c
    } else {
        Command::new(&prog)
    };
    let native = native
        .arg(&secret)
        .arg(t.path("data"))
        .arg(t.path("rodir"))
        .arg(t.path("other"))
        .arg(&sock)
        .output()
        .unwrap();
    let native = text(&native);
    for (name, _) in BLOCKED {
        let line = native
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no line for {name} natively:\n{native}"));
        // Natively the program sees the host's tree: every attack gets
        // through (the privileged ones only as root), but the descriptor
        // scan, which finds nothing of the runtime's there.
        let expect_escape = *name != "descriptors the program did not open"
            && (is_root() || !PRIVILEGED.contains(name));
        if expect_escape {
            assert_eq!(line, format!("{name}: escaped"), "natively:\n{native}");
        }
    }
    // The native run changed the read-only directory; as it was.
    std::fs::write(t.path("rodir/f"), "read-only\n").unwrap();
    let _ = std::fs::remove_file(t.path("rodir/new"));
    let out = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(t.manifest())
        .arg("/bin/escape")
        .arg(&secret)
        .args(["/data", "/ro", "/other"])
        .arg(&sock)
        .output()
        .unwrap();
    let expected: String = BLOCKED
        .iter()
        .map(|(n, e)| format!("{n}: blocked ({e})\n"))
        .collect();
    assert_eq!(
        text(&out),
        expected,
        "under picos (stderr: {})",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
    // Nothing reached the host outside the mounts.
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "SECRET\n");
    assert_eq!(
        std::fs::read_to_string(t.path("rodir/f")).unwrap(),
        "read-only\n"
    );
    assert!(!t.path("rodir/new").exists());
}

/// A shell script's view of the mounts: the same natively, in a mount
/// namespace with bind mounts and a chroot, as under picos.
const SCRIPT: &str = r#"
cd /data && pwd
echo hello > f && cat f && ls
mkdir -p d/e && touch d/e/g && find /data | sort
ln -s /ro/f lnk && cat lnk && readlink lnk
ln -s ../../../../../ro up && ls up
cd up && pwd && cat f
cd /data
cat /data/up/../etc/hostname 2>&1 || echo "up/..: $?"
ln f hard && stat -c '%h %s %F' f hard
mv f /other/f 2>&1; ls /other /data
echo x > /ro/new 2>&1 || echo "create: $?"
rm /ro/f 2>&1 || echo "rm: $?"
touch /ro/f 2>&1 || echo "touch: $?"
test -w /ro/f && echo writable || echo not-writable
rmdir /data 2>&1 || echo "rmdir: $?"
mv /data /moved 2>&1 || echo "mv: $?"
cat /../../../etc/hostname
cd / && cd .. && pwd && ls
cd /data/d/e && readlink /proc/self/cwd && pwd -P
cd /data
ln -s loop1 loop2 && ln -s loop2 loop1 && cat loop1 2>&1 || echo "loop: $?"
ln -s nowhere dangling && echo new > dangling && cat nowhere
mkdir /data/sub && mv /data/d /data/sub/ && find /data/sub | sort
rm -r /data/sub && ls /data
echo hi | cat /dev/stdin
ls /proc/self/fd/ >/dev/null && echo proc-fd-listed
stat -c '%F' /dev/null /proc/self/fd/0
"#;

#[test]
fn busybox_sees_the_mounts_as_in_a_real_chroot() {
    const T: &str = "busybox_sees_the_mounts_as_in_a_real_chroot";
    if !Path::new("/bin/busybox").is_file() {
        println!("SKIP {T}: /bin/busybox not installed: apt-get install busybox-static");
        return;
    }
    if !is_root() || !Path::new("/usr/bin/unshare").is_file() {
        println!(
            "SKIP {T}: the native side needs root and unshare(1) for its bind mounts and chroot"
        );
        return;
    }
    let run = |picos: bool| -> String {
        let t = Tree::new();
        t.install(Path::new("/bin/busybox"), "busybox");
        let out = if picos {
            Command::new(PICOS)
                .args(["run", "-m"])
                .arg(t.manifest())
                .args(["/bin/busybox", "sh", "-c", SCRIPT])
                .output()
                .unwrap()
        } else {
            let p = |s: &str| t.path(s).display().to_string();
            let setup = format!(
                "set -e; r={root}; mount --bind {data} $r/data; mount --bind {ro} $r/ro; \
                 mount -o remount,bind,ro $r/ro; mount --bind {other} $r/other; \
                 mount --bind /proc $r/proc; mount --bind /dev $r/dev; \
                 exec chroot $r /bin/busybox sh -c \"$0\"",
                root = p("root"),
                data = p("data"),
                ro = p("rodir"),
                other = p("other"),
            );
            Command::new("unshare")
                .args(["-m", "--propagation", "private", "sh", "-c", &setup, SCRIPT])
                .output()
                .unwrap()
        };
        format!(
            "{}\n-- stderr --\n{}\n-- status {:?}",
            text(&out),
            String::from_utf8_lossy(&out.stderr),
            out.status.code()
        )
    };
    let native = run(false);
    let picos = run(true);
    if std::env::var_os("PICOS_TEST_SHOW").is_some() {
        println!("{native}");
    }
    assert_eq!(picos, native, "picos (left) vs native (right)");
    assert!(native.contains("guest\n"), "{native}");
}

/// /proc/self/mounts, /proc/mounts and /proc/self/mountinfo list the
/// manifest's mounts at their guest paths (docs/FILESYSTEM.md, "/proc"),
/// each as a bind mount of its host directory: the read-only one `ro`,
/// /proc with the host's proc type, nothing of the host's other mounts.
/// busybox's `mount` (which reads /proc/mounts) and `df` (which reads it
/// and statfs's each mount point) see the same.
#[test]
fn proc_mounts_shows_the_manifests_mounts() {
    let t = Tree::new();
    if !Path::new("/bin/busybox").is_file() {
        println!("SKIP proc_mounts_shows_the_manifests_mounts: /bin/busybox missing: apt-get install busybox-static");
        return;
    }
    t.install(Path::new("/bin/busybox"), "busybox");
    let run = |args: &[&str]| {
        let out = Command::new(PICOS)
            .args(["run", "-m"])
            .arg(t.manifest())
            .arg("/bin/busybox")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        text(&out)
    };
    let guest = ["/", "/data", "/ro", "/other", "/proc", "/dev"];
    for file in ["/proc/self/mounts", "/proc/mounts"] {
        let mounts = run(&["cat", file]);
        let points: Vec<&str> = mounts
            .lines()
            .map(|l| l.split(' ').nth(1).unwrap_or(""))
            .collect();
        assert_eq!(points, guest, "{file}:\n{mounts}");
        let ro = mounts.lines().nth(2).unwrap();
        assert!(ro.split(' ').nth(3).unwrap().starts_with("ro,"), "{ro}");
        let rw = mounts.lines().nth(1).unwrap();
        assert!(rw.split(' ').nth(3).unwrap().starts_with("rw"), "{rw}");
        let proc = mounts.lines().nth(4).unwrap();
        assert_eq!(proc.split(' ').nth(2), Some("proc"), "{proc}");
    }
    let info = run(&["cat", "/proc/self/mountinfo"]);
    let lines: Vec<Vec<&str>> = info.lines().map(|l| l.split(' ').collect()).collect();
    let points: Vec<&str> = lines.iter().map(|f| f[4]).collect();
    assert_eq!(points, guest, "{info}");
    // Ids from 1, the root's parent outside, every other's parent the
    // mount that holds its mount point (all of them: /).
    for (i, f) in lines.iter().enumerate() {
        assert_eq!(f[0], (i + 1).to_string(), "{info}");
        assert_eq!(f[1], if i == 0 { "0" } else { "1" }, "{info}");
    }
    // The root is the tree's root directory, within its host mount.
    let root_dir = t.path("root").canonicalize().unwrap();
    assert!(root_dir.to_str().unwrap().ends_with(lines[0][3]), "{info}");
    // busybox mount and df read /proc/mounts (df statfs's each point).
    let mount = run(&["mount"]);
    assert_eq!(mount.lines().count(), guest.len(), "{mount}");
    let df = run(&["df", "-P"]);
    assert!(df.lines().any(|l| l.ends_with(" /data")), "{df}");
    assert!(!df.lines().any(|l| l.ends_with(" /sys")), "{df}");
}

/// /proc/self/status, stat and statm describe the program's memory, not
/// the runtime's (whose reservation alone is tens of GiB of address
/// space): their sizes agree with each other and are within a factor of
/// two of native's for the same program.
#[test]
fn proc_self_status_describes_the_program() {
    const T: &str = "proc_self_status_describes_the_program";
    let python = "/usr/bin/python3";
    if !Path::new(python).is_file() {
        println!("SKIP {T}: {python} not installed: apt-get install python3");
        return;
    }
    let script = r#"
status = dict(l.split(":", 1) for l in open("/proc/self/status"))
kb = lambda k: int(status[k].split()[0])
stat = open("/proc/self/stat").read()
fields = stat[stat.rindex(")") + 2:].split()
statm = [int(x) for x in open("/proc/self/statm").read().split()]
vsize, rss = int(fields[20]), int(fields[21])
print(kb("VmSize"), kb("VmRSS"), kb("VmPeak"), kb("VmHWM"), kb("VmData"), vsize, rss, statm[0], statm[1])
"#;
    let parse = |o: &Output| -> Vec<u64> {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        text(o)
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect()
    };
    let native = parse(&Command::new(python).args(["-c", script]).output().unwrap());
    let picos = parse(&picos_run_with(
        "[loader]\ninsecure__use_cmdline_argv = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n",
        python,
        &["-c", script],
    ));
    let (size, rss, peak, hwm, data, vsize, stat_rss, m_size, m_rss) = (
        picos[0], picos[1], picos[2], picos[3], picos[4], picos[5], picos[6], picos[7], picos[8],
    );
    // The three files agree (each read once while Python runs, so within
    // a few pages and a few percent).
    let near = |a: u64, b: u64| a.abs_diff(b) <= 64 + a.max(b) / 10;
    assert!(
        near(vsize / 1024, size) && near(m_size * 4, size),
        "{picos:?}"
    );
    assert!(near(stat_rss * 4, rss) && near(m_rss * 4, rss), "{picos:?}");
    assert!(peak >= size && hwm >= rss, "{picos:?}");
    // Close to native's, nothing like the runtime's reservation.
    for (what, p, n) in [
        ("VmSize", size, native[0]),
        ("VmRSS", rss, native[1]),
        ("VmData", data, native[4]),
    ] {
        assert!(
            p <= 2 * n && 2 * p >= n,
            "{what}: picos {p} kB, native {n} kB"
        );
    }
}

/// Under mounts, the host's /proc shows the picoprocess tree's processes
/// only: its listing, `/proc/PID` of another process (pid 1, the caller of
/// picos) and `ps` find the tree's processes and no other, which natively
/// they all see.
#[test]
fn proc_lists_the_trees_processes_only() {
    const T: &str = "proc_lists_the_trees_processes_only";
    let python = "/usr/bin/python3";
    if !Path::new(python).is_file() {
        println!("SKIP {T}: {python} not installed: apt-get install python3");
        return;
    }
    let script = r#"
import os, subprocess
me = os.getpid()
listed = lambda: {int(p) for p in os.listdir("/proc") if p.isdigit()}
alone = listed()
child = subprocess.Popen(["/bin/sleep", "10"])
both = listed()
print("alone:", alone == {me}, "with the child:", both == {me, child.pid})
import time
deadline = time.time() + 30  # (exits as soon as the name changes; long for a busy machine)
# (Under picos a new program is named `exe` until its runtime has named it:
# docs/FILESYSTEM.md, "Known differences".)
while (name := open(f"/proc/{child.pid}/status").readline().strip()) == "Name:\texe" and time.time() < deadline:
    time.sleep(0.01)
print("child:", name)
for pid in [1, os.getppid()]:
    print(pid == 1 and "pid 1:" or "parent:", os.path.exists(f"/proc/{pid}"), os.path.exists(f"/proc/{pid}/status"))
fd = os.open("/proc", os.O_RDONLY)
print("from a descriptor:", os.path.exists(f"/proc/{child.pid}"), "1" in os.listdir(fd))
if os.path.exists("/usr/bin/ps"):
    out = subprocess.run(["/usr/bin/ps", "-e", "-o", "pid="], capture_output=True, text=True).stdout
    print("ps:", {int(p) for p in out.split()} <= {me, child.pid} | {int(p) for p in out.split()[-1:]}, len(out.split()))
child.kill()
child.wait()
"#;
    let native = Command::new(python).args(["-c", script]).output().unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    // Natively every process is there.
    assert!(
        text(&native).contains("pid 1: True True"),
        "{}",
        text(&native)
    );
    let out = picos_run_with(
        "[loader]\ninsecure__use_cmdline_argv = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n",
        python,
        &["-c", script],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected = String::from(
        "alone: True with the child: True\nchild: Name:\tsleep\npid 1: False False\n\
         parent: False False\nfrom a descriptor: True False\n",
    );
    if Path::new("/usr/bin/ps").exists() {
        // python, sleep and ps itself.
        expected.push_str("ps: True 3\n");
    }
    assert_eq!(text(&out), expected);
}

/// Another picoprocess tree runs the same runtime file (the runtime
/// cache), yet its processes are not this tree's: under mounts, /proc
/// hides them (and process_vm_readv, `kernel::vm`, refuses them), while a
/// process of this tree that exec'd is still seen. Each tree is told apart
/// by the name its runtime was exec'd by (`tree_exe`).
#[test]
fn another_trees_processes_are_not_this_trees() {
    const T: &str = "another_trees_processes_are_not_this_trees";
    let python = "/usr/bin/python3";
    if !Path::new(python).is_file() {
        println!("SKIP {T}: {python} not installed: apt-get install python3");
        return;
    }
    // Tree A: the process picos run becomes (its root), then its child.
    let mut other = Command::new(PICOS)
        .args(["run", "/bin/sh", "-c", "/bin/sleep 30; :"])
        .spawn()
        .unwrap();
    let a = other.id();
    // The root of tree A is a picoprocess once its exe is the runtime.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let exe = std::fs::read_link(format!("/proc/{a}/exe")).unwrap_or_default();
        if exe.to_string_lossy().contains("picos-rt-") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "tree A never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let script = format!(
        r#"
import os, subprocess
print("other tree:", os.path.exists("/proc/{a}"), str({a}) in os.listdir("/proc"))
child = subprocess.run(["/bin/sh", "-c", "ls -d /proc/$PPID >/dev/null && echo seen"], capture_output=True, text=True)
print("own child sees its parent:", child.stdout.strip())
"#
    );
    let out = picos_run_with(
        "[loader]\ninsecure__use_cmdline_argv = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n",
        python,
        &["-c", &script],
    );
    let _ = other.kill();
    let _ = other.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text(&out),
        "other tree: False False\nown child sees its parent: seen\n"
    );
}

/// The manifest of a write-back mount of `dir` at itself, under the host's
/// tree.
fn writeback_manifest(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "[loader]\ninsecure__use_cmdline_argv = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n\
         [[fs.mounts]]\npath = \"{d}\"\nuri = \"file:{d}\"\nwriteback = true\n"
    )
}

/// Write-back mounts (docs/FILESYSTEM.md, "Write-back mounts"):
/// tests/fs/writeback.c sees each flush point from inside the program
/// (what a descriptor the host serves sees of the file before and after
/// it): calls on the descriptor, path calls, mmap, dup2 and close_range
/// over it, fork, a full buffer, a large write, O_APPEND, pwrite over
/// buffered data, writev, threads, forks while threads write, and a
/// child's exit, execve, SIGTERM and SIGKILL (which loses what was
/// buffered, and only that). Natively every
/// write shows at once; both runs print the same.
#[test]
fn write_back_mounts_flush_where_documented() {
    let work = tempfile::tempdir().unwrap();
    let prog = work.path().join("writeback");
    compile("tests/fs/writeback.c", &prog, &["-pthread"]);
    let native_dir = work.path().join("native");
    let wb_dir = work.path().join("wb");
    std::fs::create_dir(&native_dir).unwrap();
    std::fs::create_dir(&wb_dir).unwrap();
    let native = Command::new(&prog)
        .arg(&native_dir)
        .arg("native")
        .output()
        .unwrap();
    assert!(
        native.status.success() && text(&native).ends_with("0 wrong\n"),
        "natively: {}{}",
        text(&native),
        String::from_utf8_lossy(&native.stderr)
    );
    let out = picos_run_with(
        &writeback_manifest(&wb_dir),
        &prog,
        &[wb_dir.as_os_str(), "buffered".as_ref()],
    );
    assert_same_output("write-back mount", &out, &native);
}

/// The crash test of a write-back mount: a program writing numbered
/// 10-byte records (printing each number after its write) is killed with
/// SIGKILL mid-stream. The file must hold records 0 to k-1, whole and in
/// order, then at most the start of record k (a write cut by the signal
/// where it crosses a page, natively as under picos); what is lost is at
/// most one buffer (16 KiB) of the records the program had written.
/// Natively nothing printed is lost.
#[test]
fn write_back_mount_loses_at_most_a_buffer_when_killed() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let work = tempfile::tempdir().unwrap();
    let prog = work.path().join("writeback");
    compile("tests/fs/writeback.c", &prog, &["-pthread"]);
    let manifest = work.path().join("m.toml");
    for mode in ["natively", "under picos"] {
        let dir = work.path().join(mode.replace(' ', "-"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(&manifest, writeback_manifest(&dir)).unwrap();
        let mut cmd = if mode == "natively" {
            Command::new(&prog)
        } else {
            let mut c = Command::new(PICOS);
            c.args(["run", "-m"]).arg(&manifest).arg(&prog);
            c
        };
        let mut child = cmd
            .arg(&dir)
            .arg("stream")
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut last: i64 = -1;
        let mut line = String::new();
        while last < 20_000 {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "{mode}: the program ended at record {last}"
            );
            last = line.trim().parse().unwrap();
        }
        // SAFETY: kill(2) of the child's own process group.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
        // Whatever it printed after we stopped reading: it was written too.
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut rest);
        if let Some(l) = rest
            .lines()
            .filter(|l| l.ends_with(|c: char| c.is_ascii_digit()))
            .last()
        {
            last = l.trim().parse().unwrap_or(last);
        }
        let data = std::fs::read(dir.join("stream")).unwrap();
        // SIGKILL may cut the write under way where it crosses a page
        // (Linux copies a page at a time and stops at a fatal signal;
        // natively too, and for a write-back mount's flush): the last
        // record may be a prefix of itself. Every other one is whole.
        let (whole, torn) = data.split_at(data.len() / 10 * 10);
        let k = (whole.len() / 10) as i64;
        assert!(
            format!("{k:09}\n").as_bytes().starts_with(torn),
            "{mode}: after {k} records, {torn:?} is not the start of the next"
        );
        for (i, rec) in whole.chunks(10).enumerate() {
            assert_eq!(rec, format!("{i:09}\n").as_bytes(), "{mode}: record {i}");
        }
        // The last printed record was written; one more may have been
        // (written, not yet printed).
        assert!(
            k <= last + 2,
            "{mode}: {k} records, the program wrote {last}"
        );
        let lost = (last + 1 - k).max(0);
        let bound = if mode == "natively" { 0 } else { 16384 / 10 };
        assert!(
            lost <= bound,
            "{mode}: {lost} records lost of {} written (at most {bound})",
            last + 1
        );
        println!("{mode}: {} records written, {lost} lost", last + 1);
    }
}

/// python3 with the host's tree read-only and exclusive: it reads the
/// standard library's own files in every way Python has (whole, by line,
/// seek and read, `os.read`, `os.pread`, `readinto`, a file object over a
/// `dup`, `os.sendfile`, a forked child reading the parent's file), which
/// the library OS answers from its views and the offsets it keeps
/// (docs/FILESYSTEM.md, "Files of exclusive mounts"). The output is the
/// same as natively.
#[test]
fn python3_reads_files_of_an_exclusive_root() {
    const T: &str = "python3_reads_files_of_an_exclusive_root";
    let python = "/usr/bin/python3";
    if !Path::new(python).is_file() {
        println!("SKIP {T}: {python} not installed: apt-get install python3");
        return;
    }
    let script = r#"
import hashlib, os, sys, sysconfig
lib = os.path.dirname(os.__file__)
h = hashlib.sha256()
n = 0
for name in sorted(os.listdir(os.path.join(lib, "email")))[:40]:
    p = os.path.join(lib, "email", name)
    if not os.path.isfile(p):
        continue
    with open(p, "rb") as f:
        d = f.read(); h.update(d); n += len(d)
    with open(p, "r", errors="replace") as f:
        lines = sum(1 for _ in f)
        f.seek(0); a = f.read(10); f.seek(5); b = f.readline()
        h.update(f"{lines}{a}{b}{f.tell()}".encode())
    fd = os.open(p, os.O_RDONLY)
    parts = []
    while True:
        c = os.read(fd, 777)
        if not c:
            break
        parts.append(len(c))
    h.update(repr(parts).encode())
    h.update(os.pread(fd, 100, 3))
    os.lseek(fd, -50, os.SEEK_END)
    buf = bytearray(64)
    with os.fdopen(os.dup(fd), "rb", buffering=0) as g:
        h.update(bytes(buf[:g.readinto(buf)]))
    h.update(str(os.lseek(fd, 0, os.SEEK_CUR)).encode())
    os.close(fd)
print(n, h.hexdigest())
fd = os.open(os.path.join(lib, "os.py"), os.O_RDONLY)
os.read(fd, 1000)
r, w = os.pipe()
print("sendfile", os.sendfile(w, fd, None, 100), len(os.read(r, 200)), os.lseek(fd, 0, os.SEEK_CUR))
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    os.write(1, f"child {len(os.read(fd, 10))} {os.lseek(fd, 0, os.SEEK_CUR)}\n".encode())
    os._exit(0)
os.waitpid(pid, 0)
print("parent", os.lseek(fd, 0, os.SEEK_CUR), len(os.read(fd, 5)), os.lseek(fd, 0, os.SEEK_CUR))
"#;
    let native = Command::new(python).args(["-c", script]).output().unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    let manifest = "[loader]\ninsecure__use_cmdline_argv = true\n\n\
        [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\nexclusive = true\n";
    let out = picos_run_with(manifest, python, &["-c", script]);
    assert_same_output(T, &out, &native);
}

/// python3 with `/` read-only from the host and a writable /tmp: the
/// standard library's file functions give the same output as natively in
/// a directory of the host, and writing elsewhere is refused.
#[test]
fn python3_with_a_read_only_root() {
    const T: &str = "python3_with_a_read_only_root";
    let python = "/usr/bin/python3";
    if !Path::new(python).is_file() {
        println!("SKIP {T}: {python} not installed: apt-get install python3");
        return;
    }
    let script = r#"
import os, shutil, sys, tempfile, errno
base = sys.argv[1]
os.chdir(base)
d = tempfile.mkdtemp(dir=base, prefix="t")
for i in range(3):
    os.makedirs(os.path.join(d, f"a{i}", "b"), exist_ok=True)
    with open(os.path.join(d, f"a{i}", "b", "f.txt"), "w") as f:
        f.write("x" * (i * 1000))
shutil.copytree(d, d + "-copy", symlinks=True)
os.symlink("a0", os.path.join(d + "-copy", "link"))
for root, dirs, files in sorted(os.walk(base)):
    dirs.sort()
    rel = os.path.relpath(root, base).replace(os.path.basename(d), "T")
    print(rel, sorted(files), [os.path.getsize(os.path.join(root, f)) for f in sorted(files)])
print(os.path.realpath(os.path.join(d + "-copy", "link", "b")) == os.path.join(d + "-copy", "a0", "b"))
os.rename(d + "-copy", d + "-renamed")
shutil.rmtree(d)
print(sorted(os.listdir(base)) == [os.path.basename(d) + "-renamed"])
with tempfile.NamedTemporaryFile(dir=base) as f:
    f.write(b"abc"); f.flush(); print(os.stat(f.name).st_size)
print(os.getcwd() == base)
import subprocess
print(subprocess.run(["/bin/sh", "-c", "exit 3"], close_fds=True).returncode)
# A dangling symlink whose target ends with "/": O_CREAT through it is EISDIR.
os.symlink("nowhere/", os.path.join(base, "slash"))
try:
    os.close(os.open(os.path.join(base, "slash"), os.O_CREAT | os.O_WRONLY, 0o644))
    print("slash: created", os.listdir(base))
except OSError as e:
    print("slash:", errno.errorcode[e.errno])
os.unlink(os.path.join(base, "slash"))
if len(sys.argv) > 2:
    for target in ["/usr/picos-probe", "/etc/passwd"]:
        try:
            open(target, "a").close()
            print(target, "written")
        except OSError as e:
            print(target, errno.errorcode[e.errno])
"#;
    let native_dir = tempfile::tempdir().unwrap();
    let native = Command::new(python)
        .args(["-c", script])
        .arg(native_dir.path())
        .output()
        .unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    // `/` read-only, then read-only and exclusive (the directory cache);
    // /tmp a host directory, then a tmpfs.
    for (root, tmpfs) in [
        ("readonly = true", false),
        ("readonly = true\nexclusive = true", false),
        ("readonly = true", true),
    ] {
        let work = tempfile::tempdir().unwrap();
        let manifest = work.path().join("m.toml");
        let guest_work = tempfile::tempdir().unwrap();
        let tmp = if tmpfs {
            "type = \"tmpfs\"\n".to_string()
        } else {
            format!("uri = \"file:{}\"\n", guest_work.path().display())
        };
        std::fs::write(
            &manifest,
            format!(
                "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\n\
                 [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n{root}\n\n\
                 [[fs.mounts]]\npath = \"/tmp\"\n{tmp}"
            ),
        )
        .unwrap();
        let out = Command::new(PICOS)
            .args(["run", "-m"])
            .arg(&manifest)
            .args([python, "-c", script, "/tmp", "probe"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{root}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let expected = format!(
            "{}/usr/picos-probe EROFS\n/etc/passwd EROFS\n",
            text(&native)
        );
        assert_eq!(text(&out), expected, "{root}");
        assert!(!Path::new("/usr/picos-probe").exists());
    }
}

/// The directory cache of exclusive mounts (docs/FILESYSTEM.md, "The
/// directory cache"): every lookup of tests/fs/lookups.c (stat, lstat,
/// statx, access, readlink and open of paths with `.`, `..`, symlinks,
/// missing names; the working directory across chdir, fchdir, threads,
/// vfork and fork; as root, lookups after dropping privileges) gives the
/// same output as natively, twice in a row (the second time from the
/// cache): with the tree on an exclusive read-only mount under a writable
/// root, and with the host's whole tree read-only and exclusive (its /proc
/// and /dev are other file systems, which the cache leaves alone).
#[test]
fn lookups_through_the_directory_cache_are_as_native() {
    let work = tempfile::tempdir().unwrap();
    // The tree alone in its own directory: nothing changes its parent
    // between the runs (the lookups stat `..`).
    let parent = tempfile::tempdir().unwrap();
    let fx = parent.path().join("fx");
    let prog = work.path().join("lookups");
    compile("tests/fs/lookups.c", &prog, &["-pthread"]);
    let st = Command::new(&prog)
        .arg("--setup")
        .arg(&fx)
        .status()
        .unwrap();
    assert!(st.success());
    let mut args = vec![fx.display().to_string()];
    if is_root() {
        args.push("--drop".into());
    } else {
        println!("note: not root, so lookups after dropping privileges are not tried");
    }
    let native = Command::new(&prog).args(&args).output().unwrap();
    assert!(native.status.success());
    assert!(text(&native).contains("== round 2"));
    let fxs = fx.display();
    for (name, mounts) in [
        (
            "the tree exclusive",
            format!(
                "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n\
                 [[fs.mounts]]\npath = \"{fxs}\"\nuri = \"file:{fxs}\"\nreadonly = true\nexclusive = true\n"
            ),
        ),
        (
            "the host's tree exclusive",
            "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\nexclusive = true\n"
                .to_string(),
        ),
    ] {
        let manifest = format!("[loader]\ninsecure__use_cmdline_argv = true\n\n{mounts}");
        let out = picos_run_with(&manifest, &prog, &args);
        assert_same_output(name, &out, &native);
    }
}

/// Files opened on an exclusive mount (docs/FILESYSTEM.md, "Files of
/// exclusive mounts"): tests/fs/views.c's preads and fstats at the edges,
/// and across dup, close, dup2, close_range, fork and threads, print the
/// same as natively, with the files' directory exclusive under a writable
/// root and with the host's whole tree exclusive. Then 2000 preads, reads
/// and lseeks under `--stats` make (almost) no host calls: the library OS
/// answers them.
#[test]
fn files_of_exclusive_mounts_read_as_native() {
    let work = tempfile::tempdir().unwrap();
    let parent = tempfile::tempdir().unwrap();
    let fx = parent.path().join("fx");
    let prog = work.path().join("views");
    compile("tests/fs/views.c", &prog, &["-pthread"]);
    let st = Command::new(&prog)
        .arg("--setup")
        .arg(&fx)
        .status()
        .unwrap();
    assert!(st.success());
    let native = Command::new(&prog).arg(&fx).output().unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    assert!(text(&native).contains("threads: 0 bad reads"));
    let fxs = fx.display();
    let tree = format!(
        "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n\
         [[fs.mounts]]\npath = \"{fxs}\"\nuri = \"file:{fxs}\"\nreadonly = true\nexclusive = true\n"
    );
    let host = "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\nexclusive = true\n";
    let manifest = work.path().join("m.toml");
    for (name, mounts) in [
        ("the files exclusive", tree.as_str()),
        ("the host's tree exclusive", host),
    ] {
        std::fs::write(
            &manifest,
            format!("[loader]\ninsecure__use_cmdline_argv = true\n\n{mounts}"),
        )
        .unwrap();
        let out = Command::new(PICOS)
            .args(["run", "-m"])
            .arg(&manifest)
            .arg(&prog)
            .arg(&fx)
            .output()
            .unwrap();
        assert_same_output(name, &out, &native);
        // The preads are the library OS's: without it, each is a host call.
        let stats = work.path().join("stats.json");
        let _ = std::fs::remove_file(&stats);
        let out = Command::new(PICOS)
            .args(["run", "--stats-json"])
            .arg(&stats)
            .arg("-m")
            .arg(&manifest)
            .arg(&prog)
            .arg(&fx)
            .args(["--loop", "2000"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json = std::fs::read_to_string(&stats).unwrap();
        let line: serde_json::Value =
            serde_json::from_str(json.lines().next().unwrap_or("")).expect("a JSON line");
        let host_calls = line["host_calls"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: no host_calls in {json}"));
        assert!(
            host_calls < 500,
            "{name}: {host_calls} host calls for 2000 preads, reads and lseeks: {json}"
        );
    }
    // A broken promise: the host truncates a file the program reads
    // through its view. The runtime must not crash (the copy's SIGBUS is
    // recovered), and a read past the new end gets the host's answer.
    std::fs::write(
        &manifest,
        format!("[loader]\ninsecure__use_cmdline_argv = true\n\n{tree}"),
    )
    .unwrap();
    let mut child = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&manifest)
        .arg(&prog)
        .arg(&fx)
        .arg("--truncated")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        assert!(n > 0, "the program ended before \"ready\": {seen}");
        seen.push_str(&line);
        if line == "ready\n" {
            break;
        }
    }
    assert!(seen.contains("before pread(4096, 200000) = 4096"), "{seen}");
    std::fs::OpenOptions::new()
        .write(true)
        .open(fx.join("victim"))
        .unwrap()
        .set_len(100)
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && rest.ends_with("done\n"),
        "{rest}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        rest.contains("after, past the new end pread(4096, 200000) = 0 "),
        "{rest}"
    );
}

/// /proc/self/maps under mounts lists the program's mappings and none of
/// the runtime's (tests/fs/procmaps.c prints the same as natively: its own
/// mapping, program and stack listed, nothing named picos, no huge
/// inaccessible reservation), through four spellings, fopen and a fork.
/// Without the library OS's view, the runtime's image and reservations
/// show (4 lines and 2 reservations).
#[test]
fn proc_self_maps_shows_the_program_only() {
    let work = tempfile::tempdir().unwrap();
    let prog = work.path().join("procmaps");
    compile("tests/fs/procmaps.c", &prog, &[]);
    let native = Command::new(&prog).output().unwrap();
    assert!(native.status.success());
    assert!(text(&native).contains("runtime's 0, huge reservations 0"));
    let out = picos_run_with(
        "[loader]\ninsecure__use_cmdline_argv = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n",
        &prog,
        &[] as &[&str],
    );
    assert_same_output("procmaps", &out, &native);
}

/// Calls with several things wrong give the error Linux gives first
/// (tests/fs/errorder.c; both found by tools/fuzz.py under mounts):
/// utimensat looks its path up before it checks the nanoseconds, and
/// name_to_handle_at checks its flags before its path.
#[test]
fn errors_come_in_linuxs_order_under_mounts() {
    let work = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prog = work.path().join("errorder");
    compile("tests/fs/errorder.c", &prog, &[]);
    let native = Command::new(&prog).arg(dir.path()).output().unwrap();
    assert!(native.status.success());
    let d = dir.path().display();
    let manifest = format!(
        "[loader]\ninsecure__use_cmdline_argv = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n\
         [[fs.mounts]]\npath = \"{d}\"\nuri = \"file:{d}\"\n"
    );
    let out = picos_run_with(&manifest, &prog, &[dir.path()]);
    assert_same_output("errorder", &out, &native);
}

/// sqlite3 on a writable mount under a read-only root, and on a tmpfs
/// mount: the same output as natively (its journal files live beside the
/// database).
#[test]
fn sqlite3_on_a_chroot_mount() {
    const T: &str = "sqlite3_on_a_chroot_mount";
    let sqlite = "/usr/bin/sqlite3";
    if !Path::new(sqlite).is_file() {
        println!("SKIP {T}: {sqlite} not installed: apt-get install sqlite3");
        return;
    }
    let sql = "create table t(a integer primary key, b text); \
               begin; insert into t(b) select 'row ' || value from generate_series(1, 2000); commit; \
               create index tb on t(b); delete from t where a % 3 = 0; \
               select count(*), sum(length(b)) from t; pragma integrity_check;";
    let native_dir = tempfile::tempdir().unwrap();
    let native = Command::new(sqlite)
        .arg(native_dir.path().join("db.sqlite"))
        .arg(sql)
        .output()
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let manifest = work.path().join("m.toml");
    std::fs::write(
        &manifest,
        format!(
            "[loader]\ninsecure__use_cmdline_argv = true\n\n\
             [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n\n\
             [[fs.mounts]]\npath = \"/tmp\"\nuri = \"file:{}\"\n\n\
             [[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/mnt\"\n",
            work.path().display()
        ),
    )
    .unwrap();
    // On the chroot mount, then on a tmpfs (where the database lives as
    // long as the run: the same program makes and queries it).
    for db in ["/tmp/db.sqlite", "/mnt/db.sqlite"] {
        let out = Command::new(PICOS)
            .args(["run", "-m"])
            .arg(&manifest)
            .args([sqlite, db, sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{db}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(text(&out), text(&native), "{db}");
    }
    assert!(work.path().join("db.sqlite").is_file());
}

fn picos_run(manifest: &str, prog: &str) -> Output {
    picos_run_with(manifest, prog, &[] as &[&str])
}

/// Runs `prog` with `args` under picos with the manifest `manifest` (its
/// text, written to a file of its own).
fn picos_run_with(
    manifest: &str,
    prog: impl AsRef<std::ffi::OsStr>,
    args: &[impl AsRef<std::ffi::OsStr>],
) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.toml");
    std::fs::write(&m, manifest).unwrap();
    Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&m)
        .arg(prog)
        .args(args)
        .output()
        .unwrap()
}

/// Mounts the CLI cannot use are refused before anything runs.
#[test]
fn unusable_mounts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let cases = [
        (
            format!("[[fs.mounts]]\npath = \"/data\"\nuri = \"file:{d}\"\n"),
            "no mount at \"/\"",
        ),
        (
            format!("[[fs.mounts]]\npath = \"/\"\nuri = \"file:{d}/missing\"\n"),
            "No such file or directory",
        ),
        (
            format!(
                "[[fs.mounts]]\npath = \"/\"\nuri = \"file:{d}\"\n[[fs.mounts]]\npath = \"/x\"\nuri = \"file:/tmp\"\n"
            ),
            "the mount point does not exist in the mount of /",
        ),
        (
            "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/etc/hostname\"\n".to_string(),
            "not a directory",
        ),
    ];
    for (manifest, msg) in cases {
        let out = picos_run(&manifest, "/bin/true");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(msg),
            "{manifest}\n{err}"
        );
    }
}

/// The program is found in the guest tree and runs from there; a program
/// the mounts do not show does not exist.
#[test]
fn the_program_is_looked_up_in_the_guest_tree() {
    let t = Tree::new();
    let prog = t.path("root/bin/escape");
    compile_static("tests/fs/escape.c", &prog);
    let m = t.manifest();
    // By name, through PATH (guest directories).
    let out = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&m)
        .arg("escape")
        .env("PATH", "/bin")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "usage: escape SECRET DATA RO OTHER SOCKET\n"
    );
    assert_eq!(out.status.code(), Some(2));
    // The host's path of it is not a guest path.
    let out = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&m)
        .arg(&prog)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127), "{out:?}");
}

/// The fsx-style equivalence run (tests/fs/fsx.c): a seeded sequence of
/// 1,000,000 file operations (open with every flag that matters, read,
/// write, pread, pwrite, lseek, truncate, rename, unlink, link, symlink,
/// mkdir, rmdir, readdir, stat, readlink, mmap, fsync, dup, fork, chdir and
/// relative paths, `..` through symlinks) gives the same output natively
/// and under picos, on a chroot mount, with the host's tree and on a
/// write-back mount (`PICOS_FSX_SEED` and `PICOS_FSX_OPS` change the seed and length).
#[test]
fn fsx_sequence_is_the_same_natively_and_under_picos() {
    let seed = std::env::var("PICOS_FSX_SEED").unwrap_or_else(|_| "20261125".into());
    let ops = std::env::var("PICOS_FSX_OPS").unwrap_or_else(|_| "1000000".into());
    let t = Tree::new();
    let prog = t.path("root/bin/fsx");
    compile_static("tests/fs/fsx.c", &prog);
    let native_root = tempfile::tempdir().unwrap();
    let native = Command::new(&prog)
        .args([&seed, &ops])
        .arg(native_root.path())
        .output()
        .unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    let native = text(&native);
    assert!(native.lines().count() >= 1_000_000.min(ops.parse::<usize>().unwrap_or(0)));
    let first_difference = |other: &str| -> Option<String> {
        native
            .lines()
            .zip(other.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("line {}: native `{a}`, picos `{b}`", i + 1))
            .or_else(|| {
                (native.lines().count() != other.lines().count()).then(|| {
                    format!(
                        "{} lines natively, {} under picos",
                        native.lines().count(),
                        other.lines().count()
                    )
                })
            })
    };
    // On a chroot mount (the tree's /data).
    let mounted = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(t.manifest())
        .args(["/bin/fsx", &seed, &ops, "/data"])
        .output()
        .unwrap();
    assert!(
        mounted.status.success(),
        "{}",
        String::from_utf8_lossy(&mounted.stderr)
    );
    if let Some(d) = first_difference(&text(&mounted)) {
        panic!("fsx seed {seed}, chroot mount: {d}");
    }
    // With the host's tree (no mounts).
    let host_root = tempfile::tempdir().unwrap();
    let host = Command::new(PICOS)
        .arg("run")
        .arg(&prog)
        .args([&seed, &ops])
        .arg(host_root.path())
        .output()
        .unwrap();
    assert!(
        host.status.success(),
        "{}",
        String::from_utf8_lossy(&host.stderr)
    );
    if let Some(d) = first_difference(&text(&host)) {
        panic!("fsx seed {seed}, host tree: {d}");
    }
    // On a write-back mount (docs/FILESYSTEM.md, "Write-back mounts"):
    // its flush points keep every result the same.
    let wb_root = tempfile::tempdir().unwrap();
    let wb_manifest = wb_root.path().join("m.toml");
    let wb_dir = wb_root.path().join("d");
    std::fs::create_dir(&wb_dir).unwrap();
    std::fs::write(&wb_manifest, writeback_manifest(&wb_dir)).unwrap();
    let wb = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&wb_manifest)
        .arg(&prog)
        .args([&seed, &ops])
        .arg(&wb_dir)
        .output()
        .unwrap();
    assert!(
        wb.status.success(),
        "{}",
        String::from_utf8_lossy(&wb.stderr)
    );
    if let Some(d) = first_difference(&text(&wb)) {
        panic!("fsx seed {seed}, write-back mount: {d}");
    }
}

/// `make` of a small C project (gcc, cc1, as, ld: many processes and path
/// calls) on a writable mount under a read-only `/`: the same output as
/// natively, and the program built runs.
#[test]
fn make_builds_a_c_project_on_a_mount() {
    const T: &str = "make_builds_a_c_project_on_a_mount";
    if !Path::new("/usr/bin/make").is_file() || !Path::new("/usr/bin/cc").exists() {
        println!("SKIP {T}: make or cc not installed: apt-get install make gcc");
        return;
    }
    let write_project = |dir: &Path| common::write_c_project(&dir.join("proj"));
    let native_dir = tempfile::tempdir().unwrap();
    write_project(native_dir.path());
    let native = Command::new("make")
        .arg("-C")
        .arg(native_dir.path().join("proj"))
        .output()
        .unwrap();
    assert!(native.status.success());
    let native_out = text(&native).replace(&native_dir.path().display().to_string(), "/tmp");
    let work = tempfile::tempdir().unwrap();
    write_project(work.path());
    let manifest = work.path().join("m.toml");
    std::fs::write(
        &manifest,
        format!(
            "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\n\
             [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n\n\
             [[fs.mounts]]\npath = \"/tmp\"\nuri = \"file:{}\"\n",
            work.path().display()
        ),
    )
    .unwrap();
    let out = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&manifest)
        .args(["/usr/bin/make", "-C", "/tmp/proj"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text(&out), native_out);
    let run = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&manifest)
        .arg("/tmp/proj/prog")
        .output()
        .unwrap();
    assert_eq!(text(&run), "42\n");
    assert!(work.path().join("proj/prog").is_file());
}

/// The runtime's mount descriptors sit near the top of the usual range: a
/// program that dup2s onto every number from 900 to 1023, closes them,
/// close_ranges everything from 3 and lists /proc/self/fd sees what it
/// sees natively, and its paths keep working (tests/fs/hidden_fds.c).
#[test]
fn the_programs_descriptors_are_its_own() {
    let t = Tree::new();
    let prog = t.path("root/bin/hidden_fds");
    compile_static("tests/fs/hidden_fds.c", &prog);
    let native_dir = tempfile::tempdir().unwrap();
    let native = Command::new(&prog)
        .arg(native_dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(native.status.success());
    assert!(
        text(&native).contains("after close_range: paths work"),
        "{}",
        text(&native)
    );
    // `close_range(3, ~0U, 0)` once walked every number of its range in the
    // runtime (2^31 steps, ~24 s each time): the run must take a fraction of
    // the limit (it takes well under a second), not minutes.
    let mut cmd = Command::new(PICOS);
    cmd.args(["run", "-m"])
        .arg(t.manifest())
        .args(["/bin/hidden_fds", "/data"])
        .stdin(std::process::Stdio::null());
    let out = common::output_within(&mut cmd, std::time::Duration::from_secs(30));
    assert_eq!(
        text(&out),
        text(&native),
        "picos (left) vs native (right); stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Extended attributes through paths under mounts, on a file, a symlink
/// and a dangling symlink, following and not (`l*xattr`): the same results
/// as natively (user. attributes refused on symlinks, trusted. ones kept).
#[test]
fn xattrs_on_files_and_symlinks() {
    const T: &str = "xattrs_on_files_and_symlinks";
    let python = "/usr/bin/python3";
    if !Path::new(python).is_file() {
        println!("SKIP {T}: {python} not installed: apt-get install python3");
        return;
    }
    if !Path::new("/dev/shm").is_dir() {
        println!("SKIP {T}: no /dev/shm (a tmpfs, which keeps user. attributes)");
        return;
    }
    let script = r#"
import os, sys, errno
d = sys.argv[1]
open(os.path.join(d, "f"), "w").close()
os.symlink("f", os.path.join(d, "l"))
os.symlink("nowhere", os.path.join(d, "dl"))
def t(name, fn):
    try: print(name, fn())
    except OSError as e: print(name, errno.errorcode[e.errno])
for p in ["f", "l", "dl"]:
    q = os.path.join(d, p)
    for fs in [True, False]:
        t(f"set {p} {fs}", lambda: os.setxattr(q, "user.x", b"v1", follow_symlinks=fs))
        t(f"get {p} {fs}", lambda: os.getxattr(q, "user.x", follow_symlinks=fs))
        t(f"list {p} {fs}", lambda: sorted(os.listxattr(q, follow_symlinks=fs)))
        t(f"trusted {p} {fs}", lambda: os.setxattr(q, "trusted.y", b"v2", follow_symlinks=fs))
        t(f"get trusted {p} {fs}", lambda: os.getxattr(q, "trusted.y", follow_symlinks=fs))
        t(f"remove {p} {fs}", lambda: os.removexattr(q, "user.x", follow_symlinks=fs))
"#;
    let native_dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let native = Command::new(python)
        .args(["-c", script])
        .arg(native_dir.path())
        .output()
        .unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let d = dir.path().display();
    let manifest = dir.path().join("m.toml");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(
        &manifest,
        format!(
            "[loader]\ninsecure__use_cmdline_argv = true\n\n\
             [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n\
             [[fs.mounts]]\npath = \"{d}/work\"\nuri = \"file:{d}/work\"\n"
        ),
    )
    .unwrap();
    let out = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&manifest)
        .args([python, "-c", script])
        .arg(&work)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text(&out), text(&native));
}
