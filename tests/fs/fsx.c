/* fsx-style file-system equivalence run: a seeded random sequence of file
 * operations on a small tree under ROOT, printing one line per operation
 * (its arguments and result: value or errno name, data checksums, sorted
 * directory listings, sizes and types, never inode numbers or times).
 * Run natively and under picos (ROOT a mount there), the outputs must be
 * identical (crates/picos/tests/mounts.rs).
 *
 *   fsx SEED NOPS ROOT
 *
 * ROOT must be an empty directory private to the run: the tree is ROOT/t,
 * and symlinks to "../x" from its top lead to ROOT.
 * Operations: open (with O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY,
 * O_NOFOLLOW, O_PATH), openat from a directory descriptor, close, read,
 * write, pread, pwrite, lseek, ftruncate, truncate, fsync, dup, mmap (read
 * through a mapping), stat, lstat, fstat, access, readlink, getdents,
 * mkdir, rmdir, unlink, rename, link, symlink (relative, absolute, dangling,
 * loops), chmod, chdir (relative paths then start there), fork (the child
 * makes a few operations; its lines are printed by the parent, in order).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static unsigned pick(unsigned n) { return (unsigned)(next() % n); }

static const char *root;
static size_t rootlen;
static FILE *out;

/* Names: a small tree so that operations collide often. */
static const char *dirs[] = {".", "d0", "d1", "d0/e0", "d0/e1", "d1/e0"};
static const char *leaves[] = {"f0", "f1", "f2", "l0", "l1", "s"};
#define NDIRS (sizeof dirs / sizeof *dirs)
#define NLEAVES (sizeof leaves / sizeof *leaves)

static char pathbuf[8][512];
static int pb;

/* A path under ROOT, sometimes relative to the working directory (when it
 * is ROOT), sometimes with a `..` detour. */
static const char *rand_path(void) {
    char *p = pathbuf[pb++ % 8];
    const char *d = dirs[pick(NDIRS)];
    const char *l = leaves[pick(NLEAVES)];
    switch (pick(6)) {
    case 0:
        snprintf(p, 512, "%s/%s", root, d);
        break;
    case 1:
        snprintf(p, 512, "%s/%s/../%s/%s", root, dirs[1 + pick(NDIRS - 1)], d, l);
        break;
    default:
        snprintf(p, 512, "%s/%s/%s", root, d, l);
    }
    return p;
}

/* Replaces ROOT by "ROOT" in `s` (readlink targets, /proc links). */
static const char *unroot(const char *s) {
    static char bufs[4][1200];
    static int k;
    if (strncmp(s, root, rootlen) == 0) {
        char *b = bufs[k++ % 4];
        snprintf(b, 1200, "ROOT%s", s + rootlen);
        return b;
    }
    return s;
}

static const char *shown(const char *path) { return unroot(path); }

static void res(const char *op, const char *arg, long r) {
    if (r < 0)
        fprintf(out, "%s %s = -%s\n", op, arg ? shown(arg) : "", strerrorname_np(errno) ? strerrorname_np(errno) : "?");
    else
        fprintf(out, "%s %s = %ld\n", op, arg ? shown(arg) : "", r);
}

static uint32_t sum(const unsigned char *b, long n) {
    uint32_t h = 2166136261u;
    for (long i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

#define NFD 8
static int fds[NFD];

static int rand_fd(void) { return fds[pick(NFD)]; }
/* Keeps `fd` in a random slot, closing what the slot held. A number is in
 * at most one slot: a closed number the kernel hands out again must not
 * be reached through a stale slot. */
static void keep_fd(int fd) {
    int i = pick(NFD);
    if (fds[i] >= 0 && fds[i] != fd) {
        close(fds[i]);
        for (int j = 0; j < NFD; j++)
            if (j != i && fds[j] == fds[i])
                fds[j] = -1;
    }
    for (int j = 0; j < NFD; j++)
        if (fds[j] == fd)
            fds[j] = -1;
    fds[i] = fd;
}

static void list_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        res("list", path, -1);
        return;
    }
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        names[n++] = strdup(e->d_name);
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    fprintf(out, "list %s =", shown(path));
    for (int i = 0; i < n; i++) {
        fprintf(out, " %s", names[i]);
        free(names[i]);
    }
    fprintf(out, "\n");
}

