//! ptrace(2), emulated by the library OS between the picoprocesses of one
//! tree (docs/ARCHITECTURE.md, "ptrace"). A host trace of a picoprocess
//! would stop the runtime and show the runtime's calls and registers; here
//! the tracee's own runtime stops it, at the points Linux stops a tracee
//! (system-call entry and exit, signal delivery, exec, fork, exit), and
//! shows its tracer the program's registers only.
//!
//! The state lives on a board shared by the tree (`mm::shared`): one slot
//! per traced thread. A stopped tracee writes its registers, the wait
//! status and the event there, wakes its tracer (a futex on the board, and
//! SIGCHLD as Linux sends it) and sleeps on the slot's futex until the
//! tracer resumes it; the tracer's requests read and write the slot, and
//! the tracee's memory through the host (`process_vm_readv`,
//! `/proc/PID/mem`). A tracee learns that it is traced from the board's
//! epoch, which every attach and detach bumps, or at once from a
//! "doorbell" (a SIGSYS with a code of the runtime's) when it must stop
//! now (PTRACE_ATTACH, PTRACE_INTERRUPT, a SIGSTOP sent to it).
#![deny(unsafe_code)]

use crate::arch::{SigInfo, UContext};
use crate::host::errno::Errno;
use crate::host::{self};
use crate::kernel::thread::Thread;
use crate::mm::shared::{self, Board, PTRACE_WORDS};
use core::sync::atomic::AtomicI32;
use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// The tree's board: made at the first fork (or ptrace request) of a
/// process that has none, attached at start-up after an execve. None: it
/// could not be made (ptrace is then refused).
static BOARD: spin::Once<Option<&'static Board>> = spin::Once::new();
/// The board's segment id (-1: none).
static BOARD_ID: AtomicI32 = AtomicI32::new(-1);

// The board's header (words).
const H_MAGIC: usize = 0;
/// Bumped by every attach and detach: tracees look for their slot again.
const H_EPOCH: usize = 1;
/// Slot allocation lock: the holder's tid, 0 when free.
const H_LOCK: usize = 2;
/// Bumped (and futex-woken) on every report: tracers waiting sleep on it.
const H_NOTIFY: usize = 3;
const MAGIC: u64 = 0x7069_636f_735f_7074; // "picos_pt"
const HEADER: usize = 64;
const SLOT_WORDS: usize = 1024;
/// How many threads can be traced at once in a tree.
pub const SLOTS: usize = (PTRACE_WORDS - HEADER) / SLOT_WORDS;

// A slot's words.
/// The traced thread's tid; 0: free; `RESERVED`: a child being made.
const TRACEE: usize = 0;
/// Its process id (filled in by the tracee).
const TGID: usize = 1;
/// The tracer's process id (written last: a slot counts once it is set).
const TRACER: usize = 2;
const FLAGS: usize = 3;
const OPTIONS: usize = 4;
/// `RUNNING` or `STOPPED`.
const STATE: usize = 5;
/// The tracee's futex: bumped by every resume.
const RESUME: usize = 6;
/// The wait status to report.
const REPORT: usize = 7;
/// 1 while the report is not yet taken by a wait.
const PENDING: usize = 8;
/// The request that resumed the tracee last (PTRACE_CONT, ...).
const CMD: usize = 9;
/// The signal the tracer gave with it.
const SIG: usize = 10;
/// What the tracee stopped at (`KIND_*`).
const KIND: usize = 11;
/// PTRACE_GETEVENTMSG's value.
const MSG: usize = 12;
/// What the tracer changed (`DIRTY_*`).
const DIRTY: usize = 13;
/// The tracee's real parent (filled in by the tracee).
const PARENT: usize = 14;
/// How many bytes of FPU image `FP` holds.
const FPLEN: usize = 15;
/// The tracee's runtime memory: image start, end, reservation start, end.
const RT: usize = 16;
const REGS: usize = 24;
const DR: usize = 56;
const SIGINFO: usize = 64;
const FP: usize = 128;
const FP_MAX: usize = (SLOT_WORDS - FP) * 8;

const RESERVED: u64 = u64::MAX;
const RUNNING: u64 = 0;
const STOPPED: u64 = 1;

pub const F_SEIZED: u64 = 1;
/// PTRACE_INTERRUPT: stop with PTRACE_EVENT_STOP.
const F_INTERRUPT: u64 = 2;
/// A SIGSTOP for the tracee (PTRACE_ATTACH's, or sent to it): a
/// signal-delivery stop.
const F_SIGSTOP: u64 = 4;
/// An auto-attached child's first stop is due.
const F_NEW: u64 = 8;
/// The tracee has ended: its report is its exit status.
const F_EXITED: u64 = 16;

pub const KIND_ENTRY: u64 = 1;
pub const KIND_EXIT: u64 = 2;
pub const KIND_SIGNAL: u64 = 3;
pub const KIND_EVENT: u64 = 4;
pub const KIND_GROUP: u64 = 5;

const DIRTY_REGS: u64 = 1;
const DIRTY_FP: u64 = 2;
const DIRTY_SIGINFO: u64 = 4;

// Requests (include/uapi/linux/ptrace.h).
pub const PTRACE_TRACEME: i64 = 0;
pub const PTRACE_PEEKTEXT: i64 = 1;
pub const PTRACE_PEEKDATA: i64 = 2;
pub const PTRACE_PEEKUSER: i64 = 3;
pub const PTRACE_POKETEXT: i64 = 4;
pub const PTRACE_POKEDATA: i64 = 5;
pub const PTRACE_POKEUSER: i64 = 6;
pub const PTRACE_CONT: i64 = 7;
pub const PTRACE_KILL: i64 = 8;
pub const PTRACE_SINGLESTEP: i64 = 9;
pub const PTRACE_GETREGS: i64 = 12;
pub const PTRACE_SETREGS: i64 = 13;
pub const PTRACE_GETFPREGS: i64 = 14;
pub const PTRACE_SETFPREGS: i64 = 15;
pub const PTRACE_ATTACH: i64 = 16;
pub const PTRACE_DETACH: i64 = 17;
pub const PTRACE_SYSCALL: i64 = 24;
pub const PTRACE_SYSEMU: i64 = 31;
pub const PTRACE_SYSEMU_SINGLESTEP: i64 = 32;
pub const PTRACE_SETOPTIONS: i64 = 0x4200;
pub const PTRACE_GETEVENTMSG: i64 = 0x4201;
pub const PTRACE_GETSIGINFO: i64 = 0x4202;
pub const PTRACE_SETSIGINFO: i64 = 0x4203;
pub const PTRACE_GETREGSET: i64 = 0x4204;
pub const PTRACE_SETREGSET: i64 = 0x4205;
pub const PTRACE_SEIZE: i64 = 0x4206;
pub const PTRACE_INTERRUPT: i64 = 0x4207;
pub const PTRACE_LISTEN: i64 = 0x4208;
pub const PTRACE_GET_SYSCALL_INFO: i64 = 0x420e;

pub const O_TRACESYSGOOD: u64 = 1;
pub const O_TRACEFORK: u64 = 2;
pub const O_TRACEVFORK: u64 = 4;
pub const O_TRACECLONE: u64 = 8;
pub const O_TRACEEXEC: u64 = 0x10;
pub const O_TRACEVFORKDONE: u64 = 0x20;
pub const O_TRACEEXIT: u64 = 0x40;
pub const O_TRACESECCOMP: u64 = 0x80;
pub const O_EXITKILL: u64 = 1 << 20;
pub const O_SUSPEND_SECCOMP: u64 = 1 << 21;
/// Every option Linux knows.
pub const O_MASK: u64 = 0xff | O_EXITKILL | O_SUSPEND_SECCOMP;

pub const EVENT_FORK: u64 = 1;
pub const EVENT_VFORK: u64 = 2;
pub const EVENT_CLONE: u64 = 3;
pub const EVENT_EXEC: u64 = 4;
pub const EVENT_VFORK_DONE: u64 = 5;
pub const EVENT_EXIT: u64 = 6;
pub const EVENT_STOP: u64 = 0x80;

use crate::host::abi::{SIGCHLD, SIGKILL, SIGSTOP, SIGSYS, SIGTRAP};

/// `si_code` SI_USER.
const SI_USER: i32 = 0;
/// The doorbell's `si_code` (SI_QUEUE) and value.
const SI_QUEUE: i32 = -1;
const DOORBELL: u64 = 0x7069_636f_735f_6462; // "picos_db"

