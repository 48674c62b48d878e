//! Per-thread runtime state.
//!
//! Each program thread has a [`Thread`] in the area at the top of its
//! runtime stack slot (`mm::area`); the GS base points at it, so
//! `current()` is one `rdgsbase` and a check. Programs on Linux x86-64 do
//! not use GS; `arch_prctl(ARCH_SET_GS)` from the program is emulated and
//! never reaches the register (a program that changes it with `wrgsbase`
//! is stopped at its next call: see `current`).
//!
//! Signal dispositions live in a [`Process`] shared by the threads of a
//! process (and copied for `clone` without `CLONE_SIGHAND`, as for vfork).
#![deny(unsafe_code)]

use crate::arch::{EntryState, SigInfo};
use crate::host::abi::StackT;
use crate::host::errno::Errno;
use crate::host::{self};
use crate::kernel::fs::FdTable;
use crate::kernel::process::Process;
use crate::mm::runtime;
use core::cell::Cell;
use core::sync::atomic::{compiler_fence, AtomicI32, AtomicU64, Ordering};

pub const THREAD_MAGIC: u64 = 0x7069_636f_735f_7468; // "picos_th"

/// Number of signals (1..=64).
pub const NSIG: usize = 64;

/// How many extra instances of real-time signals a thread queues.
pub const EXTRA_QUEUED: usize = 16;

