//! Loading a program into the picoprocess: ELF executables (static or
//! dynamic, PIE or not) with their ELF interpreter, and `#!` scripts; then
//! the initial stack (argv, envp, auxv) as Linux builds it.
//!
//! # Safety
//! Mapping segments with `MAP_FIXED` replaces memory; the loader only does so
//! inside ranges it reserved itself (or, for non-PIE executables, at the
//! addresses the file demands, after checking they are not the runtime's).
#![deny(unsafe_code)]

use crate::host;
use crate::host::errno::Errno;
use crate::mm::runtime::{
    self, page_down, page_up, MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_PRIVATE,
    PROT_READ, PROT_WRITE,
};
use crate::mm::user;
use alloc::vec;
use alloc::vec::Vec;
use object::elf::{FileHeader64, ProgramHeader64};
use object::LittleEndian as LE;

const EM_X86_64: u16 = 62;
const ET_EXEC: u16 = 2;
const ET_DYN: u16 = 3;
const PT_LOAD: u32 = 1;
const PT_INTERP: u32 = 3;
const PT_PHDR: u32 = 6;
const PF_X: u32 = 1;
const PF_W: u32 = 2;
const PF_R: u32 = 4;
const O_NONBLOCK: i32 = 0o4000;
const X_OK: i32 = 1;
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
/// newfstatat(2).
/// Linux reads this much of a file to decide how to run it.
const BINPRM_BUF_SIZE: usize = 256;
/// How many `#!` rewrites Linux allows in one execve: `exec_binprm` runs
/// the format handlers for depths 0 to 5 and fails with ELOOP at depth 6,
/// so five nested scripts run and six do not.
pub const MAX_SCRIPT_DEPTH: usize = 5;
/// Linux's limit on the length of an ELF interpreter path (PATH_MAX).
const MAX_INTERP_PATH: usize = 4096;
/// Where Linux puts PIE executables (ELF_ET_DYN_BASE for 47-bit address spaces).
const ET_DYN_BASE: usize = 0x5555_5555_4000;

/// Why a file cannot be run, with the errno execve(2) gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// The file (or a `#!` interpreter) could not be opened: carries the errno.
    Open(Errno),
    /// Not executable: no execute permission, or not a regular file.
    NotExecutable(Errno),
    /// Neither an ELF file nor a `#!` script (ENOEXEC).
    UnknownFormat,
    /// An ELF file for another machine or class (ENOEXEC).
    WrongArch,
    /// A malformed ELF file (ENOEXEC).
    BadElf(&'static str),
    /// The ELF interpreter (PT_INTERP) is not an x86-64 ELF file with
    /// program headers (ELIBBAD, as Linux's binfmt_elf).
    BadInterp(&'static str),
    /// The ELF interpreter is shorter than an ELF header (EIO, as Linux,
    /// whose read of the interpreter's header comes up short).
    ShortInterp,
    /// Too many levels of `#!` interpreters (ELOOP).
    TooManyInterpreters,
    /// Mapping the program failed.
    Map(Errno),
}

impl ExecError {
    pub fn errno(self) -> Errno {
        match self {
            ExecError::Open(e) | ExecError::NotExecutable(e) | ExecError::Map(e) => e,
            ExecError::UnknownFormat | ExecError::WrongArch | ExecError::BadElf(_) => {
                Errno::ENOEXEC
            }
            ExecError::BadInterp(_) => Errno::ELIBBAD,
            ExecError::ShortInterp => Errno::EIO,
            ExecError::TooManyInterpreters => Errno::ELOOP,
        }
    }

    /// The exit status a shell gives a program it could not run: 127 when
    /// the file is not there, else 126.
    pub fn exit_status(&self) -> i32 {
        if matches!(self, ExecError::Open(Errno::ENOENT)) {
            127
        } else {
            126
        }
    }

    /// The reason, in words a user can act on.
    pub fn reason(self) -> &'static str {
        match self {
            ExecError::Open(Errno::ENOENT) => "no such file or directory",
            ExecError::Open(Errno::EACCES) => "permission denied",
            ExecError::Open(_) => "cannot open the file",
            ExecError::NotExecutable(Errno::EACCES) => {
                "not an executable file (no execute permission, or not a regular file)"
            }
            ExecError::NotExecutable(_) => "not executable",
            ExecError::UnknownFormat => "not an ELF executable or a #! script",
            ExecError::WrongArch => "an ELF file, but not an x86-64 (64-bit) executable",
            ExecError::BadElf(why) => why,
            ExecError::BadInterp(why) => why,
            ExecError::ShortInterp => "too short to be an ELF file",
            ExecError::TooManyInterpreters => {
                "too many levels of #! interpreters (Linux allows 5 nested scripts)"
            }
            ExecError::Map(_) => "cannot map the program into memory",
        }
    }
}

impl From<ExecError> for Errno {
    fn from(e: ExecError) -> Errno {
        e.errno()
    }
}

/// An open file, closed on drop.
struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        let _ = host::close(self.0);
    }
}

fn cstring(path: &[u8]) -> Result<Vec<u8>, ExecError> {
    if path.contains(&0) {
        return Err(ExecError::Open(Errno::EINVAL));
    }
    let mut v = Vec::with_capacity(path.len() + 1);
    v.extend_from_slice(path);
    v.push(0);
    Ok(v)
}

/// stat(2) of a NUL-terminated path (following symlinks).
fn stat_path(cs: &core::ffi::CStr) -> Result<host::Stat, Errno> {
    host::stat(cs)
}

