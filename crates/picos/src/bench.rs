//! `picos bench`: the seed papers' lmbench-style tables (system calls, file
//! system), natively and under each picos configuration, side by side.
//!
//! ```text
//! picos bench [--quick] [--rows PATTERN] [--pin CPU] [--samples N]
//!             [--json FILE] [--svg FILE] [--compare OLD.json] [--list]
//! ```
//!
//! One guest program (`crates/picos/bench-guest/guest.c`, compiled on first
//! use, see [`guest`]) holds every benchmark: `guest ROW ITERS DIR` runs a
//! warm-up and then one loop of ITERS operations, which it times itself, so
//! process start-up never counts. For each row the harness
//!
//! 1. calibrates ITERS once, natively, so that one timed loop lasts at least
//!    [`Options::target_ns`] (10 ms, or 1 ms with `--quick`);
//! 2. runs the guest once per column, discarded (page cache, files);
//! 3. runs `samples` rounds (30, or 5 with `--quick`); each round runs every
//!    column once, starting at a different column each round (rotating
//!    order), so machine drift hits all columns alike.
//!
//! The preemptible-function rows (crates/preempt) have a guest of their
//! own: the picos binary itself, `picos bench-guest ROW ITERS DIR` (see
//! [`preempt_guest`]), with the same protocol.
//!
//! Columns are [`CONFIGS`] (a name and the extra `picos run` arguments);
//! rows are [`ROWS`], which must list the same rows as the guests' tables
//! (checked at start-up). Statistics are in [`stats`]; the Markdown table,
//! JSON, SVG and `--compare` output in [`report`].

mod guest;
pub mod preempt_guest;
mod report;
mod stats;

use clap::{Arg, ArgAction, ArgMatches, Command};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How a column runs the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Directly, as a host process.
    Native,
    /// Directly, with Syscall User Dispatch switched on in the guest's
    /// first thread for its whole address space (`PICOS_BENCH_SUD=1`): no
    /// call is ever dispatched, but every one takes the kernel's slow entry
    /// and exit, as under picos. What the kernel alone charges an SUD-based
    /// library OS: the floor for every call picos passes to the host.
    /// (Linux does not pass SUD on to new threads and processes, so rows
    /// that make them measure less than that floor there.)
    NativeSud,
    /// `picos run ARGS -- guest ...`.
    Picos(&'static [&'static str]),
    /// `picos run -m MOUNTS -- guest ...`, where MOUNTS mounts the host's
    /// `/` at `/` and the files directory at itself: every path the guest
    /// gives is resolved by the library OS (docs/FILESYSTEM.md), what a
    /// chroot mount costs.
    PicosMounts,
    /// `picos run -m CACHE -- guest ...`, where CACHE mounts the host's `/`
    /// at `/` and the files directory at itself, read-only and exclusive:
    /// lookups there are answered from the library OS's directory cache
    /// (docs/FILESYSTEM.md, "The directory cache"). Only the rows that read
    /// paths run there ([`RowSpec::reads_paths_only`]).
    PicosCache,
    /// `picos run -m WRITEBACK -- guest ...`: as `picos+mounts`, with the
    /// files directory a write-back mount (docs/FILESYSTEM.md, "Write-back
    /// mounts"). Only the rows that write files at their offset run there
    /// ([`RowSpec::writes_at_offset`]).
    PicosWriteBack,
    /// `picos run -m TMPFS -- guest ...`: the host's `/` at `/` and a tmpfs
    /// mount at the files directory's path (docs/FILESYSTEM.md, "tmpfs and
    /// overlay mounts"). Only the file-system rows run there.
    PicosTmpfs,
    /// `picos run -m SANDBOX -- guest`: the seeds' +SC +RM, `--sandbox`'s
    /// seccomp filter, Landlock domain (one rule, at `/`: every open walks
    /// from its file to the root, Landlock's deepest case), no
    /// capabilities, with the host's tree passed through, so that the
    /// column shows the sandbox's own cost apart from the mounts'
    /// (`picos+mounts`). TCP ports are all allowed (the TCP row connects
    /// to a port the kernel picks).
    PicosSandbox,
    /// A configuration of the seed papers that picos does not have yet:
    /// shown as "n/a (not implemented)", never measured.
    NotImplemented,
}

/// A column of the tables.
#[derive(Debug)]
pub struct Config {
    pub name: &'static str,
    pub launch: Launch,
}

/// The columns, in table order. The first is the baseline every ratio is
/// taken against. Adding a configuration is one line here.
pub const CONFIGS: &[Config] = &[
    Config {
        name: "native",
        launch: Launch::Native,
    },
    Config {
        name: "picos",
        launch: Launch::Picos(&[]),
    },
    Config {
        name: "picos-trap",
        launch: Launch::Picos(&["--no-patch"]),
    },
    Config {
        name: "picos+mounts",
        launch: Launch::PicosMounts,
    },
    Config {
        name: "picos+cache",
        launch: Launch::PicosCache,
    },
    Config {
        name: "picos+wb",
        launch: Launch::PicosWriteBack,
    },
    Config {
        name: "picos+tmpfs",
        launch: Launch::PicosTmpfs,
    },
    Config {
        name: "native+SUD",
        launch: Launch::NativeSud,
    },
    // The seeds' sandboxed column: seccomp filter + reference monitor.
    Config {
        name: "+SC +RM",
        launch: Launch::PicosSandbox,
    },
];

