//! `picos run`: resolve the program, build the launch configuration from the
//! manifest and the command line, and become the picoprocess: execve(2) of
//! the runtime in this process (no supervisor: see docs/ARCHITECTURE.md,
//! "The picoprocess tree").

use crate::manifest::{LogLevel, Manifest, ManifestError};
use clap::{Arg, ArgAction, ArgMatches, Command};
use picos_abi::{LaunchConfig, CONFIG_ENV};
use picos_rt::host::errno::Errno;
use picos_rt::kernel::exec::loader::{
    check_executable, check_executable_chain, ExecError, ExecFailure, Via,
};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The command line of `picos run` (see [`RunArgs::augment`]).
#[derive(Debug)]
pub struct RunArgs {
    /// `-m, --manifest MANIFEST`.
    manifest: Option<PathBuf>,
    /// `--trace`.
    trace: bool,
    /// `--no-patch`.
    no_patch: bool,
    /// `--kernel-exec`.
    kernel_exec: bool,
    /// `--sandbox`.
    sandbox: bool,
    /// `--stats`.
    stats: bool,
    /// `--stats-json FILE`.
    stats_json: Option<PathBuf>,
    /// `--perf-map`.
    perf_map: bool,
    /// `--profile`.
    profile: bool,
    /// `--log-level LEVEL`.
    log_level: Option<String>,
    /// `PROGRAM [ARGS]...`.
    command: Vec<OsString>,
}

impl RunArgs {
    /// Adds the arguments of `picos run` to `cmd`.
    pub fn augment(cmd: Command) -> Command {
        cmd.arg(
            Arg::new("manifest")
                .short('m')
                .long("manifest")
                .value_name("MANIFEST")
                .value_parser(clap::value_parser!(PathBuf))
                .action(ArgAction::Set)
                .help(
                    "Manifest file (TOML). Without it, an embedded default applies: host \
                     file system visible, current directory, caller's environment",
                ),
        )
        .arg(
            Arg::new("trace")
                .long("trace")
                .action(ArgAction::SetTrue)
                .help("Print every system call the program makes (log level trace)"),
        )
        .arg(
            Arg::new("stats")
                .long("stats")
                .action(ArgAction::SetTrue)
                .help("Print system-call and signal statistics when each thread and process exits"),
        )
        .arg(
            Arg::new("stats_json")
                .long("stats-json")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .action(ArgAction::Set)
                .help("Also append the statistics to FILE, one JSON object per line (implies --stats)"),
        )
        .arg(
            Arg::new("profile")
                .long("profile")
                .action(ArgAction::SetTrue)
                .help(
                    "When each process exits, print where its system calls' time went: per call, \
                     in the library OS and in host calls, and the trap path (see docs/PROFILING.md)",
                ),
        )
        .arg(
            Arg::new("perf_map")
                .long("perf-map")
                .action(ArgAction::SetTrue)
                .help(
                    "Write /tmp/perf-PID.map for each process of the tree, naming the runtime's \
                     functions, so that 'perf report' shows where the library OS spends its \
                     time (see docs/PROFILING.md)",
                ),
        )
        .arg(
            Arg::new("no_patch")
                .long("no-patch")
                .action(ArgAction::SetTrue)
                .help("Do not patch syscall sites: every system call takes the trap path"),
        )
        .arg(
            Arg::new("kernel_exec")
                .long("kernel-exec")
                .action(ArgAction::SetTrue)
                .help(
                    "Run every execve through the kernel's execve of a fresh runtime, never \
                     replacing the program in place (for comparison; see docs/ARCHITECTURE.md)",
                ),
        )
        .arg(
            Arg::new("sandbox")
                .long("sandbox")
                .action(ArgAction::SetTrue)
                .help(
                    "Confine the program (kernel-enforced: seccomp, Landlock, no capabilities). \
                     Without a manifest that mounts directories: the working directory \
                     read-write, /usr, /etc, /bin, /sbin, /lib* read-only, a private /tmp, \
                     no network (see 'picos sandbox explain')",
                ),
        )
        .arg(
            Arg::new("log_level")
                .long("log-level")
                .value_name("LEVEL")
                .action(ArgAction::Set)
                .help("Override the manifest's log level (none, error, warning, debug, trace)"),
        )
        .arg(
            Arg::new("command")
                .value_name("PROGRAM [ARGS]...")
                .num_args(1..)
                // Everything after PROGRAM is its own (`--trace`, `--bogus`
                // included); before it, an unknown option is an error (a
                // program whose name starts with `-` needs `--`).
                .trailing_var_arg(true)
                .value_parser(clap::value_parser!(OsString))
                .action(ArgAction::Append)
                .help("The program (a path, or a name looked up in PATH), then its arguments"),
        )
    }

