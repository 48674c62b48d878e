//! The program's own seccomp filters (seccomp(2), prctl(PR_SET_SECCOMP)),
//! run by the library OS: Syscall User Dispatch hands every program call
//! to the runtime before the kernel's seccomp would see it, and a filter
//! installed on the host would filter the runtime's own calls too (it
//! killed LTP seccomp01's child at the runtime's rt_sigprocmask). So the
//! filters are kept here, per thread as Linux keeps them, inherited by
//! clone and fork, passed on through execve, and each program call is run
//! through them (`entry::dispatch`) as Linux would: the classic BPF program
//! of each filter, newest first, on the call's `seccomp_data`, the most
//! restrictive action winning.
//!
//! What differs from Linux (docs/ARCHITECTURE.md, "The program's seccomp
//! filters"): the filters bind the program, not the runtime (a program that
//! takes the runtime over is not held by them; the sandbox's filter is the
//! kernel's); no user-space notification listener
//! (SECCOMP_FILTER_FLAG_NEW_LISTENER is EINVAL, SECCOMP_RET_USER_NOTIF and
//! SECCOMP_RET_TRACE give ENOSYS, as without a listener or a tracer); 32-bit
//! `int $0x80` calls are not filtered; at most [`MAX_FILTERS`] filters in a
//! process's life.
#![deny(unsafe_code)]

use crate::host::errno::Errno;
use core::sync::atomic::{AtomicUsize, Ordering};

/// One instruction of a classic BPF program (`struct sock_filter`, whose
/// layout it has: the CLI hands slices of these to seccomp(2)).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

