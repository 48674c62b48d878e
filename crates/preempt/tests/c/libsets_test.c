/* Libsets under test (tests/libsets.rs builds and runs this with glibc):
 *
 *   libsets_test          all the checks below; prints "all ok"
 *   libsets_test control  the strtok check without libsets: exits 3 when it
 *                         sees the corruption libsets prevent (so the check
 *                         can fail)
 *
 * Linked with libcounter.so (tests/c/counter.c), a library with globals. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "preempt.h"

int counter_next(void);
int counter_get(void);
int counter_constructed(void);
int counter_log(const char *s);
int counter_tls_next(void);
long counter_sum8(long, long, long, long, long, long, long, long);
int counter_sum8_calls(void);


/* Preemptions so far (also those taken as a slice began: a budget shorter
 * than arming the timer takes, e.g. under picos, where every slice may
 * expire before the function runs). */
static uint64_t timeouts(void) {
    struct preempt_stats s;
    preempt_stats(&s);
    return s.timeouts + s.deferred + s.expired_early;
}

/* ---- strtok, preempted while the caller uses it too ------------------- */

static const char *WORDS[] = {"alpha", "beta", "gamma", "delta",
                              "epsilon", "zeta", "eta", "theta"};

struct tok {
    volatile int stop;
    int bad;
    long rounds;
};

static void tok_fn(void *p) {
    struct tok *a = p;
    while (!a->stop) {
        char buf[] = "alpha,beta,gamma,delta,epsilon,zeta,eta,theta";
        int n = 0;
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
            if (n >= 8 || strcmp(t, WORDS[n]) != 0) {
                a->bad++;
                return;
            }
            n++;
        }
        if (n != 8) {
            a->bad++;
            return;
        }
        a->rounds++;
    }
}

/* The caller's own tokenizing, between slices. */
static int caller_tokens(void) {
    char buf[] = "1 2 3 4 5";
    int n = 0;
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) {
        if (t[0] != '1' + n || t[1])
            return -1;
        n++;
    }
    return n == 5 ? 0 : -1;
}

/* The same with strtok_r: for callers on several threads, which share the
 * original strtok's state (it is not thread-safe, libsets or not). */
static int caller_tokens_r(void) {
    char buf[] = "1 2 3 4 5", *save;
    int n = 0;
    for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        if (t[0] != '1' + n || t[1])
            return -1;
        n++;
    }
    return n == 5 ? 0 : -1;
}

/* Runs tok_fn under 10 µs budgets until `want` preemptions; returns the
 * function's corruption count (the caller's own is fatal). */
static int strtok_run(uint64_t want, int *caller_bad) {
    struct tok a = {0};
    preempt_cont_t *c;
    uint64_t t0 = timeouts();
    int r = preempt_launch(tok_fn, &a, 10, &c);
    while (r == PREEMPT_TIMEOUT) {
        if (caller_tokens() != 0)
            (*caller_bad)++;
        if (timeouts() - t0 >= want || a.bad)
            a.stop = 1;
        /* Once told to stop, it gets the time to see it. */
        r = preempt_resume(&c, a.stop ? PREEMPT_NO_TIMEOUT : 10);
    }
    CHECK(r == PREEMPT_DONE);
    printf("strtok: %lu preemptions, %ld rounds, %d corrupted\n",
           (unsigned long)(timeouts() - t0), a.rounds, a.bad);
    return a.bad;
}

/* ---- printf to a FILE, preempted while the caller prints to its own --- */

struct pr {
    volatile int stop;
    int fd; /* the function's file, already unlinked */
    long lines;
};

/* The most lines the function writes (~40 bytes each) before it gives up,
 * about ten times what 100,000 preemptions take natively: if preemption
 * broke, the test fails instead of filling the disk until it is killed. */
#define MAX_LINES 20000000L

static void print_fn(void *p) {
    struct pr *a = p;
    FILE *f = fdopen(dup(a->fd), "w");
    if (!f)
        return;
    while (!a->stop && a->lines < MAX_LINES) {
        fprintf(f, "fn %ld %s %d %.3f\n", a->lines, "abcdefghijklmnop", 12345,
                3.25);
        a->lines++;
    }
    fclose(f);
}

static long check_lines(int fd, const char *tag) {
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    FILE *f = fdopen(dup(fd), "r");
    CHECK(f);
    char line[256], want[256];
    long n = 0;
    while (fgets(line, sizeof line, f)) {
        snprintf(want, sizeof want, "%s %ld %s %d %.3f\n", tag, n,
                 "abcdefghijklmnop", 12345, 3.25);
        if (strcmp(line, want) != 0) {
            fprintf(stderr, "%s line %ld: %s", tag, n, line);
            CHECK(0);
        }
        n++;
    }
    fclose(f);
    return n;
}

