/* Synchronous faults delivered to the program's handlers: the state a
 * handler starts with and returns to, under load.
 *
 * Under picos a fault in program code reaches the runtime's host handler,
 * which builds the program's frame and enters the program's handler
 * directly (no host rt_sigreturn, see entry::trap::host_signal). These
 * checks pin what that path must keep: registers and FPU state across the
 * handler, the frame's FPU image being the one restored, the handler's
 * mask (sa_mask, SA_NODEFER, SA_RESETHAND), signals raised in the handler
 * waiting for its return, the program's sigaltstack, nested faults, a
 * fault inside another signal's handler, the runtime's own user-copy
 * faults while a fault handler runs, and a long fault loop under a timer
 * signal storm.
 */
#include "conformance.h"

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>

static char *ro_page;            /* read-only: a write to it faults */
extern char fault_insn[], fault_after[];

/* One faulting store: `movb $1, (%rdi)`; the handlers resume after it. */
__attribute__((noinline, noclone)) static void fault_once(char *p)
{
    __asm__ volatile(".globl fault_insn, fault_after\n"
                     "fault_insn: movb $1, (%0)\n"
                     "fault_after:" ::"r"(p)
                     : "memory");
}

static volatile long faults, usr1_seen, timer_seen, bad_ctx;
static volatile int usr1_blocked_in_handler, segv_blocked_in_handler, raise_in_handler;
static volatile int sigpending_efault, edit_fpu;
static volatile uintptr_t handler_sp;

static void install(int sig, void (*h)(int, siginfo_t *, void *), int flags, int mask_sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    if (mask_sig)
        sigaddset(&sa.sa_mask, mask_sig);
    if (sigaction(sig, &sa, NULL) < 0) {
        perror("sigaction");
        exit(2);
    }
}

static void on_segv(int sig, siginfo_t *si, void *p)
{
    ucontext_t *uc = p;
    int local;
    handler_sp = (uintptr_t)&local;
    if (sig != SIGSEGV || si->si_addr != ro_page || si->si_code != SEGV_ACCERR ||
        uc->uc_mcontext.gregs[REG_RIP] != (greg_t)fault_insn)
        bad_ctx++;
    usr1_blocked_in_handler = conf_is_blocked(SIGUSR1);
    segv_blocked_in_handler = conf_is_blocked(SIGSEGV);
    /* Clobber xmm8 here: the frame must give the program's value back. */
    __asm__ volatile("pcmpeqd %%xmm8, %%xmm8" ::: "xmm8");
    if (edit_fpu && uc->uc_mcontext.fpregs) {
        uc->uc_mcontext.fpregs->_xmm[8].element[0] = 0x600dfeed;
        uc->uc_mcontext.fpregs->_xmm[8].element[1] = 0;
        uc->uc_mcontext.fpregs->_xmm[8].element[2] = 0;
        uc->uc_mcontext.fpregs->_xmm[8].element[3] = 0;
    }
    if (raise_in_handler) {
        long before = usr1_seen;
        raise(SIGUSR1);
        if (usr1_seen != before)
            bad_ctx++; /* blocked by sa_mask: must wait for the return */
    }
    /* A call whose buffer is bad: the runtime's copy faults and recovers. */
    long r = syscall(SYS_rt_sigpending, (void *)8, 8);
    if (r == -1 && errno == EFAULT)
        sigpending_efault++;
    faults++;
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)fault_after;
}

static void on_usr1(int sig, siginfo_t *si, void *p)
{
    (void)sig, (void)si, (void)p;
    usr1_seen++;
}

/* xmm8 across a fault handled by on_segv, other registers too. */
static int regs_across_fault(unsigned long *xmm_out)
{
    unsigned long pat = 0x0123456789abcdefUL, out = 0;
    unsigned long r12 = 0x1212, r13 = 0x1313, r14 = 0x1414, r15 = 0x1515, rbx = 0xb0b0;
    unsigned long r12o, r13o, r14o, r15o, rbxo;
    __asm__ volatile("movq %[pat], %%xmm8\n\t"
                     "mov %[a], %%r12\n\tmov %[b], %%r13\n\tmov %[c], %%r14\n\tmov %[d], %%r15\n\tmov %[e], %%rbx\n\t"
                     "movb $1, (%[page])\n\t" /* fault_insn is elsewhere: use the handler's RIP check below */
                     "movq %%xmm8, %[out]\n\t"
                     "mov %%r12, %[ao]\n\tmov %%r13, %[bo]\n\tmov %%r14, %[co]\n\tmov %%r15, %[dout]\n\tmov %%rbx, %[eo]"
                     : [out] "=&r"(out), [ao] "=&m"(r12o), [bo] "=&m"(r13o), [co] "=&m"(r14o), [dout] "=&m"(r15o),
                       [eo] "=&m"(rbxo)
                     : [pat] "r"(pat), [page] "a"(ro_page), [a] "m"(r12), [b] "m"(r13), [c] "m"(r14), [d] "m"(r15),
                       [e] "m"(rbx)
                     : "xmm8", "r12", "r13", "r14", "r15", "rbx", "memory");
    *xmm_out = out;
    return r12o == r12 && r13o == r13 && r14o == r14 && r15o == r15 && rbxo == rbx;
}

/* A handler for the inline fault above: skips the 3-byte `movb $1,(%reg)`
 * (register encodings without a SIB byte or displacement). */
