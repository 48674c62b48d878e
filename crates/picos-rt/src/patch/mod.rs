//! The fast path: patching syscall sites so that they enter the runtime
//! directly, without a signal.
//!
//! When a system call traps (Syscall User Dispatch) from a site of one of
//! the common shapes of glibc, musl and Go wrappers, the site's first five
//! bytes become a `jmp rel32` to a per-site trampoline within ±2 GiB:
//!
//! * `mov $NR, %eax; syscall` (the 7-byte form);
//! * `mov $NR, %eax; <register moves>; syscall` (glibc's `*_nocancel`); the
//!   moves (register to register or immediate, never memory or RSP) are
//!   copied into the trampoline;
//! * `xor %eax, %eax; syscall; cmp $-4096, %rax` (glibc's `read`): the jump
//!   covers part of the `cmp`, which the trampoline executes instead.
//!
//! ```text
//! T+0:      lea -0x80(%rsp), %rsp     skip the red zone
//! T+5:      <copied moves>
//!           mov $NR, %eax
//!           call *entry(%rip)         picos_fast_entry (saves flags and registers,
//!                                     switches to the runtime stack); R = next
//! R+0:      lea 0x80(%rsp), %rsp
//! R+8:      jmp *%rcx                 RCX = continuation (as after `syscall`) or R+10
//! R+10:     syscall                   slow path: trapped as before
//! R+12:     <cmp, if it was covered>
//!           jmp back
//! R+24:     .quad continuation        where the fast path continues
//! ```
//!
//! Only sites actually seen trapping are patched (at their
//! [`PATCH_AT_TRAP`]th trap), so the bytes are known to
//! be a `syscall` reached with RAX = NR right after that `mov`. The `syscall`
//! bytes stay in place after the `jmp`, so jumps to them (and SA_RESTART
//! rewinds) still work. Calls that need a full signal context (sigreturn,
//! clone, exec, ...) take the trampoline's slow path; a fast call after
//! which a signal is pending, or that changed the program's RIP, finishes
//! through the slow path too ("deferred").
//!
//! Code is written through /proc/self/mem (`host::own_mem_path`: so page protections stay
//! as the program set them), opened for each patch and closed at once, never
//! where the program can reach it (see [`write_code`]). While the program has only one thread the 5 bytes are
//! written at once; with several threads, an `int3` goes first, then the
//! rest, then the opcode, with a core-serialising membarrier between steps
//! (threads that hit the `int3` retry the instruction).
//!
//! # Safety
//! This module writes machine code into the program's memory.
#![deny(unsafe_code)]

use crate::arch::SigContext;
use crate::host;
use crate::host::errno::Errno;
use crate::mm::runtime::{self, CODE_REGION_SIZE as REGION_SIZE, PAGE_SIZE};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

mod known;
pub use known::use_table as use_known_sites;

/// The loader mapped code of a file at `[start, end)` (see `known::note`).
pub fn note_file_code(start: usize, end: usize, dev: u64, inode: u64, base: usize) {
    known::note(&mut state(), start, end, dev, inode, base);
}

/// The loader mapped the executable file on device `dev` with inode
/// `inode`: the program whose known sites this process records and
/// patches (`known`).
pub fn note_program(dev: u64, inode: u64) {
    state().program = known::program_key(dev, inode);
}

/// Largest trampoline in bytes (with the most copied moves).
const TRAMP_SIZE: usize = 80;
/// Longest run of register moves copied between `mov $NR` and `syscall`.
const MAX_MOVES: usize = 24;
/// Offsets in a trampoline, from the return address of its `call`
/// (`arch::RET_TO_SITE_RET` is where the continuation is stored).
use crate::arch::RET_TO_SITE_RET;
pub const RET_TO_SLOW: usize = 10;
/// Offsets in a region's header of the entry addresses the trampolines
/// call, one per route (`arch::class`): the fast entry, the direct entries
/// for calls the host serves unchanged (non-blocking, then blocking), and
/// the same for calls on a descriptor, which take the direct entry only if
/// the host serves the descriptor unchanged (`arch::PassThrough`).
const ENTRY_FAST: usize = 0;
const ENTRY_DIRECT: usize = 8;
const ENTRY_DIRECT_BLOCKING: usize = 16;
const ENTRY_DIRECT_FD: usize = 24;
const ENTRY_DIRECT_FD_BLOCKING: usize = 32;
/// The entry of sites whose number is only known at run time: it picks one
/// of the above by the number's `arch::DIRECT_CLASS`.
const ENTRY_DYNAMIC: usize = 40;
const ENTRIES: usize = 6;

/// The trap at which a site is patched ([`State::seen`]). A patch costs
/// about what six trapped calls cost (the write through /proc/self/mem
/// that copies the code page, the trampoline's, the page made a mapping of
/// its own: ~10 µs, a trap ~1.7 µs; docs/BENCHMARKS.md, 30th session), so
/// code that runs fewer times than that (start-up, the dynamic loader's
/// calls in a short program, a fork child's `_exit`) is better left
/// trapping, and code that runs more pays for five extra traps once: at
/// most about twice what knowing in advance would have cost. (Patching at
/// the second trap made every run of /bin/true patch six of the dynamic
/// loader's sites that it then called a few times each.)
const PATCH_AT_TRAP: u8 = 6;

/// Pseudo syscall number the slow path uses to finish a deferred fast call.
pub const DEFERRED_NR: u64 = 0x7069_636f; // "pico"

static ENABLED: AtomicBool = AtomicBool::new(false);
/// The program has (or had) more than one thread sharing its memory.
static MULTI: AtomicBool = AtomicBool::new(false);
static MEMBARRIER_OK: AtomicBool = AtomicBool::new(false);
static VDSO: AtomicUsize = AtomicUsize::new(0);
/// The process that owns the patcher (an address identifying its state,
/// see [`Config::owner`]). A process sharing our memory with state of its
/// own (vfork, posix_spawn) never patches: its parent may be patching, or
/// waiting in a clone with the patcher's state as it was.
static OWNER: AtomicUsize = AtomicUsize::new(0);
/// Offsets for the trampolines' inline answers (see [`Inline`]).
static INLINE: spin::Once<Option<Inline>> = spin::Once::new();

/// Where the trampolines find the answers they give without entering the
/// runtime (getpid, getppid, gettid), as offsets from the GS base (the
/// thread's state): `process` holds a pointer to the process's state, in
/// which `pid` and `ppid` are 32-bit words; `tid` is in the thread's own.
/// A zero there means unknown (the trampoline then enters the runtime).
#[derive(Clone, Copy)]
pub struct Inline {
    pub process: u32,
    pub pid: u32,
    pub ppid: u32,
    pub tid: u32,
}

/// What the layers above decide for the patcher (see [`init`]).
pub struct Config {
    /// The vDSO's address (its sites are never patched).
    pub vdso: usize,
    /// Identifies the process that patches (the caller's per-process state).
    pub owner: usize,
    /// The route of each call number (`arch::class`).
    pub route: fn(u32) -> u8,
    /// Inline answers, or None when every call must enter the runtime
    /// (--stats, --trace).
    pub inline: Option<Inline>,
}

struct State {
    /// Next free offset in each region.
    used: [usize; runtime::MAX_CODE_REGIONS],
    /// Sites already patched (or being patched).
    sites: BTreeSet<usize>,
    /// Sites seen trapping, with how many times: a site is patched at its
    /// [`PATCH_AT_TRAP`]th trap.
    seen: BTreeMap<usize, u8>,
    /// Sites hinted once by fork children ([`before_fork`]): patched at
    /// the second hint, or at a trap here. Apart from `seen`, which the
    /// children inherit: a child that finds its site there patches it in
    /// its own copy, at its first trap.
    hinted: BTreeSet<usize>,
    /// The process whose hints `hinted` counts: a fork child inherits its
    /// parent's set and empties it when it first uses it
    /// ([`State::own_hints`]), not as it starts (the lock's word and the
    /// set's nodes would each copy a page in every child).
    hinted_pid: i32,
    /// Ranges never to patch (shared mappings: writing would change a file).
    no_patch: Vec<(usize, usize)>,
    /// How each trampoline's addresses map onto its site's code (see
    /// [`untrampoline`]), by trampoline address.
    mapped: BTreeMap<usize, TrampMap>,
    /// Addresses of the runtime's entries, stored at the start of each
    /// region (ENTRY_FAST, ENTRY_DIRECT, ENTRY_DIRECT_BLOCKING,
    /// ENTRY_DYNAMIC).
    entries: [usize; ENTRIES],
    /// The bytes each patched site's jump replaced (see
    /// [`stop_for_seccomp`]).
    orig: BTreeMap<usize, [u8; 5]>,
    /// The mappings the known sites' table was asked about
    /// ([`known::file_map`]).
    files: Vec<known::FileMap>,
    /// The program this process runs ([`note_program`]; 0: not known).
    program: u64,
}

impl State {
    /// `hinted`, emptied first if it is another process's (a fork child's
    /// first use of its parent's set).
    fn own_hints(&mut self) -> &mut BTreeSet<usize> {
        let pid = host::getpid();
        if self.hinted_pid != pid {
            self.hinted.clear();
            self.hinted_pid = pid;
        }
        &mut self.hinted
    }
}

static STATE: crate::sync::Lock<State> = crate::sync::Lock::new(
    crate::sync::Rank::Patch,
    State {
        used: [0; runtime::MAX_CODE_REGIONS],
        sites: BTreeSet::new(),
        seen: BTreeMap::new(),
        hinted: BTreeSet::new(),
        hinted_pid: 0,
        no_patch: Vec::new(),
        mapped: BTreeMap::new(),
        entries: [0; ENTRIES],
        orig: BTreeMap::new(),
        files: Vec::new(),
        program: 0,
    },
);

/// How a trampoline's code maps onto its site's. The trampoline is `pre`
/// (bytes copied from the site's start), an optional `inline` answer
/// (getpid and co.), `lea -0x80(%rsp), %rsp`, `moves` (copied from the bytes
/// before the site's `syscall`), `mov $NR, %eax` when the number is fixed,
/// then the `call` into the runtime (R = its return address), `lea
/// 0x80(%rsp), %rsp` and `jmp *%rcx` at R+8, its own `syscall` at R+10 (the
/// trap path) and a jump back to the site at R+12.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct TrampMap {
    site: usize,
    pre: usize,
    inline: usize,
    moves: usize,
    nr: Option<u32>,
    /// The site's own `syscall` instruction.
    syscall: usize,
    /// The jump covers the `syscall` (and `post` bytes after it, a `cmp
    /// $-4096, %rax` the trampoline runs at R+12).
    covers: bool,
    post: usize,
}

/// RFLAGS after `cmp $imm, %rax` (64-bit) from `flags`.
fn cmp_flags(flags: u64, a: u64, b: u64) -> u64 {
    let r = a.wrapping_sub(b);
    let mut f = flags & !(0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x800);
    f |= u64::from(a < b); // CF
    f |= u64::from((r as u8).count_ones() % 2 == 0) << 2; // PF
    f |= ((a ^ b ^ r) & 0x10) as u64; // AF
    f |= u64::from(r == 0) << 6; // ZF
    f |= (r >> 63) << 7; // SF
    f |= (((a ^ b) & (a ^ r)) >> 63) << 11; // OF
    f
}

impl TrampMap {
    /// The offset of the `call` into the runtime.
    fn call_offset(&self) -> usize {
        self.pre + self.inline + 5 + self.moves + if self.nr.is_some() { 5 } else { 0 }
    }

    /// Where the program continues after the site.
    fn resume(&self) -> usize {
        self.syscall + 2 + self.post
    }

    /// The program context at `m.rip` in the trampoline at `t`, as it would
    /// be in the original code: `(rip, rsp, rax)`, the other registers being
    /// the same there. Before the call, the matching instruction of the site
    /// (RSP above the red zone again, RAX = the number where the original
    /// `mov $NR` has run); after a fast return, the continuation; on the way
    /// to the trampoline's own `syscall` (a call the trap path serves), the
    /// site's `syscall`. None for a deferred call's finish (`finish_deferred`
    /// deals with it).
    fn map(&self, t: usize, m: &SigContext) -> Option<(usize, u64, u64)> {
        let (rip, rsp, rax) = (m.rip as usize, m.rsp, m.rax);
        if rax == DEFERRED_NR {
            return None;
        }
        let off = rip.checked_sub(t)?;
        let lea = self.pre + self.inline;
        let moves = lea + 5;
        let call = self.call_offset();
        let ret = call + 6;
        let resume = self.resume();
        // RAX where the original code has loaded the number.
        let nr = self.nr.map_or(rax, u64::from);
        let slow = (t + ret + RET_TO_SLOW) as u64;
        if self.covers {
            // The site's own code is gone from its start to `resume`: before
            // the call, the program is at the site's start (the copies are
            // idempotent: register loads of what the site loads); after it,
            // at `resume` (RFLAGS as the `cmp` would leave them).
            let cont = (t + ret + 12) as u64;
            let next = match m.rcx {
                c if c == cont => Some((resume, rax)),
                c if c == slow => Some((self.site, nr)),
                _ => None,
            };
            return Some(match off {
                o if o < lea => (self.site, rsp, rax),
                o if o == lea => (self.site, rsp, rax),
                o if o > lea && o < moves => return None,
                o if o <= call => (self.site, rsp + 0x80, rax),
                o if o == ret => next.map(|(r, a)| (r, rsp + 0x80, a))?,
                o if o == ret + 8 => next.map(|(r, a)| (r, rsp, a))?,
                o if o == ret + RET_TO_SLOW => (self.site, rsp, nr),
                o if o == ret + 12 || o == ret + 12 + self.post => (resume, rsp, rax),
                _ => return None,
            });
        }
        // The original instruction the copied moves start at.
        let moves_at = self.syscall - self.moves;
        // Where the `jmp *%rcx` at R+8 goes: on, or to the slow `syscall`.
        let next = match m.rcx {
            c if c == resume as u64 => Some((resume, rax)),
            c if c == slow => Some((self.syscall, nr)),
            _ => None,
        };
        let inline_jmp = self.pre + self.inline.saturating_sub(5);
        Some(match off {
            o if o < self.pre => (self.site + o, rsp, rax),
            o if self.inline != 0 && o == inline_jmp => (resume, rsp, rax),
            o if o < lea => (self.site + self.pre, rsp, rax),
            // Nothing of the moves has run: where the original runs them
            // (before its `mov $NR` for a fixed number without `pre`).
            o if o == lea && self.nr.is_some() && self.pre == 0 => (self.site, rsp, rax),
            o if o == lea => (self.site + self.pre, rsp, rax),
            o if o > lea && o < moves => return None,
            o if o < moves + self.moves => (moves_at + (o - moves), rsp + 0x80, nr),
            o if o <= call => (self.syscall, rsp + 0x80, nr),
            o if o == ret => next.map(|(r, a)| (r, rsp + 0x80, a))?,
            o if o == ret + 8 => next.map(|(r, a)| (r, rsp, a))?,
            o if o == ret + RET_TO_SLOW => (self.syscall, rsp, nr),
            o if o == ret + RET_TO_SLOW + 2 => (resume, rsp, rax),
            _ => return None,
        })
    }
}

