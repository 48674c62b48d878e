/* Libset errors (tests/libsets.rs):
 *  - a library dlopen'ed with thread-locals (not in static TLS) cannot be
 *    copied: enable fails, says why, and changes nothing;
 *  - a library replaced on disk after it was loaded cannot be copied: the
 *    launch that needs a new libset fails with PREEMPT_ELIBSET and says
 *    why; once the file is back, launches work.
 *
 *   libsets_errors TLSLIB LIB OTHER
 *
 * TLSLIB: a copy of libcounter.so (it has a thread-local); LIB: a library
 * without, loaded here with dlopen (before enable, so it is copied);
 * OTHER: a different shared library, renamed over LIB for a moment.
 * Prints "all ok". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "preempt.h"


static void fn(void *p) { *(int *)p = preempt_libset_current(); }

int main(int argc, char **argv) {
    CHECK(argc == 4);
    void *h = dlopen(argv[1], RTLD_NOW);
    CHECK(h);
    CHECK(preempt_libsets_enable(NULL) == PREEMPT_ELIBSET);
    printf("enable: %s\n", preempt_libsets_error());
    CHECK(strstr(preempt_libsets_error(), "not in static TLS"));
    CHECK(preempt_libsets_info(NULL) == 0);
    CHECK(dlclose(h) == 0);
    argv++;
    char saved[4096];
    snprintf(saved, sizeof saved, "%s.saved", argv[1]);
    CHECK(dlopen(argv[1], RTLD_NOW));
    CHECK(preempt_libsets_enable(NULL) == 0);
    /* Replace the file: the loaded library stays, its path names another. */
    CHECK(rename(argv[1], saved) == 0);
    CHECK(rename(argv[2], argv[1]) == 0);
    int k = -1;
    preempt_cont_t *c;
    int r = preempt_launch(fn, &k, PREEMPT_NO_TIMEOUT, &c);
    printf("launch: %s: %s\n", preempt_strerror(r), preempt_libsets_error());
    CHECK(r == PREEMPT_ELIBSET && k == -1 && c == NULL);
    CHECK(strstr(preempt_libsets_error(), "differs from the library loaded"));
    struct preempt_libsets_info info;
    CHECK(preempt_libsets_info(&info) == 1 && info.created == 0 && info.in_use == 0);
    /* Put it back: the next launch makes the libset. */
    CHECK(rename(saved, argv[1]) == 0);
    CHECK(preempt_launch(fn, &k, PREEMPT_NO_TIMEOUT, &c) == PREEMPT_DONE);
    CHECK(k == 1);
    CHECK(preempt_libsets_info(&info) == 1 && info.created == 1 && info.in_use == 0);
    printf("all ok\n");
    return 0;
}
