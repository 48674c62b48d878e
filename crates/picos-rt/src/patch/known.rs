//! Known sites: the syscall sites that processes of the picoprocess tree
//! (and, through the user's known-sites file, of earlier runs) trapped at
//! more than once, by program, file and offset, in a table on the tree's
//! board or in that file, so that a new run of the program patches them at
//! its first trap on their page instead of trapping at each of them up to
//! [`PATCH_AT_TRAP`] times.
//!
//! A site is patched at its sixth trap, so a short program (a compiler's
//! driver, an assembler, a shell's command: each a new runtime, through
//! posix_spawn or vfork) patches almost nothing and traps at every call of
//! its C library and dynamic loader: `make -j2` of a small C project made
//! 18,071 of its 62,339 calls on the trap path, 60-70% of the calls of
//! such programs (docs/BENCHMARKS.md, 30th session). Those libraries are
//! the same files in every process, so what one process learnt holds for
//! the next: a site's second trap in a process records it here (the
//! file, the offset of the address after its `syscall`, its number, and a
//! checksum of the code before it); a process's first trap at a recorded
//! site patches it, and every other site the same program recorded on its
//! page, with one write through /proc/self/mem (the page is copied once).
//!
//! The file is known by device and inode (`host::procmap_vma`). A file
//! changed in place, or an inode number reused, could put other code at a
//! recorded offset: a site is patched only if its bytes decode as a site
//! of the recorded number and shape (as a fork child's hint is:
//! `find_hinted_site`) and the 16 bytes before its `syscall` have the
//! recorded checksum. Entries are never removed; when the table's probe
//! window is full, nothing more is recorded. Only a single-threaded
//! process patches known sites (several sites in one write need no
//! barriers then).
//!
//! Table: pairs of words, open addressing by (file, page): word 0 the
//! file's key (never 0), word 1 `offset << 32 | checksum << 16 | dynamic
//! << 15 | nr` (0 while being written: readers skip it).
use super::{
    alloc_trampoline, find_hinted_site, jump_bytes, may_patch, trampoline_bytes, write_code,
    CodeOp, State, PAGE_SIZE,
};
use crate::host;
use core::sync::atomic::{AtomicU64, Ordering};

/// How many slots a lookup or an insertion probes.
const PROBES: usize = 32;
/// How many file mappings a process remembers.
const MAX_FILES: usize = 64;
/// Bytes before a site's `syscall` covered by the checksum.
const CONTEXT: usize = 16;

/// The table (set once a board exists: `use_table`).
static TABLE: spin::Once<&'static [AtomicU64]> = spin::Once::new();

/// Uses `words` (the board's known-sites words) from now on.
pub fn use_table(words: Option<&'static [AtomicU64]>) {
    if let Some(w) = words {
        TABLE.call_once(|| w);
    }
}

/// A mapping of this process as the kernel described it: of a file's
/// bytes (`key` not 0; `base` is where its offset 0 would be), or not
/// (key 0: no site there is recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FileMap {
    pub start: usize,
    pub end: usize,
    pub key: u64,
    pub base: usize,
}

/// A file's key: its device and inode, mixed, never 0.
fn key(dev: u64, inode: u64) -> u64 {
    let mut h = dev ^ inode.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15;
    h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h | 1
}

/// A program's key: its executable's, as a file's ([`key`]).
pub(super) fn program_key(dev: u64, inode: u64) -> u64 {
    key(dev, inode)
}

/// The table's key of file `file`'s sites as program `program` calls them
/// (`program` 0: not known). Each program has entries of its own: a page
/// of the C library is written with the sites this program trapped at
/// there, not every program's (the shell row of `tools/apps.py`, whose
/// short programs each call a few sites of each page, patched 2.5 times
/// as many sites with a table of every program's as with its own tree's,
/// and ran 3% slower).
fn entry_key(file: u64, program: u64) -> u64 {
    if program == 0 {
        return file;
    }
    let mut h = file ^ program.rotate_left(17).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (h ^ (h >> 29)) | 1
}

