//! `-o FILE`: where the results go, without ever damaging what is there.
//!
//! What `-o` names is looked at with lstat(2), never through a link:
//!
//! * A regular file (or a path that does not exist yet) is written
//!   atomically: a temporary file created exclusively (`O_CREAT|O_EXCL`,
//!   unpredictable name, never through a symlink) in the same directory,
//!   given the mode and owner of the regular file at that exact path (a
//!   new file gets 0666 less the umask), synced, then renamed over the
//!   path. A failed run leaves no partial file.
//! * `-`, /dev/stdout and /dev/stderr are the standard streams; the null
//!   device (/dev/null) is written and nothing happens.
//! * A symbolic link is refused unless `--follow` is given; then what it
//!   points to is written as if named itself.
//! * A FIFO, a device other than the null device, or a socket is refused
//!   unless `--to-device` is given; then it is written in place, never
//!   replaced, and its write errors (ENOSPC from /dev/full) are reported.
//!   It is opened with `O_NOFOLLOW|O_NONBLOCK`: a FIFO with no reader is
//!   an error at once, not a wait.
//! * A directory, the run's own input files, and the file standard input
//!   was read from (`-` as an input) are refused.
//!
//! While the temporary file exists, terminal signals are held back (in
//! the writing thread, and by [`hold_temporary_files`] in the thread that
//! handles a sweep's signals), so an interrupt never leaves it behind: it
//! takes effect once the file is renamed (or removed).

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::{
    FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// What `-o` may name besides a regular file: the global `--follow` and
/// `--to-device` flags.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reach {
    /// Write through a symbolic link.
    pub(crate) follow: bool,
    /// Write into a FIFO, a device or a socket.
    pub(crate) to_device: bool,
}

static REACH: OnceLock<Reach> = OnceLock::new();

/// Set the command line's [`Reach`] (once, before anything is written).
pub(crate) fn set_reach(r: Reach) {
    let _ = REACH.set(r);
}

fn reach() -> Reach {
    REACH.get().copied().unwrap_or_default()
}

/// Held while a temporary output file exists.
static TEMPORARY: Mutex<()> = Mutex::new(());

/// Wait until no temporary output file exists and keep it so while the
/// guard lives (for a signal handler that is about to end the process).
pub(crate) fn hold_temporary_files() -> MutexGuard<'static, ()> {
    TEMPORARY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Run `f`, which creates and removes a temporary file, so that no
/// signal ends the process between the two.
fn hold_temporary_files_while<T>(f: impl FnOnce() -> T) -> T {
    let _held = hold_temporary_files();
    f()
}

/// What a `-o` path turned out to be.
#[derive(Debug)]
enum Target {
    /// Standard output (`-`, /dev/stdout) or standard error (/dev/stderr):
    /// the file descriptor.
    Stream(i32),
    /// Replaced atomically: the path, and the regular file there (None:
    /// nothing there yet).
    Replace(PathBuf, Option<fs::Metadata>),
    /// Written in place (the null device, or with `--to-device` a FIFO,
    /// device or socket): the path and what lstat saw there.
    InPlace(PathBuf, fs::Metadata),
}

/// Write `text` (text or bytes) to `path`; `inputs` are the files the run
/// read (never overwritten; `-` is standard input).
pub(crate) fn write_output(
    path: &Path,
    text: &(impl AsRef<[u8]> + ?Sized),
    inputs: &[PathBuf],
) -> io::Result<()> {
    write_with(path, text.as_ref(), inputs, reach())
}

