/* One system call made around the runtime, as a program that has taken the
 * runtime over would make it: through a `syscall; ret` gadget in the
 * runtime's own text (as tests/sandbox/escape.c's "bypass" way). The
 * runtime never sees the call; only the kernel's filters stand. Without a
 * runtime (natively, or under runc) the call is made directly.
 *
 *   bypass NR [ARG...]
 *
 * Each ARG is a number, or `buf` for a pointer to a 4 KiB buffer. Prints
 * the kernel's return value (-errno on failure) on stdout, and on stderr
 * the way it went: "bypass" or "direct". Exits 2 if the runtime is mapped
 * but no gadget was found. Built with -mno-red-zone: the `call` pushes
 * below the stack pointer.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sandbox/runtime_text.h"

static char buf[4096];

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bypass NR [ARG...]\n");
        return 1;
    }
    long a[7] = {0};
    for (int i = 1; i < argc && i < 8; i++)
        a[i - 1] = strcmp(argv[i], "buf") == 0 ? (long)buf : strtol(argv[i], NULL, 0);
    unsigned char *gadget;
    int mapped = runtime_text(&gadget);
    if (mapped && !gadget) {
        fprintf(stderr, "bypass: the runtime is mapped but has no `syscall; ret`\n");
        return 2;
    }
    long ret;
    register long r10 __asm__("r10") = a[4];
    register long r8 __asm__("r8") = a[5];
    register long r9 __asm__("r9") = a[6];
    if (gadget)
        __asm__ volatile("call *%[g]"
                         : "=a"(ret)
                         : [g] "r"(gadget), "a"(a[0]), "D"(a[1]), "S"(a[2]), "d"(a[3]), "r"(r10),
                           "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
    else
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"(a[0]), "D"(a[1]), "S"(a[2]), "d"(a[3]), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
    printf("%ld\n", ret);
    fprintf(stderr, "%s\n", gadget ? "bypass" : "direct");
    return 0;
}
