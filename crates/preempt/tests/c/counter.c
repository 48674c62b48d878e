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
