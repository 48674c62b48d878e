/* Programs that poke at corners where a library OS can go wrong (issue 9's
 * probing): fault-type signals that are not faults, signals while fault
 * signals are blocked, frames that cannot be built, clone without CLONE_VM
 * on a new stack, clone3's argument checks, the 32-bit `int $0x80` entry,
 * call numbers with high bits, a faulting rdtsc, a handler at a
 * non-canonical address.
 *
 * Usage: hostile [MODE]. Without a mode, every mode that returns runs in
 * turn; "noncanonical-handler" ends in SIGSEGV (natively and under picos).
 */
#include "conformance.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#ifndef __WALL
#define __WALL 0x40000000
#endif

static volatile sig_atomic_t got_sig, got_code, hits;

static void info_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    got_sig = sig;
    got_code = si->si_code;
    hits++;
}

static void set_handler(int sig, void (*h)(int, siginfo_t *, void *), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static void noop_handler(int sig)
{
    (void)sig;
}

static void set_default(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
}

/* Leaves `sig` pending and blocked (sent to the process, `hits` reset)
 * and returns the current mask without it: the temporary mask of a wait
 * that lets it through. */
static sigset_t pend_blocked(int sig)
{
    conf_mask_one(SIG_BLOCK, sig);
    hits = 0;
    kill(getpid(), sig);
    sigset_t open;
    sigprocmask(SIG_BLOCK, NULL, &open);
    sigdelset(&open, sig);
    return open;
}

/* A fault-type signal queued with a positive si_code (as a kernel fault
 * has) reaches the handler like any other. */
static void queued_fault(void)
{
    static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP };
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        int sig = sigs[i];
        set_handler(sig, info_handler, 0);
        got_sig = got_code = hits = 0;
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = sig;
        si.si_code = 1;
        long r = syscall(SYS_rt_sigqueueinfo, getpid(), sig, &si);
        char name[64];
        snprintf(name, sizeof name, "queued_fault_%d", sig);
        checkf(name, r == 0 && hits == 1 && got_sig == sig && got_code == 1,
               "r=%ld hits=%d sig=%d code=%d", r, (int)hits, (int)got_sig, (int)got_code);
        /* Again through tgsigqueueinfo, while a blocking call runs in a
         * child's wait: the signal comes from the kernel instead. */
        set_default(sig);
    }
}

static int child_fn(void *arg)
{
    (void)arg;
    return 0;
}

/* A child's exit signal may be a fault type: SIGSEGV with CLD_EXITED. */
static void clone_exit_fault(void)
{
    set_handler(SIGSEGV, info_handler, 0);
    got_sig = got_code = hits = 0;
    size_t sz = 64 * 1024;
    char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pid_t pid = clone(child_fn, stack + sz, CLONE_VM | SIGSEGV, NULL);
    int st = 0;
    pid_t w;
    do
        w = waitpid(pid, &st, __WALL);
    while (w < 0 && errno == EINTR);
    for (int i = 0; i < 1000 && !hits; i++)
        sleep_ms(1);
    checkf("clone_exit_sigsegv", pid > 0 && w == pid && hits == 1 && got_code == CLD_EXITED,
           "pid=%d w=%d hits=%d code=%d", pid, w, (int)hits, (int)got_code);
    /* The same without CLONE_VM. */
    hits = 0;
    pid = clone(child_fn, stack + sz, CLONE_VFORK | SIGSEGV, NULL);
    do
        w = waitpid(pid, &st, __WALL);
    while (w < 0 && errno == EINTR);
    for (int i = 0; i < 1000 && !hits; i++)
        sleep_ms(1);
    checkf("clone_vfork_exit_sigsegv", pid > 0 && w == pid && hits == 1 && got_code == CLD_EXITED,
           "pid=%d w=%d hits=%d code=%d", pid, w, (int)hits, (int)got_code);
    munmap(stack, sz);
    set_default(SIGSEGV);
}

/* With SIGSEGV blocked, calls that write to a read-only buffer fail with
 * EFAULT (whoever serves them); a SIGSEGV sent meanwhile stays pending. */
static void blocked_fault(void)
{
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    set_handler(SIGSEGV, info_handler, 0);
    hits = 0;
    conf_mask_one(SIG_BLOCK, SIGSEGV);
    conf_mask_one(SIG_BLOCK, SIGBUS);
    struct { const char *name; long nr; long a0, a1, a2; } calls[] = {
        { "efault_uname", SYS_uname, (long)ro, 0, 0 },
        { "efault_getresuid", SYS_getresuid, (long)ro, (long)ro, (long)ro },
        { "efault_getrlimit", SYS_getrlimit, RLIMIT_NOFILE, (long)ro, 0 },
        { "efault_clock_gettime", SYS_clock_gettime, CLOCK_MONOTONIC, (long)ro, 0 },
        { "efault_gettimeofday", SYS_gettimeofday, (long)ro, 0, 0 },
        { "efault_rt_sigpending", SYS_rt_sigpending, (long)ro, 8, 0 },
        { "efault_sched_getaffinity", SYS_sched_getaffinity, 0, 128, (long)ro },
        { "efault_getcpu", SYS_getcpu, (long)ro, 0, 0 },
        { "efault_sigaltstack", SYS_sigaltstack, 0, (long)ro, 0 },
    };
    for (unsigned i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        errno = 0;
        long r = syscall(calls[i].nr, calls[i].a0, calls[i].a1, calls[i].a2);
        check_errno(calls[i].name, r, errno, EFAULT);
    }
    kill(getpid(), SIGSEGV);
    kill(getpid(), SIGBUS);
    sigset_t p;
    sigpending(&p);
    check("blocked_sigsegv_pending", hits == 0 && sigismember(&p, SIGSEGV) && sigismember(&p, SIGBUS));
    /* A handled signal meanwhile, through libc's syscall(3). */
    set_handler(SIGUSR1, info_handler, 0);
    syscall(SYS_tkill, syscall(SYS_gettid), SIGUSR1);
    check("blocked_sigsegv_other_signal", hits == 1 && got_sig == SIGUSR1);
    set_handler(SIGBUS, info_handler, 0);
    hits = 0;
    conf_mask_one(SIG_UNBLOCK, SIGSEGV);
    conf_mask_one(SIG_UNBLOCK, SIGBUS);
    checkf("blocked_sigsegv_delivered", hits == 2, "hits=%d", (int)hits);
    /* A blocked fault-type signal is there for sigtimedwait. */
    conf_mask_one(SIG_BLOCK, SIGBUS);
    kill(getpid(), SIGBUS);
    sigset_t w;
    sigemptyset(&w);
    sigaddset(&w, SIGBUS);
    siginfo_t si;
    struct timespec zero = { 0, 0 };
    int got = sigtimedwait(&w, &si, &zero);
    checkf("sigtimedwait_blocked_sigbus", got == SIGBUS && si.si_code == SI_USER,
           "got=%d code=%d", got, si.si_code);
    conf_mask_one(SIG_UNBLOCK, SIGBUS);
    set_default(SIGSEGV);
    set_default(SIGBUS);
    set_default(SIGUSR1);
    munmap(ro, 4096);
}