impl Insn {
    pub fn from_bytes(b: [u8; 8]) -> Insn {
        Insn {
            code: u16::from_le_bytes([b[0], b[1]]),
            jt: b[2],
            jf: b[3],
            k: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// An instruction that does not jump (`BPF_STMT`).
    pub const fn stmt(code: u16, k: u32) -> Insn {
        Insn {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    /// A conditional jump (`BPF_JUMP`).
    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn { code, jt, jf, k }
    }

    pub fn to_bytes(self) -> [u8; 8] {
        let c = self.code.to_le_bytes();
        let k = self.k.to_le_bytes();
        [c[0], c[1], self.jt, self.jf, k[0], k[1], k[2], k[3]]
    }
}

/// Linux's limits: instructions in one filter (BPF_MAXINSNS), and in all
/// the filters a call runs through, each counted with 4 more
/// (MAX_INSNS_PER_PATH).
pub const MAX_INSNS: usize = 4096;
pub const MAX_INSNS_PER_PATH: usize = 32768;

/// The filters a process may install in its life (each one is kept until
/// the process ends or execs: threads may hold any of them).
pub const MAX_FILTERS: usize = 256;

/// The size of `struct seccomp_data` (what BPF_LEN loads).
pub const DATA_SIZE: u32 = 64;

// Classic BPF.
const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ST: u16 = 0x02;
const STX: u16 = 0x03;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const MISC: u16 = 0x07;
const W: u16 = 0x00;
const IMM: u16 = 0x00;
const ABS: u16 = 0x20;
const MEM: u16 = 0x60;
const LEN: u16 = 0x80;
const K: u16 = 0x00;
const X: u16 = 0x08;
const A: u16 = 0x10;
const ADD: u16 = 0x00;
const SUB: u16 = 0x10;
const MUL: u16 = 0x20;
const DIV: u16 = 0x30;
const OR: u16 = 0x40;
const AND: u16 = 0x50;
const LSH: u16 = 0x60;
const RSH: u16 = 0x70;
const NEG: u16 = 0x80;
const XOR: u16 = 0xa0;
const JA: u16 = 0x00;
const JEQ: u16 = 0x10;
const JGT: u16 = 0x20;
const JGE: u16 = 0x30;
const JSET: u16 = 0x40;
const TAX: u16 = 0x00;
const TXA: u16 = 0x80;

/// Actions (`SECCOMP_RET_*`, the high 16 bits of a filter's result).
pub mod ret {
    pub const KILL_PROCESS: u32 = 0x8000_0000;
    pub const KILL_THREAD: u32 = 0x0000_0000;
    pub const TRAP: u32 = 0x0003_0000;
    pub const ERRNO: u32 = 0x0005_0000;
    pub const USER_NOTIF: u32 = 0x7fc0_0000;
    pub const TRACE: u32 = 0x7ff0_0000;
    pub const LOG: u32 = 0x7ffc_0000;
    pub const ALLOW: u32 = 0x7fff_0000;
    pub const ACTION_FULL: u32 = 0xffff_0000;
    pub const DATA: u32 = 0x0000_ffff;
}

/// Checks a filter as Linux does (`seccomp_check_filter`,
/// `bpf_check_classic`): only the instructions seccomp allows, loads of
/// `seccomp_data` words only, jumps inside the program, a return last, no
/// constant division by zero or shift by 32 or more, and no scratch word
/// read before every path to it has written it. EINVAL otherwise.
pub fn check(prog: &[Insn]) -> Result<(), Errno> {
    let len = prog.len();
    if len == 0 || len > MAX_INSNS {
        return Err(Errno::EINVAL);
    }
    for (pc, i) in prog.iter().enumerate() {
        let rest = len - pc - 1;
        let ok = match i.code {
            c if c == LD | W | ABS => i.k < DATA_SIZE && i.k % 4 == 0,
            c if c == LD | W | LEN || c == LDX | W | LEN => true,
            c if c == LD | IMM || c == LDX | IMM || c == MISC | TAX || c == MISC | TXA => true,
            c if c == LD | MEM || c == LDX | MEM || c == ST || c == STX => i.k < 16,
            c if c & 0x07 == ALU => match (c & 0xf0, c & 0x08) {
                (DIV, K) => i.k != 0 && c == ALU | DIV | K,
                (LSH | RSH, K) => i.k < 32 && c & !0xf8 == ALU,
                (ADD | SUB | MUL | DIV | OR | AND | LSH | RSH | XOR, _) => c & !0xf8 == ALU,
                (NEG, K) => c == ALU | NEG,
                _ => false,
            },
            c if c == JMP | JA => (i.k as usize) < rest,
            c if c & 0x07 == JMP => {
                matches!(c & 0xf0, JEQ | JGT | JGE | JSET)
                    && c & !0xf8 == JMP
                    && (i.jt as usize) < rest
                    && (i.jf as usize) < rest
            }
            c if c == RET | K || c == RET | A => true,
            _ => false,
        };
        if !ok {
            return Err(Errno::EINVAL);
        }
    }
    if !matches!(prog[len - 1].code, c if c == RET | K || c == RET | A) {
        return Err(Errno::EINVAL);
    }
    // Scratch words read only after every path has stored them.
    let mut masks = alloc::vec![u16::MAX; len];
    let mut valid: u16 = 0;
    for (pc, i) in prog.iter().enumerate() {
        valid &= masks[pc];
        match i.code {
            c if c == ST || c == STX => valid |= 1 << i.k,
            c if c == LD | MEM || c == LDX | MEM => {
                if valid & (1 << i.k) == 0 {
                    return Err(Errno::EINVAL);
                }
            }
            c if c == JMP | JA => {
                masks[pc + 1 + i.k as usize] &= valid;
                valid = u16::MAX;
            }
            c if c & 0x07 == JMP => {
                masks[pc + 1 + i.jt as usize] &= valid;
                masks[pc + 1 + i.jf as usize] &= valid;
                valid = u16::MAX;
            }
            _ => {}
        }
    }
    Ok(())
}

/// A call as a filter sees it (`struct seccomp_data`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Data {
    pub nr: i32,
    pub arch: u32,
    pub ip: u64,
    pub args: [u64; 6],
}

/// AUDIT_ARCH_X86_64.
pub const ARCH_X86_64: u32 = 0xc000_003e;

impl Data {
    /// The 32-bit word at `off` (4-aligned, below [`DATA_SIZE`]: `check`).
    fn word(&self, off: u32) -> u32 {
        let q = |v: u64| {
            if off % 8 == 0 {
                v as u32
            } else {
                (v >> 32) as u32
            }
        };
        match off {
            0 => self.nr as u32,
            4 => self.arch,
            8 | 12 => q(self.ip),
            16..=63 => q(self.args[(off as usize - 16) / 8]),
            _ => 0,
        }
    }
}

/// An ALU instruction `code` on `a` and `src`; None for a division by
/// zero (which ends the program with 0, KILL).
fn alu(code: u16, a: u32, src: u32) -> Option<u32> {
    Some(match code & 0xf0 {
        ADD => a.wrapping_add(src),
        SUB => a.wrapping_sub(src),
        MUL => a.wrapping_mul(src),
        DIV => a.checked_div(src)?,
        OR => a | src,
        AND => a & src,
        LSH => a.wrapping_shl(src & 31),
        RSH => a.wrapping_shr(src & 31),
        NEG => a.wrapping_neg(),
        _ => a ^ src,
    })
}

/// Is conditional jump `code` (not JA) taken with `a` and `src`?
fn taken(code: u16, a: u32, src: u32) -> bool {
    match code & 0xf0 {
        JEQ => a == src,
        JGT => a > src,
        JGE => a >= src,
        _ => a & src != 0,
    }
}

/// Runs a checked filter on `d`; its result.
pub fn run(prog: &[Insn], d: &Data) -> u32 {
    let (mut a, mut x) = (0u32, 0u32);
    let mut m = [0u32; 16];
    let mut pc = 0usize;
    while let Some(i) = prog.get(pc) {
        pc += 1;
        let src = if i.code & X != 0 { x } else { i.k };
        match i.code & 0x07 {
            LD => match i.code & 0xe0 {
                ABS => a = d.word(i.k),
                MEM => a = m[i.k as usize & 15],
                LEN => a = DATA_SIZE,
                _ => a = i.k,
            },
            LDX => match i.code & 0xe0 {
                MEM => x = m[i.k as usize & 15],
                LEN => x = DATA_SIZE,
                _ => x = i.k,
            },
            ST => m[i.k as usize & 15] = a,
            STX => m[i.k as usize & 15] = x,
            ALU => match alu(i.code, a, src) {
                Some(v) => a = v,
                None => return 0, // division by a zero X ends the program
            },
            JMP => {
                if i.code & 0xf0 == JA {
                    pc += i.k as usize;
                    continue;
                }
                pc += if taken(i.code, a, src) { i.jt } else { i.jf } as usize;
            }
            RET => return if i.code & A != 0 { a } else { i.k },
            _ => {
                if i.code & 0xf8 == TXA {
                    a = x;
                } else {
                    x = a;
                }
            }
        }
    }
    0
}

/// Does action `a` take precedence over `b` (Linux compares the actions as
/// signed numbers: KILL_PROCESS first, ALLOW last)?
fn stronger(a: u32, b: u32) -> bool {
    ((a & ret::ACTION_FULL) as i32) < ((b & ret::ACTION_FULL) as i32)
}

/// An installed filter: its program and the one installed before it.
pub struct Filter {
    pub prog: alloc::vec::Vec<Insn>,
    /// The filter this one was stacked on ([`Mode`] numbering; 0: none).
    pub prev: u32,
    /// SECCOMP_FILTER_FLAG_LOG (kept for what it says; nothing is logged).
    pub log: bool,
    /// The calls (by number, below [`CACHED_NRS`]) that this filter and
    /// every one it is stacked on allow whatever their arguments and
    /// address: they go on without running the filters (Linux's
    /// `seccomp_cache_prepare` does the same), and a patched site may
    /// serve them on its direct entry. Set by [`add`].
    allows: [u64; CACHED_NRS / 64],
    /// The same for this filter alone (what [`encode`] passes on).
    own: [u64; CACHED_NRS / 64],
}

impl Filter {
    pub fn new(prog: alloc::vec::Vec<Insn>, prev: u32, log: bool) -> Filter {
        Filter {
            prog,
            prev,
            log,
            allows: [0; CACHED_NRS / 64],
            own: [0; CACHED_NRS / 64],
        }
    }
}

/// The call numbers the allow cache covers (x86-64's calls are below 512).
pub const CACHED_NRS: usize = 512;

/// A value as [`allows_always`] follows it: known, or depending on the
/// call's arguments or address.
type Known = Option<u32>;

/// Does checked filter `prog` allow call `nr` on x86-64 whatever its
/// arguments and instruction pointer? Runs the filter with only the number
/// and the architecture known; any decision on something else (a jump on
/// an unknown value, a return of one) answers no, as Linux's
/// `seccomp_is_const_allow` does. Classic BPF jumps only forward, so this
/// ends.
pub fn allows_always_one(prog: &[Insn], nr: u32) -> bool {
    let (mut a, mut x): (Known, Known) = (Some(0), Some(0));
    let mut m: [Known; 16] = [Some(0); 16];
    let mut pc = 0usize;
    while let Some(i) = prog.get(pc) {
        pc += 1;
        let src = if i.code & X != 0 { x } else { Some(i.k) };
        match i.code & 0x07 {
            LD => match i.code & 0xe0 {
                ABS => {
                    a = match i.k {
                        0 => Some(nr),
                        4 => Some(ARCH_X86_64),
                        _ => None,
                    }
                }
                MEM => a = m[i.k as usize & 15],
                LEN => a = Some(DATA_SIZE),
                _ => a = Some(i.k),
            },
            LDX => match i.code & 0xe0 {
                MEM => x = m[i.k as usize & 15],
                LEN => x = Some(DATA_SIZE),
                _ => x = Some(i.k),
            },
            ST => m[i.k as usize & 15] = a,
            STX => m[i.k as usize & 15] = x,
            ALU => {
                a = match (a, src) {
                    (Some(a), Some(src)) => match alu(i.code, a, src) {
                        Some(v) => Some(v),
                        // Division by a zero X ends the program (KILL).
                        None => return false,
                    },
                    _ => None,
                }
            }
            JMP => {
                if i.code & 0xf0 == JA {
                    pc += i.k as usize;
                    continue;
                }
                let (Some(a), Some(src)) = (a, src) else {
                    return false;
                };
                pc += if taken(i.code, a, src) { i.jt } else { i.jf } as usize;
            }
            RET => {
                let r = if i.code & A != 0 { a } else { Some(i.k) };
                return matches!(r.map(|r| r & ret::ACTION_FULL), Some(ret::ALLOW | ret::LOG));
            }
            _ => {
                if i.code & 0xf8 == TXA {
                    a = x;
                } else {
                    x = a;
                }
            }
        }
    }
    false
}

/// Does mode `mode` (a thread's `seccomp`) let call `nr` go on without
/// running its filters? (Strict mode: never; its few calls are decided by
/// [`evaluate`].)
#[inline]
pub fn allows_always(mode: u32, nr: usize) -> bool {
    if mode == STRICT || nr >= CACHED_NRS {
        return false;
    }
    filter(mode).is_some_and(|f| f.allows[nr / 64] >> (nr % 64) & 1 != 0)
}

static FILTERS: [spin::Once<Filter>; MAX_FILTERS] = [const { spin::Once::new() }; MAX_FILTERS];
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A thread's seccomp mode, as kept in `Thread::seccomp`: 0 none,
/// [`STRICT`], otherwise the newest filter's number (index + 1).
pub const STRICT: u32 = u32::MAX;

/// The filter numbered `n` (index + 1).
pub fn filter(n: u32) -> Option<&'static Filter> {
    FILTERS.get((n as usize).checked_sub(1)?)?.get()
}

/// The calls filter `prog` alone allows whatever the arguments (see
/// [`Filter`]'s `allows`), by number.
pub fn allows_of(prog: &[Insn]) -> [u64; CACHED_NRS / 64] {
    let mut out = [0u64; CACHED_NRS / 64];
    for nr in 0..CACHED_NRS {
        if allows_always_one(prog, nr as u32) {
            out[nr / 64] |= 1 << (nr % 64);
        }
    }
    out
}

/// Keeps `f` for the rest of the process's life; its number. `own`: the
/// calls `f` alone allows whatever the arguments, when known already
/// (worked out by whoever passed the filter on through execve: running
/// a filter of 1,500 instructions 512 times cost ~0.2 ms at each start).
pub fn add_with(mut f: Filter, own: Option<[u64; CACHED_NRS / 64]>) -> Result<u32, Errno> {
    let own = own.unwrap_or_else(|| allows_of(&f.prog));
    f.own = own;
    let below = filter(f.prev).map(|p| p.allows);
    for (w, o) in own.iter().enumerate() {
        f.allows[w] = o & below.map_or(u64::MAX, |b| b[w]);
    }
    let i = NEXT.fetch_add(1, Ordering::Relaxed);
    let slot = FILTERS.get(i).ok_or(Errno::ENOMEM)?;
    slot.call_once(|| f);
    Ok(i as u32 + 1)
}

/// Keeps `f` for the rest of the process's life; its number.
pub fn add(f: Filter) -> Result<u32, Errno> {
    add_with(f, None)
}

/// The instructions a call runs through with `newest` on top (Linux's
/// path length: each filter's length plus 4).
pub fn path_len(newest: u32) -> usize {
    let mut n = 0;
    let mut f = newest;
    while let Some(x) = filter(f) {
        n += x.prog.len() + 4;
        f = x.prev;
    }
    n
}

/// Is `older` the filter `newer` was stacked on, directly or not (or the
/// same one)? 0 (no filter) is everyone's ancestor.
pub fn is_ancestor(older: u32, newer: u32) -> bool {
    let mut f = newer;
    loop {
        if f == older {
            return true;
        }
        match filter(f) {
            Some(x) => f = x.prev,
            None => return false,
        }
    }
}

/// What the filters of mode `mode` say of call `d`: the most restrictive
/// result of all of them (strict mode: ALLOW for read, write, exit and
/// rt_sigreturn, KILL_THREAD with SIGKILL for the rest, see [`Verdict`]).
pub fn evaluate(mode: u32, d: &Data) -> Verdict {
    if mode == STRICT {
        return if matches!(d.nr, 0 | 1 | 60 | 15) {
            Verdict::Allow
        } else {
            Verdict::StrictKill
        };
    }
    let mut r = ret::ALLOW;
    let mut f = mode;
    while let Some(x) = filter(f) {
        let cur = run(&x.prog, d);
        if stronger(cur, r) {
            r = cur;
        }
        f = x.prev;
    }
    let data = r & ret::DATA;
    match r & ret::ACTION_FULL {
        ret::ALLOW | ret::LOG => Verdict::Allow,
        ret::ERRNO => Verdict::Errno(data.min(4095) as i32),
        ret::TRAP => Verdict::Trap(data as i32),
        ret::TRACE | ret::USER_NOTIF => Verdict::Errno(Errno::ENOSYS.0),
        ret::KILL_THREAD => Verdict::KillThread,
        _ => Verdict::KillProcess,
    }
}

/// What becomes of a call the filters ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The call goes on.
    Allow,
    /// Not made: it fails with this errno.
    Errno(i32),
    /// Not made: SIGSYS (SYS_SECCOMP, si_errno the filter's data) is forced
    /// on the thread.
    Trap(i32),
    /// The thread ends (the process, with a core, if it is its last).
    KillThread,
    /// The process ends with SIGSYS and a core.
    KillProcess,
    /// Strict mode: the thread ends as if by SIGKILL.
    StrictKill,
}

