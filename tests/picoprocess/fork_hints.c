/* Sites only fork children run (here getuid, and glibc's set_robust_list
 * in the child of fork) are patched in the parent after two children
 * trapped there (patch::before_fork): the later children then make no
 * trapped call (picos --stats-json: their trap_path is 0). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    for (int i = 0; i < 6; i++) {
        pid_t p = fork();
        if (p < 0) { perror("fork"); return 1; }
        if (p == 0) _exit(getuid() == (uid_t)-1);
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("child %d failed\n", i);
            return 1;
        }
    }
    printf("ok\n");
    return 0;
}