/* A handler on an alternate stack that is not mapped: the frame cannot be
 * built, and the program gets SIGSEGV instead. */
static void altstack_unmapped(void)
{
    char *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(p, 65536);
    stack_t ss = { .ss_sp = p, .ss_size = 65536, .ss_flags = 0 };
    sigaltstack(&ss, NULL);
    set_handler(SIGUSR1, info_handler, SA_ONSTACK);
    set_handler(SIGSEGV, info_handler, 0);
    hits = got_sig = 0;
    raise(SIGUSR1);
    checkf("altstack_unmapped_sigsegv", hits == 1 && got_sig == SIGSEGV && got_code == SI_KERNEL,
           "hits=%d sig=%d code=%d", (int)hits, (int)got_sig, (int)got_code);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    set_default(SIGSEGV);
    set_default(SIGUSR1);
}

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif
static char *auto_stack;
static volatile int auto_in_handler_flags, auto_on_alt;
static volatile uintptr_t auto_handler_sp, auto_nested_sp;

static void auto_nested(int sig)
{
    char here;
    (void)sig;
    auto_nested_sp = (uintptr_t)&here;
}

static void auto_handler(int sig)
{
    char here;
    (void)sig;
    stack_t cur;
    sigaltstack(NULL, &cur);
    auto_in_handler_flags = cur.ss_flags;
    auto_on_alt = &here >= auto_stack && &here < auto_stack + 65536;
    auto_handler_sp = (uintptr_t)&here;
    raise(SIGUSR2); /* SA_ONSTACK too: on the current stack, below this frame */
}

/* SS_AUTODISARM: a delivery on the alternate stack disarms it until the
 * handler returns. */
