//! `picos syscalls`: prints the runtime's declarative syscall table.

use picos_rt::sys::table::TABLE;

/// Prints the table as aligned text or JSON.
pub fn print(json: bool) {
    if json {
        #[derive(serde::Serialize)]
        struct Entry {
            nr: u32,
            name: &'static str,
            served: &'static str,
            full_context: bool,
            sandbox: &'static str,
            note: &'static str,
        }
        let entries: Vec<Entry> = TABLE
            .iter()
            .map(|d| Entry {
                nr: d.nr,
                name: d.name,
                served: d.support.level(),
                full_context: d.full_context,
                sandbox: d.sandbox.name(),
                note: d.note,
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&entries).expect("the syscall table serializes to JSON")
        );
        return;
    }
    // TRAP: the call needs the full signal context (the fast entry hands
    // it to the trap path); SANDBOX: what a sandbox may do with it.
    println!(
        "{:>4}  {:<24} {:<12} {:<5} {:<8} NOTE",
        "NR", "NAME", "SERVED", "TRAP", "SANDBOX"
    );
    for d in TABLE {
        println!(
            "{:>4}  {:<24} {:<12} {:<5} {:<8} {}",
            d.nr,
            d.name,
            d.support.level(),
            if d.full_context { "yes" } else { "" },
            d.sandbox.name(),
            d.note
        );
    }
    let count = |l: &str| TABLE.iter().filter(|d| d.support.level() == l).count();
    println!(
        "\n{} system calls: {} emulated, {} mediated, {} passed to the host, {} unsupported",
        TABLE.len(),
        count("emulated"),
        count("mediated"),
        count("host"),
        count("unsupported")
    );
}