/// The runtime's state for one program thread.
#[repr(C)]
pub struct Thread {
    /// What the entry stubs read through GS (first: at the GS base).
    pub entry: EntryState,
    /// Host thread id (0 until known). Once the thread has exited, `tkill`
    /// on it fails and its stack slot may be reused.
    pub tid: AtomicI32,
    pub magic: u64,
    /// Stack slot index.
    pub slot: usize,
    /// The program's signal mask (the host mask is this minus reserved
    /// signals, or, on the fast path, may leave some of them open: see
    /// `host_sigmask`).
    pub sig_mask: Cell<u64>,
    /// The host's mask while the program runs, as the runtime last set it
    /// (`kernel::signal::HOST_MASK_UNKNOWN` if it does not know): on the
    /// fast path the runtime leaves a signal the program blocks open on the
    /// host as long as the runtime's handler would catch it
    /// (`kernel::signal::set_mask_lazily`).
    pub host_sigmask: Cell<u64>,
    /// Mask to restore after rt_sigsuspend, when one is in progress.
    pub saved_mask: Cell<Option<u64>>,
    /// The program's sigaltstack.
    pub altstack: Cell<StackT>,
    /// The program's GS base (emulated).
    pub guest_gs: Cell<usize>,
    /// The process's state (dispositions, ids), shared with the threads
    /// of the same process.
    pub process: Cell<&'static Process>,
    /// The descriptor table's state (shared with the threads and processes
    /// made with CLONE_FILES); `entry.passthrough` points into it.
    pub fd_table: Cell<&'static FdTable>,
    /// Signals the host delivered while the runtime was busy on this
    /// thread, or that the program blocks and the host cannot hold, in two
    /// queues ([`Thread::pending_bits`] is both). Those sent to this thread
    /// (a fault, `tkill`/`tgkill`): Linux's private queue, taken before the
    /// shared one.
    pub pending_private: AtomicU64,
    /// Those sent to the process (`kill`, `sigqueue`, timers): Linux's
    /// shared queue. A standard signal can wait once in each queue.
    pub pending_shared: AtomicU64,
    /// The arrival count the next signal of the private queue takes (see
    /// `private_arrival`).
    pub arrivals: Cell<u64>,
    /// What the program's own signal-sending call that runs on the host
    /// sends: a signal that arrives meanwhile is queued as that.
    pub sending: Cell<Sending>,
    /// How many of `pending_extra` are queued.
    pub pending_extra_len: Cell<usize>,
    /// Inside a fast-path call (entered from a patched site, not a signal).
    pub in_fast: Cell<bool>,
    /// Syscall User Dispatch selector byte (1 = trap, 0 = allow all): the
    /// runtime opens it only around calls into the vDSO.
    pub sud_selector: core::sync::atomic::AtomicU8,
    /// The last fault-type signal (SIGSEGV, SIGBUS, ... with a positive
    /// si_code) whose origin is not yet known: see `entry::trap::fault_recurs`.
    pub fault_probe: Cell<FaultProbe>,
    /// The runtime locks this thread holds (`lock::Rank` bits).
    pub held_locks: Cell<u32>,
    /// The fast path is delivering pending signals with async signals open
    /// on the host (`entry::fast::deliver_on`): one that arrives meanwhile goes
    /// back to the host, blocked until the delivery is done.
    pub delivering: Cell<bool>,
    /// Signals this thread sent itself (tkill, tgkill) while the host
    /// blocked them for the program: they wait in the host's queue, and
    /// the program's rt_sigprocmask that unblocks one takes it from there
    /// for the runtime to deliver (`kernel::signal::take_self_sent`),
    /// rather than have the host deliver it to the runtime's handler.
    pub self_sent: Cell<u64>,
    /// The program's seccomp mode for this thread (`kernel::seccomp`): 0
    /// none, `seccomp::STRICT`, otherwise its newest filter's number.
    /// Inherited by the threads and processes it creates.
    pub seccomp: core::sync::atomic::AtomicU32,
    /// The thread's slot on the ptrace board plus one (`kernel::ptrace`);
    /// 0: not traced.
    pub ptrace: Cell<u32>,
    /// The board's epoch when the thread last looked for its slot.
    pub ptrace_epoch: Cell<u64>,
    /// A doorbell rang (`kernel::ptrace::is_doorbell`) while the runtime
    /// ran: the tracer's request is looked at before the program goes on.
    pub ptrace_doorbell: Cell<bool>,
    /// A fork under way whose child is traced: its reserved slot plus one.
    pub ptrace_child: Cell<usize>,
    /// Real-time signals the program blocks whose pending instances stay
    /// in the runtime's queues because the host's queue had no room for
    /// them (RLIMIT_SIGPENDING: `kernel::signal::requeue_blocked`). They
    /// wait there, in order, until the program unblocks them or takes them
    /// (sigtimedwait); further instances queue on the host behind them.
    pub held: Cell<u64>,
    /// The thread's rseq(2) registration as the host has it (area, length,
    /// signature; area 0: none), which an execve in place must undo
    /// (`kernel::exec::in_place`): the kernel would go on writing into the
    /// old program's memory.
    pub rseq: Cell<(usize, u32, u32)>,
    /// While the thread's execve of the runtime is under way: its
    /// argument block (`host::ExecArgs`), which a vfork parent unmaps
    /// when the child's execve has succeeded.
    pub exec_args: Cell<(usize, usize)>,
    // The large parts last, so that the small fields above, which the
    // runtime writes on every call and after a fork, share one page (the
    // Thread starts on a page boundary): a fork child and its parent each
    // take one copy-on-write fault for them, not one per page that a large
    // array put between them (measured: 4 pages before).
    /// The private queue's `siginfo`s (see `pending_private`).
    pub pending_info: [Cell<SigInfo>; NSIG],
    /// The shared queue's `siginfo`s (see `pending_shared`).
    pub shared_info: [Cell<SigInfo>; NSIG],
    /// When each signal of the private queue arrived (a count), for the
    /// queue order Linux's `dequeue_synchronous_signal` follows.
    pub private_arrival: [Cell<u64>; NSIG],
    /// Further queued instances of real-time signals already pending, in
    /// arrival order (real-time signals queue; standard ones coalesce).
    pub pending_extra: [Cell<SigInfo>; EXTRA_QUEUED],
    /// `--stats` counters.
    pub stats: crate::diag::stats::Counters,
    /// A fast call's result context, to be finished by the trap path.
    pub deferred: Cell<Option<crate::arch::SigContext>>,
    /// This thread's CPU affinity as last read from the host (sched_getaffinity).
    pub affinity: AffinityCache,
}

/// A fault-type signal taken, at first, for one sent by someone (`kill`
/// with a positive si_code, a child's exit signal, rseq): if the same
/// instruction raises it again at once, it was a real fault.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultProbe {
    pub rip: u64,
    pub sig: i32,
    /// The signal was queued as pending on the first sighting (and must be
    /// taken back if it turns out to be a real fault).
    pub queued: bool,
}

const _: () = assert!(core::mem::offset_of!(Thread, entry) == 0);