/* A file of our own in /tmp, unlinked at once: nothing is left behind
 * however the test ends. */
static int scratch_file(void) {
    char path[] = "/tmp/preempt-libsets-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(unlink(path) == 0);
    return fd;
}

static void printf_run(uint64_t want) {
    int fd1 = scratch_file(), fd2 = scratch_file();
    FILE *mine = fdopen(dup(fd2), "w");
    CHECK(mine);
    struct pr a = {0, fd1, 0};
    long me = 0;
    preempt_cont_t *c;
    uint64_t t0 = timeouts();
    int r = preempt_launch(print_fn, &a, 10, &c);
    while (r == PREEMPT_TIMEOUT) {
        fprintf(mine, "me %ld %s %d %.3f\n", me++, "abcdefghijklmnop", 12345,
                3.25);
        if (timeouts() - t0 >= want)
            a.stop = 1;
        r = preempt_resume(&c, a.stop ? PREEMPT_NO_TIMEOUT : 10);
    }
    CHECK(r == PREEMPT_DONE);
    if (a.lines >= MAX_LINES) {
        fprintf(stderr, "printf: the function wrote %ld lines and was preempted "
                        "only %lu times\n",
                a.lines, (unsigned long)(timeouts() - t0));
        CHECK(0);
    }
    fclose(mine);
    long n1 = check_lines(fd1, "fn"), n2 = check_lines(fd2, "me");
    CHECK(n1 == a.lines && n2 == me);
    printf("printf: %lu preemptions, %ld + %ld lines intact\n",
           (unsigned long)(timeouts() - t0), n1, n2);
    close(fd1);
    close(fd2);
}

/* ---- a library's globals: separate per libset, restored by cancel ----- */

struct cnt {
    int n;
    int seen;
    int constructed;
    int libset;
    int tls_first, tls_after;
};

static void count_fn(void *p) {
    struct cnt *a = p;
    a->libset = preempt_libset_current();
    a->constructed = counter_constructed();
    a->tls_first = counter_tls_next();
    for (int i = 0; i < a->n; i++)
        counter_next();
    counter_log("x");
    a->seen = counter_get();
    preempt_pause();
    counter_next();
    a->seen = counter_get();
    a->tls_after = counter_tls_next();
}

static void globals_run(void) {
    CHECK(counter_next() == 1); /* the caller's copy */
    CHECK(counter_tls_next() == 101); /* the caller's thread-local */
    struct cnt a = {5}, b = {3};
    preempt_cont_t *ca, *cb;
    CHECK(preempt_launch(count_fn, &a, PREEMPT_NO_TIMEOUT, &ca) == PREEMPT_PAUSED);
    CHECK(preempt_launch(count_fn, &b, PREEMPT_NO_TIMEOUT, &cb) == PREEMPT_PAUSED);
    CHECK(a.libset >= 1 && b.libset >= 1 && a.libset != b.libset);
    CHECK(a.constructed == 42 && b.constructed == 42);
    CHECK(a.seen == 5 && b.seen == 3);
    CHECK(counter_get() == 1);
    /* Thread-locals of a copied library: each function its own, from the
     * image. */
    CHECK(a.tls_first == 101 && b.tls_first == 101);
    CHECK(counter_tls_next() == 102);
    CHECK(preempt_resume(&ca, PREEMPT_NO_TIMEOUT) == PREEMPT_DONE);
    CHECK(a.seen == 6 && a.tls_after == 102);
    CHECK(counter_get() == 1 && counter_tls_next() == 103);
    /* Cancel b: its libset's globals go back to their state at load. */
    CHECK(preempt_cancel(cb) == 0);
    struct cnt d = {0};
    preempt_cont_t *cd;
    CHECK(preempt_launch(count_fn, &d, PREEMPT_NO_TIMEOUT, &cd) == PREEMPT_PAUSED);
    CHECK(d.libset == b.libset); /* the pool gives back the last released */
    CHECK(d.seen == 0 && d.constructed == 42);
    CHECK(preempt_resume(&cd, PREEMPT_NO_TIMEOUT) == PREEMPT_DONE);
    CHECK(d.seen == 1);
    /* A function that returned leaves its libset as it was. */
    struct cnt e = {0};
    CHECK(preempt_launch(count_fn, &e, PREEMPT_NO_TIMEOUT, &cd) == PREEMPT_PAUSED);
    CHECK(e.libset == d.libset && e.seen == 1);
    CHECK(preempt_cancel(cd) == 0);
    CHECK(counter_get() == 1);
    printf("globals: separate per libset, restored by cancel; thread-locals per function\n");
}

