//! Memory shared by the picoprocess tree: the board that the library OS's
//! ptrace emulation keeps its state on (`kernel::ptrace`). It is a SysV
//! shared-memory segment: a fork child inherits it with the rest of the
//! memory, and the runtime after an execve attaches it again by its id
//! (passed in the launch configuration), with no descriptor held in the
//! program's table. It lies in the runtime's reservation, just below the
//! file views, so the program's own calls never map over it.
#![allow(unsafe_code)]

use super::runtime::{self, HEAP_LIMIT};
use crate::host;
use crate::host::errno::Errno;
use core::sync::atomic::AtomicU64;

/// The board's size.
pub const BOARD_SPAN: usize = 1 << 20;
/// The board in 64-bit words.
pub const BOARD_WORDS: usize = BOARD_SPAN / 8;

/// The board's words.
pub type Board = [AtomicU64; BOARD_WORDS];

/// Where the board lies: the top of the heap part of the reservation
/// (the heap's limit stops below it and the known-sites file:
/// [`SHARED_SPAN`]).
fn board_addr() -> usize {
    runtime::heap_base() + HEAP_LIMIT - BOARD_SPAN
}

/// Attaches the tree's segment `id` at the board's place. The caller
/// checks that it is a board (its magic word).
pub fn attach(id: i32) -> Result<&'static Board, Errno> {
    let base = runtime::reservation_base();
    if base == 0 || id < 0 {
        return Err(Errno::EINVAL);
    }
    let at = board_addr();
    // SAFETY: the range is the reservation's, kept for the board: nothing
    // else of the runtime's lies there, and the program's calls never map
    // the reservation.
    let got = unsafe { host::shmat_remap(id as usize, at) }?;
    if got != at {
        return Err(Errno::EINVAL);
    }
    // The segment is at least BOARD_SPAN long (made by `create`); a
    // smaller one of someone else's would fault: check its size.
    let ds = host::shmctl_stat(id as usize)?;
    // struct shmid64_ds: shm_segsz follows the 48-byte ipc64_perm.
    if (ds[6] as usize) < BOARD_SPAN {
        return Err(Errno::EINVAL);
    }
    // SAFETY: `at` is page-aligned, BOARD_SPAN bytes of shared memory are
    // mapped there read-write for the life of the process (never unmapped
    // by the runtime; the program's shmdt of it is refused), and
    // AtomicU64 has no invalid bit patterns.
    Ok(unsafe { &*(at as *const Board) })
}

/// The board's last words hold the hints of syscall sites that fork
/// children leave for their parents (`patch::before_fork`); before them,
/// the marks of the processes that exec'd in place
/// (`kernel::exec::in_place`); the ptrace state has the words before those.
pub const HINT_WORDS: usize = 512;
/// The words of the execve-in-place marks.
pub const EXEC_WORDS: usize = 4096;
/// The words of the table of known syscall sites, by file and offset
/// (`patch::known`), before the marks.
pub const KNOWN_WORDS: usize = 8192;
/// The board's words for the ptrace state.
pub const PTRACE_WORDS: usize = BOARD_WORDS - HINT_WORDS - EXEC_WORDS - KNOWN_WORDS;

