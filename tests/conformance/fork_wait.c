/* fork / wait conformance. */
#include "conformance.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

static int global_value = 100;

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* clone(CLONE_VM | CLONE_SIGHAND) without CLONE_THREAD: a process of its
 * own (its pid, the caller as its parent) sharing the caller's memory and
 * dispositions (LTP clone02: a child that signalled getppid() reached the
 * caller's parent under picos). */
static volatile int sighand_got;
static volatile long sighand_child_pid, sighand_child_ppid, sighand_caller;

static void on_usr2_shared(int sig)
{
    (void)sig;
    sighand_got = 1;
}

static int sighand_child(void *arg)
{
    (void)arg;
    sighand_child_pid = getpid();
    sighand_child_ppid = getppid();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2_shared;
    sigaction(SIGUSR2, &sa, NULL); /* the caller's too: shared */
    /* Only to the caller: a wrong getppid() must not signal anyone else. */
    if (sighand_child_ppid == sighand_caller)
        kill(sighand_child_ppid, SIGUSR2);
    return 0;
}

static void clone_sighand_process(void)
{
    static char stack[256 * 1024] __attribute__((aligned(16)));
    sigset_t usr2, old;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    sigprocmask(SIG_BLOCK, &usr2, &old);
    sighand_caller = getpid();
    int pid = clone(sighand_child, stack + sizeof stack,
                    CLONE_VM | CLONE_SIGHAND | CLONE_FS | CLONE_FILES | SIGCHLD, NULL);
    int st = wait_status(pid);
    check("clone_sighand_child_exits_0", pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    checkf("clone_sighand_child_own_pid", sighand_child_pid == pid,
           "child pid %ld, clone returned %d", sighand_child_pid, pid);
    checkf("clone_sighand_child_parent_is_caller", sighand_child_ppid == getpid(),
           "child's parent %ld, caller %d", sighand_child_ppid, getpid());
    struct sigaction now;
    sigaction(SIGUSR2, NULL, &now);
    check("clone_sighand_handler_shared", now.sa_handler == on_usr2_shared);
    sigprocmask(SIG_SETMASK, &old, NULL); /* the pending SIGUSR2 runs the handler */
    check("clone_sighand_signal_reached_caller", sighand_got == 1);
    signal(SIGUSR2, SIG_DFL);
}

/* SIGSYS from a parent's kill() reaches the child's handler. picos asks
 * Linux for SIGSYS when a child's parent dies (PR_SET_PDEATHSIG), which
 * Linux sends as kill() would, from the parent's pid: the parent's own
 * kill(SIGSYS) was taken for that notice (LTP kill11, sigrelse01). And the
 * other way round: when the parent *thread* that forked a child ends while
 * its process lives on, the child gets its own PR_SET_PDEATHSIG signal, as
 * natively, and no SIGSYS. The child's handlers report each signal on a
 * pipe, so no check depends on timing (a lost signal is a 10 s timeout). */
static volatile sig_atomic_t got_sys, got_usr1;
static int report_fd = -1;

static void on_sys(int sig)
{
    (void)sig;
    got_sys++;
    if (write(report_fd, "s", 1) != 1)
        _exit(97);
}

static void on_usr1_count(int sig)
{
    (void)sig;
    got_usr1++;
    if (write(report_fd, "u", 1) != 1)
        _exit(97);
}

/* Child: reports 'r' when ready, then each SIGSYS ('s') and SIGUSR1 ('u'),
 * until SIGTERM; exit code 10 * SIGSYS count + SIGUSR1 count. */
static void count_signals_child(int fd, int with_pdeath)
{
    report_fd = fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sys;
    sigaction(SIGSYS, &sa, NULL);
    sa.sa_handler = on_usr1_count;
    sigaction(SIGUSR1, &sa, NULL);
    if (with_pdeath)
        prctl(PR_SET_PDEATHSIG, SIGUSR1);
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    if (write(fd, "r", 1) != 1)
        _exit(99);
    int sig;
    sigwait(&term, &sig);
    _exit(10 * got_sys + got_usr1);
}

/* The next byte on `fd` within 10 s; 0 if none came. */
static char next_report(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c = 0;
    if (poll(&p, 1, 10000) == 1 && read(fd, &c, 1) == 1)
        return c;
    return 0;
}

struct forker {
    int fd;
    pid_t child;
};

/* Held by the main thread until the child is ready (its PR_SET_PDEATHSIG
 * asked for): the forking thread ends only then. */
static pthread_mutex_t forker_hold = PTHREAD_MUTEX_INITIALIZER;

static void *fork_then_end(void *arg)
{
    struct forker *f = arg;
    f->child = fork();
    if (f->child == 0)
        count_signals_child(f->fd, 1);
    pthread_mutex_lock(&forker_hold);
    pthread_mutex_unlock(&forker_hold);
    return NULL; /* this thread ends: the child's parent-death signal */
}

static void parent_sigsys(void)
{
    int rep[2];
    if (pipe(rep) != 0) {
        check("kill_sigsys_reaches_child", 0);
        return;
    }
    pid_t pid = fork();
    if (pid == 0)
        count_signals_child(rep[1], 0);
    int ok = next_report(rep[0]) == 'r';
    ok = ok && kill(pid, SIGSYS) == 0 && next_report(rep[0]) == 's';
    kill(pid, SIGTERM);
    int st = wait_status(pid);
    checkf("kill_sigsys_reaches_child", ok && WIFEXITED(st) && WEXITSTATUS(st) == 10,
           "status %#x", st);

    /* The same through an execve: the child runs this program again. */
    pid = fork();
    if (pid == 0) {
        char fd[16];
        snprintf(fd, sizeof fd, "%d", rep[1]);
        execl("/proc/self/exe", "fork_wait", "count-signals", fd, (char *)NULL);
        _exit(98);
    }
    ok = next_report(rep[0]) == 'r';
    ok = ok && kill(pid, SIGSYS) == 0 && next_report(rep[0]) == 's';
    kill(pid, SIGTERM);
    st = wait_status(pid);
    checkf("kill_sigsys_reaches_execd_child", ok && WIFEXITED(st) && WEXITSTATUS(st) == 10,
           "status %#x", st);

    /* The forking thread ends once the child is ready; the process lives
     * on. */
    struct forker f = {.fd = rep[1], .child = -1};
    pthread_t t;
    pthread_mutex_lock(&forker_hold);
    pthread_create(&t, NULL, fork_then_end, &f);
    ok = next_report(rep[0]) == 'r';
    pthread_mutex_unlock(&forker_hold);
    pthread_join(t, NULL);
    ok = ok && next_report(rep[0]) == 'u';
    if (f.child > 0)
        kill(f.child, SIGTERM);
    st = wait_status(f.child);
    checkf("thread_end_pdeathsig_only", ok && WIFEXITED(st) && WEXITSTATUS(st) == 1,
           "status %#x", st);
    close(rep[0]);
    close(rep[1]);
}

/* A fault-type signal sent to a child right after fork ends it: picos's
 * forked child cleared the signals its runtime held after one could
 * already have arrived (the fault types are never blocked by the host),
 * and the child then waited in pause() forever (LTP kill11). */
static void fault_signal_right_after_fork(void)
{
    static const int sigs[] = {SIGTRAP, SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGSYS};
    struct rlimit old, none = {0, 0};
    getrlimit(RLIMIT_CORE, &old);
    none.rlim_max = old.rlim_max;
    setrlimit(RLIMIT_CORE, &none); /* no core files */
    int ok = 1;
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        for (int n = 0; n < 10; n++) {
            pid_t pid = fork();
            if (pid == 0) {
                pause();
                _exit(0);
            }
            kill(pid, sigs[i]);
            int st = wait_status(pid);
            if (!WIFSIGNALED(st) || WTERMSIG(st) != sigs[i]) {
                fprintf(stderr, "signal %d: status %#x\n", sigs[i], st);
                ok = 0;
            }
        }
    }
    setrlimit(RLIMIT_CORE, &old);
    check("fault_signal_right_after_fork", ok);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "count-signals") == 0)
        count_signals_child(atoi(argv[2]), 0);
    conf_init();
    pid_t me = getpid();
    int r, e, st;

    /* fork tree: 3 children with distinct exit codes, collected by wait4 */
    {
        pid_t kids[3];
        int codes[3] = { 11, 22, 33 };
        for (int i = 0; i < 3; i++) {
            kids[i] = fork();
            if (kids[i] == 0) {
                sleep_ms(10 * (3 - i));
                _exit(codes[i]);
            }
        }
        int got[3], matched = 0, rusage_ok = 1;
        for (int i = 0; i < 3; i++) {
            struct rusage ru;
            pid_t w = wait4(-1, &st, 0, &ru);
            got[i] = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            for (int j = 0; j < 3; j++)
                if (w == kids[j] && got[i] == codes[j])
                    matched++;
            rusage_ok &= ru.ru_utime.tv_sec >= 0;
        }
        qsort(got, 3, sizeof got[0], cmp_int);
        show("wait4_collected", "%d %d %d", got[0], got[1], got[2]);
        check("wait4_pid_matches_code", matched == 3);
        check("wait4_rusage", rusage_ok);
        r = wait(&st); e = errno;
        check_errno("wait_no_children_echild", r, e, ECHILD);
    }

    /* grandchildren: a 2-level tree, each level reports its subtree sum */
    {
        pid_t pid = fork();
        if (pid == 0) {
            int sum = 0;
            for (int i = 1; i <= 3; i++) {
                pid_t g = fork();
                if (g == 0)
                    _exit(i);
                int s;
                waitpid(g, &s, 0);
                sum += WEXITSTATUS(s);
            }
            _exit(sum);
        }
        waitpid(pid, &st, 0);
        check("fork_tree_grandchildren", WIFEXITED(st) && WEXITSTATUS(st) == 6);
    }

    /* waitid: exited, WNOHANG on a running child, killed child */
    {
        int p[2];
        pipe(p);
        pid_t pid = fork();
        if (pid == 0) {
            char c;
            close(p[1]);
            read(p[0], &c, 1); /* wait for the parent */
            _exit(44);
        }
        close(p[0]);
        siginfo_t si;
        memset(&si, 0, sizeof si);
        r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG);
        check("waitid_wnohang_running", r == 0 && si.si_pid == 0);
        r = waitpid(pid, &st, WNOHANG);
        check("waitpid_wnohang_running", r == 0);
        write(p[1], "go", 1);
        close(p[1]);
        memset(&si, 0, sizeof si);
        r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
        check("waitid_wnowait", r == 0 && si.si_pid == pid && si.si_status == 44);
        memset(&si, 0, sizeof si);
        r = waitid(P_ALL, 0, &si, WEXITED);
        check("waitid_exited", r == 0 && si.si_pid == pid);
        check("waitid_code_exited", si.si_code == CLD_EXITED);
        check("waitid_status", si.si_status == 44);
        check("waitid_signo_sigchld", si.si_signo == SIGCHLD);
        check("waitid_uid", si.si_uid == getuid());

        pid = fork();
        if (pid == 0) {
            for (;;)
                pause();
        }
        kill(pid, SIGKILL);
        memset(&si, 0, sizeof si);
        r = waitid(P_PID, (id_t)pid, &si, WEXITED);
        check("waitid_killed", r == 0 && si.si_code == CLD_KILLED && si.si_status == SIGKILL);

        pid = fork();
        if (pid == 0) {
            for (;;)
                pause();
        }
        kill(pid, SIGTERM);
        waitpid(pid, &st, 0);
        check("waitpid_wifsignaled", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    }

    /* stop / continue reporting */
    {
        pid_t pid = fork();
        if (pid == 0) {
            for (;;)
                pause();
        }
        kill(pid, SIGSTOP);
        r = waitpid(pid, &st, WUNTRACED);
        check("waitpid_wuntraced_stopped", r == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
        kill(pid, SIGCONT);
        r = waitpid(pid, &st, WCONTINUED);
        check("waitpid_wcontinued", r == pid && WIFCONTINUED(st));
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        check("stopped_child_killed", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    }

    /* getppid in child */
    {
        pid_t pid = fork();
        if (pid == 0)
            _exit(getppid() == me ? 0 : 1);
        waitpid(pid, &st, 0);
        check("child_getppid_is_parent", WIFEXITED(st) && WEXITSTATUS(st) == 0);
        check("fork_returns_child_pid", pid > 0 && pid != me);
    }

    /* copy-on-write */
    {
        int stack_value = 5;
        int *heap = malloc(sizeof *heap);
        *heap = 7;
        pid_t pid = fork();
        if (pid == 0) {
            global_value = 200;
            stack_value = 6;
            *heap = 8;
            _exit(global_value == 200 && stack_value == 6 && *heap == 8 ? 0 : 1);
        }
        waitpid(pid, &st, 0);
        check("cow_child_saw_own_writes", WIFEXITED(st) && WEXITSTATUS(st) == 0);
        check("cow_global_unchanged", global_value == 100);
        check("cow_stack_unchanged", stack_value == 5);
        check("cow_heap_unchanged", *heap == 7);
        free(heap);
    }

    /* pipes between parent and child, both directions */
    {
        int up[2], down[2];
        pipe(up);
        pipe(down);
        pid_t pid = fork();
        if (pid == 0) {
            close(up[0]);
            close(down[1]);
            char buf[64] = {0};
            ssize_t n = read_full(down[0], buf, sizeof buf - 1);
            for (ssize_t i = 0; i < n; i++)
                if (buf[i] >= 'a' && buf[i] <= 'z')
                    buf[i] = (char)(buf[i] - 32);
            write_all(up[1], buf, (size_t)n);
            _exit(0);
        }
        close(up[1]);
        close(down[0]);
        write_all(down[1], "hello child", 11);
        close(down[1]);
        char buf[64] = {0};
        ssize_t n = read_full(up[0], buf, sizeof buf - 1);
        close(up[0]);
        waitpid(pid, &st, 0);
        show("pipe_roundtrip", "%s", n > 0 ? buf : "(none)");
        check("pipe_roundtrip", n == 11 && !strcmp(buf, "HELLO CHILD"));
    }

    /* file offset shared across fork */
    {
        char path[] = "/tmp/picos-fork-XXXXXX";
        int fd = mkstemp(path);
        unlink(path);
        pid_t pid = fork();
        if (pid == 0) {
            write(fd, "child!", 6);
            _exit(0);
        }
        waitpid(pid, &st, 0);
        check("fork_shared_file_offset", lseek(fd, 0, SEEK_CUR) == 6);
        close(fd);
    }

    /* process groups */
    {
        pid_t pid = fork();
        if (pid == 0) {
            setpgid(0, 0);
            _exit(getpgrp() == getpid() ? 0 : 1);
        }
        waitpid(pid, &st, 0);
        check("child_setpgid", WIFEXITED(st) && WEXITSTATUS(st) == 0);
        pid = fork();
        if (pid == 0)
            _exit(12);
        r = waitpid(0, &st, 0); /* any child in our process group */
        check("waitpid_same_pgrp", r == pid && WEXITSTATUS(st) == 12);
    }

    /* subreaper: orphaned grandchild is reparented to us */
    {
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        int p[2];
        pipe(p);
        pid_t pid = fork();
        if (pid == 0) {
            pid_t g = fork();
            if (g == 0) {
                close(p[0]);
                /* Until the parent is gone (up to 5 s: a busy machine). */
                pid_t parent = getppid();
                for (int i = 0; i < 500 && getppid() == parent && parent != me; i++)
                    sleep_ms(10);
                int ok = getppid() == me;
                write(p[1], ok ? "y" : "n", 1);
                _exit(21);
            }
            _exit(0);
        }
        close(p[1]);
        waitpid(pid, &st, 0);
        char c = 0;
        read(p[0], &c, 1);
        close(p[0]);
        check("subreaper_getppid", c == 'y');
        r = wait(&st);
        check("subreaper_reaps_orphan", r > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 21);
        prctl(PR_SET_CHILD_SUBREAPER, 0);
    }

    /* SIGCHLD ignored: children are reaped automatically */
    {
        signal(SIGCHLD, SIG_IGN);
        pid_t pid = fork();
        if (pid == 0)
            _exit(1);
        r = waitpid(pid, &st, 0); e = errno;
        check_errno("sigchld_ign_autoreap", r, e, ECHILD);
        signal(SIGCHLD, SIG_DFL);
    }

    /* many sequential forks */
    {
        int ok = 1;
        for (int i = 0; i < 50; i++) {
            pid_t pid = fork();
            if (pid == 0)
                _exit(i);
            if (waitpid(pid, &st, 0) != pid || WEXITSTATUS(st) != i)
                ok = 0;
        }
        check("fifty_forks", ok);
    }

    /* The signal mask is inherited across fork; pending signals are not:
     * SIGUSR2 stays pending on the host, SIGTRAP (never blocked on the host
     * under picos) in the runtime. */
    for (int k = 0; k < 2; k++) {
        int sig = k ? SIGTRAP : SIGUSR2;
        sigset_t s, old;
        sigemptyset(&s);
        sigaddset(&s, sig);
        sigprocmask(SIG_BLOCK, &s, &old);
        raise(sig); /* pending in the parent */
        pid_t c = fork();
        if (c == 0) {
            sigset_t cur, pend;
            sigprocmask(SIG_BLOCK, NULL, &cur);
            sigpending(&pend);
            _exit((sigismember(&cur, sig) ? 0 : 1) | (sigismember(&pend, sig) ? 2 : 0));
        }
        int st = 0;
        waitpid(c, &st, 0);
        checkf(k ? "fork_mask_inherited_trap" : "fork_mask_inherited", WIFEXITED(st) && (WEXITSTATUS(st) & 1) == 0, "status %#x", st);
        checkf(k ? "fork_pending_not_inherited_trap" : "fork_pending_not_inherited", WIFEXITED(st) && (WEXITSTATUS(st) & 2) == 0, "status %#x", st);
        sigset_t pend;
        sigpending(&pend);
        check(k ? "fork_parent_still_pending_trap" : "fork_parent_still_pending", sigismember(&pend, sig));
        signal(sig, SIG_IGN); /* discard it */
        sigprocmask(SIG_SETMASK, &old, NULL);
        signal(sig, SIG_DFL);
    }
    clone_sighand_process();
    parent_sigsys();
    fault_signal_right_after_fork();
    return conf_finish("fork_wait");
}
