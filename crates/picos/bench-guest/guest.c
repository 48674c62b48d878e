/*
 * The guest program of `picos bench`: lmbench-style micro-benchmarks, one per
 * row of the seed papers' tables. `picos bench` compiles this file with the
 * system C compiler and runs it natively and under each picos configuration.
 *
 *   guest ROW ITERS DIR   run row ROW: set-up, a warm-up, then one timed loop
 *                         of ITERS operations; files go in DIR (which must
 *                         exist). Prints one line:
 *                           ROW VALUE UNIT ELAPSED_NS ITERS
 *                         VALUE is ns per operation (UNIT "ns"), MB/s
 *                         ("MB/s", MB = 2^20 bytes, as lmbench) or operations
 *                         per second ("ops/s").
 *   guest --list          prints "ROW UNIT" for every row.
 *
 * Only the timed loop is timed (clock_gettime(CLOCK_MONOTONIC), a vDSO call
 * natively and under picos), so process start-up, set-up and warm-up are
 * excluded. The warm-up runs ITERS/10 + 1 operations: under picos it is also
 * what gets the syscall sites patched before timing starts.
 *
 * Adding a row: write its operation (or a custom measure function) below and
 * add one line to `rows[]`; then add one line to `ROWS` in
 * crates/picos/src/bench.rs (the harness checks the two lists agree).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

enum unit { NS, MBPS, OPS };
static const char *const unit_names[] = {"ns", "MB/s", "ops/s"};

static void die(const char *what)
{
    fprintf(stderr, "picos-bench-guest: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long warmup_count(long iters) { return iters / 10 + 1; }

/* ---- process-wide state used by the rows ---- */

static volatile long signals_seen;
static void on_signal(int sig) { (void)sig; signals_seen++; }
static struct sigaction handler_sa;
static sigset_t usr1_set;
static int fd;                          /* the file of the fstat/pread/pwrite/read rows */
static char buf[64 * 1024];
static const char *path2 = "d/f";       /* 2, 4 and 8 path components, relative to DIR */
static const char *path4 = "d/d/d/f";
static const char *path8 = "d/d/d/d/d/d/d/f";

/* ---- set-up helpers (untimed) ---- */

