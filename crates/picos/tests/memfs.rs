//! Mounts of type `tmpfs` and `overlay` (docs/FILESYSTEM.md, "tmpfs and
//! overlay mounts"):
//!
//! - fsx (1,000,000 operations) gives the same output on each as natively on
//!   a host tmpfs;
//! - a tmpfs is shared by the whole picoprocess tree (fork, execve, a
//!   program run from it, Unix sockets and FIFOs in it), names its files at
//!   their guest paths, and is gone when the tree ends: nothing reaches the
//!   host;
//! - an overlay lets a program change, delete and rename what a host
//!   directory shows (a shell script, `make` of a C project) with the same
//!   output as natively on a copy, and the host directory stays as it was;
//! - the same as an unprivileged user (the CLI then makes the file systems
//!   in a user namespace of its own).

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{is_root, text, workspace};

const PICOS: &str = env!("CARGO_BIN_EXE_picos");

/// Writes `manifest` into `dir` and returns its path.
fn write_manifest(dir: &Path, manifest: &str) -> PathBuf {
    let m = dir.join("m.toml");
    std::fs::write(&m, manifest).unwrap();
    std::fs::set_permissions(&m, std::fs::Permissions::from_mode(0o644)).unwrap();
    m
}

/// A command that runs `picos run -m MANIFEST ...`, as the unprivileged
/// user `nobody` if `as_nobody`.
fn picos(manifest: &Path, as_nobody: bool) -> Command {
    let mut c = if as_nobody {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            PICOS,
        ]);
        c
    } else {
        Command::new(PICOS)
    };
    c.args(["run", "-m"]).arg(manifest);
    c
}

/// Why the unprivileged runs cannot be made here, if they cannot.
fn unprivileged_unavailable() -> Option<String> {
    if !is_root() {
        return Some("the test needs root to become `nobody` (setpriv)".into());
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        return Some("setpriv missing: apt-get install util-linux".into());
    }
    let userns = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "unshare",
            "-U",
            "true",
        ])
        .status();
    if !userns.is_ok_and(|s| s.success()) {
        return Some("unprivileged user namespaces are disabled on this host".into());
    }
    // nobody must be able to run the CLI where the build put it.
    let run = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            PICOS,
            "--version",
        ])
        .output();
    if !run.is_ok_and(|o| o.status.success()) {
        return Some(format!(
            "`nobody` cannot run {PICOS} (a directory above it is private)"
        ));
    }
    None
}

/// A manifest (written into `dir`) with the host's tree read-only at `/`
/// and an overlay of host directory `lower` at its own path.
fn overlay_manifest(dir: &Path, lower: &Path) -> PathBuf {
    write_manifest(
        dir,
        &format!(
            "[loader]\ninsecure__use_cmdline_argv = true\n\n\
             [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n\n\
             [[fs.mounts]]\ntype = \"overlay\"\npath = \"{0}\"\nuri = \"file:{0}\"\n",
            lower.display()
        ),
    )
}

/// Every file of directory `dir`: relative path, then type, mode and
/// content (a symlink's target).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let md = std::fs::symlink_metadata(&p).unwrap();
            let content = if md.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if md.is_dir() {
                pending.push(p.clone());
                Vec::new()
            } else {
                std::fs::read(&p).unwrap()
            };
            out.insert(
                p.strip_prefix(dir).unwrap().to_path_buf(),
                (md.mode(), md.uid(), content),
            );
        }
    }
    out
}

/// Is `p` on a tmpfs of the host?
fn on_tmpfs(p: &Path) -> bool {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: statfs(2) of a NUL-terminated path into a zeroed struct.
    unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut s) == 0 && s.f_type as i64 == libc::TMPFS_MAGIC
    }
}

