/* The runtime's text, found as a program that has taken the runtime over
 * would find it: picos shows a process its own maps without the runtime,
 * but (today) not a child's, which has it where its parent has it. Used by
 * tests/sandbox/escape.c and tests/oci/bypass.c. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Is the runtime mapped? With `gadget`, also sets it to a `syscall; ret`
 * in the runtime's executable text, or to NULL if there is none. */
static int runtime_text(unsigned char **gadget) {
    if (gadget)
        *gadget = NULL;
    pid_t child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    char p[64], line[512];
    snprintf(p, sizeof p, "/proc/%d/maps", (int)child);
    FILE *f = fopen(p, "r");
    int mapped = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (!strstr(line, "picos-rt") || sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
            continue;
        mapped = 1;
        if (!gadget || *gadget || perms[0] != 'r' || perms[2] != 'x')
            continue;
        for (unsigned char *q = (unsigned char *)lo; q + 3 <= (unsigned char *)hi; q++)
            if (q[0] == 0x0f && q[1] == 0x05 && q[2] == 0xc3) {
                *gadget = q;
                break;
            }
    }
    if (f)
        fclose(f);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return mapped;
}
