/* rseq registered by the program with rseq_cs pointing at unmapped memory
 * (build with musl, or run glibc programs with GLIBC_TUNABLES=glibc.pthread.rseq=0
 * so that the area is free). Linux kills the program with SIGSEGV the next
 * time it is preempted or gets a signal; under picos the fault can come while
 * the runtime runs:
 *   picos: error: internal error: signal 11 in the runtime at rip=... fault address 0x0
 * (a known bug class: see docs/FUZZING.md). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
static struct { uint32_t cpu_id_start, cpu_id; uint64_t rseq_cs; uint32_t flags, pad[3]; }
    __attribute__((aligned(32))) rs;
int main(void) {
    long r = syscall(SYS_rseq, &rs, 32, 0, 0x53053053);
    printf("rseq = %ld\n", r);
    fflush(stdout);
    rs.rseq_cs = 0x100001000000ULL; /* unmapped */
    for (int i = 0; i < 100000; i++)
        syscall(SYS_getppid);
    syscall(SYS_execve, "/nonexistent", (char **)1, (char **)1);
    printf("not killed\n");
    return 0;
}