/// fsx (tests/fs/fsx.c): 1,000,000 operations on a tmpfs mount and on an
/// overlay mount (of an empty host directory) give the same output as
/// natively on a host tmpfs (directories of other file systems answer some
/// calls differently: ext4's `lseek(SEEK_END)` on a directory), and the
/// overlay's host directory stays empty.
#[test]
fn fsx_on_tmpfs_and_overlay_is_as_native() {
    const T: &str = "fsx_on_tmpfs_and_overlay_is_as_native";
    let seed = std::env::var("PICOS_FSX_SEED").unwrap_or_else(|_| "20261126".into());
    let ops = std::env::var("PICOS_FSX_OPS").unwrap_or_else(|_| "1000000".into());
    let work = tempfile::tempdir().unwrap();
    let prog = work.path().join("fsx");
    let st = Command::new("gcc")
        .args(["-O1", "-static", "-o"])
        .arg(&prog)
        .arg(workspace().join("tests/fs/fsx.c"))
        .status()
        .unwrap();
    assert!(st.success(), "compiling fsx.c");
    let shm = Path::new("/dev/shm");
    if !on_tmpfs(shm) {
        println!(
            "SKIP {T}: /dev/shm is not a tmpfs here, so there is no native tmpfs to compare with"
        );
        return;
    }
    let native_dir = tempfile::tempdir_in(shm).unwrap();
    let native = Command::new(&prog)
        .args([&seed, &ops])
        .arg(native_dir.path())
        .output()
        .unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    let native = text(&native);
    let lower = work.path().join("lower");
    std::fs::create_dir(&lower).unwrap();
    let m = write_manifest(
        work.path(),
        &format!(
            "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n\n\
             [[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/mnt\"\n\n\
             [[fs.mounts]]\ntype = \"overlay\"\npath = \"/opt\"\nuri = \"file:{}\"\n",
            lower.display()
        ),
    );
    for dir in ["/mnt", "/opt"] {
        let out = picos(&m, false)
            .arg(&prog)
            .args([&seed, &ops, dir])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{dir}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = text(&out);
        if let Some((i, (a, b))) = native
            .lines()
            .zip(got.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
        {
            panic!(
                "fsx seed {seed} on {dir}: line {}: native `{a}`, picos `{b}`",
                i + 1
            );
        }
        assert_eq!(native.lines().count(), got.lines().count(), "{dir}");
    }
    assert_eq!(
        std::fs::read_dir(&lower).unwrap().count(),
        0,
        "the overlay wrote below"
    );
}

/// What the program in [`tmpfs_is_shared_by_the_tree_and_stays_in_it`] does.
const SHARED_SCRIPT: &str = r#"
import errno, os, socket, subprocess, sys
probe = sys.argv[1]
open("/tmp/a", "w").write("parent\n")
pid = os.fork()
if pid == 0:
    open("/tmp/b", "w").write(open("/tmp/a").read().replace("parent", "child"))
    os._exit(0)
os.waitpid(pid, 0)
print(open("/tmp/b").read(), end="")
# A new program (fork and execve) reads and writes the same files.
r = subprocess.run(["/bin/sh", "-c", "cat /tmp/a; echo exec > /tmp/c"], capture_output=True, text=True)
print(r.stdout, end="")
print(open("/tmp/c").read(), end="")
# A program run from the tmpfs.
open("/tmp/true", "wb").write(open("/bin/true", "rb").read())
os.chmod("/tmp/true", 0o755)
print("run from the tmpfs:", subprocess.run(["/tmp/true"]).returncode)
# A Unix socket bound there, which a child connects to.
s = socket.socket(socket.AF_UNIX)
s.bind("/tmp/sock")
s.listen(1)
pid = os.fork()
if pid == 0:
    c = socket.socket(socket.AF_UNIX)
    c.connect("/tmp/sock")
    c.sendall(b"over a socket in the tmpfs\n")
    os._exit(0)
conn, _ = s.accept()
print(conn.recv(100).decode(), end="")
os.waitpid(pid, 0)
# A FIFO there.
os.mkfifo("/tmp/fifo")
pid = os.fork()
if pid == 0:
    with open("/tmp/fifo", "w") as f:
        f.write("through a FIFO\n")
    os._exit(0)
with open("/tmp/fifo") as f:
    print(f.read(), end="")
os.waitpid(pid, 0)
# Names: the working directory, .. of the mount's root, /proc links.
os.mkdir("/tmp/d")
os.chdir("/tmp/d")
print(os.getcwd(), os.readlink("/proc/self/cwd"))
os.chdir("../..")
print(os.getcwd())
fd = os.open("/tmp/a", os.O_RDONLY)
print(os.readlink(f"/proc/self/fd/{fd}"), os.path.realpath("/tmp/d/../a"))
os.unlink("/tmp/a")
print(os.readlink(f"/proc/self/fd/{fd}"))
d = os.open("/tmp/d", os.O_RDONLY)
open("d/in", "w", opener=lambda p, f: os.open("in", f, dir_fd=d))
print(os.listdir("/tmp/d"))
print(sorted(os.listdir("/tmp")))
mounts = [l.split()[1:3] for l in open("/proc/self/mounts")]
print(["/tmp", "tmpfs"] in mounts)
st = os.statvfs("/tmp")
print(st.f_blocks * st.f_frsize)
open(probe, "w").write("x")
print(os.path.exists(probe))
try:
    open("/picos-probe", "w")
except OSError as e:
    print("/picos-probe:", errno.errorcode[e.errno])
"#;

const SHARED_EXPECTED: &str = "child\nparent\nexec\nrun from the tmpfs: 0\n\
over a socket in the tmpfs\nthrough a FIFO\n/tmp/d /tmp/d\n/\n/tmp/a /tmp/a\n\
/tmp/a (deleted)\n['in']\n['b', 'c', 'd', 'fifo', 'sock', 'true']\nTrue\n8388608\nTrue\n\
/picos-probe: EROFS\n";

/// A tmpfs at /tmp is shared by the whole picoprocess tree and never
/// reaches the host: see [`SHARED_SCRIPT`]. A second run starts empty.
fn tmpfs_is_shared(as_nobody: bool) {
    let python = "/usr/bin/python3";
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = write_manifest(
        work.path(),
        "[loader]\ninsecure__use_cmdline_argv = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n\n\
         [[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/tmp\"\nsize = \"8M\"\n",
    );
    let probe = format!("/tmp/picos-memfs-probe-{}-{as_nobody}", std::process::id());
    let out = picos(&m, as_nobody)
        .args([python, "-c", SHARED_SCRIPT, &probe])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text(&out), SHARED_EXPECTED);
    assert!(!Path::new(&probe).exists(), "{probe} reached the host");
    let again = picos(&m, as_nobody)
        .args(["/bin/ls", "-A", "/tmp"])
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(text(&again), "", "a new tree sees an empty tmpfs");
}

