/* Calls that place or replace mappings (issue 9, item 2.7): shmat with
 * SHM_REMAP, mremap, madvise, remap_file_pages, mmap MAP_FIXED.
 *
 * Over memory the program does not own (under picos: the runtime's image
 * and its trampolines, found in /proc/self/maps) they fail cleanly and the
 * process lives on; natively there is no such memory, so that part prints
 * the same lines and says on stderr that it was skipped. Both runs check
 * the calls on mappings of the program's own, and that errors Linux finds
 * before it looks at the range come first (docs/FUZZING.md, bug 11).
 */
#include "conformance.h"

#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>

#ifndef SHM_REMAP
#define SHM_REMAP 040000
#endif
#ifndef SHM_EXEC
#define SHM_EXEC 0100000
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* First mapping whose line contains `needle` and `perms` (NULL: none). For
 * an empty needle: an anonymous mapping (no path) with those permissions. */
static char *find_mapping(const char *needle, const char *perms)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    char *found = NULL;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        char p[8];
        int off = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s%n", &s, &e, p, &off) < 3)
            continue;
        const char *path = line + off;
        while (*path == ' ')
            path++;
        int anon = *path == '\n' || *path == 0;
        if (strcmp(p, perms) == 0 && (*needle ? strstr(path, needle) != NULL : anon))
            found = (char *)s;
    }
    if (f)
        fclose(f);
    return found;
}

static long raw_getppid(void)
{
    long r;
    __asm__ volatile("mov $110, %%eax\n\tsyscall" : "=a"(r) : : "rcx", "r11", "memory");
    return r;
}

/* The calls over `target`, which is not the program's: each must fail with
 * the errno given, and the process must go on making system calls. */
static void over_foreign(const char *what, char *target, int id)
{
    char name[96];
    long r;
    int e;
    if (!target) {
        fprintf(stderr, "%s: skipped (no such mapping: not under picos)\n", what);
    }
#define FOREIGN(label, call, want)                                             \
    do {                                                                       \
        snprintf(name, sizeof name, "%s_%s", what, label);                     \
        if (target) {                                                          \
            errno = 0;                                                         \
            r = (long)(call);                                                  \
            e = errno;                                                         \
            check_errno(name, r, e, want);                                     \
        } else {                                                               \
            printf("%s: ok (%s)\n", name, errno_name(want));                   \
        }                                                                      \
    } while (0)
    FOREIGN("shmat_remap", shmat(id, target, SHM_REMAP | SHM_EXEC) == (void *)-1 ? -1 : 0, EINVAL);
    FOREIGN("shmat_remap_rnd", shmat(id, target + 1, SHM_REMAP | SHM_RND) == (void *)-1 ? -1 : 0, EINVAL);
    FOREIGN("shmat_no_remap", shmat(id, target, 0) == (void *)-1 ? -1 : 0, EINVAL);
    FOREIGN("mremap", mremap(target, 4096, 8192, MREMAP_MAYMOVE) == MAP_FAILED ? -1 : 0, EFAULT);
    FOREIGN("madvise_dontneed", madvise(target, 4096, MADV_DONTNEED), ENOMEM);
    FOREIGN("remap_file_pages", syscall(SYS_remap_file_pages, target, 4096, 0, 0, 0), EINVAL);
    FOREIGN("mmap_fixed",
            mmap(target, 4096, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0,
            ENOMEM);
    FOREIGN("mmap_noreplace",
            mmap(target, 4096, PROT_READ, MAP_FIXED_NOREPLACE | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1
                                                                                                           : 0,
            EEXIST);
    /* Linux's own checks first, over foreign memory as over any. */
    FOREIGN("mprotect_unaligned", syscall(SYS_mprotect, target + 1, (size_t)-4096, PROT_READ), EINVAL);
    FOREIGN("madvise_len_wraps", madvise(target, (size_t)-1, MADV_DONTNEED), EINVAL);
    FOREIGN("madvise_bad_advice", madvise(target, 4096, 9999), EINVAL);
    FOREIGN("mseal_len_wraps", syscall(462, target, (size_t)-4096, 0), EINVAL);
    FOREIGN("mseal_flags", syscall(462, target, 4096, 1), EINVAL);
    FOREIGN("mmap_fixed_bad_fd",
            mmap(target, 4096, PROT_READ, MAP_FIXED | MAP_PRIVATE, 12345, 0) == MAP_FAILED ? -1 : 0, EBADF);
    FOREIGN("mmap_fixed_len_0",
            mmap(target, 0, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0,
            EINVAL);
    FOREIGN("mremap_unaligned", syscall(SYS_mremap, target + 1, 4096, 8192, MREMAP_MAYMOVE), EINVAL);
    /* An empty range is no range: 0, as natively. */
    snprintf(name, sizeof name, "%s_empty_ranges", what);
    check(name, !target || (mprotect(target, 0, PROT_READ) == 0 && madvise(target, 0, MADV_DONTNEED) == 0));
    snprintf(name, sizeof name, "%s_alive", what);
    long want = getppid();
    int ok = 1;
    for (int i = 0; i < 1000; i++)
        ok &= raw_getppid() == want;
    check(name, ok);
#undef FOREIGN
}

int main(void)
{
    conf_init();
    int id = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600);
    if (id < 0) {
        perror("shmget");
        return 2;
    }
    /* Patch a site first, so trampolines exist under picos. */
    long want = getppid(), bad = 0;
    for (int i = 0; i < 1000; i++)
        bad += raw_getppid() != want;
    check("raw_getppid", bad == 0);

    /* A mapping of the program's own: SHM_REMAP replaces it, and the
     * segment is shared memory (seen through a second attach). */
    char *own = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *a = shmat(id, own, SHM_REMAP);
    check("shmat_remap_own", a == own);
    char *b = shmat(id, NULL, 0);
    check("shmat_second_attach", b != (void *)-1 && b != own);
    if (a == own && b != (void *)-1) {
        a[100] = 42;
        check("shm_shared", b[100] == 42);
    }
    errno = 0;
    long r = shmat(id, own, 0) == (void *)-1 ? -1 : 0;
    int e = errno;
    check_errno("shmat_over_mapped_no_remap", r, e, EINVAL);
    errno = 0;
    r = shmat(id, NULL, SHM_REMAP) == (void *)-1 ? -1 : 0;
    e = errno;
    check_errno("shmat_remap_null", r, e, EINVAL);
    errno = 0;
    r = shmat(id, own + 1, SHM_REMAP) == (void *)-1 ? -1 : 0;
    e = errno;
    check_errno("shmat_remap_unaligned", r, e, EINVAL);
    errno = 0;
    r = shmat(-1, own, SHM_REMAP) == (void *)-1 ? -1 : 0;
    e = errno;
    check_errno("shmat_remap_bad_id", r, e, EINVAL);
    check("shmdt", shmdt(a) == 0 && shmdt(b) == 0);
    char *own2 = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check("mremap_own", mremap(own2, 8192, 16384, MREMAP_MAYMOVE) != MAP_FAILED);

    /* Memory that is not the program's. */
    over_foreign("runtime_image", find_mapping("picos-rt", "r-xp"), id);
    over_foreign("trampolines", find_mapping("", "r-xp"), id);

    shmctl(id, IPC_RMID, NULL);
    return conf_finish("map_replace");
}