impl Thread {
    /// The process's cached ids (see `sys::ids`).
    pub fn ids(&self) -> &'static crate::kernel::process::IdCache {
        &self.process.get().ids
    }

    /// The process's state.
    pub fn process(&self) -> &'static Process {
        self.process.get()
    }

    /// Makes `table` this thread's descriptor-table state, and the one
    /// its direct entries read the pass-through map of.
    pub fn use_fd_table(&self, table: &'static FdTable) {
        self.fd_table.set(table);
        self.entry.passthrough.store(
            &table.passthrough as *const crate::arch::PassThrough as *mut crate::arch::PassThrough,
            Ordering::Relaxed,
        );
    }

    /// Records a signal the host delivered while the runtime ran (or one
    /// the program blocks that the host cannot hold), in the private or
    /// the shared queue as Linux would have queued it.
    pub fn add_pending(&self, info: &SigInfo) {
        let private = match self.sending.get() {
            Sending::ToProcess => false,
            Sending::ToThread => true,
            Sending::Nothing => info.code() == crate::host::abi::SI_TKILL,
        };
        self.add_pending_to(info, private);
    }

    /// Records a fault the kernel would force on this thread (Linux's
    /// `force_sig`): it waits in the thread's own queue.
    pub fn add_fault(&self, info: &SigInfo) {
        self.add_pending_to(info, true);
    }

    fn add_pending_to(&self, info: &SigInfo, private: bool) {
        let sig = info.signo();
        if !(1..=NSIG as i32).contains(&sig) {
            return;
        }
        let bit = 1u64 << (sig - 1);
        let (set, infos) = self.queue(private);
        if set.load(Ordering::Relaxed) & bit == 0 {
            infos[(sig - 1) as usize].set(*info);
            if private {
                let n = self.arrivals.get() + 1;
                self.arrivals.set(n);
                self.private_arrival[(sig - 1) as usize].set(n);
            }
            set.fetch_or(bit, Ordering::Relaxed);
        } else if sig >= 32 {
            let n = self.pending_extra_len.get();
            if n < EXTRA_QUEUED {
                self.pending_extra[n].set(*info);
                self.pending_extra_len.set(n + 1);
            }
        }
        self.update_pending_flag();
    }

    /// Forgets every pending signal (a fork child starts with none, as on
    /// Linux; the runtime's pending set was copied with the parent's memory).
    pub fn clear_pending(&self) {
        self.pending_private.store(0, Ordering::Relaxed);
        self.pending_shared.store(0, Ordering::Relaxed);
        self.pending_extra_len.set(0);
        self.held.set(0);
        self.update_pending_flag();
    }

    /// The `pending` flag says whether a pending signal is deliverable now
    /// (not blocked by the program): blocking calls are cut short for those.
    pub fn update_pending_flag(&self) {
        // (A ptrace doorbell counts: the tracer's stop is due. So does a
        // signal the program blocks that arrived because the host's mask
        // left it open (`kernel::signal::set_mask_lazily`): it goes back to
        // the host, and the host's mask becomes the program's, before the
        // program goes on or a call blocks; unless the host had no room
        // for it (`held`).)
        //
        // The host's signal handler runs this too (`add_pending`), and may
        // interrupt it between the reads and the store: its own, correct,
        // store would then be overwritten with a flag computed from the
        // state before the signal (a pending signal nobody delivers: a
        // preemptible function's timer lost for good). So the store is
        // checked against the state once more, and made again if a handler
        // changed it meanwhile. A handler that runs after that check
        // stores a flag that is right for the state it leaves.
        loop {
            let state = self.flag_inputs();
            let (mask, pending, doorbell, held) = state;
            let deliverable = pending & !mask != 0
                || doorbell
                || pending & mask & !(crate::kernel::signal::NEVER_BLOCKED | held) != 0;
            self.entry
                .pending
                .store(deliverable as u32, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            if self.flag_inputs() == state {
                return;
            }
        }
    }

    /// What the `pending` flag is computed from.
    #[inline(always)]
    fn flag_inputs(&self) -> (u64, u64, bool, u64) {
        compiler_fence(Ordering::SeqCst);
        (
            self.sig_mask.get(),
            self.pending_bits(),
            self.ptrace_doorbell.get(),
            self.held.get(),
        )
    }

    /// The signal [`Thread::take_pending`] would take, and from which
    /// queue (true: the private one).
    fn next_pending(&self, blocked: u64) -> Option<(i32, bool)> {
        for (set, private) in [(&self.pending_private, true), (&self.pending_shared, false)] {
            let mut x = set.load(Ordering::Relaxed) & !blocked;
            if x == 0 {
                continue;
            }
            if x & SYNCHRONOUS_MASK != 0 {
                x &= SYNCHRONOUS_MASK;
            }
            return Some((x.trailing_zeros() as i32 + 1, private));
        }
        None
    }

    /// The number of the signal [`Thread::take_pending`] would take.
    pub fn peek_pending(&self, blocked: u64) -> Option<i32> {
        self.next_pending(blocked).map(|(sig, _)| sig)
    }

    /// Would [`Thread::take_pending`] take a signal sent to the process
    /// (none of the thread's own being pending)?
    pub fn next_is_shared(&self, blocked: u64) -> bool {
        self.next_pending(blocked)
            .is_some_and(|(_, private)| !private)
    }

    /// Takes the signal to deliver to a handler now, as Linux's `get_signal`
    /// picks it: first `dequeue_synchronous_signal`, which, once a
    /// synchronous signal of the thread's queue is deliverable, takes the
    /// first synchronous signal queued there with a positive `si_code`
    /// (a fault's), blocked or not; otherwise [`Thread::take_pending`].
    pub fn take_for_delivery(&self, blocked: u64) -> Option<SigInfo> {
        let private = self.pending_private.load(Ordering::Relaxed);
        if private & !blocked & SYNCHRONOUS_MASK != 0 {
            let (infos, arrival) = (&self.pending_info, &self.private_arrival);
            let first = (0..NSIG)
                .filter(|&i| {
                    private & SYNCHRONOUS_MASK & (1u64 << i) != 0 && infos[i].get().code() > 0
                })
                .min_by_key(|&i| arrival[i].get());
            if let Some(i) = first {
                return self.take_from(i as i32 + 1, true);
            }
        }
        self.take_pending(blocked)
    }

    /// Takes a pending signal not in `blocked`, in the order of Linux's
    /// `dequeue_signal`: the private queue before the shared one, and in
    /// each the synchronous (fault-type) signals first, then the lowest
    /// number.
    pub fn take_pending(&self, blocked: u64) -> Option<SigInfo> {
        self.take_pending_queued(blocked).map(|(info, _)| info)
    }

    /// As [`Thread::take_pending`], with the queue it came from (true: the
    /// thread's own).
    pub fn take_pending_queued(&self, blocked: u64) -> Option<(SigInfo, bool)> {
        let (sig, private) = self.next_pending(blocked)?;
        self.take_from(sig, private).map(|info| (info, private))
    }

    /// The signal [`Thread::take_pending_queued`] would take, and from which
    /// queue (true: the thread's own), without taking it: its first
    /// instance there, which only taking it changes.
    pub fn peek_pending_queued(&self, blocked: u64) -> Option<(SigInfo, bool)> {
        let (sig, private) = self.next_pending(blocked)?;
        let (_, infos) = self.queue(private);
        Some((infos[(sig - 1) as usize].get(), private))
    }

    /// The private queue (the thread's own) or the shared one (the
    /// process's): its set of pending signals and their first instances.
    fn queue(&self, private: bool) -> (&AtomicU64, &[Cell<SigInfo>; NSIG]) {
        if private {
            (&self.pending_private, &self.pending_info)
        } else {
            (&self.pending_shared, &self.shared_info)
        }
    }

    /// Takes signal `sig` from the private or the shared queue (it is
    /// pending there).
    pub fn take_from(&self, sig: i32, private: bool) -> Option<SigInfo> {
        // The host's signal handler adds to these queues (`add_pending`). If
        // it ran in the middle of this, an instance it queued behind this
        // one could be dropped with the bit. That can happen in a call
        // served on the fast path (`in_fast`: the host's signals are open),
        // unless handlers hand their signals back to the host meanwhile
        // (`delivering`); there the host's signals wait (a rare path: a
        // signal is pending and taken). The trap path and the host's
        // handler run with them blocked.
        let old = if !self.in_fast.get() || self.delivering.get() {
            None
        } else {
            host::rt_sigprocmask(
                crate::host::abi::SIG_BLOCK,
                Some(crate::kernel::signal::RUNTIME_MASK),
            )
            .ok()
        };
        let info = self.take_from_queue(sig, private);
        if let Some(old) = old {
            let _ = host::rt_sigprocmask(crate::host::abi::SIG_SETMASK, Some(old));
        }
        info
    }

    fn take_from_queue(&self, sig: i32, private: bool) -> Option<SigInfo> {
        let i = (sig - 1) as usize;
        let (set, infos) = self.queue(private);
        let info = infos[i].get();
        // The next queued instance of the same signal, if any, takes its place.
        let n = self.pending_extra_len.get();
        let extra = &self.pending_extra;
        match extra[..n].iter().position(|e| e.get().signo() == sig) {
            Some(k) => {
                infos[i].set(extra[k].get());
                for j in k..n - 1 {
                    extra[j].set(extra[j + 1].get());
                }
                self.pending_extra_len.set(n - 1);
            }
            None => {
                set.fetch_and(!(1u64 << i), Ordering::Relaxed);
                if self.pending_bits() & (1u64 << i) == 0 {
                    self.held.set(self.held.get() & !(1u64 << i));
                }
            }
        }
        self.update_pending_flag();
        Some(info)
    }

    /// The signals pending in the runtime, in either queue.
    pub fn pending_bits(&self) -> u64 {
        self.pending_private.load(Ordering::Relaxed) | self.pending_shared.load(Ordering::Relaxed)
    }

    /// Is signal `sig` pending in the runtime?
    pub fn is_pending(&self, sig: i32) -> bool {
        self.pending_bits() & (1u64 << (sig - 1)) != 0
    }

    /// Is a signal pending that the program does not block?
    pub fn has_pending(&self) -> bool {
        self.pending_bits() & !self.sig_mask.get() != 0
    }

    /// Host thread id.
    pub fn tid(&self) -> i32 {
        self.tid.load(Ordering::Relaxed)
    }

    /// Is `sp` on this thread's runtime stack (runtime code, or code the
    /// runtime calls, such as the vDSO, is running)?
    pub fn on_runtime_stack(&self, sp: u64) -> bool {
        let base = runtime::slot_base(self.slot) as u64;
        sp >= base && sp < self.stack_top() as u64
    }

    /// Top of this thread's runtime stack (below the Thread itself), 64-aligned.
    pub fn stack_top(&self) -> usize {
        self.entry.self_ptr & !63
    }
}

