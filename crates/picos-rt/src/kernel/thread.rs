//! Per-thread runtime state.
//!
//! Each program thread has a [`Thread`] at the top of its runtime stack slot
//! (see `mem`); the GS base points at it, so `current()` is one `rdgsbase`.
//! Programs on Linux x86-64 do not use GS; `arch_prctl(ARCH_SET_GS)` from the
//! program is emulated and never reaches the register.
//!
//! Signal dispositions live in a [`SigHand`] shared by the threads of a
//! process (and copied for `clone` without `CLONE_SIGHAND`, as for vfork).
//!
//! # Safety
//! `current()` trusts the GS base; the runtime sets it before running any
//! code that calls `current()` on a thread and never lets the program change it.
#![allow(unsafe_code)]

use crate::arch::SigInfo;
use crate::host::abi::StackT;
use crate::host::errno::Errno;
use crate::host::{self, KSigaction};
use crate::mm::runtime;
use core::cell::{Cell, UnsafeCell};
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

pub const THREAD_MAGIC: u64 = 0x7069_636f_735f_7468; // "picos_th"

/// Offset of [`Thread::pending`] (used by the blocking-syscall stub).
pub const PENDING_OFFSET: usize = 8;

/// Number of signals (1..=64).
pub const NSIG: usize = 64;

/// How many extra instances of real-time signals a thread queues.
pub const EXTRA_QUEUED: usize = 16;

/// The program's signal dispositions behind a sequence lock: readers (every
/// signal delivery, every query) never write shared memory; writers
/// serialise on `write` and make `seq` odd while they change a slot.
///
/// Lock order: `write` is taken before any other runtime lock. A thread never
/// reads while it is itself writing (writes happen in syscall handlers, and
/// the signal handlers that interrupt them do not read dispositions).
pub struct SigActions {
    seq: AtomicU64,
    write: crate::sync::Lock<()>,
    slots: [[AtomicU64; 4]; NSIG],
}

impl SigActions {
    const fn new() -> Self {
        SigActions {
            seq: AtomicU64::new(0),
            write: crate::sync::Lock::new(crate::sync::Rank::Actions, ()),
            slots: [const { [const { AtomicU64::new(0) }; 4] }; NSIG],
        }
    }

    /// The disposition of `sig` (1-based), a consistent snapshot.
    pub fn get(&self, sig: i32) -> KSigaction {
        let s = &self.slots[(sig - 1) as usize];
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 0 {
                let a = KSigaction {
                    handler: s[0].load(Ordering::Relaxed) as usize,
                    flags: s[1].load(Ordering::Relaxed),
                    restorer: s[2].load(Ordering::Relaxed) as usize,
                    mask: s[3].load(Ordering::Relaxed),
                };
                core::sync::atomic::fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == s1 {
                    return a;
                }
            }
            core::hint::spin_loop();
        }
    }

    /// Serialises writers (also held across fork, so the child never
    /// inherits a half-written table).
    pub fn lock(&self) -> crate::sync::Guard<'_, ()> {
        self.write.lock()
    }

    /// Sets the disposition of `sig`; the caller holds [`SigActions::lock`].
    pub fn set_locked(&self, _held: &crate::sync::Guard<'_, ()>, sig: i32, a: &KSigaction) {
        self.store(sig, a);
    }

    /// Writes the slot of `sig`; the caller holds the lock or has the only
    /// reference.
    fn store(&self, sig: i32, a: &KSigaction) {
        let s = &self.slots[(sig - 1) as usize];
        self.seq.fetch_add(1, Ordering::Relaxed);
        core::sync::atomic::fence(Ordering::Release);
        s[0].store(a.handler as u64, Ordering::Relaxed);
        s[1].store(a.flags, Ordering::Relaxed);
        s[2].store(a.restorer as u64, Ordering::Relaxed);
        s[3].store(a.mask, Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
    }

    /// Sets the disposition of `sig`.
    pub fn set(&self, sig: i32, a: &KSigaction) {
        let g = self.lock();
        self.set_locked(&g, sig, a);
    }
}

/// Per-process state shared by the threads of a process (CLONE_SIGHAND):
/// signal dispositions, and the cached answers of `sys::ids`.
pub struct SigHand {
    pub actions: SigActions,
    pub ids: crate::sys::ids::IdCache,
}

