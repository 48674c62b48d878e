//! The runtime's layers (docs/ARCHITECTURE.md, "Layers"): every module may
//! use only its own layer and the layers below it. This test reads the
//! sources and fails on any `crate::` path (in code, not comments) that
//! points up, on a module missing from the list, and on `unsafe` allowed
//! outside the layers that may use it.

use std::fs;
use std::path::{Path, PathBuf};

/// Module path prefixes, lowest layer first. The longest prefix decides.
const LAYERS: &[(&str, u32)] = &[
    ("host", 0),
    ("arch", 1),
    ("diag::log", 2),
    ("sync", 3),
    ("mm", 4),
    ("diag::stats", 5),
    ("diag::perfmap", 5),
    ("patch", 6),
    ("kernel", 7),
    ("sys", 8),
    ("diag::trace", 9),
    ("diag", 9),
    ("entry", 10),
    ("boot", 11),
];

/// Layers where `#![allow(unsafe_code)]` / `#[allow(unsafe_code)]` may appear.
const UNSAFE_LAYERS: &[&str] = &["host", "arch", "mm"];

fn rank(path: &str) -> Option<(u32, &'static str)> {
    LAYERS
        .iter()
        .filter(|(p, _)| path == *p || path.starts_with(&format!("{p}::")))
        .max_by_key(|(p, _)| p.len())
        .map(|&(p, r)| (r, p))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/kernel/exec/mod.rs` -> `kernel::exec`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without comments and string literals' contents.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn ident_path(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
        .collect::<String>()
        .trim_end_matches(':')
        .to_string()
}

/// Every module path a file names through `crate::` (groups expanded one
/// level: `crate::{a, b::c}` names `a` and `b::c`), and through `super::`
/// resolved against `module` (the file's module).
fn references_from(module: &str, code: &str) -> Vec<String> {
    let mut refs = references(code);
    let parts: Vec<&str> = module.split("::").collect();
    for (at, _) in code.match_indices("super::") {
        if at > 0 && code.as_bytes()[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        // `super::super::x` climbs twice.
        let mut rest = &code[at..];
        let mut up = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            up += 1;
            rest = r;
        }
        if up > parts.len() {
            continue;
        }
        let base = parts[..parts.len() - up].join("::");
        let p = ident_path(rest);
        if p.is_empty() || p == "*" {
            continue;
        }
        refs.push(if base.is_empty() {
            p
        } else {
            format!("{base}::{p}")
        });
    }
    refs
}

fn references(code: &str) -> Vec<String> {
    let mut refs = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && code.as_bytes()[at - 1] == b'$' {
            continue;
        }
        let rest = &code[at + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let p = ident_path(item.trim());
                if !p.is_empty() {
                    refs.push(p);
                }
            }
        } else {
            let p = ident_path(rest);
            // `crate::log!` is the macro of `diag::log`.
            refs.push(if p == "log" { "diag::log".into() } else { p });
        }
    }
    refs
}

#[test]
fn every_dependency_points_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut errors = Vec::new();
    for f in &files {
        let module = module_of(&src, f);
        if module == "lib" || module == "main" {
            continue;
        }
        let Some((own, own_layer)) = rank(&module) else {
            errors.push(format!("{module}: not in any layer (add it to LAYERS)"));
            continue;
        };
        let code = code_only(&fs::read_to_string(f).unwrap());
        let mut refs = references_from(&module, &code);
        // One report per module named (not per item).
        for r in refs.iter_mut() {
            let parts: Vec<&str> = r.split("::").collect();
            let keep = rank(r).map_or(1, |(_, l)| l.split("::").count() + 1);
            *r = parts[..parts.len().min(keep)].join("::");
        }
        refs.sort();
        refs.dedup();
        for r in refs {
            match rank(&r) {
                Some((to, layer)) if to > own => errors.push(format!(
                    "{module} (layer {own_layer}) uses crate::{r} (layer {layer}, above it)"
                )),
                Some(_) => {}
                None => errors.push(format!("{module}: crate::{r} is in no layer")),
            }
        }
        if code.contains("allow(unsafe_code)") && !UNSAFE_LAYERS.contains(&own_layer) {
            errors.push(format!(
                "{module}: allows unsafe_code outside the layers {UNSAFE_LAYERS:?}"
            ));
        }
    }
    errors.dedup();
    assert!(
        errors.is_empty(),
        "{} layering errors:\n  {}",
        errors.len(),
        errors.join("\n  ")
    );
}

#[test]
fn the_check_sees_an_upward_edge() {
    let code =
        code_only("use crate::{host, entry::trap}; // crate::boot\nlet s = \"crate::boot\";");
    assert_eq!(references(&code), vec!["host", "entry::trap"]);
    assert_eq!(rank("diag::trace::Pre").unwrap().1, "diag::trace");
    assert_eq!(rank("diag::log").unwrap().0, 2);
    assert!(rank("kernel::thread").unwrap().0 > rank("patch").unwrap().0);
    // `super::` from kernel/thread.rs (module kernel::thread) is `kernel`;
    // twice, the crate root.
    let up = references_from(
        "kernel::thread",
        "use super::super::entry::trap; super::signal::x",
    );
    assert!(up.contains(&"entry::trap".to_string()), "{up:?}");
    assert!(up.contains(&"kernel::signal::x".to_string()), "{up:?}");
}

/// Every module that makes a runtime lock has a fork hook in
/// `kernel::process::FORK_HOOKS` (which holds it across fork): a lock
/// another thread holds at the fork would stay held forever in the child.
#[test]
fn every_lock_is_held_across_fork() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let registry = fs::read_to_string(src.join("kernel/process.rs")).unwrap();
    let start = registry.find("pub static FORK_HOOKS").expect("FORK_HOOKS");
    let list = &registry[start..start + registry[start..].find("];").unwrap()];
    let mut errors = Vec::new();
    for f in &files {
        let module = module_of(&src, f);
        if module == "sync" {
            continue; // the lock itself (and its tests)
        }
        let code = code_only(&fs::read_to_string(f).unwrap());
        if !code.contains("Lock::new(") {
            continue;
        }
        let named = if module == "kernel::process" {
            list.contains("    FORK_HOOK,")
        } else {
            list.contains(&format!("crate::{module}::FORK_HOOK"))
        };
        if !code.contains("pub const FORK_HOOK") || !named {
            errors.push(format!(
                "{module} makes a lock but has no FORK_HOOK in kernel::process::FORK_HOOKS"
            ));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
