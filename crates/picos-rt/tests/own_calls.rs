//! `host::own::OWN_CALLS` is exactly the set of host calls the runtime's
//! code names (`nr::NAME` outside `host/nr.rs`, `sys/table.rs` and
//! `host/own.rs`) or makes from assembly (`mov $NR, %eax`): a call added
//! to the runtime without being added to the list fails here, and so does
//! a call left in the list that the runtime no longer makes.

use picos_rt::host::own::OWN_CALLS;
use picos_rt::sys::table::TABLE;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

fn sources(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, fs::read_to_string(&p).unwrap()));
        }
    }
}

/// The identifier after each `nr::` in `s`.
fn named(s: &str, out: &mut BTreeSet<String>) {
    for (i, _) in s.match_indices("nr::") {
        // `nr::` itself, not the end of a longer name (`xnr::`).
        if s[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let name: String = s[i + 4..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty() && name != "MAX_NR" {
            out.insert(name);
        }
    }
}

/// The numbers of `mov $N, %eax` in `s` (assembly that makes a call).
fn from_asm(s: &str, out: &mut BTreeSet<u32>) {
    for (i, _) in s.match_indices("mov $") {
        let rest = &s[i + 5..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() && rest[digits.len()..].starts_with(", %eax") {
            out.insert(digits.parse().unwrap());
        }
    }
}

#[test]
fn own_calls_are_the_calls_the_runtime_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    let mut names = BTreeSet::new();
    let mut numbers = BTreeSet::new();
    for (rel, text) in &files {
        if ["host/nr.rs", "sys/table.rs", "host/own.rs"].contains(&rel.as_str()) {
            continue;
        }
        named(text, &mut names);
        from_asm(text, &mut numbers);
    }
    for name in &names {
        let d = TABLE
            .iter()
            .find(|d| d.name.eq_ignore_ascii_case(name))
            .unwrap_or_else(|| panic!("nr::{name} is not in the syscall table"));
        numbers.insert(d.nr);
    }
    let listed: BTreeSet<u32> = OWN_CALLS.iter().map(|&n| n as u32).collect();
    let name = |n: &u32| TABLE.iter().find(|d| d.nr == *n).map_or("?", |d| d.name);
    let missing: Vec<_> = numbers.difference(&listed).map(name).collect();
    let stale: Vec<_> = listed.difference(&numbers).map(name).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "host::own::OWN_CALLS: add {missing:?}, remove {stale:?}"
    );
    assert!(
        OWN_CALLS.windows(2).all(|w| w[0] < w[1]),
        "OWN_CALLS is sorted"
    );
    // The scan sees what it should: the runtime's own execve, its
    // rt_sigreturn from assembly.
    assert!(listed.contains(&59) && listed.contains(&15));
}
