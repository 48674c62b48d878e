//! Libsets: copies of the program's shared libraries, one set per
//! preemptible function, so a function can be preempted anywhere, even in
//! the middle of non-reentrant library code with global state (`strtok`,
//! stdio, a library's own counters), while its caller goes on using its own
//! copy (docs/PREEMPT.md, "Libsets").
//!
//! * A copy is made by a loader of our own (not `dlmopen`, which allows 15
//!   namespaces): each library's file is mapped again at a new address (its
//!   text shares the page cache with the original), its writable segments
//!   are relocated against the other copies of the same libset, and its
//!   initialisers are run. The dynamic loader (`ld.so`), the program itself,
//!   the vDSO and the object that holds this crate are never copied.
//! * The program's calls into the libraries (its GOT entries for library
//!   functions) are pointed at stubs that jump through the current libset's
//!   table; a thread's current libset is a TLS word that `launch`/`resume`
//!   set while the function runs (dispatch.rs).
//! * Calls from a copy to the shared functions (`SHARED`) go to the
//!   originals through a wrapper that defers preemption until they return.
//! * Cancelling a function restores its libset's writable data to its state
//!   after initialisation.

mod dispatch;
mod elf;

use crate::Error;
use core::ffi::CStr;
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use elf::{Dynamic, Phdr, Rela, Version};
use libc::{c_char, c_int, c_void};
use std::sync::{Mutex, OnceLock};

/// Functions that always run in the original libraries, with preemption
/// deferred until they return: they keep process-wide state that must stay
/// one (the heap, threads and their keys, exit handlers, the loader's
/// lists, the environment, the locale), or never return.
pub const SHARED: &[&str] = &[
    // The heap.
    "malloc",
    "free",
    "calloc",
    "realloc",
    "reallocarray",
    "memalign",
    "posix_memalign",
    "aligned_alloc",
    "valloc",
    "pvalloc",
    "malloc_usable_size",
    "malloc_trim",
    "mallopt",
    "mallinfo",
    "mallinfo2",
    "malloc_stats",
    "malloc_info",
    "__libc_malloc",
    "__libc_free",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_memalign",
    // Threads, thread keys, fork.
    "pthread_create",
    "pthread_exit",
    "pthread_key_create",
    "pthread_key_delete",
    "pthread_getspecific",
    "pthread_setspecific",
    "pthread_atfork",
    "__register_atfork",
    "fork",
    "_Fork",
    // Exit and its handlers.
    "exit",
    "_exit",
    "_Exit",
    "quick_exit",
    "abort",
    "atexit",
    "on_exit",
    "at_quick_exit",
    "__cxa_atexit",
    "__cxa_at_quick_exit",
    "__cxa_finalize",
    "__cxa_thread_atexit_impl",
    // The dynamic loader.
    "dlopen",
    "dlmopen",
    "dlclose",
    "dlsym",
    "dlvsym",
    "dlerror",
    "dladdr",
    "dladdr1",
    "dlinfo",
    "dl_iterate_phdr",
    "_dl_find_object",
    // The environment and the locale.
    "setenv",
    "unsetenv",
    "putenv",
    "clearenv",
    "setlocale",
    "uselocale",
    "newlocale",
    "freelocale",
    "duplocale",
];

/// Variables that stay one for the whole process: a copy's references to
/// them resolve to the originals'.
const GLOBAL_DATA: &[&[u8]] = &[
    b"environ",
    b"__environ",
    b"_environ",
    b"__progname",
    b"__progname_full",
    b"program_invocation_name",
    b"program_invocation_short_name",
];

/// Libsets alive at once, at most (libset 0, the originals, not counted).
pub const MAX_LIBSETS: usize = 1024;

/// What [`enable`] set up and what the libsets cost so far.
#[derive(Clone, Debug)]
pub struct Info {
    /// The libraries each libset has a copy of.
    pub libraries: Vec<String>,
    /// Library functions the program calls through a stub.
    pub stubs: usize,
    /// Shared functions found in those libraries.
    pub shared: usize,
    /// Libsets made so far (they are made when first needed, then reused).
    pub created: usize,
    /// Libsets held by a function now (launched and not yet returned or
    /// cancelled).
    pub in_use: usize,
    /// Memory of one libset that is its own (not shared with the files'
    /// page cache): writable segments, their saved initial state, and its
    /// dispatch table, in bytes.
    pub bytes_per_libset: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Exe,
    Copy,
    Keep,
}

struct Obj {
    name: String,
    dynm: Dynamic,
    kind: Kind,
    /// The span of its PT_LOAD segments, page-aligned, relative to the bias.
    lo: usize,
    hi: usize,
    relro: Option<(usize, usize)>,
    tls_modid: usize,
    /// Its TLS block's offset from the thread pointer (static TLS only).
    tls_tpoff: Option<isize>,
}

impl Obj {
    /// The address of symbol `i` in this object's image at bias `base` (the
    /// original's or a copy's).
    fn addr(&self, i: usize, base: usize) -> usize {
        base + self.dynm.sym(i).st_value as usize
    }

    /// The entry of function `i` at bias `base`, an ifunc resolved.
    ///
    /// # Safety
    /// The image at `base` is relocated (so its resolvers can run).
    unsafe fn func(&self, i: usize, base: usize) -> usize {
        let a = self.addr(i, base);
        if self.dynm.sym(i).kind() == elf::STT_GNU_IFUNC {
            // SAFETY: a resolver of a relocated image, per the contract.
            unsafe { call_resolver(a) }
        } else {
            a
        }
    }
}

/// A function the program calls in a copied library.
struct Target {
    obj: usize,
    sym: usize,
    /// Index in `State::shared` if it is a shared function.
    shared: Option<usize>,
}

struct Shared {
    name: &'static [u8],
    /// One of `SHARED` (no stack arguments: the direct wrapper).
    builtin: bool,
    /// The original's entry (an ifunc already resolved).
    target: usize,
    wrapper: usize,
}

struct Libset {
    /// Per object: the copy's bias (the original's for objects not copied).
    bases: Vec<usize>,
    /// Writable data of the copies after initialisation: (address, bytes).
    saved: Vec<(usize, Vec<u8>)>,
    /// The copy's `fflush`, if it has a C library.
    fflush: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
    /// The copy's `fcloseall` (glibc: its exit-time `_IO_cleanup`, which
    /// flushes without taking the streams' locks).
    cleanup: Option<unsafe extern "C" fn() -> c_int>,
    /// The copy's `_IO_list_all` (its list of open streams), if its C
    /// library is glibc's, whose FILE layout `needs_flush` reads.
    list_all: Option<usize>,
    /// The function's own TLS blocks of the copied libraries while it is
    /// not running (`tls_size` bytes; only its holder touches it).
    tls: *mut u8,
}

