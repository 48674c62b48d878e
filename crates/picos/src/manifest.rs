//! The picos manifest: a TOML file that says what to run and under which policy.
//!
//! `picos run -m FILE` reads one; `picos manifest check FILE` only validates it.
//! Without `-m`, picos uses [`DEFAULT_MANIFEST`] (see [`Manifest::embedded_default`]).
//!
//! Key names follow [Gramine]'s manifest wherever the meaning is the same, so a
//! Gramine user can read (and mostly reuse) a picos manifest:
//!
//! ```toml
//! [libos]
//! entrypoint = "/usr/bin/python3"      # program to run; optional, the command line may give it
//! syscall_patching = true               # fast path: patch syscall sites (default true)
//! enable_stats = false                  # print syscall/signal statistics at exit
//!
//! [loader]
//! argv = ["python3", "-c", "print(1)"] # argv including argv[0]; optional, non-empty
//! log_level = "warning"                # none | error | warning | debug | trace | all (= trace)
//! insecure__use_cmdline_argv = true    # take argv from the picos command line (default false)
//! insecure__use_host_env = true        # pass the whole host environment through (default false)
//!
//! [loader.env]
//! HOME = "/root"                       # explicit value
//! LANG = { value = "C.UTF-8" }         # explicit value, table form
//! PATH = { passthrough = true }        # the host's value, if the host has one
//!
//! [fs]
//! start_dir = "/tmp"                   # working directory; default: the caller's
//!
//! [[fs.mounts]]
//! type = "chroot"                      # optional; "chroot" (a host directory, the default),
//!                                      # "tmpfs" (in memory, no uri), "overlay" (uri read-only
//!                                      # below, changes kept in memory) or "dev" (a /dev of
//!                                      # harmless devices, no uri)
//! path = "/"                           # where it appears in the picoprocess (absolute)
//! uri = "file:/"                       # host path, with the "file:" prefix
//! # size = "64M"                       # tmpfs/overlay: the most their memory holds
//!
//! [sys]
//! stack.size = "8M"                    # main-thread stack: bytes, or a string with K/M/G (powers of 1024)
//! ```
//!
//! Every table may also be written with TOML's dotted keys (`loader.log_level = "debug"`
//! at the top level) or as inline tables (`fs.mounts = [{ path = "/", uri = "file:/" }]`),
//! as TOML allows.
//!
//! Validation is strict: an unknown key, a value of the wrong type or an invalid value is
//! an error naming the file, line and column, and the full key, e.g.
//!
//! ```text
//! manifest.toml:3:1: unknown key `loader.log_levle`; did you mean `loader.log_level`?
//! manifest.toml:5:14: `sys.stack.size` must be a size like 8388608 or "8M", found "lots"
//! ```
//!
//! The document is walked with `toml_edit`, which keeps the byte span of every key and
//! value, rather than deserialized with serde, so that every error can point at its source.
//! `toml` + serde derive (with `toml::Spanned`) was considered and is not smaller here:
//! every field would need `Spanned<...>` for the value checks done after parsing (sizes,
//! paths, `file:` URIs, log levels); `deny_unknown_fields` reports an unknown key by its last
//! segment with serde's list of expected fields, not the full dotted key with a did-you-mean
//! that also finds keys in another table, nor the Gramine notes; a type error would say
//! "invalid type: ..., expected ..." instead of naming the key and showing the value; and
//! `loader.env`'s two forms would be an untagged enum, whose error is only "data did not
//! match any variant". The schema walk below keeps all of these messages for the same code.
//!
//! [Gramine]: https://gramine.readthedocs.io/en/stable/manifest-syntax.html

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml_edit::{ImDocument, Item, TableLike, Value};

pub use picos_abi::LogLevel;

/// The manifest picos uses when `picos run` gets no `-m` (printed by `picos manifest default`).
pub const DEFAULT_MANIFEST: &str = r#"# The manifest picos uses when `picos run` is given no `-m MANIFEST`.
#
# The program named on the command line runs with the command line's arguments,
# in the caller's working directory, with the caller's environment, and sees the
# whole host file system.

[loader]
log_level = "warning"
insecure__use_cmdline_argv = true
insecure__use_host_env = true

[[fs.mounts]]
type = "chroot"
path = "/"
uri = "file:/"
"#;

/// The largest accepted `sys.stack.size`: 1 TiB.
pub const MAX_STACK_SIZE: u64 = 1 << 40;

/// The value of one `loader.env` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// `NAME = "value"` or `NAME = { value = "value" }`.
    Value(String),
    /// `NAME = { passthrough = true }`: the host's value, if the host has the variable.
    Passthrough,
}

/// One `[[fs.mounts]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount type (`type` in the manifest): `"chroot"` (a host
    /// directory), `"tmpfs"` (files in memory, shared by the picoprocess
    /// tree), `"overlay"` (a host directory read-only below, changes kept
    /// in memory) or `"dev"` (a tmpfs with the host's harmless devices).
    pub kind: String,
    /// `size` (tmpfs and overlay only): the most bytes their files may take
    /// in memory; `None`: the kernel's default for a tmpfs (half the RAM).
    pub size: Option<u64>,
    /// Absolute path inside the picoprocess.
    pub path: String,
    /// Host location as written, starting with `file:` (see [`Mount::host_path`]).
    pub uri: String,
    /// `readonly` (default false): the program may read but not change
    /// anything under the mount (EROFS, as a read-only mount).
    pub readonly: bool,
    /// `exclusive` (default false; needs `readonly`): nothing outside the
    /// picoprocess tree changes the directory while the program runs, so
    /// the library OS may cache what it finds there (gVisor's
    /// `--file-access=exclusive`).
    pub exclusive: bool,
    /// `writeback` (default false; writable mounts only): small writes to
    /// the mount's regular files are buffered by the library OS and reach
    /// the host at the flush points docs/FILESYSTEM.md lists ("Write-back
    /// mounts"); a process killed by SIGKILL loses what was buffered.
    pub writeback: bool,
}

impl Mount {
    /// The host's whole tree at `/`, read-write (the default manifest's
    /// one mount).
    pub fn host_root() -> Mount {
        Mount {
            kind: "chroot".into(),
            size: None,
            path: "/".into(),
            uri: "file:/".into(),
            readonly: false,
            exclusive: false,
            writeback: false,
        }
    }

    /// The host path: [`Mount::uri`] without its `file:` prefix.
    pub fn host_path(&self) -> &str {
        self.uri.strip_prefix("file:").unwrap_or(&self.uri)
    }
}

/// `path` (absolute, without `.` or `..` components) with doubled and
/// trailing slashes removed: `//data/` is `/data`.
pub fn normalize_guest_path(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    format!("/{}", parts.join("/"))
}

/// A validated manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// `libos.entrypoint`: the program to run (absolute, or resolved via `PATH` by the CLI).
    pub entrypoint: Option<String>,
    /// `libos.syscall_patching` (default true): patch syscall sites so they
    /// enter the library OS directly instead of trapping.
    pub syscall_patching: bool,
    /// `libos.enable_stats` (default false): print statistics at exit (like
    /// Gramine's `sgx.enable_stats`).
    pub enable_stats: bool,
    /// `loader.argv`: the program's argv including argv\[0\]; never empty when present.
    /// As in Gramine, `use_cmdline_argv` takes precedence over it.
    pub argv: Option<Vec<String>>,
    /// `loader.insecure__use_cmdline_argv`: take argv from the picos command line.
    pub use_cmdline_argv: bool,
    /// `loader.insecure__use_host_env`: start from the whole host environment.
    pub use_host_env: bool,
    /// `loader.env`: explicit variables (applied on top of the host environment, if any).
    pub env: BTreeMap<String, EnvValue>,
    /// `loader.log_level` (default `warning`).
    pub log_level: LogLevel,
    /// `fs.start_dir`: working directory; `None` keeps the caller's.
    pub start_dir: Option<String>,
    /// `sys.stack.size` in bytes; `None` keeps the host's default.
    pub stack_size_bytes: Option<u64>,
    /// `fs.mounts`, in manifest order.
    pub mounts: Vec<Mount>,
    /// `[sandbox]`: the kernel-enforced confinement (docs/SECURITY.md).
    pub sandbox: SandboxSettings,
}

/// The `[sandbox]` table: whether the picoprocess is confined (+SC +RM)
/// and what it may reach beyond its mounts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `sandbox.enable` (default false; `picos run --sandbox` sets it).
    pub enable: bool,
    /// `sandbox.allow_weaker` (default false): run even where the kernel's
    /// Landlock lacks an ABI level the sandbox uses, with what it has.
    pub allow_weaker: bool,
    /// `sandbox.net.bind`: TCP ports the program may bind (none by default).
    pub net_bind: Vec<u16>,
    /// `sandbox.net.connect`: TCP ports the program may connect to.
    pub net_connect: Vec<u16>,
    /// `sandbox.net.udp` (default false): UDP and other non-TCP IP sockets,
    /// which Landlock cannot restrict by port.
    pub net_udp: bool,
    /// `sandbox.net.tcp` (default false): every TCP port, for binding and
    /// connecting (then `net.bind` and `net.connect` are refused: they
    /// would add nothing).
    pub net_tcp: bool,
    /// `sandbox.max_open_files`: RLIMIT_NOFILE (default: the caller's).
    pub max_open_files: Option<u64>,
}

impl Default for Manifest {
    /// A manifest with no keys: every default as documented on the fields.
    fn default() -> Self {
        Manifest {
            entrypoint: None,
            syscall_patching: true,
            enable_stats: false,
            argv: None,
            use_cmdline_argv: false,
            use_host_env: false,
            env: BTreeMap::new(),
            log_level: LogLevel::Warning,
            start_dir: None,
            stack_size_bytes: None,
            mounts: Vec::new(),
            sandbox: SandboxSettings::default(),
        }
    }
}

