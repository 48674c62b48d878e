#!/usr/bin/env python3
"""Generates crates/picos-rt/src/table.rs, the declarative syscall table.

Edit the CLASS/ARGS/NOTE dictionaries here and re-run; the generated file is
committed so the build needs no Python.
"""
import re, pathlib

hdr = pathlib.Path('/usr/include/x86_64-linux-gnu/asm/unistd_64.h').read_text()
calls = {int(n): name for name, n in re.findall(r'#define __NR_(\w+) (\d+)', hdr)}
# Calls added after the Debian 12 headers (Linux 6.2 .. 6.18).
calls.update({451: 'cachestat', 452: 'fchmodat2', 453: 'map_shadow_stack', 454: 'futex_wake',
              455: 'futex_wait', 456: 'futex_requeue', 457: 'statmount', 458: 'listmount',
              459: 'lsm_get_self_attr', 460: 'lsm_set_self_attr', 461: 'lsm_list_modules',
              462: 'mseal', 463: 'setxattrat', 464: 'getxattrat', 465: 'listxattrat',
              466: 'removexattrat', 467: 'open_tree_attr', 468: 'file_getattr', 469: 'file_setattr', 335: 'uretprobe'})

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
  'umask': 'ids::umask', 'uname': 'ids::uname', 'getrlimit': 'ids::getrlimit', 'prlimit64': 'ids::prlimit64',
  'clock_gettime': 'ids::clock_gettime', 'gettimeofday': 'ids::gettimeofday', 'time': 'ids::time',
  'getpgrp': 'ids::getpgrp', 'getpgid': 'ids::getpgid', 'getsid': 'ids::getsid', 'getcpu': 'ids::getcpu',
  'sched_getaffinity': 'ids::sched_getaffinity',
  'uretprobe': 'signal::uretprobe',
}
MEDIATED = {
  'mmap': 'memory::mmap', 'munmap': 'memory::munmap', 'mprotect': 'memory::mprotect',
  'mremap': 'memory::mremap', 'madvise': 'memory::madvise', 'pkey_mprotect': 'memory::pkey_mprotect',
  'remap_file_pages': 'memory::remap_file_pages', 'mseal': 'memory::mseal', 'munlock': None,
  'shmat': 'memory::shmat',
  'readlink': 'fs::readlink', 'readlinkat': 'fs::readlinkat', 'prctl': 'process::prctl',
  'setuid': 'ids::set_ids', 'setgid': 'ids::set_ids', 'setreuid': 'ids::set_ids', 'setregid': 'ids::set_ids',
  'setresuid': 'ids::set_ids', 'setresgid': 'ids::set_ids', 'setfsuid': 'ids::set_ids', 'setfsgid': 'ids::set_ids',
  'setgroups': 'ids::set_ids', 'sethostname': 'ids::set_uts', 'setdomainname': 'ids::set_uts',
  'setrlimit': 'ids::setrlimit', 'setpgid': 'ids::set_pgid', 'setsid': 'ids::set_pgid',
  'sched_setaffinity': 'ids::sched_setaffinity',
  'rt_sigtimedwait': 'signal::rt_sigtimedwait',
  'kill': 'signal::kill', 'rt_sigqueueinfo': 'signal::rt_sigqueueinfo',
  'rt_tgsigqueueinfo': 'signal::rt_tgsigqueueinfo',
  'ppoll': 'signal::ppoll', 'pselect6': 'signal::pselect6',
  'epoll_pwait': 'signal::epoll_pwait', 'epoll_pwait2': 'signal::epoll_pwait2',
}
MEDIATED = {k: v for k, v in MEDIATED.items() if v}
# Blocking host calls: name -> restartable with SA_RESTART.
BLOCKING = {
  'read': 1, 'write': 1, 'readv': 1, 'writev': 1, 'pread64': 1, 'pwrite64': 1, 'preadv': 1, 'pwritev': 1,
  'preadv2': 1, 'pwritev2': 1, 'ioctl': 1, 'open': 1, 'openat': 1, 'openat2': 1, 'creat': 1,
  'wait4': 1, 'waitid': 1, 'accept': 1, 'accept4': 1, 'connect': 1, 'recvfrom': 1, 'sendto': 1,
  'recvmsg': 1, 'sendmsg': 1, 'recvmmsg': 1, 'sendmmsg': 1, 'flock': 1, 'fcntl': 1, 'futex': 1,
  'msgrcv': 1, 'msgsnd': 1, 'mq_timedsend': 1, 'mq_timedreceive': 1, 'splice': 1, 'tee': 1,
  'sendfile': 1, 'copy_file_range': 1, 'getrandom': 1, 'futex_waitv': 1, 'futex_wait': 1,
  'nanosleep': 0, 'clock_nanosleep': 0, 'poll': 0, 'ppoll': 0, 'select': 0, 'pselect6': 0,
  'epoll_wait': 0, 'epoll_pwait': 0, 'epoll_pwait2': 0, 'pause': 0, 'rt_sigtimedwait': 0,
  'semop': 0, 'semtimedop': 0, 'io_getevents': 0, 'io_pgetevents': 0,
}
UNSUPPORTED = {
  'io_uring_setup': 'its rings submit system calls the runtime could not see',
  'io_uring_enter': 'io_uring is not supported', 'io_uring_register': 'io_uring is not supported',
  'ptrace': 'a traced picoprocess would bypass the runtime',
  'process_vm_writev': 'writes another process\'s memory behind the runtime',
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
  'clone3': 'translated to the clone path',
  'fork': 'host copy-on-write fork', 'vfork': 'host vfork with its own runtime stack',
  'execve': 'checked, then the runtime re-executes itself with the new program',
  'execveat': 'checked, then the runtime re-executes itself with the new program',
  'exit': 'emulates CLONE_CHILD_CLEARTID, frees runtime state',

  'arch_prctl': 'FS passed to the host; GS emulated (GS is the runtime\'s)',
  'brk': 'program break emulated over anonymous mappings',
  'mmap': 'MAP_FIXED over runtime memory refused', 'munmap': 'runtime memory refused',
  'mprotect': 'runtime memory refused', 'mremap': 'runtime memory refused',
  'madvise': 'runtime memory refused', 'pkey_mprotect': 'runtime memory refused',
  'mseal': 'runtime memory refused', 'remap_file_pages': 'runtime memory refused',
  'shmat': 'SHM_REMAP over runtime memory refused (EINVAL); never patched',
  'readlink': '/proc/self/exe names the program', 'readlinkat': '/proc/self/exe names the program',
  'rt_sigpending': 'host asked only for signals the program blocks (they wait there for signalfd)',
  'rt_sigtimedwait': 'signals waiting in the runtime first, then the host (blocking window)',
  'kill': 'host; signals it sends its own process queue as the process\'s',
  'rt_sigqueueinfo': 'host; as kill',
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
  'setuid': 'then forgets cached credentials', 'setgid': 'then forgets cached credentials',
  'setreuid': 'then forgets cached credentials', 'setregid': 'then forgets cached credentials',
  'setresuid': 'then forgets cached credentials', 'setresgid': 'then forgets cached credentials',
  'setfsuid': 'then forgets cached credentials', 'setfsgid': 'then forgets cached credentials',
  'setgroups': 'then forgets cached credentials', 'sethostname': 'then forgets the cached uname',
  'setdomainname': 'then forgets the cached uname', 'setrlimit': 'then forgets the cached limit',
  'prctl': 'PR_SET_SYSCALL_USER_DISPATCH refused; PR_SET/GET_PDEATHSIG emulated',
  'getpgrp': 'cached once exec\'d (before that the parent may move us)', 'getpgid': 'own group cached once exec\'d',
  'getsid': 'own session cached', 'getcpu': 'rdpid/rdtscp (TSC_AUX)',
  'setpgid': 'then forgets the cached group and session', 'setsid': 'then forgets the cached group and session',
}
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