/// What a row's value measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Latency: ns per operation (shown in µs); lower is better.
    Ns,
    /// Bandwidth: MB/s, MB = 2^20 bytes (as lmbench); higher is better.
    MBps,
    /// Throughput: operations per second; higher is better.
    OpsPerSec,
}

impl Unit {
    /// The unit as the guest prints it.
    pub fn guest_name(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::MBps => "MB/s",
            Unit::OpsPerSec => "ops/s",
        }
    }
    /// The unit shown in tables.
    pub fn shown(self) -> &'static str {
        match self {
            Unit::Ns => "µs",
            Unit::MBps => "MB/s",
            Unit::OpsPerSec => "ops/s",
        }
    }
    /// Factor from the guest's value to the shown one.
    pub fn scale(self) -> f64 {
        match self {
            Unit::Ns => 1e-3,
            Unit::MBps | Unit::OpsPerSec => 1.0,
        }
    }
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Unit::Ns)
    }
}

/// Which of the seeds' tables a row belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Syscalls,
    Files,
    Preempt,
}

impl Group {
    pub fn title(self) -> &'static str {
        match self {
            Group::Syscalls => "System calls",
            Group::Files => "File system",
            Group::Preempt => "Preemptible functions",
        }
    }
    pub fn key(self) -> &'static str {
        match self {
            Group::Syscalls => "syscalls",
            Group::Files => "files",
            Group::Preempt => "preempt",
        }
    }
}

/// A row: the guest's row name, its label in the tables, unit and table.
#[derive(Debug)]
pub struct RowSpec {
    pub key: &'static str,
    pub label: &'static str,
    pub unit: Unit,
    pub group: Group,
}

impl RowSpec {
    /// Is the row run by the picos binary's own guest (`bench-guest`)
    /// rather than the C guest?
    pub fn builtin_guest(&self) -> bool {
        self.group == Group::Preempt
    }
    /// Does the row only look paths up, open them for reading and read
    /// (so it runs on a read-only mount)?
    pub fn reads_paths_only(&self) -> bool {
        self.key.starts_with("open_")
            || self.key.starts_with("stat_")
            || self.key == "fstat"
            || self.key.starts_with("pread_")
            || self.key == "read_256"
            || self.key == "read_1k"
    }
    /// Does the row write a file at its offset (so it runs on a write-back
    /// mount)?
    pub fn writes_at_offset(&self) -> bool {
        self.key == "write_256" || self.key == "write_1k"
    }
}

/// Is row `spec` measured in column `c`?
pub fn runs(c: &Config, spec: &RowSpec) -> bool {
    match c.launch {
        Launch::NotImplemented => false,
        Launch::PicosCache => spec.reads_paths_only(),
        Launch::PicosWriteBack => spec.writes_at_offset(),
        Launch::PicosTmpfs => spec.group == Group::Files,
        _ => true,
    }
}

const fn row(key: &'static str, label: &'static str, unit: Unit, group: Group) -> RowSpec {
    RowSpec {
        key,
        label,
        unit,
        group,
    }
}

use Group::{Files, Preempt, Syscalls};
use Unit::{MBps, Ns, OpsPerSec};