static void altstack_autodisarm(void)
{
    auto_stack = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    stack_t ss = { .ss_sp = auto_stack, .ss_size = 65536, .ss_flags = (int)SS_AUTODISARM };
    check("autodisarm_set", sigaltstack(&ss, NULL) == 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = auto_handler;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = auto_nested;
    sigaction(SIGUSR2, &sa, NULL);
    raise(SIGUSR1);
    checkf("autodisarm_handler_on_altstack", auto_on_alt == 1, "on=%d", auto_on_alt);
    checkf("autodisarm_disarmed_in_handler", auto_in_handler_flags == SS_DISABLE,
           "flags=%#x", (unsigned)auto_in_handler_flags);
    checkf("autodisarm_nested_below_handler", auto_nested_sp && auto_nested_sp < auto_handler_sp,
           "nested=%#lx handler=%#lx", (unsigned long)auto_nested_sp,
           (unsigned long)auto_handler_sp);
    stack_t cur;
    sigaltstack(NULL, &cur);
    checkf("autodisarm_restored", cur.ss_sp == auto_stack && cur.ss_size == 65536 &&
           (unsigned)cur.ss_flags == SS_AUTODISARM, "flags=%#x", (unsigned)cur.ss_flags);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    set_default(SIGUSR1);
    set_default(SIGUSR2);
    munmap(auto_stack, 65536);
}

/* A handler installed without SA_RESTORER (raw rt_sigaction): x86-64 Linux
 * cannot build its frame and sends SIGSEGV instead. */
static void no_restorer(void)
{
    struct { unsigned long handler, flags, restorer, mask; } act = {
        (unsigned long)noop_handler, 0, 0, 0 };
    syscall(SYS_rt_sigaction, SIGUSR1, &act, 0, 8);
    set_handler(SIGSEGV, info_handler, 0);
    hits = got_sig = got_code = 0;
    syscall(SYS_tkill, syscall(SYS_gettid), SIGUSR1);
    checkf("no_restorer_sigsegv", hits == 1 && got_sig == SIGSEGV && got_code == SI_KERNEL,
           "hits=%d sig=%d code=%d", (int)hits, (int)got_sig, (int)got_code);
    set_default(SIGSEGV);
    set_default(SIGUSR1);
}

/* ppoll, pselect and epoll_pwait wait with a temporary mask: a pending
 * signal it lets through ends the wait at once (EINTR), its handler runs
 * before the call returns, and the old mask is back afterwards. Both a
 * signal the host holds (SIGUSR1) and one picos holds (SIGBUS, a fault
 * type the host never blocks). */
static void temp_mask_waits(void)
{
    static const int sigs[] = { SIGUSR1, SIGBUS };
    for (unsigned k = 0; k < 2; k++) {
        int sig = sigs[k];
        set_handler(sig, info_handler, 0);
        for (int call = 0; call < 3; call++) {
            sigset_t open = pend_blocked(sig);
            struct timespec ts = { 5, 0 };
            int r = -2, e = 0;
            if (call == 0) {
                r = ppoll(NULL, 0, &ts, &open);
            } else if (call == 1) {
                r = pselect(0, NULL, NULL, NULL, &ts, &open);
            } else {
                int ep = epoll_create1(0);
                struct epoll_event ev;
                r = epoll_pwait(ep, &ev, 1, 5000, &open);
                e = errno;
                close(ep);
                errno = e;
            }
            e = errno;
            int still_blocked = conf_is_blocked(sig);
            char name[64];
            static const char *names[] = { "ppoll", "pselect", "epoll_pwait" };
            snprintf(name, sizeof name, "%s_temp_mask_%d", names[call], sig);
            checkf(name, r == -1 && e == EINTR && hits == 1 && still_blocked,
                   "r=%d errno=%d hits=%d blocked=%d", r, e, (int)hits, still_blocked);
            conf_mask_one(SIG_UNBLOCK, sig);
        }
        set_default(sig);
    }
}

/* A temporary-mask wait that does not end with EINTR (a descriptor is
 * ready, epoll's timeout is zero, an argument is bad) puts the old mask
 * back at once: the signal it let through is not delivered and stays
 * pending until the program unblocks it. pselect's sets keep what it
 * found. Again for a signal the host holds and one picos holds. */
static void temp_mask_no_eintr(void)
{
    static const int sigs[] = { SIGUSR1, SIGBUS };
    static const char *names[] = { "ppoll_ready", "pselect_ready", "epoll_pwait_zero",
                                   "ppoll_einval", "pselect_einval", "epoll_pwait_ebadf" };
    int p[2];
    if (pipe(p) != 0 || write(p[1], "x", 1) != 1) {
        checkf("temp_mask_no_eintr_pipe", 0, "errno=%d", errno);
        return;
    }
    for (unsigned k = 0; k < 2; k++) {
        int sig = sigs[k];
        set_handler(sig, info_handler, 0);
        for (int call = 0; call < 6; call++) {
            sigset_t open = pend_blocked(sig);
            struct timespec ts = { 5, 0 }, bad = { 0, -1 };
            struct pollfd pfd = { p[0], POLLIN, 0 };
            fd_set rd;
            FD_ZERO(&rd);
            FD_SET(p[0], &rd);
            int r = -2, e = 0, want = 1, want_errno = 0;
            if (call == 0) {
                r = ppoll(&pfd, 1, &ts, &open);
            } else if (call == 1) {
                r = pselect(p[0] + 1, &rd, NULL, NULL, &ts, &open);
            } else if (call == 2) {
                int ep = epoll_create1(0);
                struct epoll_event ev;
                r = epoll_pwait(ep, &ev, 1, 0, &open);
                e = errno;
                close(ep);
                errno = e;
                want = 0;
            } else if (call == 3) {
                r = ppoll(&pfd, 1, &bad, &open);
                want = -1, want_errno = EINVAL;
            } else if (call == 4) {
                r = pselect(p[0] + 1, &rd, NULL, NULL, &bad, &open);
                want = -1, want_errno = EINVAL;
            } else {
                struct epoll_event ev;
                r = epoll_pwait(-1, &ev, 1, 5000, &open);
                want = -1, want_errno = EBADF;
            }
            e = r < 0 ? errno : 0;
            int hits_in_call = hits;
            int still_blocked = conf_is_blocked(sig);
            int sets_kept = call != 1 || FD_ISSET(p[0], &rd);
            conf_mask_one(SIG_UNBLOCK, sig);
            char name[64];
            snprintf(name, sizeof name, "%s_temp_mask_%d", names[call], sig);
            checkf(name, r == want && e == want_errno && hits_in_call == 0 && still_blocked &&
                   sets_kept && hits == 1,
                   "r=%d errno=%d hits_in_call=%d blocked=%d sets_kept=%d hits_after=%d", r, e,
                   hits_in_call, still_blocked, sets_kept, (int)hits);
        }
        set_default(sig);
    }
    close(p[0]);
    close(p[1]);
}

/* The same with a signal whose action is the default (terminate): a wait
 * that fails or finds a descriptor ready never delivers it, so the
 * process lives on with the signal pending. In a child, since a wrong
 * delivery ends it. */
static void temp_mask_default_action(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int p[2];
        if (pipe(p) != 0 || write(p[1], "x", 1) != 1)
            _exit(2);
        set_default(SIGPROF);
        sigset_t open = pend_blocked(SIGPROF);
        struct timespec bad = { 0, -1 }, ts = { 5, 0 };
        struct pollfd pfd = { p[0], POLLIN, 0 };
        struct epoll_event ev;
        int bad_poll = ppoll(&pfd, 1, &bad, &open) == -1 && errno == EINVAL;
        int bad_epoll = epoll_pwait(-1, &ev, 1, 5000, &open) == -1 && errno == EBADF;
        int ready = ppoll(&pfd, 1, &ts, &open) == 1;
        sigset_t pend;
        sigpending(&pend);
        _exit(bad_poll && bad_epoll && ready && sigismember(&pend, SIGPROF) ? 0 : 3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    checkf("temp_mask_default_action", WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "status=%#x", status);
}

/* execve's checks in the kernel's order: a file open for writing cannot
 * be executed (ETXTBSY), a bad argv is EFAULT only once the file opened
 * (a missing file is ENOENT first), and execveat's AT_EXECVE_CHECK
 * (Linux 6.14+) checks without executing (what it says is shown: it
 * depends on the kernel and the user, and must be the same under picos). */
static void exec_checks(void)
{
    char path[] = "/tmp/picos-exec-checks-XXXXXX";
    int fd = mkstemp(path);
    int src = open("/bin/true", O_RDONLY); /* not /proc/self/exe: under picos that is the runtime */
    char buf[65536];
    ssize_t n;
    while (fd >= 0 && src >= 0 && (n = read(src, buf, sizeof buf)) > 0)
        if (write(fd, buf, (size_t)n) != n)
            break;
    if (src >= 0)
        close(src);
    fchmod(fd, 0755);
    char *argv[] = { path, NULL };
    errno = 0;
    long r = syscall(SYS_execve, path, argv, environ);
    check_errno("exec_open_for_writing", r, errno, ETXTBSY);
    close(fd);
    errno = 0;
    r = syscall(SYS_execve, "/nonexistent/picos", (void *)8, environ);
    check_errno("exec_missing_before_bad_argv", r, errno, ENOENT);
    errno = 0;
    r = syscall(SYS_execve, path, (void *)8, environ);
    check_errno("exec_bad_argv", r, errno, EFAULT);
    errno = 0;
    r = syscall(SYS_execveat, AT_FDCWD, path, argv, environ, 0x10000 /* AT_EXECVE_CHECK */);
    int e = errno;
    show("exec_check_flag_executable", "r=%ld errno=%s", r, r < 0 ? errno_name(e) : "0");
    errno = 0;
    r = syscall(SYS_execveat, AT_FDCWD, "/etc/hostname", argv, environ, 0x10000);
    e = errno;
    show("exec_check_flag_not_executable", "r=%ld errno=%s", r, r < 0 ? errno_name(e) : "0");
    unlink(path);
}

/* Argument checks in Linux's order where the runtime answers itself:
 * mprotect's GROWS bits before the range, sched_getaffinity's length in
 * 32-bit arithmetic, pkey_mprotect's key before the mappings (over a range
 * that covers the runtime's memory too; the errno depends on the CPU's
 * protection keys, so it is shown). */
static void errno_order(void)
{
    void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = 0;
    long r = syscall(SYS_mprotect, page, -1L, PROT_READ | 0x03000000L);
    check_errno("mprotect_grows_both_first", r, errno, EINVAL);
    munmap(page, 4096);
    char mask[64];
    errno = 0;
    r = syscall(SYS_sched_getaffinity, 0, 0x80000000UL, mask);
    check_errno("sched_getaffinity_len_wraps", r, errno, EINVAL);
    errno = 0;
    r = syscall(SYS_pkey_mprotect, 0, (1UL << 47) - 4096, PROT_READ, 0);
    int e = errno;
    show("pkey_mprotect_key_0_everything", "r=%ld errno=%s", r, errno_name(e));
    errno = 0;
    r = syscall(SYS_pkey_mprotect, 0, (1UL << 47) - 4096, PROT_READ, 5);
    e = errno;
    show("pkey_mprotect_key_5_everything", "r=%ld errno=%s", r, errno_name(e));
}

/* Output the program never wrote must not reach it as a signal. Under
 * picos a call picos does not serve prints a warning on descriptor 2:
 * with 2 a file at RLIMIT_FSIZE (SIGXFSZ) or a pipe nobody reads
 * (SIGPIPE), both at their default action (ending the process), the
 * calls must still just fail with ENOSYS, as natively. In a child. */
static void diag_write(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        char path[] = "/tmp/picos-diag-XXXXXX";
        int f = mkstemp(path);
        unlink(path);
        if (f < 0 || write(f, "x", 1) != 1)
            _exit(2);
        struct rlimit rl = { 1, RLIM_INFINITY };
        setrlimit(RLIMIT_FSIZE, &rl);
        dup2(f, 2);
        long r1 = syscall(185 /* security */);
        int e1 = errno;
        int p[2];
        if (pipe(p) != 0)
            _exit(3);
        close(p[0]);
        dup2(p[1], 2);
        long r2 = syscall(184 /* tuxcall */);
        int e2 = errno;
        sigset_t pend;
        sigpending(&pend);
        int clean = !sigismember(&pend, SIGXFSZ) && !sigismember(&pend, SIGPIPE);
        _exit(r1 == -1 && e1 == ENOSYS && r2 == -1 && e2 == ENOSYS && clean ? 0 : 4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    checkf("diagnostics_raise_no_signal", WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "status=%#x", status);
}

/* A SIGSYS the program sends itself with the code of a Syscall User
 * Dispatch trap (any si_code is allowed for the own thread) is a signal
 * like any other: its handler runs, and the sending call returns 0. */
static void forged_sigsys(void)
{
    set_handler(SIGSYS, info_handler, 0);
    hits = 0;
    got_code = 0;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGSYS;
    si.si_code = 2; /* SYS_USER_DISPATCH */
    long r = syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGSYS, &si);
    checkf("forged_sigsys_is_a_signal", r == 0 && hits == 1 && got_code == 2,
           "r=%ld errno=%d hits=%d code=%d", r, r ? errno : 0, (int)hits, (int)got_code);
    set_default(SIGSYS);
}

/* arch_prctl(ARCH_SET_GS) takes bases below the last user page only
 * (picos emulates GS: it keeps its own pointer there). */
static void gs_base_limit(void)
{
    errno = 0;
    long r = syscall(SYS_arch_prctl, 0x1001 /* ARCH_SET_GS */, 0x7ffffffff000UL);
    check_errno("arch_set_gs_last_page", r, errno, EPERM);
}

/* Linux's dequeue_synchronous_signal: once a synchronous signal of the
 * thread is deliverable (SIGSYS from tgkill here), the first synchronous
 * signal queued for the thread with a positive si_code is delivered
 * first, even while blocked (a SIGBUS queued with BUS_ADRALN). Kernel
 * behaviour, reproduced by picos for the signals it holds. */
static volatile sig_atomic_t quirk_bus, quirk_sys;
static void quirk_handler(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    if (sig == SIGBUS)
        quirk_bus++;
    else
        quirk_sys++;
}

static void sync_quirk(void)
{
    set_handler(SIGBUS, quirk_handler, 0);
    set_handler(SIGSYS, quirk_handler, 0);
    conf_mask_one(SIG_BLOCK, SIGBUS);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGBUS;
    si.si_code = 2; /* BUS_ADRALN */
    syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGBUS, &si);
    int before = quirk_bus;
    syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGSYS);
    checkf("sync_quirk_blocked_fault_first", before == 0 && quirk_bus == 1 && quirk_sys == 1,
           "before=%d bus=%d sys=%d", before, (int)quirk_bus, (int)quirk_sys);
    conf_mask_one(SIG_UNBLOCK, SIGBUS);
    set_default(SIGBUS);
    set_default(SIGSYS);
}