/// The calling thread's runtime state. A GS base that no longer points at
/// it (the program changed GS with `wrgsbase`) ends the program with
/// SIGSEGV, with a message: the runtime cannot serve it any more.
#[inline(always)]
pub fn current() -> &'static Thread {
    match current_checked() {
        Some(t) => t,
        None => lost_gs(),
    }
}

#[cold]
fn lost_gs() -> ! {
    crate::log!(
        Error,
        "the runtime's thread pointer (the GS base) no longer points at its state: \
         the program changed GS (wrgsbase) or overwrote the runtime's memory; \
         ending the program with SIGSEGV"
    );
    crate::kernel::signal::die_of(crate::host::abi::SIGSEGV)
}

/// Counts a host call made on the program's behalf (`--stats`): by the
/// handlers (`sys`) and by the library OS's own files (`kernel::fs::file`).
#[inline(always)]
pub fn count_host_call() {
    if crate::diag::stats::on() {
        if let Some(t) = current_checked() {
            crate::diag::stats::host_call(&t.stats);
        }
    }
}

/// The calling thread's runtime state, if the GS base points at one (None
/// before set-up, e.g. a fault during start-up, or after the program
/// changed GS).
#[inline]
pub fn current_checked() -> Option<&'static Thread> {
    // mm::area checks the address, that the area is placed, and its type;
    // the self pointer and the magic catch a program that wrote over the
    // area (they are the runtime's state, in memory the program can write).
    let p = crate::arch::gs_base();
    crate::mm::area::at::<Thread>(p).filter(|t| t.entry.self_ptr == p && t.magic == THREAD_MAGIC)
}

