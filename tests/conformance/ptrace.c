/* ptrace(2) between processes of one tree: what a debugger or strace
 * relies on. Under picos the library OS emulates it (kernel::ptrace): the
 * checks see the program's registers and memory, stops at syscall entry
 * and exit, signal delivery, exec, fork and exit, as Linux reports them. */
#include "conformance.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <elf.h>

/* What the libcs' headers may lack (musl's have no PTRACE_GET_SYSCALL_INFO). */
#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#define OP_NONE 0
#define OP_ENTRY 1
#define OP_EXIT 2
/* struct ptrace_syscall_info (include/uapi/linux/ptrace.h). */
struct sc_info {
    uint8_t op;
    uint8_t pad[3];
    uint32_t arch;
    uint64_t instruction_pointer;
    uint64_t stack_pointer;
    union {
        struct {
            uint64_t nr;
            uint64_t args[6];
        } entry;
        struct {
            int64_t rval;
            uint8_t is_error;
        } exit;
        uint64_t raw[8];
    };
};

static volatile uint64_t box = 0x1111222233334444ull;
static volatile int got_usr1;

static void on_usr1(int sig)
{
    (void)sig;
    got_usr1++;
}

/* waitpid with __WALL, retried on EINTR. */
static int wait_all(pid_t pid)
{
    int st = -1;
    while (waitpid(pid, &st, __WALL) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return st;
}

/* Resumes stopped tracee `pid` until it ends (signals passed on);
 * returns its final status. */
static int run_to_end(pid_t pid, int st)
{
    for (int i = 0; i < 100 && st != -1 && WIFSTOPPED(st); i++) {
        int sig = WSTOPSIG(st) == SIGTRAP || WSTOPSIG(st) == SIGSTOP ? 0 : WSTOPSIG(st);
        ptrace(PTRACE_CONT, pid, 0, sig);
        st = wait_all(pid);
    }
    return st;
}

/* Resumes `pid` with PTRACE_SYSCALL and waits for its next stop. */
static int next_syscall_stop(pid_t pid)
{
    if (ptrace(PTRACE_SYSCALL, pid, 0, 0) != 0)
        return -1;
    return wait_all(pid);
}

static void syscall_stops(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
            _exit(80);
        kill(getpid(), SIGSTOP);
        /* Entry and exit seen by the tracer, with these arguments. */
        long r = syscall(SYS_chdir, "", 0xbad1, 0xbad2, 0xbad3, 0xbad4, 0xbad5);
        if (r != -1 || errno != ENOENT)
            _exit(81);
        /* The tracer turns this getppid into a getpid. */
        long p = syscall(SYS_getppid);
        if (p != getpid())
            _exit(82);
        /* The tracer skips this call (orig_rax -1), returning 42. */
        long k = syscall(SYS_kill, getpid(), SIGKILL);
        if (k != 42)
            _exit(83);
        /* The tracer wrote `box`. */
        if (box != 0x5555666677778888ull)
            _exit(84);
        _exit(7);
    }
    int st = wait_all(pid);
    check("traceme_sigstop_stop", st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    check("getsiginfo_sigstop",
          ptrace(PTRACE_GETSIGINFO, pid, 0, &si) == 0 && si.si_signo == SIGSTOP);
    check("setoptions",
          ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXIT) == 0);
    struct sc_info info;
    memset(&info, 0, sizeof info);
    long n = ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info);
    checkf("syscall_info_none", n >= 24 && info.op == OP_NONE &&
                                    info.arch != 0 && info.instruction_pointer != 0 &&
                                    info.stack_pointer != 0,
           "n %ld op %d", n, info.op);
    errno = 0;
    long bad = ptrace(PTRACE_PEEKUSER, pid, 1, 0);
    check_errno("peekuser_unaligned_eio", bad, errno, EIO);
    errno = 0;
    bad = ptrace(PTRACE_CONT, pid, 0, 65);
    check_errno("cont_bad_signal_eio", bad, errno, EIO);

    /* chdir("") entry: its number and arguments. */
    st = next_syscall_stop(pid);
    check("entry_stop_status", st == ((SIGTRAP | 0x80) << 8 | 0x7f));
    memset(&info, 0, sizeof info);
    n = ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info);
    checkf("syscall_info_entry",
           n >= 80 && info.op == OP_ENTRY && info.entry.nr == SYS_chdir &&
               info.entry.args[1] == 0xbad1 && info.entry.args[5] == 0xbad5,
           "n %ld op %d nr %llu", n, info.op, (unsigned long long)info.entry.nr);
    struct user_regs_struct regs;
    check("getregs_entry", ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0 &&
                               regs.orig_rax == SYS_chdir && regs.rsi == 0xbad1 &&
                               (long)regs.rax == -ENOSYS);
    /* The register sets strace and gdb read: NT_PRSTATUS is
     * user_regs_struct; NT_X86_XSTATE has XCR0 at byte 464. */
    struct user_regs_struct rs;
    struct iovec iov = {&rs, sizeof rs};
    check("getregset_prstatus", ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov) == 0 &&
                                    iov.iov_len == sizeof rs && rs.orig_rax == SYS_chdir);
    static uint8_t xs[8192];
    struct iovec xiov = {xs, sizeof xs};
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    uint64_t xcr0 = 0;
    long xr = ptrace(PTRACE_GETREGSET, pid, NT_X86_XSTATE, &xiov);
    memcpy(&xcr0, xs + 464, 8);
    checkf("getregset_xstate_xcr0",
           xr == 0 && xiov.iov_len >= 576 && xcr0 == (((uint64_t)hi << 32) | lo),
           "r %ld len %zu xcr0 %#llx", xr, xiov.iov_len, (unsigned long long)xcr0);
    errno = 0;
    long orig = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user, regs.orig_rax), 0);
    check("peekuser_orig_rax", errno == 0 && orig == SYS_chdir);

    /* Its exit: -ENOENT. */
    st = next_syscall_stop(pid);
    memset(&info, 0, sizeof info);
    n = ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info);
    check("syscall_info_exit", st == ((SIGTRAP | 0x80) << 8 | 0x7f) && n >= 33 &&
                                   info.op == OP_EXIT &&
                                   info.exit.is_error && info.exit.rval == -ENOENT);

    /* getppid becomes getpid. */
    st = next_syscall_stop(pid);
    ptrace(PTRACE_GETREGS, pid, 0, &regs);
    int is_getppid = regs.orig_rax == SYS_getppid;
    regs.orig_rax = SYS_getpid;
    check("setregs_changes_call", is_getppid && ptrace(PTRACE_SETREGS, pid, 0, &regs) == 0);
    st = next_syscall_stop(pid);
    ptrace(PTRACE_GETREGS, pid, 0, &regs);
    check("changed_call_result", (pid_t)regs.rax == pid);

    /* kill(self, SIGKILL) skipped (after the exit of getppid, and the
     * getpid of the child's check). */
    int is_kill = 0;
    for (int i = 0; i < 10 && !is_kill; i++) {
        st = next_syscall_stop(pid);
        ptrace(PTRACE_GETREGS, pid, 0, &regs);
        is_kill = regs.orig_rax == SYS_kill && (long)regs.rax == -ENOSYS;
    }
    regs.orig_rax = -1;
    regs.rax = 42;
    check("skip_call", is_kill && ptrace(PTRACE_SETREGS, pid, 0, &regs) == 0);
    st = next_syscall_stop(pid);
    ptrace(PTRACE_GETREGS, pid, 0, &regs);
    check("skipped_call_result", WIFSTOPPED(st) && regs.rax == 42);

    /* The child's memory (the same address after fork). */
    errno = 0;
    long word = ptrace(PTRACE_PEEKDATA, pid, &box, 0);
    check("peekdata", errno == 0 && (uint64_t)word == 0x1111222233334444ull);
    check("pokedata", ptrace(PTRACE_POKEDATA, pid, &box, 0x5555666677778888ull) == 0);
    errno = 0;
    long fault = ptrace(PTRACE_PEEKDATA, pid, (void *)8, 0);
    check_errno("peekdata_unmapped_eio", fault, errno, EIO);

    /* On to the exit: the exit event, then the end. */
    int event = 0;
    for (int i = 0; i < 20; i++) {
        st = next_syscall_stop(pid);
        if (st == -1 || !WIFSTOPPED(st))
            break;
        if ((st >> 16) == PTRACE_EVENT_EXIT) {
            event = 1;
            break;
        }
    }
    unsigned long msg = 0;
    check("exit_event", event && ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0 &&
                            msg == (7 << 8));
    ptrace(PTRACE_CONT, pid, 0, 0);
    st = wait_all(pid);
    checkf("traced_child_exit", st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 7, "st %#x",
           st);
    errno = 0;
    long gone = ptrace(PTRACE_GETREGS, pid, 0, &regs);
    check_errno("getregs_after_exit_esrch", gone, errno, ESRCH);
}

