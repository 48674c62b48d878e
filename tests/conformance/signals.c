/* Signal delivery conformance. */
#include "conformance.h"

#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <ucontext.h>

static volatile sig_atomic_t hits;
static volatile sig_atomic_t last_sig;

static void reset_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    hits = 0;
    last_sig = 0;
}

static void install_info(int sig, void (*h)(int, siginfo_t *, void *), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = flags | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static void block(int sig)
{
    conf_mask_one(SIG_BLOCK, sig);
}

static void unblock(int sig)
{
    conf_mask_one(SIG_UNBLOCK, sig);
}

static void count_handler(int sig)
{
    hits++;
    last_sig = sig;
}

/* ---- SA_SIGINFO ---- */
static siginfo_t saved_info;
static sigset_t saved_uc_mask;
static void info_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    saved_info = *si;
    saved_uc_mask = ((ucontext_t *)uc)->uc_sigmask;
    hits++;
}

/* ---- sigaltstack ---- */
static char *alt_lo, *alt_hi;
static volatile int alt_on_stack, alt_ss_flag;
static void alt_handler(int sig)
{
    (void)sig;
    volatile char local;
    alt_on_stack = (char *)&local >= alt_lo && (char *)&local < alt_hi;
    stack_t cur;
    sigaltstack(NULL, &cur);
    alt_ss_flag = (cur.ss_flags & SS_ONSTACK) != 0;
    hits++;
}

/* ---- SIGSEGV + siglongjmp ---- */
static sigjmp_buf jb;
static volatile void *fault_addr;
static volatile int fault_code;
static volatile int fault_sig;
static void fault_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    fault_sig = sig;
    fault_addr = si->si_addr;
    fault_code = si->si_code;
    siglongjmp(jb, 1);
}

/* ---- SIGSEGV recovery via uc_mcontext RIP ---- */
long fault_load(long *p);
extern char fault_insn[], fault_resume[];
__asm__(".text\n"
        ".globl fault_load\n"
        ".type fault_load,@function\n"
        "fault_load:\n"
        "    xorl %eax, %eax\n"
        ".globl fault_insn\n"
        "fault_insn:\n"
        "    movq (%rdi), %rax\n"
        ".globl fault_resume\n"
        "fault_resume:\n"
        "    ret\n"
        ".size fault_load, .-fault_load\n");
static volatile int rip_fixups;
static void rip_handler(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    ucontext_t *uc = ucv;
    if ((char *)uc->uc_mcontext.gregs[REG_RIP] == fault_insn) {
        uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)fault_resume;
        uc->uc_mcontext.gregs[REG_RAX] = 0x5a5a;
        rip_fixups++;
    } else {
        _exit(99);
    }
}

/* ---- nesting ---- */
static char seq[64];
static volatile int seq_len;
static void seq_add(char c)
{
    if (seq_len < 63)
        seq[seq_len++] = c;
    seq[seq_len] = 0;
}
static volatile int nodefer_blocked_in_handler = -1;
static volatile int depth, max_depth;
static void nest_usr1(int sig)
{
    (void)sig;
    seq_add('A');
    raise(SIGUSR2);
    seq_add('a');
}
static void nest_usr2(int sig)
{
    (void)sig;
    seq_add('B');
    seq_add('b');
}
static void self_raise_handler(int sig)
{
    depth++;
    if (depth > max_depth)
        max_depth = depth;
    nodefer_blocked_in_handler = conf_is_blocked(sig);
    seq_add('S');
    if (hits++ == 0)
        raise(sig);
    seq_add('s');
    depth--;
}

/* ---- SIGCHLD ---- */
static volatile int chld_code, chld_status, chld_hits;
static void chld_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    chld_code = si->si_code;
    chld_status = si->si_status;
    chld_hits++;
}

/* ---- SA_RESTART ---- */
static int restart_pipe[2];
static volatile int alarm_hits;
static void alarm_writer(int sig)
{
    (void)sig;
    alarm_hits++;
    write(restart_pipe[1], "R", 1);
}
static void alarm_counter(int sig)
{
    (void)sig;
    alarm_hits++;
}

/* ITIMER_REAL: first expiry in `ms`, then every `every_ms` (0: once; a
 * first expiry of 0 disarms it). */
