//! The sandbox (`picos run --sandbox`): the escape suite (tests/sandbox/
//! escape.c: every attack succeeds natively and fails under the sandbox,
//! through the runtime and around it), the posture of every thread of a
//! tree, real programs, `picos sandbox explain` and its errors.

mod common;

use common::{is_root, output_within, text, workspace};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const PICOS: &str = env!("CARGO_BIN_EXE_picos");
const LIMIT: Duration = Duration::from_secs(300);

/// A fresh directory for a test (removed when it is dropped).
fn workdir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(prefix).tempdir().unwrap()
}

fn compile(src: &str, out: &Path, flags: &[&str]) {
    let st = Command::new("gcc")
        .args(["-O1", "-Wall", "-o"])
        .arg(out)
        .arg(workspace().join(src))
        .args(flags)
        .status()
        .expect("gcc");
    assert!(st.success(), "gcc {src}");
}

/// The user the process outside runs as when the test runs as root
/// (tests/sandbox/escape.c's `KILL_UID`).
const KILL_UID: u32 = 61234;

/// What lives outside the sandbox for the escape suite: a directory with a
/// secret, a process (which notes a SIGURG in the working directory), an
/// abstract socket, a Unix socket that hands out the secret's descriptor, a
/// TCP listener and a free port.
struct Outside {
    dir: tempfile::TempDir,
    sentinel: std::process::Child,
    abstract_name: String,
    _abstract: std::os::unix::net::UnixListener,
    _tcp: std::net::TcpListener,
    tcp_port: u16,
    free_port: u16,
}