    /// `picos run PROGRAM [ARGS]...` with no options: a container's process
    /// (`crate::oci`).
    pub fn program(command: Vec<OsString>) -> RunArgs {
        RunArgs {
            manifest: None,
            trace: false,
            no_patch: false,
            kernel_exec: false,
            sandbox: false,
            stats: false,
            stats_json: None,
            perf_map: false,
            profile: false,
            log_level: None,
            command,
        }
    }

    /// The arguments parsed by a command built with [`RunArgs::augment`].
    pub fn from_matches(m: &ArgMatches) -> RunArgs {
        RunArgs {
            manifest: m.get_one::<PathBuf>("manifest").cloned(),
            trace: m.get_flag("trace"),
            no_patch: m.get_flag("no_patch"),
            kernel_exec: m.get_flag("kernel_exec"),
            sandbox: m.get_flag("sandbox"),
            stats: m.get_flag("stats"),
            stats_json: m.get_one::<PathBuf>("stats_json").cloned(),
            perf_map: m.get_flag("perf_map"),
            profile: m.get_flag("profile"),
            log_level: m.get_one::<String>("log_level").cloned(),
            command: m
                .get_many::<OsString>("command")
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
        }
    }
}

/// Why `picos run` could not start the program.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The manifest could not be read or is invalid.
    /// (Displayed as the manifest error alone, which is also its `source`.)
    #[error("{0}")]
    Manifest(#[from] ManifestError),
    /// No program named on the command line or in the manifest.
    #[error(
        "no program to run: give one on the command line (picos run PROGRAM) \
         or set libos.entrypoint in the manifest"
    )]
    NoProgram,
    /// The program (as the user wrote it) does not exist.
    #[error("{}: {}", .0, not_found_reason(.0))]
    NotFound(String),
    /// The program (as the user wrote it) exists but cannot be run, and why.
    #[error("{0}: {1}")]
    CannotRun(String, String),
    /// The program (as the user wrote it) exists but an interpreter it
    /// needs does not; the message names it (a shell's status is 127).
    #[error("{0}: {1}")]
    InterpreterNotFound(String, String),
    /// `--log-level` names no log level.
    #[error("unknown log level `{0}` (expected none, error, warning, debug or trace)")]
    BadLogLevel(String),
    /// The manifest's `fs.start_dir` cannot be used.
    #[error("working directory {0}: {1}")]
    StartDir(String, std::io::Error),
    /// The manifest's mounts cannot be used on this host.
    #[error(transparent)]
    Mount(#[from] crate::mounts::MountError),
    /// The `--stats-json` file cannot be opened for appending.
    #[error("--stats-json {}: cannot append to it: {}", .0.display(), open_error(.1))]
    StatsJson(PathBuf, std::io::Error),
    /// `--perf-map`: the runtime's symbol table could not be written.
    #[error("--perf-map: cannot write the runtime's symbols to {}: {}", .0.display(), .1)]
    PerfMap(PathBuf, std::io::Error),
    /// `--perf-map` with the sandbox on, which hides the host's /tmp.
    #[error(
        "--perf-map cannot be used with the sandbox: the perf maps go to the host's /tmp, \
         which the sandboxed program does not see"
    )]
    PerfMapSandboxed,
    /// The runtime process could not be started.
    #[error("cannot start the picoprocess: {0}")]
    Spawn(std::io::Error),
    /// This process cannot use Syscall User Dispatch (an old kernel, or
    /// picos itself running under picos).
    #[error(
        "Syscall User Dispatch is not available here ({0}): picos needs Linux 5.11+ \
         with it, and cannot run under picos, which does not offer it to programs"
    )]
    NoDispatch(std::io::Error),
    /// The sandbox cannot be set up as asked.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
}

