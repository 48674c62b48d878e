/* The libset rows of benches/libsets.rs: `libsets_bench off` measures
 * without libsets, `libsets_bench on` with them; the harness alternates the
 * two and compares. Each line printed is "row value" (ns, or bytes).
 * Linked with libcounter.so (tests/c/counter.c). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preempt.h"

int counter_get(void);
void counter_spin(long n);
long counter_shared(long n);
int counter_log(const char *s);

#define L1(n) int lazy_##n(void);
#define L4(n) L1(n##0) L1(n##1) L1(n##2) L1(n##3)
#define L16(n) L4(n##0) L4(n##1) L4(n##2) L4(n##3)
#define L64(n) L16(n##0) L16(n##1) L16(n##2) L16(n##3)
L64(0) L64(1) L64(2) L64(3)
#undef L1
#define L1(n) s += lazy_##n();
static int call_all_lazy(void) {
    int s = 0;
    L64(0) L64(1) L64(2) L64(3)
    return s;
}
#define NLAZY 256

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

#define CALLS 2000000L
static volatile long sink;

static double calls(void) {
    double t0 = now_ns();
    long s = 0;
    for (long i = 0; i < CALLS; i++)
        s += counter_get();
    sink = s;
    return (now_ns() - t0) / CALLS;
}

struct job {
    double call, global, shared;
};

static void in_fn(void *p) {
    struct job *j = p;
    j->call = calls();
    double t0 = now_ns();
    counter_spin(CALLS);
    j->global = (now_ns() - t0) / CALLS;
    t0 = now_ns();
    sink = counter_shared(CALLS);
    j->shared = (now_ns() - t0) / CALLS;
}

static void nothing(void *p) { (void)p; }

static void nonreentrant(void *p) {
    (void)p;
    char buf[] = "a b c d e f";
    strtok(buf, " ");
    strtok(NULL, " ");
    sink = rand();
    counter_log("y");
    preempt_pause();
}

static void check(int r, int want, const char *what) {
    if (r != want) {
        fprintf(stderr, "%s: %s\n", what, preempt_strerror(r));
        exit(1);
    }
}

int main(int argc, char **argv) {
    int on = argc > 1 && strcmp(argv[1], "on") == 0;
    /* First calls of 256 functions: lazy binding without libsets; with
     * them, entries bound when they were enabled. */
    double t0 = now_ns(), create = 0;
    if (on) {
        if (preempt_libsets_enable(NULL) != 0) {
            fprintf(stderr, "enable: %s\n", preempt_libsets_error());
            return 1;
        }
        printf("enable %.0f\n", now_ns() - t0);
    }
    t0 = now_ns();
    sink = call_all_lazy();
    printf("first_call %.1f\n", (now_ns() - t0) / NLAZY);
    t0 = now_ns();
    sink = call_all_lazy();
    printf("second_call %.1f\n", (now_ns() - t0) / NLAZY);

    /* Libsets made: 16 functions alive at once, each a new libset. */
    preempt_cont_t *held[16];
    t0 = now_ns();
    for (int i = 0; i < 16; i++)
        check(preempt_launch(nonreentrant, NULL, PREEMPT_NO_TIMEOUT, &held[i]),
              PREEMPT_PAUSED, "launch");
    create = (now_ns() - t0) / 16;
    for (int i = 0; i < 16; i++)
        check(preempt_resume(&held[i], PREEMPT_NO_TIMEOUT), PREEMPT_DONE, "resume");
    printf("launch_new_libset %.0f\n", create);

    calls(); /* warm */
    printf("call_caller %.2f\n", calls());
    struct job j;
    preempt_cont_t *c;
    check(preempt_launch(in_fn, &j, PREEMPT_NO_TIMEOUT, &c), PREEMPT_DONE, "launch");
    check(preempt_launch(in_fn, &j, PREEMPT_NO_TIMEOUT, &c), PREEMPT_DONE, "launch");
    printf("call_in_fn %.2f\n", j.call);
    printf("global_in_fn %.2f\n", j.global);
    printf("shared_in_fn %.2f\n", j.shared);

    /* launch + return, with the timer armed. */
    const int N = 20000;
    t0 = now_ns();
    for (int i = 0; i < N; i++) {
        /* A busy machine may hold the thread past the budget: finish it. */
        int r = preempt_launch(nothing, NULL, 1000, &c);
        while (r == PREEMPT_TIMEOUT)
            r = preempt_resume(&c, PREEMPT_NO_TIMEOUT);
        check(r, PREEMPT_DONE, "launch");
    }
    printf("launch %.0f\n", (now_ns() - t0) / N);

    /* cancel of a function paused after non-reentrant code. */
    double tc = 0;
    const int M = 2000;
    for (int i = 0; i < M; i++) {
        check(preempt_launch(nonreentrant, NULL, PREEMPT_NO_TIMEOUT, &c),
              PREEMPT_PAUSED, "launch");
        t0 = now_ns();
        preempt_cancel(c);
        tc += now_ns() - t0;
    }
    printf("cancel_nonreentrant %.0f\n", tc / M);
    struct preempt_libsets_info info;
    if (preempt_libsets_info(&info))
        printf("bytes_per_libset %lu\nlibraries %lu\n",
               (unsigned long)info.bytes_per_libset,
               (unsigned long)info.libraries);
    return 0;
}
