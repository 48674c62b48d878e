//! `--stats`: per-thread counters of system calls and signals, printed when
//! each thread exits and, merged, when the process exits (or replaces
//! itself with execve), in the spirit of Gramine's `sgx.enable_stats`.
//! With `--stats-json FILE` each report is also appended to FILE as one
//! JSON object per line.
//!
//! Counting costs one predictable branch when stats are off.
#![deny(unsafe_code)]

use crate::diag::log::LineBuf;
use crate::host::nr::{name, MAX_NR};
use alloc::vec::Vec;
use core::cell::Cell;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Are stats on?
#[inline(always)]
pub fn on() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns stats on (from the launch configuration).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
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

/// Totals of the threads that have already exited (per process).
static EXITED: crate::sync::Lock<Option<Totals>> =
    crate::sync::Lock::new(crate::sync::Rank::Exited, None);

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

/// Adds an exiting thread's counters to the process's.
pub fn add_exited(c: &Counters) {
    let mut g = EXITED.lock();
    g.get_or_insert_with(Totals::default).add(c);
}

/// The counters of the threads that have exited.
pub fn exited() -> Totals {
    EXITED.lock().clone().unwrap_or_default()
}

/// The stats' part in fork: the exited threads' totals are locked across
/// it; in the child they are the parent's, and forgotten.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "stats",
    hold: |inner| {
        let _exited = EXITED.lock();
        inner()
    },
    child: |_| *EXITED.lock() = None,
};

impl Counters {
    /// Back to zero (a forked child's thread: its counts were the parent's).
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
            c.set(0);
        }
        for c in &self.per_nr {
            c.set(0);
        }
    }
}
