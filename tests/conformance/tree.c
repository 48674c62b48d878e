/* The processes of a tree: signals between them (child, parent, sibling,
 * a process group, the caller's own group), waits on any child, on the
 * caller's group and on another group (waitpid and waitid), zombies and
 * their reaping, SIGCHLD's SA_NOCLDSTOP and SA_NOCLDWAIT, an orphaned
 * process group's SIGHUP and SIGCONT, and setpgid's rules across fork and
 * exec. Under picos every process of the tree is a picoprocess.
 *
 * Every wait is on a pipe or a child, never on time: a lost signal or a
 * wrong wait shows as a FAIL (or, at worst, the test's timeout). */
#include "conformance.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/prctl.h>

/* The handlers write their signal's number to this pipe. */
static int sigpipe_w = -1;

static void note_signal(int sig)
{
    unsigned char b = (unsigned char)sig;
    int saved = errno;
    (void)!write(sigpipe_w, &b, 1);
    errno = saved;
}

/* One byte from `fd` (retried on EINTR); -1 at EOF or on error. */
static int read_byte(int fd)
{
    unsigned char b;
    for (;;) {
        ssize_t n = read(fd, &b, 1);
        if (n == 1)
            return b;
        if (n < 0 && errno == EINTR)
            continue;
        return -1;
    }
}

static void write_byte(int fd, int v)
{
    unsigned char b = (unsigned char)v;
    (void)!write(fd, &b, 1);
}

/* A child that waits for `sig` (handled, blocked until it waits), says so
 * on `out`, then exits 0. `ready` gets a byte once the handler is set. */
static pid_t signal_catcher(int sig, int ready, int out)
{
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, sig);
        sigprocmask(SIG_BLOCK, &block, &old);
        int p[2];
        if (pipe(p) != 0)
            _exit(2);
        sigpipe_w = p[1];
        conf_handle(sig, note_signal, 0);
        write_byte(ready, 1);
        sigsuspend(&old);
        write_byte(out, read_byte(p[0]) == sig ? 'y' : 'n');
        _exit(0);
    }
    return pid;
}

/* Parent to child, child to parent, and child to sibling. */
static void test_signals_between(void)
{
    int ready[2], out[2];
    if (pipe(ready) != 0 || pipe(out) != 0)
        return;
    pid_t c = signal_catcher(SIGUSR1, ready[1], out[1]);
    read_byte(ready[0]);
    kill(c, SIGUSR1);
    check("kill_parent_to_child", read_byte(out[0]) == 'y');
    check("kill_parent_to_child_exit", WIFEXITED(wait_status(c)));

    /* Child to parent: the parent's handler notes it. */
    int p[2];
    if (pipe(p) != 0)
        return;
    sigpipe_w = p[1];
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigprocmask(SIG_BLOCK, &block, &old);
    conf_handle(SIGUSR2, note_signal, 0);
    pid_t k = fork();
    if (k == 0) {
        kill(getppid(), SIGUSR2);
        _exit(0);
    }
    int st = wait_status(k);
    sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    check("kill_child_to_parent", WIFEXITED(st) && read_byte(p[0]) == SIGUSR2);
    conf_handle(SIGUSR2, SIG_DFL, 0);
    close(p[0]);
    close(p[1]);

    /* Sibling to sibling: the first child's pid goes to the second. */
    c = signal_catcher(SIGUSR1, ready[1], out[1]);
    read_byte(ready[0]);
    pid_t s = fork();
    if (s == 0) {
        _exit(kill(c, SIGUSR1) == 0 ? 0 : 1);
    }
    int sst = wait_status(s);
    check("kill_sibling_to_sibling", WIFEXITED(sst) && WEXITSTATUS(sst) == 0 &&
                                         read_byte(out[0]) == 'y');
    check("kill_sibling_catcher_exit", WIFEXITED(wait_status(c)));
    close(ready[0]);
    close(ready[1]);
    close(out[0]);
    close(out[1]);
}

