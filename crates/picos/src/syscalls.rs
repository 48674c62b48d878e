//! `picos syscalls`: prints the runtime's declarative syscall table.

use picos_rt::sys::table::TABLE;

/// Prints the table as aligned text or JSON.
pub fn print(json: bool) {
    if json {
        println!("[");
        for (i, d) in TABLE.iter().enumerate() {
            let comma = if i + 1 < TABLE.len() { "," } else { "" };
            println!(
                "  {{\"nr\": {}, \"name\": \"{}\", \"served\": \"{}\", \"note\": \"{}\"}}{}",
                d.nr,
                d.name,
                d.serve.level(),
                d.note.replace('\\', "\\\\").replace('"', "\\\""),
                comma
            );
        }
        println!("]");
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
