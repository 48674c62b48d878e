/* The sandbox's escape suite. Each attack tries to reach something outside
 * the sandbox: a file outside the mounts, a process outside the
 * picoprocess tree, the network, the kernel's administration. Natively
 * every attack succeeds (as root, in a mount namespace of its own), so the
 * test can see an escape; under `picos run --sandbox` every one must fail,
 * three times: once through the runtime (the program's calls as it makes
 * them), and twice around it, as a program that has taken the runtime
 * over would: through a `syscall; ret` gadget in the runtime's own text
 * ("bypass"), and with the Syscall User Dispatch selector byte of the
 * thread's record (found through `rdgsbase`, at the offset the test passes
 * in ESCAPE_SUD_OFFSET) cleared around its own `syscall` ("selector").
 * The runtime never sees those calls: only the kernel's rules stand.
 *
 *   escape OUT PID ABSTRACT PATHSOCK TCPPORT FREEPORT
 *
 * OUT: a directory outside the mounts holding `secret`, `victim` (may be
 * changed), `true` (an executable); PID: a process outside the tree;
 * ABSTRACT: the name of an abstract Unix socket a process outside listens
 * on; PATHSOCK: the path of a Unix socket outside the mounts whose server
 * sends a descriptor of OUT/secret to whoever connects; TCPPORT: a TCP
 * port listening on 127.0.0.1 outside; FREEPORT: a free TCP port.
 *
 * Prints, for each attack and way: "NAME WAY: escaped" or
 * "NAME WAY: blocked (ERRNO or signal)"; WAY is "direct" natively, and
 * "runtime", "bypass" and (with ESCAPE_SUD_OFFSET) "selector" under picos. Exits 2 if under picos (the runtime
 * is mapped) but no gadget was found: the bypass could not be tried.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <termios.h>
#include <unistd.h>

#include "runtime_text.h"

#define PTRACE_SEIZE_compat() 0x4206

static const char *out, *abstract_name, *pathsock;
static int pid_out, tcp_port, free_port;
static void *gadget;  /* `syscall; ret` in the runtime's text, if found */
static int bypass;    /* 1: through the gadget; 2: with the selector cleared */
static long sud_offset = -1; /* the selector's offset in the thread's record */
static char path[4096], path2[4096], buf[4096];

/* A system call, made with the `syscall` instruction here (natively, and
 * under picos through the runtime), or through the gadget (bypass). The
 * file is built with -mno-red-zone: the `call` pushes below the stack
 * pointer. Returns -errno as the kernel does. */