/// The hints' words of board `b`.
pub fn hints(b: &'static Board) -> &'static [AtomicU64] {
    &b[PTRACE_WORDS + KNOWN_WORDS + EXEC_WORDS..]
}

/// The execve-in-place marks' words of board `b`.
pub fn exec_marks(b: &'static Board) -> &'static [AtomicU64] {
    &b[PTRACE_WORDS + KNOWN_WORDS..PTRACE_WORDS + KNOWN_WORDS + EXEC_WORDS]
}

/// The known sites' words of board `b`.
pub fn known_sites(b: &'static Board) -> &'static [AtomicU64] {
    &b[PTRACE_WORDS..PTRACE_WORDS + KNOWN_WORDS]
}

/// Makes a new segment for a board; returns its id. It is marked for
/// removal at once: it goes when the last process of the tree detaches it.
pub fn create() -> Result<i32, Errno> {
    let id = host::shmget_private(BOARD_SPAN)? as i32;
    Ok(id)
}

/// The span kept for the user's known-sites file, just below the board
/// (the heap's limit stops below both).
pub const SITES_SPAN: usize = runtime::page_up(picos_abi::KNOWN_SITES_LEN);
/// The board and the known-sites file: the top of the heap part of the
/// reservation.
pub const SHARED_SPAN: usize = BOARD_SPAN + SITES_SPAN;

/// The known-sites table, once its file is mapped ([`map_known_sites`]).
static SITES: spin::Once<&'static [AtomicU64]> = spin::Once::new();

/// The table of the user's known-sites file, if this process maps it.
pub fn known_sites_file() -> Option<&'static [AtomicU64]> {
    SITES.get().copied()
}

/// Maps the known-sites file at `path` (the launch configuration's
/// `sites`: the CLI made and checked it) shared, at its place below the
/// board, and returns its table: every process of every tree of the user
/// that maps it reads and records sites there (`patch::known`), and the
/// page cache keeps them for the next runs. Fork children inherit the
/// mapping; the runtime after an execve in place keeps it; one that the
/// kernel starts maps it again from the path. The descriptor is closed at
/// once. A file of another length or without the header's magic is not
/// mapped (a shorter file would fault).
pub fn map_known_sites(path: &[u8]) -> Result<&'static [AtomicU64], Errno> {
    use picos_abi::{KNOWN_SITES_HEADER, KNOWN_SITES_LEN, KNOWN_SITES_MAGIC, KNOWN_SITES_WORDS};
    if let Some(t) = SITES.get() {
        return Ok(t);
    }
    let base = runtime::reservation_base();
    if base == 0 || path.is_empty() {
        return Err(Errno::EINVAL);
    }
    let flags = host::O_RDWR | host::O_NOFOLLOW | host::O_CLOEXEC;
    let fd = host::open_path(path, flags, 0)? as i32;
    let mapped = (|| {
        let st = host::fstat(fd)?;
        if st.st_mode & 0o170000 != 0o100000 || st.st_size as usize != KNOWN_SITES_LEN {
            return Err(Errno::EINVAL);
        }
        let mut magic = [0u8; 8];
        host::pread_exact(fd, &mut magic, 0)?;
        if u64::from_ne_bytes(magic) != KNOWN_SITES_MAGIC {
            return Err(Errno::EINVAL);
        }
        let at = board_addr() - SITES_SPAN;
        // SAFETY: the range is the reservation's, kept for this file:
        // nothing else of the runtime's lies there, and the program's calls
        // never map the reservation.
        let got = unsafe {
            host::mmap(
                at,
                KNOWN_SITES_LEN,
                runtime::PROT_READ | runtime::PROT_WRITE,
                runtime::MAP_SHARED | runtime::MAP_FIXED,
                fd,
                0,
            )
        }?;
        if got != at {
            return Err(Errno::EINVAL);
        }
        Ok(at)
    })();
    let _ = host::close(fd);
    let at = mapped?;
    // SAFETY: the table's words lie after the header, inside the
    // KNOWN_SITES_LEN bytes just mapped shared, read-write, for the life
    // of the process (never unmapped by the runtime; the program cannot
    // unmap the reservation); AtomicU64 has no invalid bit patterns, and
    // the page-aligned header keeps the words aligned. The file's length
    // was checked: only its truncation by someone else meanwhile would
    // make a word fault, as a program's own mapped file would.
    let words = unsafe {
        core::slice::from_raw_parts(
            (at + KNOWN_SITES_HEADER) as *const AtomicU64,
            KNOWN_SITES_WORDS,
        )
    };
    Ok(*SITES.call_once(|| words))
}

/// Marks segment `id` for removal once nothing has it attached.
pub fn release_on_last_detach(id: i32) {
    let _ = host::shmctl_rmid(id as usize);
}

/// Is `[addr, addr + len)` on the board (the program may not detach or
/// map over it)?
pub fn on_board(addr: usize, len: usize) -> bool {
    let at = board_addr();
    runtime::reservation_base() != 0 && addr < at + BOARD_SPAN && addr.saturating_add(len) > at
}

/// Waits (at most `ns` nanoseconds) while the low half of board word `w`
/// is `val` (a futex shared between processes).
pub fn futex_wait(w: &AtomicU64, val: u32, ns: u64) -> Result<usize, Errno> {
    // SAFETY: `w` is a live, aligned word; its low half (little-endian)
    // is the futex word.
    unsafe { host::futex_wait_for(w as *const AtomicU64 as usize, val as i32, ns) }
}

/// Wakes every waiter on board word `w`.
pub fn futex_wake(w: &AtomicU64) {
    // SAFETY: `w` is a live, aligned word.
    let _ = unsafe { host::futex_wake(w as *const AtomicU64 as usize, i32::MAX) };
}
