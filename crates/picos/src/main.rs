//! `picos`: run unmodified Linux x86-64 programs in a picoprocess.
//!
//! ```text
//! picos run [-m MANIFEST] [--trace] [--log-level LEVEL] [--] PROGRAM [ARGS...]
//! picos syscalls [--json]
//! picos manifest check FILE
//! picos manifest default
//! picos sandbox explain [-m MANIFEST] [--syscalls]
//! picos bench [--quick] [--rows PATTERN] [--pin CPU] [--json FILE] [--svg FILE] [--compare OLD.json]
//! picos [--root DIR] [--log FILE] [--log-format FMT] create|start|state|kill|delete|exec|run|features|list|pause|resume ...   (an OCI runtime: src/oci.rs)
//! ```
//!
//! The command line is parsed with clap's builder API. (Proc-macro crates
//! are fine in the host build: serde and thiserror derive here; see
//! `.cargo/config.toml` for building a static glibc CLI all the same.)

mod bench;
mod detached;
mod manifest;
mod mounts;
mod oci;
mod oci_seccomp;
mod run;
mod runtime_image;
mod sandbox;
mod stdfds;
mod syscalls;

use clap::{Arg, ArgAction, Command};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// `picos` with no subcommands yet.
fn top() -> Command {
    Command::new("picos")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Run unmodified Linux x86-64 programs in a picoprocess")
        .subcommand_required(true)
        .arg_required_else_help(true)
}

/// `picos run`'s command line.
fn run_command() -> Command {
    run::RunArgs::augment(Command::new("run").about(
        "Run a program under picos (picos becomes the program's first process: its \
             exit status, or the signal that killed it, is picos's); 127 if it does not \
             exist; 126 if it cannot be run",
    ))
}

/// The command-line interface.
fn cli() -> Command {
    top()
        .subcommand(run_command())
        .subcommand(
            Command::new("syscalls")
                .about("Print the syscall table: number, name, how picos serves it, note")
                .arg(
                    Arg::new("json")
                        .long("json")
                        .action(ArgAction::SetTrue)
                        .help("Print JSON instead of a table"),
                ),
        )
        .subcommand(
            Command::new("manifest")
                .about("Work with manifests")
                .subcommand_required(true)
                .arg_required_else_help(true)
                .subcommand(
                    Command::new("check")
                        .about("Validate a manifest; prints the errors with file:line:column")
                        .arg(
                            Arg::new("file")
                                .value_name("FILE")
                                .required(true)
                                .value_parser(clap::value_parser!(PathBuf)),
                        ),
                )
                .subcommand(
                    Command::new("default")
                        .about("Print the embedded default manifest (used when `run` gets no -m)"),
                ),
        )
        .subcommand(
            Command::new("sandbox")
                .about("Work with the sandbox (picos run --sandbox)")
                .subcommand_required(true)
                .arg_required_else_help(true)
                .subcommand(
                    Command::new("explain")
                        .about(
                            "Print, in words, what a sandboxed program may do: files, network, \
                             other processes, system calls",
                        )
                        .arg(
                            Arg::new("manifest")
                                .short('m')
                                .long("manifest")
                                .value_name("MANIFEST")
                                .value_parser(clap::value_parser!(PathBuf))
                                .help("The manifest (default: the embedded one, as run --sandbox)"),
                        )
                        .arg(
                            Arg::new("syscalls")
                                .long("syscalls")
                                .action(ArgAction::SetTrue)
                                .help(
                                    "List every system call: allowed, checked or refused, and why",
                                ),
                        ),
                ),
        )
        .subcommand(bench::command())
        .subcommand(
            Command::new("bench-guest")
                .about("The guest of picos bench's preemptible-function rows")
                .hide(true)
                .arg(
                    Arg::new("args")
                        .num_args(0..)
                        .allow_hyphen_values(true)
                        .trailing_var_arg(true),
                ),
        )
}

