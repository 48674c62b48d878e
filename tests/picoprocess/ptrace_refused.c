/* ptrace under picos: nothing is traced yet (issue 15, item 3), and the
 * calls fail as Linux's do when Yama forbids all tracing (ptrace_scope 3),
 * not with ENOSYS. Natively (as root) these calls would succeed, so this
 * runs under picos only. Prints one line per call: its result. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %s\n", what, r == -1 ? (errno == EPERM ? "EPERM" : errno == ESRCH ? "ESRCH" : strerror(errno)) : "succeeded");
}

int main(void)
{
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    errno = 0;
    show("traceme", ptrace(PTRACE_TRACEME, 0, NULL, NULL));
    show("attach child", ptrace(PTRACE_ATTACH, child, NULL, NULL));
    show("seize child", ptrace(PTRACE_SEIZE, child, NULL, NULL));
    show("peekdata child", ptrace(PTRACE_PEEKDATA, child, NULL, NULL));
    show("cont child", ptrace(PTRACE_CONT, child, NULL, NULL));
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    show("attach gone", ptrace(PTRACE_ATTACH, child, NULL, NULL));
    return 0;
}
