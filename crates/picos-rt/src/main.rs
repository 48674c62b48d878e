//! The runtime executable started inside the picoprocess (x86_64-unknown-none).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
mod entry {
    extern crate alloc;
    use alloc::vec::Vec;
    use core::arch::global_asm;

    global_asm!(
        ".globl _start",
        ".type _start,@function",
        "_start:",
        "    xor %ebp, %ebp",
        "    mov %rsp, %rdi",
        "    lea __ehdr_start(%rip), %rsi",
        "    lea _DYNAMIC(%rip), %rdx",
        "    lea _end(%rip), %rcx",
        "    and $-16, %rsp",
        "    call picos_rt_start",
        "    ud2",
        options(att_syntax)
    );

    const DT_NULL: usize = 0;
    const DT_RELA: usize = 7;
    const DT_RELASZ: usize = 8;
    const DT_RELAENT: usize = 9;
    const R_X86_64_RELATIVE: usize = 8;

    /// Applies the image's own R_X86_64_RELATIVE relocations (the runtime is
    /// a static PIE with no loader). Must not touch any relocated data.
    ///
    /// # Safety
    /// Called once, first thing, with the image's load address and _DYNAMIC.
    #[inline(never)]
    unsafe fn relocate(base: usize, mut dynamic: *const [usize; 2]) {
        let (mut rela, mut relasz, mut relaent) = (0usize, 0usize, 24usize);
        // SAFETY: _DYNAMIC is a DT_NULL-terminated array in our image, and
        // the relocation table lies inside the image at the offsets it names.
        unsafe {
            loop {
                let [tag, val] = *dynamic;
                match tag {
                    DT_NULL => break,
                    DT_RELA => rela = val,
                    DT_RELASZ => relasz = val,
                    DT_RELAENT => relaent = val,
                    _ => {}
                }
                dynamic = dynamic.add(1);
            }
            let mut p = base + rela;
            let end = p + relasz;
            while p < end {
                let r = p as *const usize;
                if *r.add(1) & 0xffff_ffff == R_X86_64_RELATIVE {
                    *((base + *r) as *mut usize) = base.wrapping_add(*r.add(2));
                }
                p += relaent;
            }
        }
    }

    /// A NUL-terminated string of the initial stack.
    ///
    /// # Safety
    /// `p` points at a NUL-terminated string.
    unsafe fn cstr_at(p: *const u8) -> Vec<u8> {
        // SAFETY: the caller's promise.
        unsafe { core::ffi::CStr::from_ptr(p.cast()) }
            .to_bytes()
            .to_vec()
    }

    /// Reads argv, envp and the auxiliary vector from the initial stack.
    ///
    /// # Safety
    /// `sp` is the stack pointer the kernel started the process with.
    unsafe fn initial_stack(sp: *const usize) -> picos_rt::boot::StartArgs {
        // SAFETY: the kernel's layout: argc, argv[], NULL, envp[], NULL,
        // then (key, value) pairs up to AT_NULL; the strings are
        // NUL-terminated.
        unsafe {
            let argc = *sp;
            let argvp = sp.add(1);
            let argv: Vec<Vec<u8>> = (0..argc)
                .map(|i| cstr_at(*argvp.add(i) as *const u8))
                .collect();
            let mut e = argvp.add(argc + 1);
            let mut envp = Vec::new();
            while *e != 0 {
                envp.push(cstr_at(*e as *const u8));
                e = e.add(1);
            }
            let mut a = e.add(1) as *const u64;
            let mut auxv = Vec::new();
            loop {
                let (k, v) = (*a, *a.add(1));
                auxv.push((k, v));
                if k == 0 {
                    break;
                }
                a = a.add(2);
            }
            // Linux puts the argv strings, then the envp strings, back to
            // back (its mm->arg_start..env_end): where they are, if so.
            let mut strings = (argc > 0).then(|| *argvp as usize);
            if let Some(start) = strings {
                let mut next = start;
                let ptrs = (0..argc)
                    .map(|i| *argvp.add(i))
                    .chain((0..envp.len()).map(|i| *argvp.add(argc + 1 + i)));
                let lens = argv.iter().chain(envp.iter()).map(|s| s.len());
                for (p, len) in ptrs.zip(lens) {
                    if p != next {
                        strings = None;
                        break;
                    }
                    next = p + len + 1;
                }
            }
            picos_rt::boot::StartArgs {
                argv,
                envp,
                auxv,
                stack_top: sp as usize,
                strings,
            }
        }
    }

    #[no_mangle]
    unsafe extern "C" fn picos_rt_start(
        sp: *const usize,
        base: usize,
        dynamic: *const [usize; 2],
        end: usize,
    ) -> ! {
        // SAFETY: first code of the process, with the kernel's values.
        unsafe { relocate(base, dynamic) };
        // Memory first: everything after this may allocate.
        if let Err(e) = picos_rt::mm::runtime::init(base, end - base) {
            picos_rt::diag::log::log_line(
                picos_rt::diag::log::LogLevel::Error,
                format_args!("cannot reserve runtime memory: {}", e),
            );
            picos_rt::host::exit_group(127)
        }
        // SAFETY: `sp` is the kernel's initial stack pointer.
        let args = unsafe { initial_stack(sp) };
        picos_rt::boot::start(args)
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
        picos_rt::diag::log::log_line(
            picos_rt::diag::log::LogLevel::Error,
            format_args!("internal error: {}", info),
        );
        picos_rt::host::exit_group(70)
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "picos-rt runs only inside a picoprocess (built for x86_64-unknown-none); use `picos run`"
    );
    std::process::exit(2);
}