/// A write to the program's stack faulted at `addr` (SIGSEGV or SIGBUS on
/// context `m`): if it is the push of a trampoline's `call` into the
/// runtime, or of the entry's `pushfq` right after it, the program's stack
/// is not writable there (an alternate signal stack another thread has just
/// made read-only, as LTP signal06 does), where the `syscall` the
/// trampoline stands for writes nothing. Turns `m` into the context of the
/// trampoline's own `syscall` (the trap path: Syscall User Dispatch, whose
/// signal frame is on the runtime's stack) as the call was about to be
/// made, and returns true; false for any other fault.
pub fn stack_fault_fallback(m: &mut SigContext, addr: u64) -> bool {
    if addr != m.rsp.wrapping_sub(8) {
        return false;
    }
    let rip = m.rip as usize;
    let st = state();
    // At an entry: the `call` has pushed the trampoline's return address.
    let (ret_addr, rsp) = if st.entries.contains(&rip) {
        let mut r = [0u8; 8];
        if crate::mm::user::copy_in(&mut r, m.rsp as usize).is_err() {
            return false;
        }
        (usize::from_le_bytes(r), m.rsp + 8)
    } else {
        (0, m.rsp)
    };
    let inside = if ret_addr != 0 { ret_addr - 1 } else { rip };
    if region_of(inside) == 0 {
        return false;
    }
    let Some((&t, map)) = st.mapped.range(..=inside).next_back() else {
        return false;
    };
    let ret = t + map.call_offset() + 6;
    let at_call = if ret_addr != 0 {
        ret_addr == ret
    } else {
        rip == ret - 6
    };
    if inside >= t + TRAMP_SIZE || !at_call {
        return false;
    }
    // RAX holds the number (the trampoline's `mov`, or the site's own).
    m.rip = (ret + RET_TO_SLOW) as u64;
    m.rsp = rsp + 0x80;
    true
}

/// A signal is delivered on a program context `m` inside a trampoline:
/// present it as the original code's ([`TrampMap::map`]: as if the jump had
/// not been taken yet, the copied instructions had run in place, or the
/// call had returned to the site), so a handler that looks at the
/// interrupted address (musl's cancellation handler checks it against its
/// `__cp_begin`..`__cp_end` range, Go's preemption against its code) sees
/// the program's own, and returns there. A deferred call's finish stays as
/// it is (`finish_deferred` replaces that context).
pub fn untrampoline(m: &mut SigContext) {
    let rip = m.rip as usize;
    if !enabled() || region_of(rip) == 0 {
        return;
    }
    let st = state();
    let Some((&t, map)) = st.mapped.range(..=rip).next_back() else {
        return;
    };
    if rip >= t + TRAMP_SIZE {
        return;
    }
    if let Some((r, sp, ax)) = map.map(t, m) {
        if map.post != 0 && r == map.resume() {
            // The `cmp $-4096, %rax` the trampoline runs after the call.
            m.eflags = cmp_flags(m.eflags, ax, -4096i64 as u64);
        }
        m.rip = r as u64;
        m.rsp = sp;
        m.rax = ax;
    }
}

/// Is the fast path on?
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns patching on (called at start-up when the configuration asks).
pub fn init(cfg: &Config) {
    START_PID.store(host::getpid(), Ordering::Relaxed);
    VDSO.store(cfg.vdso, Ordering::Relaxed);
    OWNER.store(cfg.owner, Ordering::Relaxed);
    INLINE.call_once(|| cfg.inline);
    for (nr, class) in crate::arch::DIRECT_CLASS.iter().enumerate() {
        class.store((cfg.route)(nr as u32), Ordering::Relaxed);
    }
    let [direct, direct_blocking, direct_fd, direct_fd_blocking] = crate::arch::direct_entries();
    state().entries = [
        crate::arch::picos_fast_entry as *const () as usize,
        direct,
        direct_blocking,
        direct_fd,
        direct_fd_blocking,
        crate::arch::picos_dynamic_entry as *const () as usize,
    ];
    ENABLED.store(true, Ordering::Relaxed);
}

/// An execve in place (`kernel::exec::in_place`): the old program's
/// sites, hints and trampolines are forgotten and its code regions
/// unmapped; patching is off until [`init`] turns it on for the new
/// program. The caller is the process's only thread, and no other task
/// shares its memory.
pub fn reset_for_exec() {
    ENABLED.store(false, Ordering::Relaxed);
    let mut st = state();
    st.used = [0; runtime::MAX_CODE_REGIONS];
    st.sites.clear();
    st.seen.clear();
    st.hinted.clear();
    st.no_patch.clear();
    st.mapped.clear();
    st.orig.clear();
    st.files.clear();
    st.program = 0;
    runtime::unmap_code_regions();
}

/// Stops patching and puts every patched site back as it was, so that
/// each program call takes the trap path from now on: the program has
/// installed a seccomp filter (`kernel::seccomp`), which must see every
/// call, and a trampoline's direct entry or inline answer (getpid) would
/// not ask it. Threads already in a trampoline finish their call there
/// (it stays); with threads, a site goes back as it was patched (an
/// `int3` first: see [`install_jump`]). A site that cannot be written
/// back keeps its trampoline (logged).
pub fn stop_for_seccomp() {
    ENABLED.store(false, Ordering::Relaxed);
    let mut st = state();
    if st.orig.is_empty() {
        return;
    }
    let multi = MULTI.load(Ordering::Relaxed);
    let sites: Vec<(usize, [u8; 5])> = st.orig.iter().map(|(&a, &b)| (a, b)).collect();
    for (s0, orig) in sites {
        let r = if multi {
            write_code(&[
                CodeOp::Write(s0, &[0xcc]),
                CodeOp::Sync,
                CodeOp::Write(s0 + 1, &orig[1..]),
                CodeOp::Sync,
                CodeOp::Write(s0, &orig[..1]),
                CodeOp::Sync,
            ])
        } else {
            write_code(&[CodeOp::Write(s0, &orig)])
        };
        match r {
            // Still in `sites`: never patched again, and a thread that
            // met the `int3` runs the instruction again.
            Ok(()) => {
                st.orig.remove(&s0);
            }
            Err(e) => crate::log!(
                Warning,
                "seccomp: could not restore the syscall site at {:#x} ({}): calls there are not filtered",
                s0,
                e
            ),
        }
    }
}

/// Locks the patcher's state. The holder may sleep (a patch made with
/// threads waits for the transient task that writes the code, see
/// `host::fds::with_own_fds`); waiters yield the CPU after a short spin, as for
/// every `lock::Lock` (32 threads spinning on 2 cores starved that thread
/// and made `patch_stress` 50 times slower).
fn state() -> crate::sync::Guard<'static, State> {
    STATE.lock()
}

/// The patcher's part in fork: its state is locked across the fork, so no
/// thread is writing code then (no descriptor of the patcher's exists for
/// the child to inherit) and the child never inherits the lock held.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "patch",
    hold: |inner| {
        let _state = state();
        inner()
    },
    alone: crate::sync::ForkHook::nothing,
    // (The parent's hints counted are its own: the child empties the set
    // at its first use of it, `State::own_hints`, so that a trap here
    // counts as a first one and leaves a hint.)
    child: crate::sync::ForkHook::no_change,
};

/// Called when a thread or process sharing this memory is created.
pub fn note_shared_memory() {
    if !MULTI.swap(true, Ordering::Relaxed) {
        const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: i32 = 64;
        let ok = host::membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE).is_ok();
        MEMBARRIER_OK.store(ok, Ordering::Relaxed);
    }
}

/// No other task shares this process's memory any more: in a fork child
/// (its only thread, its own copy of the memory; the patcher's state was
/// locked across the fork, so no code write was under way), and in the
/// parent of a vfork child once the clone returns (the child has exec'd or
/// exited) if nothing shared the memory before it. Written only if set (a
/// write would copy the page in every fork child).
pub fn note_private_memory() {
    if MULTI.load(Ordering::Relaxed) {
        MULTI.store(false, Ordering::Relaxed);
    }
}

/// Does (or did) another task share this process's memory: a thread, or
/// a child made with CLONE_VM? Set by the first such clone; cleared only
/// where nothing can share it any more ([`note_private_memory`]); each
/// program starts without it.
pub fn memory_shared() -> bool {
    MULTI.load(Ordering::Relaxed)
}

/// Has the runtime registered the process for core-serialising
/// membarriers (which `sys::memory::membarrier` hides from the program)?
pub fn membarrier_registered() -> bool {
    MEMBARRIER_OK.load(Ordering::Relaxed)
}

fn sync_core() -> bool {
    const MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE: i32 = 32;
    host::membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE).is_ok()
}

/// Records a shared mapping (never patched: the write would reach the file).
pub fn note_shared_mapping(addr: usize, len: usize) {
    if enabled() {
        state().no_patch.push((addr, addr.saturating_add(len)));
    }
}

/// The program unmapped or replaced `[addr, addr+len)`: sites there are
/// gone (new code at those addresses is patched afresh when it traps).
pub fn forget_range(addr: usize, len: usize) {
    if !enabled() {
        return;
    }
    let end = addr.saturating_add(len);
    let mut st = state();
    known::forget(&mut st, addr, end);
    // Most ranges hold no site (a thread's stack that glibc gives back
    // with MADV_DONTNEED at every thread's end): two lookups, no walk of
    // every trampoline. A trampoline's site is always in `sites`.
    let patched = st.sites.range(addr..end).next().is_some();
    if !patched && st.seen.range(addr..end).next().is_none() {
        return;
    }
    let gone: Vec<usize> = st
        .sites
        .range(addr..end)
        .chain(st.seen.range(addr..end).map(|(s, _)| s))
        .copied()
        .collect();
    for s in gone {
        st.sites.remove(&s);
        st.seen.remove(&s);
    }
    if patched {
        st.mapped.retain(|_, m| m.site < addr || m.site >= end);
    }
}

/// One step of writing code: bytes at an address, or a core-serialising
/// barrier (see [`sync_core`]).
enum CodeOp<'a> {
    Write(usize, &'a [u8]),
    Sync,
}

