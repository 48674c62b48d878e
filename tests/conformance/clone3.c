/* clone3(2) for a new process: what clone(2) cannot say.
 *
 * - CLONE_CLEAR_SIGHAND: the child's handlers are SIG_DFL (ignored signals
 *   stay ignored, flags cleared), the parent's untouched; a signal the
 *   parent handles kills the child by its default action.
 * - set_tid: as root, the child gets the pid asked for; pid 1 is EEXIST;
 *   without CAP_SYS_ADMIN, EPERM (LTP clone304).
 * - CLONE_INTO_CGROUP: the child starts in the cgroup given (LTP clone303),
 *   where a cgroup2 hierarchy can be written; said so otherwise.
 * - CLONE_NEWTIME: the child has a time namespace of its own.
 */
#include "conformance.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#define CLONE_CLEAR_SIGHAND_ 0x100000000ULL
#define CLONE_INTO_CGROUP_ 0x200000000ULL

struct clone_args_ {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
        set_tid, set_tid_size, cgroup;
};

static long clone3_(struct clone_args_ *a)
{
    return syscall(SYS_clone3, a, sizeof *a);
}

static void on_usr1(int sig)
{
    (void)sig;
}

static void clear_sighand(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGUSR2, &sa, NULL);

    struct clone_args_ a = { .flags = CLONE_CLEAR_SIGHAND_, .exit_signal = SIGCHLD };
    long pid = clone3_(&a);
    if (pid == 0) {
        struct sigaction u1, u2;
        sigaction(SIGUSR1, NULL, &u1);
        sigaction(SIGUSR2, NULL, &u2);
        if (u1.sa_handler != SIG_DFL)
            _exit(3);
        if (u1.sa_flags & SA_RESTART)
            _exit(4);
        if (u2.sa_handler != SIG_IGN)
            _exit(5);
        /* (Not raise(): after a raw clone3, musl's cached thread id is
         * the parent's.) */
        pid_t self = (pid_t)syscall(SYS_getpid);
        kill(self, SIGUSR2); /* ignored */
        kill(self, SIGUSR1); /* default: ends the process */
        _exit(6);
    }
    int st = wait_status(pid);
    checkf("clear_sighand_child_dies_of_sigusr1", WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1,
           "pid %ld status %#x", pid, st);
    struct sigaction now;
    sigaction(SIGUSR1, NULL, &now);
    check("clear_sighand_parent_keeps_its_handler", now.sa_handler == on_usr1);

    struct clone_args_ both = { .flags = CLONE_CLEAR_SIGHAND_ | CLONE_SIGHAND | CLONE_VM,
                                .exit_signal = SIGCHLD };
    long r = clone3_(&both);
    int e = errno;
    check_errno("clear_sighand_with_sighand_einval", r, e, EINVAL);
}

static int pid_free(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld", pid);
    struct stat st;
    return kill((pid_t)pid, 0) < 0 && errno == ESRCH && stat(path, &st) < 0;
}

static void set_tid(void)
{
    pid_t one = 1;
    struct clone_args_ a = { .exit_signal = SIGCHLD, .set_tid = (uintptr_t)&one,
                             .set_tid_size = 1 };
    if (geteuid() != 0) {
        long r = clone3_(&a);
        int e = errno;
        if (r == 0)
            _exit(0);
        check_errno("set_tid_unprivileged_eperm", r, e, EPERM);
        return;
    }
    long r = clone3_(&a);
    int e = errno;
    if (r == 0)
        _exit(0);
    check_errno("set_tid_pid_1_eexist", r, e, EEXIST);

    long max = 32768;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 32768;
        fclose(f);
    }
    int got = 0;
    for (int i = 1; i <= 20 && !got; i++) {
        pid_t want = (pid_t)(300 + (getpid() + 7919L * i) % (max - 300));
        if (!pid_free(want))
            continue;
        struct clone_args_ b = { .exit_signal = SIGCHLD, .set_tid = (uintptr_t)&want,
                                 .set_tid_size = 1 };
        long pid = clone3_(&b);
        if (pid == 0)
            _exit(getpid() == want ? 0 : 7);
        if (pid < 0 && errno == EEXIST)
            continue; /* taken since */
        int st = wait_status(pid);
        checkf("set_tid_child_has_the_pid", pid == want && WIFEXITED(st) && WEXITSTATUS(st) == 0,
               "asked %d got %ld status %#x errno %d", want, pid, st, errno);
        got = 1;
    }
    if (!got)
        printf("set_tid_child_has_the_pid: skipped (no free pid found)\n");
}

/* The cgroup2 mount point, from /proc/self/mountinfo. */
static int cgroup2_mount(char *out, size_t n)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    char line[1024];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        char *dash = strstr(line, " - cgroup2 ");
        if (!dash)
            continue;
        char mnt[512];
        if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
            snprintf(out, n, "%s", mnt);
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static void into_cgroup(void)
{
    char mnt[512], dir[700];
    if (!cgroup2_mount(mnt, sizeof mnt)) {
        printf("into_cgroup: skipped (no cgroup2 hierarchy)\n");
        return;
    }
    snprintf(dir, sizeof dir, "%s/picos-conformance-clone3-%d", mnt, getpid());
    if (mkdir(dir, 0755) != 0) {
        printf("into_cgroup: skipped (cannot make a cgroup: %s)\n", errno_name(errno));
        return;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    struct clone_args_ a = { .flags = CLONE_INTO_CGROUP_, .exit_signal = SIGCHLD,
                             .cgroup = (uint64_t)fd };
    long pid = fd >= 0 ? clone3_(&a) : -1;
    if (pid == 0) {
        char buf[4096] = { 0 };
        int c = open("/proc/self/cgroup", O_RDONLY);
        ssize_t n = c >= 0 ? read(c, buf, sizeof buf - 1) : -1;
        const char *name = strrchr(dir, '/');
        _exit(n > 0 && strstr(buf, name) ? 0 : 8);
    }
    int st = wait_status(pid);
    checkf("into_cgroup_child_starts_there", WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "pid %ld status %#x errno %d", pid, st, errno);
    if (fd >= 0)
        close(fd);
    check("into_cgroup_removed", rmdir(dir) == 0);
}

/* CLONE_NEWTIME (whose bit clone(2) would read as an exit signal): as
 * root, the child is in a time namespace of its own; EPERM otherwise. */
static void new_time_ns(void)
{
    char mine[128] = { 0 };
    if (readlink("/proc/self/ns/time", mine, sizeof mine - 1) < 0) {
        printf("new_time_ns: skipped (no time namespaces)\n");
        return;
    }
    struct clone_args_ a = { .flags = 0x80 /* CLONE_NEWTIME */, .exit_signal = SIGCHLD };
    long pid = clone3_(&a);
    int e = errno;
    if (pid == 0) {
        char child[128] = { 0 };
        if (readlink("/proc/self/ns/time", child, sizeof child - 1) < 0)
            _exit(9);
        _exit(strcmp(child, mine) != 0 ? 0 : 10);
    }
    if (geteuid() != 0) {
        wait_status(pid);
        check_errno("new_time_ns_unprivileged_eperm", pid, e, EPERM);
        return;
    }
    int st = wait_status(pid);
    checkf("new_time_ns_child_has_its_own", WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "pid %ld status %#x errno %d", pid, st, e);
}

int main(void)
{
    conf_init();
    clear_sighand();
    set_tid();
    into_cgroup();
    new_time_ns();
    return conf_finish("clone3");
}