/* kill(-pgid), and kill(0) from inside a group. */
static void test_group_signals(void)
{
    int ready[2];
    if (pipe(ready) != 0)
        return;
    pid_t pids[3];
    pid_t pgid = 0;
    for (int i = 0; i < 3; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            setpgid(0, pgid);
            write_byte(ready[1], 1);
            for (;;)
                pause();
        }
        setpgid(pid, pgid);
        if (pgid == 0)
            pgid = pid;
        pids[i] = pid;
        read_byte(ready[0]);
    }
    check("getpgid_of_child", getpgid(pids[2]) == pgid);
    check("kill_group", kill(-pgid, SIGTERM) == 0);
    int all = 1;
    for (int i = 0; i < 3; i++) {
        int st = wait_status(pids[i]);
        all &= WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM;
    }
    check("kill_group_reached_all", all);
    errno = 0;
    long r = kill(-pgid, SIGTERM);
    check_errno("kill_empty_group", r, errno, ESRCH);

    /* kill(0): a leader and its two children, in a group of their own,
     * the leader signals its group; the caller is not in it. */
    int out[2];
    if (pipe(out) != 0)
        return;
    pid_t leader = fork();
    if (leader == 0) {
        setpgid(0, 0);
        signal(SIGUSR1, SIG_IGN);
        int r2[2];
        if (pipe(r2) != 0)
            _exit(2);
        pid_t kids[2];
        for (int i = 0; i < 2; i++) {
            kids[i] = fork();
            if (kids[i] == 0) {
                /* Default action for SIGUSR1 here: the signal kills. */
                signal(SIGUSR1, SIG_DFL);
                write_byte(r2[1], 1);
                for (;;)
                    pause();
            }
            read_byte(r2[0]);
        }
        kill(0, SIGUSR1);
        int ok = 1;
        for (int i = 0; i < 2; i++) {
            int st = wait_status(kids[i]);
            ok &= WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1;
        }
        _exit(ok ? 0 : 1);
    }
    int lst = wait_status(leader);
    check("kill_own_group_reached_members", WIFEXITED(lst) && WEXITSTATUS(lst) == 0);
    close(out[0]);
    close(out[1]);
    close(ready[0]);
    close(ready[1]);
}

/* A child that exits with `code` once it reads a byte from `go`. */
static pid_t exiter(int code, int go, pid_t pgid)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (pgid >= 0)
            setpgid(0, pgid);
        read_byte(go);
        _exit(code);
    }
    if (pgid >= 0)
        setpgid(pid, pgid == 0 ? pid : pgid);
    return pid;
}

