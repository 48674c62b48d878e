/* Libsets in a dynamically linked musl program (tests/libsets.rs builds it
 * with musl-gcc): the program's own libraries are copied (here
 * libcounter.so, built with musl-gcc too), musl's C library is not (it is
 * the dynamic loader). Prints "all ok". */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "preempt.h"

int counter_next(void);
int counter_get(void);
int counter_constructed(void);


struct out {
    int counter, libset, constructed;
    volatile int stop;
    long spins;
};

static void fn(void *p) {
    struct out *o = p;
    o->libset = preempt_libset_current();
    o->constructed = counter_constructed();
    for (int i = 0; i < 5; i++)
        counter_next();
    o->counter = counter_get();
    preempt_pause();
    /* Preempted while it counts: the caller's counter never moves. */
    while (!o->stop) {
        counter_next();
        o->spins++;
    }
}

int main(void) {
    if (preempt_libsets_enable(NULL) != 0) {
        fprintf(stderr, "enable: %s\n", preempt_libsets_error());
        return 1;
    }
    struct preempt_libsets_info info;
    CHECK(preempt_libsets_info(&info) == 1 && info.libraries == 1);
    CHECK(counter_next() == 1);
    struct out a = {0}, b = {0};
    preempt_cont_t *c;
    CHECK(preempt_launch(fn, &a, PREEMPT_NO_TIMEOUT, &c) == PREEMPT_PAUSED);
    CHECK(a.libset == 1 && a.counter == 5 && a.constructed == 42);
    int r = preempt_resume(&c, 10);
    for (int slices = 0; r == PREEMPT_TIMEOUT; slices++) {
        CHECK(counter_get() == 1);
        if (slices == 1000)
            a.stop = 1;
        r = preempt_resume(&c, a.stop ? PREEMPT_NO_TIMEOUT : 10);
    }
    CHECK(r == PREEMPT_DONE && a.spins > 0);
    /* The same libset again: kept after a return, restored by cancel. */
    CHECK(preempt_launch(fn, &b, PREEMPT_NO_TIMEOUT, &c) == PREEMPT_PAUSED);
    CHECK(b.libset == 1 && b.counter == 5 + 5 + a.spins);
    CHECK(preempt_cancel(c) == 0);
    CHECK(preempt_launch(fn, &b, PREEMPT_NO_TIMEOUT, &c) == PREEMPT_PAUSED);
    CHECK(b.libset == 1 && b.counter == 5);
    CHECK(preempt_cancel(c) == 0);
    CHECK(counter_get() == 1);
    printf("musl: %ld counts preempted in the copy, caller's counter untouched\n", a.spins);
    printf("all ok\n");
    return 0;
}
