//! Memory-map calls. The program may map, unmap and protect anything except
//! the runtime's own memory (`runtime::owns`); there it gets the error Linux gives
//! for a range that is not the program's to change.
#![deny(unsafe_code)]

use super::{host_call, syscall, Ctx, SysResult};
use crate::host::errno::Errno;
use crate::mm::runtime::{
    self, page_up, MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_PRIVATE, PROT_READ,
    PROT_WRITE,
};

/// Implements brk(2): returns the new break, or the old one on failure.
#[syscall]
pub fn brk(_c: &mut Ctx<'_>, addr: usize) -> SysResult {
    // The break the program asks for (0: only asks where it is).
    let want = addr;
    let mut b = crate::kernel::vm::BRK.lock();
    if want < b.start {
        return Ok(b.cur);
    }
    let want_end = page_up(want);
    if want_end > b.mapped_end {
        let len = want_end - b.mapped_end;
        if runtime::owns(b.mapped_end, len) {
            return Ok(b.cur);
        }
        let r = host_call(
            crate::host::nr::MMAP,
            [
                b.mapped_end,
                len,
                (PROT_READ | PROT_WRITE) as usize,
                (MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE) as usize,
                usize::MAX,
                0,
            ],
        );
        match r {
            Ok(addr) if addr == b.mapped_end => b.mapped_end = want_end,
            _ => return Ok(b.cur),
        }
    } else if want_end < b.mapped_end
        && host_call(
            crate::host::nr::MUNMAP,
            [want_end, b.mapped_end - want_end, 0, 0, 0, 0],
        )
        .is_ok()
    {
        b.mapped_end = want_end;
    }
    b.cur = want;
    Ok(b.cur)
}

/// Implements mmap(2): MAP_FIXED over runtime memory fails with ENOMEM.
/// The runtime's memory is always mapped, so the host itself answers for it
/// MAP_FIXED_NOREPLACE (EEXIST) and hint addresses (it places the mapping
/// elsewhere); a MAP_FIXED call there is made as MAP_FIXED_NOREPLACE first,
/// so that the program gets every error Linux finds before the range
/// (EINVAL, EBADF, EACCES ...), and only then ENOMEM.
#[syscall]
pub fn mmap(c: &mut Ctx<'_>, addr: usize, length: usize, _prot: usize, flags: i32) -> SysResult {
    let len = length;
    if flags & MAP_FIXED != 0 && flags & MAP_FIXED_NOREPLACE == 0 && runtime::owns(addr, len) {
        let mut a = c.args;
        a[3] = ((flags & !MAP_FIXED) | MAP_FIXED_NOREPLACE) as u32 as usize;
        return match host_call(c.nr, a) {
            Err(Errno::EEXIST) => Err(Errno::ENOMEM),
            Err(e) => Err(e),
            Ok(r) => {
                // Cannot be (the range is mapped); undo it all the same.
                let _ = host_call(crate::host::nr::MUNMAP, [r, len, 0, 0, 0, 0]);
                Err(Errno::ENOMEM)
            }
        };
    }
    let r = c.host()?;
    if flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0 {
        crate::patch::forget_range(r, len);
    }
    if flags & crate::mm::runtime::MAP_SHARED != 0 {
        crate::patch::note_shared_mapping(r, len);
    }
    Ok(r)
}

/// Implements munmap(2): runtime memory gives EINVAL.
#[syscall]
pub fn munmap(c: &mut Ctx<'_>, addr: usize, length: usize) -> SysResult {
    if runtime::owns(addr, length) {
        return Err(Errno::EINVAL);
    }
    let r = c.host()?;
    crate::patch::forget_range(addr, length);
    Ok(r)
}

const PAGE_MASK: usize = runtime::PAGE_SIZE - 1;

/// The range checks mprotect(2) makes before it looks at the mappings:
/// EINVAL for an unaligned start, Ok(None) for an empty range (the call
/// succeeds), ENOMEM if the end wraps; else the page-aligned end.
fn mprotect_range(addr: usize, len: usize) -> Result<Option<usize>, Errno> {
    if addr & PAGE_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(None);
    }
    let end = addr.wrapping_add(len.wrapping_add(PAGE_MASK) & !PAGE_MASK);
    if end <= addr {
        return Err(Errno::ENOMEM);
    }
    Ok(Some(end))
}

/// The range checks madvise(2) and mseal(2) make first: EINVAL for an
/// unaligned start or a length that rounds to 0 or wraps; Ok(None) for an
/// empty range.
fn advice_range(addr: usize, len: usize) -> Result<Option<usize>, Errno> {
    if addr & PAGE_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    let l = len.wrapping_add(PAGE_MASK) & !PAGE_MASK;
    if len != 0 && l == 0 {
        return Err(Errno::EINVAL);
    }
    let end = addr.wrapping_add(l);
    if end < addr {
        return Err(Errno::EINVAL);
    }
    Ok((end != addr).then_some(end))
}

