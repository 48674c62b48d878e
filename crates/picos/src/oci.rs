//! `picos` as an OCI runtime: the command line that podman (through conmon)
//! and containerd's runc shim call (`create`, `start`, `state`, `kill`,
//! `delete`, `exec`, `run`, `features`, `list`, `pause`, `resume`, `ps`,
//! `update`, and the
//! global `--root`, `--log`, `--log-format`, `--systemd-cgroup`), so that
//! `podman --runtime $(which picos) run ...` runs the container's process
//! as a picoprocess.
//!
//! What does what:
//!
//! - youki's `libcontainer` (with the `oci-spec` crate it re-exports)
//!   reads the bundle's `config.json` and sets the container up as runc
//!   does: namespaces, cgroups (cgroupfs, v1 and v2), the root file system
//!   and the spec's mounts, devices, masked and read-only paths, hostname,
//!   rlimits, user and groups, capabilities, the console socket, the
//!   create/start handshake and the state directory under `--root`. We
//!   chose it over writing that again: it is maintained, passes the OCI
//!   runtime tests, and lets us replace only the last step (the
//!   `Executor`), which is all picos needs.
//! - [`PicosExecutor`] is that last step: in the container's init process
//!   (and in each `exec`'s process), after the container is set up and
//!   `start` has been called, it becomes the picoprocess exactly as
//!   `picos run` does (the runtime is exec'd in place, so the container's
//!   pid 1 is the program's process), with the sandbox on: picos's seccomp
//!   filter and a Landlock domain over the container's own tree (its root
//!   and mounts, nothing else exists in its mount namespace), the network
//!   being the container's network namespace as the spec gives it. The
//!   capabilities and rlimits stay as the spec set them.
//!
//! The spec's seccomp profile is compiled by [`crate::oci_seccomp`] (not
//! libseccomp, a C library the static musl CLI does not link) and applied
//! by the library OS to every call of the container's program, and
//! installed in the kernel too, under picos's own filter (the sandbox's),
//! but for the runtime's own calls (`oci_seccomp::kernel_copy`,
//! docs/OCI.md).

use crate::manifest::Manifest;
use crate::run::{self, RunArgs};
use clap::{Arg, ArgAction, ArgMatches, Command};
use libcontainer::container::builder::ContainerBuilder;
use libcontainer::container::Container;
use libcontainer::oci_spec::runtime::{LinuxNamespaceType, Spec};
use libcontainer::syscall::syscall::SyscallType;
use libcontainer::workload::{Executor, ExecutorError, ExecutorValidationError};
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn id() -> Arg {
    Arg::new("id")
        .value_name("CONTAINER_ID")
        .required(true)
        .help("The container's id")
}

fn bundle() -> Arg {
    Arg::new("bundle")
        .long("bundle")
        .short('b')
        .value_name("DIR")
        .default_value(".")
        .value_parser(clap::value_parser!(PathBuf))
        .help("The bundle: the directory holding config.json")
}

fn pid_file() -> Arg {
    Arg::new("pid_file")
        .long("pid-file")
        .value_name("FILE")
        .value_parser(clap::value_parser!(PathBuf))
        .help("Write the process's pid there")
}

fn console_socket() -> Arg {
    Arg::new("console_socket")
        .long("console-socket")
        .value_name("SOCKET")
        .value_parser(clap::value_parser!(PathBuf))
        .help("A Unix socket to send the terminal's master descriptor to")
}

fn preserve_fds() -> Arg {
    Arg::new("preserve_fds")
        .long("preserve-fds")
        .value_name("N")
        .default_value("0")
        .value_parser(clap::value_parser!(i32).range(0..))
        .help("Pass N more descriptors (3 to 3+N-1) to the process")
}

fn detach(help: &'static str) -> Arg {
    Arg::new("detach")
        .long("detach")
        .short('d')
        .action(ArgAction::SetTrue)
        .help(help)
}

/// An option runc takes that changes nothing here.
fn ignored_flag(name: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .action(ArgAction::SetTrue)
        .hide(true)
}

/// The OCI runtime's subcommands, added to `picos`'s command line.
pub fn commands(cmd: Command) -> Command {
    globals(cmd)
        .subcommand(
            Command::new("create")
                .about(
                    "OCI runtime: create a container from a bundle (its process waits for start)",
                )
                .arg(bundle())
                .arg(pid_file())
                .arg(console_socket())
                .arg(preserve_fds())
                .arg(ignored_flag("no-pivot"))
                .arg(ignored_flag("no-new-keyring"))
                .arg(id()),
        )
        .subcommand(
            Command::new("start")
                .about("OCI runtime: start a created container's process")
                .arg(id()),
        )
        .subcommand(
            Command::new("state")
                .about("OCI runtime: print a container's state (JSON)")
                .arg(id()),
        )
        .subcommand(
            Command::new("kill")
                .about("OCI runtime: send a signal to a container's process")
                .arg(
                    Arg::new("all")
                        .long("all")
                        .short('a')
                        .action(ArgAction::SetTrue)
                        .help("To every process of the container"),
                )
                .arg(id())
                .arg(
                    Arg::new("signal")
                        .value_name("SIGNAL")
                        .default_value("SIGTERM")
                        .help("A name (TERM, SIGTERM) or a number"),
                ),
        )
        .subcommand(
            Command::new("delete")
                .about("OCI runtime: delete a stopped container (--force: also a running one)")
                .arg(
                    Arg::new("force")
                        .long("force")
                        .short('f')
                        .action(ArgAction::SetTrue)
                        .help("Kill the container's processes first"),
                )
                .arg(id()),
        )
        .subcommand(
            Command::new("exec")
                .about("OCI runtime: run another process in a running container")
                .arg(
                    Arg::new("process")
                        .long("process")
                        .short('p')
                        .value_name("FILE")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help("The process to run, as a spec's process JSON"),
                )
                .arg(detach("Do not wait for the process"))
                .arg(pid_file())
                .arg(console_socket())
                .arg(preserve_fds())
                .arg(
                    Arg::new("tty")
                        .long("tty")
                        .short('t')
                        .action(ArgAction::SetTrue)
                        .help("Give the process a terminal"),
                )
                .arg(
                    Arg::new("cwd")
                        .long("cwd")
                        .value_name("DIR")
                        .value_parser(clap::value_parser!(PathBuf)),
                )
                .arg(
                    Arg::new("env")
                        .long("env")
                        .short('e')
                        .value_name("KEY=VALUE")
                        .action(ArgAction::Append),
                )
                .arg(
                    Arg::new("user")
                        .long("user")
                        .short('u')
                        .value_name("UID[:GID]"),
                )
                .arg(
                    Arg::new("additional_gids")
                        .long("additional-gids")
                        .short('g')
                        .value_name("GID")
                        .value_parser(clap::value_parser!(u32))
                        .action(ArgAction::Append),
                )
                .arg(
                    Arg::new("cap")
                        .long("cap")
                        .short('c')
                        .value_name("CAP")
                        .action(ArgAction::Append),
                )
                .arg(
                    Arg::new("no_new_privs")
                        .long("no-new-privs")
                        .action(ArgAction::SetTrue),
                )
                .arg(
                    Arg::new("process_label")
                        .long("process-label")
                        .value_name("LABEL")
                        .hide(true),
                )
                .arg(
                    Arg::new("apparmor")
                        .long("apparmor")
                        .value_name("PROFILE")
                        .hide(true),
                )
                .arg(id())
                .arg(
                    Arg::new("command")
                        .value_name("COMMAND [ARGS]...")
                        .num_args(0..)
                        .trailing_var_arg(true)
                        .allow_hyphen_values(true),
                ),
        )
        .subcommand(
            Command::new("ps")
                .about("OCI runtime: list a container's processes (ps's table, or pids as JSON)")
                .arg(
                    Arg::new("format")
                        .long("format")
                        .short('f')
                        .value_name("FORMAT")
                        .value_parser(["table", "json"])
                        .default_value("table"),
                )
                .arg(id())
                .arg(
                    Arg::new("ps_args")
                        .value_name("PS_ARGS")
                        .num_args(0..)
                        .trailing_var_arg(true)
                        .allow_hyphen_values(true)
                        .help("Options for ps(1) (default -ef)"),
                ),
        )
        .subcommand(Command::new("features").about("OCI runtime: print what it supports (JSON)"))
        .subcommand(
            Command::new("list")
                .visible_alias("ls")
                .about("OCI runtime: list the containers under --root"),
        )
        .subcommand(
            Command::new("pause")
                .about("OCI runtime: freeze a container's processes")
                .arg(id()),
        )
        .subcommand(
            Command::new("resume")
                .about("OCI runtime: thaw a paused container's processes")
                .arg(id()),
        )
        .subcommand(update_command())
        .subcommand(
            Command::new("events")
                .about(
                    "OCI runtime: a container's resource usage (runc's JSON): every \
                     --interval until it stops, with an \"oom\" event for each OOM kill, or \
                     once with --stats",
                )
                .arg(
                    Arg::new("stats")
                        .long("stats")
                        .action(ArgAction::SetTrue)
                        .help("Print the usage once and exit"),
                )
                .arg(
                    Arg::new("interval")
                        .long("interval")
                        .value_name("DURATION")
                        .default_value("5s")
                        .value_parser(parse_interval)
                        .help("Time between two reports (Go's format: 500ms, 5s, 1m30s)"),
                )
                .arg(id()),
        )
}