#[test]
fn tmpfs_is_shared_by_the_tree_and_stays_in_it() {
    if !Path::new("/usr/bin/python3").is_file() {
        println!("SKIP tmpfs_is_shared_by_the_tree_and_stays_in_it: /usr/bin/python3 missing: apt-get install python3");
        return;
    }
    tmpfs_is_shared(false);
}

/// Fills a lower directory: files, a directory, a symlink, a deeper tree.
fn fill_lower(d: &Path) {
    std::fs::create_dir_all(d.join("d")).unwrap();
    std::fs::create_dir_all(d.join("sub/deep")).unwrap();
    std::fs::write(d.join("f"), "lower\n").unwrap();
    std::fs::write(d.join("d/g"), "g\n").unwrap();
    std::fs::write(d.join("d/h"), "h\n").unwrap();
    std::fs::write(d.join("sub/deep/x"), "x\n").unwrap();
    std::os::unix::fs::symlink("f", d.join("link")).unwrap();
    for p in ["", "d", "sub", "sub/deep"] {
        std::fs::set_permissions(d.join(p), std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    for p in ["f", "d/g", "d/h", "sub/deep/x"] {
        std::fs::set_permissions(d.join(p), std::fs::Permissions::from_mode(0o666)).unwrap();
    }
}

/// Changes of every kind through an overlay.
const OVERLAY_SCRIPT: &str = "cd \"$1\" && echo changed >> f && rm d/g && mv d/h d/h2 && \
    chmod 600 sub/deep/x && mkdir new && echo n > new/n && ln -s new nl && rm -r sub && \
    mkdir sub && echo again > sub/y && mv link link2 && \
    find . | sort && cat f link2 sub/y && ls -l d | grep -c h2 && stat -c '%a' new/n";

/// An overlay of a host directory: what a shell script changes there gives
/// the same output as the same script natively on a copy, and the host
/// directory is unchanged afterwards.
fn overlay_keeps_changes(as_nobody: bool) {
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let lower = work.path().join("lower");
    fill_lower(&lower);
    let copy = work.path().join("copy");
    fill_lower(&copy);
    if as_nobody {
        // The user's own files, natively and below the overlay (in a user
        // namespace the overlay cannot copy up a file of an owner it does
        // not map: docs/FILESYSTEM.md).
        for d in [&lower, &copy] {
            for p in snapshot(d).keys() {
                std::os::unix::fs::lchown(d.join(p), Some(65534), Some(65534)).unwrap();
            }
            std::os::unix::fs::lchown(d, Some(65534), Some(65534)).unwrap();
        }
    }
    let before = snapshot(&lower);
    let mut native = Command::new("/bin/sh");
    native.args(["-c", OVERLAY_SCRIPT, "sh"]).arg(&copy);
    if as_nobody {
        native = Command::new("setpriv");
        native
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/bin/sh",
                "-c",
                OVERLAY_SCRIPT,
                "sh",
            ])
            .arg(&copy);
    }
    let native = native.output().unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    let m = overlay_manifest(work.path(), &lower);
    let out = picos(&m, as_nobody)
        .args(["/bin/sh", "-c", OVERLAY_SCRIPT, "sh"])
        .arg(&lower)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text(&out), text(&native));
    assert_eq!(
        snapshot(&lower),
        before,
        "the overlay changed its host directory"
    );
}