struct State {
    objs: Vec<Obj>,
    /// Names the program has COPY relocations for (its own copies of
    /// library variables, such as `stdout`).
    copied_vars: Vec<&'static [u8]>,
    targets: Vec<Target>,
    shared: Vec<Shared>,
    /// Libset 0's dispatch table; libset k's is at `table0 + k * stride`.
    table0: usize,
    stride: usize,
    sets: Vec<AtomicPtr<Libset>>,
    pool: Mutex<Pool>,
    bytes_per_libset: AtomicUsize,
    argv: [*const c_char; 2],
    /// The copied libraries' TLS blocks that each function has its own of.
    tls: Vec<TlsBlock>,
    /// Their total size.
    tls_size: usize,
}

/// A copied library's TLS block: where it is in every thread's static TLS,
/// and its initialisation image.
struct TlsBlock {
    obj: usize,
    /// Offset of the block from the thread pointer.
    tpoff: isize,
    memsz: usize,
    filesz: usize,
    /// The image's address relative to the bias.
    vaddr: usize,
    /// Where the block is kept in a libset's or a thread's save area.
    at: usize,
}

// SAFETY: the raw pointers in State (argv, the libsets) and Libset (its TLS
// area) point at data that lives for the rest of the process; a libset's
// TLS area is touched only by the thread whose function holds it.
unsafe impl Send for Libset {}
// SAFETY: as above.
unsafe impl Sync for Libset {}
// SAFETY: the raw pointers in State (argv, the libsets) point at data that
// lives for the rest of the process and is only read after publication.
unsafe impl Send for State {}
// SAFETY: as above; mutation goes through the pool's mutex or atomics.
unsafe impl Sync for State {}

#[derive(Default)]
struct Pool {
    free: Vec<u32>,
    created: u32,
    in_use: u32,
}

static STATE: OnceLock<State> = OnceLock::new();

fn err(msg: impl Into<String>) -> Error {
    Error::Libset(msg.into())
}

fn page() -> usize {
    // SAFETY: sysconf has no memory effects.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

fn page_down(x: usize) -> usize {
    x & !(page() - 1)
}

fn page_up(x: usize) -> usize {
    (x + page() - 1) & !(page() - 1)
}

fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: %fs:0 holds the thread control block's own address (the TLS
    // ABI of x86-64, glibc and musl alike).
    unsafe {
        core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly));
    }
    tp
}

/// `dl_iterate_phdr`'s record, with the TLS fields (glibc and musl).
#[repr(C)]
struct PhdrInfo {
    addr: usize,
    name: *const c_char,
    phdr: *const Phdr,
    phnum: u16,
    adds: u64,
    subs: u64,
    tls_modid: usize,
    tls_data: *mut c_void,
}

unsafe extern "C" {
    fn dl_iterate_phdr(
        cb: unsafe extern "C" fn(*mut PhdrInfo, usize, *mut c_void) -> c_int,
        data: *mut c_void,
    ) -> c_int;
}

struct Seen {
    base: usize,
    name: String,
    phdrs: &'static [Phdr],
    tls_modid: usize,
    tls_data: usize,
}

unsafe extern "C" fn collect(info: *mut PhdrInfo, size: usize, data: *mut c_void) -> c_int {
    // SAFETY: the loader passes a valid record of at least `size` bytes;
    // `data` is the Vec passed by `loaded_objects`.
    unsafe {
        let v = &mut *(data as *mut Vec<Seen>);
        let i = &*info;
        let name = if i.name.is_null() {
            String::new()
        } else {
            CStr::from_ptr(i.name).to_string_lossy().into_owned()
        };
        let has_tls = size >= core::mem::size_of::<PhdrInfo>();
        v.push(Seen {
            base: i.addr,
            name,
            phdrs: core::slice::from_raw_parts(i.phdr, i.phnum as usize),
            tls_modid: if has_tls { i.tls_modid } else { 0 },
            tls_data: if has_tls { i.tls_data as usize } else { 0 },
        });
    }
    0
}

fn loaded_objects() -> Vec<Seen> {
    let mut v: Vec<Seen> = Vec::new();
    // SAFETY: `collect` matches the callback's signature and only pushes
    // into `v`, which outlives the call.
    unsafe { dl_iterate_phdr(collect, (&mut v as *mut Vec<Seen>).cast()) };
    v
}

fn contains(s: &Seen, addr: usize) -> bool {
    s.phdrs.iter().any(|p| {
        p.p_type == elf::PT_LOAD
            && addr >= s.base + p.p_vaddr as usize
            && addr < s.base + (p.p_vaddr + p.p_memsz) as usize
    })
}

/// Copies the program's shared libraries for preemptible functions from
/// now on: every later `launch` runs its function in a libset of its own
/// (made when first needed; at most [`MAX_LIBSETS`] alive at once). Calls
/// to the functions in [`SHARED`] and to those named in `extra_shared`
/// run in the original libraries with preemption deferred. Call it once,
/// early, before other threads use the libraries; later calls return the
/// same [`Info`].
///
/// Fails (and changes nothing) if the program has no shared library that
/// can be copied (a static program; with musl, the C library is the
/// dynamic loader itself, which is never copied) or a library cannot be
/// copied (a relocation type or TLS model the loader does not handle).
pub fn enable(extra_shared: &[&str]) -> Result<Info, Error> {
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if STATE.get().is_none() {
        let st = setup(extra_shared)?;
        let _ = STATE.set(st);
        // SAFETY: `flush_all` is a plain extern "C" function.
        unsafe { libc::atexit(flush_all) };
    }
    Ok(info().expect("enabled"))
}

/// What [`enable`] set up, or None if libsets are not enabled.
pub fn info() -> Option<Info> {
    let st = STATE.get()?;
    let pool = st.pool.lock().unwrap_or_else(|e| e.into_inner());
    Some(Info {
        libraries: st.copies().map(|(_, o)| o.name.clone()).collect(),
        stubs: st.targets.len(),
        shared: st.shared.len(),
        created: pool.created as usize,
        in_use: pool.in_use as usize,
        bytes_per_libset: st.bytes_per_libset.load(Ordering::Relaxed),
    })
}

pub(crate) fn enabled() -> bool {
    STATE.get().is_some()
}