/// The runtime state of the thread whose runtime stack holds `frame` (the
/// fast entry's register frame): one lookup, no GS read (the entry found
/// that stack through GS already).
#[inline]
pub fn of_frame(frame: usize) -> &'static Thread {
    match crate::mm::area::of_stack::<Thread>(frame) {
        Some(t) => t,
        None => lost_gs(),
    }
}

fn reclaimable(i: usize) -> bool {
    let Some(t) = crate::mm::area::in_slot::<Thread>(i) else {
        return true;
    };
    let tid = t.tid.load(Ordering::Acquire);
    // The thread is gone once the host no longer knows its id (a reused id
    // only delays the reuse of this slot).
    tid > 0 && host::tkill(tid, 0) == Err(Errno::ESRCH)
}

/// Allocates a stack slot and initialises a Thread at its top.
pub fn alloc(
    process: &'static Process,
    fd_table: &'static FdTable,
    sig_mask: u64,
) -> Result<&'static Thread, Errno> {
    let slot = runtime::alloc_stack_slot(reclaimable)?;
    let addr = crate::mm::area::area_addr::<Thread>(slot);
    let t = crate::mm::area::place(slot, || Thread {
        entry: EntryState::new(addr, &fd_table.passthrough),
        tid: AtomicI32::new(0),
        magic: THREAD_MAGIC,
        slot,
        sig_mask: Cell::new(sig_mask),
        host_sigmask: Cell::new(crate::kernel::signal::HOST_MASK_UNKNOWN),
        saved_mask: Cell::new(None),
        altstack: Cell::new(StackT::DISABLED),
        guest_gs: Cell::new(0),
        process: Cell::new(process),
        fd_table: Cell::new(fd_table),
        pending_private: AtomicU64::new(0),
        pending_info: [const { Cell::new(SigInfo::ZERO) }; NSIG],
        pending_shared: AtomicU64::new(0),
        shared_info: [const { Cell::new(SigInfo::ZERO) }; NSIG],
        private_arrival: [const { Cell::new(0) }; NSIG],
        arrivals: Cell::new(0),
        sending: Cell::new(Sending::Nothing),
        pending_extra: [const { Cell::new(SigInfo::ZERO) }; EXTRA_QUEUED],
        pending_extra_len: Cell::new(0),
        in_fast: Cell::new(false),
        sud_selector: core::sync::atomic::AtomicU8::new(1),
        stats: crate::diag::stats::Counters::new(),
        deferred: Cell::new(None),
        affinity: AffinityCache::new(),
        fault_probe: Cell::new(FaultProbe::default()),
        held_locks: Cell::new(0),
        delivering: Cell::new(false),
        self_sent: Cell::new(0),
        seccomp: core::sync::atomic::AtomicU32::new(0),
        ptrace: Cell::new(0),
        ptrace_epoch: Cell::new(0),
        ptrace_doorbell: Cell::new(false),
        ptrace_child: Cell::new(0),
        held: Cell::new(0),
        rseq: Cell::new((0, 0, 0)),
        exec_args: Cell::new((0, 0)),
    });
    Ok(t)
}