/// `struct user_regs_struct` in words, and the places of the registers in it.
pub const NREGS: usize = 27;
const R_R15: usize = 0;
const R_R14: usize = 1;
const R_R13: usize = 2;
const R_R12: usize = 3;
const R_RBP: usize = 4;
const R_RBX: usize = 5;
const R_R11: usize = 6;
const R_R10: usize = 7;
const R_R9: usize = 8;
const R_R8: usize = 9;
const R_RAX: usize = 10;
const R_RCX: usize = 11;
const R_RDX: usize = 12;
const R_RSI: usize = 13;
const R_RDI: usize = 14;
const R_ORIG_RAX: usize = 15;
const R_RIP: usize = 16;
const R_CS: usize = 17;
const R_EFLAGS: usize = 18;
const R_RSP: usize = 19;
const R_SS: usize = 20;
const R_FS_BASE: usize = 21;
const R_GS_BASE: usize = 22;
const USER_CS: u64 = 0x33;
const USER_SS: u64 = 0x2b;
/// The flags a tracer may change (Linux's FLAG_MASK).
const FLAG_MASK: u64 = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x100 | 0x400 | 0x800 | 0x10000 | 0x40000;
const TF: u64 = 0x100;
/// The end of the user address space (TASK_SIZE_MAX).
pub const TASK_SIZE_MAX: u64 = 0x7fff_ffff_f000;
/// `sizeof(struct user)` and `offsetof(struct user, u_debugreg)`.
pub const USER_SIZE: usize = 928;
pub const USER_DEBUGREG: usize = 848;

fn board() -> Option<&'static Board> {
    BOARD.get().copied().flatten()
}

/// The board's words for the patcher's hints (`patch::before_fork`).
pub fn hint_words() -> Option<&'static [core::sync::atomic::AtomicU64]> {
    board().map(shared::hints)
}

/// The words of the table of known syscall sites (`patch::known`): the
/// user's known-sites file's, kept across runs, if this process maps it
/// (`mm::shared::map_known_sites`), else the board's, if there is one.
pub fn known_site_words() -> Option<&'static [core::sync::atomic::AtomicU64]> {
    shared::known_sites_file().or_else(|| board().map(shared::known_sites))
}

/// The word of process `pid`'s execve-in-place mark (one per residue of
/// the pid: a mark can be lost to another pid's, never taken for one).
fn exec_mark(pid: i32) -> Option<&'static AtomicU64> {
    let words = shared::exec_marks(board()?);
    words.get(pid as u32 as usize % words.len())
}

/// A mark's value: the process and its parent.
fn exec_mark_value(pid: i32, parent: i32) -> u64 {
    (u64::from(parent as u32) << 32) | u64::from(pid as u32)
}

/// Process `pid`, child of `parent`, replaced its program in place: the
/// kernel still sees a child that has not exec'd, so the parent's
/// setpgid(2) asks the board ([`exec_marked`]) to answer EACCES as Linux
/// does after an execve. (Nothing clears a mark: a later child of the same
/// parent with the same pid, after the pids wrapped around, would be taken
/// for one that exec'd. A fork child that cleared its word would copy a
/// page at every fork: ~10 µs.)
pub fn mark_exec_in_place(pid: i32, parent: i32) {
    if let Some(w) = exec_mark(pid) {
        w.store(exec_mark_value(pid, parent), Release);
    }
}

/// Has process `pid`, a child of `parent`, replaced its program in place?
pub fn exec_marked(pid: i32, parent: i32) -> bool {
    pid > 0 && exec_mark(pid).is_some_and(|w| w.load(Acquire) == exec_mark_value(pid, parent))
}

