//! `--stats`: per-thread counters of system calls and signals, printed when
//! each thread exits and, merged, when the process exits (or replaces
//! itself with execve), in the spirit of Gramine's `sgx.enable_stats`.
//! With `--stats-json FILE` each report is also appended to FILE as one
//! JSON object per line.
//!
//! Counting costs one predictable branch when stats are off.
//!
//! `--profile` counts the same and also times, with the CPU's time-stamp
//! counter: each call in the dispatcher (library OS and host together),
//! the program's calls the runtime passes to the host (`host`), and the
//! trap path's SIGSYS handler; each process prints a table of where its
//! system calls' time went when it exits (`profile_report`).
#![deny(unsafe_code)]

use crate::diag::log::LineBuf;
use crate::host::nr::{name, MAX_NR};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::Cell;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
/// `--stats`: print the counters' lines.
static LINES: AtomicBool = AtomicBool::new(false);
/// `--profile`: time too, and print the table.
static PROFILE: AtomicBool = AtomicBool::new(false);
/// The time-stamp counter and the monotonic clock when profiling began
/// (to turn cycles into time).
static CAL_TSC: AtomicU64 = AtomicU64::new(0);
static CAL_NS: AtomicU64 = AtomicU64::new(0);

/// Is `--profile` on?
#[inline(always)]
pub fn profiling() -> bool {
    PROFILE.load(Ordering::Relaxed)
}

/// The time-stamp counter's cycles per millisecond, when known (given by
/// the process that exec'd, or measured over at least 2 ms).
static TSC_PER_MS: AtomicU64 = AtomicU64::new(0);

/// Turns profiling on (counting included; from the launch configuration's
/// `profile`: 1, or the counter's cycles per millisecond if known).
pub fn enable_profile(profile: u64) {
    ENABLED.store(true, Ordering::Relaxed);
    PROFILE.store(true, Ordering::Relaxed);
    CAL_TSC.store(crate::arch::rdtsc(), Ordering::Relaxed);
    CAL_NS.store(crate::host::monotonic_ns(), Ordering::Relaxed);
    if profile > 1 {
        TSC_PER_MS.store(profile, Ordering::Relaxed);
    }
}

/// The counter's cycles per millisecond: the known rate, or one measured
/// since profiling began if that was at least 2 ms ago (`None` before).
pub fn tsc_per_ms() -> Option<u64> {
    let known = TSC_PER_MS.load(Ordering::Relaxed);
    if known > 1 {
        return Some(known);
    }
    let (tsc0, ns0) = (
        CAL_TSC.load(Ordering::Relaxed),
        CAL_NS.load(Ordering::Relaxed),
    );
    let ns = crate::host::monotonic_ns().saturating_sub(ns0);
    if ns < 2_000_000 {
        return None;
    }
    let rate = u128::from(crate::arch::rdtsc().saturating_sub(tsc0)) * 1_000_000 / u128::from(ns);
    let rate = (rate as u64).max(2);
    TSC_PER_MS.store(rate, Ordering::Relaxed);
    Some(rate)
}

/// Should the `--stats` lines be printed?
pub fn lines() -> bool {
    LINES.load(Ordering::Relaxed)
}

/// Are stats on?
#[inline(always)]
pub fn on() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns stats on (from the launch configuration).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
    LINES.store(true, Ordering::Relaxed);
}

/// One thread's counters.
pub struct Counters {
    pub syscalls: Cell<u64>,
    pub fast: Cell<u64>,
    pub trap: Cell<u64>,
    pub emulated: Cell<u64>,
    pub host_calls: Cell<u64>,
    pub sync_signals: Cell<u64>,
    pub async_signals: Cell<u64>,
    pub per_nr: [Cell<u32>; MAX_NR],
    /// `--profile`'s times (allocated at the thread's first timed call).
    pub profile: Cell<Option<Box<Profile>>>,
}

/// One thread's `--profile` times, in time-stamp counter cycles.
pub struct Profile {
    /// Per call number: in the dispatcher, and of it in host calls.
    pub cycles: [u64; MAX_NR],
    pub host: [u64; MAX_NR],
    /// In host calls made for the program so far (the dispatcher takes
    /// the difference across one call).
    pub host_total: u64,
    /// The trap path: SIGSYS handler runs and their cycles.
    pub traps: u64,
    pub trap_cycles: u64,
}

impl Profile {
    /// Back to zero, for another thread.
    fn clear(&mut self) {
        self.cycles.fill(0);
        self.host.fill(0);
        (self.host_total, self.traps, self.trap_cycles) = (0, 0, 0);
    }

