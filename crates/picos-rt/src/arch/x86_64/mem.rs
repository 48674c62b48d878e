//! `memcpy`, `memset`, `memcmp` and `bcmp` for the runtime.
//!
//! The `core` of x86_64-unknown-none comes with compiler_builtins' versions,
//! which start every copy with `rep movsb`/`rep movsq` (and compare byte by
//! byte). A `rep` string instruction has a start-up cost of tens of cycles
//! on the machines picos runs on (FACTS.md: AMD EPYC; ~7 ns for a 32-byte
//! `rep movsb`), and the runtime's copies are nearly all small: paths,
//! `statx` and `stat` records, register frames. These use general-purpose
//! registers only (the runtime never touches the program's SSE state) and
//! keep `rep` for large sizes. compiler_builtins defines its versions weak,
//! so these take their place in the runtime image; the host build (unit
//! tests) keeps the C library's and tests these under their `picos_` names.
#![allow(unsafe_code)]

use core::arch::global_asm;

global_asm!(
    // picos_memcpy(dst, src, n) -> dst. Non-overlapping.
    ".globl picos_memcpy",
    ".type picos_memcpy,@function",
    "picos_memcpy:",
    "    mov %rdi, %rax",
    "    cmp $8, %rdx",
    "    jb 3f",
    "    cmp $512, %rdx",
    "    ja 5f",
    // 8..512: 8-byte words from the front, then the last 8 bytes (which
    // may overlap the last word copied).
    "    mov -8(%rsi,%rdx), %r8",
    "    lea -8(%rdx), %rcx",
    "    xor %r9d, %r9d",
    "1:  cmp %rcx, %r9",
    "    jae 2f",
    "    mov (%rsi,%r9), %r10",
    "    mov %r10, (%rdi,%r9)",
    "    add $8, %r9",
    "    jmp 1b",
    "2:  mov %r8, -8(%rdi,%rdx)",
    "    ret",
    // 0..7.
    "3:  cmp $4, %rdx",
    "    jb 4f",
    "    mov (%rsi), %ecx",
    "    mov -4(%rsi,%rdx), %r8d",
    "    mov %ecx, (%rdi)",
    "    mov %r8d, -4(%rdi,%rdx)",
    "    ret",
    // 0..3: the first, middle and last bytes.
    "4:  test %rdx, %rdx",
    "    jz 6f",
    "    mov %rdx, %r9",
    "    shr $1, %r9",
    "    movzbl (%rsi), %ecx",
    "    movzbl (%rsi,%r9), %r8d",
    "    movzbl -1(%rsi,%rdx), %r10d",
    "    mov %cl, (%rdi)",
    "    mov %r8b, (%rdi,%r9)",
    "    mov %r10b, -1(%rdi,%rdx)",
    "6:  ret",
    "5:  mov %rdx, %rcx",
    "    rep movsb",
    "    ret",
    ".size picos_memcpy, .-picos_memcpy",
    //
    // picos_memset(dst, c, n) -> dst.
    ".globl picos_memset",
    ".type picos_memset,@function",
    "picos_memset:",
    "    mov %rdi, %r11",
    "    movzbl %sil, %eax",
    "    cmp $512, %rdx",
    "    ja 5f",
    "    movabs $0x0101010101010101, %r8",
    "    imul %r8, %rax",
    "    cmp $8, %rdx",
    "    jb 3f",
    "    mov %rax, -8(%rdi,%rdx)",
    "    lea -8(%rdx), %rcx",
    "    xor %r9d, %r9d",
    "1:  cmp %rcx, %r9",
    "    jae 2f",
    "    mov %rax, (%rdi,%r9)",
    "    add $8, %r9",
    "    jmp 1b",
    "2:  mov %r11, %rax",
    "    ret",
    "3:  cmp $4, %rdx",
    "    jb 4f",
    "    mov %eax, (%rdi)",
    "    mov %eax, -4(%rdi,%rdx)",
    "    mov %r11, %rax",
    "    ret",
    "4:  test %rdx, %rdx",
    "    jz 6f",
    "    mov %al, (%rdi)",
    "    mov %al, -1(%rdi,%rdx)",
    "    mov %rdx, %r9",
    "    shr $1, %r9",
    "    mov %al, (%rdi,%r9)",
    "6:  mov %r11, %rax",
    "    ret",
    "5:  mov %rdx, %rcx",
    "    rep stosb",
    "    mov %r11, %rax",
    "    ret",
    ".size picos_memset, .-picos_memset",
    //
    // picos_memcmp(a, b, n): <0, 0 or >0 as the first differing byte
    // (unsigned) of a is below or above b's. Also bcmp (any non-zero for
    // "differ").
    ".globl picos_memcmp",
    ".type picos_memcmp,@function",
    "picos_memcmp:",
    "    xor %ecx, %ecx",
    "1:  lea 8(%rcx), %r8",
    "    cmp %rdx, %r8",
    "    ja 3f",
    "    mov (%rdi,%rcx), %rax",
    "    mov (%rsi,%rcx), %r9",
    "    cmp %r9, %rax",
    "    jne 2f",
    "    mov %r8, %rcx",
    "    jmp 1b",
    // The first differing byte decides: compare the words big-endian.
    "2:  bswap %rax",
    "    bswap %r9",
    "    cmp %r9, %rax",
    "    sbb %eax, %eax",
    "    or $1, %eax",
    "    ret",
    "3:  cmp %rdx, %rcx",
    "    jae 5f",
    "    movzbl (%rdi,%rcx), %eax",
    "    movzbl (%rsi,%rcx), %r9d",
    "    sub %r9d, %eax",
    "    jnz 4f",
    "    inc %rcx",
    "    jmp 3b",
    "4:  ret",
    "5:  xor %eax, %eax",
    "    ret",
    ".size picos_memcmp, .-picos_memcmp",
    options(att_syntax)
);

