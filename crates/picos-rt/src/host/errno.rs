//! Linux error numbers: the [`Errno`] type, its constants and names.
#![deny(unsafe_code)]

use core::fmt;

/// A Linux errno value (positive).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const ESRCH: Errno = Errno(3);
    pub const EINTR: Errno = Errno(4);
    /// Internal, never returned to the program: a blocking call was not
    /// started because a signal is pending (Linux's ERESTARTSYS number).
    /// The call is run again once the signal is delivered, whatever
    /// SA_RESTART says, as when a signal arrives just before `syscall`.
    pub const NOT_STARTED: Errno = Errno(512);
    pub const EIO: Errno = Errno(5);
    pub const ENXIO: Errno = Errno(6);
    pub const E2BIG: Errno = Errno(7);
    pub const ENOEXEC: Errno = Errno(8);
    pub const EBADF: Errno = Errno(9);
    pub const ECHILD: Errno = Errno(10);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EACCES: Errno = Errno(13);
    pub const EFAULT: Errno = Errno(14);
    pub const ENOTBLK: Errno = Errno(15);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const EXDEV: Errno = Errno(18);
    pub const ENODEV: Errno = Errno(19);
    pub const ENOTDIR: Errno = Errno(20);
    pub const EISDIR: Errno = Errno(21);
    pub const EINVAL: Errno = Errno(22);
    pub const ENFILE: Errno = Errno(23);
    pub const EMFILE: Errno = Errno(24);
    pub const ENOTTY: Errno = Errno(25);
    pub const ETXTBSY: Errno = Errno(26);
    pub const EFBIG: Errno = Errno(27);
    pub const ENOSPC: Errno = Errno(28);
    pub const ESPIPE: Errno = Errno(29);
    pub const EROFS: Errno = Errno(30);
    pub const EMLINK: Errno = Errno(31);
    pub const EPIPE: Errno = Errno(32);
    pub const EDOM: Errno = Errno(33);
    pub const ERANGE: Errno = Errno(34);
    pub const EDEADLK: Errno = Errno(35);
    pub const ENAMETOOLONG: Errno = Errno(36);
    pub const ENOLCK: Errno = Errno(37);
    pub const ENOSYS: Errno = Errno(38);
    pub const ENOTEMPTY: Errno = Errno(39);
    pub const ELOOP: Errno = Errno(40);
    pub const ENOMSG: Errno = Errno(42);
    pub const EIDRM: Errno = Errno(43);
    pub const ECHRNG: Errno = Errno(44);
    pub const EL2NSYNC: Errno = Errno(45);
    pub const EL3HLT: Errno = Errno(46);
    pub const EL3RST: Errno = Errno(47);
    pub const ELNRNG: Errno = Errno(48);
    pub const EUNATCH: Errno = Errno(49);
    pub const ENOCSI: Errno = Errno(50);
    pub const EL2HLT: Errno = Errno(51);
    pub const EBADE: Errno = Errno(52);
    pub const EBADR: Errno = Errno(53);
    pub const EXFULL: Errno = Errno(54);
    pub const ENOANO: Errno = Errno(55);
    pub const EBADRQC: Errno = Errno(56);
    pub const EBADSLT: Errno = Errno(57);
    pub const EBFONT: Errno = Errno(59);
    pub const ENOSTR: Errno = Errno(60);
    pub const ENODATA: Errno = Errno(61);
    pub const ETIME: Errno = Errno(62);
    pub const ENOSR: Errno = Errno(63);
    pub const ENONET: Errno = Errno(64);
    pub const ENOPKG: Errno = Errno(65);
    pub const EREMOTE: Errno = Errno(66);
    pub const ENOLINK: Errno = Errno(67);
    pub const EADV: Errno = Errno(68);
    pub const ESRMNT: Errno = Errno(69);
    pub const ECOMM: Errno = Errno(70);
    pub const EPROTO: Errno = Errno(71);
    pub const EMULTIHOP: Errno = Errno(72);
    pub const EDOTDOT: Errno = Errno(73);
    pub const EBADMSG: Errno = Errno(74);
    pub const EOVERFLOW: Errno = Errno(75);
    pub const ENOTUNIQ: Errno = Errno(76);
    pub const EBADFD: Errno = Errno(77);
    pub const EREMCHG: Errno = Errno(78);
    pub const ELIBACC: Errno = Errno(79);
    pub const ELIBBAD: Errno = Errno(80);
    pub const ELIBSCN: Errno = Errno(81);
    pub const ELIBMAX: Errno = Errno(82);
    pub const ELIBEXEC: Errno = Errno(83);
    pub const EILSEQ: Errno = Errno(84);
    pub const ERESTART: Errno = Errno(85);
    pub const ESTRPIPE: Errno = Errno(86);
    pub const EUSERS: Errno = Errno(87);
    pub const ENOTSOCK: Errno = Errno(88);
    pub const EDESTADDRREQ: Errno = Errno(89);
    pub const EMSGSIZE: Errno = Errno(90);
    pub const EPROTOTYPE: Errno = Errno(91);
    pub const ENOPROTOOPT: Errno = Errno(92);
    pub const EPROTONOSUPPORT: Errno = Errno(93);
    pub const ESOCKTNOSUPPORT: Errno = Errno(94);
    pub const EOPNOTSUPP: Errno = Errno(95);
    pub const EPFNOSUPPORT: Errno = Errno(96);
    pub const EAFNOSUPPORT: Errno = Errno(97);
    pub const EADDRINUSE: Errno = Errno(98);
    pub const EADDRNOTAVAIL: Errno = Errno(99);
    pub const ENETDOWN: Errno = Errno(100);
    pub const ENETUNREACH: Errno = Errno(101);
    pub const ENETRESET: Errno = Errno(102);
    pub const ECONNABORTED: Errno = Errno(103);
    pub const ECONNRESET: Errno = Errno(104);
    pub const ENOBUFS: Errno = Errno(105);
    pub const EISCONN: Errno = Errno(106);
    pub const ENOTCONN: Errno = Errno(107);
    pub const ESHUTDOWN: Errno = Errno(108);
    pub const ETOOMANYREFS: Errno = Errno(109);
    pub const ETIMEDOUT: Errno = Errno(110);
    pub const ECONNREFUSED: Errno = Errno(111);
    pub const EHOSTDOWN: Errno = Errno(112);
    pub const EHOSTUNREACH: Errno = Errno(113);
    pub const EALREADY: Errno = Errno(114);
    pub const EINPROGRESS: Errno = Errno(115);
    pub const ESTALE: Errno = Errno(116);
    pub const EUCLEAN: Errno = Errno(117);
    pub const ENOTNAM: Errno = Errno(118);
    pub const ENAVAIL: Errno = Errno(119);
    pub const EISNAM: Errno = Errno(120);
    pub const EREMOTEIO: Errno = Errno(121);
    pub const EDQUOT: Errno = Errno(122);
    pub const ENOMEDIUM: Errno = Errno(123);
    pub const EMEDIUMTYPE: Errno = Errno(124);
    pub const ECANCELED: Errno = Errno(125);
    pub const ENOKEY: Errno = Errno(126);
    pub const EKEYEXPIRED: Errno = Errno(127);
    pub const EKEYREVOKED: Errno = Errno(128);
    pub const EKEYREJECTED: Errno = Errno(129);
    pub const EOWNERDEAD: Errno = Errno(130);
    pub const ENOTRECOVERABLE: Errno = Errno(131);
    pub const ERFKILL: Errno = Errno(132);
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;
    pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;

    /// The symbolic name, e.g. `"ENOENT"`.
    pub fn name(self) -> &'static str {
        match NAMES.binary_search_by_key(&self.0, |&(n, _, _)| n) {
            Ok(i) => NAMES[i].1,
            Err(_) => "E?",
        }
    }

    /// The C library's description, e.g. `"No such file or directory"`.
    pub fn description(self) -> &'static str {
        match NAMES.binary_search_by_key(&self.0, |&(n, _, _)| n) {
            Ok(i) => NAMES[i].2,
            Err(_) => "Unknown error",
        }
    }

    /// The value a system call returns for this error (`-errno`).
    pub fn to_ret(self) -> isize {
        -(self.0 as isize)
    }

    /// A system call's raw return value as a result: -4095..-1 is an errno
    /// (the kernel's `IS_ERR_VALUE`), anything else a value.
    #[inline(always)]
    pub fn from_ret(ret: isize) -> Result<usize, Errno> {
        if (-4095..0).contains(&ret) {
            Err(Errno(-ret as i32))
        } else {
            Ok(ret as usize)
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.description())
    }
}

