/* What execve leaves of a process, and what it resets: a chain of three
 * execs of this program, each checking the state the one before left.
 * Under picos an execve of a single-threaded program replaces the program
 * in place (the runtime stays: kernel::exec::in_place), so each reset the
 * kernel's execve makes must be made by the runtime, and nothing of the
 * old program may stay behind.
 *
 *   (no argument)  set the state up, then exec "check 1"
 *   check N        check the state, change it again, exec "check N+1"
 *                  (until 3)
 */
#include "conformance.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>

extern char **environ;

/* Where the program maps a page it marks: gone after execve. */
#define MARK_ADDR ((void *)0x3a5a0000000UL)
#define KEEP_FD 40
#define CLOEXEC_FD 41

/* glibc's rseq registration (2.35+): 0 when none (musl has none). */
extern const unsigned int __rseq_size __attribute__((weak));

static void handler(int sig) { (void)sig; }

static unsigned short fpu_cw(void)
{
    unsigned short cw;
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    return cw;
}

static unsigned int sse_csr(void)
{
    unsigned int csr;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    return csr;
}

/* Changes what execve must reset, and what it must keep. */
static void set_up(int round)
{
    struct sigaction sa = { .sa_handler = handler };
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGUSR2, SIG_IGN);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, NULL);
    if (round == 0)
        raise(SIGTERM); /* pending, blocked: stays pending */
    static char alt[64 << 10];
    stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt };
    sigaltstack(&ss, NULL);
    void *p = mmap(MARK_ADDR, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MARK_ADDR)
        strcpy(p, "old program");
    int fd = open("/dev/null", O_RDONLY);
    dup2(fd, KEEP_FD);
    dup3(fd, CLOEXEC_FD, O_CLOEXEC);
    close(fd);
    struct rlimit rl = { 512 + round, 4096 };
    setrlimit(RLIMIT_NOFILE, &rl);
    umask(027 + round);
    struct itimerval it = { { 1000, 0 }, { 1000, 0 } };
    setitimer(ITIMER_REAL, &it, NULL);
    signal(SIGALRM, SIG_IGN);
    prctl(PR_SET_NAME, "renamed", 0, 0, 0);
    /* FPU control words away from their defaults. */
    unsigned short cw = 0x27f;
    __asm__ volatile("fldcw %0" ::"m"(cw));
    unsigned int csr = 0x9fc0;
    __asm__ volatile("ldmxcsr %0" ::"m"(csr));
    sbrk(1 << 20);
    if (round == 2) {
        /* A sealed mapping (Linux 6.10+; ENOSYS before: nothing to see)
         * cannot be unmapped: only the kernel's execve drops it. */
        void *q = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q != MAP_FAILED)
            syscall(462 /* mseal */, q, 4096, 0);
    }
}

static void checks(int round, const char *argv0)
{
    char name[64];
    struct sigaction sa;
    sigaction(SIGUSR1, NULL, &sa);
    check("handler_reset_to_dfl", sa.sa_handler == SIG_DFL);
    sigaction(SIGUSR2, NULL, &sa);
    check("ignored_stays_ignored", sa.sa_handler == SIG_IGN);
    sigset_t cur, pend;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    check("mask_kept", sigismember(&cur, SIGTERM));
    sigpending(&pend);
    check("pending_kept", sigismember(&pend, SIGTERM));
    stack_t ss;
    sigaltstack(NULL, &ss);
    check("altstack_disabled", ss.ss_flags == SS_DISABLE);
    unsigned char vec;
    int r = mincore(MARK_ADDR, 4096, &vec);
    check_errno("old_mapping_gone", r, errno, ENOMEM);
    check("plain_fd_kept", fcntl(KEEP_FD, F_GETFD) == 0);
    r = fcntl(CLOEXEC_FD, F_GETFD);
    check_errno("cloexec_fd_closed", r, errno, EBADF);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    check("rlimit_kept", rl.rlim_cur == (rlim_t)(512 + round - 1));
    mode_t m = umask(0);
    check("umask_kept", m == (mode_t)(027 + round - 1));
    struct itimerval it;
    getitimer(ITIMER_REAL, &it);
    check("itimer_kept", it.it_value.tv_sec > 900);
    prctl(PR_GET_NAME, name, 0, 0, 0);
    const char *base = strrchr(argv0, '/') ? strrchr(argv0, '/') + 1 : argv0;
    check("comm_is_the_new_programs", !strncmp(name, base, 15));
    check("fpu_control_word_reset", fpu_cw() == 0x37f);
    check("mxcsr_reset", sse_csr() == 0x1f80);
    if (&__rseq_size != NULL)
        check("rseq_registered_again", __rseq_size != 0);
    else
        check("rseq_registered_again", 1);
    /* /proc shows the new program. */
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    char want[256];
    int wn = snprintf(want, sizeof want, "%s%ccheck%c%d", argv0, 0, 0, round) + 1;
    check("cmdline_is_the_new_argv", n == wn && !memcmp(buf, want, wn));
    fd = open("/proc/self/environ", O_RDONLY);
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    check("environ_is_the_new_envp", n > 0 && !strncmp(buf, "EXEC_STATE_ROUND=", 17));
    fd = open("/proc/self/maps", O_RDONLY);
    int found_old = 0, found_self = 0;
    while ((n = read(fd, buf, sizeof buf - 1)) > 0) {
        buf[n] = 0;
        found_old |= strstr(buf, "3a5a0000000") != NULL;
        found_self |= strstr(buf, "exec_state") != NULL;
    }
    close(fd);
    check("maps_without_the_old_mapping", !found_old);
    check("maps_show_the_program", found_self);
    void *brk_now = sbrk(0);
    check("brk_starts_afresh", brk_now != (void *)-1);
    const char *env = getenv("EXEC_STATE_ROUND");
    check("env_passed", env && atoi(env) == round);
}

int main(int argc, char **argv)
{
    int round = 0;
    if (argc == 3 && !strcmp(argv[1], "check")) {
        round = atoi(argv[2]);
        printf("round %d\n", round);
        checks(round, argv[0]);
    }
    fflush(stdout);
    if (round == 3)
        return conf_failures ? 1 : 0;
    set_up(round);
    char r[16], e[64];
    snprintf(r, sizeof r, "%d", round + 1);
    snprintf(e, sizeof e, "EXEC_STATE_ROUND=%d", round + 1);
    char *args[] = { argv[0], "check", r, NULL };
    char *envs[] = { e, "PATH=/usr/bin:/bin", NULL };
    execve(argv[0], args, envs);
    perror("execve");
    return 2;
}
