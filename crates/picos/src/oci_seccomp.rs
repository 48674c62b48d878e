//! The OCI spec's seccomp profile (`linux.seccomp`: podman's and
//! containerd's default profiles, or `--security-opt seccomp=FILE`),
//! compiled to classic BPF and given to the runtime as the program's
//! filters (`LaunchConfig::seccomp`, in the runtime's encoding), so that
//! the library OS applies it to every call the container's program makes,
//! including those it serves without a host call (`kernel::seccomp`; the
//! calls the profile allows whatever their arguments stay on the fast
//! path). It is also installed in the kernel ([`kernel_copy`]), under
//! picos's own filter (`sandbox`), so that a program that takes over the
//! runtime is still held by it, but for the calls the runtime itself needs
//! (docs/OCI.md, "Differences from runc").
//!
//! We compile it here rather than link libseccomp (the CLI is a static musl
//! binary without C dependencies) or use seccompiler (one action for all
//! its rules, where a profile gives each rule its own). The semantics are
//! libseccomp's, as runc uses them:
//!
//! - `defaultAction` (with `defaultErrnoRet`) for every call no rule
//!   matches; a call from another architecture than x86-64 is killed
//!   (picos runs x86-64 programs only), and x32 numbers get the default;
//! - each rule matches when all its argument conditions hold (64-bit
//!   comparisons: `SCMP_CMP_{EQ,NE,LT,LE,GT,GE,MASKED_EQ}`); a call's
//!   rules with conditions are tried in the profile's order before its
//!   rules without, and the first that matches decides;
//! - names that are no x86-64 call (other architectures', newer kernels')
//!   are skipped, as runc skips names its libseccomp does not know;
//! - refused, with the reason: `SCMP_ACT_NOTIFY` and `listenerPath` (no
//!   seccomp agent is supported), and an argument index above 5.

use libcontainer::oci_spec::runtime::{
    LinuxSeccomp, LinuxSeccompAction, LinuxSeccompFilterFlag, LinuxSeccompOperator,
};
use picos_rt::host::own::OWN_CALLS;
use picos_rt::kernel::seccomp::{self as rt, ret, Insn, ARCH_X86_64 as AUDIT_ARCH_X86_64};
use picos_rt::sys::def::Support;
use picos_rt::sys::table::TABLE;

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGT_K: u16 = 0x25;
const JGE_K: u16 = 0x35;
const JA: u16 = 0x05;
const ALU_AND_K: u16 = 0x54;
const RET_K: u16 = 0x06;

const X32_BIT: u32 = 0x4000_0000;

/// The largest filter Linux (and the runtime) take.
const MAX_INSNS: usize = 4096;

/// Why a profile cannot be applied. The container does not start then.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProfileError {
    #[error("the seccomp profile's action SCMP_ACT_NOTIFY needs a seccomp agent, which picos does not support")]
    Notify,
    #[error(
        "the seccomp profile names a seccomp agent (listenerPath), which picos does not support"
    )]
    Listener,
    #[error(
        "the seccomp profile's rule for {0} tests argument {1}, which does not exist (0 to 5)"
    )]
    BadArg(String, usize),
    #[error("the seccomp profile compiles to {0} instructions, more than the {MAX_INSNS} a filter may have")]
    TooLong(usize),
}

/// The encoding `LaunchConfig::seccomp` takes (`kernel::seccomp::decode`):
/// the flags byte (1: log; 2: the allowed calls follow), the length (u16,
/// little-endian), the instructions (`struct sock_filter`), and the calls
/// the filter allows whatever the arguments (worked out here once, not by
/// the runtime at every start).
pub fn encode(prog: &[Insn], log: bool) -> Vec<u8> {
    let mut out = Vec::new();
    rt::encode_filter(&mut out, prog, log, &rt::allows_of(prog));
    out
}

/// A container's profile, as picos applies it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// The program's filters, in the runtime's encoding
    /// (`LaunchConfig::seccomp`); empty for none.
    pub program: Vec<u8>,
    /// The kernel's copy ([`kernel_copy`]), installed before the runtime
    /// starts; empty for none.
    pub kernel: Vec<Insn>,
    /// The profile asks for `SECCOMP_FILTER_FLAG_LOG`.
    pub log: bool,
}

