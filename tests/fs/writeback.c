/* The flush points of a write-back mount (docs/FILESYSTEM.md, "Write-back
 * mounts"), checked from inside the program: small writes to a file of
 * such a mount stay in the library OS's buffer until a flush point, so a
 * descriptor opened before them (which the host serves) does not see them
 * yet; after the flush point it does. Natively every write is seen at
 * once. What reached the host is seen by an observer, a child process
 * forked at the start that stats the file when asked (a stat in this
 * process, or a second descriptor of the file, would itself flush). Each
 * check prints "NAME: ok" when what it saw is what it should see in the
 * run's mode, so the output is the same natively and under picos.
 *
 *   writeback DIR buffered   under picos, DIR a write-back mount
 *   writeback DIR native     natively
 *   writeback DIR stream     writes numbered records to DIR/stream for
 *                            ever, printing each record's number after
 *                            its write (the crash test kills it)
 *
 * crates/picos/tests/mounts.rs runs it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static int buffered;
static int failures;

static void die(const char *what)
{
    perror(what);
    exit(2);
}

static char *path_of(const char *name)
{
    /* (Per thread: the fork test's threads make their files at once.) */
    static __thread char p[2][4096];
    static __thread int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

/* The observer: a child forked before any file is made, which answers
 * "what size has the file NAME?" with its own stat. Another process's
 * stat sees what reached the host, and is no flush point here (a second
 * descriptor of the file, or a path call in this process, would be). */
static int ask_fd, answer_fd;

static void observer(int req, int resp)
{
    char name[128];
    for (;;) {
        if (read(req, name, sizeof name) != (ssize_t)sizeof name)
            _exit(0);
        struct stat st;
        long size = stat(path_of(name), &st) == 0 ? (long)st.st_size : -1;
        if (write(resp, &size, sizeof size) != (ssize_t)sizeof size)
            _exit(1);
    }
}

static void start_observer(void)
{
    int req[2], resp[2];
    if (pipe(req) < 0 || pipe(resp) < 0)
        die("pipe");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(req[1]);
        close(resp[0]);
        observer(req[0], resp[1]);
    }
    close(req[0]);
    close(resp[1]);
    ask_fd = req[1];
    answer_fd = resp[0];
}

/* The size of file NAME as the host has it. */
static long host_size(const char *name)
{
    char buf[128] = {0};
    snprintf(buf, sizeof buf, "%s", name);
    long size;
    if (write(ask_fd, buf, sizeof buf) != (ssize_t)sizeof buf ||
        read(answer_fd, &size, sizeof size) != (ssize_t)sizeof size)
        die("observer");
    return size;
}

/* `before` must be `held` under picos (the write still buffered) and
 * `now` natively; `after` must be `now` in both. */
static void check(const char *name, long before, long after, long held, long now)
{
    long want_before = buffered ? held : now;
    if (before == want_before && after == now)
        printf("%s: ok\n", name);
    else {
        printf("%s: WRONG (before %ld, want %ld; after %ld, want %ld)\n", name, before,
               want_before, after, now);
        failures++;
    }
}

static char data[65536];

/* A fresh file, opened for writing with `flags`. */
static int fresh(const char *name, int flags)
{
    unlink(path_of(name));
    int a = open(path_of(name), O_CREAT | O_TRUNC | flags, 0644);
    if (a < 0)
        die(name);
    return a;
}

static void wr(int fd, size_t n)
{
    if (write(fd, data, n) != (ssize_t)n)
        die("write");
}

/* One flush point that acts on descriptor `a` after a 100-byte write. */
#define POINT(NAME, ACTION)                                                    \
    do {                                                                       \
        int a = fresh(NAME, O_RDWR);                                           \
        wr(a, 100);                                                            \
        long before = host_size(NAME);                                         \
        ACTION;                                                                \
        check(NAME, before, host_size(NAME), 0, 100);                          \
        close(a);                                                              \
    } while (0)

static int shared_fd;
static void *writer(void *arg)
{
    char rec[64];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(rec, sizeof rec, "thread %ld record %03d\n", (long)arg, i);
        if (write(shared_fd, rec, (size_t)n) != n)
            die("thread write");
    }
    return NULL;
}

/* Threads writing records to files of their own while the main thread
 * forks: no child may hang on a buffer another thread held at the fork,
 * and no record may be lost or doubled. */
static volatile int stop_writing;
static void *own_file_writer(void *arg)
{
    char name[32], rec[32];
    snprintf(name, sizeof name, "forking-%ld", (long)arg);
    int fd = fresh(name, O_WRONLY);
    long n = 0;
    while (!stop_writing) {
        int len = snprintf(rec, sizeof rec, "%ld\n", n++);
        if (write(fd, rec, (size_t)len) != len)
            die("write");
    }
    close(fd);
    return (void *)n;
}

