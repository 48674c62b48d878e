/* Calls on descriptors through the direct entries of patched sites.
 *
 * pread and lseek take a descriptor: their patched sites enter through
 * the pass-through check (`picos_direct_fd_entry`), which issues the call
 * at once for a descriptor the host serves unchanged and sends any other
 * (one the library OS would serve, or one at or beyond the map's end,
 * 4096) to the dispatcher. Each call below runs many times from one site
 * (so the site is patched), on descriptors below and beyond the map, on a
 * negative one, and on one with garbage in the upper half of its register
 * (Linux reads the descriptor as an int), and must give what it gives
 * natively. Prints "passthrough_fds: ok" and exits 0 on success. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fail(const char *what, long got, long want) {
    printf("passthrough_fds: %s: got %ld, want %ld\n", what, got, want);
    exit(1);
}

/* pread through one call site, so that it is patched after two traps. */
static __attribute__((noinline)) ssize_t one_pread(int fd, void *buf, size_t n, off_t off) {
    return pread(fd, buf, n, off);
}

/* The raw call with a full 64-bit descriptor register. */
static __attribute__((noinline)) long raw_lseek(long fd, long off, long whence) {
    return syscall(SYS_lseek, fd, off, whence);
}

int main(void) {
    char path[] = "/tmp/picos-passthrough-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 2;
    }
    unlink(path);
    const char text[] = "0123456789abcdef";
    if (write(fd, text, 16) != 16) {
        perror("write");
        return 2;
    }
    int fds[] = {fd, 4095, 4096, 5000, 70000};
    int n = 1;
    for (int i = 1; i < 5; i++) {
        if (dup2(fd, fds[i]) == fds[i])
            fds[n++] = fds[i];
        /* (a descriptor above RLIMIT_NOFILE is skipped, natively as under picos) */
    }
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < n; i++) {
            char b[4] = {0};
            int off = (round + i) % 12;
            ssize_t r = one_pread(fds[i], b, 4, off);
            if (r != 4)
                fail("pread", r, 4);
            if (memcmp(b, text + off, 4) != 0)
                fail("pread bytes", b[0], text[off]);
        }
        errno = 0;
        if (one_pread(-1, (char[4]){0}, 4, 0) != -1 || errno != EBADF)
            fail("pread on -1", errno, EBADF);
        if (one_pread(4000, (char[4]){0}, 4, 0) != -1 || errno != EBADF)
            fail("pread on a closed descriptor", errno, EBADF);
        /* Upper half ignored: (1 << 32) | fd is fd. */
        long r = raw_lseek((1L << 32) | fds[n - 1], round % 16, SEEK_SET);
        if (r != round % 16)
            fail("lseek with upper bits", r, round % 16);
    }
    printf("passthrough_fds: ok (%d descriptors)\n", n);
    return 0;
}
