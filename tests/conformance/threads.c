/* pthreads / futex / TLS conformance. */
#include "conformance.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/time.h>

/* <linux/futex.h> is not visible to musl-gcc */
#ifndef FUTEX_WAIT
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_WAIT_PRIVATE (FUTEX_WAIT | FUTEX_PRIVATE_FLAG)
#endif

#define NTHREADS 8
#define NITER 100000

static long my_gettid(void) { return syscall(SYS_gettid); }

static long futex(int *uaddr, int op, int val, const struct timespec *ts)
{
    return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/* ---- mutex-protected counter ---- */
static pthread_mutex_t counter_mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static long atomic_counter;

static void *incr(void *arg)
{
    (void)arg;
    for (int i = 0; i < NITER; i++) {
        pthread_mutex_lock(&counter_mu);
        counter++;
        pthread_mutex_unlock(&counter_mu);
        __atomic_fetch_add(&atomic_counter, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* ---- condvar ping-pong ---- */
static pthread_mutex_t pp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pp_cv = PTHREAD_COND_INITIALIZER;
static int pp_turn; /* 0: ping's turn, 1: pong's turn */
static int pp_trace_ok = 1;
#define PP_ROUNDS 2000

static void *pong(void *arg)
{
    (void)arg;
    for (int i = 0; i < PP_ROUNDS; i++) {
        pthread_mutex_lock(&pp_mu);
        while (pp_turn != 1)
            pthread_cond_wait(&pp_cv, &pp_mu);
        pp_turn = 0;
        pthread_cond_signal(&pp_cv);
        pthread_mutex_unlock(&pp_mu);
    }
    return NULL;
}

/* ---- futex wait/wake ---- */
static int fx_word;
static int fx_woken;

static void *futex_waiter(void *arg)
{
    (void)arg;
    while (__atomic_load_n(&fx_word, __ATOMIC_ACQUIRE) == 0)
        futex(&fx_word, FUTEX_WAIT, 0, NULL);
    __atomic_store_n(&fx_woken, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* ---- TLS ---- */
static __thread int tls_val = 42;
static __thread char tls_buf[64] = "initial";
static pthread_barrier_t tls_barrier;

struct tls_result {
    int id;
    int saw_initial;
    int kept_value;
    long tid;
    void *tls_addr;
};

static void *tls_thread(void *arg)
{
    struct tls_result *r = arg;
    r->saw_initial = tls_val == 42 && strcmp(tls_buf, "initial") == 0;
    tls_val = 1000 + r->id;
    snprintf(tls_buf, sizeof tls_buf, "thread-%d", r->id);
    r->tls_addr = &tls_val;
    r->tid = my_gettid();
    pthread_barrier_wait(&tls_barrier); /* everybody wrote their value */
    char want[64];
    snprintf(want, sizeof want, "thread-%d", r->id);
    r->kept_value = tls_val == 1000 + r->id && strcmp(tls_buf, want) == 0;
    pthread_barrier_wait(&tls_barrier);
    return NULL;
}

/* ---- pthread_exit ---- */
static void *exiter(void *arg)
{
    pthread_exit((void *)((intptr_t)arg * 3));
    return NULL;
}

static void *returner(void *arg) { return (void *)((intptr_t)arg + 1); }

/* ---- tid ---- */
static void *tid_thread(void *arg)
{
    long *out = arg;
    out[0] = my_gettid();
    out[1] = getpid();
    out[2] = (long)pthread_equal(pthread_self(), pthread_self());
    return NULL;
}

/* ---- TSD destructors ---- */
static pthread_key_t key;
static int dtor_calls;
static void dtor(void *v)
{
    if (v == (void *)0x1234)
        __atomic_fetch_add(&dtor_calls, 1, __ATOMIC_SEQ_CST);
}
static void *key_thread(void *arg)
{
    (void)arg;
    pthread_setspecific(key, (void *)0x1234);
    return pthread_getspecific(key);
}

/* ---- pthread_once ---- */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_count;
static void once_fn(void) { once_count++; }
static void *once_thread(void *arg)
{
    (void)arg;
    pthread_once(&once, once_fn);
    return NULL;
}

/* ---- semaphores ---- */
static sem_t sem;
static void *sem_poster(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        sem_post(&sem);
    return NULL;
}

/* ---- rwlock ---- */
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long rw_value;
static void *rw_writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10000; i++) {
        pthread_rwlock_wrlock(&rw);
        rw_value++;
        pthread_rwlock_unlock(&rw);
    }
    return NULL;
}

/* ---- cancellation ---- */
static int cancel_pipe[2];
static int cleanup_ran;
static void cleanup(void *arg) { (void)arg; cleanup_ran = 1; }
static void *cancel_target(void *arg)
{
    (void)arg;
    char c;
    pthread_cleanup_push(cleanup, NULL);
    for (;;)
        read(cancel_pipe[0], &c, 1); /* cancellation point; blocks forever */
    pthread_cleanup_pop(0);
    return NULL;
}

/* ---- detached thread ---- */
static int detached_done;
static void *detached(void *arg)
{
    (void)arg;
    __atomic_store_n(&detached_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* ---- large stack attr ---- */
static void *big_stack_user(void *arg)
{
    volatile char buf[4 << 20];
    buf[0] = 1;
    buf[sizeof buf - 1] = 2;
    *(int *)arg = buf[0] + buf[sizeof buf - 1];
    return NULL;
}

/* membarrier(2) in a process with threads: a private expedited barrier
 * needs the program's own registration (EPERM before it, as natively, even
 * though picos's patcher registers the process for itself: LTP
 * membarrier01), and GET_REGISTRATIONS lists what the program registered. */
static void *idle_thread(void *arg)
{
    return arg;
}

static void membarrier_as_registered(void)
{
    pthread_t t;
    pthread_create(&t, NULL, idle_thread, NULL);
    pthread_join(t, NULL);
    long r = syscall(SYS_membarrier, 32 /* PRIVATE_EXPEDITED_SYNC_CORE */, 0, 0);
    int e = errno;
    check_errno("membarrier_sync_core_unregistered_eperm", r, e, EPERM);
    r = syscall(SYS_membarrier, 8 /* PRIVATE_EXPEDITED */, 0, 0);
    e = errno;
    check_errno("membarrier_private_unregistered_eperm", r, e, EPERM);
    show("membarrier_registrations_before", "%ld", syscall(SYS_membarrier, 512, 0, 0));
    check("membarrier_register_sync_core", syscall(SYS_membarrier, 64, 0, 0) == 0);
    show("membarrier_registrations_after", "%ld", syscall(SYS_membarrier, 512, 0, 0));
    check("membarrier_sync_core_registered", syscall(SYS_membarrier, 32, 0, 0) == 0);
}

/* A wait for any child with __WALL, in a process without children, is
 * ECHILD while another thread runs fresh syscall sites: picos patches each
 * from a transient task that is a child of the process for a few
 * microseconds (a process of its own since LTP mq_notify03), which such a
 * wait must never see, running or ended. The sites are made at run time:
 * `mov $39, %eax; syscall; ret`, each run three times. */
static volatile int sites_done;

static void *run_fresh_sites(void *arg)
{
    (void)arg;
    unsigned char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        for (int i = 0; i < 200; i++) {
            unsigned char stub[8] = {0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0xc3};
            memcpy(p + i * 32, stub, sizeof stub);
        }
        for (int i = 0; i < 200; i++) {
            long (*f)(void) = (long (*)(void))(void *)(p + i * 32);
            f();
            f();
            f();
        }
        munmap(p, 8192);
    }
    sites_done = 1;
    return NULL;
}

static void wall_wait_sees_no_runtime_task(void)
{
    pthread_t t;
    sites_done = 0;
    pthread_create(&t, NULL, run_fresh_sites, NULL);
    long polls = 0, wrong = 0;
    do { /* at least once, however fast the other thread is */
        siginfo_t si;
        memset(&si, 0, sizeof si);
        int r = waitid(P_ALL, 0, &si, WEXITED | WNOHANG | __WALL);
        polls++;
        if (r != -1 || errno != ECHILD) {
            if (!wrong)
                fprintf(stderr, "waitid: %d (%s), pid %d\n", r, errno_name(errno), (int)si.si_pid);
            wrong++;
        }
    } while (!sites_done);
    pthread_join(t, NULL);
    checkf("wall_wait_sees_no_runtime_task", polls > 0 && wrong == 0, "%ld of %ld", wrong, polls);
}

/* A new thread starts with its creator's FPU control state (Linux copies
 * the FPU registers at clone): under picos the thread's first frame is
 * built from an image of them, on the trap path or the fast path. */
static unsigned get_mxcsr(void) { unsigned v; __asm__ volatile("stmxcsr %0" : "=m"(v)); return v; }
static void set_mxcsr(unsigned v) { __asm__ volatile("ldmxcsr %0" : : "m"(v)); }
static unsigned short get_fpcw(void) { unsigned short v; __asm__ volatile("fnstcw %0" : "=m"(v)); return v; }
static void set_fpcw(unsigned short v) { __asm__ volatile("fldcw %0" : : "m"(v)); }
static void *fpu_thread(void *arg)
{
    (void)arg;
    /* Rounding up in both units. */
    return (void *)(intptr_t)(((get_mxcsr() >> 13) & 3) == 2 && ((get_fpcw() >> 10) & 3) == 2);
}

int main(void)
{
    conf_init();
    pthread_t th[NTHREADS];

    /* mutex counter */
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, incr, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    show("mutex_counter", "%ld", counter);
    check("mutex_counter", counter == (long)NTHREADS * NITER);
    check("atomic_counter", atomic_counter == (long)NTHREADS * NITER);

    /* FPU control state inherited, by every thread (the later ones made
     * once the creating call site is patched) */
    {
        unsigned mxcsr = get_mxcsr();
        unsigned short fpcw = get_fpcw();
        set_mxcsr((mxcsr & ~(3u << 13)) | (2u << 13));
        set_fpcw((unsigned short)((fpcw & ~(3u << 10)) | (2u << 10)));
        int good = 0;
        for (int i = 0; i < 20; i++) {
            pthread_t ft;
            void *r = NULL;
            if (pthread_create(&ft, NULL, fpu_thread, NULL) == 0 && pthread_join(ft, &r) == 0)
                good += r != NULL;
        }
        set_mxcsr(mxcsr);
        set_fpcw(fpcw);
        checkf("new_thread_fpu_state", good == 20, "%d of 20", good);
    }

    /* condvar ping-pong */
    pthread_t pt;
    pthread_create(&pt, NULL, pong, NULL);
    int rounds = 0;
    for (int i = 0; i < PP_ROUNDS; i++) {
        pthread_mutex_lock(&pp_mu);
        if (pp_turn != 0)
            pp_trace_ok = 0;
        pp_turn = 1;
        pthread_cond_signal(&pp_cv);
        while (pp_turn != 0)
            pthread_cond_wait(&pp_cv, &pp_mu);
        rounds++;
        pthread_mutex_unlock(&pp_mu);
    }
    pthread_join(pt, NULL);
    check("condvar_pingpong", rounds == PP_ROUNDS && pp_trace_ok);

    /* condvar timedwait times out */
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&pp_mu);
        int rc = pthread_cond_timedwait(&pp_cv, &pp_mu, &ts);
        pthread_mutex_unlock(&pp_mu);
        check("cond_timedwait_timeout", rc == ETIMEDOUT);
    }

    /* futex */
    {
        int v = 5;
        long r = futex(&v, FUTEX_WAIT, 6, NULL);
        int e = errno;
        check_errno("futex_wait_value_mismatch", r, e, EAGAIN);
        struct timespec ts = { 0, 20 * 1000000L };
        r = futex(&v, FUTEX_WAIT_PRIVATE, 5, &ts);
        e = errno;
        check_errno("futex_wait_timeout", r, e, ETIMEDOUT);
        check("futex_wake_nobody", futex(&v, FUTEX_WAKE, 1, NULL) == 0);

        pthread_t ft;
        pthread_create(&ft, NULL, futex_waiter, NULL);
        sleep_ms(50);
        check("futex_waiter_blocked", __atomic_load_n(&fx_woken, __ATOMIC_ACQUIRE) == 0);
        __atomic_store_n(&fx_word, 1, __ATOMIC_RELEASE);
        long woke = futex(&fx_word, FUTEX_WAKE, 1, NULL);
        pthread_join(ft, NULL);
        check("futex_wake_one", woke == 1 || woke == 0); /* 0 if it raced */
        check("futex_waiter_woken", fx_woken == 1);
    }

    /* TLS */
    {
        struct tls_result res[4];
        pthread_t tt[4];
        pthread_barrier_init(&tls_barrier, NULL, 4);
        for (int i = 0; i < 4; i++) {
            res[i].id = i;
            pthread_create(&tt[i], NULL, tls_thread, &res[i]);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(tt[i], NULL);
        pthread_barrier_destroy(&tls_barrier);
        int init_ok = 1, kept = 1, distinct = 1, tid_distinct = 1;
        for (int i = 0; i < 4; i++) {
            init_ok &= res[i].saw_initial;
            kept &= res[i].kept_value;
            distinct &= res[i].tls_addr != (void *)&tls_val;
            for (int j = 0; j < i; j++) {
                distinct &= res[i].tls_addr != res[j].tls_addr;
                tid_distinct &= res[i].tid != res[j].tid;
            }
        }
        check("tls_initial_value_in_threads", init_ok);
        check("tls_distinct_per_thread", kept && distinct);
        check("tls_main_untouched", tls_val == 42 && strcmp(tls_buf, "initial") == 0);
        check("thread_tids_distinct", tid_distinct);
    }

    /* pthread_exit / return value via join */
    {
        pthread_t t1, t2;
        void *rv1 = NULL, *rv2 = NULL;
        pthread_create(&t1, NULL, exiter, (void *)(intptr_t)41);
        pthread_create(&t2, NULL, returner, (void *)(intptr_t)41);
        pthread_join(t1, &rv1);
        pthread_join(t2, &rv2);
        show("pthread_exit_value", "%ld", (long)(intptr_t)rv1);
        check("pthread_exit_value", rv1 == (void *)(intptr_t)123);
        check("thread_return_value", rv2 == (void *)(intptr_t)42);
    }

    /* gettid vs getpid */
    {
        long out[3] = {0};
        pthread_t t;
        pthread_create(&t, NULL, tid_thread, out);
        pthread_join(t, NULL);
        check("main_gettid_eq_getpid", my_gettid() == getpid());
        check("thread_gettid_ne_getpid", out[0] != out[1]);
        check("thread_getpid_same", out[1] == getpid());
        check("thread_pthread_equal", out[2] != 0);
    }

    /* TSD destructors */
    {
        pthread_key_create(&key, dtor);
        pthread_t t;
        void *rv;
        pthread_create(&t, NULL, key_thread, NULL);
        pthread_join(t, &rv);
        check("tsd_value", rv == (void *)0x1234);
        check("tsd_destructor_ran", dtor_calls == 1);
        check("tsd_main_unset", pthread_getspecific(key) == NULL);
        pthread_key_delete(key);
    }

    /* pthread_once */
    {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, once_thread, NULL);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        pthread_once(&once, once_fn);
        check("pthread_once", once_count == 1);
    }

    /* semaphores */
    {
        sem_init(&sem, 0, 0);
        pthread_t t;
        pthread_create(&t, NULL, sem_poster, NULL);
        int got = 0;
        for (int i = 0; i < 5; i++)
            if (sem_wait(&sem) == 0)
                got++;
        pthread_join(t, NULL);
        int r = sem_trywait(&sem), e = errno;
        check("sem_wait_post", got == 5);
        check_errno("sem_trywait_empty", r, e, EAGAIN);
        sem_destroy(&sem);
    }

    /* rwlock */
    {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, rw_writer, NULL);
        long reads = 0;
        for (int i = 0; i < 1000; i++) {
            pthread_rwlock_rdlock(&rw);
            reads += rw_value >= 0;
            pthread_rwlock_unlock(&rw);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        check("rwlock", rw_value == 40000 && reads == 1000);
    }

    /* trylock on a locked mutex from another thread */
    {
        pthread_mutex_lock(&counter_mu);
        check("mutex_trylock_busy", pthread_mutex_trylock(&counter_mu) == EBUSY);
        pthread_mutex_unlock(&counter_mu);
        pthread_mutexattr_t ma;
        pthread_mutex_t em;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
        pthread_mutex_init(&em, &ma);
        pthread_mutex_lock(&em);
        check("mutex_errorcheck_deadlock", pthread_mutex_lock(&em) == EDEADLK);
        pthread_mutex_unlock(&em);
        check("mutex_errorcheck_unlock_unowned", pthread_mutex_unlock(&em) == EPERM);
        pthread_mutex_destroy(&em);
    }

    /* cancellation of a thread blocked in read() */
    {
        pipe(cancel_pipe);
        pthread_t t;
        void *rv = NULL;
        pthread_create(&t, NULL, cancel_target, NULL);
        sleep_ms(30);
        check("pthread_cancel", pthread_cancel(t) == 0);
        pthread_join(t, &rv);
        check("cancel_joined_canceled", rv == PTHREAD_CANCELED);
        check("cancel_cleanup_ran", cleanup_ran == 1);
        close(cancel_pipe[0]);
        close(cancel_pipe[1]);
    }

    /* detached thread */
    {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        check("detached_create", pthread_create(&t, &attr, detached, NULL) == 0);
        pthread_attr_destroy(&attr);
        for (int i = 0; i < 500 && !__atomic_load_n(&detached_done, __ATOMIC_ACQUIRE); i++)
            sleep_ms(2);
        check("detached_ran", detached_done == 1);
    }

    /* custom stack size */
    {
        pthread_t t;
        pthread_attr_t attr;
        int result = 0;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 16 << 20);
        pthread_create(&t, &attr, big_stack_user, &result);
        pthread_join(t, NULL);
        pthread_attr_destroy(&attr);
        check("big_stack_thread", result == 3);
    }

    /* many short-lived threads */
    {
        int ok = 1;
        for (int i = 0; i < 200; i++) {
            pthread_t t;
            void *rv;
            if (pthread_create(&t, NULL, returner, (void *)(intptr_t)i) != 0) {
                ok = 0;
                break;
            }
            pthread_join(t, &rv);
            ok &= rv == (void *)(intptr_t)(i + 1);
        }
        check("many_threads_sequential", ok);
    }

    membarrier_as_registered();
    wall_wait_sees_no_runtime_task();
    return conf_finish("threads");
}