// In the runtime image, the C names are these.
#[cfg(target_os = "none")]
global_asm!(
    ".globl memcpy",
    ".type memcpy,@function",
    ".set memcpy, picos_memcpy",
    ".globl memset",
    ".type memset,@function",
    ".set memset, picos_memset",
    ".globl memcmp",
    ".type memcmp,@function",
    ".set memcmp, picos_memcmp",
    ".globl bcmp",
    ".type bcmp,@function",
    ".set bcmp, picos_memcmp",
);

#[cfg(test)]
mod tests {
    extern "C" {
        fn picos_memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8;
        fn picos_memset(dst: *mut u8, c: i32, n: usize) -> *mut u8;
        fn picos_memcmp(a: *const u8, b: *const u8, n: usize) -> i32;
    }

    fn pattern(n: usize, seed: u8) -> std::vec::Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn memcpy_every_size_and_alignment() {
        for n in 0..600 {
            for off in 0..9 {
                let src = pattern(n + 16, 7);
                let mut dst = std::vec![0xeeu8; n + 32];
                // SAFETY: both buffers hold `off + n` bytes and more.
                let r = unsafe { picos_memcpy(dst.as_mut_ptr().add(off), src.as_ptr().add(3), n) };
                assert_eq!(r, dst[off..].as_mut_ptr());
                assert_eq!(&dst[off..off + n], &src[3..3 + n], "n {n} off {off}");
                assert!(
                    dst[..off].iter().all(|&b| b == 0xee),
                    "n {n} off {off}: before"
                );
                assert!(
                    dst[off + n..].iter().all(|&b| b == 0xee),
                    "n {n} off {off}: after"
                );
            }
        }
    }

    #[test]
    fn memset_every_size_and_alignment() {
        for n in 0..600 {
            for off in 0..9 {
                let mut dst = std::vec![0xeeu8; n + 32];
                // SAFETY: the buffer holds `off + n` bytes and more.
                let r = unsafe { picos_memset(dst.as_mut_ptr().add(off), 0x1a5, n) };
                assert_eq!(r, dst[off..].as_mut_ptr());
                assert!(
                    dst[off..off + n].iter().all(|&b| b == 0xa5),
                    "n {n} off {off}"
                );
                assert!(dst[..off].iter().all(|&b| b == 0xee));
                assert!(dst[off + n..].iter().all(|&b| b == 0xee));
            }
        }
    }

    #[test]
    fn memcmp_orders_as_unsigned_bytes() {
        for n in 0..80 {
            let a = pattern(n, 3);
            // SAFETY: both buffers hold n bytes.
            assert_eq!(
                unsafe { picos_memcmp(a.as_ptr(), a.clone().as_ptr(), n) },
                0
            );
            for i in 0..n {
                for (x, y) in [(0x00u8, 0xffu8), (0x80, 0x7f), (5, 6)] {
                    let mut p = a.clone();
                    let mut q = a.clone();
                    p[i] = x;
                    q[i] = y;
                    // Later bytes must not decide.
                    if i + 1 < n {
                        p[i + 1] = 0xff;
                        q[i + 1] = 0;
                    }
                    // SAFETY: both buffers hold n bytes.
                    let r = unsafe { picos_memcmp(p.as_ptr(), q.as_ptr(), n) };
                    assert_eq!(r.signum(), (x as i32 - y as i32).signum(), "n {n} i {i}");
                    // SAFETY: as above.
                    let r = unsafe { picos_memcmp(q.as_ptr(), p.as_ptr(), n) };
                    assert_eq!(r.signum(), (y as i32 - x as i32).signum(), "n {n} i {i}");
                }
            }
        }
    }
}
