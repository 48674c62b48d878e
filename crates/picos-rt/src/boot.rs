//! Start-up of the picoprocess and the process-wide state of the runtime:
//! the launch configuration, the program's path, re-execution on execve.
//!
//! Start-up order: relocate (in `main.rs`), reserve memory, read the launch
//! configuration, set up the main thread's runtime state and stack, install
//! the SIGSYS handler, load the program, build its stack, arm Syscall User
//! Dispatch (every syscall outside the runtime image now traps), and jump.
//!
#![deny(unsafe_code)]

use crate::host;
use crate::kernel::exec::loader;
use crate::kernel::fs::FdTable;
use crate::kernel::process::Process;
use crate::kernel::process::{
    check_root_at_exec, config, fatal, take_notices_from_exec, watch_parent,
};
use crate::kernel::thread;
use crate::kernel::thread::arm_dispatch;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use picos_abi::{LaunchConfig, CONFIG_ENV};

const RLIMIT_STACK: i32 = 3;

/// What the kernel gave the process, read from its initial stack (by
/// `main.rs`, the image's entry point).
pub struct StartArgs {
    pub argv: Vec<Vec<u8>>,
    pub envp: Vec<Vec<u8>>,
    /// The auxiliary vector, its AT_NULL pair included.
    pub auxv: Vec<(u64, u64)>,
    /// The initial stack pointer (the program's stack is built below it).
    pub stack_top: usize,
    /// Where the argv strings start, if the envp strings follow them back
    /// to back (the area /proc/PID/cmdline shows): the program's argv and
    /// envp point there when they are the same strings, so that a program
    /// that rewrites its argv in place (setproctitle) is seen renamed.
    pub strings: Option<usize>,
}

/// The start-up state handed from [`start`] to [`main_on_runtime_stack`]
/// across the switch to the main thread's runtime stack.
struct StartInfo {
    args: StartArgs,
    /// The main thread's stack slot (its `Thread` is in the slot's area).
    slot: usize,
}

static START: spin::Mutex<Option<StartInfo>> = spin::Mutex::new(None);

/// Start-up, after `main.rs` has set up the runtime's memory
/// (`mm::runtime::init`) and read the initial stack.
pub fn start(args: StartArgs) -> ! {
    let StartArgs {
        argv,
        envp,
        auxv,
        stack_top,
        strings,
    } = args;
    let hwcap2 = auxv
        .iter()
        .find(|a| a.0 == loader::AT_HWCAP2)
        .map_or(0, |a| a.1);
    crate::arch::note_hwcap2(hwcap2);
    let prefix = [CONFIG_ENV.as_bytes(), b"="].concat();
    let Some(cfg_raw) = envp.iter().find(|e| e.starts_with(&prefix)) else {
        fatal(
            2,
            format_args!("this is the picos runtime; start programs with `picos run PROGRAM`"),
        );
    };
    let cfg = match LaunchConfig::decode(&cfg_raw[prefix.len()..]) {
        Ok(c) => c,
        Err(e) => fatal(2, format_args!("bad launch configuration: {}", e)),
    };
    crate::diag::log::set_level(cfg.log_level);
    crate::diag::log::note_stderr();
    crate::arch::adopt_cpu_features(cfg.cpu);
    if cfg.stats {
        crate::diag::stats::enable();
    }
    if cfg.profile != 0 {
        crate::diag::stats::enable_profile(cfg.profile);
    }
    let envp: Vec<Vec<u8>> = envp
        .into_iter()
        .filter(|e| !e.starts_with(&prefix))
        .collect();
    crate::kernel::process::set_config(cfg);
    crate::diag::perfmap::at_start(&config().perf_map);
    // The syscall sites earlier runs learnt (`patch::known`), before the
    // program's first trap.
    if !config().sites.is_empty() {
        if let Err(e) = crate::mm::shared::map_known_sites(&config().sites) {
            crate::log!(Debug, "cannot map the known-sites file: {}", e);
        }
    }

    // SIGSYS is blocked across our execve (see `exec_runtime`), not by the program.
    let mask = host::rt_sigprocmask(crate::host::abi::SIG_BLOCK, None).unwrap_or(0)
        & !crate::host::abi::bit(crate::host::abi::SIGSYS);
    let process: &'static Process = Box::leak(Box::new(Process::new()));
    let t = match thread::alloc(process, FdTable::first(), mask) {
        Ok(t) => t,
        Err(e) => fatal(
            127,
            format_args!("cannot allocate the main thread's runtime stack: {}", e),
        ),
    };
    *START.lock() = Some(StartInfo {
        args: StartArgs {
            argv,
            envp,
            auxv,
            stack_top,
            strings,
        },
        slot: t.slot,
    });
    crate::mm::runtime::switch_stack(t.slot, t.stack_top(), main_on_runtime_stack)
}

