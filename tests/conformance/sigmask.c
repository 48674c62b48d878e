/* Blocked signals: a signal the program handles but blocks stays pending
 * however it comes (while the program runs its own code, during a blocking
 * call, sent to itself, to the process while another thread does not block
 * it), and sigaction, sigpending, signalfd, sigwaitinfo, fork and execve
 * see it as Linux shows it. picos leaves such a signal open on the host
 * until one comes (kernel::signal::set_mask_lazily): these are the cases
 * where that could show.
 *
 * A helper child sends the signals, once the parent says it is ready
 * through a shared page (the parent blocks the signal after the fork: the
 * fork would bring the host's mask up to date), and the parent spins in its own code (no system
 * call) until the signal has had time to arrive: Linux interrupts a
 * spinning thread at once to deliver a signal it does not block.
 *
 * Run as "sigmask exec-child" by the execve check.
 */
#include "conformance.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>

static volatile sig_atomic_t hits;
static volatile long handler_tid;
static int rt_values[8];
static volatile int rt_count;

static void handler(int sig)
{
    (void)sig;
    hits++;
    handler_tid = syscall(SYS_gettid);
}

static void rt_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (rt_count < 8)
        rt_values[rt_count] = si->si_value.sival_int;
    rt_count++;
}

static int pending(int sig)
{
    sigset_t s;
    sigpending(&s);
    return sigismember(&s, sig);
}

/* The page the parent and the sending child share: step 1 = the parent is
 * ready, 2 = the child has sent. */
static volatile int *step;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Spins in the program's own code for `ms` milliseconds (clock_gettime is
 * the vDSO's: no system call). */
static void spin_ms(double ms)
{
    double end = now_ms() + ms;
    while (now_ms() < end)
        ;
}

/* Spins until the child has sent (at most 10 s), then 20 ms more. */
static void wait_sent(void)
{
    double end = now_ms() + 10000;
    while (__atomic_load_n(step, __ATOMIC_SEQ_CST) < 2 && now_ms() < end)
        ;
    spin_ms(20);
}

enum how { KILL, QUEUE3, KILL_LATER_WRITE };

/* A child that waits for step 1, sends `sig` to the parent as `how` says,
 * and sets step 2. KILL_LATER_WRITE also writes a byte to `fd` 50 ms
 * later; QUEUE3 queues the values 1, 2, 3. */
static pid_t sender(int sig, enum how how, int fd)
{
    pid_t parent = getpid();
    __atomic_store_n(step, 0, __ATOMIC_SEQ_CST);
    pid_t pid = fork();
    if (pid == 0) {
        double end = now_ms() + 10000;
        while (__atomic_load_n(step, __ATOMIC_SEQ_CST) < 1 && now_ms() < end)
            ;
        spin_ms(10);
        if (how == QUEUE3) {
            for (int i = 1; i <= 3; i++)
                sigqueue(parent, sig, (union sigval){ .sival_int = i });
        } else {
            kill(parent, sig);
        }
        __atomic_store_n(step, 2, __ATOMIC_SEQ_CST);
        if (how == KILL_LATER_WRITE) {
            struct timespec ts = { 0, 50 * 1000 * 1000 };
            nanosleep(&ts, NULL);
            if (write(fd, "x", 1) != 1)
                _exit(1);
        }
        _exit(0);
    }
    return pid;
}

static void ready(void)
{
    __atomic_store_n(step, 1, __ATOMIC_SEQ_CST);
}

static volatile int thread_ready, thread_stop;
static volatile long thread_tid;

static void *spin_thread(void *arg)
{
    (void)arg;
    thread_tid = syscall(SYS_gettid);
    __atomic_store_n(&thread_ready, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&thread_stop, __ATOMIC_SEQ_CST))
        ;
    return NULL;
}

static int exec_child(void)
{
    /* The mask survives execve: SIGUSR1 blocked, SIGUSR2 not, and the
     * SIGUSR1 sent before the execve still pending. */
    int ok = conf_is_blocked(SIGUSR1) && !conf_is_blocked(SIGUSR2) && pending(SIGUSR1);
    return ok ? 0 : 1;
}

static char *self_path;

