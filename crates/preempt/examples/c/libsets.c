/* Libsets from C: a report generator that uses stdio and strtok (both keep
 * global state in the C library) runs as a preemptible function with a
 * 200 µs budget, while the caller keeps using strtok and printf itself
 * between slices; a second run is cancelled half-way, and its libset comes
 * back clean.
 *
 * Libsets need a dynamically linked glibc program. With the C library
 * installed by cargo-c (docs/PREEMPT.md, "Building"):
 *   gcc -O2 crates/preempt/examples/c/libsets.c $(pkg-config --cflags --libs preempt) \
 *       -o /tmp/libsets-example
 */
#include "preempt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct report {
    const char *csv; /* "name,score;name,score;..." */
    char out[256];   /* filled by the function */
    int rows;
};

/* Splits the records with strtok and formats them with snprintf: both
 * non-reentrant (strtok's position is a C library global), and preempted
 * wherever the budget runs out. */
static void make_report(void *arg) {
    struct report *r = arg;
    char *copy = strdup(r->csv); /* malloc: a shared function */
    size_t len = 0;
    for (char *rec = strtok(copy, ";"); rec; rec = strtok(NULL, ";")) {
        char name[32];
        int score;
        if (sscanf(rec, "%31[^,],%d", name, &score) != 2)
            continue;
        /* Busy work, so that the budget runs out in the middle. */
        volatile unsigned long spin = 0;
        for (unsigned long i = 0; i < 3000000; i++)
            spin += i;
        len += snprintf(r->out + len, sizeof r->out - len, "%s:%d ", name, score);
        r->rows++;
    }
    free(copy);
}

/* The caller's own use of strtok, between slices. */
static int count_words(const char *s) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " "))
        n++;
    return n;
}

int main(void) {
    if (preempt_libsets_enable(NULL) != 0) {
        fprintf(stderr, "libsets: %s\n", preempt_libsets_error());
        return 1;
    }
    struct preempt_libsets_info info;
    preempt_libsets_info(&info);
    printf("libsets on: %lu libraries copied per function\n", (unsigned long)info.libraries);

    struct report r = {"ada,90;brian,75;carla,82;dmitri,67;eve,99", "", 0};
    preempt_cont_t *c;
    int slices = 1, words = 0;
    int rc = preempt_launch(make_report, &r, 200, &c);
    while (rc == PREEMPT_TIMEOUT) {
        words += count_words("the caller keeps using strtok meanwhile");
        rc = preempt_resume(&c, 200);
        slices++;
    }
    if (rc != PREEMPT_DONE) {
        fprintf(stderr, "report: %s\n", preempt_strerror(rc));
        return 1;
    }
    printf("report in %d slices: %s(%d rows); the caller counted %d words\n", slices, r.out,
           r.rows, words);

    /* Cancel one half-way: its libset's globals (strtok's position among
     * them) are put back as they were after loading. */
    struct report r2 = {"x,1;y,2;z,3", "", 0};
    rc = preempt_launch(make_report, &r2, 100, &c);
    if (rc == PREEMPT_TIMEOUT) {
        preempt_cancel(c);
        printf("second report cancelled after %d rows\n", r2.rows);
    }
    return r.rows == 5 ? 0 : 1;
}
