/* Attacks on chroot mounts: each tries to reach a file outside the
 * program's mounts (or to change what it may not). Natively every attack
 * succeeds (the program sees the host's tree), so the test can see an
 * escape; under picos with the mounts of crates/picos/tests/mounts.rs
 * every one must fail.
 *
 *   escape SECRET DATA RO OTHER SOCKET
 *
 * SECRET: absolute host path of a file outside every mount; DATA: a
 * writable directory; RO: a read-only one holding a file `f`; OTHER:
 * another writable mount; SOCKET: absolute host path of a listening Unix
 * socket outside every mount. Prints one line per attack:
 * "NAME: escaped" or "NAME: blocked (ERRNO)".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static const char *secret, *data, *ro, *other, *sock;
static char buf[8192];

static const char *ename(int e) {
    switch (e) {
    case ENOENT: return "ENOENT";
    case EXDEV: return "EXDEV";
    case EROFS: return "EROFS";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ELOOP: return "ELOOP";
    case EBADF: return "EBADF";
    case ENOTDIR: return "ENOTDIR";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EINVAL: return "EINVAL";
    default: return strerrorname_np(e) ? strerrorname_np(e) : "?";
    }
}

static void report(const char *name, int ok, int err) {
    if (ok)
        printf("%s: escaped\n", name);
    else
        printf("%s: blocked (%s)\n", name, ename(err));
}

/* Does `fd` read the secret? */
static int reads_secret(int fd) {
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 6 && memcmp(buf, "SECRET", 6) == 0;
}

static void try_open(const char *name, int dirfd, const char *path) {
    errno = 0;
    int fd = openat(dirfd, path, O_RDONLY);
    int e = errno;
    report(name, reads_secret(fd), fd < 0 ? e : ENOENT);
}

static char *cat(const char *a, const char *b) {
    char *s = malloc(strlen(a) + strlen(b) + 2);
    sprintf(s, "%s%s", a, b);
    return s;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: escape SECRET DATA RO OTHER SOCKET\n");
        return 2;
    }
    secret = argv[1], data = argv[2], ro = argv[3], other = argv[4], sock = argv[5];
    const char *up = "/../../../../../../../../../..";

    try_open("absolute path", AT_FDCWD, secret);
    try_open("dot-dot from /", AT_FDCWD, cat(up, secret));

    int dfd = open(data, O_RDONLY | O_DIRECTORY);
    try_open("dot-dot from a directory descriptor", dfd, cat(up + 1, secret));

    char *l1 = cat(data, "/to-root");
    unlink(l1);
    symlink("/", l1);
    try_open("symlink to /", AT_FDCWD, cat(l1, secret));

    char *l2 = cat(data, "/up");
    unlink(l2);
    symlink(up + 1, l2);
    try_open("relative symlink upwards", AT_FDCWD, cat(l2, secret));

    char *l3 = cat(data, "/to-secret");
    unlink(l3);
    symlink(secret, l3);
    try_open("symlink to the file", AT_FDCWD, l3);

    try_open("/proc/self/root", AT_FDCWD, cat("/proc/self/root", secret));

    chdir(data);
    try_open("/proc/self/cwd", AT_FDCWD, cat("/proc/self/cwd", cat(up, secret)));

    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", dfd);
    try_open("/proc/self/fd/N", AT_FDCWD, cat(p, cat(up, secret)));

    char *hl = cat(data, "/hardlink");
    unlink(hl);
    errno = 0;
    int r = link(secret, hl);
    report("hard link to the file", r == 0, errno);
    unlink(hl);

    /* Unix socket outside every mount. */
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    errno = 0;
    r = connect(s, (struct sockaddr *)&a, sizeof a);
    report("connect to a socket outside", r == 0, errno);
    close(s);

    /* Writes to a read-only mount. */
    char *rf = cat(ro, "/f"), *rn = cat(ro, "/new");
    errno = 0;
    int fd = open(rn, O_CREAT | O_WRONLY, 0644);
    report("create on a read-only mount", fd >= 0, errno);
    if (fd >= 0) {
        close(fd);
        unlink(rn);
    }
    errno = 0;
    fd = open(rf, O_WRONLY | O_APPEND);
    report("write to a read-only mount", fd >= 0, errno);
    if (fd >= 0)
        close(fd);
    errno = 0;
    r = chmod(rf, 0600);
    report("chmod on a read-only mount", r == 0, errno);
    chmod(rf, 0644);
    fd = open(rf, O_RDONLY);
    errno = 0;
    r = fchmod(fd, 0600);
    report("fchmod of a read-only mount's file", r == 0, errno);
    fchmod(fd, 0644);
    close(fd);
    errno = 0;
    r = unlink(rf);
    report("unlink on a read-only mount", r == 0, errno);
    if (r == 0) {
        fd = open(rf, O_CREAT | O_WRONLY, 0644);
        write(fd, "ro\n", 3);
        close(fd);
    }

    /* Rename between mounts. */
    char *df = cat(data, "/moving"), *of = cat(other, "/moving");
    fd = open(df, O_CREAT | O_WRONLY, 0644);
    close(fd);
    errno = 0;
    r = rename(df, of);
    report("rename between mounts", r == 0, errno);
    unlink(df);
    unlink(of);

    /* Descriptors: the runtime's are not the program's. */
    int found = 0;
    for (int i = 3; i < 1100; i++)
        if (i != dfd && fcntl(i, F_GETFD) >= 0) {
            int t = openat(i, cat(up + 1, secret), O_RDONLY);
            found |= reads_secret(t);
        }
    report("descriptors the program did not open", found, ENOENT);

    /* File handles reach any file of the file system. */
    struct file_handle *h = malloc(sizeof *h + 128);
    h->handle_bytes = 128;
    int mnt;
    errno = 0;
    r = name_to_handle_at(AT_FDCWD, secret, h, &mnt, 0);
    int e = errno;
    if (r == 0) {
        int mfd = open("/", O_RDONLY | O_DIRECTORY);
        errno = 0;
        fd = open_by_handle_at(mfd, h, O_RDONLY);
        e = errno;
        r = reads_secret(fd) ? 0 : -1;
    }
    report("open_by_handle_at", r == 0, e);

    errno = 0;
    r = mount("none", data, "tmpfs", 0, NULL);
    report("mount", r == 0, errno);
    if (r == 0)
        umount(data);

    /* Last: natively this changes the root. */
    errno = 0;
    r = chroot(data);
    report("chroot", r == 0, errno);
    return 0;
}