/// The rows, in table order. Adding a row is one line here and one in the
/// guest's `rows[]` (same key and unit; checked when `picos bench` starts).
pub const ROWS: &[RowSpec] = &[
    row("null", "null syscall (getppid)", Ns, Syscalls),
    row("getpid", "getpid", Ns, Syscalls),
    row("sigaction", "sigaction install", Ns, Syscalls),
    row("sig_deliver", "signal to a handler (raise)", Ns, Syscalls),
    row("sigprocmask", "sigprocmask", Ns, Syscalls),
    row("sigpending", "sigpending (nothing blocked)", Ns, Syscalls),
    row("getaffinity", "sched_getaffinity", Ns, Syscalls),
    row("fork", "fork + exit + wait", Ns, Syscalls),
    row("fork_exec", "fork + exec /bin/true", Ns, Syscalls),
    row("vfork_exec", "vfork + exec /bin/true", Ns, Syscalls),
    row("pthread", "pthread_create + join", Ns, Syscalls),
    row("mmap_1m", "mmap + munmap 1 MiB", Ns, Syscalls),
    row("page_fault", "page fault, fresh page", Ns, Syscalls),
    row("pipe_lat", "pipe round trip", Ns, Syscalls),
    row("pipe_bw", "pipe bandwidth, 64 KiB chunks", MBps, Syscalls),
    row("unix_lat", "AF_UNIX socket round trip", Ns, Syscalls),
    row("tcp_lat", "TCP loopback round trip", Ns, Syscalls),
    row("read_1", "read 1 B of /dev/zero", Ns, Syscalls),
    row("write_1", "write 1 B to /dev/null", Ns, Syscalls),
    row("prot_fault", "protection fault, handled", Ns, Syscalls),
    row("open_2", "open + close, 2 components", Ns, Files),
    row("open_4", "open + close, 4 components", Ns, Files),
    row("open_8", "open + close, 8 components", Ns, Files),
    row("open_abs", "open + close, absolute path", Ns, Files),
    row("stat_2", "stat, 2 components", Ns, Files),
    row("stat_4", "stat, 4 components", Ns, Files),
    row("stat_8", "stat, 8 components", Ns, Files),
    row("fstat", "fstat", Ns, Files),
    row("read_256", "read 256 B", Ns, Files),
    row("read_1k", "read 1 KiB", Ns, Files),
    row("write_256", "write 256 B", Ns, Files),
    row("write_1k", "write 1 KiB", Ns, Files),
    row("pread_256", "pread 256 B", Ns, Files),
    row("pread_1k", "pread 1 KiB", Ns, Files),
    row("pread_4k", "pread 4 KiB", Ns, Files),
    row("pread_16k", "pread 16 KiB", Ns, Files),
    row("pwrite_256", "pwrite 256 B", Ns, Files),
    row("pwrite_1k", "pwrite 1 KiB", Ns, Files),
    row("pwrite_4k", "pwrite 4 KiB", Ns, Files),
    row("pwrite_16k", "pwrite 16 KiB", Ns, Files),
    row("create_0k", "create 0 KiB files", OpsPerSec, Files),
    row("delete_0k", "delete 0 KiB files", OpsPerSec, Files),
    row("create_10k", "create 10 KiB files", OpsPerSec, Files),
    row("delete_10k", "delete 10 KiB files", OpsPerSec, Files),
    row("read_bw", "sequential read, 64 MiB file", MBps, Files),
    row(
        "preempt_launch",
        "launch (function pauses at once)",
        Ns,
        Preempt,
    ),
    row("preempt_resume", "resume (function returns)", Ns, Preempt),
    row("preempt_cancel", "cancel (paused function)", Ns, Preempt),
    row(
        "preempt_overshoot",
        "timeout overshoot p99, 100 µs budget",
        Ns,
        Preempt,
    ),
    row(
        "timer_overshoot",
        "bare POSIX timer overshoot p99, 100 µs",
        Ns,
        Preempt,
    ),
];

/// The command line of `picos bench`.
pub fn command() -> Command {
    Command::new("bench")
        .about(
            "Run lmbench-style micro-benchmarks (the seed papers' tables) natively and under \
             each picos configuration, interleaved, and print them side by side",
        )
        .arg(
            Arg::new("quick")
                .long("quick")
                .action(ArgAction::SetTrue)
                .help("5 samples per cell and 1 ms loops (seconds instead of minutes; for CI)"),
        )
        .arg(
            Arg::new("rows").long("rows").value_name("PATTERN").help(
                "Only rows whose name contains one of these comma-separated words (see --list)",
            ),
        )
        .arg(
            Arg::new("pin")
                .long("pin")
                .value_name("CPU")
                .value_parser(clap::value_parser!(usize))
                .help("Pin the harness and every guest to this CPU"),
        )
        .arg(
            Arg::new("samples")
                .long("samples")
                .value_name("N")
                .value_parser(clap::value_parser!(u32).range(2..))
                .help("Samples per row and column (default 30; 5 with --quick)"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Write every sample and the statistics as JSON"),
        )
        .arg(
            Arg::new("svg")
                .long("svg")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Write a bar chart of the overheads as SVG"),
        )
        .arg(
            Arg::new("compare")
                .long("compare")
                .value_name("OLD.json")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Also compare with an earlier run's --json output (A/B of two builds)"),
        )
        .arg(
            Arg::new("dir")
                .long("dir")
                .value_name("DIR")
                .value_parser(clap::value_parser!(PathBuf))
                .help(
                    "Where the file rows make their temporary directory (default: /dev/shm \
                     if it is a tmpfs, else the system's temporary directory)",
                ),
        )
        .arg(
            Arg::new("list")
                .long("list")
                .action(ArgAction::SetTrue)
                .help("List the rows and columns, and exit"),
        )
}

/// Parsed options.
#[derive(Debug)]
pub struct Options {
    pub quick: bool,
    pub rows: Option<String>,
    pub pin: Option<usize>,
    pub samples: usize,
    /// Minimum length of one timed loop, natively.
    pub target_ns: f64,
    /// Longest one guest run may take before it is killed.
    pub timeout: Duration,
    pub json: Option<PathBuf>,
    pub svg: Option<PathBuf>,
    pub compare: Option<PathBuf>,
    /// Parent of the file rows' temporary directory.
    pub dir: Option<PathBuf>,
    pub list: bool,
}

impl Options {
    fn from_matches(m: &ArgMatches) -> Options {
        let quick = m.get_flag("quick");
        Options {
            quick,
            rows: m.get_one::<String>("rows").cloned(),
            pin: m.get_one::<usize>("pin").copied(),
            samples: m
                .get_one::<u32>("samples")
                .map(|&n| n as usize)
                .unwrap_or(if quick { 5 } else { 30 }),
            target_ns: if quick { 1e6 } else { 10e6 },
            timeout: Duration::from_secs(300),
            json: m.get_one::<PathBuf>("json").cloned(),
            svg: m.get_one::<PathBuf>("svg").cloned(),
            compare: m.get_one::<PathBuf>("compare").cloned(),
            dir: m.get_one::<PathBuf>("dir").cloned(),
            list: m.get_flag("list"),
        }
    }
}

/// One column of one row: the samples of every round, in round order.
#[derive(Debug, Default)]
pub struct Cell {
    /// The guest's value (unit of the row) per round.
    pub samples: Vec<f64>,
    /// The timed loop's length per round, ns.
    pub elapsed_ns: Vec<f64>,
    /// Why the column stopped (its remaining rounds were not run).
    pub error: Option<String>,
}

/// One row's results.
#[derive(Debug)]
pub struct RowResult {
    pub spec: &'static RowSpec,
    /// Operations per timed loop (calibrated natively).
    pub iters: u64,
    /// One per entry of [`CONFIGS`].
    pub cells: Vec<Cell>,
    /// For each round, the column indices in the order they ran.
    pub orders: Vec<Vec<usize>>,
}

/// What the run was: for the report and the JSON.
#[derive(Debug)]
pub struct RunInfo {
    pub command: String,
    pub date_utc: String,
    pub started_unix_s: u64,
    pub duration_s: f64,
    pub quick: bool,
    pub samples: usize,
    pub target_ns: f64,
    pub pin: Option<usize>,
    pub kernel: String,
    pub cpu: String,
    pub cpus: usize,
    pub load_start: String,
    pub load_end: String,
    /// Where the file rows' files were, and its file system type.
    pub files_dir: String,
}

/// Why a run of the harness stopped early.
#[derive(Debug)]
enum Stop {
    Interrupted,
    Error(String),
}

impl From<String> for Stop {
    fn from(e: String) -> Self {
        Stop::Error(e)
    }
}

/// Set by SIGINT, SIGTERM or SIGHUP: the harness stops the current guest,
/// removes its files and exits.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn catch_interrupts() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe);
        // the sigaction struct is fully initialised.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// `picos bench`.
pub fn main(m: &ArgMatches) -> ExitCode {
    let opts = Options::from_matches(m);
    match run(&opts) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(Stop::Interrupted) => {
            eprintln!("picos: bench: interrupted");
            ExitCode::from(130)
        }
        Err(Stop::Error(e)) => {
            eprintln!("picos: bench: {e}");
            ExitCode::from(1)
        }
    }
}

