//! Bad input to the CLI and to exec: every case fails fast with one line
//! `picos: ...` and the status a shell would give, or behaves exactly as
//! natively (compared with the kernel's own execve).
//!
//! Native behaviour is observed with `execprobe PATH ARGS...`, a small C
//! program that execs PATH and, if execve fails, prints `execve: errno N`.
//! Run under `picos run`, the same probe checks the runtime's execve (the
//! loader's `check_executable` and `load`); `picos run PATH` checks the CLI.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;

const PICOS: &str = env!("CARGO_BIN_EXE_picos");

/// Longest any one command may take: the bugs tested here include hangs.
const LIMIT: Duration = Duration::from_secs(60);

/// Execs argv[1] with argv[1..]; on failure prints the errno.
const EXECPROBE_C: &str = r#"
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    execv(argv[1], argv + 1);
    printf("execve: errno %d\n", errno);
    return 255;
}
"#;

/// Prints its argv, each element in brackets (so arguments' bounds show).
const PRINTARGS_C: &str = r#"
#include <stdio.h>
int main(int argc, char **argv) {
    for (int i = 0; i < argc; i++) printf("[%s]", argv[i]);
    printf("\n");
    return 0;
}
"#;

const HELLO_C: &str = r#"
#include <stdio.h>
int main(void) { puts("hello"); return 0; }
"#;

/// A fresh temporary directory under cargo's per-target temporary directory.
fn tempdir() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).expect("create CARGO_TARGET_TMPDIR");
    tempfile::Builder::new()
        .prefix("picos-cli-")
        .tempdir_in(base)
        .expect("create temp dir")
}

/// Compiles C `source` into `dir/name` with extra gcc `flags`.
fn compile(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let st = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .args(flags)
        .status()
        .expect("gcc");
    assert!(st.success(), "compiling {name}");
    out
}

/// Runs `cmd` (stdin from /dev/null), killing it and failing the test if it
/// takes longer than [`LIMIT`]. `rlimit_as`: an address-space limit for it.
fn run_limited(cmd: &mut Command, rlimit_as: Option<u64>) -> Output {
    cmd.stdin(Stdio::null());
    if let Some(bytes) = rlimit_as {
        // SAFETY: setrlimit is async-signal-safe; nothing else runs here.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    common::output_within(cmd, LIMIT)
}

fn run(cmd: &mut Command) -> Output {
    run_limited(cmd, None)
}

fn picos<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run(Command::new(PICOS).args(args))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `out` failed with exactly one line on stderr, `picos: ...`, and
/// returns that line.
fn one_error_line(out: &Output, what: &str) -> String {
    let stderr = text(&out.stderr);
    assert!(
        !out.status.success(),
        "{what}: succeeded: stdout {:?} stderr {stderr:?}",
        text(&out.stdout)
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("picos: "),
        "{what}: expected one line `picos: ...`, got {stderr:?} (status {:?})",
        out.status
    );
    lines[0].to_string()
}

/// A shell's status for an execve that failed with `errno` (bash's: 127 for
/// a missing file, 126 for any other reason).
fn shell_status(errno: i32) -> i32 {
    if errno == libc::ENOENT {
        127
    } else {
        126
    }
}

/// What running something natively did.
#[derive(Debug, PartialEq, Eq)]
enum Native {
    /// execve failed with this errno.
    Errno(i32),
    /// It ran: stdout and status (exit code, or 128+signal as a shell).
    Ran(String, i32),
}

/// Execs `path args` natively through the probe.
fn native(probe: &Path, path: &Path, args: &[&str]) -> Native {
    let out = run(Command::new(probe).arg(path).args(args));
    let stdout = text(&out.stdout);
    if let Some(e) = stdout.strip_prefix("execve: errno ") {
        return Native::Errno(e.trim().parse().unwrap());
    }
    Native::Ran(stdout, status_code(&out))
}

/// The status as a shell (and `picos run`) reports it.
fn status_code(out: &Output) -> i32 {
    match (out.status.code(), out.status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => unreachable!(),
    }
}

/// Checks `picos run path args` (the CLI's checks) and `picos run probe
/// path args` (the runtime's execve) against native behaviour; returns the
/// CLI's error line when native execve fails.
fn compare_with_native(probe: &Path, path: &Path, args: &[&str]) -> Option<String> {
    let what = format!("{} {args:?}", path.display());
    let expected = native(probe, path, args);
    // The runtime's execve, through the probe under picos.
    let under = run(Command::new(PICOS)
        .arg("run")
        .arg(probe)
        .arg(path)
        .args(args));
    let under_stdout = text(&under.stdout);
    match &expected {
        Native::Errno(e) => assert_eq!(
            under_stdout,
            format!("execve: errno {e}\n"),
            "{what}: execve under picos (stderr {:?})",
            text(&under.stderr)
        ),
        Native::Ran(stdout, status) => {
            assert_eq!(
                (&under_stdout, status_code(&under)),
                (stdout, *status),
                "{what}: execve under picos (stderr {:?})",
                text(&under.stderr)
            );
        }
    }
    // The CLI.
    let cli = run(Command::new(PICOS).arg("run").arg(path).args(args));
    match expected {
        Native::Errno(e) => {
            let line = one_error_line(&cli, &what);
            assert_eq!(
                status_code(&cli),
                shell_status(e),
                "{what}: native errno {e}, picos said {line:?}"
            );
            assert!(text(&cli.stdout).is_empty(), "{what}: the program ran");
            Some(line)
        }
        Native::Ran(stdout, status) => {
            assert_eq!(
                (text(&cli.stdout), status_code(&cli)),
                (stdout, status),
                "{what}: picos run (stderr {:?})",
                text(&cli.stderr)
            );
            None
        }
    }
}

fn write_exec(path: &Path, contents: &[u8]) {
    common::write_executable(path, contents);
}

fn mkfifo(path: &Path, mode: u32) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), mode as libc::mode_t) }, 0);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