/// A place in a manifest: `file:line:column`, both 1-based, the column counted in characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file name as given to [`Manifest::parse`] (the path, for [`Manifest::from_file`]).
    pub file: String,
    /// Line number, from 1.
    pub line: usize,
    /// Column number in characters, from 1.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// The largest manifest `picos` reads (a manifest is a few hundred bytes;
/// this only keeps a wrong file from filling memory).
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// What kind of file `ft` is, for an error message.
fn file_kind(ft: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// Reads a manifest file: a regular file (checked before it is opened, so
/// a FIFO cannot block and a device is not read) of at most
/// [`MAX_MANIFEST_BYTES`], in UTF-8.
fn read_manifest_text(path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    use std::os::unix::fs::OpenOptionsExt;
    let not_regular = |ft| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("not a regular file ({})", file_kind(ft)),
        )
    };
    let md = std::fs::metadata(path)?;
    if !md.is_file() {
        return Err(not_regular(md.file_type()));
    }
    // O_NONBLOCK: should the path be replaced by a FIFO after the check,
    // the open does not wait for a writer (and the check below refuses it).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let md = file.metadata()?;
    if !md.is_file() {
        return Err(not_regular(md.file_type()));
    }
    let too_big = || {
        Error::new(
            ErrorKind::InvalidData,
            format!(
                "larger than {} MiB: not a manifest",
                MAX_MANIFEST_BYTES >> 20
            ),
        )
    };
    if md.len() > MAX_MANIFEST_BYTES {
        return Err(too_big());
    }
    // The size may be wrong (files in /proc) or change: read one byte more
    // than the limit to tell.
    let mut bytes = Vec::with_capacity(md.len() as usize);
    file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::new(ErrorKind::InvalidData, "not UTF-8 text: not a manifest"))
}

/// Why a manifest could not be read or is invalid. Each displays as one line.
///
/// No variant has a `source`: every message is complete on its own (see
/// [`ManifestError::Read`]).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read (the OS error is part of the message, not a `source`,
    /// so that the message is complete on its own).
    #[error("cannot read manifest {}: {error}", path.display())]
    Read {
        /// The path given to [`Manifest::from_file`].
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The text is not valid TOML.
    #[error("{location}: invalid TOML: {message}")]
    Syntax {
        /// Where the parser gave up.
        location: Location,
        /// The parser's message, on one line.
        message: String,
    },
    /// A key that the manifest format does not have.
    #[error("{location}: unknown key `{key}`{}", unknown_key_hint(*note, suggestion.as_deref()))]
    UnknownKey {
        /// Where the key is written.
        location: Location,
        /// The full dotted key, e.g. `loader.log_levle`.
        key: String,
        /// A valid full key that looks like a typo fix.
        suggestion: Option<String>,
        /// An explanation for keys that Gramine has but picos does not.
        note: Option<&'static str>,
    },
    /// A value of the wrong type, a missing key, or a value that makes no sense.
    #[error("{location}: {message}")]
    Invalid {
        /// Where the offending value (or key) is written.
        location: Location,
        /// The full dotted key, e.g. `sys.stack.size`.
        #[allow(dead_code)]
        // for callers that match on the key; the CLI only prints `message`
        key: String,
        /// The whole explanation; it names the key.
        message: String,
    },
}

/// What follows "unknown key `...`": the Gramine note if there is one, else
/// the did-you-mean suggestion, if any.
fn unknown_key_hint(note: Option<&str>, suggestion: Option<&str>) -> String {
    match (note, suggestion) {
        (Some(n), _) => format!("; {n}"),
        (None, Some(s)) => format!("; did you mean `{s}`?"),
        (None, None) => String::new(),
    }
}

impl Manifest {
    /// The embedded default, parsed from [`DEFAULT_MANIFEST`]: the whole host file system
    /// (one chroot mount `/` <- `file:/`), the caller's working directory, environment and
    /// argv, log level `warning`.
    pub fn embedded_default() -> Manifest {
        // What parsing DEFAULT_MANIFEST gives (the unit test
        // `embedded_default` compares them), built without the parser: a
        // TOML parse was half of the CLI's own work in every `picos run`
        // without `-m` (docs/BENCHMARKS.md, "Thirty-first session").
        Manifest {
            use_cmdline_argv: true,
            use_host_env: true,
            log_level: LogLevel::Warning,
            mounts: vec![Mount::host_root()],
            ..Manifest::default()
        }
    }

    /// Reads and validates the manifest at `path`, which must be a regular
    /// file of at most [`MAX_MANIFEST_BYTES`].
    pub fn from_file(path: &Path) -> Result<Manifest, ManifestError> {
        let text = read_manifest_text(path).map_err(|error| ManifestError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Manifest::parse(&text, &path.display().to_string())
    }

    /// Parses and validates manifest `text`; `name` is the file name used in error messages.
    pub fn parse(text: &str, name: &str) -> Result<Manifest, ManifestError> {
        let cx = Checker { text, file: name };
        let doc = ImDocument::parse(text).map_err(|e| ManifestError::Syntax {
            location: cx.location(e.span()),
            message: one_line(e.message()),
        })?;
        cx.manifest(doc.as_table())
    }

    /// The program's environment as `KEY=VALUE` strings: the host's variables (in the host's
    /// order) if `use_host_env`, then the `loader.env` entries in key order, each replacing a
    /// host variable of the same name in place or being appended. A passthrough entry copies
    /// the host's value, and is left out when the host does not have the variable.
    pub fn environment(&self, host: &[(OsString, OsString)]) -> Vec<OsString> {
        let mut vars: Vec<(OsString, OsString)> = if self.use_host_env {
            host.to_vec()
        } else {
            Vec::new()
        };
        for (name, value) in &self.env {
            let value = match value {
                EnvValue::Value(v) => OsString::from(v),
                EnvValue::Passthrough => match host.iter().find(|(k, _)| k == OsStr::new(name)) {
                    Some((_, v)) => v.clone(),
                    None => continue,
                },
            };
            match vars.iter_mut().find(|(k, _)| k == OsStr::new(name)) {
                Some(slot) => slot.1 = value,
                None => vars.push((OsString::from(name), value)),
            }
        }
        vars.into_iter()
            .map(|(mut k, v)| {
                k.push("=");
                k.push(v);
                k
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Schema

/// Every key the format has, as paths from the root; `[]` stands for "any element" and `*`
/// for "any name". Used to find the keys allowed in a table and for did-you-mean hints.
const SCHEMA: &[&str] = &[
    "libos",
    "libos.entrypoint",
    "libos.syscall_patching",
    "libos.enable_stats",
    "loader",
    "loader.argv",
    "loader.log_level",
    "loader.insecure__use_cmdline_argv",
    "loader.insecure__use_host_env",
    "loader.env",
    "loader.env.*.value",
    "loader.env.*.passthrough",
    "fs",
    "fs.start_dir",
    "fs.mounts",
    "fs.mounts[].type",
    "fs.mounts[].path",
    "fs.mounts[].uri",
    "fs.mounts[].readonly",
    "fs.mounts[].exclusive",
    "fs.mounts[].writeback",
    "fs.mounts[].size",
    "sys",
    "sys.stack",
    "sys.stack.size",
    "sandbox",
    "sandbox.enable",
    "sandbox.allow_weaker",
    "sandbox.max_open_files",
    "sandbox.net",
    "sandbox.net.bind",
    "sandbox.net.connect",
    "sandbox.net.udp",
    "sandbox.net.tcp",
];

/// Gramine keys that picos does not have, with what to do instead (by schema path).
const GRAMINE_NOTES: &[(&str, &str)] = &[
    (
        "loader.entrypoint",
        "picos has no separate LibOS binary to load; the program to run is `libos.entrypoint`",
    ),
    (
        "sgx",
        "picos does not use Intel SGX; remove the `sgx` table",
    ),
    (
        "fs.root",
        "use an `[[fs.mounts]]` entry with path = \"/\" instead",
    ),
    (
        "loader.argv_src_file",
        "picos does not support it; use `loader.argv`",
    ),
    (
        "loader.env_src_file",
        "picos does not support it; use `loader.env`",
    ),
];

/// The keys allowed directly in the table at schema path `schema` ("" for the root).
fn allowed_keys(schema: &str) -> Vec<&'static str> {
    relative_keys(schema)
        .filter(|k| !k.contains(['.', '[', '*']))
        .collect()
}

/// All schema keys below `schema`, relative to it, without wildcards (so they can be
/// suggested as written): for `sys`, `stack` and `stack.size`.
fn relative_keys(schema: &str) -> impl Iterator<Item = &'static str> + '_ {
    SCHEMA.iter().filter_map(move |p| {
        let rel = if schema.is_empty() {
            Some(*p)
        } else {
            p.strip_prefix(schema)?.strip_prefix('.')
        };
        rel.filter(|r| !r.contains(['[', '*']))
    })
}

/// The schema key below `schema` that `unknown` most likely meant, if any.
///
/// Candidates are scored: the same name as a key in a sub-table (`entrypoint` at the top
/// for `libos.entrypoint`) wins; then typos (Jaro-Winkler similarity, or an edit distance of
/// one or two counting a swap of neighbours as one edit, which also catches short keys);
/// then a key that contains the unknown one or is contained in it (`use_host_env`).
fn suggest(schema: &str, unknown: &str) -> Option<&'static str> {
    let u = unknown.to_lowercase();
    let mut best: Option<(f64, &'static str)> = None;
    for cand in relative_keys(schema) {
        let last = cand.rsplit('.').next().unwrap_or(cand);
        let max_edits = if u.chars().count().min(cand.len()) <= 4 {
            1
        } else {
            2
        };
        let (short, long) = if u.len() <= cand.len() {
            (u.as_str(), cand)
        } else {
            (cand, u.as_str())
        };
        let score = if last == u {
            2.0
        } else if strsim::osa_distance(&u, cand) <= max_edits {
            1.0 + strsim::jaro_winkler(&u, cand)
        } else if strsim::jaro_winkler(&u, cand) >= 0.8 {
            strsim::jaro_winkler(&u, cand)
        } else if short.len() >= 4 && long.contains(short) {
            0.5 + 0.3 * short.len() as f64 / long.len() as f64
        } else {
            continue;
        };
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, cand));
        }
    }
    best.map(|(_, c)| c)
}

/// A key of the same name in another table (`start_dir` in `[loader]` for `fs.start_dir`).
fn elsewhere(unknown: &str) -> Option<&'static str> {
    let u = unknown.to_lowercase();
    SCHEMA
        .iter()
        .copied()
        .filter(|p| !p.contains(['[', '*']))
        .find(|p| p.rsplit('.').next() == Some(u.as_str()))
}

