/* File locks that wait: fcntl(F_SETLKW), fcntl(F_OFD_SETLKW) and
 * flock(LOCK_EX) while another process holds the lock. A signal whose
 * handler has SA_RESTART restarts the wait until the holder lets go;
 * without SA_RESTART the wait fails with EINTR. F_GETLK names the holder.
 *
 * Under picos these calls may reach the runtime's handlers (fcntl has one,
 * for the runtime's own descriptors and dup's copies of /proc directories):
 * the handler must wait in the interruptible window, as the host does. The
 * test runs with patched call sites and with every call trapped
 * (`--no-patch`), where every fcntl goes through the handler.
 */
#include "conformance.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/time.h>
#include <sys/wait.h>

static volatile sig_atomic_t hits;

static void on_alarm(int sig)
{
    (void)sig;
    hits++;
}

static void set_handler(int flags)
{
    conf_handle(SIGALRM, on_alarm, flags);
}

/* A signal every 5 ms while a call waits. */
static void ticks(int on)
{
    struct itimerval it = {{0, on ? 5000 : 0}, {0, on ? 5000 : 0}};
    setitimer(ITIMER_REAL, &it, NULL);
}

enum kind { POSIX, OFD, FLOCK };

static int take(int fd, enum kind k, int wait)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    switch (k) {
    case POSIX:
        return fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl);
    case OFD:
        return fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl);
    default:
        return flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    }
}

/* A child that takes the lock on its own open of `path`, says so through
 * `p`, and holds it for `ms` milliseconds (or until killed, for 0). */
static pid_t holder(const char *path, enum kind k, int p[2], long ms)
{
    pid_t c = fork();
    if (c == 0) {
        int fd = open(path, O_RDWR);
        if (fd < 0 || take(fd, k, 0) != 0 || write(p[1], "l", 1) != 1)
            _exit(1);
        if (!ms)
            for (;;)
                pause();
        struct timespec ts = {0, ms * 1000 * 1000};
        while (nanosleep(&ts, &ts) != 0)
            ;
        _exit(0);
    }
    char l;
    while (read(p[0], &l, 1) < 0 && errno == EINTR)
        ;
    return c;
}

static void reap(pid_t c)
{
    int status;
    while (waitpid(c, &status, 0) < 0 && errno == EINTR)
        ;
}

int main(void)
{
    conf_init();
    char path[] = "/tmp/picos-locks-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    int p[2];
    if (pipe(p) != 0) {
        perror("pipe");
        return 1;
    }
    static const char *names[] = {"F_SETLKW", "F_OFD_SETLKW", "flock"};
    for (enum kind k = POSIX; k <= FLOCK; k++) {
        char name[64];
        /* Restarted: the holder lets go after 60 ms. */
        pid_t c = holder(path, k, p, 60);
        if (k == POSIX) {
            struct flock q;
            memset(&q, 0, sizeof q);
            q.l_type = F_WRLCK;
            q.l_whence = SEEK_SET;
            int r = fcntl(fd, F_GETLK, &q);
            snprintf(name, sizeof name, "F_GETLK names the holder");
            check(name, r == 0 && q.l_type == F_WRLCK && q.l_pid == c);
        }
        set_handler(SA_RESTART);
        long before = hits;
        ticks(1);
        int r = take(fd, k, 1);
        int e = errno;
        ticks(0);
        snprintf(name, sizeof name, "%s restarted by SA_RESTART", names[k]);
        checkf(name, r == 0, "r=%d errno=%s", r, errno_name(e));
        snprintf(name, sizeof name, "%s: signals while it waited", names[k]);
        check(name, hits > before);
        reap(c);
        if (k == FLOCK)
            flock(fd, LOCK_UN);
        else {
            struct flock un;
            memset(&un, 0, sizeof un);
            un.l_type = F_UNLCK;
            un.l_whence = SEEK_SET;
            fcntl(fd, k == OFD ? F_OFD_SETLK : F_SETLK, &un);
        }
        /* Interrupted: the holder keeps it until killed. */
        c = holder(path, k, p, 0);
        set_handler(0);
        ticks(1);
        r = take(fd, k, 1);
        e = errno;
        ticks(0);
        snprintf(name, sizeof name, "%s interrupted without SA_RESTART", names[k]);
        check_errno(name, r, e, EINTR);
        kill(c, SIGKILL);
        reap(c);
    }
    unlink(path);
    return conf_finish("locks");
}
