/* Run under picos only: a program that corrupts the runtime's state must
 * be told so and end as Linux ends a program that faults (SIGSEGV), not be
 * reported as a bug of picos. Natively there is no runtime to corrupt (both
 * modes run on and exit 0).
 *   wrgsbase: sets the GS base (the runtime's thread pointer) to 0, then
 *             makes a system call the patcher leaves on the trap path;
 *   store:    overwrites the runtime's per-thread state (where the GS base
 *             points), then the same. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long trap_getpid(void)
{
    long r;
    /* `nop; syscall`: no patch shape matches it (the trap path). */
    __asm__ volatile("nop\n\tsyscall" : "=a"(r) : "a"((long)SYS_getpid) : "rcx", "r11", "memory");
    return r;
}

__attribute__((target("fsgsbase"))) int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "wrgsbase";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(mode, "wrgsbase")) {
        _writegsbase_u64(0);
    } else {
        unsigned long gs = _readgsbase_u64();
        if (gs)
            memset((void *)gs, 0x5a, 64);
    }
    long pid = trap_getpid();
    printf("survived: %ld\n", pid > 0 ? 1L : 0L);
    return 0;
}
