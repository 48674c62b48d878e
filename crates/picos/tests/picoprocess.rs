//! Behaviour specific to picos (no native counterpart to compare with):
//! the runtime's memory is protected from the program, and the CLI's
//! `syscalls` and `manifest check` commands.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{output_within, workspace};

const PICOS: &str = env!("CARGO_BIN_EXE_picos");

fn compile(name: &str) -> PathBuf {
    compile_with(name, &[])
}

fn compile_with(name: &str, flags: &[&str]) -> PathBuf {
    compile_from("tests/picoprocess", name, flags)
}

fn compile_from(dir: &str, name: &str, flags: &[&str]) -> PathBuf {
    let src = workspace().join(dir).join(format!("{name}.c"));
    let out_dir = workspace().join("target/picoprocess");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join(name);
    // Tests run in parallel and may build the same program: compile to a
    // private name, then rename (atomic), so no test runs a half-written file.
    let tmp = out_dir.join(format!(
        "{name}.{}.{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    ));
    let st = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&tmp)
        .arg(&src)
        .args(flags)
        .status()
        .expect("gcc");
    assert!(st.success(), "compiling {}", src.display());
    std::fs::rename(&tmp, &out).unwrap();
    out
}

#[test]
fn runtime_memory_is_protected() {
    let prog = compile("runtime_memory");
    let out = Command::new(PICOS).arg("run").arg(&prog).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "status {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = "image span without holes: yes\nruntime mapping: found\nmunmap: refused\nmprotect: refused\nmadvise: refused\n\
                    mmap MAP_FIXED: refused\nmmap MAP_FIXED_NOREPLACE: refused\nmremap: refused\n\
                    munmap overlapping: refused\nown mapping: ok\n";
    assert_eq!(stdout, expected);
}

/// ptrace reaches no process outside the picoprocess tree: tracing the
/// process that started picos (which natively, as root, succeeds and
/// would stop it) and asking it to trace us are EPERM, as under a Yama
/// policy; a process of the tree can be seized; the runtime's board (the
/// tree's ptrace state) cannot be detached by the program.
#[test]
fn ptrace_outside_the_tree_is_refused() {
    let prog = compile("ptrace_outside");
    let out = Command::new(PICOS).arg("run").arg(&prog).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "status {:?}\n{stdout}", out.status);
    assert_eq!(
        stdout,
        "traceme (parent outside the tree): EPERM\nattach outside: EPERM\n\
         seize outside: EPERM\npeekdata outside: ESRCH\npeekdata untraced child: ESRCH\n\
         seize child: succeeded\nattach gone: ESRCH\nshmdt board: Invalid argument\n\
         seize after shmdt: succeeded\n"
    );
}

/// 32 threads, 1,000,000 system calls, while new code is mapped, patched and
/// unmapped: no crash, every result right, and sites really were patched.
#[test]
fn patching_under_threads_stress() {
    let prog = compile_with("patch_stress", &["-pthread"]);
    let native = Command::new(&prog).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&native.stdout),
        "calls: 1000000\nwrong: 0\n"
    );
    // The same output as natively, no lock misused, sites patched; the
    // log, for more checks.
    let check = |out: std::process::Output, how: &str| -> String {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "calls: 1000000\nwrong: 0\n",
            "{how}: {stderr}"
        );
        assert!(out.status.success(), "{how}: {:?}", out.status);
        assert!(!stderr.contains("lock order violation"), "{how}: {stderr}");
        let patched = stderr.lines().filter(|l| l.contains("patch site")).count();
        assert!(
            patched >= 3,
            "{how}: expected patched sites, saw {patched}:\n{stderr}"
        );
        stderr
    };
    let stderr = check(
        Command::new(PICOS)
            .args(["run", "--log-level", "debug"])
            .arg(&prog)
            .output()
            .unwrap(),
        "picos",
    );
    // With threads sharing the descriptor table, code is written by making
    // its pages writable (no transient task to open /proc/self/mem).
    assert!(
        stderr.contains("threads share the descriptor table: code is written through mprotect"),
        "{stderr}"
    );
    // The same under the sandbox, where /proc/self/mem cannot be written
    // and code is written by making its pages writable for the write
    // (`patch::write_by_protection`), while 32 threads run it.
    let stderr = check(
        Command::new(PICOS)
            .args(["run", "--sandbox", "--log-level", "debug", "./patch_stress"])
            .current_dir(prog.parent().unwrap())
            .output()
            .unwrap(),
        "picos --sandbox",
    );
    assert!(
        stderr.contains("code is written through mprotect"),
        "{stderr}"
    );
}

/// posix_spawn from a program with another thread: the vfork child has a
/// descriptor table of its own, so its exec check runs there, not in a
/// transient task (until the 26th session it did: +50-60 µs a spawn,
/// because the note that a table is shared is the address space's, and
/// the child shares its parent's).
#[test]
fn spawn_from_threads_checks_in_own_table() {
    let prog = compile_with("spawn_from_threads", &["-pthread"]);
    let native = Command::new(&prog).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&native.stdout), "spawned: 3 of 3\n");
    let out = output_within(
        Command::new(PICOS)
            .args(["run", "--log-level", "debug"])
            .arg(&prog),
        std::time::Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "spawned: 3 of 3\n",
        "{stderr}"
    );
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let own = stderr
        .lines()
        .filter(|l| l.contains("execve: the check runs in the program's table"))
        .count();
    assert_eq!(own, 3, "{stderr}");
    assert!(!stderr.contains("a task of its own"), "{stderr}");
}

