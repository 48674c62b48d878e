/* prctl(PR_SET_TSC, PR_TSC_SIGSEGV) makes rdtsc fault for the program; picos'
 * own code uses rdtsc too (the sched_getaffinity cache's clock), and dies:
 *   picos: error: internal error: signal 11 in the runtime at rip=... fault address 0x0
 * Found by tools/fuzz.py (seed 2, --avoid mqrv, child 96: calls 710, 802). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    long r = prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
    printf("prctl(PR_SET_TSC, PR_TSC_SIGSEGV) = %ld\n", r);
    fflush(stdout);
    cpu_set_t set;
    r = syscall(SYS_sched_getaffinity, getppid(), sizeof set, &set);
    printf("sched_getaffinity(parent) = %ld\n", r);
    r = syscall(SYS_sched_getaffinity, 0, sizeof set, &set);
    printf("sched_getaffinity(self) = %ld\n", r);
    return 0;
}