/// Why opening the `--stats-json` file failed, in words.
fn open_error(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::ENXIO) {
        // O_NONBLOCK open of a FIFO that nobody reads.
        "a FIFO with no reader".into()
    } else {
        e.to_string()
    }
}

/// A shell's wording: a path that does not exist vs. a name not in PATH.
fn not_found_reason(shown: &str) -> &'static str {
    if shown.contains('/') {
        "no such file or directory"
    } else {
        "command not found"
    }
}

impl RunError {
    /// The exit status `picos run` reports for this error (as a shell would).
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::NotFound(_) | RunError::InterpreterNotFound(..) => 127,
            RunError::CannotRun(..) => 126,
            RunError::Spawn(_) | RunError::NoDispatch(_) => 126,
            _ => 2,
        }
    }
}

/// Finds `prog` as a shell would: a name with a slash is a path, anything
/// else is looked up in `path_var`.
pub fn resolve_program(prog: &OsStr, path_var: Option<&OsStr>) -> Result<PathBuf, RunError> {
    let shown = prog.to_string_lossy().into_owned();
    if prog.is_empty() {
        return Err(RunError::NotFound(shown));
    }
    if prog.as_bytes().contains(&b'/') {
        return Ok(std::path::absolute(prog).unwrap_or_else(|_| PathBuf::from(prog)));
    }
    let path_var = path_var
        .map(OsStr::to_os_string)
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut first_non_exec = None;
    for dir in std::env::split_paths(&path_var) {
        let cand = if dir.as_os_str().is_empty() {
            PathBuf::from(prog)
        } else {
            dir.join(prog)
        };
        if let Ok(md) = std::fs::metadata(&cand) {
            if md.is_file() {
                match check_executable(cand.as_os_str().as_bytes()) {
                    Ok(()) => return Ok(std::path::absolute(&cand).unwrap_or(cand)),
                    Err(_) => {
                        first_non_exec.get_or_insert(cand);
                    }
                }
            }
        }
    }
    first_non_exec.ok_or(RunError::NotFound(shown))
}

/// Checks the program as execve would, with the exit code a shell uses
/// (bash's: 127 when a file is missing, the program or an interpreter it
/// needs; 126 for any other reason it cannot run), and a message naming the
/// file of the chain (program, `#!` interpreter, ELF interpreter) at fault.
pub fn check_program(path: &Path, shown: &str) -> Result<(), RunError> {
    let Err(ExecFailure { error, file, via }) = check_executable_chain(path.as_os_str().as_bytes())
    else {
        return Ok(());
    };
    let file = if file.is_empty() {
        "\"\"".into()
    } else {
        String::from_utf8_lossy(&file)
    };
    let reason = error.reason();
    let program = path.as_os_str().as_bytes();
    // "(named by X)" when X is not the program itself.
    let named_by = |by: &[u8]| {
        if by == program {
            String::new()
        } else {
            format!(" (named by {})", String::from_utf8_lossy(by))
        }
    };
    let message = match &via {
        None => {
            return Err(if error == ExecError::Open(Errno::ENOENT) {
                RunError::NotFound(shown.into())
            } else {
                RunError::CannotRun(shown.into(), reason.into())
            })
        }
        Some(_) if error == ExecError::TooManyInterpreters => reason.to_string(),
        Some(Via::Shebang(script)) => {
            format!("#! interpreter {file}{}: {reason}", named_by(script))
        }
        Some(Via::ElfInterp(elf)) => {
            format!("ELF interpreter {file}{}: {reason}", named_by(elf))
        }
    };
    Err(if error == ExecError::Open(Errno::ENOENT) {
        RunError::InterpreterNotFound(shown.into(), message)
    } else {
        RunError::CannotRun(shown.into(), message)
    })
}