#[test]
fn overlay_changes_stay_in_memory() {
    overlay_keeps_changes(false);
}

/// `make` of a small C project whose sources are a host directory shown
/// through an overlay: the objects and the program are written to the
/// overlay, the program runs from there, the output is the same as
/// natively, and the host directory holds its sources only.
#[test]
fn make_builds_into_an_overlay() {
    const T: &str = "make_builds_into_an_overlay";
    if !Path::new("/usr/bin/make").is_file() || !Path::new("/usr/bin/cc").exists() {
        println!("SKIP {T}: make or cc not installed: apt-get install make gcc");
        return;
    }
    let write_project = common::write_c_project;
    let work = tempfile::tempdir().unwrap();
    let native_dir = work.path().join("native");
    write_project(&native_dir);
    let native = Command::new("/bin/sh")
        .args(["-c", "make -C \"$1\" && \"$1\"/prog", "sh"])
        .arg(&native_dir)
        .output()
        .unwrap();
    assert!(
        native.status.success(),
        "{}",
        String::from_utf8_lossy(&native.stderr)
    );
    let lower = work.path().join("proj");
    let native_out = text(&native).replace(
        &native_dir.display().to_string(),
        &lower.display().to_string(),
    );
    write_project(&lower);
    let before = snapshot(&lower);
    let m = write_manifest(
        work.path(),
        &format!(
            "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\n\
             [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n\n\
             [[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/tmp\"\n\n\
             [[fs.mounts]]\ntype = \"overlay\"\npath = \"{0}\"\nuri = \"file:{0}\"\n",
            lower.display()
        ),
    );
    let out = picos(&m, false)
        .args(["/bin/sh", "-c", "make -C \"$1\" && \"$1\"/prog", "sh"])
        .arg(&lower)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text(&out), native_out);
    assert!(text(&out).ends_with("42\n"));
    assert_eq!(
        snapshot(&lower),
        before,
        "the build wrote into the host directory"
    );
}

