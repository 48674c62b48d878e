/* Reads and attributes of files opened on an exclusive mount, printed so
 * that a run under picos can be compared with a native one. Under picos,
 * fstat (and newfstatat/statx with AT_EMPTY_PATH) of such a file come from
 * the attributes its open found, and pread64 from a read-only view of the
 * file in the runtime's memory (docs/FILESYSTEM.md, "Files of exclusive
 * mounts"); every other call and descriptor is the host's. This checks the
 * answers at the edges (end of file, empty file, a file too large for a
 * view, bad offsets and buffers, a buffer that ends in an unmapped page,
 * descriptors that are not files), and that the descriptor's identity is
 * followed: dup, close and reuse of its number, dup2 over it, close_range,
 * read and lseek beside pread, a forked child, threads.
 *
 *   views --setup DIR       makes the files in DIR (natively, before)
 *   views DIR               prints the answers
 *   views DIR --loop N      only N preads of 256 bytes (for --stats)
 *
 * crates/picos/tests/mounts.rs runs it natively and under picos with DIR
 * on an exclusive read-only mount and compares the outputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;

/* The errno's name (glibc's, as errorder.c prints them). */
static const char *err(int e)
{
    const char *n = strerrorname_np(e);
    return n ? n : "unknown errno";
}

static void die(const char *what)
{
    perror(what);
    exit(2);
}

/* The byte at offset i of the files the set-up makes. */
static unsigned char pattern(const char *name, long i)
{
    return (unsigned char)(i * 7 + i / 4096 + name[0]);
}

static char *path_of(const char *name)
{
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void make(const char *name, long size)
{
    int fd = open(path_of(name), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        die(name);
    char buf[4096];
    for (long done = 0; done < size;) {
        long n = size - done < (long)sizeof buf ? size - done : (long)sizeof buf;
        for (long i = 0; i < n; i++)
            buf[i] = (char)pattern(name, done + i);
        if (write(fd, buf, (size_t)n) != n)
            die("write");
        done += n;
    }
    close(fd);
}

static void setup(void)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        die("mkdir");
    make("small", 100);
    make("pages", 3 * 4096 + 17);
    make("large", 300 * 1024);
    make("empty", 0);
    make("victim", 300 * 1024);
    /* Larger than a view may be (kernel::fs::file::MAX_VIEW): sparse. */
    int fd = open(path_of("sparse"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0 || ftruncate(fd, 300L << 20) < 0 || pwrite(fd, "end", 3, (300L << 20) - 3) != 3)
        die("sparse");
    close(fd);
    if (mkdir(path_of("sub"), 0755) < 0 && errno != EEXIST)
        die("mkdir sub");
}

static unsigned long sum(const unsigned char *b, long n)
{
    unsigned long s = 0;
    for (long i = 0; i < n; i++)
        s = s * 31 + b[i];
    return s;
}

static unsigned char big[1 << 20];

/* One pread into `buf`, printed: its result and a checksum of what it
 * read. */
static void pread_into(const char *tag, int fd, unsigned char *buf, size_t count, off_t off)
{
    errno = 0;
    ssize_t r = pread(fd, buf, count, off);
    if (r < 0)
        printf("%s pread(%zu, %lld) = %s\n", tag, count, (long long)off, err(errno));
    else
        printf("%s pread(%zu, %lld) = %zd sum %lx\n", tag, count, (long long)off, r, sum(buf, r));
}

static void pread_print(const char *tag, int fd, size_t count, off_t off)
{
    memset(big, 0xee, count < sizeof big ? count : sizeof big);
    pread_into(tag, fd, big, count, off);
}

static void print_fstat(const char *tag, int fd)
{
    struct stat a, b, p;
    if (fstat(fd, &a) < 0) {
        printf("%s fstat = %s\n", tag, err(errno));
        return;
    }
    if (fstatat(fd, "", &b, AT_EMPTY_PATH) < 0)
        die("fstatat");
    struct statx x;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &x) < 0)
        die("statx");
    printf("%s fstat: mode %o size %lld nlink %lu blocks %lld; fstatat %s; statx size %llu mode %o ino %s\n",
           tag, a.st_mode, (long long)a.st_size, (unsigned long)a.st_nlink, (long long)a.st_blocks,
           memcmp(&a, &b, sizeof a) == 0 ? "same" : "DIFFERENT", (unsigned long long)x.stx_size,
           x.stx_mode, x.stx_ino == a.st_ino ? "same" : "DIFFERENT");
    /* The path's attributes are the descriptor's (nothing changed it). */
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) {
        target[n] = 0;
        if (stat(target, &p) == 0)
            printf("%s stat of its path: %s\n", tag,
                   p.st_ino == a.st_ino && p.st_size == a.st_size && p.st_mtim.tv_nsec == a.st_mtim.tv_nsec
                       ? "same" : "DIFFERENT");
    }
}