/// The program's guest path and the host directory to start in, when the
/// manifest mounts directories (`mounts` is not empty): the working
/// directory is `fs.start_dir`, else the caller's if a mount shows it, else
/// `/`; the program is found in the guest tree (PATH's directories are guest
/// paths). The runtime opens the program through its own resolution and
/// reports what keeps it from running (exit status 127 or 126, as here).
fn plan_mounted(
    mounts: &[picos_abi::MountSpec],
    manifest: &Manifest,
    prog: &OsStr,
    path_var: Option<&OsStr>,
) -> Result<(Vec<u8>, Option<PathBuf>), RunError> {
    use crate::mounts::{guest_to_host, host_to_guest, normalize};
    let guest_cwd = match &manifest.start_dir {
        Some(d) => {
            let host = guest_to_host(mounts, b"/", d.as_bytes());
            std::fs::read_dir(&host).map_err(|e| RunError::StartDir(d.clone(), e))?;
            normalize(b"/", d.as_bytes())
        }
        None => std::env::current_dir()
            .ok()
            .and_then(|d| host_to_guest(mounts, &d))
            .unwrap_or_else(|| b"/".to_vec()),
    };
    let host_cwd = guest_to_host(mounts, b"/", &guest_cwd);
    let shown = prog.to_string_lossy().into_owned();
    let runnable = |guest: &[u8]| {
        let host = guest_to_host(mounts, &guest_cwd, guest);
        let c = std::ffi::CString::new(host.as_os_str().as_bytes()).ok();
        std::fs::metadata(&host).is_ok_and(|m| m.is_file())
            // SAFETY: access(2) of a NUL-terminated path.
            && c.is_some_and(|c| unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0)
    };
    let p = prog.as_bytes();
    let exe = if p.is_empty() {
        return Err(RunError::NotFound(shown));
    } else if p.contains(&b'/') {
        let g = normalize(&guest_cwd, p);
        if !guest_to_host(mounts, &guest_cwd, &g).exists() {
            return Err(RunError::NotFound(shown));
        }
        g
    } else {
        let path_var = path_var.map_or(&b"/usr/local/bin:/usr/bin:/bin"[..], |v| v.as_bytes());
        path_var
            .split(|&b| b == b':')
            .map(|dir| {
                normalize(
                    &guest_cwd,
                    &[if dir.is_empty() { &b"."[..] } else { dir }, b"/", p].concat(),
                )
            })
            .find(|g| runnable(g))
            .ok_or(RunError::NotFound(shown))?
    };
    Ok((exe, Some(host_cwd)))
}

struct Plan {
    /// Started by an OCI engine (`crate::oci`): the runtime runs from a
    /// memfd (the cache would be written into the container's file
    /// system), and the engine has set the capabilities and rlimits.
    container: Option<crate::sandbox::Container>,
    argv: Vec<OsString>,
    env: Vec<OsString>,
    cwd: Option<PathBuf>,
    config: LaunchConfig,
    /// The sandbox's settings, if the program is to be confined.
    sandbox: Option<crate::manifest::SandboxSettings>,
    /// A container's seccomp profile as the kernel enforces it
    /// (`crate::oci_seccomp::kernel_copy`), installed last before the
    /// runtime's `execve`; empty for none.
    kernel_seccomp: Vec<picos_rt::kernel::seccomp::Insn>,
    /// It asks for SECCOMP_FILTER_FLAG_LOG.
    kernel_seccomp_log: bool,
}