/* A signal a temporary-mask wait let through but did not deliver (a
 * descriptor was ready) is still pending where signalfd finds it. */
static void temp_mask_signalfd(void)
{
    int p[2];
    if (pipe(p) != 0 || write(p[1], "x", 1) != 1)
        return;
    set_handler(SIGUSR2, info_handler, 0);
    sigset_t open = pend_blocked(SIGUSR2);
    struct pollfd pfd = { p[0], POLLIN, 0 };
    struct timespec ts = { 5, 0 };
    int r = ppoll(&pfd, 1, &ts, &open);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, SIGUSR2);
    int sfd = signalfd(-1, &only, SFD_NONBLOCK | SFD_CLOEXEC);
    struct signalfd_siginfo ssi;
    ssize_t n = sfd >= 0 ? read(sfd, &ssi, sizeof ssi) : -1;
    checkf("temp_mask_undelivered_in_signalfd",
           r == 1 && hits == 0 && n == (ssize_t)sizeof ssi && ssi.ssi_signo == SIGUSR2,
           "r=%d hits=%d n=%zd", r, (int)hits, n);
    if (sfd >= 0)
        close(sfd);
    conf_mask_one(SIG_UNBLOCK, SIGUSR2);
    set_default(SIGUSR2);
    close(p[0]);
    close(p[1]);
}