/// The mapping that holds `addr`: the one remembered, or the kernel's
/// answer (one `PROCMAP_QUERY`, where the program never sees the
/// descriptor), remembered.
fn file_map(st: &mut State, addr: usize) -> Option<FileMap> {
    if let Some(f) = st.files.iter().find(|f| f.start <= addr && addr < f.end) {
        return Some(*f);
    }
    let vma = host::fds::with_transient_fds(|| {
        let flags = host::O_RDONLY | host::O_CLOEXEC;
        let fd = host::openat(host::AT_FDCWD, c"/proc/thread-self/maps", flags, 0)? as i32;
        let r = host::procmap_vma(fd, addr, false, None);
        let _ = host::close(fd);
        r
    })
    .ok()?;
    let file = vma.inode != 0 && vma.flags & host::VMA_EXECUTABLE != 0;
    let f = FileMap {
        start: vma.start,
        end: vma.end,
        key: if file { key(vma.dev, vma.inode) } else { 0 },
        base: vma.start.wrapping_sub(vma.offset as usize),
    };
    if st.files.len() >= MAX_FILES {
        st.files.remove(0);
    }
    st.files.push(f);
    Some(f)
}

/// Notes that `[start, end)` maps code of the file on device `dev` (as
/// `host::Vma::dev`) with inode `inode`, its offset 0 at `base` (the
/// loader's mappings: no query needed at their first trap).
pub(super) fn note(st: &mut State, start: usize, end: usize, dev: u64, inode: u64, base: usize) {
    forget(st, start, end);
    if st.files.len() >= MAX_FILES {
        st.files.remove(0);
    }
    st.files.push(FileMap {
        start,
        end,
        key: key(dev, inode),
        base,
    });
}

/// Forgets the mappings in `[addr, end)` (unmapped or replaced).
pub(super) fn forget(st: &mut State, addr: usize, end: usize) {
    st.files.retain(|f| f.end <= addr || end <= f.start);
}

/// A checksum of the `CONTEXT` bytes before `after - 2` (the code that
/// leads to the `syscall`), or None if they cannot be read.
fn checksum(after: usize) -> Option<u16> {
    let mut b = [0u8; CONTEXT];
    crate::mm::user::copy_in(&mut b, after.checked_sub(2 + CONTEXT)?).ok()?;
    let h = b.iter().fold(0x811c_9dc5u32, |h, &c| {
        (h ^ u32::from(c)).wrapping_mul(0x0100_0193)
    });
    Some((h ^ (h >> 16)) as u16)
}

/// A site's word 1.
fn entry(offset: usize, sum: u16, dynamic: bool, nr: u64) -> Option<u64> {
    let off = u32::try_from(offset).ok()?;
    (nr < 1 << 15)
        .then(|| u64::from(off) << 32 | u64::from(sum) << 16 | u64::from(dynamic) << 15 | nr)
}

/// The first slot of the probe sequence of file `key`'s page `page`.
fn slot(key: u64, page: usize, slots: usize) -> usize {
    let h = (key ^ (page as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_mul(0xff51_afd7_ed55_8ccd);
    ((h >> 32) as usize) % slots
}

/// Records the site that returns to `after` (number `nr`; `dynamic`: its
/// number is moved from a register) in the table, unless it is there (its
/// mapping asked of the kernel only when there is a table).
pub(super) fn record(st: &mut State, after: usize, nr: u64, dynamic: bool) {
    let Some(words) = TABLE.get() else {
        return;
    };
    let Some(f) = file_map(st, after) else {
        return;
    };
    if f.key == 0 || after < f.start || after > f.end {
        return;
    }
    let offset = after - f.base;
    let Some(w1) = checksum(after).and_then(|s| entry(offset, s, dynamic, nr)) else {
        return;
    };
    record_in(words, entry_key(f.key, st.program), offset, w1);
}

fn record_in(words: &[AtomicU64], key: u64, offset: usize, w1: u64) {
    let slots = words.len() / 2;
    if slots == 0 {
        return;
    }
    let first = slot(key, offset / PAGE_SIZE, slots);
    for i in 0..PROBES {
        let s = (first + i) % slots;
        let (k, v) = (&words[2 * s], &words[2 * s + 1]);
        match k.load(Ordering::Acquire) {
            0 => match k.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    v.store(w1, Ordering::Release);
                    return;
                }
                // Taken meanwhile: by this very site, or look further.
                Err(other) if other == key && v.load(Ordering::Acquire) == w1 => return,
                Err(_) => {}
            },
            k if k == key && v.load(Ordering::Acquire) == w1 => return,
            _ => {}
        }
    }
}