fn slot(b: &'static Board, i: usize) -> &'static [AtomicU64] {
    let at = HEADER + i * SLOT_WORDS;
    &b[at..at + SLOT_WORDS]
}

/// At start-up after an execve: the tree's board, attached by the id the
/// launch configuration gives (`board`: the id plus one). A segment that
/// is gone (the process that exec'd was the last one attached) is made
/// again when needed ([`ensure`]).
pub fn init(board_cfg: u32) {
    if board_cfg == 0 {
        return;
    }
    let id = (board_cfg - 1) as i32;
    if let Ok(b) = shared::attach(id) {
        if b[H_MAGIC].load(Acquire) == MAGIC {
            BOARD_ID.store(id, Relaxed);
            BOARD.call_once(|| Some(b));
        }
    }
}

/// The board, made now if this process has none: before its first fork
/// (a child must share it), at its first ptrace request (a vfork child,
/// which shares our memory), or before an execve through the kernel (the
/// next runtime attaches it). A process that never forks nor execs never
/// makes one, so a lone program has no segment in `ipcs`.
pub fn ensure() {
    BOARD.call_once(|| {
        let id = match shared::create() {
            Ok(id) => id,
            Err(e) => {
                crate::log!(Debug, "no ptrace board (shmget: {}): ptrace is refused", e);
                return None;
            }
        };
        let b = shared::attach(id);
        // Gone once the tree's last process detaches it (Linux still
        // attaches a segment marked so, by its id, while it is attached
        // somewhere).
        shared::release_on_last_detach(id);
        match b {
            Ok(b) => {
                b[H_MAGIC].store(MAGIC, Release);
                BOARD_ID.store(id, Relaxed);
                Some(b)
            }
            Err(e) => {
                crate::log!(Debug, "cannot attach the ptrace board: {}", e);
                None
            }
        }
    });
}

/// The board for the next runtime (launch configuration `board`).
pub fn config_value() -> u32 {
    let id = BOARD_ID.load(Relaxed);
    if id < 0 {
        0
    } else {
        id as u32 + 1
    }
}

// ---------------------------------------------------------------------------
// The tracee's side.

/// Is thread `t` traced? Cheap when nothing changed on the board (one
/// load and a compare): every system call asks.
#[inline(always)]
pub fn traced(t: &Thread) -> bool {
    if let Some(b) = board() {
        let e = b[H_EPOCH].load(Acquire);
        if e != t.ptrace_epoch.get() {
            rescan(t, b, e);
        }
    }
    t.ptrace.get() != 0
}

/// Must `t` stop before it goes on (the tracer asked it to, or a doorbell
/// rang)?
#[inline]
pub fn wants_stop(t: &Thread) -> bool {
    t.ptrace_doorbell.get()
        || traced(t)
            && slot(board().unwrap(), t.ptrace.get() as usize - 1)[FLAGS].load(Acquire)
                & (F_INTERRUPT | F_SIGSTOP | F_NEW)
                != 0
}

#[cold]
#[inline(never)]
fn rescan(t: &Thread, b: &'static Board, epoch: u64) {
    t.ptrace_epoch.set(epoch);
    let tid = host::gettid() as u64;
    let was = t.ptrace.get();
    if was != 0 {
        let s = slot(b, was as usize - 1);
        let who = s[TRACEE].load(Acquire);
        if (who == tid || who == RESERVED) && s[TRACER].load(Acquire) != 0 {
            return;
        }
        t.ptrace.set(0);
    }
    for i in 0..SLOTS {
        let s = slot(b, i);
        if s[TRACEE].load(Acquire) == tid && s[TRACER].load(Acquire) != 0 {
            t.ptrace.set(i as u32 + 1);
            became_traced(t, s);
            return;
        }
    }
}

/// `t` has just learnt that it is traced (slot `s`): it fills in what its
/// tracer needs to know, and makes every call and signal reach the
/// runtime (no patched sites, no signal left to the host).
fn became_traced(t: &Thread, s: &[AtomicU64]) {
    s[TGID].store(host::getpid() as u64, Release);
    s[PARENT].store(host::getppid() as u64, Release);
    let (img, len) = crate::mm::runtime::image_range();
    let res = crate::mm::runtime::reservation_base();
    s[RT].store(img as u64, Relaxed);
    s[RT + 1].store((img + len) as u64, Relaxed);
    s[RT + 2].store(res as u64, Relaxed);
    s[RT + 3].store((res + crate::mm::runtime::RESERVE_SPAN) as u64, Relaxed);
    crate::patch::stop_for_seccomp();
    crate::kernel::signal::catch_all_signals(t);
}

/// Is `info` the runtime's doorbell (see the module's notes)?
pub fn is_doorbell(info: &SigInfo) -> bool {
    info.signo() == SIGSYS
        && info.code() == SI_QUEUE
        && u64::from_ne_bytes(info.0[24..32].try_into().unwrap()) == DOORBELL
}

/// The doorbell's siginfo, sent by this process.
fn doorbell_info() -> SigInfo {
    let mut info = SigInfo::kernel(SIGSYS, SI_QUEUE);
    info.0[16..20].copy_from_slice(&host::getpid().to_ne_bytes());
    info.0[24..32].copy_from_slice(&DOORBELL.to_ne_bytes());
    info
}

/// Rings thread `tid`'s doorbell: it stops at once for what its slot asks.
fn ring(tgid: i32, tid: i32) {
    let info = doorbell_info();
    if host::rt_tgsigqueueinfo(tgid, tid, SIGSYS, &info.0).is_err() {
        let _ = host::rt_sigqueueinfo(tid, SIGSYS, &info.0);
    }
}

/// The registers of a stop: the program's context `uc`, with `orig_rax`.
fn save_regs(s: &[AtomicU64], t: &Thread, uc: &UContext, orig_rax: u64) {
    let m = &uc.mcontext;
    let mut r = [0u64; NREGS];
    r[R_R15] = m.r15;
    r[R_R14] = m.r14;
    r[R_R13] = m.r13;
    r[R_R12] = m.r12;
    r[R_RBP] = m.rbp;
    r[R_RBX] = m.rbx;
    r[R_R11] = m.r11;
    r[R_R10] = m.r10;
    r[R_R9] = m.r9;
    r[R_R8] = m.r8;
    r[R_RAX] = m.rax;
    r[R_RCX] = m.rcx;
    r[R_RDX] = m.rdx;
    r[R_RSI] = m.rsi;
    r[R_RDI] = m.rdi;
    r[R_ORIG_RAX] = orig_rax;
    r[R_RIP] = m.rip;
    r[R_CS] = USER_CS;
    r[R_EFLAGS] = m.eflags;
    r[R_RSP] = m.rsp;
    r[R_SS] = USER_SS;
    r[R_FS_BASE] = host::fs_base() as u64;
    r[R_GS_BASE] = t.guest_gs.get() as u64;
    for (i, v) in r.iter().enumerate() {
        s[REGS + i].store(*v, Relaxed);
    }
    let mut n = 0;
    if let Some(img) = crate::arch::fpu::image(uc) {
        n = img.len().min(FP_MAX);
        store_bytes(&s[FP..], &img[..n]);
    } else {
        // The FPU's initial state (FXSAVE layout): FCW 0x37f, MXCSR 0x1f80.
        let mut img = [0u8; 512];
        img[0..2].copy_from_slice(&0x37fu16.to_ne_bytes());
        img[24..28].copy_from_slice(&0x1f80u32.to_ne_bytes());
        img[28..32].copy_from_slice(&0xffffu32.to_ne_bytes());
        store_bytes(&s[FP..], &img);
        n = n.max(512);
    }
    s[FPLEN].store(n as u64, Relaxed);
}

/// Puts the registers the tracer changed back into `uc`; returns the
/// new `orig_rax`.
fn load_regs(s: &[AtomicU64], t: &Thread, uc: &mut UContext) -> u64 {
    let dirty = s[DIRTY].load(Acquire);
    let r: [u64; NREGS] = core::array::from_fn(|i| s[REGS + i].load(Relaxed));
    if dirty & DIRTY_REGS != 0 {
        let m = &mut uc.mcontext;
        m.r15 = r[R_R15];
        m.r14 = r[R_R14];
        m.r13 = r[R_R13];
        m.r12 = r[R_R12];
        m.rbp = r[R_RBP];
        m.rbx = r[R_RBX];
        m.r11 = r[R_R11];
        m.r10 = r[R_R10];
        m.r9 = r[R_R9];
        m.r8 = r[R_R8];
        m.rax = r[R_RAX];
        m.rcx = r[R_RCX];
        m.rdx = r[R_RDX];
        m.rsi = r[R_RSI];
        m.rdi = r[R_RDI];
        m.rip = r[R_RIP];
        m.eflags = (m.eflags & !FLAG_MASK) | (r[R_EFLAGS] & FLAG_MASK);
        m.rsp = r[R_RSP];
        if r[R_FS_BASE] != host::fs_base() as u64 {
            let _ = host::set_fs_base(r[R_FS_BASE] as usize);
        }
        t.guest_gs.set(r[R_GS_BASE] as usize);
    }
    if dirty & DIRTY_FP != 0 {
        if let Some(img) = crate::arch::fpu::image_mut(uc) {
            let n = img.len().min(s[FPLEN].load(Relaxed) as usize);
            load_bytes(&s[FP..], &mut img[..n]);
        }
    }
    s[DIRTY].store(0, Relaxed);
    r[R_ORIG_RAX]
}

fn store_bytes(words: &[AtomicU64], bytes: &[u8]) {
    for (w, c) in words.iter().zip(bytes.chunks(8)) {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        w.store(u64::from_ne_bytes(b), Relaxed);
    }
}

fn load_bytes(words: &[AtomicU64], bytes: &mut [u8]) {
    for (w, c) in words.iter().zip(bytes.chunks_mut(8)) {
        let b = w.load(Relaxed).to_ne_bytes();
        c.copy_from_slice(&b[..c.len()]);
    }
}

/// How the tracer resumed a stop.
#[derive(Clone, Copy, Debug)]
pub struct Resumed {
    /// The request (PTRACE_CONT, PTRACE_SYSCALL, ...; PTRACE_DETACH when
    /// the tracee is no longer traced).
    pub cmd: i64,
    /// The signal the tracer gave (0: none).
    pub sig: i32,
    /// `orig_rax` as the tracer left it.
    pub orig_rax: u64,
    /// The siginfo, if the tracer changed it.
    pub info: Option<SigInfo>,
}

/// Stops thread `t` (traced) for its tracer: registers from `uc` (with
/// `orig_rax`), the wait status `(code << 8) | 0x7f`, what it stopped at
/// (`kind`), the event message `msg` and the siginfo `info`. Returns once
/// the tracer resumes it, the registers it changed put back into `uc`.
pub fn stop(
    t: &Thread,
    uc: &mut UContext,
    orig_rax: u64,
    kind: u64,
    code: u64,
    msg: u64,
    info: &SigInfo,
) -> Resumed {
    let Some(b) = board() else {
        return detached(orig_rax);
    };
    let i = t.ptrace.get() as usize;
    if i == 0 {
        return detached(orig_rax);
    }
    let s = slot(b, i - 1);
    // A new thread can stop before its parent has written its tid.
    let _ = s[TRACEE].compare_exchange(RESERVED, host::gettid() as u64, Release, Relaxed);
    save_regs(s, t, uc, orig_rax);
    store_bytes(&s[SIGINFO..SIGINFO + 16], &info.0);
    s[KIND].store(kind, Relaxed);
    s[MSG].store(msg, Relaxed);
    s[DIRTY].store(0, Relaxed);
    s[REPORT].store((code << 8) | 0x7f, Relaxed);
    s[STATE].store(STOPPED, Release);
    s[PENDING].store(1, Release);
    let tracer = s[TRACER].load(Acquire) as i32;
    notify(b, tracer);
    // Until the tracer resumes us (or ends: its tracees go on, as Linux
    // detaches them; with PTRACE_O_EXITKILL they are killed).
    loop {
        let gen = s[RESUME].load(Acquire);
        if s[STATE].load(Acquire) == RUNNING {
            break;
        }
        let _ = futex_wait(&s[RESUME], gen, 200_000_000);
        if s[STATE].load(Acquire) != RUNNING && host::kill(tracer, 0) == Err(Errno::ESRCH) {
            let exitkill = s[OPTIONS].load(Relaxed) & O_EXITKILL != 0;
            free(b, i - 1);
            t.ptrace.set(0);
            if exitkill {
                let _ = host::kill(host::getpid(), SIGKILL);
            }
            return detached(orig_rax);
        }
    }
    let new_orig = if s[DIRTY].load(Acquire) != 0 {
        load_regs(s, t, uc)
    } else {
        orig_rax
    };
    let info = (s[DIRTY].load(Relaxed) & DIRTY_SIGINFO != 0).then(|| {
        let mut v = SigInfo::default();
        load_bytes(&s[SIGINFO..SIGINFO + 16], &mut v.0);
        v
    });
    let cmd = s[CMD].load(Acquire) as i64;
    let sig = s[SIG].load(Acquire) as i32;
    if cmd == PTRACE_DETACH {
        free(b, i - 1);
        t.ptrace.set(0);
    }
    Resumed {
        cmd,
        sig,
        orig_rax: new_orig,
        info,
    }
}

fn detached(orig_rax: u64) -> Resumed {
    Resumed {
        cmd: PTRACE_DETACH,
        sig: 0,
        orig_rax,
        info: None,
    }
}

/// Tells tracer `tracer` that something is to report: the board's futex,
/// and SIGCHLD as Linux sends it for a tracee's stop.
fn notify(b: &'static Board, tracer: i32) {
    b[H_NOTIFY].fetch_add(1, Release);
    futex_wake(&b[H_NOTIFY]);
    if tracer > 0 {
        // A tracer that was blocked in a wait before it traced anything
        // waits on the host, which knows nothing of this: the doorbell
        // cuts that wait short, and it starts again, looking at the board.
        let _ = host::rt_sigqueueinfo(tracer, SIGSYS, &doorbell_info().0);
        let _ = host::kill(tracer, SIGCHLD);
    }
}

fn futex_wait(w: &AtomicU64, val: u64, ns: u64) -> Result<usize, Errno> {
    crate::mm::shared::futex_wait(w, val as u32, ns)
}

fn futex_wake(w: &AtomicU64) {
    crate::mm::shared::futex_wake(w);
}

/// Word `w` of traced thread `t`'s slot (0 if it is not traced).
fn word_of(t: &Thread, w: usize) -> u64 {
    match (board(), t.ptrace.get()) {
        (Some(b), i) if i != 0 => slot(b, i as usize - 1)[w].load(Acquire),
        _ => 0,
    }
}

/// The request thread `t` was last resumed with (0: none yet).
pub fn last_cmd(t: &Thread) -> i64 {
    word_of(t, CMD) as i64
}

fn options_of(t: &Thread) -> u64 {
    word_of(t, OPTIONS)
}

fn flags_of(t: &Thread) -> u64 {
    word_of(t, FLAGS)
}

/// The status code of a syscall stop: SIGTRAP, with 0x80 under
/// PTRACE_O_TRACESYSGOOD.
fn syscall_code(t: &Thread) -> u64 {
    if options_of(t) & O_TRACESYSGOOD != 0 {
        SIGTRAP as u64 | 0x80
    } else {
        SIGTRAP as u64
    }
}

/// Does the last resume ask for syscall stops?
pub fn wants_syscall_stops(cmd: i64) -> bool {
    matches!(
        cmd,
        PTRACE_SYSCALL | PTRACE_SYSEMU | PTRACE_SYSEMU_SINGLESTEP
    )
}

/// A syscall-entry stop for call `nr` (RAX reads -ENOSYS, as Linux sets
/// it before the tracer sees the entry).
pub fn syscall_entry_stop(t: &Thread, uc: &mut UContext, nr: u64) -> Resumed {
    uc.mcontext.rax = Errno::ENOSYS.to_ret() as u64;
    let code = syscall_code(t);
    let r = stop(
        t,
        uc,
        nr,
        KIND_ENTRY,
        code,
        0,
        &SigInfo::kernel(SIGTRAP, code as i32),
    );
    queue_resumed_signal(t, &r);
    r
}

/// A syscall-exit stop for call `nr`, its result in RAX.
pub fn syscall_exit_stop(t: &Thread, uc: &mut UContext, nr: u64) -> Resumed {
    let code = syscall_code(t);
    let r = stop(
        t,
        uc,
        nr,
        KIND_EXIT,
        code,
        0,
        &SigInfo::kernel(SIGTRAP, code as i32),
    );
    queue_resumed_signal(t, &r);
    r
}

/// The tracer's signal after a stop, for the program: queued for
/// delivery (a signal-delivery stop comes first).
fn queue_resumed_signal(t: &Thread, r: &Resumed) {
    if r.sig > 0 {
        let info = r.info.unwrap_or_else(|| SigInfo::kernel(r.sig, SI_USER));
        t.add_fault(&info);
    }
}

/// The stops the tracer asked for that are due now (an auto-attached
/// child's first stop, PTRACE_ATTACH's SIGSTOP, PTRACE_INTERRUPT), with
/// the program's context `uc`.
pub fn pending_stops(t: &Thread, uc: &mut UContext, orig_rax: u64) {
    t.ptrace_doorbell.set(false);
    if !traced(t) {
        return;
    }
    let b = board().unwrap();
    let s = slot(b, t.ptrace.get() as usize - 1);
    let f = s[FLAGS].load(Acquire);
    let seized = f & F_SEIZED != 0;
    if f & F_NEW != 0 {
        s[FLAGS].fetch_and(!F_NEW, Release);
        let r = if seized {
            event_stop(t, uc, orig_rax, EVENT_STOP, 0)
        } else {
            sigstop_stop(t, uc, orig_rax)
        };
        queue_resumed_signal(t, &r);
    }
    if t.ptrace.get() == 0 {
        return;
    }
    let f = s[FLAGS].load(Acquire);
    if f & F_SIGSTOP != 0 {
        s[FLAGS].fetch_and(!F_SIGSTOP, Release);
        let r = sigstop_stop(t, uc, orig_rax);
        if r.sig == SIGSTOP && t.ptrace.get() != 0 {
            // The tracer lets the SIGSTOP through: a group-stop, which it
            // sees as such (PTRACE_EVENT_STOP under PTRACE_SEIZE).
            let code = if seized {
                SIGSTOP as u64 | (EVENT_STOP << 8)
            } else {
                SIGSTOP as u64
            };
            let r = stop(t, uc, orig_rax, KIND_GROUP, code, 0, &SigInfo::ZERO);
            queue_resumed_signal(t, &r);
        } else if r.sig != SIGSTOP {
            queue_resumed_signal(t, &r);
        }
    }
    if t.ptrace.get() == 0 {
        return;
    }
    if s[FLAGS].load(Acquire) & F_INTERRUPT != 0 {
        s[FLAGS].fetch_and(!F_INTERRUPT, Release);
        let r = event_stop(t, uc, orig_rax, EVENT_STOP, 0);
        queue_resumed_signal(t, &r);
    }
}

/// A signal-delivery stop for a SIGSTOP (PTRACE_ATTACH's, one sent to
/// the tracee, or an auto-attached child's first).
fn sigstop_stop(t: &Thread, uc: &mut UContext, orig_rax: u64) -> Resumed {
    let info = SigInfo::kernel(SIGSTOP, SI_USER);
    stop(t, uc, orig_rax, KIND_SIGNAL, SIGSTOP as u64, 0, &info)
}

/// A PTRACE_EVENT_* stop (status `SIGTRAP | event << 8`) with message `msg`.
pub fn event_stop(t: &Thread, uc: &mut UContext, orig_rax: u64, event: u64, msg: u64) -> Resumed {
    let code = SIGTRAP as u64 | (event << 8);
    stop(
        t,
        uc,
        orig_rax,
        KIND_EVENT,
        code,
        msg,
        &SigInfo::kernel(SIGTRAP, code as i32),
    )
}

/// A signal-delivery stop for `info` (the thread is traced): what the
/// tracer lets through, None if it suppresses the signal. A signal the
/// tracer changed to one the program blocks is queued again.
pub fn signal_stop(t: &Thread, info: &SigInfo, uc: &mut UContext) -> Option<SigInfo> {
    let sig = info.signo();
    let r = stop(t, uc, u64::MAX, KIND_SIGNAL, sig as u64, 0, info);
    if r.sig <= 0 || r.sig > 64 {
        return None;
    }
    let out = match r.info {
        Some(i) if i.signo() == r.sig => i,
        _ if r.sig == sig => *info,
        _ => {
            let mut i = SigInfo::kernel(r.sig, SI_USER);
            i.0[16..20].copy_from_slice(&(tracer_of(t) as i32).to_ne_bytes());
            i
        }
    };
    if t.sig_mask.get() & crate::host::abi::bit(r.sig) != 0 {
        t.add_pending(&out);
        return None;
    }
    Some(out)
}

fn tracer_of(t: &Thread) -> u64 {
    word_of(t, TRACER)
}

/// After execve, before the new program's first instruction: the exec
/// event (PTRACE_O_TRACEEXEC) or, without it, the SIGTRAP Linux sends a
/// tracee that was not seized; then the execve's syscall-exit stop if the
/// tracer asked for syscall stops. `entry` and `sp` are the program's
/// start; returns them as the tracer left them.
pub fn exec_stops(t: &Thread, entry: usize, sp: usize) -> (usize, usize) {
    if !traced(t) {
        return (entry, sp);
    }
    let mut uc = UContext::default();
    uc.mcontext.rip = entry as u64;
    uc.mcontext.rsp = sp as u64;
    uc.mcontext.eflags = 0x202;
    const EXECVE: u64 = 59;
    let old_tid = host::getpid() as u64;
    let r = if options_of(t) & O_TRACEEXEC != 0 {
        event_stop(t, &mut uc, EXECVE, EVENT_EXEC, old_tid)
    } else if flags_of(t) & F_SEIZED == 0 {
        let r = stop(
            t,
            &mut uc,
            EXECVE,
            KIND_SIGNAL,
            SIGTRAP as u64,
            0,
            &SigInfo::kernel(SIGTRAP, SI_USER),
        );
        if r.sig == SIGTRAP {
            crate::kernel::signal::die_of(SIGTRAP);
        }
        r
    } else {
        Resumed {
            cmd: last_cmd(t),
            sig: 0,
            orig_rax: EXECVE,
            info: None,
        }
    };
    queue_resumed_signal(t, &r);
    if t.ptrace.get() != 0 && wants_syscall_stops(r.cmd) {
        uc.mcontext.rax = 0;
        let _ = syscall_exit_stop(t, &mut uc, EXECVE);
    }
    (uc.mcontext.rip as usize, uc.mcontext.rsp as usize)
}

/// The thread ends (`status` as a wait reports it: exit code << 8, or the
/// signal): the exit event under PTRACE_O_TRACEEXIT, then the report for
/// a tracer that the host does not tell (one that is not the parent, or
/// of a thread that is not the process's first).
pub fn exiting(t: &Thread, uc: Option<&mut UContext>, status: i32) {
    if !traced(t) {
        return;
    }
    if options_of(t) & O_TRACEEXIT != 0 {
        let mut none = UContext::default();
        let uc = uc.unwrap_or(&mut none);
        let orig = uc.mcontext.rax;
        let _ = event_stop(t, uc, orig, EVENT_EXIT, status as u32 as u64);
    }
    let Some(b) = board() else { return };
    let i = t.ptrace.get() as usize;
    if i == 0 {
        return;
    }
    let s = slot(b, i - 1);
    let tracer = s[TRACER].load(Acquire);
    let leader = host::gettid() == host::getpid();
    if leader && s[PARENT].load(Acquire) == tracer {
        // The host reports it to its parent, our tracer.
        free(b, i - 1);
    } else {
        s[REPORT].store(status as u32 as u64, Relaxed);
        s[FLAGS].fetch_or(F_EXITED, Release);
        s[STATE].store(RUNNING, Release);
        s[PENDING].store(1, Release);
        notify(b, tracer as i32);
    }
    t.ptrace.set(0);
}

/// Before a clone or fork by traced thread `t` with `flags` and exit
/// signal `exit_signal`: the event Linux reports for it, if the tracer
/// asked to trace such children, and the slot reserved for the child.
pub fn before_clone(t: &Thread, flags: u64, exit_signal: u64) -> Option<(u64, usize)> {
    if t.ptrace.get() == 0 || !traced(t) {
        return None;
    }
    const CLONE_VFORK: u64 = 0x4000;
    let opts = options_of(t);
    let (event, opt) = if flags & CLONE_VFORK != 0 {
        (EVENT_VFORK, O_TRACEVFORK)
    } else if exit_signal != SIGCHLD as u64 {
        (EVENT_CLONE, O_TRACECLONE)
    } else {
        (EVENT_FORK, O_TRACEFORK)
    };
    if opts & opt == 0 {
        return None;
    }
    let b = board()?;
    let tracer = tracer_of(t);
    let seized = flags_of(t) & F_SEIZED;
    let i = alloc(b, RESERVED, tracer, opts, seized | F_NEW)?;
    // The child resumes as its parent last was (syscall stops or not).
    slot(b, i)[CMD].store(last_cmd(t) as u64, Relaxed);
    Some((event, i))
}

/// In the new child (a fork's, in its hook, with its `tid`; a thread's or
/// a vfork's, before it runs, with 0: its parent writes the tid once the
/// clone returns, or the child at its first stop): it is traced in slot
/// `i`.
pub fn child_traced(child: &Thread, i: usize, tid: i32) {
    if let Some(b) = board() {
        if tid != 0 {
            slot(b, i)[TRACEE].store(tid as u64, Release);
        }
        child.ptrace.set(i as u32 + 1);
        child.ptrace_epoch.set(b[H_EPOCH].load(Acquire));
    }
}

/// In the parent after the clone: the child `tid` is in slot `i` (or the
/// clone failed: the slot goes), then the parent's event stop.
pub fn after_clone(
    t: &Thread,
    uc: &mut UContext,
    nr: u64,
    event: u64,
    i: usize,
    result: Result<usize, Errno>,
) {
    let Some(b) = board() else { return };
    match result {
        Ok(tid) if tid > 0 => {
            let s = slot(b, i);
            let _ = s[TRACEE].compare_exchange(RESERVED, tid as u64, Release, Relaxed);
            b[H_EPOCH].fetch_add(1, Release);
            let r = event_stop(t, uc, nr, event, tid as u64);
            queue_resumed_signal(t, &r);
        }
        _ => free(b, i),
    }
}

// ---------------------------------------------------------------------------
// Slots.

fn lock(b: &'static Board) {
    let me = host::gettid() as u64;
    loop {
        match b[H_LOCK].compare_exchange(0, me, Acquire, Relaxed) {
            Ok(_) => return,
            Err(holder) => {
                // A holder that died with it (killed) leaves it.
                if host::kill(holder as i32, 0) == Err(Errno::ESRCH) {
                    let _ = b[H_LOCK].compare_exchange(holder, me, Acquire, Relaxed);
                    if b[H_LOCK].load(Acquire) == me {
                        return;
                    }
                }
                host::sched_yield();
            }
        }
    }
}

fn unlock(b: &'static Board) {
    b[H_LOCK].store(0, Release);
}

/// A slot for `tracee` traced by `tracer` (None: every slot is taken).
fn alloc(b: &'static Board, tracee: u64, tracer: u64, options: u64, flags: u64) -> Option<usize> {
    lock(b);
    let mut found = None;
    for i in 0..SLOTS {
        let s = slot(b, i);
        let who = s[TRACEE].load(Acquire);
        // A slot whose tracee is gone and reported, or whose tracer is
        // gone, is free (a tracer that never waited leaves them).
        let holder = s[TRACER].load(Acquire);
        let stale = who != 0
            && who != RESERVED
            && holder != 0
            && (host::kill(who as i32, 0) == Err(Errno::ESRCH) && s[PENDING].load(Acquire) == 0
                || host::kill(holder as i32, 0) == Err(Errno::ESRCH));
        if who == 0 || stale {
            for w in s.iter().take(FP) {
                w.store(0, Relaxed);
            }
            s[TRACEE].store(tracee, Relaxed);
            s[OPTIONS].store(options, Relaxed);
            s[FLAGS].store(flags, Relaxed);
            s[TRACER].store(tracer, Release);
            found = Some(i);
            break;
        }
    }
    unlock(b);
    if found.is_some() {
        b[H_EPOCH].fetch_add(1, Release);
    }
    found
}

fn free(b: &'static Board, i: usize) {
    let s = slot(b, i);
    lock(b);
    s[TRACER].store(0, Release);
    s[PENDING].store(0, Release);
    s[TRACEE].store(0, Release);
    unlock(b);
    b[H_EPOCH].fetch_add(1, Release);
}

/// The slot of `tid` (any tracer).
fn find(b: &'static Board, tid: i32) -> Option<usize> {
    (0..SLOTS).find(|&i| {
        let s = slot(b, i);
        s[TRACEE].load(Acquire) == tid as u64 && s[TRACER].load(Acquire) != 0
    })
}

// ---------------------------------------------------------------------------
// The tracer's side.

/// The slot of tracee `pid` if this process traces it.
fn mine(b: &'static Board, pid: i32) -> Option<usize> {
    let me = host::getpid() as u64;
    find(b, pid).filter(|&i| slot(b, i)[TRACER].load(Acquire) == me)
}

/// The slot of tracee `pid`, traced by this process and stopped (Linux's
/// ptrace_check_attach: ESRCH otherwise).
fn stopped(b: &'static Board, pid: i32) -> Result<&'static [AtomicU64], Errno> {
    let i = mine(b, pid).ok_or(Errno::ESRCH)?;
    let s = slot(b, i);
    if s[STATE].load(Acquire) != STOPPED || s[FLAGS].load(Acquire) & F_EXITED != 0 {
        return Err(Errno::ESRCH);
    }
    Ok(s)
}

/// PTRACE_TRACEME: the parent traces the calling thread.
pub fn traceme(t: &Thread) -> Result<usize, Errno> {
    ensure();
    let b = board().ok_or(Errno::EPERM)?;
    let tid = host::gettid();
    if find(b, tid).is_some() {
        return Err(Errno::EPERM);
    }
    let parent = host::getppid();
    // Only a picoprocess of this tree can trace us: another would never
    // resume the stops.
    if !matches!(crate::kernel::vm::runtime_of(parent), Ok(Some(_))) {
        return Err(Errno::EPERM);
    }
    alloc(b, tid as u64, parent as u64, 0, 0).ok_or(Errno::EPERM)?;
    let _ = traced(t);
    Ok(0)
}

/// PTRACE_ATTACH (`seize` false: the tracee stops with SIGSTOP) and
/// PTRACE_SEIZE (with `options`).
pub fn attach(pid: i32, seize: bool, addr: usize, options: u64) -> Result<usize, Errno> {
    if seize && (addr != 0 || options & !O_MASK != 0) {
        return Err(if addr != 0 { Errno::EIO } else { Errno::EINVAL });
    }
    ensure();
    let b = board().ok_or(Errno::EPERM)?;
    if pid <= 0 || host::kill(pid, 0) == Err(Errno::ESRCH) {
        return Err(Errno::ESRCH);
    }
    let me = host::getpid();
    // A thread of our own process (Linux: same thread group).
    if pid == me || status_ids(pid).is_some_and(|(g, _)| g == me) {
        return Err(Errno::EPERM);
    }
    // Only a picoprocess of this tree: the host's processes, and those of
    // another tree (another board), cannot be stopped this way.
    let (tgid, parent) = status_ids(pid).unwrap_or((pid, 0));
    if !matches!(crate::kernel::vm::runtime_of(tgid), Ok(Some(_))) {
        return Err(Errno::EPERM);
    }
    if find(b, pid).is_some() {
        return Err(Errno::EPERM);
    }
    let flags = if seize { F_SEIZED } else { F_SIGSTOP };
    let i = alloc(
        b,
        pid as u64,
        me as u64,
        if seize { options } else { 0 },
        flags,
    )
    .ok_or(Errno::EPERM)?;
    // (The tracee fills these in too, once it sees the slot: a wait may
    // need them before, such as for a tracee killed at once.)
    slot(b, i)[TGID].store(tgid as u64, Relaxed);
    slot(b, i)[PARENT].store(parent as u64, Relaxed);
    if !seize {
        ring(tgid, pid);
        if job_stopped(pid) {
            // Stopped by a signal (a group-stop the host keeps): Linux
            // turns that into a ptrace-stop before PTRACE_ATTACH returns.
            // The host's stop ends (SIGCONT, which the tracee, not yet
            // catching it, ignores) so that the tracee can stop for us;
            // we wait until it has.
            let _ = host::kill(tgid, crate::host::abi::SIGCONT);
            let s = slot(b, i);
            for _ in 0..2000 {
                if s[STATE].load(Acquire) == STOPPED || host::kill(pid, 0).is_err() {
                    break;
                }
                let mark = b[H_NOTIFY].load(Acquire);
                let _ = futex_wait(&b[H_NOTIFY], mark, 1_000_000);
            }
        }
    }
    Ok(0)
}

/// Thread `tid`'s state letter (its /proc/TID/stat's third field); None
/// if it cannot be read.
fn thread_state(tid: i32) -> Option<u8> {
    let path = alloc::format!("/proc/{tid}/stat\0");
    let path = core::ffi::CStr::from_bytes_with_nul(path.as_bytes()).ok()?;
    let (buf, n) = host::fds::read_small_file::<512>(path).ok()?;
    crate::kernel::process::parse_stat_flags_state(&buf[..n]).map(|(_, state)| state)
}

/// Is thread `tid` stopped by a signal (state T in /proc/TID/stat)?
fn job_stopped(tid: i32) -> bool {
    thread_state(tid) == Some(b'T')
}

/// The process thread `tid` belongs to and that process's parent (from
/// /proc/TID/status), None if unknown.
fn status_ids(tid: i32) -> Option<(i32, i32)> {
    let path = alloc::format!("/proc/{tid}/status\0");
    let path = core::ffi::CStr::from_bytes_with_nul(path.as_bytes()).ok()?;
    let (buf, n) = host::fds::read_small_file::<1024>(path).ok()?;
    let text = &buf[..n];
    let field = |name: &[u8]| -> Option<i32> {
        let at = text.windows(name.len()).position(|w| w == name)?;
        let mut v = 0i32;
        for &c in text[at + name.len()..]
            .iter()
            .skip_while(|c| c.is_ascii_whitespace())
        {
            if !c.is_ascii_digit() {
                break;
            }
            v = v * 10 + (c - b'0') as i32;
        }
        Some(v)
    };
    Some((field(b"Tgid:")?, field(b"PPid:")?))
}

/// Asks a stop of the tracee in slot `i` (`flag`) and rings it.
fn ask_stop(b: &'static Board, i: usize, flag: u64) {
    let s = slot(b, i);
    s[FLAGS].fetch_or(flag, Release);
    let tid = s[TRACEE].load(Acquire) as i32;
    let tgid = match s[TGID].load(Acquire) as i32 {
        0 => tid,
        g => g,
    };
    ring(tgid, tid);
}

/// A SIGSTOP sent to `tid` (kill, tkill, tgkill): a traced thread gets a
/// signal-delivery stop (true); otherwise it goes to the host (false).
pub fn sigstop_to(tid: i32) -> bool {
    let Some(b) = board() else { return false };
    if b[H_EPOCH].load(Acquire) == 0 {
        return false;
    }
    match find(b, tid) {
        Some(i) => {
            ask_stop(b, i, F_SIGSTOP);
            true
        }
        None => false,
    }
}

/// A SIGSTOP the thread `t` sends itself while traced: a signal-delivery
/// stop when the call returns.
pub fn sigstop_self(t: &Thread) -> bool {
    if !traced(t) {
        return false;
    }
    let b = board().unwrap();
    slot(b, t.ptrace.get() as usize - 1)[FLAGS].fetch_or(F_SIGSTOP, Release);
    true
}

/// PTRACE_INTERRUPT: a seized tracee stops (PTRACE_EVENT_STOP).
pub fn interrupt(pid: i32) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let i = mine(b, pid).ok_or(Errno::ESRCH)?;
    if slot(b, i)[FLAGS].load(Acquire) & F_SEIZED == 0 {
        return Err(Errno::EIO);
    }
    if slot(b, i)[STATE].load(Acquire) != STOPPED {
        ask_stop(b, i, F_INTERRUPT);
    }
    Ok(0)
}

/// PTRACE_KILL: the tracee is killed (whether stopped or not).
pub fn kill(pid: i32) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    mine(b, pid).ok_or(Errno::ESRCH)?;
    let _ = host::kill(pid, SIGKILL);
    Ok(0)
}

