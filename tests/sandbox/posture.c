/* The sandbox's posture, as gVisor's posture test checks its own: every
 * thread of every process of the tree must be confined. This program
 * makes a tree (two threads here, a child made by fork and one more made
 * by fork and exec of itself, with a thread of its own), and each thread
 * checks from the inside what /proc cannot show: that it is in the
 * Landlock domain (a signal to the process outside, OUTSIDE, is refused).
 * The test checks the rest from the outside through /proc (seccomp mode,
 * no_new_privs, capabilities, rlimits) while the tree waits.
 *
 *   posture OUTSIDE          prints "ready" when the whole tree runs, one
 *                            "PID/TID: confined" or ": NOT confined" line
 *                            per thread, then waits for stdin to close
 *   posture --exec OUTSIDE   (the exec'd child)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int outside;
static int ready[2]; /* each thread writes a byte here once it has checked */

static void check(void) {
    int r = kill(outside, 0);
    int e = errno;
    printf("%d/%ld: %s\n", getpid(), syscall(SYS_gettid),
           r < 0 && e == EPERM ? "confined" : "NOT confined");
    fflush(stdout);
    if (write(ready[1], "x", 1) != 1)
        _exit(1);
}

static void *thread(void *arg) {
    (void)arg;
    check();
    for (;;)
        pause();
    return NULL;
}

/* Two threads of this process (the main one and one more). */
static int threads_and_wait(int nwait) {
    pthread_t t;
    pthread_create(&t, NULL, thread, NULL);
    check();
    char c;
    for (int i = 0; i < nwait; i++)
        if (read(ready[0], &c, 1) != 1)
            return 1;
    return 0;
}

int main(int argc, char **argv) {
    int exec_child = argc == 3 && !strcmp(argv[1], "--exec");
    if (argc != 2 && !exec_child) {
        fprintf(stderr, "usage: posture OUTSIDE\n");
        return 64;
    }
    outside = atoi(argv[argc - 1]);
    if (exec_child) {
        /* Fd 3 is the parent's pipe, kept across exec. */
        ready[1] = 3;
        threads_and_wait(0);
        for (;;)
            pause();
    }
    if (pipe(ready) < 0)
        return 1;
    pid_t forked = fork();
    if (forked == 0) {
        threads_and_wait(0);
        for (;;)
            pause();
    }
    pid_t execd = fork();
    if (execd == 0) {
        dup2(ready[1], 3);
        char *args[] = {argv[0], "--exec", argv[1], NULL};
        execv(argv[0], args);
        _exit(127);
    }
    /* 2 here, 2 in the forked child, 2 in the exec'd one. */
    if (threads_and_wait(6))
        return 1;
    printf("ready\n");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    kill(forked, SIGKILL);
    kill(execd, SIGKILL);
    waitpid(forked, NULL, 0);
    waitpid(execd, NULL, 0);
    return 0;
}