/// The rows `pattern` selects (all without one).
fn select_rows(pattern: Option<&str>) -> Result<Vec<&'static RowSpec>, String> {
    let Some(pattern) = pattern else {
        return Ok(ROWS.iter().collect());
    };
    let words: Vec<&str> = pattern
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    let rows: Vec<_> = ROWS
        .iter()
        .filter(|r| words.iter().any(|w| r.key.contains(w)))
        .collect();
    if rows.is_empty() {
        return Err(format!(
            "--rows {pattern}: no row matches (rows: {})",
            ROWS.iter().map(|r| r.key).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(rows)
}

/// Checks that a guest's table and its rows of [`ROWS`] (`builtin`: the
/// picos binary's own guest) list the same rows and units.
fn check_guest_rows(listed: &[(String, String)], builtin: bool) -> Result<(), String> {
    let mut problems = Vec::new();
    let ours = || ROWS.iter().filter(|r| r.builtin_guest() == builtin);
    for r in ours() {
        match listed.iter().find(|(k, _)| k == r.key) {
            None => problems.push(format!("`{}` is not in the guest", r.key)),
            Some((_, u)) if u != r.unit.guest_name() => problems.push(format!(
                "`{}` is in {} in the guest but {} in the harness",
                r.key,
                u,
                r.unit.guest_name()
            )),
            Some(_) => {}
        }
    }
    for (k, _) in listed {
        if !ours().any(|r| r.key == k) {
            problems.push(format!("`{k}` is in the guest but not in ROWS (bench.rs)"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the guest's rows and the harness's ROWS disagree: {}",
            problems.join("; ")
        ))
    }
}

fn pin_to(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("--pin {cpu}: no such CPU"));
    }
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes a bit
    // within it (cpu < CPU_SETSIZE); sched_setaffinity reads it.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r != 0 {
        return Err(format!("--pin {cpu}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The type of the file system holding `path`, by name where known.
fn fs_type(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return "unknown".into();
    };
    // SAFETY: an all-zero statfs is valid; statfs writes it and reads `c`,
    // a NUL-terminated string that outlives the call.
    let (r, st) = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        (libc::statfs(c.as_ptr(), &mut st), st)
    };
    if r != 0 {
        return "unknown".into();
    }
    // f_type is a c_ulong on musl but an i64 on glibc.
    #[allow(clippy::unnecessary_cast)]
    let magic = st.f_type as u64;
    match magic {
        0x0102_1994 => "tmpfs".into(),
        0xef53 => "ext4".into(),
        0x9123_683e => "btrfs".into(),
        0x5846_5342 => "xfs".into(),
        0x794c_7630 => "overlayfs".into(),
        t => format!("type {t:#x}"),
    }
}

/// Where the file rows make their directory: `--dir`, else /dev/shm if it
/// is a tmpfs (the rows then measure system calls, not a disk's writeback),
/// else the system's temporary directory.
fn files_parent(dir: Option<&Path>) -> PathBuf {
    if let Some(d) = dir {
        return d.to_path_buf();
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && fs_type(shm) == "tmpfs" {
        return shm.to_path_buf();
    }
    std::env::temp_dir()
}

/// A directory for the file rows, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(parent: &Path) -> Result<TempDir, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let p = parent.join(format!("picos-bench.{}.{nanos}", std::process::id()));
        std::fs::create_dir(&p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a run needs to start a guest.
struct Ctx {
    picos: PathBuf,
    guest: PathBuf,
    dir: PathBuf,
    /// The manifest of the `picos+mounts` column.
    mounts_manifest: PathBuf,
    /// The manifest of the `picos+cache` column.
    cache_manifest: PathBuf,
    writeback_manifest: PathBuf,
    tmpfs_manifest: PathBuf,
    sandbox_manifest: PathBuf,
    timeout: Duration,
}

/// One guest run's result.
#[derive(Clone, Copy, Debug)]
struct Sample {
    value: f64,
    elapsed_ns: f64,
}

/// The manifest of the `picos+mounts` column: the host's tree at `/` and
/// the files directory `dir` mounted at itself.
fn mounts_manifest_text(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n\
         [[fs.mounts]]\npath = \"{d}\"\nuri = \"file:{d}\"\n"
    )
}

/// The manifest of the `picos+cache` column: as `picos+mounts`, with the
/// files directory read-only and exclusive.
fn cache_manifest_text(dir: &Path) -> String {
    format!(
        "{}readonly = true\nexclusive = true\n",
        mounts_manifest_text(dir)
    )
}

/// The manifest of the `picos+wb` column: as `picos+mounts`, with the files
/// directory a write-back mount.
fn writeback_manifest_text(dir: &Path) -> String {
    format!("{}writeback = true\n", mounts_manifest_text(dir))
}

/// The manifest of the `picos+tmpfs` column: the host's tree at `/`, a
/// tmpfs at the files directory's path, which is the working directory.
fn tmpfs_manifest_text(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\n\
         [fs]\nstart_dir = \"{d}\"\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n\
         [[fs.mounts]]\ntype = \"tmpfs\"\npath = \"{d}\"\n"
    )
}

/// The manifest of the `+SC +RM` column: the host's tree at `/`, passed
/// through, and the sandbox on (every TCP port allowed), in the files
/// directory (as a sandboxed program works in its working directory, which
/// has a Landlock rule of its own).
fn sandbox_manifest_text(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "[loader]\ninsecure__use_cmdline_argv = true\ninsecure__use_host_env = true\n\n\
         [fs]\nstart_dir = \"{d}\"\n\n\
         [sandbox]\nenable = true\nnet.tcp = true\n\n\
         [[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n"
    )
}

/// Runs the guest once: `row` with `iters` operations, in column `cfg`.
fn run_guest(ctx: &Ctx, cfg: &Config, spec: &RowSpec, iters: u64) -> Result<Sample, Stop> {
    let guest = if spec.builtin_guest() {
        &ctx.picos
    } else {
        &ctx.guest
    };
    let mut cmd = match cfg.launch {
        Launch::Native => std::process::Command::new(guest),
        Launch::NativeSud => {
            let mut c = std::process::Command::new(guest);
            c.env("PICOS_BENCH_SUD", "1");
            c
        }
        Launch::Picos(args) => {
            let mut c = std::process::Command::new(&ctx.picos);
            c.arg("run").args(args).arg("--").arg(guest);
            c
        }
        Launch::PicosMounts
        | Launch::PicosCache
        | Launch::PicosWriteBack
        | Launch::PicosTmpfs
        | Launch::PicosSandbox => {
            let manifest = match cfg.launch {
                Launch::PicosCache => &ctx.cache_manifest,
                Launch::PicosWriteBack => &ctx.writeback_manifest,
                Launch::PicosTmpfs => &ctx.tmpfs_manifest,
                Launch::PicosSandbox => &ctx.sandbox_manifest,
                _ => &ctx.mounts_manifest,
            };
            let mut c = std::process::Command::new(&ctx.picos);
            c.arg("run").arg("-m").arg(manifest).arg("--").arg(guest);
            c
        }
        Launch::NotImplemented => unreachable!("not-implemented columns are never run"),
    };
    if spec.builtin_guest() {
        cmd.arg("bench-guest");
    }
    use std::os::unix::process::CommandExt;
    cmd.arg(spec.key)
        .arg(iters.to_string())
        .arg(&ctx.dir)
        .current_dir(&ctx.dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that a timeout or an interrupt can end
        // the guest and all its children (and `picos run` with it).
        .process_group(0);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", guest.display()))?;
    let pgid = child.id() as libc::pid_t;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let timeout = ctx.timeout;
    let watchdog = std::thread::spawn(move || {
        let deadline = Instant::now() + timeout;
        loop {
            match done_rx.recv_timeout(Duration::from_millis(100)) {
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
                    if interrupted || Instant::now() >= deadline {
                        // SAFETY: kill has no memory effects; the group is
                        // the child's own (it has not been waited for yet).
                        unsafe { libc::kill(-pgid, libc::SIGKILL) };
                        return Some(interrupted);
                    }
                }
                _ => return None,
            }
        }
    });
    let out = child.wait_with_output();
    drop(done_tx);
    let killed = watchdog.join().unwrap_or(None);
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(Stop::Interrupted);
    }
    if killed.is_some() {
        return Err(Stop::Error(format!(
            "timed out after {} s",
            ctx.timeout.as_secs()
        )));
    }
    let out = out.map_err(|e| format!("waiting for the guest: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail = || {
        let lines: Vec<&str> = stderr.lines().collect();
        lines[lines.len().saturating_sub(3)..].join(" | ")
    };
    if !out.status.success() {
        return Err(Stop::Error(format!("{}; stderr: {}", out.status, tail())));
    }
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.split(' ').next() == Some(spec.key))
        .ok_or_else(|| format!("no result line in the guest's output; stderr: {}", tail()))?;
    let f: Vec<&str> = line.split(' ').collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    match (num(1), f.get(2), num(3)) {
        (Some(value), Some(&unit), Some(elapsed_ns))
            if unit == spec.unit.guest_name() && value.is_finite() && value > 0.0 =>
        {
            Ok(Sample { value, elapsed_ns })
        }
        _ => Err(Stop::Error(format!("bad result line `{line}`"))),
    }
}

