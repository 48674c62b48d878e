/*
 * sysfuzz: a deterministic system-call fuzzer, run natively and under picos
 * with the same seed so that the two runs can be compared call by call
 * (tools/fuzz.py does that; docs/FUZZING.md explains the output).
 *
 *   sysfuzz -s SEED [-f FIRST] [-c CHILDREN] [-n CALLS] [-o LOG] [options]
 *
 * The parent forks CHILDREN children one after the other (child numbers
 * FIRST, FIRST+1, ...). Child K seeds its generator from (SEED, K) alone, so
 * the same child makes the same calls with the same arguments whatever
 * FIRST/CHILDREN were and whichever run it is in. Each child makes CALLS raw
 * system calls, each through one of: an inline `syscall` in a shape the
 * picos patcher rewrites ("i"), an inline `syscall` after a `nop` that no
 * patcher shape matches, so every call takes the trap path ("t"), libc's
 * syscall(3) ("l"), or, for fork-like calls, a stub whose new process or
 * thread leaves at once ("f").
 *
 * Argument values never depend on earlier results (except the ids of SysV IPC
 * objects, which only the same results can make equal): the generator is the
 * only source, so a native and a picos run make the same calls until one of
 * them dies. Pointers point only into memory the fuzzer set aside at fixed
 * addresses (identical in every run) or at addresses that are never mapped,
 * never at the fuzzer's own code, data, stack or log.
 *
 * Log (one line per call, written into shared memory before the call and
 * completed after it, so a call that kills the child shows as unfinished):
 *
 *   C <child> seed=<hex>                          child start (parent)
 *   <child>:<idx> <mode> <nr> <name> <a0>,..,<a5> [tags] =<result> [s=<sigmask>]
 *   S <child> <status> calls=<n>                  child end (parent)
 *   E children=<n> calls=<n>                      end of run (parent)
 *
 * result: a decimal value, E<errno>, or a symbol for values that differ
 * between runs by nature (PID, TID, PGID, SID, PPID, CHILD, ID, ADDR, S+off
 * (scratch), B+off (program break), TIME). s= is the mask (bit N-1 = signal N) of signals the
 * fuzzer's handler saw during the call. Tags: h = an fd argument is near the
 * top of the descriptor range (picos kept a hidden descriptor there before
 * issue 9 item 2.6; divergences there are now unexpected),
 * p = a path or descriptor outside the private directory (/proc, /dev: its
 * contents may differ), x = /proc/self/exe (picos: opens the runtime).
 * status: exit:N, signal:N, timeout (the child's alarm() watchdog fired: no
 * call finished for WATCHDOG seconds) or hardtimeout (the parent killed it).
 *
 * What is never called, or called only with tamed arguments, and why: see
 * the EXCLUDED table and the fix_args() comments below ("sysfuzz -L" prints
 * the tables).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

typedef uint64_t u64;
typedef int64_t i64;

/* ------------------------------------------------------------------------ */
/* Fixed memory the fuzzer owns (same addresses in every run).              */
/* ------------------------------------------------------------------------ */

#define SCR 0x100000000000UL      /* read-write scratch: the only range memory calls touch */
#define SCR_SZ (4UL << 20)
#define SCR_END (SCR + SCR_SZ)
/* [SCR_END, RO) stays unmapped: calls given a huge length from inside the
 * scratch area stop there (mprotect, madvise, mlock, msync, read...). */
#define RO 0x100000800000UL       /* read-only, filled with generator words */
#define RO_SZ (64UL << 10)
#define GUARD 0x100000a00000UL    /* PROT_NONE */
#define GUARD_SZ (64UL << 10)
#define ARG 0x100000c00000UL      /* argument structures, refilled before each call */
#define ARG_SZ 4096UL             /* followed by a hole: reads past it fault */
#define UNMAPPED 0x100001000000UL /* never mapped */
#define LOGBUF 0x100010000000UL   /* MAP_SHARED: the current child's log */
#define LOG_SZ (16UL << 20)

/* Values at or above this are non-canonical: never a user address. */
#define NONCANON 0x8000000000000000UL

/* ------------------------------------------------------------------------ */
/* Raw system calls.                                                        */
/* ------------------------------------------------------------------------ */

