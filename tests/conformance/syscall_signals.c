/* Host-served system calls under a storm of signals.
 *
 * Under picos, a patched site of a call the host serves unchanged (pread,
 * fstat, read, ...) enters the runtime's direct path: the call goes to the
 * host from the runtime with the program's registers, and a signal that
 * lands before, during or after it must be delivered exactly as natively:
 * results intact, SA_RESTART restarting a blocking call, EINTR without it.
 * An interval timer fires every 100 us while the program makes such calls
 * (also from inside the handler): ~10,000 signals in a run.
 *
 * Why not faster: on the KVM guests this project runs on, each ITIMER_REAL
 * signal costs ~20 us of kernel time natively (the guest's timer interrupt
 * and the frame), so a 20 us timer left the program ~7% of the CPU even
 * natively; its run time then swung between 2 s and 35 s with whatever else
 * the machine did, and any cost added per signal stalled it completely.
 * At 100 us the program spends ~20% of its time in signals natively.
 */
#define STORM_US 100
#include "conformance.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#define FILE_SIZE 4096

static int fd = -1;
static unsigned char expect[FILE_SIZE];
static volatile sig_atomic_t hits, handler_bad;

static void on_alarm(int sig)
{
    (void)sig;
    hits++;
    /* A host-served call from a handler that may have interrupted one. */
    unsigned char b[16];
    if (pread(fd, b, sizeof b, 100) != (ssize_t)sizeof b || memcmp(b, expect + 100, sizeof b))
        handler_bad = 1;
}

static void set_handler(int flags)
{
    conf_handle(SIGALRM, on_alarm, flags);
}