/// Resumes stopped tracee `pid` with `cmd` and signal `sig`
/// (PTRACE_CONT, PTRACE_SYSCALL, PTRACE_SINGLESTEP, PTRACE_SYSEMU,
/// PTRACE_DETACH, PTRACE_LISTEN).
pub fn resume(pid: i32, cmd: i64, sig: usize) -> Result<usize, Errno> {
    if sig > 64 {
        return Err(Errno::EIO);
    }
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    if cmd == PTRACE_LISTEN {
        let code = s[REPORT].load(Acquire) >> 8;
        if s[FLAGS].load(Acquire) & F_SEIZED == 0 || code >> 8 != EVENT_STOP {
            return Err(Errno::EIO);
        }
    }
    let step = matches!(cmd, PTRACE_SINGLESTEP | PTRACE_SYSEMU_SINGLESTEP);
    let fl = s[REGS + R_EFLAGS].load(Relaxed);
    if step != (fl & TF != 0) {
        s[REGS + R_EFLAGS].store(if step { fl | TF } else { fl & !TF }, Relaxed);
        s[DIRTY].fetch_or(DIRTY_REGS, Relaxed);
    }
    s[CMD].store(cmd as u64, Relaxed);
    s[SIG].store(sig as u64, Relaxed);
    s[PENDING].store(0, Relaxed);
    s[STATE].store(RUNNING, Release);
    s[RESUME].fetch_add(1, Release);
    futex_wake(&s[RESUME]);
    Ok(0)
}

