/* Calls that fail both natively and under picos, but with another errno:
 * picos checks its own conditions before the kernel's argument checks. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
static void show(const char *what, long r) { printf("%-58s %ld %s\n", what, r, r < 0 ? strerror(errno) : ""); }
int main(void) {
    char *p = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("mprotect(unaligned address, (size_t)-4096, READ) [EINVAL]", syscall(SYS_mprotect, p + 1, (size_t)-4096, PROT_READ));
    show("madvise(p, (size_t)-1, MADV_DONTNEED) [EINVAL]", syscall(SYS_madvise, p, (size_t)-1, MADV_DONTNEED));
    show("mseal(p, -4096, 0) [EINVAL]", syscall(462, p, (size_t)-4096, 0));
    show("execve(\"nonexistent\", argv=(char**)1, NULL) [ENOENT]", syscall(SYS_execve, "nonexistent", (char **)1, 0));
    show("execve(\"/etc/passwd\", {\"x\", NULL}, envp=(char**)1) [EACCES]",
         syscall(SYS_execve, "/etc/passwd", (char *[]){"x", 0}, (char **)1));
    show("syscall number (1<<32)|39 (getpid: Linux uses the low 32 bits)", syscall((1L << 32) | SYS_getpid));
    show("syscall number (1<<63)|39", syscall((long)((1UL << 63) | SYS_getpid)));
    return 0;
}