impl Outside {
    fn new(inside: &Path) -> Outside {
        use std::os::linux::net::SocketAddrExt;
        let dir = workdir("picos-sandbox-outside-");
        let mut sentinel = Command::new("/bin/sh");
        // It says when its trap is set: a SIGURG before that would end it
        // unnoticed, and the native run would report the attack blocked.
        let ready = inside.join("sentinel-ready");
        sentinel.arg("-c").arg(format!(
            "trap 'touch {0}/signalled' URG; touch {0}/sentinel-ready; while :; do sleep 0.1; done",
            inside.display()
        ));
        if rustix::process::geteuid().is_root() {
            // As a user of its own, which the escape suite's kill(-1)
            // becomes first (natively): a SIGURG to every process the
            // suite may signal then reaches this one, not every process of
            // the machine. It must be able to note it where it is run.
            use std::os::unix::process::CommandExt;
            std::fs::set_permissions(inside, std::fs::Permissions::from_mode(0o777)).unwrap();
            sentinel.uid(KILL_UID).gid(KILL_UID);
        }
        let sentinel = sentinel.spawn().unwrap();
        let t = std::time::Instant::now();
        while !ready.exists() {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(30),
                "the sentinel process did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let abstract_name = format!("picos-escape-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        let abs = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
        // The Unix socket's server: sends each client a descriptor of the
        // secret.
        let path_l = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
        let secret = dir.path().join("secret");
        std::thread::spawn(move || {
            for c in path_l.incoming() {
                let Ok(c) = c else { break };
                let Ok(f) = std::fs::File::open(&secret) else {
                    break;
                };
                let _ = send_fd(&c, &f);
            }
        });
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp_port = tcp.local_addr().unwrap().port();
        let free_port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let o = Outside {
            dir,
            sentinel,
            abstract_name,
            _abstract: abs,
            _tcp: tcp,
            tcp_port,
            free_port,
        };
        o.reset();
        o
    }

    /// The outside directory as the attacks expect it (a native run
    /// changes it).
    fn reset(&self) {
        let d = self.dir.path();
        for n in ["created", "planted"] {
            let _ = std::fs::remove_file(d.join(n));
        }
        let _ = std::fs::remove_dir(d.join("newdir"));
        std::fs::write(d.join("secret"), "the secret\n").unwrap();
        std::fs::write(d.join("victim"), "victim\n").unwrap();
        std::fs::set_permissions(d.join("victim"), std::fs::Permissions::from_mode(0o644)).unwrap();
        common::write_executable(&d.join("true"), &std::fs::read("/bin/true").unwrap());
    }

    fn args(&self) -> Vec<String> {
        vec![
            self.dir.path().display().to_string(),
            self.sentinel.id().to_string(),
            self.abstract_name.clone(),
            self.dir.path().join("sock").display().to_string(),
            self.tcp_port.to_string(),
            self.free_port.to_string(),
        ]
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = self.sentinel.kill();
        let _ = self.sentinel.wait();
    }
}

fn send_fd(c: &std::os::unix::net::UnixStream, f: &std::fs::File) -> std::io::Result<()> {
    use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::os::fd::AsFd;
    let fds = [f.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = SendAncillaryBuffer::new(&mut space);
    anc.push(SendAncillaryMessage::ScmRights(&fds));
    sendmsg(
        c,
        &[std::io::IoSlice::new(b"x")],
        &mut anc,
        SendFlags::empty(),
    )?;
    Ok(())
}

/// The attacks' names, in the order the program runs them.
fn attack_names(native: &str) -> Vec<String> {
    native
        .lines()
        .filter_map(|l| l.split(' ').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn escape_suite_fails_under_the_sandbox() {
    if !is_root() {
        eprintln!(
            "SKIP: escape_suite_fails_under_the_sandbox: needs root (natively, most attacks \
             need privileges to succeed, and the suite must see them succeed)"
        );
        return;
    }
    let work = workdir("picos-sandbox-in-");
    let w = work.path();
    compile(
        "tests/sandbox/escape.c",
        &w.join("escape"),
        &["-static", "-mno-red-zone"],
    );
    std::fs::copy(w.join("escape"), w.join("suid")).unwrap();
    std::os::unix::fs::chown(w.join("suid"), Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(w.join("suid"), std::fs::Permissions::from_mode(0o4755)).unwrap();
    let outside = Outside::new(w);
    // Natively, in a mount namespace of its own (the mount and chroot
    // attacks then change nothing outside the test).
    let native = output_within(
        Command::new("unshare")
            .arg("-m")
            .arg(w.join("escape"))
            .args(outside.args())
            .current_dir(w),
        LIMIT,
    );
    let native = text(&native);
    let names = attack_names(&native);
    assert!(names.len() >= 30, "too few attacks:\n{native}");
    for l in native.lines() {
        assert!(
            l.ends_with(" direct: escaped"),
            "natively every attack must get through (else the suite cannot see an escape): \
             {l}\n{native}"
        );
    }
    outside.reset();
    // Where the Syscall User Dispatch selector is in the thread's record
    // (at the GS base): what a program that reads the runtime's binary
    // knows.
    let sud_offset =
        std::mem::offset_of!(picos_rt::kernel::thread::Thread, sud_selector).to_string();
    // The ways around the runtime do go around it: with the same kind of
    // mounts but no sandbox (in a mount namespace of its own, as natively),
    // what the runtime refuses gets through them.
    let mounts_only = outside.dir.path().join("mounts.toml");
    std::fs::write(
        &mounts_only,
        format!(
            "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\
             [[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/\"\n\
             [[fs.mounts]]\npath = \"{w}\"\nuri = \"file:{w}\"\n\
             [[fs.mounts]]\npath = \"/proc\"\nuri = \"file:/proc\"\nreadonly = true\n",
            w = w.canonicalize().unwrap().display()
        ),
    )
    .unwrap();
    let around = output_within(
        Command::new("unshare")
            .args(["-m", PICOS, "run", "-m"])
            .arg(&mounts_only)
            .arg("./escape")
            .args(outside.args())
            .env("ESCAPE_SUD_OFFSET", &sud_offset)
            .current_dir(w),
        LIMIT,
    );
    let around = text(&around);
    for l in [
        "open-absolute runtime: blocked (ENOENT)",
        "open-absolute bypass: escaped",
        "open-absolute selector: escaped",
        "mkdir-outside runtime: blocked (ENOENT)",
        "mkdir-outside bypass: escaped",
    ] {
        assert!(
            around.lines().any(|x| x == l),
            "without the sandbox: no {l:?}\n{around}"
        );
    }
    outside.reset();
    let out = output_within(
        Command::new(PICOS)
            .args(["run", "--sandbox", "./escape"])
            .args(outside.args())
            .env("ESCAPE_SUD_OFFSET", &sud_offset)
            .current_dir(w),
        LIMIT,
    );
    let got = text(&out);
    assert!(
        out.status.success(),
        "{}\n{got}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut escapes = Vec::new();
    for name in &names {
        for way in ["runtime", "bypass", "selector"] {
            let prefix = format!("{name} {way}: ");
            match got.lines().find(|l| l.starts_with(&prefix)) {
                Some(l) if l.contains(": blocked (") => {}
                Some(l) => escapes.push(l.to_string()),
                None => escapes.push(format!("{prefix}(no line)")),
            }
        }
    }
    assert!(
        escapes.is_empty(),
        "{} escape(s) under the sandbox:\n{}\n--- output ---\n{got}",
        escapes.len(),
        escapes.join("\n")
    );
    // The outside directory is as it was.
    assert_eq!(
        std::fs::read_to_string(outside.dir.path().join("victim")).unwrap(),
        "victim\n"
    );
    assert!(!outside.dir.path().join("created").exists());
}

/// Reads a /proc status field.
fn field<'a>(status: &'a str, name: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')))
        .unwrap_or("")
        .trim()
}

/// The processes whose parent chain leads to `root` (and `root`).
fn tree_of(root: u32) -> Vec<u32> {
    let mut all: Vec<(u32, u32)> = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
        let ppid = after
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        all.push((pid, ppid));
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(all.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree
}

#[test]
fn posture_every_thread_of_the_tree_is_confined() {
    let work = workdir("picos-sandbox-posture-");
    let w = work.path();
    compile("tests/sandbox/posture.c", &w.join("posture"), &["-pthread"]);
    let outside = std::process::id();
    let mut child = Command::new(PICOS)
        .args(["run", "--sandbox", "./posture"])
        .arg(outside.to_string())
        .current_dir(w)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let root = child.id();
    // A watchdog: a tree that never gets ready fails the test, not hangs it.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if done_rx.recv_timeout(LIMIT).is_err() {
            // SAFETY: kill(2) has no memory effects; `root` is our child,
            // not reaped until the test's wait below.
            unsafe { libc::kill(root as i32, libc::SIGKILL) };
        }
    });
    let mut lines = Vec::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 {
        if line.trim() == "ready" {
            break;
        }
        lines.push(line.trim().to_string());
        line.clear();
    }
    // From the inside: each of the 6 threads is in the Landlock domain.
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(lines.iter().all(|l| l.ends_with(": confined")), "{lines:?}");
    // From the outside: every thread of every process of the tree.
    let tree = tree_of(root);
    assert_eq!(tree.len(), 3, "the tree: {tree:?}");
    let mut checked = 0;
    for pid in &tree {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let core = limits
            .lines()
            .find(|l| l.starts_with("Max core file size"))
            .unwrap();
        assert!(
            core.split_whitespace().skip(4).take(2).all(|v| v == "0"),
            "{pid}: {core}"
        );
        for t in std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .flatten()
        {
            let st = std::fs::read_to_string(t.path().join("status")).unwrap();
            let who = format!("{pid}/{}", t.file_name().to_string_lossy());
            assert_eq!(field(&st, "Seccomp"), "2", "{who}: seccomp mode");
            assert_ne!(field(&st, "Seccomp_filters"), "0", "{who}");
            assert_eq!(field(&st, "NoNewPrivs"), "1", "{who}");
            for cap in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
                assert_eq!(field(&st, cap), "0000000000000000", "{who}: {cap}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 6, "threads checked");
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    let _ = done_tx.send(());
}

#[test]
fn real_programs_run_sandboxed() {
    let work = workdir("picos-sandbox-real-");
    let w = work.path();
    let script = "import os, shutil, tempfile\n\
        with tempfile.TemporaryDirectory() as d:\n\
        \x20   os.makedirs(os.path.join(d, 'a', 'b'))\n\
        \x20   open(os.path.join(d, 'a', 'b', 'f'), 'w').write('x' * 100)\n\
        \x20   shutil.copytree(os.path.join(d, 'a'), 'copy')\n\
        \x20   print(sorted((os.path.relpath(r, 'copy'), sorted(f)) for r, _, f in os.walk('copy')))\n\
        shutil.rmtree('copy')\n\
        print(open('/etc/hostname').read() != '')\n";
    let native = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .current_dir(w)
        .output()
        .unwrap();
    let out = output_within(
        Command::new(PICOS)
            .args(["run", "--sandbox", "/usr/bin/python3", "-c", script])
            .current_dir(w),
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text(&out), text(&native));
    // sqlite3 writes its database (and journal) in the working directory.
    let sql = "create table t(x); insert into t values (1), (2); select sum(x) from t;";
    let out = output_within(
        Command::new(PICOS)
            .args(["run", "--sandbox", "sqlite3", "db.sqlite", sql])
            .current_dir(w),
        LIMIT,
    );
    assert_eq!(
        text(&out),
        "3\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(w.join("db.sqlite").exists());
}

/// The sandboxed tree runs from the runtime cache (its image has a
/// Landlock rule of its own: read and execute), and cannot change it: not
/// by its path (natively, the same program writes a file there), not
/// through the tree's own /proc exe links. The image is the same after.
#[test]
fn sandbox_cannot_change_the_runtime_cache() {
    let work = workdir("picos-sandbox-cache-");
    let w = work.path();
    let cache = w.join("cache");
    let inside = w.join("work");
    std::fs::create_dir(&inside).unwrap();
    // A reference image, from an unconfined run with a cache of its own.
    let reference = w.join("reference");
    let out = output_within(
        Command::new(PICOS)
            .args(["run", "/bin/true"])
            .env("XDG_CACHE_HOME", &reference),
        LIMIT,
    );
    assert!(out.status.success(), "{out:?}");
    let image_of = |root: &Path| -> PathBuf {
        let dir = root.join("picos").join("runtime");
        let mut images: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            // (Beside the image: the known-sites file of unconfined runs.)
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("picos-rt-")
            })
            .collect();
        assert_eq!(images.len(), 1, "{images:?}");
        images.pop().unwrap()
    };
    let reference = image_of(&reference);
    let name = reference.file_name().unwrap().to_owned();
    let reference = std::fs::read(&reference).unwrap();
    let script = "import os, subprocess, sys\n\
        image = sys.argv[1]\n\
        try:\n\
        \x20   os.chmod(image, 0o700)\n\
        \x20   with open(image, 'r+b') as f: f.write(b'\\0' * 16)\n\
        \x20   print('path: escaped')\n\
        except OSError as e:\n\
        \x20   print('path: refused')\n\
        child = subprocess.Popen(['/bin/sleep', '10'])\n\
        print('from the cache:', '.tree-' in os.readlink(f'/proc/{child.pid}/exe'))\n\
        try:\n\
        \x20   fd = os.open(f'/proc/{child.pid}/exe', os.O_WRONLY)\n\
        \x20   os.write(fd, b'\\0' * 16)\n\
        \x20   print('exe link: escaped')\n\
        except OSError as e:\n\
        \x20   print('exe link: refused')\n\
        child.kill()\n\
        child.wait()\n";
    // Natively the program writes a file at the cache's path (a copy).
    let copy = w.join("copy");
    std::fs::write(&copy, &reference).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o500)).unwrap();
    let native = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .arg(&copy)
        .current_dir(&inside)
        .output()
        .unwrap();
    assert!(
        text(&native).starts_with("path: escaped\n"),
        "natively the write must get through: {native:?}"
    );
    // The tree's image: written by this run into its cache.
    let image = cache.join("picos").join("runtime").join(&name);
    let out = output_within(
        Command::new(PICOS)
            .args(["run", "--sandbox", "/usr/bin/python3", "-c", script])
            .arg(&image)
            .env("XDG_CACHE_HOME", &cache)
            .current_dir(&inside),
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text(&out),
        "path: refused\nfrom the cache: True\nexe link: refused\n"
    );
    assert_eq!(image_of(&cache), image);
    assert_eq!(
        std::fs::metadata(&image).unwrap().permissions().mode() & 0o777,
        0o555
    );
    assert!(
        std::fs::read(&image).unwrap() == reference,
        "the cached image changed"
    );
}

#[test]
fn sandbox_network_follows_the_manifest() {
    let work = workdir("picos-sandbox-net-");
    let w = work.path();
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let denied = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (pa, pd) = (
        allowed.local_addr().unwrap().port(),
        denied.local_addr().unwrap().port(),
    );
    let manifest = w.join("m.toml");
    std::fs::write(
        &manifest,
        format!(
            "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\
             [sandbox]\nenable = true\nnet.connect = [{pa}]\n"
        ),
    )
    .unwrap();
    let script = format!(
        "import socket\n\
         for p in ({pa}, {pd}):\n\
         \x20   try:\n\
         \x20       socket.create_connection(('127.0.0.1', p)).close(); print(p == {pa}, 'ok')\n\
         \x20   except OSError as e: print(p == {pa}, e.errno)\n\
         try: socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print('udp ok')\n\
         except OSError as e: print('udp', e.errno)\n"
    );
    let out = output_within(
        Command::new(PICOS)
            .arg("run")
            .arg("-m")
            .arg(&manifest)
            .args(["/usr/bin/python3", "-c", &script])
            .current_dir(w),
        LIMIT,
    );
    assert_eq!(
        text(&out),
        format!("True ok\nFalse {}\nudp {}\n", libc::EACCES, libc::EPERM),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `picos sandbox explain` says the same.
    let ex = Command::new(PICOS)
        .args(["sandbox", "explain", "-m"])
        .arg(&manifest)
        .current_dir(w)
        .output()
        .unwrap();
    let ex = text(&ex);
    assert!(ex.contains(&format!("TCP connect: ports {pa}")), "{ex}");
    assert!(ex.contains("TCP bind:    ports none"), "{ex}");
    assert!(
        ex.contains("read, execute          /usr (host /usr)"),
        "{ex}"
    );
    assert!(
        ex.contains(&format!(
            "read, write, execute   {}",
            w.canonicalize().unwrap().display()
        )),
        "{ex}"
    );
    assert!(ex.contains("ioctl: any request but TIOCSTI"), "{ex}");
}

#[test]
fn sandbox_errors_are_clear() {
    // The default policy would make the whole tree writable from `/`.
    let out = Command::new(PICOS)
        .args(["run", "--sandbox", "/bin/true"])
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the working directory is /"), "{err}");
    // A bad port names the key.
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.toml");
    std::fs::write(&m, "[sandbox]\nnet.bind = [65536]\n").unwrap();
    let out = Command::new(PICOS)
        .arg("run")
        .arg("-m")
        .arg(&m)
        .arg("/bin/true")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sandbox.net.bind[0]") && err.contains("65535"),
        "{err}"
    );
}

#[test]
fn sandbox_as_an_unprivileged_user() {
    if !is_root() {
        eprintln!("SKIP: sandbox_as_an_unprivileged_user: needs root to become nobody");
        return;
    }
    let work = workdir("picos-sandbox-nobody-");
    let w = work.path();
    std::fs::set_permissions(w, std::fs::Permissions::from_mode(0o777)).unwrap();
    let secret = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let script = format!(
        "import os\n\
         open('mine', 'w').write('x'); print(os.listdir('.'))\n\
         try: open({:?}); print('escaped')\n\
         except OSError as e: print(e.errno)\n",
        secret.display()
    );
    let out = output_within(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", PICOS])
            .args(["run", "--sandbox", "/usr/bin/python3", "-c", &script])
            .current_dir(w),
        LIMIT,
    );
    assert_eq!(
        text(&out),
        format!("['mine']\n{}\n", libc::ENOENT),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::io::stdout().flush();
}