/// Forks while other threads patch and unpatch sites (a lock-order bug made
/// this hang every time): the program's watchdog exits 3 if it hangs.
#[test]
fn fork_while_threads_patch() {
    let prog = compile_with("fork_patch", &["-pthread"]);
    let expected = "forks: 300, bad: 0\ncalls made: yes\nwrong: 0\n";
    let native = Command::new(&prog).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&native.stdout), expected);
    for round in 0..3 {
        // The hang spins with signals blocked, so the program's own watchdog
        // cannot fire: kill it from here (generously: a busy machine).
        let out = output_within(
            Command::new(PICOS).arg("run").arg(&prog),
            std::time::Duration::from_secs(120),
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected,
            "round {round}: status {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "round {round}: {:?}", out.status);
        // The runtime checks its lock order (lock.rs): the old fork order
        // (heap before the patcher's state) is reported here at once, even
        // in the runs it does not deadlock.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("lock order violation"),
            "round {round}: {stderr}"
        );
    }
}

/// Calls the host serves unchanged take the direct entries (no register
/// frame, no dispatcher), and stay right under a storm of signals: the
/// program (a conformance program, also compared with native there) checks
/// results, registers, SA_RESTART and EINTR. With --stats every call goes
/// through the dispatcher instead.
#[test]
fn direct_entries_under_signals() {
    let prog = compile_from("tests/conformance", "syscall_signals", &[]);
    for (extra, pread_entry, lseek_entry) in [
        // pread and lseek take a descriptor: direct only while the host
        // serves that descriptor unchanged (the pass-through check).
        (
            None,
            "direct blocking entry for pass-through descriptors)",
            "direct entry for pass-through descriptors)",
        ),
        (Some("--stats"), "fast entry)", "fast entry)"),
    ] {
        let mut cmd = Command::new(PICOS);
        cmd.args(["run", "--log-level", "debug"]);
        cmd.args(extra);
        let out = cmd.arg(&prog).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.ends_with("syscall_signals: all ok\n"),
            "{extra:?}: {:?}\n{stdout}\n{}",
            out.status,
            stderr
                .lines()
                .filter(|l| !l.contains("deferred"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let (dynamic, pread): (Vec<String>, Vec<String>) = entry_of(&stderr, 17)
            .into_iter()
            .partition(|e| e.contains("number from RAX"));
        let lseek = entry_of(&stderr, 8);
        assert!(
            !pread.is_empty() && pread.iter().all(|e| e == pread_entry),
            "{extra:?}: pread sites {pread:?}"
        );
        // glibc's syscall(3), called with SYS_pread64 first.
        assert_eq!(dynamic.len(), 1, "{extra:?}: syscall(3) sites {dynamic:?}");
        assert!(
            !lseek.is_empty() && lseek.iter().all(|e| e == lseek_entry),
            "{extra:?}: lseek sites {lseek:?}"
        );
    }
}

/// `picos run --log-level debug PROG`: its output and its stderr (the
/// runtime's debug lines, such as "patch site ...").
fn run_debug(prog: &std::path::Path) -> (std::process::Output, String) {
    let out = Command::new(PICOS)
        .args(["run", "--log-level", "debug"])
        .arg(prog)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stderr)
}

/// glibc's read with threads (its cancellable path) is patched too: the
/// jump ends inside the `xor` that follows the `mov` it covers, whose first
/// byte the jump's displacement repeats; a trampoline region is placed
/// where that works. Results stay right under a signal storm.
#[test]
fn threaded_read_is_patched() {
    let prog = compile_with("threaded_read", &["-pthread"]);
    let (out, stderr) = run_debug(&prog);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "bad 0 hits>0 1\n",
        "{stderr}"
    );
    assert_patched(&stderr, 0, "punned jump", "no punned read site");
}

/// The debug log `stderr` has a "patch site" line for call `nr` that
/// contains `marker` (its shape or entry); else the test fails with `what`
/// and the log's patch lines.
fn assert_patched(stderr: &str, nr: u32, marker: &str, what: &str) {
    let nr = format!(" nr {nr} ");
    let mut patches = stderr.lines().filter(|l| l.contains("patch site"));
    assert!(
        patches
            .clone()
            .any(|l| l.contains(&nr) && l.contains(marker)),
        "{what}:\n{}",
        patches.by_ref().collect::<Vec<_>>().join("\n")
    );
}

/// Patched pages of a library's text become mappings of their own, so that
/// `fork` does not copy the page tables of the whole text (the program
/// prints "none" natively: nothing is patched there).
#[test]
fn patched_pages_are_mappings_of_their_own() {
    let prog = compile("patched_pages_apart");
    let native = Command::new(&prog).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&native.stdout),
        "text mappings with private pages: none; with file pages too: 0\n"
    );
    let out = Command::new(PICOS).arg("run").arg(&prog).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "text mappings with private pages: some; with file pages too: 0\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn syscalls_table_lists_every_call() {
    let out = Command::new(PICOS).arg("syscalls").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for row in [
        "   0  read ",
        "  59  execve ",
        "  15  rt_sigreturn ",
        " 425  io_uring_setup ",
    ] {
        assert!(text.contains(row), "missing row {row:?}");
    }
    assert!(text.contains("io_uring_setup           unsupported"));
    assert!(text.contains("rt_sigaction             emulated"));
    let summary = text.lines().last().unwrap();
    assert!(
        summary.contains("system calls:") && summary.contains("emulated"),
        "{summary}"
    );
    let json = Command::new(PICOS)
        .args(["syscalls", "--json"])
        .output()
        .unwrap();
    let j = String::from_utf8(json.stdout).unwrap();
    assert!(j.trim_start().starts_with('[') && j.contains("\"name\": \"openat\""));
}