static void fork_while_writing(void)
{
    pthread_t t[3];
    stop_writing = 0;
    for (long i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, own_file_writer, (void *)i);
    int hung = 0;
    for (int i = 0; i < 200; i++) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            /* The child writes through a file of its own and exits. */
            int fd = open(path_of("forking-child"), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd < 0 || write(fd, "c\n", 2) != 2)
                _exit(3);
            _exit(0);
        }
        int st = 0;
        waitpid(p, &st, 0);
        hung += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    stop_writing = 1;
    long bad = 0;
    for (long i = 0; i < 3; i++) {
        void *r;
        pthread_join(t[i], &r);
        char name[32];
        snprintf(name, sizeof name, "forking-%ld", i);
        FILE *f = fopen(path_of(name), "r");
        long want = 0, got;
        while (f && fscanf(f, "%ld", &got) == 1)
            bad += got != want++;
        bad += want != (long)r;
        if (f)
            fclose(f);
    }
    struct stat st;
    stat(path_of("forking-child"), &st);
    printf("fork while writing: %s\n", !hung && !bad && st.st_size == 400 ? "ok" : "WRONG");
    if (hung || bad || st.st_size != 400) {
        printf("  %d children failed, %ld records wrong, child file %ld bytes\n", hung, bad,
               (long)st.st_size);
        failures++;
    }
}

/* A child that writes 100 bytes to a file of its own, then ends as
 * `how` says; the parent sees the file's size after. */
static void child_end(const char *name, int how)
{
    close(fresh(name, O_WRONLY));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int a = open(path_of(name), O_WRONLY);
        if (a < 0)
            _exit(3);
        wr(a, 100);
        if (how == 0)
            _exit(0);
        if (how == 1) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        if (how == 2)
            raise(SIGTERM);
        raise(SIGKILL);
        _exit(4);
    }
    int st;
    waitpid(pid, &st, 0);
    long after = host_size(name);
    /* Killed by SIGKILL, the runtime never runs again: what was
     * buffered is lost (all 100 bytes). Every other end writes it. */
    long want = how == 3 && buffered ? 0 : 100;
    if (after == want)
        printf("%s: ok\n", name);
    else {
        printf("%s: WRONG (after %ld, want %ld; status %#x)\n", name, after, want, st);
        failures++;
    }
}

