/* A program's own seccomp filters (seccomp(2), prctl(PR_SET_SECCOMP)).
 * picos runs them itself (kernel::seccomp): installed on the host they
 * would also filter the runtime's calls (LTP seccomp01). Each case runs in
 * a child of its own, as a filter cannot be removed.
 *
 * The kernel's structures and constants are spelled out here: musl's
 * headers carry no <linux/filter.h>. */
#include "conformance.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>

struct insn {
    uint16_t code;
    uint8_t jt, jf;
    uint32_t k;
};
struct fprog {
    unsigned short len;
    struct insn *filter;
};

#define LD_NR 0x20 /* BPF_LD | BPF_W | BPF_ABS, k = offset */
#define JEQ 0x15   /* BPF_JMP | BPF_JEQ | BPF_K */
#define RET 0x06   /* BPF_RET | BPF_K */
#define STMT(c, kk) {(c), 0, 0, (kk)}
#define JUMP(c, kk, t, f) {(c), (t), (f), (kk)}

#define RET_KILL_PROCESS 0x80000000u
#define RET_KILL_THREAD 0x00000000u
#define RET_TRAP 0x00030000u
#define RET_ERRNO 0x00050000u
#define RET_LOG 0x7ffc0000u
#define RET_ALLOW 0x7fff0000u
#define AUDIT_ARCH_X86_64 0xc000003eu
#define FLAG_TSYNC 1u
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

static long sc_install(unsigned flags, struct insn *prog, unsigned short len)
{
    struct fprog p = {len, prog};
    return syscall(SYS_seccomp, 1 /* SET_MODE_FILTER */, flags, &p);
}

/* Calls `nr` get `action`, the rest are allowed. */
static long only(long nr, uint32_t action, unsigned flags)
{
    struct insn prog[] = {
        STMT(LD_NR, 0),
        JUMP(JEQ, (uint32_t)nr, 0, 1),
        STMT(RET, action),
        STMT(RET, RET_ALLOW),
    };
    return sc_install(flags, prog, 4);
}

/* Runs `f` in a child; its wait status. */
static int in_child(int (*f)(void))
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(f());
    return wait_status(pid);
}

static int exited(int st, int code)
{
    return WIFEXITED(st) && WEXITSTATUS(st) == code;
}

static int killed(int st, int sig)
{
    return WIFSIGNALED(st) && WTERMSIG(st) == sig;
}

/* ---- ERRNO, and a site the runtime had patched ---- */
static int errno_case(void)
{
    /* getpid's site runs a few times first: picos patches it, and its
     * trampoline answers from the runtime's cache; the filter must still
     * see the call. */
    pid_t me = getpid();
    for (int i = 0; i < 4; i++)
        if (getpid() != me)
            return 10;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return 11;
    if (only(SYS_getpid, RET_ERRNO | EPERM, 0) != 0)
        return 12;
    errno = 0;
    long r = syscall(SYS_getpid);
    if (r != -1 || errno != EPERM)
        return 13;
    /* glibc's and musl's getpid() make the call and give what it gives. */
    if (getpid() == me)
        return 14;
    if (prctl(PR_GET_SECCOMP) != 2)
        return 15;
    return 0;
}

/* ---- TRAP: SIGSYS describes the call; the handler's RAX is its result ---- */
static volatile int trap_code, trap_errno, trap_nr;
static volatile unsigned trap_arch;
static volatile long trap_rax;

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;
    (void)sig;
    trap_code = si->si_code;
    trap_errno = si->si_errno;
    trap_nr = si->si_syscall;
    trap_arch = si->si_arch;
    trap_rax = uc->uc_mcontext.gregs[REG_RAX];
    uc->uc_mcontext.gregs[REG_RAX] = 77;
}

static int trap_case(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSYS, &sa, NULL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (only(SYS_getppid, RET_TRAP | 0x42, 0) != 0)
        return 20;
    long r = syscall(SYS_getppid);
    if (r != 77)
        return 21;
    if (trap_code != SYS_SECCOMP || trap_errno != 0x42 || trap_nr != SYS_getppid)
        return 22;
    if (trap_arch != AUDIT_ARCH_X86_64 || trap_rax != SYS_getppid)
        return 23;
    return 0;
}

