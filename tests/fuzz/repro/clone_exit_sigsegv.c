/* A child whose exit signal is SIGSEGV (clone flags SIGSEGV, or
 * CLONE_VFORK|SIGSEGV, or clone3 exit_signal = SIGSEGV; CLONE_VM is not
 * needed): when it exits, the parent gets SIGSEGV with si_code CLD_EXITED
 * (> 0). Linux delivers it to the parent's handler; picos, if it lands while
 * the runtime runs (here: in the clone call that waits for the vfork child),
 * dies with
 *   picos: error: internal error: signal 11 in the runtime at rip=... fault address 0xfffe0000NNNN */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile int got;
static void h(int s) { (void)s; got++; }
int main(void) {
    signal(SIGSEGV, h);
    /* raw clone: the child leaves at once without touching memory */
    long r;
    __asm__ volatile("syscall\n\ttest %%rax,%%rax\n\tjnz 1f\n\tmov $60,%%eax\n\txor %%edi,%%edi\n\tsyscall\n1:"
                     : "=a"(r)
                     : "a"(SYS_clone), "D"((long)(CLONE_VFORK | SIGSEGV)), "S"(0L), "d"(0L)
                     : "rcx", "r11", "r10", "r8", "r9", "memory");
    if (r > 0)
        waitpid(r, 0, __WALL);
    printf("clone = %s, SIGSEGV handler ran %d time(s)\n", r > 0 ? "child" : "error", got);
    return 0;
}