/// PTRACE_SETOPTIONS.
pub fn set_options(pid: i32, options: u64) -> Result<usize, Errno> {
    if options & !O_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    let b = board().ok_or(Errno::ESRCH)?;
    stopped(b, pid)?[OPTIONS].store(options, Release);
    Ok(0)
}

/// Is `[addr, addr + len)` in the tracee's runtime (never shown)?
fn in_runtime(s: &[AtomicU64], addr: usize, len: usize) -> bool {
    let end = addr.saturating_add(len) as u64;
    let addr = addr as u64;
    (0..2).any(|k| {
        let (lo, hi) = (s[RT + 2 * k].load(Relaxed), s[RT + 2 * k + 1].load(Relaxed));
        lo < hi && addr < hi && end > lo
    })
}

/// PTRACE_PEEKTEXT/PEEKDATA: the word at `addr` in the tracee.
pub fn peek(pid: i32, addr: usize) -> Result<u64, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    if in_runtime(s, addr, 8) {
        return Err(Errno::EIO);
    }
    let mut w = [0u8; 8];
    match host::read_remote(pid, addr, &mut w) {
        Ok(8) => Ok(u64::from_ne_bytes(w)),
        _ => Err(Errno::EIO),
    }
}

/// PTRACE_POKETEXT/POKEDATA: writes the word at `addr` in the tracee,
/// read-only (text) pages included, as Linux's forced write does.
pub fn poke(pid: i32, addr: usize, value: u64) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    if in_runtime(s, addr, 8) {
        return Err(Errno::EIO);
    }
    let path = alloc::format!("/proc/{pid}/mem\0");
    let path = core::ffi::CStr::from_bytes_with_nul(path.as_bytes()).map_err(|_| Errno::EIO)?;
    host::fds::with_transient_fds(|| {
        let fd = host::openat(host::AT_FDCWD, path, host::O_RDWR | host::O_CLOEXEC, 0)? as i32;
        let r = host::pwrite(fd, &value.to_ne_bytes(), addr as u64);
        let _ = host::close(fd);
        r
    })
    .ok()
    .filter(|&n| n == 8)
    .map(|_| 0)
    .ok_or(Errno::EIO)
}