/// Refuse now what [`write_output`] would refuse (before a run).
pub(crate) fn check_output(path: &Path, inputs: &[PathBuf]) -> Result<(), String> {
    target(path, inputs, reach())
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether `path` names standard output or error (`-`, /dev/stdout,
/// /dev/stderr).
pub(crate) fn is_stream(path: &Path) -> bool {
    matches!(
        path.as_os_str().to_str(),
        Some("-" | "/dev/stdout" | "/dev/stderr")
    )
}

/// An exclusive lock on a table that a sweep replaces: flock(2) on
/// `.NAME.foliosim-lock` beside it (the table itself is replaced by a
/// rename, so a lock on it would not outlive the first checkpoint). The
/// file holds the holder's process id, and is removed when the lock is
/// dropped or a signal ends the process.
pub(crate) struct OutputLock {
    /// The locked file: closed, and so unlocked, after [`Drop::drop`]
    /// has removed it.
    file: fs::File,
}

/// The lock this process holds, removed by [`release_for_exit`].
static HELD: Mutex<Option<(PathBuf, u64, u64)>> = Mutex::new(None);

impl OutputLock {
    /// Refuse what [`write_output`] would refuse, then, when `out` is a
    /// file to replace, lock it: Err when another process holds the lock
    /// (naming it), or the folder cannot be written. None: nothing to
    /// lock (a stream or a device).
    pub(crate) fn take(out: &Path, inputs: &[PathBuf]) -> Result<Option<OutputLock>, String> {
        let shown = out.display();
        let Target::Replace(real, _) =
            target(out, inputs, reach()).map_err(|e| format!("{shown}: {e}"))?
        else {
            return Ok(None);
        };
        // The check creates and removes a probe file: a temporary file.
        hold_temporary_files_while(|| foliosim_explore::check_writable(&real))?;
        let dir = real.parent().filter(|p| !p.as_os_str().is_empty());
        let name = real.file_name().unwrap_or_default().to_string_lossy();
        let path = dir
            .unwrap_or(Path::new("."))
            .join(format!(".{name}.foliosim-lock"));
        let fail = |e: io::Error| format!("{shown}: locking it ({}): {e}", path.display());
        // Held from before the file is created until it is recorded, so
        // that a signal's [`release_for_exit`] (on the signal thread)
        // waits for it and removes the file rather than miss it.
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        // Retry when the file locked was removed by its last holder
        // between our open and our lock.
        for _ in 0..100 {
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .mode(0o644)
                .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
                .open(&path)
                .map_err(fail)?;
            let m = file.metadata().map_err(fail)?;
            if !m.is_file() {
                return Err(fail(io::Error::other("not a regular file")));
            }
            let op = rustix::fs::FlockOperation::NonBlockingLockExclusive;
            match rustix::fs::flock(&file, op) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    let holder = fs::read_to_string(&path).unwrap_or_default();
                    let holder = match holder.trim() {
                        "" => String::new(),
                        pid => format!(" (process {pid})"),
                    };
                    return Err(format!(
                        "{shown}: another sweep{holder} is writing this table; a sweep \
                         does not wait for it: let it finish, or choose another -o file"
                    ));
                }
                Err(e) => return Err(fail(e.into())),
            }
            if fs::symlink_metadata(&path).is_ok_and(|n| n.dev() == m.dev() && n.ino() == m.ino()) {
                *held = Some((path.clone(), m.dev(), m.ino()));
                drop(held);
                let mut lock = OutputLock { file };
                lock.file.set_len(0).map_err(fail)?;
                writeln!(lock.file, "{}", std::process::id()).map_err(fail)?;
                return Ok(Some(lock));
            }
        }
        Err(fail(io::Error::other("it keeps changing")))
    }
}

/// Remove the lock file `path` if it is still the one (`dev`, `ino`)
/// this process locked.
fn remove_lock_file(path: &Path, dev: u64, ino: u64) {
    if fs::symlink_metadata(path).is_ok_and(|m| m.dev() == dev && m.ino() == ino) {
        let _ = fs::remove_file(path);
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        if let Some((p, dev, ino)) = HELD.lock().unwrap_or_else(|p| p.into_inner()).take() {
            remove_lock_file(&p, dev, ino);
        }
    }
}

/// Remove the lock file this process holds, for a signal that is about
/// to end the process (the lock itself ends with it). Hold what it
/// returns until the process ends: while it lives no lock file is made.
pub(crate) fn release_for_exit() -> MutexGuard<'static, Option<(PathBuf, u64, u64)>> {
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((p, dev, ino)) = held.take() {
        remove_lock_file(&p, dev, ino);
    }
    held
}

fn write_with(path: &Path, text: &[u8], inputs: &[PathBuf], reach: Reach) -> io::Result<()> {
    match target(path, inputs, reach)? {
        Target::Stream(fd) => write_stream(fd, text),
        Target::InPlace(p, seen) => write_in_place(&p, &seen, text),
        Target::Replace(p, meta) => foliosim_native::with_signals_blocked(|| {
            let _held = hold_temporary_files();
            replace(&p, meta.as_ref(), text)
        }),
    }
}

