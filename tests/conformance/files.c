/* File-system and file-descriptor conformance.
 * Usage: files [DIR]   (default: a fresh mkdtemp directory under /tmp) */
#include "conformance.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

static char base[1024];

/* Path under the test directory (leaked on purpose: callers keep them). */
static const char *P(const char *name)
{
    size_t n = strlen(base) + strlen(name) + 2;
    char *b = malloc(n);
    snprintf(b, n, "%s/%s", base, name);
    return b;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Print the sorted entries of a directory (without . and ..). */
static void list_dir(const char *label, const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        check(label, 0);
        return;
    }
    char *names[64];
    int n = 0, dots = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
            dots++;
            continue;
        }
        if (n < 64)
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    printf("%s:", label);
    for (int i = 0; i < n; i++) {
        printf(" %s", names[i]);
        free(names[i]);
    }
    printf(" (dots=%d)\n", dots);
}

int main(int argc, char **argv)
{
    conf_init();
    umask(022);

    int made_tmp = 0;
    if (argc > 1) {
        snprintf(base, sizeof base, "%s/picos-files-test", argv[1]);
        if (mkdir(base, 0755) != 0 && errno != EEXIST) {
            perror("mkdir base");
            return 2;
        }
    } else {
        strcpy(base, "/tmp/picos-conf-XXXXXX");
        if (!mkdtemp(base)) {
            perror("mkdtemp");
            return 2;
        }
        made_tmp = 1;
    }
    struct stat st;
    check("base_dir_is_dir", stat(base, &st) == 0 && S_ISDIR(st.st_mode));

    /* create/write/read */
    const char *f1 = P("file1");
    int fd = open(f1, O_RDWR | O_CREAT | O_EXCL, 0644);
    check("open_creat_excl", fd >= 0);
    int e;
    int r = open(f1, O_RDWR | O_CREAT | O_EXCL, 0644); e = errno;
    check_errno("open_creat_excl_exists", r, e, EEXIST);
    check("write", write(fd, "hello world", 11) == 11);
    check("lseek_cur_after_write", lseek(fd, 0, SEEK_CUR) == 11);
    check("lseek_set", lseek(fd, 0, SEEK_SET) == 0);
    char buf[128];
    memset(buf, 0, sizeof buf);
    ssize_t n = read(fd, buf, sizeof buf);
    check("read_back", n == 11 && memcmp(buf, "hello world", 11) == 0);
    check("read_at_eof", read(fd, buf, sizeof buf) == 0);

    memset(buf, 0, sizeof buf);
    check("pread", pread(fd, buf, 5, 6) == 5 && memcmp(buf, "world", 5) == 0);
    check("pread_keeps_offset", lseek(fd, 0, SEEK_CUR) == 11);
    check("pwrite", pwrite(fd, "HELLO", 5, 0) == 5);
    check("pwrite_keeps_offset", lseek(fd, 0, SEEK_CUR) == 11);
    memset(buf, 0, sizeof buf);
    check("read_after_pwrite", pread(fd, buf, 11, 0) == 11 &&
                                   memcmp(buf, "HELLO world", 11) == 0);
    check("lseek_end", lseek(fd, 0, SEEK_END) == 11);
    check("lseek_end_neg", lseek(fd, -5, SEEK_END) == 6);
    r = (int)lseek(fd, -100, SEEK_SET); e = errno;
    check_errno("lseek_negative", r, e, EINVAL);

    /* sparse write past EOF reads back zeros */
    check("pwrite_hole", pwrite(fd, "Z", 1, 20) == 1);
    memset(buf, 'x', sizeof buf);
    n = pread(fd, buf, 64, 0);
    int zeros = 1;
    for (int i = 11; i < 20; i++)
        zeros &= buf[i] == 0;
    check("hole_reads_zero", n == 21 && zeros && buf[20] == 'Z');
    check("ftruncate", ftruncate(fd, 11) == 0);

    /* readv / writev */
    struct iovec iov[2] = { { "abc", 3 }, { "defg", 4 } };
    lseek(fd, 0, SEEK_END);
    check("writev", writev(fd, iov, 2) == 7);
    char a[5] = {0}, b2[20] = {0};
    struct iovec riov[2] = { { a, 4 }, { b2, sizeof b2 } };
    lseek(fd, 7, SEEK_SET);
    n = readv(fd, riov, 2);
    check("readv", n == 11 && !memcmp(a, "orld", 4) && !memcmp(b2, "abcdefg", 7));

    /* fstat / stat */
    struct stat fst;
    check("fstat", fstat(fd, &fst) == 0);
    check("fstat_size", fst.st_size == 18);
    check("fstat_regular", S_ISREG(fst.st_mode));
    checkf("fstat_mode_0644", (fst.st_mode & 07777) == 0644, "mode %o",
           (unsigned)fst.st_mode);
    check("fstat_nlink", fst.st_nlink == 1);
    check("fstat_uid", fst.st_uid == getuid());
    check("stat", stat(f1, &st) == 0);
    check("stat_same_inode", st.st_ino == fst.st_ino && st.st_dev == fst.st_dev);
    check("fsync", fsync(fd) == 0);
    check("close", close(fd) == 0);

    /* O_APPEND, O_TRUNC */
    fd = open(f1, O_WRONLY | O_APPEND);
    lseek(fd, 0, SEEK_SET);
    check("append_write", write(fd, "!", 1) == 1);
    close(fd);
    check("append_size", stat(f1, &st) == 0 && st.st_size == 19);
    fd = open(f1, O_RDONLY);
    r = (int)write(fd, "x", 1); e = errno;
    check_errno("write_rdonly_ebadf", r, e, EBADF);
    close(fd);
    fd = open(f1, O_WRONLY | O_TRUNC);
    close(fd);
    check("o_trunc", stat(f1, &st) == 0 && st.st_size == 0);

    /* access / chmod */
    check("access_exists", access(f1, F_OK) == 0);
    check("chmod", chmod(f1, 0600) == 0 && stat(f1, &st) == 0 &&
                       (st.st_mode & 0777) == 0600);

    /* rename / unlink */
    const char *f2 = P("file2");
    check("rename", rename(f1, f2) == 0);
    r = stat(f1, &st); e = errno;
    check_errno("stat_old_name_enoent", r, e, ENOENT);
    check("stat_new_name", stat(f2, &st) == 0);

    /* link / symlink / readlink / lstat */
    const char *f3 = P("hardlink");
    check("link", link(f2, f3) == 0);
    check("link_nlink_2", stat(f2, &st) == 0 && st.st_nlink == 2);
    check("unlink_hardlink", unlink(f3) == 0);
    const char *sl = P("symlink");
    check("symlink", symlink("file2", sl) == 0);
    memset(buf, 0, sizeof buf);
    n = readlink(sl, buf, sizeof buf);
    check("readlink", n == 5 && memcmp(buf, "file2", 5) == 0);
    check("lstat_is_link", lstat(sl, &st) == 0 && S_ISLNK(st.st_mode));
    check("stat_follows_link", stat(sl, &st) == 0 && S_ISREG(st.st_mode));
    check("unlink_symlink", unlink(sl) == 0);

    check("unlink", unlink(f2) == 0);
    r = stat(f2, &st); e = errno;
    check_errno("stat_after_unlink", r, e, ENOENT);
    r = unlink(f2); e = errno;
    check_errno("unlink_missing", r, e, ENOENT);

    /* unlinked-but-open file stays usable */
    fd = open(P("ghost"), O_RDWR | O_CREAT, 0644);
    unlink(P("ghost"));
    check("unlinked_open_file", write(fd, "boo", 3) == 3 &&
                                    pread(fd, buf, 3, 0) == 3 &&
                                    !memcmp(buf, "boo", 3) &&
                                    fstat(fd, &st) == 0 && st.st_nlink == 0);
    close(fd);

    /* mkdir / readdir / rmdir */
    const char *sub = P("sub");
    check("mkdir", mkdir(sub, 0755) == 0);
    r = mkdir(sub, 0755); e = errno;
    check_errno("mkdir_exists", r, e, EEXIST);
    const char *names[] = { "charlie", "alpha", "bravo", "delta.txt" };
    for (int i = 0; i < 4; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", sub, names[i]);
        int t = open(p, O_CREAT | O_WRONLY, 0644);
        close(t);
    }
    char nested[PATH_MAX + 16];
    snprintf(nested, sizeof nested, "%s/zdir", sub);
    mkdir(nested, 0700);
    list_dir("readdir", sub);
    r = rmdir(sub); e = errno;
    check_errno("rmdir_nonempty", r, e, ENOTEMPTY);
    for (int i = 0; i < 4; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", sub, names[i]);
        unlink(p);
    }
    r = unlink(nested); e = errno;
    check("unlink_dir_fails", r == -1 && (e == EISDIR || e == EPERM));
    check("rmdir_nested", rmdir(nested) == 0);
    list_dir("readdir_empty", sub);

    /* openat / fstatat / unlinkat / getcwd / chdir */
    int dfd = open(sub, O_RDONLY | O_DIRECTORY);
    check("open_directory", dfd >= 0);
    fd = openat(dfd, "rel", O_CREAT | O_WRONLY, 0644);
    check("openat", fd >= 0);
    close(fd);
    check("fstatat", fstatat(dfd, "rel", &st, 0) == 0 && S_ISREG(st.st_mode));
    check("unlinkat", unlinkat(dfd, "rel", 0) == 0);
    r = open(P("file-not-dir"), O_CREAT | O_WRONLY, 0644);
    close(r);
    r = open(P("file-not-dir/x"), O_RDONLY); e = errno;
    check_errno("open_enotdir", r, e, ENOTDIR);
    unlink(P("file-not-dir"));
    close(dfd);

    char cwd_saved[PATH_MAX], cwd[PATH_MAX];
    check("getcwd", getcwd(cwd_saved, sizeof cwd_saved) != NULL);
    check("chdir", chdir(sub) == 0);
    fd = open("relative", O_CREAT | O_WRONLY, 0644);
    close(fd);
    check("relative_open_after_chdir", access("relative", F_OK) == 0);
    check("getcwd_after_chdir", getcwd(cwd, sizeof cwd) && strstr(cwd, "/sub") &&
                                    strcmp(cwd + strlen(cwd) - 4, "/sub") == 0);
    check("chdir_back", chdir(cwd_saved) == 0);
    check("relative_file_in_subdir", access(P("sub/relative"), F_OK) == 0);
    unlink(P("sub/relative"));
    check("rmdir", rmdir(sub) == 0);
    r = rmdir(sub); e = errno;
    check_errno("rmdir_missing", r, e, ENOENT);

    /* dup / dup2 / dup3 / pipe / fcntl */
    fd = open(P("dupfile"), O_RDWR | O_CREAT, 0644);
    int d1 = dup(fd);
    check("dup", d1 >= 0 && d1 != fd);
    write(fd, "0123456789", 10);
    check("dup_shares_offset", lseek(d1, 0, SEEK_CUR) == 10);
    int d2 = dup2(fd, 100);
    check("dup2_target", d2 == 100);
    check("dup2_same_fd", dup2(fd, fd) == fd);
    lseek(100, 2, SEEK_SET);
    check("dup2_shares_offset", lseek(fd, 0, SEEK_CUR) == 2);
    int d4 = dup(fd);
    check("dup_lowest_free", d4 == d1 + 1);
    close(d4);
    check("first_fd_is_3", fd == 3);
    close(100);
    r = (int)lseek(100, 0, SEEK_CUR); e = errno;
    check_errno("closed_fd_ebadf", r, e, EBADF);

    check("cloexec_default_clear", (fcntl(fd, F_GETFD) & FD_CLOEXEC) == 0);
    int cfd = open(P("dupfile"), O_RDONLY | O_CLOEXEC);
    check("o_cloexec_set", (fcntl(cfd, F_GETFD) & FD_CLOEXEC) != 0);
    int dc = dup(cfd);
    check("dup_clears_cloexec", (fcntl(dc, F_GETFD) & FD_CLOEXEC) == 0);
    check("f_setfd_clear", fcntl(cfd, F_SETFD, 0) == 0 &&
                               (fcntl(cfd, F_GETFD) & FD_CLOEXEC) == 0);
    check("f_setfd_set", fcntl(cfd, F_SETFD, FD_CLOEXEC) == 0 &&
                             (fcntl(cfd, F_GETFD) & FD_CLOEXEC) != 0);
    int dcx = fcntl(fd, F_DUPFD_CLOEXEC, 200);
    check("f_dupfd_cloexec", dcx >= 200 && (fcntl(dcx, F_GETFD) & FD_CLOEXEC));
    int d3 = dup3(fd, 150, O_CLOEXEC);
    check("dup3_cloexec", d3 == 150 && (fcntl(150, F_GETFD) & FD_CLOEXEC));
    check("f_getfl_rdwr", (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDWR);
    check("f_setfl_append", fcntl(fd, F_SETFL, O_APPEND) == 0 &&
                                (fcntl(fd, F_GETFL) & O_APPEND));
    close(dc);
    close(dcx);
    close(d3);
    close(cfd);
    close(d1);
    close(fd);
    unlink(P("dupfile"));

    int p[2];
    check("pipe", pipe(p) == 0);
    check("pipe_write", write(p[1], "through the pipe", 16) == 16);
    memset(buf, 0, sizeof buf);
    check("pipe_read", read(p[0], buf, sizeof buf) == 16 &&
                           !memcmp(buf, "through the pipe", 16));
    check("pipe_fstat_fifo", fstat(p[0], &st) == 0 && S_ISFIFO(st.st_mode));
    r = (int)lseek(p[0], 0, SEEK_CUR); e = errno;
    check_errno("pipe_lseek_espipe", r, e, ESPIPE);
    close(p[1]);
    check("pipe_eof", read(p[0], buf, sizeof buf) == 0);
    close(p[0]);
    int p2[2];
    check("pipe2_cloexec_nonblock",
          pipe2(p2, O_CLOEXEC | O_NONBLOCK) == 0 &&
              (fcntl(p2[0], F_GETFD) & FD_CLOEXEC) &&
              (fcntl(p2[0], F_GETFL) & O_NONBLOCK));
    r = (int)read(p2[0], buf, 1); e = errno;
    check_errno("nonblock_empty_eagain", r, e, EAGAIN);
    close(p2[0]);
    close(p2[1]);

    /* errors */
    r = open(P("does/not/exist"), O_RDONLY); e = errno;
    check_errno("open_missing_enoent", r, e, ENOENT);
    r = open("/nonexistent-picos-file", O_RDONLY); e = errno;
    check_errno("open_missing_root_enoent", r, e, ENOENT);
    r = close(-1); e = errno;
    check_errno("close_neg_ebadf", r, e, EBADF);
    r = (int)read(9999, buf, 1); e = errno;
    check_errno("read_bad_fd_ebadf", r, e, EBADF);
    r = (int)write(9999, buf, 1); e = errno;
    check_errno("write_bad_fd_ebadf", r, e, EBADF);
    r = fstat(9999, &st); e = errno;
    check_errno("fstat_bad_fd_ebadf", r, e, EBADF);
    r = dup(9999); e = errno;
    check_errno("dup_bad_fd_ebadf", r, e, EBADF);
    r = fcntl(9999, F_GETFD); e = errno;
    check_errno("fcntl_bad_fd_ebadf", r, e, EBADF);
    r = (int)read(0, NULL, 0);
    check("read_zero_len", r == 0);
    fd = open(base, O_RDONLY);
    r = (int)read(fd, buf, 1); e = errno;
    check_errno("read_dir_eisdir", r, e, EISDIR);
    close(fd);
    r = open(base, O_WRONLY); e = errno;
    check_errno("open_dir_wronly_eisdir", r, e, EISDIR);

    /* stdin is /dev/null under the harness: read gives EOF */
    fd = open("/dev/null", O_RDWR);
    check("dev_null", fd >= 0 && read(fd, buf, 10) == 0 && write(fd, "x", 1) == 1);
    close(fd);

    if (made_tmp)
        check("rmdir_base", rmdir(base) == 0);
    else
        rmdir(base);

    return conf_finish("files");
}
