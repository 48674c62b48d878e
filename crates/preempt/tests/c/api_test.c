/* The C API, exercised from C (compiled and run by tests/c_api.rs). */
#include "preempt.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                     \
        }                                                                   \
    } while (0)

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void spin(void *arg) {
    volatile unsigned long *n = arg;
    for (;;)
        (*n)++;
}

static void add(void *arg) {
    int *v = arg;
    v[2] = v[0] + v[1];
}

static void pauser(void *arg) {
    int *steps = arg;
    for (int i = 0; i < 3; i++) {
        (*steps)++;
        CHECK(preempt_pause() == 0);
    }
    (*steps)++;
}

static void nested(void *arg) {
    preempt_cont_t *c;
    *(int *)arg = preempt_launch(add, NULL, 10, &c);
    CHECK(preempt_in_function() == 1);
}

/* Allocates and frees in a loop with the hooks, checking contents. */
struct churn {
    volatile int stop;
    unsigned long rounds;
};

static void churn(void *arg) {
    struct churn *ch = arg;
    unsigned char *keep[32] = {0};
    while (!ch->stop) {
        unsigned long r = ch->rounds++;
        size_t len = 1 + r % 200;
        int slot = r % 32;
        if (keep[slot]) {
            size_t old = 1 + (r - 32) % 200;
            for (size_t i = 0; i < old; i++)
                if (keep[slot][i] != (unsigned char)(r - 32 + i)) {
                    fprintf(stderr, "FAIL: block corrupted\n");
                    abort();
                }
            preempt_free(keep[slot]);
        }
        keep[slot] = preempt_malloc(len);
        for (size_t i = 0; i < len; i++)
            keep[slot][i] = (unsigned char)(r + i);
        /* stdio is not reentrant: bracket it. */
        if (r % 5000 == 0) {
            char buf[64];
            PREEMPT_NONPREEMPTIBLE_BEGIN
            snprintf(buf, sizeof buf, "%lu", r);
            void *p = malloc(100);
            free(p);
            PREEMPT_NONPREEMPTIBLE_END
        }
    }
    for (int i = 0; i < 32; i++)
        preempt_free(keep[i]);
}

/* Leaves blocks behind for cancel to free. */
static void hoarder(void *arg) {
    (void)arg;
    for (int i = 0; i < 50; i++)
        memset(preempt_malloc(64), i, 64);
    void *big = preempt_calloc(10, 1000);
    big = preempt_realloc(big, 20000);
    (void)big;
    for (;;)
        preempt_pause();
}

int main(void) {
    /* A result. */
    int v[3] = {40, 2, 0};
    preempt_cont_t *c = (preempt_cont_t *)1;
    CHECK(preempt_launch(add, v, 1000, &c) == PREEMPT_DONE);
    CHECK(c == NULL);
    CHECK(v[2] == 42);
    printf("ok result\n");

    /* An infinite loop: preempted, resumed, cancelled. */
    volatile unsigned long n = 0;
    double t0 = now_us();
    CHECK(preempt_launch(spin, (void *)&n, 2000, &c) == PREEMPT_TIMEOUT);
    double took = now_us() - t0;
    CHECK(c != NULL);
    CHECK(took >= 2000 && took < 500000); /* generous: the machine is shared */
    unsigned long before = n;
    for (int i = 0; i < 5; i++)
        CHECK(preempt_resume(&c, 500) == PREEMPT_TIMEOUT);
    CHECK(n > before);
    t0 = now_us();
    CHECK(preempt_cancel(c) == 0);
    CHECK(now_us() - t0 < 50000);
    printf("ok loop %.0f us\n", took);

    /* pause. */
    int steps = 0;
    CHECK(preempt_launch(pauser, &steps, PREEMPT_NO_TIMEOUT, &c) == PREEMPT_PAUSED);
    CHECK(steps == 1);
    CHECK(preempt_resume(&c, PREEMPT_NO_TIMEOUT) == PREEMPT_PAUSED);
    CHECK(preempt_resume(&c, PREEMPT_NO_TIMEOUT) == PREEMPT_PAUSED);
    CHECK(preempt_resume(&c, PREEMPT_NO_TIMEOUT) == PREEMPT_DONE);
    CHECK(c == NULL && steps == 4);
    CHECK(preempt_resume(&c, 10) == PREEMPT_EINVAL);
    printf("ok pause\n");

    /* Misuse. */
    CHECK(preempt_pause() == PREEMPT_ENOTINFN);
    CHECK(preempt_in_function() == 0);
    int inner = 0;
    CHECK(preempt_launch(nested, &inner, 1000000, &c) == PREEMPT_DONE);
    CHECK(inner == PREEMPT_ENESTED);
    CHECK(preempt_launch(NULL, NULL, 10, &c) == PREEMPT_EINVAL);
    CHECK(strcmp(preempt_strerror(PREEMPT_TIMEOUT), "timed out") == 0);
    printf("ok errors\n");

    /* Allocation-heavy function preempted many times while main allocates. */
    struct churn ch = {0, 0};
    struct preempt_stats s0, s1;
    preempt_stats(&s0);
    int r = preempt_launch(churn, &ch, 20, &c);
    int preemptions = 0;
    while (r == PREEMPT_TIMEOUT && preemptions < 20000) {
        preemptions++;
        void *p = preempt_malloc(1 + preemptions % 300);
        void *q = malloc(1 + preemptions % 300);
        free(q);
        preempt_free(p);
        r = preempt_resume(&c, 20);
    }
    CHECK(r == PREEMPT_TIMEOUT);
    ch.stop = 1;
    CHECK(preempt_resume(&c, PREEMPT_NO_TIMEOUT) == PREEMPT_DONE);
    preempt_stats(&s1);
    CHECK(s1.deferred > s0.deferred);
    printf("ok churn %d preemptions, %lu rounds, %lu deferred\n", preemptions, ch.rounds,
           (unsigned long)(s1.deferred - s0.deferred));

    /* Cancel frees what the function allocated. */
    preempt_stats(&s0);
    CHECK(preempt_launch(hoarder, NULL, PREEMPT_NO_TIMEOUT, &c) == PREEMPT_PAUSED);
    CHECK(preempt_cancel(c) == 0);
    preempt_stats(&s1);
    CHECK(s1.freed_on_cancel - s0.freed_on_cancel == 51);
    CHECK(s1.cancels - s0.cancels == 1);
    printf("ok cancel freed %lu blocks\n", (unsigned long)(s1.freed_on_cancel - s0.freed_on_cancel));

    CHECK(preempt_signal() == SIGRTMAX - 1);

    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("all ok\n");
    return 0;
}