/// A command-line error from clap as one line, `picos: ...`, with clap's
/// tip (if any) and where to find the usage.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let mut line = format!("picos: {first}");
    // The lines before the usage: the message's details (the missing
    // arguments, say) and clap's tips.
    for l in lines
        .take_while(|l| !l.starts_with("Usage: ") && !l.starts_with("For more information"))
        .filter(|l| !l.trim().is_empty())
    {
        match l.trim().strip_prefix("tip: ") {
            Some(tip) => line.push_str(&format!(" ({tip})")),
            None => {
                line.push(' ');
                line.push_str(l.trim());
            }
        }
    }
    // "Usage: picos run [OPTIONS] ..." names the (sub)command.
    if let Some(usage) = text.lines().find_map(|l| l.strip_prefix("Usage: ")) {
        let cmd: Vec<&str> = usage
            .split_whitespace()
            .take_while(|w| !w.starts_with(['[', '<', '-']))
            .collect();
        if !cmd.is_empty() {
            line.push_str(&format!("; see '{} --help'", cmd.join(" ")));
        }
    }
    line
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if oci::is_oci_run(&args) {
        return oci::main_run(&args);
    }
    // `picos run PROGRAM [ARGS]...` without options, the common form,
    // needs no parser: what clap would make of it (PROGRAM is not an
    // option, and everything after it is the program's).
    if let [run, prog, ..] = args.as_slice() {
        if run == "run" && !prog.as_encoded_bytes().starts_with(b"-") {
            return run::main(run::RunArgs::program(args[1..].to_vec()));
        }
    }
    // `picos run PROGRAM` (the OCI runtime's `run` was told apart above)
    // is parsed by a command line of `run` alone: building every
    // subcommand's parser (the OCI runtime's, bench's) costs each program's
    // start-up page faults and ~0.1 ms (docs/BENCHMARKS.md, "Thirty-first
    // session"). Its help, errors and matches are the same.
    let cmd = if args.first().is_some_and(|a| a == "run") {
        top().subcommand(run_command())
    } else {
        oci::commands(cli())
    };
    let matches = match cmd.try_get_matches() {
        Ok(m) => m,
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            // --help, --version, or help for a bare `picos`: clap's text.
            e.exit()
        }
        Err(e) => {
            eprintln!("{}", one_line(&e));
            return ExitCode::from(2);
        }
    };
    if !matches!(matches.subcommand_name(), Some("run")) {
        // Printing commands end quietly when their reader goes away
        // (`picos syscalls | head`), as command-line tools do.
        // SAFETY: restoring a default disposition before any thread exists.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    if let Some(code) = oci::main(&matches) {
        return code;
    }
    match matches.subcommand() {
        Some(("run", m)) => run::main(run::RunArgs::from_matches(m)),
        Some(("syscalls", m)) => {
            syscalls::print(m.get_flag("json"));
            ExitCode::SUCCESS
        }
        Some(("bench", m)) => bench::main(m),
        Some(("bench-guest", m)) => {
            let args: Vec<String> = m
                .get_many::<String>("args")
                .map(|v| v.cloned().collect())
                .unwrap_or_default();
            bench::preempt_guest::main(&args)
        }
        Some(("manifest", m)) => match m.subcommand() {
            Some(("check", m)) => {
                let file = m
                    .get_one::<PathBuf>("file")
                    .expect("FILE is a required argument");
                manifest_check(file)
            }
            Some(("default", _)) => {
                print!("{}", manifest::DEFAULT_MANIFEST);
                ExitCode::SUCCESS
            }
            _ => unreachable!("clap requires a manifest subcommand"),
        },
        Some(("sandbox", m)) => match m.subcommand() {
            Some(("explain", m)) if m.get_flag("syscalls") => {
                print!("{}", sandbox::explain_syscalls());
                ExitCode::SUCCESS
            }
            Some(("explain", m)) => sandbox_explain(m.get_one::<PathBuf>("manifest")),
            _ => unreachable!("clap requires a sandbox subcommand"),
        },
        _ => unreachable!("clap requires a subcommand"),
    }
}

/// `picos sandbox explain [-m MANIFEST]`: the policy `picos run --sandbox`
/// would apply, from the same manifest and working directory.
fn sandbox_explain(manifest: Option<&PathBuf>) -> ExitCode {
    let result = run::run_manifest(manifest.map(PathBuf::as_path), true).and_then(|m| {
        let specs = mounts::specs(&m.mounts)?;
        let policy = sandbox::Policy {
            mounts: &specs,
            settings: &m.sandbox,
            extra_files: Vec::new(),
            runtime_image: None,
            container: None,
        };
        Ok(sandbox::explain(&policy))
    });
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("picos: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `picos manifest check FILE`.
fn manifest_check(file: &std::path::Path) -> ExitCode {
    match manifest::Manifest::from_file(file) {
        Ok(m) => {
            println!("{}: ok", file.display());
            println!(
                "  entrypoint: {}",
                m.entrypoint.as_deref().unwrap_or("(from the command line)")
            );
            println!("  log level:  {}", m.log_level.name());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("picos: {e}");
            ExitCode::from(1)
        }
    }
}

/// Host environment as pairs (for manifest env resolution).
pub fn host_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os().collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_is_consistent() {
        super::oci::commands(super::cli()).debug_assert();
    }
}
