/* Four threads take one mutex 4,000 times each, yielding while they hold
 * it, so that the others wait in the kernel (glibc's __lll_lock_wait:
 * `mov $202,%eax; xor $0x80,%sil; syscall`, the private flag set by an
 * operation with an immediate). Prints "count 16000".
 * crates/picos/tests/picoprocess.rs counts the calls that take the trap
 * path: the futex site is patched like any other. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long count;

static void *body(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4000; i++) {
        pthread_mutex_lock(&lock);
        count++;
        if (i % 4 == 0)
            sched_yield();
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, body, NULL) != 0)
            return 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("count %ld\n", count);
    return count != 16000;
}
