#!/usr/bin/env python3
"""Generates the declarative syscall table (crates/picos-rt/src/sys/table.rs)
and the syscall numbers and names (crates/picos-rt/src/host/nr.rs).

Edit the dictionaries here and re-run; the generated files are committed so
the build needs no Python. `--check` only compares (the test
`crates/picos-rt/tests/generated.rs` runs it): the committed files must be
exactly what this script writes, which is also what `cargo fmt` leaves.
"""
import re, pathlib

# Linux x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl,
# up to Linux 6.18), kept here so that the output does not depend on the
# headers of the machine that runs this script.
CALLS = {
  0: 'read', 1: 'write', 2: 'open', 3: 'close', 4: 'stat', 5: 'fstat', 6: 'lstat', 7: 'poll',
  8: 'lseek', 9: 'mmap', 10: 'mprotect', 11: 'munmap', 12: 'brk', 13: 'rt_sigaction',
  14: 'rt_sigprocmask', 15: 'rt_sigreturn', 16: 'ioctl', 17: 'pread64', 18: 'pwrite64',
  19: 'readv', 20: 'writev', 21: 'access', 22: 'pipe', 23: 'select', 24: 'sched_yield',
  25: 'mremap', 26: 'msync', 27: 'mincore', 28: 'madvise', 29: 'shmget', 30: 'shmat', 31: 'shmctl',
  32: 'dup', 33: 'dup2', 34: 'pause', 35: 'nanosleep', 36: 'getitimer', 37: 'alarm',
  38: 'setitimer', 39: 'getpid', 40: 'sendfile', 41: 'socket', 42: 'connect', 43: 'accept',
  44: 'sendto', 45: 'recvfrom', 46: 'sendmsg', 47: 'recvmsg', 48: 'shutdown', 49: 'bind',
  50: 'listen', 51: 'getsockname', 52: 'getpeername', 53: 'socketpair', 54: 'setsockopt',
  55: 'getsockopt', 56: 'clone', 57: 'fork', 58: 'vfork', 59: 'execve', 60: 'exit', 61: 'wait4',
  62: 'kill', 63: 'uname', 64: 'semget', 65: 'semop', 66: 'semctl', 67: 'shmdt', 68: 'msgget',
  69: 'msgsnd', 70: 'msgrcv', 71: 'msgctl', 72: 'fcntl', 73: 'flock', 74: 'fsync', 75: 'fdatasync',
  76: 'truncate', 77: 'ftruncate', 78: 'getdents', 79: 'getcwd', 80: 'chdir', 81: 'fchdir',
  82: 'rename', 83: 'mkdir', 84: 'rmdir', 85: 'creat', 86: 'link', 87: 'unlink', 88: 'symlink',
  89: 'readlink', 90: 'chmod', 91: 'fchmod', 92: 'chown', 93: 'fchown', 94: 'lchown', 95: 'umask',
  96: 'gettimeofday', 97: 'getrlimit', 98: 'getrusage', 99: 'sysinfo', 100: 'times', 101: 'ptrace',
  102: 'getuid', 103: 'syslog', 104: 'getgid', 105: 'setuid', 106: 'setgid', 107: 'geteuid',
  108: 'getegid', 109: 'setpgid', 110: 'getppid', 111: 'getpgrp', 112: 'setsid', 113: 'setreuid',
  114: 'setregid', 115: 'getgroups', 116: 'setgroups', 117: 'setresuid', 118: 'getresuid',
  119: 'setresgid', 120: 'getresgid', 121: 'getpgid', 122: 'setfsuid', 123: 'setfsgid',
  124: 'getsid', 125: 'capget', 126: 'capset', 127: 'rt_sigpending', 128: 'rt_sigtimedwait',
  129: 'rt_sigqueueinfo', 130: 'rt_sigsuspend', 131: 'sigaltstack', 132: 'utime', 133: 'mknod',
  134: 'uselib', 135: 'personality', 136: 'ustat', 137: 'statfs', 138: 'fstatfs', 139: 'sysfs',
  140: 'getpriority', 141: 'setpriority', 142: 'sched_setparam', 143: 'sched_getparam',
  144: 'sched_setscheduler', 145: 'sched_getscheduler', 146: 'sched_get_priority_max',
  147: 'sched_get_priority_min', 148: 'sched_rr_get_interval', 149: 'mlock', 150: 'munlock',
  151: 'mlockall', 152: 'munlockall', 153: 'vhangup', 154: 'modify_ldt', 155: 'pivot_root',
  156: '_sysctl', 157: 'prctl', 158: 'arch_prctl', 159: 'adjtimex', 160: 'setrlimit',
  161: 'chroot', 162: 'sync', 163: 'acct', 164: 'settimeofday', 165: 'mount', 166: 'umount2',
  167: 'swapon', 168: 'swapoff', 169: 'reboot', 170: 'sethostname', 171: 'setdomainname',
  172: 'iopl', 173: 'ioperm', 174: 'create_module', 175: 'init_module', 176: 'delete_module',
  177: 'get_kernel_syms', 178: 'query_module', 179: 'quotactl', 180: 'nfsservctl', 181: 'getpmsg',
  182: 'putpmsg', 183: 'afs_syscall', 184: 'tuxcall', 185: 'security', 186: 'gettid',
  187: 'readahead', 188: 'setxattr', 189: 'lsetxattr', 190: 'fsetxattr', 191: 'getxattr',
  192: 'lgetxattr', 193: 'fgetxattr', 194: 'listxattr', 195: 'llistxattr', 196: 'flistxattr',
  197: 'removexattr', 198: 'lremovexattr', 199: 'fremovexattr', 200: 'tkill', 201: 'time',
  202: 'futex', 203: 'sched_setaffinity', 204: 'sched_getaffinity', 205: 'set_thread_area',
  206: 'io_setup', 207: 'io_destroy', 208: 'io_getevents', 209: 'io_submit', 210: 'io_cancel',
  211: 'get_thread_area', 212: 'lookup_dcookie', 213: 'epoll_create', 214: 'epoll_ctl_old',
  215: 'epoll_wait_old', 216: 'remap_file_pages', 217: 'getdents64', 218: 'set_tid_address',
  219: 'restart_syscall', 220: 'semtimedop', 221: 'fadvise64', 222: 'timer_create',
  223: 'timer_settime', 224: 'timer_gettime', 225: 'timer_getoverrun', 226: 'timer_delete',
  227: 'clock_settime', 228: 'clock_gettime', 229: 'clock_getres', 230: 'clock_nanosleep',
  231: 'exit_group', 232: 'epoll_wait', 233: 'epoll_ctl', 234: 'tgkill', 235: 'utimes',
  236: 'vserver', 237: 'mbind', 238: 'set_mempolicy', 239: 'get_mempolicy', 240: 'mq_open',
  241: 'mq_unlink', 242: 'mq_timedsend', 243: 'mq_timedreceive', 244: 'mq_notify',
  245: 'mq_getsetattr', 246: 'kexec_load', 247: 'waitid', 248: 'add_key', 249: 'request_key',
  250: 'keyctl', 251: 'ioprio_set', 252: 'ioprio_get', 253: 'inotify_init',
  254: 'inotify_add_watch', 255: 'inotify_rm_watch', 256: 'migrate_pages', 257: 'openat',
  258: 'mkdirat', 259: 'mknodat', 260: 'fchownat', 261: 'futimesat', 262: 'newfstatat',
  263: 'unlinkat', 264: 'renameat', 265: 'linkat', 266: 'symlinkat', 267: 'readlinkat',
  268: 'fchmodat', 269: 'faccessat', 270: 'pselect6', 271: 'ppoll', 272: 'unshare',
  273: 'set_robust_list', 274: 'get_robust_list', 275: 'splice', 276: 'tee',
  277: 'sync_file_range', 278: 'vmsplice', 279: 'move_pages', 280: 'utimensat', 281: 'epoll_pwait',
  282: 'signalfd', 283: 'timerfd_create', 284: 'eventfd', 285: 'fallocate', 286: 'timerfd_settime',
  287: 'timerfd_gettime', 288: 'accept4', 289: 'signalfd4', 290: 'eventfd2', 291: 'epoll_create1',
  292: 'dup3', 293: 'pipe2', 294: 'inotify_init1', 295: 'preadv', 296: 'pwritev',
  297: 'rt_tgsigqueueinfo', 298: 'perf_event_open', 299: 'recvmmsg', 300: 'fanotify_init',
  301: 'fanotify_mark', 302: 'prlimit64', 303: 'name_to_handle_at', 304: 'open_by_handle_at',
  305: 'clock_adjtime', 306: 'syncfs', 307: 'sendmmsg', 308: 'setns', 309: 'getcpu',
  310: 'process_vm_readv', 311: 'process_vm_writev', 312: 'kcmp', 313: 'finit_module',
  314: 'sched_setattr', 315: 'sched_getattr', 316: 'renameat2', 317: 'seccomp', 318: 'getrandom',
  319: 'memfd_create', 320: 'kexec_file_load', 321: 'bpf', 322: 'execveat', 323: 'userfaultfd',
  324: 'membarrier', 325: 'mlock2', 326: 'copy_file_range', 327: 'preadv2', 328: 'pwritev2',
  329: 'pkey_mprotect', 330: 'pkey_alloc', 331: 'pkey_free', 332: 'statx', 333: 'io_pgetevents',
  334: 'rseq', 335: 'uretprobe', 424: 'pidfd_send_signal', 425: 'io_uring_setup',
  426: 'io_uring_enter', 427: 'io_uring_register', 428: 'open_tree', 429: 'move_mount',
  430: 'fsopen', 431: 'fsconfig', 432: 'fsmount', 433: 'fspick', 434: 'pidfd_open', 435: 'clone3',
  436: 'close_range', 437: 'openat2', 438: 'pidfd_getfd', 439: 'faccessat2',
  440: 'process_madvise', 441: 'epoll_pwait2', 442: 'mount_setattr', 443: 'quotactl_fd',
  444: 'landlock_create_ruleset', 445: 'landlock_add_rule', 446: 'landlock_restrict_self',
  447: 'memfd_secret', 448: 'process_mrelease', 449: 'futex_waitv', 450: 'set_mempolicy_home_node',
  451: 'cachestat', 452: 'fchmodat2', 453: 'map_shadow_stack', 454: 'futex_wake',
  455: 'futex_wait', 456: 'futex_requeue', 457: 'statmount', 458: 'listmount',
  459: 'lsm_get_self_attr', 460: 'lsm_set_self_attr', 461: 'lsm_list_modules', 462: 'mseal',
  463: 'setxattrat', 464: 'getxattrat', 465: 'listxattrat', 466: 'removexattrat',
  467: 'open_tree_attr', 468: 'file_getattr', 469: 'file_setattr',
}
calls = CALLS