impl SigHand {
    pub fn new() -> Self {
        SigHand {
            actions: SigActions::new(),
            ids: crate::sys::ids::IdCache::new(),
        }
    }
    /// The program's disposition for `sig` (1-based).
    pub fn get(&self, sig: i32) -> KSigaction {
        self.actions.get(sig)
    }
    /// The state of a child that shares our memory but not our process.
    pub fn copy(&self) -> Self {
        let c = SigHand {
            actions: SigActions::new(),
            ids: self.ids.copy_for_child(),
        };
        let _g = self.actions.lock();
        for sig in 1..=NSIG as i32 {
            // The copy is not shared yet: no lock of its own needed.
            c.actions.store(sig, &self.actions.get(sig));
        }
        c
    }
}

impl Default for SigHand {
    fn default() -> Self {
        Self::new()
    }
}

/// The runtime's state for one program thread.
#[repr(C)]
pub struct Thread {
    /// Points at itself (offset 0), a cheap sanity check of the GS base.
    pub self_ptr: usize,
    /// Non-zero while a signal the program does not block waits in the
    /// runtime's queues (offset 8, read by asm).
    pub pending: AtomicU32,
    /// Host thread id (0 until known). Once the thread has exited, `tkill`
    /// on it fails and its stack slot may be reused.
    pub tid: AtomicI32,
    pub magic: u64,
    /// Stack slot index.
    pub slot: usize,
    /// The program's signal mask (the host mask is this minus reserved signals).
    pub sig_mask: Cell<u64>,
    /// Mask to restore after rt_sigsuspend, when one is in progress.
    pub saved_mask: Cell<Option<u64>>,
    /// The program's sigaltstack.
    pub altstack: Cell<StackT>,
    /// The program's GS base (emulated).
    pub guest_gs: Cell<usize>,
    /// Signal dispositions (shared per process).
    pub sighand: Cell<*const SigHand>,
    /// Signals the host delivered while the runtime was busy on this
    /// thread, or that the program blocks and the host cannot hold, in two
    /// queues ([`Thread::pending_bits`] is both). Those sent to this thread
    /// (a fault, `tkill`/`tgkill`): Linux's private queue, taken before the
    /// shared one.
    pub pending_private: AtomicU64,
    pub pending_info: UnsafeCell<[SigInfo; NSIG]>,
    /// Those sent to the process (`kill`, `sigqueue`, timers): Linux's
    /// shared queue. A standard signal can wait once in each queue.
    pub pending_shared: AtomicU64,
    pub shared_info: UnsafeCell<[SigInfo; NSIG]>,
    /// When each signal of the private queue arrived (a count), for the
    /// queue order Linux's `dequeue_synchronous_signal` follows.
    pub private_arrival: UnsafeCell<[u64; NSIG]>,
    pub arrivals: Cell<u64>,
    /// What the program's own signal-sending call that runs on the host
    /// sends: a signal that arrives meanwhile is queued as that.
    pub sending: Cell<Sending>,
    /// Further queued instances of real-time signals already pending, in
    /// arrival order (real-time signals queue; standard ones coalesce).
    pub pending_extra: UnsafeCell<[SigInfo; EXTRA_QUEUED]>,
    pub pending_extra_len: Cell<usize>,
    /// Inside a fast-path call (entered from a patched site, not a signal).
    pub in_fast: Cell<bool>,
    /// Syscall User Dispatch selector byte (1 = trap, 0 = allow all): the
    /// runtime opens it only around calls into the vDSO.
    pub sud_selector: core::sync::atomic::AtomicU8,
    /// `--stats` counters.
    pub stats: crate::diag::stats::Counters,
    /// A fast call's result context, to be finished by the trap path.
    pub deferred: Cell<Option<crate::arch::SigContext>>,
    /// This thread's CPU affinity as last read from the host (sched_getaffinity).
    pub affinity: crate::sys::ids::AffinityCache,
    /// Non-zero when the fast entry must return to `resume` rather than to
    /// its trampoline (a fast rt_sigreturn; read by asm through GS).
    pub resume_on: AtomicU32,
    /// The full program context the fast entry returns to (`resume_on`);
    /// its `fpstate` field is unused: FPU state is already in the registers.
    pub resume: Cell<crate::arch::SigContext>,
    /// The last fault-type signal (SIGSEGV, SIGBUS, ... with a positive
    /// si_code) whose origin is not yet known: see `signal::fault_recurs`.
    pub fault_probe: Cell<FaultProbe>,
    /// The runtime locks this thread holds (`lock::Rank` bits).
    pub held_locks: Cell<u32>,
    /// The fast path is delivering pending signals with async signals open
    /// on the host (`patch::deliver_on`): one that arrives meanwhile goes
    /// back to the host, blocked until the delivery is done.
    pub delivering: Cell<bool>,
    /// The number of the call a direct entry is making (written by the
    /// entry, read by `patch::picos_direct_finish`).
    pub direct_nr: AtomicU32,
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

/// Offsets for `arch::picos_resume_full`.
pub const RESUME_ON_OFFSET: usize = core::mem::offset_of!(Thread, resume_on);
pub const RESUME_OFFSET: usize = core::mem::offset_of!(Thread, resume);
/// Offset for the direct entries (`arch`).
pub const DIRECT_NR_OFFSET: usize = core::mem::offset_of!(Thread, direct_nr);

impl Thread {
    /// The process's cached ids (see `sys::ids`).
    pub fn ids(&self) -> &'static crate::sys::ids::IdCache {
        // SAFETY: as for `sighand`; the SigHand outlives every thread using it.
        unsafe { &(*self.sighand.get()).ids }
    }