/* ---- a shared function the program named ----------------------------- */

static void sum8_fn(void *p) {
    long *out = p;
    for (int i = 0; i < 1000; i++)
        out[0] += counter_sum8(1, 2, 3, 4, 5, 6, 7, 8 + i);
    out[1] = counter_sum8_calls();
}

static void shared_extra_run(void) {
    int before = counter_sum8_calls();
    long out[2] = {0, 0};
    preempt_cont_t *c;
    int r = preempt_launch(sum8_fn, out, 5, &c);
    while (r == PREEMPT_TIMEOUT)
        r = preempt_resume(&c, 5);
    CHECK(r == PREEMPT_DONE);
    /* Every argument arrived (8 * i from the eighth, on the stack), and the
     * calls ran in the original: the caller's count moved, the function's
     * copy's did not. */
    CHECK(out[0] == 1000 * 204 + 8 * (999 * 1000 / 2));
    CHECK(out[1] == 0 && counter_sum8_calls() == before + 1000);
    printf("shared: an extra shared function with stack arguments, run in the original\n");
}

/* ---- what cancel does not restore ------------------------------------ */

struct file_job {
    char path[64];
    int fd;
    void *block;
};

static void file_fn(void *p) {
    struct file_job *a = p;
    FILE *f = fopen(a->path, "w"); /* the libset's stdio: its own FILE */
    a->fd = fileno(f);
    fprintf(f, "buffered, never written\n");
    a->block = malloc(64); /* the shared heap */
    memset(a->block, 7, 64);
    preempt_pause();
}

static pthread_t started;

static void *late(void *p) {
    usleep(20000);
    *(volatile int *)p = 1;
    return NULL;
}

static void thread_fn(void *p) {
    CHECK(pthread_create(&started, NULL, late, p) == 0);
    preempt_pause();
}

static void cancel_limits_run(void) {
    struct file_job a;
    snprintf(a.path, sizeof a.path, "/tmp/preempt-libsets-%d", (int)getpid());
    preempt_cont_t *c;
    CHECK(preempt_launch(file_fn, &a, PREEMPT_NO_TIMEOUT, &c) == PREEMPT_PAUSED);
    CHECK(preempt_cancel(c) == 0);
    /* Its libset's stdio is back to its state at load, so the stream is
     * forgotten: what it buffered is lost, its descriptor stays open, and
     * its block from the shared heap stays allocated. */
    FILE *f = fopen(a.path, "r");
    CHECK(f && fgetc(f) == EOF);
    fclose(f);
    CHECK(fcntl(a.fd, F_GETFD) >= 0);
    CHECK(((unsigned char *)a.block)[63] == 7);
    close(a.fd);
    free(a.block);
    unlink(a.path);
    /* A thread the function started runs on after the cancel. */
    static volatile int ran;
    CHECK(preempt_launch(thread_fn, (void *)&ran, PREEMPT_NO_TIMEOUT, &c) == PREEMPT_PAUSED);
    CHECK(preempt_cancel(c) == 0);
    CHECK(pthread_join(started, NULL) == 0 && ran == 1);
    printf("cancel: stream forgotten (buffer lost, descriptor open), heap block kept, "
           "thread runs on\n");
}

/* ---- a libset's stdout: flushed when its function returns, and at exit */

static void say(void *p) {
    printf("%s\n", (const char *)p); /* the libset's own stdout */
    if (strstr(p, "suspended"))
        preempt_pause();
}

/* ---- 64 functions alive at once, each in the middle of strtok ---------- */

#define ALIVE 64

struct mid {
    int id;
    int bad;
    int done;
};

static void mid_fn(void *p) {
    struct mid *a = p;
    char buf[64];
    snprintf(buf, sizeof buf, "%d:a:%d:b:%d:c", a->id, a->id, a->id);
    char want[64];
    int n = 0;
    for (char *t = strtok(buf, ":"); t; t = strtok(NULL, ":")) {
        if (n % 2 == 0)
            snprintf(want, sizeof want, "%d", a->id);
        else
            snprintf(want, sizeof want, "%c", "abc"[n / 2]);
        if (strcmp(t, want) != 0)
            a->bad++;
        n++;
        preempt_pause(); /* in the middle of the strtok sequence */
    }
    if (n != 6)
        a->bad++;
    a->done = 1;
}