    fn new() -> Box<Self> {
        Box::new(Profile {
            cycles: [0; MAX_NR],
            host: [0; MAX_NR],
            host_total: 0,
            traps: 0,
            trap_cycles: 0,
        })
    }
}

/// Runs `f` on thread counters `s`'s profile (made at the first use).
/// Never reentered: the dispatcher's and the trap handler's uses do not
/// nest (a signal that interrupts the fast path only queues itself).
fn with_profile(s: &Counters, f: impl FnOnce(&mut Profile)) {
    let mut p = s.profile.take().unwrap_or_else(|| {
        // One an exited thread left (zeroed), else a new one.
        let spare = EXITED.lock().spare.pop();
        spare.unwrap_or_else(Profile::new)
    });
    f(&mut p);
    s.profile.set(Some(p));
}

/// `--profile`: call `nr` took `cycles` in the dispatcher, `host` of them
/// in host calls.
pub fn timed(s: &Counters, nr: usize, cycles: u64, host: u64) {
    with_profile(s, |p| {
        if let (Some(c), Some(h)) = (p.cycles.get_mut(nr), p.host.get_mut(nr)) {
            *c += cycles;
            *h += host;
        }
    });
}

/// `--profile`: the host cycles counted so far on this thread.
pub fn host_so_far(s: &Counters) -> u64 {
    let mut v = 0;
    with_profile(s, |p| v = p.host_total);
    v
}

/// `--profile`: a host call for the program took `cycles`.
pub fn host_time(s: &Counters, cycles: u64) {
    with_profile(s, |p| p.host_total += cycles);
}

/// `--profile`: a run of the trap path's SIGSYS handler took `cycles`.
pub fn trap_time(s: &Counters, cycles: u64) {
    with_profile(s, |p| {
        p.traps += 1;
        p.trap_cycles += cycles;
    });
}

impl Counters {
    pub const fn new() -> Self {
        Counters {
            syscalls: Cell::new(0),
            fast: Cell::new(0),
            trap: Cell::new(0),
            emulated: Cell::new(0),
            host_calls: Cell::new(0),
            sync_signals: Cell::new(0),
            async_signals: Cell::new(0),
            per_nr: [const { Cell::new(0) }; MAX_NR],
            profile: Cell::new(None),
        }
    }
}

impl Default for Counters {
    fn default() -> Self {
        Self::new()
    }
}

fn bump(c: &Cell<u64>) {
    c.set(c.get() + 1);
}

/// A system call was dispatched (`fast`: from a patched site; `emulated`:
/// served without the host).
#[inline(always)]
pub fn syscall(s: &Counters, nr: usize, fast: bool, emulated: bool) {
    if on() {
        bump(&s.syscalls);
        if fast {
            bump(&s.fast);
        } else {
            bump(&s.trap);
        }
        if emulated {
            bump(&s.emulated);
        }
        if let Some(c) = s.per_nr.get(nr) {
            c.set(c.get().saturating_add(1));
        }
    }
}

/// The runtime made a host call on the program's behalf.
#[inline(always)]
pub fn host_call(s: &Counters) {
    if on() {
        bump(&s.host_calls);
    }
}

/// A signal was delivered to the program.
#[inline(always)]
pub fn signal(s: &Counters, synchronous: bool) {
    if on() {
        bump(if synchronous {
            &s.sync_signals
        } else {
            &s.async_signals
        });
    }
}

/// Sums of counters.
#[derive(Default, Clone)]
pub struct Totals {
    threads: u64,
    syscalls: u64,
    fast: u64,
    trap: u64,
    emulated: u64,
    host_calls: u64,
    sync_signals: u64,
    async_signals: u64,
    per_nr: Vec<u64>,
    /// `--profile`: per call number, cycles in the dispatcher and in host
    /// calls; trap-path handler runs and cycles.
    cycles: Vec<u64>,
    host: Vec<u64>,
    traps: u64,
    trap_cycles: u64,
}

impl Totals {
    /// Adds one thread's counters.
    pub fn add(&mut self, c: &Counters) {
        if self.per_nr.is_empty() {
            self.per_nr = alloc::vec![0; MAX_NR];
        }
        self.threads += 1;
        self.syscalls += c.syscalls.get();
        self.fast += c.fast.get();
        self.trap += c.trap.get();
        self.emulated += c.emulated.get();
        self.host_calls += c.host_calls.get();
        self.sync_signals += c.sync_signals.get();
        self.async_signals += c.async_signals.get();
        for (t, n) in self.per_nr.iter_mut().zip(c.per_nr.iter()) {
            *t += n.get() as u64;
        }
        let p = c.profile.take();
        if let Some(p) = &p {
            self.add_profile(&p.cycles, &p.host, p.traps, p.trap_cycles);
        }
        c.profile.set(p);
    }

