/* A program that dies of SIGSEGV three calls deep (built with -g -O0):
 * gdb's backtrace of it must read the same natively and under picos. */
#include <stdio.h>

__attribute__((noinline)) int crashme(int *q) { return *q + 1; }
__attribute__((noinline)) int middle(int *q) { return crashme(q) * 2; }

int main(void)
{
    printf("about to crash\n");
    fflush(stdout);
    return middle(0);
}
