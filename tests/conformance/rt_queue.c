/* Real-time signals queue: every instance is delivered, in the order it was
 * sent (signal(7): "multiple instances of real-time signals can be queued
 * ... delivered in the order they were sent").
 *
 * Under picos a signal reaches the runtime's handler first. Until the 25th
 * session a burst of instances that the host let through while the
 * runtime's own code ran (a fast rt_sigreturn, say) came to that handler
 * one after another and overflowed the runtime's short queue: 20 of 500
 * were delivered, 18 of 100,000. And an instance that came while the
 * program blocked the signal could only go back to the end of the host's
 * queue, behind later ones.
 *
 * Cases: 500 instances queued while blocked, then unblocked; 100,000 sent
 * by another thread while this one runs; 100,000 sent while this one
 * blocks and unblocks the signal in a loop. Each instance carries its
 * number; the handler counts the ones that come out of order. */
#include "conformance.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#define BURST 100000
#define WATCHDOG_S 20

static volatile long seen, out_of_order;
static pid_t receiver;
static volatile int sender_done;

static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code != SI_QUEUE || si->si_value.sival_int != seen)
        out_of_order++;
    seen++;
}

static void reset(void)
{
    seen = 0;
    out_of_order = 0;
    sender_done = 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sends BURST instances to the receiving thread, each numbered; waits for
 * room in the queue when it is full (EAGAIN). */
static void *sender(void *arg)
{
    (void)arg;
    for (int i = 0; i < BURST; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = SIGRTMIN;
        si.si_code = SI_QUEUE;
        si.si_pid = getpid();
        si.si_uid = getuid();
        si.si_value.sival_int = i;
        while (syscall(SYS_rt_tgsigqueueinfo, getpid(), receiver, SIGRTMIN, &si) != 0) {
            if (errno != EAGAIN) {
                perror("rt_tgsigqueueinfo");
                exit(2);
            }
            sched_yield();
        }
    }
    sender_done = 1;
    return NULL;
}

/* Waits (running `step` meanwhile) until BURST instances came, or the
 * watchdog finds none coming any more. */
static void until_all_came(void (*step)(void))
{
    double last = now();
    long before = -1;
    while (!sender_done || seen < BURST) {
        step();
        if (seen != before) {
            before = seen;
            last = now();
        } else if (now() - last > WATCHDOG_S) {
            break;
        }
    }
}

static sigset_t rt_set;

static void run_freely(void)
{
    for (volatile int i = 0; i < 100; i++) {
    }
}

static void block_and_unblock(void)
{
    sigprocmask(SIG_BLOCK, &rt_set, NULL);
    for (volatile int i = 0; i < 100; i++) {
    }
    sigprocmask(SIG_UNBLOCK, &rt_set, NULL);
}

static void threaded(const char *name, void (*step)(void))
{
    reset();
    pthread_t t;
    check("pthread_create", pthread_create(&t, NULL, sender, NULL) == 0);
    until_all_came(step);
    pthread_join(t, NULL);
    checkf(name, seen == BURST && out_of_order == 0, "%ld of %d came, %ld out of order", seen,
           BURST, out_of_order);
}

int main(void)
{
    conf_init();
    receiver = (pid_t)syscall(SYS_gettid);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN, &sa, NULL);
    sigemptyset(&rt_set);
    sigaddset(&rt_set, SIGRTMIN);

    /* 500 queued while blocked: all delivered at the unblocking, in order. */
    reset();
    sigprocmask(SIG_BLOCK, &rt_set, NULL);
    int queued = 0;
    for (int i = 0; i < 500; i++) {
        union sigval v = {.sival_int = i};
        queued += sigqueue(getpid(), SIGRTMIN, v) == 0;
    }
    check("queued_while_blocked", queued == 500 && seen == 0);
    sigprocmask(SIG_UNBLOCK, &rt_set, NULL);
    checkf("delivered_at_unblock", seen == 500 && out_of_order == 0,
           "%ld of 500 came, %ld out of order", seen, out_of_order);

    threaded("burst_from_a_thread", run_freely);
    threaded("burst_while_masking", block_and_unblock);
    return conf_finish("rt_queue");
}
