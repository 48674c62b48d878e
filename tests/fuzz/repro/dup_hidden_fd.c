/* picos keeps one descriptor of its own (/proc/self/mem, read-write) just
 * below RLIMIT_NOFILE and says the program "cannot close or replace it". But
 * dup3/dup2/fcntl(F_DUPFD) *from* that number work: the program gets a
 * writable /proc/self/mem at a number of its choosing (through which it
 * could also write the runtime's memory). Natively the number is not open
 * (EBADF). Found by tools/fuzz.py (seed 3, --avoid mqrv, child 267: calls
 * 365, 419, 689: close_range(5, 18); dup3(1023, 14); read(14) gave EIO). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
static long secret = 0x5ec2e7;
int main(void) {
    for (int i = 0; i < 4; i++) /* let picos patch a site: it opens its descriptor */
        getppid(), syscall(SYS_getppid);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int hidden = (int)rl.rlim_cur - 1;
    long r = syscall(SYS_dup3, hidden, 100, 0);
    printf("dup3(%d, 100, 0) = %ld %s\n", hidden, r, r < 0 ? strerror(errno) : "");
    if (r == 100) {
        char path[64] = "";
        ssize_t n = readlink("/proc/self/fd/100", path, sizeof path - 1);
        long v = 0;
        pread(100, &v, sizeof v, (off_t)(unsigned long)&secret);
        printf("fd 100 -> %.*s; read %#lx through it\n", (int)(n > 0 ? n : 0), path, v);
    }
    return 0;
}
