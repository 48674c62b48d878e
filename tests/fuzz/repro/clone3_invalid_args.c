/* clone3 arguments Linux rejects with EINVAL (clone3_args_valid): picos
 * creates a child for some of them. Each case forks at most one child,
 * which exits at once. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static long clone3_(struct clone_args *a, size_t n) {
    long r = syscall(SYS_clone3, a, n);
    if (r == 0) _exit(0);
    if (r > 0) waitpid(r, 0, __WALL);
    return r;
}
int main(void) {
    static char stack[16384];
    pid_t tid = 5;
    struct { const char *what; struct clone_args a; } cases[] = {
        {"stack_size without stack", {.exit_signal = SIGCHLD, .stack_size = 4096}},
        {"stack without stack_size", {.exit_signal = SIGCHLD, .stack = (uintptr_t)stack}},
        {"exit_signal 65", {.exit_signal = 65}},
        {"set_tid_size 1, set_tid NULL", {.exit_signal = SIGCHLD, .set_tid_size = 1}},
        {"set_tid without set_tid_size", {.exit_signal = SIGCHLD, .set_tid = (uintptr_t)&tid}},
        {"CLONE_PARENT|CLONE_SETTLS, tls 0", {.flags = CLONE_PARENT | CLONE_SETTLS, .exit_signal = SIGCHLD}},
        {"flags bit 40", {.flags = 1ULL << 40, .exit_signal = SIGCHLD}},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long r = clone3_(&cases[i].a, sizeof cases[i].a);
        printf("%-34s -> %s\n", cases[i].what, r > 0 ? "child created" : strerror(errno));
    }
    return 0;
}