/// Writes code (program code or a trampoline region of ours, which the
/// caller has checked) through /proc/self/mem (`host::own_mem_path`), so page protections
/// stay as they are; where threads share the descriptor table, by making
/// the pages writable for the write first ([`protection_first`]), the file
/// then being the fallback. Called with the patcher's state locked. No descriptor
/// stays open: the file is opened for these writes and closed
/// after them. In the program's descriptor table only while the program
/// cannot run until it is closed again (one thread, no table shared: see
/// `host::fds::may_use_program_fds`) and the table has room; otherwise in a
/// transient task's table of its own (`host::fds::with_own_fds`), where the
/// program can never reach it. Either way the program sees every
/// descriptor number it would have natively. If the file cannot be opened
/// (no /proc), patching stops; the sites keep the trap path.
fn write_code(ops: &[CodeOp<'_>]) -> Result<(), Errno> {
    // The outer error is the open's, the inner one a write's.
    let run = || -> Result<Result<(), Errno>, Errno> {
        let flags = host::O_RDWR | host::O_CLOEXEC;
        let fd = host::openat(host::AT_FDCWD, host::own_mem_path(), flags, 0)? as i32;
        // (Several writes to one page: made apart once.)
        let apart = core::cell::Cell::new(usize::MAX);
        let write = |addr: usize, bytes: &[u8]| {
            if !bytes.is_empty() && !runtime::owns(addr, bytes.len()) {
                let page = addr & !(PAGE_SIZE - 1);
                let last = (addr + bytes.len() - 1) & !(PAGE_SIZE - 1);
                if apart.replace(page) != page || last != page {
                    crate::mm::user::keep_code_page_apart(addr, bytes.len());
                }
            }
            // The kernel writes `addr` in our own address space, which
            // the caller has checked is program code or a trampoline
            // region of ours.
            let n = host::pwrite(fd, bytes, addr as u64)?;
            if n == bytes.len() {
                Ok(())
            } else {
                Err(Errno::EIO)
            }
        };
        let r = match coalesced(ops) {
            Some(writes) => writes.iter().try_for_each(|(a, b)| write(*a, b)),
            None => ops.iter().try_for_each(|op| match *op {
                CodeOp::Write(addr, bytes) => write(addr, bytes),
                CodeOp::Sync => sync_op(),
            }),
        };
        let _ = host::close(fd);
        Ok(r)
    };
    if BY_PROTECTION.load(Ordering::Relaxed) {
        return write_by_protection(ops);
    }
    if protection_first() {
        // Threads share the descriptor table: /proc/self/mem could only be
        // opened in a transient task of its own, a clone and a wait per
        // write (`java -version` beside two CPU hogs started in 195 ms
        // this way, 115 ms with the pages made writable instead; native
        // 105). Where mprotect is refused (a policy against writable code,
        // strict overcommit), the file is still the way.
        if write_by_protection(ops).is_ok() {
            if !PROTECTION_NOTED.swap(true, Ordering::Relaxed) {
                crate::log!(
                    Debug,
                    "threads share the descriptor table: code is written through mprotect"
                );
            }
            return Ok(());
        }
    }
    match crate::host::fds::with_transient_fds(run) {
        Ok(r) => r,
        // The sandbox: /proc is mounted read-only, and Landlock lets no
        // file outside the mounts be written.
        Err(e) if matches!(e, Errno::EROFS | Errno::EACCES | Errno::EPERM) => {
            crate::log!(
                Debug,
                "cannot open /proc/thread-self/mem ({}): code is written through mprotect",
                e
            );
            BY_PROTECTION.store(true, Ordering::Relaxed);
            write_by_protection(ops)
        }
        Err(e) => {
            if e != Errno::EMFILE && e != Errno::ENFILE && e != Errno::EAGAIN {
                crate::log!(
                    Debug,
                    "syscall patching off: cannot open /proc/thread-self/mem: {}",
                    e
                );
                ENABLED.store(false, Ordering::Relaxed);
            }
            Err(e)
        }
    }
}

/// The writes of `ops` as few host writes as can be, when it has several
/// and no barrier (None otherwise, or if a program page cannot be read):
/// each run of adjacent writes to the runtime's code regions (a batch's
/// trampolines, allocated one after the other) as one, first, as the ops
/// put each trampoline before its jump; then the writes to each page of
/// program code as one, the bytes between them rewritten as they are. A
/// page's known sites (`known::patch_page`) took two writes each through
/// /proc/self/mem (~2-3 µs apiece): `python3 -c pass` made 170 of them at
/// start-up. Only where the program cannot run meanwhile: the caller
/// writes through the file only when no other task shares the calling
/// thread's descriptor table ([`protection_first`]), so no thread of the
/// program changes the bytes between their read and their write.
fn coalesced(ops: &[CodeOp<'_>]) -> Option<Vec<(usize, Vec<u8>)>> {
    let mut writes: Vec<(usize, &[u8])> = Vec::with_capacity(ops.len());
    for op in ops {
        match *op {
            CodeOp::Write(a, b) if !b.is_empty() => writes.push((a, b)),
            CodeOp::Write(..) => {}
            CodeOp::Sync => return None,
        }
    }
    if writes.len() < 2 {
        return None;
    }
    // Trampolines first, then program code; each by address (a stable
    // sort: writes to the same place stay in their order).
    writes.sort_by_key(|&(a, b)| (!runtime::owns(a, b.len()), a));
    let mut out: Vec<(usize, Vec<u8>)> = Vec::new();
    // Where the last write of the last run began.
    let mut last = 0;
    for (a, b) in writes {
        let own = runtime::owns(a, b.len());
        let page = a & !(PAGE_SIZE - 1);
        let end = a + b.len();
        if let Some((s, buf)) = out.last_mut() {
            let cur_end = *s + buf.len();
            let joins = if own {
                // The next trampoline slot (`alloc_trampoline`): the bytes
                // between are the unused end of the last one's slot.
                runtime::owns(*s, buf.len())
                    && (a == cur_end
                        || (a > cur_end && a - last == TRAMP_SIZE && cur_end - last <= TRAMP_SIZE))
            } else {
                !runtime::owns(*s, buf.len())
                    && *s & !(PAGE_SIZE - 1) == page
                    && end <= page + PAGE_SIZE
                    && a >= *s
            };
            if joins {
                if a > cur_end && own {
                    // (Never run: int3.)
                    buf.resize(a - *s, 0xcc);
                } else if a > cur_end {
                    let mut gap = alloc::vec![0u8; a - cur_end];
                    crate::mm::user::copy_in(&mut gap, cur_end).ok()?;
                    buf.extend_from_slice(&gap);
                }
                last = a;
                let at = a - *s;
                if buf.len() < at + b.len() {
                    buf.resize(at + b.len(), 0);
                }
                buf[at..at + b.len()].copy_from_slice(b);
                continue;
            }
        }
        out.push((a, b.to_vec()));
        last = a;
    }
    Some(out)
}

/// [`write_code`] has said once (at the debug level) that it writes code
/// through mprotect because threads share the descriptor table.
static PROTECTION_NOTED: AtomicBool = AtomicBool::new(false);

/// Code is written by making its pages writable for the write
/// ([`write_by_protection`]), /proc/self/mem being out of reach.
static BY_PROTECTION: AtomicBool = AtomicBool::new(false);

/// [`write_code`] without /proc/self/mem: each write makes the pages it
/// touches writable for its time (`mm::user::write_code_by_protection`).
/// Called with the patcher's lock held, which [`protection_change`] takes
/// too.
fn write_by_protection(ops: &[CodeOp<'_>]) -> Result<(), Errno> {
    ops.iter().try_for_each(|op| match *op {
        CodeOp::Write(addr, bytes) => crate::mm::user::write_code_by_protection(addr, bytes),
        CodeOp::Sync => sync_op(),
    })
}

/// [`CodeOp::Sync`]: [`sync_core`], EIO if it failed.
fn sync_op() -> Result<(), Errno> {
    if sync_core() {
        Ok(())
    } else {
        Err(Errno::EIO)
    }
}

/// Does [`write_code`] try [`write_by_protection`] first? Where the
/// calling thread's descriptor table is shared (threads, CLONE_FILES): opening
/// /proc/self/mem there takes a transient task. (A single-threaded program
/// keeps the file: a write through it costs one host call where mprotect
/// costs three. Either way each written page becomes a mapping of its own:
/// see `mm::user::keep_code_page_apart`.)
fn protection_first() -> bool {
    !crate::host::fds::may_use_program_fds()
}

/// Runs `f`, a change of the program's page protections (its mprotect),
/// so that it never falls between the two mprotect calls of a code write
/// ([`write_by_protection`]), whose restore would undo it.
pub fn protection_change<R>(f: impl FnOnce() -> R) -> R {
    // (Any thread of the address space may be writing code that way: the
    // calling thread's table may be private where another's is shared.)
    if BY_PROTECTION.load(Ordering::Relaxed) || crate::host::fds::any_table_shared() {
        let _st = state();
        f()
    } else {
        f()
    }
}

fn rel32(from_end: usize, to: usize) -> Option<[u8; 4]> {
    let d = (to as i64).wrapping_sub(from_end as i64);
    i32::try_from(d).ok().map(|v| v.to_le_bytes())
}

/// Where the trampolines of glibc's threaded `read` go, the pun the break's
/// room must leave room for: the jump's last byte repeats the `xor
/// %eax,%eax` (0x31), so the trampoline lies in the 16 MiB window starting
/// 0x31 << 24 bytes above the site (`alloc_trampoline`). The break's room
/// is kept out of the windows of the executable's own text
/// (`kernel::vm::init_brk`). (The thread-exit pun's 256-byte window lies
/// ~253 MiB above its site: in a static program's break room, so such a
/// program's thread exit stays on the trap path.)
pub const PUN_WINDOW_OFFSET: usize = 0x31 << 24;
/// The size of a punned site's window (the displacement's low 24 bits).
pub const PUN_WINDOW_SPAN: usize = 1 << 24;

/// The bytes of a punned jump's displacement that must repeat the original
/// code (see `Site::pun`): `rel32 & mask == value`, the mask covering its
/// high bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pun {
    value: u32,
    mask: u32,
}

impl Pun {
    /// The displacement's last `kept.len()` bytes (1 to 3) must be `kept`.
    fn keeping(kept: &[u8]) -> Pun {
        let mut v = [0u8; 4];
        v[4 - kept.len()..].copy_from_slice(kept);
        Pun {
            value: u32::from_le_bytes(v),
            mask: u32::MAX << (8 * (4 - kept.len())),
        }
    }

    fn matches(self, rel: [u8; 4]) -> bool {
        u32::from_le_bytes(rel) & self.mask == self.value
    }

    /// The window of trampoline addresses such a jump at `site` can reach:
    /// its first address and its size.
    fn window(self, site: usize) -> (usize, usize) {
        let lo = (site as i64 + 5 + self.value as i32 as i64).max(0) as usize;
        (lo, (!self.mask) as usize + 1)
    }
}

/// Finds room for one trampoline within reach of `site`. With `pun`, the
/// jump's displacement must repeat those bytes (see `Site::pun`).
fn alloc_trampoline(st: &mut State, site: usize, pun: Option<Pun>) -> Option<usize> {
    let fits = |addr: usize| match rel32(site + 5, addr) {
        Some(r) => {
            rel32(addr + TRAMP_SIZE, site + 64).is_some() && pun.is_none_or(|p| p.matches(r))
        }
        None => false,
    };
    for (i, b) in runtime::code_regions().enumerate() {
        if st.used[i] + TRAMP_SIZE <= REGION_SIZE && fits(b + st.used[i]) {
            let t = b + st.used[i];
            st.used[i] += TRAMP_SIZE;
            return Some(t);
        }
    }
    let page = site & !(PAGE_SIZE - 1);
    // A new region near the site: below it, then above, in 1 MiB steps; or,
    // with a pun, in the window of addresses whose displacement repeats its
    // bytes: in 1 MiB steps through a large window (16 MiB: one byte kept),
    // the one region that holds a small one (256 bytes: three kept).
    let window = pun.map(|p| p.window(site));
    // (±2 GiB: the reach of the jump.)
    let candidates = (1..2048usize).flat_map(move |k| match window {
        Some((w, span)) if span >= REGION_SIZE => {
            let w = (w + PAGE_SIZE - 1) & !(PAGE_SIZE - 1);
            [(k <= span >> 20).then(|| w + ((k - 1) << 20)), None]
        }
        Some((w, _)) => [(k == 1).then_some(w & !(PAGE_SIZE - 1)), None],
        None => [page.checked_sub(k << 20), page.checked_add(k << 20)],
    });
    for cand in candidates.flatten() {
        let n = runtime::code_regions().count();
        if n >= runtime::MAX_CODE_REGIONS {
            return None;
        }
        if cand < (16 << 20)
            || cand + REGION_SIZE > 0x7fff_ffff_0000
            || runtime::owns(cand, REGION_SIZE)
            || runtime::in_brk_room(cand, REGION_SIZE)
        {
            continue;
        }
        // The region starts with the runtime's entry addresses; then it is
        // code (mapped by `mm`, which counts it as the runtime's memory).
        let mut header = [0u8; ENTRIES * 8];
        for (i, e) in st.entries.iter().enumerate() {
            header[i * 8..i * 8 + 8].copy_from_slice(&e.to_le_bytes());
        }
        match runtime::map_code_region(cand, &header) {
            Ok(i) if i == n => {}
            Ok(_) => return None, // (regions are only mapped under the state lock)
            Err(Errno::ENOMEM) => return None,
            Err(_) => continue,
        }
        let b = cand;
        // (A small window may start past the header.)
        let first = window.map_or(64, |(w, _)| w.saturating_sub(b).max(64));
        st.used[n] = first;
        if !fits(b + first) {
            continue; // usable for other sites; look further for this one
        }
        st.used[n] += TRAMP_SIZE;
        return Some(b + first);
    }
    None
}

fn region_of(addr: usize) -> usize {
    runtime::code_regions()
        .find(|&b| addr >= b && addr < b + REGION_SIZE)
        .unwrap_or(0)
}

/// One recognised syscall site.
#[derive(Debug, PartialEq, Eq, Default)]
struct Site {
    /// First byte overwritten by the jump.
    start: usize,
    /// Instructions the trampoline runs first, at the program's own RSP
    /// (copied verbatim; they may read the stack).
    pre: Vec<u8>,
    /// Register moves to run before the call (copied verbatim, but for
    /// the displacements of RIP-relative `lea`s: see `rip_fixups`).
    moves: Vec<u8>,
    /// For each RIP-relative `lea` among the moves: the offset of its
    /// 32-bit displacement in `moves`, and the address the original
    /// instruction ends at (the displacement's origin).
    rip_fixups: Vec<(usize, usize)>,
    /// Instruction overwritten after the `syscall`, run by the trampoline.
    post: Vec<u8>,
    /// Where the program continues after the site.
    resume: usize,
    /// The number is an immediate the trampoline loads (`mov $NR, %eax`);
    /// otherwise RAX already holds it (libc's `syscall(3)`).
    fixed_nr: bool,
    /// The jump's last bytes (the displacement's high bytes) must be these
    /// bytes of the original code: every instruction that starts inside
    /// the jump then finds its bytes there as they were, for a thread
    /// stopped there (instruction punning, as E9Patch does). One byte for
    /// glibc's threaded `read` (the `xor`'s opcode), three for its thread
    /// exit (a whole `mov` and the `syscall`'s first byte).
    pun: Option<Pun>,
}

impl Site {
    /// Does the jump cover the `syscall` instruction itself (or bytes after
    /// it)? Then the trampoline's own copy of it serves SA_RESTART rewinds,
    /// and the patch is only safe while no other thread can be stopped at or
    /// inside the covered bytes.
    fn covers_syscall(&self, syscall_at: usize) -> bool {
        !self.post.is_empty() || self.start + 5 > syscall_at
    }
}

/// Length of a register-only instruction at the start of `b`, if it is one
/// the patcher may copy between `mov $NR, %eax` and `syscall`: a `mov`,
/// `xor`, `cmp`, `test` or `cmovcc` with no memory operand (so no
/// RIP-relative addressing), never writing RSP, and never touching RAX (the
/// trampoline runs the copies before its own `mov $NR, %eax`).
fn simple_move_len(b: &[u8]) -> Option<usize> {
    simple_move(b).map(|(len, _)| len)
}

/// `lea disp32(%rip), reg` at the start of `b` (not into RAX or RSP):
/// its length (the displacement is its last four bytes). The trampoline's
/// copy gets the displacement that reaches the same address.
fn rip_lea(b: &[u8]) -> Option<usize> {
    let (rex, rest) = split_rex(b);
    let p = usize::from(rex != 0);
    let (op, modrm) = (*rest.first()?, *rest.get(1)?);
    let reg = ((modrm >> 3) & 7) | ((rex & 4) << 1);
    (op == 0x8d && modrm & 0xc7 == 0x05 && reg != 0 && reg != 4 && rest.len() >= 6).then_some(p + 6)
}

/// The REX prefix at the start of `b` (0 if none) and the bytes after it.
fn split_rex(b: &[u8]) -> (u8, &[u8]) {
    match b.first() {
        Some(&r) if (0x40..=0x4f).contains(&r) => (r, &b[1..]),
        _ => (0, b),
    }
}

/// As [`simple_move_len`], with the register the instruction writes (x86
/// numbering; `None` for `cmp` and `test`, which write only flags).
fn simple_move(b: &[u8]) -> Option<(usize, Option<u8>)> {
    let (rex, rest) = split_rex(b);
    let p = usize::from(rex != 0);
    let op = *rest.first()?;
    let (rex_r, rex_b) = (rex & 4 != 0, rex & 1 != 0);
    // Register numbers as the instruction names them (REX extends them).
    let reg_of = |modrm: u8| ((modrm >> 3) & 7) | (u8::from(rex_r) << 3);
    let rm_of = |modrm: u8| (modrm & 7) | (u8::from(rex_b) << 3);
    const RAX: u8 = 0;
    const RSP: u8 = 4;
    match op {
        // mov r/m, reg (89) / mov reg, r/m (8b) / xor (31, 33) / cmp (39,
        // 3b) / test (85): register form only.
        0x89 | 0x8b | 0x31 | 0x33 | 0x39 | 0x3b | 0x85 => {
            let modrm = *rest.get(1)?;
            let (reg, rm) = (reg_of(modrm), rm_of(modrm));
            let dest = match op {
                0x89 | 0x31 => Some(rm),
                0x8b | 0x33 => Some(reg),
                _ => None, // cmp and test write only flags
            };
            (modrm >> 6 == 3 && reg != RAX && rm != RAX && dest != Some(RSP))
                .then_some((p + 2, dest))
        }
        // cmovcc reg, r/m (0f 40+cc), register form only.
        0x0f => {
            let (op2, modrm) = (*rest.get(1)?, *rest.get(2)?);
            let (reg, rm) = (reg_of(modrm), rm_of(modrm));
            ((0x40..=0x4f).contains(&op2)
                && modrm >> 6 == 3
                && reg != RAX
                && rm != RAX
                && reg != RSP)
                .then_some((p + 3, Some(reg)))
        }
        // lea disp8/disp32(%base), reg: an address computed from a
        // register, no memory access. No SIB, no RIP-relative form (see
        // `rip_lea`), neither base nor destination RAX or RSP.
        0x8d => {
            let modrm = *rest.get(1)?;
            let (reg, rm) = (reg_of(modrm), rm_of(modrm));
            let len = match modrm >> 6 {
                1 => p + 3,
                2 => p + 6,
                _ => return None,
            };
            (modrm & 7 != 4 && reg != RAX && rm != RAX && reg != RSP && rest.len() + p >= len)
                .then_some((len, Some(reg)))
        }
        // An arithmetic or logic operation with an immediate (80 /n ib on
        // 8 bits, 83 /n ib and 81 /n id on 32 or 64): add, or, adc, sbb,
        // and, sub, xor, cmp (/7, which writes only flags); register form
        // only. glibc's futex waits and wakes: `xor $0x80,%sil` (the
        // private flag), after their `mov $202,%eax`.
        0x80 | 0x81 | 0x83 => {
            let modrm = *rest.get(1)?;
            let len = p + 2 + if op == 0x81 { 4 } else { 1 };
            if modrm >> 6 != 3 || rest.len() + p < len {
                return None;
            }
            // Without REX, 8-bit operands 4-7 are AH, CH, DH and BH: bits
            // of registers 0-3.
            let r = if op == 0x80 && rex == 0 && modrm & 7 >= 4 {
                (modrm & 7) - 4
            } else {
                rm_of(modrm)
            };
            let dest = ((modrm >> 3) & 7 != 7).then_some(r);
            (r != RAX && r != RSP).then_some((len, dest))
        }
        // mov $imm32, r32 (b8+r), not ESP or EAX.
        0xb8..=0xbf if rex & 8 == 0 => {
            let r = (op & 7) | (u8::from(rex_b) << 3);
            (r != RSP && r != RAX).then_some((p + 5, Some(r)))
        }
        // mov $imm32 sign-extended, r/m64 (REX.W c7 /0), register form.
        0xc7 if rex & 8 != 0 => {
            let modrm = *rest.get(1)?;
            let r = rm_of(modrm);
            (modrm >> 6 == 3 && (modrm >> 3) & 7 == 0 && r != RSP && r != RAX)
                .then_some((p + 6, Some(r)))
        }
        _ => None,
    }
}

/// What a stack move leaves behind, to check it against the program's
/// stack at the trapped call.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum StackValue {
    /// The word at the displacement equals this register (a 64-bit load
    /// into it, or a store of it).
    Reg(u8),
    /// The low 32 bits of the word are this immediate (`movl $imm`).
    Imm32(u32),
    /// The word is this sign-extended immediate (`movq $imm`).
    Imm64(u64),
}

/// An instruction of five bytes or more that moves a value between a
/// register or an immediate and the stack at `disp8(%rsp)` or `(%rsp)`:
/// `mov disp8(%rsp), %reg` (load), `mov %reg, disp8(%rsp)` (store), `movl`
/// or `movq $imm, ...(%rsp)`. Returns `(length, displacement, value)`. The
/// register is never RAX or RSP; 64-bit register moves only.
fn stack_move(b: &[u8]) -> Option<(usize, i8, StackValue)> {
    let (rex, rest) = split_rex(b);
    // No REX.X or REX.B: the SIB must name RSP as base and no index.
    if rex & 3 != 0 {
        return None;
    }
    let p = usize::from(rex != 0);
    let (op, modrm, sib) = (*rest.first()?, *rest.get(1)?, *rest.get(2)?);
    if modrm & 7 != 4 || sib != 0x24 {
        return None;
    }
    let (disp, after) = match modrm >> 6 {
        0 => (0i8, 3),
        1 => (*rest.get(3)? as i8, 4),
        _ => return None,
    };
    let reg = ((modrm >> 3) & 7) | ((rex & 4) << 1);
    match op {
        0x89 | 0x8b if rex & 8 != 0 && reg != 0 && reg != 4 => {
            Some((p + after, disp, StackValue::Reg(reg)))
        }
        0xc7 if reg & 7 == 0 => {
            let imm = u32::from_le_bytes(rest.get(after..after + 4)?.try_into().ok()?);
            let v = if rex & 8 != 0 {
                StackValue::Imm64(imm as i32 as i64 as u64)
            } else {
                StackValue::Imm32(imm)
            };
            Some((p + after + 4, disp, v))
        }
        _ => None,
    }
    .filter(|&(len, _, _)| len >= 5)
}

/// A 64-bit load `mov disp8(%base), %reg` or `mov (%base), %reg` with no
/// SIB and no RIP-relative address: `(length, destination)`. Never into RAX
/// or RSP. (The trampoline runs it at the program's RSP, so any base will do.)
fn reg_load(b: &[u8]) -> Option<(usize, u8)> {
    let (rex, op, modrm) = (*b.first()?, *b.get(1)?, *b.get(2)?);
    if rex & 0xf8 != 0x48 || rex & 2 != 0 || op != 0x8b {
        return None;
    }
    let reg = ((modrm >> 3) & 7) | ((rex & 4) << 1);
    let len = match (modrm >> 6, modrm & 7) {
        (_, 4) => return None, // SIB
        (0, 5) => return None, // RIP-relative
        (0, _) => 3,
        (1, _) => 4,
        _ => return None,
    };
    (reg != 0 && reg != 4).then_some((len, reg))
}

const CMP_RAX_MINUS_4096: [u8; 6] = [0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff];

/// Recognises the site of a `syscall` that ends at `after` (with number
/// `nr` in RAX), from the bytes `code` that start at `code_base`.
fn match_site(code: &[u8], code_base: usize, after: usize, nr: u64) -> Option<Site> {
    let at = |addr: usize| addr.checked_sub(code_base).filter(|&i| i < code.len());
    let sc = at(after - 2)?;
    if code.get(sc..sc + 2)? != [0x0f, 0x05] {
        return None;
    }
    // mov $NR, %eax [; moves]; syscall
    for gap in 0..=MAX_MOVES {
        let Some(m) = sc.checked_sub(5 + gap) else {
            break;
        };
        if code[m] != 0xb8 || u32::from_le_bytes(code[m + 1..m + 5].try_into().ok()?) as u64 != nr {
            continue;
        }
        // The bytes between must be whole simple moves.
        let mut i = m + 5;
        let mut rip_fixups = Vec::new();
        while i < sc {
            if let Some(n) = rip_lea(&code[i..sc]) {
                rip_fixups.push((i + n - 4 - (m + 5), code_base + i + n));
                i += n;
            } else {
                i += simple_move_len(&code[i..sc])?;
            }
        }
        if i == sc {
            return Some(Site {
                start: code_base + m,
                moves: code[m + 5..sc].to_vec(),
                rip_fixups,
                resume: after,
                fixed_nr: true,
                ..Site::default()
            });
        }
    }
    // glibc read with threads: mov disp8(%rsp), %r32; xor %eax, %eax;
    // syscall. The jump covers the `mov` and the `xor`'s first byte (0x31),
    // which its displacement's high byte repeats: a thread stopped at the
    // `xor` still finds it there. The `mov` reads the stack, so the
    // trampoline runs it first, at the program's RSP.
    if nr == 0 && sc >= 6 && code[sc - 2..sc] == [0x31, 0xc0] {
        let (op, modrm, sib) = (code[sc - 6], code[sc - 5], code[sc - 4]);
        let reg = (modrm >> 3) & 7;
        if op == 0x8b && modrm & 0xc7 == 0x44 && sib == 0x24 && reg != 0 && reg != 4 {
            return Some(Site {
                start: code_base + sc - 6,
                pre: code[sc - 6..sc - 2].to_vec(),
                resume: after,
                fixed_nr: true,
                pun: Some(Pun::keeping(&[0x31])),
                ..Site::default()
            });
        }
    }
    // mov $NR, %rax (REX.W c7 /0, 7 bytes); syscall: the signal restorers of
    // glibc and musl. The jump covers the first 5 bytes of the `mov`.
    if sc >= 7
        && code[sc - 7..sc - 4] == [0x48, 0xc7, 0xc0]
        && u32::from_le_bytes(code[sc - 4..sc].try_into().ok()?) as u64 == nr
    {
        return Some(Site {
            start: code_base + sc - 7,
            resume: after,
            fixed_nr: true,
            ..Site::default()
        });
    }
    // xor %eax, %eax; syscall; cmp $-4096, %rax
    if nr == 0
        && sc >= 2
        && code[sc - 2..sc] == [0x31, 0xc0]
        && code.get(sc + 2..sc + 8)? == CMP_RAX_MINUS_4096
    {
        return Some(Site {
            start: code_base + sc - 2,
            post: CMP_RAX_MINUS_4096.to_vec(),
            resume: after + 6,
            fixed_nr: true,
            ..Site::default()
        });
    }
    None
}

/// The program's register `r` (x86 numbering) in `regs`.
fn reg_value(regs: &SigContext, r: u8) -> u64 {
    match r {
        0 => regs.rax,
        1 => regs.rcx,
        2 => regs.rdx,
        3 => regs.rbx,
        4 => regs.rsp,
        5 => regs.rbp,
        6 => regs.rsi,
        7 => regs.rdi,
        8 => regs.r8,
        9 => regs.r9,
        10 => regs.r10,
        11 => regs.r11,
        12 => regs.r12,
        13 => regs.r13,
        14 => regs.r14,
        _ => regs.r15,
    }
}

/// The registers the `syscall` instruction itself overwrites (RCX with the
/// return address, R11 with RFLAGS): their values at a trapped call say
/// nothing of what the program put there.
const CLOBBERED_BY_SYSCALL: [u8; 2] = [1, 11];

/// Recognises libc's generic system call entries, whose number is not an
/// immediate but RAX as the caller set it: glibc's `syscall(3)` (`mov
/// 0x8(%rsp), %r9; syscall`), musl's internal `__syscall` (`sccp`: register
/// moves, `mov 0x8(%rsp), %r9; mov %rcx, %rdx; syscall`), musl's cancellable
/// `__syscall_cp_asm` (`...; mov %r11, 0x8(%rsp); syscall`) and musl's
/// `syscall(3)` as compilers emit it (`mov %reg, %rax; syscall`). The
/// trampoline enters the runtime with RAX as the program set it.
///
/// In the first three (and gcc's musl `syscall(3)`: `movl $8,(%rsp); mov
/// 0x10(%rdx),%rsi; mov 0x18(%rdx),%rdx; syscall`) the jump covers exactly
/// one instruction of 5 to 9 bytes that moves a register or an immediate to
/// or from the stack, followed only by register moves or register loads up
/// to the `syscall`: the trampoline runs all of them at the program's RSP.
/// No instruction boundary is lost (a thread stopped after the covered instruction runs the original
/// moves and `syscall`, which still trap), so such a site can be patched
/// while threads run. Each shape is checked against the registers at the
/// trapped call (`regs`, before it was served) and the program's stack
/// (`stack(off)`: the word at RSP+off), so bytes that only look like the
/// shape (the tail of a longer instruction) are not taken for it.
fn match_dynamic(
    code: &[u8],
    code_base: usize,
    after: usize,
    regs: &SigContext,
    stack: &dyn Fn(i64) -> Option<u64>,
) -> Option<Site> {
    let at = |addr: usize| addr.checked_sub(code_base).filter(|&i| i < code.len());
    let sc = at(after - 2)?;
    if code.get(sc..sc + 2)? != [0x0f, 0x05] {
        return None;
    }
    // A stack move, then whole register moves or register loads up to the
    // `syscall`; a stack move's register must not be written by those, and
    // the stack must hold what it moved.
    for x in (sc.saturating_sub(5 + MAX_MOVES)..=sc.saturating_sub(5)).rev() {
        let Some((len, disp, value)) = stack_move(&code[x..sc]) else {
            continue;
        };
        let mut i = x + len;
        let mut written = 0u32;
        while i < sc {
            let Some((n, dest)) = simple_move(&code[i..sc])
                .or_else(|| reg_load(&code[i..sc]).map(|(n, d)| (n, Some(d))))
            else {
                break;
            };
            written |= dest.map_or(0, |d| 1 << d);
            i += n;
        }
        if i != sc {
            continue;
        }
        let word = stack(disp as i64);
        // `syscall` overwrites RCX and R11 (with the return address and
        // RFLAGS), so the trapped registers cannot confirm a store of
        // either: the instruction just before the store must then be a
        // stack load the registers do confirm, ending exactly where the
        // store begins (musl's `__syscall_cp_asm`: `mov 0x10(%rsp),%r9;
        // mov %r11,0x8(%rsp); syscall`).
        let confirmed_before = || {
            (x.saturating_sub(9)..=x.saturating_sub(5)).any(|y| {
                matches!(stack_move(&code[y..x]),
                    Some((n, d, StackValue::Reg(r2))) if y + n == x
                        && !CLOBBERED_BY_SYSCALL.contains(&r2)
                        && d != disp
                        && written & (1 << r2) == 0
                        && stack(d as i64) == Some(reg_value(regs, r2)))
            })
        };
        let ok = match value {
            StackValue::Reg(r) if CLOBBERED_BY_SYSCALL.contains(&r) => confirmed_before(),
            StackValue::Reg(r) => written & (1 << r) == 0 && word == Some(reg_value(regs, r)),
            StackValue::Imm32(v) => word.map(|w| w as u32) == Some(v),
            StackValue::Imm64(v) => word == Some(v),
        };
        if !ok {
            continue;
        }
        // Everything from the stack move to the `syscall` runs in the
        // trampoline at the program's RSP (the loads may be RSP-based).
        return Some(Site {
            start: code_base + x,
            pre: code[x..sc].to_vec(),
            resume: after,
            ..Site::default()
        });
    }
    // A number moved from another register.
    let (site, src, wide) = match_register_number(code, code_base, after)?;
    let value = reg_value(regs, src);
    (if wide { value } else { value as u32 as u64 } == regs.rax).then_some(site)
}

/// The shapes whose number is moved into RAX from another register right
/// before the `syscall` (the trapped registers confirm the move: see
/// [`match_dynamic`]): the site, the source register and whether the move
/// is 64-bit.
/// - glibc's `_exit` (and a dozen more of its sites): `mov %r32, %eax;
///   syscall; cmp $-4096, %rax` (a fork child's `exit_group`). The jump
///   covers the `mov`, the `syscall` and the `cmp`'s first byte; the
///   trampoline runs the `mov` and the `cmp`. Not after a REX prefix
///   (0x40-0x4f: the `mov` would then be another instruction).
/// - musl, as compilers emit it: `mov %reg, %rax; syscall` (the jump then
///   covers the `syscall` too).
/// - glibc's thread exit (`__exit_thread` in `start_thread`): `xor
///   %edi,%edi; mov %r32,%eax; syscall; jmp .-8`, a loop whose jump back
///   shows where its first instruction starts. The jump covers the `xor`,
///   the `mov` and the `syscall`'s first byte and is punned (`Site::pun`):
///   its displacement's high bytes repeat the `mov` and that byte, so a
///   thread stopped at either still finds it, and the site is patched
///   while other threads run. The trampoline runs the `xor` and the `mov`.
///   Every thread's end took the trap path before (a SIGSYS per thread).
fn match_register_number(code: &[u8], code_base: usize, after: usize) -> Option<(Site, u8, bool)> {
    let sc = after
        .checked_sub(2)?
        .checked_sub(code_base)
        .filter(|&i| i < code.len())?;
    if code.get(sc..sc + 2)? != [0x0f, 0x05] || sc < 3 {
        return None;
    }
    let (prefix, op, modrm) = (code[sc - 3], code[sc - 2], code[sc - 1]);
    // Both are `mov` (0x89) from a register to EAX/RAX (ModRM mod 3, rm 0).
    if op != 0x89 || modrm >> 6 != 3 || modrm & 7 != 0 {
        return None;
    }
    if code.get(sc + 2..sc + 8) == Some(&CMP_RAX_MINUS_4096[..]) {
        let src = (modrm >> 3) & 7;
        if !(0x40..=0x4f).contains(&prefix) && src != 0 && src != 4 {
            let site = Site {
                start: code_base + sc - 2,
                pre: code[sc - 2..sc].to_vec(),
                post: CMP_RAX_MINUS_4096.to_vec(),
                resume: after + 6,
                ..Site::default()
            };
            return Some((site, src, false));
        }
    }
    if sc >= 4
        && code[sc - 4..sc - 2] == [0x31, 0xff]
        && code.get(sc + 2..sc + 4) == Some(&[0xeb, 0xf8])
    {
        // (The `xor` writes EDI, so the number is never moved from it.)
        let src = (modrm >> 3) & 7;
        if src != 0 && src != 4 && src != 7 {
            let site = Site {
                start: code_base + sc - 4,
                pre: code[sc - 4..sc].to_vec(),
                resume: after,
                pun: Some(Pun::keeping(&[op, modrm, 0x0f])),
                ..Site::default()
            };
            return Some((site, src, false));
        }
    }
    if prefix == 0x48 || prefix == 0x4c {
        let src = ((modrm >> 3) & 7) | if prefix == 0x4c { 8 } else { 0 };
        if src != 0 && src != 4 {
            let site = Site {
                start: code_base + sc - 3,
                pre: code[sc - 3..sc].to_vec(),
                resume: after,
                ..Site::default()
            };
            return Some((site, src, true));
        }
    }
    None
}

/// Answers the trampoline can give from the runtime's caches without
/// entering the runtime: getpid, getppid (per-process state, reached
/// through a pointer in the thread's) and gettid (the thread's own state),
/// at the offsets [`Config::inline`] gives. A zero there means "unknown":
/// the trampoline then takes the normal path. Only for sites without copied
/// moves (they would run twice).
fn inline_answer(nr: u32, site: &Site) -> Option<Vec<u8>> {
    if !site.moves.is_empty() || !site.pre.is_empty() || !site.post.is_empty() {
        return None;
    }
    let off = (*INLINE.get()?)?;
    let mut c = Vec::with_capacity(24);
    match nr {
        39 | 110 => {
            let field = if nr == 39 { off.pid } else { off.ppid };
            // mov %gs:process, %rcx
            c.extend_from_slice(&[0x65, 0x48, 0x8b, 0x0c, 0x25]);
            c.extend_from_slice(&off.process.to_le_bytes());
            // mov field(%rcx), %ecx
            c.extend_from_slice(&[0x8b, 0x89]);
            c.extend_from_slice(&field.to_le_bytes());
        }
        186 => {
            // mov %gs:tid, %ecx
            c.extend_from_slice(&[0x65, 0x8b, 0x0c, 0x25]);
            c.extend_from_slice(&off.tid.to_le_bytes());
        }
        _ => return None,
    }
    Some(c)
}

/// Which runtime entry a trampoline for call `nr` calls (its route, set
/// by [`init`]).
fn entry_for(nr: u32) -> usize {
    use crate::arch::class;
    let c = crate::arch::DIRECT_CLASS
        .get(nr as usize)
        .map_or(class::FAST, |c| c.load(Ordering::Relaxed));
    match c {
        class::DIRECT => ENTRY_DIRECT,
        class::DIRECT_BLOCKING => ENTRY_DIRECT_BLOCKING,
        class::DIRECT_FD => ENTRY_DIRECT_FD,
        class::DIRECT_FD_BLOCKING => ENTRY_DIRECT_FD_BLOCKING,
        _ => ENTRY_FAST,
    }
}

/// Builds the trampoline at `t` for `site`; returns its bytes, the fast
/// path's continuation address and how its addresses map onto the site's.
fn trampoline_bytes(t: usize, nr: u32, site: &Site) -> Option<(Vec<u8>, usize, TrampMap)> {
    let mut c: Vec<u8> = Vec::with_capacity(TRAMP_SIZE);
    let syscall = site.resume - site.post.len() - 2;
    let mut map = TrampMap {
        site: site.start,
        pre: site.pre.len(),
        moves: site.moves.len(),
        nr: site.fixed_nr.then_some(nr),
        syscall,
        covers: site.covers_syscall(syscall),
        post: site.post.len(),
        ..TrampMap::default()
    };
    let load = if site.fixed_nr {
        inline_answer(nr, site)
    } else {
        None
    };
    c.extend_from_slice(&site.pre);
    if let Some(load) = load {
        // load; jrcxz normal; mov %ecx,%eax; jmp resume; normal: ...
        c.extend_from_slice(&load);
        c.extend_from_slice(&[0xe3, 7, 0x89, 0xc8, 0xe9]);
        let here = t + c.len() + 4;
        c.extend_from_slice(&rel32(here, site.resume)?);
        map.inline = c.len() - map.pre;
    }
    c.extend_from_slice(&[0x48, 0x8d, 0x64, 0x24, 0x80]);
    let moves_at = c.len();
    c.extend_from_slice(&site.moves);
    for &(off, orig_end) in &site.rip_fixups {
        let d = moves_at + off;
        let disp = i32::from_le_bytes(c[d..d + 4].try_into().ok()?);
        let target = (orig_end as i64 + disp as i64) as usize;
        c[d..d + 4].copy_from_slice(&rel32(t + d + 4, target)?);
    }
    let entry = if site.fixed_nr {
        c.push(0xb8);
        c.extend_from_slice(&nr.to_le_bytes());
        entry_for(nr)
    } else {
        ENTRY_DYNAMIC // the number is only known at run time
    };
    c.extend_from_slice(&[0xff, 0x15]);
    let r = t + c.len() + 4;
    c.extend_from_slice(&rel32(r, region_of(t) + entry)?);
    c.extend_from_slice(&[0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00]);
    c.extend_from_slice(&[0xff, 0xe1]);
    c.extend_from_slice(&[0x0f, 0x05]);
    c.extend_from_slice(&site.post);
    c.push(0xe9);
    let here = t + c.len() + 4;
    c.extend_from_slice(&rel32(here, site.resume)?);
    while c.len() < (r - t) + RET_TO_SITE_RET {
        c.push(0xcc);
    }
    // Unless the jump covers it, the program continues right after its own
    // `syscall` (RCX as natively); otherwise after the trampoline's copy.
    let cont = if site.covers_syscall(site.resume - site.post.len() - 2) {
        r + 12
    } else {
        site.resume
    };
    c.extend_from_slice(&(cont as u64).to_le_bytes());
    (c.len() <= TRAMP_SIZE).then_some((c, cont, map))
}

/// Is patching on, and is the process `owner` (as [`Config::owner`]
/// identifies it) the one that patches this memory?
fn patches(owner: usize) -> bool {
    enabled() && owner == OWNER.load(Ordering::Relaxed)
}

/// Called after a trapped syscall from `after` (the address after the
/// `syscall` instruction) with number `nr`: patches the site if it has a
/// known shape. Returns where the trapped call must now return to, when the
/// patch covered bytes after its `syscall` (the `read` shape).
/// `owner` identifies the calling process as [`Config::owner`] does.
pub fn maybe_patch(after: usize, nr: u64, regs: &SigContext, owner: usize) -> Option<usize> {
    if !patches(owner) || nr > 0xffff || after < 64 {
        return None;
    }
    let site = find_site(after, nr, regs)?;
    patch_seen(site, after, nr, true)
}

/// [`maybe_patch`] once the site is found: patched if it was seen before
/// (a trap or a hint: [`take_hints`]), otherwise noted as seen, and, for
/// a fork child's trap, left as a hint for its family.
fn patch_seen(site: Site, after: usize, nr: u64, trapped: bool) -> Option<usize> {
    let multi = MULTI.load(Ordering::Relaxed);
    if !may_patch(&site, after, multi) {
        return None;
    }
    let mut st = state();
    let end = site.resume;
    if st.sites.contains(&site.start) || st.no_patch.iter().any(|&(a, e)| site.start < e && a < end)
    {
        return None;
    }
    if trapped {
        if !st.own_hints().remove(&site.start) {
            let n = st.seen.entry(site.start).or_insert(0);
            *n = n.saturating_add(1);
            let n = *n;
            if n == 1 {
                // The first trap here.
                leave_hint(after, nr, !site.fixed_nr);
                // A site other processes trapped at more than once: patched
                // now, with the others known on its page.
                if !multi {
                    if let Some(cont) = known::patch_page(&mut st, after, nr, !site.fixed_nr) {
                        return cont;
                    }
                }
            } else if n == 2 {
                known::record(&mut st, after, nr, !site.fixed_nr);
            }
            if n < PATCH_AT_TRAP {
                return None;
            }
        }
    } else if !st.seen.contains_key(&site.start) && st.own_hints().insert(site.start) {
        return None; // the first hint
    }
    st.seen.remove(&site.start);
    st.hinted.remove(&site.start);
    st.sites.insert(site.start);
    let Some(t) = alloc_trampoline(&mut st, site.start, site.pun) else {
        crate::log!(
            Debug,
            "no trampoline within reach of the syscall site at {:#x}{}: it stays on the trap path",
            site.start,
            if site.pun.is_some() {
                " (punned jump)"
            } else {
                ""
            }
        );
        return None;
    };
    let (tcode, cont, map) = trampoline_bytes(t, nr as u32, &site)?;
    st.mapped.insert(t, map);
    crate::log!(
        Debug,
        "patch site {:#x} nr {} -> trampoline {:#x} (cont {:#x}, {}{})",
        site.start,
        nr,
        t,
        cont,
        if site.pun.is_some() {
            "punned jump, "
        } else {
            ""
        },
        entry_name(&site, nr as u32)
    );
    let mut orig = [0u8; 5];
    crate::mm::user::copy_in(&mut orig, site.start).ok()?;
    install_jump(&site, t, &tcode, multi)?;
    st.orig.insert(site.start, orig);
    (cont != after).then_some(cont)
}

// ---------------------------------------------------------------------------
// Hints from fork children.
//
// A site is patched at its [`PATCH_AT_TRAP`]th trap, so that code that
// runs a few times is not patched for nothing. But code that a fork child runs once right after the
// fork (glibc's `set_robust_list` in `_Fork`, `_exit`, a shell's
// redirections before `execve`) is never run by the parent, and so never
// patched where the next children come from: every child traps there
// again. So a fork child that traps at a site for the first time (or at its
// `exit_group`, which never returns to be patched: [`hint_exit`]) leaves a
// hint on the tree's shared board (`mm::shared::hints`), and a process
// reads the hints before it forks ([`before_fork`]): a site that two
// children trapped at (or one child, and this process too) is patched in
// the parent, and the next children inherit it patched: a site every child
// runs once pays back its patch within a few forks. A hint is an address
// and a number, tagged with the address of the runtime's reservation (the
// same in a process and its fork children, random for each new program).
// The reader patches it only if its own memory there is executable (asked
// of the kernel) and holds a syscall site of that number, as a trap would
// show it, or of a number moved from another register
// ([`match_register_number`], the move the child's registers confirmed).
// Any process of the tree may write the board, and a wrong hint is at worst
// a genuine site patched for nothing. Word 0 counts the hints written; pairs of words
// after it hold the last ones (tag, `after << 17 | dynamic << 16 | nr`) in
// a ring.

/// The board's hint words (None: there is no board).
static HINTS: spin::Once<Option<&'static [core::sync::atomic::AtomicU64]>> = spin::Once::new();
/// How many hints (of any process) this process has read.
static HINTS_READ: AtomicUsize = AtomicUsize::new(0);
/// The pid of the process this runtime started in: a process with another
/// pid is a child made by clone(2) (a fork child or a vfork child) and
/// leaves hints for its family. (A flag set by the fork child would cost it
/// a copied page.)
static START_PID: AtomicI32 = AtomicI32::new(0);

/// Does this process leave hints ([`START_PID`])?
fn hint_writer() -> bool {
    host::getpid() != START_PID.load(Ordering::Relaxed)
}

/// Hints the ring holds.
fn hint_slots(words: &[core::sync::atomic::AtomicU64]) -> usize {
    (words.len() - 1) / 2
}

/// The tag of this process's hints (see the comment above).
fn hint_tag() -> u64 {
    runtime::reservation_base() as u64
}

/// A fork child's first trap at the site that returns to `after` (with
/// number `nr`; `dynamic`: a site whose number is in a register): a hint
/// for its family.
fn leave_hint(after: usize, nr: u64, dynamic: bool) {
    if !hint_writer() {
        return;
    }
    if let Some(Some(words)) = HINTS.get() {
        let i = words[0].fetch_add(1, Ordering::AcqRel) as usize % hint_slots(words);
        words[1 + 2 * i].store(hint_tag(), Ordering::Release);
        let v = (after as u64) << 17 | u64::from(dynamic) << 16 | nr;
        words[2 + 2 * i].store(v, Ordering::Release);
    }
}

/// A trapped `exit_group` (as for [`maybe_patch`]), before it ends the
/// process: the hint of a fork child's exit site, which [`maybe_patch`],
/// called after the call, never sees.
pub fn hint_exit(after: usize, nr: u64, regs: &SigContext, owner: usize) {
    if !patches(owner) || after < 64 || !hint_writer() {
        return;
    }
    if let Some(site) = find_site(after, nr, regs) {
        leave_hint(after, nr, !site.fixed_nr);
    }
}

/// Before this process forks (`owner` as for [`maybe_patch`]; `words`, the
/// board's hint words, made by then): the hints this process's fork
/// children left since the last time, taken.
pub fn before_fork(owner: usize, words: Option<&'static [core::sync::atomic::AtomicU64]>) {
    if !patches(owner) {
        return;
    }
    let Some(words) = *HINTS.call_once(|| words) else {
        return;
    };
    let slots = hint_slots(words);
    let head = words[0].load(Ordering::Acquire) as usize;
    let mut next = HINTS_READ.load(Ordering::Relaxed);
    if head == next {
        return;
    }
    next = next.max(head.saturating_sub(slots));
    let tag = hint_tag();
    let mut hints: Vec<(usize, u64, bool)> = Vec::new();
    while next < head {
        let i = next % slots;
        next += 1;
        if words[1 + 2 * i].load(Ordering::Acquire) != tag {
            continue;
        }
        let v = words[2 + 2 * i].load(Ordering::Acquire);
        let hint = ((v >> 17) as usize, v & 0xffff, v & 1 << 16 != 0);
        if hint.0 >= 64 && !hints.contains(&hint) {
            hints.push(hint);
        }
    }
    HINTS_READ.store(head, Ordering::Relaxed);
    if !hints.is_empty() {
        take_hints(&hints);
    }
}

/// Counts each hint `(after, nr, dynamic)` as a trap at its site, where
/// this process's memory is executable: the kernel says so
/// (`host::procmap_query` on /proc/thread-self/maps, opened where the
/// program never sees it). Without that (an older kernel, no /proc), the
/// hints are dropped.
fn take_hints(hints: &[(usize, u64, bool)]) {
    let executable = crate::host::fds::with_transient_fds(|| {
        let flags = host::O_RDONLY | host::O_CLOEXEC;
        let fd = host::openat(host::AT_FDCWD, c"/proc/thread-self/maps", flags, 0)? as i32;
        let found: Vec<(usize, u64, bool)> = hints
            .iter()
            .copied()
            .filter(|&(after, _, _)| {
                host::procmap_query(fd, after - 2)
                    .is_ok_and(|(_, end, f)| f & host::VMA_EXECUTABLE != 0 && after <= end)
            })
            .collect();
        let _ = host::close(fd);
        Ok(found)
    });
    for (after, nr, dynamic) in executable.unwrap_or_default() {
        // (Reading the code checks that it is the program's: `code_around`.)
        if let Some(site) = find_hinted_site(after, nr, dynamic) {
            let _ = patch_seen(site, after, nr, false);
        }
    }
}

/// The site of the `syscall` that returns to `after`, as a hint gives it:
/// of the fixed number `nr` ([`match_site`]), or (`dynamic`) one whose
/// number is moved from another register ([`match_register_number`]: the
/// child's trapped registers confirmed the move; the trampoline makes the
/// same move, so the number is whatever the register holds).
fn find_hinted_site(after: usize, nr: u64, dynamic: bool) -> Option<Site> {
    let (code, n, base) = code_around(after)?;
    if dynamic {
        match_register_number(&code[..n], base, after).map(|(site, _, _)| site)
    } else {
        match_site(&code[..n], base, after, nr).filter(|s| s.fixed_nr)
    }
}

/// The bytes around the `syscall` that returns to `after`: room for the
/// longest shape before it and the `cmp` after it (those that can be
/// read), their number, and the address of the first.
fn code_around(after: usize) -> Option<([u8; 5 + MAX_MOVES + 2 + 6], usize, usize)> {
    let base = after.checked_sub(2 + 5 + MAX_MOVES)?;
    let mut code = [0u8; 5 + MAX_MOVES + 2 + 6];
    let n = if crate::mm::user::copy_in(&mut code, base).is_ok() {
        code.len()
    } else if crate::mm::user::copy_in(&mut code[..5 + MAX_MOVES + 2], base).is_ok() {
        5 + MAX_MOVES + 2
    } else {
        return None;
    };
    Some((code, n, base))
}

/// The site of the `syscall` that returns to `after` with number `nr`, if
/// it has one of the shapes the patcher knows (`match_site`, or
/// `match_dynamic` with the trapped registers `regs`).
fn find_site(after: usize, nr: u64, regs: &SigContext) -> Option<Site> {
    let (code, n, base) = code_around(after)?;
    if let Some(s) = match_site(&code[..n], base, after, nr) {
        return Some(s);
    }
    let stack = |off: i64| {
        let mut w = [0u8; 8];
        crate::mm::user::copy_in(&mut w, (regs.rsp as i64).wrapping_add(off) as usize)
            .ok()
            .map(|_| u64::from_le_bytes(w))
    };
    match_dynamic(&code[..n], base, after, regs, &stack)
}

/// May `site` be patched now? Never in the vDSO; with several threads
/// (`multi`) only with core-serialising barriers, and never a shape whose
/// jump covers the `syscall` or bytes after it (another thread could be
/// stopped there and resume inside the rewritten bytes), unless the jump
/// is punned: then the bytes of every instruction it covers but the first
/// stay as they were.
fn may_patch(site: &Site, after: usize, multi: bool) -> bool {
    let vdso = VDSO.load(Ordering::Relaxed);
    if vdso != 0 && site.start >= vdso && site.start < vdso + 4 * PAGE_SIZE {
        return false;
    }
    let torn = site.covers_syscall(after - 2) && site.pun.is_none();
    !(multi && (!MEMBARRIER_OK.load(Ordering::Relaxed) || torn))
}

/// For the debug log: which entry `site`'s trampoline calls.
fn entry_name(site: &Site, nr: u32) -> &'static str {
    match (site.fixed_nr, entry_for(nr)) {
        (false, _) => "dynamic entry, number from RAX",
        (_, ENTRY_DIRECT) => "direct entry",
        (_, ENTRY_DIRECT_BLOCKING) => "direct blocking entry",
        (_, ENTRY_DIRECT_FD) => "direct entry for pass-through descriptors",
        (_, ENTRY_DIRECT_FD_BLOCKING) => "direct blocking entry for pass-through descriptors",
        _ => "fast entry",
    }
}