static void edges(const char *name)
{
    int fd = open(path_of(name), O_RDONLY);
    if (fd < 0)
        die(name);
    printf("== %s\n", name);
    print_fstat(name, fd);
    struct stat st;
    fstat(fd, &st);
    long size = st.st_size;
    off_t offs[] = {0, 1, 4095, 4096, size > 0 ? size - 1 : 0, size, size + 1, 1LL << 40};
    size_t counts[] = {0, 1, 256, 4096, 5000, sizeof big};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++)
        for (size_t j = 0; j < sizeof counts / sizeof counts[0]; j++)
            pread_print(name, fd, counts[j], offs[i]);
    pread_print(name, fd, 16, -1);
    pread_print(name, fd, 16, (off_t)((1ULL << 63) - 1));
    /* Bad buffers: NULL, one that ends past the address space, one whose
     * second page is not mapped. */
    /* (Each result is taken before errno is read: printf's arguments have
     * no order.) */
    char tag[64];
    snprintf(tag, sizeof tag, "%s into NULL", name);
    pread_into(tag, fd, NULL, 16, 0);
    pread_into(tag, fd, NULL, 16, size);
    snprintf(tag, sizeof tag, "%s to the top", name);
    pread_into(tag, fd, (unsigned char *)0x7ffffffff000UL, 8192, 0);
    unsigned char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two == MAP_FAILED)
        die("mmap");
    munmap(two + 4096, 4096);
    snprintf(tag, sizeof tag, "%s into a half-mapped buffer", name);
    pread_into(tag, fd, two + 100, 8192, 0);
    munmap(two, 4096);
    /* read and lseek keep the host's offset; pread moves none. */
    char a[10], b[10];
    ssize_t ra = read(fd, a, sizeof a);
    pread_print(name, fd, 10, 0);
    ssize_t rb = read(fd, b, sizeof b);
    printf("%s read %zd then %zd (sums %lx %lx), offset %lld\n", name, ra, rb,
           sum((unsigned char *)a, ra > 0 ? ra : 0), sum((unsigned char *)b, rb > 0 ? rb : 0),
           (long long)lseek(fd, 0, SEEK_CUR));
    /* The host's mmap of it. */
    if (size > 0) {
        void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            die("mmap file");
        printf("%s mmap sum %lx\n", name, sum(m, size < 65536 ? size : 65536));
        munmap(m, size);
    }
    printf("%s F_GETFL %o\n", name, fcntl(fd, F_GETFL) & ~0100000 /* O_LARGEFILE */);
    close(fd);
}

static void identities(void)
{
    printf("== descriptors\n");
    int fd = open(path_of("small"), O_RDONLY);
    int d = dup(fd);
    pread_print("dup", d, 16, 0);
    close(fd);
    pread_print("closed", fd, 16, 0);
    pread_print("dup after close", d, 16, 0);
    /* Its number reused by a pipe, then by another file. */
    int p[2];
    if (pipe(p) < 0)
        die("pipe");
    printf("pipe reuses the number: %s\n", p[0] == fd ? "yes" : "no");
    pread_print("pipe", p[0], 16, 0);
    print_fstat("pipe", p[0]);
    close(p[0]);
    close(p[1]);
    int other = open(path_of("pages"), O_RDONLY);
    printf("file reuses the number: %s\n", other == fd ? "yes" : "no");
    pread_print("reused", other, 16, 4096);
    /* dup2 of a pipe over a file, and of a file over a file. */
    if (pipe(p) < 0)
        die("pipe");
    dup2(p[0], other);
    pread_print("dup2 pipe over it", other, 16, 0);
    int f2 = open(path_of("large"), O_RDONLY);
    dup2(f2, other);
    pread_print("dup2 file over it", other, 16, 8192);
    print_fstat("dup2 file over it", other);
    close(f2);
    close(p[0]);
    close(p[1]);
    /* close_range, then the number reused by /dev/null. */
    syscall(SYS_close_range, other, other, 0);
    pread_print("close_range", other, 16, 0);
    int nul = open("/dev/null", O_RDONLY);
    printf("/dev/null reuses the number: %s\n", nul == other ? "yes" : "no");
    pread_print("/dev/null", nul, 16, 0);
    close(nul);
    close(d);
    /* O_PATH and directories: not files to read. */
    int op = open(path_of("small"), O_PATH);
    pread_print("O_PATH", op, 16, 0);
    print_fstat("O_PATH", op);
    close(op);
    int dd = open(path_of("sub"), O_RDONLY | O_DIRECTORY);
    pread_print("directory", dd, 16, 0);
    close(dd);
}