/// PTRACE_PEEKUSER: the word at `offset` in `struct user`.
pub fn peek_user(pid: i32, offset: usize) -> Result<u64, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    if !offset.is_multiple_of(8) || offset >= USER_SIZE {
        return Err(Errno::EIO);
    }
    Ok(if offset < NREGS * 8 {
        s[REGS + offset / 8].load(Relaxed)
    } else if (USER_DEBUGREG..USER_DEBUGREG + 64).contains(&offset) {
        s[DR + (offset - USER_DEBUGREG) / 8].load(Relaxed)
    } else {
        0
    })
}

/// Linux's checks of a register a tracer writes (`putreg`).
fn check_reg(i: usize, v: u64) -> Result<u64, Errno> {
    match i {
        R_FS_BASE | R_GS_BASE if v >= TASK_SIZE_MAX => Err(Errno::EIO),
        R_CS if v != USER_CS => Err(Errno::EIO),
        R_SS if v != USER_SS => Err(Errno::EIO),
        23..=26 if v & 0xffff != 0 && v & 3 != 3 => Err(Errno::EIO),
        _ => Ok(v),
    }
}

/// PTRACE_POKEUSER.
pub fn poke_user(pid: i32, offset: usize, value: u64) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    if !offset.is_multiple_of(8) || offset >= USER_SIZE {
        return Err(Errno::EIO);
    }
    if offset < NREGS * 8 {
        let i = offset / 8;
        let v = check_reg(i, value)?;
        let v = if i == R_EFLAGS {
            (s[REGS + i].load(Relaxed) & !FLAG_MASK) | (v & FLAG_MASK)
        } else {
            v
        };
        s[REGS + i].store(v, Relaxed);
        s[DIRTY].fetch_or(DIRTY_REGS, Release);
        return Ok(0);
    }
    if (USER_DEBUGREG..USER_DEBUGREG + 64).contains(&offset) {
        let n = (offset - USER_DEBUGREG) / 8;
        match n {
            // A breakpoint address must be a user address (Linux's
            // arch_check_bp_in_kernelspace: EINVAL).
            0..=3 if value >= TASK_SIZE_MAX - 7 => return Err(Errno::EINVAL),
            4 | 5 => return Err(Errno::EIO),
            _ => {}
        }
        s[DR + n].store(value, Relaxed);
        return Ok(0);
    }
    // Linux ignores writes to the rest of `struct user`.
    Ok(0)
}