/// A duration as runc's `--interval` takes it (Go's time.ParseDuration:
/// numbers with the units ns, us, µs, ms, s, m, h, in sequence), positive.
fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{s:?}: expected a positive duration such as 500ms, 5s or 1m30s");
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let value: f64 = rest[..n].parse().map_err(|_| bad())?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = &rest[u..];
    }
    if !(total > 0.0 && total.is_finite()) {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs_f64(total))
}

/// The OCI runtime's global options (before the subcommand, as runc's).
fn globals(cmd: Command) -> Command {
    cmd.arg(
        Arg::new("root")
            .long("root")
            .value_name("DIR")
            .value_parser(clap::value_parser!(PathBuf))
            .help(
                "OCI runtime: where containers' state is kept (default /run/picos, or \
                 $XDG_RUNTIME_DIR/picos for a user other than root and in a rootless \
                 engine's user namespace)",
            ),
    )
    .arg(
        Arg::new("log")
            .long("log")
            .value_name("FILE")
            .value_parser(clap::value_parser!(PathBuf))
            .help("OCI runtime: also append errors to FILE"),
    )
    .arg(
        Arg::new("log_format")
            .long("log-format")
            .value_name("FORMAT")
            .value_parser(["text", "json"])
            .help("OCI runtime: the --log file's format (text or json)"),
    )
    .arg(
        Arg::new("systemd_cgroup")
            .long("systemd-cgroup")
            .action(ArgAction::SetTrue)
            .help("OCI runtime: cgroups through systemd (not supported: use cgroupfs)"),
    )
    .arg(
        Arg::new("debug")
            .long("debug")
            .action(ArgAction::SetTrue)
            .hide(true),
    )
    .arg(
        Arg::new("rootless")
            .long("rootless")
            .value_name("BOOL")
            .hide(true),
    )
}

/// Whether `args` (what follows `picos`) is runc's `run` rather than
/// `picos run PROGRAM`: a global option of the OCI runtime before it, or
/// one of runc's `run` options (`--bundle`/`-b`, `--detach`/`-d`, ...)
/// right after it. Both sets are [`oci_run_command`]'s own arguments.
pub fn is_oci_run(args: &[OsString]) -> bool {
    // What every `picos run PROGRAM` and every other subcommand is, told
    // without building the command line (`picos run`'s start-up): no
    // option first, and no option after a `run`.
    let is_option = |a: &OsString| a.as_encoded_bytes().starts_with(b"-");
    if let Some(first) = args.first().filter(|a| !is_option(a)) {
        if first != "run" || !args.get(1).is_some_and(is_option) {
            return false;
        }
    }
    let cmd = oci_run_command();
    // Whether `a` names one of `options`, and whether it takes a value.
    let option = |options: &Command, a: &str| -> Option<bool> {
        options.get_arguments().find_map(|o| {
            let long = o.get_long().map(|l| format!("--{l}"));
            let short = o.get_short().map(|c| format!("-{c}"));
            let takes_value = o.get_action().takes_values();
            if long.as_deref() == Some(a) || short.as_deref() == Some(a) {
                Some(takes_value)
            } else if takes_value && long.is_some_and(|l| a.starts_with(&format!("{l}="))) {
                // `--root=DIR`: its value is in it.
                Some(false)
            } else {
                None
            }
        })
    };
    let mut it = args.iter().map(|a| a.to_string_lossy());
    let mut global = false;
    let sub = loop {
        let Some(a) = it.next() else { return false };
        match option(&cmd, &a) {
            Some(takes_value) => {
                global = true;
                if takes_value {
                    it.next();
                }
            }
            None => break a,
        }
    };
    if sub != "run" {
        return false;
    }
    let run = cmd.find_subcommand("run").expect("oci_run_command has run");
    global || it.next().is_some_and(|a| option(run, &a).is_some())
}

/// The command line of runc's `run` (create, start, then wait unless
/// detached), parsed when [`is_oci_run`] says so.
fn oci_run_command() -> Command {
    globals(Command::new("picos")).subcommand(
        Command::new("run")
            .about("OCI runtime: create and start a container (and wait for it)")
            .arg(bundle())
            .arg(pid_file())
            .arg(console_socket())
            .arg(preserve_fds())
            .arg(detach("Do not wait for the container's process"))
            .arg(
                Arg::new("keep")
                    .long("keep")
                    .action(ArgAction::SetTrue)
                    .help("Keep the container's state after it exits"),
            )
            .arg(ignored_flag("no-pivot"))
            .arg(ignored_flag("no-new-keyring"))
            .arg(id()),
    )
}

/// Why an OCI runtime command failed.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    #[error("container {0} does not exist")]
    NoSuchContainer(String),
    #[error("container {0} already exists")]
    Exists(String),
    #[error("invalid container id {0:?}: use letters, digits and _ + - . (not . or ..)")]
    BadId(String),
    #[error("--systemd-cgroup: this picos manages cgroups through cgroupfs only (podman: --cgroup-manager cgroupfs; containerd: SystemdCgroup = false)")]
    Systemd,
    #[error("invalid signal {0}")]
    BadSignal(String),
    #[error("--user {0}: expected UID or UID:GID (numbers)")]
    BadUser(String),
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error(transparent)]
    Seccomp(#[from] crate::oci_seccomp::ProfileError),
    #[error("update: {0}")]
    BadUpdate(String),
    #[error(transparent)]
    Container(#[from] libcontainer::error::LibcontainerError),
}

/// A container id as runc and libcontainer accept it: a file name of
/// letters, digits and `_ + - .`, not `.` or `..` (it names directories
/// under `--root`).
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '-' | '.'))
}

/// The global options.
struct Globals {
    root: PathBuf,
    log: Option<PathBuf>,
    json: bool,
}

impl Globals {
    fn from(m: &ArgMatches) -> Result<Globals, OciError> {
        if m.get_flag("systemd_cgroup") {
            return Err(OciError::Systemd);
        }
        let root = match m.get_one::<PathBuf>("root") {
            Some(r) => r.clone(),
            None => default_root(),
        };
        Ok(Globals {
            root,
            log: m.get_one::<PathBuf>("log").cloned(),
            json: m
                .get_one::<String>("log_format")
                .is_some_and(|f| f == "json"),
        })
    }

    /// The state root, made if missing (mode 0700, as runc's).
    fn state_root(&self) -> Result<PathBuf, OciError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)
            .map_err(|e| OciError::Io(format!("--root {}", self.root.display()), e))?;
        Ok(self.root.clone())
    }

    fn container_dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    fn load(&self, id: &str) -> Result<Container, OciError> {
        let dir = self.container_dir(id);
        if !valid_id(id) || !dir.join("state.json").exists() {
            return Err(OciError::NoSuchContainer(id.into()));
        }
        Ok(Container::load(dir)?)
    }

    /// Reports an error on stderr and, with `--log`, in the log file (one
    /// JSON object per line with `--log-format json`, as runc writes it
    /// and containerd's shim reads it).
    fn report(&self, e: &OciError) {
        let msg = chain(e);
        eprintln!("picos: {msg}");
        let Some(log) = &self.log else { return };
        let line = if self.json {
            let time = rfc3339_now();
            serde_json::json!({"level": "error", "msg": msg, "time": time}).to_string()
        } else {
            format!("picos: {msg}")
        };
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// An error and its causes, `error: cause: cause` (libcontainer's errors
/// name the step, their sources what went wrong), each said once.
fn chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let text = c.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        cur = c.source();
    }
    msg
}