/* ---- TRAP while SIGSYS is blocked: forced, the default action ---- */
static int trap_blocked_case(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGSYS);
    sigprocmask(SIG_BLOCK, &s, NULL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    only(SYS_getppid, RET_TRAP, 0);
    syscall(SYS_getppid);
    return 30;
}

/* ---- KILL_PROCESS, KILL_THREAD ---- */
static int kill_process_case(void)
{
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    only(SYS_getppid, RET_KILL_PROCESS, 0);
    syscall(SYS_getppid);
    return 40;
}

static void *call_getppid(void *arg)
{
    syscall(SYS_getppid);
    return arg; /* never: the thread is killed */
}

static int count_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int kill_thread_case(void)
{
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    only(SYS_getppid, RET_KILL_THREAD, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, call_getppid, (void *)1) != 0)
        return 50;
    /* Not pthread_join: musl's waits for the thread's own exit code, which
     * a killed thread never runs. Its task goes from /proc/self/task. */
    int n = 0;
    for (int i = 0; i < 1000 && (n = count_tasks()) != 1; i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (n != 1)
        return 51;
    /* The last thread: the process dies of SIGSYS. */
    syscall(SYS_getppid);
    return 52;
}

/* ---- strict mode: read, write, exit, rt_sigreturn only ---- */
static int strict_fd = -1;
static int strict_case(void)
{
    if (syscall(SYS_seccomp, 0 /* SET_MODE_STRICT */, 0, NULL) != 0)
        return 60;
    if (syscall(SYS_write, strict_fd, "x", 1) != 1)
        syscall(SYS_exit, 61);
    syscall(SYS_getppid);
    syscall(SYS_exit, 62);
    return 63;
}

/* ---- arguments, stacked filters, precedence, LOG ---- */
static int args_case(void)
{
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    /* dup(1000) is EXDEV; dup of anything else goes on. */
    struct insn by_arg[] = {
        STMT(LD_NR, 0),
        JUMP(JEQ, SYS_dup, 0, 3),
        STMT(LD_NR, 16), /* args[0], low word */
        JUMP(JEQ, 1000, 0, 1),
        STMT(RET, RET_ERRNO | EXDEV),
        STMT(RET, RET_ALLOW),
    };
    if (sc_install(0, by_arg, 6) != 0)
        return 70;
    errno = 0;
    if (dup(1000) != -1 || errno != EXDEV)
        return 71;
    int d = dup(0);
    if (d < 0)
        return 72;
    close(d);
    /* Two ERRNO filters: the newest decides between equals. */
    only(SYS_getppid, RET_ERRNO | EPERM, 0);
    only(SYS_getppid, RET_ERRNO | EACCES, 0);
    struct insn log_all[] = {STMT(RET, RET_LOG)};
    sc_install(0, log_all, 1);
    errno = 0;
    if (syscall(SYS_getppid) != -1 || errno != EACCES)
        return 73;
    /* A stronger action in an older filter wins over a newer ERRNO. */
    only(SYS_getuid, RET_KILL_PROCESS, 0);
    only(SYS_getuid, RET_ERRNO | ENOENT, 0);
    syscall(SYS_getuid);
    return 74;
}

/* ---- inherited by fork and kept across execve ---- */
static const char *self_path;
static int inherit_case(void)
{
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    only(SYS_getppid, RET_ERRNO | ESRCH, 0);
    pid_t pid = fork();
    if (pid == 0) {
        errno = 0;
        _exit(syscall(SYS_getppid) == -1 && errno == ESRCH ? 0 : 80);
    }
    int st = wait_status(pid);
    if (!exited(st, 0))
        return 81;
    execl(self_path, "seccomp", "after-exec", (char *)NULL);
    return 82;
}

static int after_exec(void)
{
    errno = 0;
    if (!(syscall(SYS_getppid) == -1 && errno == ESRCH))
        return 83;
    /* The C library's wrapper: a site with the number in it (which picos
     * could answer without entering the runtime). glibc sets errno; musl
     * returns the kernel's -ESRCH. */
    errno = 0;
    long r = getppid();
    if (!((r == -1 && errno == ESRCH) || r == -ESRCH))
        return 84;
    /* Calls the filter allows, many times over: the same answers. */
    pid_t me = getpid();
    for (int i = 0; i < 20000; i++)
        if (getpid() != me || syscall(SYS_gettid) != me || getuid() != getuid())
            return 85;
    return 0;
}