extern "C" fn main_on_runtime_stack() -> ! {
    let Some(StartInfo { args: info, slot }) = START.lock().take() else {
        fatal(127, format_args!("start-up state lost"));
    };
    let Some(t) = crate::mm::area::in_slot::<thread::Thread>(slot) else {
        fatal(
            127,
            format_args!("the main thread's runtime state is missing"),
        );
    };
    set_up_process(t);
    crate::kernel::process::set_start_state(info.auxv.clone(), info.stack_top);
    let cfg = config();
    // Opened as given: a path relative to the working directory as the
    // kernel opens it (`exec::exec_path` keeps it so); under mounts the CLI
    // and `exec_path` give the guest's absolute path.
    let exe = &cfg.exe;
    let (entry, sp) = load_program(exe, &info);
    // A traced program stops for its tracer before its first instruction
    // (the exec event, and the execve's syscall-exit stop).
    let (entry, sp) = crate::kernel::ptrace::exec_stops(t, entry, sp);
    crate::kernel::process::set_name(exe);
    let vdso = info
        .auxv
        .iter()
        .find(|a| a.0 == loader::AT_SYSINFO_EHDR)
        .map_or(0, |a| a.1 as usize);
    crate::host::vdso::init(vdso);
    // CPUID while it surely works (execve re-enables it); the program may
    // disable it with arch_prctl(ARCH_SET_CPUID, 0). (Nothing to do when
    // the runtime before the execve passed its findings on.)
    crate::arch::probe_cpu();
    // PR_SET_TSC survives execve: a program started with `rdtsc` faulting
    // keeps the runtime off the TSC from the start.
    if crate::host::get_tsc_mode() == Ok(crate::host::abi::prctl::PR_TSC_SIGSEGV as i32) {
        crate::kernel::time::disable_tsc();
    }
    crate::entry::install();
    // The program's seccomp filters, from the program before the execve
    // (or the container's profile, from the CLI): the calls they may
    // refuse go through the runtime's entry, which runs them.
    let filters = match crate::kernel::seccomp::decode(&cfg.seccomp) {
        Ok(f) => f,
        Err(e) => fatal(
            126,
            format_args!("cannot take on the program's seccomp filters: {}", e),
        ),
    };
    t.seccomp
        .store(filters, core::sync::atomic::Ordering::Relaxed);
    // (A traced thread's calls all take the trap path, where its tracer
    // sees them.)
    if cfg.patch_syscalls && t.ptrace.get() == 0 {
        crate::sys::def::init_patching(t, vdso, filters);
    }
    if let Err(e) = arm_dispatch() {
        fatal(
            126,
            format_args!(
                "cannot enable Syscall User Dispatch (needs Linux 5.11+): {}",
                e
            ),
        );
    }
    drop(info);
    crate::log!(
        Debug,
        "starting {} at {:#x}",
        crate::diag::log::Bytes(exe),
        entry
    );
    crate::arch::enter_program(entry, sp)
}

/// The main thread's and the process's state: the thread's runtime state
/// and signal stack, the dispositions inherited through execve, the
/// parent-death watch, the SIGSYS handler, and the stack limit asked for.
fn set_up_process(t: &'static thread::Thread) {
    thread::install(t, true);
    crate::kernel::ptrace::init(config().board);
    if let Err((i, e)) = crate::kernel::fs::mount::init(&config().mounts, FdTable::first()) {
        let m = crate::kernel::fs::mount::table().get(i);
        let what: &[u8] = match m {
            Some(m) if m.detached() => b"(tmpfs or overlay root)",
            Some(m) => &m.host,
            None => b"",
        };
        fatal(
            127,
            format_args!(
                "cannot open the directory of the mount at {}: {} {}",
                crate::diag::log::Bytes(m.map_or(&[][..], |m| &m.guest)),
                crate::diag::log::Bytes(what),
                e
            ),
        );
    }
    crate::kernel::signal::init_dispositions(t);
    watch_parent(t, None);
    check_root_at_exec();
    // Freshly exec'd: no one else can change our process group any more.
    t.ids().pgid_cacheable.store(true, Ordering::Relaxed);
    if let Err(e) = crate::entry::trap::install_runtime_handlers() {
        fatal(
            127,
            format_args!("cannot install the SIGSYS handler: {}", e),
        );
    }
    take_notices_from_exec(t);
    if crate::kernel::fs::mount::table()
        .iter()
        .any(|m| m.writeback)
    {
        // A process killed by a signal writes its write-back buffers out
        // first.
        crate::kernel::signal::catch_fatal_defaults(t);
    }
    let cfg = config();
    if cfg.stack_size_bytes != 0
        && host::setrlimit(RLIMIT_STACK, cfg.stack_size_bytes, u64::MAX).is_err()
    {
        // Keep the hard limit if we may not raise it.
        let _ = host::setrlimit(RLIMIT_STACK, cfg.stack_size_bytes, cfg.stack_size_bytes);
    }
}

/// Loads the program `exe` (absolute, or relative to the working directory)
/// and builds its initial stack below
/// the kernel's; returns its entry point and stack pointer. Failing that,
/// ends the process as a shell reports it (127: not found, 126: cannot run).
fn load_program(exe: &[u8], info: &StartArgs) -> (usize, usize) {
    let cfg = config();
    let name = if cfg.exe_name.is_empty() {
        exe
    } else {
        &cfg.exe_name[..]
    };
    let held = FdTable::first().held();
    let loaded = loader::load_in_any_table(exe, name, &info.argv, &held).unwrap_or_else(|e| {
        fatal(
            e.exit_status(),
            format_args!(
                "cannot run {}: {}",
                crate::diag::log::Bytes(exe),
                e.reason()
            ),
        )
    });
    crate::kernel::process::set_exe_path(loaded.real_path.clone());
    crate::kernel::vm::init_brk(loaded.main.low, loaded.main.end);
    let execfn = &config().exe;
    // The kernel's argv strings are the program's unless the loader
    // changed argv (an interpreter script).
    let reuse = info.strings.filter(|_| loaded.argv == info.argv);
    match loader::build_stack(
        info.stack_top - 256,
        &loaded,
        &info.envp,
        execfn,
        &info.auxv,
        reuse,
        false,
    ) {
        Ok(sp) => (loaded.start, sp),
        Err(e) => fatal(126, format_args!("cannot build the program's stack: {}", e)),
    }
}