static long sc6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
    long ret;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    if (bypass == 2) {
        unsigned long gs;
        __asm__ volatile("rdgsbase %0" : "=r"(gs));
        volatile unsigned char *sel = (unsigned char *)(gs + sud_offset);
        *sel = 0; /* SYSCALL_DISPATCH_FILTER_ALLOW */
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
        *sel = 1;
    } else if (bypass == 1 && gadget)
        __asm__ volatile("call *%[g]"
                         : "=a"(ret)
                         : [g] "r"(gadget), "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10),
                           "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
    else
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
    return ret;
}
#define SC(nr, ...) sc_n(nr, __VA_ARGS__, 0, 0, 0, 0, 0, 0)
#define sc_n(nr, a, b, c, d, e, f, ...) \
    sc6(nr, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/* Is the runtime mapped? With `want_gadget`, also finds `gadget`. */
static int runtime_mapped(int want_gadget) {
    unsigned char *g = NULL;
    int found = runtime_text(want_gadget ? &g : NULL);
    if (want_gadget && !gadget)
        gadget = g;
    return found;
}

/* Result of one attack: 0 = escaped, else a positive errno. */
#define ESC 0
static int neg(long r) { return r < 0 ? (int)-r : ESC; }

/* Reads the secret from fd (closing it): escaped if it says "secret". */
static int reads_secret(long fd) {
    if (fd < 0)
        return (int)-fd;
    long n = SC(SYS_read, fd, buf, sizeof buf - 1);
    SC(SYS_close, fd);
    if (n < 0)
        return (int)-n;
    buf[n] = 0;
    return strstr(buf, "secret") ? ESC : EIO;
}

static const char *at(const char *name) {
    snprintf(path, sizeof path, "%s/%s", out, name);
    return path;
}

/* Files outside the mounts. */
static int open_absolute(void) { return reads_secret(SC(SYS_openat, AT_FDCWD, at("secret"), O_RDONLY)); }
static int create_outside(void) {
    long fd = SC(SYS_openat, AT_FDCWD, at("created"), O_CREAT | O_WRONLY, 0644);
    if (fd >= 0)
        SC(SYS_close, fd);
    return neg(fd);
}
static int dotdot(void) {
    /* As many ".." as the working directory is deep, then OUT. */
    char *p = path2;
    char cwd[2048];
    if (!getcwd(cwd, sizeof cwd))
        strcpy(cwd, "/a/b/c/d/e/f");
    for (char *c = cwd; *c; c++)
        if (*c == '/')
            p += sprintf(p, "../");
    sprintf(p, "..%s/secret", out);
    return reads_secret(SC(SYS_openat, AT_FDCWD, path2, O_RDONLY));
}
static int dotdot_from_fd(void) {
    long d = SC(SYS_openat, AT_FDCWD, ".", O_RDONLY | O_DIRECTORY);
    if (d < 0)
        return neg(d);
    snprintf(path2, sizeof path2, "../../../../../../../../../..%s/secret", out);
    int r = reads_secret(SC(SYS_openat, d, path2, O_RDONLY));
    SC(SYS_close, d);
    return r;
}
static int symlink_to_root(void) {
    unlink("to_root");
    long r = SC(SYS_symlinkat, "/", AT_FDCWD, "to_root");
    if (r < 0)
        return neg(r);
    snprintf(path2, sizeof path2, "to_root%s/secret", out);
    return reads_secret(SC(SYS_openat, AT_FDCWD, path2, O_RDONLY));
}
static int symlink_to_file(void) {
    unlink("to_secret");
    long r = SC(SYS_symlinkat, at("secret"), AT_FDCWD, "to_secret");
    if (r < 0)
        return neg(r);
    return reads_secret(SC(SYS_openat, AT_FDCWD, "to_secret", O_RDONLY));
}
static int proc_self_root(void) {
    snprintf(path2, sizeof path2, "/proc/self/root%s/secret", out);
    return reads_secret(SC(SYS_openat, AT_FDCWD, path2, O_RDONLY));
}
static int proc_outside_root(void) {
    snprintf(path2, sizeof path2, "/proc/%d/root%s/secret", pid_out, out);
    return reads_secret(SC(SYS_openat, AT_FDCWD, path2, O_RDONLY));
}
static int proc_outside_cwd(void) {
    snprintf(path2, sizeof path2, "/proc/%d/cwd", pid_out);
    long d = SC(SYS_openat, AT_FDCWD, path2, O_RDONLY | O_DIRECTORY);
    if (d >= 0)
        SC(SYS_close, d);
    return neg(d);
}
static int hard_link(void) {
    unlink("linked");
    long r = SC(SYS_linkat, AT_FDCWD, at("secret"), AT_FDCWD, "linked", 0);
    if (r < 0)
        return neg(r);
    return reads_secret(SC(SYS_openat, AT_FDCWD, "linked", O_RDONLY));
}
static int rename_in(void) {
    long r = SC(SYS_renameat2, AT_FDCWD, at("victim"), AT_FDCWD, "stolen", 0);
    if (r == 0) /* natively: put it back */
        SC(SYS_renameat2, AT_FDCWD, "stolen", AT_FDCWD, at("victim"), 0);
    return neg(r);
}
static int rename_out(void) {
    int fd = open("mine", O_CREAT | O_WRONLY, 0644);
    if (fd >= 0)
        close(fd);
    return neg(SC(SYS_renameat2, AT_FDCWD, "mine", AT_FDCWD, at("planted"), 0));
}
static int unlink_outside(void) {
    long r = SC(SYS_unlinkat, AT_FDCWD, at("victim"), 0);
    if (r == 0) { /* natively: recreate it */
        int fd = open(at("victim"), O_CREAT | O_WRONLY, 0644);
        if (fd >= 0)
            close(fd);
    }
    return neg(r);
}
static int mkdir_outside(void) { return neg(SC(SYS_mkdirat, AT_FDCWD, at("newdir"), 0755)); }
static int truncate_outside(void) { return neg(SC(SYS_truncate, at("victim"), 0)); }
static int chmod_outside(void) { return neg(SC(SYS_fchmodat, AT_FDCWD, at("victim"), 0666)); }
static int exec_outside(void) {
    pid_t c = fork();
    if (c == 0) {
        char *argv[] = {"true", NULL}, *envp[] = {NULL};
        long r = SC(SYS_execve, at("true"), argv, envp);
        _exit(100 + (int)-r);
    }
    int st;
    waitpid(c, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return ESC;
    return WIFEXITED(st) && WEXITSTATUS(st) > 100 ? WEXITSTATUS(st) - 100 : EIO;
}
static int mknod_device(void) {
    /* A node for the kernel's log (/dev/kmsg, 1:11), read by opening it. */
    unlink("kmsg");
    long r = SC(SYS_mknodat, AT_FDCWD, "kmsg", S_IFCHR | 0600, makedev(1, 11));
    if (r < 0)
        return neg(r);
    long fd = SC(SYS_openat, AT_FDCWD, "kmsg", O_RDONLY | O_NONBLOCK);
    if (fd >= 0)
        SC(SYS_close, fd);
    unlink("kmsg");
    return neg(fd);
}
static int open_by_handle(void) {
    /* The "shocker" attack: a handle made up for the root directory of
     * the file system holding the working directory (inode 2 on ext4). */
    struct {
        struct file_handle h;
        uint32_t ino, gen;
    } fh = {.h = {.handle_bytes = 8, .handle_type = 1}, .ino = 2, .gen = 0};
    long d = SC(SYS_openat, AT_FDCWD, ".", O_RDONLY | O_DIRECTORY);
    long fd = SC(SYS_open_by_handle_at, d, &fh, O_RDONLY | O_DIRECTORY);
    SC(SYS_close, d);
    if (fd >= 0)
        SC(SYS_close, fd);
    /* Not ext4 (a tmpfs): EINVAL/ESTALE natively too, reported as is. */
    return neg(fd);
}

/* Other processes. */
static int kill_outside(void) { return neg(SC(SYS_kill, pid_out, 0)); }
/* The user the process outside runs as when the suite runs as root (the
 * test starts it so): kill(-1) from that user reaches no other process of
 * the machine. */
#define KILL_UID 61234
static int kill_everyone(void) {
    /* SIGURG (ignored by default) to every process it may signal; the
     * process outside (PID) creates `signalled` in the working directory
     * when it gets one. Its own tree answers kill(-1) too, so the return
     * value says nothing. From a child that first becomes KILL_UID where
     * it can (natively as root: else kill(-1) would reach every process
     * of the machine); sandboxed it cannot (no CAP_SETUID) and tries as
     * it is. */
    unlink("signalled");
    pid_t c = fork();
    if (c == 0) {
        if (setgid(KILL_UID) == 0)
            (void)!setuid(KILL_UID);
        long r = SC(SYS_kill, -1, SIGURG);
        _exit(r < 0 ? (int)-r : 0);
    }
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st))
        return EINVAL;
    if (WEXITSTATUS(st) != 0)
        return WEXITSTATUS(st);
    for (int i = 0; i < 100; i++) {
        if (access("signalled", F_OK) == 0)
            return ESC;
        usleep(50000);
    }
    return EPERM;
}
static int ptrace_outside(void) {
    long r = SC(SYS_ptrace, PTRACE_SEIZE_compat(), pid_out, 0, 0);
    if (r == 0)
        syscall(SYS_ptrace, 17 /* PTRACE_DETACH */, pid_out, 0, 0);
    return neg(r);
}
static int proc_outside(const char *what) {
    snprintf(path2, sizeof path2, "/proc/%d/%s", pid_out, what);
    long fd = SC(SYS_openat, AT_FDCWD, path2, O_RDONLY);
    if (fd < 0)
        return neg(fd);
    long n = SC(SYS_read, fd, buf, 16);
    SC(SYS_close, fd);
    return n >= 0 ? ESC : (int)-n;
}
static int proc_mem(void) {
    /* mem reads at offset 0 fail (unmapped): seek to the stack. */
    snprintf(path2, sizeof path2, "/proc/%d/mem", pid_out);
    long fd = SC(SYS_openat, AT_FDCWD, path2, O_RDONLY);
    if (fd >= 0)
        SC(SYS_close, fd);
    return neg(fd);
}
static int proc_environ(void) { return proc_outside("environ"); }
static int proc_cmdline(void) { return proc_outside("cmdline"); }
static int proc_lists_outside(void) {
    /* Is the process outside among /proc's entries? */
    long d = SC(SYS_openat, AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY);
    if (d < 0)
        return neg(d);
    char want[16];
    snprintf(want, sizeof want, "%d", pid_out);
    static char dents[1 << 16];
    int found = 0;
    long n;
    while (!found && (n = SC(SYS_getdents64, d, dents, sizeof dents)) > 0)
        for (long off = 0; off < n;) {
            unsigned short reclen = *(unsigned short *)(dents + off + 16);
            if (!strcmp(dents + off + 19, want))
                found = 1;
            off += reclen;
        }
    SC(SYS_close, d);
    return found ? ESC : ENOENT;
}
static int proc_fd(void) {
    snprintf(path2, sizeof path2, "/proc/%d/fd/0", pid_out);
    long fd = SC(SYS_openat, AT_FDCWD, path2, O_RDONLY | O_PATH);
    if (fd >= 0)
        SC(SYS_close, fd);
    return neg(fd);
}
static int process_vm(void) {
    struct iovec l = {buf, 8}, r = {(void *)0x400000, 8};
    long n = SC(SYS_process_vm_readv, pid_out, &l, 1, &r, 1, 0);
    /* EFAULT: the call reached the process (nothing mapped there). */
    return n >= 0 || n == -EFAULT ? ESC : (int)-n;
}
static int own_mem_write(void) {
    long fd = SC(SYS_openat, AT_FDCWD, "/proc/self/mem", O_RDWR);
    if (fd >= 0)
        SC(SYS_close, fd);
    return neg(fd);
}

