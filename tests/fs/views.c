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
 * read and lseek beside pread, a forked child, threads. read, readv,
 * preadv and preadv2 are the library OS's too (they claim their range of
 * the host's file offset with one lseek): their results, what they read
 * and the offset after each are printed, through a dup, a forked child and
 * threads sharing the offset.
 *
 *   views --setup DIR       makes the files in DIR (natively, before)
 *   views DIR               prints the answers
 *   views DIR --loop N      only N preads of 256 bytes, then N reads of 30
 *                           bytes and lseeks (for --stats)
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
#include <sys/uio.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
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

/* The descriptor the threads read. */
static int shared_fd;

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

static void print_offset(const char *tag, int fd)
{
    printf("%s offset %lld\n", tag, (long long)lseek(fd, 0, SEEK_CUR));
}

/* One read into `buf`, printed with the offset after it. */
static void read_into(const char *tag, int fd, unsigned char *buf, size_t count)
{
    errno = 0;
    ssize_t r = read(fd, buf, count);
    if (r < 0)
        printf("%s read(%zu) = %s", tag, count, err(errno));
    else
        printf("%s read(%zu) = %zd sum %lx", tag, count, r, sum(buf, r));
    printf(", offset %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
}

/* readv/preadv/preadv2 into three buffers of `a`, `b` and `c` bytes. */
static void vec_print(const char *tag, int fd, int how, size_t a, size_t b, size_t c, off_t off, int flags)
{
    memset(big, 0xee, a + b + c + 64);
    struct iovec iov[3] = {{big, a}, {big + a + 32, b}, {big + a + b + 64, c}};
    errno = 0;
    ssize_t r = how == 0 ? readv(fd, iov, 3)
              : how == 1 ? preadv(fd, iov, 3, off)
                         : preadv2(fd, iov, 3, off, flags);
    const char *name = how == 0 ? "readv" : how == 1 ? "preadv" : "preadv2";
    if (r < 0)
        printf("%s %s(%zu,%zu,%zu @%lld) = %s", tag, name, a, b, c, (long long)off, err(errno));
    else
        printf("%s %s(%zu,%zu,%zu @%lld) = %zd sums %lx %lx %lx", tag, name, a, b, c, (long long)off, r,
               sum(big, a), sum(big + a + 32, b), sum(big + a + b + 64, c));
    printf(", offset %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
}

static void reads(const char *name)
{
    int fd = open(path_of(name), O_RDONLY);
    if (fd < 0)
        die(name);
    printf("== reads of %s\n", name);
    struct stat st;
    fstat(fd, &st);
    /* Through the file in uneven steps, to its end and past it. */
    size_t steps[] = {0, 1, 255, 4096, 5000, 100, 65536, 3};
    for (int round = 0; round < 40; round++) {
        read_into(name, fd, big, steps[round % 8]);
        if (lseek(fd, 0, SEEK_CUR) >= st.st_size && round % 8 == 7)
            break;
    }
    read_into(name, fd, big, 16);
    /* From just before the end, from past it (the offset stays). */
    lseek(fd, st.st_size > 3 ? st.st_size - 3 : 0, SEEK_SET);
    read_into(name, fd, big, 100);
    lseek(fd, st.st_size + 1000, SEEK_SET);
    read_into(name, fd, big, 100);
    lseek(fd, 1LL << 40, SEEK_SET);
    read_into(name, fd, big, 100);
    lseek(fd, 0, SEEK_SET);
    read_into(name, fd, big, sizeof big);
    /* Vectors: at the offset, at an offset, preadv2 at -1 and with a flag,
     * a negative offset, and across the end. */
    lseek(fd, 10, SEEK_SET);
    vec_print(name, fd, 0, 5, 0, 300, 0, 0);
    vec_print(name, fd, 1, 100, 5000, 7, 4000, 0);
    vec_print(name, fd, 2, 1, 2, 3, -1, 0);
    vec_print(name, fd, 2, 1, 2, 3, 0, RWF_HIPRI);
    vec_print(name, fd, 1, 1, 2, 3, -2, 0);
    vec_print(name, fd, 2, 1, 2, 3, -2, 0);
    lseek(fd, st.st_size > 10 ? st.st_size - 10 : 0, SEEK_SET);
    vec_print(name, fd, 0, 4, 4, 4, 0, 0);
    vec_print(name, fd, 0, 4, 4, 4, 0, 0);
    /* Zero and bad counts, NULL and half-mapped buffers: the offset is
     * where Linux leaves it. */
    lseek(fd, 0, SEEK_SET);
    struct iovec none[1] = {{big, 0}};
    /* (Through syscall(): glibc's readv is declared to read `count`
     * iovecs.) */
    int counts[] = {0, -1, 1025, 17};
    for (int i = 0; i < 4; i++) {
        errno = 0;
        long r = syscall(SYS_readv, fd, none, counts[i]);
        printf("%s readv of %d buffers = %ld (%s)\n", name, counts[i], r, r < 0 ? err(errno) : "-");
    }
    read_into(name, fd, NULL, 16);
    unsigned char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two == MAP_FAILED)
        die("mmap");
    munmap(two + 4096, 4096);
    read_into(name, fd, two + 100, 8192);
    munmap(two, 4096);
    struct iovec bad[2] = {{big, 8}, {NULL, 8}};
    errno = 0;
    ssize_t r = readv(fd, bad, 2);
    printf("%s readv into NULL second = %zd (%s)", name, r, r < 0 ? err(errno) : "-");
    print_offset("", fd);
    /* A dup shares the offset; so does a forked child. */
    lseek(fd, 100, SEEK_SET);
    int d = dup(fd);
    read_into("dup", d, big, 50);
    read_into("original after the dup's read", fd, big, 50);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        read_into("child", fd, big, 1000);
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    print_offset("parent after the child's read", fd);
    close(d);
    close(fd);
}

/* Threads reading one descriptor's offset in turn: every byte read once,
 * each where it belongs. */
static void *offset_reader(void *arg)
{
    (void)arg;
    long bad = 0, got = 0;
    unsigned char b[1000];
    for (;;) {
        /* The offset before the read is not known to this thread: the
         * data is checked against itself (each 1000-byte read of "large"
         * must be one contiguous run of the pattern). */
        ssize_t n = read(shared_fd, b, sizeof b);
        if (n <= 0)
            break;
        got += n;
        long start = -1;
        for (long o = 0; o < 300 * 1024 && start < 0; o++)
            if (b[0] == pattern("large", o) && (n < 2 || b[1] == pattern("large", o + 1)) &&
                (n < 3 || b[n - 1] == pattern("large", o + n - 1)))
                start = o;
        bad += start < 0;
    }
    return (void *)(got * 1000 + bad);
}

static int open_at(const char *name, off_t skip)
{
    int fd = open(path_of(name), O_RDONLY);
    if (fd < 0)
        die(name);
    if (skip > 0 && read(fd, big, (size_t)skip) != skip)
        die("read");
    return fd;
}

static void seek_print(const char *tag, int fd, off_t off, int whence)
{
    errno = 0;
    off_t r = lseek(fd, off, whence);
    if (r < 0)
        printf("%s lseek(%lld, %d) = %s\n", tag, (long long)off, whence, err(errno));
    else
        printf("%s lseek(%lld, %d) = %lld\n", tag, (long long)off, whence, (long long)r);
}

/* This program run again (`self`, with --read-fd) in a child made by
 * fork or vfork, reading descriptor `fd` it inherits; waits for it. */
static void new_program_reads(const char *self, int fd, int use_vfork)
{
    char num[16];
    snprintf(num, sizeof num, "%d", fd);
    fflush(stdout);
    pid_t pid = use_vfork ? vfork() : fork();
    if (pid == 0) {
        execl(self, self, dir, "--read-fd", num, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
}

/* The file offset after every way something can use or share it: the
 * library OS keeps it until then, the host after. */
static void offsets(const char *self)
{
    printf("== offsets\n");
    int fd = open_at("pages", 10);
    seek_print("seek", fd, 0, SEEK_CUR);
    seek_print("seek", fd, -5, SEEK_CUR);
    read_into("seek", fd, big, 3);
    seek_print("seek", fd, -1, SEEK_SET);
    seek_print("seek", fd, -200000, SEEK_END);
    seek_print("seek", fd, -20, SEEK_CUR);
    seek_print("seek", fd, 5, SEEK_END);
    read_into("seek", fd, big, 10);
    seek_print("seek", fd, 1LL << 41, SEEK_SET);
    read_into("seek", fd, big, 10);
    seek_print("seek", fd, 100, SEEK_SET);
    seek_print("seek", fd, 0, SEEK_DATA);
    read_into("seek", fd, big, 10);
    seek_print("seek", fd, 0, 7);
    seek_print("seek", fd, (off_t)((1ULL << 63) - 1), SEEK_SET);
    close(fd);

    fd = open_at("pages", 100);
    int avail = -1;
    int r = ioctl(fd, FIONREAD, &avail);
    printf("FIONREAD %d = %d\n", r, avail);
    read_into("FIONREAD", fd, big, 10);
    printf("F_GETFL %o\n", fcntl(fd, F_GETFL) & ~0100000);
    read_into("F_GETFL", fd, big, 10);
    int d = fcntl(fd, F_DUPFD, 0);
    read_into("F_DUPFD copy", d, big, 10);
    read_into("F_DUPFD original", fd, big, 10);
    close(d);
    close(fd);

    /* Passed to another process over a socket. */
    fd = open_at("pages", 123);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        die("socketpair");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd);
        char c;
        char ctl[CMSG_SPACE(sizeof(int))];
        struct iovec io = {&c, 1};
        struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
        if (recvmsg(sv[1], &m, 0) != 1)
            _exit(2);
        int got;
        memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof got);
        read_into("received", got, big, 7);
        fflush(stdout);
        _exit(0);
    }
    {
        char c = 'x';
        char ctl[CMSG_SPACE(sizeof(int))];
        memset(ctl, 0, sizeof ctl);
        struct iovec io = {&c, 1};
        struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof fd);
        if (sendmsg(sv[0], &m, 0) != 1)
            die("sendmsg");
    }
    waitpid(pid, NULL, 0);
    read_into("sender after the receiver's read", fd, big, 1);
    close(sv[0]);
    close(sv[1]);
    close(fd);

    /* sendfile from it, at its offset. */
    fd = open_at("pages", 77);
    int p[2];
    if (pipe(p) < 0)
        die("pipe");
    printf("sendfile = %zd\n", sendfile(p[1], fd, NULL, 10));
    read_into("after sendfile", fd, big, 10);
    read_into("the pipe", p[0], big, 10);
    close(p[0]);
    close(p[1]);
    close(fd);

    /* Its /proc/self/fdinfo. */
    fd = open_at("pages", 33);
    char info[64];
    snprintf(info, sizeof info, "/proc/self/fdinfo/%d", fd);
    FILE *f = fopen(info, "r");
    char line[256];
    if (f && fgets(line, sizeof line, f))
        printf("fdinfo %s", line);
    if (f)
        fclose(f);
    read_into("after fdinfo", fd, big, 1);
    close(fd);

    /* Inherited by a new program, after fork and after vfork. */
    fd = open_at("pages", 55);
    new_program_reads(self, fd, 0);
    read_into("after the new program's read", fd, big, 1);
    close(fd);
    fd = open_at("pages", 66);
    new_program_reads(self, fd, 1);
    read_into("after the vforked program's read", fd, big, 1);
    close(fd);
}