/* Harness calls (not fuzzed): inline, whatever shape the compiler picks. */
static inline long hs(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#define hs0(n) hs(n, 0, 0, 0, 0, 0, 0)
#define hs1(n, a) hs(n, (long)(a), 0, 0, 0, 0, 0)
#define hs2(n, a, b) hs(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define hs3(n, a, b, c) hs(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define hs4(n, a, b, c, d) hs(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* Fuzzed call, mode "i": one site, a plain `syscall` (patchable shapes). */
__attribute__((noinline)) static long call_i(long n, const u64 *a)
{
	register long r10 __asm__("r10") = (long)a[3];
	register long r8 __asm__("r8") = (long)a[4];
	register long r9 __asm__("r9") = (long)a[5];
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Mode "t": `nop; syscall` matches no patch shape: always the trap path. */
__attribute__((noinline)) static long call_t(long n, const u64 *a)
{
	register long r10 __asm__("r10") = (long)a[3];
	register long r8 __asm__("r8") = (long)a[4];
	register long r9 __asm__("r9") = (long)a[5];
	long ret;
	__asm__ volatile("nop\n\tsyscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Mode "l": libc's syscall(3), -1/errno turned back into -errno. */
__attribute__((noinline)) static long call_l(long n, const u64 *a)
{
	errno = 0;
	long r = syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (r == -1 && errno > 0 && errno < 4096)
		return -errno;
	return r;
}

/* Mode "f": fork-like calls. The new process or thread exits at once with
 * exit(2) (not exit_group: a CLONE_THREAD child must not end the fuzzer),
 * touching neither memory nor the stack, so any stack pointer is fine. */
__attribute__((noinline)) static long call_f(long n, const u64 *a)
{
	register long r10 __asm__("r10") = (long)a[3];
	register long r8 __asm__("r8") = (long)a[4];
	register long r9 __asm__("r9") = (long)a[5];
	long ret;
	__asm__ volatile("syscall\n\t"
			 "test %%rax,%%rax\n\t"
			 "jnz 1f\n\t"
			 "mov $60,%%eax\n\t"
			 "xor %%edi,%%edi\n\t"
			 "syscall\n\t"
			 "ud2\n"
			 "1:"
			 : "=a"(ret)
			 : "a"(n), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* Signal restorer (the shape glibc and musl use). */
void fz_restorer(void);
__asm__(".text\n.globl fz_restorer\n.type fz_restorer,@function\nfz_restorer:\n\tmov $15,%rax\n\tsyscall\n\tud2\n");

/* ------------------------------------------------------------------------ */
/* Generator.                                                               */
/* ------------------------------------------------------------------------ */

static u64 rng;

static u64 splitmix(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u64 rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}
static u64 below(u64 n) { return n ? rnd() % n : 0; }
static int chance(int pct) { return (int)below(100) < pct; }
#define PICK(arr) (arr[below(sizeof(arr) / sizeof(arr[0]))])

/* ------------------------------------------------------------------------ */
/* Child state.                                                             */
/* ------------------------------------------------------------------------ */

#define SIGWAKE 63 /* reserved: wakes rt_sigsuspend; never fuzzed */
#define WATCHDOG 10 /* seconds without a finished call before SIGALRM */
#define NFD_TRACK 1024

static int opt_root;         /* running as root (-R): no paths outside the private dir */
static int opt_verbose;
/* -A: steer clear of known picos bug classes, to look for others (applied
 * after generation, so the generator's sequence is the same either way):
 *  m  never block SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP (a runtime fault
 *     fixed up into EFAULT kills the program while they are blocked)
 *  q  queued signals (rt_sigqueueinfo...) never carry a kernel si_code > 0
 *  r  no rseq
 *  v  no CLONE_VM, no SIGSEGV exit signal for clones */
static const char *opt_avoid = "";
#define AVOID(ch) (strchr(opt_avoid, ch) != NULL)
#define SYNC_SIGS ((1ULL << (SIGSEGV - 1)) | (1ULL << (SIGBUS - 1)) | (1ULL << (SIGILL - 1)) | \
		   (1ULL << (SIGFPE - 1)) | (1ULL << (SIGTRAP - 1)))
static long own_pid, own_tid, own_ppid, own_pgid, own_sid, own_uid;
static u64 init_brk;
static char taint[NFD_TRACK]; /* fd -> 'p' /proc or /dev, 'x' exe */
static long ipc_ids[64];
static int ipc_kind[64]; /* 1 shm, 2 sem, 3 msg */
static int n_ipc;
static char mq_names[4][32];
static volatile u64 sig_seen;

/* Shared log: header then text. */
struct loghdr {
	volatile u64 len;    /* committed bytes of text */
	volatile u64 calls;  /* calls finished */
	volatile long ipc[64];
	volatile int ipc_kind[64];
	volatile int n_ipc;
	char text[];
};
#define LOGH ((struct loghdr *)LOGBUF)
#define LOG_TEXT_MAX (LOG_SZ - sizeof(struct loghdr) - 4096)

static char line[1024];
static int line_len;

static void lput(const char *s)
{
	while (*s && line_len < (int)sizeof(line) - 1)
		line[line_len++] = *s++;
}
static void lhex(u64 v)
{
	char b[17];
	int i = 16;
	b[i] = 0;
	do {
		b[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	lput(b + i);
}
static void ldec(i64 v)
{
	char b[24];
	int i = 23;
	u64 u = v < 0 ? -(u64)v : (u64)v;
	b[i] = 0;
	do {
		b[--i] = '0' + u % 10;
		u /= 10;
	} while (u);
	if (v < 0)
		b[--i] = '-';
	lput(b + i);
}

/* Copies the current line into the shared log (committing `len` only when
 * `commit`, so an unfinished call still shows: see log_pending). */
static void log_flush(int commit)
{
	struct loghdr *h = LOGH;
	if (h->len + line_len + 1 < LOG_TEXT_MAX) {
		memcpy(h->text + h->len, line, line_len);
		h->text[h->len + line_len] = 0;
		if (commit)
			h->len += line_len;
	}
	if (opt_verbose && commit)
		hs3(1 /* write */, 2, line, line_len);
}

/* ------------------------------------------------------------------------ */
/* Syscall table.                                                           */
/* ------------------------------------------------------------------------ */

/* Argument kinds (one letter per argument):
 *  0 unused  f fd  d dirfd  p private path  r path for a reading call
 *  b buffer  c struct (random words in ARG)  o output that may receive a
 *  pointer to the fuzzer's own memory (ARG or unmapped only)  l length
 *  i int  w small int/cmd  g flags  m mode  u uid/gid  k own pid or 0
 *  K own tid  q pid for queries  s signal to send  S signal disposition
 *  t timespec (bounded)  v timeval (bounded)  M sigset  z sigsetsize
 *  a sockaddr (loopback/private)  A socklen  V iovec array  n count
 *  O offset  R scratch address  L length within scratch  W length, may
 *  overrun scratch into the hole after it  F open flags  N name string
 *  I SysV IPC id */
struct sc {
	int nr;
	const char *name;
	const char *kinds;
	int weight;
};

/* Weight 10 is normal; calls picos emulates or mediates get more (that is
 * where the runtime's own code is); slow or known-noisy ones less. */
static const struct sc TABLE[] = {
	{0, "read", "fbl", 10}, {1, "write", "fbl", 10}, {2, "open", "rFm", 12}, {3, "close", "f", 15},
	{4, "stat", "rb", 8}, {5, "fstat", "fb", 8}, {6, "lstat", "rb", 6}, {7, "poll", "cni", 8},
	{8, "lseek", "fOw", 8}, {9, "mmap", "RLggfO", 25}, {10, "mprotect", "RWg", 20},
	{11, "munmap", "RL", 20}, {12, "brk", "b", 20}, {13, "rt_sigaction", "Scoz", 25},
	{14, "rt_sigprocmask", "wMoz", 25}, {16, "ioctl", "fgb", 10}, {17, "pread64", "fblO", 8},
	{18, "pwrite64", "fblO", 8}, {19, "readv", "fVn", 8}, {20, "writev", "fVn", 8},
	{21, "access", "rm", 6}, {22, "pipe", "b", 5}, {23, "select", "icccv", 6},
	{24, "sched_yield", "", 3}, {25, "mremap", "RLLgR", 20}, {26, "msync", "RWg", 6},
	{27, "mincore", "RWb", 6}, {28, "madvise", "RWw", 20}, {29, "shmget", "ilg", 4},
	{30, "shmat", "IRg", 4}, {31, "shmctl", "Iwb", 4}, {32, "dup", "f", 8}, {33, "dup2", "ff", 20},
	{35, "nanosleep", "tb", 4}, {36, "getitimer", "wb", 4}, {38, "setitimer", "wcb", 6},
	{39, "getpid", "", 10}, {40, "sendfile", "ffbl", 6}, {41, "socket", "wgi", 8},
	{42, "connect", "faA", 8}, {43, "accept", "fbc", 5}, {44, "sendto", "fblgaA", 8},
	{45, "recvfrom", "fblgbc", 8}, {46, "sendmsg", "fcg", 8}, {47, "recvmsg", "fcg", 8},
	{48, "shutdown", "fw", 5}, {49, "bind", "faA", 8}, {50, "listen", "fi", 5},
	{51, "getsockname", "fbc", 5}, {52, "getpeername", "fbc", 5}, {53, "socketpair", "wgib", 5},
	{54, "setsockopt", "fwwbl", 8}, {55, "getsockopt", "fwwbc", 8}, {56, "clone", "gbbbb", 10},
	{57, "fork", "", 4}, {58, "vfork", "", 4}, {59, "execve", "pcc", 12}, {61, "wait4", "qbgb", 8},
	{62, "kill", "ks", 10}, {63, "uname", "b", 15}, {64, "semget", "iig", 4}, {65, "semop", "Icl", 4},
	{66, "semctl", "Iiwb", 4}, {67, "shmdt", "b", 4}, {68, "msgget", "ig", 4},
	{69, "msgsnd", "Iclg", 4}, {70, "msgrcv", "Ibllg", 4}, {71, "msgctl", "Iwb", 4},
	{72, "fcntl", "fwi", 20}, {73, "flock", "fw", 5}, {74, "fsync", "f", 3}, {75, "fdatasync", "f", 3},
	{76, "truncate", "pO", 5}, {77, "ftruncate", "fO", 6}, {78, "getdents", "fbl", 6},
	{79, "getcwd", "bl", 6}, {80, "chdir", "p", 5}, {81, "fchdir", "f", 5}, {82, "rename", "pp", 6},
	{83, "mkdir", "pm", 6}, {84, "rmdir", "p", 5}, {85, "creat", "pm", 5}, {86, "link", "pp", 5},
	{87, "unlink", "p", 6}, {88, "symlink", "pp", 5}, {89, "readlink", "rbl", 15},
	{90, "chmod", "pm", 5}, {91, "fchmod", "fm", 5}, {92, "chown", "puu", 4}, {93, "fchown", "fuu", 4},
	{94, "lchown", "puu", 4}, {95, "umask", "m", 5}, {96, "gettimeofday", "bb", 12},
	{97, "getrlimit", "wb", 20}, {98, "getrusage", "wb", 5}, {99, "sysinfo", "b", 5},
	{100, "times", "b", 5}, {102, "getuid", "", 10}, {104, "getgid", "", 10}, {105, "setuid", "u", 15},
	{106, "setgid", "u", 15}, {107, "geteuid", "", 10}, {108, "getegid", "", 10},
	{109, "setpgid", "kq", 15}, {110, "getppid", "", 10}, {111, "getpgrp", "", 10},
	{112, "setsid", "", 10}, {113, "setreuid", "uu", 12}, {114, "setregid", "uu", 12},
	{115, "getgroups", "ib", 15}, {116, "setgroups", "ic", 12}, {117, "setresuid", "uuu", 12},
	{118, "getresuid", "bbb", 15}, {119, "setresgid", "uuu", 12}, {120, "getresgid", "bbb", 15},
	{121, "getpgid", "q", 15}, {122, "setfsuid", "u", 12}, {123, "setfsgid", "u", 12},
	{124, "getsid", "q", 15}, {125, "capget", "cb", 5}, {126, "capset", "cc", 5},
	{127, "rt_sigpending", "bz", 20}, {128, "rt_sigtimedwait", "Mbtz", 8},
	{129, "rt_sigqueueinfo", "ksc", 4}, {130, "rt_sigsuspend", "Mz", 12}, {131, "sigaltstack", "cb", 25},
	{132, "utime", "pc", 4}, {133, "mknod", "pmi", 5}, {134, "uselib", "p", 1}, {136, "ustat", "ib", 2},
	{137, "statfs", "rb", 5}, {138, "fstatfs", "fb", 5}, {139, "sysfs", "wbb", 3},
	{140, "getpriority", "wq", 5}, {141, "setpriority", "wki", 4}, {142, "sched_setparam", "kc", 4},
	{143, "sched_getparam", "qb", 4}, {144, "sched_setscheduler", "kwc", 4},
	{145, "sched_getscheduler", "q", 4}, {146, "sched_get_priority_max", "w", 2},
	{147, "sched_get_priority_min", "w", 2}, {148, "sched_rr_get_interval", "qb", 3},
	{149, "mlock", "RW", 5}, {150, "munlock", "RW", 5}, {152, "munlockall", "", 2},
	{154, "modify_ldt", "wcl", 4}, {156, "_sysctl", "c", 1}, {157, "prctl", "wiiii", 25},
	{158, "arch_prctl", "wb", 20}, {160, "setrlimit", "wc", 15}, {162, "sync", "", 1},
	{174, "create_module", "", 1}, {177, "get_kernel_syms", "", 1},
	{178, "query_module", "", 1}, {180, "nfsservctl", "", 1}, {181, "getpmsg", "", 1},
	{182, "putpmsg", "", 1}, {183, "afs_syscall", "", 1}, {184, "tuxcall", "", 1},
	{185, "security", "", 1}, {186, "gettid", "", 10}, {187, "readahead", "fOl", 4},
	{188, "setxattr", "pNblg", 4}, {189, "lsetxattr", "pNblg", 3}, {190, "fsetxattr", "fNblg", 4},
	{191, "getxattr", "pNbl", 4}, {192, "lgetxattr", "pNbl", 3}, {193, "fgetxattr", "fNbl", 4},
	{194, "listxattr", "pbl", 3}, {195, "llistxattr", "pbl", 3}, {196, "flistxattr", "fbl", 3},
	{197, "removexattr", "pN", 3}, {198, "lremovexattr", "pN", 3}, {199, "fremovexattr", "fN", 3},
	{200, "tkill", "Ks", 8}, {201, "time", "b", 10}, {202, "futex", "bwicbi", 12},
	{203, "sched_setaffinity", "klb", 15}, {204, "sched_getaffinity", "qlb", 20},
	{205, "set_thread_area", "c", 3}, {206, "io_setup", "ib", 3}, {207, "io_destroy", "i", 2},
	{208, "io_getevents", "iiibt", 2}, {209, "io_submit", "iic", 2}, {210, "io_cancel", "icb", 2},
	{211, "get_thread_area", "c", 3}, {212, "lookup_dcookie", "bbl", 1}, {213, "epoll_create", "i", 4},
	{214, "epoll_ctl_old", "", 1}, {215, "epoll_wait_old", "", 1},
	{216, "remap_file_pages", "RLiOg", 5}, {217, "getdents64", "fbl", 6},
	{218, "set_tid_address", "b", 5}, {219, "restart_syscall", "", 2}, {220, "semtimedop", "Icit", 3},
	{221, "fadvise64", "fOlw", 3}, {222, "timer_create", "wcb", 5}, {223, "timer_settime", "igcb", 5},
	{224, "timer_gettime", "ib", 4}, {225, "timer_getoverrun", "i", 3}, {226, "timer_delete", "i", 4},
	{228, "clock_gettime", "wb", 15}, {229, "clock_getres", "wb", 8}, {230, "clock_nanosleep", "wgtb", 4},
	{232, "epoll_wait", "fbii", 5}, {233, "epoll_ctl", "fwfc", 6}, {234, "tgkill", "kKs", 8},
	{235, "utimes", "pc", 3}, {236, "vserver", "", 1}, {237, "mbind", "RWwbll", 3},
	{238, "set_mempolicy", "wbl", 3}, {239, "get_mempolicy", "bblbg", 3}, {240, "mq_open", "Ngmc", 3},
	{241, "mq_unlink", "N", 2}, {242, "mq_timedsend", "fblit", 3}, {243, "mq_timedreceive", "fblbt", 3},
	{244, "mq_notify", "fc", 3}, {245, "mq_getsetattr", "fcb", 3}, {247, "waitid", "wqbgb", 6},
	{251, "ioprio_set", "wki", 3}, {252, "ioprio_get", "wq", 3}, {253, "inotify_init", "", 3},
	{254, "inotify_add_watch", "frg", 4}, {255, "inotify_rm_watch", "fi", 3},
	{256, "migrate_pages", "klbb", 2}, {257, "openat", "drFm", 15}, {258, "mkdirat", "dpm", 5},
	{259, "mknodat", "dpmi", 4}, {260, "fchownat", "dpuug", 4}, {261, "futimesat", "dpc", 3},
	{262, "newfstatat", "drbg", 8}, {263, "unlinkat", "dpg", 5}, {264, "renameat", "dpdp", 5},
	{265, "linkat", "dpdpg", 5}, {266, "symlinkat", "pdp", 4}, {267, "readlinkat", "drbl", 15},
	{268, "fchmodat", "dpm", 4}, {269, "faccessat", "drm", 4}, {270, "pselect6", "iccctc", 6},
	{271, "ppoll", "cntMz", 8}, {272, "unshare", "g", 5}, {273, "set_robust_list", "bl", 4},
	{274, "get_robust_list", "qob", 4}, {275, "splice", "fbfblg", 5}, {276, "tee", "fflg", 4},
	{277, "sync_file_range", "fOlg", 3}, {278, "vmsplice", "fVng", 4}, {279, "move_pages", "klbbbg", 2},
	{280, "utimensat", "dpcg", 4}, {281, "epoll_pwait", "fbiiMz", 5}, {282, "signalfd", "fMz", 5},
	{283, "timerfd_create", "wg", 4}, {284, "eventfd", "i", 4}, {285, "fallocate", "fwOl", 5},
	{286, "timerfd_settime", "fgcb", 5}, {287, "timerfd_gettime", "fb", 4}, {288, "accept4", "fbcg", 5},
	{289, "signalfd4", "fMzg", 5}, {290, "eventfd2", "ig", 4}, {291, "epoll_create1", "g", 4},
	{292, "dup3", "ffg", 20}, {293, "pipe2", "bg", 6}, {294, "inotify_init1", "g", 3},
	{295, "preadv", "fVnOO", 5}, {296, "pwritev", "fVnOO", 5}, {297, "rt_tgsigqueueinfo", "kKsc", 4},
	{299, "recvmmsg", "fcngt", 4}, {302, "prlimit64", "kwcb", 20}, {303, "name_to_handle_at", "drcbg", 3},
	{306, "syncfs", "f", 1}, {307, "sendmmsg", "fcng", 4}, {308, "setns", "fg", 2}, {309, "getcpu", "bbb", 15},
	{310, "process_vm_readv", "kVnVng", 4}, {311, "process_vm_writev", "kVnVng", 4},
	{312, "kcmp", "kkwii", 4}, {314, "sched_setattr", "kcg", 3}, {315, "sched_getattr", "qblg", 3},
	{316, "renameat2", "dpdpg", 5}, {317, "seccomp", "wgb", 3}, {318, "getrandom", "blg", 5},
	{319, "memfd_create", "Ng", 5}, {322, "execveat", "dpccg", 10}, {324, "membarrier", "wgi", 2},
	{325, "mlock2", "RWg", 4}, {326, "copy_file_range", "fbfblg", 5}, {327, "preadv2", "fVnOOg", 4},
	{328, "pwritev2", "fVnOOg", 4}, {329, "pkey_mprotect", "RWgi", 8}, {330, "pkey_alloc", "gi", 3},
	{331, "pkey_free", "i", 3}, {332, "statx", "drgwb", 6}, {333, "io_pgetevents", "iiibtc", 2},
	{334, "rseq", "cliw", 1}, {424, "pidfd_send_signal", "fscg", 4}, {434, "pidfd_open", "kg", 4},
	{435, "clone3", "cl", 10}, {436, "close_range", "iig", 15}, {437, "openat2", "drcl", 6},
	{438, "pidfd_getfd", "fig", 3}, {439, "faccessat2", "drmg", 4}, {440, "process_madvise", "fVnwg", 3},
	{441, "epoll_pwait2", "fbitMz", 4}, {444, "landlock_create_ruleset", "clg", 2},
	{445, "landlock_add_rule", "fwcg", 2}, {446, "landlock_restrict_self", "fg", 1},
	{447, "memfd_secret", "g", 2}, {448, "process_mrelease", "fg", 2}, {449, "futex_waitv", "cngtw", 4},
	{450, "set_mempolicy_home_node", "RWig", 2}, {451, "cachestat", "fcbg", 3},
	{452, "fchmodat2", "dpmg", 3}, {453, "map_shadow_stack", "Rlg", 3}, {454, "futex_wake", "bilg", 4},
	{455, "futex_wait", "biigtw", 4}, {456, "futex_requeue", "cgii", 3}, {457, "statmount", "cblg", 2},
	{458, "listmount", "cblg", 2}, {459, "lsm_get_self_attr", "wbcg", 2},
	{460, "lsm_set_self_attr", "wclg", 2}, {461, "lsm_list_modules", "bcg", 2}, {462, "mseal", "RWg", 4},
	{463, "setxattrat", "dpgNcl", 2}, {464, "getxattrat", "dpgNcl", 2}, {465, "listxattrat", "dpgbl", 2},
	{466, "removexattrat", "dpgN", 2}, {468, "file_getattr", "dpclg", 2}, {469, "file_setattr", "dpclg", 2},
	{-1, "badnr", "bbbbbb", 3}, /* numbers outside the table: gaps, x32, high bits */
};
#define NTABLE (int)(sizeof(TABLE) / sizeof(TABLE[0]))

/* Never called. The reason is printed by `sysfuzz -L` and documented in
 * docs/FUZZING.md. */
static const struct {
	int nr;
	const char *name;
	const char *why;
} EXCLUDED[] = {
	{15, "rt_sigreturn", "restores a frame from wherever the stack points: the fuzzer would jump to garbage"},
	{34, "pause", "blocks until a signal, and nothing sends one"},
	{37, "alarm", "the watchdog: each child re-arms alarm() itself"},
	{60, "exit", "ends the child early (children end with exit_group after their last call)"},
	{231, "exit_group", "ends the child early"},
	{101, "ptrace", "could attach to and change other processes (picos refuses it anyway)"},
	{103, "syslog", "as root it reads or clears the host's kernel log"},
	{135, "personality", "changes address-space layout and exec behaviour for the rest of the child"},
	{151, "mlockall", "pins every mapping, including lazily mapped terabytes: exhausts host memory"},
	{153, "vhangup", "hangs up the controlling terminal of the harness"},
	{155, "pivot_root", "changes the root of the host mount namespace (as root)"},
	{159, "adjtimex", "adjusts the host clock (as root)"},
	{161, "chroot", "changes the root directory (as root): later paths escape the private dir"},
	{163, "acct", "turns process accounting on for the host (as root)"},
	{164, "settimeofday", "sets the host clock (as root)"},
	{165, "mount", "mounts file systems on the host (as root)"},
	{166, "umount2", "unmounts host file systems (as root)"},
	{167, "swapon", "host swap configuration"},
	{168, "swapoff", "host swap configuration"},
	{169, "reboot", "reboots the host"},
	{170, "sethostname", "renames the host (as root)"},
	{171, "setdomainname", "renames the host's NIS domain (as root)"},
	{172, "iopl", "I/O port access (as root)"},
	{173, "ioperm", "I/O port access (as root)"},
	{175, "init_module", "loads kernel modules"},
	{176, "delete_module", "unloads kernel modules"},
	{179, "quotactl", "host disk quotas"},
	{227, "clock_settime", "sets the host clock"},
	{246, "kexec_load", "replaces the running kernel"},
	{248, "add_key", "per-user keyrings outlive the child: later runs would see them"},
	{249, "request_key", "kernel upcall spawns a helper as root; keyrings outlive the child"},
	{250, "keyctl", "per-user keyrings outlive the child (and can revoke the session keyring)"},
	{298, "perf_event_open", "sampling events deliver asynchronous signals (timing-dependent) and load the host"},
	{300, "fanotify_init", "permission events can block file access host-wide (as root)"},
	{301, "fanotify_mark", "see fanotify_init"},
	{304, "open_by_handle_at", "as root opens any file on the host by handle, bypassing the private dir"},
	{305, "clock_adjtime", "adjusts host clocks (as root)"},
	{313, "finit_module", "loads kernel modules"},
	{320, "kexec_file_load", "replaces the running kernel"},
	{321, "bpf", "as root loads and attaches programs host-wide"},
	{323, "userfaultfd", "a registered range makes the kernel (and the runtime) block on faults forever"},
	{425, "io_uring_setup", "picos refuses io_uring; rings would submit calls outside the fuzzer's control"},
	{426, "io_uring_enter", "see io_uring_setup"},
	{427, "io_uring_register", "see io_uring_setup"},
	{428, "open_tree", "mount API (host mount namespace)"},
	{429, "move_mount", "mount API"},
	{430, "fsopen", "mount API"},
	{431, "fsconfig", "mount API"},
	{432, "fsmount", "mount API"},
	{433, "fspick", "mount API"},
	{442, "mount_setattr", "mount API"},
	{443, "quotactl_fd", "host disk quotas"},
	{467, "open_tree_attr", "mount API"},
};
#define NEXCLUDED (int)(sizeof(EXCLUDED) / sizeof(EXCLUDED[0]))

/* Calls made only with tamed arguments, and how (also printed by -L). */
static const char *TAMED[] = {
	"kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal: only the child's own pid/tid "
	"(never pid <= 0 or another process); never SIGKILL, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU (stop or end the "
	"child), SIGALRM (the watchdog) or signal 63 (wakes rt_sigsuspend); pidfd_send_signal never to a process group",
	"clone, clone3, fork, vfork: the new process or thread exits at once (no fork bombs); the harness reaps it "
	"before the next call; exit signal SIGCHLD, 0, SIGUSR1/2 and rarely SIGSEGV; CLONE_VM only 1 time in 8",
	"execve, execveat: only names in the private directory (never an executable file) or bad pointers",
	"setpgid, setpriority, ioprio_set, sched_set*, prlimit64, migrate_pages, move_pages, kcmp, process_vm_*, "
	"pidfd_open, capset: only the child itself (pid 0 or its own); setpriority/ioprio_set never PRIO_PGRP/USER; "
	"no real-time or deadline scheduling",
	"setrlimit, prlimit64: RLIMIT_NOFILE, AS, DATA, STACK, CPU only raised or kept (the harness needs them); "
	"RLIMIT_FSIZE is capped at 16 MiB and RLIMIT_CORE at 0 for every child",
	"mmap, munmap, mremap, madvise, mprotect, mlock, msync, mincore, mbind, pkey_mprotect, mseal, shmat, "
	"remap_file_pages, map_shadow_stack: addresses only inside the scratch area (plus NULL); lengths that could "
	"reach past it only for calls that stop at the unmapped hole after it; MAP_POPULATE/MAP_LOCKED only up to "
	"4 MiB; MADV_HWPOISON and MADV_SOFT_OFFLINE never",
	"brk: never below the break the child started with (static glibc keeps its TLS there)",
	"open, openat, openat2, creat, mknod, unlink, rename, link, symlink, chmod, chown, truncate, *xattr, ...: "
	"paths only inside the child's private directory (relative names, no '..'); symlink targets too; "
	"reading calls (stat, access, readlink, open for reading) may also name /proc/self/..., /dev/null, "
	"/dev/zero, /etc/passwd, / (never when running as root: as root the fuzzer keeps to its directory); "
	"mknod makes no device nodes",
	"descriptors: 1 and 2 are never passed (stderr carries picos' messages); close_range starts at 3; every new "
	"descriptor is made non-blocking (O_NONBLOCK forced in open/pipe2/socket/accept4/eventfd/..., and set by the "
	"harness after pipe/accept/eventfd/signalfd/inotify_init); fcntl F_SETFL keeps O_NONBLOCK; F_SETLKW becomes "
	"F_SETLK, flock gets LOCK_NB, F_SETLEASE is never used (a later open would wait 45 s); F_SETOWN only to the "
	"child; ioctl never FIONBIO, TIOCSTI, FS_IOC_SETFLAGS or the 0x89xx socket/interface range",
	"sockets: AF_UNIX, AF_INET, AF_INET6 only (no netlink, no raw or packet sockets); addresses only loopback port "
	"0/1, private-directory paths or abstract names made unique per run",
	"timeouts (nanosleep, clock_nanosleep, futex, ppoll, pselect6, select, epoll_*, rt_sigtimedwait, "
	"io_getevents, semtimedop, mq_timed*, recvmmsg, futex_waitv): at most 1 ms, never infinite; poll-style "
	"timeouts 0 or 1 ms; interval timers (setitimer, timer_settime, timerfd_settime) disarmed or >= 1 hour, "
	"never ITIMER_REAL (the watchdog)",
	"rt_sigaction: never SIGALRM or signal 63; handler SIG_DFL, SIG_IGN, the fuzzer's handler (with its "
	"restorer) or rarely a bad pointer; rt_sigprocmask and every other mask never block SIGALRM or 63",
	"rt_sigsuspend: the harness blocks and raises signal 63 first, so the call returns",
	"prctl: never PR_SET_SECCOMP, PR_SET_MM, PR_SET_SYSCALL_USER_DISPATCH on (would end or break the child); "
	"arch_prctl: never ARCH_SET_FS (libc's TLS) or shadow-stack enable; seccomp: only the query operations",
	"SysV IPC: only IPC_PRIVATE objects the child created (the parent removes them); IPC_NOWAIT forced; "
	"mq_open: names unique per run, removed after the child",
	"fallocate: offset+length at most 16 MiB or rejected outright (2^62, negative)",
	"get_robust_list, prctl(PR_GET_TID_ADDRESS, PR_GET_AUXV), arch_prctl(ARCH_GET_FS/GS): the result (a pointer "
	"into libc's memory) goes to ARG or a bad pointer, never to scratch memory later calls read pointers from",
	"rseq: weight 1 (known picos bug class: a bad rseq_cs faults inside the runtime)",
};

/* ------------------------------------------------------------------------ */
/* Value pools.                                                             */
/* ------------------------------------------------------------------------ */

/* A value that is never an address of the fuzzer's own memory: small,
 * in [2 GiB, 4 GiB) (nothing is mapped there), one of the fuzzer's fixed
 * areas, or non-canonical. */
static u64 ptr(void);
static u64 word(void)
{
	switch (below(10)) {
	case 0: return 0;
	case 1: return below(16);
	case 2: return below(65536);
	case 3: return 1ULL << below(64);
	case 4: return (u64)-1 - below(4);
	case 5: return 0x80000000ULL | (rnd() & 0x7fffffffULL);
	case 6: return NONCANON | rnd();
	case 7: case 8: return ptr();
	default: return below(4096);
	}
}

static const u64 WILD[] = {
	1, 4095, 0x800000000000UL, 0xdead000000000000UL, 0xffffffff81000000UL, (u64)-1, (u64)-4096,
	0x7ffffffff000UL, UNMAPPED, UNMAPPED + 0x123, GUARD, GUARD + 0x1001,
};

static u64 ptr(void)
{
	switch (below(20)) {
	case 0: return 0;
	case 1: case 2: case 3: return SCR + below(64) * 4096;
	case 4: case 5: return SCR + below(SCR_SZ / 4096) * 4096;
	case 6: case 7: return SCR + below(64) * 4096 + below(4096);
	case 8: return SCR_END - 1 - below(64);
	case 9: case 10: case 11: return ARG + (below(ARG_SZ) & ~7UL);
	case 12: return ARG + ARG_SZ - 1 - below(16);
	case 13: case 14: return RO + below(RO_SZ / 4096) * 4096;
	case 15: return RO + below(RO_SZ);
	case 16: return GUARD + below(GUARD_SZ);
	case 17: return UNMAPPED + below(1 << 20);
	default: return PICK(WILD);
	}
}

static u64 len(void)
{
	static const u64 L[] = {
		0, 1, 2, 7, 8, 16, 24, 32, 64, 100, 128, 4095, 4096, 4097, 8192, 65536, SCR_SZ / 2, SCR_SZ,
		SCR_SZ + 1, 1UL << 31, 1UL << 32, 1UL << 62, (u64)-1, 0x7fffffff, 0x7ffff000,
	};
	if (chance(30))
		return below(chance(50) ? 64 : 65536);
	return PICK(L);
}

static u64 ival(void)
{
	switch (below(8)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return (u64)-1;
	case 3: case 4: return below(64);
	case 5: return 1ULL << below(32);
	case 6: return 0x80000000ULL | (rnd() & 0x7fffffffULL);
	default: return word();
	}
}

static u64 small(void)
{
	if (chance(85))
		return below(20);
	return ival();
}

static u64 flags(void)
{
	switch (below(6)) {
	case 0: return 0;
	case 1: return 1ULL << below(32);
	case 2: return (1ULL << below(32)) | (1ULL << below(32));
	case 3: return rnd() & 0xffffffffULL;
	case 4: return below(16);
	default: return (1ULL << below(24)) | (1ULL << below(24)) | (1ULL << below(24));
	}
}

static u64 offset(void)
{
	static const u64 O[] = {0, 1, 100, 4095, 4096, 8192, 1 << 20, 1UL << 31, 1UL << 40, 1UL << 62,
				 (u64)-1, (u64)-4096, 0x7fffffffffffffffUL};
	if (chance(30))
		return below(16384);
	return PICK(O);
}

static u64 uidv(void)
{
	switch (below(6)) {
	case 0: return 0;
	case 1: case 2: return own_uid;
	case 3: return 65534;
	case 4: return (u64)-1;
	default: return ival();
	}
}

static u64 qpid(void)
{
	switch (below(8)) {
	case 0: return 0;
	case 1: case 2: return own_pid;
	case 3: return 1;
	case 4: return own_ppid;
	case 5: return (u64)-1;
	case 6: return 4194304; /* above pid_max */
	default: return ival();
	}
}

/* Signals the fuzzer may send itself. */
static u64 sendsig(void)
{
	static const int S[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 15, 16, 17, 18, 23, 24, 25, 26, 27,
				28, 29, 30, 31, 32, 33, 34, 35, 40, 50, 62, 64, 65, -1};
	return (u64)(i64)PICK(S);
}
static int sendable(long s)
{
	return !(s == SIGKILL || s == SIGSTOP || s == SIGTSTP || s == SIGTTIN || s == SIGTTOU || s == SIGALRM ||
		 s == SIGWAKE);
}

/* Signal numbers for rt_sigaction. */
static u64 dispsig(void)
{
	u64 s;
	do
		s = chance(95) ? below(66) : ival();
	while (s == SIGALRM || s == SIGWAKE);
	return s;
}

/* ------------------------------------------------------------------------ */
/* ARG area: structures the kernel reads.                                   */
/* ------------------------------------------------------------------------ */

static u64 arg_top; /* bump allocator, from the end of ARG downwards */

static void arg_refill(void)
{
	u64 *w = (u64 *)ARG;
	for (unsigned i = 0; i < ARG_SZ / 8; i++)
		w[i] = word();
	arg_top = ARG + ARG_SZ;
}

static void *aalloc(u64 n)
{
	n = (n + 7) & ~7UL;
	if (arg_top - n < ARG + 1024)
		arg_top = ARG + ARG_SZ; /* wrap: overlapping structures are fine */
	arg_top -= n;
	return (void *)arg_top;
}

static u64 cstruct(void)
{
	if (chance(70))
		return ARG + (below(ARG_SZ) & ~7UL);
	return ptr();
}

/* Output pointer the kernel may fill with a pointer into libc's memory. */
static u64 outp(void)
{
	if (chance(80))
		return (u64)aalloc(64);
	static const u64 B[] = {0, UNMAPPED, RO, GUARD, 0xdead000000000000UL};
	return PICK(B);
}

static const char *NAMES[] = {
	"a", "b", "c", "d", "d/a", "d/b", "f0", "fifo", "sock", "link", "e", "d/e/f", "", ".", "nonexist/a",
	"f0/x", "a/", "d/",
};
#define LONGNAME_LEN 300
static const char *OUTSIDE[] = {
	"/proc/self/maps", "/proc/self/status", "/proc/self/fd", "/proc/self/mem", "/proc/self/cwd",
	"/proc/self/stat", "/dev/null", "/dev/zero", "/etc/passwd", "/", "/proc", "/nonexistent/x",
};

static u64 put_string(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = aalloc(n);
	memcpy(p, s, n);
	return (u64)p;
}

/* Tags for the current call. */
static int tag_h, tag_p, tag_x;

static u64 private_path(void)
{
	switch (below(20)) {
	case 0: return 0;
	case 1: return PICK(WILD);
	case 2: { /* too long a component */
		char *p = aalloc(LONGNAME_LEN + 1);
		memset(p, 'n', LONGNAME_LEN);
		p[LONGNAME_LEN] = 0;
		return (u64)p;
	}
	case 3: { /* too long a path (PATH_MAX) */
		char *p = aalloc(ARG_SZ - 1100);
		size_t n = ARG_SZ - 1100 - 1;
		for (size_t i = 0; i < n; i++)
			p[i] = (i % 2) ? '/' : 'a';
		p[n] = 0;
		return (u64)p;
	}
	default: return put_string(PICK(NAMES));
	}
}

/* `allow_outside`: a reading call; root never reads outside (see TAMED). */
static u64 read_path(int *outside)
{
	*outside = 0;
	if (!opt_root && chance(30)) {
		if (chance(15)) {
			tag_x = 1;
			*outside = 2;
			return put_string("/proc/self/exe");
		}
		const char *s = PICK(OUTSIDE);
		tag_p = 1;
		*outside = 1;
		return put_string(s);
	}
	return private_path();
}

static u64 fdv(void)
{
	u64 r;
	switch (below(20)) {
	case 0: r = 0; break;
	case 1: r = (u64)-1; break;
	case 2: r = (u64)-100; break; /* AT_FDCWD where an fd is expected */
	case 3: r = 1023; break;      /* the top of the range with RLIMIT_NOFILE 1024 */
	case 4: r = chance(50) ? 1024 : 0x7fffffff; break;
	case 5: case 6: case 7: r = 21 + below(10); break; /* made by earlier calls */
	default: r = 3 + below(18); break;              /* the set-up descriptors */
	}
	if (r == 1023)
		tag_h = 1;
	if (r < NFD_TRACK && taint[r])
		taint[r] == 'x' ? (tag_x = 1) : (tag_p = 1);
	return r;
}

static u64 dirfd(void)
{
	switch (below(5)) {
	case 0: case 1: return (u64)-100;
	case 2: return 3;
	case 3: return 17;
	default: return fdv();
	}
}

static u64 mode(void)
{
	switch (below(4)) {
	case 0: return 0644;
	case 1: return 0755;
	case 2: return below(010000);
	default: return flags();
	}
}

static u64 sigset_p(void)
{
	switch (below(12)) {
	case 0: return 0;
	case 1: return PICK(WILD);
	default: {
		u64 *m = aalloc(16);
		switch (below(4)) {
		case 0: m[0] = 0; break;
		case 1: m[0] = ~0ULL; break;
		default: m[0] = rnd(); break;
		}
		m[0] &= ~(1ULL << (SIGALRM - 1)) & ~(1ULL << (SIGWAKE - 1));
		if (AVOID('m'))
			m[0] &= ~SYNC_SIGS;
		m[1] = rnd();
		return (u64)m;
	}
	}
}

static u64 setsize(void)
{
	static const u64 Z[] = {0, 4, 16, 128, (u64)-1};
	return chance(85) ? 8 : PICK(Z);
}

/* Bounded timespec: at most 1 ms (relative), or in the past (absolute),
 * or invalid. Never NULL (NULL means forever). */
static u64 timespec_p(void)
{
	if (chance(4))
		return PICK(WILD);
	i64 *t = aalloc(16);
	static const i64 NS[] = {0, 1, 1000, 100000, 1000000, 1000000000, -1, 999999999};
	t[0] = chance(90) ? 0 : (chance(50) ? -1 : 0x7fffffffffffffffLL);
	t[1] = PICK(NS);
	if (t[0] != 0 && t[1] >= 0 && t[1] < 1000000000)
		t[1] = 1000000000; /* keep the huge/negative seconds invalid */
	if (t[0] == 0 && t[1] == 999999999)
		t[1] = 1000000; /* ~1 s sleeps are too slow */
	return (u64)t;
}

static u64 timeval_p(void)
{
	if (chance(4))
		return PICK(WILD);
	i64 *t = aalloc(16);
	static const i64 US[] = {0, 1, 1000, 1000000, -1};
	t[0] = chance(92) ? 0 : -1;
	t[1] = PICK(US);
	return (u64)t;
}

/* Interval timer value: disarmed, >= 1 hour, or invalid. */
static u64 itimer_p(int timerfd)
{
	if (chance(5))
		return PICK(WILD);
	i64 *t = aalloc(32);
	for (int i = 0; i < 2; i++) {
		switch (below(timerfd ? 5 : 4)) {
		case 0: case 1: t[2 * i] = 0; t[2 * i + 1] = 0; break;
		case 2: t[2 * i] = 100000000000LL + below(100000); t[2 * i + 1] = below(1000); break; /* ~3000 years: never fires, absolute or not */
		case 3: t[2 * i] = (i64)word(); t[2 * i + 1] = -1; break; /* invalid */
		default: /* timerfd only: a one-shot value of 1 ns, no interval */
			t[2 * i] = 0;
			t[2 * i + 1] = i == 1 ? 1 : 0;
		}
	}
	if (t[2] == 0 && t[3] == 1 && (t[0] || t[1]))
		t[0] = t[1] = 0; /* 1 ns once: no interval */
	return (u64)t;
}

static char abstract_prefix[24];

static u64 sockaddr_p(u64 *plen)
{
	switch (below(12)) {
	case 0: *plen = 16; return 0;
	case 1: *plen = 16; return PICK(WILD);
	case 2: case 3: { /* AF_UNIX path in the private dir */
		char *p = aalloc(110);
		memset(p, 0, 110);
		p[0] = 1;
		strcpy(p + 2, PICK(NAMES));
		*plen = 2 + strlen(p + 2) + 1;
		return (u64)p;
	}
	case 4: case 5: { /* abstract, unique per run */
		char *p = aalloc(110);
		memset(p, 0, 110);
		p[0] = 1;
		memcpy(p + 3, abstract_prefix, strlen(abstract_prefix));
		p[3 + strlen(abstract_prefix)] = 'a' + below(3);
		*plen = 3 + strlen(abstract_prefix) + 1;
		return (u64)p;
	}
	case 6: case 7: { /* 127.0.0.1, port 0 or 1 */
		unsigned char *p = aalloc(16);
		memset(p, 0, 16);
		p[0] = 2;
		p[3] = below(2);
		p[4] = 127;
		p[7] = 1;
		*plen = 16;
		return (u64)p;
	}
	case 8: { /* ::1 */
		unsigned char *p = aalloc(28);
		memset(p, 0, 28);
		p[0] = 10;
		p[3] = below(2);
		p[23] = 1;
		*plen = 28;
		return (u64)p;
	}
	case 9: { /* AF_UNSPEC */
		unsigned char *p = aalloc(16);
		memset(p, 0, 16);
		*plen = 16;
		return (u64)p;
	}
	default: { /* an unknown family (>= 100): nothing is sent anywhere */
		unsigned char *p = aalloc(32);
		u64 fam = 100 + below(65436);
		p[0] = fam & 0xff;
		p[1] = fam >> 8;
		*plen = 16;
		return (u64)p;
	}
	}
}

static u64 socklen(void)
{
	static const u64 A[] = {0, 2, 3, 16, 28, 110, 128, 1000, (u64)-1};
	return PICK(A);
}

static u64 iovec_p(u64 *count)
{
	if (chance(10)) {
		*count = below(3);
		return chance(50) ? 0 : PICK(WILD);
	}
	u64 n = chance(90) ? 1 + below(4) : 64;
	u64 *v = aalloc(16 * n);
	for (u64 i = 0; i < n; i++) {
		v[2 * i] = ptr();
		v[2 * i + 1] = chance(80) ? below(8192) : len();
	}
	*count = chance(90) ? n : PICK(((u64[]){0, 1024, 1025, (u64)-1}));
	return (u64)v;
}

static void msghdr_fill(u64 *m);
static u64 msghdr_p(void)
{
	if (chance(8))
		return ptr();
	u64 *m = aalloc(56);
	msghdr_fill(m);
	return (u64)m;
}

/* struct msghdr at m: name, namelen, iov, iovlen, control, controllen, flags */
static void msghdr_fill(u64 *m)
{
	u64 alen;
	m[0] = sockaddr_p(&alen);
	m[1] = alen;
	u64 cnt;
	m[2] = iovec_p(&cnt);
	m[3] = cnt;
	if (chance(30)) {
		/* SCM_RIGHTS with descriptors, or random control data */
		u64 *c = aalloc(32);
		c[0] = 24;
		c[1] = chance(50) ? (1ULL | (1ULL << 32)) : word(); /* level SOL_SOCKET, type SCM_RIGHTS */
		c[2] = (3 + below(18)) | ((u64)(3 + below(18)) << 32);
		m[4] = (u64)c;
		m[5] = chance(80) ? 24 : len();
	} else {
		m[4] = 0;
		m[5] = 0;
	}
	m[6] = flags();
}

/* ------------------------------------------------------------------------ */
/* Signal handling in the child.                                            */
/* ------------------------------------------------------------------------ */

struct ksigaction {
	u64 handler;
	u64 flags;
	u64 restorer;
	u64 mask;
};
#define SA_RESTORER_ 0x04000000UL

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig > 0 && sig <= 64)
		sig_seen |= 1ULL << (sig - 1);
	/* A fault (kernel si_code > 0; or unknown: without SA_SIGINFO the
	 * siginfo is not filled in): fall back to the default action, so that
	 * returning re-faults and ends the child instead of looping. */
	if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
		struct ksigaction cur;
		if (hs4(13, sig, 0, &cur, 8) != 0 || !(cur.flags & 4 /*SA_SIGINFO*/) || si->si_code > 0) {
			struct ksigaction d = {0, SA_RESTORER_, (u64)fz_restorer, 0};
			hs4(13, sig, &d, 0, 8);
		}
	}
}

static u64 sigaction_p(void)
{
	if (chance(6))
		return ptr();
	struct ksigaction *a = aalloc(sizeof *a);
	/* SIG_DFL, SIG_IGN and bad handlers end children early: not too often */
	switch (below(40)) {
	case 0: case 1: a->handler = 0; break;  /* SIG_DFL */
	case 2: case 3: case 4: a->handler = 1; break; /* SIG_IGN */
	case 5: a->handler = PICK(WILD); break; /* delivery will fault */
	default: a->handler = (u64)on_signal; break;
	}
	static const u64 F[] = {0x4 /*SA_SIGINFO*/, 0x10000000 /*SA_RESTART*/, 0x4, 0x10000000,
				0x40000000 /*SA_NODEFER*/, 1 /*SA_NOCLDSTOP*/, 2 /*SA_NOCLDWAIT*/,
				0x08000000 /*SA_ONSTACK*/, 0x80000000 /*SA_RESETHAND*/, 0x4, 0x10000000};
	a->flags = 0;
	for (int i = 0; i < 3; i++)
		if (chance(50))
			a->flags |= PICK(F);
	if (chance(95))
		a->flags |= SA_RESTORER_;
	if (chance(5))
		a->flags |= flags();
	a->restorer = chance(95) ? (u64)fz_restorer : PICK(WILD);
	a->mask = chance(50) ? 0 : rnd();
	if (AVOID('m'))
		a->mask &= ~SYNC_SIGS;
	return (u64)a;
}

/* ------------------------------------------------------------------------ */
/* Per-call argument fix-ups: what keeps the fuzzer from harming the host   */
/* or itself (see TAMED).                                                   */
/* ------------------------------------------------------------------------ */

struct call {
	const struct sc *sc;
	long nr;
	char mode;
	u64 a[6];
	int wake;      /* rt_sigsuspend: raise SIGWAKE first */
	int forklike;
	int outside;   /* path argument outside the private dir: 1 /proc etc., 2 exe */
	u64 clone_flags;
	const char *name;
};

static void range(u64 *addr, u64 *l, int may_overrun)
{
	u64 page = chance(70) ? below(64) : below(SCR_SZ / 4096);
	u64 a = SCR + page * 4096;
	if (chance(10))
		a += 1 + below(4095);
	if (chance(3))
		a = 0;
	u64 room = SCR_END - a;
	u64 n;
	switch (below(8)) {
	case 0: n = 0; break;
	case 1: n = 1 + below(4096); break;
	case 2: case 3: n = 4096 * (1 + below(16)); break;
	case 4: n = room; break;
	case 5: n = below(room + 1); break;
	case 6: /* rejected before anything happens */
		n = PICK(((u64[]){(u64)-1, (u64)-4096}));
		break;
	default: n = may_overrun ? PICK(((u64[]){room + 4096, 1UL << 40, 1UL << 46})) : room; break;
	}
	if (!may_overrun && n != (u64)-1 && n != (u64)-4096 && a && n > room)
		n = room;
	if (a == 0 && n > (1UL << 40) && n < (u64)-4096)
		n = 4096;
	*addr = a;
	*l = n;
}

static const u64 IOCTLS[] = {
	0x541B /*FIONREAD*/,    0x5451 /*FIOCLEX*/,       0x5450 /*FIONCLEX*/,      0x5452 /*FIOASYNC*/,
	0x5401 /*TCGETS*/,      0x5413 /*TIOCGWINSZ*/,    0x80086601 /*FS_IOC_GETFLAGS*/,
	0x80087601 /*FS_IOC_GETVERSION*/, 2 /*FIGETBSZ*/, 1 /*FIBMAP*/,           0x40049409 /*FICLONE*/,
	0x4020940d /*FICLONERANGE*/, 0xc0189436 /*FIDEDUPERANGE*/, 0x80081272 /*BLKGETSIZE64*/,
	0x5460 /*FIOQSIZE*/,    0x540B /*TCFLSH*/,        0x5421 /*FIONBIO, removed below*/,
	0x8004551a /*TUNGETFEATURES*/, 0xc0406619 /*FS_IOC_GETFSMAP*/, 0x801c581f /*FS_IOC_FSGETXATTR*/,
	0x80106615 /*FS_IOC_GET_ENCRYPTION_POLICY*/, 0x5422 /*TIOCNOTTY*/, 0x540E /*TIOCSCTTY*/,
	0x80047210, 0xc0047000,
};

static void fix_args(struct call *c)
{
	u64 *a = c->a;
	switch (c->nr) {
	case 2: case 257: { /* open, openat */
		int pi = c->nr == 257 ? 1 : 0, fi = pi + 1;
		if (c->outside) {
			/* reading only: O_RDONLY|O_NONBLOCK plus harmless bits */
			a[fi] &= 0200000 /*O_DIRECTORY*/ | 0400000 /*O_NOFOLLOW*/ | 02000000 /*O_CLOEXEC*/ |
				 010000000 /*O_PATH*/ | 01000000 /*O_NOATIME*/ | 0100000 /*O_LARGEFILE*/;
			if (c->outside == 2)
				a[fi] |= 010000000; /* exe: O_PATH only (never exec'able by fd) */
		}
		a[fi] |= 04000; /* O_NONBLOCK: no blocking reads, FIFOs or lease waits */
		break;
	}
	case 437: { /* openat2: struct open_how {flags, mode, resolve} */
		u64 *how = aalloc(24);
		how[0] = (flags() | 04000);
		if (c->outside)
			how[0] = 04000 | (chance(50) ? 010000000 : 0200000);
		how[1] = chance(80) ? 0644 : mode();
		how[2] = chance(50) ? 0 : below(32);
		a[2] = chance(95) ? (u64)how : ptr();
		a[3] = chance(90) ? 24 : len();
		break;
	}
	case 3: /* close: never 1 or 2 (the pool has neither) */
		break;
	case 7: { /* poll(fds, n, timeout) */
		u64 n = below(5);
		int *p = aalloc(8 * (n + 1));
		for (u64 i = 0; i < n; i++) {
			p[2 * i] = (int)fdv();
			p[2 * i + 1] = (int)flags();
		}
		a[0] = chance(90) ? (u64)p : ptr();
		a[1] = chance(90) ? n : PICK(((u64[]){1000, 100000, (u64)-1}));
		a[2] = below(2);
		break;
	}
	case 9: { /* mmap */
		u64 addr, l;
		range(&addr, &l, 0);
		u64 fl = a[3];
		static const u64 TYPES[] = {0x01 /*SHARED*/, 0x02 /*PRIVATE*/, 0x03 /*SHARED_VALIDATE*/};
		if (chance(85))
			fl = (fl & ~3UL & 0x1ffffffUL) | PICK(TYPES);
		if (chance(60))
			fl |= 0x20; /* MAP_ANONYMOUS */
		if (chance(50))
			fl &= ~(0x10UL | 0x100000UL); /* drop MAP_FIXED, MAP_FIXED_NOREPLACE */
		if (!(fl & (0x10 | 0x100000)) && chance(50))
			addr = chance(70) ? 0 : addr; /* a hint only */
		if (addr == 0 && (fl & 0x10))
			fl &= ~0x10UL; /* MAP_FIXED at 0: no */
		if (addr == 0 && chance(30))
			l = PICK(((u64[]){1UL << 31, 1UL << 40, (u64)-1, 1UL << 62, 8192}));
		if (l > (4UL << 20) && l < (u64)-4096)
			fl &= ~(0x8000UL | 0x2000UL); /* no MAP_POPULATE / MAP_LOCKED beyond 4 MiB */
		if (addr && (fl & (0x10 | 0x100000)) && l > SCR_END - addr && l < (u64)-4096)
			l = SCR_END - addr;
		a[0] = addr;
		a[1] = l;
		a[2] = chance(80) ? below(8) : flags();
		a[3] = fl;
		a[4] = (fl & 0x20) && chance(70) ? (u64)-1 : fdv();
		a[5] = chance(70) ? 0 : (chance(50) ? 4096 * below(4) : offset());
		break;
	}
	case 10: case 26: case 27: case 149: case 150: case 325: case 329: case 462: case 237: case 450: {
		/* mprotect msync mincore mlock munlock mlock2 pkey_mprotect mseal mbind set_mempolicy_home_node:
		 * lengths may run past scratch for the calls that stop at the hole
		 * after it (mprotect, pkey_mprotect, mincore, mseal) or do nothing
		 * harmful beyond it (msync, mbind); mlock would populate whatever
		 * lies beyond (terabytes mapped lazily), so never for it */
		range(&a[0], &a[1], c->nr != 149 && c->nr != 150 && c->nr != 325);
		if (c->nr == 10 || c->nr == 329)
			a[2] = chance(80) ? below(8) : flags();
		if (c->nr == 26)
			a[2] = chance(80) ? PICK(((u64[]){1, 2, 4, 6, 0, 3})) : flags();
		if (c->nr == 329)
			a[3] = chance(70) ? below(4) : ival();
		break;
	}
	case 11: /* munmap: strictly inside scratch */
		range(&a[0], &a[1], 0);
		break;
	case 25: { /* mremap(old, old_size, new_size, flags, new_addr) */
		u64 old, ol, nw, nl;
		range(&old, &ol, 0);
		range(&nw, &nl, 0);
		if (old == 0)
			old = SCR;
		u64 fl = chance(80) ? below(8) : flags(); /* MAYMOVE 1, FIXED 2, DONTUNMAP 4 */
		u64 room = SCR_END - old;
		u64 ns = chance(50) ? nl : below(room + 1);
		if (ns > room && ns < (u64)-4096)
			ns = room; /* growing in place must not spill into the hole */
		if ((fl & 2) && nw == 0)
			nw = SCR + 4096 * below(64);
		if ((fl & 2) && ns > SCR_END - nw && ns < (u64)-4096)
			ns = SCR_END - nw;
		a[0] = old;
		a[1] = ol > room ? room : ol;
		a[2] = ns;
		a[3] = fl;
		a[4] = nw;
		break;
	}
	case 28: { /* madvise: never HWPOISON (100) / SOFT_OFFLINE (101); never past the
		    * scratch area (madvise goes on across holes: DONTNEED would zap
		    * the fuzzer's own stack and data) */
		static const u64 ADV[] = {0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
					  22, 23, 24, 25, 26, 102, 103};
		range(&a[0], &a[1], 0);
		a[2] = chance(95) ? PICK(ADV) : 1000 + below(1000);
		break;
	}
	case 440: { /* process_madvise(pidfd, iov, n, advice, flags): non-destructive advice only */
		a[3] = PICK(((u64[]){20, 21, 3, 25, 999}));
		break;
	}
	case 216: { /* remap_file_pages(start, size, prot, pgoff, flags) */
		range(&a[0], &a[1], 0);
		break;
	}
	case 453: { /* map_shadow_stack(addr, size, flags) */
		a[0] = chance(50) ? 0 : SCR + 4096 * below(64);
		a[1] = chance(80) ? 4096 * (1 + below(16)) : len();
		if (a[1] > (1 << 20) && a[1] < (u64)-4096)
			a[1] = 1 << 20;
		break;
	}
	case 12: { /* brk: never below the initial break */
		switch (below(5)) {
		case 0: a[0] = 0; break;
		case 1: a[0] = init_brk; break;
		case 2: a[0] = init_brk + below(1 << 20); break;
		case 3: a[0] = init_brk + (below(64) << 20); break;
		default: a[0] = PICK(((u64[]){1, 0x7ffffffff000UL, (u64)-1, SCR})); break;
		}
		break;
	}
	case 13: { /* rt_sigaction(sig, act, oldact, size) */
		a[1] = chance(85) ? sigaction_p() : 0;
		a[2] = chance(60) ? outp() : ptr();
		break;
	}
	case 14: /* rt_sigprocmask(how, set, old, size) */
		a[0] = chance(90) ? below(3) : ival();
		break;
	case 16: { /* ioctl */
		/* random command numbers only when not root: as root an admin
		 * ioctl on a file could act on the host file system */
		u64 cmd = chance(80) || opt_root ? PICK(IOCTLS) : flags();
		if (cmd == 0x5421 /*FIONBIO*/ || cmd == 0x5412 /*TIOCSTI*/ ||
		    (cmd & 0xffff) == 0x6602 /*FS_IOC_SETFLAGS*/ || (cmd & 0xff00) == 0x8900 /*socket/if*/)
			cmd = 0x541B; /* FIONREAD */
		a[1] = cmd;
		break;
	}
	case 23: { /* select(n, r, w, e, tv) */
		a[0] = chance(80) ? below(32) : PICK(((u64[]){1024, 1025, (u64)-1}));
		a[4] = timeval_p();
		break;
	}
	case 270: { /* pselect6(n, r, w, e, ts, {mask, size}) */
		a[0] = chance(80) ? below(32) : PICK(((u64[]){1024, 1025, (u64)-1}));
		a[4] = timespec_p();
		u64 *sm = aalloc(16);
		sm[0] = sigset_p();
		sm[1] = setsize();
		a[5] = chance(80) ? (u64)sm : (chance(50) ? 0 : PICK(WILD));
		break;
	}
	case 29: /* shmget(key, size, flags) */
		a[0] = chance(90) ? 0 /*IPC_PRIVATE*/ : (u64)-1 /* never an existing key: EINVAL/ENOENT */;
		if (a[0] != 0)
			a[2] &= ~01000UL; /* no IPC_CREAT on a real key */
		a[1] = PICK(((u64[]){0, 1, 4096, 65536, 1 << 20}));
		a[2] &= ~04000UL; /* SHM_HUGETLB is fine; keep mode bits */
		break;
	case 30: { /* shmat(id, addr, flags): SHM_REMAP only in the first 2 MiB of scratch */
		a[1] = chance(50) ? 0 : SCR + 4096 * below(512);
		a[2] &= 0xffffUL;
		if ((a[2] & 040000) && a[1] == 0)
			a[2] &= ~040000UL;
		break;
	}
	case 31: case 66: case 71: /* *ctl */
		if (c->nr == 66)
			a[2] = chance(90) ? below(20) : ival();
		else
			a[1] = chance(90) ? below(16) : ival();
		break;
	case 64: /* semget */
		a[0] = 0;
		a[1] = chance(80) ? below(8) : ival();
		break;
	case 68: /* msgget */
		a[0] = 0;
		break;
	case 65: case 220: { /* semop / semtimedop: IPC_NOWAIT in every sembuf */
		u64 n = below(4);
		short *s = aalloc(6 * (n + 1));
		for (u64 i = 0; i < n; i++) {
			s[3 * i] = below(8);
			s[3 * i + 1] = (short)(below(5) - 2);
			s[3 * i + 2] = 04000 | (chance(30) ? 010000 /*SEM_UNDO*/ : 0);
		}
		a[1] = chance(90) ? (u64)s : ptr();
		a[2] = chance(90) ? n : ival();
		if (c->nr == 220)
			a[3] = timespec_p();
		break;
	}
	case 69: a[3] |= 04000; break; /* msgsnd IPC_NOWAIT */
	case 70: a[4] |= 04000; break; /* msgrcv IPC_NOWAIT */
	case 35: case 230: /* nanosleep, clock_nanosleep: bounded by timespec_p */
		if (c->nr == 230) {
			/* never a CPU-time clock (2, or a negative pid/thread clock):
			 * a sleeping process's CPU time does not advance */
			a[0] = chance(80) ? below(12) : ival();
			if (a[0] == 2 || (i64)a[0] < 0)
				a[0] = 1;
			a[1] = chance(80) ? below(2) : flags();
		}
		break;
	case 85: { /* creat: cannot take O_NONBLOCK, so never on a FIFO (open would wait for a reader) */
		struct stat st;
		const char *p = (const char *)a[0];
		if (a[0] >= ARG && a[0] < ARG + ARG_SZ && stat(p, &st) == 0 && S_ISFIFO(st.st_mode))
			a[0] = put_string("nonexist/a");
		break;
	}
	case 36: a[0] = chance(90) ? below(3) : ival(); break;
	case 38: /* setitimer: never ITIMER_REAL (the watchdog) */
		a[0] = 1 + below(2);
		if (chance(5))
			a[0] = 3 + below(10);
		a[1] = itimer_p(0);
		break;
	case 41: { /* socket(domain, type, proto) */
		static const u64 DOM[] = {1, 2, 10, 0, 46 /*AF_MAX-ish: EAFNOSUPPORT*/};
		static const u64 TY[] = {1, 2, 5 /*SEQPACKET*/, 0};
		a[0] = PICK(DOM);
		a[1] = PICK(TY) | 04000 /*SOCK_NONBLOCK*/ | (chance(30) ? 02000000 : 0);
		a[2] = chance(80) ? 0 : PICK(((u64[]){6, 17, 132, 1000}));
		if (chance(3))
			a[1] = 1 | 04000 | (flags() & ~0xfUL & ~0x80000UL);
		break;
	}
	case 53: /* socketpair */
		a[0] = chance(90) ? 1 : 2;
		a[1] = PICK(((u64[]){1, 2, 5})) | 04000;
		a[2] = 0;
		break;
	case 42: case 49: { /* connect, bind */
		u64 l;
		a[1] = sockaddr_p(&l);
		a[2] = chance(80) ? l : socklen();
		break;
	}
	case 44: { /* sendto */
		u64 l;
		a[4] = sockaddr_p(&l);
		a[5] = chance(80) ? l : socklen();
		a[3] |= 0x40; /* MSG_DONTWAIT */
		break;
	}
	case 45: a[3] |= 0x40; break;
	case 46: case 47: a[1] = msghdr_p(); a[2] |= 0x40; break;
	case 307: case 299: { /* sendmmsg, recvmmsg */
		u64 n = 1 + below(3);
		u64 *v = aalloc(64 * n);
		for (u64 i = 0; i < n; i++) {
			msghdr_fill(&v[8 * i]);
			v[8 * i + 7] = 0;
		}
		a[1] = chance(90) ? (u64)v : ptr();
		a[2] = chance(90) ? n : ival();
		a[3] |= 0x40;
		if (c->nr == 299)
			a[4] = timespec_p();
		break;
	}
	case 43: case 288: /* accept, accept4 */
		if (c->nr == 288)
			a[3] |= 04000;
		break;
	case 54: case 55: /* setsockopt/getsockopt level */
		a[1] = PICK(((u64[]){1, 0, 6, 17, 41, 263, 280}));
		if (chance(10))
			a[1] = ival();
		break;
	case 56: { /* clone(flags, stack, ptid, ctid, tls) */
		u64 fl = flags() & ~0xffUL;
		fl &= ~0x00002000UL; /* CLONE_PTRACE: pointless, we are not traced */
		if (!chance(12))
			fl &= ~0x100UL; /* CLONE_VM only 1 time in 8 */
		u64 es = below(100);
		fl |= es < 80 ? 17 : es < 88 ? 0 : es < 93 ? 10 : es < 98 ? 12 : 11; /* exit signal; 11: known bug */
		if ((fl & 0x8000 /*PARENT*/) && (fl & 0xff) != 17)
			fl = (fl & ~0xffUL) | 17;
		a[0] = fl;
		a[1] = chance(50) ? 0 : ptr();
		c->clone_flags = fl;
		break;
	}
	case 435: { /* clone3(args, size) */
		u64 *ca = aalloc(88);
		u64 fl = flags() & ~0xffUL & ~0x00002000UL;
		if (!chance(12))
			fl &= ~0x100UL;
		ca[0] = fl;
		ca[1] = chance(70) ? 0 : (u64)aalloc(8); /* pidfd */
		ca[2] = ptr();                           /* child_tid */
		ca[3] = ptr();                           /* parent_tid */
		u64 es = below(100);
		ca[4] = es < 80 ? 17 : es < 88 ? 0 : es < 93 ? 10 : es < 97 ? 12 : es < 99 ? 65 : 11;
		if ((fl & 0x8000) && ca[4] != 17)
			ca[4] = 17;
		ca[5] = chance(50) ? 0 : SCR + 4096 * below(64); /* stack */
		ca[6] = chance(50) ? 0 : (chance(50) ? 4096 * below(16) : len());
		ca[7] = chance(80) ? 0 : word();                   /* tls */
		ca[8] = chance(90) ? 0 : (u64)aalloc(16);          /* set_tid */
		ca[9] = chance(90) ? 0 : below(3);                 /* set_tid_size */
		ca[10] = chance(90) ? 0 : fdv();                   /* cgroup */
		a[0] = chance(95) ? (u64)ca : ptr();
		a[1] = chance(85) ? 88 : PICK(((u64[]){64, 80, 0, 96, 4096}));
		c->clone_flags = fl;
		break;
	}
	case 59: case 322: { /* execve(path, argv, envp), execveat(fd, path, argv, envp, flags) */
		int ai = c->nr == 59 ? 1 : 2;
		for (int k = 0; k < 2; k++) {
			u64 *v = aalloc(24);
			v[0] = put_string("x");
			v[1] = chance(80) ? 0 : PICK(WILD);
			v[2] = 0;
			switch (below(4)) {
			case 0: a[ai + k] = 0; break;
			case 1: a[ai + k] = PICK(WILD); break;
			default: a[ai + k] = (u64)v; break;
			}
		}
		if (c->nr == 322)
			a[4] &= ~0x1000UL; /* no AT_EMPTY_PATH: an fd could be /proc/self/exe */
		break;
	}
	case 61: /* wait4(pid, status, options, rusage) */
		a[2] = chance(70) ? (1 /*WNOHANG*/ | (chance(50) ? 0x40000000 /*__WALL*/ : 0)) : flags();
		break;
	case 247: /* waitid(type, id, info, options, ru) */
		a[0] = chance(90) ? below(4) : ival();
		a[3] = chance(70) ? (1 | 4 /*WEXITED*/) : flags();
		break;
	case 62: case 200: case 234: case 129: case 297: case 424: { /* signals: self only */
		int si = c->nr == 234 || c->nr == 297 ? 2 : 1;
		if (!sendable((long)a[si]))
			a[si] = SIGUSR1;
		if (c->nr == 62 || c->nr == 129 || c->nr == 234 || c->nr == 297)
			a[0] = own_pid;
		if (c->nr == 200)
			a[0] = own_tid;
		if (c->nr == 234 || c->nr == 297)
			a[1] = own_tid;
		if (c->nr == 129 || c->nr == 297) {
			/* siginfo: si_signo, si_errno, si_code (often > 0: a "kernel" code), pid, uid */
			int *inf = aalloc(128);
			inf[0] = (int)a[si];
			inf[1] = 0;
			inf[2] = PICK(((int[]){-1, -6 /*SI_TKILL*/, 0, 1, 2, -60, 128 /*SI_KERNEL*/, -2}));
			if (AVOID('q') && inf[2] > 0)
				inf[2] = -1;
			inf[4] = (int)own_pid;
			inf[5] = (int)own_uid;
			a[si + 1] = chance(90) ? (u64)inf : ptr();
			if (AVOID('q'))
				a[si + 1] = (u64)inf; /* not random memory: its si_code could be > 0 */
		}
		if (c->nr == 424) {
			a[3] &= ~4UL; /* never PIDFD_SIGNAL_PROCESS_GROUP */
			if (AVOID('q'))
				a[2] = 0;
		}
		break;
	}
	case 72: { /* fcntl */
		static const u64 CMD[] = {0, 1, 2, 3, 4, 5, 6, 7 /*SETLKW->SETLK*/, 8, 9, 10, 11, 15, 16,
					  1030, 1031, 1032, 1033, 1034, 1036, 1037, 1038, 36, 37, 38, 1024 /*SETLEASE*/,
					  1025, 1026 /*NOTIFY*/, 1035, 1039, 1040};
		u64 cmd = chance(90) ? PICK(CMD) : ival();
		if (cmd == 7)
			cmd = 6; /* F_SETLKW would deadlock on our own OFD locks */
		if (cmd == 38)
			cmd = 37; /* F_OFD_SETLKW */
		if (cmd == 1024)
			cmd = 1025; /* F_SETLEASE: a later open would wait lease-break-time */
		a[1] = cmd;
		switch (cmd) {
		case 4: a[2] |= 04000; break; /* F_SETFL keeps O_NONBLOCK */
		case 8: a[2] = chance(50) ? 0 : own_pid; break; /* F_SETOWN: only to the child */
		case 10: if (!sendable((long)a[2])) a[2] = SIGUSR1; break; /* F_SETSIG */
		case 15: { /* F_SETOWN_EX {type, pid}: a thread or the process, never a group */
			int *o = aalloc(8);
			o[0] = below(2);
			o[1] = o[0] == 0 ? (int)own_tid : (int)own_pid;
			a[2] = chance(90) ? (u64)o : ptr();
			break;
		}
		case 5: case 6: case 36: case 37: { /* struct flock */
			short *l = aalloc(32);
			l[0] = below(3);
			l[1] = below(3);
			((i64 *)l)[1] = below(8192);
			((i64 *)l)[2] = below(8192);
			((int *)l)[6] = 0;
			a[2] = chance(90) ? (u64)l : ptr();
			break;
		}
		case 0: case 1030: a[2] = chance(80) ? below(64) : ival(); break;
		default: break;
		}
		break;
	}
	case 73: a[1] |= 4; break; /* flock LOCK_NB */
	case 80: /* chdir: only directories in the private dir */
		a[0] = put_string(PICK(((const char *[]){"d", ".", "d/e", "a", "nonexist"})));
		break;
	case 88: case 266: /* symlink target: a private name */
		a[0] = put_string(PICK(NAMES));
		break;
	case 133: case 259: { /* mknod: regular, FIFO or socket, never a device */
		int mi = c->nr == 133 ? 1 : 2;
		static const u64 T[] = {0100000, 010000, 0140000, 0, 0160000 /*invalid*/};
		a[mi] = PICK(T) | (a[mi] & 07777);
		a[mi + 1] = 0;
		break;
	}
	case 97: a[0] = chance(90) ? below(17) : ival(); break;
	case 98: a[0] = PICK(((u64[]){0, (u64)-1, 1, 2, (u64)-2})); break;
	case 109: /* setpgid(pid, pgid) */
		a[1] = PICK(((u64[]){0, 0, (u64)own_pid, (u64)own_pgid, 1, (u64)-1}));
		break;
	case 126: { /* capset(header {version, pid}, data) */
		unsigned *h = aalloc(8);
		h[0] = PICK(((unsigned[]){0x19980330, 0x20071026, 0x20080522, 0}));
		h[1] = chance(50) ? 0 : (unsigned)own_pid;
		a[0] = chance(90) ? (u64)h : ptr();
		break;
	}
	case 125: {
		unsigned *h = aalloc(8);
		h[0] = PICK(((unsigned[]){0x19980330, 0x20071026, 0x20080522, 0}));
		h[1] = (unsigned)qpid();
		a[0] = chance(90) ? (u64)h : ptr();
		break;
	}
	case 128: /* rt_sigtimedwait(set, info, ts, size) */
		a[1] = chance(70) ? outp() : ptr();
		break;
	case 130: /* rt_sigsuspend: the harness raises SIGWAKE first */
		c->wake = 1;
		break;
	case 131: { /* sigaltstack(ss, old) */
		u64 *ss = aalloc(24);
		/* mostly the top 64 KiB of scratch, which memory calls rarely hit
		 * (a stack unmapped under a handler kills the child) */
		ss[0] = chance(85) ? SCR_END - 65536 : ptr();
		((int *)ss)[2] = PICK(((int[]){0, 0, 0, 2 /*SS_DISABLE*/, 1 << 31 /*SS_AUTODISARM*/, 1, 4}));
		ss[2] = chance(85) ? PICK(((u64[]){8192, 16384, 65536})) : PICK(((u64[]){2048, 0, (u64)-1, 65537}));
		a[0] = chance(20) ? 0 : (chance(90) ? (u64)ss : ptr());
		a[1] = chance(60) ? outp() : ptr();
		break;
	}
	case 141: /* setpriority(which, who, prio): PRIO_PROCESS, self only */
		a[0] = chance(95) ? 0 : 3 + below(5);
		break;
	case 142: case 144: case 314: { /* sched_setparam, sched_setscheduler, sched_setattr */
		int *p = aalloc(56);
		memset(p, 0, 56);
		if (c->nr == 314) {
			p[0] = chance(90) ? 48 : (int)ival();                       /* size */
			p[1] = PICK(((int[]){0, 3 /*BATCH*/, 5 /*IDLE*/, 42}));     /* policy */
			((u64 *)p)[1] = chance(80) ? 0 : flags() & ~0x1UL;          /* flags (no RESET_ON_FORK) */
			p[4] = (int)(below(40) - 20);                               /* nice */
		} else {
			p[0] = chance(80) ? 0 : (int)ival();
		}
		a[c->nr == 144 ? 2 : 1] = chance(92) ? (u64)p : ptr();
		if (c->nr == 144) /* never SCHED_FIFO/RR/DEADLINE */
			a[1] = PICK(((u64[]){0, 3, 5, 0x40000000 /*RESET_ON_FORK*/, 42, (u64)-1}));
		break;
	}
	case 251: /* ioprio_set(which, who, prio): IOPRIO_WHO_PROCESS, self; no RT class */
		a[0] = chance(95) ? 1 : 5;
		if ((a[2] >> 13) == 1)
			a[2] = (2UL << 13) | (a[2] & 7);
		break;
	case 154: /* modify_ldt(func, ptr, count) */
		a[0] = PICK(((u64[]){0, 1, 2, 0x11, 3}));
		break;
	case 157: { /* prctl */
		static const u64 OPT[] = {1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 19, 20, 21, 22, 23, 24,
					  25, 26, 27, 28, 29, 30, 31, 32, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45,
					  46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 59, 62, 65, 66, 67, 68,
					  69, 70, 71, 72, 73, 0x53564d41 /*PR_SET_VMA*/, 0x41555856 /*PR_GET_AUXV*/, 1000};
		u64 o = chance(95) ? PICK(OPT) : ival();
		if (o == 22 /*PR_SET_SECCOMP*/ || o == 35 /*PR_SET_MM*/)
			o = 21; /* PR_GET_SECCOMP */
		if (o == 59 /*SUD*/)
			a[1] = 0; /* PR_SYS_DISPATCH_OFF only */
		if (o == 40 /*PR_GET_TID_ADDRESS*/ || o == 0x41555856 /*PR_GET_AUXV*/)
			a[1] = outp();
		if (o == 1 /*PDEATHSIG*/ || o == 2)
			a[1] = chance(50) ? sendsig() : outp();
		if (o == 29) /* PR_SET_TIMERSLACK: a huge slack makes every short timeout endless */
			a[1] = PICK(((u64[]){0, 1, 50000, 1000000}));
		if (o == 15 || o == 16) /* PR_SET_NAME / GET_NAME */
			a[1] = chance(80) ? (u64)aalloc(16) : ptr();
		if (o == 0x53564d41) { /* PR_SET_VMA: anon name on scratch */
			a[1] = 0;
			range(&a[2], &a[3], 0);
			a[4] = chance(50) ? put_string("fz") : ptr();
		}
		a[0] = o;
		break;
	}
	case 158: { /* arch_prctl(code, addr): never ARCH_SET_FS or shadow-stack enable */
		static const u64 CODE[] = {0x1001 /*SET_GS*/, 0x1003 /*GET_FS*/, 0x1004 /*GET_GS*/,
					   0x1011 /*GET_CPUID*/, 0x1012 /*SET_CPUID*/, 0x2001, 0x2002, 0x2003,
					   0x1021, 0x1022, 0x1023, 0x1024, 0x1025, 0x5002 /*SHSTK_DISABLE*/,
					   0x5003 /*SHSTK_LOCK*/, 0x5004 /*SHSTK_UNLOCK*/, 0x5005 /*SHSTK_STATUS*/,
					   0x4001, 0x4002, 0x4003, 0x9999};
		a[0] = PICK(CODE);
		if (a[0] == 0x1003 || a[0] == 0x1004)
			a[1] = outp();
		if (a[0] == 0x2001 || a[0] == 0x2002 || a[0] == 0x2003) /* ARCH_MAP_VDSO_*: in scratch */
			a[1] = SCR + 4096 * below(512);
		if (a[0] == 0x1012)
			a[1] = below(2);
		break;
	}
	case 160: case 302: { /* setrlimit(res, new), prlimit64(pid, res, new, old) */
		int ri = c->nr == 160 ? 0 : 1, ni = ri + 1;
		u64 res = chance(90) ? below(16) : ival();
		a[ri] = res;
		res = (uint32_t)res; /* the kernel takes an unsigned int */
		u64 *l = aalloc(16);
		struct rlimit cur;
		if (res < 16 && getrlimit((int)res, &cur) == 0) { /* libc call: not fuzzed, no RNG */
			l[0] = cur.rlim_cur;
			l[1] = cur.rlim_max;
		} else {
			l[0] = l[1] = RLIM_INFINITY;
		}
		u64 v = PICK(((u64[]){0, 1, 1024, 1 << 20, RLIM_INFINITY, 4096}));
		/* SIGPENDING: the harness queues signal 63 for rt_sigsuspend */
		int needed = res == RLIMIT_NOFILE || res == RLIMIT_AS || res == RLIMIT_DATA ||
			     res == RLIMIT_STACK || res == RLIMIT_CPU || res == RLIMIT_SIGPENDING;
		switch (below(4)) {
		case 0: /* keep */ break;
		case 1: if (!needed || v >= l[0]) l[0] = v; break;
		case 2: if (!needed || v >= l[1]) l[1] = v; break;
		default: if (!needed || v >= l[0]) { l[0] = v; } if (!needed || v >= l[1]) l[1] = v; break;
		}
		a[ni] = chance(15) ? 0 : (chance(93) ? (u64)l : PICK(WILD));
		if (c->nr == 302)
			a[3] = chance(60) ? outp() : ptr();
		break;
	}
	case 202: { /* futex(uaddr, op, val, timeout|val2, uaddr2, val3) */
		u64 op = below(14) | (chance(50) ? 128 /*PRIVATE*/ : 0) | (chance(10) ? 256 /*CLOCK_RT*/ : 0);
		if (chance(5))
			op = flags();
		a[1] = op;
		u64 cmd = op & 127;
		/* ops that wait take a timeout; never NULL (forever) */
		if (cmd == 0 || cmd == 9 || cmd == 6 || cmd == 11 || cmd == 13 || cmd == 7 || cmd == 8)
			a[3] = timespec_p();
		else
			a[3] = chance(50) ? below(8) : ival();
		if (chance(50))
			a[2] = chance(50) ? 0 : *(volatile uint32_t *)(a[0] >= ARG && a[0] < ARG + ARG_SZ - 4 ? a[0] : ARG);
		break;
	}
	case 449: { /* futex_waitv(waiters, n, flags, timeout, clock) */
		u64 n = 1 + below(3);
		u64 *w = aalloc(24 * n);
		for (u64 i = 0; i < n; i++) {
			w[3 * i] = below(2);         /* val */
			w[3 * i + 1] = ptr();        /* uaddr */
			w[3 * i + 2] = chance(80) ? 2 | 128 : flags(); /* FUTEX2_SIZE_U32 | PRIVATE */
		}
		a[0] = chance(90) ? (u64)w : ptr();
		a[1] = chance(90) ? n : ival();
		a[2] = 0;
		a[4] = chance(80) ? PICK(((u64[]){0, 1})) : ival();
		break;
	}
	case 455: /* futex_wait(uaddr, val, mask, flags, timeout, clock) */
		a[3] = chance(80) ? 2 | 128 : flags();
		a[5] = chance(80) ? PICK(((u64[]){0, 1})) : ival();
		break;
	case 456: { /* futex_requeue(waiters[2], flags, nr_wake, nr_requeue) */
		u64 *w = aalloc(48);
		for (int i = 0; i < 2; i++) {
			w[3 * i] = below(2);
			w[3 * i + 1] = ptr();
			w[3 * i + 2] = 2 | 128;
		}
		a[0] = chance(90) ? (u64)w : ptr();
		break;
	}
	case 454: a[3] = chance(80) ? 2 | 128 : flags(); break;
	case 203: /* sched_setaffinity(pid, len, mask) */
		a[1] = chance(80) ? PICK(((u64[]){8, 16, 128, 4})) : len();
		break;
	case 204: a[1] = chance(80) ? PICK(((u64[]){8, 16, 128, 4, 1, 0})) : len(); break;
	case 206: a[0] = chance(80) ? below(256) : ival(); break; /* io_setup nr_events */
	case 208: case 333: a[1] = below(3); a[2] = below(4); break;
	case 209: { /* io_submit(ctx, n, iocbpp) */
		u64 n = below(3);
		u64 *pp = aalloc(8 * (n + 1));
		for (u64 i = 0; i < n; i++) {
			u64 *cb = aalloc(64);
			memset(cb, 0, 64);
			((uint16_t *)cb)[8] = below(9); /* aio_lio_opcode */
			((uint32_t *)cb)[5] = (uint32_t)fdv();
			cb[3] = ptr();
			cb[4] = below(8192);
			cb[5] = below(8192);
			pp[i] = (u64)cb;
		}
		a[1] = chance(90) ? n : ival();
		a[2] = chance(90) ? (u64)pp : ptr();
		break;
	}
	case 222: { /* timer_create(clock, sigevent, id) */
		int *ev = aalloc(64);
		memset(ev, 0, 64);
		ev[2] = (int)sendsig();
		if (!sendable(ev[2]))
			ev[2] = SIGUSR1;
		ev[3] = PICK(((int[]){0 /*SIGEV_SIGNAL*/, 1 /*NONE*/, 4 /*THREAD_ID*/, 2, 42}));
		ev[4] = (int)own_tid;
		a[0] = chance(80) ? below(12) : ival();
		a[1] = chance(85) ? (u64)ev : (chance(50) ? 0 : ptr());
		a[2] = chance(80) ? outp() : ptr();
		break;
	}
	case 223: /* timer_settime(id, flags, new, old): disarmed or far away */
		a[0] = chance(80) ? below(4) : ival();
		a[1] = chance(80) ? below(2) : flags();
		a[2] = itimer_p(0);
		break;
	case 224: case 225: case 226: a[0] = chance(80) ? below(4) : ival(); break;
	case 283: a[0] = chance(80) ? PICK(((u64[]){0, 1, 7, 8, 9})) : ival(); a[1] |= 04000; break;
	case 286: a[1] = chance(80) ? below(4) : flags(); a[2] = itimer_p(1); break;
	case 284: case 290: case 289: case 291: case 292: case 293: case 294:
		/* eventfd2/signalfd4/epoll_create1/dup3/pipe2/inotify_init1: O_NONBLOCK where it applies */
		if (c->nr == 290 || c->nr == 293 || c->nr == 294)
			a[1] |= 04000;
		if (c->nr == 289)
			a[3] |= 04000;
		if (c->nr == 294)
			a[0] |= 04000;
		break;
	case 232: case 281: /* epoll_wait, epoll_pwait: timeout 0 or 1 ms */
		a[2] = chance(80) ? below(8) : ival();
		a[3] = below(2);
		break;
	case 441: a[2] = chance(80) ? below(8) : ival(); break;
	case 233: { /* epoll_ctl(epfd, op, fd, event) */
		u64 *e = aalloc(16);
		((uint32_t *)e)[0] = (uint32_t)flags();
		((uint32_t *)e)[1] = (uint32_t)rnd();
		e[1] = rnd();
		a[1] = chance(90) ? 1 + below(3) : ival();
		a[3] = chance(90) ? (u64)e : ptr();
		break;
	}
	case 240: case 241: { /* mq_open(name, flags, mode, attr), mq_unlink(name) */
		a[0] = chance(90) ? put_string(mq_names[below(4)]) : ptr();
		if (c->nr == 240) {
			a[1] |= 04000;
			long *at = aalloc(64);
			at[0] = 0;
			at[1] = below(12);
			at[2] = chance(80) ? (long)below(256) : (long)ival();
			at[3] = 0;
			a[3] = chance(50) ? 0 : (chance(90) ? (u64)at : ptr());
		}
		break;
	}
	case 244: { /* mq_notify(mqd, sigevent) */
		int *ev = aalloc(64);
		memset(ev, 0, 64);
		ev[2] = SIGUSR2;
		ev[3] = PICK(((int[]){0, 1, 4}));
		ev[4] = (int)own_tid;
		a[1] = chance(80) ? (u64)ev : (chance(50) ? 0 : ptr());
		break;
	}
	case 272: /* unshare */
		break;
	case 274: a[1] = outp(); break; /* get_robust_list head */
	case 275: case 276: case 278: a[c->nr == 275 ? 5 : 3] |= 2; break; /* SPLICE_F_NONBLOCK */
	case 285: { /* fallocate(fd, mode, off, len) */
		a[1] = chance(80) ? PICK(((u64[]){0, 1, 3, 0x10, 0x20, 0x8, 0x40})) : flags();
		a[2] = chance(90) ? below(8 << 20) : PICK(((u64[]){(u64)-1, 1UL << 62}));
		a[3] = chance(90) ? below(8 << 20) : PICK(((u64[]){(u64)-1, 1UL << 62, 0}));
		break;
	}
	case 310: case 311: /* process_vm_*: pid is the child's own */
		a[0] = own_pid;
		break;
	case 312: /* kcmp(pid1, pid2, type, idx1, idx2) */
		a[0] = a[1] = own_pid;
		a[2] = chance(90) ? below(9) : ival();
		a[3] = fdv();
		a[4] = chance(50) ? fdv() : (u64)aalloc(16);
		break;
	case 317: /* seccomp: query operations only */
		a[0] = PICK(((u64[]){2 /*GET_ACTION_AVAIL*/, 3 /*GET_NOTIF_SIZES*/, 4, 99}));
		a[1] = 0;
		if (a[0] == 2) {
			uint32_t *act = aalloc(4);
			*act = PICK(((uint32_t[]){0x80000000, 0x7fff0000, 0, 0x30000, 0x50000, 0x7fc00000, 1}));
			a[2] = (u64)act;
		}
		break;
	case 318: a[2] |= 1; break; /* GRND_NONBLOCK */
	case 324: /* membarrier: mostly cheap commands */
		a[0] = PICK(((u64[]){0, 8, 16, 32, 64, 128, 256, 2, 4, 1}));
		a[1] = chance(80) ? 0 : flags();
		break;
	case 330: a[1] = chance(80) ? below(4) : ival(); break;
	case 331: /* pkey_free(0) succeeds, and key 0 (every page's) can then be handed out
		   * again with access disabled: the fuzzer could not touch its own memory */
		if ((uint32_t)a[0] == 0)
			a[0] = 1;
		break;
	case 334: { /* rseq(ptr, len, flags, sig) */
		a[0] = chance(50) ? SCR + 32 * below(64) : cstruct();
		a[1] = chance(80) ? 32 : len();
		a[2] = chance(80) ? below(2) : flags();
		a[3] = chance(50) ? 0x53053053 : rnd() & 0xffffffff;
		break;
	}
	case 434: a[1] &= 04000 | 1; break; /* pidfd_open: PIDFD_NONBLOCK or thread */
	case 436: /* close_range(first, last, flags): never 0..2 */
		if (a[0] < 3)
			a[0] = 3 + below(8);
		if (chance(70))
			a[1] = chance(50) ? (u64)-1 : a[0] + below(16);
		a[2] = chance(80) ? PICK(((u64[]){0, 2 /*CLOEXEC*/, 4 /*UNSHARE*/, 6})) : flags();
		break;
	case 438: a[1] = fdv(); a[2] = 0; break; /* pidfd_getfd */
	case 446: /* landlock_restrict_self */
		break;
	case 460: a[0] = chance(80) ? below(8) : ival(); break;
	case 469: /* file_setattr: never as root (immutable flags would block clean-up) */
		if (opt_root)
			a[2] = 0;
		break;
	case 303: { /* name_to_handle_at(dfd, path, handle, mount_id, flags) */
		uint32_t *h = aalloc(256);
		h[0] = chance(80) ? 128 : (uint32_t)ival();
		a[2] = chance(90) ? (u64)h : ptr();
		break;
	}
	case 132: case 235: case 261: case 280: { /* utime(s): timestamps in ARG */
		i64 *t = aalloc(32);
		for (int i = 0; i < 4; i++)
			t[i] = (i % 2) ? PICK(((i64[]){0, 1, 999999, (1 << 30) - 1, (1 << 30) - 2, -1})) : (i64)below(2000000000);
		int ti = c->nr == 132 || c->nr == 235 ? 1 : 2;
		a[ti] = chance(30) ? 0 : (chance(90) ? (u64)t : ptr());
		break;
	}
	case 444: { /* landlock_create_ruleset(attr, size, flags) */
		u64 *at = aalloc(24);
		at[0] = flags();
		at[1] = chance(50) ? 0 : flags();
		at[2] = chance(50) ? 0 : flags();
		a[0] = chance(80) ? (u64)at : (chance(50) ? 0 : ptr());
		a[1] = chance(80) ? PICK(((u64[]){8, 16, 24})) : len();
		a[2] = chance(80) ? 0 : PICK(((u64[]){1, 2, 4, 8}));
		break;
	}
	case -1: { /* numbers outside the table */
		/* not 335/336: uretprobe/uprobe, which raise SIGILL outside their trampolines */
		static const u64 NR[] = {337, 400, 423, 470, 500, 511, 512, 547, 548, 1000, 0x40000000 | 39,
					 0x40000000 | 1000, (1ULL << 32) | 39, (1ULL << 32) | 102, (1ULL << 32) | 63,
					 (1ULL << 63) | 39, (u64)-1, 0xffffffff, (u64)-2, 0x7fffffff};
		c->nr = (long)PICK(NR);
		break;
	}
	default:
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* Generating one call.                                                     */
/* ------------------------------------------------------------------------ */

static int total_weight;
static int cum[sizeof(TABLE) / sizeof(TABLE[0])];

static void gen_call(struct call *c)
{
	arg_refill();
	tag_h = tag_p = tag_x = 0;
	memset(c, 0, sizeof *c);
	int w = (int)below(total_weight), i = 0;
	while (cum[i] <= w)
		i++;
	const struct sc *sc = &TABLE[i];
	c->sc = sc;
	c->nr = sc->nr;
	c->name = sc->name;
	int outside = 0, nk = (int)strlen(sc->kinds);
	u64 iov_count = 0;
	for (int k = 0; k < 6; k++) {
		char kind = k < nk ? sc->kinds[k] : '0';
		u64 v = 0, tmp;
		int o;
		switch (kind) {
		case '0': v = chance(90) ? 0 : word(); break;
		case 'f': v = fdv(); break;
		case 'd': v = dirfd(); break;
		case 'p': v = private_path(); break;
		case 'r': v = read_path(&o); if (o) outside = o; break;
		case 'b': v = ptr(); break;
		case 'c': v = cstruct(); break;
		case 'o': v = outp(); break;
		case 'l': v = len(); break;
		case 'i': v = ival(); break;
		case 'w': v = small(); break;
		case 'g': v = flags(); break;
		case 'F': v = flags() & 0x3fffffff; if (chance(50)) v = below(3) | (v & 0700); break;
		case 'm': v = mode(); break;
		case 'u': v = uidv(); break;
		case 'k': v = chance(70) ? (u64)own_pid : 0; break;
		case 'K': v = own_tid; break;
		case 'q': v = qpid(); break;
		case 's': v = sendsig(); break;
		case 'S': v = dispsig(); break;
		case 't': v = timespec_p(); break;
		case 'v': v = timeval_p(); break;
		case 'M': v = sigset_p(); break;
		case 'z': v = setsize(); break;
		case 'a': v = sockaddr_p(&tmp); break;
		case 'A': v = socklen(); break;
		case 'V': v = iovec_p(&iov_count); break;
		case 'n': v = k > 0 && sc->kinds[k - 1] == 'V' ? iov_count : (chance(80) ? below(4) : ival()); break;
		case 'O': v = offset(); break;
		case 'R': { u64 l; range(&v, &l, 0); break; }
		case 'L': { u64 ad; range(&ad, &v, 0); break; }
		case 'W': { u64 ad; range(&ad, &v, 1); break; }
		case 'N': {
			static const char *XN[] = {"user.fz", "user.a", "trusted.x", "security.y", "system.posix_acl_access",
						   "", "user.", "fz", "os2.a", "btrfs.compression"};
			v = chance(85) ? put_string(PICK(XN)) : ptr();
			break;
		}
		case 'I': {
			u64 r = below(8);
			if (r < 5 && n_ipc)
				v = (u64)ipc_ids[(u64)rnd() % (u64)n_ipc];
			else if (r < 5)
				v = (u64)-1, (void)rnd();
			else
				v = PICK(((u64[]){(u64)-1, 0x7fffffff, 0x7ffffffe}));
			break;
		}
		default: v = 0; break;
		}
		c->a[k] = v;
	}
	c->outside = outside;
	fix_args(c);
	if (AVOID('r') && c->nr == 334)
		c->nr = 39, c->name = "getpid(avoided rseq)";
	if (AVOID('v') && (c->nr == 56 || c->nr == 435)) {
		u64 *fl = c->nr == 56 ? &c->a[0] : (u64 *)c->a[0];
		if (c->nr == 56 || (c->a[0] >= ARG && c->a[0] < ARG + ARG_SZ)) {
			*fl &= ~0x100UL;
			if (c->nr == 56 && (*fl & 0xff) == SIGSEGV)
				*fl = (*fl & ~0xffUL) | SIGCHLD;
			if (c->nr == 435 && ((u64 *)c->a[0])[4] == SIGSEGV)
				((u64 *)c->a[0])[4] = SIGCHLD;
		}
		c->clone_flags &= ~0x100UL;
	}
	c->forklike = c->nr == 56 || c->nr == 57 || c->nr == 58 || c->nr == 435;
	if (c->forklike)
		c->mode = 'f';
	else
		c->mode = PICK(((char[]){'i', 'i', 't', 'l'}));
	/* Descriptors 1 and 2: never (the pool has neither; dup2/dup3 targets too). */
}

/* ------------------------------------------------------------------------ */
/* Result formatting.                                                       */
/* ------------------------------------------------------------------------ */

static void log_result(const struct call *c, long r)
{
	u64 u = (u64)r;
	lput("=");
	if (r < 0 && r >= -4095) {
		lput("E");
		ldec(-r);
		return;
	}
	switch (c->nr) {
	case 9: case 25: case 30: case 453: /* addresses */
		if (u >= SCR && u < SCR_END) {
			lput("S+");
			lhex(u - SCR);
		} else {
			lput("ADDR");
		}
		return;
	case 12: /* brk */
		if (u >= init_brk) {
			lput("B+");
			lhex(u - init_brk);
		} else {
			lput("B-");
			lhex(init_brk - u);
		}
		return;
	case 39: case 186: case 110: case 111: case 121: case 124: case 112: case 218: case 140:
		/* natively the parent leads its group and session; under picos
		 * the picos CLI does: prefer the group and session names */
		if (r == own_pid) { lput("PID"); return; }
		if (r == own_tid) { lput("TID"); return; }
		if (c->nr == 110 && r == own_ppid) { lput("PPID"); return; }
		if (r == own_pgid) { lput("PGID"); return; }
		if (r == own_sid) { lput("SID"); return; }
		if (r == own_ppid) { lput("PPID"); return; }
		break;
	case 56: case 57: case 58: case 435: case 61: case 247:
		if (r > 0) { lput("CHILD"); return; }
		break;
	case 29: case 64: case 68:
		if (r >= 0) { lput("ID"); return; }
		break;
	case 100: case 201:
		lput("TIME");
		return;
	case 72:
		if (c->a[1] == 9 /*F_GETOWN*/ && r == own_pid) { lput("PID"); return; }
		break;
	default:
		if (c->sc->nr == -1 && r == own_pid) { lput("PID"); return; }
		break;
	}
	ldec(r);
}

/* ------------------------------------------------------------------------ */
/* The child.                                                               */
/* ------------------------------------------------------------------------ */

static const char *only_list; /* -O: execute only these call indices */
static int selected(long idx)
{
	if (!only_list)
		return 1;
	const char *p = only_list;
	while (*p) {
		char *e;
		long a = strtol(p, &e, 10), b = a;
		if (*e == '-')
			b = strtol(e + 1, &e, 10);
		if (idx >= a && idx <= b)
			return 1;
		p = *e ? e + 1 : e;
	}
	return 0;
}

static void die(const char *what)
{
	char b[256];
	int n = snprintf(b, sizeof b, "sysfuzz: set-up failed: %s: %s\n", what, strerror(errno));
	hs3(1, 2, b, n);
	hs1(231, 99);
}

static void expect_fd(long got, int want, const char *what)
{
	if (got != want) {
		errno = got < 0 ? (int)-got : 0;
		char b[128];
		snprintf(b, sizeof b, "%s gave fd %ld, wanted %d", what, got, want);
		die(b);
	}
}

static void child_setup(void)
{
	hs2(157, 1 /*PR_SET_PDEATHSIG*/, SIGKILL);
	/* descriptors: 0,1 a pipe; 2 inherited; 3.. fixed set */
	hs1(3, 0);
	hs1(3, 1);
	hs3(436, 3, ~0U, 0);
	int p[2];
	long r = hs2(293, p, 04000);
	if (r < 0 || p[0] != 0 || p[1] != 1)
		die("pipe2 for 0/1");
	expect_fd(hs4(257, -100, ".", 0200000, 0), 3, "open .");
	r = hs2(293, p, 04000);
	if (r < 0 || p[0] != 4 || p[1] != 5)
		die("pipe2 4/5");
	int sv[2];
	r = hs4(53, 1, 1 | 04000, 0, sv);
	if (r < 0 || sv[0] != 6 || sv[1] != 7)
		die("socketpair 6/7");
	long fd = hs4(257, -100, "f0", 02 | 0100 | 01000, 0600);
	expect_fd(fd, 8, "open f0");
	for (int i = 0; i < 512; i++) {
		u64 w = ((u64 *)RO)[i];
		hs3(1, 8, &w, 8);
	}
	hs3(8, 8, 0, 0);
	expect_fd(hs2(290, 0, 04000), 9, "eventfd");
	expect_fd(hs2(319, "fz", 0), 10, "memfd");
	hs2(77, 10, 8192);
	expect_fd(hs3(41, 2, 2 | 04000, 0), 11, "udp socket");
	r = hs4(53, 1, 2 | 04000, 0, sv);
	if (r < 0 || sv[0] != 12 || sv[1] != 13)
		die("socketpair 12/13");
	expect_fd(hs1(291, 0), 14, "epoll");
	expect_fd(hs2(283, 1, 04000), 15, "timerfd");
	expect_fd(hs1(294, 04000), 16, "inotify");
	hs2(83, "d", 0755);
	expect_fd(hs4(257, -100, "d", 0200000, 0), 17, "open d");
	u64 usr2 = 1ULL << (SIGUSR2 - 1);
	expect_fd(hs4(289, -1, &usr2, 8, 04000), 18, "signalfd");
	expect_fd(hs3(41, 1, 1 | 04000, 0), 19, "unix socket");
	struct {
		unsigned short fam;
		char path[108];
	} sun = {1, "sock"};
	hs3(49, 19, &sun, 2 + 5);
	hs2(50, 19, 4);
	expect_fd(hs4(257, -100, ".", 010000000, 0), 20, "O_PATH .");
	hs4(133, "fifo", 010644, 0, 0);
	hs2(88, "d", "link");
	/* limits */
	struct rlimit rl = {0, 0};
	hs2(160, RLIMIT_CORE, &rl);
	rl.rlim_cur = rl.rlim_max = 16 << 20;
	hs2(160, RLIMIT_FSIZE, &rl);
	/* signals: the fuzzer's handler on everything but SIGKILL/SIGSTOP/SIGALRM */
	for (int s = 1; s <= 64; s++) {
		if (s == SIGKILL || s == SIGSTOP || s == SIGALRM)
			continue;
		struct ksigaction sa = {(u64)on_signal, 0x4 | 0x10000000 | SA_RESTORER_, (u64)fz_restorer, 0};
		hs4(13, s, &sa, 0, 8);
	}
	struct ksigaction dfl = {0, SA_RESTORER_, (u64)fz_restorer, 0};
	hs4(13, SIGALRM, &dfl, 0, 8);
	u64 none = 0;
	hs4(14, 2 /*SIG_SETMASK*/, &none, 0, 8);
	hs1(95, 022);
	own_pid = hs0(39);
	own_tid = hs0(186);
	own_ppid = hs0(110);
	own_pgid = hs0(111);
	own_sid = hs1(124, 0);
	own_uid = hs0(102);
	init_brk = (u64)hs1(12, 0);
	memset(taint, 0, sizeof taint);
	n_ipc = 0;
}

/* What the harness does after a call: keep the fuzzer's invariants. */
static void after_call(const struct call *c, long r)
{
	u64 *a = (u64 *)c->a;
	/* reap a new process at once (its exit signal must not land later) */
	if (c->forklike && r > 0) {
		int thread = (c->clone_flags & 0x10000 /*CLONE_THREAD*/) != 0;
		int parent = (c->clone_flags & 0x8000 /*CLONE_PARENT*/) != 0;
		if (!thread && !parent) {
			int st;
			long w;
			do
				w = hs4(61, r, &st, 0x40000000 /*__WALL*/, 0);
			while (w == -EINTR);
		}
	}
	/* new descriptors: non-blocking, taint tracking */
	int newfd = -1, newfd2 = -1;
	switch (c->nr) {
	case 2: case 85: case 257: case 437: case 41: case 43: case 288: case 32: case 213: case 291:
	case 253: case 294: case 284: case 290: case 282: case 289: case 283: case 319: case 434:
	case 438: case 240: case 447:
		newfd = (int)r;
		break;
	case 33: case 292:
		newfd = (int)r;
		break;
	case 72:
		if (a[1] == 0 || a[1] == 1030)
			newfd = (int)r;
		break;
	case 22: case 293: case 53:
		if (r == 0) {
			u64 p = c->nr == 53 ? a[3] : a[0];
			/* read back the two descriptors the kernel wrote; the page
			 * may be gone or unreadable by now: process_vm_readv fails
			 * cleanly then */
			int fds[2] = {-1, -1};
			struct { void *b; u64 l; } li = {fds, 8}, ri = {(void *)p, 8};
			if (hs(310, own_pid, (long)&li, 1, (long)&ri, 1, 0) == 8) {
				newfd = fds[0];
				newfd2 = fds[1];
			}
		}
		break;
	}
	if (r < 0 || r >= NFD_TRACK)
		newfd = -1;
	for (int k = 0; k < 2; k++) {
		int fd = k ? newfd2 : newfd;
		if (fd < 3 || fd >= NFD_TRACK)
			continue;
		long fl = hs2(72, fd, 3 /*F_GETFL*/);
		if (fl >= 0 && !(fl & 04000))
			hs3(72, fd, 4, fl | 04000);
		char t = 0;
		if ((c->nr == 2 || c->nr == 257 || c->nr == 437) && c->outside)
			t = c->outside == 2 ? 'x' : 'p';
		if ((c->nr == 32 || c->nr == 33 || c->nr == 292 || c->nr == 72) && a[0] < NFD_TRACK)
			t = taint[a[0]];
		taint[fd] = t;
	}
	if (c->nr == 3 && r == 0 && a[0] < NFD_TRACK)
		taint[a[0]] = 0;
	/* SysV ids: remembered for later calls and for the parent's clean-up */
	if ((c->nr == 29 || c->nr == 64 || c->nr == 68) && r >= 0 && n_ipc < 64) {
		ipc_ids[n_ipc] = r;
		ipc_kind[n_ipc] = c->nr == 29 ? 1 : c->nr == 64 ? 2 : 3;
		LOGH->ipc[n_ipc] = r;
		LOGH->ipc_kind[n_ipc] = ipc_kind[n_ipc];
		n_ipc++;
		LOGH->n_ipc = n_ipc;
	}
}

static void run_child(int k, u64 seed, long ncalls)
{
	u64 s = seed ^ (0x9e3779b97f4a7c15ULL * (u64)(k + 1));
	rng = splitmix(&s) | 1;
	child_setup();
	for (long i = 0; i < ncalls; i++) {
		if ((i & 7) == 0)
			hs1(37, WATCHDOG);
		struct call c;
		gen_call(&c);
		line_len = 0;
		ldec(k);
		lput(":");
		ldec(i);
		lput(" ");
		char m[2] = {c.mode, 0};
		lput(m);
		lput(" ");
		ldec(c.nr);
		lput(" ");
		lput(c.name);
		lput(" ");
		for (int j = 0; j < 6; j++) {
			if (j)
				lput(",");
			lhex(c.a[j]);
		}
		if (tag_h || tag_p || tag_x) {
			lput(" #");
			if (tag_h) lput("h");
			if (tag_p) lput("p");
			if (tag_x) lput("x");
		}
		lput(" ");
		if (!selected(i)) {
			lput("=skip\n");
			log_flush(1);
			continue;
		}
		log_flush(0); /* visible if the call kills the child */
		u64 wake_old = 0;
		if (c.wake) {
			u64 wm = 1ULL << (SIGWAKE - 1);
			hs4(14, 0 /*SIG_BLOCK*/, &wm, &wake_old, 8);
			hs3(234, own_pid, own_tid, SIGWAKE);
		}
		sig_seen = 0;
		long r;
		switch (c.mode) {
		case 'i': r = call_i(c.nr, c.a); break;
		case 't': r = call_t(c.nr, c.a); break;
		case 'l': r = call_l(c.nr, c.a); break;
		default: r = call_f(c.nr, c.a); break;
		}
		if (c.wake) {
			u64 wm = 1ULL << (SIGWAKE - 1);
			hs4(14, 1 /*SIG_UNBLOCK*/, &wm, 0, 8);
		}
		after_call(&c, r);
		log_result(&c, r);
		if (sig_seen) {
			lput(" s=");
			lhex(sig_seen);
		}
		lput("\n");
		log_flush(1);
		LOGH->calls = i + 1;
	}
	hs1(231, 0);
}

/* ------------------------------------------------------------------------ */
/* The parent.                                                              */
/* ------------------------------------------------------------------------ */

static int rm_fix(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st; (void)f;
	if (type == FTW_D || type == FTW_DNR)
		chmod(p, 0700);
	return 0;
}
static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	if (f->level == 0)
		return 0;
	if (type == FTW_DP || type == FTW_D || type == FTW_DNR)
		rmdir(p);
	else
		unlink(p);
	return 0;
}
static void rm_tree(const char *dir, int self)
{
	nftw(dir, rm_fix, 16, FTW_PHYS);
	nftw(dir, rm_fix, 16, FTW_PHYS); /* once more: dirs made readable only now */
	nftw(dir, rm_one, 16, FTW_PHYS | FTW_DEPTH);
	if (self)
		rmdir(dir);
}

static void out(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return;
		}
		s += w;
		n -= w;
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sysfuzz -s SEED [-f FIRST] [-c CHILDREN] [-n CALLS_PER_CHILD] [-o LOG]\n"
		"               [-O IDX[,IDX|A-B...]] [-T HARD_TIMEOUT_S] [-A mqrv] [-R] [-v]\n"
		"       sysfuzz -L    (list the call table, exclusions and tamed calls)\n"
		"  -R  keep root (default when root: drop to uid/gid 65534 first)\n"
		"  -O  execute only these call indices (the others are generated and skipped)\n"
		"  -v  also print each call on stderr as it is made\n"
		"  -A  avoid known picos bug classes: m (blocked fault signals), q (queued\n"
		"      signals with a kernel si_code), r (rseq), v (CLONE_VM, SIGSEGV exit signal)\n");
	exit(2);
}

static void list_tables(void)
{
	printf("# fuzzed calls (nr name kinds weight)\n");
	for (int i = 0; i < NTABLE; i++)
		printf("%d %s %s %d\n", TABLE[i].nr, TABLE[i].name, TABLE[i].kinds, TABLE[i].weight);
	printf("# never called\n");
	for (int i = 0; i < NEXCLUDED; i++)
		printf("%d %s: %s\n", EXCLUDED[i].nr, EXCLUDED[i].name, EXCLUDED[i].why);
	printf("# tamed\n");
	for (size_t i = 0; i < sizeof TAMED / sizeof TAMED[0]; i++)
		printf("- %s\n", TAMED[i]);
}

static void *map_fixed(u64 addr, u64 size, int prot, int fl)
{
	void *p = mmap((void *)addr, size, prot, fl | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != (void *)addr) {
		fprintf(stderr, "sysfuzz: cannot map %#lx: %s\n", (unsigned long)addr, strerror(errno));
		exit(3);
	}
	return p;
}

int main(int argc, char **argv)
{
	u64 seed = 1;
	long first = 0, nchildren = 1, ncalls = 1000, hard = 30;
	const char *outpath = NULL;
	int keep_root = 0, o;
	while ((o = getopt(argc, argv, "s:f:c:n:o:O:T:A:RvLh")) != -1) {
		switch (o) {
		case 's': seed = strtoull(optarg, 0, 0); break;
		case 'f': first = strtol(optarg, 0, 0); break;
		case 'c': nchildren = strtol(optarg, 0, 0); break;
		case 'n': ncalls = strtol(optarg, 0, 0); break;
		case 'o': outpath = optarg; break;
		case 'O': only_list = optarg; break;
		case 'A': opt_avoid = optarg; break;
		case 'T': hard = strtol(optarg, 0, 0); break;
		case 'R': keep_root = 1; break;
		case 'v': opt_verbose = 1; break;
		case 'L': list_tables(); return 0;
		default: usage();
		}
	}
	for (int i = 0; i < NEXCLUDED; i++)
		for (int j = 0; j < NTABLE; j++)
			if (TABLE[j].nr == EXCLUDED[i].nr && TABLE[j].weight) {
				fprintf(stderr, "sysfuzz: %s both fuzzed and excluded\n", TABLE[j].name);
				return 3;
			}
	for (int i = 0; i < NTABLE; i++) {
		total_weight += TABLE[i].weight;
		cum[i] = total_weight;
	}
	int outfd = 1;
	if (outpath) {
		outfd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (outfd < 0) {
			perror(outpath);
			return 3;
		}
	}
	/* Privileges: as root, become nobody unless -R (see TAMED). */
	if (geteuid() == 0 && !keep_root) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
			perror("sysfuzz: dropping root");
			return 3;
		}
		prctl(4 /*PR_SET_DUMPABLE*/, 1, 0, 0, 0);
	}
	opt_root = geteuid() == 0;
	struct rlimit nf;
	if (getrlimit(RLIMIT_NOFILE, &nf) == 0) {
		nf.rlim_cur = nf.rlim_max < 1024 ? nf.rlim_max : 1024;
		setrlimit(RLIMIT_NOFILE, &nf);
	}
	/* fixed memory: scratch and read-only contents come from the seed */
	u64 s0 = seed ^ 0x5eed5eed5eedULL;
	rng = splitmix(&s0) | 1;
	map_fixed(SCR, SCR_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	map_fixed(RO, RO_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	map_fixed(GUARD, GUARD_SZ, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS);
	map_fixed(ARG, ARG_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
	map_fixed(LOGBUF, LOG_SZ, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
	for (u64 i = 0; i < SCR_SZ / 8; i++)
		((u64 *)SCR)[i] = word();
	for (u64 i = 0; i < RO_SZ / 8; i++)
		((u64 *)RO)[i] = word();
	mprotect((void *)RO, RO_SZ, PROT_READ);
	/* private directory */
	const char *tmp = getenv("TMPDIR");
	char base[4096];
	snprintf(base, sizeof base, "%s/sysfuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		perror("sysfuzz: mkdtemp");
		return 3;
	}
	snprintf(abstract_prefix, sizeof abstract_prefix, "sysfuzz.%d.", (int)getpid());
	for (int i = 0; i < 4; i++)
		snprintf(mq_names[i], sizeof mq_names[i], "/sysfuzz.%d.%d", (int)getpid(), i);
	/* SIGCHLD is waited for with sigtimedwait; grandchildren made with
	 * CLONE_PARENT are reaped here too. */
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	signal(SIGPIPE, SIG_IGN);
	char buf[512];
	long total = 0;
	for (long k = first; k < first + nchildren; k++) {
		char dir[4200];
		snprintf(dir, sizeof dir, "%s/c%ld", base, k);
		mkdir(dir, 0700);
		memset((void *)LOGBUF, 0, sizeof(struct loghdr) + 16);
		int n = snprintf(buf, sizeof buf, "sysfuzz: child %ld begin\n", k);
		out(2, buf, n);
		pid_t pid = fork();
		if (pid < 0) {
			perror("sysfuzz: fork");
			return 3;
		}
		if (pid == 0) {
			sigprocmask(SIG_UNBLOCK, &chld, NULL);
			if (chdir(dir))
				die("chdir");
			if (outfd > 2)
				close(outfd);
			run_child((int)k, seed, ncalls);
		}
		int st = 0, done = 0, hardkill = 0;
		struct timespec ts = {0, 200000000}, t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (!done) {
			/* the child, and grandchildren made with CLONE_PARENT */
			int st2;
			pid_t w;
			while ((w = waitpid(-1, &st2, WNOHANG | __WALL)) > 0)
				if (w == pid) {
					st = st2;
					done = 1;
				}
			if (done)
				break;
			sigtimedwait(&chld, NULL, &ts);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > hard && !hardkill) {
				kill(pid, SIGKILL);
				hardkill = 1;
			}
		}
		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			;
		struct loghdr *h = LOGH;
		u64 l = h->len;
		if (l > LOG_TEXT_MAX)
			l = LOG_TEXT_MAX;
		n = snprintf(buf, sizeof buf, "C %ld seed=%llx\n", k, (unsigned long long)seed);
		out(outfd, buf, n);
		out(outfd, h->text, l);
		/* an unfinished call: shown without a result */
		size_t pend = strnlen(h->text + l, 1000);
		if (pend) {
			out(outfd, h->text + l, pend);
			out(outfd, "=?\n", 3);
		}
		char status[64];
		if (hardkill)
			snprintf(status, sizeof status, "hardtimeout");
		else if (WIFEXITED(st))
			snprintf(status, sizeof status, "exit:%d", WEXITSTATUS(st));
		else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
			snprintf(status, sizeof status, "timeout");
		else if (WIFSIGNALED(st))
			snprintf(status, sizeof status, "signal:%d", WTERMSIG(st));
		else
			snprintf(status, sizeof status, "status:%#x", st);
		n = snprintf(buf, sizeof buf, "S %ld %s calls=%llu\n", k, status, (unsigned long long)h->calls);
		out(outfd, buf, n);
		total += h->calls;
		n = snprintf(buf, sizeof buf, "sysfuzz: child %ld end %s\n", k, status);
		out(2, buf, n);
		/* clean up what the child may have left */
		for (int i = 0; i < h->n_ipc && i < 64; i++) {
			int kind = h->ipc_kind[i];
			long id = h->ipc[i];
			if (kind == 1) syscall(31, id, 0 /*IPC_RMID*/, 0);
			if (kind == 2) syscall(66, id, 0, 0 /*IPC_RMID*/, 0);
			if (kind == 3) syscall(71, id, 0, 0);
		}
		for (int i = 0; i < 4; i++)
			syscall(241, mq_names[i]);
		rm_tree(dir, 1);
	}
	int n = snprintf(buf, sizeof buf, "E children=%ld calls=%ld\n", nchildren, total);
	out(outfd, buf, n);
	rm_tree(base, 1);
	return 0;
}
