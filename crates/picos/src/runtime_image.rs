//! The runtime's image as `picos run` executes it.
//!
//! The runtime (`picos-rt`) is embedded in this binary. A new picoprocess
//! tree starts by exec'ing it from one of two places:
//!
//! - **The runtime cache** (the usual way): the image written once per
//!   build to `$XDG_CACHE_HOME/picos/runtime/picos-rt-ID` (else
//!   `~/.cache/picos/runtime`), where ID is a digest of its bytes. Each
//!   tree execs it through a hard link of its own,
//!   `picos-rt-ID.tree-PID-TIME`, removed before the exec: the kernel
//!   keeps the name it was exec'd by, so `/proc/PID/exe` of every process
//!   of the tree reads that unique name (with ` (deleted)`), and the tree's
//!   processes tell each other from other trees by it (the runtime's
//!   `kernel::process::same_tree`). Nothing is copied: the image's pages
//!   are the page cache's, shared by every tree.
//! - **A sealed memfd** with a unique name, filled with the image on every
//!   start (~0.4 ms for its 0.7 MB, and as much again to free it when the
//!   tree ends). Used when the cache cannot be (no home directory, a
//!   read-only or `noexec` file system, a directory others may write to),
//!   with `--perf-map` (perf reads a file's own symbols, and the
//!   embedded image has none: the perf map is for memory perf cannot name).
//!
//! Under the sandbox the image gets a Landlock rule of its own (read and
//! execute: `sandbox::Policy::runtime_image`). A confined program cannot
//! change the cache unless a mount lets it write there (its working
//! directory being the home directory, say): then it could change what
//! later trees run, as it could change the user's shell start-up files,
//! and a confined tree that runs a changed runtime is still confined (the
//! kernel enforces the sandbox, not the runtime: docs/SECURITY.md).
//!
//! The cache is trusted as the user's own files are: the directory and the
//! file must belong to the user and be writable by nobody else, no
//! directory above may let another user replace them, and the file must
//! have the image's size. It is written under a temporary name,
//! flushed to disk and renamed, so no reader ever sees part of an image.
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// The runtime image, as build.rs embeds it (stripped).
pub static RUNTIME: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/picos-rt"));

/// Its id: a digest of its bytes and its length (build.rs).
const RUNTIME_ID: &str = include_str!(concat!(env!("OUT_DIR"), "/picos-rt.id"));

/// How many images of different builds the cache keeps (the newest): a
/// few, so that two builds run in turn (an A/B comparison) do not rewrite
/// each other's.
const KEEP_IMAGES: usize = 4;

/// A leftover per-tree link or temporary file (its `picos run` was killed
/// between making and removing it) older than this is removed.
const STALE_SECS: u64 = 3600;

/// The longest `/proc/PID/exe` link the runtime takes for its tree's
/// (its buffers hold 512 bytes).
const MAX_LINK: usize = 480;

/// The image, open, ready for execve through `/proc/self/fd/N`.
pub struct Image {
    /// The image's file (close-on-exec).
    pub fd: OwnedFd,
    /// What `/proc/PID/exe` reads for every process of the tree: the
    /// runtime's `tree_exe`.
    pub link: Vec<u8>,
    /// Where it came from.
    pub source: Source,
}

/// Where an [`Image`] comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Cache,
    Memfd,
}

/// The image from the cache if `cache` and the cache can be used, else
/// from a memfd. `why_not` gets the reason the cache was not used.
pub fn open(cache: bool, why_not: &mut Option<String>) -> std::io::Result<Image> {
    if cache {
        match cache_dir() {
            Some(dir) => match from_cache(&dir) {
                Ok(img) => return Ok(img),
                Err(e) => *why_not = Some(format!("{}: {e}", dir.display())),
            },
            None => *why_not = Some("no home directory (HOME and XDG_CACHE_HOME unset)".into()),
        }
    }
    from_memfd()
}

/// `$XDG_CACHE_HOME/picos/runtime`, else `$HOME/.cache/picos/runtime`
/// (absolute paths only, as the XDG base directory spec says).
pub fn cache_dir() -> Option<PathBuf> {
    let abs = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    abs(std::env::var_os("XDG_CACHE_HOME"))
        .or_else(|| abs(std::env::var_os("HOME")).map(|h| h.join(".cache")))
        .map(|c| c.join("picos").join("runtime"))
}

/// The name of this build's image in the cache.
fn image_name() -> String {
    format!("picos-rt-{RUNTIME_ID}")
}

