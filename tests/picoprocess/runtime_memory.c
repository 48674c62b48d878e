/* Run under picos only: the program must not be able to unmap, remap or
 * change the protection of the runtime's memory; it gets the errno Linux
 * gives for a range that is not its own. Prints one line per check. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static void check(const char *what, long got, int want_errno) {
    int e = errno;
    printf("%s: %s\n", what, (got == -1 && e == want_errno) ? "refused" : "ALLOWED");
}

int main(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long start = 0, end = 0;
    /* The image's mappings must cover its span without a hole (a hole could
     * be handed to the program by mmap, inside memory picos calls its own). */
    unsigned long prev_end = 0, span_holes = 0;
    int in_image = 0, seen_image = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        sscanf(line, "%lx-%lx", &s, &e);
        int is_rt = strstr(line, "picos-rt") != NULL;
        if (is_rt && !seen_image) {
            seen_image = in_image = 1;
        } else if (in_image && is_rt && s != prev_end) {
            span_holes++;
        }
        if (in_image && !is_rt) {
            /* Filler reservations (anonymous, no access) may sit between the
             * image's segments; anything else ends the image. */
            if (strstr(line, "---p") && s == prev_end) {
                prev_end = e;
                continue;
            }
            in_image = 0;
        }
        if (in_image)
            prev_end = e;
        if (is_rt && strstr(line, "r-xp") && !start) {
            start = s;
            end = e;
        }
    }
    printf("image span without holes: %s\n", span_holes == 0 ? "yes" : "NO");
    if (!start) {
        printf("runtime mapping: not found\n");
        return 1;
    }
    printf("runtime mapping: found\n");
    void *p = (void *)start;
    errno = 0; check("munmap", munmap(p, 4096), EINVAL);
    errno = 0; check("mprotect", mprotect(p, 4096, PROT_READ | PROT_WRITE), ENOMEM);
    errno = 0; check("madvise", madvise(p, 4096, MADV_DONTNEED), ENOMEM);
    errno = 0;
    void *m = mmap(p, 4096, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check("mmap MAP_FIXED", m == MAP_FAILED ? -1 : 0, ENOMEM);
    errno = 0;
    m = mmap(p, 4096, PROT_READ, MAP_FIXED_NOREPLACE | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check("mmap MAP_FIXED_NOREPLACE", m == MAP_FAILED ? -1 : 0, EEXIST);
    errno = 0;
    m = mremap(p, 4096, 8192, MREMAP_MAYMOVE);
    check("mremap", m == MAP_FAILED ? -1 : 0, EFAULT);
    /* A range that merely overlaps the runtime is refused as a whole. */
    errno = 0; check("munmap overlapping", munmap((void *)(start - 4096), 8192), EINVAL);
    /* The program's own memory is unaffected. */
    void *own = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("own mapping: %s\n", own != MAP_FAILED && munmap(own, 4096) == 0 ? "ok" : "FAIL");
    return 0;
}