/// Implements mprotect(2): runtime memory gives ENOMEM, as unmapped memory
/// does, after Linux's own checks of the range and of `prot`.
#[syscall]
pub fn mprotect(c: &mut Ctx<'_>, addr: usize, len: usize, prot: usize, pkey: i32) -> SysResult {
    const PROT_GROWS: usize = 0x0100_0000 | 0x0200_0000;
    // Linux's order (do_mprotect_pkey): both GROWS bits, the range, the
    // other bits, the protection key, and only then the mappings.
    if prot & PROT_GROWS == PROT_GROWS {
        return Err(Errno::EINVAL);
    }
    match mprotect_range(addr, len) {
        Ok(Some(end)) if runtime::owns(addr, end - addr) => {
            // PROT_READ|WRITE|EXEC|SEM.
            if prot & !(7 | 8 | PROT_GROWS) != 0 {
                return Err(Errno::EINVAL);
            }
            if c.nr == crate::host::nr::PKEY_MPROTECT && pkey != -1 && !pkey_allocated(pkey) {
                return Err(Errno::EINVAL);
            }
            Err(Errno::ENOMEM)
        }
        Err(e) => Err(e),
        _ => crate::patch::protection_change(|| c.host()),
    }
}

/// Is protection key `pkey` allocated (pkey_alloc, or key 0 where the CPU
/// has keys)? Asked of the host with a page at address 0, which is never
/// mapped: Linux checks the key (EINVAL) before the mappings (ENOMEM).
fn pkey_allocated(pkey: i32) -> bool {
    host_call(
        crate::host::nr::PKEY_MPROTECT,
        [0, runtime::PAGE_SIZE, 0, pkey as usize, 0, 0],
    ) != Err(Errno::EINVAL)
}

/// Implements pkey_alloc(2) on the host. The kernel sets the new key's
/// access rights in the calling thread's PKRU; on the trap path that
/// thread is in the runtime's SIGSYS handler, whose return would load PKRU
/// back from the frame, so the frame gets the new key's rights (LTP
/// pkey01).
pub fn pkey_alloc(c: &mut Ctx<'_>) -> SysResult {
    let r = c.host()?;
    // The keys are the memory map's, which only the kernel's execve frees.
    crate::kernel::exec::in_place::needs_kernel("pkey_alloc");
    if let Some(uc) = c.uc.as_deref_mut() {
        crate::arch::fpu::keep_pkru(uc, r as u32);
    }
    Ok(r)
}

/// Implements pkey_mprotect(2), as mprotect.
pub fn pkey_mprotect(c: &mut Ctx<'_>) -> SysResult {
    mprotect(c)
}

/// Implements mseal(2): runtime memory gives ENOMEM, after Linux's checks
/// of the flags and the range.
#[syscall]
pub fn mseal(c: &mut Ctx<'_>, addr: usize, len: usize, flags: usize) -> SysResult {
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    match advice_range(addr, len)? {
        Some(end) if runtime::owns(addr, end - addr) => Err(Errno::ENOMEM),
        _ => {
            let r = c.host()?;
            // Sealed mappings cannot be unmapped: only the kernel's
            // execve, which replaces the whole memory map, can drop them.
            crate::kernel::exec::in_place::needs_kernel("mseal");
            Ok(r)
        }
    }
}

/// Advice values Linux knows (x86-64, up to 6.18).
fn known_advice(a: usize) -> bool {
    matches!(a, 0..=4 | 8..=25 | 100..=103)
}

/// Implements madvise(2): runtime memory gives ENOMEM, after Linux's checks
/// of the advice and the range. Advice that drops page contents (private
/// file pages revert to the file) also drops the patcher's record of sites
/// there.
#[syscall]
pub fn madvise(c: &mut Ctx<'_>, addr: usize, length: usize, advice: usize) -> SysResult {
    const MADV_DONTNEED: usize = 4;
    const MADV_FREE: usize = 8;
    const MADV_REMOVE: usize = 9;
    let len = length;
    if let Some(end) = advice_range(addr, len)? {
        if runtime::owns(addr, end - addr) {
            return Err(if known_advice(advice) {
                Errno::ENOMEM
            } else {
                Errno::EINVAL
            });
        }
    }
    let r = c.host()?;
    if matches!(advice, MADV_DONTNEED | MADV_FREE | MADV_REMOVE) {
        crate::patch::forget_range(addr, len);
    }
    Ok(r)
}

/// Implements remap_file_pages(2): runtime memory gives EINVAL.
pub fn remap_file_pages(c: &mut Ctx<'_>) -> SysResult {
    munmap(c)
}