/// Opens a file to execute it, as Linux's `open_exec` does: the file must
/// be a regular file (a directory, FIFO, socket or device gives EACCES
/// without being opened, so a FIFO cannot block us) with execute
/// permission. Returns it with its first [`BINPRM_BUF_SIZE`] bytes (fewer
/// if the file is shorter).
fn open_exec(path: &[u8]) -> Result<(Fd, Vec<u8>), ExecError> {
    // An empty name (`#!` followed by a NUL, a PT_INTERP of "") is, for
    // the kernel's open_exec, the working directory: EACCES, a directory.
    let path: &[u8] = if path.is_empty() { b"." } else { path };
    if crate::kernel::fs::mount::active() {
        let (fd, st) = crate::kernel::fs::walk::open_exec(path).map_err(|(e, not_exec)| {
            if not_exec {
                ExecError::NotExecutable(e)
            } else {
                ExecError::Open(e)
            }
        })?;
        if st.st_mode & S_IFMT != S_IFREG {
            return Err(ExecError::NotExecutable(Errno::EACCES));
        }
        let fd = Fd(fd);
        let head = read_head(fd.0).map_err(ExecError::Open)?;
        return Ok((fd, head));
    }
    let c = cstring(path)?;
    let cs =
        core::ffi::CStr::from_bytes_with_nul(&c).map_err(|_| ExecError::Open(Errno::EINVAL))?;
    let st = stat_path(cs).map_err(ExecError::Open)?;
    if st.st_mode & S_IFMT != S_IFREG {
        return Err(ExecError::NotExecutable(Errno::EACCES));
    }
    // O_NONBLOCK: should the path be replaced by a FIFO after the stat,
    // the open does not wait for a writer (and the fstat below refuses it).
    let fd = Fd(host::openat(
        host::AT_FDCWD,
        cs,
        host::O_RDONLY | host::O_CLOEXEC | O_NONBLOCK,
        0,
    )
    .map_err(ExecError::Open)? as i32);
    let st = host::fstat(fd.0).map_err(ExecError::Open)?;
    if st.st_mode & S_IFMT != S_IFREG {
        return Err(ExecError::NotExecutable(Errno::EACCES));
    }
    host::faccessat(host::AT_FDCWD, cs, X_OK).map_err(ExecError::NotExecutable)?;
    let head = read_head(fd.0).map_err(ExecError::Open)?;
    Ok((fd, head))
}