static void threads_sharing_an_offset(void);

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
    if (argc == 4 && strcmp(argv[2], "--read-fd") == 0) {
        int fd = atoi(argv[3]);
        print_offset("new program", fd);
        read_into("new program", fd, big, 5);
        return 0;
    }
    if (argc == 4 && strcmp(argv[2], "--loop") == 0) {
        int fd = open(path_of("small"), O_RDONLY);
        long n = atol(argv[3]), bad = 0;
        char b[256];
        for (long i = 0; i < n; i++)
            bad += pread(fd, b, sizeof b, 0) != 100;
        /* And as many reads, each with an lseek back to the start. */
        for (long i = 0; i < n; i++)
            bad += read(fd, b, 30) != 30 || lseek(fd, 0, SEEK_SET) != 0;
        printf("%ld bad\n", bad);
        return bad != 0;
    }
    const char *names[] = {"small", "pages", "large", "empty", "sparse"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        edges(names[i]);
    /* (Before `processes`, whose CLONE_FILES child makes picos stop
     * noting files.) */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        reads(names[i]);
    offsets(argv[0]);
    threads_sharing_an_offset();
    identities();
    processes();
    return 0;
}

static void threads_sharing_an_offset(void)
{
    shared_fd = open(path_of("large"), O_RDONLY);
    pthread_t t[4];
    long got = 0, bad = 0;
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, offset_reader, (void *)i);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        got += (long)r / 1000;
        bad += (long)r % 1000;
    }
    printf("threads sharing an offset: %ld bytes read, %ld bad reads\n", got, bad);
    close(shared_fd);
}
