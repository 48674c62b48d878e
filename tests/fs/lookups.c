/* Path lookups that only read, printed so that a run under picos can be
 * compared with a native one: stat, lstat, statx, access, readlink and
 * open of paths with `.`, `..`, trailing slashes, symlinks (relative,
 * absolute, to directories, chained, looping, dangling, leading out of the
 * tree and into the host's /proc and /dev), missing names and names below
 * files; relative to the working directory, absolute, and from a directory
 * descriptor; each twice (under picos on an exclusive mount, the second
 * time from the directory cache). Then the working directory across chdir,
 * fchdir, a thread's chdir and a vfork child's chdir, lookups in a forked
 * child, lookups from four threads while the main thread forks, and (as
 * root) lookups after dropping privileges.
 *
 *   lookups --setup DIR    makes the tree in DIR (natively, before)
 *   lookups DIR [--drop]   prints the lookups
 *
 * crates/picos/tests/mounts.rs runs it natively and under picos with DIR
 * on an exclusive read-only mount (docs/FILESYSTEM.md, "The directory
 * cache") and compares the outputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static int dirfd_;

static const char *err(int e)
{
    switch (e) {
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case ELOOP: return "ELOOP";
    case EACCES: return "EACCES";
    case EINVAL: return "EINVAL";
    case EISDIR: return "EISDIR";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENXIO: return "ENXIO";
    case EBADF: return "EBADF";
    default: {
        static char b[32];
        snprintf(b, sizeof b, "errno %d", e);
        return b;
    }
    }
}

/* Live objects (the host's /proc) change between runs: only their type. */
static int live(const char *path) { return strncmp(path, "proc", 4) == 0 || strstr(path, "/proc") != NULL; }

