/* A handler with SA_ONSTACK whose alternate stack is not mapped: Linux cannot
 * build the frame and forces SIGSEGV, which the program's own SIGSEGV handler
 * (installed without SA_ONSTACK) then handles on the normal stack. Under picos
 * the process is killed by SIGSEGV. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
static volatile int usr1, segv;
static void on_usr1(int s) { (void)s; usr1++; }
static void on_segv(int s) { (void)s; segv++; signal(SIGSEGV, SIG_DFL); }
int main(void) {
    void *p = mmap(0, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(p, 65536); /* an address with nothing mapped */
    stack_t ss = {.ss_sp = p, .ss_size = 65536, .ss_flags = 0};
    if (sigaltstack(&ss, 0)) perror("sigaltstack");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, 0);
    sa.sa_handler = on_segv;
    sa.sa_flags = 0;
    sigaction(SIGSEGV, &sa, 0);
    raise(SIGUSR1);
    printf("usr1 handler ran %d times, SIGSEGV handler %d times\n", usr1, segv);
    return 0;
}