/// The calling thread's held-lock set (`sync`): found from the stack it
/// runs on (every thread's runtime code runs on its own runtime stack or
/// its signal stack, both in its slot), which costs less than reading and
/// checking GS on every lock and unlock.
fn held_locks() -> Option<&'static Cell<u32>> {
    let here = 0u8;
    crate::mm::area::of_stack::<Thread>(&here as *const u8 as usize).map(|t| &t.held_locks)
}

/// Is the calling thread's descriptor table shared with other tasks
/// (`host::fds`)? None before it has runtime state.
fn table_shared() -> Option<bool> {
    current_checked().map(|t| t.fd_table.get().is_shared())
}

/// Makes `t` the calling thread's runtime state and, with `signal_stack`,
/// its slot its signal stack ([`signal_stack`]). A new thread leaves that to
/// the `rt_sigreturn` it starts the program with ([`prepare_child`] puts
/// the same stack in its frame): the kernel installs it there, since the
/// thread has none yet (a `CLONE_VM` child starts without one), and it
/// blocks every signal until then (its creator blocked them around the
/// clone). A stack set before would make the kernel ignore the frame's: it
/// refuses to change the signal stack a thread runs on.
pub fn install(t: &'static Thread, signal_stack: bool) {
    crate::sync::set_held_hook(held_locks);
    crate::host::fds::set_table_shared_hook(table_shared);
    crate::arch::set_gs_base(t.entry.self_ptr);
    t.tid.store(host::gettid(), Ordering::Release);
    if signal_stack {
        if let Err(e) = host::sigaltstack(Some(&self::signal_stack(t)), None) {
            crate::log!(Error, "sigaltstack failed: {}", e);
        }
    }
}