# How each call is served. Default: passed to the host.
EMULATED = {
  'rt_sigaction': 'signal::rt_sigaction', 'rt_sigprocmask': 'signal::rt_sigprocmask',
  'rt_sigreturn': 'signal::rt_sigreturn', 'sigaltstack': 'signal::sigaltstack',
  'rt_sigsuspend': 'signal::rt_sigsuspend', 'rt_sigpending': 'signal::rt_sigpending',
  'clone': 'process::clone', 'clone3': 'process::clone3', 'fork': 'process::fork', 'vfork': 'process::vfork',
  'execve': 'process::execve', 'execveat': 'process::execveat',
  'exit': 'process::exit', 'exit_group': 'process::exit_group',
'arch_prctl': 'process::arch_prctl',
  'brk': 'memory::brk',
  'getpid': 'ids::getpid', 'getppid': 'ids::getppid', 'gettid': 'ids::gettid',
  'getuid': 'ids::getuid', 'geteuid': 'ids::geteuid', 'getgid': 'ids::getgid', 'getegid': 'ids::getegid',
  'getresuid': 'ids::getresuid', 'getresgid': 'ids::getresgid', 'getgroups': 'ids::getgroups',
  'umask': 'ids::umask', 'uname': 'uts::uname', 'getrlimit': 'resource::getrlimit', 'prlimit64': 'resource::prlimit64',
  'clock_gettime': 'time::clock_gettime', 'gettimeofday': 'time::gettimeofday', 'time': 'time::time',
  'getpgrp': 'ids::getpgrp', 'getpgid': 'ids::getpgid', 'getsid': 'ids::getsid', 'getcpu': 'sched::getcpu',
  'sched_getaffinity': 'sched::sched_getaffinity',
  'uretprobe': 'signal::uretprobe',
}
MEDIATED = {
  'mmap': 'memory::mmap', 'munmap': 'memory::munmap', 'mprotect': 'memory::mprotect',
  'mremap': 'memory::mremap', 'madvise': 'memory::madvise', 'pkey_mprotect': 'memory::pkey_mprotect',
  'pkey_alloc': 'memory::pkey_alloc',
  'remap_file_pages': 'memory::remap_file_pages', 'mseal': 'memory::mseal', 'munlock': None,
  'shmat': 'memory::shmat', 'shmdt': 'memory::shmdt',
  'readlink': 'fs::readlink', 'readlinkat': 'fs::readlinkat', 'prctl': 'process::prctl',
  'open': 'fs::open', 'openat': 'fs::openat', 'openat2': 'fs::openat2', 'creat': 'fs::creat',
  'stat': 'fs::stat', 'lstat': 'fs::lstat', 'newfstatat': 'fs::newfstatat', 'statx': 'fs::statx',
  'fstat': 'fs::fstat', 'pread64': 'fs::pread64', 'read': 'fs::read', 'readv': 'fs::readv',
  'preadv': 'fs::preadv', 'preadv2': 'fs::preadv2', 'lseek': 'fs::lseek', 'sendfile': 'fs::sendfile',
  'write': 'fs::write', 'writev': 'fs::writev',
  'statfs': 'fs::statfs', 'access': 'fs::access', 'faccessat': 'fs::faccessat',
  'faccessat2': 'fs::faccessat2', 'symlink': 'fs::symlink', 'symlinkat': 'fs::symlinkat',
  'link': 'fs::link', 'linkat': 'fs::linkat', 'mkdir': 'fs::mkdir', 'mkdirat': 'fs::mkdirat',
  'mknod': 'fs::mknod', 'mknodat': 'fs::mknodat', 'unlink': 'fs::unlink', 'rmdir': 'fs::rmdir',
  'unlinkat': 'fs::unlinkat', 'rename': 'fs::rename', 'renameat': 'fs::renameat',
  'renameat2': 'fs::renameat2', 'chmod': 'fs::chmod', 'fchmodat': 'fs::fchmodat',
  'fchmodat2': 'fs::fchmodat2', 'chown': 'fs::chown', 'lchown': 'fs::lchown',
  'fchownat': 'fs::fchownat', 'fchmod': 'fs::fchmod', 'fchown': 'fs::fchown',
  'fsetxattr': 'fs::fsetxattr', 'fremovexattr': 'fs::fremovexattr', 'utime': 'fs::utime',
  'utimes': 'fs::utimes', 'futimesat': 'fs::futimesat', 'utimensat': 'fs::utimensat',
  'truncate': 'fs::truncate', 'getxattr': 'fs::xattr', 'lgetxattr': 'fs::xattr',
  'setxattr': 'fs::xattr', 'lsetxattr': 'fs::xattr', 'listxattr': 'fs::xattr',
  'llistxattr': 'fs::xattr', 'removexattr': 'fs::xattr', 'lremovexattr': 'fs::xattr',
  'getxattrat': 'fs::xattrat', 'setxattrat': 'fs::xattrat', 'listxattrat': 'fs::xattrat',
  'removexattrat': 'fs::xattrat', 'inotify_add_watch': 'fs::inotify_add_watch',
  'chdir': 'fs::chdir', 'fchdir': 'fs::fchdir', 'getcwd': 'fs::getcwd', 'close': 'fs::close',
  'close_range': 'fs::close_range', 'dup': 'fs::dup', 'dup2': 'fs::dup2', 'dup3': 'fs::dup3',
  'fcntl': 'fs::fcntl',
  'getdents64': 'fs::getdents64',
  'chroot': 'fs::mount_tree', 'pivot_root': 'fs::mount_tree', 'mount': 'fs::mount_tree',
  'umount2': 'fs::mount_tree', 'open_tree': 'fs::mount_tree', 'open_tree_attr': 'fs::mount_tree',
  'move_mount': 'fs::mount_tree', 'fsopen': 'fs::mount_tree', 'fspick': 'fs::mount_tree',
  'fsmount': 'fs::mount_tree', 'fsconfig': 'fs::mount_tree', 'mount_setattr': 'fs::mount_tree',
  'name_to_handle_at': 'fs::mount_tree', 'open_by_handle_at': 'fs::mount_tree',
  'fanotify_mark': 'fs::mount_tree', 'acct': 'fs::mount_tree', 'quotactl': 'fs::mount_tree',
  'connect': 'socket::connect', 'bind': 'socket::bind', 'sendto': 'socket::sendto',
  'sendmsg': 'socket::sendmsg', 'sendmmsg': 'socket::sendmmsg',
  'setuid': 'ids::set_ids', 'setgid': 'ids::set_ids', 'setreuid': 'ids::set_ids', 'setregid': 'ids::set_ids',
  'setresuid': 'ids::set_ids', 'setresgid': 'ids::set_ids', 'setfsuid': 'ids::set_ids', 'setfsgid': 'ids::set_ids',
  'setgroups': 'ids::set_ids', 'capset': 'ids::capset', 'unshare': 'process::unshare',
  'setns': 'ids::setns',
  'sethostname': 'uts::set_uts', 'setdomainname': 'uts::set_uts',
  'setrlimit': 'resource::setrlimit', 'setpgid': 'ids::setpgid', 'setsid': 'ids::set_pgid',
  'sched_setaffinity': 'sched::sched_setaffinity',
  'membarrier': 'memory::membarrier', 'seccomp': 'process::seccomp',
  'rseq': 'process::rseq', 'timer_create': 'process::timer_create',
  'io_setup': 'process::io_setup', 'mlockall': 'memory::mlockall',
  'personality': 'process::personality',
  'process_vm_writev': 'memory::process_vm_writev', 'ptrace': 'ptrace::ptrace',
  'wait4': 'process::wait4', 'waitid': 'process::waitid',
  'rt_sigtimedwait': 'signal::rt_sigtimedwait',
  'kill': 'signal::kill', 'rt_sigqueueinfo': 'signal::rt_sigqueueinfo',
  'tkill': 'signal::tkill', 'tgkill': 'signal::tgkill',
  'rt_tgsigqueueinfo': 'signal::rt_tgsigqueueinfo',
  'ppoll': 'signal::ppoll', 'pselect6': 'signal::pselect6',
  'epoll_pwait': 'signal::epoll_pwait', 'epoll_pwait2': 'signal::epoll_pwait2',
}
MEDIATED = {k: v for k, v in MEDIATED.items() if v}
# Mediated calls whose first argument is a descriptor the host serves
# unchanged when the descriptor is passed through (a patched site calls the
# host directly, as for a Host call); the handler sees the others.
FD_PASSTHROUGH = ['close', 'getdents64', 'fstat', 'pread64', 'read', 'readv', 'preadv', 'preadv2', 'lseek', 'write', 'writev',
                  'dup', 'fcntl']