    pub fn sighand(&self) -> &SigHand {
        // SAFETY: sighand pointers are set at thread creation to live,
        // never-freed (or outlived) SigHand objects.
        unsafe { &*self.sighand.get() }
    }

    /// Records a signal the host delivered while the runtime ran (or one
    /// the program blocks that the host cannot hold), in the private or
    /// the shared queue as Linux would have queued it.
    pub fn add_pending(&self, info: &SigInfo) {
        const SI_TKILL: i32 = -6;
        let private = match self.sending.get() {
            Sending::ToProcess => false,
            Sending::ToThread => true,
            Sending::Nothing => info.code() == SI_TKILL,
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
        let (set, infos) = if private {
            (&self.pending_private, &self.pending_info)
        } else {
            (&self.pending_shared, &self.shared_info)
        };
        if set.load(Ordering::Relaxed) & bit == 0 {
            // SAFETY: only this thread touches its pending queues, and the
            // signal handlers that call this do not nest (async signals are
            // blocked inside them).
            unsafe { (*infos.get())[(sig - 1) as usize] = *info };
            if private {
                let n = self.arrivals.get() + 1;
                self.arrivals.set(n);
                // SAFETY: as above.
                unsafe { (*self.private_arrival.get())[(sig - 1) as usize] = n };
            }
            set.fetch_or(bit, Ordering::Relaxed);
        } else if sig >= 32 {
            let n = self.pending_extra_len.get();
            if n < EXTRA_QUEUED {
                // SAFETY: as above.
                unsafe { (*self.pending_extra.get())[n] = *info };
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
        self.update_pending_flag();
    }

    /// The `pending` flag says whether a pending signal is deliverable now
    /// (not blocked by the program): blocking calls are cut short for those.
    pub fn update_pending_flag(&self) {
        let deliverable = self.pending_bits() & !self.sig_mask.get() != 0;
        self.pending.store(deliverable as u32, Ordering::Relaxed);
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
            // SAFETY: as in add_pending.
            let (infos, arrival) =
                unsafe { (&*self.pending_info.get(), &*self.private_arrival.get()) };
            let first = (0..NSIG)
                .filter(|&i| private & SYNCHRONOUS_MASK & (1u64 << i) != 0 && infos[i].code() > 0)
                .min_by_key(|&i| arrival[i]);
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

    /// Takes signal `sig` from the private or the shared queue (it is
    /// pending there).
    fn take_from(&self, sig: i32, private: bool) -> Option<SigInfo> {
        let i = (sig - 1) as usize;
        let (set, infos) = if private {
            (&self.pending_private, &self.pending_info)
        } else {
            (&self.pending_shared, &self.shared_info)
        };
        // SAFETY: as in add_pending.
        let info = unsafe { (*infos.get())[i] };
        // The next queued instance of the same signal, if any, takes its place.
        let n = self.pending_extra_len.get();
        // SAFETY: as in add_pending.
        let extra = unsafe { &mut *self.pending_extra.get() };
        match extra[..n].iter().position(|e| e.signo() == sig) {
            Some(k) => {
                // SAFETY: as in add_pending.
                unsafe { (*infos.get())[i] = extra[k] };
                extra.copy_within(k + 1..n, k);
                self.pending_extra_len.set(n - 1);
            }
            None => {
                set.fetch_and(!(1u64 << i), Ordering::Relaxed);
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
        (self as *const Thread as usize) & !63
    }
}

/// Size reserved for the Thread at the top of its slot.
const THREAD_AREA: usize = (core::mem::size_of::<Thread>() + 4095) & !4095;

/// The calling thread's runtime state.
#[inline(always)]
pub fn current() -> &'static Thread {
    let p = crate::arch::gs_base();
    debug_assert!(p != 0);
    // SAFETY: see the module's safety note: GS points at this thread's Thread.
    unsafe { &*(p as *const Thread) }
}

/// Is the GS base a valid Thread (used where the runtime may be entered
/// before set-up, e.g. a fault during start-up)?
pub fn current_checked() -> Option<&'static Thread> {
    let p = crate::arch::gs_base();
    let slot = runtime::slot_of(p)?;
    let _ = slot;
    // SAFETY: p lies inside a mapped stack slot owned by the runtime.
    let t = unsafe { &*(p as *const Thread) };
    (t.magic == THREAD_MAGIC && t.self_ptr == p).then_some(t)
}

fn reclaimable(i: usize) -> bool {
    let t = (runtime::slot_base(i) + runtime::STACK_SLOT - THREAD_AREA) as *const Thread;
    // SAFETY: exiting slots stay mapped; we only read an atomic.
    let tid = unsafe { (*t).tid.load(Ordering::Acquire) };
    // The thread is gone once the host no longer knows its id (a reused id
    // only delays the reuse of this slot).
    tid > 0 && host::tkill(tid, 0) == Err(Errno::ESRCH)
}

/// Allocates a stack slot and initialises a Thread at its top.
pub fn alloc(sighand: *const SigHand, sig_mask: u64) -> Result<&'static Thread, Errno> {
    let slot = runtime::alloc_stack_slot(reclaimable)?;
    let addr = runtime::slot_base(slot) + runtime::STACK_SLOT - THREAD_AREA;
    let t = addr as *mut Thread;
    // SAFETY: the slot was just claimed and mapped read-write; nothing else
    // refers to this memory.
    unsafe {
        t.write(Thread {
            self_ptr: addr,
            pending: AtomicU32::new(0),
            tid: AtomicI32::new(0),
            magic: THREAD_MAGIC,
            slot,
            sig_mask: Cell::new(sig_mask),
            saved_mask: Cell::new(None),
            altstack: Cell::new(StackT::DISABLED),
            guest_gs: Cell::new(0),
            sighand: Cell::new(sighand),
            pending_private: AtomicU64::new(0),
            pending_info: UnsafeCell::new([SigInfo::default(); NSIG]),
            pending_shared: AtomicU64::new(0),
            shared_info: UnsafeCell::new([SigInfo::default(); NSIG]),
            private_arrival: UnsafeCell::new([0; NSIG]),
            arrivals: Cell::new(0),
            sending: Cell::new(Sending::Nothing),
            pending_extra: UnsafeCell::new([SigInfo::default(); EXTRA_QUEUED]),
            pending_extra_len: Cell::new(0),
            in_fast: Cell::new(false),
            sud_selector: core::sync::atomic::AtomicU8::new(1),
            stats: crate::diag::stats::Counters::new(),
            deferred: Cell::new(None),
            affinity: crate::sys::ids::AffinityCache::new(),
            resume_on: AtomicU32::new(0),
            resume: Cell::new(crate::arch::SigContext::default()),
            fault_probe: Cell::new(FaultProbe::default()),
            held_locks: Cell::new(0),
            delivering: Cell::new(false),
            direct_nr: AtomicU32::new(0),
        });
        Ok(&*t)
    }
}

fn held_locks() -> Option<&'static Cell<u32>> {
    current_checked().map(|t| &t.held_locks)
}

/// Makes `t` the calling thread's runtime state and its signal stack.
pub fn install(t: &'static Thread) {
    crate::sync::set_held_hook(held_locks);
    crate::arch::set_gs_base(t as *const Thread as usize);
    t.tid.store(host::gettid(), Ordering::Release);
    let base = runtime::slot_base(t.slot) + runtime::PAGE_SIZE;
    let ss = StackT {
        sp: base as u64,
        flags: 0,
        pad: 0,
        size: (t.stack_top() - base) as u64,
    };
    if let Err(e) = host::sigaltstack(Some(&ss), None) {
        crate::log!(Error, "sigaltstack failed: {}", e);
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

/// Frees dispositions made for a `clone` without `CLONE_SIGHAND`.
pub fn drop_sighand(p: *const SigHand) {
    // SAFETY: `p` came from Box::into_raw in clone_vm and its only user
    // (a vfork child) no longer runs in this memory.
    drop(unsafe { alloc::boxed::Box::from_raw(p as *mut SigHand) });
}

/// Writes the child's start-up block on its runtime stack: a kernel-format
/// signal frame holding `uc` (with the FPU state copied) that the child
/// returns through, and a header for `picos_clone_child`. Returns the
/// child's initial stack pointer.
pub fn prepare_child(child: &'static Thread, uc: &crate::arch::UContext) -> usize {
    use crate::arch::{fpstate_size, RtSigFrame};
    let top = child.stack_top();
    let fp_src = uc.mcontext.fpstate as usize;
    let fp_size = if fp_src != 0 {
        // SAFETY: `fp_src` is the FPU frame the kernel built for this SIGSYS.
        unsafe { fpstate_size(fp_src as *const u8) }
    } else {
        0
    };
    let fp = (top - fp_size) & !63;
    let frame = ((fp - core::mem::size_of::<RtSigFrame>()) & !15) - 8;
    let header = (frame - 32) & !15;
    let mut f = RtSigFrame {
        pretcode: 0,
        uc: *uc,
        info: Default::default(),
    };
    f.uc.mcontext.fpstate = if fp_size != 0 { fp as u64 } else { 0 };
    let base = runtime::slot_base(child.slot) + runtime::PAGE_SIZE;
    // rt_sigreturn also restores the signal stack: make it the child's own.
    f.uc.stack = StackT {
        sp: base as u64,
        flags: 0,
        pad: 0,
        size: (child.stack_top() - base) as u64,
    };
    // SAFETY: all of [header, top) lies in the child's freshly allocated
    // stack slot, which nothing else uses yet; fp_src is readable.
    unsafe {
        if fp_size != 0 {
            core::ptr::copy_nonoverlapping(fp_src as *const u8, fp as *mut u8, fp_size);
        }
        (frame as *mut RtSigFrame).write(f);
        (header as *mut [usize; 4]).write([child as *const Thread as usize, frame + 8, 0, 0]);
    }
    header
}

/// Starts a child with `clone(2)` on the stack prepared by [`prepare_child`];
/// returns the host result (child tid or -errno) in the parent.
pub fn spawn(flags: u64, sp: usize, ptid: usize, ctid: usize, tls: usize) -> isize {
    // SAFETY: `sp` is a prepared child stack; the child runs
    // picos_clone_child and never returns into this frame.
    unsafe { crate::arch::picos_clone(flags, sp, ptid, ctid, tls) }
}

/// First code a `CLONE_VM` child runs (called by the `picos_clone` stub).
#[no_mangle]
extern "C" fn picos_clone_child(header: usize) -> ! {
    // SAFETY: `header` is the block written by prepare_child.
    let [t, uc, _, _] = unsafe { (header as *const [usize; 4]).read() };
    // SAFETY: `t` is the child's Thread, initialised by alloc().
    let t: &'static Thread = unsafe { &*(t as *const Thread) };
    install(t);
    if let Err(e) = crate::kernel::thread::arm_dispatch() {
        crate::log!(
            Error,
            "cannot arm Syscall User Dispatch in a new thread: {}",
            e
        );
        host::exit_group(127);
    }
    // SAFETY: `uc` is the ucontext inside a complete kernel-format frame.
    unsafe { crate::arch::picos_sigreturn_to(uc as *mut crate::arch::UContext) }
}

/// Calls `f` for every live thread of this process (for `--stats`).
pub fn for_each_live(mut f: impl FnMut(&Thread)) {
    for i in 0..runtime::STACK_SLOTS {
        if !runtime::slot_in_use(i) {
            continue;
        }
        let p = runtime::slot_base(i) + runtime::STACK_SLOT - THREAD_AREA;
        // SAFETY: a slot in use is mapped and holds an initialised Thread
        // (checked by its magic and self pointer before use).
        let t = unsafe { &*(p as *const Thread) };
        if t.magic == THREAD_MAGIC && t.self_ptr == p {
            f(t);
        }
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

const PR_SET_SYSCALL_USER_DISPATCH: i32 = 59;
const PR_SYS_DISPATCH_ON: usize = 1;

/// Arms Syscall User Dispatch for the calling thread: from now on every
/// syscall issued outside the runtime image traps to the SIGSYS handler.
/// Linux does not pass this setting to new threads or processes, so every
/// thread the runtime creates calls this before running program code.
pub fn arm_dispatch() -> Result<(), Errno> {
    let (base, len) = crate::mm::runtime::image_range();
    // The thread's selector byte lets the runtime open the gate around vDSO
    // calls (see `vdso`); it stays at BLOCK otherwise.
    let selector = &current().sud_selector as *const core::sync::atomic::AtomicU8 as usize;
    host::prctl(
        PR_SET_SYSCALL_USER_DISPATCH,
        PR_SYS_DISPATCH_ON,
        base,
        len,
        selector,
    )
    .map(|_| ())
}