/// The spec's profile as picos applies it (nothing for no profile, or one
/// that allows everything).
pub fn from_spec(profile: Option<&LinuxSeccomp>) -> Result<Profile, ProfileError> {
    let Some(p) = profile else {
        return Ok(Profile::default());
    };
    let prog = compile(p)?;
    // Nothing to refuse (every answer ALLOW): no filter, and no cost.
    let allows_all = action(p.default_action(), None)? == ret::ALLOW
        && p.syscalls()
            .iter()
            .flatten()
            .all(|s| action(s.action(), None) == Ok(ret::ALLOW));
    if allows_all {
        return Ok(Profile::default());
    }
    // SECCOMP_FILTER_FLAG_LOG is kept (as the runtime keeps a program's);
    // TSYNC says what is true anyway (every thread has the filters), and
    // SPEC_ALLOW and WAIT_KILLABLE_RECV change nothing the library OS does.
    let log = p
        .flags()
        .iter()
        .flatten()
        .any(|f| matches!(f, LinuxSeccompFilterFlag::SeccompFilterFlagLog));
    Ok(Profile {
        program: encode(&prog, log),
        kernel: kernel_copy(p)?,
        log,
    })
}

fn action(a: LinuxSeccompAction, errno: Option<u32>) -> Result<u32, ProfileError> {
    let data = |default: u32| errno.unwrap_or(default) & 0xffff;
    Ok(match a {
        LinuxSeccompAction::ScmpActKill | LinuxSeccompAction::ScmpActKillThread => ret::KILL_THREAD,
        LinuxSeccompAction::ScmpActKillProcess => ret::KILL_PROCESS,
        LinuxSeccompAction::ScmpActTrap => ret::TRAP,
        // libseccomp's default errno for SCMP_ACT_ERRNO is EPERM.
        LinuxSeccompAction::ScmpActErrno => ret::ERRNO | data(1),
        LinuxSeccompAction::ScmpActTrace => ret::TRACE | data(0),
        LinuxSeccompAction::ScmpActLog => ret::LOG,
        LinuxSeccompAction::ScmpActAllow => ret::ALLOW,
        LinuxSeccompAction::ScmpActNotify => return Err(ProfileError::Notify),
    })
}

/// One rule: its conditions (argument, operator, value, second value) and
/// what it returns.
struct Rule {
    conds: Vec<(usize, LinuxSeccompOperator, u64, u64)>,
    ret: u32,
}

/// Compiles `p` (see the module's doc for the semantics).
pub fn compile(p: &LinuxSeccomp) -> Result<Vec<Insn>, ProfileError> {
    compile_as(p, false)
}

/// The profile as the kernel enforces it for a container's process, under
/// picos's own filter: `p`, but for the calls the runtime may make with
/// other arguments than the program's, which it allows whatever `p` says.
/// Those are the runtime's own calls (`host::own::OWN_CALLS`: memory,
/// signals, threads, /proc, the code it writes, its `execve`, and the
/// calls it makes in place of a program's), and a call `p` checks by its
/// arguments that the runtime does not pass to the host unchanged (a
/// mediated or emulated call, whose handler may change them). For every
/// other call the kernel's answer to the runtime is the one the library OS
/// gave the program: the same filter on the same call.
///
/// So a program that takes over the runtime (docs/SECURITY.md) can make
/// the calls the profile allows, and the runtime's own calls, which
/// picos's filter still bounds; no other.
pub fn kernel_copy(p: &LinuxSeccomp) -> Result<Vec<Insn>, ProfileError> {
    compile_as(p, true)
}

/// Is call `nr` passed to the host with the program's own arguments
/// whenever the runtime passes it on?
fn passed_unchanged(nr: u32) -> bool {
    TABLE
        .iter()
        .find(|d| d.nr == nr)
        .is_some_and(|d| matches!(d.support, Support::Host | Support::HostBlocking { .. }))
}