# Mediated calls the host serves unchanged when the manifest mounts nothing
# (sys::fs: each handler's first test): patched sites then go to the host
# directly, as for a Host call.
HOST_UNMOUNTED = [k for k, v in MEDIATED.items()
                  if v.startswith(('fs::', 'socket::'))
                  and k not in ('readlink', 'readlinkat') + tuple(FD_PASSTHROUGH)]
# Blocking host calls: name -> restartable with SA_RESTART.
BLOCKING = {
  'read': 1, 'write': 1, 'readv': 1, 'writev': 1, 'pread64': 1, 'pwrite64': 1, 'preadv': 1, 'pwritev': 1,
  'preadv2': 1, 'pwritev2': 1, 'ioctl': 1, 'open': 1, 'openat': 1, 'openat2': 1, 'creat': 1,
  'wait4': 1, 'waitid': 1, 'accept': 1, 'accept4': 1, 'connect': 1, 'recvfrom': 1, 'sendto': 1,
  'recvmsg': 1, 'sendmsg': 1, 'recvmmsg': 1, 'sendmmsg': 1, 'flock': 1, 'fcntl': 1, 'futex': 1,
  'mq_timedsend': 1, 'mq_timedreceive': 1, 'splice': 1, 'tee': 1,
  'sendfile': 1, 'copy_file_range': 1, 'getrandom': 1, 'futex_waitv': 1, 'futex_wait': 1,
  'nanosleep': 0, 'clock_nanosleep': 0, 'poll': 0, 'ppoll': 0, 'select': 0, 'pselect6': 0,
  'epoll_wait': 0, 'epoll_pwait': 0, 'epoll_pwait2': 0, 'pause': 0, 'rt_sigtimedwait': 0,
  'semop': 0, 'semtimedop': 0, 'io_getevents': 0, 'io_pgetevents': 0,
  # signal(7): System V IPC calls are never restarted, whatever SA_RESTART says.
  'msgrcv': 0, 'msgsnd': 0,
}
UNSUPPORTED = {
  'io_uring_setup': 'its rings submit system calls the runtime could not see',
  'io_uring_enter': 'io_uring is not supported', 'io_uring_register': 'io_uring is not supported',
  'kexec_load': 'host administration', 'kexec_file_load': 'host administration',
  'init_module': 'host administration', 'finit_module': 'host administration', 'delete_module': 'host administration',
  'reboot': 'host administration', 'swapon': 'host administration', 'swapoff': 'host administration',
  'map_shadow_stack': 'shadow stacks are not managed by the runtime',
}
OBSOLETE = ['uselib', 'create_module', 'get_kernel_syms', 'query_module', 'nfsservctl', 'getpmsg',
            'putpmsg', 'afs_syscall', 'tuxcall', 'security', 'vserver', 'epoll_ctl_old',
            'epoll_wait_old', 'lookup_dcookie', 'set_thread_area', 'get_thread_area', '_sysctl']
