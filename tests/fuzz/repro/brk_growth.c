/* Build static and non-PIE (gcc -static -no-pie -fno-pie): natively brk grows
 * the heap by 64 MiB; under picos it stops 8 MiB past the start, because
 * picos puts a 64 KiB trampoline region (r-x, near the code it patches) just
 * above the heap of such programs. Found by tools/fuzz.py (seed 3,
 * --avoid mqrv, child 46, call 172: native B+3500000, picos B+0). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    unsigned long b0 = syscall(SYS_brk, 0);
    for (unsigned long mib = 1; mib <= 64; mib *= 2) {
        unsigned long b = syscall(SYS_brk, b0 + (mib << 20));
        printf("brk(start + %2lu MiB) -> start + %#lx\n", mib, b - b0);
    }
    return 0;
}
