/* ptrace beyond the picoprocess tree: refused. The library OS emulates
 * ptrace between the picoprocesses of one tree (kernel::ptrace); a process
 * outside it (here the one that started picos: the root's parent) can be
 * neither traced nor asked to trace us, and the calls fail as Linux's do
 * under a Yama policy that forbids them. Natively, as root, the attach and
 * the seize would succeed (and stop the test's own process), so this runs
 * under picos only. Prints one line per call: its result. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %s\n", what,
           r == -1 ? (errno == EPERM ? "EPERM" : errno == ESRCH ? "ESRCH" : strerror(errno))
                   : "succeeded");
    fflush(stdout);
}

int main(void)
{
    pid_t outside = getppid();
    errno = 0;
    show("traceme (parent outside the tree)", ptrace(PTRACE_TRACEME, 0, NULL, NULL));
    show("attach outside", ptrace(PTRACE_ATTACH, outside, NULL, NULL));
    show("seize outside", ptrace(PTRACE_SEIZE, outside, NULL, NULL));
    show("peekdata outside", ptrace(PTRACE_PEEKDATA, outside, NULL, NULL));
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    show("peekdata untraced child", ptrace(PTRACE_PEEKDATA, child, NULL, NULL));
    show("seize child", ptrace(PTRACE_SEIZE, child, NULL, NULL));
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    show("attach gone", ptrace(PTRACE_ATTACH, child, NULL, NULL));
    /* The runtime's board (a SysV segment since the fork) is not the
     * program's to detach: EINVAL, and ptrace still works after. */
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long board = 0;
    while (maps && fgets(line, sizeof line, maps))
        if (strstr(line, "/SYSV") && sscanf(line, "%lx-", &board) == 1)
            break;
    if (maps)
        fclose(maps);
    errno = 0;
    show("shmdt board", board ? shmdt((void *)board) : 0);
    child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    show("seize after shmdt", ptrace(PTRACE_SEIZE, child, NULL, NULL));
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return 0;
}