NOTES = {
  'uretprobe': 'outside a uretprobe trampoline: SIGILL, as Linux',
  'rt_sigaction': 'dispositions kept in the runtime; host handler is the runtime\'s',
  'rt_sigprocmask': 'mask kept per thread; host mask updated on return',
  'rt_sigreturn': 'restores the frame the runtime built',
  'sigaltstack': 'emulated; the host altstack is the runtime\'s',
  'rt_sigsuspend': 'host sigsuspend in the interruptible window',
  'clone': 'threads get runtime state; CLONE_VM children a fresh runtime stack',
  'clone3': 'clone path; set_tid, a cgroup, a time namespace: host clone3',
  'fork': 'host copy-on-write fork', 'vfork': 'host vfork with its own runtime stack',
  'execve': 'checked, then loaded in place (or the runtime re-executes itself with it)',
  'execveat': 'checked, then loaded in place (or the runtime re-executes itself with it)',
  'exit': 'emulates CLONE_CHILD_CLEARTID, frees runtime state',

  'arch_prctl': 'FS passed to the host; GS emulated (GS is the runtime\'s)',
  'brk': 'program break emulated over anonymous mappings',
  'mmap': 'MAP_FIXED over runtime memory refused', 'munmap': 'runtime memory refused',
  'mprotect': 'runtime memory refused', 'mremap': 'runtime memory refused',
  'madvise': 'runtime memory refused', 'pkey_mprotect': 'runtime memory refused',
  'pkey_alloc': 'the new rights in PKRU survive the trap path\'s return',
  'mseal': 'runtime memory refused', 'remap_file_pages': 'runtime memory refused',
  'shmat': 'SHM_REMAP over runtime memory refused (EINVAL); never patched',
  'shmdt': 'the runtime\'s own segment (the ptrace board) refused (EINVAL)',
  'readlink': '/proc/self/exe names the program; with mounts, /proc links name guest paths',
  'readlinkat': '/proc/self/exe names the program; with mounts, /proc links name guest paths',
  'rt_sigpending': 'host asked only for signals the program blocks (they wait there for signalfd)',
  'rt_sigtimedwait': 'signals waiting in the runtime first, then the host (blocking window)',
  'kill': 'host; signals it sends its own process queue as the process\'s',
  'rt_sigqueueinfo': 'host; as kill',
  'tkill': 'host; one sent to oneself while blocked is taken back at unblocking',
  'tgkill': 'host; as tkill',
  'rt_tgsigqueueinfo': 'host; signals it sends its own thread queue as the thread\'s',
  'ppoll': 'temporary mask applied by the runtime too (blocking window)',
  'pselect6': 'temporary mask applied by the runtime too (blocking window)',
  'epoll_pwait': 'temporary mask applied by the runtime too (blocking window)',
  'epoll_pwait2': 'temporary mask applied by the runtime too (blocking window)',
  'sched_getaffinity': 'own mask cached; re-read after sched_setaffinity, or after 10-50 ms',
  'sched_setaffinity': 'then forgets every thread\'s cached mask',
  'getpid': 'cached per process', 'gettid': 'from the runtime\'s thread state',
  'getppid': 'cached; forgotten when the parent dies (parent-death signal)',
  'getuid': 'cached credentials', 'geteuid': 'cached credentials', 'getgid': 'cached credentials',
  'getegid': 'cached credentials', 'getresuid': 'cached credentials', 'getresgid': 'cached credentials',
  'getgroups': 'cached credentials', 'umask': 'host call only when the mask changes',
  'uname': 'cached; sethostname/setdomainname forget it', 'getrlimit': 'cached per resource',
  'prlimit64': 'reads of the calling process cached', 'clock_gettime': 'through the host vDSO',
  'gettimeofday': 'through the host vDSO', 'time': 'through the host vDSO',
  'setuid': 'then forgets cached credentials and the directory cache', 'setgid': 'then forgets cached credentials and the directory cache',
  'setreuid': 'then forgets cached credentials and the directory cache', 'setregid': 'then forgets cached credentials and the directory cache',
  'setresuid': 'then forgets cached credentials and the directory cache', 'setresgid': 'then forgets cached credentials and the directory cache',
  'setfsuid': 'then forgets cached credentials and the directory cache', 'setfsgid': 'then forgets cached credentials and the directory cache',
  'setgroups': 'then forgets cached credentials and the directory cache', 'sethostname': 'then forgets the cached uname',
  'setdomainname': 'then forgets the cached uname', 'setrlimit': 'then forgets the cached limit',
  'prctl': 'SUD refused; PDEATHSIG and SECCOMP emulated',
  'getpgrp': 'cached once exec\'d (before that the parent may move us)', 'getpgid': 'own group cached once exec\'d',
  'getsid': 'own session cached', 'getcpu': 'rdpid/rdtscp (TSC_AUX)',
  'setpgid': 'then forgets the cached group and session', 'setsid': 'then forgets the cached group and session',
}
# The file-system calls the library OS resolves when the manifest mounts
# directories (sys::fs); without mounts they go to the host unchanged.
FS_NOTE = 'with mounts: path resolved by the library OS; else the host\'s'
for _k, _v in MEDIATED.items():
    if _v.startswith('fs::') and _k not in NOTES:
        NOTES[_k] = FS_NOTE