/* waitpid(-1), waitpid(0), waitpid(-pgid); waitid(P_ALL), waitid(P_PGID). */
static void test_wait_any(void)
{
    int go[2];
    if (pipe(go) != 0)
        return;
    /* Three children of ours, in our group. */
    pid_t a = exiter(3, go[0], -1);
    pid_t b = exiter(4, go[0], -1);
    pid_t c = exiter(5, go[0], -1);
    for (int i = 0; i < 3; i++)
        write_byte(go[1], 1);
    int seen = 0, matched = 0;
    for (int i = 0; i < 3; i++) {
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, 0)) < 0 && errno == EINTR)
            ;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if ((w == a && code == 3) || (w == b && code == 4) || (w == c && code == 5))
            matched++;
        seen++;
    }
    check("waitpid_any_all_three", seen == 3 && matched == 3);
    errno = 0;
    long r = waitpid(-1, NULL, WNOHANG);
    check_errno("waitpid_any_none_left", r, errno, ECHILD);

    /* waitpid(0) waits for our group only: a child in another group is
     * not reaped by it, nor reported by WNOHANG. */
    int go2[2];
    if (pipe(go2) != 0)
        return;
    pid_t other = exiter(7, go2[0], 0);
    pid_t mine = exiter(8, go[0], -1);
    write_byte(go2[1], 1); /* the other group's child exits first */
    /* Wait until the other child is a zombie: waitid with WNOWAIT. */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    while (waitid(P_PID, other, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    int st = 0;
    pid_t w = waitpid(0, &st, WNOHANG);
    check("waitpid_own_group_skips_other", w == 0);
    write_byte(go[1], 1);
    while ((w = waitpid(0, &st, 0)) < 0 && errno == EINTR)
        ;
    check("waitpid_own_group", w == mine && WIFEXITED(st) && WEXITSTATUS(st) == 8);
    while ((w = waitpid(-other, &st, 0)) < 0 && errno == EINTR)
        ;
    check("waitpid_other_group", w == other && WIFEXITED(st) && WEXITSTATUS(st) == 7);

    /* waitid(P_PGID) and waitid(P_ALL). */
    pid_t g1 = exiter(9, go2[0], 0);
    pid_t g2 = exiter(10, go2[0], g1);
    write_byte(go2[1], 1);
    write_byte(go2[1], 1);
    int got = 0;
    for (int i = 0; i < 2; i++) {
        memset(&si, 0, sizeof si);
        while (waitid(P_PGID, (id_t)g1, &si, WEXITED) < 0 && errno == EINTR)
            ;
        if ((si.si_pid == g1 && si.si_status == 9) || (si.si_pid == g2 && si.si_status == 10))
            got++;
    }
    check("waitid_pgid", got == 2);
    pid_t x = exiter(11, go[0], -1);
    write_byte(go[1], 1);
    memset(&si, 0, sizeof si);
    while (waitid(P_ALL, 0, &si, WEXITED) < 0 && errno == EINTR)
        ;
    check("waitid_all", si.si_pid == x && si.si_code == CLD_EXITED && si.si_status == 11);
    close(go[0]);
    close(go[1]);
    close(go2[0]);
    close(go2[1]);
}

/* The state letter of process `pid` in /proc (0 if unreadable). */
static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* A child that has exited is a zombie until it is waited for; then it is
 * gone. */
static void test_zombies(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    while (waitid(P_PID, pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    check("zombie_state_z", proc_state(pid) == 'Z');
    check("zombie_kill_0_finds_it", kill(pid, 0) == 0);
    check("zombie_reaped", WIFEXITED(wait_status(pid)));
    errno = 0;
    long r = kill(pid, 0);
    check_errno("reaped_kill_0", r, errno, ESRCH);
    check("reaped_no_proc_entry", proc_state(pid) == 0);
}

static volatile sig_atomic_t chld_count;
static void on_chld(int sig)
{
    (void)sig;
    chld_count++;
}

/* SA_NOCLDSTOP: no SIGCHLD for a child that stops or continues, one for
 * its end. SA_NOCLDWAIT: children leave no zombie, and wait finds none. */
static void test_sigchld_flags(void)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &old);
    conf_handle(SIGCHLD, on_chld, SA_NOCLDSTOP);
    chld_count = 0;
    pid_t pid = fork();
    if (pid == 0) {
        raise(SIGSTOP);
        _exit(6);
    }
    int st;
    while (waitpid(pid, &st, WUNTRACED) < 0 && errno == EINTR)
        ;
    int stopped = WIFSTOPPED(st);
    sigset_t pending;
    sigpending(&pending);
    check("nocldstop_stopped", stopped);
    check("nocldstop_no_sigchld_on_stop", !sigismember(&pending, SIGCHLD));
    kill(pid, SIGCONT);
    st = wait_status(pid);
    sigpending(&pending);
    check("nocldstop_sigchld_on_exit",
          WIFEXITED(st) && WEXITSTATUS(st) == 6 && sigismember(&pending, SIGCHLD));
    sigprocmask(SIG_SETMASK, &old, NULL);
    check("nocldstop_handler_ran_once", chld_count == 1);

    conf_handle(SIGCHLD, SIG_DFL, SA_NOCLDWAIT);
    int done[2];
    if (pipe(done) != 0)
        return;
    pid = fork();
    if (pid == 0) {
        close(done[0]);
        _exit(0); /* done[1] closes with it */
    }
    close(done[1]);
    read_byte(done[0]); /* EOF: the child has let go of its files */
    close(done[0]);
    /* With SA_NOCLDWAIT the kernel reaps it: wait blocks until no child is
     * left, then fails with ECHILD. */
    errno = 0;
    long r;
    while ((r = waitpid(-1, &st, 0)) < 0 && errno == EINTR)
        ;
    check_errno("nocldwait_no_zombie", r, errno, ECHILD);
    conf_handle(SIGCHLD, SIG_DFL, 0);
}

/* A process group that becomes orphaned with a stopped member: the kernel
 * sends each member SIGHUP and SIGCONT (POSIX, orphaned process groups).
 * All in a session of its own, so that whatever adopts the orphan (init,
 * or a subreaper above us) is outside the session and the group really is
 * orphaned wherever the test runs. */
static void test_orphaned_group(void)
{
    int out[2];
    if (pipe(out) != 0)
        return;
    pid_t s = fork();
    if (s == 0) {
        if (setsid() < 0)
            _exit(2);
        pid_t mid = fork();
        if (mid == 0) {
            setpgid(0, 0); /* a new group: its link outside is this process */
            int ready[2];
            if (pipe(ready) != 0)
                _exit(2);
            pid_t g = fork();
            if (g == 0) {
                int p[2];
                if (pipe(p) != 0)
                    _exit(2);
                sigpipe_w = p[1];
                conf_handle(SIGHUP, note_signal, 0);
                conf_handle(SIGCONT, note_signal, 0);
                write_byte(ready[1], 1);
                raise(SIGSTOP);
                /* Continued: both handlers have run (Linux runs SIGCONT's
                 * first, though it sends SIGHUP first). */
                int first = read_byte(p[0]);
                int second = read_byte(p[0]);
                int hup = first == SIGHUP || second == SIGHUP;
                int cont = first == SIGCONT || second == SIGCONT;
                write_byte(out[1], hup && cont ? 'y' : 'n');
                _exit(0);
            }
            read_byte(ready[0]);
            int st;
            while (waitpid(g, &st, WUNTRACED) < 0 && errno == EINTR)
                ;
            /* g is stopped: exiting orphans the group. */
            _exit(WIFSTOPPED(st) ? 0 : 1);
        }
        int st = wait_status(mid);
        _exit(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1);
    }
    int st = wait_status(s);
    check("orphan_parent_saw_stop", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    check("orphaned_group_hup_and_cont", read_byte(out[0]) == 'y');
    close(out[0]);
    close(out[1]);
}

/* setpgid: a parent may move its child until the child execs (EACCES
 * then); not a process that is not its child (ESRCH); a session leader
 * cannot move (EPERM). getsid of a child is the caller's session. */
static void test_setpgid_rules(const char *self)
{
    int go[2];
    if (pipe(go) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        read_byte(go[0]);
        _exit(0);
    }
    check("setpgid_child_before_exec", setpgid(pid, pid) == 0 && getpgid(pid) == pid);
    check("getsid_of_child", getsid(pid) == getsid(0));
    write_byte(go[1], 1);
    wait_status(pid);

    /* After the child execs (this program with "pause"), EACCES. */
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
        return;
    pid = fork();
    if (pid == 0) {
        execl(self, self, "pause", (char *)NULL);
        _exit(127);
    }
    /* The exec closed `ready`'s write end: EOF says it is done. */
    close(ready[1]);
    read_byte(ready[0]);
    close(ready[0]);
    errno = 0;
    long r = setpgid(pid, pid);
    check_errno("setpgid_child_after_exec", r, errno, EACCES);
    kill(pid, SIGKILL);
    wait_status(pid);

    errno = 0;
    r = setpgid(getppid(), getppid());
    check_errno("setpgid_not_a_child", r, errno, ESRCH);

    pid = fork();
    if (pid == 0) {
        if (setsid() < 0)
            _exit(2);
        errno = 0;
        _exit(setpgid(0, 0) == 0 ? 0 : errno == EPERM ? 1 : 3);
    }
    int st = wait_status(pid);
    check("setpgid_session_leader_eperm", WIFEXITED(st) && WEXITSTATUS(st) == 1);
    close(go[0]);
    close(go[1]);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "pause") == 0) {
        for (;;)
            pause();
    }
    conf_init();
    test_signals_between();
    test_group_signals();
    test_wait_any();
    test_zombies();
    test_sigchld_flags();
    test_orphaned_group();
    test_setpgid_rules(argv[0]);
    return conf_finish("tree");
}
