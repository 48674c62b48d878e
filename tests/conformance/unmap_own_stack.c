/* A thread that unmaps the stack it runs on and then exits, with nothing
 * between the two system calls that touches memory: musl's thread exit
 * (`__unmapself`) does this for every detached thread.
 *
 * Under picos the `munmap` site is patched after its sixth trap, and the
 * fast entry read the program's stack after the call (the RFLAGS it had
 * saved there): until the 25th session the third such exit killed the
 * program with a fault in the runtime. Each case runs 20 times, so that
 * the sites are patched well before the end. */
#include "conformance.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define FUTEX_WAIT 0 /* <linux/futex.h>, which musl-gcc lacks */
#define ROUNDS 20
#define STACK_SIZE (64 << 10)

struct job {
    void *stack;
    size_t size;
};

/* munmap(stack, size), then exit(0): registers only, as musl's. */
static int unmap_and_exit(void *arg)
{
    struct job *j = arg;
    __asm__ volatile("mov $11, %%eax\n\t"
                     "syscall\n\t"
                     "xor %%edi, %%edi\n\t"
                     "mov $60, %%eax\n\t"
                     "syscall\n\t"
                     "ud2"
                     :
                     : "D"(j->stack), "S"(j->size)
                     : "rax", "rcx", "r11", "memory");
    return 0;
}

static volatile int ctid;

static int raw_thread_round(void)
{
    static struct job j;
    j.size = STACK_SIZE;
    j.stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (j.stack == MAP_FAILED)
        return 0;
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                CLONE_SYSVSEM | CLONE_CHILD_CLEARTID | CLONE_PARENT_SETTID;
    pid_t ptid = 0;
    ctid = 1;
    int tid = clone(unmap_and_exit, (char *)j.stack + STACK_SIZE, flags, &j, &ptid, NULL, &ctid);
    if (tid <= 0)
        return 0;
    /* The kernel clears ctid and wakes it when the thread is gone. */
    while (ctid != 0)
        syscall(SYS_futex, &ctid, FUTEX_WAIT, ctid, NULL, NULL, 0);
    /* The stack is gone: mapping it again at that address must work. */
    void *again = mmap(j.stack, STACK_SIZE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                       -1, 0);
    int gone = again == j.stack;
    if (again != MAP_FAILED)
        munmap(again, STACK_SIZE);
    return gone;
}

static volatile int detached_done;

static void *detached(void *arg)
{
    (void)arg;
    __atomic_fetch_add(&detached_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

int main(void)
{
    conf_init();
    int ok = 1;
    for (int i = 0; i < ROUNDS && ok; i++)
        ok = raw_thread_round();
    check("thread_unmaps_its_stack_and_exits", ok);

    /* Detached threads ending one after another (musl unmaps their stacks
     * from the threads themselves; glibc keeps them for reuse). */
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int made = 0;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_t t;
        if (pthread_create(&t, &at, detached, NULL) != 0)
            break;
        made++;
        while (detached_done <= i)
            sched_yield();
    }
    /* Give the last ones time to leave (their stacks go on the way out). */
    usleep(20000);
    check("detached_threads_end", made == ROUNDS && detached_done == ROUNDS);
    return conf_finish("unmap_own_stack");
}