#[test]
fn manifest_check_reports_file_line_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[loader]\nlog_level = \"debug\"\nargv = [\"a\"]\nentrypont = \"/bin/true\"\n",
    )
    .unwrap();
    let out = Command::new(PICOS)
        .args(["manifest", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:4:1:"), "{err}");
    assert!(err.contains("loader.entrypont"), "{err}");
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        "[libos]\nentrypoint = \"/bin/echo\"\n[loader]\nargv = [\"echo\", \"from-manifest\"]\n",
    )
    .unwrap();
    let out = Command::new(PICOS)
        .args(["manifest", "check"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(out.status.success());
    // The manifest's entrypoint and argv are used when the command line gives none.
    let out = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from-manifest\n");
}

#[test]
fn manifest_env_and_start_dir_apply() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.toml");
    std::fs::write(
        &m,
        format!(
            "[loader]\ninsecure__use_cmdline_argv = true\n[loader.env]\nGREETING = \"hi\"\n[fs]\nstart_dir = \"{}\"\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let out = Command::new(PICOS)
        .args(["run", "-m"])
        .arg(&m)
        .args(["/bin/sh", "-c", "echo $GREETING; pwd; echo ${HOME:-unset}"])
        .env("HOME", "/should/not/pass")
        .output()
        .unwrap();
    let expected = format!(
        "hi\n{}\nunset\n",
        dir.path().canonicalize().unwrap().display()
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Pulls `"key":123` out of one JSON line (the runtime writes flat objects).
fn json_num(line: &str, key: &str) -> u64 {
    let pat = format!("\"{key}\":");
    let start = line
        .find(&pat)
        .unwrap_or_else(|| panic!("{key} missing in {line}"))
        + pat.len();
    line[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .unwrap()
}

/// The process record of a `--stats-json` file (the line whose kind is
/// "process"), for `json_num`.
fn process_record(json: &std::path::Path) -> String {
    let text = std::fs::read_to_string(json).unwrap();
    let first = process_records(&text).next().map(str::to_string);
    first.unwrap_or_else(|| panic!("no process record in {text}"))
}

/// The process records (one per program the process ran) of `--stats-json`
/// text.
fn process_records(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| l.contains("\"kind\":\"process\""))
}

/// `picos run --stats-json FILE ARGS...`, after `wrapper` (a command such
/// as `unshare --pid --fork`) when it is not empty; it must succeed. Its
/// output, and the text of FILE.
fn run_with_stats(wrapper: &[&str], args: &[&str]) -> (std::process::Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stats.json");
    let mut c = match wrapper.split_first() {
        Some((prog, rest)) => {
            let mut c = Command::new(prog);
            c.args(rest).arg(PICOS);
            c
        }
        None => Command::new(PICOS),
    };
    // A cache of its own: the counts are those of a first run, whatever
    // the user's known-sites file learnt of an earlier build of the same
    // program (a rebuilt test program may get its predecessor's inode).
    let out = c
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .args(["run", "--stats-json"])
        .arg(&json)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).unwrap();
    (out, text)
}

/// Sites that only fork children run are patched in the parent from the
/// children's hints (`patch::before_fork`): after two children trapped at
/// them, the next ones make no trapped call at all.
#[test]
fn fork_children_hint_their_sites_to_the_parent() {
    let prog = compile("fork_hints");
    let (out, text) = run_with_stats(&[], &[prog.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    // One record per child, in the order they ended, then the parent's.
    let traps: Vec<u64> = process_records(&text)
        .map(|l| json_num(l, "trap_path"))
        .collect();
    assert_eq!(traps.len(), 7, "{text}");
    assert!(traps[0] >= 2, "the first child's sites trap: {text}");
    assert_eq!(traps[3..6], [0, 0, 0], "{text}");
    // The children's exit too (glibc's `_exit`: `mov %esi,%eax; syscall`,
    // its number in a register; the parent never calls it), which the
    // counts above leave out: it is patched, by the parent.
    let (_, stderr) = run_debug(&prog);
    assert_patched(&stderr, 231, "from RAX", "exit_group not patched");
}

/// `--stats` reports every thread and the process; the counts add up, the
/// fast path carries the load, and `--stats-json` writes one line each.
#[test]
fn stats_report_threads_and_process() {
    let prog = compile_with("patch_stress", &["-pthread"]);
    let (out, text) = run_with_stats(&[], &[prog.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("picos stats: process"), "{stderr}");
    assert!(stderr.contains("top syscalls:"), "{stderr}");
    let threads: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"thread\""))
        .collect();
    let process: Vec<&str> = process_records(&text).collect();
    assert_eq!(threads.len(), 32, "{text}");
    assert_eq!(process.len(), 1, "{text}");
    let p = process[0];
    let total = json_num(p, "syscalls");
    assert!(total >= 1_000_000, "{p}");
    assert_eq!(
        total,
        json_num(p, "fast_path") + json_num(p, "trap_path"),
        "{p}"
    );
    assert_eq!(json_num(p, "threads"), 33, "{p}");
    // A fifth of the calls use glibc's syscall(), which always traps; the
    // rest are patched sites.
    assert!(
        json_num(p, "fast_path") > 3 * json_num(p, "trap_path") / 2,
        "{p}"
    );
    let per_thread: u64 = threads.iter().map(|l| json_num(l, "syscalls")).sum();
    assert!(per_thread <= total, "{p}");
    // Off by default: nothing printed.
    let quiet = Command::new(PICOS)
        .args(["run", "/bin/true"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("picos stats"));
}

/// The row of `syscall` in a `--profile` table (`lines`): its columns
/// (% time, calls, total us, us/call, library OS us, host us).
fn profile_row(lines: &[&str], syscall: &str) -> [f64; 6] {
    let row = lines
        .iter()
        .find(|l| l.split_whitespace().last() == Some(syscall))
        .unwrap_or_else(|| panic!("no {syscall} row in:\n{}", lines.join("\n")));
    let cols: Vec<f64> = row
        .split_whitespace()
        .skip(2)
        .take(6)
        .map(|c| c.parse().unwrap_or_else(|_| panic!("{row}")))
        .collect();
    cols.try_into().unwrap()
}

/// `--profile` prints, for each process, where its system calls' time
/// went: calls served by the library OS take no host time, host calls
/// take it, a sleep is the host's and comes first; and nothing without it.
#[test]
fn profile_tells_where_the_time_went() {
    let prog = compile_with("profile", &[]);
    let out = Command::new(PICOS)
        .args(["run", "--profile"])
        .arg(&prog)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("picos stats"), "{stderr}");
    let reports: Vec<&str> = stderr.split("picos profile: process ").skip(1).collect();
    assert_eq!(reports.len(), 2, "one table per process:\n{stderr}");
    // The parent's table is printed last (it waits for the child).
    let (child, parent) = (reports[0], reports[1]);
    let child_lines: Vec<&str> = child.lines().collect();
    assert_eq!(profile_row(&child_lines, "getppid")[1], 10.0, "{child}");
    let lines: Vec<&str> = parent.lines().skip(2).collect();
    let sleep = lines
        .iter()
        .find(|l| l.ends_with("nanosleep"))
        .map(|l| l.split_whitespace().last().unwrap().to_string())
        .unwrap_or_else(|| panic!("no nanosleep row:\n{parent}"));
    // The sleep is the host's time, and most of it.
    let s = profile_row(&lines, &sleep);
    assert!(lines[0].ends_with(&sleep), "{parent}");
    assert!(s[5] >= 190_000.0 && s[4] < s[5] / 10.0, "{parent}");
    // getppid: served in the library OS, no host time.
    let g = profile_row(&lines, "getppid");
    assert_eq!(g[1], 20_000.0, "{parent}");
    assert_eq!(g[5], 0.0, "{parent}");
    // The writes go to the host.
    let w = profile_row(&lines, "write");
    assert!(w[1] >= 2000.0 && w[5] > 0.0, "{parent}");
    let percent: f64 = lines
        .iter()
        .take_while(|l| !l.contains("trap path") && !l.contains("more calls"))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse::<f64>().unwrap())
        .sum();
    assert!((99.0..=101.0).contains(&percent), "{percent}: {parent}");
    // Off by default.
    let quiet = Command::new(PICOS)
        .args(["run"])
        .arg(&prog)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("picos profile"));
}

/// Patching needs no descriptor of the program's: with RLIMIT_NOFILE 64
/// and a full table, one thread or several, the hot raw `getppid` loop and
/// the threads' fresh code of `fd_table` are patched (`--stats`: the fast
/// path carries the calls), and the program sees only its own descriptors.
#[test]
fn full_descriptor_table_still_patches() {
    let prog = compile_from("tests/conformance", "fd_table", &["-pthread"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stats.json");
    let out = Command::new(PICOS)
        .args(["run", "--stats-json"])
        .arg(&json)
        .arg(&prog)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.ends_with("fd_table: all ok\n"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).unwrap();
    // The main process (its fcntl scans and getppid loop are most calls).
    let p = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"process\""))
        .max_by_key(|l| json_num(l, "syscalls"))
        .unwrap();
    assert!(json_num(p, "syscalls") > 100_000, "{p}");
    assert!(
        json_num(p, "trap_path") * 50 < json_num(p, "fast_path"),
        "{p}"
    );
}

/// After start-up, python3's system calls take the fast path.
#[test]
fn python_runs_on_the_fast_path() {
    if !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIP python_runs_on_the_fast_path: /usr/bin/python3 not installed");
        return;
    }
    let script = "import os\nfor i in range(2000): os.getppid(); os.stat('/')";
    let (_, text) = run_with_stats(&[], &["/usr/bin/python3", "-c", script]);
    let p = process_records(&text).next().expect("a process record");
    // 4,000 calls in the loop; traps are each site's first calls (a site
    // is patched at its sixth trap: `patch::PATCH_AT_TRAP`; ~140 traps in
    // all) plus the few shapes the patcher does not take.
    assert!(json_num(p, "trap_path") < 250, "{p}");
    assert!(json_num(p, "fast_path") > 4000, "{p}");
}

/// The first process of a pid namespace (a container's) has no parent in
/// it: getppid, getsid and getpgrp say 0. Those answers are cached like
/// any other (they went to the host on every call, as 0 also meant "not
/// cached yet"), and are the same as natively.
#[test]
fn ids_of_a_namespace_first_process_are_cached() {
    let python = "/usr/bin/python3";
    if !std::path::Path::new(python).exists() {
        eprintln!("SKIP ids_of_a_namespace_first_process_are_cached: {python} not installed");
        return;
    }
    let script = "import os\n\
                  for i in range(1000): os.getppid(); os.getsid(0); os.getpgrp()\n\
                  print(os.getpid(), os.getppid(), os.getsid(0), os.getpgrp())";
    let unshare = ["--pid", "--fork", "--kill-child"];
    let native = Command::new("unshare")
        .args(unshare)
        .args([python, "-c", script])
        .output()
        .unwrap();
    if !native.status.success() {
        // Not root, or no unshare(1): there is no first process to be.
        eprintln!(
            "SKIP ids_of_a_namespace_first_process_are_cached: unshare --pid failed: {}",
            String::from_utf8_lossy(&native.stderr).trim()
        );
        return;
    }
    assert_eq!(String::from_utf8_lossy(&native.stdout), "1 0 0 0\n");
    let wrapper: Vec<&str> = ["unshare"].iter().chain(&unshare).copied().collect();
    let (out, text) = run_with_stats(&wrapper, &[python, "-c", script]);
    assert_eq!(out.stdout, native.stdout);
    // 3,000 calls in the loop; python3's start-up makes ~300 host calls.
    let p = process_records(&text).next().expect("a process record");
    assert!(json_num(p, "host_calls") < 1000, "{p}");
}

/// A program started with seccomp filters (kept across execve, or a
/// container's profile) stays on the fast path for the calls its filters
/// allow whatever the arguments: only the calls they may refuse go through
/// the runtime's entry, where they are run (every call took the trap path
/// before). What the filters answer is checked against the kernel by the
/// conformance program `seccomp` and by `python_libseccomp_filter`.
#[test]
fn filtered_program_stays_on_the_fast_path() {
    let python = "/usr/bin/python3";
    let have = Command::new(python)
        .args(["-c", "import seccomp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!(
            "SKIP filtered_program_stays_on_the_fast_path: no {python} with the seccomp module \
             (apt-get install python3-seccomp)"
        );
        return;
    }
    let after = "import os\n\
                 try:\n    os.uname(); print('uname allowed')\n\
                 except OSError as e: print('uname', e.errno)\n\
                 for i in range(2000): os.getppid(); os.stat('/')\n\
                 print('done')";
    let script = format!(
        "import errno, os, seccomp\n\
         f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)\n\
         f.add_rule(seccomp.ERRNO(errno.EXDEV), 'uname')\n\
         f.add_rule(seccomp.ERRNO(errno.EPERM), 'dup', seccomp.Arg(0, seccomp.EQ, 1000))\n\
         f.load()\n\
         os.execv('{python}', ['{python}', '-c', {after:?}])"
    );
    let (out, text) = run_with_stats(&[], &[python, "-c", &script]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "uname 18\ndone\n");
    // The program after the execve: the record with the loop's calls.
    let p = process_records(&text)
        .max_by_key(|l| json_num(l, "fast_path") + json_num(l, "trap_path"))
        .unwrap_or_else(|| panic!("no process record in {text}"));
    assert!(json_num(p, "fast_path") > 4000, "{p}");
    assert!(json_num(p, "trap_path") < 200, "{p}");
}

/// A program that corrupts the runtime's state (its GS base, its per-thread
/// memory) is told so and ends with SIGSEGV, as a faulting program would;
/// picos does not call it a bug of its own. Natively both modes exit 0
/// (there is no runtime to corrupt), so this runs under picos only.
#[test]
fn corrupted_runtime_ends_with_sigsegv() {
    use std::os::unix::process::ExitStatusExt;
    let prog = compile_with("corrupt_runtime", &["-mfsgsbase"]);
    for mode in ["wrgsbase", "store"] {
        let out = Command::new(PICOS)
            .arg("run")
            .arg(&prog)
            .arg(mode)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(139) || out.status.signal() == Some(11),
            "{mode}: status {:?}\n{stderr}",
            out.status
        );
        assert!(
            stderr.contains("the program changed GS") && !stderr.contains("internal error"),
            "{mode}: {stderr}"
        );
    }
}

/// Calls on descriptors from patched sites go through the pass-through
/// check of the direct entries: descriptors below and beyond the map (4096),
/// negative ones, and a descriptor register with garbage in its upper half
/// give what they give natively, and the pread site is patched to the
/// pass-through entry.
#[test]
fn passthrough_descriptors_on_direct_entries() {
    let prog = compile("passthrough_fds");
    let native = Command::new(&prog).output().unwrap();
    assert!(native.status.success(), "natively: {native:?}");
    let out = Command::new(PICOS)
        .args(["run", "--log-level", "debug"])
        .arg(&prog)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && out.stdout == native.stdout,
        "{:?}\nnative: {}\npicos: {}\n{stderr}",
        out.status,
        String::from_utf8_lossy(&native.stdout),
        String::from_utf8_lossy(&out.stdout)
    );
    let pread = entry_of(&stderr, 17);
    assert!(
        pread
            .iter()
            .any(|e| e == "direct blocking entry for pass-through descriptors)"),
        "pread sites {pread:?}"
    );
}