static NAMES: &[(i32, &str, &str)] = &[
    (1, "EPERM", "Operation not permitted"),
    (2, "ENOENT", "No such file or directory"),
    (3, "ESRCH", "No such process"),
    (4, "EINTR", "Interrupted system call"),
    (5, "EIO", "Input/output error"),
    (6, "ENXIO", "No such device or address"),
    (7, "E2BIG", "Argument list too long"),
    (8, "ENOEXEC", "Exec format error"),
    (9, "EBADF", "Bad file descriptor"),
    (10, "ECHILD", "No child processes"),
    (11, "EAGAIN", "Resource temporarily unavailable"),
    (12, "ENOMEM", "Cannot allocate memory"),
    (13, "EACCES", "Permission denied"),
    (14, "EFAULT", "Bad address"),
    (15, "ENOTBLK", "Block device required"),
    (16, "EBUSY", "Device or resource busy"),
    (17, "EEXIST", "File exists"),
    (18, "EXDEV", "Invalid cross-device link"),
    (19, "ENODEV", "No such device"),
    (20, "ENOTDIR", "Not a directory"),
    (21, "EISDIR", "Is a directory"),
    (22, "EINVAL", "Invalid argument"),
    (23, "ENFILE", "Too many open files in system"),
    (24, "EMFILE", "Too many open files"),
    (25, "ENOTTY", "Inappropriate ioctl for device"),
    (26, "ETXTBSY", "Text file busy"),
    (27, "EFBIG", "File too large"),
    (28, "ENOSPC", "No space left on device"),
    (29, "ESPIPE", "Illegal seek"),
    (30, "EROFS", "Read-only file system"),
    (31, "EMLINK", "Too many links"),
    (32, "EPIPE", "Broken pipe"),
    (33, "EDOM", "Numerical argument out of domain"),
    (34, "ERANGE", "Numerical result out of range"),
    (35, "EDEADLK", "Resource deadlock avoided"),
    (36, "ENAMETOOLONG", "File name too long"),
    (37, "ENOLCK", "No locks available"),
    (38, "ENOSYS", "Function not implemented"),
    (39, "ENOTEMPTY", "Directory not empty"),
    (40, "ELOOP", "Too many levels of symbolic links"),
    (42, "ENOMSG", "No message of desired type"),
    (43, "EIDRM", "Identifier removed"),
    (44, "ECHRNG", "Channel number out of range"),
    (45, "EL2NSYNC", "Level 2 not synchronized"),
    (46, "EL3HLT", "Level 3 halted"),
    (47, "EL3RST", "Level 3 reset"),
    (48, "ELNRNG", "Link number out of range"),
    (49, "EUNATCH", "Protocol driver not attached"),
    (50, "ENOCSI", "No CSI structure available"),
    (51, "EL2HLT", "Level 2 halted"),
    (52, "EBADE", "Invalid exchange"),
    (53, "EBADR", "Invalid request descriptor"),
    (54, "EXFULL", "Exchange full"),
    (55, "ENOANO", "No anode"),
    (56, "EBADRQC", "Invalid request code"),
    (57, "EBADSLT", "Invalid slot"),
    (59, "EBFONT", "Bad font file format"),
    (60, "ENOSTR", "Device not a stream"),
    (61, "ENODATA", "No data available"),
    (62, "ETIME", "Timer expired"),
    (63, "ENOSR", "Out of streams resources"),
    (64, "ENONET", "Machine is not on the network"),
    (65, "ENOPKG", "Package not installed"),
    (66, "EREMOTE", "Object is remote"),
    (67, "ENOLINK", "Link has been severed"),
    (68, "EADV", "Advertise error"),
    (69, "ESRMNT", "Srmount error"),
    (70, "ECOMM", "Communication error on send"),
    (71, "EPROTO", "Protocol error"),
    (72, "EMULTIHOP", "Multihop attempted"),
    (73, "EDOTDOT", "RFS specific error"),
    (74, "EBADMSG", "Bad message"),
    (75, "EOVERFLOW", "Value too large for defined data type"),
    (76, "ENOTUNIQ", "Name not unique on network"),
    (77, "EBADFD", "File descriptor in bad state"),
    (78, "EREMCHG", "Remote address changed"),
    (79, "ELIBACC", "Can not access a needed shared library"),
    (80, "ELIBBAD", "Accessing a corrupted shared library"),
    (81, "ELIBSCN", ".lib section in a.out corrupted"),
    (
        82,
        "ELIBMAX",
        "Attempting to link in too many shared libraries",
    ),
    (83, "ELIBEXEC", "Cannot exec a shared library directly"),
    (
        84,
        "EILSEQ",
        "Invalid or incomplete multibyte or wide character",
    ),
    (
        85,
        "ERESTART",
        "Interrupted system call should be restarted",
    ),
    (86, "ESTRPIPE", "Streams pipe error"),
    (87, "EUSERS", "Too many users"),
    (88, "ENOTSOCK", "Socket operation on non-socket"),
    (89, "EDESTADDRREQ", "Destination address required"),
    (90, "EMSGSIZE", "Message too long"),
    (91, "EPROTOTYPE", "Protocol wrong type for socket"),
    (92, "ENOPROTOOPT", "Protocol not available"),
    (93, "EPROTONOSUPPORT", "Protocol not supported"),
    (94, "ESOCKTNOSUPPORT", "Socket type not supported"),
    (95, "EOPNOTSUPP", "Operation not supported"),
    (96, "EPFNOSUPPORT", "Protocol family not supported"),
    (
        97,
        "EAFNOSUPPORT",
        "Address family not supported by protocol",
    ),
    (98, "EADDRINUSE", "Address already in use"),
    (99, "EADDRNOTAVAIL", "Cannot assign requested address"),
    (100, "ENETDOWN", "Network is down"),
    (101, "ENETUNREACH", "Network is unreachable"),
    (102, "ENETRESET", "Network dropped connection on reset"),
    (103, "ECONNABORTED", "Software caused connection abort"),
    (104, "ECONNRESET", "Connection reset by peer"),
    (105, "ENOBUFS", "No buffer space available"),
    (106, "EISCONN", "Transport endpoint is already connected"),
    (107, "ENOTCONN", "Transport endpoint is not connected"),
    (
        108,
        "ESHUTDOWN",
        "Cannot send after transport endpoint shutdown",
    ),
    (109, "ETOOMANYREFS", "Too many references: cannot splice"),
    (110, "ETIMEDOUT", "Connection timed out"),
    (111, "ECONNREFUSED", "Connection refused"),
    (112, "EHOSTDOWN", "Host is down"),
    (113, "EHOSTUNREACH", "No route to host"),
    (114, "EALREADY", "Operation already in progress"),
    (115, "EINPROGRESS", "Operation now in progress"),
    (116, "ESTALE", "Stale file handle"),
    (117, "EUCLEAN", "Structure needs cleaning"),
    (118, "ENOTNAM", "Not a XENIX named type file"),
    (119, "ENAVAIL", "No XENIX semaphores available"),
    (120, "EISNAM", "Is a named type file"),
    (121, "EREMOTEIO", "Remote I/O error"),
    (122, "EDQUOT", "Disk quota exceeded"),
    (123, "ENOMEDIUM", "No medium found"),
    (124, "EMEDIUMTYPE", "Wrong medium type"),
    (125, "ECANCELED", "Operation canceled"),
    (126, "ENOKEY", "Required key not available"),
    (127, "EKEYEXPIRED", "Key has expired"),
    (128, "EKEYREVOKED", "Key has been revoked"),
    (129, "EKEYREJECTED", "Key was rejected by service"),
    (130, "EOWNERDEAD", "Owner died"),
    (131, "ENOTRECOVERABLE", "State not recoverable"),
    (132, "ERFKILL", "Operation not possible due to RF-kill"),
];

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names() {
        assert_eq!(Errno::ENOENT.name(), "ENOENT");
        assert_eq!(Errno(2).description(), "No such file or directory");
        assert_eq!(Errno::EAGAIN.name(), "EAGAIN");
        assert_eq!(Errno(9999).name(), "E?");
        assert_eq!(Errno::ENOSYS.to_ret(), -38);
        assert!(NAMES.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