// --- 1. manifests ---------------------------------------------------------------------

/// A manifest must be a regular file of at most 1 MiB: /dev/zero used to be
/// read until memory ran out, a FIFO blocked forever.
#[test]
fn manifest_must_be_a_small_regular_file() {
    let dir = tempdir();
    let fifo = dir.path().join("fifo.toml");
    mkfifo(&fifo, 0o644);
    let sock_path = dir.path().join("sock.toml");
    let _sock = std::os::unix::net::UnixListener::bind(&sock_path).unwrap();
    let big = dir.path().join("big.toml");
    // Valid TOML (a comment), just too long.
    std::fs::write(&big, format!("#{}\n", "x".repeat(1 << 20))).unwrap();
    let cases: [(&Path, &str); 5] = [
        (
            Path::new("/dev/zero"),
            "not a regular file (a character device)",
        ),
        (&fifo, "not a regular file (a FIFO)"),
        (&sock_path, "not a regular file (a socket)"),
        (dir.path(), "not a regular file (a directory)"),
        (&big, "larger than 1 MiB"),
    ];
    for (path, why) in cases {
        for args in [
            vec![
                OsStr::new("manifest"),
                OsStr::new("check"),
                path.as_os_str(),
            ],
            vec![
                OsStr::new("run"),
                OsStr::new("-m"),
                path.as_os_str(),
                OsStr::new("/bin/echo"),
                OsStr::new("ran"),
            ],
        ] {
            // An address-space limit, so that reading /dev/zero into memory
            // (the bug) fails soon instead of exhausting the machine.
            let out = run_limited(Command::new(PICOS).args(&args), Some(1 << 30));
            let line = one_error_line(&out, &format!("{args:?}"));
            let expected = format!("picos: cannot read manifest {}: {why}", path.display());
            assert!(line.starts_with(&expected), "{args:?}: {line:?}");
            assert!(text(&out.stdout).is_empty(), "{args:?}: ran");
        }
    }
    // Just under the limit is fine.
    std::fs::write(&big, format!("#{}\n", "x".repeat((1 << 20) - 3))).unwrap();
    let out = picos([OsStr::new("manifest"), OsStr::new("check"), big.as_os_str()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

// --- 2. programs that are not regular files -------------------------------------------

/// A FIFO, socket, directory or device with execute permission: execve
/// gives EACCES without opening it; so must picos (a FIFO used to hang it).
#[test]
fn non_regular_programs_fail_like_execve() {
    let dir = tempdir();
    let probe = compile(dir.path(), "execprobe", EXECPROBE_C, &[]);
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo, 0o755);
    let sock = dir.path().join("sock");
    let _sock = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o755)).unwrap();
    let subdir = dir.path().join("subdir");
    std::fs::create_dir(&subdir).unwrap();
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "data\n").unwrap();
    // The message of a regular file without execute permission.
    let plain_line = compare_with_native(&probe, &plain, &[]).unwrap();
    let reason = plain_line.rsplit(": ").next().unwrap().to_string();
    for path in [&fifo, &sock, &subdir, Path::new("/dev/null")] {
        assert_eq!(
            native(&probe, path, &[]),
            Native::Errno(libc::EACCES),
            "{}",
            path.display()
        );
        let line = compare_with_native(&probe, path, &[]).unwrap();
        assert_eq!(line, format!("picos: {}: {reason}", path.display()));
    }
}

