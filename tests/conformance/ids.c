/* Answers picos serves inside the library OS, checked against the host's
 * own view (/proc) and against each other: pids, the parent's pid after the
 * parent dies, credentials, umask, uname, resource limits, time. */
#include "conformance.h"

#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The parent pid as the kernel reports it in /proc/self/stat. */
/* sched_getaffinity: the size the kernel reports and the mask, through
 * changes the program makes (picos caches a thread's own mask). */
static void *affinity_thread(void *arg)
{
    cpu_set_t one, got;
    CPU_ZERO(&one);
    CPU_SET(*(int *)arg, &one);
    int ok = sched_setaffinity(0, sizeof one, &one) == 0 &&
             sched_getaffinity(0, sizeof got, &got) == 0 && CPU_EQUAL(&one, &got);
    return (void *)(long)ok;
}

static void check_affinity(void)
{
    cpu_set_t orig, got, one;
    /* The raw call writes only the kernel's mask size. */
    CPU_ZERO(&orig);
    CPU_ZERO(&got);
    long n = syscall(SYS_sched_getaffinity, 0, sizeof orig, &orig);
    long n2 = syscall(SYS_sched_getaffinity, 0, sizeof got, &got);
    checkf("affinity_size", n > 0 && n % 8 == 0 && n == n2, "n=%ld n2=%ld", n, n2);
    check("affinity_repeatable", CPU_EQUAL(&orig, &got) && CPU_COUNT(&orig) > 0);
    CPU_ZERO(&got);
    show("affinity_by_tid_same", "%s",
         syscall(SYS_sched_getaffinity, (pid_t)syscall(SYS_gettid), sizeof got, &got) == n &&
                 CPU_EQUAL(&orig, &got)
             ? "yes"
             : "no");
    int first = -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &orig)) {
            first = i;
            break;
        }
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    check("affinity_set_one", sched_setaffinity(0, sizeof one, &one) == 0);
    check("affinity_sees_change", sched_getaffinity(0, sizeof got, &got) == 0 && CPU_EQUAL(&got, &one));
    check("affinity_restore", sched_setaffinity(0, sizeof orig, &orig) == 0);
    check("affinity_sees_restore", sched_getaffinity(0, sizeof got, &got) == 0 && CPU_EQUAL(&got, &orig));
    /* Another thread's change is its own. */
    pthread_t th;
    void *res = 0;
    pthread_create(&th, NULL, affinity_thread, &first);
    pthread_join(th, &res);
    check("affinity_thread_own", res == (void *)1L);
    check("affinity_main_unchanged", sched_getaffinity(0, sizeof got, &got) == 0 && CPU_EQUAL(&got, &orig));
    /* A forked child inherits the mask. */
    pid_t child = fork();
    if (child == 0)
        _exit(sched_getaffinity(0, sizeof got, &got) == 0 && CPU_EQUAL(&got, &orig) ? 0 : 1);
    int st = 0;
    waitpid(child, &st, 0);
    check("affinity_fork_inherits", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* Errors, as the kernel gives them. */
    long r = syscall(SYS_sched_getaffinity, 0, 3, &got);
    check_errno("affinity_odd_size", r, errno, EINVAL);
    r = syscall(SYS_sched_getaffinity, 0, 0, &got);
    check_errno("affinity_zero_size", r, errno, EINVAL);
    r = syscall(SYS_sched_getaffinity, 0, sizeof got, (void *)8);
    check_errno("affinity_bad_pointer", r, errno, EFAULT);
    r = syscall(SYS_sched_getaffinity, 0x3fffffff, sizeof got, &got);
    check_errno("affinity_no_such_thread", r, errno, ESRCH);
}

static long proc_ppid(void)
{
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    long ppid = -1;
    if (p)
        sscanf(p + 2, "%*c %ld", &ppid);
    return ppid;
}