/// Now, as RFC 3339 in UTC, to the nanosecond (the log's `time`).
fn rfc3339_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

/// `/run/picos` for root; `$XDG_RUNTIME_DIR/picos` (else
/// `/tmp/picos-UID`) for another user, and for root of a user namespace
/// other than the host's root (rootless podman runs its runtime as uid 0
/// of its own namespace): runc's rule.
fn default_root() -> PathBuf {
    let xdg = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty());
    if rustix::process::geteuid().is_root() {
        let rootless = xdg.is_some()
            && in_user_namespace()
            && std::env::var_os("USER").is_none_or(|u| u != "root");
        if !rootless {
            return PathBuf::from("/run/picos");
        }
    }
    match xdg {
        Some(d) => PathBuf::from(d).join("picos"),
        None => PathBuf::from(format!(
            "/tmp/picos-{}",
            rustix::process::geteuid().as_raw()
        )),
    }
}

/// Does this process run in a user namespace other than the initial one
/// (its uid map is not the whole range mapped to itself)?
fn in_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map")
        .is_ok_and(|m| m.split_whitespace().collect::<Vec<_>>() != ["0", "0", "4294967295"])
}

/// The spec's seccomp profile, which the library OS applies to the
/// container's program (`crate::oci_seccomp`).
fn seccomp_profile(spec: &Spec) -> Option<&libcontainer::oci_spec::runtime::LinuxSeccomp> {
    spec.linux().as_ref()?.seccomp().as_ref()
}

/// Runs the container's process as a picoprocess (see the module's doc).
#[derive(Clone)]
pub struct PicosExecutor {
    /// The container's seccomp profile (`crate::oci_seccomp`), compiled
    /// from the container's spec by `create` (which so refuses one it
    /// cannot apply before anything is made) or by `exec` (whose process
    /// libcontainer gives a spec of its own, without `linux.seccomp`).
    seccomp: crate::oci_seccomp::Profile,
}

/// The manifest of a container's process: the tree as the container shows
/// it, passed through (no mounts of the library OS: the container's mount
/// namespace is the boundary), the sandbox on, the network the container's
/// namespace (no port rules).
fn container_manifest() -> Manifest {
    let mut m = Manifest::embedded_default();
    m.sandbox.enable = true;
    m.sandbox.net_tcp = true;
    m.sandbox.net_udp = true;
    m
}

impl Executor for PicosExecutor {
    fn exec(&self, spec: &Spec) -> Result<(), ExecutorError> {
        let args = spec
            .process()
            .as_ref()
            .and_then(|p| p.args().as_ref())
            .filter(|a| !a.is_empty())
            .ok_or(ExecutorError::InvalidArg)?;
        let command: Vec<OsString> = args.iter().map(OsString::from).collect();
        let has = |kind: LinuxNamespaceType| {
            spec.linux()
                .as_ref()
                .and_then(|l| l.namespaces().as_ref())
                .is_some_and(|ns| ns.iter().any(|n| n.typ() == kind))
        };
        let container = crate::sandbox::Container {
            own_pids: has(LinuxNamespaceType::Pid),
            own_net: has(LinuxNamespaceType::Network),
        };
        let e = run::launch_in_container(
            &RunArgs::program(command),
            container_manifest(),
            container,
            self.seccomp.clone(),
        );
        // The process's stderr is the container's: say it there too, as
        // `picos run` would.
        eprintln!("picos: {e}");
        let _ = std::io::stderr().flush();
        // Ends this process (the container's, after its set-up) with the
        // status `picos run` gives, rather than returning into
        // libcontainer's init, which would report it as its own failure.
        std::process::exit(i32::from(e.exit_code()))
    }

    fn validate(&self, spec: &Spec) -> Result<(), ExecutorValidationError> {
        let process = spec.process().as_ref().ok_or_else(|| {
            ExecutorValidationError::ArgValidationError("the spec has no process".into())
        })?;
        let args = process
            .args()
            .as_ref()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| {
                ExecutorValidationError::ArgValidationError("the spec's process has no args".into())
            })?;
        let path_var = process
            .env()
            .as_ref()
            .and_then(|env| env.iter().find_map(|kv| kv.strip_prefix("PATH=")))
            .map(OsString::from);
        // As runc words it, which engines match ("executable file not
        // found in $PATH", "no such file or directory", "permission
        // denied") to give 127 or 126.
        let prog = std::ffi::OsStr::new(&args[0]);
        let exe = run::resolve_program(prog, path_var.as_deref()).map_err(|_| {
            ExecutorValidationError::ArgValidationError(if args[0].contains('/') {
                format!(
                    "exec: \"{}\": stat {}: no such file or directory",
                    args[0], args[0]
                )
            } else {
                format!("exec: \"{}\": executable file not found in $PATH", args[0])
            })
        })?;
        run::check_program(&exe, &args[0]).map_err(|e| {
            ExecutorValidationError::ArgValidationError(match e.exit_code() {
                127 => format!("exec: \"{}\": {e}: no such file or directory", args[0]),
                _ => format!("exec: \"{}\": {e}: permission denied", args[0]),
            })
        })?;
        Ok(())
    }
}

fn builder(
    g: &Globals,
    id: &str,
    m: &ArgMatches,
    executor: PicosExecutor,
) -> Result<ContainerBuilder, OciError> {
    let root = g.state_root()?;
    let mut b = ContainerBuilder::new(id.to_string(), SyscallType::default())
        .with_executor(executor)
        .with_root_path(root)?
        .with_console_socket(m.get_one::<PathBuf>("console_socket"))
        .with_preserved_fds(*m.get_one::<i32>("preserve_fds").unwrap_or(&0));
    if let Some(p) = m.get_one::<PathBuf>("pid_file") {
        b = b.with_pid_file(Some(absolute(p)?))?;
    }
    Ok(b.validate_id()?)
}

/// An absolute path (libcontainer canonicalizes the pid file's parent).
fn absolute(p: &Path) -> Result<PathBuf, OciError> {
    std::path::absolute(p).map_err(|e| OciError::Io(p.display().to_string(), e))
}

fn create(g: &Globals, m: &ArgMatches, detach: bool) -> Result<Container, OciError> {
    let id = m.get_one::<String>("id").expect("required");
    if !valid_id(id) {
        return Err(OciError::BadId(id.clone()));
    }
    if g.container_dir(id).exists() {
        return Err(OciError::Exists(id.clone()));
    }
    let bundle = m.get_one::<PathBuf>("bundle").expect("has a default");
    let bundle = absolute(bundle)?;
    let config = bundle.join("config.json");
    std::fs::metadata(&config).map_err(|e| OciError::Io(config.display().to_string(), e))?;
    // The seccomp profile, compiled now: one picos cannot apply is refused
    // before anything is made. (A spec that does not load is libcontainer's
    // to report, below.)
    let seccomp = match Spec::load(&config) {
        Ok(spec) => crate::oci_seccomp::from_spec(seccomp_profile(&spec))?,
        Err(_) => Default::default(),
    };
    let result = (|| {
        let bundle = tmpcopyup::prepare(g, id, &bundle)?;
        Ok(builder(g, id, m, PicosExecutor { seccomp })?
            .as_init(bundle)
            .with_systemd(false)
            .with_detach(detach)
            .build()?)
    })();
    if result.is_err() {
        tmpcopyup::clean(g, id);
    }
    result
}

/// podman's `tmpcopyup` mount option (a tmpfs that starts with a copy of
/// what the image has at its mount point: `--read-only`'s `/tmp`, `/run`
/// and `/var/tmp`, and `--tmpfs`), which libcontainer does not know (it
/// would hand it to the kernel, which refuses it). Such a mount becomes,
/// in a copy of the spec, the bind mount of a tmpfs that `create` makes
/// (with the mount's size and mode) under `--root` and fills with that
/// copy; `delete` unmounts it.
mod tmpcopyup {
    use super::{Globals, OciError};
    use std::path::{Path, PathBuf};

