/* Signals a thread sends itself (raise, pthread_kill, tgkill, tkill).
 *
 * Under picos one the program handles and does not block is queued and
 * delivered by the runtime without a host call (sys::signal::tgkill), and
 * one sent while blocked waits in the host's queue until the
 * rt_sigprocmask that unblocks it takes it back (take_self_sent). These
 * checks pin what the program must see either way: siginfo, delivery on
 * return, ordering and queueing of real-time signals, sigwaitinfo and
 * signalfd taking a blocked one, dispositions, and an exact count under a
 * timer storm.
 */
#include "conformance.h"

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/time.h>

static volatile long hits, order_len;
static volatile int order[64];
static siginfo_t last;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    last = *si;
    hits++;
    if (order_len < 64)
        order[order_len++] = sig;
}

static void install_masked(int sig, int flags, const sigset_t *mask)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sig;
    sa.sa_flags = SA_SIGINFO | flags;
    sa.sa_mask = *mask;
    sigaction(sig, &sa, NULL);
}

static void install(int sig, int flags)
{
    sigset_t none;
    sigemptyset(&none);
    install_masked(sig, flags, &none);
}

static void block(int sig, int how)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(how, &s, NULL);
}

static volatile long ticks;
static void on_tick(int sig)
{
    (void)sig;
    ticks++;
}

int main(void)
{
    install(SIGUSR1, 0);

    /* Delivered before raise returns, with Linux's siginfo. */
    hits = 0;
    raise(SIGUSR1);
    check("raise_delivered_on_return", hits == 1);
    checkf("raise_siginfo", last.si_signo == SIGUSR1 && last.si_code == SI_TKILL &&
                                last.si_pid == getpid() && last.si_uid == getuid(),
           "signo %d code %d pid %d uid %d\n", last.si_signo, last.si_code, last.si_pid,
           (int)last.si_uid);

    /* The raw calls, and pthread_kill. */
    hits = 0;
    syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGUSR1);
    syscall(SYS_tkill, (pid_t)syscall(SYS_gettid), SIGUSR1);
    pthread_kill(pthread_self(), SIGUSR1);
    check("tgkill_tkill_pthread_kill_self", hits == 3);
    errno = 0;
    long r = syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), 65);
    check_errno("tgkill_bad_signal", r, errno, EINVAL);
    check("tgkill_signal_zero", syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), 0) == 0);

    /* Blocked: pending until unblocked, once for a standard signal. */
    hits = 0;
    block(SIGUSR1, SIG_BLOCK);
    raise(SIGUSR1);
    raise(SIGUSR1);
    sigset_t p;
    sigpending(&p);
    check("raise_blocked_pending", hits == 0 && sigismember(&p, SIGUSR1));
    block(SIGUSR1, SIG_UNBLOCK);
    check("raise_blocked_delivered_once_on_unblock", hits == 1 && last.si_code == SI_TKILL);

    /* Real-time signals queue, and go out in order (lowest first). */
    sigset_t rt;
    sigemptyset(&rt);
    sigaddset(&rt, SIGRTMIN);
    sigaddset(&rt, SIGRTMIN + 1);
    /* (Each handler blocks both: one at a time, lowest signal first.) */
    install_masked(SIGRTMIN, 0, &rt);
    install_masked(SIGRTMIN + 1, 0, &rt);
    sigprocmask(SIG_BLOCK, &rt, NULL);
    hits = order_len = 0;
    raise(SIGRTMIN + 1);
    raise(SIGRTMIN);
    raise(SIGRTMIN + 1);
    raise(SIGRTMIN);
    sigprocmask(SIG_UNBLOCK, &rt, NULL);
    checkf("raise_rt_queued_in_order",
           hits == 4 && order[0] == SIGRTMIN && order[1] == SIGRTMIN && order[2] == SIGRTMIN + 1 &&
               order[3] == SIGRTMIN + 1,
           "hits %ld order %d %d %d %d\n", hits, order[0], order[1], order[2], order[3]);

    /* sigwaitinfo and signalfd take a blocked one; unblocking then
     * delivers nothing. */
    hits = 0;
    block(SIGUSR1, SIG_BLOCK);
    raise(SIGUSR1);
    sigset_t w;
    sigemptyset(&w);
    sigaddset(&w, SIGUSR1);
    siginfo_t si;
    int got = sigwaitinfo(&w, &si);
    block(SIGUSR1, SIG_UNBLOCK);
    checkf("raise_then_sigwaitinfo", got == SIGUSR1 && hits == 0,
           "got %d code %d hits %ld\n", got, si.si_code, hits);

    block(SIGUSR1, SIG_BLOCK);
    int sfd = signalfd(-1, &w, SFD_CLOEXEC);
    raise(SIGUSR1);
    struct signalfd_siginfo fdsi;
    ssize_t n = read(sfd, &fdsi, sizeof fdsi);
    block(SIGUSR1, SIG_UNBLOCK);
    check("raise_then_signalfd",
          n == (ssize_t)sizeof fdsi && fdsi.ssi_signo == SIGUSR1 && fdsi.ssi_code == SI_TKILL && hits == 0);
    close(sfd);

    /* Dispositions: ignored is dropped; a handler reset by SA_RESETHAND
     * leaves the next one to the default (ignored here: SIGCHLD). */
    signal(SIGUSR2, SIG_IGN);
    raise(SIGUSR2);
    sigpending(&p);
    check("raise_ignored_dropped", !sigismember(&p, SIGUSR2));
    hits = 0;
    install(SIGCHLD, SA_RESETHAND);
    raise(SIGCHLD);
    raise(SIGCHLD);
    check("raise_resethand", hits == 1);

    /* Another thread's signal is its own. */
    hits = 0;
    install(SIGUSR1, 0);
    block(SIGUSR1, SIG_BLOCK);
    raise(SIGUSR1);
    block(SIGUSR1, SIG_UNBLOCK);
    check("raise_blocked_then_handler", hits == 1);

    /* An exact count under a timer storm (SIGALRM every 100 µs). */
    hits = 0;
    signal(SIGALRM, on_tick);
    struct itimerval it = {{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (int i = 0; i < 100000; i++) {
        raise(SIGUSR1);
        if (i % 3 == 0) {
            block(SIGUSR1, SIG_BLOCK);
            raise(SIGUSR1);
            block(SIGUSR1, SIG_UNBLOCK);
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    checkf("raise_storm_exact", hits == 100000 + 33334 && ticks > 0, "hits %ld ticks %ld\n", hits,
           ticks);
    return conf_failures ? 1 : 0;
}