static void signal_stops(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGUSR1, on_usr1);
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
            _exit(80);
        raise(SIGUSR1); /* suppressed by the tracer */
        raise(SIGUSR1); /* delivered */
        raise(SIGUSR2); /* changed into SIGUSR1 */
        _exit(got_usr1);
    }
    int st = wait_all(pid);
    check("signal_stop_usr1", st != -1 && WIFSTOPPED(st) && WSTOPSIG(st) == SIGUSR1);
    ptrace(PTRACE_CONT, pid, 0, 0);
    st = wait_all(pid);
    check("signal_stop_usr1_again", WIFSTOPPED(st) && WSTOPSIG(st) == SIGUSR1);
    ptrace(PTRACE_CONT, pid, 0, SIGUSR1);
    st = wait_all(pid);
    check("signal_stop_usr2", WIFSTOPPED(st) && WSTOPSIG(st) == SIGUSR2);
    ptrace(PTRACE_CONT, pid, 0, SIGUSR1);
    st = wait_all(pid);
    /* The changed signal stops again? Linux delivers it at once. */
    checkf("signals_as_the_tracer_said", WIFEXITED(st) && WEXITSTATUS(st) == 2, "st %#x", st);
}

static void seize_interrupt(void)
{
    int ready[2];
    if (pipe(ready) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        char c = 'r';
        if (write(ready[1], &c, 1) != 1)
            _exit(80);
        for (;;)
            pause();
    }
    char c;
    if (read(ready[0], &c, 1) != 1)
        return;
    check("seize", ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD) == 0);
    errno = 0;
    long again = ptrace(PTRACE_SEIZE, pid, 0, 0);
    check_errno("seize_twice_eperm", again, errno, EPERM);
    errno = 0;
    long notstopped = ptrace(PTRACE_GETREGS, pid, 0, 0);
    check_errno("getregs_running_esrch", notstopped, errno, ESRCH);
    check("interrupt", ptrace(PTRACE_INTERRUPT, pid, 0, 0) == 0);
    int st = wait_all(pid);
    check("interrupt_event_stop",
          WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP && (st >> 16) == PTRACE_EVENT_STOP);
    struct user_regs_struct regs;
    check("getregs_interrupted", ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0 && regs.rip != 0);
    check("ptrace_kill", ptrace(PTRACE_KILL, pid, 0, 0) == 0);
    st = wait_all(pid);
    check("killed_tracee", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    close(ready[0]);
    close(ready[1]);
}

