/* What /proc/self says of the program's memory map: the code and data
 * bounds and the initial stack pointer in /proc/self/stat (fields 26-28,
 * 45-46), and its strings in /proc/self/cmdline and /proc/self/environ.
 * Linux sets them from the program's ELF segments and its exec; under
 * picos they were the runtime's (its own segments, the stack the kernel
 * gave it, and an environment with the runtime's launch configuration in
 * it) until the 30th session; the runtime now sets the program's with
 * PR_SET_MM_MAP (loader::build_stack).
 *
 * With "exec", the program checks, then runs itself again through execve
 * (under picos an execve in place, or with --kernel-exec a fresh runtime),
 * and the new program checks again. */
#include "conformance.h"

#include <fcntl.h>
#include <stdint.h>

extern char **environ;

/* An initialised variable: in the data the ELF file holds. */
static volatile int initialised = 42;

/* /proc/self/stat's field k (1-based, as proc(5) numbers them). */
static unsigned long long stat_field(const char *text, int k)
{
    const char *p = strrchr(text, ')');
    if (!p)
        return 0;
    p += 2; /* field 3 */
    for (int f = 3; f < k && *p; f++) {
        p = strchr(p, ' ');
        if (!p)
            return 0;
        p++;
    }
    return strtoull(p, NULL, 10);
}

static ssize_t read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, size - n);
        if (r <= 0)
            break;
        n += r;
    }
    close(fd);
    return n;
}

/* Does `area` (n bytes) hold exactly `strings`, each with its NUL? */
static int same_strings(const char *area, ssize_t n, char **strings, const char *what)
{
    ssize_t at = 0;
    for (char **s = strings; *s; s++) {
        size_t len = strlen(*s) + 1;
        if (at + (ssize_t)len > n || memcmp(area + at, *s, len) != 0) {
            fprintf(stderr, "%s: differs at string %d (%s)\n", what, (int)(s - strings), *s);
            return 0;
        }
        at += len;
    }
    if (at != n) {
        fprintf(stderr, "%s: %zd more bytes: %.60s\n", what, n - at, area + at);
        return 0;
    }
    return 1;
}

static void check_all(const char *tag, char **argv)
{
    char name[64];
    static char buf[1 << 16];
    ssize_t n = read_file("/proc/self/stat", buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = 0;
    unsigned long long start_code = stat_field(buf, 26), end_code = stat_field(buf, 27),
                       start_stack = stat_field(buf, 28), start_data = stat_field(buf, 45),
                       end_data = stat_field(buf, 46);
    uintptr_t code = (uintptr_t)&check_all, data = (uintptr_t)&initialised;

    snprintf(name, sizeof name, "%s_code_bounds_hold_the_code", tag);
    checkf(name, start_code <= code && code < end_code, "%#llx <= %#lx < %#llx", start_code,
           (unsigned long)code, end_code);
    snprintf(name, sizeof name, "%s_data_bounds_hold_the_data", tag);
    checkf(name, start_data <= data && data < end_data && start_data < end_data,
           "%#llx <= %#lx < %#llx", start_data, (unsigned long)data, end_data);
    snprintf(name, sizeof name, "%s_code_below_data", tag);
    checkf(name, end_code <= start_data, "%#llx %#llx", end_code, start_data);
    /* The initial stack pointer points at argc, with argv right above it. */
    snprintf(name, sizeof name, "%s_start_stack_is_the_initial_sp", tag);
    checkf(name, start_stack + 8 == (uintptr_t)argv, "%#llx, argv at %p", start_stack,
           (void *)argv);

    n = read_file("/proc/self/cmdline", buf, sizeof buf);
    snprintf(name, sizeof name, "%s_cmdline_is_argv", tag);
    check(name, n > 0 && same_strings(buf, n, argv, "cmdline"));
    n = read_file("/proc/self/environ", buf, sizeof buf);
    snprintf(name, sizeof name, "%s_environ_is_the_environment", tag);
    check(name, n >= 0 && same_strings(buf, n, environ, "environ"));
}

int main(int argc, char **argv)
{
    int child = argc > 1 && strcmp(argv[1], "child") == 0;
    check_all(child ? "after_exec" : "start", argv);
    if (argc > 1 && strcmp(argv[1], "exec") == 0) {
        fflush(stdout);
        char *args[] = {argv[0], "child", NULL};
        execv("/proc/self/exe", args);
        printf("exec: FAIL\n");
        return 1;
    }
    return conf_failures ? 1 : 0;
}