static void alive_run(void) {
    struct mid m[ALIVE];
    preempt_cont_t *c[ALIVE];
    struct preempt_libsets_info before;
    CHECK(preempt_libsets_info(&before) == 1);
    for (int i = 0; i < ALIVE; i++) {
        m[i] = (struct mid){i, 0, 0};
        CHECK(preempt_launch(mid_fn, &m[i], PREEMPT_NO_TIMEOUT, &c[i]) == PREEMPT_PAUSED);
    }
    struct preempt_libsets_info info;
    CHECK(preempt_libsets_info(&info) == 1);
    CHECK(info.in_use == before.in_use + ALIVE && info.created >= ALIVE);
    int live = ALIVE;
    while (live) {
        for (int i = 0; i < ALIVE; i++) {
            if (!c[i])
                continue;
            int r = preempt_resume(&c[i], PREEMPT_NO_TIMEOUT);
            CHECK(r == PREEMPT_PAUSED || r == PREEMPT_DONE);
            if (r == PREEMPT_DONE)
                live--;
        }
    }
    for (int i = 0; i < ALIVE; i++)
        CHECK(m[i].done && m[i].bad == 0);
    printf("alive: %d functions in the middle of strtok at once, %lu libsets, "
           "%lu KiB each\n",
           ALIVE, (unsigned long)info.created,
           (unsigned long)(info.bytes_per_libset / 1024));
}

/* ---- launches from 8 threads at once ---------------------------------- */
/* Each thread's functions use strtok, each in its own libset; the threads'
 * own code uses strtok_r (the original strtok's state is one for the whole
 * process). */

static void *thread_main(void *p) {
    long *bad = p;
    for (int i = 0; i < 200; i++) {
        struct tok a = {0};
        preempt_cont_t *c;
        int r = preempt_launch(tok_fn, &a, 20, &c);
        int rounds = 0;
        while (r == PREEMPT_TIMEOUT) {
            if (caller_tokens_r() != 0) {
                fprintf(stderr, "thread: the caller's strtok_r was corrupted\n");
                (*bad)++;
            }
            if (++rounds >= 5)
                a.stop = 1;
            r = preempt_resume(&c, a.stop ? PREEMPT_NO_TIMEOUT : 20);
        }
        if (r != PREEMPT_DONE || a.bad) {
            fprintf(stderr, "thread: launch %d: %s, function corrupted %d times\n", i,
                    preempt_strerror(r), a.bad);
            (*bad)++;
        }
    }
    return NULL;
}

static void threads_run(void) {
    pthread_t t[8];
    long bad[8] = {0};
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&t[i], NULL, thread_main, &bad[i]) == 0);
    for (int i = 0; i < 8; i++) {
        CHECK(pthread_join(t[i], NULL) == 0);
        CHECK(bad[i] == 0);
    }
    printf("threads: 8 threads x 200 launches\n");
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "control") == 0) {
        int caller_bad = 0;
        int bad = strtok_run(20000, &caller_bad);
        if (bad || caller_bad) {
            printf("corrupted without libsets\n");
            return 3;
        }
        return 0;
    }
    /* counter_sum8 shared: its wrapper has a return hook (stack arguments). */
    static const char *const extra[] = {"counter_sum8", NULL};
    if (preempt_libsets_enable(extra) != 0) {
        fprintf(stderr, "preempt_libsets_enable: %s\n", preempt_libsets_error());
        return 1;
    }
    struct preempt_libsets_info info;
    CHECK(preempt_libsets_info(&info) == 1);
    printf("libsets: %lu libraries, %lu stubs, %lu shared functions\n",
           (unsigned long)info.libraries, (unsigned long)info.stubs,
           (unsigned long)info.shared);
    preempt_cont_t *c;
    CHECK(preempt_launch(say, "printed by a function", PREEMPT_NO_TIMEOUT, &c) == PREEMPT_DONE);
    CHECK(preempt_launch(say, "printed by a suspended function", PREEMPT_NO_TIMEOUT, &c) ==
          PREEMPT_PAUSED);
    globals_run();
    shared_extra_run();
    cancel_limits_run();
    int caller_bad = 0;
    CHECK(strtok_run(100000, &caller_bad) == 0);
    CHECK(caller_bad == 0);
    printf_run(100000);
    alive_run();
    threads_run();
    printf("all ok\n");
    return 0;
}
