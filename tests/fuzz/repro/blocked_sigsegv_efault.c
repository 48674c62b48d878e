/* With SIGSEGV blocked, a call picos serves itself and that writes to a
 * read-only buffer must still fail with EFAULT, as on Linux; picos kills the
 * program with SIGSEGV (exit status 139). The same for uname, getresuid,
 * getrlimit, rt_sigpending, getcpu, time, sigaltstack, ... Found by
 * tools/fuzz.py: the most frequent crash (e.g. seed 1, child 457, calls
 * 581, 583: rt_sigprocmask blocking SIGSEGV, arch_prctl(ARCH_GET_GS, ro)). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    char *ro = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGSEGV);
    sigprocmask(SIG_BLOCK, &s, 0);
    long r = syscall(SYS_uname, ro);
    printf("uname(read-only page) with SIGSEGV blocked: %ld %s\n", r, r < 0 ? strerror(errno) : "");
    return 0;
}