/* pselect whose descriptor sets are readable but not writable: a signal
 * its mask lets through ends it with EINTR (an interrupted select writes
 * nothing back), and its handler runs. PR_SET_SYSCALL_USER_DISPATCH off is
 * accepted (the program's dispatch is off). */
static void pselect_readonly_sets(void)
{
    int p[2];
    if (pipe(p) != 0)
        return;
    fd_set *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ro == MAP_FAILED)
        return;
    FD_ZERO(ro);
    FD_SET(p[0], ro);
    mprotect(ro, 4096, PROT_READ);
    set_handler(SIGUSR1, info_handler, 0);
    sigset_t open = pend_blocked(SIGUSR1);
    struct timespec ts = { 5, 0 };
    errno = 0;
    int r = pselect(p[0] + 1, ro, NULL, NULL, &ts, &open);
    int e = errno;
    checkf("pselect_readonly_sets_eintr", r == -1 && e == EINTR && hits == 1,
           "r=%d errno=%d hits=%d", r, e, (int)hits);
    conf_mask_one(SIG_UNBLOCK, SIGUSR1);
    set_default(SIGUSR1);
    munmap(ro, 4096);
    close(p[0]);
    close(p[1]);
    errno = 0;
    long rr = prctl(59 /* PR_SET_SYSCALL_USER_DISPATCH */, 0 /* OFF */, 0, 0, 0);
    checkf("sud_off_accepted", rr == 0, "r=%ld errno=%d", rr, rr ? errno : 0);
}

/* rt_sigprocmask changes the mask even when writing the old one fails. */
static void sigprocmask_bad_oldset(void)
{
    uint64_t set = 1ull << (SIGUSR2 - 1);
    long r = syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, (void *)8, 8);
    int e = errno;
    check_errno("sigprocmask_bad_oldset_efault", r, e, EFAULT);
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    check("sigprocmask_bad_oldset_applied", sigismember(&cur, SIGUSR2));
    conf_mask_one(SIG_UNBLOCK, SIGUSR2);
}

/* The order in which pending signals are taken (Linux's dequeue_signal):
 * those sent to the thread (tgkill, faults) before those sent to the
 * process (kill), and in each the synchronous ones (SIGSEGV, SIGBUS,
 * SIGILL, SIGTRAP, SIGFPE, SIGSYS) before lower-numbered others. Picos
 * holds the fault types itself (the host never blocks them): the order
 * must still be Linux's. Checked with sigtimedwait (which takes one even
 * when it then fails with EFAULT) and with delivery to handlers. */
static volatile sig_atomic_t order[4], norder;
static void order_handler(int sig)
{
    if (norder < 4)
        order[norder] = sig;
    norder++;
}

