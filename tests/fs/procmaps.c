/* /proc/self/maps as the program sees it: its own mappings, none of the
 * runtime's. Prints facts that hold natively, so that a run under picos
 * (with mounts, where the library OS serves /proc/self/maps:
 * docs/FILESYSTEM.md, "/proc") can be compared with a native one: a
 * mapping it made is listed, its program and stack are, and nothing names
 * the runtime (its memfd image) or is one of its huge inaccessible
 * reservations; through /proc/self, /proc/PID, /proc/thread-self and
 * /proc/PID/task/TID, with open and with fopen, and after a fork; and
 * the same of /proc/self/smaps. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void *mine;

static void check(const char *how, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
    static char buf[1 << 20];
    size_t len = 0;
    ssize_t n;
    while ((n = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = 0;
    int cloexec = fcntl(fd, F_GETFD) & FD_CLOEXEC;
    close(fd);
    int lines = 0, runtime = 0, huge = 0, own = 0, prog = 0, stack = 0;
    char want[32];
    snprintf(want, sizeof want, "%lx-", (unsigned long)mine);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        lines++;
        unsigned long s, e;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) != 3)
            continue;
        if (strstr(line, "picos"))
            runtime++;
        if (strcmp(perms, "---p") == 0 && e - s >= (4UL << 30))
            huge++;
        if (strncmp(line, want, strlen(want)) == 0)
            own++;
        if (strstr(line, "/procmaps"))
            prog++;
        if (strstr(line, "[stack]"))
            stack++;
    }
    printf("%s: lines %s, own mapping %d, program %s, stack %d, runtime's %d, huge reservations %d, cloexec %s\n",
           how, lines > 5 ? "several" : "few", own, prog > 0 ? "listed" : "missing", stack, runtime, huge,
           cloexec ? "yes" : "no");
}

int main(void)
{
    /* Far from every other mapping, so that it cannot merge with a
     * neighbour (which differ natively and under picos). */
    mine = mmap((void *)0x200000000000UL, 3 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                -1, 0);
    if (mine == MAP_FAILED)
        return 2;
    char p[64];
    check("/proc/self/maps", "/proc/self/maps");
    snprintf(p, sizeof p, "/proc/%d/maps", getpid());
    check("/proc/PID/maps", p);
    check("/proc/thread-self/maps", "/proc/thread-self/maps");
    snprintf(p, sizeof p, "/proc/%d/task/%d/maps", getpid(), gettid());
    check("/proc/PID/task/TID/maps", p);
    /* smaps: the runtime's records (header and fields) are gone too. */
    FILE *sm = fopen("/proc/self/smaps", "r");
    char l2[4096];
    int sruntime = 0, sizes = 0, huge = 0, own = 0;
    char want[32];
    snprintf(want, sizeof want, "%lx-", (unsigned long)mine);
    while (sm && fgets(l2, sizeof l2, sm)) {
        unsigned long a, b;
        char perms[8];
        sruntime += strstr(l2, "picos") != NULL;
        sizes += strncmp(l2, "Size:", 5) == 0;
        own += strncmp(l2, want, strlen(want)) == 0;
        if (sscanf(l2, "%lx-%lx %7s", &a, &b, perms) == 3 && strcmp(perms, "---p") == 0 && b - a >= (4UL << 30))
            huge++;
    }
    if (sm)
        fclose(sm);
    printf("smaps: records %s, own mapping %d, runtime's %d, huge reservations %d\n", sizes > 5 ? "several" : "few",
           own, sruntime, huge);
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int runtime = 0, lines = 0;
    while (f && fgets(line, sizeof line, f)) {
        lines++;
        runtime += strstr(line, "picos") != NULL;
    }
    if (f)
        fclose(f);
    printf("fopen: lines %s, runtime's %d\n", lines > 5 ? "several" : "few", runtime);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        check("child's /proc/self/maps", "/proc/self/maps");
        fflush(stdout);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    return 0;
}