static void make_dirs(void)
{
    const char *dirs[] = {"d", "d/d", "d/d/d", "d/d/d/d", "d/d/d/d/d", "d/d/d/d/d/d", "d/d/d/d/d/d/d"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (mkdir(dirs[i], 0755) < 0 && errno != EEXIST)
            die("mkdir");
    const char *files[] = {path2, path4, path8};
    for (size_t i = 0; i < 3; i++) {
        /* Made once (the first column to run a row makes them): a column
         * whose files directory is a read-only mount only reads them. */
        if (access(files[i], F_OK) == 0)
            continue;
        int f = open(files[i], O_CREAT | O_WRONLY, 0644);
        if (f < 0)
            die("create path file");
        close(f);
    }
}

/* Opens NAME read-write, first making it SIZE bytes long if it is not.
 * A column whose files directory is a read-only mount (EROFS) opens it
 * read-only, as an earlier column made it. */
static int sized_file(const char *name, off_t size)
{
    int f = open(name, O_CREAT | O_RDWR, 0644);
    struct stat st;
    if (f < 0 && errno == EROFS) {
        f = open(name, O_RDONLY);
        if (f < 0 || fstat(f, &st) < 0 || st.st_size != size)
            die("read-only files directory without the set-up file");
        return f;
    }
    if (f < 0 || fstat(f, &st) < 0)
        die(name);
    if (st.st_size != size) {
        if (ftruncate(f, 0) < 0)
            die("ftruncate");
        memset(buf, 'x', sizeof buf);
        for (off_t done = 0; done < size;) {
            size_t n = size - done < (off_t)sizeof buf ? (size_t)(size - done) : sizeof buf;
            if (write(f, buf, n) != (ssize_t)n)
                die("write set-up file");
            done += (off_t)n;
        }
    }
    return f;
}

static void setup_handler(void)
{
    handler_sa.sa_handler = on_signal;
    sigemptyset(&handler_sa.sa_mask);
    if (sigaction(SIGUSR1, &handler_sa, NULL) < 0)
        die("sigaction");
    sigemptyset(&usr1_set);
    sigaddset(&usr1_set, SIGUSR1);
}
static void setup_paths(void) { make_dirs(); }
static void setup_fstat(void)
{
    make_dirs();
    if ((fd = open(path2, O_RDONLY)) < 0)
        die("open");
}
static void setup_rw(void) { fd = sized_file("rw", 16 * 1024); memset(buf, 'y', sizeof buf); }
static void setup_big(void) { fd = sized_file("big", 64L << 20); }
static void setup_dev_zero(void)
{
    if ((fd = open("/dev/zero", O_RDONLY)) < 0)
        die("open /dev/zero");
}
static void setup_dev_null(void)
{
    if ((fd = open("/dev/null", O_WRONLY)) < 0)
        die("open /dev/null");
}
static char abs_path2[4096 + 8];        /* DIR/d/f, absolute */
static void setup_abs_path(void)
{
    make_dirs();
    if (!getcwd(abs_path2, 4096))
        die("getcwd");
    strcat(abs_path2, "/");
    strcat(abs_path2, path2);
}
static void close_fd(void) { close(fd); }

/* ---- one operation each (timed in a loop by measure_ops) ---- */

static void op_getppid(long i) { (void)i; getppid(); }
static void op_getpid(long i) { (void)i; getpid(); }
static void op_sigaction(long i)
{
    (void)i;
    if (sigaction(SIGUSR1, &handler_sa, NULL) < 0)
        die("sigaction");
}
static void op_raise(long i) { (void)i; raise(SIGUSR1); }
static void op_sigpending(long i)
{
    (void)i;
    sigset_t s;
    if (sigpending(&s) < 0)
        die("sigpending");
}
static void op_getaffinity(long i)
{
    (void)i;
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) < 0)
        die("sched_getaffinity");
}
static void op_sigprocmask(long i)
{
    if (sigprocmask(i & 1 ? SIG_UNBLOCK : SIG_BLOCK, &usr1_set, NULL) < 0)
        die("sigprocmask");
}

static void wait_ok(pid_t pid)
{
    int st;
    if (pid < 0)
        die("fork");
    if (waitpid(pid, &st, 0) != pid)
        die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        errno = 0;
        die("child failed");
    }
}
static void op_fork(long i)
{
    (void)i;
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    wait_ok(pid);
}
static void op_fork_exec(long i)
{
    (void)i;
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    wait_ok(pid);
}
static void op_vfork_exec(long i)
{
    (void)i;
    pid_t pid = vfork();
    if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    wait_ok(pid);
}
static void *thread_body(void *arg) { return arg; }
static void op_pthread(long i)
{
    (void)i;
    pthread_t t;
    if ((errno = pthread_create(&t, NULL, thread_body, NULL)) != 0)
        die("pthread_create");
    pthread_join(t, NULL);
}
static void op_mmap(long i)
{
    (void)i;
    void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    munmap(p, 1 << 20);
}

static void open_close(const char *path)
{
    int f = open(path, O_RDONLY);
    if (f < 0)
        die("open");
    close(f);
}
/* Pass-through calls exactly as a classic micro-benchmark makes them:
 * glibc's read/write of one byte, open+close of an absolute path. */