    /// Adds one thread's `--profile` times.
    fn add_profile(&mut self, cycles: &[u64], host: &[u64], traps: u64, trap_cycles: u64) {
        if self.cycles.is_empty() {
            self.cycles = alloc::vec![0; MAX_NR];
            self.host = alloc::vec![0; MAX_NR];
        }
        for (t, n) in self.cycles.iter_mut().zip(cycles) {
            *t += n;
        }
        for (t, n) in self.host.iter_mut().zip(host) {
            *t += n;
        }
        self.traps += traps;
        self.trap_cycles += trap_cycles;
    }

    fn top(&self, n: usize) -> Vec<(&'static str, u64)> {
        let mut v: Vec<(&'static str, u64)> = self
            .per_nr
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(nr, &c)| (name(nr).unwrap_or("?"), c))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.truncate(n);
        v
    }
}

/// Totals of the threads that have already exited (per process), and the
/// `--profile` counters they no longer need.
struct Exited {
    totals: Option<Totals>,
    /// The process whose threads `totals` counts (a child sharing our
    /// memory, vfork's, sees them too, and must not count them).
    pid: i32,
    spare: Vec<Box<Profile>>,
}

static EXITED: crate::sync::Lock<Exited> = crate::sync::Lock::new(
    crate::sync::Rank::Exited,
    Exited {
        totals: None,
        pid: 0,
        spare: Vec::new(),
    },
);

/// Prints the report of a thread or process (`kind`) `id` to stderr, and
/// writes its JSON line (`--stats-json`) into `json`.
pub fn report(kind: &str, id: i32, t: &Totals, json: &mut LineBuf) {
    let mut b = LineBuf::new();
    let _ = write!(
        b,
        "picos stats: {kind} {id}: {} syscalls (fast path {}, trap path {}); served in the library OS {}, host calls {}; signals {} sync, {} async",
        t.syscalls, t.fast, t.trap, t.emulated, t.host_calls, t.sync_signals, t.async_signals
    );
    if kind == "process" {
        let _ = write!(b, "; {} threads", t.threads);
    }
    let _ = b.write_str("\n");
    b.flush();
    let top = t.top(10);
    if !top.is_empty() {
        let _ = b.write_str("picos stats:   top syscalls:");
        for (i, (name, n)) in top.iter().enumerate() {
            let _ = write!(b, "{} {name} {n}", if i == 0 { "" } else { "," });
        }
        let _ = b.write_str("\n");
        b.flush();
    }
    {
        let b = json;
        let _ = write!(
            b,
            "{{\"kind\":\"{kind}\",\"id\":{id},\"syscalls\":{},\"fast_path\":{},\"trap_path\":{},\"emulated\":{},\"host_calls\":{},\"sync_signals\":{},\"async_signals\":{},\"threads\":{},\"top\":[",
            t.syscalls, t.fast, t.trap, t.emulated, t.host_calls, t.sync_signals, t.async_signals, t.threads
        );
        for (i, (name, n)) in top.iter().enumerate() {
            let _ = write!(
                b,
                "{}{{\"name\":\"{name}\",\"count\":{n}}}",
                if i == 0 { "" } else { "," }
            );
        }
        let _ = b.write_str("]}\n");
    }
}

/// Adds an exiting thread's counters to the process's; its `--profile`
/// counters, zeroed, go to the next thread that needs some.
pub fn add_exited(c: &Counters) {
    ANY_EXITED.store(true, Ordering::Relaxed);
    let pid = crate::host::getpid();
    let mut g = EXITED.lock();
    if g.pid != pid {
        // Another process's (the parent's, for a child sharing its memory).
        g.totals = None;
        g.pid = pid;
    }
    g.totals.get_or_insert_with(Totals::default).add(c);
    if let Some(mut p) = c.profile.take() {
        p.clear();
        g.spare.push(p);
    }
}

/// The counters of the threads of this process that have exited (none of
/// another process that shares its memory: a vfork child's parent).
pub fn exited() -> Totals {
    let g = EXITED.lock();
    match &g.totals {
        Some(t) if g.pid == crate::host::getpid() => t.clone(),
        _ => Totals::default(),
    }
}

/// The stats' part in fork: the exited threads' totals are locked across
/// it; in the child they are the parent's, and forgotten.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "stats",
    hold: |inner| {
        let _exited = EXITED.lock();
        inner()
    },
    alone: crate::sync::ForkHook::nothing,
    // (Only if a thread has exited: the lock's word would copy its page.)
    child: |_| {
        if ANY_EXITED.load(Ordering::Relaxed) {
            EXITED.lock().totals = None;
        }
    },
};