/// [`compile`], or with `kernel` [`kernel_copy`].
fn compile_as(p: &LinuxSeccomp, kernel: bool) -> Result<Vec<Insn>, ProfileError> {
    if p.listener_path().is_some() {
        return Err(ProfileError::Listener);
    }
    let default = action(p.default_action(), p.default_errno_ret())?;
    // Rules by call number, in the profile's order.
    let mut by_nr: std::collections::BTreeMap<u32, Vec<Rule>> = Default::default();
    for s in p.syscalls().iter().flatten() {
        let ret = action(s.action(), s.errno_ret())?;
        for name in s.names() {
            let Some(def) = TABLE.iter().find(|d| d.name == name.as_str()) else {
                continue;
            };
            let mut conds = Vec::new();
            for a in s.args().iter().flatten() {
                if a.index() > 5 {
                    return Err(ProfileError::BadArg(name.clone(), a.index()));
                }
                conds.push((a.index(), a.op(), a.value(), a.value_two().unwrap_or(0)));
            }
            by_nr
                .entry(def.nr as u32)
                .or_default()
                .push(Rule { conds, ret });
        }
    }
    // Not x86-64: killed (the architectures the profile lists do not
    // matter: the runtime runs x86-64 programs only).
    let mut prog = vec![
        Insn::stmt(LD_W_ABS, 4),
        Insn::jump(JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        Insn::stmt(RET_K, ret::KILL_PROCESS),
        Insn::stmt(LD_W_ABS, 0),
        Insn::jump(JGE_K, X32_BIT, 0, 1),
        Insn::stmt(RET_K, default),
    ];
    // A tree over the call numbers, so that any call reaches its rules in
    // ~20 instructions (the runtime works out at start which calls its
    // filters allow whatever the arguments by running them once for each
    // number: over a chain of 350 calls that took ~1.5 ms per execve).
    // Rules that decide nothing (the default's own answer, without
    // conditions) are left out when they are the call's only rules.
    if kernel {
        let allow = || Rule {
            conds: Vec::new(),
            ret: ret::ALLOW,
        };
        for &nr in OWN_CALLS {
            by_nr.insert(nr as u32, vec![allow()]);
        }
        for (&nr, rules) in by_nr.iter_mut() {
            if rules.iter().any(|r| !r.conds.is_empty()) && !passed_unchanged(nr) {
                *rules = vec![allow()];
            }
        }
    }
    let calls: Vec<(u32, Vec<Insn>)> = by_nr
        .iter()
        .filter(|(_, rules)| !rules.iter().all(|r| r.conds.is_empty() && r.ret == default))
        .map(|(&nr, rules)| (nr, call_block(rules, default)))
        .collect();
    prog.extend(tree(&calls, default));
    if prog.len() > MAX_INSNS {
        return Err(ProfileError::TooLong(prog.len()));
    }
    Ok(prog)
}

/// A search over the call numbers (A holds the number): `calls`, sorted,
/// each with its block, become runs of numbers that share a block (the
/// numbers between them share the default's return); each node of the
/// tree sends the numbers at or above the start of its middle run right,
/// the others left, and a leaf is its run's block. Jumps over subtrees are
/// `ja`s (32-bit offsets); every path ends in a return.
fn tree(calls: &[(u32, Vec<Insn>)], default: u32) -> Vec<Insn> {
    let ret_default = vec![Insn::stmt(RET_K, default)];
    let mut runs: Vec<(u32, Vec<Insn>)> = Vec::new();
    let mut next = 0u32;
    let push = |runs: &mut Vec<(u32, Vec<Insn>)>, start: u32, block: &Vec<Insn>| {
        if runs.last().is_none_or(|(_, b)| b != block) {
            runs.push((start, block.clone()));
        }
    };
    for (nr, block) in calls {
        if *nr > next {
            push(&mut runs, next, &ret_default);
        }
        push(&mut runs, *nr, block);
        next = nr + 1;
    }
    push(&mut runs, next, &ret_default);
    search(&runs)
}

fn search(runs: &[(u32, Vec<Insn>)]) -> Vec<Insn> {
    if let [(_, block)] = runs {
        return block.clone();
    }
    let mid = runs.len() / 2;
    let left = search(&runs[..mid]);
    let right = search(&runs[mid..]);
    let mut out = vec![
        Insn::jump(JGE_K, runs[mid].0, 0, 1),
        Insn::stmt(JA, left.len() as u32),
    ];
    out.extend(left);
    out.extend(right);
    out
}

/// The instructions for one call's rules: conditional ones in order, then
/// the first unconditional one, else the default. Ends in a return.
fn call_block(rules: &[Rule], default: u32) -> Vec<Insn> {
    let mut out = Vec::new();
    for r in rules.iter().filter(|r| !r.conds.is_empty()) {
        let mut body = Vec::new();
        // Each condition's instructions jump to `fail` (the end of this
        // rule) when it does not hold; offsets are patched below.
        let mut fails = Vec::new();
        for &(arg, op, v, v2) in &r.conds {
            cond(&mut body, &mut fails, arg, op, v, v2);
        }
        body.push(Insn::stmt(RET_K, r.ret));
        let end = body.len();
        for (at, field_true) in fails {
            let off = (end - at - 1) as u8;
            if field_true {
                body[at].jt = off;
            } else {
                body[at].jf = off;
            }
        }
        out.extend(body);
    }
    let last = rules
        .iter()
        .find(|r| r.conds.is_empty())
        .map_or(default, |r| r.ret);
    out.push(Insn::stmt(RET_K, last));
    out
}

/// The low and high words of argument `arg` in `struct seccomp_data`.
fn arg_words(arg: usize) -> (u32, u32) {
    let lo = 16 + 8 * arg as u32;
    (lo, lo + 4)
}

/// Appends the test of one condition to `b`; each jump that must go to the
/// rule's end when it fails is recorded in `fails` (its index, and whether
/// its true or false branch is the failing one), its offset left 0.
fn cond(
    b: &mut Vec<Insn>,
    fails: &mut Vec<(usize, bool)>,
    arg: usize,
    op: LinuxSeccompOperator,
    v: u64,
    v2: u64,
) {
    use LinuxSeccompOperator as O;
    let (lo_off, hi_off) = arg_words(arg);
    let (vhi, vlo) = ((v >> 32) as u32, v as u32);
    // A fail jump (patched later) on the true (t) or false branch.
    let mut fail_on = |b: &mut Vec<Insn>, code, k, on_true: bool| {
        fails.push((b.len(), on_true));
        b.push(Insn::jump(code, k, 0, 0));
    };
    match op {
        O::ScmpCmpEq => {
            b.push(Insn::stmt(LD_W_ABS, hi_off));
            fail_on(b, JEQ_K, vhi, false);
            b.push(Insn::stmt(LD_W_ABS, lo_off));
            fail_on(b, JEQ_K, vlo, false);
        }
        O::ScmpCmpMaskedEq => {
            let (mhi, mlo) = ((v >> 32) as u32, v as u32);
            let (whi, wlo) = ((v2 >> 32) as u32, v2 as u32);
            b.push(Insn::stmt(LD_W_ABS, hi_off));
            b.push(Insn::stmt(ALU_AND_K, mhi));
            fail_on(b, JEQ_K, whi, false);
            b.push(Insn::stmt(LD_W_ABS, lo_off));
            b.push(Insn::stmt(ALU_AND_K, mlo));
            fail_on(b, JEQ_K, wlo, false);
        }
        O::ScmpCmpNe => {
            // Holds unless both words are equal.
            b.push(Insn::stmt(LD_W_ABS, hi_off));
            b.push(Insn::jump(JEQ_K, vhi, 0, 2)); // hi differs: holds (skip 2)
            b.push(Insn::stmt(LD_W_ABS, lo_off));
            fail_on(b, JEQ_K, vlo, true);
        }
        O::ScmpCmpGt | O::ScmpCmpGe | O::ScmpCmpLt | O::ScmpCmpLe => {
            // hi > vhi: GT/GE hold, LT/LE fail; hi < vhi: the reverse;
            // equal: the low words decide.
            let greater = matches!(op, O::ScmpCmpGt | O::ScmpCmpGe);
            b.push(Insn::stmt(LD_W_ABS, hi_off));
            if greater {
                b.push(Insn::jump(JGT_K, vhi, 3, 0)); // hi > vhi: holds
                fail_on(b, JEQ_K, vhi, false); // hi < vhi: fails
            } else {
                // hi > vhi: fails; hi < vhi: holds (skip the low test).
                fail_on(b, JGT_K, vhi, true);
                b.push(Insn::jump(JEQ_K, vhi, 0, 2));
            }
            b.push(Insn::stmt(LD_W_ABS, lo_off));
            match op {
                O::ScmpCmpGt => fail_on(b, JGT_K, vlo, false),
                O::ScmpCmpGe => fail_on(b, JGE_K, vlo, false),
                O::ScmpCmpLt => fail_on(b, JGE_K, vlo, true),
                _ => fail_on(b, JGT_K, vlo, true),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libcontainer::oci_spec::runtime::{
        LinuxSeccompArgBuilder, LinuxSeccompBuilder, LinuxSyscallBuilder,
    };

    fn run(prog: &[Insn], nr: u32, args: [u64; 6]) -> u32 {
        rt::check(prog).expect("a valid filter");
        rt::run(
            prog,
            &rt::Data {
                nr: nr as i32,
                arch: rt::ARCH_X86_64,
                ip: 0,
                args,
            },
        )
    }

    fn syscall(
        names: &[&str],
        action: LinuxSeccompAction,
        errno: Option<u32>,
        args: Vec<(usize, LinuxSeccompOperator, u64, u64)>,
    ) -> libcontainer::oci_spec::runtime::LinuxSyscall {
        let mut b = LinuxSyscallBuilder::default()
            .names(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .action(action);
        if let Some(e) = errno {
            b = b.errno_ret(e);
        }
        if !args.is_empty() {
            b = b.args(
                args.into_iter()
                    .map(|(i, op, v, v2)| {
                        LinuxSeccompArgBuilder::default()
                            .index(i)
                            .op(op)
                            .value(v)
                            .value_two(v2)
                            .build()
                            .unwrap()
                    })
                    .collect::<Vec<_>>(),
            );
        }
        b.build().unwrap()
    }

    /// Each operator against values around its operand, in both words
    /// (the answers a 64-bit comparison gives).
    #[test]
    fn operators_compare_64_bit_values() {
        use LinuxSeccompOperator as O;
        let vals: [u64; 7] = [
            0,
            5,
            6,
            7,
            0x1_0000_0006,
            0xffff_ffff,
            0xffff_ffff_ffff_fffa,
        ];
        for op in [
            O::ScmpCmpEq,
            O::ScmpCmpNe,
            O::ScmpCmpLt,
            O::ScmpCmpLe,
            O::ScmpCmpGt,
            O::ScmpCmpGe,
            O::ScmpCmpMaskedEq,
        ] {
            for operand in [6u64, 0x1_0000_0006, 0xffff_ffff_ffff_fffa] {
                let two = 0x6;
                let p = LinuxSeccompBuilder::default()
                    .default_action(LinuxSeccompAction::ScmpActAllow)
                    .syscalls(vec![syscall(
                        &["getpriority"],
                        LinuxSeccompAction::ScmpActErrno,
                        Some(22),
                        vec![(1, op, operand, two)],
                    )])
                    .build()
                    .unwrap();
                let prog = compile(&p).unwrap();
                for &x in &vals {
                    let holds = match op {
                        O::ScmpCmpEq => x == operand,
                        O::ScmpCmpNe => x != operand,
                        O::ScmpCmpLt => x < operand,
                        O::ScmpCmpLe => x <= operand,
                        O::ScmpCmpGt => x > operand,
                        O::ScmpCmpGe => x >= operand,
                        O::ScmpCmpMaskedEq => x & operand == two,
                    };
                    let want = if holds { ret::ERRNO | 22 } else { ret::ALLOW };
                    let got = run(&prog, 140, [0, x, 0, 0, 0, 0]);
                    assert_eq!(got, want, "{op:?} {operand:#x} with {x:#x}");
                }
            }
        }
    }

    /// A profile shaped like podman's default: refuse by default with
    /// ENOSYS-like errno, allow a list, allow a call only with some flags,
    /// refuse one call outright; conditional rules before unconditional
    /// ones; unknown names skipped; other architectures killed.
    #[test]
    fn a_default_like_profile() {
        use LinuxSeccompOperator as O;
        let p = LinuxSeccompBuilder::default()
            .default_action(LinuxSeccompAction::ScmpActErrno)
            .default_errno_ret(38u32)
            .syscalls(vec![
                syscall(
                    &["read", "write", "getpid", "no_such_call"],
                    LinuxSeccompAction::ScmpActAllow,
                    None,
                    vec![],
                ),
                syscall(
                    &["clone"],
                    LinuxSeccompAction::ScmpActAllow,
                    None,
                    vec![(0, O::ScmpCmpMaskedEq, 0x7e02_0000, 0)],
                ),
                syscall(
                    &["personality"],
                    LinuxSeccompAction::ScmpActAllow,
                    None,
                    vec![(0, O::ScmpCmpEq, 0xffff_ffff, 0)],
                ),
                syscall(
                    &["personality"],
                    LinuxSeccompAction::ScmpActAllow,
                    None,
                    vec![(0, O::ScmpCmpEq, 8, 0)],
                ),
                syscall(
                    &["clone3"],
                    LinuxSeccompAction::ScmpActErrno,
                    Some(38),
                    vec![],
                ),
                syscall(&["ptrace"], LinuxSeccompAction::ScmpActErrno, None, vec![]),
                syscall(
                    &["getppid"],
                    LinuxSeccompAction::ScmpActKillProcess,
                    None,
                    vec![(0, O::ScmpCmpEq, 1, 0)],
                ),
                syscall(&["getppid"], LinuxSeccompAction::ScmpActAllow, None, vec![]),
            ])
            .build()
            .unwrap();
        let prog = compile(&p).unwrap();
        let enosys = ret::ERRNO | 38;
        assert_eq!(run(&prog, 0, [0; 6]), ret::ALLOW); // read
        assert_eq!(run(&prog, 39, [0; 6]), ret::ALLOW); // getpid
        assert_eq!(run(&prog, 102, [0; 6]), enosys); // getuid: default
        assert_eq!(run(&prog, 56, [0x11, 0, 0, 0, 0, 0]), ret::ALLOW); // clone
        assert_eq!(run(&prog, 56, [0x1000_0011, 0, 0, 0, 0, 0]), enosys); // NEWUSER
        assert_eq!(run(&prog, 135, [8, 0, 0, 0, 0, 0]), ret::ALLOW);
        assert_eq!(run(&prog, 135, [0xffff_ffff, 0, 0, 0, 0, 0]), ret::ALLOW);
        assert_eq!(run(&prog, 135, [0x40_0000, 0, 0, 0, 0, 0]), enosys);
        assert_eq!(run(&prog, 435, [0; 6]), enosys); // clone3
        assert_eq!(run(&prog, 101, [0; 6]), ret::ERRNO | 1); // ptrace: EPERM
        assert_eq!(run(&prog, 110, [1, 0, 0, 0, 0, 0]), ret::KILL_PROCESS);
        assert_eq!(run(&prog, 110, [0; 6]), ret::ALLOW);
        assert_eq!(run(&prog, X32_BIT | 39, [0; 6]), enosys);
        // The runtime's cache: read is allowed whatever its arguments;
        // clone and personality are not (they run the filter).
        let rtp = &prog;
        assert!(rt::allows_always_one(rtp, 0));
        assert!(!rt::allows_always_one(rtp, 56));
        assert!(!rt::allows_always_one(rtp, 102));
        // Another architecture: killed.
        let other = rt::run(
            rtp,
            &rt::Data {
                nr: 0,
                arch: 0x4000_0003,
                ip: 0,
                args: [0; 6],
            },
        );
        assert_eq!(other, ret::KILL_PROCESS);
        // The encoding the runtime decodes.
        let enc = from_spec(Some(&p)).unwrap().program;
        assert_eq!(enc.len(), 3 + 8 * prog.len() + 64);
        let n = rt::decode(&enc).unwrap();
        assert!(rt::allows_always(n, 0) && !rt::allows_always(n, 56));
    }

    /// Every call of the table in a profile (as podman's lists ~350): each
    /// number reaches its own answer through the tree, in few steps.
    #[test]
    fn every_call_reaches_its_rule() {
        let names = |odd: bool| -> Vec<&str> {
            TABLE
                .iter()
                .filter(|d| (d.nr % 2 == 1) == odd)
                .map(|d| d.name)
                .collect()
        };
        let p = LinuxSeccompBuilder::default()
            .default_action(LinuxSeccompAction::ScmpActKillProcess)
            .syscalls(vec![
                syscall(&names(true), LinuxSeccompAction::ScmpActAllow, None, vec![]),
                syscall(
                    &names(false),
                    LinuxSeccompAction::ScmpActErrno,
                    Some(7),
                    vec![],
                ),
            ])
            .build()
            .unwrap();
        let prog = compile(&p).unwrap();
        for nr in 0..600u32 {
            let want = match TABLE.iter().find(|d| d.nr as u32 == nr) {
                Some(d) if d.nr % 2 == 1 => ret::ALLOW,
                Some(_) => ret::ERRNO | 7,
                None => ret::KILL_PROCESS,
            };
            assert_eq!(run(&prog, nr, [0; 6]), want, "call {nr}");
            assert_eq!(
                rt::allows_always_one(&prog, nr),
                want == ret::ALLOW,
                "call {nr}"
            );
        }
    }

    /// podman's default profile (Debian's podman 4.3, from the spec of a
    /// container it made, tests/oci/podman-default-seccomp.json).
    #[test]
    fn podmans_default_profile() {
        let text = include_str!("../../../tests/oci/podman-default-seccomp.json");
        let p: LinuxSeccomp = serde_json::from_str(text).unwrap();
        let prog = compile(&p).unwrap();
        let enosys = ret::ERRNO | 38;
        for (nr, args, want) in [
            (0, [0; 6], ret::ALLOW),                    // read
            (102, [0; 6], ret::ALLOW),                  // getuid
            (248, [0; 6], enosys),                      // add_key
            (135, [0, 0, 0, 0, 0, 0], ret::ALLOW),      // personality(PER_LINUX)
            (135, [0x0400000, 0, 0, 0, 0, 0], enosys),  // READ_IMPLIES_EXEC
            (246, [0; 6], ret::ERRNO | 1),              // kexec_load: EPERM
            (41, [16, 3, 9, 0, 0, 0], ret::ERRNO | 22), // socket(NETLINK_AUDIT)
            (41, [2, 1, 0, 0, 0, 0], ret::ALLOW),       // socket(AF_INET)
        ] {
            assert_eq!(run(&prog, nr, args), want, "call {nr} {args:?}");
        }
        // What the runtime does at each start with it: run it once per
        // number (it was ~1.5 ms over a chain; the tree makes it cheap).
        let t = std::time::Instant::now();
        let allowed = (0..512)
            .filter(|&nr| rt::allows_always_one(&prog, nr))
            .count();
        eprintln!(
            "podman's default profile: {} instructions, {allowed} calls allowed whatever \
             their arguments, worked out in {:?}",
            prog.len(),
            t.elapsed()
        );
        assert!(allowed > 300, "{allowed}");
    }

    #[test]
    fn refused_profiles_say_why() {
        let notify = LinuxSeccompBuilder::default()
            .default_action(LinuxSeccompAction::ScmpActAllow)
            .syscalls(vec![syscall(
                &["read"],
                LinuxSeccompAction::ScmpActNotify,
                None,
                vec![],
            )])
            .build()
            .unwrap();
        assert_eq!(compile(&notify), Err(ProfileError::Notify));
        let listener = LinuxSeccompBuilder::default()
            .default_action(LinuxSeccompAction::ScmpActAllow)
            .listener_path("/run/agent.sock")
            .build()
            .unwrap();
        assert_eq!(compile(&listener), Err(ProfileError::Listener));
        let allow_all = LinuxSeccompBuilder::default()
            .default_action(LinuxSeccompAction::ScmpActAllow)
            .build()
            .unwrap();
        assert_eq!(from_spec(Some(&allow_all)), Ok(Profile::default()));
        assert_eq!(from_spec(None), Ok(Profile::default()));
    }

    /// The kernel's copy answers as the profile does, but for the
    /// runtime's own calls (allowed) and for calls checked by their
    /// arguments that the runtime may pass on with other ones (allowed).
    #[test]
    fn the_kernel_copy_keeps_the_runtimes_calls() {
        let nr = |name: &str| TABLE.iter().find(|d| d.name == name).unwrap().nr;
        let support = |name: &str| TABLE.iter().find(|d| d.name == name).unwrap().support;
        // getpriority is passed on unchanged and is no call of the
        // runtime's own; clone is mediated; mmap, execve and rt_sigreturn
        // are the runtime's own; uname too (it asks the host for itself).
        assert!(matches!(support("getpriority"), Support::Host));
        assert!(!OWN_CALLS.contains(&(nr("getpriority") as usize)));
        assert!(!OWN_CALLS.contains(&(nr("sysinfo") as usize)));
        assert!(!passed_unchanged(nr("clone")));
        for own in ["mmap", "execve", "rt_sigreturn", "uname", "openat2"] {
            assert!(OWN_CALLS.contains(&(nr(own) as usize)), "{own}");
        }
        let ge = |i, v| (i, LinuxSeccompOperator::ScmpCmpGe, v, 0);
        let p = LinuxSeccompBuilder::default()
            .default_action(LinuxSeccompAction::ScmpActErrno)
            .default_errno_ret(38u32)
            .syscalls(vec![
                syscall(
                    &["getpriority", "read", "write", "exit_group"],
                    LinuxSeccompAction::ScmpActAllow,
                    None,
                    vec![],
                ),
                syscall(
                    &["getpriority"],
                    LinuxSeccompAction::ScmpActErrno,
                    Some(22),
                    vec![ge(1, 5000)],
                ),
                syscall(
                    &["clone"],
                    LinuxSeccompAction::ScmpActAllow,
                    None,
                    vec![ge(0, 0)],
                ),
                syscall(
                    &["uname", "sysinfo"],
                    LinuxSeccompAction::ScmpActErrno,
                    Some(18),
                    vec![],
                ),
            ])
            .build()
            .unwrap();
        let prog = compile(&p).unwrap();
        let k = from_spec(Some(&p)).unwrap().kernel;
        assert_eq!(k, kernel_copy(&p).unwrap());
        let errno = |e: u32| ret::ERRNO | e;
        let at = |a1: u64| [0, a1, 0, 0, 0, 0];
        // The program's answers.
        assert_eq!(run(&prog, nr("getpriority"), at(5000)), errno(22));
        assert_eq!(run(&prog, nr("getpriority"), at(1)), ret::ALLOW);
        assert_eq!(run(&prog, nr("uname"), at(0)), errno(18));
        assert_eq!(run(&prog, nr("mmap"), at(0)), errno(38));
        // The kernel's: the same for getpriority (checked by its
        // arguments, passed on unchanged), sysinfo (refused), an unlisted
        // call of no use to the runtime (the default), read.
        assert_eq!(run(&k, nr("getpriority"), at(5000)), errno(22));
        assert_eq!(run(&k, nr("getpriority"), at(1)), ret::ALLOW);
        assert_eq!(run(&k, nr("sysinfo"), at(0)), errno(18));
        assert_eq!(run(&k, nr("getcpu"), at(0)), errno(38));
        assert_eq!(run(&k, nr("read"), at(0)), ret::ALLOW);
        // The runtime's own, refused or left to the default for the
        // program: allowed; so is clone, whose flags the runtime may
        // change.
        for own in [
            "uname",
            "mmap",
            "execve",
            "rt_sigreturn",
            "openat2",
            "clone",
        ] {
            assert_eq!(run(&k, nr(own), at(0)), ret::ALLOW, "{own}");
        }
    }
}
