/* Patched pages of a library's text are mappings of their own.
 *
 * The runtime writes a jump over each patched `syscall`; the page written
 * becomes private memory. If it stayed part of the library's whole text
 * mapping, that whole mapping would count as having anonymous pages, and
 * every fork would copy all its page-table entries (+22 us per fork for
 * one page of libc, measured natively). So every executable file mapping
 * with private pages must consist of private pages only.
 *
 * Prints how many executable file mappings have private pages, and how
 * many of those also hold pages of the file (should be none). The
 * runtime's own image is left out (it keeps one private page per segment
 * on purpose: mm::runtime::keep_image_mapped_across_fork).
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    /* Make a few calls trap often enough to be patched. */
    for (int i = 0; i < 64; i++) {
        getppid();
        getuid();
        if (fork() == 0) _exit(0);
        wait(NULL);
    }
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) { perror("smaps"); return 1; }
    char line[512], name[512] = "";
    int exec_file = 0, size = 0, with_private = 0, mixed = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int anon;
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && strchr(line, '-') < strchr(line, ' ')) {
            /* The path, if any, is the sixth field. */
            name[0] = 0;
            sscanf(line, "%*s %*s %*s %*s %*s %511s", name);
            exec_file = perms[2] == 'x' && name[0] == '/' && !strstr(name, "picos-rt");
            size = (int)((hi - lo) >> 10);
        } else if (exec_file && sscanf(line, "Anonymous: %d kB", &anon) == 1 && anon > 0) {
            with_private++;
            if (anon != size) {
                mixed++;
                fprintf(stderr, "%s: %d of %d kB private\n", name, anon, size);
            }
        }
    }
    fclose(f);
    printf("text mappings with private pages: %s; with file pages too: %d\n",
           with_private ? "some" : "none", mixed);
    return 0;
}
