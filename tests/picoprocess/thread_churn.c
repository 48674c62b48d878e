/* Creates and joins N threads, one after the other (glibc's start_thread
 * and thread exit make rt_sigprocmask calls from `mov $14,%eax; lea ...;
 * syscall` sites, and its thread exit is `xor %edi,%edi; mov %edx,%eax;
 * syscall; jmp .-8`); then, with a second argument W, W waves of 8 threads
 * that leave a barrier together and end at once, so that the thread-exit
 * site may be patched while other threads stand in it.
 * crates/picos/tests/picoprocess.rs counts the calls that take the trap
 * path. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *body(void *arg) { return arg; }

static pthread_barrier_t gate;

static void *wave_body(void *arg)
{
    pthread_barrier_wait(&gate);
    return arg;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int waves = argc > 2 ? atoi(argv[2]) : 0;
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
    if (waves == 0)
        return ok != n;
    long wok = 0;
    for (int w = 0; w < waves; w++) {
        pthread_t t[8];
        pthread_barrier_init(&gate, NULL, 8);
        for (int i = 0; i < 8; i++)
            if (pthread_create(&t[i], NULL, wave_body, (void *)(long)(w * 8 + i + 1)) != 0)
                return 1;
        int good = 1;
        for (int i = 0; i < 8; i++) {
            void *r = NULL;
            pthread_join(t[i], &r);
            good &= r == (void *)(long)(w * 8 + i + 1);
        }
        pthread_barrier_destroy(&gate);
        wok += good;
    }
    printf("waves %d ok %ld\n", waves, wok);
    return ok != n || wok != waves;
}