static void exec_event(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
            _exit(80);
        /* Ignored across the exec, traced or not (the new program checks). */
        signal(SIGUSR2, SIG_IGN);
        kill(getpid(), SIGSTOP);
        char *argv[] = {"ptrace", "ignored", NULL};
        execv("/proc/self/exe", argv);
        _exit(81);
    }
    int st = wait_all(pid);
    check("exec_child_stopped", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD);
    /* Syscall stops up to the exec event. */
    int event = 0;
    for (int i = 0; i < 10; i++) {
        st = next_syscall_stop(pid);
        if (!WIFSTOPPED(st))
            break;
        if ((st >> 16) == PTRACE_EVENT_EXEC) {
            event = 1;
            break;
        }
    }
    unsigned long msg = 0;
    check("exec_event", event && ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) == 0 &&
                            msg == (unsigned long)pid);
    st = next_syscall_stop(pid);
    struct user_regs_struct regs;
    ptrace(PTRACE_GETREGS, pid, 0, &regs);
    check("execve_exit_stop", st == ((SIGTRAP | 0x80) << 8 | 0x7f) &&
                                  regs.orig_rax == SYS_execve && regs.rax == 0);
    ptrace(PTRACE_DETACH, pid, 0, 0);
    st = wait_all(pid);
    checkf("detached_child_runs_to_end_sigusr2_ignored", WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "st %#x", st);
}