fn setup(extra_shared: &[&str]) -> Result<State, Error> {
    let seen = loaded_objects();
    if seen.is_empty() {
        return Err(err("dl_iterate_phdr reported no objects"));
    }
    let me = enable as *const () as usize;
    let tp = thread_pointer() as isize;
    // The dynamic loader: the program's PT_INTERP.
    let interp = seen[0].phdrs.iter().find(|p| p.p_type == 3).map(|p| {
        // SAFETY: PT_INTERP is a NUL-terminated path in the mapped image.
        unsafe { CStr::from_ptr((seen[0].base + p.p_vaddr as usize) as *const c_char) }
            .to_string_lossy()
            .into_owned()
    });
    let interp_real = interp
        .as_deref()
        .and_then(|p| std::fs::canonicalize(p).ok());
    let mut objs = Vec::new();
    for (i, s) in seen.iter().enumerate() {
        // SAFETY: the loader's own records of a loaded object.
        let Some(dynm) = (unsafe { Dynamic::read(s.base, s.phdrs) }) else {
            if i == 0 {
                return Err(err(
                    "the program is statically linked: there are no shared libraries to copy",
                ));
            }
            continue;
        };
        let is_interp = interp.as_deref() == Some(s.name.as_str())
            || (interp_real.is_some() && std::fs::canonicalize(&s.name).ok() == interp_real);
        let kind = if i == 0 {
            Kind::Exe
        } else if s.name.is_empty()
            || s.name.starts_with("linux-vdso")
            || is_interp
            || contains(s, me)
        {
            Kind::Keep
        } else {
            Kind::Copy
        };
        if kind == Kind::Copy && dynm.textrel {
            return Err(err(format!(
                "{}: has text relocations, which a copy cannot take",
                s.name
            )));
        }
        let loads = s.phdrs.iter().filter(|p| p.p_type == elf::PT_LOAD);
        let lo = loads.clone().map(|p| p.p_vaddr as usize).min().unwrap_or(0);
        let hi = loads
            .map(|p| (p.p_vaddr + p.p_memsz) as usize)
            .max()
            .unwrap_or(0);
        let relro = s
            .phdrs
            .iter()
            .find(|p| p.p_type == elf::PT_GNU_RELRO)
            .map(|p| {
                (
                    page_down(p.p_vaddr as usize),
                    page_down((p.p_vaddr + p.p_memsz) as usize),
                )
            });
        let has_tls = s.phdrs.iter().any(|p| p.p_type == elf::PT_TLS);
        objs.push(Obj {
            name: s.name.clone(),
            dynm,
            kind,
            lo: page_down(lo),
            hi: page_up(hi),
            relro,
            tls_modid: s.tls_modid,
            // A block in static TLS lies just below the thread pointer (x86-64
            // TLS variant II); a dlopen'd library's block is allocated on
            // the heap when first used, or not yet (0).
            tls_tpoff: (has_tls && s.tls_data != 0)
                .then(|| s.tls_data as isize - tp)
                .filter(|&off| (-(1 << 20)..0).contains(&off)),
        });
    }
    if !objs.iter().any(|o| o.kind == Kind::Copy) {
        return Err(err(
            "no shared library can be copied (with musl, the C library is the dynamic loader, which is never copied)",
        ));
    }
    let exe = &objs[0];
    let copied_vars: Vec<&'static [u8]> = exe
        .dynm
        .rela
        .iter()
        .filter(|r| r.kind() == elf::R_COPY)
        .map(|r| exe.dynm.sym_name(r.sym()))
        .collect();
    let mut st = State {
        objs,
        copied_vars,
        targets: Vec::new(),
        shared: Vec::new(),
        table0: 0,
        stride: 0,
        sets: (0..=MAX_LIBSETS)
            .map(|_| AtomicPtr::new(ptr::null_mut()))
            .collect(),
        pool: Mutex::new(Pool::default()),
        bytes_per_libset: AtomicUsize::new(0),
        argv: [ptr::null(), ptr::null()],
        tls: Vec::new(),
        tls_size: 0,
    };
    // SAFETY: reads the C library's current program name (a C string or NULL).
    st.argv[0] = unsafe { program_invocation_name() };

    // TLS blocks each function has its own of: the copied libraries' that
    // no shared function uses (not the C library's, whose per-thread
    // allocator caches, errno and locale the shared functions run on).
    for (j, o) in st.objs.iter().enumerate() {
        if o.kind != Kind::Copy || o.dynm.lookup(b"malloc", None).is_some() {
            continue;
        }
        let Some(t) = o.dynm.phdrs.iter().find(|p| p.p_type == elf::PT_TLS) else {
            continue;
        };
        let Some(tpoff) = o.tls_tpoff else {
            return Err(err(format!(
                "{}: its TLS is not in static TLS, which a copy needs",
                o.name
            )));
        };
        st.tls.push(TlsBlock {
            obj: j,
            tpoff,
            memsz: t.p_memsz as usize,
            filesz: t.p_filesz as usize,
            vaddr: t.p_vaddr as usize,
            at: st.tls_size,
        });
        st.tls_size += (t.p_memsz as usize).next_multiple_of(16);
    }

    // The shared functions, resolved in the originals.
    // (The program's names are kept for good, as the wrappers are.)
    let names: Vec<&'static [u8]> = SHARED
        .iter()
        .map(|s| s.as_bytes())
        .chain(
            extra_shared
                .iter()
                .map(|s| &*Box::leak(s.as_bytes().to_vec().into_boxed_slice())),
        )
        .collect();
    for name in names {
        let Some((j, i)) = st.find(name, None) else {
            continue;
        };
        if st.objs[j].kind != Kind::Copy {
            continue;
        }
        let o = &st.objs[j];
        let kind = o.dynm.sym(i).kind();
        if kind != elf::STT_FUNC && kind != elf::STT_GNU_IFUNC {
            continue;
        }
        // SAFETY: the original, relocated by the loader.
        let target = unsafe { o.func(i, o.dynm.base) };
        st.shared.push(Shared {
            name,
            builtin: SHARED.iter().any(|b| b.as_bytes() == name),
            target,
            wrapper: 0,
        });
    }

    // The program's calls into copied libraries.
    let exe = &st.objs[0];
    let mut sites: Vec<(usize, usize)> = Vec::new(); // (GOT address, target index)
    for r in exe.dynm.rela.iter().chain(exe.dynm.jmprel.iter()) {
        let k = r.kind();
        if !(k == elf::R_JUMP_SLOT || k == elf::R_GLOB_DAT || k == elf::R_64) || r.sym() == 0 {
            continue;
        }
        let name = exe.dynm.sym_name(r.sym());
        let want = exe.dynm.wanted_version(r.sym());
        let Some((j, i)) = st.find(name, want) else {
            continue;
        };
        if st.objs[j].kind != Kind::Copy {
            continue;
        }
        let kind = st.objs[j].dynm.sym(i).kind();
        if kind != elf::STT_FUNC && kind != elf::STT_GNU_IFUNC {
            continue;
        }
        let t = match st.targets.iter().position(|t| t.obj == j && t.sym == i) {
            Some(t) => t,
            None => {
                let shared = st.shared.iter().position(|x| x.name == name);
                st.targets.push(Target {
                    obj: j,
                    sym: i,
                    shared,
                });
                st.targets.len() - 1
            }
        };
        sites.push((exe.dynm.base + r.r_offset as usize, t));
    }

    // Code (stubs, wrappers) and the dispatch tables, in one reservation so
    // that the stubs reach the tables RIP-relative.
    let ncode = st.targets.len() * dispatch::STUB_SIZE + st.shared.len() * dispatch::WRAPPER_SIZE;
    let code_len = page_up(ncode.max(1));
    st.stride = (st.targets.len() * 8).max(8).next_multiple_of(64);
    let tables_len = page_up(st.stride * (MAX_LIBSETS + 1));
    // SAFETY: a fresh anonymous reservation.
    let region = unsafe {
        libc::mmap(
            ptr::null_mut(),
            code_len + tables_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if region == libc::MAP_FAILED {
        return Err(Error::Os(crate::sys::errno()));
    }
    let code = region as usize;
    st.table0 = code + code_len;
    // SAFETY: the code part of the reservation, writable until mprotect below.
    let code_bytes = unsafe { core::slice::from_raw_parts_mut(code as *mut u8, code_len) };
    let tpoff = dispatch::cur_tpoff();
    let tpoff = i32::try_from(tpoff).map_err(|_| err("the libset TLS word is out of reach"))?;
    let mut at = 0;
    let mut stub_addr = Vec::with_capacity(st.targets.len());
    for i in 0..st.targets.len() {
        dispatch::write_stub(&mut code_bytes[at..], code + at, tpoff, st.table0 + 8 * i);
        stub_addr.push(code + at);
        at += dispatch::STUB_SIZE;
    }
    for s in st.shared.iter_mut() {
        dispatch::write_wrapper(&mut code_bytes[at..], s.target, s.builtin);
        s.wrapper = code + at;
        at += dispatch::WRAPPER_SIZE;
    }
    // Libset 0's table: the originals.
    for (i, t) in st.targets.iter().enumerate() {
        let o = &st.objs[t.obj];
        // SAFETY: the original, relocated by the loader; then inside libset
        // 0's table.
        unsafe { *((st.table0 + 8 * i) as *mut usize) = o.func(t.sym, o.dynm.base) };
    }
    // SAFETY: the code part of our own reservation.
    if unsafe { libc::mprotect(region, code_len, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
        return Err(Error::Os(crate::sys::errno()));
    }
    // Point the program's GOT entries at the stubs.
    let exe = &st.objs[0];
    for &(got, t) in &sites {
        // SAFETY: a GOT (or data) word of the program, from its relocations.
        let cur = unsafe { *(got as *const usize) };
        // SAFETY: libset 0's table entry t, written above.
        let orig = unsafe { *((st.table0 + 8 * t) as *const usize) };
        let o = &st.objs[st.targets[t].obj];
        let sym_addr = o.addr(st.targets[t].sym, o.dynm.base);
        // A lazily bound PLT slot still points into the program; an R_64
        // data word may have been changed by the program: leave those
        // that hold something else alone.
        let lazy = cur >= exe.dynm.base + exe.lo && cur < exe.dynm.base + exe.hi;
        if cur != orig && cur != sym_addr && !lazy {
            continue;
        }
        write_protected(exe, got, stub_addr[t])?;
    }
    Ok(st)
}

/// Writes `val` at `addr` in object `o`, unprotecting its RELRO page if
/// need be.
fn write_protected(o: &Obj, addr: usize, val: usize) -> Result<(), Error> {
    let off = addr - o.dynm.base;
    let in_relro = o.relro.is_some_and(|(a, b)| off >= a && off < b);
    let pg = page_down(addr);
    if in_relro {
        // SAFETY: a page of the object's RELRO region, made writable only
        // for this one store.
        if unsafe {
            libc::mprotect(
                pg as *mut c_void,
                page(),
                libc::PROT_READ | libc::PROT_WRITE,
            )
        } != 0
        {
            return Err(Error::Os(crate::sys::errno()));
        }
    }
    // SAFETY: an aligned word of the object's GOT or data.
    unsafe { ptr::write_volatile(addr as *mut usize, val) };
    if in_relro {
        // SAFETY: back to read-only.
        unsafe { libc::mprotect(pg as *mut c_void, page(), libc::PROT_READ) };
    }
    Ok(())
}

/// # Safety
/// Reads a C library variable.
unsafe fn program_invocation_name() -> *const c_char {
    unsafe extern "C" {
        static program_invocation_name: *const c_char;
    }
    // SAFETY: a variable every Linux C library defines.
    unsafe { ptr::read_volatile(&raw const program_invocation_name) }
}

/// # Safety
/// `f` is an ifunc resolver of a relocated object.
unsafe fn call_resolver(f: usize) -> usize {
    // SAFETY: per the contract; x86-64 resolvers take no arguments that
    // glibc's or musl's loaders pass and return the implementation.
    unsafe {
        let f: extern "C" fn() -> usize = core::mem::transmute(f);
        f()
    }
}

impl State {
    /// The copied objects, with their indices.
    fn copies(&self) -> impl DoubleEndedIterator<Item = (usize, &Obj)> {
        self.objs
            .iter()
            .enumerate()
            .filter(|(_, o)| o.kind == Kind::Copy)
    }

    /// Runs `f` with libset `k` current on this thread.
    fn in_libset<R>(&self, k: usize, f: impl FnOnce() -> R) -> R {
        let prev = dispatch::cur();
        dispatch::set_cur(k * self.stride);
        let r = f();
        dispatch::set_cur(prev);
        r
    }

    /// Looks `name` up in the global scope of the originals (the program,
    /// then the libraries in load order). Returns (object, symbol index).
    fn find(&self, name: &[u8], want: Option<Version<'_>>) -> Option<(usize, usize)> {
        self.objs
            .iter()
            .enumerate()
            .find_map(|(j, o)| o.dynm.lookup(name, want).map(|i| (j, i)))
    }

    /// As `find`, for a copy's reference: the program's own copies of
    /// library variables (COPY relocations, such as `stdout`) are skipped,
    /// so that a copy's `stdout` is its own, except for `GLOBAL_DATA`.
    fn find_for_copy(&self, name: &[u8], want: Option<Version<'_>>) -> Option<(usize, usize)> {
        let global = GLOBAL_DATA.contains(&name);
        self.objs.iter().enumerate().find_map(|(j, o)| {
            if j == 0 && !global && self.copied_vars.contains(&name) {
                return None;
            }
            o.dynm.lookup(name, want).map(|i| (j, i))
        })
    }

    fn shared_wrapper(&self, name: &[u8]) -> Option<usize> {
        self.shared
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.wrapper)
    }

    /// Makes libset `k` (k >= 1): maps, relocates and initialises a copy of
    /// every copied library, fills its dispatch table.
    fn make(&self, k: usize) -> Result<Libset, Error> {
        let mut bases = Vec::with_capacity(self.objs.len());
        for o in &self.objs {
            if o.kind != Kind::Copy {
                bases.push(o.dynm.base);
                continue;
            }
            match map_copy(o) {
                Ok(base) => bases.push(base),
                Err(e) => {
                    self.unmap(&bases);
                    return Err(e);
                }
            }
        }
        self.fill(k, bases)
    }

    /// Unmaps the copies made so far (`bases` of the first objects).
    fn unmap(&self, bases: &[usize]) {
        for (o, &b) in self.objs.iter().zip(bases) {
            if o.kind == Kind::Copy {
                // SAFETY: the copy's own reservation, made by map_copy and
                // not yet used by anything.
                unsafe { libc::munmap((b + o.lo) as *mut c_void, o.hi - o.lo) };
            }
        }
    }

    /// Relocates and initialises the copies mapped at `bases` as libset k.
    fn fill(&self, k: usize, bases: Vec<usize>) -> Result<Libset, Error> {
        let mut ifuncs: Vec<(usize, usize)> = Vec::new();
        for (j, o) in self.copies() {
            let b = bases[j];
            apply_relr(o.dynm.relr, b);
            for r in o.dynm.rela.iter().chain(o.dynm.jmprel.iter()) {
                if let Err(e) = self.relocate(j, o, r, &bases, &mut ifuncs) {
                    self.unmap(&bases);
                    return Err(e);
                }
            }
        }
        for (at, resolver) in ifuncs {
            // SAFETY: a resolver in a fully relocated copy; `at` is a word
            // of that copy's writable data.
            unsafe { *(at as *mut usize) = call_resolver(resolver) };
        }
        // RELRO back to read-only, as the loader does before initialisers.
        for (j, o) in self.copies() {
            if let Some((a, b)) = o.relro {
                if b > a {
                    // SAFETY: the copy's own RELRO pages.
                    unsafe {
                        libc::mprotect((bases[j] + a) as *mut c_void, b - a, libc::PROT_READ)
                    };
                }
            }
        }
        // The dispatch table (before the initialisers: they may call into
        // the program, whose calls then go to this libset).
        let table = self.table0 + k * self.stride;
        for (i, t) in self.targets.iter().enumerate() {
            let a = match t.shared {
                Some(s) => self.shared[s].wrapper,
                // SAFETY: the copy, relocated above.
                None => unsafe { self.objs[t.obj].func(t.sym, bases[t.obj]) },
            };
            // SAFETY: inside libset k's table (reserved for MAX_LIBSETS).
            unsafe { *((table + 8 * i) as *mut usize) = a };
        }
        // Initialisers, dependencies first (the reverse of load order).
        // The initialisers run on a TLS of the libset's own (what they store
        // there is dropped: each function starts from the images).
        let tls = Box::leak(vec![0u8; self.tls_size].into_boxed_slice()).as_mut_ptr();
        self.tls_init(tls, &bases);
        self.in_libset(k, || {
            self.tls_swap(tls, true);
            for (j, o) in self.copies().rev() {
                self.init(o, bases[j]);
            }
            self.tls_swap(tls, false);
        });
        self.register_frames(&bases);
        // Its initial state, for cancel.
        let mut saved = Vec::new();
        for (j, o) in self.copies() {
            for (a, b) in writable_ranges(o) {
                let start = bases[j] + a;
                // SAFETY: the copy's writable pages, mapped by map_copy.
                let bytes = unsafe { core::slice::from_raw_parts(start as *const u8, b - a) };
                saved.push((start, bytes.to_vec()));
            }
        }
        let in_copies = |name: &[u8]| {
            self.copies()
                .find_map(|(j, o)| o.dynm.lookup(name, None).map(|i| o.addr(i, bases[j])))
        };
        // SAFETY: the copy's `int fflush(FILE *)`.
        let fflush = in_copies(b"fflush").map(|a| unsafe {
            core::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void) -> c_int>(a)
        });
        // SAFETY: the copy's `int fcloseall(void)`.
        let cleanup = in_copies(b"fcloseall")
            .map(|a| unsafe { core::mem::transmute::<usize, unsafe extern "C" fn() -> c_int>(a) });
        let list_all = self.copies().find_map(|(j, o)| {
            let glibc = o.dynm.lookup(b"__libc_early_init", None).is_some()
                && o.dynm
                    .lookup(b"_IO_2_1_stdin_", None)
                    .is_some_and(|i| o.dynm.sym(i).st_size == GLIBC_FILE_PLUS);
            glibc
                .then(|| o.dynm.lookup(b"_IO_list_all", None))
                .flatten()
                .map(|i| o.addr(i, bases[j]))
        });
        let own: usize =
            saved.iter().map(|(_, v)| 2 * v.len()).sum::<usize>() + self.stride + self.tls_size;
        self.bytes_per_libset.store(own, Ordering::Relaxed);
        Ok(Libset {
            bases,
            saved,
            fflush,
            cleanup,
            list_all,
            tls,
        })
    }

    fn relocate(
        &self,
        j: usize,
        o: &Obj,
        r: &Rela,
        bases: &[usize],
        ifuncs: &mut Vec<(usize, usize)>,
    ) -> Result<(), Error> {
        let b = bases[j];
        let at = b + r.r_offset as usize;
        let put = |v: u64| {
            // SAFETY: a relocation target in the copy's writable segment
            // (no text relocations: checked at enable).
            unsafe { ptr::write_unaligned(at as *mut u64, v) }
        };
        let a = r.r_addend;
        match r.kind() {
            elf::R_NONE => {}
            elf::R_RELATIVE => put((b as i64 + a) as u64),
            elf::R_IRELATIVE => ifuncs.push((at, (b as i64 + a) as usize)),
            elf::R_64 | elf::R_GLOB_DAT | elf::R_JUMP_SLOT => {
                let addend = if r.kind() == elf::R_64 { a } else { 0 };
                if r.sym() == 0 {
                    put((b as i64 + addend) as u64);
                    return Ok(());
                }
                match self.resolve(o, r.sym(), bases)? {
                    Resolved::Addr(v) => put((v as i64 + addend) as u64),
                    Resolved::Ifunc(res) => ifuncs.push((at, res)),
                }
            }
            elf::R_DTPMOD64 => {
                let (d, _) = self.tls_def(j, o, r.sym())?;
                put(self.objs[d].tls_modid as u64);
            }
            elf::R_DTPOFF64 => {
                let (_, v) = self.tls_def(j, o, r.sym())?;
                put((v as i64 + a) as u64);
            }
            elf::R_TPOFF64 => {
                let (d, v) = self.tls_def(j, o, r.sym())?;
                let Some(tp) = self.objs[d].tls_tpoff else {
                    return Err(err(format!(
                        "{}: its TLS is not in static TLS, which a copy needs",
                        self.objs[d].name
                    )));
                };
                put((tp + v as isize + a as isize) as u64);
            }
            t => {
                return Err(err(format!(
                    "{}: relocation type {t} is not handled by the copy loader",
                    o.name
                )))
            }
        }
        Ok(())
    }

    /// Where a copy's symbol reference `s` of object `j` goes.
    fn resolve(&self, o: &Obj, s: usize, bases: &[usize]) -> Result<Resolved, Error> {
        let name = o.dynm.sym_name(s);
        let want = o.dynm.wanted_version(s);
        if let Some(w) = self.shared_wrapper(name) {
            return Ok(Resolved::Addr(w));
        }
        let global = GLOBAL_DATA.contains(&name);
        let found = if global {
            self.find(name, want)
        } else {
            self.find_for_copy(name, want)
        };
        let Some((d, i)) = found else {
            let sym = o.dynm.sym(s);
            if sym.st_info >> 4 == 2 {
                // Weak and undefined: 0.
                return Ok(Resolved::Addr(0));
            }
            return Err(err(format!(
                "{}: symbol {} not found for its copy",
                o.name,
                String::from_utf8_lossy(name)
            )));
        };
        let dsym = self.objs[d].dynm.sym(i);
        let base = if global {
            self.objs[d].dynm.base
        } else {
            bases[d]
        };
        let addr = base + dsym.st_value as usize;
        if dsym.kind() == elf::STT_GNU_IFUNC {
            if self.objs[d].kind == Kind::Copy && !global {
                return Ok(Resolved::Ifunc(addr));
            }
            // SAFETY: a resolver of a relocated original.
            return Ok(Resolved::Addr(unsafe { call_resolver(addr) }));
        }
        Ok(Resolved::Addr(addr))
    }

    /// The object whose TLS block holds symbol `s` of object `j` (`j`
    /// itself for a local reference, `s` = 0), and the symbol's offset in
    /// that block (0 for `s` = 0).
    fn tls_def(&self, j: usize, o: &Obj, s: usize) -> Result<(usize, u64), Error> {
        if s == 0 {
            return Ok((j, 0));
        }
        if o.dynm.sym(s).defined() {
            return Ok((j, o.dynm.sym(s).st_value));
        }
        let name = o.dynm.sym_name(s);
        self.find(name, o.dynm.wanted_version(s))
            .map(|(d, i)| (d, self.objs[d].dynm.sym(i).st_value))
            .ok_or_else(|| {
                err(format!(
                    "{}: TLS symbol {} not found",
                    o.name,
                    String::from_utf8_lossy(name)
                ))
            })
    }

    fn init(&self, o: &Obj, base: usize) {
        let shift = |a: usize| base + (a - o.dynm.base);
        let argv = self.argv.as_ptr();
        let env = environ_now();
        // glibc's C library: the loader calls __libc_early_init(false) for a
        // C library outside the base namespace (no brk, not single-threaded).
        if let Some(i) = o.dynm.lookup(b"__libc_early_init", None) {
            let f = o.addr(i, base);
            // SAFETY: glibc's `void __libc_early_init(_Bool)` in the copy.
            unsafe {
                let f: extern "C" fn(bool) = core::mem::transmute(f);
                f(false);
            }
        }
        // glibc's stdio refuses a FILE whose jump table lies outside its own
        // (a FILE of another libset: the program's `stdout` used by a copy's
        // `fprintf`), unless its initialiser saw a standard stream with a
        // jump table other than the default. Show it one, for that moment.
        let stdin_vt = self.accept_foreign_files(o, base);
        type Init = extern "C" fn(c_int, *const *const c_char, *const *const c_char);
        if o.dynm.init != 0 {
            // SAFETY: the copy's DT_INIT, called as the loader calls it.
            unsafe {
                let f: Init = core::mem::transmute(shift(o.dynm.init));
                f(1, argv, env);
            }
        }
        for n in 0..o.dynm.init_array_len {
            // SAFETY: the copy's relocated DT_INIT_ARRAY entries.
            unsafe {
                let p = *((shift(o.dynm.init_array) + 8 * n) as *const usize);
                if p == 0 || p == usize::MAX {
                    continue;
                }
                let f: Init = core::mem::transmute(p);
                f(1, argv, env);
            }
        }
        if let Some((at, v)) = stdin_vt {
            // SAFETY: puts back the word changed by accept_foreign_files.
            unsafe { ptr::write_volatile(at as *mut usize, v) };
        }
    }

    /// Fills a TLS save area with the blocks' images (as a new thread gets
    /// them), from the copies at `bases`.
    fn tls_init(&self, area: *mut u8, bases: &[usize]) {
        for b in &self.tls {
            // SAFETY: `area` holds tls_size bytes; the image lies in the
            // copy's mapped segment.
            unsafe {
                let dst = area.add(b.at);
                ptr::copy_nonoverlapping((bases[b.obj] + b.vaddr) as *const u8, dst, b.filesz);
                ptr::write_bytes(dst.add(b.filesz), 0, b.memsz - b.filesz);
            }
        }
    }

    /// Exchanges this thread's TLS blocks of the copied libraries with
    /// `area` (`into`: save the thread's in the thread's save area and load
    /// `area`'s; else the reverse).
    fn tls_swap(&self, area: *mut u8, into: bool) {
        if self.tls_size == 0 {
            return;
        }
        let tp = thread_pointer();
        TLS_SAVE.with(|save| {
            // SAFETY: this thread's own save area, used only here and not
            // re-entered (the swaps happen outside signal handlers).
            let save = unsafe { &mut *save.get() };
            if save.len() < self.tls_size {
                save.resize(self.tls_size, 0);
            }
            for b in &self.tls {
                let live = (tp as isize + b.tpoff) as *mut u8;
                // SAFETY: the block is in this thread's static TLS (checked
                // at enable); both areas hold tls_size bytes.
                unsafe {
                    let (keep, load) = (save.as_mut_ptr().add(b.at), area.add(b.at));
                    if into {
                        ptr::copy_nonoverlapping(live, keep, b.memsz);
                        ptr::copy_nonoverlapping(load, live, b.memsz);
                    } else {
                        ptr::copy_nonoverlapping(live, load, b.memsz);
                        ptr::copy_nonoverlapping(keep, live, b.memsz);
                    }
                }
            }
        });
    }

    /// Tells the libset's own unwinder (its copy of libgcc_s, which the
    /// copies' `_Unwind_*` calls go to) where the copies' unwind tables
    /// are: the dynamic loader, which the unwinder otherwise asks, knows
    /// nothing of copies. Without it a C++ exception (or a Rust panic)
    /// thrown through a copy's code could not be unwound.
    fn register_frames(&self, bases: &[usize]) {
        let Some((g, i)) = self.find_for_copy(b"__register_frame_info", None) else {
            return;
        };
        if self.objs[g].kind != Kind::Copy {
            return;
        }
        let reg = self.objs[g].addr(i, bases[g]);
        // SAFETY: libgcc's `void __register_frame_info(const void *, struct object *)`.
        let reg: unsafe extern "C" fn(*const u8, *mut u8) = unsafe { core::mem::transmute(reg) };
        for (j, o) in self.copies() {
            let Some(h) = o
                .dynm
                .phdrs
                .iter()
                .find(|p| p.p_type == elf::PT_GNU_EH_FRAME)
            else {
                continue;
            };
            let hdr = bases[j] + h.p_vaddr as usize;
            // SAFETY: the copy's .eh_frame_hdr: version 1, then the encoding
            // of the pointer to .eh_frame, which follows at offset 4.
            let eh_frame = unsafe {
                let b = core::slice::from_raw_parts(hdr as *const u8, 8);
                if b[0] != 1 || b[1] != 0x1b {
                    continue; // not DW_EH_PE_pcrel | DW_EH_PE_sdata4
                }
                let rel = i32::from_le_bytes([b[4], b[5], b[6], b[7]]);
                (hdr as isize + 4 + rel as isize) as *const u8
            };
            // libgcc's `struct object` is 7 words in this version; it is
            // never freed (nor is the copy).
            let ob = Box::leak(Box::new([0usize; 16]));
            // SAFETY: the copy's .eh_frame, and storage for the unwinder.
            unsafe { reg(eh_frame, ob.as_mut_ptr().cast()) };
        }
    }

    /// If `o` is glibc's C library (it has `_IO_2_1_stdin_` and
    /// `_IO_file_jumps`, and the stream's jump table is where glibc 2.x
    /// keeps it, right after the 216-byte FILE), replaces the jump table of
    /// its stdin with a dummy; returns (address, old value) to put back.
    fn accept_foreign_files(&self, o: &Obj, base: usize) -> Option<(usize, usize)> {
        const VTABLE_AT: usize = 0xd8;
        let i = o.dynm.lookup(b"_IO_2_1_stdin_", None)?;
        let f = o.dynm.lookup(b"_IO_file_jumps", None)?;
        let stdin = o.dynm.sym(i);
        if (stdin.st_size as usize) < VTABLE_AT + 8 {
            return None;
        }
        let at = o.addr(i, base) + VTABLE_AT;
        let jumps = o.addr(f, base);
        // SAFETY: a word of the copy's own FILE object.
        let v = unsafe { ptr::read_volatile(at as *const usize) };
        if v != jumps {
            return None;
        }
        // SAFETY: as above; restored by `init` once the initialisers ran.
        unsafe { ptr::write_volatile(at as *mut usize, 1) };
        Some((at, v))
    }
}

enum Resolved {
    Addr(usize),
    Ifunc(usize),
}

fn environ_now() -> *const *const c_char {
    unsafe extern "C" {
        static environ: *const *const c_char;
    }
    // SAFETY: the C library's environment pointer.
    unsafe { ptr::read_volatile(&raw const environ) }
}

fn apply_relr(relr: &[u64], base: usize) {
    let mut where_: usize = 0;
    for &e in relr {
        if e & 1 == 0 {
            where_ = base + e as usize;
            // SAFETY: a RELR address entry: a word of the copy's data.
            unsafe { *(where_ as *mut usize) += base };
            where_ += 8;
        } else {
            let mut bits = e >> 1;
            let mut w = where_;
            while bits != 0 {
                if bits & 1 != 0 {
                    // SAFETY: as above, the bitmap's words.
                    unsafe { *(w as *mut usize) += base };
                }
                bits >>= 1;
                w += 8;
            }
            where_ += 63 * 8;
        }
    }
}

/// The writable pages of `o` outside its RELRO region, relative to its bias.
fn writable_ranges(o: &Obj) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    for p in o.dynm.phdrs.iter().filter(|p| p.p_type == elf::PT_LOAD) {
        if p.p_flags & elf::PF_W == 0 {
            continue;
        }
        let mut a = page_down(p.p_vaddr as usize);
        let b = page_up((p.p_vaddr + p.p_memsz) as usize);
        if let Some((ra, rb)) = o.relro {
            if ra <= a && rb > a {
                a = rb.min(b);
            }
        }
        if b > a {
            v.push((a, b));
        }
    }
    v
}