/// Progress on standard error: a bar on a terminal, a line per row otherwise.
struct Progress {
    tty: bool,
    total: usize,
    done: usize,
    start: Instant,
}

impl Progress {
    /// Shows the run about to start (`done` runs are finished).
    fn show(&self, row: &str, col: &str) {
        if !self.tty {
            return;
        }
        let frac = self.done as f64 / self.total.max(1) as f64;
        let width = 28;
        let filled = ((frac * width as f64) as usize).min(width);
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = if frac > 0.0 {
            elapsed / frac - elapsed
        } else {
            0.0
        };
        eprint!(
            "\r\x1b[K[{}{}] {}/{} {row} {col}  {:.0} s, ~{:.0} s left",
            "#".repeat(filled),
            ".".repeat(width - filled),
            self.done,
            self.total,
            elapsed,
            eta
        );
        let _ = std::io::stderr().flush();
    }

    fn row_done(&self, index: usize, of: usize, r: &RowResult) {
        if !self.tty {
            eprintln!(
                "picos bench: {}/{of} {}: {} operations per loop, {:.0} s so far",
                index + 1,
                r.spec.key,
                r.iters,
                self.start.elapsed().as_secs_f64()
            );
        }
    }

    fn finish(&self) {
        if self.tty {
            eprint!("\r\x1b[K");
        }
    }
}

