/* CHECK(cond): the test programs' assertion (tests/c/libsets_*.c). */
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)