// --- 3. ELF interpreters --------------------------------------------------------------

/// An ELF whose interpreter (PT_INTERP) names itself: Linux does not look
/// at an interpreter's own PT_INTERP, loads the file a second time as the
/// interpreter and starts it, and the program (its libc never set up)
/// crashes with SIGSEGV. picos does the same (a non-PIE one used to fail
/// with 126 "cannot map", since Linux maps a non-PIE interpreter over
/// whatever is there), and says why in one warning line.
#[test]
fn interpreter_with_an_interpreter_of_its_own() {
    let dir = tempdir();
    let probe = compile(dir.path(), "execprobe", EXECPROBE_C, &[]);
    for (name, flags) in [
        ("self_pie", &["-pie"][..]),
        ("self_nopie", &["-no-pie"][..]),
    ] {
        let path = dir.path().join(name);
        let flag = format!("-Wl,--dynamic-linker={}", path.display());
        let mut flags = flags.to_vec();
        flags.push(&flag);
        compile(dir.path(), name, HELLO_C, &flags);
        let expected = native(&probe, &path, &[]);
        assert!(
            matches!(expected, Native::Ran(_, s) if s > 128),
            "{name}: natively {expected:?}"
        );
        assert_eq!(compare_with_native(&probe, &path, &[]), None);
        let out = picos([OsStr::new("run"), path.as_os_str()]);
        let stderr = text(&out.stderr);
        assert_eq!(
            stderr,
            format!(
                "picos: warning: the ELF interpreter {p} of {p} has an interpreter (PT_INTERP) \
                 of its own, which Linux ignores: it runs without it\n",
                p = path.display()
            ),
            "{name}"
        );
    }
}

/// ELF interpreters that cannot be used fail with the kernel's errno
/// (ENOENT, EACCES, EIO for a file shorter than an ELF header, ELIBBAD for
/// a non-ELF file), and the CLI names the interpreter.
#[test]
fn bad_elf_interpreters_fail_like_execve() {
    let dir = tempdir();
    let d = dir.path();
    let probe = compile(d, "execprobe", EXECPROBE_C, &[]);
    let short_script = d.join("short_script");
    write_exec(&short_script, b"#!/bin/sh\necho x\n");
    let long_text = d.join("long_text");
    write_exec(&long_text, "not an ELF file\n".repeat(16).as_bytes());
    let fifo = d.join("fifo");
    mkfifo(&fifo, 0o755);
    let not_exec = d.join("ld-copy");
    std::fs::copy("/lib64/ld-linux-x86-64.so.2", &not_exec).unwrap();
    std::fs::set_permissions(&not_exec, std::fs::Permissions::from_mode(0o644)).unwrap();
    let missing = d.join("missing");
    let cases = [
        (&missing, libc::ENOENT, "no such file or directory"),
        (&fifo, libc::EACCES, "not an executable file"),
        (&not_exec, libc::EACCES, "not an executable file"),
        (&short_script, libc::EIO, "too short to be an ELF file"),
        (&long_text, libc::ELIBBAD, "not an ELF file"),
    ];
    for (i, (interp, errno, why)) in cases.into_iter().enumerate() {
        let prog = d.join(format!("prog{i}"));
        let flag = format!("-Wl,--dynamic-linker={}", interp.display());
        compile(d, &format!("prog{i}"), HELLO_C, &[&flag]);
        assert_eq!(
            native(&probe, &prog, &[]),
            Native::Errno(errno),
            "{}",
            interp.display()
        );
        let line = compare_with_native(&probe, &prog, &[]).unwrap();
        let expected = format!(
            "picos: {}: ELF interpreter {}: {why}",
            prog.display(),
            interp.display()
        );
        assert!(
            line.starts_with(&expected),
            "{line:?}, expected {expected:?}"
        );
    }
}

