//! CPU affinity and the current CPU: the calling thread's own affinity from
//! its cache, getcpu from TSC_AUX.
#![deny(unsafe_code)]

use super::{syscall, Ctx, SysResult};
use crate::kernel::thread::{AFFINITY_GEN, AFFINITY_TTL, AFFINITY_WORDS};
use crate::mm::user::{self, UserPtr};
use core::sync::atomic::Ordering;

/// Implements getcpu(2) with `rdtscp`/`rdpid`: Linux keeps
/// `node << 12 | cpu` in the TSC_AUX register of each CPU.
#[syscall]
pub fn getcpu(c: &mut Ctx<'_>, cpu_addr: usize, node_addr: usize) -> SysResult {
    let Some(aux) = crate::arch::tsc_aux(!crate::kernel::time::tsc_disabled()) else {
        return c.host();
    };
    let (cpu, node) = (aux & 0xfff, aux >> 12);
    if cpu_addr != 0 {
        UserPtr::<u32>::new(cpu_addr).write(&cpu)?;
    }
    if node_addr != 0 {
        UserPtr::<u32>::new(node_addr).write(&node)?;
    }
    Ok(0)
}

/// Implements sched_getaffinity(2): the calling thread's own mask from its
/// cache (see [`AffinityCache`]); other threads' masks, and sizes the cache
/// cannot answer exactly, from the host.
#[syscall]
pub fn sched_getaffinity(c: &mut Ctx<'_>, pid: i32, cpusetsize: u32, mask: usize) -> SysResult {
    // `len` is an unsigned int for Linux: the upper half is ignored.
    let (len, ptr) = (cpusetsize as usize, mask);
    // Linux checks `len * 8 < nr_cpu_ids` in 32 bits: a length whose
    // product wraps is the host's to judge (EINVAL unless it wraps high).
    if (pid != 0 && pid != c.t.tid()) || len % 8 != 0 || (len as u32).checked_mul(8).is_none() {
        return c.host(); // the host's own errors (ESRCH, EINVAL) and answers
    }
    if crate::kernel::time::tsc_disabled() {
        // rdtsc would fault (the cache's clock): no cache.
        return c.host();
    }
    let a = &c.t.affinity;
    let (gen, now) = (AFFINITY_GEN.load(Ordering::Acquire), crate::arch::rdtsc());
    if (a.gen.get() != gen || now.wrapping_sub(a.stamp.get()) > AFFINITY_TTL)
        && !a.refresh(gen, now)?
    {
        return c.host();
    }
    let n = a.len.get();
    if len < n {
        return c.host(); // EINVAL unless the kernel's CPU count still fits
    }
    let mut bytes = [0u8; AFFINITY_WORDS * 8];
    for (i, w) in a.mask.iter().enumerate() {
        bytes[i * 8..i * 8 + 8].copy_from_slice(&w.get().to_ne_bytes());
    }
    user::copy_out(ptr, &bytes[..n])?;
    Ok(n)
}

/// Implements sched_setaffinity(2): passed to the host; every thread's
/// cached mask is then forgotten.
pub fn sched_setaffinity(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host();
    AFFINITY_GEN.fetch_add(1, Ordering::AcqRel);
    r
}