static void pending_order(void)
{
    pid_t pid = getpid();
    long tid = syscall(SYS_gettid);
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, SIGILL);
    sigaddset(&both, SIGFPE);
    sigprocmask(SIG_BLOCK, &both, NULL);
    /* SIGILL to the process, SIGFPE to the thread: SIGFPE first. */
    kill(pid, SIGILL);
    syscall(SYS_tgkill, pid, tid, SIGFPE);
    struct timespec ts = { 0, 0 };
    int first = sigtimedwait(&both, NULL, &ts);
    int second = sigtimedwait(&both, NULL, &ts);
    checkf("pending_order_thread_first", first == SIGFPE && second == SIGILL,
           "first=%d second=%d", first, second);
    /* The same with a sigtimedwait whose siginfo cannot be written: the
     * signal is taken all the same (EFAULT). */
    kill(pid, SIGILL);
    syscall(SYS_tgkill, pid, tid, SIGFPE);
    long r = syscall(SYS_rt_sigtimedwait, &both, (void *)8, &ts, 8);
    int e = errno;
    second = sigtimedwait(&both, NULL, &ts);
    int third = sigtimedwait(&both, NULL, &ts);
    checkf("pending_order_efault_takes", r == -1 && e == EFAULT && second == SIGILL && third == -1,
           "r=%ld errno=%d second=%d third=%d", r, e, second, third);
    /* A signal queued to the process with a kernel-like si_code (as a
     * fault's) is still the process's: the thread's SIGSEGV comes first. */
    sigset_t ts2;
    sigemptyset(&ts2);
    sigaddset(&ts2, SIGTRAP);
    sigaddset(&ts2, SIGSEGV);
    sigprocmask(SIG_BLOCK, &ts2, NULL);
    siginfo_t qi;
    memset(&qi, 0, sizeof qi);
    qi.si_signo = SIGTRAP;
    qi.si_code = 1; /* TRAP_BRKPT */
    syscall(SYS_rt_sigqueueinfo, pid, SIGTRAP, &qi);
    syscall(SYS_tgkill, pid, tid, SIGSEGV);
    first = sigtimedwait(&ts2, NULL, &ts);
    second = sigtimedwait(&ts2, NULL, &ts);
    checkf("pending_order_queued_code", first == SIGSEGV && second == SIGTRAP,
           "first=%d second=%d", first, second);
    sigprocmask(SIG_UNBLOCK, &ts2, NULL);
    /* The same standard signal waits once for the thread and once for the
     * process: two are taken. */
    syscall(SYS_tgkill, pid, tid, SIGILL);
    kill(pid, SIGILL);
    syscall(SYS_tgkill, pid, tid, SIGILL); /* coalesces with the first */
    first = sigtimedwait(&both, NULL, &ts);
    second = sigtimedwait(&both, NULL, &ts);
    third = sigtimedwait(&both, NULL, &ts);
    checkf("pending_order_two_queues", first == SIGILL && second == SIGILL && third == -1,
           "first=%d second=%d third=%d", first, second, third);
    /* A child's exit signal is the process's even with a positive si_code
     * (CLD_EXITED): a SIGSEGV exit signal merges with a SIGSEGV that kill
     * left pending, and the handler runs once. */
    conf_mask_one(SIG_BLOCK, SIGSEGV);
    set_handler(SIGSEGV, info_handler, 0);
    hits = 0;
    kill(pid, SIGSEGV);
    pid_t c = (pid_t)syscall(SYS_clone, (long)SIGSEGV, 0L, 0L, 0L, 0L);
    if (c == 0)
        _exit(0);
    if (c > 0)
        waitpid(c, NULL, __WALL);
    conf_mask_one(SIG_UNBLOCK, SIGSEGV);
    checkf("pending_order_exit_signal_merges", c > 0 && hits == 1, "c=%d hits=%d", (int)c,
           (int)hits);
    set_default(SIGSEGV);
    /* The thread's own signals come before the process's whoever holds
     * them (under picos the host holds a real-time one, picos a SIGFPE):
     * a real-time signal sent to the thread before a SIGFPE sent to the
     * process. */
    sigset_t rt;
    sigemptyset(&rt);
    sigaddset(&rt, SIGRTMIN + 1);
    sigaddset(&rt, SIGFPE);
    sigprocmask(SIG_BLOCK, &rt, NULL);
    syscall(SYS_tgkill, pid, tid, SIGRTMIN + 1);
    kill(pid, SIGFPE);
    first = sigtimedwait(&rt, NULL, &ts);
    second = sigtimedwait(&rt, NULL, &ts);
    checkf("pending_order_thread_rt_before_process_fpe",
           first == SIGRTMIN + 1 && second == SIGFPE, "first=%d second=%d", first, second);
    sigprocmask(SIG_UNBLOCK, &rt, NULL);
    /* Of two SIGCHLDs (a child's exit, the process's; a tkill, the
     * thread's) a handler takes the thread's; the process's stays so,
     * and below the lower SIGUSR2 the process was sent. */
    sigset_t cu;
    sigemptyset(&cu);
    sigaddset(&cu, SIGCHLD);
    sigaddset(&cu, SIGUSR2);
    sigprocmask(SIG_BLOCK, &cu, NULL);
    set_handler(SIGCHLD, info_handler, 0);
    pid_t kid = fork();
    if (kid == 0)
        _exit(0);
    waitid(P_PID, kid, NULL, WEXITED | WNOWAIT);
    syscall(SYS_tkill, tid, SIGCHLD);
    hits = 0;
    got_code = 0;
    sigset_t only_chld;
    sigprocmask(SIG_BLOCK, NULL, &only_chld);
    sigdelset(&only_chld, SIGCHLD);
    sigsuspend(&only_chld);
    int code_first = got_code;
    kill(pid, SIGUSR2);
    first = sigtimedwait(&cu, NULL, &ts);
    second = sigtimedwait(&cu, NULL, &ts);
    waitpid(kid, NULL, 0);
    checkf("pending_order_requeued_stays_process",
           hits == 1 && code_first == SI_TKILL && first == SIGUSR2 && second == SIGCHLD,
           "hits=%d code=%d first=%d second=%d", (int)hits, code_first, first, second);
    sigprocmask(SIG_UNBLOCK, &cu, NULL);
    set_default(SIGCHLD);
    /* Both to the process, with SIGHUP too: the synchronous SIGILL comes
     * before the lower SIGHUP, delivered to handlers in that order. */
    sigaddset(&both, SIGHUP);
    sigprocmask(SIG_BLOCK, &both, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = order_handler;
    sigfillset(&sa.sa_mask);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    norder = 0;
    kill(pid, SIGHUP);
    kill(pid, SIGILL);
    syscall(SYS_tgkill, pid, tid, SIGFPE);
    sigprocmask(SIG_UNBLOCK, &both, NULL);
    checkf("pending_order_delivery", norder == 3 && order[0] == SIGFPE && order[1] == SIGILL &&
           order[2] == SIGHUP,
           "n=%d order=%d,%d,%d", (int)norder, (int)order[0], (int)order[1], (int)order[2]);
    set_default(SIGHUP);
    set_default(SIGILL);
    set_default(SIGFPE);
}

static char *child_stack;

static int on_stack_fn(void *arg)
{
    char here;
    uintptr_t p = (uintptr_t)&here;
    /* Exit status 0 if this runs on the stack clone was given. */
    _exit(p > (uintptr_t)child_stack && p <= (uintptr_t)arg ? 0 : 3);
}

/* clone without CLONE_VM: the child runs fn on the new stack. */
static void clone_new_stack(void)
{
    size_t sz = 256 * 1024;
    child_stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *top = child_stack + sz;
    pid_t pid = clone(on_stack_fn, top, SIGCHLD, top);
    int st = -1;
    waitpid(pid, &st, 0);
    checkf("clone_fork_new_stack", pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "pid=%d status=%#x", pid, st);
    munmap(child_stack, sz);
}

struct clone_args_ {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
        set_tid, set_tid_size, cgroup;
};