static void arm_timer_ms(long ms, long every_ms)
{
    struct itimerval it;
    memset(&it, 0, sizeof it);
    it.it_value.tv_sec = ms / 1000;
    it.it_value.tv_usec = (ms % 1000) * 1000;
    it.it_interval.tv_sec = every_ms / 1000;
    it.it_interval.tv_usec = (every_ms % 1000) * 1000;
    setitimer(ITIMER_REAL, &it, NULL);
}

static void set_timer_ms(long ms)
{
    arm_timer_ms(ms, 0);
}

/* A timer that fires every `ms` until stop_timer(): for a blocking call
 * that a SIGALRM must interrupt. On a busy machine the first expiry may
 * come before the call blocks (its handler then runs first); the next one
 * interrupts the call all the same, instead of leaving it blocked. */
static void repeat_timer_ms(long ms)
{
    arm_timer_ms(ms, ms);
}

static void stop_timer(void)
{
    arm_timer_ms(0, 0);
}

/* ---- real-time signal queueing ---- */
static int rt_values[8];
static volatile int rt_count;
static void rt_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (rt_count < 8)
        rt_values[rt_count] = si->si_value.sival_int;
    rt_count++;
}

/* ---- pthread_kill target ---- */
static volatile long handler_tid;
static void tid_handler(int sig)
{
    (void)sig;
    handler_tid = syscall(SYS_gettid);
}
static volatile int thread_ready, thread_stop;
static volatile long thread_tid;
static void *spin_thread(void *arg)
{
    (void)arg;
    unblock(SIGUSR1); /* the creator may have it blocked */
    thread_tid = syscall(SYS_gettid);
    __atomic_store_n(&thread_ready, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&thread_stop, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    return NULL;
}

/* FPU/SSE state across a handler: the handler clobbers XMM8; on return the
 * interrupted code must see its own value, or, if the handler edited the
 * frame's saved FPU state, the edited one (sigreturn restores from the
 * frame). The signal is sent by a raw `syscall` in the program's own code. */
static volatile int fpu_edit;

static void fpu_handler(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    ucontext_t *uc = ctx;
    __asm__ volatile("pcmpeqd %%xmm8, %%xmm8" ::: "xmm8");
    if (fpu_edit && uc->uc_mcontext.fpregs) {
        uc->uc_mcontext.fpregs->_xmm[8].element[0] = 0x12345678;
        uc->uc_mcontext.fpregs->_xmm[8].element[1] = 0;
    }
}

static unsigned long xmm8_across_signal(void)
{
    unsigned long out;
    long tid = syscall(SYS_gettid);
    __asm__ volatile("movq %[pat], %%xmm8\n\t"
                     "mov $200, %%eax\n\t" /* tkill(tid, SIGUSR2) */
                     "syscall\n\t"
                     "movq %%xmm8, %[out]"
                     : [out] "=r"(out)
                     : [pat] "r"(0xfeedfacecafebeefUL), "D"(tid), "S"((long)SIGUSR2)
                     : "rax", "rcx", "r11", "xmm8", "memory");
    return out;
}

static void check_fpu_state(void)
{
    install_info(SIGUSR2, fpu_handler, 0);
    int kept = 1, edited = 1;
    for (int i = 0; i < 20; i++) {
        fpu_edit = 0;
        unsigned long v = xmm8_across_signal();
        if (v != 0xfeedfacecafebeefUL) {
            if (kept)
                fprintf(stderr, "xmm8 after handler: %#lx\n", v);
            kept = 0;
        }
        fpu_edit = 1;
        v = xmm8_across_signal();
        if (v != 0x12345678UL) {
            if (edited)
                fprintf(stderr, "xmm8 after edited frame: %#lx\n", v);
            edited = 0;
        }
    }
    check("fpu_state_restored_after_handler", kept);
    check("fpu_state_from_edited_frame", edited);
    conf_handle(SIGUSR2, SIG_DFL, 0);
}

/* A handler on an alternate stack makes that stack read-only, then
 * returns: its rt_sigreturn reads the frame and writes nothing, so it
 * works natively. Under picos, the return's patched site used to push into
 * the runtime on that stack and die of SIGSEGV (LTP signal06, where
 * another thread flips the protection). */
static char ro_altstack[4096 * 8] __attribute__((aligned(4096)));
static volatile int ro_handled;

static void make_stack_readonly(int sig)
{
    (void)sig;
    ro_handled++;
    /* A bare `syscall`: musl's mprotect() calls a helper after it, whose
     * push would fault on the stack it has just made read-only. */
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"((long)SYS_mprotect), "D"(ro_altstack), "S"(sizeof ro_altstack),
                       "d"((long)PROT_READ)
                     : "rcx", "r11", "memory");
    (void)r;
}