static void fork_event(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
            _exit(80);
        kill(getpid(), SIGSTOP);
        pid_t g = fork();
        if (g == 0)
            _exit(5);
        int gs = 0;
        waitpid(g, &gs, 0);
        _exit(WIFEXITED(gs) ? WEXITSTATUS(gs) + 10 : 99);
    }
    int st = wait_all(pid);
    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK);
    ptrace(PTRACE_CONT, pid, 0, 0);
    st = wait_all(pid);
    unsigned long g = 0;
    check("fork_event", WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_FORK &&
                            ptrace(PTRACE_GETEVENTMSG, pid, 0, &g) == 0 && g != 0);
    /* The grandchild starts traced, with a SIGSTOP. */
    int gst = wait_all((pid_t)g);
    check("forked_child_traced", WIFSTOPPED(gst) && WSTOPSIG(gst) == SIGSTOP);
    ptrace(PTRACE_CONT, (pid_t)g, 0, 0);
    gst = wait_all((pid_t)g);
    check("forked_child_exit_seen", WIFEXITED(gst) && WEXITSTATUS(gst) == 5);
    /* (Its SIGCHLD stops the child on the way.) */
    ptrace(PTRACE_CONT, pid, 0, 0);
    st = run_to_end(pid, wait_all(pid));
    checkf("fork_parent_exit", WIFEXITED(st) && WEXITSTATUS(st) == 15, "st %#x", st);
}

/* PTRACE_ATTACH to a process stopped by SIGSTOP: it is a ptrace-stop when
 * the call returns (no wait needed), its debug registers as set. */
static void attach_stopped(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        raise(SIGSTOP);
        _exit(0);
    }
    int st = -1;
    waitpid(pid, &st, WUNTRACED);
    check("child_stopped_itself", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
    check("attach_stopped", ptrace(PTRACE_ATTACH, pid, 0, 0) == 0);
    size_t dr0 = offsetof(struct user, u_debugreg[0]);
    check("pokeuser_dr0",
          ptrace(PTRACE_POKEUSER, pid, dr0, 1) == 0 && ptrace(PTRACE_POKEUSER, pid, dr0, 2) == 0);
    errno = 0;
    long v = ptrace(PTRACE_PEEKUSER, pid, dr0, 0);
    check("peekuser_dr0", errno == 0 && v == 2);
    errno = 0;
    long k = ptrace(PTRACE_POKEUSER, pid, dr0, 0xffff800000000000ul);
    check_errno("pokeuser_dr0_kernel_einval", k, errno, EINVAL);
    check("detach_stopped", ptrace(PTRACE_DETACH, pid, 0, 0) == 0);
    kill(pid, SIGCONT);
    st = run_to_end(pid, wait_all(pid));
    checkf("attached_stopped_exit", WIFEXITED(st) && WEXITSTATUS(st) == 0, "st %#x", st);
}

static void refusals(void)
{
    errno = 0;
    long r = ptrace(PTRACE_ATTACH, getpid(), 0, 0);
    check_errno("attach_self_eperm", r, errno, EPERM);
    errno = 0;
    r = ptrace(PTRACE_GETREGS, getppid(), 0, 0);
    check_errno("getregs_untraced_esrch", r, errno, ESRCH);
    pid_t pid = fork();
    if (pid == 0) {
        long a = ptrace(PTRACE_TRACEME, 0, 0, 0);
        long b = ptrace(PTRACE_TRACEME, 0, 0, 0);
        _exit(a == 0 && b == -1 && errno == EPERM ? 0 : 1);
    }
    int st = wait_all(pid);
    check("traceme_twice_eperm", WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "ignored") == 0) {
        /* exec_event's new program: is SIGUSR2 still ignored? */
        struct sigaction sa;
        return sigaction(SIGUSR2, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN ? 0 : 1;
    }
    conf_init();
    syscall_stops();
    signal_stops();
    seize_interrupt();
    exec_event();
    fork_event();
    attach_stopped();
    refusals();
    return conf_failures != 0;
}
