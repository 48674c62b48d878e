/* The libc wrappers a classic micro-benchmark calls, N times each: read and
 * write of one byte, pread, pwrite, readv, writev, fstat, stat, lstat,
 * open + close of an absolute path, lseek, access. With any second
 * argument, a second thread runs first (glibc then takes its cancellable
 * wrapper shapes). crates/picos/tests/picoprocess.rs checks that every
 * site these reach leaves the trap path for a direct entry. */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static volatile int started;
static void *idle(void *a)
{
    (void)a;
    started = 1;
    pause();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long n = atol(argv[1]);
    if (argc > 2) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL) != 0)
            return 3;
        while (!started)
            sched_yield();
    }
    int z = open("/dev/zero", O_RDONLY), nl = open("/dev/null", O_WRONLY);
    if (z < 0 || nl < 0)
        return 4;
    char c[16] = {0};
    struct stat st;
    struct iovec iov = {c, 1};
    long bad = 0;
    for (long i = 0; i < n; i++) {
        bad += read(z, c, 1) != 1;
        bad += write(nl, c, 1) != 1;
        bad += pread(z, c, 1, 0) != 1;
        bad += pwrite(nl, c, 1, 0) != 1;
        bad += readv(z, &iov, 1) != 1;
        bad += writev(nl, &iov, 1) != 1;
        bad += fstat(z, &st) != 0;
        bad += stat("/dev/zero", &st) != 0;
        bad += lstat("/dev/null", &st) != 0;
        int f = open("/dev/null", O_RDONLY);
        bad += f < 0 || close(f) != 0;
        bad += lseek(z, 0, SEEK_SET) != 0;
        bad += access("/dev/null", R_OK) != 0;
    }
    printf("calls %ld bad %ld\n", n * 13, bad);
    return bad != 0;
}
