/* argc/argv/envp/environ conformance.
 * The harness runs with a cleared environment containing
 * PATH=/usr/bin:/bin, PICOS_TEST_VAR=hello and LC_ALL=C. */
#include "conformance.h"

extern char **environ;

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv, char **envp)
{
    conf_init();

    show("argc", "%d", argc);
    show("argv0_basename", "%s", argv[0] ? base_name(argv[0]) : "(null)");
    for (int i = 1; i < argc; i++)
        printf("argv[%d]: [%s] len=%zu\n", i, argv[i], strlen(argv[i]));
    check("argv_null_terminated", argv[argc] == NULL);
    /* Linux lays argv strings out contiguously and in order, followed by
     * the environment strings (setproctitle()-style code relies on it). */
    int contiguous = 1;
    for (int i = 0; i + 1 < argc; i++)
        contiguous &= argv[i + 1] == argv[i] + strlen(argv[i]) + 1;
    check("argv_strings_contiguous", contiguous);
    check("environ_strings_follow_argv",
          envp[0] == NULL || envp[0] == argv[argc - 1] + strlen(argv[argc - 1]) + 1);

    /* Strings in argv must be writable (programs like to modify them). */
    int writable = 1;
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]);
        if (n) {
            char c = argv[i][0];
            argv[i][0] = 'X';
            writable &= argv[i][0] == 'X';
            argv[i][0] = c;
        }
    }
    check("argv_writable", writable);

    const char *v = getenv("PICOS_TEST_VAR");
    show("getenv_PICOS_TEST_VAR", "%s", v ? v : "(unset)");
    check("getenv_test_var", v && strcmp(v, "hello") == 0);
    v = getenv("PATH");
    show("getenv_PATH", "%s", v ? v : "(unset)");
    v = getenv("LC_ALL");
    show("getenv_LC_ALL", "%s", v ? v : "(unset)");
    check("getenv_missing", getenv("PICOS_DEFINITELY_NOT_SET") == NULL);

    check("envp_is_environ", envp == environ);

    int found = 0, count = 0;
    for (char **e = environ; *e; e++) {
        count++;
        if (strcmp(*e, "PICOS_TEST_VAR=hello") == 0)
            found++;
    }
    check("environ_finds_test_var", found == 1);
    show("environ_count", "%d", count);

    /* Names of all env vars, sorted (the harness controls the env). */
    char **names = calloc((size_t)count + 1, sizeof *names);
    for (int i = 0; i < count; i++) {
        names[i] = strdup(environ[i]);
        char *eq = strchr(names[i], '=');
        if (eq)
            *eq = 0;
    }
    qsort(names, (size_t)count, sizeof *names, cmp_str);
    printf("environ_names:");
    for (int i = 0; i < count; i++)
        printf(" %s", names[i]);
    printf("\n");

    /* envp on the initial stack: argv[argc+1] == envp[0]. */
    check("envp_follows_argv", &argv[argc + 1] == envp);

    /* setenv/unsetenv round trip. */
    check("setenv", setenv("PICOS_NEW", "v1", 1) == 0 &&
                        strcmp(getenv("PICOS_NEW"), "v1") == 0);
    check("setenv_nooverwrite", setenv("PICOS_NEW", "v2", 0) == 0 &&
                                    strcmp(getenv("PICOS_NEW"), "v1") == 0);
    check("unsetenv", unsetenv("PICOS_NEW") == 0 && getenv("PICOS_NEW") == NULL);
    check("putenv", putenv("PICOS_PUT=x") == 0 &&
                        strcmp(getenv("PICOS_PUT"), "x") == 0);

    /* Initial stack is 16-byte aligned at main per the ABI of the compiler:
     * check a local's alignment honours __attribute__((aligned(16))). */
    char __attribute__((aligned(16))) aligned_local[16];
    check("stack_alignment", ((unsigned long)aligned_local & 15) == 0);

    return conf_finish("args_env");
}