static void op_read_1(long i)
{
    (void)i;
    char c;
    if (read(fd, &c, 1) != 1)
        die("read /dev/zero");
}
static void op_write_1(long i)
{
    (void)i;
    char c = 0;
    if (write(fd, &c, 1) != 1)
        die("write /dev/null");
}
static void op_open_abs(long i)
{
    (void)i;
    int f = open(abs_path2, O_RDONLY);
    if (f < 0)
        die("open");
    close(f);
}
static void op_open2(long i) { (void)i; open_close(path2); }
static void op_open4(long i) { (void)i; open_close(path4); }
static void op_open8(long i) { (void)i; open_close(path8); }
static void stat_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        die("stat");
}
static void op_stat2(long i) { (void)i; stat_path(path2); }
static void op_stat4(long i) { (void)i; stat_path(path4); }
static void op_stat8(long i) { (void)i; stat_path(path8); }
static void op_fstat(long i)
{
    (void)i;
    struct stat st;
    if (fstat(fd, &st) < 0)
        die("fstat");
}
#define PREAD(n)                                                \
    static void op_pread_##n(long i)                            \
    {                                                           \
        (void)i;                                                \
        if (pread(fd, buf, n, 0) != n)                          \
            die("pread");                                       \
    }                                                           \
    static void op_pwrite_##n(long i)                           \
    {                                                           \
        (void)i;                                                \
        if (pwrite(fd, buf, n, 0) != n)                         \
            die("pwrite");                                      \
    }
/* read(2) of n bytes at the file offset, through the 16 KiB file and
 * back to its start (one lseek per 64 reads of 256 B). */
#define READ(n)                                                 \
    static void op_read_##n(long i)                             \
    {                                                           \
        (void)i;                                                \
        ssize_t r = read(fd, buf, n);                           \
        if (r == 0) {                                           \
            if (lseek(fd, 0, SEEK_SET) != 0)                    \
                die("lseek");                                   \
            r = read(fd, buf, n);                               \
        }                                                       \
        if (r != n)                                             \
            die("read");                                        \
    }
READ(256)
READ(1024)
/* write(2) of n bytes at the file offset, through the 16 KiB file and
 * back to its start (one lseek per 64 writes of 256 B). */
#define WRITE(n)                                                \
    static void op_write_##n(long i)                            \
    {                                                           \
        if ((i * n) % (16 * 1024) == 0 && lseek(fd, 0, SEEK_SET) != 0) \
            die("lseek");                                       \
        if (write(fd, buf, n) != n)                             \
            die("write");                                       \
    }
WRITE(256)
WRITE(1024)
PREAD(256)
PREAD(1024)
PREAD(4096)
PREAD(16384)
static void op_read_file(long i)
{
    (void)i;
    ssize_t n;
    if (lseek(fd, 0, SEEK_SET) != 0)
        die("lseek");
    while ((n = read(fd, buf, sizeof buf)) > 0)
        ;
    if (n < 0)
        die("read");
}

/* ---- rows that time themselves: return the ns of ITERS operations ---- */

/* Times op 0..iters-1 after a warm-up. */
static double measure_ops(void (*op)(long), long iters)
{
    for (long i = 0; i < warmup_count(iters); i++)
        op(i);
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        op(i);
    return now_ns() - t0;
}

/* First touch of fresh anonymous pages (4 KiB: no transparent huge pages),
 * mapped in batches of at most 64 MiB; mapping and unmapping are untimed. */
static double touch_pages(long pages)
{
    double total = 0;
    const long batch_max = 16384;
    while (pages > 0) {
        long n = pages < batch_max ? pages : batch_max;
        char *p = mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            die("mmap");
        madvise(p, (size_t)n * 4096, MADV_NOHUGEPAGE);
        double t0 = now_ns();
        for (long k = 0; k < n; k++)
            p[k * 4096] = 1;
        total += now_ns() - t0;
        munmap(p, (size_t)n * 4096);
        pages -= n;
    }
    return total;
}
static double measure_page_fault(long iters)
{
    touch_pages(warmup_count(iters));
    return touch_pages(iters);
}