/// The manifest of `picos run`: `-m`'s or the embedded default; with
/// `--sandbox` (or `sandbox.enable`) and no mounts of its own (the embedded
/// default's `/` from `file:/` is none), the sandbox's default mounts.
pub fn run_manifest(path: Option<&Path>, sandbox_flag: bool) -> Result<Manifest, RunError> {
    let mut manifest = match path {
        Some(p) => Manifest::from_file(p)?,
        None => Manifest::embedded_default(),
    };
    manifest.sandbox.enable |= sandbox_flag;
    if manifest.sandbox.enable && (path.is_none() || manifest.mounts.is_empty()) {
        let cwd = std::env::current_dir().map_err(|e| {
            RunError::Sandbox(crate::sandbox::SandboxError::Setup(format!(
                "the working directory: {e}"
            )))
        })?;
        manifest.mounts = crate::sandbox::default_mounts(&cwd)?;
    }
    Ok(manifest)
}

fn plan(args: &RunArgs, manifest: Manifest) -> Result<Plan, RunError> {
    let host_env = crate::host_env();
    let mut log_level = manifest.log_level;
    if let Some(l) = &args.log_level {
        log_level = LogLevel::from_name(l).ok_or_else(|| RunError::BadLogLevel(l.clone()))?;
    }
    if args.trace {
        log_level = LogLevel::Trace;
    }
    if let Some(p) = &args.stats_json {
        check_stats_json(p)?;
    }
    let (prog, argv): (OsString, Vec<OsString>) = match args.command.split_first() {
        Some((p, rest)) => {
            let mut argv = vec![p.clone()];
            argv.extend(rest.iter().cloned());
            (p.clone(), argv)
        }
        None => {
            let ep = manifest.entrypoint.clone().ok_or(RunError::NoProgram)?;
            let argv = match &manifest.argv {
                Some(a) => a.iter().map(OsString::from).collect(),
                None => vec![OsString::from(&ep)],
            };
            (OsString::from(ep), argv)
        }
    };
    let path_var = host_env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    let mounts = crate::mounts::specs(&manifest.mounts)?;
    let env = manifest.environment(&host_env);
    let (exe, cwd) = if mounts.is_empty() {
        let exe = resolve_program(&prog, path_var)?;
        check_program(&exe, &prog.to_string_lossy())?;
        let cwd = match &manifest.start_dir {
            Some(d) => {
                let p = PathBuf::from(d);
                std::fs::read_dir(&p).map_err(|e| RunError::StartDir(d.clone(), e))?;
                Some(p)
            }
            None => None,
        };
        (exe.into_os_string().into_vec(), cwd)
    } else {
        plan_mounted(&mounts, &manifest, &prog, path_var)?
    };
    // The name a `#!` interpreter gets for a script, as the shell would
    // have given it to execve: a path the user wrote (`./script`); a name
    // found through PATH is the path found.
    let exe_name = if prog.as_bytes().contains(&b'/') && prog.as_bytes() != exe.as_slice() {
        prog.as_bytes().to_vec()
    } else {
        Vec::new()
    };
    let config = LaunchConfig {
        mounts,
        exe,
        exe_name,
        log_level,
        stack_size_bytes: manifest.stack_size_bytes.unwrap_or(0),
        patch_syscalls: manifest.syscall_patching && !args.no_patch,
        exec_in_place: !args.kernel_exec,
        stats: manifest.enable_stats || args.stats || args.stats_json.is_some(),
        profile: u64::from(args.profile),
        stats_json: match &args.stats_json {
            Some(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .into_os_string()
                .into_vec(),
            None => Vec::new(),
        },
        // Known once this process is about to become the root (`launch`).
        root_pid: 0,
        tree_exe: Vec::new(),
        // The runtime asks the host (nohup's SIGHUP, say).
        ignored: None,
        // The runtime probes the CPU itself (the CLI would pay the same).
        cpu: 0,
        // The root's parent is no picoprocess.
        parent_thread: 0,
        board: 0,
        seccomp: Vec::new(),
        perf_map: if args.perf_map {
            if manifest.sandbox.enable {
                return Err(RunError::PerfMapSandboxed);
            }
            runtime_symbols()?.into_os_string().into_vec()
        } else {
            Vec::new()
        },
        // Known when the runtime's image is (`launch`).
        sites: Vec::new(),
    };
    Ok(Plan {
        container: None,
        argv,
        env,
        cwd,
        config,
        sandbox: manifest.sandbox.enable.then(|| manifest.sandbox.clone()),
        kernel_seccomp: Vec::new(),
        kernel_seccomp_log: false,
    })
}

/// Opens (creating it if need be) the `--stats-json` file as the runtime
/// will, to append, so that a path it could not write fails now rather than
/// after the program has run. Never waits: a FIFO must have a reader.
/// The runtime's functions (`OFFSET SIZE NAME` lines: build.rs), which
/// each process's runtime turns into its perf map (`--perf-map`).
static RUNTIME_SYMBOLS: &str = include_str!(concat!(env!("OUT_DIR"), "/picos-rt.syms"));

/// Writes the runtime's symbol table to the system's temporary directory,
/// once per runtime build (the name carries a hash of the table); returns
/// its path.
fn runtime_symbols() -> Result<PathBuf, RunError> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    RUNTIME_SYMBOLS.hash(&mut h);
    let path = std::env::temp_dir().join(format!("picos-rt-{:016x}.syms", h.finish()));
    if std::fs::read(&path).is_ok_and(|b| b == RUNTIME_SYMBOLS.as_bytes()) {
        return Ok(path);
    }
    // Written under a name of its own, then renamed: a reader never sees
    // half a table.
    let tmp = path.with_extension(format!("syms.{}", std::process::id()));
    std::fs::write(&tmp, RUNTIME_SYMBOLS)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RunError::PerfMap(path.clone(), e)
        })?;
    Ok(path)
}

