/* execve / vfork / posix_spawn conformance.
 * Without arguments runs the driver; the driver re-executes this binary
 * (argv[0], must contain a '/') with a mode argument:
 *   child ARGS...     print argv/env, exit 7
 *   sigcheck          verify dispositions/mask after exec
 *   fdcheck KEEP GONE verify FD_CLOEXEC handling across exec
 *   pidcheck PID      verify pid is unchanged by exec (and tid == pid) */
#include "conformance.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

extern char **environ;

static const char *self;
static char tmpdir[] = "/tmp/picos-exec-XXXXXX";

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int mode_child(int argc, char **argv)
{
    printf("exec_child: argc=%d argv0=%s", argc, base_name(argv[0]));
    for (int i = 2; i < argc; i++)
        printf(" [%s]", argv[i]);
    printf("\n");
    const char *v = getenv("PICOS_EXEC_VAR");
    int n = 0;
    for (char **e = environ; *e; e++)
        n++;
    printf("exec_child: PICOS_EXEC_VAR=%s environ_count=%d test_var=%s\n", v ? v : "(unset)",
           n, getenv("PICOS_TEST_VAR") ? "set" : "unset");
    fflush(stdout);
    return 7;
}

static int mode_sigcheck(void)
{
    struct sigaction sa;
    sigaction(SIGUSR2, NULL, &sa);
    int ign = sa.sa_handler == SIG_IGN;
    /* A synchronous fault's, a default-ignored one's and a real-time
     * signal's SIG_IGN carry over too; SIGINT, ignored then reset, not. */
    int others = 1;
    const int also[] = { SIGSEGV, SIGCHLD, SIGRTMIN + 5 };
    for (unsigned i = 0; i < sizeof also / sizeof also[0]; i++) {
        sigaction(also[i], NULL, &sa);
        others &= sa.sa_handler == SIG_IGN;
    }
    sigaction(SIGINT, NULL, &sa);
    int reset = sa.sa_handler == SIG_DFL;
    sigaction(SIGUSR1, NULL, &sa);
    int dfl = sa.sa_handler == SIG_DFL;
    sigset_t cur, pend;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    int masked = sigismember(&cur, SIGTERM);
    sigpending(&pend);
    int pending = sigismember(&pend, SIGTERM);
    check("after_exec_sig_ign_preserved", ign);
    check("after_exec_sig_ign_of_segv_chld_rt_preserved", others);
    check("after_exec_sig_dfl_again_stays_dfl", reset);
    check("after_exec_handler_reset_to_dfl", dfl);
    check("after_exec_mask_preserved", masked);
    check("after_exec_pending_preserved", pending);
    return (ign && others && reset && dfl && masked && pending) ? 0 : 1;
}

static int mode_fdcheck(int keep, int gone)
{
    int ok_keep = fcntl(keep, F_GETFD) != -1;
    int r = fcntl(gone, F_GETFD), e = errno;
    check("after_exec_plain_fd_kept", ok_keep);
    check_errno("after_exec_cloexec_fd_closed", r, e, EBADF);
    char buf[16] = {0};
    ssize_t n = read(keep, buf, sizeof buf - 1);
    check("after_exec_kept_fd_readable", n == 5 && !strcmp(buf, "pipe!"));
    return (ok_keep && r == -1) ? 0 : 1;
}

static int mode_pidcheck(long want)
{
    long pid = getpid(), tid = syscall(SYS_gettid);
    check("after_exec_same_pid", pid == want);
    check("after_exec_tid_eq_pid", tid == pid);
    return pid == want && tid == pid ? 0 : 1;
}

static void dummy_handler(int sig) { (void)sig; }

static void *exec_from_thread(void *arg)
{
    char *a = arg;
    char *args[] = { (char *)self, "pidcheck", a, NULL };
    execve(self, args, environ);
    _exit(126);
}

static void write_file(const char *path, const char *content, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    write_all(fd, content, strlen(content));
    close(fd);
    chmod(path, mode);
}

/* Run through a symlink: /proc/self/exe names the real file (symlinks
 * resolved), while AT_EXECFN and argv[0] keep the name that was executed. */
