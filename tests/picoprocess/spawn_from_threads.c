/* posix_spawn (a vfork child: CLONE_VM | CLONE_VFORK, a descriptor table
 * of its own) from a program with another thread: every child runs and
 * exits 0. Under picos the child's exec check may use its own table
 * directly (nothing else uses it), though its memory, and so the runtime's
 * note that a table of the address space is shared, is its parent's. */
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, idle, NULL) != 0)
        return 2;
    int ok = 0;
    for (int i = 0; i < 3; i++) {
        char *av[] = {"/bin/true", NULL};
        pid_t p;
        int st;
        if (posix_spawn(&p, av[0], NULL, NULL, av, environ) == 0 && waitpid(p, &st, 0) == p &&
            WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
    }
    printf("spawned: %d of 3\n", ok);
    return ok == 3 ? 0 : 1;
}
