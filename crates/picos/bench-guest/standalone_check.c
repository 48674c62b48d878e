/*
 * A standalone cross-check of `picos bench`'s native column: the same
 * operations as the guest's `null` and `pread_256` rows, timed by a plain
 * loop in one process, with none of the harness's machinery. Their means
 * should agree with `picos bench`'s native figures within a few per cent.
 *
 *   cc -O2 -o /tmp/standalone_check crates/picos/bench-guest/standalone_check.c
 *   taskset -c 1 /tmp/standalone_check [ITERS [REPS [DIR]]]
 *   picos bench --pin 1 --rows null,pread_256
 *
 * Prints, per operation, the mean ns per call over REPS loops of ITERS
 * calls (after one warm-up loop) with a 95% CI (Student's t, df = REPS-1).
 * The pread file (16 KiB, as the guest's) is made in DIR: by default
 * /dev/shm, where `picos bench` puts its files when it is a tmpfs.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int fd;
static char buf[256];

static void op_getppid(void) { getppid(); }
static void op_pread(void)
{
    if (pread(fd, buf, 256, 0) != 256)
        abort();
}

static void report(const char *name, void (*op)(void), long iters, int reps)
{
    double *x = malloc(sizeof *x * (size_t)reps), mean = 0, var = 0;
    for (long i = 0; i < iters; i++)
        op();
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        for (long i = 0; i < iters; i++)
            op();
        x[r] = (now_ns() - t0) / (double)iters;
        mean += x[r];
    }
    mean /= reps;
    for (int r = 0; r < reps; r++)
        var += (x[r] - mean) * (x[r] - mean);
    var /= reps - 1;
    /* t(0.975, 29) = 2.045; for other REPS this is an approximation. */
    double t = reps == 30 ? 2.045 : 1.96;
    printf("%-10s %8.2f ± %.2f ns per call (%d loops of %ld)\n", name, mean, t * sqrt(var / reps), reps, iters);
    free(x);
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 30;
    char path[4096];
    snprintf(path, sizeof path, "%s/standalone_check.XXXXXX", argc > 3 ? argv[3] : "/dev/shm");
    fd = mkstemp(path);
    if (fd < 0)
        return 1;
    unlink(path);
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < 64; i++)
        if (write(fd, buf, 256) != 256)
            return 1;
    report("getppid", op_getppid, iters, reps);
    report("pread 256", op_pread, iters, reps);
    return 0;
}