/// Checks, before mapping it, that the file at `o`'s path is the one that
/// is loaded: long enough for every segment (mapping past its end would
/// fault), and with the same first page.
fn same_file(o: &Obj, fd: c_int) -> Result<(), Error> {
    let differs = || {
        err(format!(
            "{}: the file differs from the library loaded (replaced on disk since?)",
            o.name
        ))
    };
    // SAFETY: `st` is written by fstat.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: our own descriptor.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(Error::Os(crate::sys::errno()));
    }
    let need = o
        .dynm
        .phdrs
        .iter()
        .filter(|p| p.p_type == elf::PT_LOAD)
        .map(|p| p.p_offset + p.p_filesz)
        .max()
        .unwrap_or(0);
    if (st.st_size as u64) < need {
        return Err(differs());
    }
    let Some(p) = o
        .dynm
        .phdrs
        .iter()
        .find(|p| p.p_type == elf::PT_LOAD && p.p_offset == 0)
    else {
        return Ok(());
    };
    let n = (p.p_filesz as usize).min(page());
    let mut buf = vec![0u8; n];
    // SAFETY: reads n bytes into `buf`.
    let got = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), n, 0) };
    if got != n as isize {
        return Err(differs());
    }
    // SAFETY: the loaded original's first segment holds at least n bytes.
    let loaded =
        unsafe { core::slice::from_raw_parts((o.dynm.base + p.p_vaddr as usize) as *const u8, n) };
    if loaded != &buf[..] {
        return Err(differs());
    }
    Ok(())
}

