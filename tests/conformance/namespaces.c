/* Namespaces a program enters or makes: what the library OS caches about
 * the process must follow.
 *
 * - setns into another UTS namespace: uname() shows its host name (LTP
 *   setns02; picos answered from the uname cached before).
 * - unshare(CLONE_NEWUSER): getuid() is the overflow id until a map is
 *   written (picos answered from the cached credentials).
 * - SA_RESETHAND: the handler is reset when the signal is taken, the flags
 *   stay (LTP sigaction01).
 */
#include "conformance.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/utsname.h>
#include <sys/wait.h>

static void setns_uts(void)
{
    if (geteuid() != 0) {
        printf("setns_uts: skipped (needs root for a UTS namespace)\n");
        return;
    }
    int to_parent[2], to_child[2];
    if (pipe(to_parent) || pipe(to_child)) {
        check("setns_uts_pipes", 0);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        if (unshare(CLONE_NEWUTS) != 0 || sethostname("picos-uts-ns", 12) != 0)
            _exit(3);
        if (write(to_parent[1], "r", 1) != 1 || read(to_child[0], &c, 1) != 1)
            _exit(4);
        _exit(0);
    }
    char c;
    int ready = pid > 0 && read(to_parent[0], &c, 1) == 1;
    struct utsname before, after, back;
    uname(&before); /* the answer a cache would keep */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/uts", (int)pid);
    int mine = open("/proc/self/ns/uts", O_RDONLY);
    int theirs = ready ? open(path, O_RDONLY) : -1;
    int entered = theirs >= 0 && setns(theirs, CLONE_NEWUTS) == 0;
    uname(&after);
    checkf("setns_uts_uname_follows", entered && strcmp(after.nodename, "picos-uts-ns") == 0,
           "entered %d nodename %s", entered, after.nodename);
    int left = mine >= 0 && setns(mine, CLONE_NEWUTS) == 0;
    uname(&back);
    check("setns_uts_back_home", left && strcmp(back.nodename, before.nodename) == 0);
    if (write(to_child[1], "g", 1) != 1)
        perror("write");
    int st = wait_status(pid);
    check("setns_uts_child_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void unshare_user(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        uid_t u0 = getuid(); /* the answer a cache would keep */
        if (unshare(CLONE_NEWUSER) != 0)
            _exit(errno == EPERM || errno == EINVAL || errno == ENOSPC ? 5 : 6);
        uid_t u1 = getuid();
        gid_t g1 = getgid();
        (void)u0;
        _exit(u1 == 65534 && g1 == 65534 ? 0 : 7);
    }
    int st = wait_status(pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 5) {
        printf("unshare_user_overflow_ids: skipped (no user namespaces for this user)\n");
        return;
    }
    checkf("unshare_user_overflow_ids", WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

static volatile int resethand_flags_ok = -1;
static void on_usr1_info(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    struct sigaction now;
    sigaction(sig, NULL, &now);
    resethand_flags_ok = now.sa_handler == SIG_DFL && (now.sa_flags & SA_SIGINFO) != 0;
}

static void resethand_keeps_flags(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1_info;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    check("resethand_resets_handler_keeps_siginfo", resethand_flags_ok == 1);
    signal(SIGUSR1, SIG_DFL);
}

int main(void)
{
    conf_init();
    setns_uts();
    unshare_user();
    resethand_keeps_flags();
    return conf_finish("namespaces");
}
