//! `picos`: run unmodified Linux x86-64 programs in a picoprocess.
//!
//! ```text
//! picos run [-m MANIFEST] [--trace] [--] PROGRAM [ARGS...]
//! picos syscalls [--json]
//! picos manifest check FILE
//! picos manifest default
//! ```

mod manifest;
mod run;
mod syscalls;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "picos", version, about = "Run unmodified Linux x86-64 programs in a picoprocess", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a program under picos. Exit status is the program's (128+N if it
    /// was killed by signal N); 127 if it does not exist; 126 if it cannot be run.
    Run(run::RunArgs),
    /// Print the syscall table: number, name, how picos serves it, note.
    Syscalls {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Work with manifests.
    #[command(subcommand)]
    Manifest(ManifestCmd),
}

#[derive(Subcommand)]
enum ManifestCmd {
    /// Validate a manifest; prints the errors with file:line:column.
    Check { file: PathBuf },
    /// Print the embedded default manifest (used when `run` gets no -m).
    Default,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::main(args),
        Command::Syscalls { json } => {
            syscalls::print(json);
            ExitCode::SUCCESS
        }
        Command::Manifest(ManifestCmd::Check { file }) => {
            match manifest::Manifest::from_file(&file) {
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
        Command::Manifest(ManifestCmd::Default) => {
            print!("{}", manifest::DEFAULT_MANIFEST);
            ExitCode::SUCCESS
        }
    }
}

/// Host environment as pairs (for manifest env resolution).
pub fn host_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os().collect()
}