    /// This container's own directory beside libcontainer's.
    fn private(g: &Globals, id: &str) -> PathBuf {
        g.root.join(format!(".picos-{id}"))
    }

    fn io(what: &Path) -> impl Fn(std::io::Error) -> OciError + '_ {
        move |e| OciError::Io(what.display().to_string(), e)
    }

    /// The bundle to give libcontainer: `bundle` itself, or a copy of its
    /// spec with the `tmpcopyup` mounts made.
    pub fn prepare(g: &Globals, id: &str, bundle: &Path) -> Result<PathBuf, OciError> {
        let path = bundle.join("config.json");
        let text = std::fs::read(&path).map_err(io(&path))?;
        let Ok(mut spec) = serde_json::from_slice::<serde_json::Value>(&text) else {
            // libcontainer says what is wrong with it.
            return Ok(bundle.to_path_buf());
        };
        let has = |m: &serde_json::Value| {
            m["options"]
                .as_array()
                .is_some_and(|o| o.iter().any(|x| x == "tmpcopyup"))
        };
        if !spec["mounts"]
            .as_array()
            .is_some_and(|ms| ms.iter().any(has))
        {
            return Ok(bundle.to_path_buf());
        }
        let rootfs = spec["root"]["path"].as_str().map(|r| bundle.join(r));
        let Some(rootfs) = rootfs else {
            return Ok(bundle.to_path_buf());
        };
        let dir = private(g, id);
        let new_bundle = dir.join("bundle");
        std::fs::create_dir_all(&new_bundle).map_err(io(&new_bundle))?;
        let root_fd = rustix::fs::open(
            &rootfs,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| OciError::Io(rootfs.display().to_string(), e.into()))?;
        let mounts = spec["mounts"].as_array_mut().expect("checked above");
        for (n, m) in mounts.iter_mut().enumerate().filter(|(_, m)| has(m)) {
            let dest = m["destination"].as_str().unwrap_or("").to_string();
            let options: Vec<String> = m["options"]
                .as_array()
                .map(|o| {
                    o.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            // The tmpfs's own settings (size=, mode=, nr_inodes=...) and
            // the flags the bind mount keeps.
            let (data, flags): (Vec<String>, Vec<String>) = options
                .into_iter()
                .filter(|o| o != "tmpcopyup")
                .partition(|o| o.contains('='));
            let stage = dir.join(format!("copyup-{n}"));
            std::fs::create_dir_all(&stage).map_err(io(&stage))?;
            let data = std::ffi::CString::new(data.join(",")).map_err(|_| {
                OciError::Io(
                    format!("the options of {dest}"),
                    std::io::ErrorKind::InvalidInput.into(),
                )
            })?;
            rustix::mount::mount(
                "tmpfs",
                &stage,
                "tmpfs",
                rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NODEV,
                Some(data.as_c_str()),
            )
            .map_err(|e| OciError::Io(format!("a tmpfs for {dest}"), e.into()))?;
            copy_from_image(&root_fd, &dest, &stage)?;
            let mut flags = flags;
            if !flags.iter().any(|f| f == "bind" || f == "rbind") {
                flags.push("rbind".into());
            }
            m["type"] = "bind".into();
            m["source"] = stage.display().to_string().into();
            m["options"] = flags.into();
        }
        spec["root"]["path"] = rootfs.display().to_string().into();
        let new_config = new_bundle.join("config.json");
        std::fs::write(
            &new_config,
            serde_json::to_vec_pretty(&spec).unwrap_or_default(),
        )
        .map_err(io(&new_config))?;
        Ok(new_bundle)
    }

    /// Copies what the image has at `dest` (resolved inside the root
    /// file system: its symlinks cannot lead out) into `stage`, keeping
    /// owners, modes, links and extended attributes (`cp -a`).
    fn copy_from_image(
        root: &std::os::fd::OwnedFd,
        dest: &str,
        stage: &Path,
    ) -> Result<(), OciError> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let rel = dest.trim_start_matches('/');
        let src = match rustix::fs::openat2(
            root,
            if rel.is_empty() { "." } else { rel },
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(fd) => fd,
            // Nothing there (libcontainer makes the mount point): an
            // empty tmpfs.
            Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => return Ok(()),
            Err(e) => return Err(OciError::Io(format!("{dest} in the image"), e.into())),
        };
        use std::os::fd::AsRawFd;
        let from = format!("/proc/{}/fd/{}/.", std::process::id(), src.as_raw_fd());
        let out = std::process::Command::new("cp")
            .arg("-a")
            .arg(&from)
            .arg(stage)
            .output()
            .map_err(|e| OciError::Io("cp".into(), e))?;
        if !out.status.success() {
            return Err(OciError::Io(
                format!("copying {dest} of the image (tmpcopyup)"),
                std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
            ));
        }
        Ok(())
    }

    /// Unmounts and removes what [`prepare`] made, if anything.
    pub fn clean(g: &Globals, id: &str) {
        let dir = private(g, id);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("copyup-") {
                let _ = rustix::mount::unmount(e.path(), rustix::mount::UnmountFlags::DETACH);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Waits for `pid` (a child of this process) and gives its status as a
/// shell would: the exit code, or 128 + the signal.
fn wait_status(pid: i32) -> ExitCode {
    use rustix::process::{waitpid, Pid, WaitOptions};
    let Some(pid) = Pid::from_raw(pid) else {
        return ExitCode::from(255);
    };
    let status = loop {
        match waitpid(Some(pid), WaitOptions::empty()) {
            Ok(Some((_, status))) => break status,
            Err(rustix::io::Errno::INTR) => continue,
            _ => return ExitCode::from(255),
        }
    };
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => ExitCode::from(code as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig) as u8),
        _ => ExitCode::from(255),
    }
}

fn state_json(c: &Container) -> String {
    let mut v = serde_json::to_value(&c.state).unwrap_or_default();
    // runc's and the OCI spec's name for the root file system, which
    // engines read; libcontainer keeps only the bundle.
    if let (Some(obj), Ok(cfg)) = (
        v.as_object_mut(),
        std::fs::read(c.bundle().join("config.json")),
    ) {
        if let Some(root) = serde_json::from_slice::<serde_json::Value>(&cfg)
            .ok()
            .and_then(|s| {
                s.pointer("/root/path")
                    .and_then(|p| p.as_str())
                    .map(String::from)
            })
        {
            let root = if Path::new(&root).is_absolute() {
                PathBuf::from(root)
            } else {
                c.bundle().join(root)
            };
            obj.insert("rootfs".into(), root.display().to_string().into());
        }
    }
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

fn features() -> String {
    serde_json::json!({
        "ociVersionMin": "1.0.0",
        "ociVersionMax": "1.2.0",
        "hooks": ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"],
        "mountOptions": ["async", "atime", "bind", "defaults", "dev", "diratime", "dirsync",
            "exec", "iversion", "lazytime", "loud", "mand", "noatime", "nodev", "nodiratime",
            "noexec", "noiversion", "nolazytime", "nomand", "norelatime", "nostrictatime",
            "nosuid", "private", "rbind", "relatime", "remount", "ro", "rprivate", "rshared",
            "rslave", "runbindable", "rw", "shared", "silent", "slave", "strictatime", "suid",
            "sync", "tmpcopyup", "unbindable"],
        "linux": {
            "namespaces": ["cgroup", "ipc", "mount", "network", "pid", "user", "uts", "time"],
            "capabilities": caps_known(),
            "cgroup": {"v1": true, "v2": true, "systemd": false, "systemdUser": false},
            // The spec's profile, as crate::oci_seccomp compiles it (for
            // the library OS and the kernel; picos's own filter besides).
            "seccomp": {
                "enabled": true,
                "actions": ["SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
                            "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
                            "SCMP_ACT_TRACE", "SCMP_ACT_TRAP"],
                "operators": ["SCMP_CMP_EQ", "SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",
                              "SCMP_CMP_GT", "SCMP_CMP_GE", "SCMP_CMP_MASKED_EQ"],
                "archs": ["SCMP_ARCH_X86_64"],
                "knownFlags": ["SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_TSYNC",
                               "SECCOMP_FILTER_FLAG_SPEC_ALLOW"],
                "supportedFlags": ["SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_TSYNC",
                                   "SECCOMP_FILTER_FLAG_SPEC_ALLOW"]
            },
            "apparmor": {"enabled": false},
            "selinux": {"enabled": false}
        },
        "annotations": {
            "org.picos.version": env!("CARGO_PKG_VERSION"),
            "org.picos.sandbox": "seccomp (picos's filter and the spec's profile) + Landlock, on every container process"
        }
    })
    .to_string()
}

fn caps_known() -> Vec<String> {
    caps::all().iter().map(|c| c.to_string()).collect()
}

fn exec_process(g: &Globals, m: &ArgMatches) -> Result<ExitCode, OciError> {
    let id = m.get_one::<String>("id").expect("required");
    // Fails early, with the right words, for a container that is not there.
    let c = g.load(id)?;
    // The container's seccomp profile holds for this process too.
    let config = c.bundle().join("config.json");
    let spec = Spec::load(&config).map_err(|e| {
        OciError::Io(
            config.display().to_string(),
            std::io::Error::other(e.to_string()),
        )
    })?;
    let executor = PicosExecutor {
        seccomp: crate::oci_seccomp::from_spec(seccomp_profile(&spec))?,
    };
    let detach = m.get_flag("detach");
    let (user, group) = match m.get_one::<String>("user") {
        None => (None, None),
        Some(u) => {
            let bad = || OciError::BadUser(u.clone());
            let mut it = u.splitn(2, ':');
            let uid = it.next().unwrap_or("").parse::<u32>().map_err(|_| bad())?;
            let gid = match it.next() {
                Some(gs) => Some(gs.parse::<u32>().map_err(|_| bad())?),
                None => None,
            };
            (Some(uid), gid)
        }
    };
    let env = m
        .get_many::<String>("env")
        .map(|v| {
            v.filter_map(|kv| {
                kv.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect()
        })
        .unwrap_or_default();
    let args: Vec<String> = m
        .get_many::<String>("command")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let pid = builder(g, id, m, executor)?
        .as_tenant()
        .with_detach(detach)
        .with_cwd(m.get_one::<PathBuf>("cwd"))
        .with_env(env)
        .with_process(m.get_one::<PathBuf>("process"))
        .with_no_new_privs(m.get_flag("no_new_privs"))
        .with_capabilities(
            m.get_many::<String>("cap")
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
        )
        .with_user(user)
        .with_group(group)
        .with_additional_gids(
            m.get_many::<u32>("additional_gids")
                .map(|v| v.copied().collect())
                .unwrap_or_default(),
        )
        .with_container_args(args)
        .build()?;
    Ok(if detach {
        ExitCode::SUCCESS
    } else {
        wait_status(pid.as_raw())
    })
}

/// The pids of a container's processes (its cgroup's), as the host
/// numbers them.
/// An error of container `c`'s cgroup, in words.
fn cgroup_error(c: &Container, e: &dyn std::fmt::Display) -> OciError {
    OciError::Io(
        format!("the cgroup of {}", c.id()),
        std::io::Error::other(e.to_string()),
    )
}

/// Container `c`'s cgroup (cgroupfs, v1 or v2).
fn cgroup_manager(c: &Container) -> Result<libcgroups::common::AnyCgroupManager, OciError> {
    libcgroups::common::create_cgroup_manager(libcgroups::common::CgroupConfig {
        cgroup_path: c.spec()?.cgroup_path,
        systemd_cgroup: false,
        container_name: c.id().to_string(),
    })
    .map_err(|e| cgroup_error(c, &e))
}

fn pids(c: &Container) -> Result<Vec<i32>, OciError> {
    use libcgroups::common::CgroupManager;
    let mut pids: Vec<i32> = cgroup_manager(c)?
        .get_all_pids()
        .map_err(|e| cgroup_error(c, &e))?
        .iter()
        .map(|p| p.as_raw())
        .collect();
    pids.sort_unstable();
    Ok(pids)
}

/// runc's `update`: its flags, each a field of the spec's
/// `linux.resources` (name, help).
const UPDATE_FLAGS: &[(&str, &str)] = &[
    (
        "memory",
        "Memory limit in bytes (k, m, g: KiB, MiB, GiB); -1: none",
    ),
    ("memory-reservation", "Memory soft limit in bytes (k, m, g)"),
    (
        "memory-swap",
        "Memory plus swap limit in bytes (k, m, g); -1: no swap limit",
    ),
    ("cpu-shares", "CPU shares (relative weight)"),
    ("cpu-period", "CPU CFS period in microseconds"),
    (
        "cpu-quota",
        "CPU CFS quota in microseconds per period; -1: none",
    ),
    ("cpu-rt-period", "CPU real-time period in microseconds"),
    (
        "cpu-rt-runtime",
        "CPU real-time runtime in microseconds per period",
    ),
    ("cpuset-cpus", "CPUs the container may run on (0-3, 0,1)"),
    (
        "cpuset-mems",
        "Memory nodes the container may use (0-3, 0,1)",
    ),
    ("pids-limit", "Maximum number of tasks; -1: none"),
    ("blkio-weight", "Block IO weight (10 to 1000)"),
];

fn update_command() -> Command {
    let mut c = Command::new("update")
        .about(
            "OCI runtime: change a running container's cgroup limits (runc's update: \
             --resources FILE, or - for stdin, with the spec's linux.resources as JSON; \
             and/or the flags)",
        )
        .arg(id())
        .arg(
            Arg::new("resources")
                .long("resources")
                .short('r')
                .value_name("FILE")
                .help("The new linux.resources of the spec, as JSON (- : from stdin)"),
        );
    for (name, help) in UPDATE_FLAGS {
        // -1 is a value (no limit), not a flag.
        c = c.arg(
            Arg::new(*name)
                .long(*name)
                .value_name("VALUE")
                .allow_negative_numbers(true)
                .help(*help),
        );
    }
    c
}

/// Why an `update` value is wrong.
fn bad_update(flag: &str, v: &str) -> OciError {
    OciError::BadUpdate(format!("--{flag} {v}"))
}

/// A number of bytes as runc takes them: digits with an optional k, m, g
/// (or kb, mb, gb; binary units), or -1.
fn bytes(flag: &str, v: &str) -> Result<i64, OciError> {
    let t = v.trim().to_ascii_lowercase();
    if t == "-1" {
        return Ok(-1);
    }
    let t = t.strip_suffix('b').filter(|r| !r.is_empty()).unwrap_or(&t);
    let (digits, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1i64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    digits
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| bad_update(flag, v))
}

/// The resources `update` applies: the `--resources` JSON, if any, with
/// each flag given set over it.
fn update_resources(
    m: &ArgMatches,
) -> Result<libcontainer::oci_spec::runtime::LinuxResources, OciError> {
    use libcontainer::oci_spec::runtime::{LinuxBlockIo, LinuxMemory, LinuxPids, LinuxResources};
    let mut r: LinuxResources = match m.get_one::<String>("resources") {
        Some(f) => {
            let text = if f == "-" {
                let mut t = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
                    .map_err(|e| OciError::Io("stdin".into(), e))?;
                t
            } else {
                std::fs::read_to_string(f).map_err(|e| OciError::Io(f.clone(), e))?
            };
            serde_json::from_str(&text)
                .map_err(|e| OciError::BadUpdate(format!("--resources {f}: {e}")))?
        }
        None => LinuxResources::default(),
    };
    let get = |name: &str| m.get_one::<String>(name).map(String::as_str);
    let int = |name: &str| -> Result<Option<i64>, OciError> {
        get(name)
            .map(|v| v.trim().parse::<i64>().map_err(|_| bad_update(name, v)))
            .transpose()
    };
    let uint = |name: &str| -> Result<Option<u64>, OciError> {
        get(name)
            .map(|v| v.trim().parse::<u64>().map_err(|_| bad_update(name, v)))
            .transpose()
    };
    let mut mem = r.memory().clone().unwrap_or_default();
    let mut mem_set = r.memory().is_some();
    for (flag, set) in [
        (
            "memory",
            LinuxMemory::set_limit as fn(&mut LinuxMemory, Option<i64>) -> &mut LinuxMemory,
        ),
        ("memory-reservation", LinuxMemory::set_reservation),
        ("memory-swap", LinuxMemory::set_swap),
    ] {
        if let Some(v) = get(flag) {
            set(&mut mem, Some(bytes(flag, v)?));
            mem_set = true;
        }
    }
    if mem_set {
        r.set_memory(Some(mem));
    }
    let mut cpu = r.cpu().clone().unwrap_or_default();
    let before = cpu.clone();
    if let Some(v) = uint("cpu-shares")? {
        cpu.set_shares(Some(v));
    }
    if let Some(v) = uint("cpu-period")? {
        cpu.set_period(Some(v));
    }
    if let Some(v) = int("cpu-quota")? {
        cpu.set_quota(Some(v));
    }
    if let Some(v) = uint("cpu-rt-period")? {
        cpu.set_realtime_period(Some(v));
    }
    if let Some(v) = int("cpu-rt-runtime")? {
        cpu.set_realtime_runtime(Some(v));
    }
    if let Some(v) = get("cpuset-cpus") {
        cpu.set_cpus(Some(v.to_string()));
    }
    if let Some(v) = get("cpuset-mems") {
        cpu.set_mems(Some(v.to_string()));
    }
    if r.cpu().is_some() || cpu != before {
        r.set_cpu(Some(cpu));
    }
    if let Some(v) = int("pids-limit")? {
        let mut p = LinuxPids::default();
        p.set_limit(v);
        r.set_pids(Some(p));
    }
    if let Some(v) = get("blkio-weight") {
        let w = v
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|w| (10..=1000).contains(w))
            .ok_or_else(|| bad_update("blkio-weight", v))?;
        let mut b = r.block_io().clone().unwrap_or_else(LinuxBlockIo::default);
        b.set_weight(Some(w));
        r.set_block_io(Some(b));
    }
    Ok(r)
}

/// runc's `update`: the new limits written to the container's cgroup
/// (created, running or paused).
fn update(g: &Globals, m: &ArgMatches) -> Result<ExitCode, OciError> {
    use libcgroups::common::{CgroupManager, ControllerOpt};
    let id = m.get_one::<String>("id").expect("required");
    let resources = update_resources(m)?;
    let c = g.load(id)?;
    if matches!(
        c.status(),
        libcontainer::container::ContainerStatus::Stopped
            | libcontainer::container::ContainerStatus::Creating
    ) {
        return Err(OciError::BadUpdate(format!(
            "container {id} is {}: only a created, running or paused one can be updated",
            c.status()
        )));
    }
    cgroup_manager(&c)?
        .apply(&ControllerOpt {
            resources: &resources,
            disable_oom_killer: false,
            oom_score_adj: None,
            freezer_state: None,
        })
        .map_err(|e| cgroup_error(&c, &e))?;
    Ok(ExitCode::SUCCESS)
}

/// Container `c`'s cgroup directory of controller `controller` (cgroup
/// v1), or of the unified hierarchy (v2); and whether it is v2.
fn cgroup_dir(c: &Container, controller: &str) -> Option<(PathBuf, bool)> {
    let rel = c.spec().ok()?.cgroup_path;
    let rel = rel.strip_prefix("/").unwrap_or(&rel).to_path_buf();
    let base = Path::new("/sys/fs/cgroup");
    Some(if base.join("cgroup.controllers").exists() {
        (base.join(rel), true)
    } else {
        (base.join(controller).join(rel), false)
    })
}

/// A file of a cgroup directory ([`cgroup_dir`]): `name` on cgroup v1,
/// `v2_name` on v2 (None: a file v2 does not have).
fn cgroup_file(dir: &(PathBuf, bool), name: &str, v2_name: Option<&str>) -> Option<String> {
    let name = if dir.1 { v2_name? } else { name };
    std::fs::read_to_string(dir.0.join(name)).ok()
}

/// A cpuset list ("0-3,8") as its numbers.
fn cpu_list(s: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u64>()),
        }
    }
    out
}