// --- 4. #! lines ----------------------------------------------------------------------

/// `#!` lines parsed as Linux's binfmt_script does: a NUL ends the
/// interpreter's name (and the argument), the line is at most 256 bytes, one
/// optional argument with its inner spaces; compared with native execve.
#[test]
fn shebang_lines_like_linux() {
    let dir = tempdir();
    let d = dir.path();
    let probe = compile(d, "execprobe", EXECPROBE_C, &[]);
    let pa = compile(d, "printargs", PRINTARGS_C, &[]);
    let p = pa.as_os_str().as_bytes();
    let line = |parts: &[&[u8]]| parts.concat();
    let long_arg = vec![b'x'; 300];
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("plain", line(&[b"#!", p, b"\necho\n"])),
        ("nul after name", line(&[b"#!", p, b"\0junk\n"])),
        ("nul in argument", line(&[b"#!", p, b" arg\0junk\n"])),
        ("inner spaces", line(&[b"#!", p, b"  a  b \t\n"])),
        (
            "leading blanks, tab",
            line(&[b"#! \t", p, b"\targ1 arg2\n"]),
        ),
        ("no newline", line(&[b"#!", p])),
        ("no newline, argument", line(&[b"#!", p, b" a b"])),
        ("no newline, trailing blank", line(&[b"#!", p, b"  a b "])),
        (
            "argument past 256 bytes",
            line(&[b"#!", p, b" ", &long_arg, b"\n"]),
        ),
        ("name past 256 bytes", line(&[b"#!", &[b'/'; 300], b"\n"])),
        (
            "only blanks past 256 bytes",
            line(&[b"#!", &[b' '; 300], b"\n"]),
        ),
        ("empty", b"#!\n".to_vec()),
        ("blank", b"#! \t \n".to_vec()),
        ("nul first", line(&[b"#!\0", p, b"\n"])),
        ("carriage return", line(&[b"#!", p, b"\r\n"])),
        (
            "missing interpreter",
            b"#!/nonexistent/interpreter\n".to_vec(),
        ),
    ];
    for (name, contents) in cases {
        let script = d.join(name.replace(' ', "_"));
        write_exec(&script, &contents);
        let expected = native(&probe, &script, &["x", "y z"]);
        if name.starts_with("nul after") || name == "plain" {
            assert!(matches!(expected, Native::Ran(..)), "{name}: {expected:?}");
        }
        let cli = compare_with_native(&probe, &script, &["x", "y z"]);
        if name == "missing interpreter" {
            assert_eq!(
                cli.as_deref(),
                Some(
                    format!(
                        "picos: {}: #! interpreter /nonexistent/interpreter: no such file or directory",
                        script.display()
                    )
                    .as_str()
                )
            );
        }
    }
}

