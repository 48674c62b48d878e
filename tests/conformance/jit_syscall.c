/* Raw `syscall` instructions in code generated at run time must be caught
 * (under picos, they have to be routed to the library OS, not the host). */
#include "conformance.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

typedef long (*fn0)(void);
typedef long (*fn3)(long, long, long);

#define PAGE 4096

/* mov $NR, %eax ; syscall ; ret */
static size_t emit_syscall_stub(unsigned char *p, int nr)
{
    size_t i = 0;
    p[i++] = 0xb8;
    p[i++] = (unsigned char)(nr & 0xff);
    p[i++] = (unsigned char)((nr >> 8) & 0xff);
    p[i++] = 0;
    p[i++] = 0;
    p[i++] = 0x0f;
    p[i++] = 0x05;
    p[i++] = 0xc3;
    return i;
}

static long raw_getpid_inline(void)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_getpid) : "rcx", "r11", "memory");
    return ret;
}

int main(void)
{
    conf_init();
    long pid = getpid();
    long tid = syscall(SYS_gettid);

    /* 1. RW page, fill, mprotect to RX, call. */
    unsigned char *code = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check("jit_mmap_rw", code != MAP_FAILED);
    size_t off_getpid = 0;
    size_t off_gettid = 64;
    size_t off_write = 128;
    emit_syscall_stub(code + off_getpid, SYS_getpid);
    emit_syscall_stub(code + off_gettid, SYS_gettid);
    emit_syscall_stub(code + off_write, SYS_write);
    check("jit_mprotect_rx", mprotect(code, PAGE, PROT_READ | PROT_EXEC) == 0);

    long jp = ((fn0)(void *)(code + off_getpid))();
    checkf("jit_getpid", jp == pid, "jit=%ld libc=%ld", jp, pid);
    long jt = ((fn0)(void *)(code + off_gettid))();
    checkf("jit_gettid", jt == tid, "jit=%ld libc=%ld", jt, tid);

    static const char msg[] = "jit_write: hello from generated code\n";
    fflush(stdout);
    long wr = ((fn3)(void *)(code + off_write))(1, (long)(uintptr_t)msg, (long)(sizeof msg - 1));
    check("jit_write_return", wr == (long)(sizeof msg - 1));
    long bad = ((fn3)(void *)(code + off_write))(9999, (long)(uintptr_t)msg, 1);
    check("jit_write_ebadf_raw", bad == -EBADF);

    /* 2. Rewrite code in place (W^X flip) and call again. */
    check("jit_mprotect_rw_again", mprotect(code, PAGE, PROT_READ | PROT_WRITE) == 0);
    emit_syscall_stub(code + off_getpid, SYS_gettid);
    mprotect(code, PAGE, PROT_READ | PROT_EXEC);
    long jt2 = ((fn0)(void *)(code + off_getpid))();
    check("jit_rewritten_code_runs_new_syscall", jt2 == tid);

    /* 3. RWX page with self-modification without mprotect. */
    unsigned char *rwx = mmap(NULL, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check("jit_mmap_rwx", rwx != MAP_FAILED);
    emit_syscall_stub(rwx, SYS_getpid);
    check("jit_rwx_getpid", ((fn0)(void *)rwx)() == pid);
    emit_syscall_stub(rwx, SYS_gettid);
    check("jit_rwx_smc_gettid", ((fn0)(void *)rwx)() == tid);
    emit_syscall_stub(rwx, SYS_getppid);
    check("jit_rwx_smc_getppid", ((fn0)(void *)rwx)() == getppid());

    /* 4. Unmap and map new code at the same address. */
    munmap(code, PAGE);
    unsigned char *again = mmap(code, PAGE, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    check("jit_remap_same_addr", again == code);
    emit_syscall_stub(again + off_getpid, SYS_getpid);
    /* something else at the old gettid slot: mov $42,%eax; ret */
    unsigned char ret42[] = { 0xb8, 42, 0, 0, 0, 0xc3 };
    memcpy(again + off_gettid, ret42, sizeof ret42);
    mprotect(again, PAGE, PROT_READ | PROT_EXEC);
    check("jit_remap_getpid", ((fn0)(void *)(again + off_getpid))() == pid);
    check("jit_remap_no_stale_code", ((fn0)(void *)(again + off_gettid))() == 42);

    /* 5. A syscall instruction straddling a page boundary. */
    unsigned char *two = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *st = two + PAGE - 6; /* b8 xx 00 00 00 0f | 05 c3 */
    emit_syscall_stub(st, SYS_getpid);
    mprotect(two, 2 * PAGE, PROT_READ | PROT_EXEC);
    check("jit_syscall_across_pages", ((fn0)(void *)st)() == pid);

    /* 6. Inline syscall instruction in the program text. */
    check("inline_asm_getpid", raw_getpid_inline() == pid);

    /* 7. Many calls in a loop from JIT code. */
    int all = 1;
    for (int i = 0; i < 1000; i++)
        all &= ((fn0)(void *)rwx)() == getppid();
    check("jit_loop_1000", all);

    munmap(again, PAGE);
    munmap(rwx, PAGE);
    munmap(two, 2 * PAGE);
    return conf_finish("jit_syscall");
}