/* clone3's argument checks (every case is EINVAL natively). */
static void clone3_invalid(void)
{
    static char stk[4096];
    static pid_t tid = 1;
    struct { const char *name; struct clone_args_ a; } cases[] = {
        { "clone3_stack_size_without_stack", { .exit_signal = SIGCHLD, .stack_size = 4096 } },
        { "clone3_stack_without_size", { .exit_signal = SIGCHLD, .stack = (uintptr_t)stk } },
        { "clone3_exit_signal_65", { .exit_signal = 65 } },
        { "clone3_set_tid_without_size", { .exit_signal = SIGCHLD, .set_tid = (uintptr_t)&tid } },
        { "clone3_parent_with_exit_signal", { .flags = CLONE_PARENT, .exit_signal = SIGCHLD } },
        { "clone3_unknown_flag", { .flags = 1ull << 40, .exit_signal = SIGCHLD } },
        { "clone3_detached", { .flags = 0x400000 /* CLONE_DETACHED */, .exit_signal = SIGCHLD } },
        { "clone3_signal_in_flags", { .flags = SIGCHLD, .exit_signal = SIGCHLD } },
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        errno = 0;
        long r = syscall(SYS_clone3, &cases[i].a, sizeof cases[i].a);
        if (r == 0)
            _exit(0); /* a child Linux would not have made */
        if (r > 0)
            waitpid((pid_t)r, NULL, __WALL);
        check_errno(cases[i].name, r, errno, EINVAL);
    }
    struct clone_args_ a = { .exit_signal = SIGCHLD };
    errno = 0;
    long r = syscall(SYS_clone3, &a, 63);
    check_errno("clone3_size_63", r, errno, EINVAL);
    /* A larger struct whose extra bytes are not zero is E2BIG even when
     * it runs into an unmapped page after the non-zero byte. */
    char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two != MAP_FAILED) {
        munmap(two + 4096, 4096);
        char *at = two + 4096 - 200;
        memset(at, 0, 200);
        ((struct clone_args_ *)at)->exit_signal = SIGCHLD;
        at[100] = 1;
        errno = 0;
        r = syscall(SYS_clone3, at, 4096);
        if (r == 0)
            _exit(0);
        check_errno("clone3_nonzero_tail_before_fault", r, errno, E2BIG);
        munmap(two, 4096);
    }
    /* clone3 has room for both a pidfd and the parent's copy of the tid
     * (clone(2) shares one pointer): both are written. */
    int pidfd = -1;
    pid_t ptid = 0;
    struct clone_args_ both = { .flags = CLONE_PIDFD | CLONE_PARENT_SETTID,
                                .pidfd = (uintptr_t)&pidfd, .parent_tid = (uintptr_t)&ptid,
                                .exit_signal = SIGCHLD };
    r = syscall(SYS_clone3, &both, sizeof both);
    if (r == 0)
        _exit(7);
    int status = 0;
    if (r > 0)
        waitpid((pid_t)r, &status, 0);
    checkf("clone3_pidfd_and_parent_settid",
           r > 0 && ptid == r && pidfd >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 7,
           "r=%ld errno=%d ptid=%d pidfd=%d status=%#x", r, errno, (int)ptid, pidfd, status);
    if (pidfd >= 0)
        close(pidfd);
}

/* The 32-bit entry from a 64-bit program: i386 numbers and registers. */
static long int80(long nr, long b, long c, long d)
{
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(b), "c"(c), "d"(d) : "memory");
    return r;
}

static void int80_calls(void)
{
    check("int80_getpid", int80(20, 0, 0, 0) == getpid());
    check("int80_gettid", int80(224, 0, 0, 0) == syscall(SYS_gettid));
    /* write: buffer in the low 4 GiB (32-bit pointers). */
    char *low = mmap((void *)0x10000000, 4096, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (low == MAP_FAILED) {
        check("int80_write_low_buffer", 0);
        return;
    }
    memcpy(low, "int80_write: ok\n", 16);
    check("int80_write_result", int80(4, 1, (long)(uintptr_t)low, 16) == 16);
    check("int80_bad_fd", int80(6, 0x7fff, 0, 0) == -EBADF);
    /* RCX and R11 are kept (unlike `syscall`). */
    long rcx = 0x1234, r11 = 0x5678, r;
    __asm__ volatile("mov %3, %%r11\n\tint $0x80\n\tmov %%r11, %2"
                     : "=a"(r), "+c"(rcx), "=r"(r11)
                     : "r"(r11), "a"(20L)
                     : "r11", "memory");
    checkf("int80_keeps_rcx_r11", r == getpid() && rcx == 0x1234 && r11 == 0x5678,
           "r=%ld rcx=%#lx r11=%#lx", r, rcx, r11);
    munmap(low, 4096);
}

/* Linux takes the call number from EAX. */
static void high_bits(void)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"((1L << 32) | SYS_getpid) : "rcx", "r11", "memory");
    check("nr_high_bits_getpid", r == getpid());
    /* sched_getaffinity's length is an unsigned int: 1 << 32 is 0. */
    static unsigned long mask[16];
    errno = 0;
    long n = syscall(SYS_sched_getaffinity, 0, 1UL << 32, mask);
    check_errno("getaffinity_len_high_bits", n, errno, EINVAL);
}

/* The heap grows far (trampolines must not sit just above it, as they
 * once did for static non-PIE programs: brk stopped 8 MiB up). */
static void brk_growth(void)
{
    unsigned long start = syscall(SYS_brk, 0);
    int ok = 1;
    for (unsigned long mb = 16; mb <= 512; mb += 16)
        ok &= (unsigned long)syscall(SYS_brk, start + (mb << 20)) == start + (mb << 20);
    checkf("brk_grows_512_mib", ok, "start=%#lx now=%#lx", start, (unsigned long)syscall(SYS_brk, 0));
    check("brk_shrinks", (unsigned long)syscall(SYS_brk, start) == start);
}

/* The initial break is randomized as Linux does it (randomize_va_space
 * 2, no ADDR_NO_RANDOMIZE): four runs of this program put their break at
 * no fewer than two distances from the end of their data. */
extern char end;
static void brk_random(const char *self)
{
    int fd = open("/proc/sys/kernel/randomize_va_space", O_RDONLY);
    char c = 0;
    if (fd < 0 || read(fd, &c, 1) != 1 || c != '2' ||
        (personality(0xffffffff) & ADDR_NO_RANDOMIZE)) {
        show("brk_random", "skipped: address randomization is off here");
        if (fd >= 0)
            close(fd);
        return;
    }
    close(fd);
    unsigned long seen[4];
    for (int i = 0; i < 4; i++) {
        int p[2];
        if (pipe(p) != 0)
            return;
        pid_t pid = fork();
        if (pid == 0) {
            dup2(p[1], 1);
            execl(self, self, "brk-offset", (char *)NULL);
            _exit(127);
        }
        close(p[1]);
        char buf[32] = { 0 };
        ssize_t n = read(p[0], buf, sizeof buf - 1);
        close(p[0]);
        waitpid(pid, NULL, 0);
        seen[i] = n > 0 ? strtoul(buf, NULL, 16) : 0;
    }
    int distinct = 1;
    for (int i = 1; i < 4; i++)
        distinct += seen[i] != seen[0];
    checkf("brk_random", seen[0] && distinct >= 2, "offsets %#lx %#lx %#lx %#lx", seen[0],
           seen[1], seen[2], seen[3]);
}