static void on_segv_skip3(int sig, siginfo_t *si, void *p)
{
    ucontext_t *uc = p;
    (void)sig, (void)si;
    __asm__ volatile("pcmpeqd %%xmm8, %%xmm8" ::: "xmm8");
    if (edit_fpu && uc->uc_mcontext.fpregs) {
        uc->uc_mcontext.fpregs->_xmm[8].element[0] = 0x600dfeed;
        uc->uc_mcontext.fpregs->_xmm[8].element[1] = 0;
    }
    faults++;
    uc->uc_mcontext.gregs[REG_RIP] += 3;
}

static void check_registers(void)
{
    install(SIGSEGV, on_segv_skip3, 0, 0);
    int ok_regs = 1, ok_xmm = 1, ok_edit = 1;
    for (int i = 0; i < 1000; i++) {
        unsigned long x;
        edit_fpu = 0;
        ok_regs &= regs_across_fault(&x);
        if (x != 0x0123456789abcdefUL) {
            if (ok_xmm)
                fprintf(stderr, "xmm8 after the fault: %#lx\n", x);
            ok_xmm = 0;
        }
        edit_fpu = 1;
        regs_across_fault(&x);
        if (x != 0x600dfeed) {
            if (ok_edit)
                fprintf(stderr, "xmm8 from the edited frame: %#lx\n", x);
            ok_edit = 0;
        }
    }
    edit_fpu = 0;
    check("fault_keeps_registers", ok_regs && faults == 2000);
    check("fault_keeps_fpu_state", ok_xmm);
    check("fault_restores_edited_fpu_frame", ok_edit);
}

static void check_handler_state(void)
{
    faults = bad_ctx = usr1_seen = 0;
    install(SIGSEGV, on_segv, 0, SIGUSR1);
    install(SIGUSR1, on_usr1, 0, 0);
    raise_in_handler = 1;
    for (int i = 0; i < 1000; i++)
        fault_once(ro_page);
    raise_in_handler = 0;
    check("fault_siginfo_and_context", bad_ctx == 0 && faults == 1000);
    check("fault_handler_mask", usr1_blocked_in_handler && segv_blocked_in_handler);
    check("fault_mask_restored", !conf_is_blocked(SIGSEGV) && !conf_is_blocked(SIGUSR1));
    checkf("signal_raised_in_handler_after_return", usr1_seen == 1000, "usr1 %ld\n", usr1_seen);
    check("runtime_copy_fault_in_handler", sigpending_efault == 1000);
}

static void check_altstack(void)
{
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    stack_t old;
    sigaltstack(&ss, &old);
    install(SIGSEGV, on_segv, SA_ONSTACK, 0);
    handler_sp = 0;
    fault_once(ro_page);
    check("fault_on_program_altstack",
          handler_sp > (uintptr_t)alt && handler_sp < (uintptr_t)alt + sizeof alt);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    install(SIGSEGV, on_segv, 0, 0);
    handler_sp = 0;
    fault_once(ro_page);
    check("fault_off_altstack", handler_sp && !(handler_sp > (uintptr_t)alt && handler_sp < (uintptr_t)alt + sizeof alt));
}

/* SA_NODEFER: the handler faults again (depth 2), then both recover. */
static volatile int depth, max_depth;
static void on_segv_nested(int sig, siginfo_t *si, void *p)
{
    ucontext_t *uc = p;
    (void)sig, (void)si;
    depth++;
    if (depth > max_depth)
        max_depth = depth;
    if (depth == 1)
        fault_once(ro_page);
    depth--;
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)fault_after;
}

/* A fault inside another signal's handler. */
static volatile int usr2_done;
static void on_usr2(int sig)
{
    (void)sig;
    fault_once(ro_page);
    usr2_done = 1;
}

static void check_nesting(void)
{
    install(SIGSEGV, on_segv_nested, SA_NODEFER, 0);
    max_depth = 0;
    fault_once(ro_page);
    check("fault_nodefer_nested", max_depth == 2 && depth == 0);

    faults = 0;
    install(SIGSEGV, on_segv, 0, 0);
    signal(SIGUSR2, on_usr2);
    raise(SIGUSR2);
    check("fault_in_other_handler", usr2_done && faults == 1);
}

/* In a child: `what` 0 faults twice under SA_RESETHAND, 1 faults with
 * SIGSEGV blocked. Either way the kernel's action is death by SIGSEGV. */
static int child_dies_of_segv(int what)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (what == 0) {
            install(SIGSEGV, on_segv, SA_RESETHAND, 0);
            fault_once(ro_page);
            fault_once(ro_page);
        } else {
            sigset_t s;
            sigemptyset(&s);
            sigaddset(&s, SIGSEGV);
            sigprocmask(SIG_BLOCK, &s, NULL);
            fault_once(ro_page);
        }
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

static void on_alarm(int sig)
{
    (void)sig;
    timer_seen++;
}

/* 200,000 faults while a 100 µs timer interrupts them. */
static void check_storm(void)
{
    faults = bad_ctx = 0;
    install(SIGSEGV, on_segv, 0, 0);
    signal(SIGALRM, on_alarm);
    struct itimerval it = {{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (int i = 0; i < 200000; i++)
        fault_once(ro_page);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    checkf("fault_storm", faults == 200000 && bad_ctx == 0 && timer_seen > 0,
           "faults %ld bad %ld timer %ld\n", faults, bad_ctx, timer_seen);
    check("fault_storm_mask_restored", !conf_is_blocked(SIGSEGV) && !conf_is_blocked(SIGALRM));
}

int main(void)
{
    ro_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ro_page == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    check_registers();
    check_handler_state();
    check_altstack();
    check_nesting();
    check("fault_resethand_kills", child_dies_of_segv(0));
    check("fault_blocked_kills", child_dies_of_segv(1));
    check_storm();
    return conf_failures ? 1 : 0;
}
