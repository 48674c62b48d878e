/* Once a few signals have been delivered (picos has learnt the kernel's
 * signal-frame format and builds frames itself), a handler at a non-canonical
 * address (0x2000000000000), installed with the raw rt_sigaction: Linux jumps
 * there and the program dies of SIGSEGV. Under picos it dies too, but after a
 * NULL dereference in the runtime:
 *   picos: error: internal error: signal 11 in the runtime at rip=... (image+0xeb92), fault address 0x0
 * Usage: handler_bad_address [SA_FLAGS_HEX [WARM_UP_SIGNALS]]; with 0 warm-up
 * signals there is no internal error.
 * Found by tools/fuzz.py (seed 2, --avoid mqrv, child 59: calls 2, 306, 314, 404). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
static void h(int s) { (void)s; }
int main(int argc, char **argv) {
    unsigned long flags = argc > 1 ? strtoul(argv[1], 0, 16)
                                   : 0x04000000 /*RESTORER*/ | 0x08000000 /*ONSTACK*/ | 4 /*SIGINFO*/ |
                                         0x80000000 /*RESETHAND*/ | 0x40000000 /*NODEFER*/;
    int warm = argc > 2 ? atoi(argv[2]) : 2;
    signal(SIGUSR2, h);
    for (int i = 0; i < warm; i++) /* ordinary deliveries first */
        syscall(SYS_tkill, getpid(), SIGUSR2);
    struct { unsigned long handler, flags, restorer, mask; } act = {0x2000000000000UL, flags, 0x100001000123UL, 0};
    long r = syscall(SYS_rt_sigaction, SIGUSR1, &act, 0, 8);
    printf("rt_sigaction(SIGUSR1, handler 0x2000000000000, flags %#lx) = %ld; raising it\n", flags, r);
    fflush(stdout);
    syscall(SYS_tkill, getpid(), SIGUSR1);
    printf("not reached\n");
    return 0;
}