static void storm(long us)
{
    struct itimerval it = {{0, us}, {0, us}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* A raw pread from a `mov $17, %eax; syscall` site of the program's own
 * (patched under picos after it traps six times), checking what the kernel
 * guarantees across `syscall`: RFLAGS as before (CF set here), RCX = the
 * address after the instruction, R11 = RFLAGS, every other register but
 * RAX unchanged. Returns the number of wrong outcomes in `rounds` calls. */
static long raw_pread_regs(int rounds)
{
    long bad = 0;
    for (int i = 0; i < rounds; i++) {
        unsigned char b[8] = {0};
        long ret;
        unsigned long label, rcxv, r11v;
        unsigned char cf;
        register long r10 __asm__("r10") = 8 + (i % 64);
        register long r8 __asm__("r8") = 0x1234;
        register long r9 __asm__("r9") = 0x5678;
        long off = r10;
        __asm__ volatile("lea 1f(%%rip), %[label]\n\t"
                         "stc\n\t"
                         "mov $17, %%eax\n\t"
                         "syscall\n"
                         "1:\n\t"
                         "setc %[cf]\n\t"
                         "mov %%rcx, %[rcxv]\n\t"
                         "mov %%r11, %[r11v]"
                         : "=&a"(ret), [label] "=&r"(label), [cf] "=&r"(cf),
                           [rcxv] "=&r"(rcxv), [r11v] "=&r"(r11v), "+r"(r10), "+r"(r8),
                           "+r"(r9)
                         : "D"((long)fd), "S"(b), "d"((long)sizeof b)
                         : "rcx", "r11", "memory", "cc");
        /* Copy the register variables before any call can clobber them. */
        long r10v = r10, r8v = r8, r9v = r9;
        if (ret != (long)sizeof b || memcmp(b, expect + off, sizeof b) || cf != 1 ||
            rcxv != label || (r11v & 1) != 1 || r10v != off || r8v != 0x1234 || r9v != 0x5678) {
            if (bad++ == 0)
                fprintf(stderr, "ret=%ld cf=%d rcx=%#lx label=%#lx r11=%#lx r10=%ld r8=%#lx r9=%#lx\n",
                        ret, cf, rcxv, label, r11v, r10v, r8v, r9v);
        }
    }
    return bad;
}

int main(void)
{
    conf_init();
    char path[] = "/tmp/picos-syscall-signals-XXXXXX";
    fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    unlink(path);
    for (int i = 0; i < FILE_SIZE; i++)
        expect[i] = (unsigned char)(i * 131 + 7);
    check("write file", write(fd, expect, FILE_SIZE) == FILE_SIZE);
    long bad = raw_pread_regs(1000);
    checkf("raw pread registers", bad == 0, "%ld wrong", bad);

    set_handler(SA_RESTART);
    storm(STORM_US);

    bad = raw_pread_regs(100000);
    checkf("raw pread registers under signals", bad == 0, "%ld wrong", bad);

    long wrong = 0;
    unsigned char buf[256];
    for (int i = 0; i < 300000; i++) {
        off_t off = (off_t)((i * 37) % (FILE_SIZE - 256));
        ssize_t n = pread(fd, buf, sizeof buf, off);
        if (n != (ssize_t)sizeof buf || memcmp(buf, expect + off, sizeof buf))
            wrong++;
    }
    checkf("pread under signals", wrong == 0, "%ld wrong", wrong);

    /* Through libc's generic syscall(3), whose number is not an immediate
     * (picos patches glibc's and the usual musl form of it too). */
    wrong = 0;
    for (int i = 0; i < 100000; i++) {
        off_t off = (off_t)((i * 53) % (FILE_SIZE - 256));
        long n = syscall(SYS_pread64, fd, buf, sizeof buf, off);
        if (n != (long)sizeof buf || memcmp(buf, expect + off, sizeof buf))
            wrong++;
    }
    checkf("syscall(3) pread under signals", wrong == 0, "%ld wrong", wrong);

    wrong = 0;
    for (int i = 0; i < 200000; i++) {
        struct stat st;
        if (fstat(fd, &st) != 0 || st.st_size != FILE_SIZE)
            wrong++;
    }
    checkf("fstat under signals", wrong == 0, "%ld wrong", wrong);

    /* read(2) of the file from its start, many times (glibc's read site). */
    wrong = 0;
    for (int i = 0; i < 100000; i++) {
        if (lseek(fd, 512, SEEK_SET) != 512 || read(fd, buf, 64) != 64 ||
            memcmp(buf, expect + 512, 64))
            wrong++;
    }
    checkf("read under signals", wrong == 0, "%ld wrong", wrong);

    /* A blocking read restarted by SA_RESTART: a child writes after 50 ms. */
    int p[2];
    if (pipe(p) != 0) {
        perror("pipe");
        return 1;
    }
    long hits_before = hits;
    pid_t child = fork();
    if (child == 0) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        while (nanosleep(&ts, &ts) != 0)
            ;
        if (write(p[1], "x", 1) != 1)
            _exit(1);
        _exit(0);
    }
    char c = 0;
    ssize_t n = read(p[0], &c, 1);
    int e = errno;
    checkf("blocking read restarted", n == 1 && c == 'x', "n=%zd errno=%s", n, errno_name(e));
    checkf("signals during the blocking read", hits > hits_before, "hits %ld -> %ld",
           hits_before, (long)hits);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    check("writer exited", WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* Without SA_RESTART the same read fails with EINTR. */
    set_handler(0);
    n = read(p[0], &c, 1);
    e = errno;
    check_errno("blocking read interrupted", n, e, EINTR);

    /* fcntl(F_SETLKW) waiting for a lock another process holds: restarted
     * by SA_RESTART until the holder lets go, EINTR without it. */
    int lp[2];
    if (pipe(lp) != 0) {
        perror("pipe");
        return 1;
    }
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    char l;
    pid_t holder = fork();
    if (holder == 0) {
        if (fcntl(fd, F_SETLK, &fl) != 0 || write(lp[1], "l", 1) != 1)
            _exit(1);
        struct timespec ts = {0, 50 * 1000 * 1000};
        while (nanosleep(&ts, &ts) != 0)
            ;
        _exit(0); /* lets go of the lock */
    }
    while (read(lp[0], &l, 1) < 0 && errno == EINTR)
        ;
    set_handler(SA_RESTART);
    hits_before = hits;
    int r = fcntl(fd, F_SETLKW, &fl);
    e = errno;
    checkf("blocking F_SETLKW restarted", r == 0, "r=%d errno=%s", r, errno_name(e));
    checkf("signals during the blocking F_SETLKW", hits > hits_before, "hits %ld -> %ld",
           hits_before, (long)hits);
    while (waitpid(holder, &status, 0) < 0 && errno == EINTR)
        ;
    check("lock holder exited", WIFEXITED(status) && WEXITSTATUS(status) == 0);
    fl.l_type = F_UNLCK;
    check("unlock", fcntl(fd, F_SETLK, &fl) == 0);
    fl.l_type = F_WRLCK;
    holder = fork();
    if (holder == 0) {
        if (fcntl(fd, F_SETLK, &fl) != 0 || write(lp[1], "l", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    while (read(lp[0], &l, 1) < 0 && errno == EINTR)
        ;
    set_handler(0);
    r = fcntl(fd, F_SETLKW, &fl);
    e = errno;
    check_errno("blocking F_SETLKW interrupted", r, e, EINTR);
    kill(holder, SIGKILL);
    while (waitpid(holder, &status, 0) < 0 && errno == EINTR)
        ;
    close(lp[0]);
    close(lp[1]);

    /* Calls that do not block never fail with EINTR, even without
     * SA_RESTART: a signal that comes just before one is handled first and
     * the call then runs (picos must not cut them short). */
    long eintr = 0;
    for (int i = 0; i < 100000; i++) {
        if (pwrite(fd, expect + 1024, 64, 1024) < 0 && errno == EINTR)
            eintr++;
        if (write(p[1], "y", 1) < 0 && errno == EINTR)
            eintr++;
        if (read(p[0], &c, 1) < 0 && errno == EINTR)
            eintr++;
    }
    checkf("non-blocking calls never EINTR", eintr == 0, "%ld EINTR", eintr);

    storm(0);
    set_handler(SA_RESTART);
    check("handler calls right", !handler_bad);
    check("handler ran", hits > 10);
    return conf_finish("syscall_signals");
}