const SHM_RDONLY: usize = 0o10000;
const SHM_RND: usize = 0o20000;
const SHM_REMAP: usize = 0o40000;
const SHM_EXEC: usize = 0o100000;

/// Implements shmdt(2): the runtime's own segment (the tree's ptrace
/// board, in its reservation) is not the program's to detach: EINVAL, as
/// Linux answers for an address where the program attached nothing.
#[syscall]
pub fn shmdt(c: &mut Ctx<'_>, shmaddr: usize) -> SysResult {
    if runtime::owns(shmaddr, 1) {
        return Err(Errno::EINVAL);
    }
    c.host()
}

/// Implements shmat(2). Without SHM_REMAP the host refuses any range that
/// is mapped already, the runtime's included (EINVAL). With SHM_REMAP it
/// would replace what is there, so the range (the segment's size, from
/// IPC_STAT) is checked as for mmap(MAP_FIXED): over runtime memory the
/// program gets EINVAL, what Linux gives for an address it cannot attach
/// at, after Linux's checks of the flags, the address and the segment
/// (their errors come first: EINVAL, EIDRM, EACCES). Attached segments are
/// shared memory: the patcher never writes code there.
#[syscall]
pub fn shmat(c: &mut Ctx<'_>, shmid: usize, shmaddr: usize, shmflg: usize) -> SysResult {
    let (id, addr, flags) = (shmid, shmaddr, shmflg);
    // struct shmid64_ds: shm_segsz follows the 48-byte ipc64_perm. A
    // segment that cannot be looked up fails shmat as IPC_STAT does.
    super::count_host_call();
    let size = crate::host::shmctl_stat(id).map(|ds| ds[6] as usize);
    let known = flags & !(SHM_RDONLY | SHM_RND | SHM_REMAP | SHM_EXEC) == 0;
    if flags & SHM_REMAP != 0 && addr != 0 && known {
        let at = if flags & SHM_RND != 0 {
            addr & !PAGE_MASK
        } else {
            addr
        };
        if at & PAGE_MASK == 0 && at != 0 && runtime::owns(at, size?.max(1)) {
            return Err(Errno::EINVAL);
        }
    }
    let r = c.host()?;
    if let Ok(size) = size {
        crate::patch::forget_range(r, size);
        crate::patch::note_shared_mapping(r, size);
    }
    Ok(r)
}

const MREMAP_MAYMOVE: i32 = 1;
const MREMAP_FIXED: i32 = 2;
const MREMAP_DONTUNMAP: i32 = 4;

/// Implements mremap(2): an old range in runtime memory gives EFAULT, a new
/// fixed range there gives EINVAL, after Linux's checks of the flags, the
/// address and the lengths.
#[syscall]
pub fn mremap(
    c: &mut Ctx<'_>,
    old_address: usize,
    old_size: usize,
    new_size: usize,
    flags: i32,
    new_address: usize,
) -> SysResult {
    let (old, old_len, new_len, flags, new) = (old_address, old_size, new_size, flags, new_address);
    if flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0
        || flags & (MREMAP_FIXED | MREMAP_DONTUNMAP) != 0 && flags & MREMAP_MAYMOVE == 0
        || old & PAGE_MASK != 0
    {
        return Err(Errno::EINVAL);
    }
    // A new length that rounds up to 0 (or wraps to it).
    if new_len.wrapping_add(PAGE_MASK) & !PAGE_MASK == 0 {
        return Err(Errno::EINVAL);
    }
    if runtime::owns(old, old_len.max(1)) {
        return Err(Errno::EFAULT);
    }
    if flags & MREMAP_FIXED != 0 && runtime::owns(new, new_len) {
        return Err(Errno::EINVAL);
    }
    let r = c.host()?;
    crate::patch::forget_range(old, old_len);
    crate::patch::forget_range(r, new_len);
    Ok(r)
}

/// The membarrier(2) registrations the program made itself (the
/// `MEMBARRIER_CMD_REGISTER_*` bits of `GET_REGISTRATIONS`): per process,
/// kept across fork as the kernel keeps them, new at execve.
static PROGRAM_MEMBARRIER: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(0);

