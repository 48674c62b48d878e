/* Creates and joins N threads, one after the other (glibc's start_thread
 * and thread exit make rt_sigprocmask calls from `mov $14,%eax; lea ...;
 * syscall` sites). crates/picos/tests/picoprocess.rs counts the calls that
 * take the trap path per thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *body(void *arg) { return arg; }

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    long ok = 0;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        void *r = NULL;
        if (pthread_create(&t, NULL, body, (void *)(long)(i + 1)) != 0)
            return 1;
        pthread_join(t, &r);
        ok += r == (void *)(long)(i + 1);
    }
    printf("threads %d ok %ld\n", n, ok);
    return ok != n;
}