/// PTRACE_GETREGS.
pub fn get_regs(pid: i32) -> Result<[u64; NREGS], Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    Ok(core::array::from_fn(|i| s[REGS + i].load(Relaxed)))
}

/// PTRACE_SETREGS.
pub fn set_regs(pid: i32, r: &[u64; NREGS]) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    for (i, &v) in r.iter().enumerate() {
        check_reg(i, v)?;
    }
    for (i, &v) in r.iter().enumerate() {
        let v = if i == R_EFLAGS {
            (s[REGS + i].load(Relaxed) & !FLAG_MASK) | (v & FLAG_MASK)
        } else {
            v
        };
        s[REGS + i].store(v, Relaxed);
    }
    s[DIRTY].fetch_or(DIRTY_REGS, Release);
    Ok(0)
}

/// The tracee's FPU image (PTRACE_GETFPREGS: its first 512 bytes;
/// NT_X86_XSTATE: all of it).
pub fn get_fp(pid: i32, out: &mut [u8]) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    let n = out.len().min(s[FPLEN].load(Relaxed) as usize);
    load_bytes(&s[FP..], &mut out[..n]);
    Ok(n)
}

/// The size of the tracee's FPU image.
pub fn fp_len(pid: i32) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    Ok(stopped(b, pid)?[FPLEN].load(Relaxed) as usize)
}

/// PTRACE_SETFPREGS (and NT_PRFPREG, NT_X86_XSTATE): the image's first
/// `data.len()` bytes.
pub fn set_fp(pid: i32, data: &[u8]) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    let n = data.len().min(s[FPLEN].load(Relaxed) as usize);
    // Whole words: keep the bytes after `n` in the last one.
    let mut cur = alloc::vec![0u8; (n + 7) & !7];
    load_bytes(&s[FP..], &mut cur);
    let keep: alloc::vec::Vec<u8> = cur[464.min(n)..512.min(n)].to_vec();
    cur[..n].copy_from_slice(&data[..n]);
    // The software bytes (464..511) stay the image's own: the kernel
    // ignores them in what a tracer writes, and the signal frame's
    // image needs its magic there.
    cur[464.min(n)..512.min(n)].copy_from_slice(&keep);
    store_bytes(&s[FP..], &cur);
    s[DIRTY].fetch_or(DIRTY_FP, Release);
    Ok(0)
}

/// PTRACE_GETSIGINFO: EINVAL in a group-stop (Linux has no siginfo then).
pub fn get_siginfo(pid: i32) -> Result<SigInfo, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    if s[KIND].load(Relaxed) == KIND_GROUP {
        return Err(Errno::EINVAL);
    }
    let mut v = SigInfo::default();
    load_bytes(&s[SIGINFO..SIGINFO + 16], &mut v.0);
    Ok(v)
}

/// PTRACE_SETSIGINFO.
pub fn set_siginfo(pid: i32, info: &SigInfo) -> Result<usize, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    let s = stopped(b, pid)?;
    if s[KIND].load(Relaxed) == KIND_GROUP {
        return Err(Errno::EINVAL);
    }
    store_bytes(&s[SIGINFO..SIGINFO + 16], &info.0);
    s[DIRTY].fetch_or(DIRTY_SIGINFO, Release);
    Ok(0)
}

/// PTRACE_GETEVENTMSG.
pub fn event_msg(pid: i32) -> Result<u64, Errno> {
    let b = board().ok_or(Errno::ESRCH)?;
    Ok(stopped(b, pid)?[MSG].load(Relaxed))
}

/// What PTRACE_GET_SYSCALL_INFO reports: the stop's kind, `orig_rax`,
/// the argument registers, RAX, RIP and RSP.
pub struct SyscallInfo {
    pub kind: u64,
    pub nr: u64,
    pub args: [u64; 6],
    pub rax: u64,
    pub ip: u64,
    pub sp: u64,
}

/// PTRACE_GET_SYSCALL_INFO's view of stopped tracee `pid`.
pub fn syscall_info(pid: i32) -> Result<SyscallInfo, Errno> {
    let r = get_regs(pid)?;
    let b = board().ok_or(Errno::ESRCH)?;
    let kind = stopped(b, pid)?[KIND].load(Relaxed);
    Ok(SyscallInfo {
        kind,
        nr: r[R_ORIG_RAX],
        args: [r[R_RDI], r[R_RSI], r[R_RDX], r[R_R10], r[R_R8], r[R_R9]],
        rax: r[R_RAX],
        ip: r[R_RIP],
        sp: r[R_RSP],
    })
}