/// Is `action` one this library OS carries out (SECCOMP_GET_ACTION_AVAIL)?
pub fn action_available(action: u32) -> bool {
    matches!(
        action,
        ret::KILL_PROCESS
            | ret::KILL_THREAD
            | ret::TRAP
            | ret::ERRNO
            | ret::TRACE
            | ret::LOG
            | ret::ALLOW
    )
}

/// The filters of mode `newest`, oldest first, as execve passes them on:
/// per filter a flags byte (1: LOG; 2: the calls it allows whatever the
/// arguments follow), its length (u16, little-endian), its instructions
/// and (flag 2) those calls, a bit per number (64 bytes, little-endian
/// words).
pub fn encode(newest: u32) -> alloc::vec::Vec<u8> {
    let mut chain = alloc::vec::Vec::new();
    let mut f = newest;
    while let Some(x) = filter(f) {
        chain.push(x);
        f = x.prev;
    }
    let mut out = alloc::vec::Vec::new();
    for x in chain.iter().rev() {
        encode_filter(&mut out, &x.prog, x.log, &x.own);
    }
    out
}

/// Appends one filter to `out` in [`encode`]'s format: `prog`, its LOG
/// flag, and `own`, the calls it alone allows whatever the arguments
/// ([`allows_of`]).
pub fn encode_filter(
    out: &mut alloc::vec::Vec<u8>,
    prog: &[Insn],
    log: bool,
    own: &[u64; CACHED_NRS / 64],
) {
    out.push(u8::from(log) | ENCODED_ALLOWS);
    out.extend_from_slice(&(prog.len() as u16).to_le_bytes());
    for i in prog {
        out.extend_from_slice(&i.to_bytes());
    }
    for w in own {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// [`encode`]'s flag: the filter's allowed calls follow it.
pub const ENCODED_ALLOWS: u8 = 2;

/// Installs the filters [`encode`] gave (checked again); the newest one's
/// number (0 for none).
pub fn decode(mut b: &[u8]) -> Result<u32, Errno> {
    let mut newest = 0;
    while !b.is_empty() {
        if b.len() < 3 {
            return Err(Errno::EINVAL);
        }
        let log = b[0] & 1 != 0;
        let has_allows = b[0] & ENCODED_ALLOWS != 0;
        let n = u16::from_le_bytes([b[1], b[2]]) as usize;
        b = &b[3..];
        if b.len() < n * 8 {
            return Err(Errno::EINVAL);
        }
        let prog: alloc::vec::Vec<Insn> = b[..n * 8]
            .chunks_exact(8)
            .map(|c| Insn::from_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        b = &b[n * 8..];
        check(&prog)?;
        let own = if has_allows {
            if b.len() < CACHED_NRS / 8 {
                return Err(Errno::EINVAL);
            }
            let mut own = [0u64; CACHED_NRS / 64];
            for (w, c) in own.iter_mut().zip(b.chunks_exact(8)) {
                *w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            }
            b = &b[CACHED_NRS / 8..];
            Some(own)
        } else {
            None
        };
        newest = add_with(Filter::new(prog, newest, log), own)?;
    }
    Ok(newest)
}

/// SECCOMP_FILTER_FLAG_*.
pub mod flag {
    pub const TSYNC: u32 = 1;
    pub const LOG: u32 = 2;
    pub const SPEC_ALLOW: u32 = 4;
    pub const NEW_LISTENER: u32 = 8;
    pub const TSYNC_ESRCH: u32 = 16;
    pub const WAIT_KILLABLE_RECV: u32 = 32;
    pub const ALL: u32 = 63;
}

/// Checks the flags of SECCOMP_SET_MODE_FILTER as Linux does, before
/// anything else (EINVAL). A listener is refused: no notification channel
/// is emulated.
pub fn check_flags(flags: u32) -> Result<(), Errno> {
    if flags & !flag::ALL != 0
        || flags & flag::NEW_LISTENER != 0
        || flags & flag::WAIT_KILLABLE_RECV != 0 && flags & flag::NEW_LISTENER == 0
    {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// May the calling thread install a filter: no_new_privs set, or
/// CAP_SYS_ADMIN (EACCES)?
pub fn may_install() -> Result<(), Errno> {
    if crate::host::no_new_privs() || crate::host::has_effective_cap(21) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// Installs filter `prog` (checked) on thread `t`, and with TSYNC on
/// every thread of its process; SECCOMP_SET_MODE_FILTER's result (0, or
/// with TSYNC the tid of a thread whose filters are not an ancestor of
/// `t`'s).
pub fn install_filter(
    t: &crate::kernel::thread::Thread,
    flags: u32,
    prog: alloc::vec::Vec<Insn>,
) -> Result<usize, Errno> {
    let mode = t.seccomp.load(Ordering::Relaxed);
    if mode == STRICT {
        return Err(Errno::EINVAL);
    }
    if path_len(mode) + prog.len() + 4 > MAX_INSNS_PER_PATH {
        return Err(Errno::ENOMEM);
    }
    let same = |o: &crate::kernel::thread::Thread| {
        !core::ptr::eq(o, t) && core::ptr::eq(o.process(), t.process())
    };
    if flags & flag::TSYNC != 0 {
        let mut refused = 0;
        crate::kernel::thread::for_each_live(|o| {
            let m = o.seccomp.load(Ordering::Relaxed);
            if refused == 0 && same(o) && (m == STRICT || !is_ancestor(m, mode)) {
                refused = o.tid();
            }
        });
        if refused != 0 {
            return if flags & flag::TSYNC_ESRCH != 0 {
                Err(Errno::ESRCH)
            } else {
                Ok(refused as usize)
            };
        }
    }
    let new = add(Filter::new(prog, mode, flags & flag::LOG != 0))?;
    crate::patch::stop_for_seccomp();
    t.seccomp.store(new, Ordering::Relaxed);
    if flags & flag::TSYNC != 0 {
        crate::kernel::thread::for_each_live(|o| {
            if same(o) {
                o.seccomp.store(new, Ordering::Relaxed);
            }
        });
    }
    Ok(0)
}

/// Puts thread `t` in strict mode (EINVAL if it has filters).
pub fn install_strict(t: &crate::kernel::thread::Thread) -> Result<usize, Errno> {
    if t.seccomp.load(Ordering::Relaxed) != 0 {
        return Err(Errno::EINVAL);
    }
    crate::patch::stop_for_seccomp();
    t.seccomp.store(STRICT, Ordering::Relaxed);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// LTP seccomp01's filter: a few calls allowed, the rest killed.
    fn allow_list() -> alloc::vec::Vec<Insn> {
        vec![
            Insn::stmt(LD | W | ABS, 0),
            Insn::jump(JMP | JEQ | K, 247, 3, 0),
            Insn::jump(JMP | JEQ | K, 14, 2, 0),
            Insn::jump(JMP | JEQ | K, 1, 1, 0),
            Insn::stmt(RET | K, ret::KILL_THREAD),
            Insn::stmt(RET | K, ret::ALLOW),
        ]
    }

    fn call(nr: i32) -> Data {
        Data {
            nr,
            arch: ARCH_X86_64,
            ..Data::default()
        }
    }

    #[test]
    fn runs_an_allow_list() {
        let p = allow_list();
        check(&p).unwrap();
        assert_eq!(run(&p, &call(1)), ret::ALLOW);
        assert_eq!(run(&p, &call(14)), ret::ALLOW);
        assert_eq!(run(&p, &call(3)), ret::KILL_THREAD);
    }

    #[test]
    fn loads_args_and_ip_words() {
        let d = Data {
            nr: 2,
            arch: ARCH_X86_64,
            ip: 0x1122_3344_5566_7788,
            args: [1, 2, 3, 4, 5, 0xaaaa_bbbb_cccc_dddd],
        };
        for (off, want) in [
            (0, 2),
            (4, ARCH_X86_64),
            (8, 0x5566_7788),
            (12, 0x1122_3344),
            (16, 1),
            (56, 0xcccc_dddd),
            (60, 0xaaaa_bbbb),
        ] {
            let p = vec![Insn::stmt(LD | W | ABS, off), Insn::stmt(RET | A, 0)];
            check(&p).unwrap();
            assert_eq!(run(&p, &d), want, "offset {off}");
        }
    }

    #[test]
    fn alu_scratch_and_misc() {
        let p = vec![
            Insn::stmt(LD | IMM, 6),
            Insn::stmt(ST, 3),
            Insn::stmt(LDX | IMM, 4),
            Insn::stmt(ALU | MUL | X, 0),   // 24
            Insn::stmt(ALU | SUB | K, 4),   // 20
            Insn::stmt(ALU | RSH | K, 1),   // 10
            Insn::stmt(MISC | TAX, 0),      // X = 10
            Insn::stmt(LD | MEM, 3),        // A = 6
            Insn::stmt(ALU | ADD | X, 0),   // 16
            Insn::stmt(ALU | OR | K, 1),    // 17
            Insn::stmt(ALU | XOR | K, 3),   // 18
            Insn::stmt(ALU | DIV | K, 3),   // 6
            Insn::stmt(ALU | LSH | K, 2),   // 24
            Insn::stmt(ALU | AND | K, 0xf), // 8
            Insn::stmt(RET | A, 0),
        ];
        check(&p).unwrap();
        assert_eq!(run(&p, &call(0)), 8);
        // Division by a zero X returns 0.
        let p = vec![
            Insn::stmt(LD | IMM, 6),
            Insn::stmt(LDX | IMM, 0),
            Insn::stmt(ALU | DIV | X, 0),
            Insn::stmt(RET | K, ret::ALLOW),
        ];
        check(&p).unwrap();
        assert_eq!(run(&p, &call(0)), 0);
    }

    #[test]
    fn jumps() {
        // JSET, JGT, JGE and JA.
        let p = vec![
            Insn::stmt(LD | W | ABS, 16),
            Insn::jump(JMP | JSET | K, 0x8, 0, 1),
            Insn::stmt(RET | K, 1),
            Insn::jump(JMP | JGT | K, 100, 0, 1),
            Insn::stmt(RET | K, 2),
            Insn::jump(JMP | JGE | K, 50, 1, 0),
            Insn::stmt(JMP | JA, 1),
            Insn::stmt(RET | K, 3),
            Insn::stmt(RET | K, 4),
        ];
        check(&p).unwrap();
        let with = |a0| Data {
            args: [a0, 0, 0, 0, 0, 0],
            ..call(0)
        };
        assert_eq!(run(&p, &with(8)), 1);
        assert_eq!(run(&p, &with(101)), 2);
        assert_eq!(run(&p, &with(50)), 3);
        assert_eq!(run(&p, &with(7)), 4);
    }

    #[test]
    fn refuses_what_linux_refuses() {
        let bad: &[&[Insn]] = &[
            &[],
            &[Insn::stmt(LD | W | ABS, 0)], // no return last
            &[Insn::stmt(LD | W | ABS, 2), Insn::stmt(RET | K, 0)], // unaligned
            &[Insn::stmt(LD | W | ABS, 64), Insn::stmt(RET | K, 0)], // beyond the data
            &[Insn::stmt(LD | 0x10 | ABS, 0), Insn::stmt(RET | K, 0)], // a half-word load
            &[Insn::stmt(ALU | DIV | K, 0), Insn::stmt(RET | K, 0)],
            &[Insn::stmt(ALU | LSH | K, 32), Insn::stmt(RET | K, 0)],
            &[Insn::stmt(ALU | 0x90 | K, 3), Insn::stmt(RET | K, 0)], // BPF_MOD
            &[Insn::stmt(JMP | JA, 1), Insn::stmt(RET | K, 0)],       // out of the program
            &[Insn::jump(JMP | JEQ | K, 0, 0, 1), Insn::stmt(RET | K, 0)],
            &[Insn::stmt(LD | MEM, 0), Insn::stmt(RET | K, 0)], // read before any store
            &[Insn::stmt(ST, 16), Insn::stmt(RET | K, 0)],
            &[Insn::stmt(0x0e, 0), Insn::stmt(RET | K, 0)], // RET | X
        ];
        for p in bad {
            assert_eq!(check(p), Err(Errno::EINVAL), "{p:?}");
        }
        let long = vec![Insn::stmt(RET | K, 0); MAX_INSNS + 1];
        assert_eq!(check(&long), Err(Errno::EINVAL));
        // A store on one path only: the load after the join is refused.
        let p = vec![
            Insn::stmt(LD | W | ABS, 0),
            Insn::jump(JMP | JEQ | K, 1, 0, 1),
            Insn::stmt(ST, 0),
            Insn::stmt(LD | MEM, 0),
            Insn::stmt(RET | A, 0),
        ];
        assert_eq!(check(&p), Err(Errno::EINVAL));
    }

    #[test]
    fn precedence() {
        assert!(stronger(ret::KILL_PROCESS, ret::KILL_THREAD));
        assert!(stronger(ret::KILL_THREAD, ret::TRAP));
        assert!(stronger(ret::TRAP, ret::ERRNO | 5));
        assert!(stronger(ret::ERRNO, ret::USER_NOTIF));
        assert!(stronger(ret::TRACE, ret::LOG));
        assert!(stronger(ret::LOG, ret::ALLOW));
        assert!(!stronger(ret::ERRNO | 1, ret::ERRNO | 2));
    }
}