NOTES.update({
  'connect': 'with mounts: a Unix socket path resolved by the library OS',
  'bind': 'with mounts: a Unix socket path resolved by the library OS',
  'sendto': 'with mounts: a Unix socket path resolved by the library OS',
  'sendmsg': 'with mounts: a Unix socket path resolved by the library OS',
  'sendmmsg': 'with mounts: a Unix socket path resolved by the library OS',
  'close': 'the runtime\'s own descriptors (mount directories): EBADF',
  'getdents64': '/proc/self/fd listings leave out the runtime\'s descriptors',
  'fstat': 'a file of an exclusive mount: its attributes, asked of the host once',
  'pread64': 'a file of an exclusive mount: copied from a read-only view of it',
  'read': 'a file of an exclusive mount: copied from its view, at the offset (file.rs)',
  'readv': 'a file of an exclusive mount: copied from its view, at the offset (file.rs)',
  'preadv': 'a file of an exclusive mount: copied from a read-only view of it',
  'preadv2': 'a file of an exclusive mount, no flags: copied from a read-only view of it',
  'lseek': 'a file of an exclusive mount: the library OS keeps its offset while none shares it',
  'sendfile': 'from a file of an exclusive mount: its offset given back to the host first',
  'write': 'a file of a write-back mount: under 4 KiB into its buffer (file.rs)',
  'writev': 'a file of a write-back mount: under 4 KiB into its buffer (file.rs)',
  'close_range': 'the runtime\'s own descriptors stay open',
  'dup2': 'moves a runtime descriptor at newfd out of the way',
  'dup3': 'moves a runtime descriptor at newfd out of the way',
  'fchmod': 'EROFS on a read-only mount', 'fchown': 'EROFS on a read-only mount',
  'fsetxattr': 'EROFS on a read-only mount', 'fremovexattr': 'EROFS on a read-only mount',
  'getcwd': 'with mounts: the guest path of the working directory',
  'fchdir': 'with mounts: not to the runtime\'s own descriptors (EBADF)',
  'capset': 'host call; the directory cache is emptied (its answers depend on credentials)',
  'unshare': 'host call; CLONE_FS: no cached working directory; CLONE_FILES: own fd state',
  'setns': 'host call, then cached creds, uname and directory cache forgotten',
  'membarrier': 'the runtime\'s own registration hidden from the program',
  'rseq': 'host call; the registration is noted (an execve in place undoes it)',
  'timer_create': 'host call; execve then goes through the kernel (which deletes the timers)',
  'io_setup': 'host call; execve then goes through the kernel (which destroys the contexts)',
  'mlockall': 'host call; with MCL_FUTURE, execve then goes through the kernel',
  'personality': 'host call; a change makes execve go through the kernel',
  'seccomp': 'filters run by the library OS; no listener',
  'process_vm_writev': 'EFAULT on the target runtime\'s memory',
  'ptrace': 'emulated between the picoprocesses of the tree (kernel::ptrace); others EPERM',
})
for _k, _v in MEDIATED.items():
    if _v == 'fs::mount_tree':
        NOTES[_k] = 'with mounts: EPERM (changes or reaches around the mount tree)'

