/* SIGBUS blocked and pending (sent with kill: not a fault), then kill(self,
 * SIGURG) through a patched site (fast path), SIGURG having a handler:
 * Linux runs the handler and returns; picos spins at 100% CPU in the runtime
 * with signals blocked (its alarm() cannot fire; only SIGKILL ends it).
 * Found by tools/fuzz.py (seed 7, child 37; minimised to calls 383,544,549,554). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static volatile int urg;
static void h(int s) { if (s == SIGURG) urg++; }
int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sigaction(SIGBUS, &sa, 0);
    sigaction(SIGURG, &sa, 0);
    for (int i = 0; i < 3; i++)        /* let picos patch this syscall(3) site */
        syscall(SYS_kill, getpid(), 0);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGBUS);
    sigprocmask(SIG_SETMASK, &s, 0);
    syscall(SYS_kill, getpid(), SIGBUS); /* stays pending */
    alarm(5);
    syscall(SYS_kill, getpid(), SIGURG);
    printf("SIGURG handled %d time(s); SIGBUS still pending\n", urg);
    return 0;
}
