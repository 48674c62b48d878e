//! `--trace`: one strace-style line per system call, e.g.
//! `[1234] openat(AT_FDCWD, "/etc/passwd", 0x80000, 0o0) = 3 <host>`.
#![deny(unsafe_code)]

use crate::diag::log::LineBuf;
use crate::host::errno::Errno;
use crate::kernel::thread::Thread;
use crate::mm::user;
use crate::sys::def::SyscallDef;
use crate::sys::SysResult;
use core::fmt::Write;

/// How a call was served, for `--trace`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Served {
    Emulated,
    Mediated,
    Host,
    Unsupported,
}

impl Served {
    pub fn name(self) -> &'static str {
        match self {
            Served::Emulated => "emulated",
            Served::Mediated => "mediated",
            Served::Host => "host",
            Served::Unsupported => "enosys",
        }
    }
}

const STR_MAX: usize = 64;

/// The first half of a trace line, captured before the call runs (its
/// string arguments may be overwritten by the call).
pub struct Pre {
    line: LineBuf,
}

fn push_arg(b: &mut LineBuf, kind: u8, v: usize) {
    let _ = match kind {
        b'd' if v >> 32 == 0 => write!(b, "{}", v as u32 as i32),
        b'd' => write!(b, "{}", v as i64),
        b'u' => write!(b, "{}", v),
        b'o' => write!(b, "0o{:o}", v),
        b'f' if v as i32 == -100 => b.write_str("AT_FDCWD"),
        b'f' => write!(b, "{}", v as i32),
        b'g' => write!(b, "{}", signal_name(v as i32)),
        b's' => {
            if v == 0 {
                b.write_str("NULL")
            } else {
                match user::read_cstr(v, 4096) {
                    Ok(s) => {
                        let _ = b.write_char('"');
                        b.push_escaped(&s, STR_MAX);
                        b.write_char('"')
                    }
                    Err(_) => write!(b, "{:#x}", v),
                }
            }
        }
        b'a' => push_array(b, v),
        b'p' if v == 0 => b.write_str("NULL"),
        _ => write!(b, "{:#x}", v),
    };
}

fn push_array(b: &mut LineBuf, v: usize) -> core::fmt::Result {
    if v == 0 {
        return b.write_str("NULL");
    }
    b.write_char('[')?;
    for i in 0..8 {
        let Ok(p) = user::read::<usize>(v + i * 8) else {
            return write!(b, "{:#x}]", v);
        };
        if p == 0 {
            return b.write_char(']');
        }
        if i > 0 {
            b.write_str(", ")?;
        }
        push_arg(b, b's', p);
    }
    b.write_str(", ...]")
}

/// Signal names for traces.
pub fn signal_name(sig: i32) -> &'static str {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    if (0..32).contains(&sig) {
        NAMES[sig as usize]
    } else if (32..=64).contains(&sig) {
        "SIGRT"
    } else {
        "?"
    }
}

impl Pre {
    pub fn capture(t: &Thread, nr: usize, def: Option<&SyscallDef>, args: &[usize; 6]) -> Pre {
        let mut b = LineBuf::new();
        let _ = write!(b, "[{}] ", t.tid());
        match def {
            Some(d) => {
                let _ = b.write_str(d.name);
                let _ = b.write_char('(');
                for (i, k) in d.args.bytes().enumerate() {
                    if i > 0 {
                        let _ = b.write_str(", ");
                    }
                    push_arg(&mut b, k, args[i]);
                }
                let _ = b.write_char(')');
                if matches!(d.name, "execve" | "execveat" | "exit" | "exit_group") {
                    let _ = b.write_str(" = ? <emulated>\n");
                    b.flush();
                }
            }
            None => {
                let _ = write!(
                    b,
                    "syscall_{}({:#x}, {:#x}, {:#x}, ...)",
                    nr, args[0], args[1], args[2]
                );
            }
        }
        Pre { line: b }
    }

    pub fn finish(mut self, res: &SysResult, served: Served, keep_regs: bool) {
        let b = &mut self.line;
        if b.as_bytes().is_empty() {
            return; // already printed (calls that do not return)
        }
        let _ = match res {
            _ if keep_regs => b.write_str(" = ?"),
            Ok(v) if *v > 0xffff => write!(b, " = {:#x}", v),
            Ok(v) => write!(b, " = {}", v),
            Err(e) => write!(b, " = -1 {} ({})", e.name(), Errno::description(*e)),
        };
        let _ = writeln!(b, " <{}>", served.name());
        b.flush();
    }
}