static int mode_execheck(const char *real)
{
    char link[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", link, sizeof link - 1);
    if (n < 0)
        return 10;
    link[n] = 0;
    char want[PATH_MAX];
    if (!realpath(real, want))
        return 11;
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    if (strcmp(link, want) != 0)
        return 12;
    if (!execfn || !strstr(execfn, "selflink"))
        return 13;
    return 0;
}

/* Run as ./prog from the working directory: AT_EXECFN is the path as given. */
static int mode_relcheck(void)
{
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    return execfn && strcmp(execfn, "./prog") == 0 ? 0 : 14;
}

/* Copies file `from` to `to`, mode 0755. */
static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[65536];
    ssize_t n;
    int ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = write(out, buf, n) == n;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return ok && chmod(to, 0755) == 0;
}

/* A path relative to the working directory is opened from there, as the
 * kernel does: a user who may enter the directory but not one of its
 * ancestors still runs ./prog (LTP access02), and AT_EXECFN is "./prog".
 * Its own mode ("as-nobody"), as it needs root's CAP_SETUID, which the
 * sandboxed run drops; without root it says so. */
static int mode_as_nobody(void)
{
    int st;
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    if (geteuid() == 0) {
        char locked[PATH_MAX], open_dir[PATH_MAX], prog[PATH_MAX];
        snprintf(locked, sizeof locked, "%s/locked", tmpdir);
        snprintf(open_dir, sizeof open_dir, "%s/open", locked);
        snprintf(prog, sizeof prog, "%s/prog", open_dir);
        int made = mkdir(locked, 0700) == 0 && mkdir(open_dir, 0777) == 0 &&
                   chmod(open_dir, 0777) == 0 && copy_file(self, prog);
        pid_t pid = made ? fork() : -1;
        if (pid == 0) {
            if (chdir(open_dir) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
                _exit(20);
            execl("./prog", "./prog", "relcheck", (char *)NULL);
            _exit(errno == EACCES ? 21 : 22);
        }
        st = wait_status(pid);
        check("execve_relative_below_unsearchable_dir", WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            fprintf(stderr, "relative exec as nobody: status %d\n", st);
        unlink(prog);
        rmdir(open_dir);
        rmdir(locked);
    } else {
        printf("execve_relative_below_unsearchable_dir: skipped (needs root to become nobody)\n");
    }

    check("cleanup", rmdir(tmpdir) == 0);
    return conf_finish("exec as-nobody");
}

int main(int argc, char **argv)
{
    /* Started with no arguments at all (the driver's last check): Linux
     * gives such a program one, the empty string. */
    if (argc == 0)
        return 40;
    if (argc == 1 && argv[0][0] == '\0')
        return 41;
    conf_init();
    self = argv[0];
    if (argc > 1) {
        if (!strcmp(argv[1], "child"))
            return mode_child(argc, argv);
        if (!strcmp(argv[1], "sigcheck"))
            return mode_sigcheck();
        if (!strcmp(argv[1], "fdcheck") && argc == 4)
            return mode_fdcheck(atoi(argv[2]), atoi(argv[3]));
        if (!strcmp(argv[1], "pidcheck") && argc == 3)
            return mode_pidcheck(atol(argv[2]));
        if (!strcmp(argv[1], "execheck") && argc == 3)
            return mode_execheck(argv[2]);
        if (!strcmp(argv[1], "relcheck"))
            return mode_relcheck();
        if (!strcmp(argv[1], "as-nobody"))
            return mode_as_nobody();
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    if (!strchr(self, '/')) {
        fprintf(stderr, "argv[0] must be a path\n");
        return 2;
    }
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    char path[PATH_MAX];
    int r, e, st;

    /* /proc/self/exe through a symlink */
    {
        char link[PATH_MAX], real[PATH_MAX];
        snprintf(link, sizeof link, "%s/selflink", tmpdir);
        if (!realpath(self, real) || symlink(real, link) != 0) {
            perror("symlink");
            return 2;
        }
        pid_t pid = fork();
        if (pid == 0) {
            execl(link, link, "execheck", real, (char *)NULL);
            _exit(127);
        }
        waitpid(pid, &st, 0);
        check("proc_self_exe_resolves_symlinks", WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
            fprintf(stderr, "execheck status %d\n", st);
        unlink(link);
    }

    /* fork + execve self with args and a custom envp */
    {
        pid_t pid = fork();
        if (pid == 0) {
            char *args[] = { (char *)self, "child", "one", "two words", "", NULL };
            char *envp[] = { "PICOS_EXEC_VAR=42", NULL };
            execve(self, args, envp);
            _exit(127);
        }
        st = wait_status(pid);
        check("fork_execve_exit_7", WIFEXITED(st) && WEXITSTATUS(st) == 7);
    }

    /* custom argv[0] */
    {
        pid_t pid = fork();
        if (pid == 0) {
            char *args[] = { "custom-argv0", "child", NULL };
            execve(self, args, environ);
            _exit(127);
        }
        st = wait_status(pid);
        check("execve_custom_argv0", WIFEXITED(st) && WEXITSTATUS(st) == 7);
    }

    /* failures return in the calling process */
    {
        char *args[] = { "x", NULL };
        snprintf(path, sizeof path, "%s/does-not-exist", tmpdir);
        r = execve(path, args, environ); e = errno;
        check_errno("execve_missing_enoent", r, e, ENOENT);

        snprintf(path, sizeof path, "%s/not-executable", tmpdir);
        write_file(path, "#!/bin/sh\necho nope\n", 0644);
        r = execve(path, args, environ); e = errno;
        check_errno("execve_not_executable_eacces", r, e, EACCES);

        r = execve(tmpdir, args, environ); e = errno;
        check_errno("execve_directory_eacces", r, e, EACCES);

        snprintf(path, sizeof path, "%s/garbage", tmpdir);
        write_file(path, "\x01\x02\x03 this is not a program\n", 0755);
        r = execve(path, args, environ); e = errno;
        check_errno("execve_garbage_enoexec", r, e, ENOEXEC);

        snprintf(path, sizeof path, "%s/bad-interp", tmpdir);
        write_file(path, "#!/nonexistent/picos-interp\n", 0755);
        r = execve(path, args, environ); e = errno;
        check_errno("execve_missing_interpreter_enoent", r, e, ENOENT);

        snprintf(path, sizeof path, "%s/not-executable/x", tmpdir);
        r = execve(path, args, environ); e = errno;
        check_errno("execve_enotdir", r, e, ENOTDIR);
    }

    /* #! script */
    {
        snprintf(path, sizeof path, "%s/script.sh", tmpdir);
        write_file(path,
                   "#!/bin/sh\n"
                   "echo \"script: argc=$# [$1] [$2] var=$PICOS_SCRIPT_VAR\"\n"
                   "exit 5\n",
                   0755);
        pid_t pid = fork();
        if (pid == 0) {
            char *args[] = { path, "alpha", "beta gamma", NULL };
            char *envp[] = { "PICOS_SCRIPT_VAR=scripted", "PATH=/usr/bin:/bin", NULL };
            execve(path, args, envp);
            _exit(127);
        }
        st = wait_status(pid);
        check("execve_script_exit_5", WIFEXITED(st) && WEXITSTATUS(st) == 5);
    }

    /* vfork + exec, vfork + _exit */
    {
        pid_t pid = vfork();
        if (pid == 0) {
            char *args[] = { (char *)self, "child", "via-vfork", NULL };
            char *envp[] = { "PICOS_EXEC_VAR=vfork", NULL };
            execve(self, args, envp);
            _exit(127);
        }
        st = wait_status(pid);
        check("vfork_execve_exit_7", WIFEXITED(st) && WEXITSTATUS(st) == 7);
        pid = vfork();
        if (pid == 0)
            _exit(9);
        st = wait_status(pid);
        check("vfork_exit_9", WIFEXITED(st) && WEXITSTATUS(st) == 9);
    }

    /* posix_spawn of /bin/echo, posix_spawnp with PATH lookup and redirection */
    {
        pid_t pid;
        char *args[] = { "echo", "spawned:", "posix_spawn", "ok", NULL };
        r = posix_spawn(&pid, "/bin/echo", NULL, NULL, args, environ);
        st = r == 0 ? wait_status(pid) : -1; /* wait before printing: echo shares stdout */
        check("posix_spawn_returns_0", r == 0);
        check("posix_spawn_echo_exit_0", WIFEXITED(st) && WEXITSTATUS(st) == 0);

        int p[2];
        pipe(p);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_addclose(&fa, p[0]);
        char *args2[] = { "echo", "through", "pipe", NULL };
        r = posix_spawnp(&pid, "echo", &fa, NULL, args2, environ);
        close(p[1]);
        char buf[64] = {0};
        read_full(p[0], buf, sizeof buf - 1);
        close(p[0]);
        st = wait_status(pid);
        posix_spawn_file_actions_destroy(&fa);
        check("posix_spawnp_returns_0", r == 0);
        show("posix_spawnp_captured", "%s", strtok(buf, "\n") ? buf : "");
        check("posix_spawnp_exit_0", WIFEXITED(st) && WEXITSTATUS(st) == 0);

        char *args3[] = { "x", NULL };
        r = posix_spawn(&pid, "/nonexistent/picos-prog", NULL, NULL, args3, environ);
        int ok = r == ENOENT;
        if (r == 0) { /* old glibc reports via exit 127 */
            st = wait_status(pid);
            ok = WIFEXITED(st) && WEXITSTATUS(st) == 127;
        }
        check("posix_spawn_missing_fails", ok);
    }

    /* execvp PATH lookup */
    {
        pid_t pid = fork();
        if (pid == 0) {
            execlp("echo", "echo", "execlp:", "found", "via", "PATH", (char *)NULL);
            _exit(127);
        }
        st = wait_status(pid);
        check("execlp_exit_0", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }

    /* dispositions and mask across exec */
    {
        pid_t pid = fork();
        if (pid == 0) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = SIG_IGN;
            sigaction(SIGUSR2, &sa, NULL);
            sigaction(SIGSEGV, &sa, NULL);
            sigaction(SIGCHLD, &sa, NULL);
            sigaction(SIGRTMIN + 5, &sa, NULL);
            sigaction(SIGINT, &sa, NULL);
            sa.sa_handler = SIG_DFL;
            sigaction(SIGINT, &sa, NULL);
            sa.sa_handler = dummy_handler;
            sigaction(SIGUSR1, &sa, NULL);
            sigset_t s;
            sigemptyset(&s);
            sigaddset(&s, SIGTERM);
            sigprocmask(SIG_BLOCK, &s, NULL);
            raise(SIGTERM); /* stays pending across exec */
            char *args[] = { (char *)self, "sigcheck", NULL };
            execve(self, args, environ);
            _exit(127);
        }
        st = wait_status(pid);
        check("exec_signal_state_child_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }

    /* FD_CLOEXEC across exec */
    {
        int keep[2], gone[2];
        pipe(keep);
        pipe2(gone, O_CLOEXEC);
        write(keep[1], "pipe!", 5);
        close(keep[1]);
        pid_t pid = fork();
        if (pid == 0) {
            char a[16], b[16];
            snprintf(a, sizeof a, "%d", keep[0]);
            snprintf(b, sizeof b, "%d", gone[0]);
            char *args[] = { (char *)self, "fdcheck", a, b, NULL };
            execve(self, args, environ);
            _exit(127);
        }
        st = wait_status(pid);
        check("exec_cloexec_child_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
        close(keep[0]);
        close(gone[0]);
        close(gone[1]);
    }

    /* exec keeps the pid */
    {
        pid_t pid = fork();
        if (pid == 0) {
            char a[32];
            snprintf(a, sizeof a, "%ld", (long)getpid());
            char *args[] = { (char *)self, "pidcheck", a, NULL };
            execve(self, args, environ);
            _exit(127);
        }
        st = wait_status(pid);
        check("exec_same_pid_child_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }

    /* exec from a secondary thread: the other threads die, pid is kept */
    {
        pid_t pid = fork();
        if (pid == 0) {
            static char a[32];
            snprintf(a, sizeof a, "%ld", (long)getpid());
            pthread_t t;
            pthread_create(&t, NULL, exec_from_thread, a);
            for (;;)
                pause();
        }
        st = wait_status(pid);
        check("exec_from_thread_child_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }

    /* execve with an empty argv (argc 0): since Linux 5.18 the program
     * gets argc 1 and an empty argv[0] (CVE-2021-4034). */
    {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            char *none[] = {NULL};
            execve(self, none, environ);
            _exit(127);
        }
        st = wait_status(pid);
        checkf("exec_without_arguments_gets_an_empty_argv0",
               WIFEXITED(st) && WEXITSTATUS(st) == 41, "status %#x", st);
    }

    snprintf(path, sizeof path, "%s/not-executable", tmpdir);
    unlink(path);
    snprintf(path, sizeof path, "%s/garbage", tmpdir);
    unlink(path);
    snprintf(path, sizeof path, "%s/bad-interp", tmpdir);
    unlink(path);
    snprintf(path, sizeof path, "%s/script.sh", tmpdir);
    unlink(path);
    check("cleanup", rmdir(tmpdir) == 0);

    return conf_finish("exec");
}