/// How many times the kernel's OOM killer has killed in a cgroup, from
/// its `memory.events` (cgroup v2).
fn oom_kills(memory_events: &Path) -> u64 {
    std::fs::read_to_string(memory_events)
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("oom_kill ")
                    .and_then(|v| v.trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// Where a container's OOM kills are noticed as they happen, as runc
/// notices them: an eventfd the kernel signals at each OOM of the
/// cgroup's memory.oom_control (cgroup v1, through cgroup.event_control),
/// or an inotify watch of its memory.events (v2).
enum OomWatch {
    V1 {
        efd: OwnedFd,
        _oom_control: std::fs::File,
        event_control: PathBuf,
    },
    V2 {
        inotify: OwnedFd,
        memory_events: PathBuf,
        seen: u64,
    },
}

impl OomWatch {
    fn new(c: &Container) -> Result<OomWatch, OciError> {
        let fail = |what: &str, e: std::io::Error| {
            OciError::Io(format!("{what} of the cgroup of {}", c.id()), e)
        };
        let (dir, v2) =
            cgroup_dir(c, "memory").ok_or_else(|| cgroup_error(c, &"no cgroup path"))?;
        if v2 {
            use rustix::fs::inotify;
            let inotify =
                inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
                    .map_err(|e| fail("inotify", e.into()))?;
            let memory_events = dir.join("memory.events");
            inotify::add_watch(&inotify, &memory_events, inotify::WatchFlags::MODIFY)
                .map_err(|e| fail("memory.events", e.into()))?;
            return Ok(OomWatch::V2 {
                inotify,
                seen: oom_kills(&memory_events),
                memory_events,
            });
        }
        let oom_control = std::fs::File::open(dir.join("memory.oom_control"))
            .map_err(|e| fail("memory.oom_control", e))?;
        let efd = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )
        .map_err(|e| fail("eventfd", e.into()))?;
        let event_control = dir.join("cgroup.event_control");
        std::fs::write(
            &event_control,
            format!("{} {}", efd.as_raw_fd(), oom_control.as_raw_fd()),
        )
        .map_err(|e| fail("cgroup.event_control", e))?;
        Ok(OomWatch::V1 {
            efd,
            _oom_control: oom_control,
            event_control,
        })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            OomWatch::V1 { efd, .. } => efd.as_fd(),
            OomWatch::V2 { inotify, .. } => inotify.as_fd(),
        }
    }

    /// Waits up to `timeout` for OOM kills; returns how many came (None:
    /// the cgroup is gone, with its container).
    fn wait(&mut self, timeout: std::time::Duration) -> Option<u64> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let ts = Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: timeout.subsec_nanos() as i64,
        };
        let fd = self.fd();
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        if !matches!(poll(&mut fds, Some(&ts)), Ok(n) if n > 0) {
            return Some(0);
        }
        match self {
            OomWatch::V1 {
                efd, event_control, ..
            } => {
                let mut count = [0u8; 8];
                let _ = rustix::io::read(&*efd, &mut count);
                // The kernel also signals it when the cgroup is removed.
                if !event_control.exists() {
                    return None;
                }
                Some(u64::from_ne_bytes(count))
            }
            OomWatch::V2 {
                inotify,
                memory_events,
                seen,
            } => {
                let mut buf = [0u8; 4096];
                while rustix::io::read(&*inotify, &mut buf).is_ok_and(|n| n > 0) {}
                let now = oom_kills(memory_events);
                let new = now.saturating_sub(*seen);
                *seen = (*seen).max(now);
                Some(new)
            }
        }
    }
}