// ---------------------------------------------------------------------------------------------
// Walking the document

type Result<T, E = ManifestError> = std::result::Result<T, E>;

/// What a key holds, with inline tables and tables treated alike.
#[derive(Clone, Copy)]
enum Data<'d> {
    Value(&'d Value),
    Table(&'d dyn TableLike),
    Tables(&'d toml_edit::ArrayOfTables),
}

impl<'d> Data<'d> {
    fn of_item(item: &'d Item) -> Option<Data<'d>> {
        match item {
            Item::None => None,
            Item::Value(v) => Some(Data::of_value(v)),
            Item::Table(t) => Some(Data::Table(t)),
            Item::ArrayOfTables(a) => Some(Data::Tables(a)),
        }
    }

    fn of_value(v: &'d Value) -> Data<'d> {
        match v {
            Value::InlineTable(t) => Data::Table(t),
            v => Data::Value(v),
        }
    }

    /// How the value is shown after "found" in a type error.
    fn describe(self) -> String {
        match self {
            Data::Value(Value::String(s)) => {
                let s = s.value();
                if s.chars().count() > 60 {
                    format!("{:?}...", s.chars().take(60).collect::<String>())
                } else {
                    format!("{s:?}")
                }
            }
            Data::Value(Value::Integer(i)) => format!("integer {}", i.value()),
            Data::Value(Value::Float(x)) => format!("float {}", x.value()),
            Data::Value(Value::Boolean(b)) => format!("boolean {}", b.value()),
            Data::Value(Value::Datetime(d)) => format!("date-time {}", d.value()),
            Data::Value(Value::Array(_)) => "an array".into(),
            Data::Value(Value::InlineTable(_)) | Data::Table(_) => "a table".into(),
            Data::Tables(_) => "an array of tables".into(),
        }
    }
}

/// One key's value, with what is needed to report errors about it.
#[derive(Clone)]
struct Node<'d> {
    /// Display path, e.g. `fs.mounts[0].uri`.
    path: String,
    /// Schema path, e.g. `fs.mounts[].uri`.
    schema: String,
    /// Where the value is (or, failing that, its key or its parent).
    span: Option<Range<usize>>,
    data: Data<'d>,
}

/// The checked entries of one table.
struct Fields<'d> {
    entries: Vec<(&'d str, Option<Range<usize>>, Node<'d>)>,
}

impl<'d> Fields<'d> {
    fn get(&self, key: &str) -> Option<&Node<'d>> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, _, n)| n)
    }
}

/// Appends a key to a display path, quoting it if TOML would need quotes.
fn join(path: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    if path.is_empty() {
        key
    } else {
        format!("{path}.{key}")
    }
}

/// A multi-line parser message on one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

struct Checker<'a> {
    text: &'a str,
    file: &'a str,
}