static void print_stat(const char *path, const struct stat *st)
{
    if (live(path)) {
        printf("type %o\n", st->st_mode & S_IFMT);
        return;
    }
    /* Everything but the access time, which reading a file may move. */
    printf("dev %lx ino %lu mode %o nlink %lu uid %u gid %u rdev %lx size %ld blksize %ld blocks %ld "
           "mtime %ld.%09ld ctime %ld.%09ld\n",
           (unsigned long)st->st_dev, (unsigned long)st->st_ino, st->st_mode, (unsigned long)st->st_nlink,
           st->st_uid, st->st_gid, (unsigned long)st->st_rdev, (long)st->st_size, (long)st->st_blksize,
           (long)st->st_blocks, (long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (long)st->st_ctim.tv_sec,
           st->st_ctim.tv_nsec);
}

static void print_statx(const char *path, const struct statx *x)
{
    if (live(path)) {
        printf("type %o\n", x->stx_mode & S_IFMT);
        return;
    }
    printf("mask %x attrs %llx/%llx dev %u:%u ino %llu mode %o nlink %u uid %u gid %u rdev %u:%u size %llu "
           "blksize %u blocks %llu btime %lld.%09u mtime %lld.%09u ctime %lld.%09u mnt %llu\n",
           x->stx_mask, (unsigned long long)x->stx_attributes, (unsigned long long)x->stx_attributes_mask,
           x->stx_dev_major, x->stx_dev_minor, (unsigned long long)x->stx_ino, x->stx_mode, x->stx_nlink,
           x->stx_uid, x->stx_gid, x->stx_rdev_major, x->stx_rdev_minor, (unsigned long long)x->stx_size,
           x->stx_blksize, (unsigned long long)x->stx_blocks, (long long)x->stx_btime.tv_sec,
           x->stx_btime.tv_nsec, (long long)x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec,
           (long long)x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec, (unsigned long long)x->stx_mnt_id);
}

/* Every lookup of `path` from `at` (AT_FDCWD or a directory descriptor). */
static void lookups(const char *how, int at, const char *path)
{
    struct stat st;
    struct statx x;
    char buf[4096];
    printf("[%s %s]\n", how, path);

    printf("  stat: ");
    if (fstatat(at, path, &st, 0) == 0) print_stat(path, &st); else printf("%s\n", err(errno));
    printf("  lstat: ");
    if (fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) == 0) print_stat(path, &st); else printf("%s\n", err(errno));
    printf("  statx basic: ");
    memset(&x, 0xa5, sizeof x);
    if (statx(at, path, 0, STATX_BASIC_STATS, &x) == 0) print_statx(path, &x); else printf("%s\n", err(errno));
    printf("  statx btime nofollow: ");
    memset(&x, 0x5a, sizeof x);
    if (statx(at, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &x) == 0)
        print_statx(path, &x);
    else
        printf("%s\n", err(errno));
    printf("  statx type only: ");
    memset(&x, 0, sizeof x);
    if (statx(at, path, 0, STATX_TYPE, &x) == 0) print_statx(path, &x); else printf("%s\n", err(errno));
    printf("  access F_OK: %s\n", faccessat(at, path, F_OK, 0) == 0 ? "ok" : err(errno));
    printf("  access R_OK: %s\n", faccessat(at, path, R_OK, 0) == 0 ? "ok" : err(errno));
    printf("  access F_OK nofollow: %s\n",
           faccessat(at, path, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ? "ok" : err(errno));
    ssize_t n = readlinkat(at, path, buf, sizeof buf - 1);
    if (n >= 0) {
        buf[n] = 0;
        if (live(path))
            printf("  readlink: ok\n");
        else
            printf("  readlink: %s\n", buf);
    } else {
        printf("  readlink: %s\n", err(errno));
    }
    n = readlinkat(at, path, buf, 3);
    printf("  readlink 3: %s\n", n >= 0 ? (live(path) ? "ok" : (buf[n] = 0, buf)) : err(errno));

    static const struct { const char *name; int flags; } opens[] = {
        {"rdonly", O_RDONLY | O_NONBLOCK},
        {"directory", O_RDONLY | O_DIRECTORY},
        {"nofollow", O_RDONLY | O_NOFOLLOW | O_NONBLOCK},
        {"path", O_PATH},
        {"path nofollow", O_PATH | O_NOFOLLOW},
    };
    for (size_t i = 0; i < sizeof opens / sizeof opens[0]; i++) {
        int fd = openat(at, path, opens[i].flags | O_CLOEXEC);
        printf("  open %s: ", opens[i].name);
        if (fd < 0) {
            printf("%s\n", err(errno));
            continue;
        }
        struct stat a, b;
        int same = fstat(fd, &a) == 0 && fstatat(at, path, &b, opens[i].flags & O_NOFOLLOW ? AT_SYMLINK_NOFOLLOW : 0) == 0
                   && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
        int fl = fcntl(fd, F_GETFL);
        if (live(path) && S_ISREG(a.st_mode)) {
            /* A process's own /proc files (status, maps, ...) open as the
             * library OS's view of them under picos: an anonymous file with
             * the program's figures (docs/FILESYSTEM.md, "/proc"), not the
             * object the path names. */
            printf("ok, type %o, flags %o\n", a.st_mode & S_IFMT, fl & (O_ACCMODE | O_NONBLOCK));
            close(fd);
            continue;
        }
        printf("ok, type %o, %s, flags %o\n", a.st_mode & S_IFMT, same ? "same object" : "another object",
               fl & (O_ACCMODE | O_NONBLOCK | O_PATH | O_DIRECTORY | O_NOFOLLOW));
        close(fd);
    }
}

static const char *paths[] = {
    ".", "..", "d", "d/", "d/f", "d/f/", "d/f/.", "d/f/..", "d/f/x", "d/./f", "d/../d/f", "d//f",
    "d/e", "d/e/", "d/e/..", "d/sub/g", "d/sub/../f", "d/nope", "d/nope/x", "nope", "nope/", "",
    "l_rel", "l_rel/", "l_abs", "l_dir", "l_dir/", "l_dir/f", "l_dir/../d", "l_dir/sub/g", "l_up",
    "l_up/f", "l_loop", "l_loop/x", "l_dangling", "l_dangling/", "l_chain", "l_chain/", "l_dotdot",
    "l_fslash", "l_fslash/", "l_dslash", "l_dslash/f", "l_nslash",
    "fifo", "private", "private/x", "dev", "dev/null", "dev/zero", "dev/nope", "proc/self",
    "proc/self/status", "proc/self/fd", "proc/nope",
};
#define NPATHS (sizeof paths / sizeof paths[0])

static void all_lookups(int round)
{
    char abs[8192];
    printf("== round %d\n", round);
    for (size_t i = 0; i < NPATHS; i++) {
        lookups("cwd", AT_FDCWD, paths[i]);
        lookups("dirfd", dirfd_, paths[i]);
        snprintf(abs, sizeof abs, "%s/%s", dir, paths[i]);
        printf("(absolute) ");
        lookups("abs", AT_FDCWD, abs + strlen(dir) + 1 == abs + strlen(abs) ? dir : abs);
    }
}

/* The working directory relative to DIR. */
static void show_cwd(const char *when)
{
    char b[8192];
    if (!getcwd(b, sizeof b)) {
        printf("%s: getcwd %s\n", when, err(errno));
        return;
    }
    size_t n = strlen(dir);
    if (strncmp(b, dir, n) == 0 && (b[n] == 0 || b[n] == '/'))
        printf("%s: cwd DIR%s\n", when, b + n);
    else
        printf("%s: cwd outside DIR\n", when);
    struct stat st;
    printf("%s: stat f: %s\n", when, stat("f", &st) == 0 ? "ok" : err(errno));
}

static void *thread_chdir(void *arg)
{
    (void)arg;
    if (chdir("d") < 0)
        perror("thread chdir");
    return NULL;
}

static int self_ok(void)
{
    char b[64], want[64];
    ssize_t n = readlink("proc/self", b, sizeof b - 1);
    if (n < 0)
        return 0;
    b[n] = 0;
    snprintf(want, sizeof want, "%d", getpid());
    return strcmp(b, want) == 0;
}

static void working_directory(void)
{
    if (chdir(dir) < 0)
        perror("chdir");
    show_cwd("start");
    if (chdir("d") < 0)
        perror("chdir d");
    show_cwd("after chdir d");
    if (chdir("..") < 0)
        perror("chdir ..");
    show_cwd("after chdir ..");
    if (chdir("l_dir") < 0)
        perror("chdir l_dir");
    show_cwd("after chdir l_dir");
    if (fchdir(dirfd_) < 0)
        perror("fchdir");
    show_cwd("after fchdir");
    printf("chdir d/f: %s\n", chdir("d/f") == 0 ? "ok" : err(errno));
    printf("chdir nope: %s\n", chdir("nope") == 0 ? "ok" : err(errno));
    show_cwd("after failed chdirs");

    pthread_t th;
    pthread_create(&th, NULL, thread_chdir, NULL);
    pthread_join(th, NULL);
    show_cwd("after a thread's chdir d");
    if (chdir(dir) < 0)
        perror("chdir");

    pid_t p = vfork();
    if (p == 0) {
        if (chdir("d/sub") < 0)
            _exit(1);
        _exit(0);
    }
    int status;
    waitpid(p, &status, 0);
    show_cwd("after a vfork child's chdir d/sub");

    fflush(stdout);
    p = fork();
    if (p == 0) {
        struct stat st;
        printf("child: stat d/f %s, proc/self %s\n", stat("d/f", &st) == 0 ? "ok" : err(errno),
               self_ok() ? "is the child" : "is not the child");
        if (chdir("d") < 0)
            perror("child chdir");
        show_cwd("child after chdir d");
        fflush(stdout);
        _exit(0);
    }
    waitpid(p, &status, 0);
    show_cwd("parent after the child's chdir");
    printf("parent: proc/self %s\n", self_ok() ? "is the parent" : "is not the parent");
}

/* Lookups from four threads at once while the main thread forks children
 * that look up too (the cache's lock across fork, its fills from several
 * threads): the totals are the same whoever answers. */
static long counts[4];
static void *hammer(void *arg)
{
    long k = (long)arg, ok = 0;
    char b[64];
    for (int round = 0; round < 300; round++) {
        for (size_t i = 0; i < NPATHS; i++) {
            struct stat st;
            if (live(paths[i]))
                continue;
            ok += fstatat(AT_FDCWD, paths[i], &st, (i + k) % 2 ? AT_SYMLINK_NOFOLLOW : 0) == 0;
            ok += access(paths[i], F_OK) == 0;
            ok += readlink(paths[i], b, sizeof b) >= 0;
            int fd = open(paths[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0) {
                ok++;
                close(fd);
            }
        }
    }
    counts[k] = ok;
    return NULL;
}

static void concurrent(void)
{
    pthread_t th[4];
    for (long k = 0; k < 4; k++)
        pthread_create(&th[k], NULL, hammer, (void *)k);
    int children_ok = 0;
    for (int i = 0; i < 40; i++) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            int ok = 0;
            struct stat st;
            for (size_t j = 0; j < NPATHS; j++)
                if (!live(paths[j]))
                    ok += stat(paths[j], &st) == 0;
            _exit(ok);
        }
        int status;
        waitpid(p, &status, 0);
        children_ok += WIFEXITED(status) ? WEXITSTATUS(status) : -1000;
    }
    for (int k = 0; k < 4; k++)
        pthread_join(th[k], NULL);
    printf("concurrent: threads %ld %ld %ld %ld, forked children %d\n", counts[0], counts[1], counts[2],
           counts[3], children_ok);
}