static int shared_fd;
static void *reader(void *arg)
{
    long bad = 0;
    unsigned char b[512];
    for (int i = 0; i < 2000; i++) {
        off_t off = (off_t)((i * 4099L + (long)arg * 777) % (300 * 1024 - 512));
        if (pread(shared_fd, b, sizeof b, off) != (ssize_t)sizeof b)
            bad++;
        else
            for (int k = 0; k < (int)sizeof b; k++)
                if (b[k] != pattern("large", off + k))
                    bad++;
    }
    return (void *)bad;
}

/* A thread with a descriptor table of its own (unshare(CLONE_FILES))
 * puts a file where the main thread has a pipe. */
static int unshared_num;
static void *unsharer(void *arg)
{
    (void)arg;
    if (unshare(CLONE_FILES) < 0)
        die("unshare");
    close(unshared_num);
    int f = open(path_of("small"), O_RDONLY);
    printf("unshared thread's file reuses the number: %s\n", f == unshared_num ? "yes" : "no");
    pread_print("unshared thread's file", f, 16, 0);
    return NULL;
}

static void processes(void)
{
    printf("== fork and threads\n");
    int fd = open(path_of("large"), O_RDONLY);
    pread_print("parent", fd, 4096, 100000);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        pread_print("child", fd, 4096, 200000);
        close(fd);
        int other = open(path_of("small"), O_RDONLY);
        pread_print("child's reused", other, 16, 0);
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    pread_print("parent after the child closed its copy", fd, 4096, 100000);
    shared_fd = fd;
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, reader, (void *)i);
    long bad = 0;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (long)r;
    }
    printf("threads: %ld bad reads\n", bad);
    /* Content check of a whole file, page by page. */
    long wrong = 0;
    unsigned char b[4096];
    for (long off = 0; off < 300 * 1024; off += 4096) {
        ssize_t n = pread(fd, b, sizeof b, off);
        for (long k = 0; k < n; k++)
            wrong += b[k] != pattern("large", off + k);
    }
    printf("content: %ld wrong bytes\n", wrong);
    close(fd);
    int p[2];
    if (pipe(p) < 0)
        die("pipe");
    unshared_num = p[0];
    pthread_t u;
    pthread_create(&u, NULL, unsharer, NULL);
    pthread_join(u, NULL);
    pread_print("main thread's pipe", p[0], 16, 0);
    close(p[0]);
    close(p[1]);
    /* A process sharing the table (CLONE_FILES without CLONE_VM) puts a
     * pipe where the parent has a file. */
    int g = open(path_of("small"), O_RDONLY);
    pread_print("before CLONE_FILES", g, 16, 0);
    pid = (pid_t)syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        close(g);
        int q[2];
        if (pipe(q) < 0)
            _exit(2);
        _exit(q[0] == g ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("CLONE_FILES child put a pipe at the number: %s\n",
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
    pread_print("parent's number after the CLONE_FILES child", g, 16, 0);
    pread_print("a file opened after it", open(path_of("pages"), O_RDONLY), 16, 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--setup") == 0) {
        dir = argv[2];
        setup();
        return 0;
    }
    if (argc < 2)
        return 2;
    dir = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[2], "--truncated") == 0) {
        /* The file shrinks underneath between two rounds of preads (the
         * test truncates it on the host when told "ready"): a broken
         * promise must not crash the runtime. */
        int fd = open(path_of("victim"), O_RDONLY);
        if (fd < 0)
            die("victim");
        pread_print("before", fd, 4096, 0);
        pread_print("before", fd, 4096, 200000);
        printf("ready\n");
        char line[16];
        if (!fgets(line, sizeof line, stdin))
            die("stdin");
        pread_print("after, past the new end", fd, 4096, 200000);
        pread_print("after, at the end", fd, 4096, 100);
        pread_print("after, in the first page", fd, 16, 0);
        struct stat st;
        fstat(fd, &st);
        printf("done\n");
        return 0;
    }
    if (argc == 4 && strcmp(argv[2], "--loop") == 0) {
        int fd = open(path_of("small"), O_RDONLY);
        long n = atol(argv[3]), bad = 0;
        char b[256];
        for (long i = 0; i < n; i++)
            bad += pread(fd, b, sizeof b, 0) != 100;
        printf("%ld bad\n", bad);
        return bad != 0;
    }
    const char *names[] = {"small", "pages", "large", "empty", "sparse"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        edges(names[i]);
    identities();
    processes();
    return 0;
}