/// Indices of the columns that are run.
fn available() -> Vec<usize> {
    (0..CONFIGS.len())
        .filter(|&i| CONFIGS[i].launch != Launch::NotImplemented)
        .collect()
}

/// Measures one row in every available column.
fn measure_row(
    ctx: &Ctx,
    opts: &Options,
    spec: &'static RowSpec,
    progress: &mut Progress,
) -> Result<RowResult, Stop> {
    let cols: Vec<usize> = available()
        .into_iter()
        .filter(|&i| runs(&CONFIGS[i], spec))
        .collect();
    let mut result = RowResult {
        spec,
        iters: 1,
        cells: CONFIGS.iter().map(|_| Cell::default()).collect(),
        orders: Vec::new(),
    };
    // Calibrate in the baseline column: grow ITERS until a loop is long
    // enough. Each step takes the shortest of CALIBRATION_RUNS loops, so one
    // loop slowed down by another process does not stop the growth early.
    const CALIBRATION_RUNS: usize = 3;
    let base = &CONFIGS[cols[0]];
    loop {
        let mut shortest = f64::INFINITY;
        for _ in 0..CALIBRATION_RUNS {
            match run_guest(ctx, base, spec, result.iters) {
                Ok(s) => shortest = shortest.min(s.elapsed_ns),
                Err(Stop::Error(e)) => {
                    for &c in &cols {
                        result.cells[c].error = Some(format!("calibration in {}: {e}", base.name));
                    }
                    return Ok(result);
                }
                Err(stop) => return Err(stop),
            }
        }
        if shortest >= opts.target_ns || result.iters >= 1 << 40 {
            break;
        }
        let grow = (opts.target_ns * 1.2 / shortest.max(1.0)).clamp(1.5, 100.0);
        result.iters = ((result.iters as f64) * grow).ceil() as u64;
    }
    // One discarded run per column, then the rounds.
    for round in 0..=opts.samples {
        let order: Vec<usize> = (0..cols.len())
            .map(|j| cols[(j + round) % cols.len()])
            .collect();
        for &c in &order {
            if result.cells[c].error.is_none() {
                progress.show(spec.key, CONFIGS[c].name);
                match run_guest(ctx, &CONFIGS[c], spec, result.iters) {
                    Ok(s) if round > 0 => {
                        result.cells[c].samples.push(s.value);
                        result.cells[c].elapsed_ns.push(s.elapsed_ns);
                    }
                    Ok(_) => {}
                    Err(Stop::Error(e)) => result.cells[c].error = Some(e),
                    Err(stop) => return Err(stop),
                }
            }
            progress.done += 1;
        }
        if round > 0 {
            result.orders.push(order);
        }
    }
    Ok(result)
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn load_average() -> String {
    read_trimmed("/proc/loadavg")
        .split(' ')
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Days since 1970-01-01 to (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn utc_date(unix_s: u64) -> String {
    let (y, m, d) = civil_from_days((unix_s / 86_400) as i64);
    let s = unix_s % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        s / 3600,
        (s / 60) % 60
    )
}

fn run_info(opts: &Options) -> RunInfo {
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let cpu = read_trimmed("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    // SAFETY: sysconf has no memory effects.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    RunInfo {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        date_utc: utc_date(started_unix_s),
        started_unix_s,
        duration_s: 0.0,
        quick: opts.quick,
        samples: opts.samples,
        target_ns: opts.target_ns,
        pin: opts.pin,
        kernel: format!("Linux {}", read_trimmed("/proc/sys/kernel/osrelease")),
        cpu,
        cpus,
        load_start: load_average(),
        load_end: String::new(),
        files_dir: String::new(),
    }
}

/// Runs the benchmark; `Ok(false)` if some column of some row failed.
fn run(opts: &Options) -> Result<bool, Stop> {
    let rows = select_rows(opts.rows.as_deref())?;
    if opts.list {
        println!("columns:");
        for c in CONFIGS {
            match c.launch {
                Launch::Native => println!("  {:<12} the guest run directly", c.name),
                Launch::NativeSud => println!(
                    "  {:<12} the guest run directly, Syscall User Dispatch on (nothing dispatched)",
                    c.name
                ),
                Launch::Picos(a) => {
                    println!(
                        "  {:<12} picos run {}-- guest",
                        c.name,
                        a.iter().map(|a| format!("{a} ")).collect::<String>()
                    )
                }
                Launch::PicosMounts => println!(
                    "  {:<12} picos run -m MOUNTS -- guest (MOUNTS: / from file:/, the files directory from itself)",
                    c.name
                ),
                Launch::PicosCache => println!(
                    "  {:<12} picos run -m CACHE -- guest (CACHE: as MOUNTS, the files directory read-only and exclusive; open, stat, fstat, read and pread rows only)",
                    c.name
                ),
                Launch::PicosWriteBack => println!(
                    "  {:<12} picos run -m WRITEBACK -- guest (WRITEBACK: as MOUNTS, the files directory a write-back mount; write rows only)",
                    c.name
                ),
                Launch::PicosTmpfs => println!(
                    "  {:<12} picos run -m TMPFS -- guest (TMPFS: / from file:/, a tmpfs at the files directory's path; file-system rows only)",
                    c.name
                ),
                Launch::PicosSandbox => println!(
                    "  {:<12} picos run -m SANDBOX -- guest (SANDBOX: --sandbox's seccomp filter, Landlock and no capabilities, the host's tree passed through: docs/SECURITY.md)",
                    c.name
                ),
                Launch::NotImplemented => {
                    println!("  {:<12} not implemented (shown as n/a)", c.name)
                }
            }
        }
        println!("rows:");
        for r in rows {
            println!("  {:<12} {:<6} {}", r.key, r.unit.shown(), r.label);
        }
        return Ok(true);
    }
    // Read the old run first: a bad file should fail before a long run.
    let old = match &opts.compare {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("--compare {}: {e}", p.display()))?;
            Some((p.clone(), report::read_old(&text, p)?))
        }
        None => None,
    };
    let mut info = run_info(opts);
    if let Some(cpu) = opts.pin {
        pin_to(cpu)?;
    }
    let picos =
        std::env::current_exe().map_err(|e| format!("cannot find the picos binary: {e}"))?;
    // The C guest is compiled only when a row needs it.
    let guest = if rows.iter().any(|r| !r.builtin_guest()) {
        let g = guest::ensure()?;
        check_guest_rows(&guest::list(&g)?, false)?;
        g
    } else {
        PathBuf::new()
    };
    let builtin: Vec<(String, String)> = preempt_guest::ROWS
        .iter()
        .map(|(k, u)| (k.to_string(), u.to_string()))
        .collect();
    check_guest_rows(&builtin, true)?;
    let parent = files_parent(opts.dir.as_deref());
    let dir = TempDir::new(&parent)?;
    info.files_dir = format!("{} ({})", parent.display(), fs_type(&dir.0));
    catch_interrupts();
    let manifest_dir = TempDir::new(&parent)?;
    let canonical = dir.0.canonicalize().unwrap_or_else(|_| dir.0.clone());
    let mounts_manifest = manifest_dir.0.join("mounts.toml");
    std::fs::write(&mounts_manifest, mounts_manifest_text(&canonical))
        .map_err(|e| Stop::Error(format!("{}: {e}", mounts_manifest.display())))?;
    let cache_manifest = manifest_dir.0.join("cache.toml");
    std::fs::write(&cache_manifest, cache_manifest_text(&canonical))
        .map_err(|e| Stop::Error(format!("{}: {e}", cache_manifest.display())))?;
    let writeback_manifest = manifest_dir.0.join("writeback.toml");
    std::fs::write(&writeback_manifest, writeback_manifest_text(&canonical))
        .map_err(|e| Stop::Error(format!("{}: {e}", writeback_manifest.display())))?;
    let tmpfs_manifest = manifest_dir.0.join("tmpfs.toml");
    std::fs::write(&tmpfs_manifest, tmpfs_manifest_text(&canonical))
        .map_err(|e| Stop::Error(format!("{}: {e}", tmpfs_manifest.display())))?;
    let sandbox_manifest = manifest_dir.0.join("sandbox.toml");
    std::fs::write(&sandbox_manifest, sandbox_manifest_text(&canonical))
        .map_err(|e| Stop::Error(format!("{}: {e}", sandbox_manifest.display())))?;
    let ctx = Ctx {
        picos,
        guest,
        dir: dir.0.clone(),
        mounts_manifest,
        cache_manifest,
        writeback_manifest,
        tmpfs_manifest,
        sandbox_manifest,
        timeout: opts.timeout,
    };
    let mut progress = Progress {
        tty: std::io::stderr().is_terminal(),
        total: rows
            .iter()
            .map(|r| {
                available()
                    .iter()
                    .filter(|&&i| runs(&CONFIGS[i], r))
                    .count()
            })
            .sum::<usize>()
            * (opts.samples + 1),
        done: 0,
        start: Instant::now(),
    };
    let mut results = Vec::new();
    for (i, spec) in rows.iter().enumerate() {
        let r = measure_row(&ctx, opts, spec, &mut progress);
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                progress.finish();
                return Err(e);
            }
        };
        progress.row_done(i, rows.len(), &r);
        results.push(r);
    }
    progress.finish();
    drop(dir);
    info.duration_s = progress.start.elapsed().as_secs_f64();
    info.load_end = load_average();

    print!("{}", report::markdown(&results, &info));
    if let Some((path, old)) = &old {
        print!("{}", report::compare(&results, old, path));
    }
    if let Some(p) = &opts.json {
        write_file(p, &report::json(&results, &info))?;
    }
    if let Some(p) = &opts.svg {
        write_file(p, &report::svg(&results, &info))?;
    }
    Ok(results
        .iter()
        .all(|r| r.cells.iter().all(|c| c.error.is_none())))
}