/// The entries the sites of call `nr` were patched to, from a debug log.
fn entry_of(stderr: &str, nr: u32) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains("patch site") && l.contains(&format!(" nr {nr} ")))
        .map(|l| l.rsplit(", ").next().unwrap_or("").to_string())
        .collect()
}

/// The wrappers of a classic micro-benchmark (read and write of one byte,
/// pread, pwrite, readv, writev, fstat, stat, lstat, open + close, lseek,
/// access), in every common shape (glibc dynamic and static, musl; one
/// thread and two, where glibc takes its cancellable paths), leave the
/// trap path after their first calls, for a direct entry: the number of
/// trapped calls does not grow with the number of calls, and every site
/// of these numbers that the patcher rewrites calls a direct entry (or the
/// dynamic entry, which routes by number the same way).
#[test]
fn common_wrappers_take_direct_entries() {
    // read write pread64 pwrite64 readv writev newfstatat openat close
    // lseek access, and fstat's own number (glibc ≥ 2.33 uses newfstatat).
    const NRS: [u32; 12] = [0, 1, 17, 18, 19, 20, 262, 257, 3, 8, 21, 5];
    let src = workspace().join("tests/picoprocess/wrappers.c");
    let out_dir = workspace().join("target/picoprocess");
    std::fs::create_dir_all(&out_dir).unwrap();
    let variants: [(&str, &str, &[&str]); 3] = [
        ("glibc-dynamic", "gcc", &["-pthread"]),
        ("glibc-static", "gcc", &["-static", "-pthread"]),
        ("musl-static", "musl-gcc", &["-static"]),
    ];
    let mut problems = Vec::new();
    for (variant, cc, flags) in variants {
        let exe = out_dir.join(format!("wrappers-{variant}"));
        let tmp = out_dir.join(format!("wrappers-{variant}.{}.tmp", std::process::id()));
        let built = Command::new(cc)
            .args(["-O2", "-o"])
            .arg(&tmp)
            .arg(&src)
            .args(flags)
            .status();
        match built {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // .ci/run installs musl-tools; a developer machine may not.
                println!("SKIP {variant}: no `{cc}` (apt-get install musl-tools)");
                continue;
            }
            Err(e) => panic!("{cc}: {e}"),
            Ok(st) => assert!(st.success(), "{cc} {flags:?} failed"),
        }
        std::fs::rename(&tmp, &exe).unwrap();
        for threads in [false, true] {
            let label = format!("{variant}{}", if threads { " + thread" } else { "" });
            let run = |n: u32, extra: &[&str]| {
                let mut cmd = Command::new(PICOS);
                cmd.arg("run").args(extra).arg(&exe).arg(n.to_string());
                if threads {
                    cmd.arg("threads");
                }
                let out = output_within(&mut cmd, std::time::Duration::from_secs(120));
                let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(
                    out.status.success() && stdout == format!("calls {} bad 0\n", n * 13),
                    "{label}: {:?}\n{stdout}\n{stderr}",
                    out.status
                );
                stderr
            };
            // Every patched site of these numbers calls a direct entry.
            let log = run(50, &["--log-level", "debug"]);
            for l in log.lines() {
                if l.contains("no trampoline within reach") {
                    problems.push(format!("{label}: {l}"));
                }
                let Some(rest) = l.split(" nr ").nth(1) else {
                    continue;
                };
                let nr: u32 = rest.split(' ').next().unwrap().parse().unwrap();
                if l.contains("patch site")
                    && NRS.contains(&nr)
                    && !(l.contains("direct") || l.contains("dynamic entry"))
                {
                    problems.push(format!("{label}: generic entry: {l}"));
                }
            }
            // Trapped calls do not grow with the number of calls.
            let traps = |n: u32| {
                let dir = tempfile::tempdir().unwrap();
                let json = dir.path().join("stats.json");
                run(n, &["--stats-json", json.to_str().unwrap()]);
                json_num(&process_record(&json), "trap_path")
            };
            // (A wrapper left on the trap path adds 1,980 trapped calls;
            // the second thread's own start-up calls may or may not have
            // happened when the process exits, a difference of a few.)
            let (few, many) = (traps(20), traps(2000));
            if many > few + 10 {
                problems.push(format!(
                    "{label}: {few} trapped calls with 20 rounds, {many} with 2000: a wrapper stays on the trap path"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A contended mutex's waits (glibc's `__lll_lock_wait`: `mov $202,%eax;
/// xor $0x80,%sil; syscall`) take the fast path once their site is patched:
/// an operation with an immediate between the number and the `syscall` is
/// copied like a move. Before the 28th session each wait trapped (python3
/// with 4 threads: 4,414 of 75,423 calls trapped; now 102 of 19,875).
#[test]
fn contended_mutex_waits_are_patched() {
    let prog = compile_with("mutex_contention", &["-pthread", "-O2"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stats.json");
    let out = Command::new(PICOS)
        .args(["run", "--stats-json", json.to_str().unwrap()])
        .arg(&prog)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "count 16000\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record = process_record(&json);
    let futex = record
        .find("{\"name\":\"futex\",\"count\":")
        .map_or(0, |i| json_num(&record[i..], "count"));
    let traps = json_num(&record, "trap_path");
    // (The yields make the threads wait; without waits there is nothing
    // to see, and the trap count says nothing.)
    assert!(
        futex >= 100,
        "only {futex} futex calls: no contention? {record}"
    );
    assert!(
        traps < 150,
        "{traps} trapped calls for {futex} futex calls: {record}"
    );
}

/// What fork costs in page faults (tests/picoprocess/fork_faults.c, the
/// parent's and the child's per fork + exit + wait; the least of three
/// runs): a few more than natively. Each page written after a fork is
/// faulted, and copied in the child; the runtime writes its thread state
/// and its stack, but no lock words (a process no other task shares holds
/// none across fork) and no bookkeeping it can leave for later. The build
/// before the 28th session took 10-11 more faults than native per fork,
/// this one 3-6.
#[test]
fn fork_writes_few_pages() {
    let prog = compile_with("fork_faults", &["-O2"]);
    let parse = |out: &std::process::Output| -> f64 {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let w: Vec<&str> = text.split_whitespace().collect();
        assert!(
            out.status.success() && w.len() == 4 && w[0] == "parent" && w[2] == "child",
            "{text}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        w[1].parse::<f64>().unwrap() + w[3].parse::<f64>().unwrap()
    };
    let least = |picos: bool| {
        (0..3)
            .map(|_| {
                let out = if picos {
                    Command::new(PICOS).arg("run").arg(&prog).output().unwrap()
                } else {
                    Command::new(&prog).output().unwrap()
                };
                parse(&out)
            })
            .fold(f64::MAX, f64::min)
    };
    let (native, picos) = (least(false), least(true));
    assert!(
        picos <= native + 7.0,
        "{picos} page faults per fork under picos, {native} natively"
    );
}

/// A vfork child runs in its parent's memory, and leaves in it nothing of
/// its own once it has exec'd (tests/picoprocess/vfork_memory.c: 400
/// vfork + execve and 400 posix_spawn of /bin/true, the resident set's
/// growth). Before the 29th session each child took a new runtime stack
/// slot and left its execve's heap allocations behind: +17 MB for 400
/// children (a shell loop grew without end, and its forks slowed down).
#[test]
fn vfork_children_leave_no_memory_behind() {
    let prog = compile_with("vfork_memory", &["-O2"]);
    let growth = |out: std::process::Output| -> Vec<(String, i64)> {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines()
            .map(|l| {
                let (k, v) = l.split_once(' ').expect("NAME KIB");
                (k.to_string(), v.parse().expect("a number"))
            })
            .collect()
    };
    let native = growth(Command::new(&prog).output().unwrap());
    let picos = growth(Command::new(PICOS).arg("run").arg(&prog).output().unwrap());
    assert_eq!(native.len(), 2);
    for ((kind, n), (_, p)) in native.iter().zip(&picos) {
        assert!(
            *p <= n + 2048,
            "{kind}: the resident set grew by {p} KiB under picos, {n} KiB natively"
        );
    }
}

/// Sites that earlier processes of the tree trapped at more than once are
/// patched in a new program at its first trap on their page
/// (`patch::known`): in a loop of /bin/true, each a new program (an
/// execve in place, or the kernel's with `--kernel-exec`), the first run
/// traps at every call of the dynamic loader (27 trapped calls of 29 on
/// the 30th session's machine), the later ones at far fewer (11). That is
/// the tree's own table, on its board, where there is no known-sites file
/// (here: no cache directory, as without a home directory; under the
/// sandbox), and the user's file otherwise. Each program has entries of
/// its own (the shell's records do not patch /bin/true's pages).
#[test]
fn known_sites_spare_later_programs_their_traps() {
    for extra in [&[][..], &["--kernel-exec"][..]] {
        // The five /bin/true's trapped calls, without and with the file.
        let traps = |file: bool| -> Vec<u64> {
            let dir = tempfile::tempdir().unwrap();
            let json = dir.path().join("stats.json");
            let mut c = Command::new(PICOS);
            if file {
                c.env("XDG_CACHE_HOME", dir.path());
            } else {
                c.env_remove("XDG_CACHE_HOME").env_remove("HOME");
            }
            let out = c
                .arg("run")
                .args(extra)
                .arg("--stats-json")
                .arg(&json)
                .args(["/bin/sh", "-c", "for i in 1 2 3 4 5; do /bin/true; done"])
                // (cargo's library path would make the loader search more.)
                .env_remove("LD_LIBRARY_PATH")
                .output()
                .unwrap();
            assert!(out.status.success(), "{extra:?}: {out:?}");
            let text = std::fs::read_to_string(&json).unwrap();
            // /bin/true's records: the five with the same number of calls,
            // in the order they ended (each vfork child's own record at
            // its execve, with a call or two, aside).
            let records: Vec<(u64, u64)> = process_records(&text)
                .map(|l| (json_num(l, "syscalls"), json_num(l, "trap_path")))
                .filter(|&(n, _)| n > 10)
                .collect();
            let calls = records
                .iter()
                .map(|r| r.0)
                .find(|&n| records.iter().filter(|r| r.0 == n).count() == 5)
                .unwrap_or_else(|| panic!("{extra:?}: no five runs alike: {text}"));
            records
                .into_iter()
                .filter(|r| r.0 == calls)
                .map(|r| r.1)
                .collect()
        };
        for file in [false, true] {
            let t = traps(file);
            let (first, last) = (t[0], t[4]);
            assert!(
                last * 2 < first,
                "{extra:?}, file {file}: the first /bin/true trapped {first} times, the last {last}"
            );
        }
    }
}

/// The trapped calls of one run of `args` (`--stats-json`; its process
/// record with the most calls), with `cache` as the cache directory.
fn trapped_calls(cache: &std::path::Path, flags: &[&str], args: &[&str]) -> u64 {
    let json = cache.join("stats.json");
    let _ = std::fs::remove_file(&json);
    let out = Command::new(PICOS)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("LD_LIBRARY_PATH")
        .arg("run")
        .args(flags)
        .arg("--stats-json")
        .arg(&json)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    let text = std::fs::read_to_string(&json).unwrap();
    let p = process_records(&text)
        .max_by_key(|l| json_num(l, "syscalls"))
        .unwrap_or_else(|| panic!("no process record: {text}"));
    json_num(p, "trap_path")
}

/// The syscall sites a run's processes trapped at more than once are kept
/// in the user's known-sites file (the runtime cache's `known-sites-v1`):
/// the next run of the same program patches them at its first trap on
/// their page. A file of the wrong size is made again; a sandboxed run
/// neither reads nor writes it.
#[test]
fn known_sites_are_kept_across_runs() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("picos/runtime/known-sites-v1");
    // The sandbox first: no file made.
    let sandboxed = trapped_calls(dir.path(), &["--sandbox"], &["/bin/true"]);
    assert!(sandboxed > 0);
    assert!(!file.exists(), "a sandboxed run made {}", file.display());
    let first = trapped_calls(dir.path(), &[], &["/bin/true"]);
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.len(), 4096 + 65536 * 8);
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let second = trapped_calls(dir.path(), &[], &["/bin/true"]);
    assert!(
        second * 2 < first,
        "the first run of /bin/true trapped {first} times, the second {second}"
    );
    // Damaged: cut short, it is made again (empty), and runs still work.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(100)
        .unwrap();
    let again = trapped_calls(dir.path(), &[], &["/bin/true"]);
    assert_eq!(again, first, "after the file was made again");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 4096 + 65536 * 8);
}

/// `--stats` counts a vfork child's own calls and thread only
/// (tests/picoprocess/vfork_stats.c: a parent with three threads that made
/// 600 calls vforks a child that execs /bin/true). The child's report at
/// its execve said 4 threads and the parent's calls before the 30th
/// session: it summed every thread state in the memory it shares.
#[test]
fn vfork_child_reports_its_own_counts() {
    let prog = compile_with("vfork_stats", &["-pthread", "-O2"]);
    let (out, text) = run_with_stats(&[], &[prog.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    let records: Vec<&str> = process_records(&text).collect();
    // The parent (4 threads, 600 getppid calls and more), the vfork child
    // at its execve, /bin/true.
    assert_eq!(records.len(), 3, "{text}");
    let parent = records
        .iter()
        .max_by_key(|l| json_num(l, "syscalls"))
        .unwrap();
    assert!(json_num(parent, "syscalls") > 600, "{parent}");
    let others: Vec<&&str> = records.iter().filter(|r| *r != parent).collect();
    for r in &others {
        assert_eq!(json_num(r, "threads"), 1, "{r}");
    }
    // The child's own calls before its execve: the execve, a few more.
    let child = others
        .iter()
        .min_by_key(|l| json_num(l, "syscalls"))
        .unwrap();
    assert!(json_num(child, "syscalls") < 20, "{child}");
}

/// Every new thread has the runtime's signal stack (set by the
/// rt_sigreturn that starts it, since the 28th session): a trapped call on
/// a nearly exhausted program stack still works, natively and under picos.
#[test]
fn new_threads_have_the_runtime_signal_stack() {
    let prog = compile_with("thread_signal_stack", &["-pthread", "-O2"]);
    let native = Command::new(&prog).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&native.stdout), "ok\n");
    let out = Command::new(PICOS).arg("run").arg(&prog).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok\n",
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A thread costs no trapped call once its sites are patched: its
/// `clone3` takes the fast path, glibc's `start_thread` and thread-exit
/// `rt_sigprocmask` sites (`mov $14,%eax; lea ...; syscall`) are patched
/// like any other, and so is its final `exit` (`xor %edi,%edi; mov
/// %edx,%eax; syscall; jmp .-8`, a punned jump). Each took the trap path on
/// every thread before (the `exit` until the 28th session, uncounted by
/// `--stats` until then too). The exit site is also patched while the
/// threads of a wave end together.
#[test]
fn threads_trap_only_until_their_sites_are_patched() {
    let prog = compile_with("thread_churn", &["-pthread", "-O2"]);
    let run = |args: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("stats.json");
        let out = Command::new(PICOS)
            .args([
                "run",
                "--log-level",
                "debug",
                "--stats-json",
                json.to_str().unwrap(),
            ])
            .arg(&prog)
            .args(args)
            .output()
            .unwrap();
        (out, process_record(&json))
    };
    let traps = |n: u32| {
        let (out, record) = run(&[&n.to_string()]);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("threads {n} ok {n}\n"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Every thread's exit is counted.
        assert!(
            record.contains(&format!("{{\"name\":\"exit\",\"count\":{n}}}")),
            "{record}"
        );
        json_num(&record, "trap_path")
    };
    let (few, many) = (traps(20), traps(220));
    // 200 more threads: a little slack for sites first met in the longer
    // run, none per thread.
    assert!(
        many <= few + 10,
        "{few} trapped calls with 20 threads, {many} with 220"
    );
    let (out, _) = run(&["0", "50"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "threads 0 ok 0\nwaves 50 ok 50\n",
        "{stderr}"
    );
    assert_patched(&stderr, 60, "punned jump", "the thread exit is not patched");
    // (Their barrier's futex waits trap: `mov %ebp,%eax; xor
    // $0x80,%sil; syscall`, a number in a register then a move, is a shape
    // the patcher does not take.)
}
