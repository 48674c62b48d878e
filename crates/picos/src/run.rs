//! `picos run`: resolve the program, build the launch configuration from the
//! manifest and the command line, start the runtime in a new process (the
//! picoprocess), forward signals to it, and report its exit status.

use crate::manifest::{LogLevel, Manifest, ManifestError};
use clap::Args;
use picos_abi::{LaunchConfig, CONFIG_ENV};
use picos_rt::loader::{check_executable, ExecError};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The runtime image, built by build.rs.
static RUNTIME: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/picos-rt"));

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Manifest file (TOML). Without it, an embedded default applies: host
    /// file system visible, current directory, caller's environment.
    #[arg(short = 'm', long = "manifest", value_name = "MANIFEST")]
    manifest: Option<PathBuf>,
    /// Print every system call the program makes (log level trace).
    #[arg(long)]
    trace: bool,
    /// Override the manifest's log level (none, error, warning, debug, trace).
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
    /// The program (a path, or a name looked up in PATH), then its arguments.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM [ARGS]..."
    )]
    command: Vec<OsString>,
}

/// Why `picos run` could not start the program.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Manifest(#[from] ManifestError),
    /// No program named on the command line or in the manifest.
    #[error("no program to run: give one on the command line (picos run PROGRAM) or set libos.entrypoint in the manifest")]
    NoProgram,
    #[error("{0}: {reason}", reason = not_found_reason(.0))]
    NotFound(String),
    #[error("{0}: {1}")]
    CannotRun(String, &'static str),
    #[error("unknown log level `{0}` (expected none, error, warning, debug or trace)")]
    BadLogLevel(String),
    #[error("working directory {0}: {1}")]
    StartDir(String, std::io::Error),
    #[error("cannot start the picoprocess: {0}")]
    Spawn(std::io::Error),
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
            RunError::NotFound(_) => 127,
            RunError::CannotRun(..) => 126,
            RunError::Spawn(_) => 126,
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

/// Checks the program as execve would, with the exit code a shell uses.
pub fn check_program(path: &Path, shown: &str) -> Result<(), RunError> {
    check_executable(path.as_os_str().as_bytes()).map_err(|e| match e {
        ExecError::Open(picos_rt::errno::Errno::ENOENT) => {
            if path.exists() {
                // The file exists: its #! or ELF interpreter does not.
                RunError::CannotRun(
                    shown.into(),
                    "its interpreter (#! line or ELF PT_INTERP) does not exist",
                )
            } else {
                RunError::NotFound(shown.into())
            }
        }
        e => RunError::CannotRun(shown.into(), e.reason()),
    })
}

struct Plan {
    exe: PathBuf,
    argv: Vec<OsString>,
    env: Vec<OsString>,
    cwd: Option<PathBuf>,
    config: LaunchConfig,
}

fn plan(args: &RunArgs) -> Result<Plan, RunError> {
    let manifest = match &args.manifest {
        Some(p) => Manifest::from_file(p)?,
        None => Manifest::embedded_default(),
    };
    let host_env = crate::host_env();
    let mut log_level = manifest.log_level;
    if let Some(l) = &args.log_level {
        log_level = LogLevel::from_name(l).ok_or_else(|| RunError::BadLogLevel(l.clone()))?;
    }
    if args.trace {
        log_level = LogLevel::Trace;
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
    let exe = resolve_program(&prog, path_var)?;
    check_program(&exe, &prog.to_string_lossy())?;
    let env = manifest.environment(&host_env);
    let cwd = match &manifest.start_dir {
        Some(d) => {
            let p = PathBuf::from(d);
            std::fs::read_dir(&p).map_err(|e| RunError::StartDir(d.clone(), e))?;
            Some(p)
        }
        None => None,
    };
    let config = LaunchConfig {
        exe: exe.as_os_str().as_bytes().to_vec(),
        log_level,
        stack_size_bytes: manifest.stack_size_bytes.unwrap_or(0),
    };
    Ok(Plan {
        exe,
        argv,
        env,
        cwd,
        config,
    })
}

/// Writes the runtime into a sealed memfd; returns the fd.
fn runtime_fd() -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{fcntl_add_seals, memfd_create, MemfdFlags, SealFlags};
    let fd = memfd_create("picos-rt", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    let mut f = std::fs::File::from(fd);
    f.write_all(RUNTIME)?;
    let fd = std::os::fd::OwnedFd::from(f);
    fcntl_add_seals(
        &fd,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )?;
    Ok(fd)
}

fn launch(p: Plan) -> Result<ExitCode, RunError> {
    use std::os::fd::AsRawFd;
    let fd = runtime_fd().map_err(RunError::Spawn)?;
    let mut cmd = Command::new(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    cmd.arg0(&p.argv[0]).args(&p.argv[1..]).env_clear();
    for kv in &p.env {
        let b = kv.as_bytes();
        let eq = b.iter().position(|&c| c == b'=').unwrap_or(b.len());
        let (k, v) = (
            OsStr::from_bytes(&b[..eq]),
            OsStr::from_bytes(b.get(eq + 1..).unwrap_or(b"")),
        );
        if k != CONFIG_ENV {
            cmd.env(k, v);
        }
    }
    cmd.env(CONFIG_ENV, p.config.encode());
    if let Some(d) = &p.cwd {
        cmd.current_dir(d);
    }
    cmd.stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    let _ = &p.exe;
    let forwarder = SignalForwarder::install();
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    drop(fd);
    forwarder.set_child(child.id() as i32);
    let status = child.wait().map_err(RunError::Spawn)?;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 1,
    };
    Ok(ExitCode::from(code as u8))
}

/// Forwards signals sent to `picos` (by kill, not by the terminal, which
/// already signals the whole foreground group) to the picoprocess.
struct SignalForwarder {
    child: std::sync::Arc<std::sync::atomic::AtomicI32>,
}

impl SignalForwarder {
    fn install() -> Self {
        use signal_hook::consts::*;
        use signal_hook::iterator::exfiltrator::WithOrigin;
        use signal_hook::iterator::SignalsInfo;
        use signal_hook::low_level::siginfo::Cause;
        let child = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
        let c2 = child.clone();
        if let Ok(mut signals) = SignalsInfo::<WithOrigin>::new([
            SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT,
        ]) {
            std::thread::spawn(move || {
                for o in signals.forever() {
                    let pid = c2.load(std::sync::atomic::Ordering::SeqCst);
                    let from_terminal = matches!(o.cause, Cause::Kernel)
                        && matches!(o.signal, SIGINT | SIGQUIT | SIGWINCH);
                    if pid > 0 && !from_terminal {
                        if let Some(sig) = rustix::process::Signal::from_named_raw(o.signal) {
                            let _ = rustix::process::kill_process(
                                rustix::process::Pid::from_raw(pid).unwrap(),
                                sig,
                            );
                        }
                    }
                }
            });
        }
        SignalForwarder { child }
    }

    fn set_child(&self, pid: i32) {
        self.child.store(pid, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `picos run`.
pub fn main(args: RunArgs) -> ExitCode {
    match plan(&args).and_then(launch) {
        Ok(c) => c,
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

    #[test]
    fn runtime_is_embedded() {
        assert_eq!(&RUNTIME[..4], b"\x7fELF");
    }
}
