/* Fork while other threads patch and unpatch syscall sites.
 *
 * Three threads keep mapping a fresh page holding `mov $110, %eax;
 * syscall; ret` (getppid), calling it three times (picos patches a site
 * the second time it traps, allocating a trampoline under the patcher's
 * lock) and unmapping it (the site is forgotten); meanwhile the main thread
 * forks 300 times, each child exiting at once. A fork must take the
 * runtime's locks in the same order as the patcher does, or one of these
 * forks deadlocks (it did: the heap lock, then the patcher's). A watchdog
 * ends the test with exit 3 after 60 s.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;
static atomic_long calls, wrong;

static void *patcher(void *arg)
{
    (void)arg;
    static const unsigned char code[] = {0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xc3};
    pid_t ppid = getppid();
    while (!atomic_load(&stop)) {
        unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            continue;
        memcpy(p, code, sizeof code);
        long (*f)(void) = (long (*)(void))p;
        for (int i = 0; i < 3; i++) {
            if (f() != ppid)
                atomic_fetch_add(&wrong, 1);
            atomic_fetch_add(&calls, 1);
        }
        munmap(p, 4096);
    }
    return NULL;
}

static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "watchdog: fork_patch hung\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(3);
}

int main(void)
{
    signal(SIGALRM, watchdog);
    alarm(60);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, patcher, NULL);
    int bad = 0;
    for (int i = 0; i < 300; i++) {
        pid_t c = fork();
        if (c == 0)
            _exit(7);
        int st = 0;
        if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
            bad++;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("forks: 300, bad: %d\ncalls made: %s\nwrong: %ld\n", bad,
           atomic_load(&calls) > 0 ? "yes" : "no", atomic_load(&wrong));
    return bad != 0 || atomic_load(&wrong) != 0;
}
