/* POSIX message queues under picos. Not in the sandboxed run: Landlock
 * refuses the queue's open (mq_open: EACCES), which no rule can allow. */
#include "conformance.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>

static void *idle_thread(void *arg)
{
    return arg;
}

/* A message queue's notice (mq_notify) survives a syscall site being
 * patched while the process has threads: picos writes the code from a
 * transient task with a descriptor table of its own, a copy of ours; Linux
 * drops the notice when the process that asked for it closes the queue,
 * and once that task was one of our threads, its copies counted (LTP
 * mq_notify03). The calls are made with syscall() so that both libcs make
 * the same ones; `fresh_site` is a syscall instruction never run before
 * (picos patches a site the second time it traps there). */
__attribute__((noinline)) static long fresh_site(void)
{
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"((long)SYS_getppid) : "rcx", "r11", "memory");
    return r;
}

struct mq_attr_raw {
    long flags, maxmsg, msgsize, curmsgs, pad[4];
};

static void mq_notice_survives_patching(void)
{
    pthread_t t;
    pthread_create(&t, NULL, idle_thread, NULL);
    pthread_join(t, NULL);
    char name[64];
    snprintf(name, sizeof name, "picos_conf_mq_%d", (int)getpid());
    struct mq_attr_raw attr = {.maxmsg = 1, .msgsize = 8};
    long q = syscall(SYS_mq_open, name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
    if (q < 0) {
        checkf("mq_notice_after_patch", 0, "mq_open: %s", errno_name(errno));
        return;
    }
    syscall(SYS_mq_unlink, name);
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, &old);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR2;
    check("mq_notify_registered", syscall(SYS_mq_notify, q, &ev) == 0);
    check("mq_fresh_site", fresh_site() == getppid() && fresh_site() == getppid());
    check("mq_send", syscall(SYS_mq_timedsend, q, "hello", 6, 0, NULL) == 0);
    struct timespec ts = {5, 0};
    siginfo_t si;
    int sig = sigtimedwait(&set, &si, &ts);
    checkf("mq_notice_after_patch", sig == SIGUSR2 && si.si_code == SI_MESGQ,
           "sigtimedwait: %d (%s), code %d", sig, errno_name(errno), si.si_code);
    sigprocmask(SIG_SETMASK, &old, NULL);
    close((int)q);
}

int main(void)
{
    conf_init();
    mq_notice_survives_patching();
    return conf_finish("mqueue");
}