/// Maps a fresh copy of `o` from its file. Returns its bias.
fn map_copy(o: &Obj) -> Result<usize, Error> {
    let path = std::ffi::CString::new(o.name.as_bytes()).map_err(|_| err("bad library path"))?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(err(format!(
            "{}: cannot open it to copy it: {}",
            o.name,
            std::io::Error::last_os_error()
        )));
    }
    if let Err(e) = same_file(o, fd) {
        // SAFETY: our own descriptor.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    let span = o.hi - o.lo;
    // SAFETY: a fresh reservation for the copy.
    let res = unsafe {
        libc::mmap(
            ptr::null_mut(),
            span,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if res == libc::MAP_FAILED {
        let e = Error::Os(crate::sys::errno());
        // SAFETY: our own descriptor.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    let fail = |e: Error| {
        // SAFETY: our own descriptor and reservation.
        unsafe {
            libc::close(fd);
            libc::munmap(res, span);
        }
        e
    };
    let base = res as usize - o.lo;
    for p in o.dynm.phdrs.iter().filter(|p| p.p_type == elf::PT_LOAD) {
        let start = page_down(p.p_vaddr as usize);
        let off = page_down(p.p_offset as usize);
        let file_end = (p.p_vaddr + p.p_filesz) as usize;
        let mem_end = (p.p_vaddr + p.p_memsz) as usize;
        let w = p.p_flags & elf::PF_W != 0;
        let mut prot = 0;
        if p.p_flags & elf::PF_R != 0 {
            prot |= libc::PROT_READ;
        }
        if w {
            prot |= libc::PROT_WRITE;
        }
        if p.p_flags & elf::PF_X != 0 {
            prot |= libc::PROT_EXEC;
        }
        if p.p_filesz > 0 {
            // SAFETY: inside our reservation, from the library's file.
            let m = unsafe {
                libc::mmap(
                    (base + start) as *mut c_void,
                    page_up(file_end) - start,
                    prot,
                    libc::MAP_PRIVATE | libc::MAP_FIXED,
                    fd,
                    off as libc::off_t,
                )
            };
            if m == libc::MAP_FAILED {
                return Err(fail(Error::Os(crate::sys::errno())));
            }
        }
        if mem_end > file_end {
            if w && page_up(file_end) > file_end {
                // SAFETY: the rest of the last file page, writable.
                unsafe {
                    ptr::write_bytes(
                        (base + file_end) as *mut u8,
                        0,
                        page_up(file_end) - file_end,
                    )
                };
            }
            let anon = page_up(file_end).max(start);
            if page_up(mem_end) > anon {
                // SAFETY: inside our reservation: the zero-filled pages.
                let m = unsafe {
                    libc::mmap(
                        (base + anon) as *mut c_void,
                        page_up(mem_end) - anon,
                        prot,
                        libc::MAP_PRIVATE | libc::MAP_FIXED | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    )
                };
                if m == libc::MAP_FAILED {
                    return Err(fail(Error::Os(crate::sys::errno())));
                }
            }
        }
    }
    // SAFETY: our own descriptor; the mappings keep the file.
    unsafe { libc::close(fd) };
    Ok(base)
}

/// Takes a libset for a function about to be launched: a free one, or a
/// new one. Returns its number (>= 1).
pub(crate) fn acquire() -> Result<u32, Error> {
    let st = STATE.get().ok_or_else(|| err("libsets are not enabled"))?;
    let mut pool = st.pool.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = pool.free.pop() {
        pool.in_use += 1;
        drop(pool);
        if let Some((st, ls)) = set(k) {
            st.tls_init(ls.tls, &ls.bases);
        }
        return Ok(k);
    }
    if pool.created as usize >= MAX_LIBSETS {
        return Err(err(format!(
            "all {MAX_LIBSETS} libsets are held by functions not yet returned or cancelled"
        )));
    }
    let k = pool.created as usize + 1;
    let set = st.make(k)?;
    st.sets[k].store(Box::into_raw(Box::new(set)), Ordering::Release);
    pool.created += 1;
    pool.in_use += 1;
    Ok(k as u32)
}

thread_local! {
    /// The caller's TLS blocks of the copied libraries while a function runs.
    static TLS_SAVE: core::cell::UnsafeCell<Vec<u8>> = const { core::cell::UnsafeCell::new(Vec::new()) };
}

/// The caller is about to switch into a function of libset `k`: make `k`
/// current and give the thread the function's TLS blocks.
pub(crate) fn enter(k: u32) {
    let Some((st, ls)) = set(k) else { return };
    dispatch::set_cur(k as usize * st.stride);
    st.tls_swap(ls.tls, true);
}

/// Back from a function of libset `k`: keep its TLS blocks, give the caller
/// its own back, and make the originals current.
pub(crate) fn leave(k: u32) {
    let Some((st, ls)) = set(k) else { return };
    st.tls_swap(ls.tls, false);
    dispatch::set_cur(0);
}

fn set(k: u32) -> Option<(&'static State, &'static Libset)> {
    let st = STATE.get()?;
    let p = st.sets.get(k as usize)?.load(Ordering::Acquire);
    // SAFETY: published libsets are never freed.
    (!p.is_null()).then(|| (st, unsafe { &*p }))
}

/// Gives libset `k` back. A function that returned leaves its libset
/// consistent (its stdio is flushed); a cancelled one's is restored to its
/// state after initialisation.
pub(crate) fn release(k: u32, cancelled: bool) {
    let Some((st, ls)) = set(k) else { return };
    if cancelled {
        for (at, bytes) in &ls.saved {
            // SAFETY: the copy's writable pages, saved by `make`.
            unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), *at as *mut u8, bytes.len()) };
        }
    } else {
        flush(st, k, ls);
    }
    let mut pool = st.pool.lock().unwrap_or_else(|e| e.into_inner());
    pool.in_use -= 1;
    pool.free.push(k);
}