def serve(name):
    if name in EMULATED: return f'Serve::Emulated(sys::{EMULATED[name]})'
    if name in MEDIATED: return f'Serve::Mediated(sys::{MEDIATED[name]})'
    if name in OBSOLETE: return 'Serve::Unsupported'
    if name in UNSUPPORTED: return 'Serve::Unsupported'
    if name in BLOCKING: return f'Serve::HostBlocking {{ restart: {"true" if BLOCKING[name] else "false"} }}'
    return 'Serve::Host'

def note(name):
    if name in OBSOLETE: return 'obsolete: Linux returns ENOSYS too'
    if name in UNSUPPORTED: return UNSUPPORTED[name]
    if name in NOTES: return NOTES[name]
    if name in BLOCKING: return 'may block: runs in the interruptible window'
    return ''

out = ['''// @generated by tools/gen_table.py: edit that script, not this file.
//! The syscall table: for every x86-64 system call, its number, name, how
//! picos serves it, how `--trace` prints its arguments, and a note.
//! `picos syscalls` prints it; `sys::dispatch` routes through it.
#![deny(unsafe_code)]

use crate::sys;
use crate::table_types::{Serve, SyscallDef, MAX_NR};

/// Every x86-64 system call picos knows, sorted by number.
pub static TABLE: &[SyscallDef] = &DEFS;

/// Table index by syscall number (`u16::MAX`: not in the table), so the
/// dispatcher finds a row with one load.
pub static INDEX: [u16; MAX_NR] = build_index(&DEFS);

const fn build_index(defs: &[SyscallDef]) -> [u16; MAX_NR] {
    let mut idx = [u16::MAX; MAX_NR];
    let mut i = 0;
    while i < defs.len() {
        idx[defs[i].nr as usize] = i as u16;
        i += 1;
    }
    idx
}

// A const (not a static) so that `build_index` can read it at compile time.
#[allow(clippy::large_const_arrays)]
const DEFS: [SyscallDef; COUNT] = [
''']
for nr in sorted(calls):
    name = calls[nr]
    args = ARGS.get(name, 'xxxxxx')
    out.append(f'    SyscallDef {{ nr: {nr}, name: "{name}", serve: {serve(name)}, args: "{args}", note: "{note(name)}" }},\n')
out.append('];\n')
out.append(f'\nconst COUNT: usize = {len(calls)};\n')
pathlib.Path('crates/picos-rt/src/table.rs').write_text(''.join(out))
print(len(calls), 'calls')