/// Writes trampoline `tcode` at `t`, then the jump to it over the site's
/// first five bytes: at once while the program has one thread; with
/// several (`multi`), an `int3` first, then the rest, then the opcode,
/// with a core-serialising barrier between steps.
fn install_jump(site: &Site, t: usize, tcode: &[u8], multi: bool) -> Option<()> {
    let jmp = jump_bytes(site, t)?;
    let s0 = site.start;
    let ok = if !multi {
        write_code(&[CodeOp::Write(t, tcode), CodeOp::Write(s0, &jmp)]).is_ok()
    } else {
        // Cross-modifying code while other threads may run it.
        write_code(&[
            CodeOp::Write(t, tcode),
            CodeOp::Write(s0, &[0xcc]),
            CodeOp::Sync,
            CodeOp::Write(s0 + 1, &jmp[1..]),
            CodeOp::Sync,
            CodeOp::Write(s0, &jmp[..1]),
            CodeOp::Sync,
        ])
        .is_ok()
    };
    if !ok {
        crate::log!(Debug, "could not patch the syscall site at {:#x}", s0);
        return None;
    }
    Some(())
}

/// The `jmp rel32` from `site` to trampoline `t`, if it reaches and
/// (for a punned jump) repeats the bytes it must (`alloc_trampoline`
/// chose `t` so).
fn jump_bytes(site: &Site, t: usize) -> Option<[u8; 5]> {
    let rel = rel32(site.start + 5, t)?;
    if site.pun.is_some_and(|p| !p.matches(rel)) {
        return None;
    }
    Some([0xe9, rel[0], rel[1], rel[2], rel[3]])
}