# Argument formats for --trace: d int, u unsigned, x hex, f fd/dirfd, s string,
# p pointer, o octal, g signal, a string array.
ARGS = {
  'read': 'fpu', 'write': 'fpu', 'open': 'sxo', 'close': 'f', 'stat': 'sp', 'fstat': 'fp', 'lstat': 'sp',
  'poll': 'pud', 'lseek': 'fdd', 'mmap': 'pxxxfx', 'mprotect': 'pxx', 'munmap': 'px', 'brk': 'p',
  'rt_sigaction': 'gppu', 'rt_sigprocmask': 'dppu', 'rt_sigreturn': '', 'ioctl': 'fxp',
  'pread64': 'fpud', 'pwrite64': 'fpud', 'readv': 'fpd', 'writev': 'fpd', 'access': 'so', 'pipe': 'p',
  'select': 'dpppp', 'sched_yield': '', 'mremap': 'pxxxp', 'msync': 'pxx', 'madvise': 'pxd',
  'dup': 'f', 'dup2': 'ff', 'pause': '', 'nanosleep': 'pp', 'getpid': '', 'socket': 'ddd',
  'connect': 'fpd', 'accept': 'fpp', 'sendto': 'fpuxpd', 'recvfrom': 'fpuxpp', 'sendmsg': 'fpx',
  'recvmsg': 'fpx', 'shutdown': 'fd', 'bind': 'fpd', 'listen': 'fd', 'getsockname': 'fpp',
  'getpeername': 'fpp', 'socketpair': 'dddp', 'setsockopt': 'fddpd', 'getsockopt': 'fddpp',
  'clone': 'xppppp', 'fork': '', 'vfork': '', 'execve': 'saa', 'exit': 'd', 'wait4': 'dpxp',
  'kill': 'dg', 'uname': 'p', 'fcntl': 'fdx', 'flock': 'fd', 'fsync': 'f', 'fdatasync': 'f',
  'truncate': 'sd', 'ftruncate': 'fd', 'getdents': 'fpu', 'getcwd': 'pu', 'chdir': 's', 'fchdir': 'f',
  'rename': 'ss', 'mkdir': 'so', 'rmdir': 's', 'creat': 'so', 'link': 'ss', 'unlink': 's',
  'symlink': 'ss', 'readlink': 'spu', 'chmod': 'so', 'fchmod': 'fo', 'chown': 'sdd', 'umask': 'o',
  'gettimeofday': 'pp', 'getrlimit': 'dp', 'getrusage': 'dp', 'sysinfo': 'p', 'getuid': '', 'getgid': '',
  'setuid': 'd', 'setgid': 'd', 'geteuid': '', 'getegid': '', 'setpgid': 'dd', 'getppid': '', 'getpgrp': '',
  'setsid': '', 'sigaltstack': 'pp', 'rt_sigsuspend': 'pu', 'rt_sigpending': 'pu', 'statfs': 'sp',
  'fstatfs': 'fp', 'prctl': 'dxxxx', 'arch_prctl': 'xp', 'setrlimit': 'dp', 'sync': '', 'gettid': '',
  'tkill': 'dg', 'futex': 'pdxppx', 'sched_getaffinity': 'dup', 'sched_setaffinity': 'dup',
  'getdents64': 'fpu', 'set_tid_address': 'p', 'fadvise64': 'fddd', 'clock_gettime': 'dp',
  'clock_getres': 'dp', 'clock_nanosleep': 'dxpp', 'exit_group': 'd', 'epoll_wait': 'fpdd',
  'epoll_ctl': 'fdfp', 'tgkill': 'ddg', 'waitid': 'ddpxp', 'openat': 'fsxo', 'mkdirat': 'fso',
  'newfstatat': 'fspx', 'unlinkat': 'fsx', 'renameat': 'fsfs', 'linkat': 'fsfsx', 'symlinkat': 'sfs',
  'readlinkat': 'fspu', 'fchmodat': 'fso', 'faccessat': 'fso', 'pselect6': 'dppppp', 'ppoll': 'pupp',
  'set_robust_list': 'pu', 'get_robust_list': 'dpp', 'splice': 'fpfpux', 'utimensat': 'fspx',
  'epoll_pwait': 'fpddpu', 'timerfd_create': 'dx', 'eventfd2': 'ux', 'epoll_create1': 'x', 'dup3': 'ffx',
  'pipe2': 'px', 'accept4': 'fppx', 'prlimit64': 'ddpp', 'getrandom': 'pux', 'memfd_create': 'sx',
  'execveat': 'fsaax', 'statx': 'fsxxp', 'rseq': 'pudx', 'clone3': 'pu', 'close_range': 'uux',
  'openat2': 'fspu', 'faccessat2': 'fsox', 'sendfile': 'ffpu', 'getxattr': 'sspu', 'lgetxattr': 'sspu',
  'fchown': 'fdd', 'lchown': 'sdd', 'chroot': 's', 'mount': 'sssxp', 'umount2': 'sx', 'pipe': 'p',
  'getgroups': 'dp', 'setgroups': 'dp', 'getresuid': 'ppp', 'getresgid': 'ppp', 'getpgid': 'd', 'getsid': 'd',
  'sched_getparam': 'dp', 'mlock': 'px', 'munlock': 'px', 'getcpu': 'ppp', 'time': 'p', 'alarm': 'u',
  'setitimer': 'dpp', 'getitimer': 'dp', 'sched_setscheduler': 'ddp', 'sched_getscheduler': 'd',
  'rt_sigtimedwait': 'pppu', 'rt_sigqueueinfo': 'dgp', 'rt_tgsigqueueinfo': 'ddgp', 'fchownat': 'fsddx',
  'futimesat': 'fsp', 'mknod': 'sox', 'mknodat': 'fsox', 'inotify_init1': 'x', 'inotify_add_watch': 'fsx',
  'inotify_rm_watch': 'fd', 'signalfd4': 'fpux', 'timerfd_settime': 'fxpp', 'timerfd_gettime': 'fp',
  'fallocate': 'fddd', 'sync_file_range': 'fddx', 'copy_file_range': 'fpfpux', 'preadv': 'fpdd',
  'pwritev': 'fpdd', 'preadv2': 'fpddx', 'pwritev2': 'fpddx', 'recvmmsg': 'fpuxp', 'sendmmsg': 'fpux',
  'pkey_mprotect': 'pxxd', 'mseal': 'pxx', 'cachestat': 'fppx', 'fchmodat2': 'fsox',
}

