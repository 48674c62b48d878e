/* rt_sigprocmask(SIG_BLOCK, set, bad oldset): Linux changes the mask, then
 * fails with EFAULT writing the old one. Under picos the mask is not changed:
 * the signal raised afterwards is delivered instead of staying pending.
 * Found by tools/fuzz.py (seed 2, --avoid mqrv, child 616: calls 604, 606,
 * 854 end in signal 50 under picos only). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static volatile int got;
static void h(int s) { (void)s; got = 1; }
int main(void) {
    signal(SIGUSR1, h);
    unsigned long set = 1UL << (SIGUSR1 - 1);
    long r = syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, (void *)8, 8);
    printf("rt_sigprocmask(SIG_BLOCK, {USR1}, bad) = %ld (%s)\n", r, r ? strerror(errno) : "ok");
    raise(SIGUSR1);
    printf("SIGUSR1 %s\n", got ? "delivered: the mask was not changed" : "pending: blocked, as on Linux");
    return 0;
}