/// Some thread has exited ([`add_exited`]): `EXITED` may hold totals.
static ANY_EXITED: AtomicBool = AtomicBool::new(false);

/// Prints `--profile`'s table for process `id`: where the time of its
/// system calls went, by call, most first.
pub fn profile_report(id: i32, t: &Totals) {
    // Cycles per millisecond: known, or measured over at least 2 ms since
    // profiling began (waiting for them in a program that ran less, the
    // first of a tree only: the rate goes on through execve).
    // (Integers only: the runtime uses no FPU.)
    let per_ms = u128::from(loop {
        if let Some(r) = tsc_per_ms() {
            break r;
        }
    });
    // Microseconds, in tenths, and thousandths per call.
    let us = |c: u64| Fixed(u128::from(c) * 10_000 / per_ms, 1);
    let per_call =
        |c: u64, n: u64| Fixed(u128::from(c) * 1_000_000 / per_ms / u128::from(n.max(1)), 3);
    let mut rows: Vec<(usize, u64)> = t
        .per_nr
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(nr, &n)| (nr, n))
        .collect();
    let cyc = |nr: usize| t.cycles.get(nr).copied().unwrap_or(0);
    let host = |nr: usize| t.host.get(nr).copied().unwrap_or(0);
    rows.sort_by(|a, b| cyc(b.0).cmp(&cyc(a.0)).then(b.1.cmp(&a.1)));
    let total: u64 = rows.iter().map(|&(nr, _)| cyc(nr)).sum();
    let total_host: u64 = rows.iter().map(|&(nr, _)| host(nr).min(cyc(nr))).sum();
    let mut b = LineBuf::new();
    let _ = writeln!(
        b,
        "picos profile: process {id}: {} system calls ({} fast path, {} trap path), {} us in them: {} us in the library OS, {} us in host calls",
        t.syscalls,
        t.fast,
        t.trap,
        us(total),
        us(total - total_host),
        us(total_host)
    );
    b.flush();
    let _ = writeln!(
        b,
        "picos profile:   {:>6} {:>10} {:>12} {:>9} {:>12} {:>12}  syscall",
        "% time", "calls", "total us", "us/call", "library OS", "host"
    );
    b.flush();
    for &(nr, n) in rows.iter().take(25) {
        let (c, h) = (cyc(nr), host(nr).min(cyc(nr)));
        let _ = writeln!(
            b,
            "picos profile:   {:>6} {:>10} {:>12} {:>9} {:>12} {:>12}  {}",
            Fixed(
                if total == 0 {
                    0
                } else {
                    u128::from(c) * 10_000 / u128::from(total)
                },
                2
            ),
            n,
            us(c),
            per_call(c, n),
            us(c - h),
            us(h),
            name(nr).unwrap_or("?")
        );
        b.flush();
    }
    if rows.len() > 25 {
        let _ = writeln!(b, "picos profile:   ... {} more calls", rows.len() - 25);
        b.flush();
    }
    if t.traps > 0 {
        let _ = writeln!(
            b,
            "picos profile:   trap path: {} SIGSYS handler runs, {} us in them (each also costs the kernel's signal delivery and return, not measured here)",
            t.traps,
            us(t.trap_cycles)
        );
        b.flush();
    }
}

/// A fixed-point number: `.0` in units of 10^-`.1`, shown with `.1`
/// decimals (padding and alignment as the formatter asks).
struct Fixed(u128, u32);

impl core::fmt::Display for Fixed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let unit = 10u128.pow(self.1);
        let mut b = LineBuf::new();
        let _ = write!(
            b,
            "{}.{:0w$}",
            self.0 / unit,
            self.0 % unit,
            w = self.1 as usize
        );
        f.pad(core::str::from_utf8(b.as_bytes()).unwrap_or("?"))
    }
}

impl Counters {
    /// Back to zero (a forked child's thread: its counts were the parent's).
    /// Only what is not zero already is written (without `--stats` and
    /// `--profile`, nothing): a write to pages the child only reads would
    /// copy them (a copy-on-write fault each).
    pub fn reset(&self) {
        for c in [
            &self.syscalls,
            &self.fast,
            &self.trap,
            &self.emulated,
            &self.host_calls,
            &self.sync_signals,
            &self.async_signals,
        ] {
            if c.get() != 0 {
                c.set(0);
            }
        }
        for c in self.per_nr.iter().filter(|c| c.get() != 0) {
            c.set(0);
        }
        // (The times exist only under `--profile`.)
        if profiling() {
            self.profile.set(None);
        }
    }
}