/// A script's interpreter gets the script's path as the caller gave it to
/// execve (`./s`, `sub/../s`, a PATH lookup's join, `/dev/fd/N` for
/// `fexecve`), not a path made absolute: the first program (`picos run
/// ./s`) and programs it runs, natively and under picos alike.
#[test]
fn scripts_get_the_path_they_were_run_by() {
    let dir = tempdir();
    let d = dir.path();
    std::fs::create_dir(d.join("sub")).unwrap();
    write_exec(&d.join("s"), b"#!/bin/sh\necho \"$0 $*\"\n");
    let fexec = r#"import os, sys
fd = os.open("s", os.O_RDONLY)
os.execve(fd, ["s", "via", "fexecve"], {})"#;
    let mut shell =
        String::from("./s a; sub/../s b; PATH=.:/bin s c; sh -c './s d'; cd sub && ../s e");
    let inheritable = fexec.replace("os.O_RDONLY)", "os.O_RDONLY); os.set_inheritable(fd, True)");
    if Path::new("/usr/bin/python3").is_file() {
        shell.push_str(&format!(
            "; cd ..; /usr/bin/python3 -c '{inheritable}'; /usr/bin/python3 -c '{fexec}'"
        ));
    }
    let run = |picos: bool| {
        let mut c = if picos {
            let mut c = Command::new(PICOS);
            c.args(["run", "./s", "first"]);
            c
        } else {
            let mut c = Command::new("./s");
            c.arg("first");
            c
        };
        let first = c.current_dir(d).output().unwrap();
        let mut c = if picos {
            let mut c = Command::new(PICOS);
            c.args(["run", "/bin/sh", "-c", &shell]);
            c
        } else {
            let mut c = Command::new("/bin/sh");
            c.args(["-c", &shell]);
            c
        };
        let rest = c.current_dir(d).output().unwrap();
        format!(
            "{}{}{}",
            String::from_utf8_lossy(&first.stdout),
            String::from_utf8_lossy(&rest.stdout),
            String::from_utf8_lossy(&rest.stderr)
        )
    };
    let native = run(false);
    assert!(
        native.starts_with("./s first\n./s a\nsub/../s b\n./s c\n"),
        "{native}"
    );
    assert_eq!(run(true), native);
}

// --- 5. nested #! interpreters --------------------------------------------------------

/// Chains of 1 to 7 scripts, each the interpreter of the one before:
/// Linux runs 5 and fails 6 or more with ELOOP (picos used to stop at 4).
#[test]
fn script_chains_like_linux() {
    let dir = tempdir();
    let d = dir.path();
    let probe = compile(d, "execprobe", EXECPROBE_C, &[]);
    let pa = compile(d, "printargs", PRINTARGS_C, &[]);
    for n in 1..=7 {
        let chain = d.join(format!("chain{n}"));
        std::fs::create_dir(&chain).unwrap();
        let script = |i: usize| chain.join(format!("s{i}"));
        for i in 1..=n {
            let interp = if i == n { pa.clone() } else { script(i + 1) };
            write_exec(
                &script(i),
                format!("#!{} -a{i}\n", interp.display()).as_bytes(),
            );
        }
        let expected = native(&probe, &script(1), &["arg"]);
        assert_eq!(
            matches!(expected, Native::Errno(libc::ELOOP)),
            n > 5,
            "{n} scripts: natively {expected:?}"
        );
        let line = compare_with_native(&probe, &script(1), &["arg"]);
        if n > 5 {
            assert_eq!(
                line.unwrap(),
                format!(
                    "picos: {}: too many levels of #! interpreters (Linux allows 5 nested scripts)",
                    script(1).display()
                )
            );
        }
    }
    // Linux opens the interpreter a script names before it checks the
    // depth: six scripts whose last interpreter is missing give ENOENT.
    let chain = d.join("chain6missing");
    std::fs::create_dir(&chain).unwrap();
    for i in 1..=6 {
        let interp = if i == 6 {
            PathBuf::from("/nonexistent/interpreter")
        } else {
            chain.join(format!("s{}", i + 1))
        };
        write_exec(
            &chain.join(format!("s{i}")),
            format!("#!{}\n", interp.display()).as_bytes(),
        );
    }
    let s1 = chain.join("s1");
    assert_eq!(native(&probe, &s1, &[]), Native::Errno(libc::ENOENT));
    let line = compare_with_native(&probe, &s1, &[]).unwrap();
    assert!(
        line.ends_with(&format!(
            "#! interpreter /nonexistent/interpreter (named by {}): no such file or directory",
            chain.join("s6").display()
        )),
        "{line:?}"
    );
}

