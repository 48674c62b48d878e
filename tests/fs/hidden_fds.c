/* Descriptors near the top of the usual range, where picos keeps its mount
 * directories under mounts: a program that takes every one of them
 * (dup2), closes them all (close_range, close) and lists /proc/self/fd
 * must see what it sees natively, and its paths must keep working.
 *
 *   hidden_fds DIR     (DIR: a writable directory)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *dir;

/* A file operation through paths: create, stat, rename, read back. */
static void paths_work(const char *when) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    int fd = open(a, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int ok = fd >= 0 && write(fd, when, strlen(when)) == (ssize_t)strlen(when);
    if (fd >= 0)
        close(fd);
    struct stat st;
    ok = ok && stat(a, &st) == 0 && st.st_size == (off_t)strlen(when);
    ok = ok && rename(a, b) == 0;
    char buf[64] = {0};
    fd = open(b, O_RDONLY);
    ok = ok && fd >= 0 && read(fd, buf, sizeof buf - 1) > 0 && strcmp(buf, when) == 0;
    if (fd >= 0)
        close(fd);
    ok = ok && unlink(b) == 0;
    printf("%s: paths %s\n", when, ok ? "work" : "FAIL");
}

/* The descriptors /proc/self/fd lists (but the directory's own). */
static void list(const char *when) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        printf("%s: /proc/self/fd: %s\n", when, strerror(errno));
        return;
    }
    int own = dirfd(d), n = 0, high = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != own) {
            n++;
            high += atoi(e->d_name) >= 900;
        }
    closedir(d);
    printf("%s: %d descriptors listed, %d of them at 900 or above\n", when, n, high);
}

int main(int argc, char **argv) {
    if (argc != 2)
        return 2;
    dir = argv[1];
    /* Inherited descriptors differ between runs: start from 0, 1, 2. */
    syscall(SYS_close_range, 3, ~0U, 0);
    list("start");
    paths_work("start");
    /* Take every number from 900 to 1023. */
    int taken = 0;
    for (int fd = 900; fd < 1024; fd++)
        taken += dup2(0, fd) == fd;
    printf("dup2 onto 900..1023: %d of 124\n", taken);
    list("after dup2");
    paths_work("after dup2");
    /* Close them one by one: each was the program's. */
    int closed = 0;
    for (int fd = 900; fd < 1024; fd++)
        closed += close(fd) == 0;
    printf("close 900..1023: %d of 124\n", closed);
    paths_work("after close");
    /* Everything from 3 up, twice: the second finds nothing. */
    printf("close_range: %ld\n", syscall(SYS_close_range, 3, ~0U, 0));
    int left = 0;
    for (int fd = 3; fd < 1024; fd++)
        left += fcntl(fd, F_GETFD) >= 0;
    printf("descriptors from 3 up after close_range: %d\n", left);
    list("after close_range");
    paths_work("after close_range");
    /* dup3 with O_CLOEXEC onto the same numbers, then a child execs. */
    taken = 0;
    for (int fd = 980; fd < 1024; fd++)
        taken += dup3(1, fd, O_CLOEXEC) == fd;
    printf("dup3 onto 980..1023: %d of 44\n", taken);
    paths_work("after dup3");
    fflush(stdout);
    return 0;
}