/// Container `c`'s resource usage as runc's `events` prints it (the
/// `data` of a "stats" event: runc's types.Stats, with its field names and
/// the fields it leaves out when zero).
fn stats_json(c: &Container) -> Result<serde_json::Value, OciError> {
    use libcgroups::common::CgroupManager;
    use serde_json::{json, Map, Value};
    let st = cgroup_manager(c)?
        .stats()
        .map_err(|e| cgroup_error(c, &e))?;
    // Puts `v` under `k` unless it is zero or empty (Go's omitempty).
    fn put(m: &mut Map<String, Value>, k: &str, v: Value) {
        let empty = match &v {
            Value::Number(n) => n.as_u64() == Some(0),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::Null => true,
            _ => false,
        };
        if !empty {
            m.insert(k.into(), v);
        }
    }
    let u = &st.cpu.usage;
    let mut usage = Map::new();
    put(&mut usage, "total", json!(u.usage_total));
    put(&mut usage, "percpu", json!(u.per_core_usage_total));
    put(&mut usage, "percpu_kernel", json!(u.per_core_usage_kernel));
    put(&mut usage, "percpu_user", json!(u.per_core_usage_user));
    usage.insert("kernel".into(), json!(u.usage_kernel));
    usage.insert("user".into(), json!(u.usage_user));
    let t = &st.cpu.throttling;
    let mut throttling = Map::new();
    put(&mut throttling, "periods", json!(t.periods));
    put(
        &mut throttling,
        "throttled_periods",
        json!(t.throttled_periods),
    );
    put(&mut throttling, "throttled_time", json!(t.throttled_time));
    let entry = |d: &libcgroups::stats::MemoryData| {
        let mut m = Map::new();
        m.insert("limit".into(), json!(d.limit));
        put(&mut m, "usage", json!(d.usage));
        put(&mut m, "max", json!(d.max_usage));
        m.insert("failcnt".into(), json!(d.fail_count));
        Value::Object(m)
    };
    let mem = &st.memory;
    let mut memory = Map::new();
    put(&mut memory, "cache", json!(mem.cache));
    memory.insert("usage".into(), entry(&mem.memory));
    memory.insert("swap".into(), entry(&mem.memswap));
    memory.insert("kernel".into(), entry(&mem.kernel));
    memory.insert("kernelTCP".into(), entry(&mem.kernel_tcp));
    let raw: std::collections::BTreeMap<_, _> = mem.stats.iter().collect();
    put(&mut memory, "raw", json!(raw));
    let mut pids = Map::new();
    put(&mut pids, "current", json!(st.pids.current));
    put(&mut pids, "limit", json!(st.pids.limit));
    let b = &st.blkio;
    let mut blkio = Map::new();
    for (k, list) in [
        ("ioServiceBytesRecursive", &b.service_bytes),
        ("ioServicedRecursive", &b.serviced),
        ("ioQueueRecursive", &b.queued),
        ("ioServiceTimeRecursive", &b.service_time),
        ("ioWaitTimeRecursive", &b.wait_time),
        ("ioMergedRecursive", &b.merged),
        ("ioTimeRecursive", &b.time),
        ("sectorsRecursive", &b.sectors),
    ] {
        let v: Vec<Value> = list
            .iter()
            .map(|e| {
                let mut m = Map::new();
                m.insert("major".into(), json!(e.major));
                m.insert("minor".into(), json!(e.minor));
                if let Some(op) = &e.op_type {
                    m.insert("op".into(), json!(op));
                }
                m.insert("value".into(), json!(e.value));
                Value::Object(m)
            })
            .collect();
        put(&mut blkio, k, json!(v));
    }
    let mut hugetlb = Map::new();
    for (size, h) in &st.hugetlb {
        let mut m = Map::new();
        put(&mut m, "usage", json!(h.usage));
        put(&mut m, "max_usage", json!(h.max_usage));
        m.insert("failcnt".into(), json!(h.fail_count));
        hugetlb.insert(size.clone(), Value::Object(m));
    }
    // The cpuset files (the container's state read once for all of them).
    let dir = cgroup_dir(c, "cpuset");
    let file = |name: &str, v2: Option<&str>| dir.as_ref().and_then(|d| cgroup_file(d, name, v2));
    let mut cpuset = Map::new();
    let list = |name: &str, v2: &str| file(name, Some(v2)).map(|t| cpu_list(&t));
    if let Some(cpus) = list("cpuset.cpus", "cpuset.cpus.effective") {
        cpuset.insert("cpus".into(), json!(cpus));
    }
    if let Some(mems) = list("cpuset.mems", "cpuset.mems.effective") {
        cpuset.insert("mems".into(), json!(mems));
    }
    for (k, name) in [
        ("cpu_exclusive", "cpuset.cpu_exclusive"),
        ("mem_hardwall", "cpuset.mem_hardwall"),
        ("mem_exclusive", "cpuset.mem_exclusive"),
        ("memory_migrate", "cpuset.memory_migrate"),
        ("memory_spread_page", "cpuset.memory_spread_page"),
        ("memory_spread_slab", "cpuset.memory_spread_slab"),
        ("memory_pressure", "cpuset.memory_pressure"),
        ("sched_load_balance", "cpuset.sched_load_balance"),
        (
            "sched_relax_domain_level",
            "cpuset.sched_relax_domain_level",
        ),
    ] {
        // v1 only (v2 has no such files).
        if let Some(v) = file(name, None).and_then(|t| t.trim().parse::<i64>().ok()) {
            cpuset.insert(k.into(), json!(v));
        }
    }
    Ok(json!({
        "cpu": {"usage": usage, "throttling": throttling},
        "cpuset": cpuset,
        "memory": memory,
        "pids": pids,
        "blkio": blkio,
        "hugetlb": hugetlb,
        "intel_rdt": {},
        "network_interfaces": null,
    }))
}