static void return_on_readonly_altstack(void)
{
    stack_t ss = {.ss_sp = ro_altstack, .ss_size = sizeof ro_altstack}, old;
    sigaltstack(&ss, &old);
    struct sigaction sa, prev;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = make_stack_readonly;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGURG, &sa, &prev);
    int ok = 1;
    for (int i = 0; i < 8; i++) {
        /* Raised with a raw call: no libc code in between. */
        syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGURG);
        ok &= mprotect(ro_altstack, sizeof ro_altstack, PROT_READ | PROT_WRITE) == 0;
    }
    sigaction(SIGURG, &prev, NULL);
    sigaltstack(&old, NULL);
    checkf("sigreturn_on_readonly_altstack", ok && ro_handled == 8, "handled %d", ro_handled);
}

int main(void)
{
    conf_init();
    int r, e;

    /* 1. basic handler via raise and kill */
    conf_handle(SIGUSR1, count_handler, 0);
    raise(SIGUSR1);
    check("sig_handler_raise", hits == 1 && last_sig == SIGUSR1);
    kill(getpid(), SIGUSR1);
    check("sig_handler_kill", hits == 2);
    check("kill_sig0", kill(getpid(), 0) == 0);
    r = kill(getpid(), 12345); e = errno;
    check_errno("kill_invalid_sig", r, e, EINVAL);
    r = sigaction(SIGKILL, &(struct sigaction){ .sa_handler = count_handler }, NULL);
    e = errno;
    check_errno("sigaction_sigkill_einval", r, e, EINVAL);

    /* old action returned by sigaction */
    {
        struct sigaction old;
        sigaction(SIGUSR1, NULL, &old);
        check("sigaction_query", old.sa_handler == count_handler);
    }

    /* 2. SA_SIGINFO */
    reset_handlers();
    install_info(SIGUSR1, info_handler, 0);
    kill(getpid(), SIGUSR1);
    check("siginfo_kill_signo", saved_info.si_signo == SIGUSR1);
    checkf("siginfo_kill_code_si_user", saved_info.si_code == SI_USER, "code=%d",
           saved_info.si_code);
    check("siginfo_kill_pid", saved_info.si_pid == getpid());
    check("siginfo_kill_uid", saved_info.si_uid == getuid());
    check("siginfo_uc_sigmask_restored_mask", !sigismember(&saved_uc_mask, SIGUSR1));
    raise(SIGUSR1);
    check("siginfo_raise_signo", saved_info.si_signo == SIGUSR1);
    checkf("siginfo_raise_code_si_tkill", saved_info.si_code == SI_TKILL,
           "code=%d", saved_info.si_code);
    union sigval sv;
    sv.sival_int = 777;
    sigqueue(getpid(), SIGUSR1, sv);
    check("siginfo_sigqueue_code", saved_info.si_code == SI_QUEUE);
    check("siginfo_sigqueue_value", saved_info.si_value.sival_int == 777);
    block(SIGUSR2);
    raise(SIGUSR1);
    check("siginfo_uc_sigmask_has_blocked", sigismember(&saved_uc_mask, SIGUSR2));
    unblock(SIGUSR2);

    /* 3. block / pending / unblock */
    reset_handlers();
    conf_handle(SIGUSR1, count_handler, 0);
    block(SIGUSR1);
    raise(SIGUSR1);
    raise(SIGUSR1);
    raise(SIGUSR1);
    check("blocked_not_delivered", hits == 0);
    sigset_t pend;
    sigpending(&pend);
    check("sigpending_has_sig", sigismember(&pend, SIGUSR1));
    check("sigpending_not_other", !sigismember(&pend, SIGUSR2));
    unblock(SIGUSR1);
    check("unblock_delivers_once", hits == 1);
    sigpending(&pend);
    check("sigpending_cleared", !sigismember(&pend, SIGUSR1));
    {
        /* Nothing blocked: nothing reported (picos answers without the host). */
        sigset_t none, old;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, &old);
        sigfillset(&pend);
        check("sigpending_empty_when_unblocked", sigpending(&pend) == 0 && sigisemptyset(&pend));
        /* A process-directed signal the thread blocks. */
        hits = 0;
        block(SIGUSR1);
        kill(getpid(), SIGUSR1);
        sigpending(&pend);
        check("sigpending_process_directed", sigismember(&pend, SIGUSR1) && hits == 0);
        unblock(SIGUSR1);
        check("sigpending_process_directed_delivered", hits == 1);
        /* SIGTRAP blocked: under picos the host never blocks it, the
         * runtime holds it. */
        hits = 0;
        conf_handle(SIGTRAP, count_handler, 0);
        block(SIGTRAP);
        raise(SIGTRAP);
        sigpending(&pend);
        check("sigpending_trap_held", sigismember(&pend, SIGTRAP) && hits == 0);
        unblock(SIGTRAP);
        check("sigpending_trap_delivered", hits == 1);
        sigpending(&pend);
        check("sigpending_trap_cleared", !sigismember(&pend, SIGTRAP));
        long r = syscall(SYS_rt_sigpending, &pend, 16);
        check_errno("sigpending_bad_size", r, errno, EINVAL);
        /* A smaller size is accepted: that many bytes are written. */
        block(SIGUSR1);
        raise(SIGUSR1);
        uint64_t raw = ~0ull;
        r = syscall(SYS_rt_sigpending, &raw, 4);
        check("sigpending_short_size", r == 0 && raw == (0xffffffff00000000ull | 1u << (SIGUSR1 - 1)));
        hits = 0;
        unblock(SIGUSR1);
        check("sigpending_short_size_delivered", hits == 1);
        sigprocmask(SIG_SETMASK, &old, NULL);
    }

    /* sigprocmask semantics */
    {
        sigset_t s, old, cur;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR2);
        sigprocmask(SIG_SETMASK, &s, &old);
        sigprocmask(SIG_BLOCK, NULL, &cur);
        check("sigprocmask_setmask", sigismember(&cur, SIGUSR2) && !sigismember(&cur, SIGUSR1));
        sigaddset(&s, SIGKILL);
        sigaddset(&s, SIGSTOP);
        sigprocmask(SIG_BLOCK, &s, NULL);
        sigprocmask(SIG_BLOCK, NULL, &cur);
        check("sigprocmask_cannot_block_kill_stop",
              !sigismember(&cur, SIGKILL) && !sigismember(&cur, SIGSTOP));
        r = sigprocmask(12345, &s, NULL); e = errno;
        check_errno("sigprocmask_bad_how", r, e, EINVAL);
        sigprocmask(SIG_SETMASK, &old, NULL);
    }

    /* ignored signals are discarded, even when blocked then unblocked */
    reset_handlers();
    conf_handle(SIGUSR1, SIG_IGN, 0);
    raise(SIGUSR1);
    check("sig_ign_survives", 1);
    conf_handle(SIGUSR1, count_handler, 0);
    check("sig_ign_not_queued", hits == 0);

    /* 4. sigaltstack + SA_ONSTACK */
    reset_handlers();
    {
        size_t sz = 256 * 1024;
        alt_lo = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        alt_hi = alt_lo + sz;
        stack_t ss = { .ss_sp = alt_lo, .ss_size = sz, .ss_flags = 0 };
        check("sigaltstack_set", sigaltstack(&ss, NULL) == 0);
        stack_t q;
        sigaltstack(NULL, &q);
        check("sigaltstack_query", q.ss_sp == alt_lo && q.ss_size == sz &&
                                       !(q.ss_flags & SS_ONSTACK));
        conf_handle(SIGUSR2, alt_handler, SA_ONSTACK);
        raise(SIGUSR2);
        check("sigaltstack_handler_on_alt_stack", alt_on_stack == 1);
        check("sigaltstack_ss_onstack_in_handler", alt_ss_flag == 1);
        conf_handle(SIGUSR2, alt_handler, 0);
        raise(SIGUSR2);
        check("no_onstack_flag_uses_normal_stack", alt_on_stack == 0);
        stack_t small = { .ss_sp = alt_lo, .ss_size = 64, .ss_flags = 0 };
        r = sigaltstack(&small, NULL); e = errno;
        check_errno("sigaltstack_too_small", r, e, ENOMEM);
        stack_t dis = { .ss_flags = SS_DISABLE };
        check("sigaltstack_disable", sigaltstack(&dis, NULL) == 0 &&
                                         sigaltstack(NULL, &q) == 0 &&
                                         (q.ss_flags & SS_DISABLE));
    }

    /* 5. SIGSEGV from PROT_NONE page, recovered with siglongjmp */
    reset_handlers();
    {
        install_info(SIGSEGV, fault_handler, 0);
        char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        volatile int recovered = 0;
        if (sigsetjmp(jb, 1) == 0) {
            ((volatile char *)page)[16] = 1;
        } else {
            recovered = 1;
        }
        check("segv_longjmp_recovered", recovered);
        check("segv_signo", fault_sig == SIGSEGV);
        check("segv_si_addr", fault_addr == page + 16);
        check("segv_si_code_accerr", fault_code == SEGV_ACCERR);
        check("segv_mask_restored_by_siglongjmp", !conf_is_blocked(SIGSEGV));
        /* do it twice: the handler must still be installed */
        recovered = 0;
        if (sigsetjmp(jb, 1) == 0)
            (void)((volatile char *)page)[0];
        else
            recovered = 1;
        check("segv_second_fault_recovered", recovered);
        munmap(page, 4096);

        /* SIGFPE on integer division by zero */
        install_info(SIGFPE, fault_handler, 0);
        volatile int zero = 0, x = 10;
        recovered = 0;
        if (sigsetjmp(jb, 1) == 0)
            x = x / zero;
        else
            recovered = 1;
        check("sigfpe_recovered", recovered && fault_sig == SIGFPE);
        check("sigfpe_code_intdiv", fault_code == FPE_INTDIV);

        /* SIGILL on ud2 */
        install_info(SIGILL, fault_handler, 0);
        recovered = 0;
        if (sigsetjmp(jb, 1) == 0)
            __asm__ volatile("ud2");
        else
            recovered = 1;
        check("sigill_recovered", recovered && fault_sig == SIGILL);
        check("sigill_code_illopn", fault_code == ILL_ILLOPN);
    }

    /* 6. SIGSEGV recovery by rewriting RIP in the ucontext */
    reset_handlers();
    {
        install_info(SIGSEGV, rip_handler, 0);
        volatile long v = fault_load((long *)8);
        check("segv_rip_fixup", v == 0x5a5a && rip_fixups == 1);
        long good = 99;
        check("fault_load_normal", fault_load(&good) == 99 && rip_fixups == 1);
    }

    /* 7. SA_RESETHAND */
    reset_handlers();
    {
        conf_handle(SIGUSR2, count_handler, SA_RESETHAND);
        raise(SIGUSR2);
        struct sigaction q;
        sigaction(SIGUSR2, NULL, &q);
        check("sa_resethand_ran", hits == 1);
        check("sa_resethand_reset_to_dfl", q.sa_handler == SIG_DFL);
    }

    /* 8. SA_NODEFER vs default deferral; nested signals */
    reset_handlers();
    {
        seq_len = 0; hits = 0; depth = 0; max_depth = 0;
        conf_handle(SIGUSR1, self_raise_handler, 0);
        raise(SIGUSR1);
        show("deferred_sequence", "%s", seq);
        check("default_blocks_sig_in_handler", nodefer_blocked_in_handler == 1);
        check("deferred_not_nested", max_depth == 1 && strcmp(seq, "SsSs") == 0);

        seq_len = 0; hits = 0; depth = 0; max_depth = 0;
        conf_handle(SIGUSR1, self_raise_handler, SA_NODEFER);
        raise(SIGUSR1);
        show("nodefer_sequence", "%s", seq);
        check("sa_nodefer_not_blocked_in_handler", nodefer_blocked_in_handler == 0);
        check("sa_nodefer_nested", max_depth == 2 && strcmp(seq, "SSss") == 0);

        seq_len = 0;
        conf_handle(SIGUSR1, nest_usr1, 0);
        conf_handle(SIGUSR2, nest_usr2, 0);
        raise(SIGUSR1);
        show("nested_sequence", "%s", seq);
        check("nested_other_signal", strcmp(seq, "ABba") == 0);

        /* sa_mask blocks other signals during the handler */
        seq_len = 0;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = nest_usr1;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGUSR2);
        sigaction(SIGUSR1, &sa, NULL);
        raise(SIGUSR1);
        show("sa_mask_sequence", "%s", seq);
        check("sa_mask_defers_other", strcmp(seq, "AaBb") == 0);
    }

    /* 9. SIGCHLD */
    reset_handlers();
    {
        install_info(SIGCHLD, chld_handler, 0);
        sigset_t blk, old;
        sigemptyset(&blk);
        sigaddset(&blk, SIGCHLD);
        sigprocmask(SIG_BLOCK, &blk, &old);
        pid_t pid = fork();
        if (pid == 0)
            _exit(3);
        while (!chld_hits)
            sigsuspend(&old);
        sigprocmask(SIG_SETMASK, &old, NULL);
        int st;
        pid_t w = waitpid(pid, &st, 0);
        check("sigchld_delivered", chld_hits == 1);
        check("sigchld_code_exited", chld_code == CLD_EXITED);
        check("sigchld_status", chld_status == 3);
        check("sigchld_waitpid", w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 3);
    }

    /* 10. alarm + pause, setitimer */
    reset_handlers();
    {
        conf_handle(SIGALRM, alarm_counter, 0);
        alarm(10);
        unsigned left = alarm(0);
        check("alarm_returns_remaining", left == 10 || left == 9);
        alarm_hits = 0;
        alarm(1);
        r = pause(); e = errno;
        check("alarm_pause_woken", alarm_hits == 1);
        check_errno("pause_eintr", r, e, EINTR);

        alarm_hits = 0;
        set_timer_ms(50);
        while (!alarm_hits)
            pause();
        check("setitimer_fires", alarm_hits == 1);
        struct itimerval cur;
        getitimer(ITIMER_REAL, &cur);
        check("setitimer_oneshot_disarmed",
              cur.it_value.tv_sec == 0 && cur.it_value.tv_usec == 0);
    }

    /* 11. signal mask inherited across fork, pending set is not */
    reset_handlers();
    {
        block(SIGUSR2);
        raise(SIGUSR2); /* pending in parent */
        pid_t pid = fork();
        if (pid == 0) {
            sigset_t p;
            sigpending(&p);
            int code = 0;
            if (!conf_is_blocked(SIGUSR2))
                code |= 1;
            if (sigismember(&p, SIGUSR2))
                code |= 2;
            _exit(code);
        }
        int st;
        waitpid(pid, &st, 0);
        check("fork_inherits_mask", WIFEXITED(st) && !(WEXITSTATUS(st) & 1));
        check("fork_clears_pending", WIFEXITED(st) && !(WEXITSTATUS(st) & 2));
        /* discard the pending SIGUSR2 */
        conf_handle(SIGUSR2, SIG_IGN, 0);
        unblock(SIGUSR2);
        conf_handle(SIGUSR2, SIG_DFL, 0);
    }

    /* handlers inherited across fork */
    reset_handlers();
    {
        conf_handle(SIGUSR1, count_handler, 0);
        pid_t pid = fork();
        if (pid == 0) {
            raise(SIGUSR1);
            _exit(hits == 1 ? 0 : 1);
        }
        int st;
        waitpid(pid, &st, 0);
        check("fork_inherits_handler", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }

    /* 12. sigsuspend */
    reset_handlers();
    {
        conf_handle(SIGUSR1, count_handler, 0);
        sigset_t blk, old, empty;
        sigemptyset(&blk);
        sigaddset(&blk, SIGUSR1);
        sigprocmask(SIG_BLOCK, &blk, &old);
        raise(SIGUSR1);
        sigemptyset(&empty);
        r = sigsuspend(&empty); e = errno;
        check_errno("sigsuspend_returns_eintr", r, e, EINTR);
        check("sigsuspend_delivered", hits == 1);
        check("sigsuspend_mask_restored", conf_is_blocked(SIGUSR1));

        /* signal sent by a child while we are suspended */
        hits = 0;
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid == 0) {
            sleep_ms(50);
            kill(parent, SIGUSR1);
            _exit(0);
        }
        while (!hits)
            sigsuspend(&empty);
        check("sigsuspend_signal_from_child", hits == 1);
        check("sigsuspend_child_siginfo_mask", conf_is_blocked(SIGUSR1));
        waitpid(pid, NULL, 0);
        sigprocmask(SIG_SETMASK, &old, NULL);
    }

    /* 13. SA_RESTART on a pipe read interrupted by SIGALRM */
    reset_handlers();
    {
        pipe(restart_pipe);
        char c = 0;
        alarm_hits = 0;
        conf_handle(SIGALRM, alarm_writer, SA_RESTART);
        set_timer_ms(100);
        ssize_t n = read(restart_pipe[0], &c, 1);
        check("sa_restart_read_completes", n == 1 && c == 'R');
        check("sa_restart_handler_ran", alarm_hits == 1);

        alarm_hits = 0;
        conf_handle(SIGALRM, alarm_counter, 0);
        repeat_timer_ms(100);
        n = read(restart_pipe[0], &c, 1); e = errno;
        stop_timer();
        check_errno("no_restart_read_eintr", n, e, EINTR);
        check("no_restart_handler_ran", alarm_hits >= 1);

        /* nanosleep is never restarted; it reports EINTR */
        alarm_hits = 0;
        conf_handle(SIGALRM, alarm_counter, SA_RESTART);
        repeat_timer_ms(50);
        struct timespec ts = { 5, 0 }, rem = { 0, 0 };
        r = nanosleep(&ts, &rem); e = errno;
        stop_timer();
        check_errno("nanosleep_eintr_even_with_restart", r, e, EINTR);
        check("nanosleep_remaining", rem.tv_sec >= 3 && rem.tv_sec <= 5);

        /* System V message calls are never restarted either (signal(7),
         * LTP msgrcv05, msgsnd05): EINTR with SA_RESTART. */
        int q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
        struct { long type; char text[8]; } m = { 1, "x" };
        alarm_hits = 0;
        repeat_timer_ms(50);
        r = (int)msgrcv(q, &m, sizeof m.text, 1, 0); e = errno;
        stop_timer();
        check_errno("msgrcv_eintr_even_with_restart", r, e, EINTR);
        check("msgrcv_handler_ran", alarm_hits >= 1);
        /* A full queue: msgsnd waits, then EINTR. */
        struct msqid_ds ds;
        msgctl(q, IPC_STAT, &ds);
        ds.msg_qbytes = sizeof m.text;
        msgctl(q, IPC_SET, &ds);
        msgsnd(q, &m, sizeof m.text, 0);
        alarm_hits = 0;
        repeat_timer_ms(50);
        r = msgsnd(q, &m, sizeof m.text, 0); e = errno;
        stop_timer();
        check_errno("msgsnd_eintr_even_with_restart", r, e, EINTR);
        check("msgsnd_handler_ran", alarm_hits >= 1);
        msgctl(q, IPC_RMID, NULL);
        close(restart_pipe[0]);
        close(restart_pipe[1]);
    }

    /* 14. real-time signals queue, standard ones coalesce */
    reset_handlers();
    {
        int rt = SIGRTMIN + 1;
        install_info(rt, rt_handler, 0);
        block(rt);
        for (int i = 1; i <= 3; i++) {
            union sigval v;
            v.sival_int = i * 10;
            sigqueue(getpid(), rt, v);
        }
        check("rt_blocked", rt_count == 0);
        unblock(rt);
        show("rt_queued_count", "%d", rt_count);
        check("rt_order", rt_count == 3 && rt_values[0] == 10 && rt_values[1] == 20 &&
                              rt_values[2] == 30);
        conf_handle(rt, SIG_DFL, 0);
    }

    /* 15. sigtimedwait / sigwaitinfo / signalfd */
    reset_handlers();
    {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR1);
        sigprocmask(SIG_BLOCK, &s, NULL);
        raise(SIGUSR1);
        siginfo_t si;
        struct timespec ts = { 1, 0 };
        /* raw syscall: glibc's wrapper rewrites SI_TKILL to SI_USER */
        r = (int)syscall(SYS_rt_sigtimedwait, &s, &si, &ts, _NSIG / 8);
        checkf("sigtimedwait_gets_signal", r == SIGUSR1 && si.si_signo == SIGUSR1 &&
                                              si.si_code == SI_TKILL, "r=%d signo=%d code=%d",
               r, si.si_signo, si.si_code);
        raise(SIGUSR1);
        r = sigtimedwait(&s, &si, &ts);
        check("sigtimedwait_libc", r == SIGUSR1 && si.si_signo == SIGUSR1);
        struct timespec zero = { 0, 10 * 1000000L };
        r = sigtimedwait(&s, &si, &zero); e = errno;
        check_errno("sigtimedwait_timeout", r, e, EAGAIN);
        kill(getpid(), SIGUSR1);
        r = sigwaitinfo(&s, &si);
        check("sigwaitinfo", r == SIGUSR1 && si.si_code == SI_USER);

        int sfd = signalfd(-1, &s, SFD_CLOEXEC);
        check("signalfd_create", sfd >= 0);
        kill(getpid(), SIGUSR1);
        struct signalfd_siginfo fi;
        ssize_t n = read(sfd, &fi, sizeof fi);
        check("signalfd_read", n == (ssize_t)sizeof fi && fi.ssi_signo == SIGUSR1 &&
                                   fi.ssi_code == SI_USER &&
                                   fi.ssi_pid == (uint32_t)getpid());
        close(sfd);
        sigprocmask(SIG_UNBLOCK, &s, NULL);
    }

    /* 16. SIGPIPE */
    reset_handlers();
    {
        int p[2];
        pipe(p);
        close(p[0]);
        conf_handle(SIGPIPE, count_handler, 0);
        r = (int)write(p[1], "x", 1); e = errno;
        check("sigpipe_delivered", hits == 1 && last_sig == SIGPIPE);
        check_errno("sigpipe_write_epipe", r, e, EPIPE);
        conf_handle(SIGPIPE, SIG_IGN, 0);
        r = (int)write(p[1], "x", 1); e = errno;
        check_errno("sigpipe_ignored_epipe", r, e, EPIPE);
        close(p[1]);
        conf_handle(SIGPIPE, SIG_DFL, 0);
    }

    /* 17. pthread_kill targets a specific thread */
    reset_handlers();
    {
        conf_handle(SIGUSR1, tid_handler, 0);
        pthread_t t;
        pthread_create(&t, NULL, spin_thread, NULL);
        while (!__atomic_load_n(&thread_ready, __ATOMIC_SEQ_CST))
            sleep_ms(1);
        handler_tid = 0;
        pthread_kill(t, SIGUSR1);
        for (int i = 0; i < 2000 && !handler_tid; i++)
            sleep_ms(1);
        check("pthread_kill_runs_on_target", handler_tid == thread_tid &&
                                                 handler_tid != syscall(SYS_gettid));
        __atomic_store_n(&thread_stop, 1, __ATOMIC_SEQ_CST);
        pthread_join(t, NULL);

        /* a process-directed signal while main blocks it goes to the thread */
        thread_ready = 0;
        thread_stop = 0;
        block(SIGUSR1);
        pthread_create(&t, NULL, spin_thread, NULL);
        while (!__atomic_load_n(&thread_ready, __ATOMIC_SEQ_CST))
            sleep_ms(1);
        handler_tid = 0;
        kill(getpid(), SIGUSR1);
        for (int i = 0; i < 2000 && !handler_tid; i++)
            sleep_ms(1);
        check("process_signal_to_unblocked_thread", handler_tid == thread_tid);
        __atomic_store_n(&thread_stop, 1, __ATOMIC_SEQ_CST);
        pthread_join(t, NULL);
        unblock(SIGUSR1);
    }

    check_fpu_state();
    return_on_readonly_altstack();
    return conf_finish("signals");
}