/// glibc's `struct _IO_FILE_plus` (the FILE, then its jump table).
const GLIBC_FILE_PLUS: u64 = 0xe0;

/// Does any of the libset's streams hold output? (glibc's own test in
/// `_IO_flush_all_lockp`, read without its locks: only the libset's holder
/// uses its streams.) Conservatively yes for wide streams, long lists, or
/// a C library that is not glibc's.
fn needs_flush(ls: &Libset) -> bool {
    const WRITE_BASE: usize = 0x20;
    const WRITE_PTR: usize = 0x28;
    const CHAIN: usize = 0x68;
    const MODE: usize = 0xc0;
    let Some(list) = ls.list_all else { return true };
    // SAFETY: the copy's `_IO_list_all` and the FILEs chained from it, in
    // glibc's layout (checked when the libset was made).
    unsafe {
        let mut f = *(list as *const usize);
        for _ in 0..64 {
            if f == 0 {
                return false;
            }
            let word = |off: usize| *((f + off) as *const usize);
            if *((f + MODE) as *const i32) > 0 || word(WRITE_PTR) > word(WRITE_BASE) {
                return true;
            }
            f = word(CHAIN);
        }
    }
    true
}

fn flush(st: &State, k: u32, ls: &Libset) {
    if !needs_flush(ls) {
        return;
    }
    if let Some(f) = ls.fflush {
        // SAFETY: the copy's fflush(NULL): flushes its open streams.
        st.in_libset(k as usize, || unsafe { f(ptr::null_mut()) });
    }
}

