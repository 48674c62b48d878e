/* The descriptor table is the program's alone (issue 9, item 2.6): with
 * RLIMIT_NOFILE lowered to 64 the program can open exactly as many files
 * as natively, every number it did not open is invalid (whatever the
 * runtime is doing: patching code with one thread, with several, with a
 * full table), and execve works after a full table.
 *
 * Modes: (none) the checks; "fullcheck N": exec'd with the table full,
 * checks the N descriptors it inherited.
 */
#include "conformance.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define LIMIT 64
#define SCAN 1024

/* Number of valid descriptors below `below`; the first invalid one below
 * `want` and the first valid one at or above it go to *odd (-1: none). */
static int count_valid(int below, int want, int *odd)
{
    int n = 0;
    *odd = -1;
    for (int fd = 0; fd < below; fd++) {
        int ok = fcntl(fd, F_GETFD) != -1;
        if (!ok && errno != EBADF && *odd < 0)
            *odd = fd;
        n += ok;
        if ((ok != (fd < want)) && *odd < 0)
            *odd = fd;
    }
    return n;
}

static int fill(int cloexec_last)
{
    int n = 0, fd;
    while ((fd = open("/dev/null", O_RDONLY)) >= 0)
        n++;
    int e = errno;
    if (e != EMFILE)
        fprintf(stderr, "fill stopped with errno %d\n", e);
    /* The last descriptors close on exec (room for a dynamic program's
     * loader after the exec). */
    for (int i = 0; i < cloexec_last; i++)
        fcntl(LIMIT - 1 - i, F_SETFD, FD_CLOEXEC);
    errno = e;
    return n;
}

/* A raw syscall site the runtime patches (taken many times). */
static long raw_getppid(void)
{
    long r;
    __asm__ volatile("mov $110, %%eax\n\tsyscall" : "=a"(r) : : "rcx", "r11", "memory");
    return r;
}

static volatile int stop;

/* Maps fresh code (mov $110,%eax; syscall; ret) again and again, so the
 * runtime keeps patching new sites while this thread runs. */
static void *patcher(void *arg)
{
    static const unsigned char code[] = {0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xc3};
    long want = getppid();
    long *bad = arg;
    for (int i = 0; i < 300 && !stop; i++) {
        unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            (*bad)++;
            break;
        }
        memcpy(p + 64 * (i % 32), code, sizeof code);
        mprotect(p, 4096, PROT_READ | PROT_EXEC);
        long (*f)(void) = (long (*)(void))(p + 64 * (i % 32));
        for (int k = 0; k < 3; k++)
            if (f() != want)
                (*bad)++;
        munmap(p, 4096);
    }
    return NULL;
}

static int mode_fullcheck(int inherited)
{
    int odd;
    /* Everything inherited is still there, and the table is as full. */
    int n = count_valid(LIMIT, inherited, &odd);
    if (n != inherited || odd != -1) {
        fprintf(stderr, "fullcheck: %d valid (want %d), first odd %d\n", n, inherited, odd);
        return 3;
    }
    if (inherited == LIMIT && open("/dev/null", O_RDONLY) != -1)
        return 4;
    return 0;
}

int main(int argc, char **argv)
{
    conf_init();
    if (argc == 3 && !strcmp(argv[1], "fullcheck"))
        return mode_fullcheck(atoi(argv[2]));
    if (argc != 1 || !strchr(argv[0], '/')) {
        fprintf(stderr, "usage: %s (as a path)\n", argv[0]);
        return 2;
    }
    const char *self = argv[0];
    /* A dynamic program's loader needs descriptors of its own after exec. */
    int dynamic = getauxval(AT_BASE) != 0;
    int odd, n, e;

    /* Only 0, 1 and 2, and at most 64 of them. */
    syscall(SYS_close_range, 3, ~0U, 0);
    struct rlimit rl = {LIMIT, LIMIT};
    check("setrlimit_nofile_64", setrlimit(RLIMIT_NOFILE, &rl) == 0);
    n = count_valid(SCAN, 3, &odd);
    checkf("only_own_fds_at_start", n == 3 && odd == -1, "%d valid, first odd %d", n, odd);

    /* Fill the table: as many as natively, then EMFILE. */
    n = fill(0);
    e = errno;
    show("fill_count", "%d", n);
    check_errno("open_full_table", -1, e, EMFILE);
    n = count_valid(SCAN, LIMIT, &odd);
    checkf("full_table_numbers", n == LIMIT && odd == -1, "%d valid, first odd %d", n, odd);
    long r = dup(0);
    e = errno;
    check_errno("dup_full_table", r, e, EMFILE);
    r = fcntl(0, F_DUPFD, 0);
    e = errno;
    check_errno("fcntl_dupfd_full_table", r, e, EMFILE);
    r = dup2(0, LIMIT);
    e = errno;
    check_errno("dup2_past_limit", r, e, EBADF);

    /* A hot raw syscall site with the table full (the runtime patches it
     * without a free descriptor of the program's). */
    long want = getppid(), bad = 0;
    for (int i = 0; i < 20000; i++)
        bad += raw_getppid() != want;
    checkf("hot_loop_full_table", bad == 0, "%ld wrong results", bad);
    n = count_valid(SCAN, LIMIT, &odd);
    checkf("full_table_after_loop", n == LIMIT && odd == -1, "%d valid, first odd %d", n, odd);

    /* execve after a full table (inherited open: a static program starts
     * with all 64; a dynamic one gets 3 closed on exec for its loader). */
    int keep = dynamic ? LIMIT - 3 : LIMIT;
    syscall(SYS_close_range, 3, ~0U, 0);
    pid_t pid = fork();
    if (pid == 0) {
        n = fill(LIMIT - keep);
        if (n != LIMIT - 3)
            _exit(20);
        char num[16];
        snprintf(num, sizeof num, "%d", keep);
        execl(self, self, "fullcheck", num, (char *)NULL);
        _exit(errno == EMFILE ? 21 : 22);
    }
    int st;
    waitpid(pid, &st, 0);
    checkf("exec_after_full_table", WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);

    /* Threads patching fresh code while this thread checks that no number
     * it did not open is valid, table nearly empty, then full. */
    for (int round = 0; round < 2; round++) {
        int mine = round == 0 ? 3 : LIMIT;
        if (round == 1 && fill(0) != LIMIT - 3)
            check("refill", 0);
        long tbad = 0;
        pthread_t th;
        stop = 0;
        pthread_create(&th, NULL, patcher, &tbad);
        int seen_odd = -1;
        for (int i = 0; i < 300 && seen_odd < 0; i++) {
            count_valid(SCAN, mine, &odd);
            seen_odd = odd;
        }
        stop = 1;
        pthread_join(th, NULL);
        checkf(round == 0 ? "no_foreign_fds_while_patching" : "no_foreign_fds_while_patching_full",
               seen_odd == -1 && tbad == 0, "first odd %d, %ld wrong results", seen_odd, tbad);
    }
    syscall(SYS_close_range, 3, ~0U, 0);
    n = fill(0);
    show("refill_count", "%d", n);
    return conf_finish("fd_table");
}