fn check_stats_json(path: &Path) -> Result<(), RunError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map(drop)
        .map_err(|e| RunError::StatsJson(path.to_path_buf(), e))
}

fn cstring(b: &[u8]) -> Result<std::ffi::CString, RunError> {
    std::ffi::CString::new(b)
        .map_err(|_| RunError::Spawn(std::io::Error::other("argument contains a NUL byte")))
}

/// Checks that this process can arm Syscall User Dispatch, as the runtime
/// must: turns it on with a selector that allows every call, then off
/// again. Linux 5.11+ accepts both; an older kernel does not know the
/// option, and picos (when this CLI runs under picos) refuses to turn it
/// on (a program's dispatch would be the runtime's own). The runtime would
/// fail later with a less clear message (under picos it is not even
/// started: the outer runtime's execve of `/proc/self/fd/N`, our
/// close-on-exec memfd, fails once N is closed).
fn check_syscall_user_dispatch() -> Result<(), RunError> {
    const PR_SET_SYSCALL_USER_DISPATCH: libc::c_int = 59;
    const PR_SYS_DISPATCH_OFF: libc::c_ulong = 0;
    const PR_SYS_DISPATCH_ON: libc::c_ulong = 1;
    const SYSCALL_DISPATCH_FILTER_ALLOW: u8 = 0;
    let selector: u8 = SYSCALL_DISPATCH_FILTER_ALLOW;
    // SAFETY: prctl with integer arguments and a pointer to a live byte
    // that says "allow": while dispatch is on, every call still goes to
    // the kernel; it is turned off again at once, on this thread, before
    // the selector goes out of scope.
    let on = unsafe {
        libc::prctl(
            PR_SET_SYSCALL_USER_DISPATCH,
            PR_SYS_DISPATCH_ON,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            &selector as *const u8 as libc::c_ulong,
        )
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: integer arguments only; turning dispatch off.
    let off = unsafe {
        libc::prctl(
            PR_SET_SYSCALL_USER_DISPATCH,
            PR_SYS_DISPATCH_OFF,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if on == 0 && off == 0 {
        Ok(())
    } else if on != 0 {
        Err(RunError::NoDispatch(err))
    } else {
        Err(RunError::NoDispatch(std::io::Error::last_os_error()))
    }
}

/// Becomes the picoprocess: execve(2) of the runtime in this very process,
/// so that the pid the user sees as `picos` is the program's. Signals sent
/// to it (STOP and KILL included) reach the program as they would natively,
/// and its exit status (a code, or the signal that killed it) reaches
/// picos's parent unchanged. Returns only if the runtime cannot be started.
fn launch(p: Plan) -> Result<std::convert::Infallible, RunError> {
    use std::os::fd::AsRawFd;
    check_syscall_user_dispatch()?;
    // From the runtime cache, but for --perf-map (perf would read the
    // cached file's symbols, of which it has none, instead of the perf map).
    let in_container = p.container.is_some();
    let cache = p.config.perf_map.is_empty() && !in_container;
    let mut why_not = None;
    let image = crate::runtime_image::open(cache, &mut why_not).map_err(RunError::Spawn)?;
    if let Some(why) = why_not {
        if p.config.log_level >= picos_abi::LogLevel::Debug {
            eprintln!("picos: the runtime cache cannot be used ({why}): running from a memfd");
        }
    }
    let path = cstring(format!("/proc/self/fd/{}", image.fd.as_raw_fd()).as_bytes())?;
    let argv: Vec<std::ffi::CString> = p
        .argv
        .iter()
        .map(|a| cstring(a.as_bytes()))
        .collect::<Result<_, _>>()?;
    let mut config = p.config;
    config.root_pid = std::process::id();
    config.tree_exe = image.link.clone();
    // What earlier runs learnt of the syscall sites of the libraries (and
    // programs) this one maps, kept beside the image: not for a sandboxed
    // tree, whose programs must not change what later trees patch.
    if image.source == crate::runtime_image::Source::Cache
        && p.sandbox.is_none()
        && p.kernel_seccomp.is_empty()
        && config.patch_syscalls
    {
        let sites = crate::runtime_image::cache_dir()
            .ok_or_else(|| std::io::Error::other("no cache directory"))
            .and_then(|d| crate::runtime_image::known_sites(&d));
        match sites {
            Ok(path) => config.sites = path.into_os_string().into_vec(),
            Err(e) if config.log_level >= picos_abi::LogLevel::Debug => {
                eprintln!("picos: no known-sites file ({e}): each run learns its sites anew");
            }
            Err(_) => {}
        }
    }
    let prefix = format!("{CONFIG_ENV}=");
    let mut env: Vec<std::ffi::CString> = p
        .env
        .iter()
        .filter(|kv| !kv.as_bytes().starts_with(prefix.as_bytes()))
        .map(|kv| cstring(kv.as_bytes()))
        .collect::<Result<_, _>>()?;
    env.push(cstring(format!("{prefix}{}", config.encode()).as_bytes())?);
    if let Some(d) = &p.cwd {
        std::env::set_current_dir(d).map_err(RunError::Spawn)?;
    }
    if let Some(settings) = &p.sandbox {
        let policy = crate::sandbox::Policy {
            mounts: &config.mounts,
            settings,
            extra_files: if config.stats_json.is_empty() {
                Vec::new()
            } else {
                vec![PathBuf::from(OsStr::from_bytes(&config.stats_json))]
            },
            runtime_image: (image.source == crate::runtime_image::Source::Cache)
                .then(|| image.fd.as_raw_fd()),
            container: p.container,
        };
        let applied = crate::sandbox::apply(&policy)?;
        if let Some(w) = applied.weaker {
            eprintln!("picos: warning: {w}");
        }
    }
    if !p.kernel_seccomp.is_empty() {
        // Last: from here on only the runtime's own calls are sure to be
        // allowed (`oci_seccomp::kernel_copy`), the execve among them.
        crate::sandbox::bpf::install(&p.kernel_seccomp, p.kernel_seccomp_log).map_err(|e| {
            RunError::Sandbox(crate::sandbox::SandboxError::Setup(format!(
                "the container's seccomp profile: {e}"
            )))
        })?;
    }
    let e = exec(&path, &argv, &env, in_container);
    if image.source != crate::runtime_image::Source::Cache {
        return Err(RunError::Spawn(e));
    }
    // The cache's file system or a security module refuses to run it:
    // from a memfd, then.
    if config.log_level >= picos_abi::LogLevel::Debug {
        eprintln!("picos: the cached runtime cannot be run ({e}): running from a memfd");
    }
    let image = crate::runtime_image::from_memfd().map_err(RunError::Spawn)?;
    config.tree_exe = image.link.clone();
    let path = cstring(format!("/proc/self/fd/{}", image.fd.as_raw_fd()).as_bytes())?;
    env.pop();
    env.push(cstring(format!("{prefix}{}", config.encode()).as_bytes())?);
    Err(RunError::Spawn(exec(&path, &argv, &env, in_container)))
}

/// execve(2) of the runtime with SIGPIPE's default disposition back (the
/// Rust runtime ignores it in this process; other ignored signals, as from
/// nohup, are inherited, as by any program) and, unless `in_container`,
/// the standard descriptors that were closed when the CLI started closed
/// again (`crate::stdfds`). Returns the error if it fails.
fn exec(
    path: &std::ffi::CStr,
    argv: &[std::ffi::CString],
    env: &[std::ffi::CString],
    in_container: bool,
) -> std::io::Error {
    let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut env_p: Vec<*const libc::c_char> = env.iter().map(|a| a.as_ptr()).collect();
    env_p.push(std::ptr::null());
    let _ = std::io::stdout().flush();
    // The program gets the standard descriptors the CLI got: those that
    // were closed are closed again (Rust's runtime put /dev/null there).
    // Not in a container: the engine gave its process its own.
    if !in_container {
        crate::stdfds::close_reopened();
    }
    // SAFETY: signal(2) with a constant disposition; execve with
    // NULL-terminated vectors of pointers into `argv` and `env`, alive for
    // the call. The process has one thread.
    unsafe {
        let old = libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::execve(path.as_ptr(), argv_p.as_ptr(), env_p.as_ptr());
        let e = std::io::Error::last_os_error();
        if !in_container {
            crate::stdfds::reopen_closed();
        }
        libc::signal(libc::SIGPIPE, old);
        e
    }
}

/// Becomes the picoprocess of a container's process (`crate::oci`), in
/// the container's namespaces and root, under `manifest` (the host's tree
/// as the container shows it, passed through; the sandbox on), with
/// `seccomp` (the spec's profile, `crate::oci_seccomp`) as the
/// program's filters and, but for the runtime's own calls, in the kernel.
/// Returns only if the program cannot be started.
pub fn launch_in_container(
    args: &RunArgs,
    manifest: Manifest,
    container: crate::sandbox::Container,
    seccomp: crate::oci_seccomp::Profile,
) -> RunError {
    match plan(args, manifest).and_then(|mut p| {
        p.container = Some(container);
        // The spec's seccomp profile, as the program's own filters, and in
        // the kernel.
        p.config.seccomp = seccomp.program;
        p.kernel_seccomp = seccomp.kernel;
        p.kernel_seccomp_log = seccomp.log;
        launch(p)
    }) {
        Ok(never) => match never {},
        Err(e) => e,
    }
}

/// `picos run`.
pub fn main(args: RunArgs) -> ExitCode {
    match run_manifest(args.manifest.as_deref(), args.sandbox)
        .and_then(|m| plan(&args, m))
        .and_then(launch)
    {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("picos: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_through_path() {
        let p = resolve_program(OsStr::new("sh"), Some(OsStr::new("/nonexistent:/bin"))).unwrap();
        assert_eq!(p, PathBuf::from("/bin/sh"));
        assert!(matches!(
            resolve_program(OsStr::new("no-such-prog-xyz"), Some(OsStr::new("/bin"))),
            Err(RunError::NotFound(_))
        ));
        assert!(matches!(
            resolve_program(OsStr::new(""), None),
            Err(RunError::NotFound(_))
        ));
    }

    #[test]
    fn exit_codes_for_bad_programs() {
        let e = check_program(Path::new("/nonexistent/prog"), "prog").unwrap_err();
        assert_eq!(e.exit_code(), 127);
        let e = check_program(Path::new("/etc/hostname"), "/etc/hostname").unwrap_err();
        assert_eq!(e.exit_code(), 126);
        assert!(check_program(Path::new("/bin/true"), "true").is_ok());
    }
}