/* A child that echoes one byte from rfd to wfd until EOF. */
static pid_t echo_child(int rfd, int wfd, int close1, int close2)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        char c;
        close(close1);
        close(close2);
        while (read(rfd, &c, 1) == 1)
            if (write(wfd, &c, 1) != 1)
                _exit(1);
        _exit(0);
    }
    return pid;
}
static void ping(int wfd, int rfd)
{
    char c = 'p';
    if (write(wfd, &c, 1) != 1 || read(rfd, &c, 1) != 1)
        die("round trip");
}
static double ping_pong(int wfd, int rfd, long iters)
{
    for (long i = 0; i < warmup_count(iters); i++)
        ping(wfd, rfd);
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        ping(wfd, rfd);
    return now_ns() - t0;
}
static double measure_pipe_lat(long iters)
{
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0)
        die("pipe");
    pid_t pid = echo_child(to[0], from[1], to[1], from[0]);
    close(to[0]);
    close(from[1]);
    double ns = ping_pong(to[1], from[0], iters);
    close(to[1]);
    wait_ok(pid);
    close(from[0]);
    return ns;
}
static double measure_unix_lat(long iters)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    pid_t pid = echo_child(sv[1], sv[1], sv[0], sv[0]);
    close(sv[1]);
    double ns = ping_pong(sv[0], sv[0], iters);
    shutdown(sv[0], SHUT_WR);
    wait_ok(pid);
    close(sv[0]);
    return ns;
}
static double measure_tcp_lat(long iters)
{
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) < 0)
        die("tcp listen");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(l);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0)
            _exit(1);
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char ch;
        while (read(c, &ch, 1) == 1)
            if (write(c, &ch, 1) != 1)
                _exit(1);
        _exit(0);
    }
    int s = accept(l, NULL, NULL);
    if (s < 0)
        die("accept");
    close(l);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double ns = ping_pong(s, s, iters);
    shutdown(s, SHUT_WR);
    wait_ok(pid);
    close(s);
    return ns;
}

/* A child writes `chunks` 64 KiB chunks; the parent reads them. */
static double measure_pipe_bw(long iters)
{
    int p[2];
    long warm = warmup_count(iters), total = warm + iters;
    if (pipe(p) < 0)
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(p[0]);
        memset(buf, 'w', sizeof buf);
        for (long i = 0; i < total; i++)
            for (size_t done = 0; done < sizeof buf;) {
                ssize_t n = write(p[1], buf + done, sizeof buf - done);
                if (n <= 0)
                    _exit(1);
                done += (size_t)n;
            }
        _exit(0);
    }
    close(p[1]);
    double t0 = 0;
    for (long i = 0; i < total; i++) {
        if (i == warm)
            t0 = now_ns();
        for (size_t done = 0; done < sizeof buf;) {
            ssize_t n = read(p[0], buf + done, sizeof buf - done);
            if (n <= 0)
                die("pipe read");
            done += (size_t)n;
        }
    }
    double ns = now_ns() - t0;
    close(p[0]);
    wait_ok(pid);
    return ns;
}

/* A write to a read-only page, handled: the handler moves RIP past the
 * faulting store (a 3-byte `movb $1, (%rax)`), and returns. */
static void on_prot_fault(int sig, siginfo_t *si, void *p)
{
    (void)sig, (void)si;
    ((ucontext_t *)p)->uc_mcontext.gregs[REG_RIP] += 3;
}
static void prot_faults(char *page, long n)
{
    for (long i = 0; i < n; i++)
        __asm__ volatile("movb $1, (%0)" ::"a"(page) : "memory");
}
static double measure_prot_fault(long iters)
{
    char *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        die("mmap");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_prot_fault;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGSEGV, &sa, NULL) < 0)
        die("sigaction");
    prot_faults(page, warmup_count(iters));
    double t0 = now_ns();
    prot_faults(page, iters);
    return now_ns() - t0;
}

/* Creates (or deletes) `iters` files of `size` bytes in a fresh directory;
 * only the creations (or deletions) are timed. */
