/* A C program using preemptible functions.
 *
 * Build (after `cargo build --release -p preempt`, from the workspace root):
 *   musl-gcc -O2 -static -Icrates/preempt/include crates/preempt/examples/c/example.c \
 *       target/x86_64-unknown-linux-musl/release/libpreempt.a \
 *       $(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-musl/lib/self-contained/libunwind.a \
 *       -o /tmp/preempt-example
 */
#include "preempt.h"

#include <stdio.h>
#include <string.h>

/* A long computation: counts primes below a limit. */
struct primes {
    unsigned limit;
    unsigned count;
};

static void count_primes(void *arg) {
    struct primes *p = arg;
    /* The sieve comes from the hooks: freed by preempt_cancel if we are
     * cancelled, and never preempted half-way through the allocator. */
    unsigned char *composite = preempt_calloc(p->limit, 1);
    for (unsigned i = 2; i < p->limit; i++) {
        if (composite[i])
            continue;
        p->count++;
        for (unsigned long j = (unsigned long)i * i; j < p->limit; j += i)
            composite[j] = 1;
    }
    preempt_free(composite);
}

/* A generator: yields the Fibonacci numbers one by one with preempt_pause. */
struct fib {
    unsigned long value;
};

static void fibonacci(void *arg) {
    struct fib *f = arg;
    unsigned long a = 0, b = 1;
    for (;;) {
        f->value = a;
        preempt_pause();
        unsigned long t = a + b;
        a = b;
        b = t;
    }
}

int main(void) {
    /* Run the sieve in 1 ms slices; the caller could do other work between. */
    struct primes p = {20000000, 0};
    preempt_cont_t *c;
    int slices = 1;
    int r = preempt_launch(count_primes, &p, 1000, &c);
    while (r == PREEMPT_TIMEOUT) {
        slices++;
        r = preempt_resume(&c, 1000);
    }
    if (r != PREEMPT_DONE) {
        fprintf(stderr, "sieve: %s\n", preempt_strerror(r));
        return 1;
    }
    printf("%u primes below %u, computed in %d slices of 1 ms\n", p.count, p.limit, slices);

    /* Take ten values from the generator, then cancel it. */
    struct fib f;
    r = preempt_launch(fibonacci, &f, PREEMPT_NO_TIMEOUT, &c);
    printf("fibonacci:");
    for (int i = 0; i < 10 && r == PREEMPT_PAUSED; i++) {
        printf(" %lu", f.value);
        r = preempt_resume(&c, PREEMPT_NO_TIMEOUT);
    }
    printf("\n");
    preempt_cancel(c);

    /* A runaway function gets 5 ms in all, then is cancelled. */
    struct primes runaway = {400000000u, 0};
    r = preempt_launch(count_primes, &runaway, 5000, &c);
    if (r == PREEMPT_TIMEOUT) {
        struct preempt_stats s;
        preempt_cancel(c);
        preempt_stats(&s);
        printf("runaway cancelled after 5 ms (%lu block freed by cancel)\n",
               (unsigned long)s.freed_on_cancel);
    }
    return 0;
}
