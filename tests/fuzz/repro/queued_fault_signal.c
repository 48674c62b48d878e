/* A signal queued by the program itself with a kernel si_code (> 0), e.g.
 * rt_sigqueueinfo(getpid(), SIGSEGV, {si_code = SEGV_MAPERR}), is an ordinary
 * signal on Linux: the program's handler runs. picos takes it for a fault of
 * its own code when it lands while the runtime runs:
 *   picos: error: internal error: signal 11 in the runtime at rip=... fault address 0xfffe0000NNNN
 * (the "fault address" is the si_pid/si_uid the program put in the siginfo).
 * Also with SIGBUS, SIGILL, SIGFPE, SIGTRAP. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static volatile int got;
static void h(int s) { (void)s; got++; }
int main(int argc, char **argv) {
    int sig = argc > 1 ? atoi(argv[1]) : SIGSEGV;
    signal(sig, h);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = 1; /* SEGV_MAPERR / BUS_ADRALN / ILL_ILLOPC / FPE_INTDIV / TRAP_BRKPT */
    si.si_pid = getpid();
    si.si_uid = getuid();
    long r = syscall(SYS_rt_sigqueueinfo, getpid(), sig, &si);
    printf("rt_sigqueueinfo = %ld, handler ran %d time(s)\n", r, got);
    return 0;
}