/// Thread `t`'s signal stack: its slot from the guard page up to its stack
/// top (the runtime stack and the signal stack are one).
fn signal_stack(t: &Thread) -> StackT {
    let base = runtime::slot_base(t.slot) + runtime::PAGE_SIZE;
    StackT {
        sp: base as u64,
        flags: 0,
        pad: 0,
        size: (t.stack_top() - base) as u64,
    }
}

/// Frees a Thread that never ran.
pub fn free_unused(t: &'static Thread) {
    runtime::free_slot(t.slot);
}

/// Marks a thread's slot for reuse once the host reports the thread gone.
pub fn retire(t: &Thread) {
    runtime::mark_slot_exiting(t.slot);
}

/// Writes the child's start-up block on its runtime stack: a kernel-format
/// signal frame holding `uc` (with the FPU state copied) that the child
/// returns through. Returns the child's initial stack pointer, where
/// [`child_frame`] finds the frame.
pub fn prepare_child(child: &'static Thread, uc: &crate::arch::UContext) -> usize {
    use crate::arch::RtSigFrame;
    use crate::mm::user::bytes_of;
    let top = child.stack_top();
    let image = crate::arch::fpu::image(uc);
    let fp_size = image.map_or(0, |i| i.len());
    let fp = (top - fp_size) & !63;
    let frame = ((fp - core::mem::size_of::<RtSigFrame>()) & !15) - 8;
    let header = (frame - 32) & !15;
    let mut f = RtSigFrame {
        pretcode: 0,
        uc: *uc,
        info: Default::default(),
    };
    f.uc.mcontext.fpstate = if fp_size != 0 { fp as u64 } else { 0 };
    // rt_sigreturn also installs the signal stack: the child's own (see
    // `install`).
    f.uc.stack = signal_stack(child);
    if let Some(img) = image {
        runtime::write_in_slot(child.slot, fp, img);
    }
    runtime::write_in_slot(child.slot, frame, bytes_of(&f));
    runtime::write_in_slot(child.slot, header, bytes_of(&[frame + 8, 0usize, 0, 0]));
    header
}

/// In a child started by [`spawn`] on stack `sp`: its Thread, and the
/// address of the ucontext of the frame it returns to the program through.
pub fn child_frame(sp: usize) -> Option<(&'static Thread, usize)> {
    let slot = runtime::slot_of(sp)?;
    let t = crate::mm::area::in_slot::<Thread>(slot)?;
    let [uc, _, _, _] = runtime::read_in_slot::<[usize; 4]>(slot, sp)?;
    Some((t, uc))
}

/// Starts a child with `clone(2)` on the stack prepared by [`prepare_child`];
/// returns the host result (child tid or -errno) in the parent.
pub fn spawn(child: &Thread, flags: u64, sp: usize, ptid: usize, ctid: usize, tls: usize) -> isize {
    runtime::spawn_in_slot(child.slot, flags, sp, ptid, ctid, tls)
}

/// The thread's part in fork, first of all: in the child, the forking
/// thread (the only one) forgets the signals its parent's runtime held for
/// it, before anything can queue one of its own; arms Syscall User
/// Dispatch (not inherited); starts its counters from zero; learns its id.
pub const FORK_HOOK: crate::sync::ForkHook = crate::sync::ForkHook {
    name: "thread",
    hold: crate::sync::ForkHook::no_lock,
    alone: crate::sync::ForkHook::nothing,
    child: |_| {
        let t = current();
        t.clear_pending();
        if let Err(e) = arm_dispatch() {
            crate::log!(
                Error,
                "cannot arm Syscall User Dispatch in a forked child: {}",
                e
            );
            host::exit_group(127);
        }
        t.stats.reset();
        t.tid.store(host::gettid(), Ordering::Release);
    },
};

/// Where patched sites find the answers they give inline (`patch::Inline`):
/// the pid and the parent's pid in the process's [`IdCache`] (through the
/// thread's pointer to its process), the tid in the thread's own state.
///
/// [`IdCache`]: crate::kernel::process::IdCache
pub fn inline_answers() -> crate::patch::Inline {
    use crate::kernel::process::IdCache;
    use core::mem::offset_of;
    let ids = offset_of!(Process, ids);
    crate::patch::Inline {
        process: offset_of!(Thread, process) as u32,
        pid: (ids + offset_of!(IdCache, pid)) as u32,
        ppid: (ids + offset_of!(IdCache, ppid)) as u32,
        tid: offset_of!(Thread, tid) as u32,
    }
}

