"""A program's own seccomp filter made with libseccomp (Debian's
python3-seccomp): its BPF (architecture checks, argument comparisons) run
natively by the kernel and under picos by the library OS."""
import ctypes, errno, os
import seccomp

libc = ctypes.CDLL(None, use_errno=True)
SYS_getppid, SYS_dup, SYS_getpriority, SYS_getuid = 110, 32, 140, 102

def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    return r if r != -1 else errno.errorcode[ctypes.get_errno()]

f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
f.add_rule(seccomp.ERRNO(errno.EPERM), "getppid")
f.add_rule(seccomp.ERRNO(errno.EXDEV), "dup", seccomp.Arg(0, seccomp.EQ, 1000))
f.add_rule(seccomp.ERRNO(errno.ENOEXEC), "getuid")
f.add_rule(seccomp.KILL_PROCESS, "getpriority", seccomp.Arg(0, seccomp.GE, 5000))
f.load()
print("getppid:", call(SYS_getppid))
print("dup(1000):", call(SYS_dup, 1000))
d = call(SYS_dup, 0)
print("dup(0):", "ok" if isinstance(d, int) and d > 0 else d)
print("getuid:", call(SYS_getuid))
print("getpriority(0):", isinstance(call(SYS_getpriority, 0, 0), int))
pid = os.fork()
if pid == 0:
    call(SYS_getpriority, 5000, 0)
    os._exit(0)
_, st = os.waitpid(pid, 0)
print("child:", f"killed by {os.WTERMSIG(st)}" if os.WIFSIGNALED(st) else f"exit {os.WEXITSTATUS(st)}")
