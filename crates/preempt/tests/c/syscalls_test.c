/* Preemptible functions that make system calls, with short budgets: each
 * slice's one-shot timer must fire, wherever its signal lands (in the
 * program, in a call, in the C library's or a library OS's code).
 *
 * Run natively by tests/c_api.rs and under picos by the picos crate's
 * tests/preempt.rs, where such a timer was once lost (its signal kept
 * pending by the runtime, never delivered): the function then ran for
 * ever. Here a function that runs one slice for more than WATCHDOG_S
 * seconds gives up and reports it, so the test fails instead of hanging.
 *
 * Output is the same on every run and system: one line per case. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "preempt.h"

#define SLICES 50000
#define BUDGET_US 10
#define WATCHDOG_S 10

static atomic_int stop, lost;
static atomic_long slice_start_ns;
static int fd_fn, fd_caller;

static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* The calls a function makes in a loop. */
enum work { WRITE, GETPPID, READ_ZERO, CLOCK };

static void fn(void *arg)
{
    enum work w = (enum work)(long)arg;
    char buf[64];
    memset(buf, 'x', sizeof buf);
    long n = 0;
    while (!atomic_load(&stop)) {
        switch (w) {
        case WRITE:
            if (write(fd_fn, buf, 8) != 8)
                abort();
            break;
        case GETPPID:
            (void)getppid();
            break;
        case READ_ZERO:
            if (pread(fd_fn, buf, sizeof buf, 0) < 0)
                abort();
            break;
        case CLOCK:
            (void)now_ns();
            break;
        }
        if (++n % 256 == 0 && now_ns() - atomic_load(&slice_start_ns) > WATCHDOG_S * 1000000000L) {
            atomic_store(&lost, 1);
            return;
        }
    }
}

static int run_case(const char *name, enum work w, const char *file, int flags)
{
    fd_fn = open(file, flags);
    fd_caller = open("/dev/null", O_WRONLY);
    CHECK(fd_fn >= 0 && fd_caller >= 0);
    atomic_store(&stop, 0);
    atomic_store(&lost, 0);
    preempt_cont_t *c = NULL;
    long slices = 0;
    atomic_store(&slice_start_ns, now_ns());
    int r = preempt_launch(fn, (void *)(long)w, BUDGET_US, &c);
    while (r == PREEMPT_TIMEOUT) {
        /* The caller makes calls between slices too. */
        CHECK(write(fd_caller, "me\n", 3) == 3);
        if (++slices == SLICES)
            atomic_store(&stop, 1);
        atomic_store(&slice_start_ns, now_ns());
        r = preempt_resume(&c, atomic_load(&stop) ? PREEMPT_NO_TIMEOUT : BUDGET_US);
    }
    CHECK(r == PREEMPT_DONE);
    close(fd_fn);
    close(fd_caller);
    if (atomic_load(&lost)) {
        printf("%s: a slice's timer was lost after %ld slices\n", name, slices);
        return 1;
    }
    printf("%s: %d slices ok\n", name, SLICES);
    return 0;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int bad = 0;
    bad += run_case("write", WRITE, "/dev/null", O_WRONLY);
    bad += run_case("getppid", GETPPID, "/dev/null", O_WRONLY);
    bad += run_case("pread", READ_ZERO, "/dev/zero", O_RDONLY);
    bad += run_case("clock_gettime", CLOCK, "/dev/null", O_WRONLY);
    if (bad)
        return 1;
    printf("syscalls_test: all ok\n");
    return 0;
}
