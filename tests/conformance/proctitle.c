/* A program that renames itself by rewriting its argv strings in place
 * (setproctitle, as redis, nginx and PostgreSQL do) is seen renamed in
 * /proc/self/cmdline, as natively: under picos the program's argv and envp
 * point at the strings the kernel shows there (loader::build_stack). */
#include "conformance.h"

#include <fcntl.h>

extern char **environ;

/* /proc/self/cmdline with each NUL shown as '|'. */
static void show_cmdline(const char *name)
{
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (fd >= 0)
        close(fd);
    if (n < 0)
        n = 0;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 0)
            buf[i] = '|';
    buf[n] = 0;
    printf("%s: %s\n", name, buf);
}

int main(int argc, char **argv)
{
    /* As Linux lays them out: argv strings, then envp strings, back to
     * back (what setproctitle implementations check before using both). */
    int back_to_back = 1;
    char *next = argv[0];
    for (int i = 0; i < argc; i++) {
        back_to_back &= argv[i] == next;
        next = argv[i] + strlen(argv[i]) + 1;
    }
    back_to_back &= environ[0] == NULL || environ[0] == next;
    check("argv_envp_back_to_back", back_to_back);

    /* In place, within argv[0]. */
    size_t n0 = strlen(argv[0]);
    memset(argv[0], 0, n0);
    memcpy(argv[0], "renamed", n0 < 7 ? n0 : 7);
    show_cmdline("renamed_in_place");

    /* Over the whole argv area and on into the environment's (the
     * environment moved away first, as setproctitle does). */
    char *end = argv[argc - 1] + strlen(argv[argc - 1]);
    size_t room = (size_t)(end - argv[0]);
    for (char **e = environ; *e; e++)
        room = (size_t)(*e + strlen(*e) - argv[0]);
    const char *title = "worker process: a title longer than the arguments";
    if (strlen(title) < room) {
        memset(argv[0], 0, room);
        strcpy(argv[0], title);
        show_cmdline("title_over_environment");
    } else {
        printf("title_over_environment: skipped (little room)\n");
    }
    return conf_failures ? 1 : 0;
}
