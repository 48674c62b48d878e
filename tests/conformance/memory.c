/* Virtual memory conformance: mmap/mprotect/munmap/mremap/brk/madvise. */
#include "conformance.h"

#include <cpuid.h>

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE 4096UL

static sigjmp_buf jb;
static volatile int fault_sig, fault_code;
static volatile void *fault_addr;

static void handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    fault_sig = sig;
    fault_code = si->si_code;
    fault_addr = si->si_addr;
    siglongjmp(jb, 1);
}

/* Returns 1 if writing *p faults (SIGSEGV or SIGBUS). */
static int write_faults(volatile char *p)
{
    fault_sig = 0;
    if (sigsetjmp(jb, 1) == 0) {
        *p = 1;
        return 0;
    }
    return 1;
}

static int read_faults(volatile char *p)
{
    fault_sig = 0;
    if (sigsetjmp(jb, 1) == 0) {
        (void)*p;
        return 0;
    }
    return 1;
}

static int all_eq(const char *p, size_t n, char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static char tmpdir[] = "/tmp/picos-mem-XXXXXX";

int main(void)
{
    conf_init();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    int r, e;

    /* anon RW */
    char *m = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check("mmap_anon", m != MAP_FAILED);
    check("mmap_page_aligned", ((uintptr_t)m & (PAGE - 1)) == 0);
    check("mmap_anon_zeroed", all_eq(m, 4 * PAGE, 0));
    for (size_t i = 0; i < 4 * PAGE; i++)
        m[i] = (char)(i * 7);
    int ok = 1;
    for (size_t i = 0; i < 4 * PAGE; i++)
        ok &= m[i] == (char)(i * 7);
    check("mmap_write_read", ok);

    /* mprotect RO */
    check("mprotect_ro", mprotect(m, PAGE, PROT_READ) == 0);
    check("mprotect_ro_read_ok", !read_faults(m + 10) && m[10] == (char)70);
    check("mprotect_ro_write_faults", write_faults(m + 10));
    check("mprotect_ro_sigsegv", fault_sig == SIGSEGV && fault_code == SEGV_ACCERR);
    check("mprotect_ro_fault_addr", fault_addr == m + 10);
    check("mprotect_ro_other_page_writable", !write_faults(m + PAGE));
    check("mprotect_rw_again", mprotect(m, PAGE, PROT_READ | PROT_WRITE) == 0 &&
                                   !write_faults(m + 10));
    check("mprotect_none_read_faults", mprotect(m + PAGE, PAGE, PROT_NONE) == 0 &&
                                           read_faults(m + PAGE + 5));
    mprotect(m + PAGE, PAGE, PROT_READ | PROT_WRITE);
    check("mprotect_preserves_contents", m[PAGE + 5] == (char)((PAGE + 5) * 7));
    r = (int)syscall(SYS_mprotect, m + 1, PAGE, PROT_READ); e = errno; /* musl rounds down */
    check_errno("mprotect_unaligned", r, e, EINVAL);

    /* munmap then access */
    check("munmap_middle", munmap(m + 2 * PAGE, PAGE) == 0);
    check("munmap_access_faults", read_faults(m + 2 * PAGE));
    check("munmap_sigsegv_maperr", fault_sig == SIGSEGV && fault_code == SEGV_MAPERR);
    check("munmap_neighbours_intact", !read_faults(m + PAGE) && !read_faults(m + 3 * PAGE) &&
                                          m[3 * PAGE + 1] == (char)((3 * PAGE + 1) * 7));
    munmap(m, 4 * PAGE);
    check("munmap_all_faults", read_faults(m) && read_faults(m + 3 * PAGE));
    r = munmap(m + 1, PAGE); e = errno;
    check_errno("munmap_unaligned", r, e, EINVAL);
    void *bad = mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); e = errno;
    check_errno("mmap_zero_len", bad == MAP_FAILED ? -1 : 0, e, EINVAL);
    bad = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, 9999, 0); e = errno;
    check_errno("mmap_bad_fd", bad == MAP_FAILED ? -1 : 0, e, EBADF);

    /* mremap grow (may move), shrink */
    char *g = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(g, 'g', 2 * PAGE);
    /* put a guard right after it so growth in place is impossible */
    char *guard = mmap(g + 2 * PAGE, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    char *g2 = mremap(g, 2 * PAGE, 8 * PAGE, MREMAP_MAYMOVE);
    check("mremap_grow", g2 != MAP_FAILED);
    check("mremap_grow_preserves", all_eq(g2, 2 * PAGE, 'g'));
    check("mremap_grow_new_zero", all_eq(g2 + 2 * PAGE, 6 * PAGE, 0));
    check("mremap_grow_writable", !write_faults(g2 + 8 * PAGE - 1));
    if (guard != MAP_FAILED)
        check("mremap_moved_old_gone", g2 != g && read_faults(g));
    else
        check("mremap_moved_old_gone", 1);
    char *g3 = mremap(g2, 8 * PAGE, PAGE, 0);
    check("mremap_shrink_in_place", g3 == g2 && g3[0] == 'g');
    check("mremap_shrink_tail_gone", read_faults(g2 + 4 * PAGE));
    munmap(g3, PAGE);
    if (guard != MAP_FAILED)
        munmap(guard, PAGE);

    /* MAP_FIXED over own mapping */
    char *f = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(f, 'f', 4 * PAGE);
    char *f2 = mmap(f + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    check("map_fixed_same_addr", f2 == f + PAGE);
    check("map_fixed_replaced_zero", all_eq(f + PAGE, PAGE, 0));
    check("map_fixed_neighbours", all_eq(f, PAGE, 'f') && all_eq(f + 2 * PAGE, 2 * PAGE, 'f'));
    void *nr = mmap(f, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    e = errno;
    check_errno("map_fixed_noreplace_eexist", nr == MAP_FAILED ? -1 : 0, e, EEXIST);
    munmap(f, 4 * PAGE);

    /* PROT_NONE reservation, then commit part of it */
    char *res = mmap(NULL, 64 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    check("reserve_none_faults", read_faults(res + 10 * PAGE));
    check("reserve_commit", mprotect(res + 8 * PAGE, 4 * PAGE, PROT_READ | PROT_WRITE) == 0 &&
                                !write_faults(res + 9 * PAGE) && read_faults(res + 12 * PAGE));
    munmap(res, 64 * PAGE);

    /* brk growth and shrink (raw syscall: musl's sbrk refuses non-zero) */
    {
        uintptr_t cur = (uintptr_t)syscall(SYS_brk, 0);
        uintptr_t want = cur + 16 * PAGE;
        uintptr_t got = (uintptr_t)syscall(SYS_brk, want);
        int grew = got == want;
        int wrote = 0;
        if (grew) {
            char *p = (char *)((cur + PAGE - 1) & ~(PAGE - 1));
            wrote = !write_faults(p) && !write_faults((char *)want - 1) &&
                    all_eq(p + 1, PAGE - 1, 0);
        }
        uintptr_t shrunk = (uintptr_t)syscall(SYS_brk, cur);
        uintptr_t now = (uintptr_t)syscall(SYS_brk, 0);
        check("brk_query_nonzero", cur != 0);
        check("brk_grow", grew);
        check("brk_grown_memory_usable", wrote);
        check("brk_shrink", shrunk == cur && now == cur);
        uintptr_t pg = (cur + PAGE - 1) & ~(PAGE - 1);
        if (pg + PAGE <= want)
            check("brk_shrunk_memory_gone", read_faults((char *)pg + PAGE));
        else
            check("brk_shrunk_memory_gone", 1);
        uintptr_t low = (uintptr_t)syscall(SYS_brk, 4096);
        check("brk_below_start_refused", low == cur);
#ifdef __GLIBC__
        void *s0 = sbrk(0);
        void *s1 = sbrk(8 * PAGE);
        void *s2 = sbrk(0);
        sbrk(-(intptr_t)(8 * PAGE));
        check("sbrk", s1 == s0 && (char *)s2 == (char *)s0 + 8 * PAGE && sbrk(0) == s0);
#else
        check("sbrk", sbrk(0) == (void *)syscall(SYS_brk, 0));
#endif
    }

    /* madvise(DONTNEED) zeroes private anonymous memory */
    char *d = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(d, 'd', 4 * PAGE);
    check("madvise_dontneed", madvise(d + PAGE, 2 * PAGE, MADV_DONTNEED) == 0);
    check("madvise_dontneed_zeroes", all_eq(d + PAGE, 2 * PAGE, 0));
    check("madvise_dontneed_others_kept", all_eq(d, PAGE, 'd') && all_eq(d + 3 * PAGE, PAGE, 'd'));
    munmap(d, 4 * PAGE);

    /* file mappings */
    if (!mkdtemp(tmpdir)) {
        check("mkdtemp", 0);
        return conf_finish("memory");
    }
    char path[64];
    snprintf(path, sizeof path, "%s/map", tmpdir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check("ftruncate_2pages", ftruncate(fd, 2 * PAGE) == 0);
    char *fm = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check("mmap_file_shared", fm != MAP_FAILED);
    check("mmap_file_zero", all_eq(fm, 2 * PAGE, 0));
    memcpy(fm + 100, "shared-write", 12);
    memcpy(fm + PAGE, "page2", 5);
    check("msync", msync(fm, 2 * PAGE, MS_SYNC) == 0);
    char buf[32] = {0};
    lseek(fd, 100, SEEK_SET);
    check("mmap_shared_visible_via_read", read(fd, buf, 12) == 12 && !memcmp(buf, "shared-write", 12));
    check("mmap_shared_page2_via_pread", pread(fd, buf, 5, PAGE) == 5 && !memcmp(buf, "page2", 5));
    pwrite(fd, "from-write", 10, 200);
    check("write_visible_via_mapping", !memcmp(fm + 200, "from-write", 10));

    /* MAP_PRIVATE of the file: private copy */
    char *pm = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    check("mmap_file_private_sees_data", !memcmp(pm + 100, "shared-write", 12));
    memcpy(pm + 100, "PRIVATE", 7);
    pread(fd, buf, 7, 100);
    check("mmap_private_not_written_back", !memcmp(buf, "shared-w", 7));
    munmap(pm, PAGE);

    /* mapping with an offset */
    char *om = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, PAGE);
    check("mmap_file_offset", om != MAP_FAILED && !memcmp(om, "page2", 5));
    munmap(om, PAGE);
    bad = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 100); e = errno;
    check_errno("mmap_unaligned_offset", bad == MAP_FAILED ? -1 : 0, e, EINVAL);

    /* access beyond EOF -> SIGBUS */
    char *big = mmap(NULL, 4 * PAGE, PROT_READ, MAP_SHARED, fd, 0);
    check("mmap_beyond_eof_ok_in_file", !read_faults(big + PAGE));
    check("mmap_beyond_eof_sigbus", read_faults(big + 3 * PAGE) && fault_sig == SIGBUS);
    check("sigbus_code_adrerr", fault_code == BUS_ADRERR);
    munmap(big, 4 * PAGE);
    munmap(fm, 2 * PAGE);

    /* read-only fd can't be mapped shared-writable */
    int rofd = open(path, O_RDONLY);
    bad = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, rofd, 0); e = errno;
    check_errno("mmap_shared_rw_on_rdonly_fd", bad == MAP_FAILED ? -1 : 0, e, EACCES);
    close(rofd);
    close(fd);
    unlink(path);
    rmdir(tmpdir);

    /* shared anonymous memory across fork; private memory is copy-on-write */
    {
        int *sh = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        int *pr = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        *sh = 1;
        *pr = 1;
        pid_t pid = fork();
        if (pid == 0) {
            *sh = 2;
            *pr = 2;
            _exit(0);
        }
        waitpid(pid, NULL, 0);
        check("map_shared_anon_across_fork", *sh == 2);
        check("map_private_cow_across_fork", *pr == 1);
        munmap(sh, PAGE);
        munmap(pr, PAGE);
    }

    /* large malloc/free loops */
    {
        int good = 1;
        unsigned long sum = 0;
        for (int round = 0; round < 20; round++) {
            size_t sz = (size_t)(1u << (round % 24)) + (size_t)round;
            unsigned char *p = malloc(sz);
            if (!p) {
                good = 0;
                break;
            }
            memset(p, round, sz);
            good &= p[0] == (unsigned char)round && p[sz - 1] == (unsigned char)round;
            sum += p[sz / 2];
            free(p);
        }
        void *ptrs[1000];
        for (int round = 0; round < 50; round++) {
            for (int i = 0; i < 1000; i++) {
                ptrs[i] = malloc((size_t)(i % 97) * 16 + 1);
                if (!ptrs[i])
                    good = 0;
                else
                    *(char *)ptrs[i] = (char)i;
            }
            for (int i = 0; i < 1000; i++) {
                if (ptrs[i] && *(char *)ptrs[i] != (char)i)
                    good = 0;
                free(ptrs[i]);
            }
        }
        for (int i = 0; i < 16; i++) {
            size_t sz = 64u << 20; /* 64 MiB, mmap-backed */
            char *p = malloc(sz);
            if (!p) {
                good = 0;
                break;
            }
            p[0] = 1;
            p[sz - 1] = 2;
            good &= p[0] + p[sz - 1] == 3;
            free(p);
        }
        char *re = NULL;
        for (size_t sz = 16; sz <= (8u << 20); sz *= 2) {
            re = realloc(re, sz);
            re[sz - 1] = 'r';
            good &= re[sz / 2 - 1] == 'r' || sz == 16;
        }
        free(re);
        check("malloc_free_loops", good);
        show("malloc_checksum", "%lu", sum);
    }

    /* Protection keys: pkey_alloc puts the new key's rights in the calling
     * thread's PKRU (under picos the first call comes by the trap path,
     * whose return must not load the old PKRU back), and a child forked
     * then cannot read a page under that key. Where the CPU or the kernel
     * has no keys, the same is printed natively and under picos. */
    {
        /* Every key's access allowed first (so that the new key's rights
         * show), then a `syscall` instruction of its own, made once: under
         * picos a site's first call takes the trap path. */
        unsigned int a, b, c7, d;
        int ospke = __get_cpuid_count(7, 0, &a, &b, &c7, &d) && (c7 & (1u << 4));
        long key = -ENOSYS;
        if (ospke) {
            __asm__ volatile("wrpkru" : : "a"(0), "c"(0), "d"(0));
            __asm__ volatile("syscall"
                             : "=a"(key)
                             : "a"((long)SYS_pkey_alloc), "D"(0L), "S"(1L /* PKEY_DISABLE_ACCESS */)
                             : "rcx", "r11", "memory");
        }
        if (key < 0) {
            show("pkey", "none (%s)", errno_name((int)-key));
        } else {
            unsigned int pkru;
            __asm__ volatile("rdpkru" : "=a"(pkru) : "c"(0) : "rdx");
            check("pkey_alloc_sets_pkru", ((pkru >> (2 * key)) & 3) == 1);
            char *pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            pg[0] = 7;
            int r = (int)syscall(SYS_pkey_mprotect, pg, 4096, PROT_READ | PROT_WRITE, key);
            pid_t c = fork();
            if (c == 0) {
                signal(SIGSEGV, SIG_DFL);
                volatile char v = pg[0];
                (void)v;
                _exit(0);
            }
            int st = wait_status(c);
            checkf("pkey_denies_access_in_child",
                  r == 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "r %d errno %d status %#x", r, errno, st);
            munmap(pg, 4096);
            syscall(SYS_pkey_free, key);
        }
    }

    return conf_finish("memory");
}
