//! Builds the runtime (`picos-rt`, a `no_std` static PIE for
//! x86_64-unknown-none) and embeds it in the `picos` binary, so installing
//! picos is one file.
//!
//! The runtime is built by a nested `cargo build` into its own target
//! directory (so it never waits on the outer build's lock), always with the
//! release profile: it runs inside every picoprocess and must be fast even in
//! a debug build of the CLI.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const TARGET: &str = "x86_64-unknown-none";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.join("../..").canonicalize().unwrap();
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let target_dir = workspace.join("target").join("picos-rt");
    for p in [
        "crates/picos-rt/src",
        "crates/picos-rt/Cargo.toml",
        "crates/picos-rt/build.rs",
        "crates/picos-abi/src",
        "crates/picos-abi/Cargo.toml",
        "crates/picos-macros/src",
        "crates/picos-macros/Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(p).display());
    }
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&workspace)
        .args([
            "build",
            "--locked",
            "-p",
            "picos-rt",
            "--bin",
            "picos-rt",
            "--release",
            "--target",
            TARGET,
            "--target-dir",
        ])
        .arg(&target_dir);
    // Flags meant for the host build must not leak into the runtime's.
    // A lean embedded image: it is copied into a memfd on every `picos run`.
    // Crash reports name offsets in the image; the panic messages carry
    // their own file and line. The symbols are kept in the build, read
    // here into a table of their own (`picos run --perf-map`), and left
    // out of the image embedded (`strip`).
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "0");
    cmd.env("CARGO_PROFILE_RELEASE_STRIP", "none");
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .expect("failed to run cargo to build the picos runtime");
    if !status.success() {
        panic!(
            "building the picos runtime (picos-rt for {TARGET}) failed.\n\
             If the error above says the target is missing, install it with:\n    \
             rustup target add {TARGET}"
        );
    }
    let built = target_dir.join(TARGET).join("release").join("picos-rt");
    let image =
        std::fs::read(&built).unwrap_or_else(|e| panic!("cannot read {}: {e}", built.display()));
    let syms = symbols(&image);
    std::fs::write(out_dir.join("picos-rt.syms"), syms)
        .expect("cannot write the runtime's symbols");
    let stripped = strip(&image);
    // The name of the image in the runtime cache (`runtime_image.rs`): a
    // digest of its bytes, so that another build never takes this one's
    // file for its own.
    let id = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        stripped.hash(&mut h);
        format!("{:016x}{:x}", h.finish(), stripped.len())
    };
    std::fs::write(out_dir.join("picos-rt.id"), id).expect("cannot write the runtime's id");
    std::fs::write(out_dir.join("picos-rt"), stripped).expect("cannot write the runtime image");
}

/// The runtime's functions as `picos run --perf-map` gives them to the
/// runtime: one line each, `OFFSET SIZE NAME` (hexadecimal offset from the
/// image's first byte in memory, size, demangled name without its hash),
/// by offset.
fn symbols(image: &[u8]) -> String {
    use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind};
    let file = object::File::parse(image).expect("the runtime is not an ELF file");
    let base = file
        .segments()
        .map(|s| s.address())
        .min()
        .expect("the runtime has no segments")
        & !0xfff;
    let in_text = |s: &object::Symbol| {
        s.section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .is_some_and(|sec| sec.kind() == SectionKind::Text)
    };
    // Functions (with their sizes) and the labels of the assembly entry
    // points (no size: they run to the next symbol).
    let mut syms: Vec<(u64, u64, String)> = file
        .symbols()
        .filter(|s| matches!(s.kind(), SymbolKind::Text | SymbolKind::Label) && in_text(s))
        .filter(|s| s.address() >= base)
        .filter_map(|s| {
            let name = s
                .name()
                .ok()
                .filter(|n| !n.is_empty() && !n.starts_with(".L"))?;
            Some((
                s.address() - base,
                s.size(),
                format!("{:#}", rustc_demangle::demangle(name)),
            ))
        })
        .collect();
    assert!(
        syms.iter().any(|s| s.1 > 0),
        "the runtime was built without its symbol table (CARGO_PROFILE_RELEASE_STRIP)"
    );
    // One entry per address, a sized one first.
    syms.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    syms.dedup_by(|a, b| a.0 == b.0);
    let next: Vec<u64> = syms.iter().skip(1).map(|s| s.0).collect();
    for (s, n) in syms.iter_mut().zip(next) {
        if s.1 == 0 {
            s.1 = (n - s.0).min(4096);
        }
    }
    syms.retain(|s| s.1 > 0);
    syms.iter()
        .map(|(a, n, name)| format!("{a:x} {n:x} {name}\n"))
        .collect()
}

/// The image without what only tools read: the bytes after the last
/// segment's (the symbol and string tables, the section headers) are cut
/// and the header names no section headers. The kernel loads an ELF
/// executable from its program headers alone.
fn strip(image: &[u8]) -> Vec<u8> {
    use object::read::elf::{ElfFile64, FileHeader, ProgramHeader, SectionHeader};
    use object::Endianness;
    let elf = ElfFile64::<Endianness>::parse(image).expect("the runtime is not an ELF64 file");
    let (hdr, e) = (elf.elf_header(), elf.endian());
    let end =
        hdr.program_headers(e, image)
            .expect("the runtime's program headers")
            .iter()
            .map(|p| p.p_offset(e) + p.p_filesz(e))
            .chain([u64::from(hdr.e_phoff(e))
                + u64::from(hdr.e_phnum(e)) * u64::from(hdr.e_phentsize(e))])
            .max()
            .unwrap() as usize;
    // Whatever is loaded lies below the cut (sections the program headers
    // do not cover are for tools only).
    for s in hdr
        .section_headers(e, image)
        .expect("the runtime's section headers")
    {
        let flags = s.sh_flags(e);
        let loaded = flags & u64::from(object::elf::SHF_ALLOC) != 0;
        let bytes = s.sh_type(e) != object::elf::SHT_NOBITS;
        assert!(
            !loaded || !bytes || s.sh_offset(e) + s.sh_size(e) <= end as u64,
            "a loaded section of the runtime lies past its last segment"
        );
    }
    let mut out = image[..end].to_vec();
    // e_shoff (8 bytes at 40), e_shnum (2 at 60), e_shstrndx (2 at 62).
    out[40..48].fill(0);
    out[60..64].fill(0);
    out
}
