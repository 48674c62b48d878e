/* Process termination conformance.  argv[1] selects the behaviour:
 *   exit N            exit(N)
 *   _exit N           _exit(N) (skips atexit handlers and stdio flushing)
 *   return N          return N from main
 *   signal N          raise(N) with the default disposition
 *   kill N            kill(getpid(), N)
 *   ignored N         raise(N) while SIG_IGN, then exit 0
 *   abort             abort()
 *   segv              write through a NULL pointer
 *   int3              an int3 instruction (SIGTRAP; nothing after it runs)
 *   int3-ignored      the same with SIGTRAP ignored (Linux forces the default)
 *   uretprobe         syscall 335 outside a uretprobe trampoline: SIGILL
 *   uretprobe-handler the same with a SIGILL handler: it runs (SI_KERNEL)
 *   thread-exit       main calls pthread_exit, another thread later exit(3)
 *   thread-last       main calls pthread_exit, the last thread returns -> 0
 *   group             a secondary thread calls SYS_exit_group(5)
 *   thread-signal N   a secondary thread raises fatal signal N
 *   atexit            atexit handlers run in reverse order, then exit(4)
 */
#include "conformance.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>

static void on_sigill(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    printf("SIGILL handler: signal %d, si_code %d\n", sig, si->si_code);
    fflush(stdout);
    _exit(0);
}
#include <sys/resource.h>
#include <sys/syscall.h>

static void *late_exit(void *arg)
{
    (void)arg;
    sleep_ms(100);
    printf("thread-exit: secondary thread calling exit(3)\n");
    exit(3);
}

static void *late_return(void *arg)
{
    (void)arg;
    sleep_ms(100);
    printf("thread-last: secondary thread returning\n");
    fflush(stdout);
    return NULL;
}

static void *group_exit(void *arg)
{
    (void)arg;
    sleep_ms(50);
    printf("group: secondary thread calling exit_group(5)\n");
    fflush(stdout);
    syscall(SYS_exit_group, 5);
    return NULL;
}

static void *thread_signal(void *arg)
{
    sleep_ms(50);
    printf("thread-signal: raising\n");
    fflush(stdout);
    raise((int)(long)arg);
    sleep_ms(5000);
    return NULL;
}

static void at1(void) { printf("atexit: handler 1\n"); }
static void at2(void) { printf("atexit: handler 2\n"); }

int main(int argc, char **argv)
{
    /* never leave core files behind */
    struct rlimit rl = { 0, 0 };
    setrlimit(RLIMIT_CORE, &rl);

    if (argc < 2) {
        printf("usage: exit_codes MODE [N]\n");
        return 0;
    }
    const char *mode = argv[1];
    int n = argc > 2 ? atoi(argv[2]) : 0;
    printf("mode: %s%s%s\n", mode, argc > 2 ? " " : "", argc > 2 ? argv[2] : "");

    if (!strcmp(mode, "exit")) {
        exit(n);
    } else if (!strcmp(mode, "_exit")) {
        fflush(stdout);
        printf("this buffered line is never flushed\n");
        atexit(at1);
        _exit(n);
    } else if (!strcmp(mode, "return")) {
        return n;
    } else if (!strcmp(mode, "signal")) {
        fflush(stdout);
        signal(n, SIG_DFL);
        raise(n);
        printf("still alive after signal %d\n", n);
        return 100;
    } else if (!strcmp(mode, "kill")) {
        fflush(stdout);
        kill(getpid(), n);
        printf("still alive after kill %d\n", n);
        return 100;
    } else if (!strcmp(mode, "ignored")) {
        signal(n, SIG_IGN);
        raise(n);
        printf("survived ignored signal %d\n", n);
        return 0;
    } else if (!strcmp(mode, "abort")) {
        fflush(stdout);
        abort();
    } else if (!strcmp(mode, "int3") || !strcmp(mode, "int3-ignored")) {
        if (mode[4])
            signal(SIGTRAP, SIG_IGN);
        fflush(stdout);
        __asm__ volatile("int3");
        puts("continued after int3");
        return 99;
    } else if (!strcmp(mode, "uretprobe") || !strcmp(mode, "uretprobe-handler")) {
        if (mode[9]) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = on_sigill;
            sa.sa_flags = SA_SIGINFO;
            sigaction(SIGILL, &sa, NULL);
        }
        fflush(stdout);
        long r = syscall(335);
        printf("uretprobe returned %ld\n", r);
        return 98;
    } else if (!strcmp(mode, "segv")) {
        fflush(stdout);
        *(volatile int *)0 = 1;
        return 100;
    } else if (!strcmp(mode, "thread-exit")) {
        pthread_t t;
        pthread_create(&t, NULL, late_exit, NULL);
        fflush(stdout);
        pthread_exit(NULL);
    } else if (!strcmp(mode, "thread-last")) {
        pthread_t t;
        pthread_create(&t, NULL, late_return, NULL);
        fflush(stdout);
        pthread_exit(NULL);
    } else if (!strcmp(mode, "group")) {
        pthread_t t;
        fflush(stdout);
        pthread_create(&t, NULL, group_exit, NULL);
        pthread_join(t, NULL);
        printf("group: main thread should never get here\n");
        return 100;
    } else if (!strcmp(mode, "thread-signal")) {
        pthread_t t;
        fflush(stdout);
        pthread_create(&t, NULL, thread_signal, (void *)(long)n);
        pthread_join(t, NULL);
        printf("thread-signal: main thread should never get here\n");
        return 100;
    } else if (!strcmp(mode, "atexit")) {
        atexit(at1);
        atexit(at2);
        exit(4);
    }
    printf("unknown mode\n");
    return 2;
}