/* A symlink's size with ROOT counted as "ROOT" (the two runs have roots of
 * different lengths): readlink of `arg`, or of descriptor `fd`. */
static long long lnk_size(const char *arg, int fd, long long size) {
    char buf[1200];
    long n = arg ? readlink(arg, buf, sizeof buf - 1) : readlinkat(fd, "", buf, sizeof buf - 1);
    if (n < 0)
        return size;
    buf[n] = 0;
    return (long long)strlen(unroot(buf));
}

static void stat_line_fd(const char *op, const char *arg, int fd, int r, struct stat *st);
static void stat_line(const char *op, const char *arg, int r, struct stat *st) {
    stat_line_fd(op, arg, -1, r, st);
}

static void stat_line_fd(const char *op, const char *arg, int fd, int r, struct stat *st) {
    if (r < 0) {
        res(op, arg, -1);
        return;
    }
    if (S_ISLNK(st->st_mode))
        st->st_size = lnk_size(arg, fd, st->st_size);
    const char *t = S_ISREG(st->st_mode)   ? "reg"
                    : S_ISDIR(st->st_mode) ? "dir"
                    : S_ISLNK(st->st_mode) ? "lnk"
                                           : "other";
    fprintf(out, "%s %s = %s size %lld nlink %lu mode %o\n", op, arg ? shown(arg) : "", t,
            S_ISDIR(st->st_mode) ? 0LL : (long long)st->st_size, S_ISDIR(st->st_mode) ? 0UL : (unsigned long)st->st_nlink,
            st->st_mode & 07777);
}

static unsigned char data[65536];

