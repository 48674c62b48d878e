/*
 * preempt.h - preemptible functions for C.
 *
 * Call a function under a time budget; if it has not returned when the
 * budget runs out it is suspended and you get a continuation that you can
 * resume (with a new budget) or cancel. Installed with cargo-c
 * (`cargo cinstall -p preempt ...`), build with
 * `gcc prog.c $(pkg-config --cflags --libs preempt)`; docs/PREEMPT.md has
 * the commands, and those for a static musl build.
 *
 *   preempt_cont_t *c;
 *   int r = preempt_launch(work, &arg, 1000, &c);   // at most 1 ms
 *   while (r == PREEMPT_TIMEOUT || r == PREEMPT_PAUSED)
 *       r = preempt_resume(&c, 1000);               // or preempt_cancel(c)
 *
 * Rules for the function (f):
 *  - Continuations belong to the thread that launched them; launch/resume
 *    cannot be called from inside f (PREEMPT_ENESTED).
 *  - Memory: allocate with preempt_malloc/calloc/realloc/free. These never
 *    get preempted half-way, and blocks f still holds when it is cancelled
 *    are freed by preempt_cancel. Plain malloc/free and stdio (printf...)
 *    inside f must be bracketed with PREEMPT_NONPREEMPTIBLE_BEGIN/END:
 *    otherwise f may be suspended holding libc's malloc or FILE lock, and
 *    the caller's next malloc or printf deadlocks or corrupts state.
 *  - Cancel does not unwind f: locks it holds stay held, and nothing may
 *    refer to its stack or to the blocks it allocated with preempt_malloc.
 *  - The timer uses one real-time signal (preempt_signal(): SIGRTMAX-1);
 *    do not block it on threads that run preemptible functions. Other
 *    senders of that signal are passed to the handler installed before.
 */
#ifndef PREEMPT_H
#define PREEMPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct preempt_cont preempt_cont_t;

/* Return codes. */
#define PREEMPT_DONE 0      /* f returned */
#define PREEMPT_TIMEOUT 1   /* budget ran out; continuation returned */
#define PREEMPT_PAUSED 2    /* f called preempt_pause(); continuation returned */
#define PREEMPT_ENESTED (-1)  /* called from inside a preemptible function */
#define PREEMPT_EINVAL (-2)   /* bad argument */
#define PREEMPT_ENOMEM (-3)   /* no memory for a stack */
#define PREEMPT_ESYS (-4)     /* a system call failed (timer, signal) */
#define PREEMPT_EPANIC (-5)   /* the function panicked (Rust code only) */
#define PREEMPT_ENOTINFN (-6) /* preempt_pause outside a preemptible function */
#define PREEMPT_ETHREAD (-7)  /* continuation belongs to another thread */
#define PREEMPT_ELIBSET (-8)  /* libsets could not be made or used */

/* Budget meaning "no limit". */
#define PREEMPT_NO_TIMEOUT UINT64_MAX

/* Runs f(arg) on a stack of its own for at most timeout_us microseconds.
 * PREEMPT_DONE: *out = NULL. PREEMPT_TIMEOUT/PAUSED: *out = continuation. */
int preempt_launch(void (*f)(void *), void *arg, uint64_t timeout_us,
                   preempt_cont_t **out);

/* Lets *cont run again for at most timeout_us microseconds. On PREEMPT_DONE
 * (or an error that ends the function) *cont is released and set to NULL. */
int preempt_resume(preempt_cont_t **cont, uint64_t timeout_us);

/* Discards a continuation: stack back to the pool, its preempt_malloc'd
 * blocks freed. Takes microseconds. Returns 0. */
int preempt_cancel(preempt_cont_t *cont);

/* Inside f: yield to the caller (which gets PREEMPT_PAUSED). Returns 0 once
 * resumed, PREEMPT_ENOTINFN outside a preemptible function. */
int preempt_pause(void);

/* 1 inside a preemptible function, else 0. */
int preempt_in_function(void);

/* Non-preemptible regions (nestable). A budget that runs out inside one is
 * taken when the outermost region ends. */
void preempt_np_enter(void);
void preempt_np_exit(void);
#define PREEMPT_NONPREEMPTIBLE_BEGIN preempt_np_enter();
#define PREEMPT_NONPREEMPTIBLE_END preempt_np_exit();

/* Allocation hooks: 16-byte aligned, non-preemptible, tracked per function.
 * Blocks from these must be freed with preempt_free (not free). */
void *preempt_malloc(size_t size);
void *preempt_calloc(size_t n, size_t size);
void *preempt_realloc(void *p, size_t size);
void preempt_free(void *p);

struct preempt_stats {
    uint64_t launches;
    uint64_t timeouts;        /* preemptions taken in the signal handler */
    uint64_t deferred;        /* ... taken at the end of a non-preemptible region */
    uint64_t expired_early;   /* ... taken as f was switched to (tiny budgets) */
    uint64_t cancels;
    uint64_t freed_on_cancel; /* blocks freed by preempt_cancel */
    uint64_t leaked;          /* Rust continuations dropped without cancel */
    uint64_t pooled_stacks;
};
void preempt_stats(struct preempt_stats *out);

/* Libsets (docs/PREEMPT.md, "Libsets"): from now on every preemptible
 * function runs against its own copy of the program's shared libraries, so
 * it can be preempted inside non-reentrant library code (strtok, stdio, a
 * library's globals) while the caller uses its own copy; preempt_cancel
 * restores the copy's globals. Calls to the shared functions (malloc family,
 * pthread_create, fork, exit, dlopen, setenv, setlocale, ...) run in the
 * originals with preemption deferred; `shared` (NULL or NULL-terminated)
 * names more. Call once, early, before other threads start. Returns 0, or
 * PREEMPT_ELIBSET (preempt_libsets_error() says why: e.g. a static program
 * has no libraries to copy). */
int preempt_libsets_enable(const char *const *shared);
/* Why the last preempt_libsets_enable, or preempt_launch that returned
 * PREEMPT_ELIBSET (no libset could be made: e.g. a library replaced on
 * disk since it was loaded, or all MAX_LIBSETS held), failed on this
 * thread. */
const char *preempt_libsets_error(void);

struct preempt_libsets_info {
    uint64_t libraries;        /* libraries each libset copies */
    uint64_t stubs;            /* library functions the program calls via a stub */
    uint64_t shared;           /* shared functions found */
    uint64_t created;          /* libsets made so far */
    uint64_t in_use;           /* held by launched, unfinished functions */
    uint64_t bytes_per_libset; /* private memory of one libset */
};
/* The libset the calling thread runs in (0: the original libraries). */
int preempt_libset_current(void);

/* Fills *out; returns 1 if libsets are enabled, else 0. */
int preempt_libsets_info(struct preempt_libsets_info *out);

/* The real-time signal the timers use. */
int preempt_signal(void);

/* A static description of a return code. */
const char *preempt_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