impl Checker<'_> {
    fn location(&self, span: Option<Range<usize>>) -> Location {
        let mut offset = span.map_or(0, |s| s.start).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &self.text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Location {
            file: self.file.to_string(),
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }

    fn invalid(&self, node: &Node<'_>, message: String) -> ManifestError {
        self.invalid_at(node.span.clone(), &node.path, message)
    }

    fn invalid_at(&self, span: Option<Range<usize>>, key: &str, message: String) -> ManifestError {
        ManifestError::Invalid {
            location: self.location(span),
            key: key.to_string(),
            message,
        }
    }

    fn type_error(&self, node: &Node<'_>, expected: &str) -> ManifestError {
        self.invalid(
            node,
            format!(
                "`{}` must be {expected}, found {}",
                node.path,
                node.data.describe()
            ),
        )
    }

    /// The entries of table `node`. With `check`, a key not in the schema is an error.
    fn table<'d>(&self, node: &Node<'d>, check: bool) -> Result<Fields<'d>> {
        let Data::Table(table) = node.data else {
            return Err(self.type_error(node, "a table"));
        };
        let allowed = allowed_keys(&node.schema);
        let mut entries = Vec::new();
        for (key, item) in table.iter() {
            let Some(data) = Data::of_item(item) else {
                continue;
            };
            let key_span = table
                .key(key)
                .and_then(|k| k.span())
                .or_else(|| node.span.clone());
            let path = join(&node.path, key);
            let schema = if node.schema.is_empty() {
                key.to_string()
            } else {
                format!("{}.{key}", node.schema)
            };
            if check && !allowed.contains(&key) {
                let note = GRAMINE_NOTES
                    .iter()
                    .find(|(k, _)| *k == schema)
                    .map(|(_, n)| *n);
                let suggestion = suggest(&node.schema, key)
                    .map(|s| {
                        if node.path.is_empty() {
                            s.to_string()
                        } else {
                            format!("{}.{s}", node.path)
                        }
                    })
                    .or_else(|| elsewhere(key).map(str::to_string));
                return Err(ManifestError::UnknownKey {
                    location: self.location(key_span),
                    key: path,
                    suggestion,
                    note,
                });
            }
            let span = item.span().or_else(|| key_span.clone());
            entries.push((
                key,
                key_span,
                Node {
                    path,
                    schema,
                    span,
                    data,
                },
            ));
        }
        Ok(Fields { entries })
    }

    /// The elements of array `node` (an array value, or an array of tables with `tables`).
    fn array<'d>(&self, node: &Node<'d>, expected: &str) -> Result<Vec<Node<'d>>> {
        let element = |i: usize, span: Option<Range<usize>>, data| Node {
            path: format!("{}[{i}]", node.path),
            schema: format!("{}[]", node.schema),
            span: span.or_else(|| node.span.clone()),
            data,
        };
        match node.data {
            Data::Value(Value::Array(a)) => Ok(a
                .iter()
                .enumerate()
                .map(|(i, v)| element(i, v.span(), Data::of_value(v)))
                .collect()),
            Data::Tables(a) => Ok(a
                .iter()
                .enumerate()
                .map(|(i, t)| element(i, t.span(), Data::Table(t)))
                .collect()),
            _ => Err(self.type_error(node, expected)),
        }
    }

    fn string<'d>(&self, node: &Node<'d>) -> Result<&'d str> {
        match node.data {
            Data::Value(Value::String(s)) => {
                let s = s.value().as_str();
                if s.contains('\0') {
                    return Err(self.invalid(
                        node,
                        format!("`{}` must not contain a NUL character", node.path),
                    ));
                }
                Ok(s)
            }
            _ => Err(self.type_error(node, "a string")),
        }
    }

    fn non_empty_string<'d>(&self, node: &Node<'d>) -> Result<&'d str> {
        let s = self.string(node)?;
        if s.is_empty() {
            return Err(self.invalid(node, format!("`{}` must not be empty", node.path)));
        }
        Ok(s)
    }

    fn bool(&self, node: &Node<'_>) -> Result<bool> {
        match node.data {
            Data::Value(Value::Boolean(b)) => Ok(*b.value()),
            _ => Err(self.type_error(node, "true or false")),
        }
    }

    fn manifest(&self, root: &toml_edit::Table) -> Result<Manifest> {
        let root = Node {
            path: String::new(),
            schema: String::new(),
            span: Some(0..0),
            data: Data::Table(root),
        };
        let root = self.table(&root, true)?;
        let mut m = Manifest::default();
        if let Some(libos) = root.get("libos") {
            let libos = self.table(libos, true)?;
            if let Some(n) = libos.get("entrypoint") {
                m.entrypoint = Some(self.non_empty_string(n)?.to_string());
            }
            if let Some(n) = libos.get("syscall_patching") {
                m.syscall_patching = self.bool(n)?;
            }
            if let Some(n) = libos.get("enable_stats") {
                m.enable_stats = self.bool(n)?;
            }
        }
        if let Some(loader) = root.get("loader") {
            let loader = self.table(loader, true)?;
            if let Some(n) = loader.get("argv") {
                m.argv = Some(self.argv(n)?);
            }
            if let Some(n) = loader.get("log_level") {
                m.log_level = self.log_level(n)?;
            }
            if let Some(n) = loader.get("insecure__use_cmdline_argv") {
                m.use_cmdline_argv = self.bool(n)?;
            }
            if let Some(n) = loader.get("insecure__use_host_env") {
                m.use_host_env = self.bool(n)?;
            }
            if let Some(n) = loader.get("env") {
                m.env = self.env(n)?;
            }
        }
        if let Some(fs) = root.get("fs") {
            let fs = self.table(fs, true)?;
            if let Some(n) = fs.get("start_dir") {
                m.start_dir = Some(self.non_empty_string(n)?.to_string());
            }
            if let Some(n) = fs.get("mounts") {
                m.mounts = self.mounts(n)?;
            }
        }
        if let Some(sys) = root.get("sys") {
            let sys = self.table(sys, true)?;
            if let Some(stack) = sys.get("stack") {
                let stack = self.table(stack, true)?;
                if let Some(n) = stack.get("size") {
                    m.stack_size_bytes = Some(self.stack_size(n)?);
                }
            }
        }
        if let Some(sb) = root.get("sandbox") {
            let sb = self.table(sb, true)?;
            if let Some(n) = sb.get("enable") {
                m.sandbox.enable = self.bool(n)?;
            }
            if let Some(n) = sb.get("allow_weaker") {
                m.sandbox.allow_weaker = self.bool(n)?;
            }
            if let Some(n) = sb.get("max_open_files") {
                m.sandbox.max_open_files = Some(self.integer(n, 1, 1 << 30)?);
            }
            if let Some(net) = sb.get("net") {
                let net = self.table(net, true)?;
                if let Some(n) = net.get("bind") {
                    m.sandbox.net_bind = self.ports(n)?;
                }
                if let Some(n) = net.get("connect") {
                    m.sandbox.net_connect = self.ports(n)?;
                }
                if let Some(n) = net.get("udp") {
                    m.sandbox.net_udp = self.bool(n)?;
                }
                if let Some(n) = net.get("tcp") {
                    m.sandbox.net_tcp = self.bool(n)?;
                    let lists = ["bind", "connect"].iter().any(|k| net.get(k).is_some());
                    if m.sandbox.net_tcp && lists {
                        return Err(self.invalid(
                            n,
                            format!(
                                "`{}` = true allows every TCP port: drop `net.bind` and \
                                 `net.connect`, or this key",
                                n.path
                            ),
                        ));
                    }
                }
            }
        }
        Ok(m)
    }

    /// An integer in `min..=max`.
    fn integer(&self, node: &Node<'_>, min: u64, max: u64) -> Result<u64> {
        match node.data {
            Data::Value(Value::Integer(i)) => {
                let v = *i.value();
                if v < 0 || (v as u64) < min || (v as u64) > max {
                    return Err(self.invalid(
                        node,
                        format!("`{}` must be from {min} to {max}, found {v}", node.path),
                    ));
                }
                Ok(v as u64)
            }
            _ => Err(self.type_error(node, "an integer")),
        }
    }

    /// An array of TCP port numbers (0 to 65535; 0 lets `bind` pick one).
    fn ports(&self, node: &Node<'_>) -> Result<Vec<u16>> {
        let mut ports = Vec::new();
        for e in self.array(node, "an array of port numbers, like [8080]")? {
            let p = self.integer(&e, 0, 65535)? as u16;
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        Ok(ports)
    }

    fn argv(&self, node: &Node<'_>) -> Result<Vec<String>> {
        let elements = self.array(node, "an array of strings")?;
        if elements.is_empty() {
            return Err(self.invalid(
                node,
                format!("`{}` must not be empty: it starts with argv[0]", node.path),
            ));
        }
        elements
            .iter()
            .map(|e| self.string(e).map(str::to_string))
            .collect()
    }

    fn log_level(&self, node: &Node<'_>) -> Result<LogLevel> {
        let s = self.string(node)?;
        LogLevel::from_name(s).ok_or_else(|| {
            let names: Vec<&str> = LogLevel::ALL
                .iter()
                .map(|l| l.name())
                .chain(["all"])
                .collect();
            let guess = names
                .iter()
                .map(|n| (strsim::jaro_winkler(&s.to_lowercase(), n), n))
                .filter(|(score, _)| *score >= 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map_or(String::new(), |(_, n)| format!("; did you mean \"{n}\"?"));
            self.invalid(
                node,
                format!(
                    "`{}` must be one of {}; found {s:?}{guess}",
                    node.path,
                    names.join(", ")
                ),
            )
        })
    }

    fn env(&self, node: &Node<'_>) -> Result<BTreeMap<String, EnvValue>> {
        let table = self.table(node, false)?;
        let mut env = BTreeMap::new();
        for (name, key_span, value) in &table.entries {
            let problem = if name.is_empty() {
                Some("must not be empty")
            } else if name.contains('=') {
                Some("must not contain '='")
            } else if name.contains('\0') {
                Some("must not contain a NUL character")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(self.invalid_at(
                    key_span.clone(),
                    &value.path,
                    format!("`{}`: an environment variable name {problem}", value.path),
                ));
            }
            // Table forms are checked against the schema of `loader.env.*`.
            let value = Node {
                schema: format!("{}.*", node.schema),
                ..value.clone()
            };
            let v = match value.data {
                Data::Value(Value::String(_)) => EnvValue::Value(self.string(&value)?.to_string()),
                Data::Table(_) => self.env_table(&value)?,
                _ => {
                    return Err(self.type_error(
                        &value,
                        "a string, { value = \"...\" } or { passthrough = true }",
                    ));
                }
            };
            env.insert(name.to_string(), v);
        }
        Ok(env)
    }

    fn env_table(&self, node: &Node<'_>) -> Result<EnvValue> {
        let fields = self.table(node, true)?;
        match (fields.get("value"), fields.get("passthrough")) {
            (Some(v), None) => Ok(EnvValue::Value(self.string(v)?.to_string())),
            (None, Some(p)) => {
                if self.bool(p)? {
                    Ok(EnvValue::Passthrough)
                } else {
                    Err(self.invalid(
                        p,
                        format!(
                            "`{}` may only be true; to not pass the variable, remove `{}`",
                            p.path, node.path
                        ),
                    ))
                }
            }
            (Some(_), Some(p)) => Err(self.invalid(
                p,
                format!(
                    "`{}` has both `value` and `passthrough`; give only one",
                    node.path
                ),
            )),
            (None, None) => Err(self.invalid(
                node,
                format!(
                    "`{}` needs `value = \"...\"` or `passthrough = true`",
                    node.path
                ),
            )),
        }
    }

    fn mounts(&self, node: &Node<'_>) -> Result<Vec<Mount>> {
        let mut mounts = Vec::new();
        for element in self.array(node, "an array of tables ([[fs.mounts]])")? {
            let fields = self.table(&element, true)?;
            let required = |key: &str, what: &str| {
                fields.get(key).ok_or_else(|| {
                    self.invalid(
                        &element,
                        format!("`{}` has no `{key}` ({what})", element.path),
                    )
                })
            };
            let kind = match fields.get("type") {
                Some(n) => {
                    let kind = self.string(n)?;
                    if !["chroot", "tmpfs", "overlay", "dev"].contains(&kind) {
                        return Err(self.invalid(
                            n,
                            format!(
                                "`{}`: unsupported mount type {kind:?}; picos supports \"chroot\" \
                                 (a host directory), \"tmpfs\" (files in memory), \"overlay\" \
                                 (a host directory below, changes in memory) and \"dev\" (a /dev \
                                 of harmless devices)",
                                n.path
                            ),
                        ));
                    }
                    kind
                }
                None => "chroot",
            };
            let path_node = required(
                "path",
                "the absolute path inside the picoprocess, like \"/data\"",
            )?;
            let path = self.non_empty_string(path_node)?;
            if !path.starts_with('/') {
                return Err(self.invalid(
                    path_node,
                    format!(
                        "`{}` must be an absolute path (starting with '/'), found {path:?}",
                        path_node.path
                    ),
                ));
            }
            if path.split('/').any(|c| c == "." || c == "..") || path.contains('\0') {
                return Err(self.invalid(
                    path_node,
                    format!(
                        "`{}` must name a directory without `.` or `..` components, found {path:?}",
                        path_node.path
                    ),
                ));
            }
            let path = normalize_guest_path(path);
            if let Some(prev) = mounts.iter().position(|m: &Mount| m.path == path) {
                return Err(self.invalid(
                    path_node,
                    format!(
                        "`{}`: {path:?} is already mounted by `fs.mounts[{prev}]`",
                        path_node.path
                    ),
                ));
            }
            let readonly = match fields.get("readonly") {
                Some(n) => self.bool(n)?,
                None => false,
            };
            let exclusive = match fields.get("exclusive") {
                Some(n) => {
                    let v = self.bool(n)?;
                    if v && kind != "chroot" {
                        return Err(self.invalid(
                            n,
                            format!(
                                "`{}`: only \"chroot\" mounts can be exclusive (a {kind} mount is \
                                 written in memory)",
                                n.path
                            ),
                        ));
                    }
                    if v && !readonly {
                        return Err(self.invalid(
                            n,
                            format!(
                                "`{}` needs `readonly = true`: only read-only mounts can be \
                                 exclusive (the directory cache of writable mounts is not built yet)",
                                n.path
                            ),
                        ));
                    }
                    v
                }
                None => false,
            };
            let writeback = match fields.get("writeback") {
                Some(n) => {
                    let v = self.bool(n)?;
                    if v && readonly {
                        return Err(self.invalid(
                            n,
                            format!(
                                "`{}` needs a writable mount: a read-only mount has no writes to buffer \
                                 (drop `readonly = true` or `writeback`)",
                                n.path
                            ),
                        ));
                    }
                    v
                }
                None => false,
            };
            let size = match fields.get("size") {
                Some(n) if kind == "chroot" => {
                    return Err(self.invalid(
                        n,
                        format!(
                            "`{}`: a \"chroot\" mount has no size of its own (only \"tmpfs\" and \
                             \"overlay\" mounts keep files in memory)",
                            n.path
                        ),
                    ));
                }
                Some(n) => Some(self.mount_size(n)?),
                None => None,
            };
            let uri = if kind == "tmpfs" || kind == "dev" {
                if let Some(n) = fields.get("uri") {
                    return Err(self.invalid(
                        n,
                        format!(
                            "`{}`: a \"{kind}\" mount has no host directory \
                             (drop `uri`, or use type = \"overlay\" to start from one)",
                            n.path
                        ),
                    ));
                }
                ""
            } else {
                let what = if kind == "overlay" {
                    "the host directory shown read-only below, like \"file:/usr\""
                } else {
                    "the host path, like \"file:/srv/data\""
                };
                let uri_node = required("uri", what)?;
                let uri = self.string(uri_node)?;
                match uri.strip_prefix("file:") {
                    Some(host) if !host.is_empty() => {}
                    _ => {
                        return Err(self.invalid(
                            uri_node,
                            format!(
                                "`{}` must be a host path like \"file:/srv/data\", found {uri:?}",
                                uri_node.path
                            ),
                        ));
                    }
                }
                uri
            };
            mounts.push(Mount {
                kind: kind.to_string(),
                size,
                path,
                uri: uri.to_string(),
                readonly,
                exclusive,
                writeback,
            });
        }
        Ok(mounts)
    }

    /// A size: an integer of bytes, or a string with K/M/G (`parse_size`);
    /// one too large for 64 bits reads as `u64::MAX`, for the caller's
    /// bound to refuse. `example` is the type error's expectation.
    fn size(&self, node: &Node<'_>, example: &str) -> Result<u64> {
        let malformed = || self.type_error(node, example);
        match node.data {
            Data::Value(Value::Integer(i)) => u64::try_from(*i.value()).map_err(|_| malformed()),
            Data::Value(Value::String(s)) => match parse_size(s.value()) {
                Ok(n) => Ok(n),
                Err(SizeError::Malformed) => Err(malformed()),
                Err(SizeError::TooLarge) => Ok(u64::MAX),
            },
            _ => Err(malformed()),
        }
    }

    /// `fs.mounts[].size`: bytes, or a string with K/M/G; at least a page.
    fn mount_size(&self, node: &Node<'_>) -> Result<u64> {
        let size = self.size(node, "a size like 67108864 or \"64M\"")?;
        if size < 4096 {
            return Err(self.invalid(
                node,
                format!(
                    "`{}` must be at least 4096 bytes (a page), found {}",
                    node.path,
                    node.data.describe()
                ),
            ));
        }
        Ok(size)
    }

    fn stack_size(&self, node: &Node<'_>) -> Result<u64> {
        let size = self.size(node, "a size like 8388608 or \"8M\"")?;
        if size == 0 {
            return Err(self.invalid(node, format!("`{}` must not be zero", node.path)));
        }
        if size > MAX_STACK_SIZE {
            return Err(self.invalid(
                node,
                format!(
                    "`{}` must be at most \"1024G\" ({MAX_STACK_SIZE} bytes), found {}",
                    node.path,
                    node.data.describe()
                ),
            ));
        }
        Ok(size)
    }
}

/// Why [`parse_size`] failed.
#[derive(Debug, PartialEq, Eq)]
enum SizeError {
    /// Not digits with an optional K, M or G suffix.
    Malformed,
    /// Does not fit in 64 bits.
    TooLarge,
}

/// Parses a Gramine-style size: decimal digits, optionally followed by `K`, `M` or `G`
/// (either case; powers of 1024).
fn parse_size(s: &str) -> Result<u64, SizeError> {
    let (digits, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let unit = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(SizeError::Malformed),
            };
            (&s[..i], unit)
        }
        _ => (s, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SizeError::Malformed);
    }
    let n: u64 = digits.parse().map_err(|_| SizeError::TooLarge)?;
    n.checked_mul(unit).ok_or(SizeError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(text, "manifest.toml")
    }

    /// The error message for `text`, which must be invalid.
    fn err(text: &str) -> String {
        match parse(text) {
            Ok(m) => panic!("expected an error for {text:?}, got {m:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn empty() -> Manifest {
        Manifest::default()
    }

    fn root_mount() -> Mount {
        Mount::host_root()
    }

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn strs(v: &[OsString]) -> Vec<&str> {
        v.iter().map(|s| s.to_str().unwrap()).collect()
    }

    const FULL: &str = r#"
[libos]
entrypoint = "/usr/bin/python3"
syscall_patching = false
enable_stats = true

[loader]
argv = ["python3", "-c", "print(1)"]
log_level = "debug"
insecure__use_cmdline_argv = true
insecure__use_host_env = true

[loader.env]
HOME = "/root"
PATH = { passthrough = true }
LANG = { value = "C.UTF-8" }

[fs]
start_dir = "/tmp"

[[fs.mounts]]
type = "chroot"
path = "/"
uri = "file:/"

[[fs.mounts]]
path = "/data"
uri = "file:/srv/data"

[sys]
stack.size = "8M"

[sandbox]
enable = true
allow_weaker = true
max_open_files = 256
net = { bind = [8080, 0], connect = [443, 443], udp = true }
"#;

    fn full() -> Manifest {
        Manifest {
            entrypoint: Some("/usr/bin/python3".into()),
            syscall_patching: false,
            enable_stats: true,
            argv: Some(vec!["python3".into(), "-c".into(), "print(1)".into()]),
            use_cmdline_argv: true,
            use_host_env: true,
            env: BTreeMap::from([
                ("HOME".into(), EnvValue::Value("/root".into())),
                ("PATH".into(), EnvValue::Passthrough),
                ("LANG".into(), EnvValue::Value("C.UTF-8".into())),
            ]),
            log_level: LogLevel::Debug,
            start_dir: Some("/tmp".into()),
            stack_size_bytes: Some(8 << 20),
            mounts: vec![
                root_mount(),
                Mount {
                    kind: "chroot".into(),
                    size: None,
                    path: "/data".into(),
                    uri: "file:/srv/data".into(),
                    readonly: false,
                    exclusive: false,
                    writeback: false,
                },
            ],
            sandbox: SandboxSettings {
                enable: true,
                allow_weaker: true,
                net_bind: vec![8080, 0],
                net_connect: vec![443],
                net_udp: true,
                net_tcp: false,
                max_open_files: Some(256),
            },
        }
    }

    #[test]
    fn sandbox_keys_are_checked() {
        for (text, key, msg) in [
            ("[sandbox]\nenable = 1\n", "sandbox.enable", "true or false"),
            (
                "[sandbox.net]\nbind = [70000]\n",
                "sandbox.net.bind[0]",
                "from 0 to 65535",
            ),
            (
                "[sandbox.net]\nconnect = \"80\"\n",
                "sandbox.net.connect",
                "port numbers",
            ),
            (
                "[sandbox]\nmax_open_files = 0\n",
                "sandbox.max_open_files",
                "from 1",
            ),
            (
                "[sandbox.net]\nbind = [80]\ntcp = true\n",
                "sandbox.net.tcp",
                "every TCP port",
            ),
        ] {
            match parse(text) {
                Err(ManifestError::Invalid {
                    key: k, message, ..
                }) => {
                    assert_eq!(k, key, "{text}");
                    assert!(message.contains(msg), "{text}: {message}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        match parse("[sandbox]\nenabel = true\n") {
            Err(ManifestError::UnknownKey { .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    // --- valid manifests ------------------------------------------------------------------

    #[test]
    fn full_example() {
        assert_eq!(parse(FULL).unwrap(), full());
    }

    #[test]
    fn empty_manifest_gives_defaults() {
        assert_eq!(parse("").unwrap(), empty());
        assert_eq!(
            parse("# nothing\n\n[loader]\n[fs]\n[sys]\n[libos]\n").unwrap(),
            empty()
        );
    }

    #[test]
    fn embedded_default() {
        let m = Manifest::embedded_default();
        assert_eq!(
            m,
            Manifest {
                use_cmdline_argv: true,
                use_host_env: true,
                mounts: vec![root_mount()],
                ..empty()
            }
        );
        assert_eq!(Manifest::parse(DEFAULT_MANIFEST, "x").unwrap(), m);
        assert!(DEFAULT_MANIFEST.contains("insecure__use_host_env = true"));
    }

    #[test]
    fn dotted_keys_at_top_level() {
        let dotted = r#"
libos.entrypoint = "/usr/bin/python3"
libos.syscall_patching = false
libos.enable_stats = true
loader.argv = ["python3", "-c", "print(1)"]
loader.log_level = "debug"
loader.insecure__use_cmdline_argv = true
loader.insecure__use_host_env = true
loader.env.HOME = "/root"
loader.env.PATH.passthrough = true
loader.env.LANG.value = "C.UTF-8"
fs.start_dir = "/tmp"
fs.mounts = [
  { type = "chroot", path = "/", uri = "file:/" },
  { path = "/data", uri = "file:/srv/data" },
]
sys.stack.size = "8M"
sandbox.enable = true
sandbox.allow_weaker = true
sandbox.max_open_files = 256
sandbox.net.bind = [8080, 0]
sandbox.net.connect = [443]
sandbox.net.udp = true
"#;
        assert_eq!(parse(dotted).unwrap(), full());
    }

    #[test]
    fn table_forms() {
        let text = r#"
[loader.env.PATH]
passthrough = true
[loader.env.LANG]
value = "C"
[sys.stack]
size = 4096
[sys]
stack = { size = "1K" }
"#;
        // `[sys]` after `[sys.stack]` is valid TOML, but `stack` is then defined twice.
        assert!(err(text).contains("invalid TOML"));
        let m = parse(&text.replace("[sys]\nstack = { size = \"1K\" }\n", "")).unwrap();
        assert_eq!(
            m.env,
            BTreeMap::from([
                ("PATH".into(), EnvValue::Passthrough),
                ("LANG".into(), EnvValue::Value("C".into()))
            ])
        );
        assert_eq!(m.stack_size_bytes, Some(4096));
        assert_eq!(
            parse("sys = { stack = { size = \"1K\" } }")
                .unwrap()
                .stack_size_bytes,
            Some(1024)
        );
    }

    #[test]
    fn log_levels() {
        for (name, level) in [
            ("none", LogLevel::None),
            ("error", LogLevel::Error),
            ("warning", LogLevel::Warning),
            ("debug", LogLevel::Debug),
            ("trace", LogLevel::Trace),
            ("all", LogLevel::Trace),
        ] {
            let m = parse(&format!("loader.log_level = \"{name}\"")).unwrap();
            assert_eq!(m.log_level, level, "{name}");
        }
    }

    #[test]
    fn relative_entrypoint_is_allowed() {
        assert_eq!(
            parse("libos.entrypoint = \"python3\"")
                .unwrap()
                .entrypoint
                .as_deref(),
            Some("python3")
        );
    }

    #[test]
    fn mount_type_defaults_to_chroot() {
        let m = parse("[[fs.mounts]]\npath = \"/lib\"\nuri = \"file:lib\"\n").unwrap();
        assert_eq!(
            m.mounts,
            vec![Mount {
                kind: "chroot".into(),
                size: None,
                path: "/lib".into(),
                uri: "file:lib".into(),
                readonly: false,
                exclusive: false,
                writeback: false,
            }]
        );
        assert_eq!(m.mounts[0].host_path(), "lib");
    }

    #[test]
    fn escaped_strings_are_decoded() {
        let m = parse("libos.entrypoint = \"/bin/\\u0073h\"\nloader.argv = ['C:\\x']").unwrap();
        assert_eq!(m.entrypoint.as_deref(), Some("/bin/sh"));
        assert_eq!(m.argv, Some(vec!["C:\\x".to_string()]));
    }

    // --- sizes ----------------------------------------------------------------------------

    #[test]
    fn parse_size_values() {
        assert_eq!(parse_size("8M"), Ok(8 << 20));
        assert_eq!(parse_size("8m"), Ok(8 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("007"), Ok(7));
        for bad in [
            "", "M", "-1", "+1", "12X", "1.5M", " 8M", "8M ", "8 M", "8MB", "8MM", "0x10", "1_000",
            "é", "8é",
        ] {
            assert_eq!(parse_size(bad), Err(SizeError::Malformed), "{bad:?}");
        }
        assert_eq!(parse_size("99999999999999999999"), Err(SizeError::TooLarge));
        assert_eq!(parse_size("17179869184G"), Err(SizeError::TooLarge));
    }

    #[test]
    fn stack_sizes_in_manifest() {
        let size = |v: &str| {
            parse(&format!("[sys]\nstack.size = {v}\n")).map(|m| m.stack_size_bytes.unwrap())
        };
        assert_eq!(size("\"8M\"").unwrap(), 8 << 20);
        assert_eq!(size("\"8m\"").unwrap(), 8 << 20);
        assert_eq!(size("\"1G\"").unwrap(), 1 << 30);
        assert_eq!(size("4096").unwrap(), 4096);
        assert_eq!(size("0x1000").unwrap(), 4096);
        assert_eq!(size("1_048_576").unwrap(), 1 << 20);
        assert_eq!(size("\"1024G\"").unwrap(), MAX_STACK_SIZE);
        assert_eq!(size("1099511627776").unwrap(), MAX_STACK_SIZE);

        let msg = |v: &str| size(v).unwrap_err().to_string();
        assert_eq!(
            msg("\"lots\""),
            "manifest.toml:2:14: `sys.stack.size` must be a size like 8388608 or \"8M\", found \"lots\""
        );
        assert_eq!(
            msg("\"12X\""),
            "manifest.toml:2:14: `sys.stack.size` must be a size like 8388608 or \"8M\", found \"12X\""
        );
        assert_eq!(
            msg("\"-1\""),
            "manifest.toml:2:14: `sys.stack.size` must be a size like 8388608 or \"8M\", found \"-1\""
        );
        assert_eq!(
            msg("-1"),
            "manifest.toml:2:14: `sys.stack.size` must be a size like 8388608 or \"8M\", found integer -1"
        );
        assert_eq!(
            msg("1.5"),
            "manifest.toml:2:14: `sys.stack.size` must be a size like 8388608 or \"8M\", found float 1.5"
        );
        assert_eq!(
            msg("\"0\""),
            "manifest.toml:2:14: `sys.stack.size` must not be zero"
        );
        assert_eq!(
            msg("0"),
            "manifest.toml:2:14: `sys.stack.size` must not be zero"
        );
        assert_eq!(
            msg("\"1025G\""),
            "manifest.toml:2:14: `sys.stack.size` must be at most \"1024G\" (1099511627776 bytes), found \"1025G\""
        );
        assert!(msg("1099511627777").contains("must be at most"));
        assert!(msg("\"99999999999999999999\"").contains("must be at most"));
        assert!(msg("\"17179869184G\"").contains("must be at most"));
    }

    // --- unknown keys ---------------------------------------------------------------------

    #[test]
    fn unknown_top_level_table() {
        assert_eq!(
            err("[foo]\nx = 1\n"),
            "manifest.toml:1:2: unknown key `foo`"
        );
        assert_eq!(err("\n\n  [ldr]\n"), "manifest.toml:3:4: unknown key `ldr`");
        assert_eq!(
            err("[lodaer]\n"),
            "manifest.toml:1:2: unknown key `lodaer`; did you mean `loader`?"
        );
        assert_eq!(
            err("[[mounts]]\n"),
            "manifest.toml:1:3: unknown key `mounts`; did you mean `fs.mounts`?"
        );
    }

    #[test]
    fn unknown_nested_key_with_suggestion() {
        assert_eq!(
            err("[loader]\nargv = [\"a\"]\nlog_levle = \"debug\"\n"),
            "manifest.toml:3:1: unknown key `loader.log_levle`; did you mean `loader.log_level`?"
        );
        assert_eq!(
            err("loader.log_levle = \"debug\"\n"),
            "manifest.toml:1:8: unknown key `loader.log_levle`; did you mean `loader.log_level`?"
        );
        assert_eq!(
            err("[loader]\ninsecure_use_host_env = true\n"),
            "manifest.toml:2:1: unknown key `loader.insecure_use_host_env`; did you mean `loader.insecure__use_host_env`?"
        );
        assert_eq!(
            err("[loader]\nuse_cmdline_argv = true\n"),
            "manifest.toml:2:1: unknown key `loader.use_cmdline_argv`; did you mean `loader.insecure__use_cmdline_argv`?"
        );
        assert_eq!(
            err("[fs]\nstartdir = \"/\"\n"),
            "manifest.toml:2:1: unknown key `fs.startdir`; did you mean `fs.start_dir`?"
        );
        assert_eq!(
            err("[fs]\nzzz = 1\n"),
            "manifest.toml:2:1: unknown key `fs.zzz`"
        );
    }

    #[test]
    fn unknown_key_in_wrong_table() {
        assert_eq!(
            err("entrypoint = \"/bin/sh\"\n"),
            "manifest.toml:1:1: unknown key `entrypoint`; did you mean `libos.entrypoint`?"
        );
        assert_eq!(
            err("[loader]\nstart_dir = \"/\"\n"),
            "manifest.toml:2:1: unknown key `loader.start_dir`; did you mean `fs.start_dir`?"
        );
        assert_eq!(
            err("[sys]\nstack_size = \"8M\"\n"),
            "manifest.toml:2:1: unknown key `sys.stack_size`; did you mean `sys.stack.size`?"
        );
        assert_eq!(
            err("log_level = \"debug\"\n"),
            "manifest.toml:1:1: unknown key `log_level`; did you mean `loader.log_level`?"
        );
    }

    #[test]
    fn gramine_only_keys_explained() {
        assert_eq!(
            err("loader.entrypoint = \"file:libsysdb.so\"\n"),
            "manifest.toml:1:8: unknown key `loader.entrypoint`; picos has no separate LibOS binary to load; \
             the program to run is `libos.entrypoint`"
        );
        assert_eq!(
            err("[sgx]\ndebug = true\n"),
            "manifest.toml:1:2: unknown key `sgx`; picos does not use Intel SGX; remove the `sgx` table"
        );
    }

    #[test]
    fn unknown_keys_in_mounts_and_env() {
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/\"\nuir = \"file:/\"\n"),
            "manifest.toml:3:1: unknown key `fs.mounts[0].uir`; did you mean `fs.mounts[0].uri`?"
        );
        assert_eq!(
            err("fs.mounts = [{ path = \"/\", uri = \"file:/\" }, { path = \"/a\", uri = \"file:/a\", kind = \"chroot\" }]"),
            "manifest.toml:1:78: unknown key `fs.mounts[1].kind`"
        );
        assert_eq!(
            err("[loader.env]\nPATH = { passtrough = true }\n"),
            "manifest.toml:2:10: unknown key `loader.env.PATH.passtrough`; did you mean `loader.env.PATH.passthrough`?"
        );
        assert_eq!(
            err("[loader.env.\"MY VAR\"]\nvalu = \"x\"\n"),
            "manifest.toml:2:1: unknown key `loader.env.\"MY VAR\".valu`; did you mean `loader.env.\"MY VAR\".value`?"
        );
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("loader", "log_levle"), Some("log_level"));
        assert_eq!(suggest("loader", "LOG_LEVEL"), Some("log_level"));
        assert_eq!(suggest("", "size"), Some("sys.stack.size"));
        assert_eq!(suggest("", "env"), Some("loader.env"));
        assert_eq!(suggest("", "mounts"), Some("fs.mounts"));
        assert_eq!(suggest("", "qqq"), None);
        assert_eq!(suggest("fs.mounts[]", "typ"), Some("type"));
        assert_eq!(
            allowed_keys(""),
            ["libos", "loader", "fs", "sys", "sandbox"]
        );
        assert_eq!(
            allowed_keys("fs.mounts[]"),
            [
                "type",
                "path",
                "uri",
                "readonly",
                "exclusive",
                "writeback",
                "size"
            ]
        );
        assert_eq!(allowed_keys("loader.env.*"), ["value", "passthrough"]);
        assert_eq!(allowed_keys("sys"), ["stack"]);
    }

    // --- wrong types ----------------------------------------------------------------------

    #[test]
    fn wrong_types() {
        assert_eq!(
            err("[libos]\nentrypoint = 3\n"),
            "manifest.toml:2:14: `libos.entrypoint` must be a string, found integer 3"
        );
        assert_eq!(
            err("[loader]\ninsecure__use_host_env = \"yes\"\n"),
            "manifest.toml:2:26: `loader.insecure__use_host_env` must be true or false, found \"yes\""
        );
        assert_eq!(
            err("loader.insecure__use_cmdline_argv = 1"),
            "manifest.toml:1:37: `loader.insecure__use_cmdline_argv` must be true or false, found integer 1"
        );
        assert_eq!(
            err("loader = 3"),
            "manifest.toml:1:10: `loader` must be a table, found integer 3"
        );
        assert_eq!(
            err("libos = [1]"),
            "manifest.toml:1:9: `libos` must be a table, found an array"
        );
        assert_eq!(
            err("[libos.entrypoint]\n"),
            "manifest.toml:1:1: `libos.entrypoint` must be a string, found a table"
        );
        assert_eq!(
            err("[loader]\nargv = \"sh -c x\"\n"),
            "manifest.toml:2:8: `loader.argv` must be an array of strings, found \"sh -c x\""
        );
        assert_eq!(
            err("[loader]\nargv = [\"sh\", 3]\n"),
            "manifest.toml:2:15: `loader.argv[1]` must be a string, found integer 3"
        );
        assert_eq!(
            err("[loader]\nlog_level = 2\n"),
            "manifest.toml:2:13: `loader.log_level` must be a string, found integer 2"
        );
        assert_eq!(
            err("fs.start_dir = 1979-05-27"),
            "manifest.toml:1:16: `fs.start_dir` must be a string, found date-time 1979-05-27"
        );
        assert_eq!(
            err("fs.mounts = \"/\""),
            "manifest.toml:1:13: `fs.mounts` must be an array of tables ([[fs.mounts]]), found \"/\""
        );
        assert_eq!(
            err("fs.mounts = [\"/\"]"),
            "manifest.toml:1:14: `fs.mounts[0]` must be a table, found \"/\""
        );
        assert_eq!(
            err("[[loader]]\n"),
            "manifest.toml:1:1: `loader` must be a table, found an array of tables"
        );
        assert_eq!(
            err("[loader.env]\nX = 1\n"),
            "manifest.toml:2:5: `loader.env.X` must be a string, { value = \"...\" } or { passthrough = true }, \
             found integer 1"
        );
        assert_eq!(
            err("[loader.env]\nX = { value = 1 }\n"),
            "manifest.toml:2:15: `loader.env.X.value` must be a string, found integer 1"
        );
        assert_eq!(
            err("[loader.env]\nX = { passthrough = \"true\" }\n"),
            "manifest.toml:2:21: `loader.env.X.passthrough` must be true or false, found \"true\""
        );
        assert_eq!(
            err("loader.env = \"A=B\""),
            "manifest.toml:1:14: `loader.env` must be a table, found \"A=B\""
        );
    }

    #[test]
    fn long_strings_are_shortened_in_messages() {
        let long = "x".repeat(100);
        let e = err(&format!("sys.stack.size = \"{long}\""));
        assert!(
            e.ends_with(&format!("found \"{}\"...", "x".repeat(60))),
            "{e}"
        );
    }

    // --- semantic errors ------------------------------------------------------------------

    #[test]
    fn bad_log_level() {
        assert_eq!(
            err("[loader]\nlog_level = \"verbose\"\n"),
            "manifest.toml:2:13: `loader.log_level` must be one of none, error, warning, debug, trace, all; \
             found \"verbose\""
        );
        assert_eq!(
            err("[loader]\nlog_level = \"warn\"\n"),
            "manifest.toml:2:13: `loader.log_level` must be one of none, error, warning, debug, trace, all; \
             found \"warn\"; did you mean \"warning\"?"
        );
        assert!(err("loader.log_level = \"DEBUG\"").ends_with("did you mean \"debug\"?"));
    }

    #[test]
    fn empty_strings_and_nul() {
        assert_eq!(
            err("[libos]\nentrypoint = \"\"\n"),
            "manifest.toml:2:14: `libos.entrypoint` must not be empty"
        );
        assert_eq!(
            err("fs.start_dir = ''"),
            "manifest.toml:1:16: `fs.start_dir` must not be empty"
        );
        assert_eq!(
            err("libos.entrypoint = \"/bin/sh\\u0000\""),
            "manifest.toml:1:20: `libos.entrypoint` must not contain a NUL character"
        );
        assert!(
            err("loader.argv = [\"a\\u0000\"]").contains("`loader.argv[0]` must not contain a NUL")
        );
        assert!(err("loader.env.A = \"\\u0000\"").contains("`loader.env.A` must not contain a NUL"));
    }

    #[test]
    fn argv_must_not_be_empty() {
        assert_eq!(
            err("[loader]\nargv = []\n"),
            "manifest.toml:2:8: `loader.argv` must not be empty: it starts with argv[0]"
        );
        // An empty argv[0] is odd but legal for execve.
        assert_eq!(
            parse("loader.argv = [\"\"]").unwrap().argv,
            Some(vec![String::new()])
        );
    }

    #[test]
    fn env_errors() {
        assert_eq!(
            err("[loader.env]\n\"A=B\" = \"x\"\n"),
            "manifest.toml:2:1: `loader.env.\"A=B\"`: an environment variable name must not contain '='"
        );
        assert_eq!(
            err("[loader.env]\n\"\" = \"x\"\n"),
            "manifest.toml:2:1: `loader.env.\"\"`: an environment variable name must not be empty"
        );
        assert_eq!(
            err("[loader.env]\nPATH = { passthrough = true, value = \"/bin\" }\n"),
            "manifest.toml:2:24: `loader.env.PATH` has both `value` and `passthrough`; give only one"
        );
        assert_eq!(
            err("[loader.env]\nPATH = {}\n"),
            "manifest.toml:2:8: `loader.env.PATH` needs `value = \"...\"` or `passthrough = true`"
        );
        assert_eq!(
            err("[loader.env]\nPATH = { passthrough = false }\n"),
            "manifest.toml:2:24: `loader.env.PATH.passthrough` may only be true; \
             to not pass the variable, remove `loader.env.PATH`"
        );
    }

    #[test]
    fn mount_paths_and_readonly() {
        let m = parse(
            "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\n\n\
             [[fs.mounts]]\npath = \"//data/\"\nuri = \"file:/srv\"\n",
        )
        .unwrap();
        assert!(m.mounts[0].readonly);
        assert_eq!(m.mounts[1].path, "/data");
        assert!(!m.mounts[1].readonly);
        assert_eq!(normalize_guest_path("/"), "/");
        assert_eq!(normalize_guest_path("///a//b/"), "/a/b");
    }

    #[test]
    fn exclusive_mounts() {
        let m = parse(
            "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\nexclusive = true\n\n\
             [[fs.mounts]]\npath = \"/data\"\nuri = \"file:/srv\"\n",
        )
        .unwrap();
        assert!(m.mounts[0].exclusive);
        assert!(!m.mounts[1].exclusive);
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nexclusive = true\n"),
            "manifest.toml:4:13: `fs.mounts[0].exclusive` needs `readonly = true`: only read-only \
             mounts can be exclusive (the directory cache of writable mounts is not built yet)"
        );
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\nexclusive = 1\n"),
            "manifest.toml:5:13: `fs.mounts[0].exclusive` must be true or false, found integer 1"
        );
    }

    #[test]
    fn writeback_mounts() {
        let m = parse(
            "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n\
             [[fs.mounts]]\npath = \"/out\"\nuri = \"file:/srv\"\nwriteback = true\n",
        )
        .unwrap();
        assert!(!m.mounts[0].writeback);
        assert!(m.mounts[1].writeback);
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nreadonly = true\nwriteback = true\n"),
            "manifest.toml:5:13: `fs.mounts[0].writeback` needs a writable mount: a read-only mount \
             has no writes to buffer (drop `readonly = true` or `writeback`)"
        );
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nwriteback = \"yes\"\n"),
            "manifest.toml:4:13: `fs.mounts[0].writeback` must be true or false, found \"yes\""
        );
    }

    #[test]
    fn mount_errors() {
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/a/../b\"\nuri = \"file:/srv\"\n"),
            "manifest.toml:2:8: `fs.mounts[0].path` must name a directory without `.` or `..` components, found \"/a/../b\""
        );
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/d\"\nuri = \"file:/srv\"\n[[fs.mounts]]\npath = \"/d/\"\nuri = \"file:/x\"\n"),
            "manifest.toml:5:8: `fs.mounts[1].path`: \"/d\" is already mounted by `fs.mounts[0]`"
        );
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/d\"\nuri = \"file:/srv\"\nreadonly = \"yes\"\n"),
            "manifest.toml:4:12: `fs.mounts[0].readonly` must be true or false, found \"yes\""
        );
        assert_eq!(
            err("[[fs.mounts]]\npath = \"data\"\nuri = \"file:/srv/data\"\n"),
            "manifest.toml:2:8: `fs.mounts[0].path` must be an absolute path (starting with '/'), found \"data\""
        );
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"/srv\"\n"),
            "manifest.toml:3:7: `fs.mounts[0].uri` must be a host path like \"file:/srv/data\", found \"/srv\""
        );
        assert!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"file:\"\n").contains("must be a host path")
        );
        assert!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"dev:tty\"\n").contains("must be a host path")
        );
        assert_eq!(
            err("[[fs.mounts]]\ntype = \"nfs\"\npath = \"/tmp\"\n"),
            "manifest.toml:2:8: `fs.mounts[0].type`: unsupported mount type \"nfs\"; picos supports \
             \"chroot\" (a host directory), \"tmpfs\" (files in memory), \"overlay\" (a host \
             directory below, changes in memory) and \"dev\" (a /dev of harmless devices)"
        );
        assert_eq!(
            err("[[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/tmp\"\nuri = \"file:/tmp\"\n"),
            "manifest.toml:4:7: `fs.mounts[0].uri`: a \"tmpfs\" mount has no host directory (drop \
             `uri`, or use type = \"overlay\" to start from one)"
        );
        assert_eq!(
            err("[[fs.mounts]]\ntype = \"overlay\"\npath = \"/usr\"\n"),
            "manifest.toml:1:1: `fs.mounts[0]` has no `uri` (the host directory shown read-only \
             below, like \"file:/usr\")"
        );
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\nsize = \"1M\"\n"),
            "manifest.toml:4:8: `fs.mounts[0].size`: a \"chroot\" mount has no size of its own (only \
             \"tmpfs\" and \"overlay\" mounts keep files in memory)"
        );
        assert_eq!(
            err("[[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/t\"\nsize = 100\n"),
            "manifest.toml:4:8: `fs.mounts[0].size` must be at least 4096 bytes (a page), found integer 100"
        );
        assert!(
            err("[[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/t\"\nsize = \"lots\"\n")
                .contains("a size like 67108864 or \"64M\"")
        );
        assert_eq!(
            err("[[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/t\"\nreadonly = true\nexclusive = true\n"),
            "manifest.toml:5:13: `fs.mounts[0].exclusive`: only \"chroot\" mounts can be exclusive \
             (a tmpfs mount is written in memory)"
        );
        let m = parse(
            "[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\
             [[fs.mounts]]\ntype = \"tmpfs\"\npath = \"/tmp\"\nsize = \"64M\"\n\
             [[fs.mounts]]\ntype = \"overlay\"\npath = \"/usr\"\nuri = \"file:/usr\"\n",
        )
        .unwrap();
        assert_eq!(
            (
                m.mounts[1].kind.as_str(),
                m.mounts[1].size,
                m.mounts[1].uri.as_str()
            ),
            ("tmpfs", Some(64 << 20), "")
        );
        assert_eq!(
            (
                m.mounts[2].kind.as_str(),
                m.mounts[2].size,
                m.mounts[2].host_path()
            ),
            ("overlay", None, "/usr")
        );
        assert_eq!(
            err("[[fs.mounts]]\npath = \"/\"\nuri = \"file:/\"\n\n[[fs.mounts]]\npath = \"/x\"\n"),
            "manifest.toml:5:1: `fs.mounts[1]` has no `uri` (the host path, like \"file:/srv/data\")"
        );
        assert_eq!(
            err("fs.mounts = [{ uri = \"file:/\" }]"),
            "manifest.toml:1:14: `fs.mounts[0]` has no `path` (the absolute path inside the picoprocess, like \"/data\")"
        );
        assert!(err("[[fs.mounts]]\npath = \"\"\nuri = \"file:/\"\n")
            .contains("`fs.mounts[0].path` must not be empty"));
    }

    // --- syntax errors and locations ------------------------------------------------------

    #[test]
    fn syntax_errors_have_locations() {
        assert_eq!(
            err("a = \n"),
            "manifest.toml:1:5: invalid TOML: invalid string; expected `\"`, `'`"
        );
        let dup = err("[loader]\nlog_level = \"debug\"\nlog_level = \"trace\"\n");
        assert!(
            dup.starts_with("manifest.toml:3:1: invalid TOML: "),
            "{dup}"
        );
        assert!(dup.contains("duplicate key `log_level`"), "{dup}");
        let unterminated = err("[libos]\nentrypoint = \"/bin/sh\n");
        assert!(
            unterminated.starts_with("manifest.toml:2:"),
            "{unterminated}"
        );
        assert!(!unterminated.contains('\n'), "one line: {unterminated}");
        assert!(err("[loader\n").starts_with("manifest.toml:1:"));
    }

    #[test]
    fn columns_count_characters() {
        // `é` is two bytes; the column of `3` is 14 in characters (15 in bytes).
        assert_eq!(
            err("[loader]\nargv = [\"é\", 3]\n"),
            "manifest.toml:2:14: `loader.argv[1]` must be a string, found integer 3"
        );
        // CRLF line endings.
        assert_eq!(
            err("[loader]\r\nargv = []\r\n"),
            "manifest.toml:2:8: `loader.argv` must not be empty: it starts with argv[0]"
        );
    }

    #[test]
    fn error_fields() {
        match parse("[sys]\nstack.size = \"lots\"\n").unwrap_err() {
            ManifestError::Invalid { location, key, .. } => {
                assert_eq!(
                    location,
                    Location {
                        file: "manifest.toml".into(),
                        line: 2,
                        column: 14
                    }
                );
                assert_eq!(key, "sys.stack.size");
            }
            e => panic!("unexpected {e:?}"),
        }
        match parse("[loader]\nlog_levle = 1\n").unwrap_err() {
            ManifestError::UnknownKey {
                key, suggestion, ..
            } => {
                assert_eq!(key, "loader.log_levle");
                assert_eq!(suggestion.as_deref(), Some("loader.log_level"));
            }
            e => panic!("unexpected {e:?}"),
        }
    }

    // --- files ----------------------------------------------------------------------------

    #[test]
    fn from_file_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.toml");
        let e = Manifest::from_file(&path).unwrap_err();
        assert!(matches!(e, ManifestError::Read { .. }));
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("cannot read manifest {}: ", path.display())),
            "{msg}"
        );
        assert!(msg.contains("No such file or directory"), "{msg}");
    }

    #[test]
    fn from_file_names_the_file_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.manifest.toml");
        std::fs::write(&path, FULL).unwrap();
        assert_eq!(Manifest::from_file(&path).unwrap(), full());
        std::fs::write(&path, "[loader]\nlog_levle = \"debug\"\n").unwrap();
        assert_eq!(
            Manifest::from_file(&path).unwrap_err().to_string(),
            format!(
                "{}:2:1: unknown key `loader.log_levle`; did you mean `loader.log_level`?",
                path.display()
            )
        );
        std::fs::write(&path, b"libos.entrypoint = \"\xff\"").unwrap();
        assert!(Manifest::from_file(&path)
            .unwrap_err()
            .to_string()
            .starts_with("cannot read manifest"));
    }

    // --- environment ----------------------------------------------------------------------

    #[test]
    fn environment_without_host_env() {
        let m = parse("[loader.env]\nHOME = \"/root\"\nPATH = { passthrough = true }\nTERM = { passthrough = true }\n")
            .unwrap();
        let host = os(&[("PATH", "/usr/bin"), ("USER", "me"), ("HOME", "/home/me")]);
        assert_eq!(strs(&m.environment(&host)), ["HOME=/root", "PATH=/usr/bin"]);
        assert!(m.environment(&[]).iter().all(|v| v != "PATH=/usr/bin"));
        assert_eq!(strs(&m.environment(&[])), ["HOME=/root"]);
    }

    #[test]
    fn environment_with_host_env() {
        let m = parse(
            "loader.insecure__use_host_env = true\n[loader.env]\nHOME = \"/root\"\nNEW = { value = \"a=b\" }\n\
             PATH = { passthrough = true }\n",
        )
        .unwrap();
        let host = os(&[
            ("USER", "me"),
            ("HOME", "/home/me"),
            ("PATH", "/bin"),
            ("EMPTY", ""),
        ]);
        assert_eq!(
            strs(&m.environment(&host)),
            ["USER=me", "HOME=/root", "PATH=/bin", "EMPTY=", "NEW=a=b"]
        );
        let default = Manifest::embedded_default();
        assert_eq!(
            strs(&default.environment(&host)),
            ["USER=me", "HOME=/home/me", "PATH=/bin", "EMPTY="]
        );
        assert!(default.environment(&[]).is_empty());
    }

    #[test]
    fn environment_keeps_non_utf8_host_values() {
        use std::os::unix::ffi::OsStringExt;
        let m = parse("loader.env.X.passthrough = true").unwrap();
        let host = vec![(OsString::from("X"), OsString::from_vec(vec![0xff, b'y']))];
        assert_eq!(
            m.environment(&host),
            vec![OsString::from_vec(b"X=\xffy".to_vec())]
        );
    }
}
