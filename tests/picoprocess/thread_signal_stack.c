/* New threads get the runtime's signal stack: each of 20 threads makes a
 * call that takes the trap path (`syscall` after a move to RSP, a shape the
 * patcher does not take) on a stack with only 600 bytes left above a guard
 * page. Its SIGSYS frame (several KiB with the FPU state) fits only on the
 * runtime's signal stack: on the program's stack it would fault. A new
 * thread's signal stack is installed by the rt_sigreturn that starts it
 * (kernel::thread::install). Prints "ok". */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *body(void *sp)
{
    long n = SYS_getppid;
    __asm__ volatile("mov %%rsp, %%r12\n\t"
                     "mov %1, %%rsp\n\t"
                     "syscall\n\t"
                     "mov %%r12, %%rsp"
                     : "+a"(n)
                     : "r"(sp)
                     : "rcx", "r11", "r12", "memory");
    return (void *)n;
}

int main(void)
{
    char *low = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (low == MAP_FAILED || mprotect(low, 4096, PROT_NONE) != 0)
        return 2;
    void *sp = low + 4096 + 600;
    for (int i = 0; i < 20; i++) {
        pthread_t t;
        void *r = NULL;
        if (pthread_create(&t, NULL, body, sp) != 0)
            return 3;
        pthread_join(t, &r);
        if ((long)r != getppid()) {
            printf("thread %d: getppid gave %ld\n", i, (long)r);
            return 1;
        }
    }
    printf("ok\n");
    return 0;
}