/* Sockets. */
static int abstract_connect(void) {
    long s = SC(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
    if (s < 0)
        return neg(s);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(abstract_name);
    memcpy(a.sun_path + 1, abstract_name, n);
    long r = SC(SYS_connect, s, &a, offsetof(struct sockaddr_un, sun_path) + 1 + n);
    SC(SYS_close, s);
    return neg(r);
}
static int fd_from_outside(void) {
    long s = SC(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
    if (s < 0)
        return neg(s);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, pathsock, sizeof a.sun_path - 1);
    long r = SC(SYS_connect, s, &a, sizeof a);
    if (r < 0) {
        SC(SYS_close, s);
        return neg(r);
    }
    char c;
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&c, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                       .msg_controllen = sizeof cbuf};
    long n = SC(SYS_recvmsg, s, &m, 0);
    SC(SYS_close, s);
    if (n < 0)
        return neg(n);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    if (!cm || cm->cmsg_type != SCM_RIGHTS)
        return EIO;
    int fd;
    memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    return reads_secret(fd);
}
/* 127.0.0.1:port. */
static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int tcp_connect(void) {
    long s = SC(SYS_socket, AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return neg(s);
    struct sockaddr_in a = loopback(tcp_port);
    long r = SC(SYS_connect, s, &a, sizeof a);
    SC(SYS_close, s);
    return neg(r);
}
static int tcp_bind(void) {
    long s = SC(SYS_socket, AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return neg(s);
    struct sockaddr_in a = loopback(free_port);
    long r = SC(SYS_bind, s, &a, sizeof a);
    SC(SYS_close, s);
    return neg(r);
}
static int udp_send(void) {
    long s = SC(SYS_socket, AF_INET, SOCK_DGRAM, 0);
    if (s < 0)
        return neg(s);
    struct sockaddr_in a = loopback(tcp_port);
    long r = SC(SYS_sendto, s, "x", 1, 0, &a, sizeof a);
    SC(SYS_close, s);
    return neg(r);
}
static int sctp_stream(void) {
    /* A stream socket that is not TCP: Landlock's port rules miss it. */
    long s = SC(SYS_socket, AF_INET, SOCK_STREAM, 132 /* IPPROTO_SCTP */);
    if (s >= 0)
        SC(SYS_close, s);
    /* EPROTONOSUPPORT natively where SCTP is not built: still "allowed". */
    return s >= 0 || s == -EPROTONOSUPPORT || s == -ESOCKTNOSUPPORT ? ESC : neg(s);
}
static int packet_socket(void) {
    long s = SC(SYS_socket, AF_PACKET, SOCK_RAW, 0);
    if (s >= 0)
        SC(SYS_close, s);
    return neg(s);
}
static int tcp_fastopen(void) {
    long s = SC(SYS_socket, AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return neg(s);
    struct sockaddr_in a = loopback(tcp_port);
    long r = SC(SYS_sendto, s, "x", 1, MSG_FASTOPEN, &a, sizeof a);
    SC(SYS_close, s);
    return neg(r);
}

/* The kernel's administration and the sandbox's own limits. */
static int in_child(int (*f)(void)) {
    /* Attacks that change the caller (namespaces, root) run in a child. */
    pid_t c = fork();
    if (c == 0)
        _exit(f());
    int st;
    waitpid(c, &st, 0);
    if (WIFSIGNALED(st))
        return ECHILD; /* killed (by SIGSYS, say): it did not get through */
    return WEXITSTATUS(st);
}
static int do_unshare(void) { return neg(SC(SYS_unshare, CLONE_NEWUSER)); }
static int unshare_user(void) { return in_child(do_unshare); }
static int do_clone_ns(void) {
    long r = SC(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0);
    if (r == 0)
        _exit(0);
    if (r > 0)
        waitpid((pid_t)r, NULL, 0);
    return neg(r);
}
static int clone_newns(void) { return in_child(do_clone_ns); }
static int do_mount(void) {
    mkdir("mnt", 0755);
    long r = SC(SYS_mount, "none", "mnt", "tmpfs", 0, 0);
    if (r == 0)
        umount2("mnt", MNT_DETACH);
    return neg(r);
}
static int mount_tmpfs(void) { return in_child(do_mount); }
static int do_chroot(void) { return neg(SC(SYS_chroot, ".")); }
static int chroot_here(void) { return in_child(do_chroot); }
static int io_uring(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long fd = SC(SYS_io_uring_setup, 1, &p);
    if (fd >= 0)
        SC(SYS_close, fd);
    return neg(fd);
}
static int bpf_map(void) {
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_ARRAY;
    a.key_size = 4;
    a.value_size = 4;
    a.max_entries = 1;
    long fd = SC(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
    if (fd >= 0)
        SC(SYS_close, fd);
    return neg(fd);
}
static int perf_event(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.disabled = 1;
    long fd = SC(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd >= 0)
        SC(SYS_close, fd);
    return neg(fd);
}
static int add_key(void) {
    long k = SC(SYS_add_key, "user", "picos-escape", "x", 1, -2 /* KEY_SPEC_PROCESS_KEYRING */);
    return neg(k);
}
static int tiocsti(void) {
    /* A new terminal's other end; TIOCSTI with the high 32 bits set too
     * (the kernel truncates the request: CVE-2019-10063). */
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0)
        return errno;
    grantpt(m);
    unlockpt(m);
    int s = open(ptsname(m), O_RDWR | O_NOCTTY);
    if (s < 0)
        return errno;
    char c = 'x';
    long r = SC(SYS_ioctl, s, TIOCSTI, &c);
    long r2 = SC(SYS_ioctl, s, (1UL << 32) | TIOCSTI, &c);
    close(s);
    close(m);
    return r == 0 || r2 == 0 ? ESC : neg(r);
}
static int sethostname_same(void) {
    char h[256];
    gethostname(h, sizeof h);
    return neg(SC(SYS_sethostname, h, strlen(h)));
}
static int proc_sys_write(void) {
    long fd = SC(SYS_openat, AT_FDCWD, "/proc/sys/kernel/hostname", O_WRONLY);
    if (fd >= 0)
        SC(SYS_close, fd);
    return neg(fd);
}
static int personality_exec(void) {
    long old = SC(SYS_personality, 0xffffffff);
    long r = SC(SYS_personality, READ_IMPLIES_EXEC);
    if (r >= 0)
        syscall(SYS_personality, old);
    return neg(r);
}
static int prctl_securebits(void) {
    /* Sets the bits it has (CAP_SETPCAP): a change of privilege rules. */
    long bits = SC(SYS_prctl, PR_GET_SECUREBITS, 0, 0, 0, 0);
    if (bits < 0)
        return neg(bits);
    return neg(SC(SYS_prctl, PR_SET_SECUREBITS, bits, 0, 0, 0));
}
static int raise_core_limit(void) {
    struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
    return neg(SC(SYS_setrlimit, RLIMIT_CORE, &r));
}
static int regain_caps(void) {
    struct { uint32_t v; int pid; } h = {0x20080522, 0};
    struct { uint32_t e, p, i; } d[2] = {{~0u, ~0u, 0}, {~0u, ~0u, 0}};
    long r = SC(SYS_capget, &h, d);
    if (r < 0)
        return neg(r);
    /* Escaped if it holds CAP_SYS_ADMIN (bit 21). */
    return d[0].e & (1u << 21) ? ESC : EPERM;
}
static int setuid_honoured(void) {
    /* `suid` in the working directory: this program, set-user-ID to
     * nobody (65534) by the test. Escaped if exec changes the euid. */
    pid_t c = fork();
    if (c == 0) {
        char *argv[] = {"suid", "--euid", NULL}, *envp[] = {NULL};
        execve("./suid", argv, envp);
        _exit(99);
    }
    int st;
    waitpid(c, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 99)
        return ENOEXEC;
    return WEXITSTATUS(st) == 1 ? ESC : EPERM; /* 1: euid changed */
}

struct attack {
    const char *name;
    int (*run)(void);
};
static const struct attack attacks[] = {
    {"open-absolute", open_absolute},
    {"create-outside", create_outside},
    {"dotdot", dotdot},
    {"dotdot-from-fd", dotdot_from_fd},
    {"symlink-to-root", symlink_to_root},
    {"symlink-to-file", symlink_to_file},
    {"proc-self-root", proc_self_root},
    {"proc-outside-root", proc_outside_root},
    {"proc-outside-cwd", proc_outside_cwd},
    {"hard-link", hard_link},
    {"rename-in", rename_in},
    {"rename-out", rename_out},
    {"unlink-outside", unlink_outside},
    {"mkdir-outside", mkdir_outside},
    {"truncate-outside", truncate_outside},
    {"chmod-outside", chmod_outside},
    {"exec-outside", exec_outside},
    {"mknod-device", mknod_device},
    {"open-by-handle", open_by_handle},
    {"kill-outside", kill_outside},
    {"kill-everyone", kill_everyone},
    {"ptrace-outside", ptrace_outside},
    {"proc-mem", proc_mem},
    {"proc-environ", proc_environ},
    {"proc-fd", proc_fd},
    {"proc-cmdline", proc_cmdline},
    {"proc-lists-outside", proc_lists_outside},
    {"process-vm-readv", process_vm},
    {"own-mem-write", own_mem_write},
    {"abstract-connect", abstract_connect},
    {"fd-from-outside", fd_from_outside},
    {"tcp-connect", tcp_connect},
    {"tcp-bind", tcp_bind},
    {"udp-send", udp_send},
    {"sctp-stream", sctp_stream},
    {"packet-socket", packet_socket},
    {"tcp-fastopen", tcp_fastopen},
    {"unshare-user", unshare_user},
    {"clone-newns", clone_newns},
    {"mount", mount_tmpfs},
    {"chroot", chroot_here},
    {"io-uring", io_uring},
    {"bpf", bpf_map},
    {"perf-event-open", perf_event},
    {"add-key", add_key},
    {"tiocsti", tiocsti},
    {"sethostname", sethostname_same},
    {"proc-sys-write", proc_sys_write},
    {"personality", personality_exec},
    {"prctl-securebits", prctl_securebits},
    {"raise-core-limit", raise_core_limit},
    {"capabilities", regain_caps},
    {"setuid-exec", setuid_honoured},
};

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--euid"))
        return geteuid() != 0 ? 1 : 0;
    if (argc != 7) {
        fprintf(stderr, "usage: escape OUT PID ABSTRACT PATHSOCK TCPPORT FREEPORT\n");
        return 64;
    }
    out = argv[1];
    pid_out = atoi(argv[2]);
    abstract_name = argv[3];
    pathsock = argv[4];
    tcp_port = atoi(argv[5]);
    free_port = atoi(argv[6]);
    signal(SIGPIPE, SIG_IGN);
    int picos = runtime_mapped(1);
    if (picos) {
        if (!gadget) {
            fprintf(stderr, "escape: under picos, but no `syscall; ret` in its text\n");
            return 2;
        }
    }
    const char *off = getenv("ESCAPE_SUD_OFFSET");
    if (off && *off)
        sud_offset = strtol(off, NULL, 0);
    int ways = !picos ? 1 : sud_offset >= 0 ? 3 : 2;
    static const char *const names[] = {"runtime", "bypass", "selector"};
    for (size_t i = 0; i < sizeof attacks / sizeof *attacks; i++) {
        for (int way = 0; way < ways; way++) {
            bypass = way;
            const char *wname = !picos ? "direct" : names[way];
            fflush(stdout);
            int pipefd[2];
            if (pipe(pipefd) < 0)
                return 1;
            pid_t c = fork();
            if (c == 0) {
                close(pipefd[0]);
                int r = attacks[i].run();
                if (write(pipefd[1], &r, sizeof r) < 0)
                    _exit(1);
                _exit(0);
            }
            close(pipefd[1]);
            int r = -1;
            ssize_t n = read(pipefd[0], &r, sizeof r);
            close(pipefd[0]);
            int st;
            waitpid(c, &st, 0);
            if (n == sizeof r && r == ESC)
                printf("%s %s: escaped\n", attacks[i].name, wname);
            else if (n == sizeof r)
                printf("%s %s: blocked (%s)\n", attacks[i].name, wname,
                       strerrorname_np(r) ? strerrorname_np(r) : "?");
            else if (WIFSIGNALED(st))
                printf("%s %s: blocked (%s)\n", attacks[i].name, wname,
                       sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "signal");
            else
                printf("%s %s: blocked (no result)\n", attacks[i].name, wname);
        }
    }
    return 0;
}
