//! The runtime executable started inside the picoprocess (x86_64-unknown-none).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
mod entry {
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

    #[no_mangle]
    unsafe extern "C" fn picos_rt_start(
        sp: *const usize,
        base: usize,
        dynamic: *const [usize; 2],
        end: usize,
    ) -> ! {
        // SAFETY: first code of the process, with the kernel's values.
        unsafe {
            relocate(base, dynamic);
            picos_rt::boot::start(sp, base, end - base)
        }
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