static void drop_privileges(void)
{
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        struct stat st;
        printf("root: stat private/x %s\n", stat("private/x", &st) == 0 ? "ok" : err(errno));
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) {
            perror("drop");
            _exit(1);
        }
        printf("nobody: stat private/x %s\n", stat("private/x", &st) == 0 ? "ok" : err(errno));
        printf("nobody: access private F_OK %s\n", access("private/x", F_OK) == 0 ? "ok" : err(errno));
        printf("nobody: open private/x %s\n", open("private/x", O_RDONLY) >= 0 ? "ok" : err(errno));
        printf("nobody: stat d/f %s\n", stat("d/f", &st) == 0 ? "ok" : err(errno));
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(p, &status, 0);
    printf("dropped: status %d\n", status);
}

static void setup(const char *d)
{
    char b[8192];
    const char *base = strrchr(d, '/');
    base = base ? base + 1 : d;
#define AT(p) (snprintf(b, sizeof b, "%s/%s", d, p), b)
    if (mkdir(d, 0755) < 0 && errno != EEXIST) { perror(d); exit(1); }
    if (chmod(d, 0755) < 0) { perror("chmod"); exit(1); }
    mkdir(AT("d"), 0755);
    mkdir(AT("d/e"), 0755);
    mkdir(AT("d/sub"), 0755);
    mkdir(AT("private"), 0700);
    FILE *f = fopen(AT("d/f"), "w"); fputs("hello\n", f); fclose(f);
    f = fopen(AT("d/sub/g"), "w"); fputs("g\n", f); fclose(f);
    f = fopen(AT("private/x"), "w"); fclose(f);
    if (symlink("d/f", AT("l_rel")) < 0) perror("symlink");
    char t[8192];
    snprintf(t, sizeof t, "%s/d/f", d);
    symlink(t, AT("l_abs"));
    symlink("d", AT("l_dir"));
    snprintf(t, sizeof t, "../%s/d", base);
    symlink(t, AT("l_up"));
    symlink("l_loop", AT("l_loop"));
    symlink("nowhere", AT("l_dangling"));
    symlink("l_rel", AT("l_chain"));
    symlink("d/sub/../..", AT("l_dotdot"));
    symlink("d/f/", AT("l_fslash"));
    symlink("d/", AT("l_dslash"));
    symlink("nowhere/", AT("l_nslash"));
    symlink("/dev", AT("dev"));
    symlink("/proc", AT("proc"));
    if (mkfifo(AT("fifo"), 0644) < 0) perror("mkfifo");
#undef AT
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--setup") == 0) {
        setup(argv[2]);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: lookups --setup DIR | lookups DIR [--drop]\n");
        return 2;
    }
    dir = argv[1];
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd_ < 0 || chdir(dir) < 0) {
        perror(dir);
        return 1;
    }
    all_lookups(1);
    all_lookups(2);
    working_directory();
    concurrent();
    if (argc > 2 && strcmp(argv[2], "--drop") == 0)
        drop_privileges();
    return 0;
}