int main(void)
{
    conf_init();
    pid_t pid = getpid();
    check("getpid_matches_raw", pid == (pid_t)syscall(SYS_getpid));
    check("gettid_is_pid_in_main", (pid_t)syscall(SYS_gettid) == pid);
    check("getppid_matches_proc", getppid() == proc_ppid());

    /* getppid after the parent exits: a grandchild outlives its parent. */
    int pfd[2];
    if (pipe(pfd) != 0)
        return 2;
    pid_t child = fork();
    if (child == 0) {
        pid_t first = getpid(); /* the grandchild's parent, about to die */
        pid_t gc = fork();
        if (gc == 0) {
            char ok = 'n';
            for (int i = 0; i < 2000; i++) {
                if (getppid() != first) {
                    ok = getppid() == proc_ppid() ? 'y' : 'w';
                    break;
                }
                usleep(1000);
            }
            write(pfd[1], &ok, 1);
            _exit(0);
        }
        _exit(0); /* the grandchild's parent dies at once */
    }
    close(pfd[1]);
    waitpid(child, NULL, 0);
    char res = 0;
    read(pfd[0], &res, 1);
    checkf("getppid_after_parent_exit", res == 'y', "got %c", res);

    /* A forked child's parent is us; its own pid is new. */
    child = fork();
    if (child == 0)
        _exit(getppid() == pid && getpid() != pid && getpid() == (pid_t)syscall(SYS_getpid) ? 0 : 1);
    int st;
    waitpid(child, &st, 0);
    check("fork_child_ids", WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* vfork child: own pid, parent's pid is ours. */
    child = vfork();
    if (child == 0)
        _exit(getppid() == pid && getpid() != pid ? 0 : 1);
    waitpid(child, &st, 0);
    check("vfork_child_ids", WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* Process group and session, as /proc/self/stat has them. */
    {
        FILE *f = fopen("/proc/self/stat", "r");
        char buf[1024] = "";
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        long pgrp = -1, session = -1;
        char *p = strrchr(buf, ')');
        if (p)
            sscanf(p + 2, "%*c %*d %ld %ld", &pgrp, &session);
        check("getpgrp_matches_proc", getpgrp() == pgrp && getpgid(0) == pgrp && getpgid(pid) == pgrp);
        check("getsid_matches_proc", getsid(0) == session && getsid(pid) == session);
    }
    /* A child moved to its own group by itself, and one moved by its parent
     * (allowed until the child execs), and a new session. */
    {
        int go[2], ready[2];
        pipe(go);
        pipe(ready);
        pid_t ch = fork();
        if (ch == 0) {
            char c;
            pid_t before = getpgrp();
            write(ready[1], "r", 1);
            read(go[0], &c, 1); /* the parent has moved us by now */
            _exit(getpgrp() == getpid() && before != getpid() ? 0 : 1);
        }
        char c;
        read(ready[0], &c, 1);
        setpgid(ch, ch);
        write(go[1], "x", 1);
        waitpid(ch, &st, 0);
        check("pgid_changed_by_parent", WIFEXITED(st) && WEXITSTATUS(st) == 0);
        ch = fork();
        if (ch == 0) {
            pid_t old_sid = getsid(0);
            int ok = setsid() == getpid() && getsid(0) == getpid() && getpgrp() == getpid() && old_sid != getpid();
            _exit(ok ? 0 : 1);
        }
        waitpid(ch, &st, 0);
        check("setsid_new_session", WIFEXITED(st) && WEXITSTATUS(st) == 0);
        close(go[0]);
        close(go[1]);
        close(ready[0]);
        close(ready[1]);
    }
    {
        unsigned cpu = 9999, node = 9999;
        long r = syscall(SYS_getcpu, &cpu, &node, NULL);
        check("getcpu", r == 0 && cpu < (unsigned)sysconf(_SC_NPROCESSORS_CONF) && node < 1024);
    }

    /* Credentials. */
    uid_t r, e, s;
    gid_t gr, ge, gs;
    getresuid(&r, &e, &s);
    getresgid(&gr, &ge, &gs);
    check("uid_consistent", getuid() == r && geteuid() == e);
    check("gid_consistent", getgid() == gr && getegid() == ge);
    show("uid", "%u %u %u", r, e, s);
    show("gid", "%u %u %u", gr, ge, gs);
    long ret;
    int err;
    int ng = getgroups(0, NULL);
    gid_t groups[256];
    check("getgroups_count", ng >= 0 && getgroups(256, groups) == ng);
    if (ng > 1) {
        ret = getgroups(1, groups);
        err = errno;
        check_errno("getgroups_too_small", ret, err, EINVAL);
    }
    if (geteuid() == 0) {
        /* As root: drop the effective gid and see it change. */
        check("setegid", setegid(1) == 0 && getegid() == 1);
        check("setegid_back", setegid(gr) == 0 && getegid() == gr);
    }

    /* umask: returns the previous value, every time. */
    mode_t m0 = umask(022);
    check("umask_set", umask(077) == 022);
    check("umask_same", umask(077) == 077);
    check("umask_restore", umask(m0) == 077);

    /* uname matches the host's (/proc). */
    struct utsname u;
    uname(&u);
    FILE *f = fopen("/proc/sys/kernel/osrelease", "r");
    char rel[128] = "";
    if (f) {
        fgets(rel, sizeof rel, f);
        fclose(f);
        rel[strcspn(rel, "\n")] = 0;
    }
    check("uname_release_matches_proc", strcmp(u.release, rel) == 0);
    show("uname_sysname", "%s", u.sysname);
    show("uname_machine", "%s", u.machine);

    /* Resource limits: read, lower, read back, via both interfaces. */
    struct rlimit rl, rl2;
    getrlimit(RLIMIT_NOFILE, &rl);
    rlim_t want = rl.rlim_cur > 64 ? rl.rlim_cur - 1 : rl.rlim_cur;
    rl2 = rl;
    rl2.rlim_cur = want;
    check("setrlimit", setrlimit(RLIMIT_NOFILE, &rl2) == 0);
    struct rlimit rl3;
    getrlimit(RLIMIT_NOFILE, &rl3);
    check("getrlimit_after_set", rl3.rlim_cur == want);
    struct rlimit rl4;
    prlimit(0, RLIMIT_NOFILE, NULL, &rl4);
    check("prlimit_read", rl4.rlim_cur == want && rl4.rlim_max == rl.rlim_max);
    prlimit(0, RLIMIT_NOFILE, &rl, NULL);
    getrlimit(RLIMIT_NOFILE, &rl3);
    check("prlimit_set_restores", rl3.rlim_cur == rl.rlim_cur);
    ret = syscall(SYS_getrlimit, 9999, &rl3);
    err = errno;
    check_errno("getrlimit_bad_resource", ret, err, EINVAL);

    /* Time as system calls (not the program's vDSO). */
    struct timespec a, b;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &a);
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &b);
    check("clock_monotonic_nondecreasing", b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec));
    struct timeval tv;
    syscall(SYS_gettimeofday, &tv, NULL);
    long t = syscall(SYS_time, NULL);
    check("time_agrees_with_gettimeofday", labs(t - (long)tv.tv_sec) <= 1);
    ret = syscall(SYS_clock_gettime, 12345, &a);
    err = errno;
    check_errno("clock_gettime_bad_clock", ret, err, EINVAL);
    ret = syscall(SYS_clock_gettime, CLOCK_REALTIME, (void *)8);
    err = errno;
    check_errno("clock_gettime_efault", ret, err, EFAULT);
    check_affinity();
    return conf_finish("ids");
}