static void sigsegv_exit(int sig)
{
    (void)sig;
    puts("rdtsc_faults: ok");
    exit(conf_finish("hostile"));
}

/* arch_prctl(ARCH_SET_CPUID, 0): CPUID faults in the program; signal
 * delivery and getcpu go on working (the runtime must not execute CPUID
 * then). Machines without CPUID faulting say ENODEV: the case says so. */
static void cpuid_off(void)
{
    if (syscall(SYS_arch_prctl, 0x1012 /* ARCH_SET_CPUID */, 0) != 0) {
        show("cpuid_off", "skipped: no CPUID faulting on this machine (errno %d)", errno);
        return;
    }
    set_handler(SIGUSR1, info_handler, 0);
    hits = 0;
    syscall(SYS_tkill, syscall(SYS_gettid), SIGUSR1);
    checkf("cpuid_off_signal", hits == 1, "hits=%d", (int)hits);
    unsigned cpu = ~0u, node = ~0u;
    long r = syscall(SYS_getcpu, &cpu, &node, NULL);
    checkf("cpuid_off_getcpu", r == 0 && cpu < 4096 && node < 4096, "r=%ld cpu=%u node=%u", r,
           cpu, node);
    set_default(SIGUSR1);
    syscall(SYS_arch_prctl, 0x1012, 1);
}

/* prctl(PR_SET_TSC, PR_TSC_SIGSEGV): rdtsc faults in the program; calls
 * go on working (under picos the runtime stops using rdtsc). Ends the
 * program (from the SIGSEGV handler). */
static void tsc_off(void)
{
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
        check("pr_set_tsc", 0);
        return;
    }
    cpu_set_t cs;
    int ok = 1;
    for (int i = 0; i < 50; i++) {
        ok &= sched_getaffinity(0, sizeof cs, &cs) == 0;
        sleep_ms(1);
    }
    check("tsc_off_sched_getaffinity", ok);
    unsigned cpu = ~0u;
    long r = syscall(SYS_getcpu, &cpu, NULL, NULL);
    checkf("tsc_off_getcpu", r == 0 && cpu < 4096, "r=%ld cpu=%u", r, cpu);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sigsegv_exit;
    sigaction(SIGSEGV, &sa, NULL);
    unsigned lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    puts("rdtsc_faults: FAIL");
    exit(1);
}

static void noop(int s) { (void)s; }

/* A handler at a non-canonical address, installed after a few ordinary
 * deliveries: the program dies of SIGSEGV. */
static void noncanonical_handler(void)
{
    signal(SIGUSR2, noop);
    for (int i = 0; i < 3; i++)
        syscall(SYS_tkill, syscall(SYS_gettid), SIGUSR2);
    struct { unsigned long handler, flags, restorer, mask; } act = {
        0x2000000000000UL, 0x04000000 | 4, 0x100001000123UL, 0 };
    syscall(SYS_rt_sigaction, SIGUSR1, &act, 0, 8);
    syscall(SYS_tkill, syscall(SYS_gettid), SIGUSR1);
    puts("noncanonical_handler: not reached");
}

int main(int argc, char **argv)
{
    conf_init();
    const char *mode = argc > 1 ? argv[1] : "all";
    if (!strcmp(mode, "brk-offset")) {
        /* For brk_random: this run's break, from the end of its data. */
        printf("%lx\n", (unsigned long)syscall(SYS_brk, 0) - (unsigned long)&end);
        return 0;
    }
    int all = !strcmp(mode, "all");
    if (all || !strcmp(mode, "queued-fault"))
        queued_fault();
    if (all || !strcmp(mode, "clone-exit-fault"))
        clone_exit_fault();
    if (all || !strcmp(mode, "blocked-fault"))
        blocked_fault();
    if (all || !strcmp(mode, "altstack-unmapped"))
        altstack_unmapped();
    if (all || !strcmp(mode, "temp-mask"))
        temp_mask_waits();
    if (all || !strcmp(mode, "temp-mask-no-eintr"))
        temp_mask_no_eintr();
    if (all || !strcmp(mode, "temp-mask-default"))
        temp_mask_default_action();
    if (all || !strcmp(mode, "exec-checks"))
        exec_checks();
    if (all || !strcmp(mode, "errno-order"))
        errno_order();
    if (all || !strcmp(mode, "diag-write"))
        diag_write();
    if (all || !strcmp(mode, "forged-sigsys"))
        forged_sigsys();
    if (all || !strcmp(mode, "gs-limit"))
        gs_base_limit();
    if (all || !strcmp(mode, "sync-quirk"))
        sync_quirk();
    if (all || !strcmp(mode, "temp-mask-signalfd"))
        temp_mask_signalfd();
    if (all || !strcmp(mode, "pselect-readonly"))
        pselect_readonly_sets();
    if (all || !strcmp(mode, "no-restorer"))
        no_restorer();
    if (all || !strcmp(mode, "autodisarm"))
        altstack_autodisarm();
    if (all || !strcmp(mode, "sigprocmask"))
        sigprocmask_bad_oldset();
    if (all || !strcmp(mode, "pending-order"))
        pending_order();
    if (all || !strcmp(mode, "clone-stack"))
        clone_new_stack();
    if (all || !strcmp(mode, "clone3"))
        clone3_invalid();
    if (all || !strcmp(mode, "int80"))
        int80_calls();
    if (all || !strcmp(mode, "high-bits"))
        high_bits();
    if (all || !strcmp(mode, "brk"))
        brk_growth();
    if (all || !strcmp(mode, "brk-random"))
        brk_random(argv[0]);
    if (all || !strcmp(mode, "cpuid-off"))
        cpuid_off();
    if (!strcmp(mode, "noncanonical-handler"))
        noncanonical_handler();
    if (all || !strcmp(mode, "tsc"))
        tsc_off(); /* last: ends the program */
    return conf_finish("hostile");
}