static void one_op(void) {
    errno = 0;
    switch (pick(30)) {
    case 0:
    case 1: {
        static const int flags[] = {O_RDONLY, O_WRONLY | O_CREAT, O_RDWR | O_CREAT, O_RDWR | O_CREAT | O_TRUNC,
                                    O_WRONLY | O_CREAT | O_EXCL, O_WRONLY | O_APPEND | O_CREAT, O_RDONLY | O_DIRECTORY,
                                    O_RDONLY | O_NOFOLLOW, O_PATH, O_RDWR};
        int f = flags[pick(10)];
        const char *p = rand_path();
        int fd = open(p, f | O_CLOEXEC, 0644);
        char a[600];
        snprintf(a, sizeof a, "%s %#x", p, f);
        res("open", a, fd < 0 ? -1 : 0);
        if (fd >= 0)
            keep_fd(fd);
        break;
    }
    case 2: {
        int dfd = open(root, O_RDONLY | O_DIRECTORY);
        char rel[64];
        snprintf(rel, sizeof rel, "%s/%s", dirs[pick(NDIRS)], leaves[pick(NLEAVES)]);
        int fd = openat(dfd, rel, O_RDWR | O_CREAT, 0600);
        res("openat", rel, fd < 0 ? -1 : 0);
        if (fd >= 0)
            keep_fd(fd);
        close(dfd);
        break;
    }
    case 3: {
        int fd = rand_fd();
        long n = read(fd, data, 1 + pick(9000));
        if (n >= 0)
            fprintf(out, "read = %ld sum %08x\n", n, sum(data, n));
        else
            res("read", NULL, -1);
        break;
    }
    case 4:
    case 5: {
        int fd = rand_fd();
        long n = 1 + pick(9000);
        for (long i = 0; i < n; i++)
            data[i] = (unsigned char)next();
        res("write", NULL, write(fd, data, n));
        break;
    }
    case 6: {
        int fd = rand_fd();
        long n = pread(fd, data, 1 + pick(5000), pick(20000));
        if (n >= 0)
            fprintf(out, "pread = %ld sum %08x\n", n, sum(data, n));
        else
            res("pread", NULL, -1);
        break;
    }
    case 7: {
        int fd = rand_fd();
        long n = 1 + pick(5000);
        for (long i = 0; i < n; i++)
            data[i] = (unsigned char)next();
        res("pwrite", NULL, pwrite(fd, data, n, pick(30000)));
        break;
    }
    case 8:
        res("lseek", NULL, lseek(rand_fd(), pick(20000), pick(3)));
        break;
    case 9:
        res("ftruncate", NULL, ftruncate(rand_fd(), pick(25000)));
        break;
    case 10: {
        const char *p = rand_path();
        res("truncate", p, truncate(p, pick(25000)));
        break;
    }
    case 11: {
        struct stat st;
        const char *p = rand_path();
        int r = pick(2) ? stat(p, &st) : lstat(p, &st);
        stat_line("stat", p, r, &st);
        break;
    }
    case 12: {
        struct stat st;
        int fd = rand_fd();
        int r = fstat(fd, &st);
        stat_line_fd("fstat", NULL, fd, r, &st);
        break;
    }
    case 13: {
        const char *p = rand_path();
        char buf[600];
        long n = readlink(p, buf, sizeof buf - 1);
        if (n >= 0) {
            buf[n] = 0;
            fprintf(out, "readlink %s = %s\n", shown(p), unroot(buf));
        } else
            res("readlink", p, -1);
        break;
    }
    case 14: {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", root, dirs[pick(NDIRS)]);
        list_dir(p);
        break;
    }
    case 15: {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", root, dirs[1 + pick(NDIRS - 1)]);
        res("mkdir", p, mkdir(p, 0755));
        break;
    }
    case 16: {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", root, dirs[1 + pick(NDIRS - 1)]);
        res("rmdir", p, rmdir(p));
        break;
    }
    case 17: {
        const char *p = rand_path();
        res("unlink", p, unlink(p));
        break;
    }
    case 18: {
        const char *a = rand_path(), *b = rand_path();
        char s[1100];
        snprintf(s, sizeof s, "%s -> %s", a, unroot(b));
        res("rename", s, rename(a, b));
        break;
    }
    case 19: {
        const char *a = rand_path(), *b = rand_path();
        char s[1100];
        snprintf(s, sizeof s, "%s -> %s", a, unroot(b));
        res("link", s, link(a, b));
        break;
    }
    case 20: {
        static const char *targets[] = {"f0", "../f1", "d0", "l1", "s/x", "nowhere", NULL};
        char abs_t[512];
        const char *t = targets[pick(7)];
        if (!t) {
            snprintf(abs_t, sizeof abs_t, "%s/%s", root, leaves[pick(NLEAVES)]);
            t = abs_t;
        }
        const char *p = rand_path();
        char s[1100];
        snprintf(s, sizeof s, "%s -> %s", unroot(t), unroot(p));
        res("symlink", s, symlink(t, p));
        break;
    }
    case 21: {
        const char *p = rand_path();
        res("access", p, access(p, pick(8)));
        break;
    }
    case 22: {
        const char *p = rand_path();
        res("chmod", p, chmod(p, 0600 | (pick(2) ? 044 : 0)));
        break;
    }
    case 23: {
        int fd = rand_fd();
        int d = dup(fd);
        res("dup", NULL, d < 0 ? -1 : 0);
        if (d >= 0)
            keep_fd(d);
        break;
    }
    case 24: {
        int fd = rand_fd();
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            long n = st.st_size > 40000 ? 40000 : st.st_size;
            void *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
            if (m == MAP_FAILED)
                res("mmap", NULL, -1);
            else {
                fprintf(out, "mmap = %ld sum %08x\n", n, sum(m, n));
                munmap(m, n);
            }
        } else
            fprintf(out, "mmap skipped\n");
        break;
    }
    case 25:
        res("fsync", NULL, fsync(rand_fd()));
        break;
    case 26: {
        /* Relative paths from a directory of the tree, then back. */
        char p[512];
        snprintf(p, sizeof p, "%s/%s", root, dirs[pick(NDIRS)]);
        int r = chdir(p);
        res("chdir", p, r);
        if (r == 0) {
            const char *l = leaves[pick(NLEAVES)];
            struct stat st;
            stat_line("stat-rel", l, lstat(l, &st), &st);
            char up[64];
            snprintf(up, sizeof up, "../%s", leaves[pick(NLEAVES)]);
            int fd = open(up, O_RDONLY | O_CLOEXEC);
            res("open-rel", up, fd < 0 ? -1 : 0);
            if (fd >= 0)
                keep_fd(fd);
            chdir(root);
        }
        break;
    }
    case 27: {
        /* A child makes a few operations; its lines come back through a
         * pipe and are printed after the parent's "fork" line (one time
         * in ten: forks are slow). */
        if (pick(10) != 0) {
            res("getcwd-ok", NULL, getcwd((char *)data, sizeof data) ? 0 : -1);
            break;
        }
        int pfd[2];
        if (pipe(pfd) < 0)
            break;
        fflush(out);
        pid_t pid = fork();
        if (pid == 0) {
            close(pfd[0]);
            out = fdopen(pfd[1], "w");
            for (int i = 0; i < 3; i++) {
                next();
                one_op();
            }
            fflush(out);
            _exit(0);
        }
        close(pfd[1]);
        int st;
        char buf[4096];
        long n;
        fprintf(out, "fork\n");
        while ((n = read(pfd[0], buf, sizeof buf)) > 0)
            fwrite(buf, 1, n, out);
        close(pfd[0]);
        waitpid(pid, &st, 0);
        fprintf(out, "child status %d\n", st);
        /* The parent's generator moves on as the child's did. */
        for (int i = 0; i < 3; i++)
            next();
        break;
    }
    case 28: {
        struct stat st;
        char p[600];
        snprintf(p, sizeof p, "%s/%s/%s", root, dirs[pick(NDIRS)], "s/../f0");
        stat_line("stat-dotdot", p, stat(p, &st), &st);
        break;
    }
    default: {
        int fd = rand_fd();
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            char p[64];
            snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
            char buf[600];
            long n = readlink(p, buf, sizeof buf - 1);
            if (n >= 0) {
                buf[n] = 0;
                fprintf(out, "fd-link = %s\n", unroot(buf));
            }
        } else
            fprintf(out, "fd-link skipped\n");
    }
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: fsx SEED NOPS ROOT\n");
        return 2;
    }
    rng = strtoull(argv[1], NULL, 0) * 0x9E3779B97F4A7C15ull + 1;
    long nops = strtol(argv[2], NULL, 0);
    /* The tree lives in ROOT/t: a relative symlink to "../x" at its top
     * then stays inside ROOT (which must be private to this run). */
    static char top[4096];
    snprintf(top, sizeof top, "%s/t", argv[3]);
    if (mkdir(top, 0755) < 0) {
        perror(top);
        return 2;
    }
    root = top;
    rootlen = strlen(root);
    out = stdout;
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    if (chdir(root) < 0) {
        perror(root);
        return 2;
    }
    /* Descriptors inherited from whoever started us differ between runs. */
    if (syscall(SYS_close_range, 3, ~0U, 0) < 0) {
        perror("close_range");
        return 2;
    }
    for (int i = 0; i < NFD; i++)
        fds[i] = -1;
    for (long i = 0; i < nops; i++)
        one_op();
    fflush(stdout);
    return 0;
}