/// As an unprivileged user, the CLI makes the file systems in a user
/// namespace of its own: the tmpfs and overlay tests above give the same
/// results (the overlay's natively as `nobody` too).
#[test]
fn tmpfs_and_overlay_as_an_unprivileged_user() {
    const T: &str = "tmpfs_and_overlay_as_an_unprivileged_user";
    if let Some(why) = unprivileged_unavailable() {
        println!("SKIP {T}: {why}");
        return;
    }
    if Path::new("/usr/bin/python3").is_file() {
        tmpfs_is_shared(true);
    } else {
        println!("SKIP {T} (tmpfs part): /usr/bin/python3 missing: apt-get install python3");
    }
    overlay_keeps_changes(true);
    // A lower directory of another owner (root, mode 755): natively nobody
    // may not create a file in it, and through the overlay neither (its
    // root is the caller's in the user namespace, with the caller's access).
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let lower = work.path().join("rootdir");
    std::fs::create_dir(&lower).unwrap();
    std::fs::set_permissions(&lower, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = "touch \"$1/x\" 2>/dev/null && echo created || echo refused";
    let native = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/bin/sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&lower)
        .output()
        .unwrap();
    assert_eq!(text(&native), "refused\n");
    let m = overlay_manifest(work.path(), &lower);
    let out = picos(&m, true)
        .args(["/bin/sh", "-c", script, "sh"])
        .arg(&lower)
        .output()
        .unwrap();
    assert_eq!(
        text(&out),
        "refused\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the program in [`dev_mount_shows_harmless_devices_only`] does.
const DEV_SCRIPT: &str = r#"
import errno, os, pty
print(sorted(os.listdir("/dev")))
with open("/dev/null", "w") as f:
    print(f.write("gone"))
print(open("/dev/zero", "rb").read(4))
print(len(open("/dev/urandom", "rb").read(16)), len(os.getrandom(8)))
try:
    with open("/dev/full", "w") as f:
        f.write("x")
except OSError as e:
    print("full:", errno.errorcode[e.errno])
for name in ["sda", "vda", "mem", "kmsg", "port", "shm/../sda"]:
    print(name, os.path.exists("/dev/" + name))
open("/dev/shm/f", "w").write("shared")
print(oct(os.stat("/dev/shm").st_mode), os.listdir("/dev/shm"))
fd = os.open("/dev/null", os.O_WRONLY)
print(os.readlink(f"/proc/self/fd/{fd}"), os.path.realpath("/dev/stdout") == os.path.realpath(f"/proc/self/fd/1"))
print(os.readlink("/dev/fd"), sorted(os.listdir("/dev/fd")) == sorted(os.listdir("/proc/self/fd")))
m, s = pty.openpty()
print(os.ttyname(s).startswith("/dev/pts/"), sorted(os.listdir("/dev/pts")))
os.write(m, b"through a pty\n")
print(os.read(s, 100))
print([l.split()[1:3] for l in open("/proc/self/mounts") if l.split()[1] == "/dev"])
"#;

/// A `type = "dev"` mount: the host's null, zero, full, random, urandom
/// and tty, a devpts of its own (a pty opened through /dev/ptmx works), an
/// empty shm and the usual symlinks, and nothing else of the host's /dev
/// (no disks, no kernel memory or log, no other process's terminal).
fn dev_mount(as_nobody: bool) {
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = write_manifest(
        work.path(),
        "[loader]\ninsecure__use_cmdline_argv = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n\n\
         [[fs.mounts]]\ntype = \"dev\"\npath = \"/dev\"\n",
    );
    let out = picos(&m, as_nobody)
        .args(["/usr/bin/python3", "-c", DEV_SCRIPT])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chr = |n: &str| {
        std::fs::metadata(format!("/dev/{n}"))
            .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_char_device(&m.file_type()))
    };
    let mut names: Vec<&str> = ["null", "zero", "full", "random", "urandom", "tty"]
        .into_iter()
        .filter(|n| chr(n))
        .chain(["ptmx", "pts", "shm", "fd", "stdin", "stdout", "stderr"])
        .collect();
    names.sort();
    let expected = format!(
        "{names:?}\n4\nb'\\x00\\x00\\x00\\x00'\n16 8\nfull: ENOSPC\nsda False\nvda False\n\
         mem False\nkmsg False\nport False\nshm/../sda False\n0o41777 ['f']\n/dev/null True\n\
         /proc/self/fd True\nTrue ['0', 'ptmx']\nb'through a pty\\n'\n[['/dev', 'tmpfs']]\n"
    )
    .replace('"', "'");
    assert_eq!(text(&out), expected);
}

#[test]
fn dev_mount_shows_harmless_devices_only() {
    if !Path::new("/usr/bin/python3").is_file() {
        println!("SKIP dev_mount_shows_harmless_devices_only: /usr/bin/python3 missing: apt-get install python3");
        return;
    }
    dev_mount(false);
    match unprivileged_unavailable() {
        Some(why) => println!("SKIP dev_mount_shows_harmless_devices_only as nobody: {why}"),
        None => dev_mount(true),
    }
}