fn write_file(path: &Path, text: &str) -> Result<(), Stop> {
    std::fs::write(path, text)
        .map_err(|e| Stop::Error(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_consistent() {
        assert_eq!(
            CONFIGS[0].launch,
            Launch::Native,
            "the baseline comes first"
        );
        let mut keys: Vec<&str> = ROWS.iter().map(|r| r.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), ROWS.len(), "row keys are unique");
        // The guest's table, read from its source, lists the same rows.
        let listed: Vec<(String, String)> = guest::SOURCE
            .lines()
            .filter_map(|l| {
                let l = l.trim().strip_prefix("{\"")?;
                let (name, rest) = l.split_once('"')?;
                let unit = rest
                    .trim_start_matches(',')
                    .trim()
                    .split(',')
                    .next()?
                    .trim();
                let unit = match unit {
                    "NS" => "ns",
                    "MBPS" => "MB/s",
                    "OPS" => "ops/s",
                    _ => return None,
                };
                Some((name.to_string(), unit.to_string()))
            })
            .collect();
        check_guest_rows(&listed, false).unwrap();
        let builtin: Vec<(String, String)> = preempt_guest::ROWS
            .iter()
            .map(|(k, u)| (k.to_string(), u.to_string()))
            .collect();
        check_guest_rows(&builtin, true).unwrap();
    }

    #[test]
    fn row_selection() {
        let keys = |p| {
            select_rows(Some(p))
                .unwrap()
                .iter()
                .map(|r| r.key)
                .collect::<Vec<_>>()
        };
        assert_eq!(keys("open"), ["open_2", "open_4", "open_8", "open_abs"]);
        assert_eq!(keys("null, pread_256"), ["null", "pread_256"]);
        assert_eq!(select_rows(None).unwrap().len(), ROWS.len());
        assert!(select_rows(Some("nothing-like-this")).is_err());
    }

    #[test]
    fn dates() {
        assert_eq!(utc_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_date(1_700_000_000), "2023-11-14 22:13 UTC");
    }
}