static void stream(void)
{
    int fd = open(path_of("stream"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        die("stream");
    setvbuf(stdout, NULL, _IOLBF, 0);
    char rec[32];
    for (long i = 0;; i++) {
        int n = snprintf(rec, sizeof rec, "%09ld\n", i);
        if (write(fd, rec, (size_t)n) != n)
            die("write");
        printf("%ld\n", i);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    dir = argv[1];
    if (strcmp(argv[2], "stream") == 0)
        stream();
    buffered = strcmp(argv[2], "buffered") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(data, 'a', sizeof data);
    start_observer();

    /* Calls on the descriptor itself. */
    POINT("fsync", fsync(a));
    POINT("fdatasync", fdatasync(a));
    POINT("lseek", lseek(a, 0, SEEK_CUR));
    POINT("fstat", ({ struct stat st; fstat(a, &st); }));
    POINT("read", ({ char c; (void)read(a, &c, 1); }));
    POINT("pread", ({ char c; (void)pread(a, &c, 1, 0); }));
    POINT("ftruncate", ftruncate(a, 100));
    POINT("fcntl F_GETFL", fcntl(a, F_GETFL));
    POINT("close", ({ close(a); a = open("/dev/null", O_RDONLY); }));
    /* Calls elsewhere. */
    POINT("stat of its path", ({ struct stat st; stat(path_of("stat of its path"), &st); }));
    POINT("open of another file", close(open(path_of("other"), O_CREAT | O_RDONLY, 0644)));
    POINT("rename", rename(path_of("other"), path_of("other2")));
    POINT("stat of another path", ({ struct stat st; stat("/", &st); }));
    POINT("mmap", ({ void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, a, 0); munmap(m, 4096); }));
    POINT("dup2 over it", ({ int n = open("/dev/null", O_RDONLY); dup2(n, a); close(n); }));
    POINT("close_range over it", close_range(a, a, 0));
    POINT("fork", ({ fflush(stdout); pid_t p = fork(); if (p == 0) _exit(0); waitpid(p, NULL, 0); }));
    /* Another descriptor of the file: both write directly from then on. */
    POINT("another descriptor of it", ({
        int o = open(path_of("another descriptor of it"), O_RDONLY);
        long mid = host_size("another descriptor of it");
        wr(a, 10);
        long more = host_size("another descriptor of it");
        if (mid != 100 || more != 110) {
            printf("another descriptor of it: then WRONG (%ld, %ld)\n", mid, more);
            failures++;
        }
        ftruncate(a, 100);
        close(o);
    }));

    /* copy_file_range into it: after what was buffered, not before. */
    {
        int src = fresh("source", O_RDWR);
        memset(data, 's', 10);
        wr(src, 10);
        memset(data, 'a', 10);
        int a = fresh("copy_file_range", O_RDWR);
        wr(a, 100);
        long before = host_size("copy_file_range");
        loff_t in = 0;
        long n = copy_file_range(src, &in, a, NULL, 10, 0);
        char got[110];
        int order = pread(a, got, 110, 0) == 110 && got[99] == 'a' && got[100] == 's';
        int ok = n == 10 && order && before == (buffered ? 0 : 100) &&
                 host_size("copy_file_range") == 110;
        printf("copy_file_range: %s\n", ok ? "ok" : "WRONG");
        failures += !ok;
        close(a);
        close(src);
    }
    /* A large write goes through at once, after what was buffered. */
    {
        int a = fresh("large write", O_WRONLY);
        wr(a, 100);
        wr(a, 8192);
        long seen = host_size("large write");
        check("large write", seen, seen, 8292, 8292);
        close(a);
    }
    /* A full buffer is written out: 200 writes of 100 bytes leave at
     * most 16 KiB behind. */
    {
        int a = fresh("full buffer", O_WRONLY);
        for (int i = 0; i < 200; i++)
            wr(a, 100);
        long seen = host_size("full buffer");
        fsync(a);
        check("full buffer", seen, host_size("full buffer"), 16300, 20000);
        close(a);
    }
    /* After a dup (or fork), writes are not buffered any more. */
    {
        int a = fresh("after dup", O_WRONLY);
        int d = dup(a);
        wr(a, 100);
        long seen = host_size("after dup");
        check("after dup", seen, seen, 100, 100);
        close(d);
        close(a);
    }
    /* O_APPEND: the buffer goes to the end, as one write. */
    {
        int a = fresh("append", O_WRONLY);
        wr(a, 50);
        close(a);
        a = open(path_of("append"), O_WRONLY | O_APPEND);
        memset(data, 'b', 100);
        wr(a, 100);
        memset(data, 'a', 100);
        long before = host_size("append");
        fsync(a);
        long after = host_size("append");
        int b = open(path_of("append"), O_RDONLY);
        char got[150];
        int same = pread(b, got, 150, 0) == 150 && got[49] == 'a' && got[50] == 'b' && got[149] == 'b';
        check(same ? "append" : "append (content WRONG)", before, after, 50, 150);
        close(a);
        close(b);
    }
    /* pwrite after buffered writes lands on them, not under them. */
    {
        int a = fresh("pwrite after writes", O_RDWR);
        wr(a, 100);
        if (pwrite(a, "zzzzzzzzzz", 10, 5) != 10)
            die("pwrite");
        char got[100];
        int same = pread(a, got, 100, 0) == 100 && got[4] == 'a' && got[5] == 'z' && got[14] == 'z' &&
                   got[15] == 'a';
        printf("pwrite after writes: %s\n", same ? "ok" : "WRONG");
        failures += !same;
        close(a);
    }
    /* writev, then threads writing records through one descriptor: every
     * record whole, none lost. */
    {
        int a = fresh("writev", O_WRONLY);
        struct iovec iov[3] = {{data, 10}, {data, 0}, {data, 20}};
        if (writev(a, iov, 3) != 30)
            die("writev");
        long before = host_size("writev");
        fsync(a);
        check("writev", before, host_size("writev"), 0, 30);
        close(a);
        shared_fd = fresh("threads", O_WRONLY);
        pthread_t t[4];
        for (long i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, writer, (void *)i);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        close(shared_fd);
        FILE *f = fopen(path_of("threads"), "r");
        char line[64];
        int seen[4][500] = {{0}}, bad = 0, n = 0;
        while (f && fgets(line, sizeof line, f)) {
            int th, r;
            if (sscanf(line, "thread %d record %d\n", &th, &r) != 2 || th < 0 || th > 3 || r < 0 ||
                r >= 500 || seen[th][r]++)
                bad++;
            n++;
        }
        if (f)
            fclose(f);
        printf("threads: %d records, %d bad\n", n, bad);
        failures += bad || n != 2000;
    }
    fork_while_writing();
    /* How a process ends. */
    child_end("exit", 0);
    child_end("execve", 1);
    child_end("SIGTERM", 2);
    child_end("SIGKILL", 3);
    printf("%d wrong\n", failures);
    return failures != 0;
}
