/* A process with three threads (each made 200 getppid calls) vforks a
 * child that execs /bin/true. `picos run --stats` reports the child's
 * counts when it execs: until the 30th session that report added the
 * parent's threads (which a vfork child sees in the memory it shares) and
 * said "4 threads", with the parent's calls. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_barrier_t ready, done;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++)
        syscall(SYS_getppid);
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&done);
    return NULL;
}

int main(void)
{
    pthread_t t[3];
    pthread_barrier_init(&ready, NULL, 4);
    pthread_barrier_init(&done, NULL, 4);
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    pthread_barrier_wait(&ready);
    pid_t pid = vfork();
    if (pid == 0) {
        char *argv[] = {"/bin/true", NULL};
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    pthread_barrier_wait(&done);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("%s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "child failed");
    return 0;
}