static void cases(void)
{
    conf_handle(SIGUSR1, handler, 0);
    conf_handle(SIGUSR2, handler, 0);

    /* 1. Sent while the program runs its own code. */
    {
        hits = 0;
        pid_t c = sender(SIGUSR1, KILL, -1);
        conf_mask_one(SIG_BLOCK, SIGUSR1);
        ready();
        wait_sent();
        int held = hits == 0 && pending(SIGUSR1);
        conf_mask_one(SIG_UNBLOCK, SIGUSR1);
        checkf("blocked_in_own_code_stays_pending", held && hits == 1 && !pending(SIGUSR1),
               "held %d hits %d", held, (int)hits);
        wait_status(c);
    }

    /* 2. Blocking calls that a blocked signal must not cut short. */
    {
        int p[2];
        if (pipe(p) != 0) {
            perror("pipe");
            return;
        }
        hits = 0;
        pid_t c = sender(SIGUSR1, KILL_LATER_WRITE, p[1]);
        conf_mask_one(SIG_BLOCK, SIGUSR1);
        ready();
        char b;
        ssize_t r = read(p[0], &b, 1);
        int e = errno;
        checkf("blocked_does_not_interrupt_read", r == 1 && hits == 0,
               "read %zd (%s) hits %d", r, errno_name(e), (int)hits);
        wait_status(c);
        conf_mask_one(SIG_UNBLOCK, SIGUSR1);
        check("delivered_after_read", hits == 1);

        hits = 0;
        c = sender(SIGUSR1, KILL, -1);
        conf_mask_one(SIG_BLOCK, SIGUSR1);
        ready();
        struct timespec ts = { 0, 150 * 1000 * 1000 };
        r = nanosleep(&ts, NULL);
        e = errno;
        checkf("blocked_does_not_interrupt_nanosleep", r == 0 && hits == 0,
               "nanosleep %zd (%s) hits %d", r, errno_name(e), (int)hits);
        wait_status(c);

        struct pollfd pf = { .fd = p[0], .events = POLLIN };
        hits = 0;
        c = sender(SIGUSR1, KILL, -1);
        ready();
        r = poll(&pf, 1, 150);
        e = errno;
        checkf("blocked_does_not_interrupt_poll", r == 0 && hits == 0,
               "poll %zd (%s) hits %d", r, errno_name(e), (int)hits);
        wait_status(c);
        conf_mask_one(SIG_UNBLOCK, SIGUSR1);
        check("delivered_once_after_two", hits == 1);
        close(p[0]);
        close(p[1]);
    }

    /* 3. Sent to itself while blocked: kill (the process) and
     * pthread_kill (the thread). */
    {
        hits = 0;
        conf_mask_one(SIG_BLOCK, SIGUSR1);
        kill(getpid(), SIGUSR1);
        int held = hits == 0 && pending(SIGUSR1);
        conf_mask_one(SIG_UNBLOCK, SIGUSR1);
        check("self_kill_blocked_then_delivered", held && hits == 1);

        hits = 0;
        conf_mask_one(SIG_BLOCK, SIGUSR2);
        pthread_kill(pthread_self(), SIGUSR2);
        held = hits == 0 && pending(SIGUSR2);
        conf_mask_one(SIG_UNBLOCK, SIGUSR2);
        check("self_tkill_blocked_then_delivered", held && hits == 1);
    }

    /* 4. Its disposition changes while it is blocked: SIG_DFL keeps it
     * pending (it would end the process if it were delivered), SIG_IGN
     * discards it. */
    {
        hits = 0;
        pid_t c = sender(SIGUSR2, KILL, -1);
        conf_mask_one(SIG_BLOCK, SIGUSR2);
        conf_handle(SIGUSR2, SIG_DFL, 0);
        ready();
        wait_sent();
        check("default_action_waits_while_blocked", pending(SIGUSR2) && hits == 0);
        conf_handle(SIGUSR2, SIG_IGN, 0);
        check("ignoring_discards_pending", !pending(SIGUSR2));
        conf_mask_one(SIG_UNBLOCK, SIGUSR2);
        check("survives_unblocking", hits == 0);
        conf_handle(SIGUSR2, handler, 0);
        wait_status(c);
    }

    /* 5. Taken by signalfd and by sigwaitinfo, never by the handler. */
    {
        hits = 0;
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR1);
        pid_t c = sender(SIGUSR1, KILL, -1);
        conf_mask_one(SIG_BLOCK, SIGUSR1);
        int sfd = signalfd(-1, &s, SFD_NONBLOCK | SFD_CLOEXEC);
        ready();
        wait_sent();
        struct signalfd_siginfo si;
        ssize_t r = read(sfd, &si, sizeof si);
        checkf("signalfd_reads_blocked", r == sizeof si && si.ssi_signo == SIGUSR1 && hits == 0,
               "read %zd signo %u hits %d", r, r > 0 ? si.ssi_signo : 0, (int)hits);
        close(sfd);
        wait_status(c);

        conf_mask_one(SIG_UNBLOCK, SIGUSR1);
        c = sender(SIGUSR1, KILL, -1);
        conf_mask_one(SIG_BLOCK, SIGUSR1);
        ready();
        wait_sent();
        siginfo_t info;
        int sig = sigwaitinfo(&s, &info);
        checkf("sigwaitinfo_takes_blocked", sig == SIGUSR1 && info.si_code == SI_USER && hits == 0,
               "sig %d code %d hits %d", sig, info.si_code, (int)hits);
        wait_status(c);
        conf_mask_one(SIG_UNBLOCK, SIGUSR1);
        check("nothing_left_for_the_handler", hits == 0);
    }

    /* 6. Real-time signals queued while blocked come out in order. */
    {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = rt_handler;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGRTMIN + 1, &sa, NULL);
        rt_count = 0;
        /* On one CPU, the child queues all three before this process runs
         * again: the first then arrives with the others already queued
         * behind it. */
        cpu_set_t all, one;
        sched_getaffinity(0, sizeof all, &all);
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        sched_setaffinity(0, sizeof one, &one);
        pid_t c = sender(SIGRTMIN + 1, QUEUE3, -1);
        conf_mask_one(SIG_BLOCK, SIGRTMIN + 1);
        ready();
        wait_sent();
        int none = rt_count == 0;
        conf_mask_one(SIG_UNBLOCK, SIGRTMIN + 1);
        checkf("rt_queue_kept_in_order",
               none && rt_count == 3 && rt_values[0] == 1 && rt_values[1] == 2 && rt_values[2] == 3,
               "before %d count %d values %d %d %d", none, rt_count, rt_values[0], rt_values[1],
               rt_values[2]);
        wait_status(c);
        sched_setaffinity(0, sizeof all, &all);
    }

    /* 7. Sent to the process while this thread blocks it and another does
     * not: the other thread's handler runs. */
    {
        pthread_t t;
        thread_ready = thread_stop = 0;
        pthread_create(&t, NULL, spin_thread, NULL);
        while (!__atomic_load_n(&thread_ready, __ATOMIC_SEQ_CST))
            ;
        hits = 0;
        handler_tid = 0;
        pid_t c = sender(SIGUSR1, KILL, -1);
        conf_mask_one(SIG_BLOCK, SIGUSR1);
        ready();
        wait_sent();
        double end = now_ms() + 10000;
        while (!handler_tid && now_ms() < end)
            ;
        check("process_signal_to_the_thread_that_takes_it",
              hits == 1 && handler_tid == thread_tid && !pending(SIGUSR1));
        __atomic_store_n(&thread_stop, 1, __ATOMIC_SEQ_CST);
        pthread_join(t, NULL);
        conf_mask_one(SIG_UNBLOCK, SIGUSR1);
        check("main_thread_got_none", hits == 1);
        wait_status(c);
    }

    /* 8. fork and execve keep the mask and what is pending. */
    {
        hits = 0;
        conf_mask_one(SIG_BLOCK, SIGUSR1);
        pid_t c = fork();
        if (c == 0) {
            /* (Blocked again after the fork, which made the host's mask
             * the program's.) */
            conf_mask_one(SIG_UNBLOCK, SIGUSR1);
            conf_mask_one(SIG_BLOCK, SIGUSR1);
            kill(getpid(), SIGUSR1);
            int ok = hits == 0 && pending(SIGUSR1) && conf_is_blocked(SIGUSR1);
            conf_mask_one(SIG_UNBLOCK, SIGUSR1);
            _exit(ok && hits == 1 ? 0 : 1);
        }
        int st = wait_status(c);
        check("fork_child_keeps_blocked", WIFEXITED(st) && WEXITSTATUS(st) == 0);

        c = fork();
        if (c == 0) {
            conf_mask_one(SIG_UNBLOCK, SIGUSR1);
            conf_mask_one(SIG_BLOCK, SIGUSR1);
            kill(getpid(), SIGUSR1);
            execl(self_path, self_path, "exec-child", (char *)NULL);
            _exit(2);
        }
        st = wait_status(c);
        checkf("execve_keeps_blocked_and_pending", WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "status %#x", st);
        conf_mask_one(SIG_UNBLOCK, SIGUSR1);
        check("parent_untouched", hits == 0);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "exec-child") == 0)
        return exec_child();
    conf_init();
    self_path = argv[0];
    step = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (step == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    /* Two first rounds, their lines thrown away, make every call before:
     * under picos a call goes through the trap path until its site is
     * patched (a site may take more than one use), which brings the host's
     * mask up to date, and the last round then meets the signals with the
     * mask left open. */
    fflush(stdout);
    int out = dup(1), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    cases();
    cases();
    fflush(stdout);
    dup2(out, 1);
    close(out);
    close(null);
    conf_failures = 0;
    cases();
    return conf_finish("sigmask");
}
