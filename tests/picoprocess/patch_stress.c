/* 32 threads make 1,000,000 system calls in all, through glibc wrappers and
 * through code each thread generates at run time (so new sites are patched
 * while other threads run patched code), and through glibc's syscall(),
 * which always traps. Every result is checked. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 32
#define CALLS_PER_THREAD 31250

static pid_t pid, ppid;
static atomic_long wrong, calls;

static void *worker(void *arg)
{
    (void)arg;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    long n = 0;
    while (n < CALLS_PER_THREAD) {
        /* Fresh code: getpid and gettid stubs of the 7-byte shape. */
        unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        static const unsigned char stub_pid[] = {0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0xc3};
        static const unsigned char stub_tid[] = {0xb8, 186, 0, 0, 0, 0x0f, 0x05, 0xc3};
        memcpy(code, stub_pid, sizeof stub_pid);
        memcpy(code + 64, stub_tid, sizeof stub_tid);
        mprotect(code, 4096, PROT_READ | PROT_EXEC);
        long (*jit_pid)(void) = (long (*)(void))code;
        long (*jit_tid)(void) = (long (*)(void))(code + 64);
        for (int i = 0; i < 100 && n < CALLS_PER_THREAD; i++) {
            if (getppid() != ppid) wrong++;
            if (jit_pid() != pid) wrong++;
            if (jit_tid() != tid) wrong++;
            if (getpid() != pid) wrong++;
            /* glibc's syscall(): not a patchable shape, so the trap path. */
            if (syscall(SYS_getppid) != ppid) wrong++;
            n += 5;
        }
        munmap(code, 4096);
    }
    calls += n;
    return NULL;
}

int main(void)
{
    pid = getpid();
    ppid = getppid();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("calls: %ld\nwrong: %ld\n", (long)calls, (long)wrong);
    return wrong != 0;
}