/* ---- TSYNC: a thread made before the filter gets it too ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;
static void *wait_then_call(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!go)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    errno = 0;
    long r = syscall(SYS_getppid);
    return (void *)(intptr_t)(r == -1 && errno == ENOEXEC);
}

static int tsync_case(void)
{
    pthread_t t;
    pthread_create(&t, NULL, wait_then_call, NULL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (only(SYS_getppid, RET_ERRNO | ENOEXEC, FLAG_TSYNC) != 0)
        return 90;
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    void *ok = NULL;
    pthread_join(t, &ok);
    return ok ? 0 : 91;
}

/* ---- what is refused ---- */
static int refused_case(void)
{
    struct insn ret_allow[] = {STMT(RET, RET_ALLOW)};
    struct insn unaligned[] = {STMT(LD_NR, 2), STMT(RET, RET_ALLOW)};
    struct insn no_ret[] = {STMT(LD_NR, 0)};
    int bad = 0;
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    errno = 0;
    bad |= (sc_install(0, ret_allow, 0) != -1 || errno != EINVAL) << 0;
    errno = 0;
    bad |= (sc_install(0, unaligned, 2) != -1 || errno != EINVAL) << 1;
    errno = 0;
    bad |= (sc_install(0, no_ret, 1) != -1 || errno != EINVAL) << 2;
    errno = 0;
    bad |= (sc_install(0x100, ret_allow, 1) != -1 || errno != EINVAL) << 3;
    errno = 0;
    bad |= (syscall(SYS_seccomp, 1, 0, NULL) != -1 || errno != EFAULT) << 4;
    errno = 0;
    bad |= (syscall(SYS_seccomp, 99, 0, NULL) != -1 || errno != EINVAL) << 5;
    uint32_t action = RET_KILL_PROCESS;
    bad |= (syscall(SYS_seccomp, 2 /* GET_ACTION_AVAIL */, 0, &action) != 0) << 6;
    action = 0x12340000;
    errno = 0;
    bad |= (syscall(SYS_seccomp, 2, 0, &action) != -1 || errno != EOPNOTSUPP) << 7;
    /* Strict mode on top of a filter: EINVAL. */
    sc_install(0, ret_allow, 1);
    errno = 0;
    bad |= (syscall(SYS_seccomp, 0, 0, NULL) != -1 || errno != EINVAL) << 8;
    if (bad)
        fprintf(stderr, "refused: bits %#x\n", bad);
    return bad ? 100 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "after-exec") == 0)
        return after_exec();
    conf_init();
    self_path = "/proc/self/exe";
    struct rlimit none = {0, 0};
    getrlimit(RLIMIT_CORE, &none);
    none.rlim_cur = 0;
    setrlimit(RLIMIT_CORE, &none); /* the killed children dump no core */
    int st;

    st = in_child(errno_case);
    checkf("seccomp_errno_on_a_patched_site", exited(st, 0), "status %#x", st);
    st = in_child(trap_case);
    checkf("seccomp_trap_siginfo_and_rax", exited(st, 0), "status %#x", st);
    st = in_child(trap_blocked_case);
    checkf("seccomp_trap_blocked_forced", killed(st, SIGSYS), "status %#x", st);
    st = in_child(kill_process_case);
    checkf("seccomp_kill_process", killed(st, SIGSYS), "status %#x", st);
    st = in_child(kill_thread_case);
    checkf("seccomp_kill_thread", killed(st, SIGSYS), "status %#x", st);

    int p[2];
    if (pipe(p) == 0) {
        strict_fd = p[1];
        st = in_child(strict_case);
        char c = 0;
        close(p[1]);
        int n = read(p[0], &c, 1);
        close(p[0]);
        checkf("seccomp_strict", killed(st, SIGKILL) && n == 1 && c == 'x', "status %#x", st);
    }
    st = in_child(args_case);
    checkf("seccomp_args_stacking_precedence", killed(st, SIGSYS), "status %#x", st);
    st = in_child(inherit_case);
    checkf("seccomp_inherited_fork_exec", exited(st, 0), "status %#x", st);
    st = in_child(tsync_case);
    checkf("seccomp_tsync", exited(st, 0), "status %#x", st);
    st = in_child(refused_case);
    checkf("seccomp_refused", exited(st, 0), "status %#x", st);
    return conf_finish("seccomp");
}