/// Calls `f` for every live thread of this process (for `--stats`).
pub fn for_each_live(mut f: impl FnMut(&Thread)) {
    for i in 0..runtime::slots_seen() {
        if !runtime::slot_in_use(i) {
            continue;
        }
        if let Some(t) = crate::mm::area::in_slot::<Thread>(i) {
            if t.magic == THREAD_MAGIC {
                f(t);
            }
        }
    }
}

/// Largest affinity mask cached, in 64-bit words (1,024 CPUs); hosts with
/// more CPUs are asked every time.
pub const AFFINITY_WORDS: usize = 16;

/// How long a thread trusts its cached affinity, in TSC ticks (10 to 50 ms
/// at 5 to 1 GHz). Changes the program makes itself are seen at once (see
/// [`AFFINITY_GEN`]); this bounds how long a change made from outside the
/// picoprocess (`taskset -p`, a cpuset cgroup) goes unseen.
pub const AFFINITY_TTL: u64 = 50_000_000;

/// Bumped whenever a thread of this process changes an affinity through
/// sched_setaffinity: every thread then re-reads its own.
pub static AFFINITY_GEN: AtomicU64 = AtomicU64::new(1);

/// A thread's CPU affinity as the host last reported it (sched_getaffinity
/// with a 1,024-CPU buffer): the kernel's answer size and the mask.
pub struct AffinityCache {
    /// AFFINITY_GEN when read (0: never read).
    pub gen: Cell<u64>,
    /// TSC when read.
    pub stamp: Cell<u64>,
    /// Bytes the host wrote (the kernel's cpumask size).
    pub len: Cell<usize>,
    pub mask: [Cell<u64>; AFFINITY_WORDS],
}

impl AffinityCache {
    pub const fn new() -> Self {
        AffinityCache {
            gen: Cell::new(0),
            stamp: Cell::new(0),
            len: Cell::new(0),
            mask: [const { Cell::new(0) }; AFFINITY_WORDS],
        }
    }

    /// Reads the calling thread's affinity from the host into the cache;
    /// false if it does not fit.
    pub fn refresh(&self, gen: u64, now: u64) -> Result<bool, Errno> {
        let mut buf = [0u64; AFFINITY_WORDS];
        let r = host::sched_getaffinity(0, &mut buf);
        let n = match r {
            Ok(n) => n,
            Err(Errno::EINVAL) => return Ok(false), // more CPUs than the buffer holds
            Err(e) => return Err(e),
        };
        for (c, w) in self.mask.iter().zip(buf) {
            c.set(w);
        }
        self.len.set(n);
        self.stamp.set(now);
        self.gen.set(gen);
        Ok(true)
    }
}

impl Default for AffinityCache {
    fn default() -> Self {
        Self::new()
    }
}

/// Linux's `SYNCHRONOUS_MASK`: SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE and
/// SIGSYS, taken before other pending signals.
const SYNCHRONOUS_MASK: u64 = (1 << (11 - 1))
    | (1 << (7 - 1))
    | (1 << (4 - 1))
    | (1 << (5 - 1))
    | (1 << (8 - 1))
    | (1 << (31 - 1));

/// Which queue a signal that arrives while the program's own kill(2),
/// rt_sigqueueinfo(2) or rt_tgsigqueueinfo(2) runs belongs to. Otherwise a
/// signal is the thread's only if `tkill`/`tgkill` sent it (`SI_TKILL`) or
/// it is a fault ([`Thread::add_fault`]): a positive `si_code` alone says
/// nothing (a child's exit signal has one, and so may a queued signal).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sending {
    Nothing,
    ToProcess,
    ToThread,
}

/// Arms Syscall User Dispatch for the calling thread: from now on every
/// syscall issued outside the runtime image traps to the SIGSYS handler.
/// Linux does not pass this setting to new threads or processes, so every
/// thread the runtime creates calls this before running program code.
pub fn arm_dispatch() -> Result<(), Errno> {
    let (base, len) = crate::mm::runtime::image_range();
    // The thread's selector byte lets the runtime open the gate around vDSO
    // calls (see `kernel::time`); it stays at BLOCK otherwise.
    host::set_syscall_user_dispatch(base, len, &current().sud_selector).map(|_| ())
}
