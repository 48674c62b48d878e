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
            note: &'static str,
        }
        let entries: Vec<Entry> = TABLE
            .iter()
            .map(|d| Entry {
                nr: d.nr,
                name: d.name,
                served: d.serve.level(),
                note: d.note,
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&entries).expect("the syscall table serializes to JSON")
        );
        return;
    }
    println!("{:>4}  {:<24} {:<12} NOTE", "NR", "NAME", "SERVED");
    for d in TABLE {
        println!(
            "{:>4}  {:<24} {:<12} {}",
            d.nr,
            d.name,
            d.serve.level(),
            d.note
        );
    }
    let count = |l: &str| TABLE.iter().filter(|d| d.serve.level() == l).count();
    println!(
        "\n{} system calls: {} emulated, {} mediated, {} passed to the host, {} unsupported",
        TABLE.len(),
        count("emulated"),
        count("mediated"),
        count("host"),
        count("unsupported")
    );
}
