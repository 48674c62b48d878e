//! The sandbox's seccomp filter as classic BPF, searched by syscall number
//! in a binary tree.
//!
//! Why not seccompiler (which the tests keep as the reference the filter is
//! checked against): it emits one comparison per syscall in a chain (1,831
//! instructions for this policy). The kernel runs the chain for every call
//! whose answer it cannot cache, and, when the filter is installed,
//! emulates it for every syscall number to build its cache: 1.3–1.5 ms of
//! start-up measured here. A tree over runs of numbers with the same
//! answer takes ~20 instructions to reach any leaf, and installs in
//! microseconds. Only the instructions the kernel's cache emulation knows
//! are used (loads of `nr` and `arch`, `ja`, `jeq`, `jge`, `jset`, `and`,
//! `ret`), so every call whose answer does not depend on its arguments is
//! cached.

/// A classic BPF instruction (`struct sock_filter`): the runtime's, which
/// also runs the programs' filters and compiles a container's profile.
pub use picos_rt::kernel::seccomp::Insn;

const LD_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JA: u16 = 0x05; // BPF_JMP | BPF_JA
const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const AND: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const RET: u16 = 0x06; // BPF_RET | BPF_K

pub const RET_ALLOW: u32 = 0x7fff_0000; // SECCOMP_RET_ALLOW
pub const RET_EPERM: u32 = 0x0005_0000 | libc::EPERM as u32; // SECCOMP_RET_ERRNO
pub const RET_KILL: u32 = 0x8000_0000; // SECCOMP_RET_KILL_PROCESS
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// `seccomp_data` offsets.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of argument `i` (x86-64 is little-endian).
pub const fn arg(i: u32) -> u32 {
    16 + 8 * i
}

/// Where a jump goes, inside a [`Block`].
#[derive(Clone, Copy, Debug)]
pub enum To {
    Next,
    Allow,
    Deny,
    Label(u8),
}

/// A self-contained piece of filter: its jumps go forward to its own
/// labels or to the `ret`s it ends with (so they stay short).
#[derive(Default)]
pub struct Block {
    insns: Vec<(u16, To, To, u32)>,
    labels: Vec<(u8, usize)>,
}

impl Block {
    pub fn load(&mut self, off: u32) -> &mut Self {
        self.insns.push((LD_ABS, To::Next, To::Next, off));
        self
    }
    pub fn and(&mut self, k: u32) -> &mut Self {
        self.insns.push((AND, To::Next, To::Next, k));
        self
    }
    /// `if acc == k goto t else goto f`.
    pub fn jeq(&mut self, k: u32, t: To, f: To) -> &mut Self {
        self.insns.push((JEQ, t, f, k));
        self
    }
    /// `if acc & k != 0 goto t else goto f`.
    pub fn jset(&mut self, k: u32, t: To, f: To) -> &mut Self {
        self.insns.push((JSET, t, f, k));
        self
    }
    pub fn ret(&mut self, allow: bool) -> &mut Self {
        let k = if allow { RET_ALLOW } else { RET_EPERM };
        self.insns.push((RET, To::Next, To::Next, k));
        self
    }
    pub fn label(&mut self, id: u8) -> &mut Self {
        self.labels.push((id, self.insns.len()));
        self
    }

    /// The instructions, ending with `ret ALLOW; ret EPERM`.
    fn assemble(&self) -> Vec<Insn> {
        let allow = self.insns.len();
        let deny = allow + 1;
        let target = |t: To, at: usize| -> u8 {
            let dest = match t {
                To::Next => at + 1,
                To::Allow => allow,
                To::Deny => deny,
                To::Label(id) => {
                    self.labels
                        .iter()
                        .find(|(l, _)| *l == id)
                        .expect("a label the block places")
                        .1
                }
            };
            u8::try_from(dest - at - 1).expect("a short forward jump")
        };
        let mut out: Vec<Insn> = self
            .insns
            .iter()
            .enumerate()
            .map(|(at, &(code, t, f, k))| {
                // Only the conditional jumps have targets.
                let (jt, jf) = if code == JEQ || code == JSET {
                    (target(t, at), target(f, at))
                } else {
                    (0, 0)
                };
                Insn { code, jt, jf, k }
            })
            .collect();
        out.push(Insn {
            code: RET,
            jt: 0,
            jf: 0,
            k: RET_ALLOW,
        });
        out.push(Insn {
            code: RET,
            jt: 0,
            jf: 0,
            k: RET_EPERM,
        });
        out
    }
}

/// What the filter does with one syscall number.
pub enum Verdict {
    Allow,
    Deny,
    /// Decided by its arguments.
    Check(Block),
}