/// Implements membarrier(2): passed to the host, with the runtime's own
/// registration hidden. The patcher registers the process for
/// core-serialising barriers once it has threads (`patch`); the program
/// sees only what it registered itself: a private expedited barrier it did
/// not register for is EPERM, as natively, and `GET_REGISTRATIONS` lists
/// its own (LTP membarrier01).
#[syscall]
pub fn membarrier(c: &mut Ctx<'_>, cmd: i32, flags: u32, _cpu_id: i32) -> SysResult {
    use core::sync::atomic::Ordering::Relaxed;
    const PRIVATE_EXPEDITED: i32 = 8;
    const REGISTER_PRIVATE_EXPEDITED: usize = 16;
    const PRIVATE_EXPEDITED_SYNC_CORE: i32 = 32;
    const REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: usize = 64;
    const GET_REGISTRATIONS: i32 = 512;
    // The runtime's registration sets both (Linux: a core-serialising
    // registration is a private expedited one too).
    const RUNTIMES: usize = REGISTER_PRIVATE_EXPEDITED | REGISTER_PRIVATE_EXPEDITED_SYNC_CORE;
    let own = PROGRAM_MEMBARRIER.load(Relaxed);
    let runtime_registered = crate::patch::membarrier_registered();
    match cmd {
        PRIVATE_EXPEDITED if flags == 0 && runtime_registered && own & RUNTIMES == 0 => {
            Err(Errno::EPERM)
        }
        PRIVATE_EXPEDITED_SYNC_CORE
            if flags == 0
                && runtime_registered
                && own & REGISTER_PRIVATE_EXPEDITED_SYNC_CORE == 0 =>
        {
            Err(Errno::EPERM)
        }
        GET_REGISTRATIONS if flags == 0 && runtime_registered => {
            let r = c.host()?;
            Ok(r & !RUNTIMES | own & RUNTIMES)
        }
        _ => {
            let r = c.host()?;
            // A registration lives in the host's memory map, which only
            // the kernel's execve replaces.
            const REGISTER_GLOBAL_EXPEDITED: i32 = 4;
            const REGISTER_PRIVATE_EXPEDITED_RSEQ: i32 = 256;
            if matches!(
                cmd,
                REGISTER_GLOBAL_EXPEDITED | REGISTER_PRIVATE_EXPEDITED_RSEQ
            ) || cmd as usize & RUNTIMES != 0
            {
                crate::kernel::exec::in_place::needs_kernel("membarrier registration");
            }
            let registered = match cmd as usize {
                REGISTER_PRIVATE_EXPEDITED => REGISTER_PRIVATE_EXPEDITED,
                REGISTER_PRIVATE_EXPEDITED_SYNC_CORE => RUNTIMES,
                _ => 0,
            };
            if registered != 0 && flags == 0 {
                PROGRAM_MEMBARRIER.fetch_or(registered, Relaxed);
            }
            Ok(r)
        }
    }
}

/// Implements mlockall(2): a host call. With MCL_FUTURE the host's memory
/// map locks what is mapped later, which only the kernel's execve undoes.
#[syscall]
pub fn mlockall(c: &mut Ctx<'_>, flags: i32) -> SysResult {
    const MCL_FUTURE: i32 = 2;
    let r = c.host()?;
    if flags & MCL_FUTURE != 0 {
        crate::kernel::exec::in_place::needs_kernel("mlockall(MCL_FUTURE)");
    }
    Ok(r)
}

/// Implements process_vm_writev(2): the host writes, once the remote ranges
/// are known to miss the memory the target's runtime owns (its image and
/// its reservation, `kernel::vm::runtime_of`; for this process,
/// `mm::runtime::owns`): EFAULT if one touches it, as for memory the
/// program does not have. A target that runs no runtime is the host's to
/// check; one of another picoprocess tree is refused (EPERM).
#[syscall]
pub fn process_vm_writev(
    c: &mut Ctx<'_>,
    pid: i32,
    _local: usize,
    liovcnt: usize,
    remote: usize,
    riovcnt: usize,
    flags: usize,
) -> SysResult {
    const IOV_MAX: usize = 1024;
    if flags != 0 || liovcnt > IOV_MAX || riovcnt > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let mut raw = alloc::vec![0u8; riovcnt * 16];
    crate::mm::user::copy_in(&mut raw, remote)?;
    let ranges: alloc::vec::Vec<(usize, usize)> = raw
        .chunks_exact(16)
        .map(|c| {
            let w = |i: usize| usize::from_ne_bytes(c[i..i + 8].try_into().unwrap_or([0; 8]));
            (w(0), w(8))
        })
        .filter(|&(_, len)| len != 0)
        .collect();
    // A length sum beyond isize: the host's EINVAL (its checks of the
    // vectors come before any write).
    let total = ranges
        .iter()
        .try_fold(0usize, |t, &(_, l)| t.checked_add(l))
        .filter(|&t| t <= isize::MAX as usize);
    if total.is_some() && !ranges.is_empty() {
        if pid == crate::host::getpid() {
            if ranges.iter().any(|&(a, l)| crate::mm::runtime::owns(a, l)) {
                return Err(Errno::EFAULT);
            }
        } else if let Some(owned) = crate::kernel::vm::runtime_of(pid)? {
            let hits = |&(a, l): &(usize, usize)| {
                let end = a.saturating_add(l);
                owned.iter().any(|&(lo, hi)| a < hi && lo < end)
            };
            if ranges.iter().any(hits) {
                return Err(Errno::EFAULT);
            }
        }
    }
    c.host()
}
