/* A one-shot timer re-armed from its own handler, every few microseconds,
 * while the program makes host-served calls: no expiry may be lost.
 *
 * This is what a preemptible function's timer does (libinger, the preempt
 * crate): one expiry, one signal, and the next timer armed only once that
 * signal was handled. Native Linux never loses it. Under picos the signal
 * passes through the runtime's pending set, and the flag that says "a
 * signal is pending" was once recomputed by runtime code that the host's
 * handler could interrupt: the handler's store was overwritten with a flag
 * computed before the signal came, the signal sat in the pending set for
 * good, no new timer was armed, and the program ran on without signals.
 *
 * Each expiry re-arms the timer at 1-16 us, so that the next one lands
 * anywhere in the handler's return (rt_sigreturn) and the calls after it.
 * If no signal comes for WATCHDOG_S seconds while the timer is armed, the
 * expiry was lost (a thread that runs gets its timer signal within
 * microseconds natively; seconds allow for a machine busy with other work).
 */
#include "conformance.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#ifndef sigev_notify_thread_id /* glibc before 2.41 names only the union */
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define EXPIRIES 20000
#define WATCHDOG_S 10

static int timer; /* the kernel's id: raw calls, the same with every libc */
static volatile sig_atomic_t hits, bad_info, stop;
static unsigned rng = 12345;

static void arm(long ns)
{
    struct itimerspec its = {{0, 0}, {0, ns}};
    syscall(SYS_timer_settime, timer, 0, &its, NULL);
}

static void on_timer(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code != SI_TIMER || si->si_value.sival_int != 0x5eed)
        bad_info = 1;
    hits++;
    if (stop)
        return;
    rng = rng * 1103515245 + 12345;
    arm(1000 + (rng >> 8) % 15000);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs the timer against `work` until EXPIRIES signals came; returns 0, or
 * the number of signals seen when the watchdog found the timer silent. */
static long run(void (*work)(int), int fd)
{
    hits = 0;
    stop = 0;
    arm(5000);
    double last = now();
    long seen = 0;
    while (hits < EXPIRIES) {
        for (int i = 0; i < 64; i++)
            work(fd);
        if (hits != seen) {
            seen = hits;
            last = now();
        } else if (now() - last > WATCHDOG_S) {
            break;
        }
    }
    stop = 1;
    struct itimerspec off = {{0, 0}, {0, 0}};
    syscall(SYS_timer_settime, timer, 0, &off, NULL);
    return hits >= EXPIRIES ? 0 : (long)hits;
}

static void do_write(int fd)
{
    if (write(fd, "x", 1) != 1)
        bad_info = 2;
}

static void do_getppid(int fd)
{
    (void)fd;
    (void)getppid();
}

static void do_spin(int fd)
{
    (void)fd;
    for (volatile int i = 0; i < 50; i++) {
    }
}

int main(void)
{
    conf_init();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_timer;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMAX - 1, &sa, NULL);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGRTMAX - 1;
    sev.sigev_value.sival_int = 0x5eed;
    sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    check("timer_create", syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &timer) == 0);
    int fd = open("/dev/null", O_WRONLY);
    check("open", fd >= 0);

    struct {
        const char *name;
        void (*work)(int);
    } cases[] = {
        {"rearm_during_write", do_write},
        {"rearm_during_getppid", do_getppid},
        {"rearm_during_compute", do_spin},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long lost = run(cases[i].work, fd);
        checkf(cases[i].name, lost == 0, "the timer went silent after %ld expiries", lost);
    }
    check("siginfo", bad_info == 0);
    return conf_finish("timer_rearm");
}