# The path-taking xattr and utime calls (their path makes them Check for a
# sandbox; --trace shows the strings).
ARGS.update({
  'setxattr': 'sspux', 'lsetxattr': 'sspux', 'fsetxattr': 'fspux', 'listxattr': 'spu',
  'llistxattr': 'spu', 'flistxattr': 'fpu', 'removexattr': 'ss', 'lremovexattr': 'ss',
  'fremovexattr': 'fs', 'fgetxattr': 'fspu', 'utime': 'sp', 'utimes': 'sp',
  'getxattrat': 'fsxspu', 'setxattrat': 'fsxspu', 'listxattrat': 'fsxpu', 'removexattrat': 'fsxs',
})

# Calls that need the trap path's full signal context (FPU state, or they
# replace the register state): the fast entry hands them to the trap at once.
FULL_CONTEXT = ['rt_sigreturn', 'clone', 'fork', 'vfork', 'execve', 'execveat', 'clone3',
                'rt_sigsuspend', 'sigaltstack']

# What a sandbox (issue 12) may do with each call: Deny (never allowed: host
# administration, calls that reach around the runtime), Check (allowed once
# the sandbox has checked its arguments: a path, an address, another process,
# credentials), Allow (touches nothing outside the process). Calls with a
# string argument are Check (their strings are paths, but for these).
SANDBOX_DENY = set(UNSUPPORTED) | set(OBSOLETE) | {
  'mount', 'umount2', 'pivot_root', 'chroot', 'swapon', 'swapoff', 'reboot', 'sethostname',
  'setdomainname', 'settimeofday', 'clock_settime', 'clock_adjtime', 'adjtimex', 'acct',
  'quotactl', 'quotactl_fd', 'iopl', 'ioperm', 'syslog', 'vhangup', 'bpf', 'perf_event_open',
  'userfaultfd', 'keyctl', 'add_key', 'request_key', 'unshare', 'setns', 'process_vm_readv', 'process_vm_writev', 'ptrace',
  'kcmp', 'pidfd_getfd', 'open_by_handle_at', 'name_to_handle_at', 'fanotify_init',
  'fanotify_mark', 'mount_setattr', 'fsopen', 'fsconfig', 'fsmount', 'fspick', 'move_mount',
  'open_tree', 'open_tree_attr', 'statmount', 'listmount', 'lsm_set_self_attr',
}
SANDBOX_CHECK = {
  'socket', 'socketpair', 'connect', 'bind', 'listen', 'accept', 'accept4', 'sendto', 'sendmsg',
  'sendmmsg', 'kill', 'tkill', 'tgkill', 'rt_sigqueueinfo', 'rt_tgsigqueueinfo', 'pidfd_open',
  'pidfd_send_signal', 'setpriority', 'sched_setaffinity', 'sched_setscheduler',
  'sched_setparam', 'sched_setattr', 'prlimit64', 'setrlimit', 'ioctl', 'prctl', 'personality',
  'setuid', 'setgid', 'setreuid', 'setregid', 'setresuid', 'setresgid', 'setfsuid', 'setfsgid',
  'setgroups', 'capset', 'migrate_pages', 'move_pages', 'mbind', 'set_mempolicy',
  'ioprio_set', 'mmap', 'mprotect', 'pkey_mprotect', 'mremap', 'shmat', 'shmget', 'msgget',
  'semget', 'mq_open', 'mq_unlink', 'fcntl', 'clone', 'clone3', 'fork', 'vfork', 'memfd_secret',
}
SANDBOX_ALLOW = {'memfd_create'}

