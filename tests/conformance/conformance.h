/* Shared helpers for the picos conformance programs.
 *
 * Every check prints exactly one line "NAME: ok" or "NAME: FAIL" on stdout.
 * Failure details go to stderr (they may contain run-dependent values).
 * Output must be identical natively and under picos, so never print pids,
 * addresses, timings or libc-specific strerror() text on stdout.
 */
#ifndef PICOS_CONFORMANCE_H
#define PICOS_CONFORMANCE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wunused-function"

static int conf_failures;

/* Errno names from our own table: strerror() text differs between libcs. */
static const char *errno_name(int e)
{
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case E2BIG: return "E2BIG";
    case ENOEXEC: return "ENOEXEC";
    case EBADF: return "EBADF";
    case ECHILD: return "ECHILD";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case ENOTTY: return "ENOTTY";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case ESPIPE: return "ESPIPE";
    case EROFS: return "EROFS";
    case EPIPE: return "EPIPE";
    case ERANGE: return "ERANGE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ELOOP: return "ELOOP";
    case ETIMEDOUT: return "ETIMEDOUT";
    default: {
        static char buf[32];
        snprintf(buf, sizeof buf, "errno%d", e);
        return buf;
    }
    }
}

/* The wait status of child `pid` (retried on EINTR); -1 if there is none
 * (`pid` not a child: a failed fork's -1 included). */
static int wait_status(pid_t pid)
{
    int st = -1;
    if (pid <= 0)
        return -1;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return st;
}

/* Is signal `sig` in the calling thread's mask? */
static int conf_is_blocked(int sig)
{
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    return sigismember(&cur, sig);
}

/* sigprocmask(`how`) of the one signal `sig`. */
static void conf_mask_one(int how, int sig)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(how, &s, NULL);
}

/* sigaction(`sig`) with handler `h` (or SIG_DFL/SIG_IGN), `flags` and an
 * empty mask. */
static void conf_handle(int sig, void (*h)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

/* One check, one line. */
static void check(const char *name, int ok)
{
    printf("%s: %s\n", name, ok ? "ok" : "FAIL");
    fflush(stdout);
    if (!ok)
        conf_failures++;
}

/* Like check(), with a printf-style diagnostic sent to stderr on failure. */
static void checkf(const char *name, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void checkf(const char *name, int ok, const char *fmt, ...)
{
    if (!ok) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    check(name, ok);
}

/* Expect a call to have failed with a specific errno; prints the errno name
 * (deterministic) as part of the line. */
static void check_errno(const char *name, long ret, int saved_errno, int want)
{
    int ok = ret == -1 && saved_errno == want;
    if (ok) {
        printf("%s: ok (%s)\n", name, errno_name(want));
    } else {
        printf("%s: FAIL (ret=%s errno=%s, want %s)\n", name,
               ret == -1 ? "-1" : "not -1", errno_name(saved_errno),
               errno_name(want));
        conf_failures++;
    }
    fflush(stdout);
}

/* Print "NAME: VALUE" for a deterministic value. */
static void show(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void show(const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s: ", name);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    va_end(ap);
}

/* Line-buffer stdout so fork() never duplicates buffered output. */
static void conf_init(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
}

static int conf_finish(const char *prog)
{
    if (conf_failures)
        printf("%s: %d FAILED\n", prog, conf_failures);
    else
        printf("%s: all ok\n", prog);
    fflush(stdout);
    return conf_failures ? 1 : 0;
}

/* Write all of buf to fd (async-signal-safe). */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Read until EOF or len bytes; returns bytes read or -1. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

#endif