/// What `path` is, refused when it is nothing `-o` may write.
fn target(path: &Path, inputs: &[PathBuf], reach: Reach) -> io::Result<Target> {
    match path.as_os_str().to_str() {
        Some("-" | "/dev/stdout") => return Ok(Target::Stream(1)),
        Some("/dev/stderr") => return Ok(Target::Stream(2)),
        _ => {}
    }
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Target::Replace(path.to_path_buf(), None))
        }
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        let to = fs::read_link(path).map_or_else(|_| "?".into(), |t| t.display().to_string());
        if !reach.follow {
            return Err(io::Error::other(format!(
                "is a symbolic link (to {to}); -o does not write through links: \
                 remove it, name the file itself, or give --follow"
            )));
        }
        let real = fs::canonicalize(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("is a symbolic link to {to}, which fails: {e}"),
            )
        })?;
        return target(
            &real,
            inputs,
            Reach {
                follow: false,
                ..reach
            },
        );
    }
    if ft.is_dir() {
        return Err(io::Error::other("is a directory; name a file to write"));
    }
    refuse_inputs(&meta, inputs)?;
    if ft.is_file() {
        return Ok(Target::Replace(path.to_path_buf(), Some(meta)));
    }
    if is_null_device(&meta) || reach.to_device {
        return Ok(Target::InPlace(path.to_path_buf(), meta));
    }
    let what = if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "a device"
    };
    Err(io::Error::other(format!(
        "is {what}, not a regular file; -o writes into one only with --to-device"
    )))
}

/// Whether `m` is the null device (character device 1:3, wherever its
/// node is): writing it does nothing.
fn is_null_device(m: &fs::Metadata) -> bool {
    let dev = m.rdev();
    m.file_type().is_char_device() && rustix::fs::major(dev) == 1 && rustix::fs::minor(dev) == 3
}

/// Refuse when `out` is one of `inputs` (`-`: the file standard input
/// is, when it is a regular file).
fn refuse_inputs(out: &fs::Metadata, inputs: &[PathBuf]) -> io::Result<()> {
    let same = |i: &fs::Metadata| i.dev() == out.dev() && i.ino() == out.ino();
    for input in inputs {
        if crate::inputs::is_stdin(input) {
            if stdin_metadata().is_some_and(|i| i.is_file() && same(&i)) {
                return Err(io::Error::other(
                    "is the file standard input was read from; choose another output file",
                ));
            }
        } else if fs::metadata(input).is_ok_and(|i| same(&i)) {
            return Err(io::Error::other(format!(
                "is the input {}; choose another output file",
                input.display()
            )));
        }
    }
    Ok(())
}

/// fstat(2) of standard input.
fn stdin_metadata() -> Option<fs::Metadata> {
    use std::os::fd::AsFd as _;
    let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
    fs::File::from(fd).metadata().ok()
}

/// Write to standard output or error; a reader that closed the pipe
/// early (`| head`) is not an error.
fn write_stream(fd: i32, text: &[u8]) -> io::Result<()> {
    let r = if fd == 2 {
        let mut e = io::stderr().lock();
        e.write_all(text).and_then(|()| e.flush())
    } else {
        let mut o = io::stdout().lock();
        o.write_all(text).and_then(|()| o.flush())
    };
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Write into the FIFO, device or socket at `path` (`seen`: what lstat
/// saw there): never through a link, and never into something else than
/// was seen; a FIFO without a reader fails at once (ENXIO).
fn write_in_place(path: &Path, seen: &fs::Metadata, text: &[u8]) -> io::Result<()> {
    use rustix::fs::OFlags;
    let flags = OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(6) if seen.file_type().is_fifo() => io::Error::new(
                e.kind(),
                "is a FIFO that nothing reads (ENXIO); start its reader first",
            ),
            _ => e,
        })?;
    let now = f.metadata()?;
    if now.dev() != seen.dev() || now.ino() != seen.ino() {
        return Err(io::Error::other(
            "was replaced while being opened; not written",
        ));
    }
    // Writes wait for a slow reader, as they would to a pipe.
    let fl = rustix::fs::fcntl_getfl(&f)?;
    rustix::fs::fcntl_setfl(&f, fl - OFlags::NONBLOCK)?;
    f.write_all(text)?;
    f.flush()
}