/// A SIGTRAP at `rip` from an `int3` the patcher put at `rip - 1`: the
/// faulting thread retries the instruction there.
pub fn is_patch_trap(rip: usize) -> bool {
    MULTI.load(Ordering::Relaxed) && state().sites.contains(&(rip - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[repr(align(4096))]
    struct Pages([u8; 3 * PAGE_SIZE]);

    /// A batch's writes to one page of program code become one write (the
    /// bytes between as they are); a write across a page boundary and
    /// writes to another page stay apart; a batch with a barrier, or of
    /// one write, is left as it is.
    #[test]
    fn writes_are_coalesced_by_page() {
        let mut pages = Pages([0; 3 * PAGE_SIZE]);
        for (i, b) in pages.0.iter_mut().enumerate() {
            *b = i as u8;
        }
        let base = pages.0.as_ptr() as usize;
        let (j1, j2, j3, j4) = ([0xe9u8; 5], [0xe8u8; 5], [0xaau8; 5], [0xbbu8; 5]);
        let ops = [
            CodeOp::Write(base + 100, &j2),
            CodeOp::Write(base + 10, &j1),
            CodeOp::Write(base + PAGE_SIZE - 2, &j3),
            CodeOp::Write(base + PAGE_SIZE + 50, &j4),
            CodeOp::Write(base + 2 * PAGE_SIZE + 8, &[]),
        ];
        let w = coalesced(&ops).unwrap();
        assert_eq!(
            w.len(),
            3,
            "{:?}",
            w.iter().map(|x| x.0 - base).collect::<Vec<_>>()
        );
        assert_eq!(w[0].0, base + 10);
        assert_eq!(w[0].1.len(), 95);
        assert_eq!(w[0].1[..5], j1);
        assert_eq!(w[0].1[90..], j2);
        // The bytes between, read back.
        assert_eq!(w[0].1[5..90], pages.0[15..100]);
        assert_eq!(w[1], (base + PAGE_SIZE - 2, j3.to_vec()));
        assert_eq!(w[2], (base + PAGE_SIZE + 50, j4.to_vec()));
        assert!(coalesced(&[
            CodeOp::Write(base, &j1),
            CodeOp::Sync,
            CodeOp::Write(base + 8, &j2)
        ])
        .is_none());
        assert!(coalesced(&[CodeOp::Write(base, &j1)]).is_none());
    }

    #[test]
    fn seven_byte_form() {
        // getppid: mov $0x6e,%eax; syscall
        let code = [0x90, 0xb8, 0x6e, 0, 0, 0, 0x0f, 0x05, 0xc3];
        let s = match_site(&code, 0x1000, 0x1008, 0x6e).unwrap();
        assert_eq!(
            s,
            Site {
                start: 0x1001,
                resume: 0x1008,
                fixed_nr: true,
                ..Site::default()
            }
        );
        assert!(
            match_site(&code, 0x1000, 0x1008, 0x6f).is_none(),
            "number must match"
        );
    }

    #[test]
    fn threaded_read_form_puns() {
        // glibc read with threads: mov 0x8(%rsp),%edi; xor %eax,%eax; syscall; cmp
        let code = [
            0x8b, 0x7c, 0x24, 0x08, 0x31, 0xc0, 0x0f, 0x05, 0x48, 0x3d, 0, 0xf0, 0xff, 0xff,
        ];
        let s = match_site(&code, 0x6000, 0x6008, 0).unwrap();
        assert_eq!(s.start, 0x6000);
        assert_eq!(s.pre, vec![0x8b, 0x7c, 0x24, 0x08]);
        assert_eq!(s.pun, Some(Pun::keeping(&[0x31])));
        assert!(s.post.is_empty() && !s.covers_syscall(0x6006));
        // A displacement ending in 0x31 puts the trampoline 0x31xxxxxx above.
        let t = 0x6005 + 0x3100_0000 + 0x1234;
        assert_eq!(rel32(0x6005, t).unwrap()[3], 0x31);
        // Not for another register layout (mov %rsp-relative into EAX).
        let code = [0x8b, 0x44, 0x24, 0x08, 0x31, 0xc0, 0x0f, 0x05];
        assert!(match_site(&code, 0x6000, 0x6008, 0).is_none());
    }

    #[test]
    fn rex_w_form() {
        // glibc __restore_rt: mov $0xf,%rax; syscall
        let code = [0x90, 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05];
        let s = match_site(&code, 0x1000, 0x100a, 15).unwrap();
        assert_eq!((s.start, s.resume, s.fixed_nr), (0x1001, 0x100a, true));
        assert!(s.moves.is_empty() && !s.covers_syscall(0x1008));
        assert!(match_site(&code, 0x1000, 0x100a, 14).is_none());
    }

    #[test]
    fn lea_between() {
        // glibc start_thread: mov $0xe,%eax; lea 0x8f0(%rbx),%rsi; syscall
        let code = [
            0xb8, 0x0e, 0, 0, 0, 0x48, 0x8d, 0xb3, 0xf0, 0x08, 0, 0, 0x0f, 0x05,
        ];
        let s = match_site(&code, 0x3000, 0x3000 + 14, 14).unwrap();
        assert_eq!(s.moves, code[5..12].to_vec());
        assert!(s.rip_fixups.is_empty());
        // lea 8(%rax),%rsi is refused (RAX is the number's), as is a SIB form.
        let code = [0xb8, 0x0e, 0, 0, 0, 0x48, 0x8d, 0x70, 0x08, 0x0f, 0x05];
        assert!(match_site(&code, 0x3000, 0x3000 + 11, 14).is_none());
        let code = [
            0xb8, 0x0e, 0, 0, 0, 0x48, 0x8d, 0x74, 0x24, 0x08, 0x0f, 0x05,
        ];
        assert!(match_site(&code, 0x3000, 0x3000 + 12, 14).is_none());
    }

    #[test]
    fn rip_relative_lea_is_relocated() {
        // glibc's thread exit: mov $0xe,%eax; lea 0x1178dd(%rip),%rsi; syscall
        let code = [
            0xb8, 0x0e, 0, 0, 0, 0x48, 0x8d, 0x35, 0xdd, 0x78, 0x11, 0, 0x0f, 0x05,
        ];
        let base = 0x40_0000;
        let s = match_site(&code, base, base + 14, 14).unwrap();
        // The displacement is 3 bytes into the moves; its origin is the
        // address after the lea.
        assert_eq!(s.rip_fixups, vec![(3, base + 12)]);
        let target = base + 12 + 0x1178dd;
        let t = base + 0x10_0000;
        let (bytes, _, _) = trampoline_bytes(t, 14, &s).unwrap();
        // The copy (after the 5-byte `lea -128(%rsp)`) reaches the same address.
        let at = bytes
            .windows(3)
            .position(|w| w == [0x48, 0x8d, 0x35])
            .unwrap();
        let disp = i32::from_le_bytes(bytes[at + 3..at + 7].try_into().unwrap());
        assert_eq!((t + at + 7) as i64 + disp as i64, target as i64);
    }

    #[test]
    fn moves_between() {
        // glibc __open_nocancel: mov $0x101,%eax; mov %rdi,%rsi; mov $-100,%edi; syscall
        let code = [
            0xb8, 0x01, 0x01, 0, 0, 0x48, 0x89, 0xfe, 0xbf, 0x9c, 0xff, 0xff, 0xff, 0x0f, 0x05,
        ];
        let s = match_site(&code, 0x2000, 0x2000 + 15, 0x101).unwrap();
        assert_eq!(s.start, 0x2000);
        assert_eq!(
            s.moves,
            vec![0x48, 0x89, 0xfe, 0xbf, 0x9c, 0xff, 0xff, 0xff]
        );
        // A memory operand between them is not copied: no match.
        let code = [0xb8, 0x01, 0x01, 0, 0, 0x48, 0x8b, 0x37, 0x0f, 0x05];
        assert!(match_site(&code, 0x2000, 0x2000 + 10, 0x101).is_none());
        // Writing RSP is refused.
        let code = [0xb8, 0x01, 0x01, 0, 0, 0x48, 0x89, 0xfc, 0x0f, 0x05];
        assert!(match_site(&code, 0x2000, 0x2000 + 10, 0x101).is_none());
    }

    #[test]
    fn xor_read_form() {
        let code = [
            0x31, 0xc0, 0x0f, 0x05, 0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff, 0x77,
        ];
        let s = match_site(&code, 0x3000, 0x3004, 0).unwrap();
        assert_eq!(
            s,
            Site {
                start: 0x3000,
                post: CMP_RAX_MINUS_4096.to_vec(),
                resume: 0x300a,
                fixed_nr: true,
                ..Site::default()
            }
        );
        // Without the cmp the jump would cover live code: no match.
        let code = [0x31, 0xc0, 0x0f, 0x05, 0xc3, 0x90, 0x90, 0x90, 0x90, 0x90];
        assert!(match_site(&code, 0x3000, 0x3004, 0).is_none());
    }

    #[test]
    fn glibc_exit_form() {
        // glibc's _exit: mov $0xe7,%esi; ... mov %esi,%eax; syscall; cmp
        // $-4096,%rax; jbe ...
        let code = [
            0xbe, 0xe7, 0, 0, 0, 0x89, 0xf0, 0x0f, 0x05, 0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff, 0x76,
            0xe7,
        ];
        let regs = SigContext {
            rax: 231,
            rsi: 231,
            ..SigContext::default()
        };
        let none = |_: i64| None;
        let s = match_dynamic(&code, 0x7000, 0x7009, &regs, &none).unwrap();
        assert_eq!(
            s,
            Site {
                start: 0x7005,
                pre: vec![0x89, 0xf0],
                post: CMP_RAX_MINUS_4096.to_vec(),
                resume: 0x700f,
                ..Site::default()
            }
        );
        assert!(s.covers_syscall(0x7007));
        // A hint has no registers: the same site from the bytes alone.
        assert_eq!(match_register_number(&code, 0x7000, 0x7009).unwrap().0, s);
        // ESI must hold the number.
        let other = SigContext { rsi: 60, ..regs };
        assert!(match_dynamic(&code, 0x7000, 0x7009, &other, &none).is_none());
        // After a REX prefix the bytes are another instruction (mov
        // %esi,%r8d).
        let mut rex = code;
        rex[4] = 0x41;
        assert!(match_register_number(&rex, 0x7000, 0x7009).is_none());
        // Without the `cmp` after it: not the shape.
        let mut no_cmp = code;
        no_cmp[9] = 0xc3;
        assert!(match_register_number(&no_cmp, 0x7000, 0x7009).is_none());
    }

    #[test]
    fn glibc_thread_exit_form() {
        // start_thread's end: mov $0x3c,%edx; ...; xor %edi,%edi; mov
        // %edx,%eax; syscall; jmp .-8
        let code = [
            0xba, 0x3c, 0, 0, 0, 0x31, 0xff, 0x89, 0xd0, 0x0f, 0x05, 0xeb, 0xf8, 0x48,
        ];
        let regs = SigContext {
            rax: 60,
            rdx: 60,
            ..SigContext::default()
        };
        let none = |_: i64| None;
        let s = match_dynamic(&code, 0x8000, 0x800b, &regs, &none).unwrap();
        let pun = Pun::keeping(&[0x89, 0xd0, 0x0f]);
        assert_eq!(
            s,
            Site {
                start: 0x8005,
                pre: vec![0x31, 0xff, 0x89, 0xd0],
                resume: 0x800b,
                pun: Some(pun),
                ..Site::default()
            }
        );
        // The jump covers the `syscall`, but a punned one may be written
        // while threads run.
        assert!(s.covers_syscall(0x8009));
        assert_eq!(match_register_number(&code, 0x8000, 0x800b).unwrap().0, s);
        // EDX must hold the number.
        let other = SigContext { rdx: 1, ..regs };
        assert!(match_dynamic(&code, 0x8000, 0x800b, &other, &none).is_none());
        // Without the jump back to the `xor` nothing shows that an
        // instruction starts there: not the shape.
        let mut no_loop = code;
        no_loop[12] = 0xf9;
        assert!(match_register_number(&no_loop, 0x8000, 0x800b).is_none());
        // The number moved from EDI, which the `xor` cleared: not the shape.
        let mut edi = code;
        edi[8] = 0xf8;
        assert!(match_register_number(&edi, 0x8000, 0x800b).is_none());
        // The jump's displacement keeps `89 d0 0f`: a thread stopped at the
        // `mov` or the `syscall` finds them; its window is 256 bytes about
        // 253 MiB above the site.
        assert!(pun.matches([0x42, 0x89, 0xd0, 0x0f]));
        assert!(!pun.matches([0x42, 0x89, 0xd1, 0x0f]));
        assert_eq!(pun.window(0x10_0000), (0x10_0005 + 0x0fd0_8900, 256));
        let read = Pun::keeping(&[0x31]);
        assert!(read.matches([1, 2, 3, 0x31]) && !read.matches([1, 2, 3, 0x32]));
        assert_eq!(read.window(0x10_0000), (0x10_0005 + (0x31 << 24), 1 << 24));
    }

    #[test]
    fn dynamic_number_forms() {
        let regs = SigContext {
            rax: 39,
            rbp: 39,
            r9: 0x55,
            ..SigContext::default()
        };
        // glibc syscall(3): mov %r9,%r8; mov 0x8(%rsp),%r9; syscall; cmp
        let code = [
            0x4d, 0x89, 0xc8, 0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f, 0x05, 0x48, 0x3d,
        ];
        let word = |w: u64| move |off: i64| (off == 8).then_some(w);
        let s = match_dynamic(&code, 0x4000, 0x400a, &regs, &word(0x55)).unwrap();
        assert_eq!(
            s,
            Site {
                start: 0x4003,
                pre: vec![0x4c, 0x8b, 0x4c, 0x24, 0x08],
                resume: 0x400a,
                ..Site::default()
            }
        );
        assert!(!s.covers_syscall(0x4008));
        // The stack word must be what R9 was loaded with.
        assert!(match_dynamic(&code, 0x4000, 0x400a, &regs, &word(0x56)).is_none());
        // musl: movl $8,8(%rsp); mov %rbp,%rax; syscall
        let code = [
            0xc7, 0x44, 0x24, 0x08, 0x08, 0, 0, 0, 0x48, 0x89, 0xe8, 0x0f, 0x05,
        ];
        let none = |_: i64| None;
        let s = match_dynamic(&code, 0x5000, 0x500d, &regs, &none).unwrap();
        assert_eq!(
            (s.start, s.pre.as_slice()),
            (0x5008, &[0x48, 0x89, 0xe8][..])
        );
        assert!(s.covers_syscall(0x500b));
        // RBP must hold the number the call was made with.
        let other = SigContext { rbp: 40, ..regs };
        assert!(match_dynamic(&code, 0x5000, 0x500d, &other, &none).is_none());
        // musl's sccp: mov %rdi,%rax; mov %r8,%r10; mov %rsi,%rdi; mov
        // %r9,%r8; mov %rdx,%rsi; mov 0x8(%rsp),%r9; mov %rcx,%rdx; syscall;
        // ret. The jump covers the load; the last move is copied.
        let code = [
            0x48, 0x89, 0xf8, 0x4d, 0x89, 0xc2, 0x48, 0x89, 0xf7, 0x4d, 0x89, 0xc8, 0x48, 0x89,
            0xd6, 0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x48, 0x89, 0xca, 0x0f, 0x05, 0xc3,
        ];
        let s = match_dynamic(&code, 0x6000, 0x6000 + 25, &regs, &word(0x55)).unwrap();
        assert_eq!(
            s,
            Site {
                start: 0x6000 + 15,
                pre: vec![0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x48, 0x89, 0xca],
                resume: 0x6000 + 25,
                ..Site::default()
            }
        );
        assert!(!s.covers_syscall(0x6000 + 23));
        assert!(match_dynamic(&code, 0x6000, 0x6000 + 25, &regs, &word(0x56)).is_none());
        // A later move writing the loaded register: not the shape.
        let mut bad = code;
        bad[20..23].copy_from_slice(&[0x49, 0x89, 0xc9]); // mov %rcx,%r9
        assert!(match_dynamic(&bad, 0x6000, 0x6000 + 25, &regs, &word(0x55)).is_none());
        // musl's __syscall_cp_asm: ...; mov 0x10(%rsp),%r9; mov %r11,0x8(%rsp);
        // syscall; ret. The jump covers the store. R11 at the trapped call
        // is RFLAGS (`syscall` put it there), so the load before the store
        // is what confirms the shape: the word at 0x10 is R9's value.
        let code = [
            0x4c, 0x8b, 0x4c, 0x24, 0x10, 0x4c, 0x89, 0x5c, 0x24, 0x08, 0x0f, 0x05, 0xc3,
        ];
        let cp = SigContext { r11: 0x246, ..regs };
        let words = |at10: u64| {
            move |off: i64| match off {
                8 => Some(0x7fff_0000),
                0x10 => Some(at10),
                _ => None,
            }
        };
        let s = match_dynamic(&code, 0x7000, 0x700c, &cp, &words(0x55)).unwrap();
        assert_eq!(
            (s.start, s.pre.as_slice(), s.moves.len()),
            (0x7005, &code[5..10], 0)
        );
        assert!(match_dynamic(&code, 0x7000, 0x700c, &cp, &words(0x56)).is_none());
        // Without a confirmed load before it, a store of R11 is not taken.
        let mut lone = code;
        lone[..5].copy_from_slice(&[0x90; 5]);
        assert!(match_dynamic(&lone, 0x7000, 0x700c, &cp, &words(0x55)).is_none());
        // musl's syscall(3) from gcc: movl $8,(%rsp); mov 0x10(%rdx),%rsi;
        // mov 0x18(%rdx),%rdx; syscall. The jump covers the store; the
        // loads run in the trampoline.
        let code = [
            0xc7, 0x04, 0x24, 0x08, 0, 0, 0, 0x48, 0x8b, 0x72, 0x10, 0x48, 0x8b, 0x52, 0x18, 0x0f,
            0x05,
        ];
        let at0 = |w: u64| move |off: i64| (off == 0).then_some(w);
        let s = match_dynamic(&code, 0x8000, 0x8011, &regs, &at0(0x1234_0000_0008)).unwrap();
        assert_eq!((s.start, s.pre.as_slice()), (0x8000, &code[..15]));
        assert!(match_dynamic(&code, 0x8000, 0x8011, &regs, &at0(9)).is_none());
        // Trampoline: pre, lea, call (no mov $NR), and the continuation in
        // the trampoline (the jump covers the `syscall`).
        let t = 0x5000_0000;
        runtime::set_code_region_for_test(t - 64);
        let s = Site {
            start: t + 0x1000,
            pre: vec![0x48, 0x89, 0xe8],
            resume: t + 0x1005,
            ..Site::default()
        };
        let (c, cont, _) = trampoline_bytes(t, 39, &s).unwrap();
        assert_eq!(&c[..8], &[0x48, 0x89, 0xe8, 0x48, 0x8d, 0x64, 0x24, 0x80]);
        assert_eq!(&c[8..10], &[0xff, 0x15]);
        let r = t + 14;
        assert_eq!(cont, r + 12);
        assert_eq!(&c[r - t + 10..r - t + 12], &[0x0f, 0x05]);
    }

    #[test]
    fn stack_move_decoder() {
        use StackValue::*;
        let sm = |b: &[u8]| stack_move(b);
        assert_eq!(sm(&[0x4c, 0x8b, 0x4c, 0x24, 0x08]), Some((5, 8, Reg(9))));
        assert_eq!(sm(&[0x4c, 0x89, 0x5c, 0x24, 0x08]), Some((5, 8, Reg(11))));
        assert_eq!(sm(&[0x48, 0x8b, 0x7c, 0x24, 0xf8]), Some((5, -8, Reg(7))));
        assert_eq!(sm(&[0x48, 0x8b, 0x44, 0x24, 0x08]), None); // RAX
        assert_eq!(sm(&[0x48, 0x8b, 0x64, 0x24, 0x08]), None); // RSP
        assert_eq!(sm(&[0x4c, 0x8b, 0x4c, 0x25, 0x08]), None); // not RSP-based
        assert_eq!(sm(&[0x8b, 0x7c, 0x24, 0x08, 0x90]), None); // 32-bit load
        assert_eq!(sm(&[0x49, 0x8b, 0x4c, 0x24, 0x08]), None); // REX.B: R12 base
        assert_eq!(sm(&[0x48, 0x8b, 0x3c, 0x24]), None); // 4 bytes: too short
                                                         // movl $8,(%rsp) / movl $8,0x10(%rsp) / movq $-1,0x8(%rsp)
        assert_eq!(sm(&[0xc7, 0x04, 0x24, 8, 0, 0, 0]), Some((7, 0, Imm32(8))));
        assert_eq!(
            sm(&[0xc7, 0x44, 0x24, 0x10, 8, 0, 0, 0]),
            Some((8, 16, Imm32(8)))
        );
        assert_eq!(
            sm(&[0x48, 0xc7, 0x44, 0x24, 0x08, 0xff, 0xff, 0xff, 0xff]),
            Some((9, 8, Imm64(u64::MAX)))
        );
        assert_eq!(sm(&[0xc7, 0x04, 0x24, 8, 0, 0]), None); // truncated
    }

    #[test]
    fn trampoline_map() {
        let ctx = |rip: usize, rsp: u64, rcx: u64, rax: u64| SigContext {
            rip: rip as u64,
            rsp,
            rcx,
            rax,
            ..SigContext::default()
        };
        // Dynamic number, pre of 8 bytes at site 0x1000 (syscall at 0x1008):
        // t: pre, t+8: lea, t+13: call, R = t+19: lea, R+8: jmp *%rcx,
        // R+10: syscall, R+12: jmp back.
        let m = TrampMap {
            site: 0x1000,
            pre: 8,
            syscall: 0x1008,
            ..TrampMap::default()
        };
        let t = 0x9000;
        let at = |rip: usize, rsp: u64, rcx: u64| m.map(t, &ctx(rip, rsp, rcx, 17));
        assert_eq!(at(t, 0x500, 0), Some((0x1000, 0x500, 17)));
        assert_eq!(at(t + 5, 0x500, 0), Some((0x1005, 0x500, 17)));
        assert_eq!(at(t + 8, 0x500, 0), Some((0x1008, 0x500, 17))); // at the lea
        assert_eq!(at(t + 13, 0x480, 0), Some((0x1008, 0x500, 17))); // at the call
        let r = t + 19;
        assert_eq!(at(r, 0x480, 0x100a), Some((0x100a, 0x500, 17))); // returned
        assert_eq!(at(r + 8, 0x500, 0x100a), Some((0x100a, 0x500, 17)));
        let slow = (r + RET_TO_SLOW) as u64;
        assert_eq!(at(r, 0x480, slow), Some((0x1008, 0x500, 17))); // to the trap path
        assert_eq!(at(r + 8, 0x500, slow), Some((0x1008, 0x500, 17)));
        assert_eq!(at(r + 10, 0x500, 0), Some((0x1008, 0x500, 17)));
        assert_eq!(at(r + 12, 0x500, 0), Some((0x100a, 0x500, 17)));
        assert_eq!(at(r, 0x480, 0x7777), None);
        assert_eq!(at(t - 1, 0x500, 0), None);
        assert_eq!(m.map(t, &ctx(r + 8, 0x500, slow, DEFERRED_NR)), None);
        // Fixed number: mov $39,%eax (site 0x2000); 3 bytes of moves; syscall
        // at 0x2008. t: lea, t+5: moves, t+8: mov $39, t+13: call, R = t+19.
        let m = TrampMap {
            site: 0x2000,
            moves: 3,
            nr: Some(39),
            syscall: 0x2008,
            ..TrampMap::default()
        };
        let at = |rip: usize, rsp: u64| m.map(t, &ctx(rip, rsp, 0, 5));
        assert_eq!(at(t, 0x500), Some((0x2000, 0x500, 5))); // nothing ran yet
        assert_eq!(at(t + 5, 0x480), Some((0x2005, 0x500, 39))); // a move: after mov $NR
        assert_eq!(at(t + 8, 0x480), Some((0x2008, 0x500, 39))); // the mov $NR
        assert_eq!(at(t + 13, 0x480), Some((0x2008, 0x500, 39))); // the call
                                                                  // glibc's threaded read: mov 0x10(%rsp),%edi (pre); xor %eax,%eax;
                                                                  // syscall at 0x3006. t: pre, t+4: lea, t+9: mov $0, t+14: call.
        let m = TrampMap {
            site: 0x3000,
            pre: 4,
            nr: Some(0),
            syscall: 0x3006,
            ..TrampMap::default()
        };
        let at = |rip: usize, rsp: u64| m.map(t, &ctx(rip, rsp, 0, 5));
        assert_eq!(at(t + 4, 0x500), Some((0x3004, 0x500, 5))); // at the xor
        assert_eq!(at(t + 9, 0x480), Some((0x3006, 0x500, 0)));
        // Inline answer: load (8 bytes), jrcxz, mov %ecx,%eax, jmp resume,
        // then lea at t+17.
        let m = TrampMap {
            site: 0x4000,
            inline: 17,
            nr: Some(39),
            syscall: 0x4005,
            ..TrampMap::default()
        };
        let at = |rip: usize| m.map(t, &ctx(rip, 0x500, 0, 1234));
        assert_eq!(at(t), Some((0x4000, 0x500, 1234)));
        assert_eq!(at(t + 10), Some((0x4000, 0x500, 1234))); // mov %ecx,%eax
        assert_eq!(at(t + 12), Some((0x4007, 0x500, 1234))); // jmp resume
        assert_eq!(at(t + 17), Some((0x4000, 0x500, 1234))); // lea
                                                             // glibc's read: xor %eax,%eax (site 0x5000); syscall; cmp covered.
                                                             // t: lea, t+5: mov $0, t+10: call, R = t+16, cont = R+12 (the cmp).
        let m = TrampMap {
            site: 0x5000,
            nr: Some(0),
            syscall: 0x5002,
            covers: true,
            post: 6,
            ..TrampMap::default()
        };
        assert_eq!(m.resume(), 0x500a);
        let r = t + 16;
        let at = |rip: usize, rsp: u64, rcx: u64| m.map(t, &ctx(rip, rsp, rcx, 64));
        assert_eq!(at(t + 5, 0x480, 0), Some((0x5000, 0x500, 64)));
        assert_eq!(at(r, 0x480, (r + 12) as u64), Some((0x500a, 0x500, 64)));
        assert_eq!(at(r + 8, 0x500, (r + 12) as u64), Some((0x500a, 0x500, 64)));
        assert_eq!(at(r + 12, 0x500, 0), Some((0x500a, 0x500, 64)));
        assert_eq!(at(r + 18, 0x500, 0), Some((0x500a, 0x500, 64)));
        assert_eq!(at(r + 10, 0x500, 0), Some((0x5000, 0x500, 0)));
    }

    #[test]
    fn cmp_flags_as_the_cpu() {
        // cmp $-4096,%rax: a result (no flags but PF?), an error, -4096 itself.
        let f = cmp_flags(0x202, 64, -4096i64 as u64);
        assert_eq!(f & 0x1, 1); // 64 < 0xffff...f000: CF
        assert_eq!(f & 0x40, 0);
        let f = cmp_flags(0x202, -4096i64 as u64, -4096i64 as u64);
        assert_eq!(f & 0x41, 0x40); // ZF, no CF
        let f = cmp_flags(0x202, -1i64 as u64, -4096i64 as u64);
        assert_eq!(f & 0x1, 0); // above: no CF (glibc takes the error path)
        assert_eq!(f & 0x200, 0x200); // IF kept
    }

    #[test]
    fn register_loads() {
        assert_eq!(reg_load(&[0x48, 0x8b, 0x52, 0x18]), Some((4, 2))); // mov 0x18(%rdx),%rdx
        assert_eq!(reg_load(&[0x48, 0x8b, 0x07]), None); // into RAX
        assert_eq!(reg_load(&[0x48, 0x8b, 0x3a]), Some((3, 7))); // mov (%rdx),%rdi
        assert_eq!(reg_load(&[0x48, 0x8b, 0x3d, 0, 0, 0, 0]), None); // RIP-relative
        assert_eq!(reg_load(&[0x48, 0x8b, 0x7c, 0x24, 0x08]), None); // SIB
        assert_eq!(reg_load(&[0x8b, 0x7a, 0x08]), None); // no REX.W
        assert_eq!(reg_load(&[0x48, 0x8b, 0x62, 0x08]), None); // into RSP
        assert_eq!(reg_load(&[0x48, 0x8b, 0x92, 0, 1, 0, 0]), None); // disp32: not taken
    }

    #[test]
    fn move_decoder() {
        assert_eq!(simple_move_len(&[0x48, 0x89, 0xfe]), Some(3)); // mov %rdi,%rsi
        assert_eq!(simple_move_len(&[0x89, 0xfe]), Some(2)); // mov %edi,%esi
        assert_eq!(simple_move_len(&[0x41, 0xba, 1, 0, 0, 0]), Some(6)); // mov $1,%r10d
        assert_eq!(simple_move_len(&[0x49, 0xc7, 0xc2, 1, 0, 0, 0]), Some(7)); // mov $1,%r10
        assert_eq!(simple_move_len(&[0x45, 0x31, 0xd2]), Some(3)); // xor %r10d,%r10d
        assert_eq!(simple_move_len(&[0xbc, 0, 0, 0, 0]), None); // mov $0,%esp
        assert_eq!(simple_move_len(&[0x48, 0x8b, 0x07]), None); // memory operand
        assert_eq!(simple_move_len(&[0x48, 0x89, 0x05, 0, 0, 0, 0]), None); // rip-relative
                                                                            // glibc sched_getaffinity: cmp %rsi,%r8; cmovbe %r8,%rsi
        assert_eq!(simple_move_len(&[0x49, 0x39, 0xf0]), Some(3));
        assert_eq!(simple_move_len(&[0x49, 0x0f, 0x46, 0xf0]), Some(4));
        assert_eq!(simple_move_len(&[0x48, 0x85, 0xff]), Some(3)); // test %rdi,%rdi
        assert_eq!(simple_move_len(&[0x48, 0x0f, 0x44, 0xe7]), None); // cmove %rdi,%rsp
        assert_eq!(simple_move_len(&[0x0f, 0x44, 0x07]), None); // cmove (%rdi),%eax
                                                                // Anything reading or writing RAX: the trampoline sets it after the copies.
        assert_eq!(simple_move_len(&[0x89, 0xc7]), None); // mov %eax,%edi
        assert_eq!(simple_move_len(&[0x48, 0x89, 0xf8]), None); // mov %rdi,%rax
        assert_eq!(simple_move_len(&[0x48, 0x39, 0xc7]), None); // cmp %rax,%rdi
        assert_eq!(simple_move_len(&[0xb8, 1, 0, 0, 0]), None); // mov $1,%eax
        assert_eq!(simple_move_len(&[0x41, 0xb8, 1, 0, 0, 0]), Some(6)); // mov $1,%r8d
        assert_eq!(simple_move_len(&[0x49, 0x89, 0xc0]), None); // mov %rax,%r8
        assert_eq!(simple_move_len(&[0x4c, 0x89, 0xc7]), Some(3)); // mov %r8,%rdi
                                                                   // Operations with an immediate, register form.
        assert_eq!(simple_move_len(&[0x40, 0x80, 0xf6, 0x80]), Some(4)); // xor $0x80,%sil
        assert_eq!(simple_move(&[0x40, 0x80, 0xf6, 0x81]), Some((4, Some(6))));
        assert_eq!(simple_move_len(&[0x83, 0xe6, 0x7f]), Some(3)); // and $0x7f,%esi
        assert_eq!(simple_move(&[0x48, 0x83, 0xfe, 0x01]), Some((4, None))); // cmp $1,%rsi
        assert_eq!(simple_move_len(&[0x41, 0x81, 0xca, 0, 1, 0, 0]), Some(7)); // or $0x100,%r10d
        assert_eq!(simple_move_len(&[0x80, 0xf4, 0x80]), None); // xor $0x80,%ah (RAX)
        assert_eq!(simple_move(&[0x80, 0xf6, 0x80]), Some((3, Some(2)))); // xor $0x80,%dh
        assert_eq!(simple_move_len(&[0x40, 0x80, 0xf4, 0x80]), None); // xor $0x80,%spl
        assert_eq!(simple_move_len(&[0x48, 0x83, 0xc4, 0x08]), None); // add $8,%rsp
        assert_eq!(simple_move_len(&[0x83, 0xf0, 0x01]), None); // xor $1,%eax
        assert_eq!(simple_move_len(&[0x80, 0x36, 0x80]), None); // xorb $0x80,(%rsi)
        assert_eq!(simple_move_len(&[0x81, 0xf6, 0, 0]), None); // cut short
    }

    #[test]
    fn glibc_futex_form() {
        // __lll_lock_wait: mov $0xca,%eax; xor $0x80,%sil; syscall; cmp
        let code = [
            0xb8, 0xca, 0, 0, 0, 0x40, 0x80, 0xf6, 0x80, 0x0f, 0x05, 0x48, 0x3d, 0x00, 0xf0,
        ];
        let s = match_site(&code, 0x9000, 0x900b, 202).unwrap();
        assert_eq!(
            s,
            Site {
                start: 0x9000,
                moves: vec![0x40, 0x80, 0xf6, 0x80],
                resume: 0x900b,
                fixed_nr: true,
                ..Site::default()
            }
        );
        assert!(!s.covers_syscall(0x9009));
    }
}