/// At exit, each libset's C library does what the original's does at
/// exit: write out what its streams hold, without taking their locks (a
/// function suspended on another thread may hold one).
extern "C" fn flush_all() {
    let Some(st) = STATE.get() else { return };
    for k in 1..st.sets.len() {
        if let Some((st, ls)) = set(k as u32) {
            match ls.cleanup {
                Some(f) => {
                    // SAFETY: the copy's fcloseall().
                    st.in_libset(k, || unsafe { f() });
                }
                None => flush(st, k as u32, ls),
            }
        }
    }
}

/// The libset the calling thread runs in: 0 outside preemptible functions
/// (the original libraries) or when libsets are not enabled.
pub fn current() -> u32 {
    match STATE.get() {
        Some(st) => (dispatch::cur() / st.stride) as u32,
        None => 0,
    }
}

/// For the C API: the address of `f` in the current libset (the same
/// offset in the copy if `f` lies in a copied library).
pub(crate) fn translate_current(f: usize) -> usize {
    let Some((st, ls)) = set(current()) else {
        return f;
    };
    st.copies()
        .find(|(_, o)| f >= o.dynm.base + o.lo && f < o.dynm.base + o.hi)
        .map_or(f, |(j, o)| f - o.dynm.base + ls.bases[j])
}

#[unsafe(no_mangle)]
extern "C" fn preempt_shared_enter(ret: usize) -> usize {
    crate::engine::shared_enter(ret);
    dispatch::shared_ret_addr()
}

#[unsafe(no_mangle)]
extern "C" fn preempt_shared_leave() -> usize {
    crate::engine::shared_leave()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relr_decoding() {
        // An address entry for word 0, then a bitmap for the 63 words
        // after it: bit i marks word i (1, 3 and 63 here).
        let mut mem = [0usize; 70];
        let base = mem.as_mut_ptr() as usize;
        let relr = [0u64, 1 | (1 << 1) | (1 << 3) | (1 << 63)];
        // The entry addresses are relative to the bias, which is `base`.
        apply_relr(&relr, base);
        let touched: Vec<usize> = (0..70).filter(|&i| mem[i] != 0).collect();
        assert_eq!(touched, [0, 1, 3, 63]);
        assert!(touched.iter().all(|&i| mem[i] == base));
    }
}