/// Replace `path` atomically with `text`; `old` is the regular file there.
fn replace(path: &Path, old: Option<&fs::Metadata>, text: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "out".to_string(), |n| n.to_string_lossy().into_owned());
    // A new file gets the mode any program's new file gets (0666 less the
    // umask, applied by open(2)), not the temporary file's 0600.
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".foliosim-tmp")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(text)?;
    if let Some(m) = old {
        let mine = tmp.as_file().metadata()?;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(m.mode() & 0o7777))?;
        if m.uid() != mine.uid() || m.gid() != mine.gid() {
            std::os::unix::fs::fchown(tmp.as_file(), Some(m.uid()), Some(m.gid()))?;
        }
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("foliosim-output-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn new_files_get_the_umask_mode() {
        let dir = tempfile::tempdir().unwrap();
        // What File::create (open(2) with 0666) gives under this umask.
        let probe = dir.path().join("probe");
        fs::File::create(&probe).unwrap();
        let want = fs::metadata(&probe).unwrap().mode() & 0o777;
        let out = dir.path().join("new.txt");
        write_output(&out, b"x\n", &[]).unwrap();
        assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, want);
    }

    #[test]
    fn regular_files_are_replaced_keeping_their_mode() {
        let d = scratch("regular");
        let out = d.join("out.json");
        write_output(&out, "one\n", &[]).unwrap();
        assert_eq!(fs::read_to_string(&out).unwrap(), "one\n");
        fs::set_permissions(&out, fs::Permissions::from_mode(0o600)).unwrap();
        write_output(&out, "two\n", &[]).unwrap();
        assert_eq!(fs::read_to_string(&out).unwrap(), "two\n");
        assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, 0o600);
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_planted_symlink_is_never_followed() {
        // The temporary name is unpredictable and created exclusively: a
        // symlink at the old predictable name is left alone, and so is its
        // target.
        let d = scratch("symlink");
        let victim = d.join("victim.txt");
        fs::write(&victim, "keep\n").unwrap();
        let planted = d.join(format!(".out.json.foliosim-tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        write_output(&d.join("out.json"), "data\n", &[]).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep\n");
        assert_eq!(fs::read_to_string(d.join("out.json")).unwrap(), "data\n");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn directories_and_inputs_are_refused() {
        let d = scratch("refused");
        let e = write_output(&d, "x", &[]).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let input = d.join("s.toml");
        fs::write(&input, "name = \"s\"\n").unwrap();
        let e = write_output(&input, "x", std::slice::from_ref(&input)).unwrap_err();
        assert!(e.to_string().contains("input"), "{e}");
        assert_eq!(fs::read_to_string(&input).unwrap(), "name = \"s\"\n");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn devices_are_refused_unless_asked_and_then_written_not_replaced() {
        write_output(Path::new("/dev/null"), "x\n", &[]).unwrap();
        assert!(fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        if Path::new("/dev/full").exists() {
            let e = write_with(Path::new("/dev/full"), b"x\n", &[], Reach::default()).unwrap_err();
            assert!(e.to_string().contains("--to-device"), "{e}");
            let asked = Reach {
                to_device: true,
                ..Reach::default()
            };
            let e = write_with(Path::new("/dev/full"), b"x\n", &[], asked).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(28), "{e}"); // ENOSPC
            assert!(fs::metadata("/dev/full")
                .unwrap()
                .file_type()
                .is_char_device());
        }
    }

    #[test]
    fn a_symlink_at_the_path_is_refused_unless_followed() {
        let d = scratch("follow");
        let real = d.join("real.txt");
        fs::write(&real, "old\n").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = write_with(&link, b"new\n", &[], Reach::default()).unwrap_err();
        assert!(e.to_string().contains("--follow"), "{e}");
        assert_eq!(fs::read_to_string(&real).unwrap(), "old\n");
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        // Followed, the link stays and the file it names is replaced,
        // keeping that file's mode.
        let follow = Reach {
            follow: true,
            ..Reach::default()
        };
        write_with(&link, b"new\n", &[], follow).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new\n");
        assert_eq!(fs::metadata(&real).unwrap().mode() & 0o777, 0o640);
        fs::remove_dir_all(&d).unwrap();
    }
}
