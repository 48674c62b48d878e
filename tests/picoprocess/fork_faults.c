/* Page faults per fork + _exit + wait, in the parent and in the child
 * (getrusage minor faults, after 50 forks to warm up): prints
 * "parent P child C" per fork, with one decimal. Every page either writes
 * after a fork is copied (or at least faulted), so the runtime's own
 * writes around fork show here; crates/picos/tests/picoprocess.rs compares
 * the counts natively and under picos. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static long faults(int who)
{
    struct rusage r;
    getrusage(who, &r);
    return r.ru_minflt;
}

static void forks(int n)
{
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p)
            _exit(1);
    }
}

int main(void)
{
    const int n = 500;
    forks(50);
    long self0 = faults(RUSAGE_SELF), kids0 = faults(RUSAGE_CHILDREN);
    forks(n);
    long self1 = faults(RUSAGE_SELF), kids1 = faults(RUSAGE_CHILDREN);
    printf("parent %.1f child %.1f\n", (double)(self1 - self0) / n, (double)(kids1 - kids0) / n);
    return 0;
}