/// A script whose interpreter is a script whose interpreter is missing: the
/// message names the missing file and the script that names it (it used to
/// say the program's interpreter "does not exist", though it does).
#[test]
fn missing_interpreter_of_an_interpreter_is_named() {
    let dir = tempdir();
    let d = dir.path();
    let probe = compile(d, "execprobe", EXECPROBE_C, &[]);
    let inner = d.join("inner");
    write_exec(&inner, b"#!/nonexistent/sh\n");
    let outer = d.join("outer");
    write_exec(&outer, format!("#!{}\n", inner.display()).as_bytes());
    let line = compare_with_native(&probe, &outer, &[]).unwrap();
    assert_eq!(
        line,
        format!(
            "picos: {}: #! interpreter /nonexistent/sh (named by {}): no such file or directory",
            outer.display(),
            inner.display()
        )
    );
}

// --- 6. --stats-json ------------------------------------------------------------------

/// A `--stats-json` file that cannot be written fails before the program
/// runs (it used to be dropped silently after the run, with status 0).
#[test]
fn stats_json_must_be_writable_up_front() {
    let dir = tempdir();
    let fifo = dir.path().join("fifo.json");
    mkfifo(&fifo, 0o644);
    let missing_dir = dir.path().join("no/such/dir/stats.json");
    let cases: [(&Path, &str); 3] = [
        (&missing_dir, "No such file or directory"),
        (dir.path(), "Is a directory"),
        (&fifo, "a FIFO with no reader"),
    ];
    for (path, why) in cases {
        let out = picos([
            OsStr::new("run"),
            OsStr::new("--stats-json"),
            path.as_os_str(),
            OsStr::new("/bin/echo"),
            OsStr::new("ran"),
        ]);
        let line = one_error_line(&out, &path.display().to_string());
        assert!(
            line.starts_with(&format!(
                "picos: --stats-json {}: cannot append to it: {why}",
                path.display()
            )),
            "{line:?}"
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stdout).is_empty(), "the program ran");
    }
    // A writable one still gets the statistics.
    let ok = dir.path().join("stats.json");
    let out = picos([
        OsStr::new("run"),
        OsStr::new("--stats-json"),
        ok.as_os_str(),
        OsStr::new("/bin/true"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&ok)
        .unwrap()
        .contains("\"syscalls\""));
}

// --- 7. options -----------------------------------------------------------------------

/// An unknown option before the program is a usage error (it used to be
/// taken as the program's name); everything after the program is the
/// program's, options of picos included.
#[test]
fn unknown_options_before_the_program_are_errors() {
    let out = picos(["run", "--bogus", "/bin/echo", "ran"]);
    let line = one_error_line(&out, "run --bogus");
    assert!(
        line.starts_with("picos: unexpected argument '--bogus' found"),
        "{line:?}"
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).is_empty());
    let args = ["--bogus", "-x", "--trace", "-m", "--", "--stats"];
    let native = run(Command::new("/bin/echo").args(args));
    let out = picos(["run", "/bin/echo"].iter().chain(args.iter()));
    assert_eq!(text(&out.stdout), text(&native.stdout));
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    // `--` still allows a program whose name starts with '-'.
    let out = picos(["run", "--", "--bogus"]);
    assert_eq!(
        one_error_line(&out, "run -- --bogus"),
        "picos: --bogus: command not found"
    );
    assert_eq!(out.status.code(), Some(127));
    // Other usage errors are one line too.
    for args in [&["run", "-m"][..], &["manifest", "check"], &["frob"]] {
        let out = picos(args);
        one_error_line(&out, &format!("{args:?}"));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

// --- 8. picos under picos -------------------------------------------------------------

/// picos under picos cannot work (the runtime does not offer Syscall User
/// Dispatch to its programs): the inner picos says so in one line, with
/// 126, instead of "cannot run /proc/self/fd/3".
#[test]
fn picos_under_picos_fails_clearly() {
    let out = picos(["run", PICOS, "run", "/bin/echo", "ran"]);
    let line = one_error_line(&out, "picos run picos run");
    assert!(
        line.starts_with("picos: Syscall User Dispatch is not available here"),
        "{line:?}"
    );
    assert!(line.contains("cannot run under picos"), "{line:?}");
    assert_eq!(out.status.code(), Some(126));
    assert!(text(&out.stdout).is_empty());
}

// --- 9. The standard descriptors -------------------------------------------------------

/// Reports which of descriptors 0-2 are open and which number the first
/// file it opens gets, into the file `argv[1]` (its standard output may be
/// closed).
const STDFDS_C: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char buf[128];
    int n = 0;
    if (argc < 2) return 2;
    for (int fd = 0; fd < 3; fd++)
        n += snprintf(buf + n, sizeof buf - n, "%d:%s ", fd,
                      fcntl(fd, F_GETFD) == -1 ? "closed" : "open");
    int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    n += snprintf(buf + n, sizeof buf - n, "first:%d\n", out);
    return write(out, buf, n) == n ? 0 : 1;
}
"#;