/// The filter: x86-64 only (another architecture's calls kill the
/// process), x32 numbers refused, then `verdict(nr)` for every number up
/// to `max_nr` (above: refused).
pub fn program(max_nr: u32, mut verdict: impl FnMut(u32) -> Verdict) -> Vec<Insn> {
    // Runs of numbers with the same plain answer; a checked number is a
    // run of its own.
    enum Run {
        Plain(bool),
        Check(usize),
    }
    let mut runs: Vec<(u32, Run)> = Vec::new();
    let mut blocks: Vec<Vec<Insn>> = Vec::new();
    for nr in 0..=max_nr + 1 {
        let v = if nr > max_nr {
            Verdict::Deny
        } else {
            verdict(nr)
        };
        match v {
            Verdict::Check(b) => {
                blocks.push(b.assemble());
                runs.push((nr, Run::Check(blocks.len() - 1)));
            }
            Verdict::Allow | Verdict::Deny => {
                let allow = matches!(v, Verdict::Allow);
                if !matches!(runs.last(), Some((_, Run::Plain(a))) if *a == allow) {
                    runs.push((nr, Run::Plain(allow)));
                }
            }
        }
    }
    // The tree, with jumps to blocks (and to right subtrees) as `ja`s to
    // patch once everything is laid out.
    let mut out = vec![
        Insn {
            code: LD_ABS,
            jt: 0,
            jf: 0,
            k: ARCH,
        },
        Insn {
            code: JEQ,
            jt: 1,
            jf: 0,
            k: AUDIT_ARCH_X86_64,
        },
        Insn {
            code: RET,
            jt: 0,
            jf: 0,
            k: RET_KILL,
        },
        Insn {
            code: LD_ABS,
            jt: 0,
            jf: 0,
            k: NR,
        },
        Insn {
            code: JGE,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        Insn {
            code: RET,
            jt: 0,
            jf: 0,
            k: RET_EPERM,
        },
    ];
    let mut to_blocks: Vec<(usize, usize)> = Vec::new();
    fn tree(runs: &[(u32, Run)], out: &mut Vec<Insn>, to_blocks: &mut Vec<(usize, usize)>) {
        if let [(_, run)] = runs {
            match run {
                Run::Plain(allow) => out.push(Insn {
                    code: RET,
                    jt: 0,
                    jf: 0,
                    k: if *allow { RET_ALLOW } else { RET_EPERM },
                }),
                Run::Check(b) => {
                    to_blocks.push((out.len(), *b));
                    out.push(Insn {
                        code: JA,
                        jt: 0,
                        jf: 0,
                        k: 0,
                    });
                }
            }
            return;
        }
        let mid = runs.len() / 2;
        // nr >= start of the right half: the `ja` to it; else skip it.
        out.push(Insn {
            code: JGE,
            jt: 0,
            jf: 1,
            k: runs[mid].0,
        });
        let ja = out.len();
        out.push(Insn {
            code: JA,
            jt: 0,
            jf: 0,
            k: 0,
        });
        tree(&runs[..mid], out, to_blocks);
        out[ja].k = (out.len() - ja - 1) as u32;
        tree(&runs[mid..], out, to_blocks);
    }
    tree(&runs, &mut out, &mut to_blocks);
    let mut starts = Vec::new();
    for b in &blocks {
        starts.push(out.len());
        out.extend_from_slice(b);
    }
    for (at, b) in to_blocks {
        out[at].k = (starts[b] - at - 1) as u32;
    }
    out
}

/// Installs `prog` on the calling thread (no_new_privs must be set), with
/// SECCOMP_FILTER_FLAG_LOG if `log`.
pub fn install(prog: &[Insn], log: bool) -> std::io::Result<()> {
    const SECCOMP_FILTER_FLAG_LOG: libc::c_uint = 2;
    #[repr(C)]
    struct Fprog {
        len: u16,
        filter: *const Insn,
    }
    let fprog = Fprog {
        len: u16::try_from(prog.len()).map_err(|_| std::io::Error::other("filter too long"))?,
        filter: prog.as_ptr(),
    };
    const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;
    // SAFETY: seccomp(2) with a pointer to a live `sock_fprog` whose
    // instructions outlive the call (the kernel copies them).
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_SET_MODE_FILTER,
            if log { SECCOMP_FILTER_FLAG_LOG } else { 0 },
            &fprog as *const Fprog,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Runs `prog` on a call, as the kernel would: its return value.
#[cfg(test)]
pub fn run(prog: &[Insn], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&nr.to_le_bytes());
    data[4..8].copy_from_slice(&arch.to_le_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
        let i = prog[pc];
        pc += 1;
        match i.code {
            LD_ABS => {
                let o = i.k as usize;
                acc = u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
            }
            AND => acc &= i.k,
            JA => pc += i.k as usize,
            JEQ | JGE | JSET | 0x25 => {
                let taken = match i.code {
                    JEQ => acc == i.k,
                    JGE => acc >= i.k,
                    JSET => acc & i.k != 0,
                    _ => acc > i.k, // JGT
                };
                pc += if taken { i.jt } else { i.jf } as usize;
            }
            RET => return i.k,
            c => panic!("instruction {c:#x} not interpreted"),
        }
    }
}
