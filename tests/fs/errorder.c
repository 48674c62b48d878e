/* Which error comes first when a call has several things wrong, for calls
 * the library OS checks itself under mounts (found by tools/fuzz.py):
 * utimensat looks the path up before it checks the times' nanoseconds;
 * name_to_handle_at checks its flags before its path. Prints each result,
 * for a native run and one under picos with mounts to be compared. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void show(const char *what, int r)
{
    printf("%s: %d %s\n", what, r, r < 0 ? strerrorname_np(errno) : "");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *dir = argv[1];
    char file[4096], missing[4096];
    snprintf(file, sizeof file, "%s/f", dir);
    snprintf(missing, sizeof missing, "%s/missing/x", dir);
    int fd = open(file, O_CREAT | O_RDWR, 0644);
    struct timespec bad[2] = {{0, 2000000000L}, {0, 0}};
    struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
    show("utimensat missing path, bad nsec", utimensat(AT_FDCWD, missing, bad, 0));
    show("utimensat file, bad nsec", utimensat(AT_FDCWD, file, bad, 0));
    show("utimensat empty path, bad nsec", utimensat(AT_FDCWD, "", bad, 0));
    show("utimensat bad descriptor, AT_EMPTY_PATH, bad nsec", utimensat(999, "", bad, AT_EMPTY_PATH));
    show("utimensat descriptor, AT_EMPTY_PATH, bad nsec", utimensat(fd, "", bad, AT_EMPTY_PATH));
    show("utimensat missing path, bad flags", utimensat(AT_FDCWD, missing, NULL, 0x8000));
    show("utimensat missing path, both omitted", utimensat(AT_FDCWD, missing, omit, 0));
    struct {
        unsigned int bytes;
        int type;
        unsigned char h[128];
    } fh = {128, 0, {0}};
    int mnt;
    show("name_to_handle_at missing path, bad flags",
         name_to_handle_at(AT_FDCWD, missing, (void *)&fh, &mnt, 0x180));
    show("name_to_handle_at bad descriptor, AT_EMPTY_PATH|bad flags",
         name_to_handle_at(999, "", (void *)&fh, &mnt, AT_EMPTY_PATH | 0x100));
    show("name_to_handle_at connectable with AT_EMPTY_PATH",
         name_to_handle_at(fd, "", (void *)&fh, &mnt, AT_EMPTY_PATH | 0x2));
    show("name_to_handle_at missing path", name_to_handle_at(AT_FDCWD, missing, (void *)&fh, &mnt, 0));
    close(fd);
    unlink(file);
    return 0;
}