def serve(name):
    if name in EMULATED: return f'Support::Emulated(sys::{EMULATED[name]})'
    if name in MEDIATED and name in BLOCKING:
        r = 'true' if BLOCKING[name] else 'false'
        # As rustfmt lays it out (the struct literal is too long for one line).
        return (f'Support::MediatedBlocking {{\n            handler: sys::{MEDIATED[name]},\n'
                f'            restart: {r},\n        }}')
    if name in MEDIATED: return f'Support::Mediated(sys::{MEDIATED[name]})'
    if name in OBSOLETE: return 'Support::Unsupported'
    if name in UNSUPPORTED: return 'Support::Unsupported'
    if name in BLOCKING: return f'Support::HostBlocking {{ restart: {"true" if BLOCKING[name] else "false"} }}'
    return 'Support::Host'

def sandbox(name, args):
    if name in SANDBOX_DENY: return 'Sandbox::Deny'
    if name in SANDBOX_ALLOW: return 'Sandbox::Allow'
    if name in SANDBOX_CHECK or 's' in args or 'a' in args: return 'Sandbox::Check'
    return 'Sandbox::Allow'

def note(name):
    if name in OBSOLETE: return 'obsolete: Linux returns ENOSYS too'
    if name in UNSUPPORTED: return UNSUPPORTED[name]
    if name in NOTES: return NOTES[name]
    if name in BLOCKING: return 'may block: runs in the interruptible window'
    return ''

TABLE_RS = 'crates/picos-rt/src/sys/table.rs'
NR_RS = 'crates/picos-rt/src/host/nr.rs'
MAX_NR = 512

def table_rs():
    out = ["""// @generated by tools/gen_table.py: edit that script, not this file.
//! The syscall table: for every x86-64 system call, its number, name, how
//! picos serves it, how `--trace` prints its arguments, whether it needs
//! the full signal context, what a sandbox may do with it, and a note.
//! `picos syscalls` prints it; `entry::dispatch` routes through it.
#![deny(unsafe_code)]

use crate::host::nr::MAX_NR;
use crate::sys;
use crate::sys::def::{Sandbox, Support, SyscallDef};

/// Every x86-64 system call picos knows, sorted by number.
pub static TABLE: &[SyscallDef] = &DEFS;

/// Table index by syscall number (`u16::MAX`: not in the table), so the
/// dispatcher finds a row with one load.
pub static INDEX: [u16; MAX_NR] = build_index(&DEFS);

/// The `full_context` column as a bitmap by number, for the fast entry's
/// check on every call (one load).
pub static FULL_CONTEXT: [u64; MAX_NR / 64] = build_full_context(&DEFS);

const fn build_index(defs: &[SyscallDef]) -> [u16; MAX_NR] {
    let mut idx = [u16::MAX; MAX_NR];
    let mut i = 0;
    while i < defs.len() {
        idx[defs[i].nr as usize] = i as u16;
        i += 1;
    }
    idx
}

const fn build_full_context(defs: &[SyscallDef]) -> [u64; MAX_NR / 64] {
    let mut bits = [0u64; MAX_NR / 64];
    let mut i = 0;
    while i < defs.len() {
        if defs[i].full_context {
            let nr = defs[i].nr as usize;
            bits[nr / 64] |= 1 << (nr % 64);
        }
        i += 1;
    }
    bits
}

// A const (not a static) so that `build_index` can read it at compile time.
#[allow(clippy::large_const_arrays)]
const DEFS: [SyscallDef; COUNT] = [
"""]
    for nr in sorted(calls):
        name = calls[nr]
        args = ARGS.get(name, 'xxxxxx')
        n = note(name)
        line = f'        note: "{n}",'
        if len(line) > 100:
            raise SystemExit(f'note of {name} is too long for one line (rustfmt): {len(line)} > 100 columns')
        out.append(f"""    SyscallDef {{
        nr: {nr},
        name: "{name}",
        support: {serve(name)},
        args: "{args}",
        full_context: {'true' if name in FULL_CONTEXT else 'false'},
        fd_passthrough: {'true' if name in FD_PASSTHROUGH else 'false'},
        host_unmounted: {'true' if name in HOST_UNMOUNTED else 'false'},
        sandbox: {sandbox(name, args)},
        note: "{n}",
    }},
""")
    out.append('];\n')
    out.append(f'\nconst COUNT: usize = {len(calls)};\n')
    return ''.join(out)

def nr_rs():
    out = [f"""// @generated by tools/gen_table.py: edit that script, not this file.
//! Linux x86-64 system call numbers and names: the one source of them in
//! the runtime.
#![deny(unsafe_code)]

/// Highest system call number plus one (the size of per-number tables).
pub const MAX_NR: usize = {MAX_NR};

"""]
    for nr in sorted(calls):
        out.append(f'pub const {calls[nr].upper()}: usize = {nr};\n')
    out.append("""
/// The name of system call `nr`.
pub fn name(nr: usize) -> Option<&'static str> {
    Some(match nr {
""")
    for nr in sorted(calls):
        out.append(f'        {nr} => "{calls[nr]}",\n')
    out.append("""        _ => return None,
    })
}
""")
    return ''.join(out)

assert all(nr < MAX_NR for nr in calls)
outputs = {TABLE_RS: table_rs(), NR_RS: nr_rs()}
import sys as _sys
root = pathlib.Path(__file__).resolve().parent.parent
if '--check' in _sys.argv:
    stale = [p for p, text in outputs.items() if (root / p).read_text() != text]
    if stale:
        print('out of date (run tools/gen_table.py and commit):', ', '.join(stale))
        _sys.exit(1)
    print('up to date:', ', '.join(outputs))
else:
    for p, text in outputs.items():
        (root / p).write_text(text)
    print(len(calls), 'calls')