/// Reads up to [`BINPRM_BUF_SIZE`] bytes from the start of the file, as
/// Linux's `prepare_binprm` does (whatever the file's stated size).
fn read_head(fd: i32) -> Result<Vec<u8>, Errno> {
    let mut head = vec![0u8; BINPRM_BUF_SIZE];
    let mut done = 0;
    while done < head.len() {
        match host::pread(fd, &mut head[done..], done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(done);
    Ok(head)
}

/// A parsed `#!` line: interpreter and optional single argument.
#[derive(Debug, PartialEq, Eq)]
pub struct Shebang {
    pub interp: Vec<u8>,
    pub arg: Option<Vec<u8>>,
}

/// Parses the first line of a script exactly as Linux's binfmt_script
/// (`load_script`, Linux 5.1 and later) does, on the first
/// [`BINPRM_BUF_SIZE`] bytes of the file (zero-padded when it is shorter):
///
/// - the line ends at the first newline, unless a NUL comes first; without
///   one, the whole buffer is the line, and if no space, tab or NUL follows
///   the interpreter's name in it, the name may be truncated: ENOEXEC;
/// - spaces and tabs before the line's end are dropped;
/// - the interpreter is the first word (ended by a space, tab or NUL);
/// - the optional argument is the rest of the line after the spaces and
///   tabs that follow the interpreter, up to a NUL (one argument, inner
///   spaces kept), unless the interpreter's name ended with a NUL.
///
/// Returns `None` if the file is not a script.
pub fn parse_shebang(head: &[u8]) -> Option<Result<Shebang, ExecError>> {
    if !head.starts_with(b"#!") {
        return None;
    }
    let mut buf = [0u8; BINPRM_BUF_SIZE];
    let n = head.len().min(BINPRM_BUF_SIZE);
    buf[..n].copy_from_slice(&head[..n]);
    let buf_end = BINPRM_BUF_SIZE - 1;
    let spacetab = |c: u8| c == b' ' || c == b'\t';
    // First index in first..=last (as the kernel's helpers, inclusive).
    let next_non_spacetab =
        |buf: &[u8], first: usize, last: usize| (first..=last).find(|&i| !spacetab(buf[i]));
    let next_terminator = |buf: &[u8], first: usize, last: usize| {
        (first..=last).find(|&i| spacetab(buf[i]) || buf[i] == 0)
    };
    // strnchr(buf, size, '\n') stops at a NUL.
    let newline = buf
        .iter()
        .take_while(|&&c| c != 0)
        .position(|&c| c == b'\n');
    let mut i_end = match newline {
        Some(i) => i,
        None => {
            let Some(i) = next_non_spacetab(&buf, 2, buf_end) else {
                return Some(Err(ExecError::UnknownFormat));
            };
            if next_terminator(&buf, i, buf_end).is_none() {
                return Some(Err(ExecError::UnknownFormat));
            }
            buf_end
        }
    };
    // buf[1] is '!', so this stops by index 2.
    while spacetab(buf[i_end - 1]) {
        i_end -= 1;
    }
    let i_name = match next_non_spacetab(&buf, 2, i_end) {
        Some(i) if i != i_end => i,
        _ => return Some(Err(ExecError::UnknownFormat)),
    };
    let i_sep = next_terminator(&buf, i_name, i_end);
    let i_arg = match i_sep {
        Some(sep) if buf[sep] != 0 => next_non_spacetab(&buf, sep, i_end),
        _ => None,
    };
    buf[i_end] = 0;
    if let (Some(_), Some(sep)) = (i_arg, i_sep) {
        buf[sep] = 0;
    }
    let c_str = |from: usize| {
        let len = buf[from..].iter().position(|&c| c == 0).unwrap_or(0);
        buf[from..from + len].to_vec()
    };
    Some(Ok(Shebang {
        interp: c_str(i_name),
        arg: i_arg.map(c_str),
    }))
}

fn parse_ehdr(head: &[u8]) -> Result<&FileHeader64<LE>, ExecError> {
    if head.len() < 4 || &head[..4] != b"\x7fELF" {
        return Err(ExecError::UnknownFormat);
    }
    if head.len() < 64 || head[4] != 2 || head[5] != 1 {
        return Err(ExecError::WrongArch);
    }
    let (h, _) = object::pod::from_bytes::<FileHeader64<LE>>(head)
        .map_err(|_| ExecError::BadElf("truncated ELF header"))?;
    if h.e_machine.get(LE) != EM_X86_64 {
        return Err(ExecError::WrongArch);
    }
    let ty = h.e_type.get(LE);
    if ty != ET_EXEC && ty != ET_DYN {
        return Err(ExecError::BadElf(
            "an ELF file that is not an executable (object file or core dump?)",
        ));
    }
    if h.e_phentsize.get(LE) as usize != core::mem::size_of::<ProgramHeader64<LE>>() {
        return Err(ExecError::BadElf(
            "ELF program headers of an unexpected size",
        ));
    }
    let n = h.e_phnum.get(LE) as usize;
    if n == 0 || n > 65536 / 56 {
        return Err(ExecError::BadElf(
            "ELF file with no (or too many) program headers",
        ));
    }
    Ok(h)
}

fn read_phdrs(fd: i32, h: &FileHeader64<LE>) -> Result<Vec<ProgramHeader64<LE>>, ExecError> {
    let n = h.e_phnum.get(LE) as usize;
    let mut buf = vec![0u8; n * 56];
    host::pread_exact(fd, &mut buf, h.e_phoff.get(LE))
        .map_err(|_| ExecError::BadElf("truncated ELF program headers"))?;
    let (ph, _) = object::pod::slice_from_bytes::<ProgramHeader64<LE>>(&buf, n)
        .map_err(|_| ExecError::BadElf("bad ELF program headers"))?;
    Ok(ph.to_vec())
}

/// The PT_INTERP path of an ELF file, checked as Linux's binfmt_elf does:
/// 2 to PATH_MAX bytes, the last one NUL (else ENOEXEC).
fn read_interp(fd: i32, phdrs: &[ProgramHeader64<LE>]) -> Result<Option<Vec<u8>>, ExecError> {
    let Some(p) = phdrs.iter().find(|p| p.p_type.get(LE) == PT_INTERP) else {
        return Ok(None);
    };
    let size = p.p_filesz.get(LE) as usize;
    if !(2..=MAX_INTERP_PATH).contains(&size) {
        return Err(ExecError::BadElf("bad ELF interpreter path (PT_INTERP)"));
    }
    let mut buf = vec![0u8; size];
    host::pread_exact(fd, &mut buf, p.p_offset.get(LE))
        .map_err(|_| ExecError::BadElf("truncated ELF interpreter path (PT_INTERP)"))?;
    if buf[size - 1] != 0 {
        return Err(ExecError::BadElf(
            "ELF interpreter path (PT_INTERP) not NUL-terminated",
        ));
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    buf.truncate(end);
    Ok(Some(buf))
}

/// An opened and checked ELF interpreter.
struct Interp {
    fd: Fd,
    header: FileHeader64<LE>,
    phdrs: Vec<ProgramHeader64<LE>>,
}

/// Opens and checks the ELF interpreter at `path` in the order and with
/// the errors of Linux's binfmt_elf: open_exec's (ENOENT, EACCES...), a
/// header read that comes up short (EIO), then not ELF, not x86-64, or
/// unreadable program headers (ELIBBAD). Linux checks the interpreter's
/// type (ET_EXEC or ET_DYN) only after the point of no return; so does
/// [`load`], but [`check_executable`] reports it here as ELIBBAD.
fn open_interp(path: &[u8]) -> Result<Interp, ExecError> {
    let (fd, head) = open_exec(path)?;
    if head.len() < core::mem::size_of::<FileHeader64<LE>>() {
        return Err(ExecError::ShortInterp);
    }
    let (h, _) =
        object::pod::from_bytes::<FileHeader64<LE>>(&head).map_err(|_| ExecError::ShortInterp)?;
    if h.e_ident.magic != [0x7f, b'E', b'L', b'F'] {
        return Err(ExecError::BadInterp("not an ELF file"));
    }
    if h.e_machine.get(LE) != EM_X86_64 {
        return Err(ExecError::BadInterp("an ELF file, but not for x86-64"));
    }
    let n = h.e_phnum.get(LE) as usize;
    if h.e_phentsize.get(LE) as usize != core::mem::size_of::<ProgramHeader64<LE>>()
        || n == 0
        || n * 56 > 65536
    {
        return Err(ExecError::BadInterp("an ELF file with bad program headers"));
    }
    let phdrs = read_phdrs(fd.0, h)
        .map_err(|_| ExecError::BadInterp("an ELF file with truncated program headers"))?;
    Ok(Interp {
        header: *h,
        fd,
        phdrs,
    })
}

/// How a file in the chain of an exec was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// Named by the `#!` line of this script.
    Shebang(Vec<u8>),
    /// Named by the PT_INTERP of this ELF file.
    ElfInterp(Vec<u8>),
}

/// Why an exec check failed, and on which file of the chain (the program,
/// a `#!` interpreter, an ELF interpreter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecFailure {
    pub error: ExecError,
    /// The file the error is about.
    pub file: Vec<u8>,
    /// How `file` was reached; `None` for the program itself.
    pub via: Option<Via>,
}

/// Checks that `path` can be executed, as execve(2) would, without loading
/// it: used before the runtime replaces itself, so errors still return to
/// the program (and by the CLI, to explain why a program cannot run).
pub fn check_executable(path: &[u8]) -> Result<(), ExecError> {
    check_executable_chain(path).map_err(|f| f.error)
}

/// Is the file at `path` a `#!` script (it opens and reads as one)?
pub fn is_script(path: &[u8]) -> bool {
    open_exec(path).is_ok_and(|(_, head)| parse_shebang(&head).is_some())
}

/// Would executing `path` change the process's credentials (a set-user-ID
/// or set-group-ID program, or one with file capabilities, at the end of
/// its `#!` chain)? Only the kernel's execve can then run it. True when
/// it cannot be told.
pub fn raises_privileges(path: &[u8]) -> bool {
    const S_ISUID: u32 = 0o4000;
    const S_ISGID_XGRP: u32 = 0o2010;
    let mut path = path.to_vec();
    for _ in 0..=MAX_SCRIPT_DEPTH + 1 {
        let Ok((fd, head)) = open_exec(&path) else {
            return true;
        };
        match parse_shebang(&head) {
            Some(Ok(sb)) => {
                path = sb.interp;
                continue;
            }
            Some(Err(_)) => return true,
            None => {}
        }
        let Ok(st) = host::fstat(fd.0) else {
            return true;
        };
        // (Set-group-ID without group execute is a locking mark, not a
        // privilege.)
        if st.st_mode & S_ISUID != 0 || st.st_mode & S_ISGID_XGRP == S_ISGID_XGRP {
            return true;
        }
        return !matches!(
            host::fgetxattr_size(fd.0, c"security.capability"),
            Err(Errno::ENODATA) | Err(Errno::EOPNOTSUPP)
        );
    }
    true
}

/// [`check_executable`], saying which file of the chain failed.
pub fn check_executable_chain(path: &[u8]) -> Result<(), ExecFailure> {
    let mut path = path.to_vec();
    let mut via = None;
    let fail = |error, file: &[u8], via: &Option<Via>| ExecFailure {
        error,
        file: file.to_vec(),
        via: via.clone(),
    };
    for depth in 0.. {
        // Linux opens each interpreter (in the handler of the previous
        // depth) before it checks the depth.
        let (fd, head) = open_exec(&path).map_err(|e| fail(e, &path, &via))?;
        if depth > MAX_SCRIPT_DEPTH {
            return Err(fail(ExecError::TooManyInterpreters, &path, &via));
        }
        if let Some(sb) = parse_shebang(&head) {
            let sb = sb.map_err(|e| fail(e, &path, &via))?;
            via = Some(Via::Shebang(core::mem::replace(&mut path, sb.interp)));
            continue;
        }
        let check = || {
            let h = parse_ehdr(&head)?;
            let phdrs = read_phdrs(fd.0, h)?;
            if !phdrs.iter().any(|p| p.p_type.get(LE) == PT_LOAD) {
                return Err(ExecError::BadElf("ELF file with nothing to load"));
            }
            read_interp(fd.0, &phdrs)
        };
        let interp = check().map_err(|e| fail(e, &path, &via))?;
        if let Some(interp) = interp {
            let via = Some(Via::ElfInterp(path));
            let i = open_interp(&interp).map_err(|e| fail(e, &interp, &via))?;
            let ty = i.header.e_type.get(LE);
            if ty != ET_EXEC && ty != ET_DYN {
                return Err(fail(
                    ExecError::BadInterp(
                        "an ELF file that is not an executable or a shared library",
                    ),
                    &interp,
                    &via,
                ));
            }
        }
        return Ok(());
    }
    unreachable!("the loop returns")
}

/// A loaded ELF image.
#[derive(Clone, Copy, Debug, Default)]
pub struct Image {
    pub bias: usize,
    pub entry: usize,
    pub phdr: usize,
    pub phnum: usize,
    /// Start of the lowest segment (page-aligned).
    pub low: usize,
    /// End of the highest segment (where the program break starts).
    pub end: usize,
    /// The memory map's code and data bounds as Linux's ELF loader sets
    /// them for an executable (/proc/PID/stat fields 26, 27, 45 and 46):
    /// [`code_data_bounds`].
    pub bounds: [usize; 4],
}

/// Tells the patcher which file the executable segments `loads` (placed at
/// `bias`) map, so that it need not ask the kernel at their first trap
/// (`patch::known`), and, for the executable (`is_main`), which program
/// runs (the known sites are the program's own).
fn note_code_of_file(fd: i32, loads: &[&ProgramHeader64<LE>], bias: usize, is_main: bool) {
    let Ok(st) = host::fstat(fd) else {
        return;
    };
    // The device as /proc's maps give it: major and minor, from the
    // kernel's encoding of st_dev.
    let d = st.st_dev;
    let (major, minor) = ((d >> 8) & 0xfff, (d & 0xff) | ((d >> 12) & 0xf_ff00));
    if is_main {
        crate::patch::note_program(major | minor << 32, st.st_ino);
    }
    for p in loads.iter().filter(|p| p.p_flags.get(LE) & PF_X != 0) {
        let vaddr = p.p_vaddr.get(LE) as usize;
        let start = page_down(bias.wrapping_add(vaddr));
        let end = page_up(bias.wrapping_add(vaddr) + p.p_memsz.get(LE) as usize);
        let base = bias
            .wrapping_add(vaddr)
            .wrapping_sub(p.p_offset.get(LE) as usize);
        crate::patch::note_file_code(start, end, major | minor << 32, st.st_ino, base);
    }
}

/// `start_code`, `end_code`, `start_data` and `end_data` of the segments
/// `loads` placed at `bias`, as Linux's `load_elf_binary` computes them:
/// the code from the lowest start to the highest file end of the
/// executable segments, the data from the highest start of any segment to
/// the highest file end of any.
fn code_data_bounds(loads: &[&ProgramHeader64<LE>], bias: usize) -> [usize; 4] {
    let (mut start_code, mut end_code, mut start_data, mut end_data) = (usize::MAX, 0, 0, 0);
    for p in loads {
        let start = p.p_vaddr.get(LE) as usize;
        let file_end = start.saturating_add(p.p_filesz.get(LE) as usize);
        if p.p_flags.get(LE) & PF_X != 0 {
            start_code = start_code.min(start);
            end_code = end_code.max(file_end);
        }
        start_data = start_data.max(start);
        end_data = end_data.max(file_end);
    }
    if start_code == usize::MAX {
        start_code = 0;
    }
    [start_code, end_code, start_data, end_data].map(|v| v.wrapping_add(bias))
}

fn prot_of(flags: u32) -> i32 {
    (if flags & PF_R != 0 { PROT_READ } else { 0 })
        | (if flags & PF_W != 0 { PROT_WRITE } else { 0 })
        | (if flags & PF_X != 0 {
            runtime::PROT_EXEC
        } else {
            0
        })
}

fn random_pages(max_pages: usize) -> usize {
    // personality(2)'s ADDR_NO_RANDOMIZE (what a debugger sets for the
    // program it starts, and `setarch -R`): no randomization, as Linux.
    const ADDR_NO_RANDOMIZE: usize = 0x0040000;
    if host::personality(0xffff_ffff).is_ok_and(|p| p & ADDR_NO_RANDOMIZE != 0) {
        return 0;
    }
    let mut b = [0u8; 8];
    host::getrandom(&mut b);
    (usize::from_ne_bytes(b) % max_pages) * runtime::PAGE_SIZE
}

fn map_elf(
    fd: i32,
    h: &FileHeader64<LE>,
    phdrs: &[ProgramHeader64<LE>],
    is_main: bool,
) -> Result<Image, ExecError> {
    let loads: Vec<&ProgramHeader64<LE>> = phdrs
        .iter()
        .filter(|p| p.p_type.get(LE) == PT_LOAD)
        .collect();
    let (bias, low, end) = place(h, &loads, is_main)?;
    for p in &loads {
        // As Linux: a non-PIE executable must not overlap anything (it
        // fails with EEXIST), but a non-PIE interpreter replaces whatever
        // is at its addresses (load_elf_interp maps it MAP_FIXED; never the
        // runtime's memory, refused by `place`).
        let fixed = if bias == 0 && is_main {
            MAP_FIXED_NOREPLACE
        } else {
            MAP_FIXED
        };
        map_segment(fd, p, bias, fixed)?;
    }
    note_code_of_file(fd, &loads, bias, is_main);
    Ok(Image {
        bias,
        entry: bias + h.e_entry.get(LE) as usize,
        phdr: phdr_address(h, phdrs, &loads, bias),
        phnum: phdrs.len(),
        low,
        end,
        bounds: code_data_bounds(&loads, bias),
    })
}

/// Where the PT_LOAD segments `loads` go: the bias added to their
/// addresses (0 for a non-PIE executable, which must not touch the
/// runtime's memory; for a PIE, a reservation of their whole span, at a
/// random address for the main program), the start of the first one
/// (page-aligned) and the end of the last one.
fn place(
    h: &FileHeader64<LE>,
    loads: &[&ProgramHeader64<LE>],
    is_main: bool,
) -> Result<(usize, usize, usize), ExecError> {
    let (Some(lo_raw), Some(hi_raw)) = (
        loads.iter().map(|p| p.p_vaddr.get(LE) as usize).min(),
        loads
            .iter()
            .map(|p| (p.p_vaddr.get(LE) + p.p_memsz.get(LE)) as usize)
            .max(),
    ) else {
        return Err(ExecError::BadElf("ELF file with nothing to load"));
    };
    let (lo, hi) = (page_down(lo_raw), page_up(hi_raw));
    if hi <= lo || hi - lo > (1 << 40) {
        return Err(ExecError::BadElf("ELF segments span an impossible range"));
    }
    let span = hi - lo;
    let bias = if h.e_type.get(LE) == ET_EXEC {
        if runtime::owns(lo, span) {
            return Err(ExecError::Map(Errno::ENOMEM));
        }
        0
    } else {
        let hint = if is_main {
            ET_DYN_BASE + random_pages(1 << 16)
        } else {
            0
        };
        let addr = user::reserve(hint, span).map_err(ExecError::Map)?;
        addr - lo
    };
    Ok((bias, bias + lo, bias + hi_raw))
}

/// Maps one PT_LOAD segment at `bias` plus its address (`fixed`:
/// MAP_FIXED or MAP_FIXED_NOREPLACE): its file part from `fd`, the zeroed
/// rest of its last file page, and anonymous pages for the rest of its
/// memory size (.bss).
fn map_segment(fd: i32, p: &ProgramHeader64<LE>, bias: usize, fixed: i32) -> Result<(), ExecError> {
    let (vaddr, memsz, filesz, off) = (
        p.p_vaddr.get(LE) as usize,
        p.p_memsz.get(LE) as usize,
        p.p_filesz.get(LE) as usize,
        p.p_offset.get(LE) as usize,
    );
    if filesz > memsz || (vaddr % runtime::PAGE_SIZE) != (off % runtime::PAGE_SIZE) {
        return Err(ExecError::BadElf("misaligned ELF segment"));
    }
    let prot = prot_of(p.p_flags.get(LE));
    let start = bias + vaddr;
    let page = page_down(start);
    if filesz > 0 {
        let len = page_up(start + filesz) - page;
        // Inside our reservation (PIE) or a free range (non-PIE).
        user::map_fixed(
            page,
            len,
            prot | (PROT_WRITE * (memsz > filesz) as i32),
            MAP_PRIVATE | fixed,
            fd,
            (off - (start - page)) as u64,
        )
        .map_err(ExecError::Map)?;
    }
    if memsz <= filesz {
        return Ok(());
    }
    let zero_start = start + filesz;
    let zero_page_end = page_up(zero_start);
    if filesz > 0 && zero_start != zero_page_end {
        let zeros = vec![0u8; zero_page_end - zero_start];
        user::copy_out(zero_start, &zeros).map_err(ExecError::Map)?;
    }
    if filesz > 0 {
        // The segment's own protection again.
        user::protect(page, zero_page_end - page, prot).map_err(ExecError::Map)?;
    }
    let anon_start = if filesz > 0 { zero_page_end } else { page };
    let anon_end = page_up(start + memsz);
    if anon_end > anon_start {
        user::map_fixed(
            anon_start,
            anon_end - anon_start,
            prot,
            MAP_PRIVATE | MAP_ANONYMOUS | fixed,
            -1,
            0,
        )
        .map_err(ExecError::Map)?;
    }
    Ok(())
}

/// The address of the program headers in memory (AT_PHDR): PT_PHDR's, or
/// where a loaded segment holds the file's program headers (0 if none).
fn phdr_address(
    h: &FileHeader64<LE>,
    phdrs: &[ProgramHeader64<LE>],
    loads: &[&ProgramHeader64<LE>],
    bias: usize,
) -> usize {
    let phoff = h.e_phoff.get(LE) as usize;
    phdrs
        .iter()
        .find(|p| p.p_type.get(LE) == PT_PHDR)
        .map(|p| bias + p.p_vaddr.get(LE) as usize)
        .or_else(|| {
            loads.iter().find_map(|p| {
                let (o, fsz) = (p.p_offset.get(LE) as usize, p.p_filesz.get(LE) as usize);
                (phoff >= o && phoff < o + fsz)
                    .then(|| bias + p.p_vaddr.get(LE) as usize + (phoff - o))
            })
        })
        .unwrap_or(0)
}

/// What the loader produced: where to start, and the auxv values it decides.
#[derive(Debug, Default)]
pub struct Loaded {
    pub main: Image,
    pub interp: Option<Image>,
    /// The argv after `#!` rewriting.
    pub argv: Vec<Vec<u8>>,
    /// Where the program starts (the interpreter's entry if it has one).
    pub start: usize,
    /// Canonical path of the ELF file loaded (what Linux shows as
    /// /proc/self/exe: symlinks resolved; for a script, its interpreter).
    pub real_path: Vec<u8>,
}

/// Loads the program at `path` (following `#!` lines) into memory. `name`
/// is the path as the caller gave it (`./script`), which the interpreter of
/// a script gets, as Linux passes execve's filename.
pub fn load(path: &[u8], name: &[u8], argv: Vec<Vec<u8>>) -> Result<Loaded, ExecError> {
    let mut path = path.to_vec();
    let mut name = name.to_vec();
    let mut argv = argv;
    for depth in 0.. {
        let (fd, head) = open_exec(&path)?;
        if depth > MAX_SCRIPT_DEPTH {
            return Err(ExecError::TooManyInterpreters);
        }
        if let Some(sb) = parse_shebang(&head) {
            let sb = sb?;
            let mut nargv = vec![sb.interp.clone()];
            if let Some(a) = sb.arg {
                nargv.push(a);
            }
            nargv.push(core::mem::take(&mut name));
            nargv.extend(argv.into_iter().skip(1));
            argv = nargv;
            name = sb.interp.clone();
            path = sb.interp;
            continue;
        }
        let h = parse_ehdr(&head)?;
        let phdrs = read_phdrs(fd.0, h)?;
        // As Linux: the interpreter is opened and checked before anything
        // is mapped.
        let interp = match read_interp(fd.0, &phdrs)? {
            Some(ip) => Some((open_interp(&ip)?, ip)),
            None => None,
        };
        let main = map_elf(fd.0, h, &phdrs, true)?;
        let interp = match interp {
            Some((i, ip)) => {
                let ty = i.header.e_type.get(LE);
                if ty != ET_EXEC && ty != ET_DYN {
                    return Err(ExecError::BadInterp(
                        "an ELF file that is not an executable or a shared library",
                    ));
                }
                if i.phdrs.iter().any(|p| p.p_type.get(LE) == PT_INTERP) {
                    // Linux does not follow an interpreter's own PT_INTERP:
                    // the interpreter runs without one (and a dynamically
                    // linked program run that way usually crashes).
                    crate::log!(
                        Warning,
                        "the ELF interpreter {} of {} has an interpreter (PT_INTERP) of its own, \
                         which Linux ignores: it runs without it",
                        crate::diag::log::Bytes(&ip),
                        crate::diag::log::Bytes(&path)
                    );
                }
                Some(map_elf(i.fd.0, &i.header, &i.phdrs, false)?)
            }
            None => None,
        };
        let start = interp.map_or(main.entry, |i| i.entry);
        let real_path = crate::kernel::fs::fd_path(fd.0).unwrap_or_else(|| path.clone());
        return Ok(Loaded {
            main,
            interp,
            argv,
            start,
            real_path,
        });
    }
    unreachable!("the loop returns")
}

/// [`load`] with descriptors of the program's table, or, where that table
/// has no room (a program may exec with a full table, which needs no
/// descriptor natively), of a table of the runtime's own that holds the
/// runtime's descriptors `held` at the same numbers (a transient task,
/// `host::fds::with_own_fds_keeping`). Nothing is mapped before every file
/// is open, so the retry starts clean. The program's table is cheaper (no
/// transient task, ~50 µs), and the mappings are then made by this
/// process, where perf sees them.
pub fn load_in_any_table(
    path: &[u8],
    name: &[u8],
    argv: &[Vec<u8>],
    held: &[i32],
) -> Result<Loaded, ExecError> {
    match load(path, name, argv.to_vec()) {
        Err(ExecError::Open(Errno::EMFILE)) => {
            host::fds::with_own_fds_keeping(held, || load(path, name, argv.to_vec()))
                .unwrap_or_else(|e| Err(ExecError::Open(e)))
        }
        r => r,
    }
}

pub const AT_NULL: u64 = 0;
pub const AT_EXECFD: u64 = 2;
pub const AT_PHDR: u64 = 3;
pub const AT_PHENT: u64 = 4;
pub const AT_PHNUM: u64 = 5;
pub const AT_PAGESZ: u64 = 6;
pub const AT_BASE: u64 = 7;
pub const AT_FLAGS: u64 = 8;
pub const AT_ENTRY: u64 = 9;
pub const AT_PLATFORM: u64 = 15;
pub const AT_HWCAP: u64 = 16;
pub const AT_SECURE: u64 = 23;
pub const AT_RANDOM: u64 = 25;
pub const AT_HWCAP2: u64 = 26;
pub const AT_EXECFN: u64 = 31;
pub const AT_SYSINFO_EHDR: u64 = 33;

/// The program's auxiliary vector: the host's entries (but AT_EXECFD, and
/// AT_FLAGS 0), with the program's own values for the entries the loader
/// decides (added where the host has none), ending with AT_NULL.
fn program_auxv(
    loaded: &Loaded,
    host_auxv: &[(u64, u64)],
    execfn_p: usize,
    random_p: usize,
    platform_p: usize,
) -> Vec<(u64, u64)> {
    let m = &loaded.main;
    let overrides: [(u64, u64); 8] = [
        (AT_PHDR, m.phdr as u64),
        (AT_PHENT, 56),
        (AT_PHNUM, m.phnum as u64),
        (AT_BASE, loaded.interp.map_or(0, |i| i.bias as u64)),
        (AT_ENTRY, m.entry as u64),
        (AT_EXECFN, execfn_p as u64),
        (AT_RANDOM, random_p as u64),
        (AT_PLATFORM, platform_p as u64),
    ];
    let mut auxv: Vec<(u64, u64)> = Vec::with_capacity(host_auxv.len() + 9);
    for &(k, v) in host_auxv {
        if k == AT_NULL || k == AT_EXECFD {
            continue;
        }
        let v = overrides.iter().find(|o| o.0 == k).map_or(v, |o| o.1);
        auxv.push((k, if k == AT_FLAGS { 0 } else { v }));
    }
    for o in overrides {
        if !auxv.iter().any(|a| a.0 == o.0) {
            auxv.push(o);
        }
    }
    auxv.push((AT_NULL, 0));
    auxv
}

/// Builds the program's initial stack below `top` (as Linux's
/// create_elf_tables does) and returns the stack pointer to start with.
///
/// `reuse`: where the same argv and envp strings already lie back to back
/// (the kernel's copy, which /proc/PID/cmdline shows): the program's argv
/// and envp point there instead of at a copy, so that a program that
/// rewrites them in place is seen doing so, as natively.
///
/// `in_place`: the process's kernel-side memory map still describes an
/// older program (an execve in place): its argument and environment
/// ranges (/proc/PID/cmdline, environ) are set to the new strings too.
pub fn build_stack(
    top: usize,
    loaded: &Loaded,
    envp: &[Vec<u8>],
    execfn: &[u8],
    host_auxv: &[(u64, u64)],
    reuse: Option<usize>,
    in_place: bool,
) -> Result<usize, Errno> {
    let mut sp = top & !15;
    let push_bytes = |sp: &mut usize, b: &[u8], nul: bool| -> Result<usize, Errno> {
        *sp -= b.len() + nul as usize;
        user::copy_out(*sp, b)?;
        if nul {
            user::copy_out(*sp + b.len(), &[0])?;
        }
        Ok(*sp)
    };
    // As Linux: the argv strings, then the envp strings, then the file name,
    // back to back at the top of the stack (setproctitle-style code relies on it).
    let mut block: Vec<u8> = Vec::new();
    let mut offsets = Vec::with_capacity(loaded.argv.len() + envp.len());
    for s in loaded.argv.iter().chain(envp.iter()) {
        offsets.push(block.len());
        block.extend_from_slice(s);
        block.push(0);
    }
    let (block_p, execfn_p) = match reuse {
        Some(at) => {
            let execfn_p = push_bytes(&mut sp, execfn, true)?;
            (at, execfn_p)
        }
        None => {
            let execfn_off = block.len();
            block.extend_from_slice(execfn);
            block.push(0);
            let block_p = push_bytes(&mut sp, &block, false)?;
            (block_p, block_p + execfn_off)
        }
    };
    let argv_p: Vec<usize> = offsets[..loaded.argv.len()]
        .iter()
        .map(|o| block_p + o)
        .collect();
    let envp_p: Vec<usize> = offsets[loaded.argv.len()..]
        .iter()
        .map(|o| block_p + o)
        .collect();
    sp &= !15;
    let platform_p = push_bytes(&mut sp, b"x86_64", true)?;
    let mut rnd = [0u8; 16];
    host::getrandom(&mut rnd);
    sp &= !15;
    let random_p = push_bytes(&mut sp, &rnd, false)?;
    let auxv = program_auxv(loaded, host_auxv, execfn_p, random_p, platform_p);
    let words = 1 + argv_p.len() + 1 + envp_p.len() + 1 + auxv.len() * 2;
    sp &= !15;
    if words % 2 == 1 {
        sp -= 8;
    }
    sp -= words * 8;
    let mut table: Vec<u64> = Vec::with_capacity(words);
    table.push(argv_p.len() as u64);
    table.extend(argv_p.iter().map(|&p| p as u64));
    table.push(0);
    table.extend(envp_p.iter().map(|&p| p as u64));
    table.push(0);
    for (k, v) in auxv {
        table.push(k);
        table.push(v);
    }
    user::copy_out(sp, user::slice_bytes(&table))?;
    // /proc/PID/auxv shows the program's vector, not the one the kernel
    // gave the runtime (a debugger finds the program's entry and headers
    // there), and /proc/PID/stat the program's code, data, break and stack
    // addresses; /proc/PID/cmdline and environ its strings.
    let auxv_words = &table[words - (words - 3 - argv_p.len() - envp_p.len())..];
    // The strings' ranges: argv's, then envp's, back to back. (With
    // `reuse`, the kernel's strings: the last of them, the launch
    // configuration, is past `env_end`.)
    let arg_start = block_p as u64;
    let env_start = arg_start + offsets.get(loaded.argv.len()).map_or(block.len(), |&o| o) as u64;
    let env_end = if envp.is_empty() {
        env_start
    } else {
        arg_start + (offsets[offsets.len() - 1] + envp[envp.len() - 1].len() + 1) as u64
    };
    let [start_code, end_code, start_data, end_data] = loaded.main.bounds.map(|v| v as u64);
    // No break taken yet; argv's strings end where envp's start.
    let start_brk = runtime::brk_start() as u64;
    let brk = start_brk;
    let (start_stack, arg_end) = (sp as u64, env_start);
    // struct prctl_mm_map's order.
    let map = [
        start_code,
        end_code,
        start_data,
        end_data,
        start_brk,
        brk,
        start_stack,
        arg_start,
        arg_end,
        env_start,
        env_end,
    ];
    if let Err(e) = host::set_mm_map(&map, auxv_words) {
        if in_place {
            crate::log!(
                Debug,
                "/proc/PID/cmdline, environ, stat and auxv stay the old program's: {}",
                e
            );
        } else if let Err(e) = host::set_mm_auxv(auxv_words) {
            crate::log!(
                Debug,
                "/proc/PID/auxv, environ and stat stay the runtime's: {}",
                e
            );
        }
    }
    Ok(sp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_and_data_bounds_as_linux_sets_them() {
        use object::{U32, U64};
        let seg = |flags: u32, vaddr: u64, filesz: u64, memsz: u64| ProgramHeader64::<LE> {
            p_type: U32::new(LE, PT_LOAD),
            p_flags: U32::new(LE, flags),
            p_offset: U64::new(LE, vaddr),
            p_vaddr: U64::new(LE, vaddr),
            p_paddr: U64::new(LE, vaddr),
            p_filesz: U64::new(LE, filesz),
            p_memsz: U64::new(LE, memsz),
            p_align: U64::new(LE, 0x1000),
        };
        // A PIE as lld and ld lay it out: headers, code, read-only data,
        // data with its .bss (memsz beyond filesz).
        let segs = [
            seg(PF_R, 0, 0x8a0, 0x8a0),
            seg(PF_R | PF_X, 0x1000, 0x155, 0x155),
            seg(PF_R, 0x2000, 0xf4, 0xf4),
            seg(PF_R | PF_W, 0x3db0, 0x268, 0x2000),
        ];
        let loads: Vec<&ProgramHeader64<LE>> = segs.iter().collect();
        // The code: the executable segment's file bytes; the data: from the
        // last segment's start to the end of its file bytes (/proc/PID/stat
        // of such a program natively).
        assert_eq!(
            code_data_bounds(&loads, 0x5555_0000_0000),
            [
                0x5555_0000_1000,
                0x5555_0000_1155,
                0x5555_0000_3db0,
                0x5555_0000_4018
            ]
        );
        // No executable segment: no code.
        assert_eq!(code_data_bounds(&loads[2..], 0)[..2], [0, 0]);
    }

    #[test]
    fn auxv_takes_the_hosts_with_the_programs_values() {
        let loaded = Loaded {
            main: Image {
                bias: 0x1000,
                entry: 0x1100,
                phdr: 0x1040,
                phnum: 9,
                low: 0x1000,
                end: 0x3000,
                bounds: [0x1100, 0x1200, 0x2000, 0x2100],
            },
            interp: None,
            argv: Vec::new(),
            start: 0x1100,
            real_path: Vec::new(),
        };
        let host = [
            (AT_HWCAP2, 2),
            (AT_ENTRY, 0xdead),
            (AT_EXECFD, 5),
            (AT_FLAGS, 7),
            (AT_NULL, 0),
        ];
        let a = program_auxv(&loaded, &host, 0x7000, 0x7100, 0x7200);
        let get = |k| a.iter().find(|e| e.0 == k).map(|e| e.1);
        assert_eq!(get(AT_HWCAP2), Some(2)); // the host's, kept
        assert_eq!(get(AT_ENTRY), Some(0x1100)); // the program's, in the host's place
        assert_eq!(a.iter().position(|e| e.0 == AT_ENTRY), Some(1));
        assert_eq!(get(AT_EXECFD), None);
        assert_eq!(get(AT_FLAGS), Some(0));
        assert_eq!(get(AT_BASE), Some(0));
        assert_eq!(
            (get(AT_PHDR), get(AT_PHNUM), get(AT_PHENT)),
            (Some(0x1040), Some(9), Some(56))
        );
        assert_eq!(
            (get(AT_EXECFN), get(AT_RANDOM), get(AT_PLATFORM)),
            (Some(0x7000), Some(0x7100), Some(0x7200))
        );
        assert_eq!(a.last(), Some(&(AT_NULL, 0)));
        assert_eq!(a.iter().filter(|e| e.0 == AT_NULL).count(), 1);
    }

    #[test]
    fn shebang_forms() {
        let s = parse_shebang(b"#!/bin/sh\necho").unwrap().unwrap();
        assert_eq!(
            s,
            Shebang {
                interp: b"/bin/sh".to_vec(),
                arg: None
            }
        );
        let s = parse_shebang(b"#! /usr/bin/env  python3 -u \nx")
            .unwrap()
            .unwrap();
        assert_eq!(s.interp, b"/usr/bin/env");
        assert_eq!(s.arg.as_deref(), Some(&b"python3 -u"[..]));
        assert!(parse_shebang(b"#!\n").unwrap().is_err());
        assert!(parse_shebang(b"\x7fELF").is_none());
        let s = parse_shebang(b"#!/bin/busybox\tsh").unwrap().unwrap();
        assert_eq!(s.arg.as_deref(), Some(&b"sh"[..]));
    }

    /// binfmt_script's rules for NULs and for lines longer than the
    /// 256-byte buffer (compared with native execve in the CLI's tests).
    #[test]
    fn shebang_nul_and_long_lines() {
        let parse = |b: &[u8]| parse_shebang(b).unwrap();
        let s = parse(b"#!/bin/sh\0-x junk\necho").unwrap();
        assert_eq!((s.interp.as_slice(), s.arg), (&b"/bin/sh"[..], None));
        let s = parse(b"#!/bin/sh -e\0junk\n").unwrap();
        assert_eq!(s.arg.as_deref(), Some(&b"-e"[..]));
        // A NUL before the newline: the line is the whole buffer.
        let s = parse(b"#!/bin/sh -e\0\n x").unwrap();
        assert_eq!(s.arg.as_deref(), Some(&b"-e"[..]));
        let s = parse(b"#!\0/bin/sh\n").unwrap();
        assert_eq!((s.interp.as_slice(), s.arg), (&b""[..], None));
        // No newline in the first 256 bytes: the argument is cut at byte
        // 255, but a name with nothing after it might be cut: refused.
        let mut long = b"#!/bin/sh ".to_vec();
        long.extend_from_slice(&[b'x'; 300]);
        let s = parse(&long).unwrap();
        assert_eq!(s.arg.unwrap().len(), BINPRM_BUF_SIZE - 1 - 10);
        let mut long = b"#!".to_vec();
        long.extend_from_slice(&[b'/'; 300]);
        assert_eq!(parse(&long).unwrap_err(), ExecError::UnknownFormat);
        let mut blank = b"#!".to_vec();
        blank.extend_from_slice(&[b' '; 300]);
        assert_eq!(parse(&blank).unwrap_err(), ExecError::UnknownFormat);
        // Short files are padded with NULs: no newline is needed, and
        // blanks before the padding are kept (only those right before the
        // line's end are dropped).
        let s = parse(b"#!/bin/sh  a b ").unwrap();
        assert_eq!(s.arg.as_deref(), Some(&b"a b "[..]));
        let s = parse(b"#!/bin/sh\r\n").unwrap();
        assert_eq!(s.interp, b"/bin/sh\r");
    }

    #[test]
    fn elf_header_checks() {
        assert_eq!(parse_ehdr(b"hello").unwrap_err(), ExecError::UnknownFormat);
        let mut h = [0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 1; // 32-bit
        h[5] = 1;
        assert_eq!(parse_ehdr(&h).unwrap_err(), ExecError::WrongArch);
        h[4] = 2;
        h[18] = 183; // aarch64
        assert_eq!(parse_ehdr(&h).unwrap_err(), ExecError::WrongArch);
        h[18] = 62;
        h[16] = 1; // ET_REL
        assert!(matches!(parse_ehdr(&h).unwrap_err(), ExecError::BadElf(_)));
    }

    #[test]
    fn check_real_files() {
        assert_eq!(
            check_executable(b"/nonexistent/x").unwrap_err(),
            ExecError::Open(Errno::ENOENT)
        );
        assert_eq!(
            check_executable(b"/etc/passwd").unwrap_err().errno(),
            Errno::EACCES
        );
        assert_eq!(check_executable(b"/").unwrap_err().errno(), Errno::EACCES);
        assert!(check_executable(b"/bin/sh").is_ok());
        assert_eq!(ExecError::UnknownFormat.errno(), Errno::ENOEXEC);
    }
}