/// The image through a link of this tree's own in the cache `dir`
/// (written there first if it is not yet).
pub fn from_cache(dir: &Path) -> std::io::Result<Image> {
    let open_dir = || {
        rustix::fs::open(
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    let d = match open_dir() {
        Err(Errno::NOENT) => {
            make_dir(dir)?;
            open_dir()?
        }
        r => r?,
    };
    check_owned(&d, "the directory")?;
    check_ancestors(dir)?;
    let vfs = rustix::fs::fstatvfs(&d)?;
    if vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::NOEXEC) {
        return Err(std::io::Error::other(
            "its file system is mounted noexec: programs cannot run from it",
        ));
    }
    let name = image_name();
    let tree = format!("{name}.tree-{}-{:x}", std::process::id(), stamp());
    let mut wrote = false;
    loop {
        match rustix::fs::linkat(&d, &name, &d, &tree, AtFlags::empty()) {
            Err(Errno::NOENT) if !wrote => {
                write_image(&d, dir, &name)?;
                wrote = true;
                continue;
            }
            r => r?,
        }
        let fd = rustix::fs::openat(
            &d,
            &tree,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        );
        // The link only gives the tree its name: it goes at once (the
        // kernel keeps the name for /proc/PID/exe).
        let _ = rustix::fs::unlinkat(&d, &tree, AtFlags::empty());
        let fd = fd?;
        match check_image(&fd) {
            Ok(()) => {
                let link = fd_link(&fd)?;
                // The runtime reads other processes' exe links into 512
                // bytes, and finds its mappings by name in /proc maps,
                // whose fields spaces separate.
                if link.len() > MAX_LINK
                    || link
                        .strip_suffix(b" (deleted)")
                        .unwrap_or(&link)
                        .iter()
                        .any(u8::is_ascii_whitespace)
                {
                    return Err(std::io::Error::other(
                        "its path is too long or has white space in it",
                    ));
                }
                return Ok(Image {
                    fd,
                    link,
                    source: Source::Cache,
                });
            }
            // Not this build's image (cut short, changed): write it again,
            // once.
            Err(e) if !wrote => {
                rustix::fs::unlinkat(&d, &name, AtFlags::empty()).map_err(|u| {
                    std::io::Error::other(format!("{name}: {e}, and it cannot be removed: {u}"))
                })?;
            }
            Err(e) => return Err(std::io::Error::other(format!("{name}: {e}"))),
        }
    }
}

/// How long a known-sites file is kept before it starts again empty: its
/// entries are never removed, so files replaced since (a package upgrade)
/// would fill it, and a full table records nothing more.
const KNOWN_SITES_DAYS: u64 = 7;

/// The known-sites file in the cache `dir` (whose image was just opened:
/// the directory is checked), made empty if it is missing, damaged or
/// older than [`KNOWN_SITES_DAYS`] (under a temporary name, then renamed:
/// a tree that has the old one mapped keeps it). The runtime maps it
/// shared (`patch::known`): what one run's processes learn about a
/// library's syscall sites, the next run's patch at their first trap. It
/// must belong to this user and be writable by nobody else, as the image.
pub fn known_sites(dir: &Path) -> std::io::Result<PathBuf> {
    use picos_abi::{KNOWN_SITES_FILE, KNOWN_SITES_HEADER, KNOWN_SITES_LEN, KNOWN_SITES_MAGIC};
    let path = dir.join(KNOWN_SITES_FILE);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let usable = |fd: &OwnedFd| -> std::io::Result<bool> {
        let st = check_owned(fd, "the known-sites file")?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile
            || st.st_size as u64 != KNOWN_SITES_LEN as u64
        {
            return Ok(false);
        }
        let mut head = [0u8; 16];
        if rustix::io::pread(fd, &mut head, 0)? != head.len() {
            return Ok(false);
        }
        let word = |i: usize| u64::from_ne_bytes(head[8 * i..8 * i + 8].try_into().unwrap());
        let made = word(1);
        Ok(word(0) == KNOWN_SITES_MAGIC
            && made <= now + 86_400
            && now.saturating_sub(made) < KNOWN_SITES_DAYS * 86_400)
    };
    let open = || {
        rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
    };
    match open() {
        Ok(fd) if usable(&fd)? => return Ok(path),
        Ok(_) | Err(Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    let tmp = dir.join(format!("{KNOWN_SITES_FILE}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let made = (|| -> std::io::Result<()> {
        let fd = rustix::fs::open(
            &tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let mut head = vec![0u8; KNOWN_SITES_HEADER];
        head[..8].copy_from_slice(&KNOWN_SITES_MAGIC.to_ne_bytes());
        head[8..16].copy_from_slice(&now.to_ne_bytes());
        let mut f = std::fs::File::from(fd);
        f.write_all(&head)?;
        // The table: zeros, a hole until sites are recorded.
        f.set_len(KNOWN_SITES_LEN as u64)?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = made {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    match open() {
        Ok(fd) if usable(&fd)? => Ok(path),
        Ok(_) => Err(std::io::Error::other("it was changed as it was made")),
        Err(e) => Err(e.into()),
    }
}

/// Makes the cache directory `dir` (and what it needs above it), mode
/// 0700, only below one of this user's own directories or a sticky one
/// such as /tmp (root under `sudo -E` makes none in the invoking user's
/// home).
fn make_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if let Some(existing) = dir.ancestors().find(|a| a.exists()) {
        let m = std::fs::metadata(existing)?;
        let owner = m.uid();
        let uid = rustix::process::geteuid().as_raw();
        if existing != dir && owner != uid && m.mode() & 0o1000 == 0 {
            return Err(std::io::Error::other(format!(
                "{} belongs to uid {owner}, not to this user ({uid}): no cache made there",
                existing.display()
            )));
        }
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Nanoseconds since the epoch: with the pid, a name no other tree has.
fn stamp() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// What `/proc/self/fd/N` reads for `fd`: what `/proc/PID/exe` will read
/// for every process of a tree that execs it.
fn fd_link(fd: &OwnedFd) -> std::io::Result<Vec<u8>> {
    Ok(
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?
            .into_os_string()
            .into_vec(),
    )
}

/// No directory above `dir` lets anyone but this user (or root) replace
/// what it holds: each belongs to this user or to root, and is writable by
/// nobody else or sticky (as /tmp: there only an entry's owner may rename
/// or remove it). As ssh checks the directories above its keys.
fn check_ancestors(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let uid = rustix::process::geteuid().as_raw();
    for a in dir.ancestors().skip(1) {
        let m = std::fs::metadata(a)?;
        let owner_ok = m.uid() == uid || m.uid() == 0;
        let others_ok = m.mode() & 0o022 == 0 || m.mode() & 0o1000 != 0;
        if !owner_ok || !others_ok {
            return Err(std::io::Error::other(format!(
                "{} may be changed by another user (owner {}, mode {:o})",
                a.display(),
                m.uid(),
                m.mode() & 0o7777
            )));
        }
    }
    Ok(())
}

/// `fd` belongs to this user and nobody else may write to it.
fn check_owned(fd: impl AsFd, what: &str) -> std::io::Result<rustix::fs::Stat> {
    let st = rustix::fs::fstat(fd)?;
    let uid = rustix::process::geteuid().as_raw();
    if st.st_uid != uid {
        return Err(std::io::Error::other(format!(
            "{what} belongs to uid {}, not to this user ({uid})",
            st.st_uid
        )));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "{what} may be written by others (mode {:o})",
            st.st_mode & 0o7777
        )));
    }
    Ok(st)
}

/// The file of `fd` is this build's image, as [`write_image`] leaves it.
fn check_image(fd: impl AsFd) -> std::io::Result<()> {
    let st = check_owned(fd, "the image")?;
    let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
    if kind != rustix::fs::FileType::RegularFile {
        return Err(std::io::Error::other(format!(
            "not a regular file ({kind:?})"
        )));
    }
    // Every user may read and run it: a program that becomes another user
    // (setuid to nobody, say) and then calls execve re-executes the
    // runtime through /proc/self/exe as that user.
    if st.st_mode & 0o555 != 0o555 {
        return Err(std::io::Error::other(format!(
            "not readable and executable by all (mode {:o})",
            st.st_mode & 0o7777
        )));
    }
    if st.st_size as u64 != RUNTIME.len() as u64 {
        return Err(std::io::Error::other(format!(
            "{} bytes, not the image's {}",
            st.st_size,
            RUNTIME.len()
        )));
    }
    Ok(())
}

/// Writes this build's image into the cache directory `d` (`dir`) as
/// `name`: under a temporary name, flushed, read-only (and readable and
/// executable by all: [`check_image`]), then renamed. Then
/// removes what the cache no longer needs ([`prune`]).
fn write_image(d: &OwnedFd, dir: &Path, name: &str) -> std::io::Result<()> {
    let tmp = format!("{name}.tmp-{}", std::process::id());
    let _ = rustix::fs::unlinkat(d, &tmp, AtFlags::empty());
    let fd = rustix::fs::openat(
        d,
        &tmp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o700),
    )?;
    let mut f = std::fs::File::from(fd);
    let written = f
        .write_all(RUNTIME)
        .and_then(|()| f.sync_all())
        .and_then(|()| {
            rustix::fs::fchmod(&f, Mode::from_raw_mode(0o555)).map_err(std::io::Error::from)
        })
        .and_then(|()| rustix::fs::renameat(d, &tmp, d, name).map_err(std::io::Error::from));
    if let Err(e) = written {
        let _ = rustix::fs::unlinkat(d, &tmp, AtFlags::empty());
        return Err(e);
    }
    prune(dir, name);
    Ok(())
}

/// Removes from the cache `dir` the images of other builds but the
/// [`KEEP_IMAGES`] newest (`keep` is this build's), and per-tree links and
/// temporary files left over for more than [`STALE_SECS`]. A running tree
/// needs none of them (its processes exec the runtime through
/// `/proc/self/exe`). Errors are ignored: this only saves space.
fn prune(dir: &Path, keep: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    let mut images = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        // Images and their leftovers; known-sites files' leftovers only.
        let sites = name.starts_with(picos_abi::KNOWN_SITES_FILE);
        if !(name.starts_with("picos-rt-") || sites)
            || name == keep
            || (sites && !name.contains('.'))
        {
            continue;
        }
        let Ok(modified) = e.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if name.contains('.') {
            let age = now.duration_since(modified).map_or(0, |a| a.as_secs());
            if age > STALE_SECS {
                let _ = std::fs::remove_file(e.path());
            }
        } else {
            images.push((modified, e.path()));
        }
    }
    images.sort();
    // This build's image is one of the KEEP_IMAGES.
    let extra = (images.len() + 1).saturating_sub(KEEP_IMAGES);
    for (_, path) in images.into_iter().take(extra) {
        let _ = std::fs::remove_file(path);
    }
}

/// The image in a sealed memfd of its own, named `picos-rt-PID-TIME`.
pub fn from_memfd() -> std::io::Result<Image> {
    use rustix::fs::{fcntl_add_seals, memfd_create, MemfdFlags, SealFlags};
    let name = format!("picos-rt-{}-{:x}", std::process::id(), stamp());
    let fd = memfd_create(
        name.as_str(),
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    let mut f = std::fs::File::from(fd);
    f.write_all(RUNTIME)?;
    let fd = OwnedFd::from(f);
    // F_SEAL_WRITE fails with EBUSY while the kernel still holds extra
    // references to the pages just written (its per-CPU LRU batches keep
    // some for a moment; on a loaded machine a CI run met it once in a
    // few hundred starts): it goes, so try again for up to a second.
    let seals = SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL;
    let mut tries = 0;
    loop {
        match fcntl_add_seals(&fd, seals) {
            Err(Errno::BUSY) if tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            r => break r?,
        }
    }
    let link = fd_link(&fd)?;
    Ok(Image {
        fd,
        link,
        source: Source::Memfd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("picos-rtcache-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn runtime_is_embedded() {
        assert_eq!(&RUNTIME[..4], b"\x7fELF");
        assert!(!RUNTIME_ID.is_empty());
    }

    #[test]
    fn cache_writes_once_and_names_each_tree() {
        let d = scratch("once");
        let a = from_cache(&d).unwrap();
        let image = d.join(image_name());
        let first = std::fs::metadata(&image).unwrap();
        assert_eq!(first.len(), RUNTIME.len() as u64);
        assert_eq!(first.permissions().mode() & 0o777, 0o555);
        assert_eq!(std::fs::read(&image).unwrap(), RUNTIME);
        let b = from_cache(&d).unwrap();
        // Not written again.
        let second = std::fs::metadata(&image).unwrap();
        assert_eq!(
            first.modified().unwrap(),
            second.modified().unwrap(),
            "the image was written again"
        );
        // Each open is a tree of its own, named by its link, which is gone.
        assert_ne!(a.link, b.link);
        for img in [&a, &b] {
            let s = String::from_utf8(img.link.clone()).unwrap();
            assert!(s.ends_with(" (deleted)"), "{s}");
            assert!(s.contains(".tree-"), "{s}");
            assert_eq!(img.source, Source::Cache);
        }
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "only the image stays: {left:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn cache_replaces_a_damaged_image() {
        let d = scratch("damaged");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        let image = d.join(image_name());
        std::fs::write(&image, &RUNTIME[..100]).unwrap();
        std::fs::set_permissions(&image, std::fs::Permissions::from_mode(0o500)).unwrap();
        let img = from_cache(&d).unwrap();
        assert_eq!(img.source, Source::Cache);
        assert_eq!(std::fs::read(&image).unwrap(), RUNTIME);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn cache_refuses_a_directory_others_may_write() {
        let d = scratch("open");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = from_cache(&d)
            .err()
            .expect("a world-writable cache was used");
        assert!(e.to_string().contains("written by others"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn cache_refuses_a_directory_above_others_may_write() {
        let d = scratch("above");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = from_cache(&d.join("cache"))
            .err()
            .expect("a cache below a world-writable directory was used");
        assert!(e.to_string().contains("changed by another user"), "{e}");
        // Sticky, as /tmp: fine.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(from_cache(&d.join("cache")).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn cache_is_not_made_in_another_users_directory() {
        if !rustix::process::geteuid().is_root() {
            println!("SKIP cache_is_not_made_in_another_users_directory: needs root (chown)");
            return;
        }
        let d = scratch("theirs");
        std::fs::create_dir_all(&d).unwrap();
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        let e = from_cache(&d.join("cache"))
            .err()
            .expect("a cache was made in another user's directory");
        assert!(e.to_string().contains("no cache made there"), "{e}");
        assert!(!d.join("cache").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn memfd_is_named_for_its_tree() {
        let mut why = None;
        let img = open(false, &mut why).unwrap();
        assert!(why.is_none());
        assert_eq!(img.source, Source::Memfd);
        let s = String::from_utf8(img.link).unwrap();
        assert!(s.starts_with("/memfd:picos-rt-"), "{s}");
        assert!(s.ends_with(" (deleted)"), "{s}");
    }

    /// The known-sites file: made once (0600, the header, the length),
    /// then reused as it is; made again when damaged or too old; refused
    /// when others may write it.
    #[test]
    fn known_sites_file_is_made_checked_and_remade() {
        use picos_abi::{KNOWN_SITES_LEN, KNOWN_SITES_MAGIC};
        use std::os::unix::fs::MetadataExt;
        let d = scratch("sites");
        std::fs::create_dir_all(&d).unwrap();
        let path = known_sites(&d).unwrap();
        assert_eq!(path, d.join("known-sites-v1"));
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!(m.len(), KNOWN_SITES_LEN as u64);
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        let head = std::fs::read(&path).unwrap();
        assert_eq!(head[..8], KNOWN_SITES_MAGIC.to_ne_bytes());
        // What a run recorded stays.
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        rustix::io::pwrite(&f, &[7u8; 8], 8192).unwrap();
        known_sites(&d).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), m.ino());
        assert_eq!(std::fs::read(&path).unwrap()[8192], 7);
        // Damaged ways: each made again, empty.
        let remade = |damage: &dyn Fn(&mut std::fs::File)| {
            let mut f = std::fs::File::options()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap();
            rustix::io::pwrite(&f, &[7u8; 8], 8192).unwrap();
            damage(&mut f);
            drop(f);
            known_sites(&d).unwrap();
            let b = std::fs::read(&path).unwrap();
            assert_eq!(b.len(), KNOWN_SITES_LEN);
            assert_eq!(b[8192], 0, "not made again");
        };
        remade(&|f| f.set_len(100).unwrap());
        remade(&|f| {
            rustix::io::pwrite(&*f, b"picosXX1", 0).unwrap();
        });
        // Made eight days ago.
        remade(&|f| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            rustix::io::pwrite(&*f, &(now - 8 * 86_400).to_ne_bytes(), 8).unwrap();
        });
        f.set_len(KNOWN_SITES_LEN as u64).unwrap();
        // Others may write it: refused, not used.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622)).unwrap();
        let e = known_sites(&d).unwrap_err();
        assert!(e.to_string().contains("may be written by others"), "{e}");
        // No temporary file is left.
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Writes a file at `p` last changed `secs` seconds ago.
    fn file_aged(p: &Path, secs: u64) {
        std::fs::write(p, b"x").unwrap();
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn prune_keeps_the_newest_images() {
        let d = scratch("prune");
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..6 {
            let p = d.join(format!("picos-rt-old{i}"));
            file_aged(&p, 100 - i);
        }
        file_aged(&d.join("picos-rt-old5.tree-1-2"), 7200);
        let fresh = d.join("picos-rt-old5.tmp-3");
        std::fs::write(&fresh, b"x").unwrap();
        std::fs::write(d.join("other"), b"x").unwrap();
        // The known-sites file stays; its stale leftover goes.
        std::fs::write(d.join("known-sites-v1"), b"x").unwrap();
        file_aged(&d.join("known-sites-v1.tmp-9"), 7200);
        prune(&d, "picos-rt-new");
        let mut left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "known-sites-v1",
                "other",
                "picos-rt-old3",
                "picos-rt-old4",
                "picos-rt-old5",
                "picos-rt-old5.tmp-3"
            ]
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