static double files(long iters, size_t size, int time_delete)
{
    char dir[32];
    snprintf(dir, sizeof dir, "files.%d", (int)getpid());
    if (mkdir(dir, 0755) < 0)
        die("mkdir");
    char (*names)[64] = malloc((size_t)iters * sizeof *names);
    if (!names)
        die("malloc");
    for (long i = 0; i < iters; i++)
        snprintf(names[i], sizeof names[i], "%s/%ld", dir, i);
    memset(buf, 'z', sizeof buf);
    double t0 = now_ns(), t1 = 0, t2;
    for (long i = 0; i < iters; i++) {
        int f = open(names[i], O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (f < 0)
            die("create");
        if (size && write(f, buf, size) != (ssize_t)size)
            die("write");
        close(f);
    }
    t1 = now_ns();
    for (long i = 0; i < iters; i++)
        if (unlink(names[i]) < 0)
            die("unlink");
    t2 = now_ns();
    free(names);
    if (rmdir(dir) < 0)
        die("rmdir");
    return time_delete ? t2 - t1 : t1 - t0;
}
static double file_rows(long iters, size_t size, int time_delete)
{
    files(warmup_count(iters), size, time_delete);
    return files(iters, size, time_delete);
}
static double measure_create_0k(long iters) { return file_rows(iters, 0, 0); }
static double measure_delete_0k(long iters) { return file_rows(iters, 0, 1); }
static double measure_create_10k(long iters) { return file_rows(iters, 10240, 0); }
static double measure_delete_10k(long iters) { return file_rows(iters, 10240, 1); }

/* ---- the rows ---- */

struct row {
    const char *name;
    enum unit unit;
    long bytes_per_op;              /* MB/s rows: bytes one operation moves */
    void (*setup)(void);            /* untimed, before the warm-up; may be NULL */
    void (*op)(long i);             /* one operation, timed in a loop ... */
    double (*measure)(long iters);  /* ... or a row that times itself */
    void (*teardown)(void);         /* may be NULL */
};

static const struct row rows[] = {
    /* name           unit  bytes/op    setup          op                measure              teardown */
    {"null",          NS,   0,          NULL,          op_getppid,       NULL,                NULL},
    {"getpid",        NS,   0,          NULL,          op_getpid,        NULL,                NULL},
    {"sigaction",     NS,   0,          setup_handler, op_sigaction,     NULL,                NULL},
    {"sig_deliver",   NS,   0,          setup_handler, op_raise,         NULL,                NULL},
    {"sigprocmask",   NS,   0,          setup_handler, op_sigprocmask,   NULL,                NULL},
    {"sigpending",    NS,   0,          setup_handler, op_sigpending,    NULL,                NULL},
    {"getaffinity",   NS,   0,          NULL,          op_getaffinity,   NULL,                NULL},
    {"fork",          NS,   0,          NULL,          op_fork,          NULL,                NULL},
    {"fork_exec",     NS,   0,          NULL,          op_fork_exec,     NULL,                NULL},
    {"vfork_exec",    NS,   0,          NULL,          op_vfork_exec,    NULL,                NULL},
    {"pthread",       NS,   0,          NULL,          op_pthread,       NULL,                NULL},
    {"mmap_1m",       NS,   0,          NULL,          op_mmap,          NULL,                NULL},
    {"page_fault",    NS,   0,          NULL,          NULL,             measure_page_fault,  NULL},
    {"pipe_lat",      NS,   0,          NULL,          NULL,             measure_pipe_lat,    NULL},
    {"pipe_bw",       MBPS, 64 << 10,   NULL,          NULL,             measure_pipe_bw,     NULL},
    {"unix_lat",      NS,   0,          NULL,          NULL,             measure_unix_lat,    NULL},
    {"tcp_lat",       NS,   0,          NULL,          NULL,             measure_tcp_lat,     NULL},
    {"read_1",        NS,   0,          setup_dev_zero, op_read_1,       NULL,                close_fd},
    {"write_1",       NS,   0,          setup_dev_null, op_write_1,      NULL,                close_fd},
    {"prot_fault",    NS,   0,          NULL,          NULL,             measure_prot_fault,  NULL},
    {"open_2",        NS,   0,          setup_paths,   op_open2,         NULL,                NULL},
    {"open_4",        NS,   0,          setup_paths,   op_open4,         NULL,                NULL},
    {"open_8",        NS,   0,          setup_paths,   op_open8,         NULL,                NULL},
    {"open_abs",      NS,   0,          setup_abs_path, op_open_abs,     NULL,                NULL},
    {"stat_2",        NS,   0,          setup_paths,   op_stat2,         NULL,                NULL},
    {"stat_4",        NS,   0,          setup_paths,   op_stat4,         NULL,                NULL},
    {"stat_8",        NS,   0,          setup_paths,   op_stat8,         NULL,                NULL},
    {"fstat",         NS,   0,          setup_fstat,   op_fstat,         NULL,                close_fd},
    {"write_256",     NS,   0,          setup_rw,      op_write_256,     NULL,                close_fd},
    {"write_1k",      NS,   0,          setup_rw,      op_write_1024,    NULL,                close_fd},
    {"read_256",      NS,   0,          setup_rw,      op_read_256,      NULL,                close_fd},
    {"read_1k",       NS,   0,          setup_rw,      op_read_1024,     NULL,                close_fd},
    {"pread_256",     NS,   0,          setup_rw,      op_pread_256,     NULL,                close_fd},
    {"pread_1k",      NS,   0,          setup_rw,      op_pread_1024,    NULL,                close_fd},
    {"pread_4k",      NS,   0,          setup_rw,      op_pread_4096,    NULL,                close_fd},
    {"pread_16k",     NS,   0,          setup_rw,      op_pread_16384,   NULL,                close_fd},
    {"pwrite_256",    NS,   0,          setup_rw,      op_pwrite_256,    NULL,                close_fd},
    {"pwrite_1k",     NS,   0,          setup_rw,      op_pwrite_1024,   NULL,                close_fd},
    {"pwrite_4k",     NS,   0,          setup_rw,      op_pwrite_4096,   NULL,                close_fd},
    {"pwrite_16k",    NS,   0,          setup_rw,      op_pwrite_16384,  NULL,                close_fd},
    {"create_0k",     OPS,  0,          NULL,          NULL,             measure_create_0k,   NULL},
    {"delete_0k",     OPS,  0,          NULL,          NULL,             measure_delete_0k,   NULL},
    {"create_10k",    OPS,  0,          NULL,          NULL,             measure_create_10k,  NULL},
    {"delete_10k",    OPS,  0,          NULL,          NULL,             measure_delete_10k,  NULL},
    {"read_bw",       MBPS, 64L << 20,  setup_big,     op_read_file,     NULL,                close_fd},
};

int main(int argc, char **argv)
{
    size_t nrows = sizeof rows / sizeof rows[0];
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < nrows; i++)
            printf("%s %s\n", rows[i].name, unit_names[rows[i].unit]);
        return 0;
    }
    if (argc != 4) {
        fprintf(stderr, "usage: %s ROW ITERS DIR | --list\n", argv[0]);
        return 2;
    }
    const struct row *r = NULL;
    for (size_t i = 0; i < nrows; i++)
        if (strcmp(rows[i].name, argv[1]) == 0)
            r = &rows[i];
    char *end;
    long iters = strtol(argv[2], &end, 10);
    if (!r || *end || iters < 1) {
        fprintf(stderr, "picos-bench-guest: unknown row `%s` or bad ITERS `%s`\n", argv[1], argv[2]);
        return 2;
    }
    if (chdir(argv[3]) < 0)
        die(argv[3]);
    const char *sud = getenv("PICOS_BENCH_SUD");
    if (sud && strcmp(sud, "1") == 0) {
        /* The native+SUD column: Syscall User Dispatch on, the whole
         * address space allowed (nothing is dispatched; every call takes
         * the kernel's slow path, as under picos). */
        if (prctl(59 /* PR_SET_SYSCALL_USER_DISPATCH */, 1 /* ON */, 0UL, 1UL << 47, 0UL) < 0)
            die("prctl(PR_SET_SYSCALL_USER_DISPATCH)");
    }
    if (r->setup)
        r->setup();
    double ns = r->measure ? r->measure(iters) : measure_ops(r->op, iters);
    if (r->teardown)
        r->teardown();
    if (ns <= 0)
        ns = 1; /* a clock that did not move: report the finest resolution */
    double value = r->unit == NS     ? ns / (double)iters
                   : r->unit == MBPS ? (double)r->bytes_per_op * (double)iters / (1 << 20) / (ns / 1e9)
                                     : (double)iters / (ns / 1e9);
    printf("%s %.6g %s %.0f %ld\n", r->name, value, unit_names[r->unit], ns, iters);
    return 0;
}