/// A program started with some of its standard descriptors closed finds
/// them closed under picos as natively (Rust's runtime in the CLI opens
/// /dev/null on closed ones at start; `stdfds` closes those again before
/// the runtime's execve), and its first open takes the lowest of them.
#[test]
fn closed_standard_descriptors_stay_closed() {
    let dir = tempdir();
    let probe = compile(dir.path(), "stdfds", STDFDS_C, &[]);
    let report = |cmd: &mut Command, closed: &'static [i32], name: &str| -> String {
        let path = dir.path().join(name);
        cmd.arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        close_in_child(cmd, closed);
        let out = common::output_within(cmd, LIMIT);
        assert!(out.status.success(), "{name}: {out:?}");
        std::fs::read_to_string(&path).unwrap()
    };
    let cases: [&'static [i32]; 6] = [&[], &[0], &[1], &[2], &[0, 2], &[0, 1, 2]];
    for (i, closed) in cases.into_iter().enumerate() {
        let native = report(&mut Command::new(&probe), closed, &format!("native-{i}"));
        let under = report(
            Command::new(PICOS).arg("run").arg(&probe),
            closed,
            &format!("picos-{i}"),
        );
        assert_eq!(under, native, "closed {closed:?}");
        if let Some(&lowest) = closed.first() {
            assert!(native.ends_with(&format!("first:{lowest}\n")), "{native}");
        }
    }
    // Started with its standard error closed, or closing it itself, a
    // program that opens a file (which takes descriptor 2) and then makes a
    // call the runtime warns about (uselib: ENOSYS) finds no warning of the
    // runtime's in it; with its standard error open, the warning is there.
    let warner = compile(dir.path(), "warn2", WARN2_C, &[]);
    for (closed_by, picos) in [
        ("parent", false),
        ("parent", true),
        ("self", false),
        ("self", true),
    ] {
        let name = format!("w-{closed_by}-{picos}");
        let path = dir.path().join(&name);
        let mut cmd = if picos {
            let mut c = Command::new(PICOS);
            c.arg("run").arg(&warner);
            c
        } else {
            Command::new(&warner)
        };
        cmd.arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if closed_by == "self" {
            cmd.arg("self");
        } else {
            close_in_child(&mut cmd, &[2]);
        }
        let out = common::output_within(&mut cmd, LIMIT);
        assert!(out.status.success(), "{name}: {out:?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "{name}");
    }
    let out = run(Command::new(PICOS).arg("run").arg(&warner).arg("/dev/null"));
    assert!(
        text(&out.stderr).contains("unsupported system call uselib"),
        "{out:?}"
    );
}

/// Makes `cmd`'s child close descriptors `fds` before its exec.
fn close_in_child(cmd: &mut Command, fds: &'static [i32]) {
    // SAFETY: close(2) is async-signal-safe; nothing else runs here.
    unsafe {
        cmd.pre_exec(move || {
            for &fd in fds {
                libc::close(fd);
            }
            Ok(())
        });
    }
}

/// Opens the file `argv[1]` (descriptor 2 when standard error is closed;
/// with a second argument it closes its standard error first), makes a
/// call picos does not serve (uselib, with a warning the first time), and
/// closes the file; fails unless the file took descriptor 2.
const WARN2_C: &str = r#"
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (argc > 2) close(2); /* "self": the program closes it itself */
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    long r = syscall(134, 0);
    close(fd);
    return fd == 2 && r == -1 ? 0 : 1;
}
"#;