/// runc's `events`: with `--stats`, one "stats" event; otherwise one every
/// `--interval` and an "oom" event at each OOM kill in between (noticed as
/// it happens: [`OomWatch`]), until the container stops. One JSON object
/// per line.
fn events(g: &Globals, m: &ArgMatches) -> Result<ExitCode, OciError> {
    use libcontainer::container::ContainerStatus;
    let id = m.get_one::<String>("id").expect("required");
    let interval = *m
        .get_one::<std::time::Duration>("interval")
        .expect("has a default");
    let c = g.load(id)?;
    if matches!(c.status(), ContainerStatus::Stopped) {
        return Err(OciError::Io(
            format!("events of {id}"),
            std::io::Error::other("the container is stopped"),
        ));
    }
    let event = |c: &Container| -> Result<String, OciError> {
        Ok(serde_json::json!({"type": "stats", "id": id, "data": stats_json(c)?}).to_string())
    };
    if m.get_flag("stats") {
        println!("{}", event(&c)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut watch = OomWatch::new(&c)?;
    let running = || match g.load(id) {
        Ok(c) if !matches!(c.status(), ContainerStatus::Stopped) => Some(c),
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    loop {
        // Stopped or deleted: the stream ends, as runc's does.
        let Some(c) = running() else {
            return Ok(ExitCode::SUCCESS);
        };
        match event(&c) {
            Ok(line) => {
                let _ = writeln!(out, "{line}");
            }
            // The cgroup went away with the container.
            Err(_) if running().is_none() => return Ok(ExitCode::SUCCESS),
            Err(e) => return Err(e),
        }
        let _ = out.flush();
        let until = std::time::Instant::now() + interval;
        loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            match watch.wait(left) {
                None => return Ok(ExitCode::SUCCESS),
                Some(n) => {
                    for _ in 0..n {
                        let _ = writeln!(out, "{}", serde_json::json!({"type": "oom", "id": id}));
                    }
                    let _ = out.flush();
                }
            }
        }
    }
}

/// runc's `ps`: `--format json` prints the pids (what containerd's shim
/// reads); the table is ps(1)'s, with the lines of those pids only.
fn ps(g: &Globals, m: &ArgMatches) -> Result<ExitCode, OciError> {
    let id = m.get_one::<String>("id").expect("required");
    let pids = pids(&g.load(id)?)?;
    if m.get_one::<String>("format").is_some_and(|f| f == "json") {
        println!("{}", serde_json::to_string(&pids).unwrap_or_default());
        return Ok(ExitCode::SUCCESS);
    }
    let args: Vec<String> = m
        .get_many::<String>("ps_args")
        .map(|v| v.cloned().collect())
        .unwrap_or_else(|| vec!["-ef".into()]);
    let out = std::process::Command::new("ps")
        .args(&args)
        .output()
        .map_err(|e| OciError::Io("ps".into(), e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let column = header
        .split_whitespace()
        .position(|h| h == "PID")
        .ok_or_else(|| {
            OciError::Io(
                format!("ps {}", args.join(" ")),
                std::io::Error::other("its output has no PID column"),
            )
        })?;
    println!("{header}");
    for l in lines {
        let pid = l
            .split_whitespace()
            .nth(column)
            .and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(|p| pids.binary_search(&p).is_ok()) {
            println!("{l}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn list(g: &Globals) -> Result<ExitCode, OciError> {
    println!(
        "{:<40} {:<8} {:<10} {:<40} CREATED",
        "ID", "PID", "STATUS", "BUNDLE"
    );
    let Ok(dir) = std::fs::read_dir(&g.root) else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut rows = Vec::new();
    for e in dir.flatten() {
        let id = e.file_name().to_string_lossy().into_owned();
        if let Ok(c) = g.load(&id) {
            rows.push(format!(
                "{:<40} {:<8} {:<10} {:<40} {}",
                id,
                c.pid().map_or(0, |p| p.as_raw()),
                format!("{:?}", c.status()).to_lowercase(),
                c.bundle().display(),
                c.created().map(|t| t.to_rfc3339()).unwrap_or_default()
            ));
        }
    }
    rows.sort();
    for r in rows {
        println!("{r}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs an OCI runtime subcommand; `None` if `m` is not one.
pub fn main(m: &ArgMatches) -> Option<ExitCode> {
    let (name, sub) = m.subcommand()?;
    if !matches!(
        name,
        "create"
            | "start"
            | "state"
            | "kill"
            | "delete"
            | "exec"
            | "features"
            | "list"
            | "pause"
            | "resume"
            | "ps"
            | "update"
            | "events"
    ) {
        return None;
    }
    let g = match Globals::from(m) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("picos: {e}");
            return Some(ExitCode::FAILURE);
        }
    };
    let id = || sub.get_one::<String>("id").expect("required").as_str();
    let result: Result<ExitCode, OciError> = (|| match name {
        "create" => create(&g, sub, true).map(|_| ExitCode::SUCCESS),
        "start" => {
            g.load(id())?.start()?;
            Ok(ExitCode::SUCCESS)
        }
        "state" => {
            let c = g.load(id())?;
            println!("{}", state_json(&c));
            Ok(ExitCode::SUCCESS)
        }
        "kill" => {
            let s = sub.get_one::<String>("signal").expect("has a default");
            let sig = libcontainer::signal::Signal::try_from(s.as_str())
                .map_err(|_| OciError::BadSignal(s.clone()))?;
            g.load(id())?.kill(sig, sub.get_flag("all"))?;
            Ok(ExitCode::SUCCESS)
        }
        "delete" => {
            let force = sub.get_flag("force");
            match g.load(id()) {
                Ok(mut c) => c.delete(force)?,
                // runc's delete --force of a container that is gone succeeds.
                Err(OciError::NoSuchContainer(_)) if force => {}
                Err(e) => return Err(e),
            }
            tmpcopyup::clean(&g, id());
            Ok(ExitCode::SUCCESS)
        }
        "exec" => exec_process(&g, sub),
        "features" => {
            println!("{}", features());
            Ok(ExitCode::SUCCESS)
        }
        "list" => list(&g),
        "ps" => ps(&g, sub),
        "update" => update(&g, sub),
        "events" => events(&g, sub),
        "pause" => {
            g.load(id())?.pause()?;
            Ok(ExitCode::SUCCESS)
        }
        "resume" => {
            g.load(id())?.resume()?;
            Ok(ExitCode::SUCCESS)
        }
        _ => unreachable!(),
    })();
    Some(match result {
        Ok(code) => code,
        Err(e) => {
            g.report(&e);
            ExitCode::FAILURE
        }
    })
}

/// runc's `run`: create, start, and (unless `--detach`) wait for the
/// container's process, then delete the container (unless `--keep`).
pub fn main_run(args: &[OsString]) -> ExitCode {
    let m = match oci_run_command()
        .try_get_matches_from(std::iter::once(OsString::from("picos")).chain(args.iter().cloned()))
    {
        Ok(m) => m,
        Err(e) => e.exit(),
    };
    let g = match Globals::from(&m) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("picos: {e}");
            return ExitCode::FAILURE;
        }
    };
    let sub = m.subcommand_matches("run").expect("is run");
    let detach = sub.get_flag("detach");
    let result = (|| {
        let mut c = create(&g, sub, detach)?;
        c.start()?;
        if detach {
            return Ok(ExitCode::SUCCESS);
        }
        let pid = c.pid().map_or(0, |p| p.as_raw());
        let code = wait_status(pid);
        if !sub.get_flag("keep") {
            c.refresh_status()?;
            c.delete(true)?;
            tmpcopyup::clean(&g, c.id());
        }
        Ok(code)
    })();
    match result {
        Ok(code) => code,
        Err(e) => {
            g.report(&e);
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_intervals_and_cpu_lists_as_runc_reads_them() {
        use std::time::Duration;
        assert_eq!(parse_interval("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_interval("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_interval("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_interval("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_interval("250us"), Ok(Duration::from_micros(250)));
        for bad in ["", "5", "0s", "-1s", "5x", "s", "1.2.3s"] {
            assert!(parse_interval(bad).is_err(), "{bad:?}");
        }
        assert_eq!(cpu_list("0-3,8\n"), [0, 1, 2, 3, 8]);
        assert_eq!(cpu_list("1"), [1]);
        assert!(cpu_list("\n").is_empty());
    }

    #[test]
    fn update_values_as_runc_takes_them() {
        assert_eq!(bytes("memory", "1024").unwrap(), 1024);
        assert_eq!(bytes("memory", "64m").unwrap(), 64 << 20);
        assert_eq!(bytes("memory", "64MB").unwrap(), 64 << 20);
        assert_eq!(bytes("memory", "2g").unwrap(), 2 << 30);
        assert_eq!(bytes("memory", "3k").unwrap(), 3 << 10);
        assert_eq!(bytes("memory", "-1").unwrap(), -1);
        for bad in ["", "m", "12x", "-2", "1.5g", "b", "99999999999999999999g"] {
            assert!(bytes("memory", bad).is_err(), "{bad:?}");
        }
        let m = update_command().get_matches_from([
            "update",
            "--memory",
            "64m",
            "--memory-swap",
            "-1",
            "--cpu-shares",
            "512",
            "--cpuset-cpus",
            "0-1",
            "--pids-limit",
            "77",
            "--blkio-weight",
            "300",
            "c1",
        ]);
        let r = update_resources(&m).unwrap();
        let mem = r.memory().clone().unwrap();
        assert_eq!(
            (mem.limit(), mem.swap(), mem.reservation()),
            (Some(64 << 20), Some(-1), None)
        );
        let cpu = r.cpu().clone().unwrap();
        assert_eq!(
            (cpu.shares(), cpu.cpus().as_deref()),
            (Some(512), Some("0-1"))
        );
        assert_eq!(r.pids().clone().unwrap().limit(), 77);
        assert_eq!(r.block_io().clone().unwrap().weight(), Some(300));
        let m = update_command().get_matches_from(["update", "--blkio-weight", "5", "c1"]);
        assert!(update_resources(&m).is_err());
        let m = update_command().get_matches_from(["update", "c1"]);
        let r = update_resources(&m).unwrap();
        assert!(r.memory().is_none() && r.cpu().is_none() && r.pids().is_none());
    }

    fn v(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn tells_runc_run_from_picos_run() {
        assert!(!is_oci_run(&v(&["run", "/bin/true"])));
        assert!(!is_oci_run(&v(&["run", "--sandbox", "ls"])));
        assert!(!is_oci_run(&v(&["run", "--", "-d"])));
        assert!(is_oci_run(&v(&["run", "--bundle", "/b", "id1"])));
        assert!(is_oci_run(&v(&["run", "-d", "id1"])));
        assert!(is_oci_run(&v(&["--root", "/r", "run", "-b", "/b", "id1"])));
        assert!(!is_oci_run(&v(&["create", "--bundle", "/b", "id1"])));
    }

    #[test]
    fn container_ids_are_file_names() {
        assert!(valid_id("9b60160c213a") && valid_id("my_c.1+x-2"));
        for bad in ["", ".", "..", "../x", "a/b", "a b", "é"] {
            assert!(!valid_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn log_time_is_rfc3339() {
        let t = rfc3339_now();
        assert_eq!(t.len(), 30, "{t}");
        assert!(
            t.starts_with("20") && t.ends_with('Z') && t.as_bytes()[10] == b'T',
            "{t}"
        );
    }
}