/// The recorded sites (the address after each `syscall`, its number,
/// whether it is dynamic, its checksum) of mapping `f` on the page of file
/// offset `offset`.
fn on_page(
    words: &[AtomicU64],
    f: &FileMap,
    offset: usize,
) -> alloc::vec::Vec<(usize, u64, bool, u16)> {
    let mut out = alloc::vec::Vec::new();
    let slots = words.len() / 2;
    if slots == 0 {
        return out;
    }
    let page = offset / PAGE_SIZE;
    let first = slot(f.key, page, slots);
    for i in 0..PROBES {
        let s = (first + i) % slots;
        let k = words[2 * s].load(Ordering::Acquire);
        if k == 0 {
            break;
        }
        let v = words[2 * s + 1].load(Ordering::Acquire);
        if k != f.key || v == 0 || (v >> 32) as usize / PAGE_SIZE != page {
            continue;
        }
        let after = f.base.wrapping_add((v >> 32) as usize);
        if after >= f.start + 2 && after <= f.end {
            out.push((after, v & 0x7fff, v & 1 << 15 != 0, (v >> 16) as u16));
        }
    }
    out
}

/// At a single-threaded process's first trap at the site that returns to
/// `after` (number `nr`, `dynamic` as for [`record`]): if the site is one
/// this program recorded, patches it and every other site it recorded on
/// its page at once. Returns whether it was patched, and where the trapped call must
/// return to (as `maybe_patch`).
pub(super) fn patch_page(
    st: &mut State,
    after: usize,
    nr: u64,
    dynamic: bool,
) -> Option<Option<usize>> {
    let words = TABLE.get()?;
    let f = file_map(st, after)?;
    if f.key == 0 {
        return None;
    }
    let f = FileMap {
        key: entry_key(f.key, st.program),
        ..f
    };
    let found = on_page(words, &f, after - f.base);
    if !found
        .iter()
        .any(|&(a, n, d, _)| a == after && n == nr && d == dynamic)
    {
        return None;
    }
    // Each site as a trap would show it, its trampoline and jump.
    struct Plan {
        start: usize,
        resume: usize,
        after: usize,
        t: usize,
        tcode: alloc::vec::Vec<u8>,
        jmp: [u8; 5],
        cont: usize,
        map: super::TrampMap,
        orig: [u8; 5],
        nr: u64,
        punned: bool,
        entry: &'static str,
    }
    let mut plans: alloc::vec::Vec<Plan> = alloc::vec::Vec::new();
    for (a, n, d, sum) in found {
        if checksum(a) != Some(sum) {
            continue;
        }
        let Some(site) = find_hinted_site(a, n, d) else {
            continue;
        };
        let end = site.resume;
        if st.sites.contains(&site.start)
            || plans.iter().any(|p| p.start < end && site.start < p.resume)
            || st.no_patch.iter().any(|&(x, e)| site.start < e && x < end)
            || !may_patch(&site, a, false)
        {
            continue;
        }
        let Some(t) = alloc_trampoline(st, site.start, site.pun) else {
            continue;
        };
        let Some((tcode, cont, map)) = trampoline_bytes(t, n as u32, &site) else {
            continue;
        };
        let Some(jmp) = jump_bytes(&site, t) else {
            continue;
        };
        let mut orig = [0u8; 5];
        if crate::mm::user::copy_in(&mut orig, site.start).is_err() {
            continue;
        }
        plans.push(Plan {
            start: site.start,
            resume: end,
            after: a,
            t,
            tcode,
            jmp,
            cont,
            map,
            orig,
            nr: n,
            punned: site.pun.is_some(),
            entry: super::entry_name(&site, n as u32),
        });
    }
    let mine = plans.iter().position(|p| p.after == after)?;
    let mut ops = alloc::vec::Vec::with_capacity(plans.len() * 2);
    for p in &plans {
        ops.push(CodeOp::Write(p.t, &p.tcode));
        ops.push(CodeOp::Write(p.start, &p.jmp));
    }
    if write_code(&ops).is_err() {
        crate::log!(Debug, "could not patch the known sites at {:#x}", after);
        return None;
    }
    for p in &plans {
        // As `patch_seen` logs a site (tests read the entries from these).
        crate::log!(
            Debug,
            "patch site {:#x} nr {} -> trampoline {:#x} (known site; cont {:#x}, {}{})",
            p.start,
            p.nr,
            p.t,
            p.cont,
            if p.punned { "punned jump, " } else { "" },
            p.entry
        );
        st.sites.insert(p.start);
        st.seen.remove(&p.start);
        st.hinted.remove(&p.start);
        st.mapped.insert(p.t, p.map);
        st.orig.insert(p.start, p.orig);
    }
    crate::log!(
        Debug,
        "patched {} known site(s) on the page of {:#x}",
        plans.len(),
        after
    );
    let cont = plans[mine].cont;
    Some((cont != after).then_some(cont))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_by_file_and_page() {
        let words: alloc::vec::Vec<AtomicU64> = (0..64).map(|_| AtomicU64::new(0)).collect();
        let f = FileMap {
            start: 0x7000_0000,
            end: 0x7010_0000,
            key: key(0x0803, 1234),
            base: 0x6fff_0000,
        };
        let w = |off: usize, nr: u64| entry(off, 0xbeef, false, nr).unwrap();
        record_in(&words, f.key, 0x1_0010, w(0x1_0010, 9));
        record_in(&words, f.key, 0x1_0ff0, w(0x1_0ff0, 257));
        record_in(&words, f.key, 0x1_1004, w(0x1_1004, 3));
        // Again: not twice.
        record_in(&words, f.key, 0x1_0010, w(0x1_0010, 9));
        // Another file's site at the same offset.
        record_in(&words, key(0x0803, 99), 0x1_0010, w(0x1_0010, 9));
        let used = (0..32)
            .filter(|&s| words[2 * s].load(Ordering::Relaxed) != 0)
            .count();
        assert_eq!(used, 4);
        let mut got: alloc::vec::Vec<(usize, u64)> = on_page(&words, &f, 0x1_0500)
            .iter()
            .map(|e| (e.0 - f.base, e.1))
            .collect();
        got.sort();
        assert_eq!(got, [(0x1_0010, 9), (0x1_0ff0, 257)]);
        assert_eq!(on_page(&words, &f, 0x1_1000).len(), 1);
        assert!(on_page(&words, &f, 0x5_0000).is_empty());
        // Offsets beyond 4 GiB and numbers beyond 15 bits are not recorded.
        assert_eq!(entry(1 << 32, 0, false, 1), None);
        assert_eq!(entry(0, 0, false, 1 << 15), None);
        assert_ne!(key(0, 0), 0);
    }

    #[test]
    fn each_program_has_entries_of_its_own() {
        let file = key(0x0803, 1234);
        let (sh, tr) = (program_key(0x0803, 7), program_key(0x0803, 8));
        assert_eq!(entry_key(file, 0), file);
        assert_ne!(entry_key(file, sh), entry_key(file, tr));
        assert_ne!(entry_key(file, sh), file);
        assert_eq!(entry_key(file, sh), entry_key(file, sh));
        assert_ne!(entry_key(file, sh), 0);
        // Recorded for one program, not found for another.
        let words: alloc::vec::Vec<AtomicU64> = (0..64).map(|_| AtomicU64::new(0)).collect();
        let map = |program| FileMap {
            start: 0x7000_0000,
            end: 0x7010_0000,
            key: entry_key(file, program),
            base: 0x6fff_0000,
        };
        let e = entry(0x1_0010, 1, false, 9).unwrap();
        record_in(&words, map(sh).key, 0x1_0010, e);
        assert_eq!(on_page(&words, &map(sh), 0x1_0010).len(), 1);
        assert!(on_page(&words, &map(tr), 0x1_0010).is_empty());
    }

    #[test]
    fn a_full_window_records_nothing_more() {
        let words: alloc::vec::Vec<AtomicU64> = (0..16).map(|_| AtomicU64::new(0)).collect();
        for i in 0..20u64 {
            record_in(&words, key(1, i), 0x40, entry(0x40, 1, true, 1).unwrap());
        }
        assert!((0..8).all(|s| words[2 * s].load(Ordering::Relaxed) != 0));
    }
}
