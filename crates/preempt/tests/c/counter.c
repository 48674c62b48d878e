/* A shared library with global state, for tests/c/libsets_test.c: each
 * libset has its own copy of these globals. */
#include <stdint.h>

int counter;
static char log_buf[4096];
static int log_len;
int initialised_by_constructor;

__attribute__((constructor)) static void counter_init(void) {
    initialised_by_constructor = 42;
}

/* Thread-local: each function has its own block of it (libsets), starting
 * from this image. */
__thread int counter_tls = 100;
int counter_tls_next(void) { return ++counter_tls; }

int counter_next(void) { return ++counter; }
int counter_get(void) { return counter; }
int counter_constructed(void) { return initialised_by_constructor; }

/* Appends to a static buffer without locks: non-reentrant on purpose. */
int counter_log(const char *s) {
    while (*s && log_len < (int)sizeof log_buf - 1)
        log_buf[log_len++] = *s++;
    return log_len;
}
const char *counter_log_text(void) { return log_buf; }

/* For benches/libsets.rs. */
#include <malloc.h>

/* n read-modify-writes of a global (volatile: each is a memory access). */
void counter_spin(long n) {
    volatile int *c = &counter;
    for (long i = 0; i < n; i++)
        *c += 1;
}

/* n calls of a shared function (malloc_usable_size(NULL) returns 0). */
long counter_shared(long n) {
    long s = 0;
    for (long i = 0; i < n; i++)
        s += malloc_usable_size(0);
    return s;
}

/* 256 functions, for the cost of a first call (lazy binding). */
#define L1(n) int lazy_##n(void) { return n; }
#define L4(n) L1(n##0) L1(n##1) L1(n##2) L1(n##3)
#define L16(n) L4(n##0) L4(n##1) L4(n##2) L4(n##3)
#define L64(n) L16(n##0) L16(n##1) L16(n##2) L16(n##3)
L64(0) L64(1) L64(2) L64(3)

/* Named shared by tests/c/libsets_test.c (an extra shared function): eight
 * arguments, two of them on the stack, and a count of its calls that
 * stays one for the process. */
static int sum8_calls;
long counter_sum8(long a, long b, long c, long d, long e, long f, long g, long h) {
    sum8_calls++;
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}
int counter_sum8_calls(void) { return sum8_calls; }
