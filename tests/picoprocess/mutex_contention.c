/* Four threads take one mutex 4,000 times each, yielding while they hold
 * it (and every 64th time sleeping 20 us, so that there are waiters even
 * on a busy machine, where the threads might otherwise run one after the
 * other), so that the others wait in the kernel (glibc's __lll_lock_wait:
 * `mov $202,%eax; xor $0x80,%sil; syscall`, the private flag set by an
 * operation with an immediate). Prints "count 16000".
 * crates/picos/tests/picoprocess.rs counts the calls that take the trap
 * path: the futex site is patched like any other. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static long count;

static void *body(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 4000; i++) {
        pthread_mutex_lock(&lock);
        count++;
        if (i % 4 == 0)
            sched_yield();
        if (i % 64 == 0) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    pthread_barrier_init(&start, NULL, 4);
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, body, NULL) != 0)
            return 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("count %ld\n", count);
    return count != 16000;
}
