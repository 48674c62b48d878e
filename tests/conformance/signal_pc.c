/* Where a signal finds the program: the interrupted address a handler sees
 * (and returns to) must be the program's own code, never code the system
 * put in its address space. Under picos, a patched call site jumps to a
 * trampoline; a signal that lands while the program runs there must be
 * shown the original instruction (musl's cancellation handler compares it
 * with its __cp_begin..__cp_end range, Go's preemption with its own code).
 *
 * 1. An interval timer fires every 100 us (see syscall_signals.c for why
 *    not faster) while the program makes calls
 *    through libc wrappers (read, pread, write, syscall(3), getppid); the
 *    handler records each interrupted RIP, and at the end every one must lie
 *    in a file-backed mapping (the program, libc) or the vDSO.
 * 2. pthread_cancel of a thread that keeps calling read() on a pipe with
 *    data (a cancellation point whose site gets patched), 200 times: the
 *    join must see PTHREAD_CANCELED every time (a cancel request missed in
 *    the window before the call blocks the thread forever: a watchdog
 *    fails the test after 60 s).
 */
#include "conformance.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>

#define MAX_PCS 8192
static uintptr_t pcs[MAX_PCS];
static volatile int npcs, overflow;

static void on_alarm(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    uintptr_t pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
    /* Open-addressed set of distinct PCs. */
    unsigned h = (unsigned)((pc * 0x9E3779B97F4A7C15ull) >> 51);
    for (int i = 0; i < MAX_PCS; i++) {
        unsigned k = (h + i) % MAX_PCS;
        if (pcs[k] == pc)
            return;
        if (pcs[k] == 0) {
            pcs[k] = pc;
            npcs++;
            return;
        }
    }
    overflow = 1;
}

struct map {
    uintptr_t lo, hi;
    int named;
};

static int read_maps(struct map *maps, int max)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[512];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off, ino;
        char perms[8], dev[16];
        int pos = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &off, dev, &ino, &pos) < 6)
            continue;
        if (perms[2] != 'x')
            continue;
        const char *name = line + pos;
        maps[n].lo = lo;
        maps[n].hi = hi;
        maps[n].named = name[0] == '/' || strncmp(name, "[vdso]", 6) == 0 ||
                        strncmp(name, "[vsyscall]", 10) == 0;
        n++;
    }
    fclose(f);
    return n;
}

static void check_pcs(void)
{
    struct map maps[256];
    int n = read_maps(maps, 256);
    check("maps read", n > 0);
    long foreign = 0;
    for (int k = 0; k < MAX_PCS; k++) {
        uintptr_t pc = pcs[k];
        if (!pc)
            continue;
        int ok = 0;
        for (int i = 0; i < n; i++)
            if (pc >= maps[i].lo && pc < maps[i].hi) {
                ok = maps[i].named;
                break;
            }
        if (!ok && foreign++ < 5)
            fprintf(stderr, "interrupted pc %#lx is not in the program's code\n", (unsigned long)pc);
    }
    checkf("interrupted pcs in the program's code", foreign == 0, "%ld foreign", foreign);
    check("no pc overflow", !overflow);
    check("some pcs", npcs > 0);
}

static int cancel_pipe[2];

static void *reader(void *arg)
{
    (void)arg;
    char c;
    for (;;)
        if (read(cancel_pipe[0], &c, 1) == 1 && write(cancel_pipe[1], &c, 1) != 1)
            break;
    return NULL;
}

static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "watchdog: a cancelled thread never ended\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(3);
}

int main(void)
{
    conf_init();
    int fd = open("/proc/self/exe", O_RDONLY);
    int null = open("/dev/null", O_WRONLY);
    check("open", fd >= 0 && null >= 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_alarm;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &it, NULL);
    char buf[64];
    long bad = 0;
    for (int i = 0; i < 100000; i++) {
        if (pread(fd, buf, sizeof buf, i % 512) != (ssize_t)sizeof buf)
            bad++;
        if (syscall(SYS_pread64, fd, buf, 16, 0) != 16)
            bad++;
        if (write(null, buf, 8) != 8)
            bad++;
        if (lseek(fd, 0, SEEK_SET) != 0 || read(fd, buf, 4) != 4)
            bad++;
        if (getppid() <= 0)
            bad++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    checkf("calls under signals", bad == 0, "%ld wrong", bad);
    check_pcs();

    signal(SIGALRM, watchdog);
    alarm(60);
    int canceled = 0;
    for (int round = 0; round < 200; round++) {
        if (pipe(cancel_pipe) != 0)
            break;
        if (write(cancel_pipe[1], "x", 1) != 1)
            break;
        pthread_t t;
        pthread_create(&t, NULL, reader, NULL);
        struct timespec ts = {0, (round % 20) * 5000};
        nanosleep(&ts, NULL);
        pthread_cancel(t);
        void *rv = NULL;
        pthread_join(t, &rv);
        canceled += rv == PTHREAD_CANCELED;
        close(cancel_pipe[0]);
        close(cancel_pipe[1]);
    }
    alarm(0);
    checkf("every cancelled reader ended cancelled", canceled == 200, "%d of 200", canceled);
    return conf_finish("signal_pc");
}