// ---------------------------------------------------------------------------
// wait(2) for a tracer.

/// Does this process trace anything (its waits then look at the board)?
pub fn is_tracer() -> bool {
    let Some(b) = board() else { return false };
    if b[H_EPOCH].load(Acquire) == 0 {
        return false;
    }
    let me = host::getpid() as u64;
    (0..SLOTS).any(|i| slot(b, i)[TRACER].load(Acquire) == me)
}

/// A report for a wait by this process: the tracee's tid, its status (as
/// wait4 gives it) and whether it is an exit.
pub struct Report {
    pub tid: i32,
    pub status: i32,
    pub exited: bool,
}

/// Which tracees a wait selects (`pid` as wait4 takes it, with the
/// __WALL/__WCLONE `options`).
fn selects(s: &[AtomicU64], pid: i32, options: u32) -> bool {
    const WCLONE: u32 = 0x8000_0000;
    const WALL: u32 = 0x4000_0000;
    let tid = s[TRACEE].load(Acquire) as i32;
    let tgid = s[TGID].load(Acquire) as i32;
    if pid > 0 && tid != pid {
        return false;
    }
    // A thread that is not its process's first is a "clone" child.
    let clone = tgid != 0 && tgid != tid;
    options & WALL != 0 || clone == (options & WCLONE != 0)
}

/// Takes (or with WNOWAIT peeks at) a report for this process's wait
/// (`pid`, `options`).
pub fn take_report(pid: i32, options: u32) -> Option<Report> {
    const WNOWAIT: u32 = 0x0100_0000;
    let b = board()?;
    let me = host::getpid() as u64;
    for i in 0..SLOTS {
        let s = slot(b, i);
        if s[TRACER].load(Acquire) != me || s[PENDING].load(Acquire) == 0 {
            continue;
        }
        if !selects(s, pid, options) {
            continue;
        }
        let tid = s[TRACEE].load(Acquire) as i32;
        let status = s[REPORT].load(Acquire) as i32;
        let exited = s[FLAGS].load(Acquire) & F_EXITED != 0;
        if options & WNOWAIT == 0 {
            if exited {
                free(b, i);
            } else {
                s[PENDING].store(0, Release);
            }
        }
        return Some(Report {
            tid,
            status,
            exited,
        });
    }
    None
}

/// Tracees of this process that ended unseen (killed: SIGKILL gives the
/// runtime no chance to report) are reported as killed by SIGKILL; those
/// that are this process's children are left to the host's wait.
pub fn reap_vanished() {
    let Some(b) = board() else { return };
    let me = host::getpid() as u64;
    for i in 0..SLOTS {
        let s = slot(b, i);
        if s[TRACER].load(Acquire) != me || s[PENDING].load(Acquire) != 0 {
            continue;
        }
        let tid = s[TRACEE].load(Acquire);
        if tid == 0 || tid == RESERVED || !gone(tid as i32) {
            continue;
        }
        let tgid = s[TGID].load(Acquire);
        if s[PARENT].load(Acquire) == me && (tgid == 0 || tgid == tid) {
            // Our child: the host's wait reports it (and frees the slot).
            continue;
        }
        s[REPORT].store(SIGKILL as u64, Relaxed);
        s[FLAGS].fetch_or(F_EXITED, Release);
        s[PENDING].store(1, Release);
    }
}

/// Has thread `tid` ended (gone, or a zombie)?
fn gone(tid: i32) -> bool {
    if host::kill(tid, 0) == Err(Errno::ESRCH) {
        return true;
    }
    thread_state(tid).is_none_or(|state| state == b'Z' || state == b'X')
}

/// The host's wait reported `pid` (a child of ours) ended: a slot it had
/// as our tracee goes.
pub fn child_reaped(pid: i32) {
    let Some(b) = board() else { return };
    if let Some(i) = mine(b, pid) {
        free(b, i);
    }
}

/// The address of the board's report counter (a futex word: tracers
/// sleep on it until it moves past the `report_mark` they read).
pub fn report_word() -> usize {
    board().map_or(0, |b| &b[H_NOTIFY] as *const AtomicU64 as usize)
}

/// The board's report counter, read before looking for reports.
pub fn report_mark() -> u64 {
    board().map_or(0, |b| b[H_NOTIFY].load(Acquire))
}

/// Does this process trace a thread that this wait (`pid`, `options`)
/// may one day report (so that the wait waits rather than fail with
/// ECHILD)?
pub fn has_waitable(pid: i32, options: u32) -> bool {
    let Some(b) = board() else { return false };
    let me = host::getpid() as u64;
    (0..SLOTS).any(|i| {
        let s = slot(b, i);
        s[TRACER].load(Acquire) == me && selects(s, pid, options)
    })
}

/// The fork hook: a fork child is traced only if its parent's tracer
/// asked (`before_clone`); it forgets its parent's slot.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "ptrace",
    hold: crate::sync::ForkHook::no_lock,
    alone: crate::sync::ForkHook::nothing,
    child: |_| {
        let t = crate::kernel::thread::current();
        let reserved = t.ptrace_child.take();
        t.ptrace.set(0);
        t.ptrace_epoch.set(0);
        t.ptrace_doorbell.set(false);
        t.update_pending_flag();
        if reserved != 0 {
            child_traced(t, reserved - 1, host::gettid());
        }
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize) -> alloc::vec::Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn bytes_round_trip_through_words() {
        let w = words(8);
        let src: alloc::vec::Vec<u8> = (0..61u8).collect();
        store_bytes(&w, &src);
        let mut back = [0u8; 61];
        load_bytes(&w, &mut back);
        assert_eq!(&back[..], &src[..]);
    }

    #[test]
    fn waits_select_threads_as_linux() {
        let s = words(SLOT_WORDS);
        const WCLONE: u32 = 0x8000_0000;
        const WALL: u32 = 0x4000_0000;
        // A process's first thread: any wait without __WCLONE.
        s[TRACEE].store(100, Relaxed);
        s[TGID].store(100, Relaxed);
        assert!(selects(&s, -1, 0));
        assert!(selects(&s, 100, WALL));
        assert!(!selects(&s, 100, WCLONE));
        assert!(!selects(&s, 101, 0));
        // Another thread: only __WALL or __WCLONE.
        s[TRACEE].store(101, Relaxed);
        assert!(!selects(&s, -1, 0));
        assert!(selects(&s, -1, WCLONE));
        assert!(selects(&s, 101, WALL));
    }

    #[test]
    fn register_writes_are_checked_as_putreg() {
        assert_eq!(check_reg(R_CS, USER_CS), Ok(USER_CS));
        assert_eq!(check_reg(R_CS, 0x23), Err(Errno::EIO));
        assert_eq!(check_reg(R_SS, 0), Err(Errno::EIO));
        assert_eq!(check_reg(R_FS_BASE, TASK_SIZE_MAX), Err(Errno::EIO));
        assert_eq!(check_reg(R_FS_BASE, 0x7f00_0000_0000), Ok(0x7f00_0000_0000));
        assert_eq!(check_reg(R_RAX, u64::MAX), Ok(u64::MAX));
        // ds, es, fs, gs: a null selector or one of ring 3.
        assert_eq!(check_reg(23, 0), Ok(0));
        assert_eq!(check_reg(24, 0x2b), Ok(0x2b));
        assert_eq!(check_reg(25, 0x28), Err(Errno::EIO));
    }

    #[test]
    fn doorbell_is_known_by_code_and_value() {
        let mut info = SigInfo::kernel(SIGSYS, SI_QUEUE);
        info.0[24..32].copy_from_slice(&DOORBELL.to_ne_bytes());
        assert!(is_doorbell(&info));
        info.0[24] ^= 1;
        assert!(!is_doorbell(&info));
        let mut user = SigInfo::kernel(SIGSYS, SI_USER);
        user.0[24..32].copy_from_slice(&DOORBELL.to_ne_bytes());
        assert!(!is_doorbell(&user));
    }

    #[test]
    fn the_slot_layout_fits() {
        assert!(FP + FP_MAX / 8 <= SLOT_WORDS);
        assert!(SIGINFO + 16 <= FP && DR + 8 <= SIGINFO && REGS + NREGS <= DR);
        assert!(HEADER + SLOTS * SLOT_WORDS <= PTRACE_WORDS);
        assert_eq!(USER_DEBUGREG, 848);
    }
}
